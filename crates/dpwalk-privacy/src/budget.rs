//! The one budget policy of a run: may this user contribute now? The simulator and the daemon
//! both ask [`Policy::allows`] before a step, so that for the same run they skip the same steps,
//! and a user never ends above the run's budget, whatever the walk did.
//!
//! # The view
//! A run's budget is on the local view (an eavesdropper on every token): `ε_loc(α)` per
//! contribution, converted exactly (`K` contributions are `4C√K/σ`-GDP, [`crate::gdp`]), so the
//! policy is a count cap, the largest number of contributions within the budget
//! ([`Policy::new`]). A DP-SGD walk on the complete graph may instead put its budget on
//! the path-hidden network view (N1, [`crate::network::mixture`]), which is also monotone in the
//! cap: the policy is again a count cap, the largest within the network budget
//! ([`Policy::network`]). No network budget exists for the ADMM walk
//! ([`crate::walk::ADMM_NETWORK_WITHDRAWN`]).
//!
//! # Planning
//! Calibration plans for [`PLAN_QUANTILE`] of a user's visit count
//! ([`crate::walk::planned_contributions`]); users visited more often than planned skip their
//! extra steps (a noise-only step), and the summary says how many did.

use crate::Noise;
use crate::error::PrivacyError;
use crate::ledger::Budget;
use crate::local::local_view;
use crate::network::complete::CompleteView;
use crate::rdp::{Conversion, DpBound, Orders};

/// The quantile of a user's visit count that calibration plans for.
pub const PLAN_QUANTILE: f64 = 0.99;

/// The budget policy of one run.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Policy {
    budget: Budget,
    cap: u64,
}

impl Policy {
    /// The policy of a run with budget `budget` (local view) at noise `noise`, converted with
    /// `conversion` on `orders`. The cap is searched up to `steps` (no user can contribute more).
    pub fn new(
        budget: Budget,
        conversion: Conversion,
        orders: &Orders,
        noise: Noise,
        steps: u64,
    ) -> Result<Self, PrivacyError> {
        let fits = |k: u64| -> Result<bool, PrivacyError> {
            let eps = local_view(orders, noise, k)
                .to_dp(budget.delta(), conversion)?
                .epsilon();
            Ok(eps <= budget.epsilon())
        };
        Self::largest_cap(budget, steps, fits)
    }

    /// The policy of a run whose budget is on the network view of a DP-SGD walk of `steps`
    /// steps on the complete graph of `users` users (N1): the cap is the largest count whose
    /// path-hidden figure ([`CompleteView::bound`], what is printed) is within the budget. The
    /// mixtures are computed once; each cap tried costs a conversion, and the orders its
    /// refinement probes that no cap tried before ([`crate::network::mixture::Observer`]).
    pub fn network(
        budget: Budget,
        conversion: Conversion,
        orders: &Orders,
        noise: Noise,
        users: u64,
        steps: u64,
    ) -> Result<Self, PrivacyError> {
        let view = CompleteView::new(orders, users, steps)?;
        let observer = view.observer();
        let mixtures = observer.mixtures(view.orders(), noise);
        // The grid's figure first: refining only lowers it, so where it fits the printed one
        // does, and the orders between are computed only for caps that need them.
        let fits = |k: u64| -> Result<bool, PrivacyError> {
            let within = |b: DpBound| b.epsilon() <= budget.epsilon();
            Ok(within(mixtures.curve(k).to_dp(budget.delta(), conversion)?)
                || within(observer.bound(&mixtures, k, budget.delta(), conversion)?))
        };
        Self::largest_cap(budget, steps, fits)
    }

    /// The largest count `fits` accepts, up to `steps` (`fits` is monotone: a larger count never
    /// fits where a smaller one does not).
    fn largest_cap(
        budget: Budget,
        steps: u64,
        fits: impl Fn(u64) -> Result<bool, PrivacyError>,
    ) -> Result<Self, PrivacyError> {
        let (mut lo, mut hi) = (0_u64, 1_u64);
        while fits(hi)? {
            lo = hi;
            if hi >= steps.max(1) {
                return Ok(Self { budget, cap: hi });
            }
            hi = hi.saturating_mul(2);
        }
        while hi - lo > 1 {
            let mid = lo + (hi - lo) / 2;
            if fits(mid)? {
                lo = mid;
            } else {
                hi = mid;
            }
        }
        Ok(Self { budget, cap: lo })
    }

    /// The budget.
    pub fn budget(&self) -> Budget {
        self.budget
    }

    /// The most contributions a user may make.
    pub fn cap(&self) -> u64 {
        self.cap
    }

    /// May a user who has made `contributions` contribute once more?
    pub fn allows(&self, contributions: u64) -> bool {
        contributions < self.cap
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_cap_is_the_largest_count_within_budget() {
        let (orders, noise) = (Orders::default_grid(), Noise::new(20.0, 1.0).unwrap());
        let budget = Budget::new(1.0, 1e-6).unwrap();
        let p = Policy::new(budget, Conversion::Tight, &orders, noise, 100_000).unwrap();
        let eps = |k| {
            local_view(&orders, noise, k)
                .to_dp(1e-6, Conversion::Tight)
                .unwrap()
                .epsilon()
        };
        assert!(
            eps(p.cap()) <= 1.0 && eps(p.cap() + 1) > 1.0,
            "cap {}",
            p.cap()
        );
        assert!(p.allows(p.cap() - 1) && !p.allows(p.cap()));
        // A budget that no contribution fits, and one every step fits.
        let tiny = Budget::new(1e-3, 1e-6).unwrap();
        assert_eq!(
            Policy::new(tiny, Conversion::Tight, &orders, noise, 10)
                .unwrap()
                .cap(),
            0
        );
        let huge = Budget::new(1e6, 1e-6).unwrap();
        assert!(
            Policy::new(huge, Conversion::Tight, &orders, noise, 10)
                .unwrap()
                .cap()
                >= 10
        );
    }
}
