//! A kind's own horizon (`[by-kind.<kind>] steps`): a budget point is calibrated for its own
//! planned horizon (a longer one needs more noise for the same budget), its run makes its own
//! steps, and `summary.json` reports them with the privacy figures of that horizon.

// Test helpers abort the test on a failed set-up, as the tests themselves do.
#![allow(clippy::expect_used, clippy::unwrap_used)]

#[allow(dead_code)] // the shared helpers; this file needs `LASSO` and `scenario` only
mod common;

use common::{LASSO, scenario};
use dpwalk_sim::algorithm::AlgorithmName;
use dpwalk_sim::output::summarize;
use dpwalk_sim::privacy::Resolved;
use dpwalk_sim::scenario::LoadedScenario;
use dpwalk_sim::simulate::{prepare, simulate};

/// The default horizon of every kind: 200 updates per user of the 10 users.
const STEPS: u64 = 2000;

/// The small Lasso comparing the ADMM walk, DP-SGD and IPADMM at ε = 1, evaluated every 500
/// steps, with the overrides `sets`.
fn comparison(sets: &[&str]) -> LoadedScenario {
    let steps = format!("steps={STEPS}");
    let mut all = vec![
        steps.as_str(),
        "eval-every=500",
        "algorithm.clip=1.0",
        r#"sweep.kind=["admm", "dp-sgd", "ipadmm"]"#,
        "sweep.epsilon=[1.0]",
    ];
    all.extend_from_slice(sets);
    scenario(LASSO, &all)
}

/// Every point of `loaded` with its noise calibrated, by kind.
fn resolved(loaded: &LoadedScenario) -> Vec<(AlgorithmName, Resolved)> {
    let prepared = prepare(loaded).expect("prepare");
    loaded
        .points()
        .iter()
        .map(|p| {
            let r = prepared
                .privacy
                .resolve(loaded.scenario(), p)
                .expect("calibrates");
            (p.name, r)
        })
        .collect()
}

#[test]
fn a_longer_horizon_calibrates_more_noise_for_the_same_budget() {
    let default = resolved(&comparison(&[]));
    let longer = resolved(&comparison(&[
        "by-kind.admm.steps=8000",
        "by-kind.ipadmm.steps=8000",
    ]));
    for ((kind, d), (_, l)) in default.iter().zip(&longer) {
        let (dk, lk) = (d.point.method.knob(), l.point.method.knob());
        assert_eq!(d.point.steps, STEPS, "{kind:?}");
        match kind {
            AlgorithmName::Admm | AlgorithmName::Ipadmm => {
                assert_eq!(l.point.steps, 8000, "{kind:?}");
                assert!(lk > dk, "{kind:?}: {lk} at 8000 steps, {dk} at {STEPS}");
                assert!(
                    l.calibrated_for > d.calibrated_for,
                    "{kind:?}: planned {:?} and {:?} contributions",
                    l.calibrated_for,
                    d.calibrated_for
                );
            }
            _ => {
                // DP-SGD keeps the default horizon, and so its noise.
                assert_eq!(l.point.steps, STEPS);
                assert_eq!(lk.to_bits(), dk.to_bits(), "{kind:?}");
            }
        }
    }
    // IPADMM plans every user in every one of its rounds: steps / users.
    let ipadmm = |r: &[(AlgorithmName, Resolved)]| {
        r.iter()
            .find(|(k, _)| *k == AlgorithmName::Ipadmm)
            .and_then(|(_, r)| r.calibrated_for)
    };
    assert_eq!(ipadmm(&default), Some(STEPS / 10));
    assert_eq!(ipadmm(&longer), Some(800));
}

#[test]
fn each_point_runs_its_own_horizon() {
    let loaded = comparison(&[
        &format!("by-kind.dp-sgd.steps={}", 2 * STEPS),
        "by-kind.ipadmm.steps=3000",
    ]);
    let prepared = prepare(&loaded).expect("prepare");
    let results = simulate(&loaded, &prepared, true).expect("simulate");
    let summary = summarize(&loaded, &prepared, &results);
    let expected = |kind: AlgorithmName| match kind {
        AlgorithmName::DpSgd => 2 * STEPS,
        AlgorithmName::Ipadmm => 3000,
        _ => STEPS,
    };
    assert_eq!(results.len(), 3);
    for (pr, ps) in results.iter().zip(&summary.points) {
        let steps = expected(pr.point.name);
        assert_eq!(pr.point.steps, steps, "{:?}", pr.point.name);
        for run in &pr.runs {
            assert_eq!(run.steps, steps, "{:?}", pr.point.name);
            let last = run.evals.last().expect("evaluated");
            assert_eq!(last.step, steps, "{:?}: the last evaluation", pr.point.name);
            // `eval-every` stays an absolute interval: every kind is evaluated at the same steps.
            assert!(
                run.evals.iter().all(|e| e.step % 500 == 0),
                "{:?}",
                pr.point.name
            );
        }
        assert_eq!(ps.steps, steps, "{:?}: summary.json's steps", pr.point.name);
    }
    // IPADMM's local figure is over its own 300 rounds.
    let ipadmm = summary
        .points
        .iter()
        .find(|p| p.algorithm == "ipadmm")
        .expect("an ipadmm point");
    let local = ipadmm
        .privacy
        .accounting
        .local
        .as_ref()
        .expect("a local figure");
    assert_eq!(local.contributions, 300);
    let budget = ipadmm.privacy.accounting.budget.as_ref().expect("a budget");
    assert_eq!(budget.calibrated_for_contributions, 300);
}
