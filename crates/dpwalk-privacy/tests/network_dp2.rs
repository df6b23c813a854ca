//! The tests of `specs/network-dp-2.md` §6–§7 for the path-hidden mixture (N1, N3): the pinned
//! complete-graph values, brute force over every path, the general recursion against the
//! complete graph's two classes, and monotonicity. The per-path references (the linear-Gaussian
//! model) are in `tests/linear_gaussian.rs`.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use dpwalk_privacy::Noise;
use dpwalk_privacy::local::local_view;
use dpwalk_privacy::network::excursion::{Visit, phi_uni, psi_with};
use dpwalk_privacy::network::mixture::{
    Initial, MixtureOptions, PairChain, complete_log_mgf, dropped, mixture, pair_curve,
};
use dpwalk_privacy::rdp::{Conversion, Orders};

/// `Φ_UNI`, or `+∞` for an excursion with more than `q_max` contributions (a dropped path).
fn uni_or_dropped(dists: &mut [u64], q_max: usize) -> f64 {
    if dists.len() > q_max {
        return f64::INFINITY;
    }
    phi_uni(dists)
}

/// `(ln Σ_π P(π)·exp(θ·Ψ_UNI(π)), P(dropped))` over every path of `k` steps of the complete
/// graph on `n` users from `start` (i = 0, j = 1), every visit of `i` a contribution; paths with
/// an excursion of more than `q_max` visits of `i` are omitted from the sum and counted apart.
fn brute_force(n: usize, k: usize, theta: f64, start: usize, q_max: usize) -> (f64, f64) {
    let p = 1.0 / (n - 1) as f64;
    let mut total = 0.0;
    let mut dropped = 0.0;
    let mut path = vec![start; k];
    first_valid(&mut path);
    loop {
        let visits: Vec<Visit> = path
            .iter()
            .map(|&holder| Visit {
                holder,
                contribution: true,
            })
            .collect();
        let psi = match q_max {
            40 => psi_with(&visits, 0, 1, |d| uni_or_dropped(d, 40)),
            1 => psi_with(&visits, 0, 1, |d| uni_or_dropped(d, 1)),
            _ => unreachable!(),
        };
        let prob = p.powi(k as i32 - 1);
        if psi.is_finite() {
            total += prob * (theta * psi).exp();
        } else {
            dropped += prob;
        }
        // Next path in lexicographic order with x_{t+1} ≠ x_t.
        let mut t = k - 1;
        loop {
            if t == 0 {
                return (total.ln(), dropped);
            }
            let mut next = path[t] + 1;
            if next == path[t - 1] {
                next += 1;
            }
            if next < n {
                path[t] = next;
                for u in t + 1..k {
                    path[u] = if path[u - 1] == 0 { 1 } else { 0 };
                }
                break;
            }
            t -= 1;
        }
    }
}

fn first_valid(path: &mut [usize]) {
    for u in 1..path.len() {
        path[u] = if path[u - 1] == 0 { 1 } else { 0 };
    }
}

#[test]
fn the_mixture_equals_brute_force_over_every_path() {
    for n in [3, 4, 5] {
        for k in [6, 7] {
            for theta in [0.3, 2.0] {
                for (initial, start) in [
                    (Initial::Contributor, 0),
                    (Initial::Observer, 1),
                    (Initial::Other, 2),
                ] {
                    for q_max in [40, 1] {
                        let (want, want_dropped) = brute_force(n, k, theta, start, q_max);
                        let opts = MixtureOptions {
                            visits: q_max,
                            horizon: None,
                        };
                        let got = complete_log_mgf(n, k, theta, initial, &opts).unwrap();
                        assert!(
                            (got - want).abs() < 1e-9 * want.abs().max(1.0),
                            "n {n} K {k} θ {theta} {initial:?} Q {q_max}: {got} vs {want}"
                        );
                        let chain = PairChain::complete(n).unwrap();
                        let drop = dropped(&chain, k, &opts);
                        let at = match initial {
                            Initial::Contributor => 0,
                            Initial::Other => 1,
                            Initial::Observer => 2,
                        };
                        assert!(
                            (drop[at] - want_dropped).abs() < 1e-12,
                            "n {n} K {k} {initial:?} Q {q_max}: dropped {} vs {want_dropped}",
                            drop[at]
                        );
                        if q_max == 1 && k == 7 {
                            assert!(want_dropped > 0.0, "Q = 1 drops some path");
                        }
                    }
                }
            }
        }
    }
}

/// §7: `ln E exp(θ·Ψ_UNI)` on the complete graph (Q = 40), per initial class.
#[test]
fn the_pinned_complete_graph_mixtures() {
    let table: [(usize, usize, f64, [f64; 3]); 6] = [
        (5, 6, 0.3, [0.403751448, 0.244087324, 0.244087324]),
        (5, 6, 2.0, [3.80830642, 2.757387187, 2.757387187]),
        (10, 40, 0.3, [0.681963685, 0.565644252, 0.565644252]),
        (10, 40, 2.0, [10.415743628, 9.212631872, 9.212631872]),
        (100, 1000, 0.3, [0.239803777, 0.219399628, 0.219399628]),
        (100, 1000, 2.0, [2.704294419, 2.494515901, 2.494515901]),
    ];
    for (n, k, theta, want) in table {
        for (initial, w) in [Initial::Contributor, Initial::Other, Initial::Observer]
            .into_iter()
            .zip(want)
        {
            let got = complete_log_mgf(n, k, theta, initial, &MixtureOptions::default()).unwrap();
            assert!(
                (got - w).abs() < 1e-8 * w.max(1.0),
                "n {n} K {k} θ {theta} {initial:?}: {got} vs {w}"
            );
        }
    }
}

/// The complete graph's rows as transitions.
fn complete_rows(n: usize) -> Vec<Vec<(usize, f64)>> {
    (0..n)
        .map(|x| {
            (0..n)
                .filter(|&y| y != x)
                .map(|y| (y, 1.0 / (n - 1) as f64))
                .collect()
        })
        .collect()
}

#[test]
fn the_general_recursion_on_the_complete_graph_equals_the_two_classes() {
    let (n, k) = (7, 30);
    let rows = complete_rows(n);
    let opts = MixtureOptions::default();
    for theta in [0.05, 0.7, 3.0] {
        let two = mixture(&PairChain::complete(n).unwrap(), k, theta, &opts);
        let general = mixture(&PairChain::pair(&rows, 2, 5).unwrap(), k, theta, &opts);
        // General states: users other than j = 5, in order; i = 2 is state 2, another user 0.
        for (g, t) in [
            (general[2], two[0]),
            (general[0], two[1]),
            (general[6], two[2]),
        ] {
            assert!(
                (g - t).abs() < 1e-12 * t.abs().max(1.0),
                "θ {theta}: {g} vs {t}"
            );
        }
    }
}

#[test]
fn the_certified_tail_only_over_charges_and_stays_close() {
    let chain = PairChain::complete(10).unwrap();
    for theta in [0.1, 0.5] {
        let exact = mixture(&chain, 2000, theta, &MixtureOptions::default());
        let tailed = mixture(
            &chain,
            2000,
            theta,
            &MixtureOptions {
                horizon: Some(100),
                ..MixtureOptions::default()
            },
        );
        for (e, t) in exact.iter().zip(&tailed) {
            assert!(
                *t >= e * (1.0 - 1e-12),
                "θ {theta}: tail {t} below exact {e}"
            );
            assert!(*t <= e * 1.05, "θ {theta}: tail {t} far above exact {e}");
        }
    }
}

fn eps(curve: &dpwalk_privacy::rdp::RdpCurve) -> f64 {
    curve.to_dp(1e-6, Conversion::Tight).unwrap().epsilon()
}

/// The RDP figure (the spec's figures are RDP conversions; the local view's printed figure is
/// the exact one, below it).
fn rdp_eps(curve: &dpwalk_privacy::rdp::RdpCurve) -> f64 {
    match curve.to_dp(1e-6, Conversion::Tight).unwrap() {
        dpwalk_privacy::rdp::DpBound::Finite(g) => g.rdp_epsilon,
        dpwalk_privacy::rdp::DpBound::NoFiniteGuarantee { .. } => f64::INFINITY,
    }
}

#[test]
fn n1_is_below_local_order_by_order_and_grows_with_the_walk() {
    let orders = Orders::default_grid();
    let noise = Noise::new(20.0, 1.0).unwrap();
    let chain = PairChain::complete(100).unwrap();
    let opts = MixtureOptions::default();
    let cap = 18;
    let local = local_view(&orders, noise, cap);
    let mut last = 0.0;
    for k in [200, 500, 1000] {
        let curve = pair_curve(&chain, k, cap, &orders, noise, &opts);
        for (n1, l) in curve.values().iter().zip(local.values()) {
            assert!(n1 <= l, "N1 above local: {n1} > {l}");
        }
        let e = eps(&curve);
        assert!(e >= last, "N1 decreased with K: {e} < {last}");
        last = e;
    }
}

/// §7 regression figure: n = 100, K = 1000, σ/C = 20, K_max = 18, δ = 1e-6: local 4.3418,
/// N1 1.4088 on the spec's 28 orders. On that grid ours is 1.4218 for the worst initial holder
/// (the contributor itself starts the walk; 0.9 % above) and 1.4022 for any other (0.5 % below);
/// the spec does not say which holder its figure assumed. Our figure covers every initial
/// holder, and our finer default grid lowers it to 1.3806 (best order 10.9, not on the spec's
/// grid).
#[test]
fn the_spec_regression_figure() {
    let orders = Orders::default_grid();
    let noise = Noise::new(20.0, 1.0).unwrap();
    let local = rdp_eps(&local_view(&orders, noise, 18));
    // The printed local figure is the exact conversion of 4·√18/20-GDP: 4.0574 (mpmath).
    let exact = eps(&local_view(&orders, noise, 18));
    assert!((exact - 4.0574).abs() < 1e-4, "exact local {exact}");
    let n1 = eps(&pair_curve(
        &PairChain::complete(100).unwrap(),
        1000,
        18,
        &orders,
        noise,
        &MixtureOptions::default(),
    ));
    assert!((local - 4.3418).abs() < 0.02 * 4.3418, "local {local}");
    assert!(n1 < local);
    // On the spec's own grid the figures are the spec's; our finer grid can only lower them.
    let mut grid: Vec<f64> = (0..12).map(|i| 1.5 + 8.5 * i as f64 / 11.0).collect();
    grid.extend((0..16).map(|i| 12.0 * (400.0f64 / 12.0).powf(i as f64 / 15.0)));
    let spec = Orders::new(&grid).unwrap();
    let spec_local = rdp_eps(&local_view(&spec, noise, 18));
    let spec_n1 = eps(&pair_curve(
        &PairChain::complete(100).unwrap(),
        1000,
        18,
        &spec,
        noise,
        &MixtureOptions::default(),
    ));
    assert!(
        (spec_local - 4.3418).abs() < 1e-3,
        "local on the spec's grid {spec_local}"
    );
    assert!(
        (spec_n1 - 1.4088).abs() < 0.01 * 1.4088,
        "N1 on the spec's grid {spec_n1}"
    );
    assert!(n1 <= spec_n1 + 1e-12 && local <= spec_local + 1e-12);
}

/// n = 2: the token alternates, so every contribution is seen at the next hop, and the
/// final-model observer pattern charges the local figure.
#[test]
fn two_users_get_the_local_figure() {
    let orders = Orders::default_grid();
    let noise = Noise::new(5.0, 1.0).unwrap();
    let k = 10;
    let chain = PairChain::complete(2).unwrap();
    let curve = pair_curve(&chain, k, 5, &orders, noise, &MixtureOptions::default());
    let local = local_view(&orders, noise, 5);
    for (n1, l) in curve.values().iter().zip(local.values()) {
        assert!((n1 - l).abs() <= 1e-9 * l, "{n1} vs {l}");
    }
}

/// Long walks on the complete graph solve the renewal by FFT convolutions: the same mixture as
/// the term-by-term renewal (which a tail of one distance forces), never below it and above it
/// by the rounding margin only.
#[test]
fn the_fast_renewal_matches_the_direct_one() {
    let (n, k) = (50, 3000);
    let chain = PairChain::complete(n).unwrap();
    for theta in [0.05, 0.4] {
        let fast = mixture(&chain, k, theta, &MixtureOptions::default());
        let direct = mixture(
            &chain,
            k,
            theta,
            &MixtureOptions {
                horizon: Some(k - 1),
                ..MixtureOptions::default()
            },
        );
        for (f, d) in fast.iter().zip(&direct) {
            assert!(
                *f >= d * (1.0 - 1e-12),
                "θ {theta}: fast {f} below direct {d}"
            );
            assert!(
                *f <= d * (1.0 + 1e-7),
                "θ {theta}: fast {f} far above direct {d}"
            );
        }
    }
}
