//! Calibration: the smallest σ meeting a target (ε, δ) for a view, by bisection on the accountant.
//!
//! Every view's curve is nonincreasing in σ at each order, and the conversion to ε is a minimum
//! of nondecreasing functions of the curve, so `ε(σ)` is nonincreasing and bisection in
//! `ln σ` finds the threshold. The search brackets σ between `1e-9 · C` and `1e9 · C` by doubling
//! and halving from `C`; the answer is the upper end of the final bracket, so it always meets the
//! target, and the bracket is narrowed to the relative tolerance.

use crate::Noise;
use crate::central::{centralized_view, federated_view};
use crate::error::PrivacyError;
use crate::local::local_view;
use crate::rdp::{Conversion, DpBound, DpGuarantee, Orders, RdpCurve, check_delta};

/// The relative precision of σ that the CLI, the simulator and the daemon calibrate to: they must
/// agree, so that a budget gives every one of them the same σ.
pub const REL_TOL: f64 = 1e-6;

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
    /// The final model of the federated mode with Poisson user sampling.
    Federated {
        /// Rounds.
        rounds: u64,
        /// Sampling rate.
        sampling_rate: f64,
    },
}

/// The curve of a view at noise `noise` (the one dispatch shared by `account` and calibration).
pub fn account(view: &View, orders: &Orders, noise: Noise) -> Result<RdpCurve, PrivacyError> {
    match *view {
        View::Local { contributions } => Ok(local_view(orders, noise, contributions)),
        View::Centralized { rounds, users } => centralized_view(orders, noise, rounds, users),
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
    Noise::new(1.0, clip)?;
    let eval = |sigma: f64| -> Result<DpBound, PrivacyError> {
        account(view, orders, Noise::new(sigma, clip)?)?.to_dp(delta, conversion)
    };
    let meets = |b: &DpBound| b.epsilon() <= epsilon;
    let unattainable = |reason: &str| PrivacyError::Unattainable {
        epsilon,
        delta,
        reason: reason.to_string(),
    };
    let (min_sigma, max_sigma) = (1e-9 * clip, 1e9 * clip);
    let mut hi = clip;
    let mut lo;
    let mut hi_bound = eval(hi)?;
    if meets(&hi_bound) {
        loop {
            lo = hi / 2.0;
            if lo < min_sigma {
                return Err(PrivacyError::NoiseNotNeeded);
            }
            let b = eval(lo)?;
            if !meets(&b) {
                break;
            }
            (hi, hi_bound) = (lo, b);
        }
    } else {
        loop {
            lo = hi;
            hi *= 2.0;
            if hi > max_sigma {
                return Err(unattainable("not met even at sigma = 1e9 * C"));
            }
            hi_bound = eval(hi)?;
            if meets(&hi_bound) {
                break;
            }
        }
    }
    while (hi - lo) > rel_tol * hi {
        let mid = (lo * hi).sqrt();
        let b = eval(mid)?;
        if meets(&b) {
            (hi, hi_bound) = (mid, b);
        } else {
            lo = mid;
        }
    }
    match hi_bound {
        DpBound::Finite(achieved) => Ok(Calibration {
            sigma: hi,
            achieved,
        }),
        DpBound::NoFiniteGuarantee { .. } => Err(unattainable("no finite guarantee")),
    }
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
