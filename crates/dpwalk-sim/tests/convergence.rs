//! Without noise and without clipping, every schedule of the ADMM step converges to the optimum
//! of the independent reference solver: this pins the step's scaling convention (DESIGN.md).

// Test helpers abort the test on a failed set-up, as the tests themselves do.
#![allow(clippy::expect_used, clippy::unwrap_used)]

mod common;

use common::final_gap;

const LASSO: &str = r#"
seed = 3
users = 20
steps = 40000
eval-every = 40000

[data]
source = "synthetic-lasso"
rows = 100
dim = 8
sparsity = 3

[problem]
loss = "squared"
l1 = 0.02

[algorithm]
gamma = 1.0
lambda = 0.5
sigma = 0.0
"#;

const LOGISTIC: &str = r#"
seed = 5
users = 10
steps = 40000
eval-every = 40000

[data]
source = "synthetic-logistic"
rows = 100
dim = 5

[problem]
loss = "logistic"
l1 = 0.005
l2 = 0.01

[algorithm]
gamma = 2.0
lambda = 0.5
sigma = 0.0
"#;

fn assert_converges(text: &str, sets: &[&str]) {
    let gap = final_gap(text, sets);
    assert!(
        gap.abs() <= 1e-8,
        "relative objective gap {gap:e} with {sets:?}"
    );
}

#[test]
fn lasso_walk_converges() {
    assert_converges(LASSO, &[]);
}

#[test]
fn lasso_federated_converges() {
    assert_converges(
        LASSO,
        &[
            "algorithm.mode=federated",
            "algorithm.blocks-per-round=5",
            "steps=4000",
            "eval-every=4000",
        ],
    );
}

#[test]
fn lasso_centralized_converges() {
    assert_converges(
        LASSO,
        &[
            "algorithm.mode=centralized",
            "steps=1000",
            "eval-every=1000",
        ],
    );
}

#[test]
fn logistic_walk_converges() {
    assert_converges(LOGISTIC, &[]);
}

#[test]
fn logistic_federated_converges() {
    assert_converges(
        LOGISTIC,
        &[
            "algorithm.mode=federated",
            "algorithm.blocks-per-round=3",
            "steps=8000",
            "eval-every=8000",
        ],
    );
}

#[test]
fn logistic_centralized_converges() {
    assert_converges(
        LOGISTIC,
        &[
            "algorithm.mode=centralized",
            "steps=1000",
            "eval-every=1000",
        ],
    );
}

#[test]
fn too_few_steps_leave_a_visible_gap() {
    // Sanity check that the test can fail: far too few steps leave a visible gap.
    let gap = final_gap(LASSO, &["steps=20", "eval-every=20"]);
    assert!(
        gap > 1e-4,
        "20 steps cannot reach the optimum, got gap {gap:e}"
    );
}
