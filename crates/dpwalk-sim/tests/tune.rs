//! `dpwalk tune` (equal tuning effort): every kind gets the same number of configurations,
//! scored on validation records carved from the training records only; the best of each kind
//! is the lowest score and, written as `[by-kind]` tables, runs at its tuned horizon; the
//! tuning is a function of its own seed; `[tune.data]` tunes without reading the scenario's
//! records; bad sections are refused with the reason.

// Test helpers abort the test on a failed set-up, as the tests themselves do.
#![allow(clippy::expect_used, clippy::unwrap_used)]

use dpwalk_sim::algorithm::AlgorithmName;
use dpwalk_sim::scenario::{LoadedScenario, ScenarioError, parse};
use dpwalk_sim::tune::{TuneError, Tuned, output::tuned_toml, tune};
use std::path::{Path, PathBuf};

/// A small Lasso of 100 rows, 20 of them the test set, 10 users, the ADMM walk against
/// DP-SGD, three configurations each of two horizons.
const TEXT: &str = r#"
seed = 3
users = 10
steps = 1000
[data]
source = "synthetic-lasso"
rows = 100
dim = 8
sparsity = 3
test-fraction = 0.2
[problem]
loss = "squared"
l1 = 0.02
[algorithm]
clip = 1.0
[by-kind.admm]
lambda = 0.5
[sweep]
kind = ["admm", "dp-sgd"]
epsilon = [1.0, 10.0]
[tune]
configs = 3
epsilon = 10.0
seed = 77
horizon = [5, 20]
[tune.grid.admm]
gamma = [0.5, 2.0]
clip = [0.3, 1.0]
[tune.grid.dp-sgd]
lr = [0.01, 0.1, 0.5]
"#;

fn load(text: &str, sets: &[&str]) -> Result<LoadedScenario, ScenarioError> {
    let sets: Vec<String> = sets.iter().map(|s| s.to_string()).collect();
    let scenario = parse(text, Path::new("inline.toml"), &sets)?;
    LoadedScenario::new(scenario, PathBuf::from("."), "inline")
}

fn tuned(sets: &[&str]) -> Result<Tuned, TuneError> {
    tune(&load(TEXT, sets).expect("the scenario checks"), true)
}

#[test]
fn every_kind_gets_the_same_number_of_configurations_and_its_best_is_the_lowest_score() {
    let t = tuned(&[]).unwrap();
    let kinds: Vec<AlgorithmName> = t.kinds.iter().map(|k| k.kind).collect();
    assert_eq!(kinds, [AlgorithmName::Admm, AlgorithmName::DpSgd]);
    let zero = t.zero_model.validation_objective;
    for k in &t.kinds {
        assert_eq!(k.trials.len(), 3, "{:?}", k.kind);
        assert!(k.trials.iter().all(|x| x.config.kind == k.kind));
        // The lowest score among the models no worse than the zero model, or among all when
        // none is (the ADMM walk's three, on this tiny set).
        let finite = || k.trials.iter().filter(|x| x.score.is_finite());
        let worse = finite().filter(|x| x.validation_objective > zero).count();
        assert_eq!(k.worse_than_zero(zero), worse, "{:?}", k.kind);
        let all_worse = worse == finite().count();
        let lowest = finite()
            .filter(|x| all_worse || x.validation_objective <= zero)
            .map(|x| x.score)
            .fold(f64::INFINITY, f64::min);
        assert!(lowest.is_finite());
        assert_eq!(k.trials[k.best].score, lowest);
        assert!(
            k.trials.iter().all(|x| x.validation_objective > 0.0),
            "a squared loss on held-out records is positive"
        );
    }
    // The 80 training records of the report, 16 of them held out: the test records are not used.
    assert_eq!((t.train_records, t.validation_records), (64, 16));
    assert_eq!(t.users, 10);
    // The non-private optimum of the tuning's training records is a reference, not a target:
    // it is no worse on the validation records than the zero model here.
    assert!(t.optimum.validation_objective < t.zero_model.validation_objective);
}

#[test]
fn the_tuned_tables_run_each_kind_with_its_best_keys_at_its_horizon() {
    let t = tuned(&[]).unwrap();
    let base = load(TEXT, &[]).unwrap();
    let written = tuned_toml(base.scenario(), &t, "dpwalk tune inline.toml").unwrap();
    let tables: toml::Table = toml::from_str(&written).expect("tuned.toml is TOML");
    let mut scenario: toml::Table = toml::from_str(TEXT).unwrap();
    scenario.insert("by-kind".into(), tables["by-kind"].clone());
    let text = toml::to_string(&scenario).unwrap();
    let loaded = load(&text, &[]).expect("the tuned scenario checks");
    for k in &t.kinds {
        let best = &k.trials[k.best];
        let points: Vec<_> = loaded
            .points()
            .iter()
            .filter(|p| p.name == k.kind)
            .collect();
        assert_eq!(points.len(), 2, "one point per budget");
        for p in points {
            assert_eq!(p.steps, best.config.horizon * 10, "{:?}", k.kind);
        }
        let spec = loaded.scenario().algorithm_for(k.kind).unwrap();
        for (key, value) in &best.config.keys {
            let got = match key.as_str() {
                "gamma" => spec.gamma,
                "clip" => spec.clip.unwrap(),
                "lr" => spec.lr,
                other => panic!("unexpected key {other}"),
            };
            assert_eq!(Some(got), value.as_float(), "{key}");
        }
    }
    // A key of the scenario's own table that the grid does not tune is kept.
    assert_eq!(
        loaded
            .scenario()
            .algorithm_for(AlgorithmName::Admm)
            .unwrap()
            .lambda,
        0.5
    );
}

#[test]
fn the_tuning_is_a_function_of_its_seed_and_not_of_the_reported_seeds() {
    let scores = |t: &Tuned| -> Vec<f64> {
        t.kinds
            .iter()
            .flat_map(|k| k.trials.iter().map(|x| x.score))
            .collect()
    };
    let a = tuned(&[]).unwrap();
    assert_eq!(scores(&a), scores(&tuned(&[]).unwrap()));
    // The reported runs' repetitions do not enter the tuning.
    assert_eq!(scores(&a), scores(&tuned(&["repetitions=4"]).unwrap()));
    let other = tuned(&["tune.seed=78"]).unwrap();
    assert_ne!(
        scores(&a),
        scores(&other),
        "another tuning seed: other noise, other split"
    );
}

#[test]
fn bad_sections_are_refused_with_the_reason() {
    let no_section = TEXT.split("[tune]").next().unwrap();
    assert!(matches!(
        tune(&load(no_section, &[]).unwrap(), true),
        Err(TuneError::NoSection)
    ));
    assert!(matches!(
        tuned(&["tune.metric=\"error\""]),
        Err(TuneError::NoErrorRate)
    ));
    assert!(matches!(
        tuned(&["tune.configs=7"]),
        Err(TuneError::GridTooSmall {
            kind: AlgorithmName::DpSgd,
            size: 6,
            configs: 7
        })
    ));
    match tuned(&["tune.grid.dp-sgd.lr=[-1.0, -2.0, -3.0]"]) {
        Err(e @ TuneError::Config { .. }) => {
            let text = format!("{e}");
            assert!(text.contains("dp-sgd") && text.contains("lr=-"), "{text}");
        }
        other => panic!("expected a refused configuration, got {other:?}"),
    }
    let refused = |sets: &[&str], key: &str| {
        let e = load(TEXT, sets).expect_err("refused").to_string();
        assert!(e.contains(key), "{e}");
    };
    refused(&["tune.configs=0"], "tune.configs");
    refused(
        &["tune.validation-fraction=1.0"],
        "tune.validation-fraction",
    );
    refused(&["tune.horizon=[0, 5]"], "tune.horizon");
    refused(&["tune.grid.admm.steps=[10]"], "tune.grid.admm.steps");
    // What only the tuning cannot run is refused by `dpwalk tune`, not by `dpwalk sim`.
    let swept = load(TEXT, &["sweep.gamma=[1.0, 2.0]"]).expect("dpwalk sim runs it");
    let e = tune(&swept, true).expect_err("refused").to_string();
    assert!(e.contains("sweep.gamma"), "{e}");
    // A grid of a kind the (overridden) sweep does not run is not used.
    let t = tuned(&[r#"sweep.kind=["dp-sgd"]"#]).unwrap();
    assert_eq!(t.kinds.len(), 1);
}

/// `[tune.data]`: the tuning runs on those records and never reads the scenario's, here a file
/// that does not exist (the tuning would fail at once if it opened it), and its outputs say that
/// the choice costs the scenario's users nothing.
#[test]
fn tuning_on_public_data_never_reads_the_private_records() {
    let start = TEXT.find("[data]").unwrap();
    let end = TEXT.find("[problem]").unwrap();
    let public = "[tune.data]\nsource = \"synthetic-lasso\"\nrows = 60\ndim = 8\nsparsity = 3\n";
    let text = format!(
        "{}[data]\nsource = \"libsvm\"\npath = \"no-such-private-file.svm\"\n{}{public}",
        &TEXT[..start],
        &TEXT[end..]
    );
    let t = tune(&load(&text, &[]).expect("the scenario checks"), true).unwrap();
    // 60 public records, 20 % held out: none of them the scenario's.
    assert_eq!((t.train_records, t.validation_records), (48, 12));
    assert!(
        t.privacy_cost().starts_with("none to the scenario's users"),
        "{}",
        t.privacy_cost()
    );
    // Without [tune.data] the same scenario must read its (missing) records, and fails.
    let private = format!(
        "{}[data]\nsource = \"libsvm\"\npath = \"no-such-private-file.svm\"\n{}",
        &TEXT[..start],
        &TEXT[end..]
    );
    let err = tune(&load(&private, &[]).expect("the scenario checks"), true).unwrap_err();
    let chain = error_chain(&err);
    assert!(chain.contains("no-such-private-file.svm"), "{chain}");
    // `[tune.data]` equal to `[data]` is refused: it would read the private records.
    let same = format!(
        "{TEXT}[tune.data]\n{}",
        &TEXT[start + "[data]\n".len()..end]
    );
    let err = tune(&load(&same, &[]).expect("the scenario checks"), true).unwrap_err();
    assert!(matches!(err, TuneError::PublicIsPrivate), "{err}");
}

/// An error and its sources, joined.
fn error_chain(e: &dyn std::error::Error) -> String {
    let mut out = e.to_string();
    let mut source = e.source();
    while let Some(s) = source {
        out.push_str(": ");
        out.push_str(&s.to_string());
        source = s.source();
    }
    out
}
