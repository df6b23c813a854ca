//! `dpwalk tune`: equal tuning effort for a comparison scenario (its `[tune]` section).

use super::overrides::Overrides;
use super::rundir;
use anyhow::Context;
use clap::Args;
use dpwalk_sim::{scenario, tune};
use std::path::PathBuf;

#[derive(Debug, Args)]
pub struct TuneArgs {
    /// Scenario file with a [tune] section, e.g. sim/compare/lasso.toml.
    scenario: PathBuf,
    #[command(flatten)]
    output: rundir::OutArgs,
    /// Configurations per kind (overrides [tune] configs).
    #[arg(long)]
    configs: Option<usize>,
    #[command(flatten)]
    overrides: Overrides,
    /// No progress bar.
    #[arg(long)]
    quiet: bool,
}

pub fn run(args: TuneArgs) -> anyhow::Result<()> {
    let sets = args
        .overrides
        .with(args.configs.map(|n| format!("tune.configs={n}")))?;
    let loaded = scenario::load(&args.scenario, &sets)?;
    let out = args.output.create(&loaded, "-tune")?;
    let tuned = tune::tune(&loaded, args.quiet)
        .with_context(|| format!("tuning scenario {}", args.scenario.display()))?;
    // How to run it again, whatever path the binary was started from.
    let command = std::iter::once("dpwalk".to_string())
        .chain(std::env::args().skip(1))
        .collect::<Vec<_>>()
        .join(" ");
    tune::output::write_all(&out, loaded.scenario(), &tuned, &command)
        .with_context(|| format!("writing the tuning to {}", out.display()))?;
    println!(
        "{:<10} {:>7} {:>8}  {:>12} {:>10}  parameters",
        "kind", "best of", "horizon", "validation", "error"
    );
    for k in &tuned.kinds {
        let Some(t) = k.trials.get(k.best) else {
            continue;
        };
        println!(
            "{:<10} {:>7} {:>8}  {:>12.6} {:>10}  {}",
            k.kind.as_str(),
            k.trials.len(),
            t.config.horizon,
            t.validation_objective,
            t.validation_error
                .map_or_else(|| "-".into(), |e| format!("{e:.4}")),
            t.config.describe()
        );
    }
    let reference = |name: &str, r: &tune::Reference| {
        println!(
            "{name:<10} {:>7} {:>8}  {:>12.6} {:>10}",
            "",
            "",
            r.validation_objective,
            r.validation_error
                .map_or_else(|| "-".into(), |e| format!("{e:.4}")),
        );
    };
    reference("zero model", &tuned.zero_model);
    if let Some((label, error)) = tuned.distinct_majority() {
        println!(
            "{:<10} {:>7} {:>8}  {:>12} {error:>10.4}  (label {label})",
            "majority", "", "", "-"
        );
    }
    reference("optimum", &tuned.optimum);
    for k in &tuned.kinds {
        let worse = k.worse_than_zero(tuned.zero_model.validation_objective);
        if worse == 0 {
            continue;
        }
        let finite = k.trials.iter().filter(|t| t.score.is_finite()).count();
        let outcome = if worse == finite {
            "all of them: the best of them is chosen, no better than predicting zero"
        } else {
            "not chosen"
        };
        println!(
            "{}: {} of {} configurations fit the validation records worse than the zero model ({outcome})",
            k.kind.as_str(),
            worse,
            k.trials.len()
        );
    }
    println!("selection: {}", tune::selection_rule(tuned.spec.metric));
    println!("privacy of the tuning: {}", tuned.privacy_cost());
    println!(
        "wrote {}: tune.csv (every configuration), tuned.toml (the [by-kind] tables to use)",
        out.display()
    );
    Ok(())
}
