//! The audit of the seed baselines (their local view) and the composition mode of the walk:
//! the measured ε̂ never exceeds the accountant's ε (fed-sgd, dp-iadmm, ipadmm on a squared
//! loss, pp-admm on a logistic one), a white-box canary's first round is exactly what its
//! construction forces, and broken accountings are caught: a baseline accounted for twice the
//! noise it adds, and a walk accounted for one contribution where the canary makes four.
//!
//! Fixed seeds: every figure here is the same on every run.

// Test helpers abort the test on a failed set-up, as the tests themselves do.
#![allow(clippy::expect_used, clippy::unwrap_used)]

#[allow(dead_code)] // the shared helpers; this file needs `scenario` only
mod common;

#[allow(dead_code)] // the shared helpers, not all needed here
mod audit_common;

use audit_common::{SMALL, assert_caught, config};
use common::LOGISTIC;
use dpwalk_core::baselines::dp_iadmm::Variant;
use dpwalk_privacy::Noise;
use dpwalk_sim::audit::baseline::{run_trial, worlds};
use dpwalk_sim::audit::bound::bound;
use dpwalk_sim::audit::canary::CanaryKind;
use dpwalk_sim::audit::driver::{Config, PointAudit, audit};
use dpwalk_sim::audit::statistic::{Statistic, View};
use dpwalk_sim::method::Method;
use dpwalk_sim::scenario::{LoadedScenario, Point};
use dpwalk_sim::simulate::{Prepared, prepare};

/// The baselines' keys on the small walk of tests/audit.rs ([`SMALL`]): eight users, two
/// records each, p = 4 (+ the dedicated feature), squared loss, complete graph, 10 rounds.
const SQUARED: &[&str] = &[
    "steps=80",
    "eval-every=80",
    "topology.kind=complete",
    "algorithm.rho=1",
    "algorithm.eta=1",
    "algorithm.eta-schedule=constant",
    "algorithm.inner-steps=1",
    "algorithm.variant=objp",
    "algorithm.eta-power=0",
    "algorithm.clip-l1=0.5",
    "algorithm.laplace-scale=0.1",
];

/// pp-admm on twelve users of one record of norm <= 1 each (logistic loss + l2, a 4-regular
/// graph: what its proof covers), 4 rounds, ν = 4.
const PP: &[&str] = &[
    "users=12",
    "data.rows=12",
    "data.dim=3",
    "steps=48",
    "eval-every=48",
    "algorithm.kind=pp-admm",
    "algorithm.nu=4",
];

/// `text` with the overrides `base`, then `sets`.
fn load(text: &str, base: &[&str], sets: &[&str]) -> (LoadedScenario, Prepared) {
    let all: Vec<&str> = base.iter().chain(sets).copied().collect();
    let loaded = common::scenario(text, &all);
    let prepared = prepare(&loaded).expect("prepare");
    (loaded, prepared)
}

/// Every statistic of every view of `p` at or below its bound, the GDP variant reported only
/// where the noise is Gaussian; returns the local first message's ε̂.
fn assert_below(label: &str, p: &PointAudit) -> f64 {
    // The GDP variant reads a Gaussian trade-off curve: none is reported for Laplace
    // (dp-iadmm) or radial (pp-admm) noise.
    let gaussian = !matches!(p.setting.algorithm, "dp-iadmm" | "pp-admm");
    for s in p.views.iter().flat_map(|v| &v.statistics) {
        assert_eq!(s.gdp_epsilon().is_some(), gaussian, "{label}");
    }
    audit_common::assert_below(label, p)
}

#[test]
fn measured_leakage_never_exceeds_the_baselines_bounds() {
    let views = vec![View::Local, View::Central];
    let cases: &[(&str, &[&str], &[&str], CanaryKind)] = &[
        (
            SMALL,
            SQUARED,
            &["algorithm.kind=fed-sgd"],
            CanaryKind::WhiteBox,
        ),
        (
            SMALL,
            SQUARED,
            &["algorithm.kind=fed-sgd"],
            CanaryKind::BlackBox,
        ),
        (
            SMALL,
            SQUARED,
            &["algorithm.kind=dp-iadmm"],
            CanaryKind::WhiteBox,
        ),
        (
            SMALL,
            SQUARED,
            &["algorithm.kind=dp-iadmm", "algorithm.variant=objt"],
            CanaryKind::BlackBox,
        ),
        (
            SMALL,
            SQUARED,
            &["algorithm.kind=ipadmm"],
            CanaryKind::WhiteBox,
        ),
        (
            SMALL,
            SQUARED,
            &["algorithm.kind=ipadmm", "topology.kind=ring"],
            CanaryKind::WhiteBox,
        ),
        (LOGISTIC, PP, &[], CanaryKind::WhiteBox),
    ];
    for &(text, base, sets, kind) in cases {
        let (loaded, prepared) = load(text, base, sets);
        let cfg = Config {
            canary: kind,
            ..config(6_000, views.clone())
        };
        let points = audit(&loaded, &prepared, &cfg).expect("audit");
        let p = &points[0];
        assert_eq!(p.setting.steps, 4, "min(rounds, 4) rounds by default");
        let local = assert_below(&format!("{sets:?} {kind:?}"), p);
        // Federated DP-SGD's central view is audited against its own, smaller figure (the
        // released sum carries all 8 users' noise), not the local one.
        if p.setting.algorithm == "fed-sgd" {
            let (l, c) = (&p.views[0], &p.views[1]);
            assert_eq!((l.view, c.view), (View::Local, View::Central));
            assert!(
                c.bound.figure.starts_with("central view"),
                "{}",
                c.bound.figure
            );
            assert!(
                c.bound.epsilon_or_inf() < l.bound.epsilon_or_inf() / 2.0,
                "central {:?} vs local {:?}",
                c.bound.epsilon,
                l.bound.epsilon
            );
        }
        // The white-box canary of the Gaussian baselines is seen plainly in the local view.
        if kind == CanaryKind::WhiteBox && matches!(p.setting.algorithm, "fed-sgd" | "ipadmm") {
            assert!(local > 1.0, "{sets:?}: local eps_hat {local}");
        }
    }
}

#[test]
fn a_white_box_canary_s_first_round_is_what_its_construction_forces() {
    // Without noise and regularizer, round 1 of each baseline from the zero state moves the
    // canary's message by exactly the clipped gradient, through the method's own step.
    let cases: &[&[&str]] = &[
        &["algorithm.kind=fed-sgd", "algorithm.sigma=0"],
        &["algorithm.kind=ipadmm", "algorithm.sigma=0"],
        &["algorithm.kind=dp-iadmm", "algorithm.laplace-scale=0"],
    ];
    for sets in cases {
        let mut sets = sets.to_vec();
        sets.push("problem.l1=0");
        let (loaded, prepared) = load(SMALL, SQUARED, &sets);
        let point = loaded.points()[0].given().expect("sigma is given");
        let method = point.method;
        let topology = &prepared.topologies[0].topology;
        let w = worlds(&prepared.problem, &method, 2, CanaryKind::WhiteBox).unwrap();
        let n = topology.n() as f64;
        let expected = match method {
            Method::FedSgd(p) => p.clip().unwrap(),
            Method::Ipadmm(p) => {
                let s = p.settings();
                // den = 2ρ·deg + η (constant η), the record's clipped gradient G over it.
                s.clip / (2.0 * s.rho * (n - 1.0) + 1.0)
            }
            Method::DpIadmm(p) => {
                let Variant::Prox { eta } = p.variant() else {
                    panic!("objp")
                };
                // z = −g̃/κ with g̃ = G₁/n and κ = ρ + 1/η.
                p.clip().unwrap() / n / (p.rho().at(1) + 1.0 / eta.at(1))
            }
            _ => unreachable!(),
        };
        for (world, problem) in w.problems.iter().enumerate() {
            let t = run_trial(problem, topology, &method, &w.canary, 1, 9).unwrap();
            let sign = if world == 0 { -1.0 } else { 1.0 };
            assert!(
                (t.tokens[0] - sign * expected).abs() <= 1e-12 * expected,
                "{sets:?} world {world}: {} != {}",
                t.tokens[0],
                sign * expected
            );
        }
    }
}

#[test]
fn a_baseline_accounted_for_twice_its_noise_is_caught() {
    // One round, δ = 0.01: where the plain ε̂ is close to the truth with a few thousand runs.
    for kind in ["fed-sgd", "ipadmm"] {
        let set = format!("algorithm.kind={kind}");
        let (loaded, prepared) = load(SMALL, SQUARED, &[set.as_str(), "privacy.delta=0.01"]);
        let cfg = Config {
            steps: Some(1),
            ..config(10_000, vec![View::Local])
        };
        let p = &audit(&loaded, &prepared, &cfg).unwrap()[0];
        let point = loaded.points()[0].given().expect("sigma is given");
        // The baseline adds σ; the broken accountant believes 2σ (the noise halved in the run,
        // not in the accounting).
        let doubled = point.method.with_knob(2.0 * point.method.knob()).unwrap();
        let broken = prepared
            .privacy
            .local_after(
                &Point {
                    method: doubled,
                    ..point
                },
                1,
            )
            .unwrap()
            .epsilon();
        assert_caught(kind, p, broken);
    }
}

#[test]
fn composition_stays_below_the_composed_bound_and_exceeds_one_contribution() {
    // The ADMM walk of tests/audit.rs with more noise, δ = 0.01, 64 hops: the canary contributes
    // at its first 4 visits (almost always all 4).
    for (sets, topology) in [
        (
            ["algorithm.lambda=0.1", "topology.kind=complete"],
            "complete",
        ),
        (["algorithm.lambda=1", "topology.kind=ring"], "ring"),
    ] {
        let mut sets = sets.to_vec();
        sets.extend(["steps=64", "algorithm.sigma=4", "privacy.delta=0.01"]);
        let (loaded, prepared) = load(SMALL, SQUARED, &sets);
        let cfg = Config {
            contributions: 4,
            ..config(20_000, vec![View::Local, View::Network, View::Central])
        };
        let p = &audit(&loaded, &prepared, &cfg).unwrap()[0];
        assert_below(&format!("composition {topology} {sets:?}"), p);
        assert!(p.contributions.mean > 3.5, "{}", p.contributions.mean);
        // The composed statistic sees more than one contribution can give: an accountant that
        // charged one contribution would be caught.
        let local = &p.views[0];
        let composed = local
            .statistics
            .iter()
            .find(|s| s.statistic == Statistic::Composed)
            .unwrap();
        let setup = prepared
            .privacy
            .setup(Noise::new(point_sigma(&loaded), 0.5).unwrap());
        let one = bound(&setup, None, 2, p.setting.steps, View::Local)
            .unwrap()
            .epsilon_or_inf();
        eprintln!(
            "{topology}: composed eps_hat {:.3}, one-contribution bound {one:.3}, composed bound {:.3}",
            composed.estimate.epsilon,
            local.bound.epsilon_or_inf()
        );
        assert!(
            composed.estimate.epsilon > one,
            "{topology}: composition not seen: {} <= {one}",
            composed.estimate.epsilon
        );
    }
}

fn point_sigma(loaded: &LoadedScenario) -> f64 {
    loaded.points()[0]
        .given()
        .expect("sigma is given")
        .method
        .walk()
        .unwrap()
        .sigma()
}

#[test]
fn what_a_baseline_s_proof_does_not_cover_is_refused_with_a_reason() {
    let (loaded, prepared) = load(LOGISTIC, PP, &[]);
    let cfg = Config {
        canary: CanaryKind::BlackBox,
        ..config(100, vec![View::Local])
    };
    let err = audit(&loaded, &prepared, &cfg).unwrap_err().to_string();
    assert!(err.contains("replaces one record"), "{err}");
    let (loaded, prepared) = load(SMALL, SQUARED, &["algorithm.kind=ipadmm"]);
    let err = audit(&loaded, &prepared, &config(100, vec![View::Network]))
        .unwrap_err()
        .to_string();
    assert!(err.contains("local view only"), "{err}");
    let err = audit(
        &loaded,
        &prepared,
        &Config {
            contributions: 0,
            ..config(100, vec![View::Local])
        },
    )
    .unwrap_err()
    .to_string();
    assert!(err.contains("--contributions"), "{err}");
    let cfg = audit_common::one_run_local();
    let err = dpwalk_sim::audit::one_run::audit(&loaded, &prepared, &cfg)
        .unwrap_err()
        .to_string();
    assert!(err.contains("without --one-run"), "{err}");
}
