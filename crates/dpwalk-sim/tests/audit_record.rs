//! The record-level audit (`[privacy] unit = "record"`) on small walks and a baseline: the
//! measured ε̂ never exceeds the record-level bound (ADMM and DP-SGD walks, white and black box,
//! ipadmm and pp-admm), the white-box canary's two messages differ by at most the proof's
//! sensitivity `2·min(C, γG₂/m)` and come within 0.1 % of it, and a broken record-level
//! accounting (`G₂/m` where the ADMM proof needs `γG₂/m`, γ = 4) is caught. The user-level
//! output keeps its shape (no record-level fields or names).
//!
//! Fixed seeds: every figure here is the same on every run.

// Test helpers abort the test on a failed set-up, as the tests themselves do.
#![allow(clippy::expect_used, clippy::unwrap_used)]

#[allow(dead_code)] // the shared helpers; this file needs `scenario` only
mod common;

#[allow(dead_code)] // the shared helpers, not all needed here
mod audit_common;

use audit_common::{assert_caught, config, local_epsilon, one_run_local};
use dpwalk_privacy::Noise;
use dpwalk_sim::audit::canary::CanaryKind;
use dpwalk_sim::audit::driver::{Config, PointAudit, audit};
use dpwalk_sim::audit::one_run;
use dpwalk_sim::audit::statistic::View;
use dpwalk_sim::scenario::LoadedScenario;
use dpwalk_sim::simulate::{Prepared, prepare};

/// `sim/audit-record.toml`: eight users of four unit-norm logistic records (p = 4, + the
/// canaries' two features), a walk of 16 hops, γ = 4 and C = 10: the accounted clip is
/// `min(C, γG₂/m) = 4·1/4 = 1` (DP-SGD: `min(C, G₂/m) = 0.25`); σ gives μ = 2·clip/(σ/2) = 2 on
/// the first token. The shipped file, so that the γ-forgetting accounting is caught on what a
/// user can run.
const RECORD: &str = include_str!("../../../sim/audit-record.toml");

fn load(sets: &[&str]) -> (LoadedScenario, Prepared) {
    let loaded = common::scenario(RECORD, sets);
    let prepared = prepare(&loaded).expect("prepare");
    (loaded, prepared)
}

fn run(sets: &[&str], cfg: &Config) -> (Vec<PointAudit>, LoadedScenario, Prepared) {
    audit_common::audited(load(sets), cfg)
}

/// Every statistic of `p` at or below its bound, every bound named record-level; returns the
/// local first token's ε̂.
fn assert_below(label: &str, p: &PointAudit) -> f64 {
    for v in &p.views {
        assert!(
            v.bound.figure.starts_with("record-level "),
            "{label}: {}",
            v.bound.figure
        );
    }
    audit_common::assert_below(label, p)
}

#[test]
fn record_level_leakage_never_exceeds_the_record_level_bound_on_small_walks() {
    let views = vec![View::Local, View::Network, View::Central];
    let cases: &[(&[&str], CanaryKind)] = &[
        (&[], CanaryKind::WhiteBox),
        (
            &["topology.kind=ring", "algorithm.lambda=1"],
            CanaryKind::WhiteBox,
        ),
        (
            &["algorithm.kind=dp-sgd", "algorithm.sigma=0.5"],
            CanaryKind::WhiteBox,
        ),
        (&[], CanaryKind::BlackBox),
    ];
    for &(sets, kind) in cases {
        let cfg = Config {
            canary: kind,
            ..config(6_000, views.clone())
        };
        let (points, _, _) = run(sets, &cfg);
        let p = &points[0];
        let record = p
            .canary
            .record_level
            .as_ref()
            .expect("a record-level canary");
        let (realized, sensitivity) = (
            record.realized_difference.unwrap(),
            record.sensitivity.unwrap(),
        );
        eprintln!(
            "{sets:?} {kind:?}: m = {:?}, clip {:?}, |m1 - m0| = {realized:e} of {sensitivity:e}",
            record.fewest_records, record.accounted_clip
        );
        // Within the data's norm bound, and never beyond the proof's sensitivity.
        assert!(record.record_norm <= record.feature_norm);
        assert!(realized <= sensitivity, "{realized} > {sensitivity}");
        let local = assert_below(&format!("{sets:?} {kind:?}"), p);
        if kind == CanaryKind::WhiteBox {
            // The near-linear construction: sin φ = 0.9999 of the bound.
            assert!(
                realized >= 0.999 * sensitivity,
                "{realized} of {sensitivity}"
            );
            assert_eq!(record.records, record.fewest_records.unwrap());
            // μ = 2 on the local first token: the audit must see it.
            assert!(local > 1.0, "{sets:?}: local eps_hat {local}");
        } else {
            // The planted record raised the user's records by one.
            assert_eq!(record.records, record.fewest_records.unwrap() + 1);
        }
    }
}

#[test]
fn an_accounting_that_forgets_gamma_is_caught() {
    // δ = 0.01: where the plain ε̂ is close to the truth with a few thousand runs.
    let sets = ["privacy.delta=0.01"];
    let (points, _, prepared) = run(&sets, &config(10_000, vec![View::Local]));
    let p = &points[0];
    let record = p.canary.record_level.as_ref().unwrap();
    let (m, g2) = (record.fewest_records.unwrap(), record.grad_bound.unwrap());
    assert_eq!(record.accounted_clip, Some(4.0 * g2 / m as f64));
    // The broken clip G₂/m: DP-SGD's, as if the prox's γ = 4 did not scale the gradient.
    let sigma = p.setting.sigma;
    let broken = Noise::new(sigma, g2 / m as f64).unwrap();
    let broken = local_epsilon(&prepared, broken, p.setting.steps);
    assert_caught("G2/m where the proof needs gamma*G2/m", p, broken);
}

/// ipadmm and pp-admm on the same data, 4 rounds (their keys as in tests/audit_baselines.rs).
const BASELINES: &[&str] = &[
    "steps=32",
    "eval-every=32",
    "algorithm.rho=0.2",
    "algorithm.eta=0.5",
    "algorithm.eta-schedule=constant",
    "algorithm.inner-steps=1",
    "algorithm.clip=0.1",
    "algorithm.theta=0.5",
];

#[test]
fn a_baseline_s_record_level_audit_stays_below_its_bound() {
    let views = vec![View::Local, View::Central];
    let ipadmm: &[&str] = &["algorithm.kind=ipadmm", "algorithm.sigma=0.5"];
    let pp: &[&str] = &["algorithm.kind=pp-admm", "algorithm.nu=4"];
    let cases = [
        (ipadmm, CanaryKind::WhiteBox),
        (ipadmm, CanaryKind::BlackBox),
        (pp, CanaryKind::WhiteBox),
        (pp, CanaryKind::BlackBox),
    ];
    for (kind_sets, kind) in cases {
        let sets: Vec<&str> = BASELINES.iter().chain(kind_sets).copied().collect();
        let cfg = Config {
            canary: kind,
            ..config(4_000, views.clone())
        };
        let (points, _, _) = run(&sets, &cfg);
        let p = &points[0];
        let record = p.canary.record_level.as_ref().unwrap();
        assert!(record.record_norm <= record.feature_norm.min(1.0) + 1e-15);
        assert_below(&format!("{kind_sets:?} {kind:?}"), p);
    }
}

#[test]
fn the_one_run_mode_says_it_is_user_level() {
    let (loaded, prepared) = load(&[]);
    let cfg = one_run_local();
    let err = one_run::audit(&loaded, &prepared, &cfg)
        .unwrap_err()
        .to_string();
    assert!(err.contains("one-run mode is user-level"), "{err}");
}

#[test]
fn a_user_level_audit_has_no_record_level_fields() {
    let (loaded, prepared) = load(&["privacy.unit=user", "algorithm.clip=0.5"]);
    let points = audit(&loaded, &prepared, &config(200, vec![View::Local])).unwrap();
    let p = &points[0];
    assert!(p.canary.record_level.is_none());
    assert!(!p.views[0].bound.figure.contains("record-level"));
    let json = serde_json::to_value(p).unwrap();
    assert!(json["canary"].get("record_level").is_none(), "{json}");
}

/// Ten users of the vendored MNIST sample (`data/mnist/`, see its README), multinomial loss,
/// rows of norm at most 1.
const MNIST: &str = r#"
seed = 3
users = 10
steps = 20

[data]
source = "mnist"
path = "../../data/mnist/mnist-500.csv.gz"
test-fraction = 0.2
max-row-norm = 1.0

[problem]
loss = "multinomial"
l2 = 0.001

[topology]
kind = "complete"

[algorithm]
gamma = 10.0
lambda = 0.5
sigma = 1.0
clip = 10.0
lr = 1.0

[privacy]
unit = "record"
"#;

#[test]
fn the_white_box_nearly_attains_the_sensitivity_for_both_losses_and_both_regimes() {
    let cases: &[(&str, &[&str])] = &[
        (RECORD, &[]),
        (RECORD, &["algorithm.clip=0.5"]),
        (RECORD, &["algorithm.kind=dp-sgd"]),
        (RECORD, &["algorithm.kind=dp-sgd", "algorithm.clip=0.1"]),
        (MNIST, &[]),
        (MNIST, &["algorithm.clip=0.01"]),
        (MNIST, &["algorithm.kind=dp-sgd"]),
    ];
    for &(text, sets) in cases {
        let loaded = common::scenario(text, sets);
        let prepared = prepare(&loaded).expect("prepare");
        // The point as the audit runs it (resolved: σ given or calibrated).
        let resolved = prepared
            .privacy
            .resolve(loaded.scenario(), &loaded.points()[0])
            .unwrap();
        let algorithm = *resolved.point.method.walk().unwrap();
        let pair = dpwalk_sim::audit::record::walk(
            loaded.scenario(),
            &prepared,
            &algorithm,
            1,
            CanaryKind::WhiteBox,
        )
        .unwrap();
        let record = pair.worlds.canary.record_level.unwrap();
        let (realized, sensitivity) = (
            record.realized_difference.unwrap(),
            record.sensitivity.unwrap(),
        );
        let clip = algorithm.clip().unwrap();
        eprintln!(
            "{sets:?} (C = {clip}): m = {:?}, G2 = {:?}, accounted clip {:?}: |m1 - m0| / sensitivity = {:.6}",
            record.fewest_records,
            record.grad_bound,
            record.accounted_clip,
            realized / sensitivity
        );
        assert!(record.record_norm <= record.feature_norm);
        assert!(
            realized <= sensitivity,
            "{sets:?}: {realized} > {sensitivity}"
        );
        assert!(
            realized >= 0.999 * sensitivity,
            "{sets:?}: {realized} of {sensitivity}"
        );
    }
}

#[test]
fn record_level_composition_stays_below_the_composed_record_level_bound() {
    // Four contributions of the white-box canary in 64 hops, more noise (μ = 1 per contribution).
    let cfg = Config {
        contributions: 4,
        steps: Some(64),
        ..config(4_000, vec![View::Local, View::Network])
    };
    for sets in [
        &["algorithm.sigma=4"][..],
        &["algorithm.kind=dp-sgd", "algorithm.sigma=1"][..],
    ] {
        let (points, _, _) = run(sets, &cfg);
        let p = &points[0];
        assert!(
            p.views[0].bound.figure.contains("composed"),
            "{}",
            p.views[0].bound.figure
        );
        assert!(p.contributions.mean > 3.0, "{}", p.contributions.mean);
        assert_below(&format!("{sets:?} K = 4"), p);
    }
}
