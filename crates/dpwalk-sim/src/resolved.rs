//! The resolved scenario a run directory keeps (`scenario.toml`): the scenario as it ran, after
//! `--set` overrides and the seed, with its name filled in and every file path made absolute, so
//! that `dpwalk sim <run>/scenario.toml` runs the same scenario from anywhere.

use crate::scenario::{self, LoadedScenario, Scenario, ScenarioError};
use dpwalk_core::data::DataSpec;
use dpwalk_core::topology::TopologySpec;
use std::path::{Path, PathBuf};

/// The file name of the resolved scenario in a run directory.
pub const SCENARIO_FILE: &str = "scenario.toml";

/// `base.join(path)`, absolute (relative to the current directory when `base` is relative).
fn absolute(base: &Path, path: &Path) -> PathBuf {
    let joined = base.join(path);
    std::path::absolute(&joined).unwrap_or(joined)
}

fn absolute_data(spec: &mut DataSpec, base: &Path) {
    let (path, test) = match spec {
        DataSpec::SyntheticLasso(_) | DataSpec::SyntheticLogistic(_) => return,
        DataSpec::Csv(s) => (&mut s.path, &mut s.test),
        DataSpec::Libsvm(s) => (&mut s.path, &mut s.test),
        DataSpec::Adult(s) => (&mut s.path, &mut s.test),
        DataSpec::Mnist(s) => (&mut s.path, &mut s.test),
    };
    *path = absolute(base, path);
    if let Some(t) = test.as_mut() {
        *t = absolute(base, t);
    }
}

fn absolute_topology(spec: &mut TopologySpec, base: &Path) {
    if let Some(p) = spec.path.as_mut() {
        *p = absolute(base, p);
    }
}

/// The resolved scenario of `loaded` as TOML text, checked to parse back to the same scenario.
pub fn resolved_toml(loaded: &LoadedScenario) -> Result<String, ScenarioError> {
    let mut s: Scenario = loaded.scenario().clone();
    s.name = Some(loaded.name().to_string());
    absolute_data(&mut s.data, loaded.base_dir());
    if let Some(data) = s.tune.as_mut().and_then(|t| t.data.as_mut()) {
        absolute_data(data, loaded.base_dir());
    }
    absolute_topology(&mut s.topology, loaded.base_dir());
    for t in &mut s.sweep.topology {
        absolute_topology(t, loaded.base_dir());
    }
    let text = toml::to_string(&s).map_err(|e| {
        ScenarioError::Invalid(format!("cannot write the resolved scenario as TOML: {e}"))
    })?;
    // The file must be a valid scenario: parse it back (an error here is a bug, named as such).
    scenario::parse(&text, Path::new(SCENARIO_FILE), &[]).map_err(|e| {
        ScenarioError::Invalid(format!("the resolved scenario does not parse back: {e}"))
    })?;
    Ok(format!(
        "# The scenario as this run ran it: overrides and seed applied, paths absolute.\n\
         # Run it again: `dpwalk sim {SCENARIO_FILE}` (or `dpwalk swarm --scenario {SCENARIO_FILE}`).\n{text}"
    ))
}

#[cfg(test)]
#[allow(clippy::unwrap_used)] // a failed unwrap is a failed test
mod tests {
    use super::*;

    #[test]
    fn overrides_and_absolute_paths_survive_the_round_trip() {
        let text = "users = 10\nsteps = 100\n[data]\nsource = \"csv\"\npath = \"d/x.csv\"\n\
                    [problem]\nloss = \"squared\"\n\
                    [tune]\n[tune.data]\nsource = \"csv\"\npath = \"d/public.csv\"\n";
        let sets = vec!["algorithm.sigma=3".to_string(), "seed=9".to_string()];
        let loaded = LoadedScenario::new(
            scenario::parse(text, Path::new("s.toml"), &sets).unwrap(),
            PathBuf::from("base"),
            "mine",
        )
        .expect("the scenario checks");
        let out = resolved_toml(&loaded).unwrap();
        let back = scenario::parse(&out, Path::new("r.toml"), &[]).unwrap();
        assert_eq!(back.seed, 9);
        assert_eq!(back.algorithm.sigma, 3.0);
        assert_eq!(back.name.as_deref(), Some("mine"));
        let DataSpec::Csv(csv) = back.data else {
            panic!("csv")
        };
        assert!(csv.path.is_absolute() && csv.path.ends_with("base/d/x.csv"));
        // `[tune.data]`'s path too.
        let Some(DataSpec::Csv(public)) = back.tune.and_then(|t| t.data) else {
            panic!("tune.data csv")
        };
        assert!(public.path.is_absolute() && public.path.ends_with("base/d/public.csv"));
    }
}
