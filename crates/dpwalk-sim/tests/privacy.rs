//! Budgets in the simulator: σ is calibrated, the budget policy keeps every user within its
//! budget on the view it names, and the reported figures say who leaks most to whom.

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
    let loaded =
        LoadedScenario::new(scenario, PathBuf::from("."), "inline").expect("the scenario checks");
    let prepared = prepare(&loaded).expect("prepare");
    let results = simulate(&loaded, &prepared, true).expect("simulate");
    serde_json::to_value(summarize(&loaded, &prepared, &results)).expect("json")
}

/// The figure a budget constrains: network for a DP-SGD walk, local for an ADMM walk.
fn worst(privacy: &serde_json::Value, view: &str) -> f64 {
    privacy[view]["epsilon"]
        .as_f64()
        .unwrap_or_else(|| panic!("{view} epsilon in {privacy}"))
}

#[test]
fn an_admm_walk_has_no_network_figure_and_its_local_budget_holds() {
    // On a star the centre holds the token every other step: far more visits than planned.
    let s = summary(BUDGET, &["topology.kind=star"]);
    let privacy = &s["points"][0]["privacy"];
    assert!(privacy["network"].is_null(), "{privacy}");
    let notes = privacy["notes"].to_string();
    assert!(
        notes.contains("no network bound is proved for the ADMM walk"),
        "{notes}"
    );
    assert_eq!(privacy["budget"]["view"], "local");
    // The 0.99 quantile of Binomial(4000, 1/40): 124 contributions planned.
    assert_eq!(privacy["budget"]["calibrated_for_contributions"], 124);
    let local = worst(privacy, "local");
    assert!(
        local <= 4.0 * (1.0 + 1e-12),
        "local {local} exceeds the budget"
    );
    assert!(local > 3.9, "the policy stops close to the budget: {local}");
    assert!(
        privacy["budget"]["skipped_contributions"]
            .as_f64()
            .expect("skipped")
            > 1000.0
    );
}

/// A DP-SGD walk of one pass (as many steps as users) at a given σ: most users contribute once.
fn one_pass(topology: &str) -> serde_json::Value {
    let text = BUDGET
        .replace(
            "steps = 4000\neval-every = 4000",
            "steps = 40\neval-every = 40",
        )
        .replace("epsilon = 4.0", "");
    summary(
        &text,
        &[
            "algorithm.kind=dp-sgd",
            "algorithm.sigma=2",
            &format!("topology.kind={topology}"),
        ],
    )
}

#[test]
fn a_dp_sgd_walk_has_network_figures_for_users_with_one_contribution() {
    for topology in ["complete", "ring"] {
        let s = one_pass(topology);
        let privacy = &s["points"][0]["privacy"];
        let nw = &privacy["network"];
        assert!(
            nw["contributions"].as_u64().expect("contributions") <= 1,
            "{nw}"
        );
        let network = worst(privacy, "network");
        assert!(network < worst(privacy, "local"), "{topology}: {privacy}");
        // Users with two visits in 40 steps have no network figure, and the notes say why.
        assert!(
            privacy["notes"]
                .to_string()
                .contains("one contribution per user"),
            "{privacy}"
        );
    }
}

#[test]
fn without_enforcement_the_busiest_user_overspends() {
    let sets = ["topology.kind=star", "privacy.enforce=false"];
    let s = summary(BUDGET, &sets);
    let privacy = &s["points"][0]["privacy"];
    assert!(
        worst(privacy, "local") > 4.0,
        "the star's centre exceeds the plan: {privacy}"
    );
    assert_eq!(privacy["budget"]["skipped_contributions"], 0.0);
}

#[test]
fn on_a_ring_the_worst_observer_is_a_neighbour() {
    let s = one_pass("ring");
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
    let err = loaded(&["privacy.view=network", "algorithm.mode=federated"])
        .check()
        .unwrap_err()
        .to_string();
    assert!(err.contains("for the walk"), "{err}");
}
