use super::*;
use crate::rdp::Conversion;

/// The transition rows of a random `degree`-regular graph on `n` users (the topology module's
/// generator): what the N3 tests walk on.
pub(super) fn random_regular(n: usize, degree: usize, seed: u64) -> Vec<Vec<(usize, f64)>> {
    use dpwalk_core::topology::{TopologyKind, TopologySpec};
    let mut spec = TopologySpec::new(TopologyKind::RandomRegular);
    spec.degree = Some(degree);
    let topology = spec
        .build(Some(n), std::path::Path::new("."), seed)
        .unwrap();
    crate::walk::transition_rows(&topology)
}

/// `k` contributions at the latest steps a walk without self-loops allows: `h = 1, 3, 5, …`.
fn latest(k: u64) -> Charges {
    Charges::from_pairs((0..k).map(|c| (Horizon::Final(1 + 2 * c), 1)))
}

fn eps(curve: &RdpCurve, delta: f64) -> f64 {
    curve.to_dp(delta, Conversion::Tight).unwrap().epsilon()
}

#[test]
fn path_factor_is_one_over_m_without_growth_and_above_it_with() {
    for m in [1_u64, 2, 7, 1000] {
        assert!((path_factor(1.0, m) - 1.0 / m as f64).abs() < 1e-15);
        assert!((path_factor(1.0 + 1e-300, m) - 1.0 / m as f64).abs() < 1e-15);
    }
    let l = admm_lipschitz(1.0, 100);
    assert!((l - 1.02).abs() < 1e-15);
    assert_eq!(path_factor(l, 1), 1.0);
    let floor = 1.0 - l.powi(-2);
    let mut before = f64::INFINITY;
    for m in 1..500 {
        let g = path_factor(l, m);
        assert!(g >= 1.0 / m as f64 && g < before && g > floor);
        // Direct form: mean gap d·L^{m−1} against variance Σ_{t<m} L^{2t}.
        let direct = l.powi(2 * (m as i32 - 1)) / (0..m as i32).map(|t| l.powi(2 * t)).sum::<f64>();
        assert!((g - direct).abs() < 1e-12 * direct, "{m}");
        before = g;
    }
}

#[test]
fn lipschitz_growth_magnitudes_match_the_review() {
    // specs/network-dp.md §1 A: E[g(M)]/E[1/M] on the complete graph of 100 users.
    let inv = PassageLaw::complete(100, 1.0).unwrap().path_share();
    for (lambda, expected) in [(0.1, 1.04), (0.5, 1.26), (1.0, 1.57)] {
        let share = PassageLaw::complete(100, admm_lipschitz(lambda, 100))
            .unwrap()
            .path_share();
        assert!(
            (share / inv - expected).abs() < 0.01,
            "{lambda}: {}",
            share / inv
        );
    }
}

#[test]
fn mixture_is_never_above_the_old_rule_where_it_was_valid() {
    let orders = Orders::default_grid();
    for n in [3_u64, 20, 1000] {
        let law = PassageLaw::complete(n, 1.0).unwrap();
        let inv = complete_graph_inverse_hitting(n).unwrap();
        for sigma in [2.0, 10.0, 100.0] {
            let noise = Noise::new(sigma, 1.0).unwrap();
            let new = network_curve(&law, &orders, noise, &Charges::open(7));
            for (&alpha, &v) in orders.as_slice().iter().zip(new.values()) {
                let e = eps_loc(alpha, sigma, 1.0);
                let c = (alpha - 1.0) * e;
                if c <= 1.0 {
                    // The law's certified share is ≤ 0.1 % above E[1/M]: compare to that.
                    let old = 7.0 * (1.0 + c) * e * inv * 1.001;
                    assert!(v <= old, "n {n} sigma {sigma} alpha {alpha}: {v} > {old}");
                }
                assert!(v <= 7.0 * e * (1.0 + 1e-12));
            }
        }
    }
}

#[test]
fn the_curve_grows_with_contributions_order_and_falls_with_noise() {
    let orders = Orders::default_grid();
    let law = PassageLaw::complete(50, admm_lipschitz(0.5, 50)).unwrap();
    let curve = |sigma: f64, k: u64| {
        network_curve(&law, &orders, Noise::new(sigma, 1.0).unwrap(), &latest(k))
    };
    let base = curve(10.0, 20);
    for w in base.values().windows(2) {
        assert!(w[1] >= w[0], "monotone in alpha");
    }
    for (a, b) in base.values().iter().zip(curve(12.0, 20).values()) {
        assert!(b <= a);
    }
    for (a, b) in base.values().iter().zip(curve(10.0, 21).values()) {
        assert!(b >= a);
    }
}

#[test]
fn the_final_model_charges_late_contributions_more() {
    let orders = Orders::default_grid();
    let noise = Noise::new(50.0, 1.0).unwrap();
    let law = PassageLaw::complete(1000, 1.0).unwrap();
    let open = eps(
        &network_curve(&law, &orders, noise, &Charges::open(100)),
        1e-6,
    );
    // The last contribution made at the last step: one hop, the full local charge.
    let last = Charges::from_pairs([(Horizon::Open, 99), (Horizon::Final(1), 1)]);
    let with_last = eps(&network_curve(&law, &orders, noise, &last), 1e-6);
    let worst = eps(&network_curve(&law, &orders, noise, &latest(100)), 1e-6);
    assert!(
        open < with_last && with_last < worst,
        "{open} {with_last} {worst}"
    );
    // A contribution long before the end costs what an open one does, to rounding.
    let early = eps(
        &network_curve(&law, &orders, noise, &Charges::at_steps([0], 1 << 40)),
        1e-6,
    );
    let one_open = eps(
        &network_curve(&law, &orders, noise, &Charges::open(1)),
        1e-6,
    );
    assert!(
        (early - one_open).abs() <= 1e-6 * one_open.max(1e-12),
        "{early} {one_open}"
    );
}

#[test]
fn one_intermediate_hop_is_exact() {
    // Observer two hops away with certainty (a path i → l → j): g(2) = 1/(1 + L²)... as a law.
    let l = 1.3;
    let starts = law::bucket_starts(4);
    let mut mass = vec![0.0; starts.len()];
    let mut gsum = mass.clone();
    mass[1] = 1.0;
    gsum[1] = path_factor(l, 2);
    let tail = law::Tail {
        mass: 0.0,
        decay: 0.0,
        certain: true,
    };
    let pl = PassageLaw::from_buckets(l, 4, starts, mass, gsum, tail);
    let orders = Orders::new(&[2.0, 8.0]).unwrap();
    let noise = Noise::new(3.0, 1.0).unwrap();
    let curve = network_curve(&pl, &orders, noise, &Charges::open(1));
    for (&alpha, &v) in orders.as_slice().iter().zip(curve.values()) {
        let expected = eps_loc(alpha, 3.0, 1.0) / (1.0 + l * l) * l * l;
        assert!((v - expected).abs() < 1e-12 * expected, "{v} {expected}");
    }
}

#[test]
fn charges_sort_merge_and_count() {
    let c = Charges::from_pairs([
        (Horizon::Open, 2),
        (Horizon::Final(5), 1),
        (Horizon::Final(2), 1),
        (Horizon::Final(5), 3),
        (Horizon::Final(9), 0),
    ]);
    assert_eq!(
        c.entries(),
        &[
            (Horizon::Final(2), 1),
            (Horizon::Final(5), 4),
            (Horizon::Open, 2)
        ]
    );
    assert_eq!(c.count(), 7);
    assert_eq!(latest(3).entries()[2], (Horizon::Final(5), 1));
    assert_eq!(
        Charges::at_steps([9, 3], 10).entries()[0],
        (Horizon::Final(1), 1)
    );
    let r = Charges::recent(10, &[3, 40], 64);
    assert_eq!(r.count(), 10);
    assert_eq!(r.entries()[2], (Horizon::Final(65), 8));
}

#[test]
fn paper_form_is_labelled_and_checked() {
    let orders = Orders::default_grid();
    let noise = Noise::new(50.0, 1.0).unwrap();
    assert!(paper_closed_form(&orders, noise, 10, 1).is_err());
    assert!(paper_closed_form(&orders, noise, 10, 100).is_ok());
}
