//! What the simulator's integration tests share: an inline scenario, and the final relative gap
//! of its first run.

use dpwalk_sim::scenario::{LoadedScenario, parse};
use dpwalk_sim::simulate::{prepare, simulate};
use std::path::{Path, PathBuf};

/// Squared loss + ℓ₁ on a 3-regular graph of 10 users: every kind but pp-admm applies.
#[allow(
    dead_code,
    reason = "not every test file that shares these helpers runs it"
)]
pub const LASSO: &str = r#"
seed = 3
users = 10
steps = 20000
eval-every = 20000

[data]
source = "synthetic-lasso"
rows = 100
dim = 8
sparsity = 3

[problem]
loss = "squared"
l1 = 0.02

[topology]
kind = "random-regular"
degree = 3

[algorithm]
rho = 1.0
eta = 1.0
eta-schedule = "constant"
clip = 1e6
lr = 0.5
"#;

/// `text` parsed with the `--set` overrides `sets`, its relative paths from the current directory.
pub fn scenario(text: &str, sets: &[&str]) -> LoadedScenario {
    let sets: Vec<String> = sets.iter().map(|s| s.to_string()).collect();
    let scenario = parse(text, Path::new("inline.toml"), &sets).expect("scenario parses");
    LoadedScenario::new(scenario, PathBuf::from("."), "inline").expect("the scenario checks")
}

/// The relative gap of the last evaluation of the first point's first repetition.
pub fn final_gap(text: &str, sets: &[&str]) -> f64 {
    let loaded = scenario(text, sets);
    let prepared = prepare(&loaded).expect("prepare");
    let results = simulate(&loaded, &prepared, true).expect("simulate");
    let last = results[0].runs[0].evals.last().expect("evaluated");
    last.relative_gap
}

/// Logistic + ℓ₂ with rows of norm ≤ 1 (what pp-admm's proof needs), one record per user.
#[allow(dead_code)] // not every test file runs it
pub const LOGISTIC: &str = r#"
seed = 5
users = 40
steps = 40000
eval-every = 40000

[data]
source = "synthetic-logistic"
rows = 40
dim = 5

[problem]
loss = "logistic"
l2 = 0.05

[topology]
kind = "random-regular"
degree = 4

[algorithm]
rho = 0.2
eta = 0.5
eta-schedule = "constant"
clip = 1e6
theta = 0.5
lr = 1.0
"#;
