//! The network view's order is refined between the grid's orders (`dpwalk_privacy::refine`):
//! every figure is checked here against the best order found by brute force over a dense grid
//! (plain minima, no refinement), and calibration and the budget policy against the figure that
//! is printed.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use dpwalk_privacy::Noise;
use dpwalk_privacy::budget::Policy;
use dpwalk_privacy::calibrate::{REL_TOL, View, calibrate};
use dpwalk_privacy::ledger::Budget;
use dpwalk_privacy::network::complete::CompleteView;
use dpwalk_privacy::network::mixture::{MixtureOptions, Observer, PairChain};
use dpwalk_privacy::rdp::{Conversion, DpBound, DpGuarantee, Orders};

const DELTA: f64 = 1e-6;

fn finite(b: DpBound) -> DpGuarantee {
    match b {
        DpBound::Finite(g) => g,
        DpBound::NoFiniteGuarantee { .. } => panic!("no finite guarantee"),
    }
}

/// `count` orders spread evenly in `ln(α − 1)` over `[lo, hi]`.
fn spread(lo: f64, hi: f64, count: usize) -> Vec<f64> {
    let (a, b) = ((lo - 1.0).ln(), (hi - 1.0).ln());
    (0..count)
        .map(|x| 1.0 + (a + (b - a) * x as f64 / (count - 1) as f64).exp())
        .collect()
}

/// The RDP figure of `observer` at its best order by brute force: 400 orders over the default
/// grid's span, then 400 between the best one's neighbours; plain grid minima.
fn brute_force(observer: &Observer, noise: Noise, cap: u64) -> f64 {
    let rdp = |orders: Vec<f64>| {
        let orders = Orders::new(&orders).unwrap();
        finite(
            observer
                .mixtures(&orders, noise)
                .curve(cap)
                .to_dp(DELTA, Conversion::Tight)
                .unwrap(),
        )
    };
    let all = spread(1.01, 1024.0, 400);
    let coarse = rdp(all.clone());
    let x = all.iter().position(|&a| a == coarse.order).unwrap();
    let (lo, hi) = (all[x.saturating_sub(1)], all[(x + 1).min(all.len() - 1)]);
    coarse.rdp_epsilon.min(rdp(spread(lo, hi, 400)).rdp_epsilon)
}

/// The printed N1 figure's RDP part is within 0.1 % of the best order's (the target),
/// and never below it (it is a minimum over real orders), on walks where the network orders
/// alone missed by up to 18 %.
#[test]
fn n1_is_within_a_thousandth_of_its_best_order() {
    let grid = Orders::default_grid();
    for (users, steps, cap, sigma) in [
        (100_u64, 10_000_u64, 126_u64, 78.9),
        (100, 1_000, 18, 20.0),
        (100, 10_000, 100, 20.0),
        (50, 500, 5, 5.0),
        (100, 10_000, 200, 80.0),
    ] {
        let noise = Noise::new(sigma, 1.0).unwrap();
        let view = CompleteView::new(&grid, users, steps).unwrap();
        let printed = finite(view.bound(noise, cap, DELTA, Conversion::Tight).unwrap());
        let best = brute_force(&view.observer(), noise, cap);
        let r = printed.rdp_epsilon / best;
        assert!(
            (1.0 - 1e-6..=1.0 + 1e-3).contains(&r),
            "n {users} K {steps} cap {cap} σ {sigma}: {} at order {} against {best}",
            printed.rdp_epsilon,
            printed.order
        );
        assert!(printed.epsilon <= printed.rdp_epsilon);
    }
}

/// The same for a pair and a coalition of a sparse graph (N3).
#[test]
fn n3_pairs_and_coalitions_are_within_a_thousandth_of_their_best_order() {
    use dpwalk_core::topology::{TopologyKind, TopologySpec};
    use dpwalk_privacy::network::coalition::Coalition;
    let mut spec = TopologySpec::new(TopologyKind::RandomRegular);
    spec.degree = Some(4);
    let topology = spec.build(Some(16), std::path::Path::new("."), 2).unwrap();
    let rows = dpwalk_privacy::walk::transition_rows(&topology);
    let orders = dpwalk_privacy::network::mixture::network_orders(&Orders::default_grid()).unwrap();
    let (noise, steps, cap) = (Noise::new(20.0, 1.0).unwrap(), 320, 30);
    let opts = MixtureOptions::default();
    let chain = PairChain::pair(&rows, 0, rows[0][0].0).unwrap();
    let coalition = Coalition::new(&rows, 0).unwrap();
    for observer in [
        Observer::pair(&chain, steps, &opts),
        coalition.observer(steps, &opts),
    ] {
        let mixtures = observer.mixtures(&orders, noise);
        let printed = finite(
            observer
                .bound(&mixtures, cap, DELTA, Conversion::Tight)
                .unwrap(),
        );
        let best = brute_force(&observer, noise, cap);
        let r = printed.rdp_epsilon / best;
        assert!(
            (1.0 - 1e-6..=1.0 + 1e-3).contains(&r),
            "{observer:?}: {} at order {} against {best}",
            printed.rdp_epsilon,
            printed.order
        );
    }
}

/// A calibrated σ meets its target with the printed figure, and 0.1 % less does not: the search
/// over orders between the grid's finds the best order's σ.
#[test]
fn network_calibration_meets_the_printed_figure_and_is_within_a_thousandth() {
    let grid = Orders::default_grid();
    for (users, steps, cap, epsilon) in [(100_u64, 10_000_u64, 126_u64, 1.0), (100, 1_000, 18, 2.0)]
    {
        let view = View::Network { users, steps, cap };
        let cal = calibrate(
            &view,
            &grid,
            1.0,
            epsilon,
            DELTA,
            Conversion::Tight,
            REL_TOL,
        )
        .unwrap();
        let complete = CompleteView::new(&grid, users, steps).unwrap();
        let at = |sigma: f64| {
            complete
                .bound(
                    Noise::new(sigma, 1.0).unwrap(),
                    cap,
                    DELTA,
                    Conversion::Tight,
                )
                .unwrap()
        };
        assert_eq!(DpBound::Finite(cal.achieved), at(cal.sigma));
        assert!(cal.achieved.epsilon <= epsilon);
        assert!(
            at(cal.sigma * (1.0 - 1e-3)).epsilon() > epsilon,
            "n {users} K {steps}: σ {} is not within 0.1 % of the smallest",
            cal.sigma
        );
    }
}

/// The budget policy's cap on the network view is the largest count whose printed figure is
/// within the budget.
#[test]
fn the_network_cap_is_the_largest_count_the_printed_figure_allows() {
    let grid = Orders::default_grid();
    let (users, steps) = (100, 10_000);
    let noise = Noise::new(40.0, 1.0).unwrap();
    let budget = Budget::new(1.5, DELTA).unwrap();
    let policy = Policy::network(budget, Conversion::Tight, &grid, noise, users, steps).unwrap();
    let view = CompleteView::new(&grid, users, steps).unwrap();
    let eps = |cap: u64| {
        view.bound(noise, cap, DELTA, Conversion::Tight)
            .unwrap()
            .epsilon()
    };
    let cap = policy.cap();
    assert!(cap > 0);
    assert!(eps(cap) <= 1.5, "cap {cap}: {}", eps(cap));
    assert!(eps(cap + 1) > 1.5, "cap {cap} + 1: {}", eps(cap + 1));
}
