//! Invariants of the accountant, by proptest.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use dpwalk_privacy::Noise;
use dpwalk_privacy::calibrate::{View, account, calibrate};
use dpwalk_privacy::local::local_view;
use dpwalk_privacy::mechanism::subsampled_gaussian;
use dpwalk_privacy::network::{
    Charges, PassageLaw, complete_graph_inverse_hitting, network_curve, paper_closed_form,
};
use dpwalk_privacy::rdp::{Conversion, DpBound, Orders};
use proptest::prelude::*;

fn eps(view: &View, sigma: f64, delta: f64) -> f64 {
    let g = Orders::default_grid();
    account(view, &g, Noise::new(sigma, 1.0).unwrap())
        .unwrap()
        .to_dp(delta, Conversion::Tight)
        .unwrap()
        .epsilon()
}

/// ε and the grid step of its losses where it is the PLD figure (0 otherwise): the PLD figure
/// is an upper bound computed on that grid, so two of them compare only up to one step.
fn eps_and_step(view: &View, sigma: f64, delta: f64) -> (f64, f64) {
    let g = Orders::default_grid();
    match account(view, &g, Noise::new(sigma, 1.0).unwrap())
        .unwrap()
        .to_dp(delta, Conversion::Tight)
        .unwrap()
    {
        DpBound::Finite(f) => (f.epsilon, f.pld_interval.unwrap_or(0.0)),
        DpBound::NoFiniteGuarantee { .. } => (f64::INFINITY, 0.0),
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]

    #[test]
    fn epsilon_grows_with_steps_and_falls_with_sigma(
        k in 1u64..10_000, sigma in 0.5f64..200.0, q in 0.001f64..1.0,
    ) {
        let views = |k: u64| [
            View::Local { contributions: k },
            View::Centralized { rounds: k, users: 100 },
            View::Federated { rounds: k, sampling_rate: q },
        ];
        for (a, b) in views(k).iter().zip(views(k + 1).iter()) {
            let ((e0, h0), (e1, h1)) = (eps_and_step(a, sigma, 1e-5), eps_and_step(b, sigma, 1e-5));
            prop_assert!(!e0.is_nan() && e0 <= e1 + h0.max(h1), "{a:?}: {e0} > {e1}");
            let (e2, h2) = eps_and_step(a, sigma * 1.5, 1e-5);
            prop_assert!(e2 <= e0 + h0.max(h2), "{a:?}: σ up, ε {e0} -> {e2}");
        }
    }

    #[test]
    fn network_is_never_above_local(k in 1u64..300, sigma in 0.1f64..100.0, n in 2u64..10_000, last in 1u64..50) {
        let g = Orders::default_grid();
        let noise = Noise::new(sigma, 1.0).unwrap();
        let law = PassageLaw::complete(n, 1.0).unwrap();
        let charges = Charges::from_pairs([
            (dpwalk_privacy::network::Horizon::Open, k),
            (dpwalk_privacy::network::Horizon::Final(last), 1),
        ]);
        let net = network_curve(&law, &g, noise, &charges);
        let loc = local_view(&g, noise, k + 1);
        for (n, l) in net.values().iter().zip(loc.values()) {
            prop_assert!(n <= l);
        }
    }

    #[test]
    fn complete_graph_is_between_the_paper_and_the_old_rule(
        n in 3u64..2_000_000, k in 1u64..1000, sigma in 1.0f64..1000.0,
    ) {
        // Without the final model the mixture is at least the first-order term of the paper's
        // form (up to n/(n−2) and the certified margin) and at most the old (1 + c)·E[1/M] rule
        // where that one held.
        let g = Orders::default_grid();
        let noise = Noise::new(sigma, 1.0).unwrap();
        let inv = complete_graph_inverse_hitting(n).unwrap();
        let law = PassageLaw::complete(n, 1.0).unwrap();
        let net = network_curve(&law, &g, noise, &Charges::open(k));
        let paper = paper_closed_form(&g, noise, k, n).unwrap();
        let nf = n as f64;
        for ((&a, &e), &p) in g.as_slice().iter().zip(net.values()).zip(paper.values()) {
            let local = k as f64 * 8.0 * a / (sigma * sigma);
            let c = (a - 1.0) * 8.0 * a / (sigma * sigma);
            if e < local * (1.0 - 1e-9) {
                prop_assert!(e >= p * (1.0 - 1e-9), "α={a}: {e} < paper {p}");
            }
            if c <= 1.0 {
                let old = (1.0 + c) * local * inv * 1.001;
                prop_assert!(e <= old.max(p * nf / (nf - 2.0)) , "α={a}: {e} > old rule {old}");
            }
        }
    }

    #[test]
    fn calibration_inverts_accounting(
        target in 0.1f64..10.0, k in 1u64..1000, which in 0usize..3, q in 0.01f64..1.0,
    ) {
        let g = Orders::default_grid();
        let view = match which {
            0 => View::Local { contributions: k },
            1 => View::Centralized { rounds: k.min(50), users: 100 },
            _ => View::Federated { rounds: k.min(50), sampling_rate: q },
        };
        let cal = calibrate(&view, &g, 1.0, target, 1e-5, Conversion::Tight, 1e-6).unwrap();
        let at = eps(&view, cal.sigma, 1e-5);
        prop_assert!(at <= target, "{at} > {target}");
        let below = eps(&view, cal.sigma * (1.0 - 1e-5), 1e-5);
        prop_assert!(below > target * (1.0 - 1e-3) , "σ not minimal: {below} vs {target}");
    }

    #[test]
    fn bad_inputs_are_errors_not_nan(sigma in -10.0f64..10.0, q in -1.0f64..2.0, d in -1.0f64..2.0) {
        let g = Orders::default_grid();
        match Noise::new(sigma, 1.0) {
            Ok(noise) => {
                prop_assert!(sigma > 0.0);
                for v in local_view(&g, noise, 3).values() {
                    prop_assert!(!v.is_nan());
                }
            }
            Err(_) => prop_assert!(sigma <= 0.0),
        }
        let r = subsampled_gaussian(&g, q, 1.0);
        prop_assert_eq!(r.is_ok(), q > 0.0 && q <= 1.0);
        if let Ok(c) = r {
            prop_assert!(c.values().iter().all(|v| !v.is_nan()));
            let conv = c.to_dp(d, Conversion::Tight);
            prop_assert_eq!(conv.is_ok(), d > 0.0 && d < 1.0);
            if let Ok(b) = conv {
                prop_assert!(!b.epsilon().is_nan());
            }
        }
    }
}
