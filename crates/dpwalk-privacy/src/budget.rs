//! The one budget policy of a run: may this user contribute now? The simulator and the daemon
//! both ask [`Policy::allows`] before a step and [`Policy::record`] after it, so that for the
//! same run they skip the same steps, and a user never ends above the run's budget on the view
//! the budget names, whatever the walk did.
//!
//! # What a contribution is charged
//! - Local view: `ε_loc(α)` for every contribution.
//! - Network view (DP-SGD walks): the mixture bound of [`crate::network`] against the laws that
//!   bound every (user, observer) pair, at the contribution's horizon `K − k` (the final model is
//!   published), capped at [`HORIZON_WINDOW`]` + 1`: a contribution made more than the window
//!   before the end is charged as if it were made exactly then, which can only charge more (the
//!   charge decreases with the horizon). That makes every early contribution cost the same, so a
//!   user's early contributions are a count, not a list. Inside the window, horizons above
//!   [`EXACT_HORIZONS`] are charged at the nearest point below them on a grid 1 % apart (again
//!   only more), so that the policy computes a few hundred charges once, not one per step.
//!
//! # Why the decision is exact in both drivers
//! The spent curve is rebuilt the same way in both (early charge times the early count, plus the
//! charges of late contributions in step order), never from a ledger's running sum, so rounding
//! cannot make one driver skip a step the other takes.
//!
//! # Planning
//! Calibration plans for [`PLAN_QUANTILE`] of a user's visit count ([`crate::walk::planned_contributions`])
//! and charges the network view's contributions at their worst placement
//! ([`crate::network::Charges::worst_placement`]): the plan is conservative for the final model,
//! and the few users visited more often than planned skip their extra steps.

use crate::Noise;
use crate::error::PrivacyError;
use crate::ledger::Budget;
use crate::local::local_view;
use crate::network::{Charges, Horizon, PassageLaw};
use crate::rdp::{Conversion, Orders, RdpCurve};
use crate::walk::envelope_curve;

/// Steps before the end beyond which a contribution is charged at the window's edge.
pub const HORIZON_WINDOW: u64 = 65_536;

/// Horizons charged exactly; above, the grid of charged horizons is 1 % apart.
pub const EXACT_HORIZONS: u64 = 64;

/// The horizons a late contribution is charged at: every one up to [`EXACT_HORIZONS`], then
/// `⌈64·1.01ᵏ⌉`, then the window's edge.
fn horizon_grid(top: u64) -> Vec<u64> {
    let mut grid: Vec<u64> = (1..=EXACT_HORIZONS.min(top)).collect();
    let mut x = EXACT_HORIZONS as f64;
    loop {
        x *= 1.01;
        let h = x.ceil() as u64;
        if h >= top {
            break;
        }
        if grid.last().is_none_or(|&last| h > last) {
            grid.push(h);
        }
    }
    if grid.last().is_none_or(|&last| top > last) {
        grid.push(top);
    }
    grid
}

/// The quantile of a user's visit count that calibration plans for.
pub const PLAN_QUANTILE: f64 = 0.99;

/// How a contribution is charged.
#[derive(Debug, Clone, PartialEq)]
pub enum Charging {
    /// `ε_loc(α)` per contribution.
    Local,
    /// The network view against these laws (their pointwise maximum).
    Network(Vec<PassageLaw>),
}

/// A user's contributions as the policy counts them.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Spent {
    early: u64,
    late: Vec<u64>,
    late_curve: Option<RdpCurve>,
}

impl Spent {
    /// Contributions recorded.
    pub fn count(&self) -> u64 {
        self.early + self.late.len() as u64
    }
}

/// The budget policy of one run.
#[derive(Debug, Clone)]
pub struct Policy {
    budget: Budget,
    conversion: Conversion,
    orders: Orders,
    noise: Noise,
    steps: u64,
    charging: Charging,
    early: RdpCurve,
    early_cap: u64,
    /// The charged horizons inside the window, and their charges.
    grid: Vec<u64>,
    late: Vec<RdpCurve>,
}

impl Policy {
    /// The policy of a `steps`-step run with budget `budget` on the view `charging`.
    pub fn new(
        budget: Budget,
        conversion: Conversion,
        orders: Orders,
        noise: Noise,
        steps: u64,
        charging: Charging,
    ) -> Result<Self, PrivacyError> {
        let zero = RdpCurve::zero(&orders);
        let mut policy = Self {
            budget,
            conversion,
            orders,
            noise,
            steps,
            charging,
            early: zero,
            early_cap: 0,
            grid: Vec::new(),
            late: Vec::new(),
        };
        policy.early = policy.charge_at(Horizon::Final(HORIZON_WINDOW + 1));
        policy.early_cap = policy.largest_count(&policy.early)?;
        if matches!(policy.charging, Charging::Network(_)) {
            policy.grid = horizon_grid(steps.min(HORIZON_WINDOW + 1).max(1));
            policy.late = policy
                .grid
                .iter()
                .map(|&h| policy.charge_at(Horizon::Final(h)))
                .collect();
        }
        Ok(policy)
    }

    /// The budget.
    pub fn budget(&self) -> Budget {
        self.budget
    }

    /// The charge of one contribution seen after `horizon`.
    fn charge_at(&self, horizon: Horizon) -> RdpCurve {
        match &self.charging {
            Charging::Local => local_view(&self.orders, self.noise, 1),
            Charging::Network(laws) => envelope_curve(
                laws,
                &self.orders,
                self.noise,
                &Charges::from_pairs([(horizon, 1)]),
            ),
        }
    }

    /// Whether a contribution at step `seq` is charged the early (constant) charge.
    fn is_early(&self, seq: u64) -> bool {
        matches!(self.charging, Charging::Local) || self.steps.saturating_sub(seq) > HORIZON_WINDOW
    }

    /// The charge of a contribution at step `seq` (0-based): what a ledger records for it.
    pub fn charge(&self, seq: u64) -> RdpCurve {
        self.charge_ref(seq).clone()
    }

    fn charge_ref(&self, seq: u64) -> &RdpCurve {
        if self.is_early(seq) {
            return &self.early;
        }
        let h = self.steps.saturating_sub(seq).max(1);
        // The largest grid horizon ≤ h (the grid starts at 1).
        let at = self.grid.partition_point(|&g| g <= h).saturating_sub(1);
        self.late.get(at).unwrap_or(&self.early)
    }

    /// The largest `k` with `k` charges of `curve` within budget (`u64::MAX` for a zero charge).
    fn largest_count(&self, curve: &RdpCurve) -> Result<u64, PrivacyError> {
        let fits = |k: u64| -> Result<bool, PrivacyError> { self.within(&curve.repeat(k)) };
        if curve.values().iter().all(|&v| v == 0.0) {
            return Ok(u64::MAX);
        }
        let (mut lo, mut hi) = (0_u64, 1_u64);
        while fits(hi)? {
            lo = hi;
            hi = hi.saturating_mul(2);
            if hi == u64::MAX {
                return Ok(hi);
            }
        }
        while hi - lo > 1 {
            let mid = lo + (hi - lo) / 2;
            if fits(mid)? {
                lo = mid;
            } else {
                hi = mid;
            }
        }
        Ok(lo)
    }

    fn within(&self, curve: &RdpCurve) -> Result<bool, PrivacyError> {
        Ok(curve.to_dp(self.budget.delta(), self.conversion)?.epsilon() <= self.budget.epsilon())
    }

    /// The curve `spent` stands for.
    pub fn spent_curve(&self, spent: &Spent) -> Result<RdpCurve, PrivacyError> {
        let mut curve = self.early.repeat(spent.early);
        if let Some(late) = &spent.late_curve {
            curve.compose_in_place(late)?;
        }
        Ok(curve)
    }

    /// May a user who has `spent` contribute at step `seq`?
    pub fn allows(&self, spent: &Spent, seq: u64) -> Result<bool, PrivacyError> {
        if self.is_early(seq) {
            return Ok(spent.early < self.early_cap);
        }
        let mut curve = self.spent_curve(spent)?;
        curve.compose_in_place(self.charge_ref(seq))?;
        self.within(&curve)
    }

    /// Records a contribution at step `seq` (after [`Policy::allows`] said yes).
    pub fn record(&self, spent: &mut Spent, seq: u64) -> Result<(), PrivacyError> {
        if self.is_early(seq) {
            spent.early += 1;
            return Ok(());
        }
        let charge = self.charge_ref(seq);
        match &mut spent.late_curve {
            Some(curve) => curve.compose_in_place(charge)?,
            None => spent.late_curve = Some(charge.clone()),
        }
        spent.late.push(seq);
        Ok(())
    }

    /// The contributions in `spent` at the horizons the policy charged them.
    pub fn charges(&self, spent: &Spent) -> Charges {
        Charges::from_pairs(
            std::iter::once((Horizon::Final(HORIZON_WINDOW + 1), spent.early)).chain(
                spent.late.iter().map(|&seq| {
                    let h = self.steps.saturating_sub(seq).max(1);
                    let at = self.grid.partition_point(|&g| g <= h).saturating_sub(1);
                    (Horizon::Final(self.grid.get(at).copied().unwrap_or(h)), 1)
                }),
            ),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::network::PassageLaw;

    fn policy(charging: Charging, steps: u64, epsilon: f64) -> Policy {
        Policy::new(
            Budget::new(epsilon, 1e-6).unwrap(),
            Conversion::Tight,
            Orders::default_grid(),
            Noise::new(20.0, 1.0).unwrap(),
            steps,
            charging,
        )
        .unwrap()
    }

    #[test]
    fn the_horizon_grid_charges_only_more() {
        let grid = horizon_grid(HORIZON_WINDOW + 1);
        assert_eq!(&grid[..64], &(1..=64).collect::<Vec<_>>()[..]);
        assert_eq!(*grid.last().unwrap(), HORIZON_WINDOW + 1);
        assert!(grid.len() < 800, "{}", grid.len());
        for w in grid.windows(2).skip(64) {
            assert!(w[1] > w[0] && (w[1] as f64) <= (w[0] as f64) * 1.011 + 1.0);
        }
        assert_eq!(horizon_grid(10), (1..=10).collect::<Vec<_>>());
        let law = PassageLaw::complete(20, 1.0).unwrap();
        let p = policy(Charging::Network(vec![law]), 5000, 2.0);
        for seq in [0, 1000, 4900, 4990, 4999] {
            let exact = p.charge_at(Horizon::of_step(seq, 5000));
            for (c, e) in p.charge(seq).values().iter().zip(exact.values()) {
                assert!(c >= e, "seq {seq}: charged {c} < {e}");
            }
        }
    }

    #[test]
    fn local_policy_is_a_count_cap() {
        let p = policy(Charging::Local, 1000, 1.0);
        let mut spent = Spent::default();
        let mut taken = 0;
        for seq in 0..1000 {
            if p.allows(&spent, seq).unwrap() {
                p.record(&mut spent, seq).unwrap();
                taken += 1;
            }
        }
        assert_eq!(taken, p.early_cap);
        let within = p.spent_curve(&spent).unwrap().to_dp(1e-6, Conversion::Tight).unwrap().epsilon();
        assert!(within <= 1.0);
        let one_more = local_view(&Orders::default_grid(), Noise::new(20.0, 1.0).unwrap(), taken + 1);
        assert!(one_more.to_dp(1e-6, Conversion::Tight).unwrap().epsilon() > 1.0);
    }

    #[test]
    fn network_policy_never_ends_above_budget_and_refuses_costly_late_steps() {
        let law = PassageLaw::complete(20, 1.0).unwrap();
        let steps = HORIZON_WINDOW + 200;
        let p = policy(Charging::Network(vec![law.clone()]), steps, 2.0);
        // A user contributing every other step near the end: late charges grow as h → 1.
        let mut spent = Spent::default();
        let mut refused = 0;
        for seq in (0..steps).step_by(2) {
            if p.allows(&spent, seq).unwrap() {
                p.record(&mut spent, seq).unwrap();
            } else {
                refused += 1;
            }
        }
        assert!(refused > 0);
        let eps = p.spent_curve(&spent).unwrap().to_dp(1e-6, Conversion::Tight).unwrap().epsilon();
        assert!(eps <= 2.0, "{eps}");
        // The recorded charges give the same curve through the network accountant.
        let direct = envelope_curve(
            &[law],
            &Orders::default_grid(),
            Noise::new(20.0, 1.0).unwrap(),
            &p.charges(&spent),
        );
        let eps_direct = direct.to_dp(1e-6, Conversion::Tight).unwrap().epsilon();
        assert!((eps - eps_direct).abs() <= 1e-9 * eps, "{eps} {eps_direct}");
    }
}
