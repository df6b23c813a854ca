//! Invariants of the accountant, by proptest.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use dpwalk_privacy::Noise;
use dpwalk_privacy::calibrate::{View, account, calibrate};
use dpwalk_privacy::local::local_view;
use dpwalk_privacy::mechanism::subsampled_gaussian;
use dpwalk_privacy::network::{complete_graph_inverse_hitting, network_view, paper_closed_form};
use dpwalk_privacy::rdp::{Conversion, Orders};
use proptest::prelude::*;

fn eps(view: &View, sigma: f64, delta: f64) -> f64 {
    let g = Orders::default_grid();
    account(view, &g, Noise::new(sigma, 1.0).unwrap())
        .unwrap()
        .to_dp(delta, Conversion::Tight)
        .unwrap()
        .epsilon()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]

    #[test]
    fn epsilon_grows_with_steps_and_falls_with_sigma(
        k in 1u64..10_000, sigma in 0.5f64..200.0, q in 0.001f64..1.0, inv in 0.0001f64..1.0,
    ) {
        let views = |k: u64| [
            View::Local { contributions: k },
            View::Network { contributions: k, inverse_hitting: inv },
            View::Centralized { rounds: k, users: 100 },
            View::Federated { rounds: k, sampling_rate: q },
        ];
        for (a, b) in views(k).iter().zip(views(k + 1).iter()) {
            let (e0, e1) = (eps(a, sigma, 1e-5), eps(b, sigma, 1e-5));
            prop_assert!(!e0.is_nan() && e0 <= e1, "{a:?}: {e0} > {e1}");
            let e2 = eps(a, sigma * 1.5, 1e-5);
            prop_assert!(e2 <= e0, "{a:?}: σ up, ε {e0} -> {e2}");
        }
    }

    #[test]
    fn network_is_never_above_local(k in 1u64..1000, sigma in 0.1f64..100.0, inv in 0.0f64..=1.0) {
        let g = Orders::default_grid();
        let noise = Noise::new(sigma, 1.0).unwrap();
        let net = network_view(&g, noise, k, inv).unwrap();
        let loc = local_view(&g, noise, k);
        for (n, l) in net.curve.values().iter().zip(loc.values()) {
            prop_assert!(n <= l);
        }
    }

    #[test]
    fn complete_graph_matches_the_paper_up_to_named_factors(
        n in 3u64..2_000_000, k in 1u64..1000, sigma in 1.0f64..1000.0,
    ) {
        // exact/(1 + c) = K ε_loc ln(n−1)/(n−2) lies in [paper, paper · n/(n−2)] where c ≤ 1.
        let g = Orders::default_grid();
        let noise = Noise::new(sigma, 1.0).unwrap();
        let inv = complete_graph_inverse_hitting(n).unwrap();
        let net = network_view(&g, noise, k, inv).unwrap();
        let paper = paper_closed_form(&g, noise, k, n).unwrap();
        let nf = n as f64;
        for ((&a, &e), &p) in g.as_slice().iter().zip(net.curve.values()).zip(paper.values()) {
            if net.fallback_orders.contains(&a) {
                continue;
            }
            let c = (a - 1.0) * 8.0 * a / (sigma * sigma);
            let bare = e / (1.0 + c);
            let local = k as f64 * 8.0 * a / (sigma * sigma);
            if bare < local * (1.0 - 1e-12) {
                prop_assert!(bare >= p * (1.0 - 1e-12), "α={a}: {bare} < paper {p}");
                prop_assert!(bare <= p * nf / (nf - 2.0) * (1.0 + 1e-12), "α={a}");
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
            1 => View::Network { contributions: k, inverse_hitting: 0.01 },
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
