//! Calibration: the noise meeting a target (ε, δ), by bisection on the accountant.
//!
//! Two entries share one search (`smallest_noise`): [`calibrate`], the smallest σ for one of
//! dpwalk's views, and [`calibrate_baseline`], a seed baseline's knob for its planned horizon
//! (seed-baselines spec §5.4).
//!
//! # The search
//! It is run on a noise level `x` that makes every curve nonincreasing at each order (σ; `1/ε̄`,
//! the Laplace scale ratio `b/Δ₁`, for \[RK\]; `1/ν` for \[ZKL\]), and the conversion to ε is a
//! minimum of nondecreasing functions of the curve, so `ε(x)` is nonincreasing and bisection in
//! `ln x` finds the threshold. The search brackets `x` between `10⁻⁹` and `10⁹` times a starting
//! point (`C` for σ, 1 for the baselines) by doubling and halving from it; the answer is the
//! upper end of the final bracket, so it always meets the target, and the bracket is narrowed to
//! the relative tolerance. A PLD figure ([`crate::pld`]) is nonincreasing in σ only up to its
//! grid step; the answer still meets the target, since it is the figure evaluated there.

use crate::Noise;
use crate::baseline::Baseline;
use crate::central::{centralized_view, federated_view};
use crate::error::PrivacyError;
use crate::local::local_view;
use crate::network::complete::CompleteView;
use crate::rdp::{Conversion, DpBound, DpGuarantee, Orders, RdpCurve, check_delta};
use crate::refine;
use std::cell::Cell;

/// The relative precision of σ that the CLI, the simulator and the daemon calibrate to: they must
/// agree, so that a budget gives every one of them the same σ.
pub const REL_TOL: f64 = 1e-6;

/// How far the search may go from its starting point, both ways.
const SEARCH_RANGE: f64 = 1e9;

/// What is being accounted, apart from σ and C.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum View {
    /// An eavesdropper on every token, after `contributions` contributions.
    Local {
        /// Contributions of the user.
        contributions: u64,
    },
    /// The final model of the centralized mode.
    Centralized {
        /// Rounds.
        rounds: u64,
        /// Users averaged per round.
        users: u64,
    },
    /// Every other user of a DP-SGD walk on the complete graph (N1, `specs/network-dp-2.md`
    /// §5): the path-hidden network view of a walk of `steps` steps among `users` users, each
    /// user contributing at most `cap` times.
    Network {
        /// Users on the complete graph.
        users: u64,
        /// Steps of the walk.
        steps: u64,
        /// The cap on a user's contributions (what the budget policy enforces).
        cap: u64,
    },
    /// The final model of the federated mode with Poisson user sampling.
    Federated {
        /// Rounds.
        rounds: u64,
        /// Sampling rate.
        sampling_rate: f64,
    },
}

/// The curve of a view at noise `noise`, on the grid (the one dispatch shared by `account` and
/// calibration). For [`View::Network`] the figure calibration meets and every command prints is
/// refined between the grid's orders ([`CompleteView::bound`]), so it may be below this curve's
/// conversion.
pub fn account(view: &View, orders: &Orders, noise: Noise) -> Result<RdpCurve, PrivacyError> {
    match *view {
        View::Local { contributions } => Ok(local_view(orders, noise, contributions)),
        View::Centralized { rounds, users } => centralized_view(orders, noise, rounds, users),
        View::Network { users, steps, cap } => {
            let view = CompleteView::new(orders, users, steps)?;
            Ok(view.observer().mixtures(view.orders(), noise).curve(cap))
        }
        View::Federated {
            rounds,
            sampling_rate,
        } => federated_view(orders, noise, rounds, sampling_rate),
    }
}

/// The result of a calibration.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Calibration {
    /// The smallest σ found that meets the target (within the relative tolerance).
    pub sigma: f64,
    /// The guarantee at that σ.
    pub achieved: DpGuarantee,
}

/// The result of a baseline's calibration.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct BaselineCalibration {
    /// The knob (ε̄, σ or ν, [`crate::baseline`]) with the least noise found that meets the
    /// target (within the relative tolerance).
    pub knob: f64,
    /// The guarantee at that knob.
    pub achieved: DpGuarantee,
}

/// A validated target of a calibration.
#[derive(Debug, Clone, Copy)]
struct Target {
    epsilon: f64,
    delta: f64,
    conversion: Conversion,
    rel_tol: f64,
}

impl Target {
    /// Checks `ε > 0` finite, `δ ∈ (0, 1)` and `rel_tol ∈ (0, 1)`.
    fn new(
        epsilon: f64,
        delta: f64,
        conversion: Conversion,
        rel_tol: f64,
    ) -> Result<Self, PrivacyError> {
        if !(epsilon > 0.0 && epsilon.is_finite()) {
            return Err(PrivacyError::Epsilon(epsilon));
        }
        let delta = check_delta(delta)?;
        if !(rel_tol > 0.0 && rel_tol < 1.0) {
            return Err(PrivacyError::Option {
                name: "rel_tol",
                value: rel_tol,
            });
        }
        Ok(Self {
            epsilon,
            delta,
            conversion,
            rel_tol,
        })
    }

    /// The bound of a curve at the target's δ.
    fn bound(&self, curve: &RdpCurve) -> Result<DpBound, PrivacyError> {
        curve.to_dp(self.delta, self.conversion)
    }

    fn meets(&self, bound: &DpBound) -> bool {
        bound.epsilon() <= self.epsilon
    }

    fn unattainable(&self, reason: String) -> PrivacyError {
        PrivacyError::Unattainable {
            epsilon: self.epsilon,
            delta: self.delta,
            reason,
        }
    }
}

/// The crate's one bisection (module docs): the smallest noise level `x` within
/// `[start/SEARCH_RANGE, start·SEARCH_RANGE]` whose guarantee `eval(x)` meets `target`, with the
/// guarantee there.
fn smallest_noise(
    eval: impl Fn(f64) -> Result<DpBound, PrivacyError>,
    start: f64,
    target: &Target,
) -> Result<(f64, DpGuarantee), PrivacyError> {
    let (min_x, max_x) = (start / SEARCH_RANGE, start * SEARCH_RANGE);
    let mut hi = start;
    let mut lo;
    let mut hi_bound = eval(hi)?;
    if target.meets(&hi_bound) {
        loop {
            lo = hi / 2.0;
            if lo < min_x {
                return Err(PrivacyError::NoiseNotNeeded);
            }
            let b = eval(lo)?;
            if !target.meets(&b) {
                break;
            }
            (hi, hi_bound) = (lo, b);
        }
    } else {
        loop {
            lo = hi;
            hi *= 2.0;
            if hi > max_x {
                return Err(target.unattainable(format!(
                    "not met even at {SEARCH_RANGE:e} times the starting noise"
                )));
            }
            hi_bound = eval(hi)?;
            if target.meets(&hi_bound) {
                break;
            }
        }
    }
    let (hi, hi_bound) = narrow(lo, hi, hi_bound, eval, target)?;
    match hi_bound {
        DpBound::Finite(achieved) => Ok((hi, achieved)),
        DpBound::NoFiniteGuarantee { .. } => {
            Err(target.unattainable("no finite guarantee".to_string()))
        }
    }
}

/// Narrows `[lo, hi]`, where `hi` meets `target` with `hi_bound` and `lo` does not, by bisection in
/// `ln x` to the target's relative tolerance: the upper end and its guarantee.
fn narrow(
    mut lo: f64,
    mut hi: f64,
    mut hi_bound: DpBound,
    eval: impl Fn(f64) -> Result<DpBound, PrivacyError>,
    target: &Target,
) -> Result<(f64, DpBound), PrivacyError> {
    while (hi - lo) > target.rel_tol * hi {
        let mid = (lo * hi).sqrt();
        let b = eval(mid)?;
        if target.meets(&b) {
            (hi, hi_bound) = (mid, b);
        } else {
            lo = mid;
        }
    }
    Ok((hi, hi_bound))
}

/// Finds the smallest σ such that `view` at `(σ, clip)` is `(epsilon, delta)`-DP under
/// `conversion`, to relative tolerance `rel_tol ∈ (0, 1)`.
pub fn calibrate(
    view: &View,
    orders: &Orders,
    clip: f64,
    epsilon: f64,
    delta: f64,
    conversion: Conversion,
    rel_tol: f64,
) -> Result<Calibration, PrivacyError> {
    let target = Target::new(epsilon, delta, conversion, rel_tol)?;
    Noise::new(1.0, clip)?;
    if let View::Network { users, steps, cap } = *view {
        return calibrate_network(users, steps, cap, orders, clip, &target);
    }
    let (sigma, achieved) = smallest_noise(
        |sigma| target.bound(&account(view, orders, Noise::new(sigma, clip)?)?),
        clip,
        &target,
    )?;
    Ok(Calibration { sigma, achieved })
}

/// [`calibrate`] for [`View::Network`], order by order: the smallest σ at which one order alone
/// meets the target, over the orders of [`crate::network::mixture::network_orders`] (each
/// order's ε decreases with σ), then over the orders between the best one's neighbours
/// ([`crate::refine`]). The grid's orders are tried from the local view's best outwards, each
/// first just below the best σ so far: an order that does not meet the target there cannot
/// lower it and costs one mixture, so a search costs a few dozen mixtures instead of a few dozen
/// per σ tried. The answer is checked with the figure that is printed
/// ([`CompleteView::bound`]), which searches its order on its own: where that misses the target
/// by a hair, σ is raised until it meets it.
fn calibrate_network(
    users: u64,
    steps: u64,
    cap: u64,
    orders: &Orders,
    clip: f64,
    target: &Target,
) -> Result<Calibration, PrivacyError> {
    let view = CompleteView::new(orders, users, steps)?;
    let observer = view.observer();
    let at = |alpha: f64, sigma: f64| -> Result<RdpCurve, PrivacyError> {
        let one = Orders::new(&[alpha])?;
        Ok(observer.mixtures(&one, Noise::new(sigma, clip)?).curve(cap))
    };
    let picked = view.orders();
    let local = View::Local { contributions: cap };
    let (start, local_best) = smallest_noise(
        |s| target.bound(&account(&local, picked, Noise::new(s, clip)?)?),
        clip,
        target,
    )?;
    let all = picked.as_slice();
    let first = all
        .iter()
        .position(|&a| a >= local_best.order)
        .unwrap_or(all.len() - 1);
    let mut sequence: Vec<usize> = (0..all.len()).collect();
    sequence.sort_by_key(|&x| x.abs_diff(first));
    let mut best: Option<(f64, usize)> = None;
    for x in sequence {
        let alpha = all[x];
        let from = match best {
            None => start,
            Some((b, _)) => {
                let below = b * (1.0 - target.rel_tol);
                if !target.meets(&target.bound(&at(alpha, below)?)?) {
                    continue;
                }
                below
            }
        };
        match smallest_noise(|s| target.bound(&at(alpha, s)?), from, target) {
            Ok((sigma, _)) if best.is_none_or(|(b, _)| sigma < b) => best = Some((sigma, x)),
            Ok(_) | Err(PrivacyError::Unattainable { .. }) => {}
            Err(e) => return Err(e),
        }
    }
    let (grid_sigma, x) =
        best.ok_or_else(|| target.unattainable("no order of the network view meets it".into()))?;
    // Between the best order's neighbours, the order whose own σ is the smallest: σ_α is
    // unimodal in α where ε_α(σ) is (its sublevel sets are intervals), and a probe that does not
    // meet the target just below the best σ so far is no better and costs one mixture.
    let best_sigma = Cell::new(grid_sigma);
    let (lo, hi) = (all[x.saturating_sub(1)], all[(x + 1).min(all.len() - 1)]);
    let (_, sigma) = refine::search(lo, all[x], hi, grid_sigma, |alpha| {
        let below = best_sigma.get() * (1.0 - target.rel_tol);
        if !target.meets(&target.bound(&at(alpha, below)?)?) {
            return Ok(f64::INFINITY);
        }
        let (sigma, _) = smallest_noise(|s| target.bound(&at(alpha, s)?), below, target)?;
        best_sigma.set(sigma);
        Ok::<_, PrivacyError>(sigma)
    })?;
    // The printed figure there; where its own search of the order misses the target by a hair,
    // σ is raised until it meets it (the grid's σ always does) and bisected back.
    let figure = |s: f64| view.bound(Noise::new(s, clip)?, cap, target.delta, target.conversion);
    let (mut lo, mut hi, mut hi_bound) = (sigma, sigma, figure(sigma)?);
    let mut step = target.rel_tol;
    while !target.meets(&hi_bound) {
        if hi >= grid_sigma {
            // Never reached: at the grid's σ the printed figure is at most its best order's.
            return Err(target.unattainable("the network figure misses it at every sigma".into()));
        }
        lo = hi;
        hi = (sigma * (1.0 + step)).min(grid_sigma);
        hi_bound = figure(hi)?;
        step *= 4.0;
    }
    let (hi, hi_bound) = narrow(lo, hi, hi_bound, figure, target)?;
    match hi_bound {
        DpBound::Finite(achieved) if achieved.epsilon <= target.epsilon => Ok(Calibration {
            sigma: hi,
            achieved,
        }),
        _ => Err(target.unattainable("no finite guarantee".into())),
    }
}

/// The knob of `baseline` at noise level `x` (module docs): `ε̄ = 1/x`, `σ = x`, `ν = 1/x`.
/// Each map is its own inverse.
fn knob_at(baseline: &Baseline, x: f64) -> f64 {
    match baseline {
        Baseline::Ipadmm { .. } => x,
        Baseline::DpIadmm | Baseline::PenaltyPerturbation(_) => 1.0 / x,
    }
}

/// The knob of `baseline` with the least noise such that its local view after `rounds` rounds
/// (the planned horizon, never one cut short by test results) is `(epsilon, delta)`-DP under
/// `conversion`, to relative tolerance `rel_tol ∈ (0, 1)` on the noise level.
///
/// For penalty perturbation the Jacobian floor (the loss at `ν → 0`) is checked first: when it
/// alone exceeds the target no ν helps, and the error says to take a larger θ or growth.
pub fn calibrate_baseline(
    baseline: &Baseline,
    orders: &Orders,
    rounds: u64,
    epsilon: f64,
    delta: f64,
    conversion: Conversion,
    rel_tol: f64,
) -> Result<BaselineCalibration, PrivacyError> {
    let target = Target::new(epsilon, delta, conversion, rel_tol)?;
    if let Baseline::PenaltyPerturbation(pp) = baseline {
        let floor = RdpCurve::refined_bound(orders, target.delta, target.conversion, |grid| {
            pp.curve(grid, 0.0, rounds)
        })?;
        if !target.meets(&floor) {
            return Err(target.unattainable(format!(
                "the Jacobian floor alone gives epsilon = {}; take a larger theta or growth q",
                floor.epsilon()
            )));
        }
    }
    let (x, achieved) = smallest_noise(
        |x| {
            baseline.bound(
                orders,
                knob_at(baseline, x),
                rounds,
                target.delta,
                target.conversion,
            )
        },
        1.0,
        &target,
    )?;
    Ok(BaselineCalibration {
        knob: knob_at(baseline, x),
        achieved,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn local_calibration_inverts_accounting() {
        let g = Orders::default_grid();
        let view = View::Local { contributions: 100 };
        let cal = calibrate(&view, &g, 1.0, 1.0, 1e-5, Conversion::Tight, 1e-6).unwrap();
        assert!(cal.achieved.epsilon <= 1.0);
        let below = Noise::new(cal.sigma * (1.0 - 2e-6), 1.0).unwrap();
        let eps_below = account(&view, &g, below)
            .unwrap()
            .to_dp(1e-5, Conversion::Tight)
            .unwrap();
        assert!(eps_below.epsilon() > 1.0, "σ is not minimal");
    }

    #[test]
    fn bad_targets_and_degenerate_views() {
        let g = Orders::default_grid();
        let view = View::Local { contributions: 1 };
        let t = Conversion::Tight;
        assert!(matches!(
            calibrate(&view, &g, 1.0, 0.0, 1e-5, t, 1e-6),
            Err(PrivacyError::Epsilon(_))
        ));
        assert!(matches!(
            calibrate(&view, &g, 1.0, 1.0, 1.0, t, 1e-6),
            Err(PrivacyError::Delta(_))
        ));
        assert!(matches!(
            calibrate(&view, &g, -1.0, 1.0, 1e-5, t, 1e-6),
            Err(PrivacyError::Clip(_))
        ));
        let huge = View::Local {
            contributions: u64::MAX,
        };
        assert!(matches!(
            calibrate(&huge, &g, 1.0, 1e-6, 1e-5, t, 1e-6),
            Err(PrivacyError::Unattainable { .. })
        ));
    }
}
