//! Budgets in the simulator: σ is calibrated, caps keep every user within its budget, and the
//! reported figures say who leaks most to whom.

// Test helpers abort the test on a failed set-up, as the tests themselves do.
#![allow(clippy::expect_used, clippy::unwrap_used)]

use dpwalk_sim::output::summarize;
use dpwalk_sim::scenario::{LoadedScenario, parse};
use dpwalk_sim::simulate::{prepare, simulate};
use std::path::{Path, PathBuf};

const BUDGET: &str = r#"
seed = 4
users = 40
steps = 4000
eval-every = 4000

[data]
source = "synthetic-lasso"
rows = 40
dim = 8
sparsity = 2

[problem]
loss = "squared"
l1 = 0.01

[algorithm]
clip = 0.5

[privacy]
delta = 1e-5
epsilon = 4.0
"#;

fn summary(text: &str, sets: &[&str]) -> serde_json::Value {
    let sets: Vec<String> = sets.iter().map(|s| s.to_string()).collect();
    let scenario = parse(text, Path::new("inline.toml"), &sets).expect("parses");
    let loaded = LoadedScenario {
        scenario,
        base_dir: PathBuf::from("."),
        name: "inline".into(),
    };
    let prepared = prepare(&loaded).expect("prepare");
    let results = simulate(&loaded, &prepared, true).expect("simulate");
    serde_json::to_value(summarize(&loaded, &prepared, &results)).expect("json")
}

#[test]
fn enforced_budget_holds_for_every_user() {
    let s = summary(BUDGET, &[]);
    let p = &s["points"][0];
    let sigma = p["sigma"].as_f64().expect("sigma");
    assert!(sigma > 0.0, "sigma is calibrated");
    let privacy = &p["privacy"];
    assert_eq!(privacy["budget"]["calibrated_for_contributions"], 100);
    let worst = privacy["network"]["epsilon"]
        .as_f64()
        .expect("network epsilon");
    assert!(
        worst <= 4.0 * (1.0 + 1e-9),
        "worst network epsilon {worst} exceeds the budget"
    );
    assert!(
        worst > 3.0,
        "the cap should not be far below the budget: {worst}"
    );
    assert!(
        privacy["budget"]["skipped_contributions"]
            .as_f64()
            .expect("skipped")
            > 0.0
    );
    let local = privacy["local"]["epsilon"].as_f64().expect("local epsilon");
    assert!(local > worst, "local {local} must exceed network {worst}");
}

#[test]
fn without_enforcement_some_user_overspends() {
    let s = summary(BUDGET, &["privacy.enforce=false"]);
    let worst = s["points"][0]["privacy"]["network"]["epsilon"]
        .as_f64()
        .expect("network epsilon");
    assert!(
        worst > 4.0,
        "with ~Poisson visit counts some user exceeds ceil(T/n): {worst}"
    );
    assert_eq!(
        s["points"][0]["privacy"]["budget"]["skipped_contributions"],
        0.0
    );
}

#[test]
fn on_a_ring_the_worst_observer_is_a_neighbour() {
    let s = summary(BUDGET, &["topology.kind=ring"]);
    let nw = &s["points"][0]["privacy"]["network"];
    let user = nw["user"].as_u64().expect("user") as i64;
    let observer = nw["observer"].as_u64().expect("observer") as i64;
    assert_eq!(
        (user - observer)
            .rem_euclid(40)
            .min((observer - user).rem_euclid(40)),
        1,
        "{nw}"
    );
}

#[test]
fn unattainable_or_inconsistent_budgets_are_refused() {
    let loaded = |sets: &[&str]| {
        let sets: Vec<String> = sets.iter().map(|s| s.to_string()).collect();
        parse(BUDGET, Path::new("inline.toml"), &sets).expect("parses")
    };
    assert!(
        loaded(&["algorithm.sigma=1"]).check().is_err(),
        "sigma and a budget"
    );
    assert!(loaded(&["privacy.epsilon=-1"]).check().is_err());
    assert!(loaded(&["privacy.delta=1"]).check().is_err());
    assert!(
        loaded(&["privacy.view=central"]).check().is_err(),
        "central view on a walk"
    );
}
