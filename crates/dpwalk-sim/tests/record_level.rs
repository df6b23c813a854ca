//! `[privacy] unit = "record"` for dpwalk's own kinds (admm on every schedule, dp-sgd, fed-sgd):
//! the figures are the user-level ones with the clip `min(C, γG₂/m)` (DP-SGD: `min(C, G₂/m)`),
//! so they never exceed the user-level figures of the same run and equal them when every user
//! holds one record and `γG₂ ≥ C`; a budget calibrates σ to the record-level ε; what has no
//! record-level bound is refused with the key; every figure says "record-level".

// Test helpers abort the test on a failed set-up, as the tests themselves do.
#![allow(clippy::expect_used, clippy::unwrap_used)]

#[allow(dead_code)] // the shared helpers; this file needs `scenario` only
mod common;

use common::scenario;
use dpwalk_sim::output::summarize;
use dpwalk_sim::simulate::{prepare, simulate};
use serde_json::Value;

/// Logistic + ℓ₂ on 8 users of 30 records each; rows on the unit sphere, so `G₂ = 1`.
const LOGISTIC: &str = r#"
seed = 21
users = 8
steps = 400
eval-every = 400

[data]
source = "synthetic-logistic"
rows = 240
dim = 6

[problem]
loss = "logistic"
l2 = 0.01

[topology]
kind = "complete"

[algorithm]
kind = "admm"
gamma = 2.0
lambda = 0.5
sigma = 0.5
clip = 0.5
lr = 0.5
"#;

/// The summary's first point.
fn point(text: &str, sets: &[&str]) -> Value {
    let loaded = scenario(text, sets);
    let prepared = prepare(&loaded).expect("prepare");
    let results = simulate(&loaded, &prepared, true).expect("simulate");
    let summary = serde_json::to_value(summarize(&loaded, &prepared, &results)).expect("json");
    summary["points"][0].clone()
}

fn eps(privacy: &Value, view: &str) -> Option<f64> {
    privacy[view]["epsilon"].as_f64()
}

/// The kinds and schedules of dpwalk's own methods, as `--set`s.
const SETTINGS: &[&[&str]] = &[
    &["algorithm.kind=admm", "algorithm.mode=decentralized"],
    &[
        "algorithm.kind=admm",
        "algorithm.mode=federated",
        "algorithm.blocks-per-round=4",
    ],
    &["algorithm.kind=admm", "algorithm.mode=centralized"],
    &["algorithm.kind=dp-sgd", "algorithm.mode=decentralized"],
    &["algorithm.kind=fed-sgd", "algorithm.mode=decentralized"],
];

#[test]
fn record_level_figures_never_exceed_the_user_level_ones_and_say_so() {
    for sets in SETTINGS {
        let user = point(LOGISTIC, sets);
        let mut record_sets = sets.to_vec();
        record_sets.push("privacy.unit=record");
        let record = point(LOGISTIC, &record_sets);
        // The same run: the unit changes the accounting only.
        assert_eq!(user["final"], record["final"], "{sets:?}");
        let (u, r) = (&user["privacy"], &record["privacy"]);
        assert_eq!(u["unit"]["unit"], "user-level", "{sets:?}");
        assert_eq!(r["unit"]["unit"], "record-level", "{sets:?}");
        assert_eq!(r["unit"]["record_level"]["fewest_records"], 30, "{sets:?}");
        // Unit rows: G₂ = max ‖a‖₂ = 1 up to the rounding of the normalization.
        let g = r["unit"]["record_level"]["grad_bound"].as_f64().unwrap();
        assert!((g - 1.0).abs() < 1e-12, "{sets:?}: G₂ = {g}");
        // γG₂/m = 2G₂/30 for ADMM, G₂/m for DP-SGD, both below C = 0.5.
        let admm = sets[0].ends_with("admm");
        let expected = if admm { 2.0 * g / 30.0 } else { g / 30.0 };
        assert_eq!(r["unit"]["accounted_clip"], expected, "{sets:?}");
        assert!(
            r["note"].as_str().unwrap().starts_with("record-level"),
            "{sets:?}"
        );
        // Only what the clip rests on: G₂ from the data for all, an exact prox for ADMM alone.
        let assumed = |needle: &str| {
            r["unit"]["assumptions"]
                .as_array()
                .unwrap()
                .iter()
                .any(|a| a.as_str().unwrap().contains(needle))
        };
        assert!(assumed("feature norm"), "{sets:?}");
        assert_eq!(assumed("prox is exact"), admm, "{sets:?}");
        assert!(u["unit"].get("assumptions").is_none(), "{sets:?}");
        let mut compared = 0;
        for view in ["local", "network", "central"] {
            match (eps(u, view), eps(r, view)) {
                (Some(ue), Some(re)) => {
                    assert!(re < ue, "{sets:?} {view}: record {re} ≥ user {ue}");
                    compared += 1;
                }
                (None, None) => {}
                other => panic!("{sets:?} {view}: one unit has a figure, the other not: {other:?}"),
            }
        }
        assert!(compared >= 1, "{sets:?}: no figure to compare");
        // Per contribution: the local RDP scales with the clip squared.
        let ratio = (expected / 0.5_f64).powi(2);
        let (ul, rl) = (
            u["local_rdp_per_contribution"][0].as_f64().unwrap(),
            r["local_rdp_per_contribution"][0].as_f64().unwrap(),
        );
        assert!(
            (rl / ul - ratio).abs() <= 1e-12 * ratio,
            "{sets:?}: {rl} / {ul}"
        );
    }
}

#[test]
fn with_one_record_per_user_and_a_clip_below_gamma_g_the_units_agree() {
    // 8 records for 8 users; γG₂ = 2 ≥ C = 0.5 (ADMM), G₂ = 1 ≥ C (DP-SGD): min(C, ·) = C.
    for sets in SETTINGS {
        let mut sets = sets.to_vec();
        sets.extend(["data.rows=8"]);
        let user = point(LOGISTIC, &sets);
        sets.push("privacy.unit=record");
        let record = point(LOGISTIC, &sets);
        let (u, r) = (&user["privacy"], &record["privacy"]);
        assert_eq!(r["unit"]["accounted_clip"], 0.5, "{sets:?}");
        for view in ["local", "network", "central"] {
            assert_eq!(u[view]["epsilon"], r[view]["epsilon"], "{sets:?} {view}");
        }
        assert_eq!(
            u["local_rdp_per_contribution"], r["local_rdp_per_contribution"],
            "{sets:?}"
        );
    }
}

#[test]
fn a_record_level_budget_calibrates_sigma_to_it() {
    // fed-sgd (every user every round: the planned contributions are exact) and the federated
    // ADMM's central view are calibrated and reported on the same view: the figure is the budget.
    for (sets, view) in [
        (&["algorithm.kind=fed-sgd"][..], "local"),
        (
            &[
                "algorithm.kind=admm",
                "algorithm.mode=federated",
                "algorithm.blocks-per-round=4",
            ][..],
            "central",
        ),
        (
            &["algorithm.kind=admm", "algorithm.mode=decentralized"][..],
            "local",
        ),
    ] {
        let mut budget = sets.to_vec();
        budget.extend([
            "algorithm.sigma=0",
            "privacy.epsilon=1.0",
            "privacy.delta=1e-6",
        ]);
        let user = point(LOGISTIC, &budget);
        budget.push("privacy.unit=record");
        let record = point(LOGISTIC, &budget);
        let e = eps(&record["privacy"], view).unwrap();
        assert!(
            e <= 1.0 + 1e-9,
            "{sets:?}: record-level {view} ε = {e} above the budget"
        );
        // Where the report counts the contributions the calibration planned for (every user
        // every round), the figure is the budget; on the walk it is the busiest user's actual
        // count, which the plan's 0.99 quantile need not reach.
        let planned = record["privacy"][view]["contributions"]
            .as_u64()
            .is_none_or(|k| {
                k == record["privacy"]["budget"]["calibrated_for_contributions"]
                    .as_u64()
                    .unwrap()
            });
        if planned {
            assert!(
                e > 1.0 - 1e-4,
                "{sets:?}: calibration not minimal: {view} ε = {e}"
            );
        }
        // σ is proportional to the accounted clip: the record-level σ is (c/C) times the
        // user-level σ, to the calibration's precision.
        let c = record["privacy"]["unit"]["accounted_clip"]
            .as_f64()
            .unwrap();
        let ratio = record["sigma"].as_f64().unwrap() / user["sigma"].as_f64().unwrap();
        assert!(
            (ratio / (c / 0.5) - 1.0).abs() < 1e-5,
            "{sets:?}: σ ratio {ratio}, clip ratio {}",
            c / 0.5
        );
    }
}

/// The error of preparing `text` with `sets`, as text: the error and its causes.
fn refusal(sets: &[&str]) -> String {
    let loaded = scenario(LOGISTIC, sets);
    match prepare(&loaded) {
        Ok(_) => panic!("{sets:?} must be refused"),
        Err(e) => format!("{:#}", anyhow::Error::from(e)),
    }
}

#[test]
fn what_has_no_record_level_bound_is_refused_with_the_key() {
    for kind in ["admm", "dp-sgd", "fed-sgd"] {
        let kind = format!("algorithm.kind={kind}");
        let err = refusal(&[
            &kind,
            "privacy.unit=record",
            "data.source=synthetic-lasso",
            "data.sparsity=2",
            "problem.loss=squared",
            "problem.l2=0",
            "problem.l1=0.01",
        ]);
        assert!(
            err.contains("`privacy.unit`") && err.contains("Squared loss has none"),
            "{err}"
        );
    }
    // (A user without records cannot come out of a partition, which gives every user one:
    // `record_level`'s unit tests refuse it on a problem built by hand.)
}
