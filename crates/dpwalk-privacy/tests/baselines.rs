//! The seed baselines in the common accountant: the figures of the seed-baselines spec §5 (and
//! §2.3, §3.3), and calibration of each family's knob.
//!
//! The spec's §5.4–§5.5 figures say "dpwalk's default grid", but they were computed on the
//! crate's *earlier* grid ([`earlier_grid`]: 1.1, 1.25, 1.5, 1.75, …), before the default grid
//! gained the orders 1.01–1.09 and every 0.05 / 0.1 step up to 10.9. Every figure is reproduced
//! on that grid to the digits printed; on the current default grid the composed ε is up to 2.6 %
//! lower (a finer grid only lowers a minimum), and those values are pinned too.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use dpwalk_core::params::AdmmParams;
use dpwalk_core::step::Algorithm;
use dpwalk_privacy::Noise;
use dpwalk_privacy::PrivacyError;
use dpwalk_privacy::baseline::{Baseline, PenaltyPerturbation, PenaltySchedule};
use dpwalk_privacy::calibrate::{View, account, calibrate, calibrate_baseline};
use dpwalk_privacy::rdp::{Conversion, DpBound, Orders};
use dpwalk_privacy::unit::{Unit, record_level_clip};

const TIGHT: Conversion = Conversion::Tight;

/// The grid the spec's figures were computed on (this crate's grid before the current default).
fn earlier_grid() -> Orders {
    let mut v = vec![
        1.1, 1.25, 1.5, 1.75, 2.0, 2.25, 2.5, 2.75, 3.0, 3.5, 4.0, 4.5,
    ];
    v.extend((5..=64).map(f64::from));
    v.extend([128.0, 256.0, 512.0, 1024.0]);
    Orders::new(&v).unwrap()
}

/// The RDP ε (the spec's figures are RDP conversions) and its order of `baseline` after
/// `rounds` rounds at `knob`; the figure printed is never above it (the exact one where the
/// baseline is Gaussian).
fn spent(baseline: &Baseline, grid: &Orders, knob: f64, rounds: u64, delta: f64) -> (f64, f64) {
    match baseline
        .spent(grid, knob, rounds)
        .unwrap()
        .to_dp(delta, TIGHT)
        .unwrap()
    {
        DpBound::Finite(g) => {
            assert!(g.epsilon <= g.rdp_epsilon);
            (g.rdp_epsilon, g.order)
        }
        DpBound::NoFiniteGuarantee { .. } => panic!("finite curve"),
    }
}

/// `value` rounds to `printed`, whose last digit is worth `unit`.
fn rounds_to(value: f64, printed: f64, unit: f64) -> bool {
    (value - printed).abs() <= unit / 2.0
}

#[test]
fn rk_totals_of_spec_5_5_on_the_grid_they_were_computed_on() {
    let g = earlier_grid();
    // (T, ε̄, ε at 1e-5, ε at 1e-6, value of the last printed digit)
    let table = [
        (20_000, 0.05, 56.8, 59.8, 0.1),
        (20_000, 0.1, 164.0, 171.0, 1.0),
        (20_000, 1.0, 8.1e3, 8.1e3, 100.0),
        (20_000, 3.0, 4.3e4, 4.3e4, 1000.0),
        (20_000, 5.0, 8.3e4, 8.3e4, 1000.0),
        (1_000_000, 0.01, 95.9, 100.5, 0.1),
    ];
    for (t, eps_bar, at5, at6, unit) in table {
        let (e5, _) = spent(&Baseline::DpIadmm, &g, eps_bar, t, 1e-5);
        let (e6, _) = spent(&Baseline::DpIadmm, &g, eps_bar, t, 1e-6);
        assert!(
            rounds_to(e5, at5, unit),
            "T = {t}, ε̄ = {eps_bar}: {e5} vs {at5}"
        );
        assert!(
            rounds_to(e6, at6, unit),
            "T = {t}, ε̄ = {eps_bar}: {e6} vs {at6}"
        );
    }
    // §5.4's vectors: "ε = 56.764 at α = 1.75", "59.834 at α = 1.75".
    let (e, a) = spent(&Baseline::DpIadmm, &g, 0.05, 20_000, 1e-5);
    assert!(rounds_to(e, 56.764, 0.001) && a == 1.75, "{e} at {a}");
    let (e, a) = spent(&Baseline::DpIadmm, &g, 0.05, 20_000, 1e-6);
    assert!(rounds_to(e, 59.834, 0.001) && a == 1.75, "{e} at {a}");
}

#[test]
fn rk_headline_on_the_default_grid() {
    // Spec §0: "ε̄ = 0.05 over T = 2·10⁴ is a total of ε ≈ 57 at δ = 1e-5 (≈ 60 at 1e-6)".
    let g = Orders::default_grid();
    let (e5, a5) = spent(&Baseline::DpIadmm, &g, 0.05, 20_000, 1e-5);
    let (e6, a6) = spent(&Baseline::DpIadmm, &g, 0.05, 20_000, 1e-6);
    assert!(
        rounds_to(e5, 57.0, 1.0) && rounds_to(e6, 60.0, 1.0),
        "{e5} {e6}"
    );
    // The finer grid finds α = 1.65 at 1e-5 (56.564, not §5.4's 56.764); at 1e-6 the optimum
    // 1.75 is on both grids. Same values as dp-accounting over this grid (laplace_pure_dp.rs).
    assert!(rounds_to(e5, 56.5635, 1e-4) && a5 == 1.65, "{e5} at {a5}");
    assert!(rounds_to(e6, 59.8341, 1e-4) && a6 == 1.75, "{e6} at {a6}");
    // The other rows of §5.5 at δ = 1e-5 on this grid (its own rounding): lower, never higher.
    for (t, eps_bar, here, spec) in [
        (20_000, 0.1, 161.2, 164.0),
        (20_000, 1.0, 7902.0, 8.1e3),
        (20_000, 3.0, 42018.0, 4.3e4),
        (20_000, 5.0, 81261.0, 8.3e4),
        (1_000_000, 0.01, 95.85, 95.9),
    ] {
        let (e, _) = spent(&Baseline::DpIadmm, &g, eps_bar, t, 1e-5);
        assert!(
            (e - here).abs() <= 1e-3 * here && e <= spec,
            "T = {t}, ε̄ = {eps_bar}: {e}"
        );
    }
}

#[test]
fn rk_per_iteration_budgets_of_spec_5_5() {
    // "Per-iteration ε̄ needed for a total (ε, δ = 1e-6)", printed to 2–3 significant digits.
    // (target ε, printed ε̄, value of its last digit)
    type Row = [(f64, f64, f64); 4];
    let table: [(u64, Row); 3] = [
        (
            1_000,
            [
                (0.1, 0.00076, 1e-5),
                (1.0, 0.00700, 1e-5),
                (3.0, 0.0193, 1e-4),
                (10.0, 0.0561, 1e-4),
            ],
        ),
        (
            5_000,
            [
                (0.1, 0.00034, 1e-5),
                (1.0, 0.00312, 1e-5),
                (3.0, 0.00862, 1e-5),
                (10.0, 0.0249, 1e-4),
            ],
        ),
        (
            20_000,
            [
                (0.1, 0.00017, 1e-5),
                (1.0, 0.00156, 1e-5),
                (3.0, 0.00431, 1e-5),
                (10.0, 0.0124, 1e-4),
            ],
        ),
    ];
    let g = earlier_grid();
    for (t, row) in table {
        for (eps, printed, unit) in row {
            let cal =
                calibrate_baseline(&Baseline::DpIadmm, &g, t, eps, 1e-6, TIGHT, 1e-6).unwrap();
            // The spec's ε̄ gives its target on the grid it was computed on (to the table's
            // rounding); refined between the grid's orders, the calibration never needs more
            // noise, and 5–6 % less where the best order lies far from the grid's (166, between
            // 128 and 256, for ε = 0.1).
            let (on_grid, _) = spent(&Baseline::DpIadmm, &g, printed, t, 1e-6);
            assert!(
                (on_grid - eps).abs() <= 0.02 * eps,
                "T = {t}, ε = {eps}: the spec's ε̄ gives {on_grid} on its grid"
            );
            assert!(
                cal.knob >= printed - unit / 2.0,
                "T = {t}, ε = {eps}: {} at order {}",
                cal.knob,
                cal.achieved.order
            );
            if eps == 0.1 {
                assert!(
                    cal.knob > 1.05 * printed
                        && cal.achieved.order > 128.0
                        && cal.achieved.order < 256.0,
                    "T = {t}: {} at order {}",
                    cal.knob,
                    cal.achieved.order
                );
            } else {
                assert!(
                    cal.knob <= printed + unit,
                    "T = {t}, ε = {eps}: {}",
                    cal.knob
                );
            }
        }
    }
}

#[test]
fn gaussian_vector_of_spec_5_4_and_ipadmm_constant() {
    // "1 000 × Gaussian, multiplier 127.93, δ = 1e-5: ε = 0.99997 at α = 18", here as IPADMM
    // with t = 100 rounds of l = 10 inner steps, on both grids (18 is on both).
    let hg = Baseline::Ipadmm { inner_steps: 10 };
    for g in [earlier_grid(), Orders::default_grid()] {
        let (e, a) = spent(&hg, &g, 127.93, 100, 1e-5);
        assert!(rounds_to(e, 0.99997, 1e-5) && a == 18.0, "{e} at {a}");
    }
    // Spec §2.3: at δ = 1e-5 the calibrated σ is 0.79× (ε = 0.5) and 0.84× (ε = 1) of
    // Theorem 6's σ = √(t·l·2 ln(1.25/δ))/ε with c₀ = 1, for any t·l from 10 to 10⁴, with the
    // RDP conversion (0.7913 and 0.8350). IPADMM is a composition of Gaussian mechanisms, now
    // calibrated on the exact conversion: σ = √(t·l)/μ* with μ* the largest μ meeting (ε, δ)
    // (fixtures/gdp_exact_reference.json: 0.142211 and 0.268051), so the ratio is
    // ε / (μ*·√(2 ln(1.25/δ))) = 0.7257 and 0.7700.
    let g = Orders::default_grid();
    for (eps, ratio) in [(0.5, 0.7257), (1.0, 0.7700)] {
        for tl in [10_u64, 100, 1000, 10_000] {
            let hg = Baseline::Ipadmm { inner_steps: tl };
            let cal = calibrate_baseline(&hg, &g, 1, eps, 1e-5, TIGHT, 1e-6).unwrap();
            let paper = (tl as f64 * 2.0 * (1.25 / 1e-5_f64).ln()).sqrt() / eps;
            let r = cal.knob / paper;
            assert!(rounds_to(r, ratio, 1e-4), "ε = {eps}, t·l = {tl}: {r}");
        }
    }
}

/// The spec's §3.3 illustration: C = 1, c_L = ¼, θ = 1, V = 4, B = 450.
fn pp_node(theta: f64, growth: f64) -> Baseline {
    let schedule = PenaltySchedule::new(theta, growth, 1e12).unwrap();
    let unit = Unit::Record { records: 450 };
    Baseline::PenaltyPerturbation(
        PenaltyPerturbation::new(1.0, 0.25, 0.0, 4, unit, schedule).unwrap(),
    )
}

fn paper_beta(baseline: &Baseline, nu: f64, rounds: u64) -> f64 {
    match baseline {
        Baseline::PenaltyPerturbation(pp) => pp.paper_beta(nu, rounds).unwrap(),
        _ => unreachable!("a penalty perturbation node"),
    }
}

#[test]
fn penalty_perturbation_example_of_spec_3_3() {
    // "T = 1 000: ν = 5, q = 1 gives pure-DP sum 2.97 but only ε = 0.40 at δ = 1e-6; q = 1.01
    // gives 0.30 and 0.083."
    let (default, earlier) = (Orders::default_grid(), earlier_grid());
    let constant = pp_node(1.0, 1.0);
    assert!(rounds_to(paper_beta(&constant, 5.0, 1000), 2.97, 0.01));
    for g in [&default, &earlier] {
        let (e, _) = spent(&constant, g, 5.0, 1000, 1e-6);
        assert!(rounds_to(e, 0.40, 0.01), "{e}");
    }
    // With round t at η(t) = θq^t, as §3.2–3.3 define it: 0.0807 (default grid), 0.0823 (earlier).
    let growing = pp_node(1.0, 1.01);
    assert!(rounds_to(paper_beta(&growing, 5.0, 1000), 0.30, 0.01));
    let (e, _) = spent(&growing, &default, 5.0, 1000, 1e-6);
    assert!(rounds_to(e, 0.0807, 1e-4), "{e}");
    let (e, _) = spent(&growing, &earlier, 5.0, 1000, 1e-6);
    assert!(rounds_to(e, 0.0823, 1e-4), "{e}");
    // The spec's 0.083 counts the first round at θ (penalties θ, θq, …, θq^999) on the earlier
    // grid: the schedule θ/q here.
    let shifted = pp_node(1.0 / 1.01, 1.01);
    assert!(rounds_to(paper_beta(&shifted, 5.0, 1000), 0.30, 0.01));
    let (e, _) = spent(&shifted, &earlier, 5.0, 1000, 1e-6);
    assert!(rounds_to(e, 0.083, 1e-3), "{e}");
}

/// The figure (exact where the baseline is Gaussian, its order refined otherwise) of `baseline`
/// after `rounds` rounds at `knob`, default grid, δ = 1e-6: what calibration meets.
fn eps_at(baseline: &Baseline, knob: f64, rounds: u64) -> f64 {
    baseline
        .bound(&Orders::default_grid(), knob, rounds, 1e-6, TIGHT)
        .unwrap()
        .epsilon()
}

#[test]
fn calibrated_knobs_meet_the_target_and_are_minimal() {
    let g = Orders::default_grid();
    // (baseline, rounds, does a larger knob mean less noise?)
    let cases = [
        (Baseline::DpIadmm, 20_000, true),
        (Baseline::DpIadmm, 50, true),
        (Baseline::Ipadmm { inner_steps: 10 }, 300, false),
        (Baseline::Ipadmm { inner_steps: 1 }, 1, false),
        (pp_node(1.0, 1.0), 1000, true),
        (pp_node(1.0, 1.02), 2000, true),
    ];
    for (baseline, rounds, larger_is_less_noise) in cases {
        for eps in [0.1, 1.0, 3.0, 10.0] {
            let cal = match calibrate_baseline(&baseline, &g, rounds, eps, 1e-6, TIGHT, 1e-6) {
                Ok(cal) => cal,
                // The Jacobian floor of penalty perturbation alone can exceed a small target.
                Err(PrivacyError::Unattainable { .. }) if eps < 1.0 => continue,
                Err(e) => panic!("{baseline:?}, ε = {eps}: {e}"),
            };
            assert!(cal.achieved.epsilon <= eps && cal.achieved.delta == 1e-6);
            assert!(
                eps_at(&baseline, cal.knob, rounds) <= eps,
                "{baseline:?}, ε = {eps}"
            );
            let less_noise = if larger_is_less_noise {
                1.001
            } else {
                1.0 / 1.001
            };
            let over = eps_at(&baseline, cal.knob * less_noise, rounds);
            assert!(
                over > eps,
                "{baseline:?}, ε = {eps}: 0.1 % less noise gives {over}"
            );
        }
    }
}

#[test]
fn calibration_refuses_bad_targets_and_reports_the_jacobian_floor() {
    let g = Orders::default_grid();
    let rk = Baseline::DpIadmm;
    assert!(matches!(
        calibrate_baseline(&rk, &g, 10, 0.0, 1e-6, TIGHT, 1e-6),
        Err(PrivacyError::Epsilon(_))
    ));
    assert!(matches!(
        calibrate_baseline(&rk, &g, 10, 1.0, f64::NAN, TIGHT, 1e-6),
        Err(PrivacyError::Delta(_))
    ));
    assert!(matches!(
        calibrate_baseline(&rk, &g, 10, 1.0, 1e-6, TIGHT, 0.0),
        Err(PrivacyError::Option {
            name: "rel_tol",
            ..
        })
    ));
    // No rounds: nothing to hide.
    assert_eq!(
        calibrate_baseline(&rk, &g, 0, 1.0, 1e-6, TIGHT, 1e-6),
        Err(PrivacyError::NoiseNotNeeded)
    );
    // θ = 0.001 with V·B = 4: per round at least 1.4·¼/0.004 = 87.5 whatever ν.
    let schedule = PenaltySchedule::new(0.001, 1.0, 1.0).unwrap();
    let unit = Unit::Record { records: 1 };
    let pp = PenaltyPerturbation::new(1.0, 0.25, 1.0, 4, unit, schedule).unwrap();
    match calibrate_baseline(
        &Baseline::PenaltyPerturbation(pp),
        &g,
        100,
        1.0,
        1e-6,
        TIGHT,
        1e-6,
    ) {
        Err(PrivacyError::Unattainable { reason, .. }) => {
            assert!(reason.contains("Jacobian"), "{reason}")
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn spent_grows_with_the_rounds() {
    let g = Orders::default_grid();
    for (baseline, knob) in [
        (Baseline::DpIadmm, 0.01),
        (Baseline::Ipadmm { inner_steps: 5 }, 30.0),
        (pp_node(1.0, 1.01), 5.0),
    ] {
        let mut last = 0.0;
        for k in [0, 1, 10, 100, 1000, 10_000] {
            let (e, _) = spent(&baseline, &g, knob, k, 1e-6);
            assert!(e >= last, "{baseline:?}: {e} after {k} < {last}");
            last = e;
        }
    }
}

#[test]
fn record_level_view_scales_the_walk_sigma_by_the_clip() {
    // The walk's record-level view is the user-level one at clip min(C, γG₂/m): σ scales with it.
    let g = Orders::default_grid();
    let admm = Algorithm::Admm(AdmmParams::new(0.5, 1.0, 1.0, Some(1.0)).unwrap());
    let clip = record_level_clip(&admm, 50, 1.0).unwrap();
    assert_eq!(clip, 0.01);
    let view = View::Local { contributions: 100 };
    let user = calibrate(&view, &g, 1.0, 1.0, 1e-6, TIGHT, 1e-9).unwrap();
    let record = calibrate(&view, &g, clip, 1.0, 1e-6, TIGHT, 1e-9).unwrap();
    assert!(
        (record.sigma / user.sigma - clip).abs() <= 1e-6 * clip,
        "{} vs {}",
        record.sigma,
        user.sigma
    );
    // And the record-level curve at the user-level σ is (C'/C)² of the user-level one.
    let at = |c: f64| account(&view, &g, Noise::new(user.sigma, c).unwrap()).unwrap();
    for (r, u) in at(clip).values().iter().zip(at(1.0).values()) {
        assert!((r - u * clip * clip).abs() <= 1e-12 * u);
    }
}
