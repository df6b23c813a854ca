//! Same seed, bit-identical model; another seed, another model.

// Test helpers abort the test on a failed set-up, as the tests themselves do.
#![allow(clippy::expect_used, clippy::unwrap_used)]

use dpwalk_sim::scenario::{LoadedScenario, parse};
use dpwalk_sim::simulate::{prepare, simulate};
use std::path::{Path, PathBuf};

const NOISY: &str = r#"
seed = 11
users = 50
steps = 5000
eval-every = 1000

[data]
source = "synthetic-lasso"
rows = 200
dim = 16

[problem]
loss = "squared"
l1 = 0.01

[topology]
kind = "random-regular"
degree = 4

[algorithm]
sigma = 0.3
clip = 0.5
"#;

fn final_z(sets: &[&str]) -> Vec<f64> {
    let sets: Vec<String> = sets.iter().map(|s| s.to_string()).collect();
    let scenario = parse(NOISY, Path::new("inline.toml"), &sets).expect("parses");
    let loaded =
        LoadedScenario::new(scenario, PathBuf::from("."), "inline").expect("the scenario checks");
    let prepared = prepare(&loaded).expect("prepare");
    let results = simulate(&loaded, &prepared, true).expect("simulate");
    results[0].runs[0].z.clone()
}

fn bits(z: &[f64]) -> Vec<u64> {
    z.iter().map(|v| v.to_bits()).collect()
}

#[test]
fn same_seed_same_bits() {
    assert_eq!(bits(&final_z(&[])), bits(&final_z(&[])));
    let dp = &["algorithm.kind=dp-sgd"];
    assert_eq!(bits(&final_z(dp)), bits(&final_z(dp)));
}

#[test]
fn different_seed_differs() {
    assert_ne!(bits(&final_z(&[])), bits(&final_z(&["seed=12"])));
}
