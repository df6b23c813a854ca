//! The seed baselines in the common accountant: each family's per-step curve and how many steps a
//! round charges, in the local view (an eavesdropper on every message, server included), which is
//! the only view the three papers prove (seed-baselines spec §5, §6.1 point 2).
//!
//! Each family has one noise knob, the one calibration bisects on
//! ([`crate::calibrate::calibrate_baseline`]) and [`Baseline::spent`] takes:
//!
//! | family | knob | per round | curve after `k` rounds |
//! | --- | --- | --- | --- |
//! | \[RK\] DP-IADMM ([`Baseline::DpIadmm`]) | per-iteration ε̄ (`b = Δ₁/ε̄`) | one Laplace release of the clipped local gradient | `k · ε_Lap(α; ε̄)` |
//! | \[HG\] IPADMM ([`Baseline::Ipadmm`]) | noise multiplier σ | `l` Gaussian inner steps | `k·l · α/(2σ²)` |
//! | \[ZKL\] PP ([`Baseline::PenaltyPerturbation`]) | noise rate ν | one pure `ε^{(t)}`-DP primal step | `Σ_{t≤k} ε_RR(α; ε^{(t)})` |
//!
//! - \[RK\] (spec §1.3): the Laplace curve is exact for the d-dimensional release (see
//!   [`crate::mechanism`]); clipping and projection are post-processing. The ℓ₁ sensitivity is
//!   [`crate::unit::dp_iadmm_sensitivity`].
//! - \[HG\] (spec §2.3): each inner step adds `N(0, (sσ)²I)` to a quantity of ℓ₂ sensitivity `s`
//!   ([`crate::unit::ipadmm_sensitivity`]); the node releases only averages of the `l` iterates,
//!   so composing all `t·l` steps is an upper bound.
//! - \[ZKL\] (spec §3.3): round `t` of node `i` is pure `ε_i^{(t)}`-DP with
//!   `ε_i^{(t)} = C(1.4c_L + ν)/(η_i(t)·V_i·B_i)` (Appendix D, (63) + (66)): `ν` pays for the noise
//!   density ratio, `1.4c_L` is the Jacobian ratio of the change of variables, a floor no noise
//!   removes. The losses are public and data-independent, so each round composes through the
//!   tight pure-DP curve ([`crate::mechanism::pure_dp`]). The paper's own total is the pure-DP sum
//!   [`PenaltyPerturbation::paper_beta`]. The node with the smallest `V_i·B_i` has the largest
//!   loss in every round, so its curve bounds every node's.
//!
//! Each paper's own accounting of the ε it states (its reproduction figure, never the headline)
//! is [`Baseline::paper_knob`]: the knob the paper would run, whose common total is then
//! [`Baseline::spent`].

use crate::error::{PrivacyError, nonnegative, positive};
use crate::mechanism::{gaussian, laplace, pure_dp_rdp};
use crate::rdp::{Conversion, DpBound, Orders, RdpCurve};
use crate::unit::Unit;

/// The most rounds of a growing penalty (before its cap) accounted one by one; each is a curve.
pub const MAX_GROWING_ROUNDS: u64 = 100_000;

/// The accounting of one seed baseline, apart from its knob and horizon (module table).
#[derive(Debug, Clone, PartialEq)]
pub enum Baseline {
    /// \[RK\] DP-IADMM (ObjT and ObjP): one Laplace mechanism per iteration; knob ε̄.
    DpIadmm,
    /// \[HG\] IPADMM: `inner_steps` (`l`) Gaussian steps per round; knob σ.
    Ipadmm {
        /// Inner steps per round.
        inner_steps: u64,
    },
    /// \[ZKL\] private M-ADMM with penalty perturbation; knob ν.
    PenaltyPerturbation(PenaltyPerturbation),
}

impl Baseline {
    /// The local-view curve after `rounds` rounds at knob `knob` (ε̄, σ or ν, module table).
    pub fn spent(&self, orders: &Orders, knob: f64, rounds: u64) -> Result<RdpCurve, PrivacyError> {
        match self {
            Baseline::DpIadmm => {
                if !(knob > 0.0 && knob.is_finite()) {
                    return Err(PrivacyError::Epsilon(knob));
                }
                Ok(laplace(orders, 1.0 / knob)?.repeat(rounds))
            }
            Baseline::Ipadmm { inner_steps } => {
                Ok(gaussian(orders, knob)?.repeat(rounds.saturating_mul(*inner_steps)))
            }
            Baseline::PenaltyPerturbation(pp) => pp.curve(orders, positive("nu", knob)?, rounds),
        }
    }

    /// The local-view guarantee after `rounds` rounds at knob `knob`: [`Baseline::spent`]
    /// converted at `delta`, its order refined between the grid's ([`crate::refine`]). What the
    /// baseline's calibration meets and its reports print.
    pub fn bound(
        &self,
        orders: &Orders,
        knob: f64,
        rounds: u64,
        delta: f64,
        conversion: Conversion,
    ) -> Result<DpBound, PrivacyError> {
        RdpCurve::refined_bound(orders, delta, conversion, |grid| {
            self.spent(grid, knob, rounds)
        })
    }
}

/// \[HG\]'s constant `c₀` in its Theorem 6, taken as 1 (the paper leaves it unspecified; the
/// accountant's σ for the same total is about 0.8 of this one, spec §2.3).
pub const HG_C0: f64 = 1.0;

impl Baseline {
    /// The accountant's knob (module table) that a paper's **own** accounting gives for the ε the
    /// paper states: what its reproduction figure runs (seed-baselines spec §6.4 item 7). The
    /// common accountant's total for that knob is [`Baseline::spent`], never this mapping.
    ///
    /// - \[RK\]: the paper's budget is per iteration (Remark 2), and its Laplace scale is
    ///   `b = Δ₁/ε̄`: the knob is ε̄ itself (the caller turns it into `b` with its own Δ₁).
    /// - \[HG\]: Theorem 6, `σ = c₀·√(2·t·l·ln(1.25/δ))/ε` with `c₀ =` [`HG_C0`], for `rounds`
    ///   rounds `t` of `l` inner steps, at the paper's total `(ε, δ)`.
    /// - \[ZKL\]: refused: its main text, where the experiments' budgets are stated, is not
    ///   available (spec §3), so no figure of it is reproduced.
    ///
    /// # Errors
    /// A `paper_epsilon` or `delta` out of range, and \[ZKL\].
    pub fn paper_knob(
        &self,
        paper_epsilon: f64,
        rounds: u64,
        delta: f64,
    ) -> Result<f64, PrivacyError> {
        if !(paper_epsilon > 0.0 && paper_epsilon.is_finite()) {
            return Err(PrivacyError::Epsilon(paper_epsilon));
        }
        match self {
            Baseline::DpIadmm => Ok(paper_epsilon),
            Baseline::Ipadmm { inner_steps } => {
                if !(delta > 0.0 && delta < 1.0) {
                    return Err(PrivacyError::Delta(delta));
                }
                let steps = rounds as f64 * *inner_steps as f64;
                Ok(HG_C0 * (2.0 * steps * (1.25 / delta).ln()).sqrt() / paper_epsilon)
            }
            Baseline::PenaltyPerturbation(_) => Err(PrivacyError::OutsideProof(
                "no reproduction of penalty perturbation: the paper's experiments (main text) \
                 are not available"
                    .to_string(),
            )),
        }
    }
}

/// \[ZKL\]'s penalty schedule `η(t) = min(θ·q^t, η_max)` (spec §3.2; `q = 1` is a constant
/// penalty). Round `t ≥ 1`, the one that produces `f_i(t)`, uses `η(t)`; `η(0) = θ` is only the
/// initial value, so the first round already has `θq`. (The spec's §3.3 example figures count
/// the first round at `θ`: that schedule is `PenaltySchedule::new(θ/q, q, η_max)` here.)
/// Public, as the privacy guarantee does not rely on it being secret.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct PenaltySchedule {
    theta: f64,
    growth: f64,
    cap: f64,
}

impl PenaltySchedule {
    /// Checks `θ > 0`, `q ≥ 1` and `θ ≤ η_max`, all finite (the cap is what Theorem 3.1 needs).
    pub fn new(theta: f64, growth: f64, cap: f64) -> Result<Self, PrivacyError> {
        let theta = positive("theta", theta)?;
        if !(growth >= 1.0 && growth.is_finite()) {
            return Err(PrivacyError::Option {
                name: "growth",
                value: growth,
            });
        }
        if !(cap >= theta && cap.is_finite()) {
            return Err(PrivacyError::Option {
                name: "cap",
                value: cap,
            });
        }
        Ok(Self { theta, growth, cap })
    }

    /// `η(t)`.
    pub fn penalty(&self, round: u64) -> f64 {
        (self.theta * (round as f64 * self.growth.ln()).exp()).min(self.cap)
    }
}

/// One node of \[ZKL\]'s penalty perturbation, for the accountant (spec §3.1–3.3).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct PenaltyPerturbation {
    loss_weight: f64,
    curvature: f64,
    neighbours: f64,
    records: f64,
    schedule: PenaltySchedule,
}

impl PenaltyPerturbation {
    /// The node with `neighbours` (`V_i ≥ 1`) neighbours, under `unit` (record level: `B_i = m`),
    /// for the local objective `(C/B_i) Σ L(y fᵀx) + reg_weight·R(f)` with `C = loss_weight > 0`,
    /// `c_L = curvature ≥ 0` (`L'' ≤ c_L`; ¼ for the logistic loss) and `reg_weight = ρ_R/N ≥ 0`.
    ///
    /// Refuses what the proof does not cover: the user-level unit (the proof replaces one record;
    /// with one record per user use `Unit::Record { records: 1 }`), and a first penalty too small
    /// for its Appendix D: it needs `2c_L < (B_i/C)(ρ_R/N + 2θV_i)`.
    pub fn new(
        loss_weight: f64,
        curvature: f64,
        reg_weight: f64,
        neighbours: u64,
        unit: Unit,
        schedule: PenaltySchedule,
    ) -> Result<Self, PrivacyError> {
        let loss_weight = positive("loss_weight", loss_weight)?;
        let curvature = nonnegative("curvature", curvature)?;
        let reg_weight = nonnegative("reg_weight", reg_weight)?;
        if neighbours == 0 {
            return Err(PrivacyError::Option {
                name: "neighbours",
                value: 0.0,
            });
        }
        if unit == Unit::User {
            return Err(PrivacyError::OutsideProof(
                "penalty perturbation is proved for replacing one record; with one record per \
                 user, use the record-level unit with one record"
                    .to_string(),
            ));
        }
        let (neighbours, records) = (neighbours as f64, unit.share()?);
        let room = records / loss_weight * (reg_weight + 2.0 * schedule.theta * neighbours);
        if 2.0 * curvature >= room {
            return Err(PrivacyError::OutsideProof(format!(
                "penalty perturbation needs 2 c_L < (B/C)(rho_R/N + 2 theta V), here {} >= {room}: \
                 take a larger theta",
                2.0 * curvature
            )));
        }
        Ok(Self {
            loss_weight,
            curvature,
            neighbours,
            records,
            schedule,
        })
    }

    /// The node's pure-DP loss in round `t ≥ 1` at noise rate `nu` (constant over the run):
    /// `C(1.4c_L + ν)/(η(t)·V_i·B_i)`.
    fn round_epsilon(&self, nu: f64, round: u64) -> f64 {
        self.loss_weight * (1.4 * self.curvature + nu)
            / (self.schedule.penalty(round) * self.neighbours * self.records)
    }

    /// The paper's guarantee (Theorem 4.1): pure β-DP with `β = Σ_{t=1..rounds} ε^{(t)}`.
    /// A reproduction figure, never the headline (the common accountant is [`Baseline::spent`]).
    pub fn paper_beta(&self, nu: f64, rounds: u64) -> Result<f64, PrivacyError> {
        let nu = nonnegative("nu", nu)?;
        let mut beta = 0.0;
        self.for_each_level(nu, rounds, |eps, count| beta += count * eps)?;
        Ok(beta)
    }

    /// `Σ_t ε_RR(α; ε^{(t)})` at noise rate `nu ≥ 0` (0 gives the Jacobian floor).
    pub(crate) fn curve(
        &self,
        orders: &Orders,
        nu: f64,
        rounds: u64,
    ) -> Result<RdpCurve, PrivacyError> {
        let mut values = vec![0.0; orders.len()];
        self.for_each_level(nu, rounds, |eps, count| {
            for (v, &a) in values.iter_mut().zip(orders.as_slice()) {
                *v += count * pure_dp_rdp(a, eps);
            }
        })?;
        Ok(RdpCurve::from_computed(orders.clone(), values.into_iter()))
    }

    /// Calls `visit(ε, count)` for the distinct per-round losses of rounds `1..=rounds`: one call
    /// per round while the penalty grows, then one for all the rounds at the constant penalty
    /// (the cap, or θ when `q = 1`), so a long horizon costs no more than its growing part.
    fn for_each_level(
        &self,
        nu: f64,
        rounds: u64,
        mut visit: impl FnMut(f64, f64),
    ) -> Result<(), PrivacyError> {
        let s = &self.schedule;
        let mut t = 1;
        if s.growth > 1.0 {
            // θq^t reaches the cap at t = ln(η_max/θ)/ln q: refuse before the work.
            let growing = (s.cap / s.theta).ln() / s.growth.ln();
            if growing.min(rounds as f64) > MAX_GROWING_ROUNDS as f64 {
                return Err(PrivacyError::TooManyRounds {
                    max: MAX_GROWING_ROUNDS,
                });
            }
            while t <= rounds && s.penalty(t) < s.cap {
                visit(self.round_epsilon(nu, t), 1.0);
                t += 1;
            }
        }
        let constant = rounds - (t - 1);
        if constant > 0 {
            visit(self.round_epsilon(nu, t), constant as f64);
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn grouped_rounds_equal_round_by_round_sums() {
        let g = Orders::new(&[1.5, 4.0, 64.0]).unwrap();
        let schedule = PenaltySchedule::new(0.5, 1.3, 4.0).unwrap();
        let pp =
            PenaltyPerturbation::new(1.0, 0.25, 0.01, 3, Unit::Record { records: 20 }, schedule)
                .unwrap();
        let curve = pp.curve(&g, 2.0, 30).unwrap();
        let mut want = RdpCurve::zero(&g);
        for t in 1..=30 {
            let eps = pp.round_epsilon(2.0, t);
            want.compose_in_place(&crate::mechanism::pure_dp(&g, eps).unwrap())
                .unwrap();
        }
        for (a, b) in curve.values().iter().zip(want.values()) {
            assert!((a - b).abs() <= 1e-12 * b, "{a} vs {b}");
        }
        // The penalty reaches its cap of 4 = 0.5·1.3^t between t = 7 and 8.
        assert_eq!(schedule.penalty(8), 4.0);
        assert!(schedule.penalty(7) < 4.0);
        assert_eq!(
            pp.curve(&g, 2.0, 0).unwrap().values(),
            RdpCurve::zero(&g).values()
        );
    }

    #[test]
    fn what_the_proof_does_not_cover_is_refused() {
        let s = PenaltySchedule::new(1.0, 1.0, 1.0).unwrap();
        let rec = Unit::Record { records: 1 };
        assert!(matches!(
            PenaltyPerturbation::new(1.0, 0.25, 0.0, 4, Unit::User, s),
            Err(PrivacyError::OutsideProof(_))
        ));
        // 2c_L = 0.5 against (1/1)(0 + 2·θ·V) with θ = 0.05, V = 4: 0.4.
        let small = PenaltySchedule::new(0.05, 1.0, 1.0).unwrap();
        assert!(matches!(
            PenaltyPerturbation::new(1.0, 0.25, 0.0, 4, rec, small),
            Err(PrivacyError::OutsideProof(_))
        ));
        assert!(PenaltyPerturbation::new(1.0, 0.25, 0.0, 0, rec, s).is_err());
        assert!(PenaltyPerturbation::new(0.0, 0.25, 0.0, 4, rec, s).is_err());
        assert!(PenaltyPerturbation::new(1.0, -0.25, 0.0, 4, rec, s).is_err());
        assert!(
            PenaltyPerturbation::new(1.0, 0.25, 0.0, 4, Unit::Record { records: 0 }, s).is_err()
        );
        for (theta, q, cap) in [
            (0.0, 1.0, 1.0),
            (1.0, 0.9, 2.0),
            (2.0, 1.1, 1.0),
            (1.0, f64::NAN, 2.0),
        ] {
            assert!(
                PenaltySchedule::new(theta, q, cap).is_err(),
                "{theta} {q} {cap}"
            );
        }
        let g = Orders::default_grid();
        let pp = PenaltyPerturbation::new(1.0, 0.25, 0.0, 4, rec, s).unwrap();
        let base = Baseline::PenaltyPerturbation(pp);
        assert!(base.spent(&g, 0.0, 10).is_err());
        assert!(base.spent(&g, f64::NAN, 10).is_err());
        assert!(pp.paper_beta(f64::NAN, 10).is_err() && pp.paper_beta(-1.0, 10).is_err());
        // A growth so slow that the cap is out of reach in the allowed number of rounds.
        let slow = PenaltySchedule::new(1.0, 1.0 + 1e-9, 1e3).unwrap();
        let pp = PenaltyPerturbation::new(1.0, 0.25, 0.0, 4, rec, slow).unwrap();
        assert_eq!(
            pp.curve(&g, 1.0, u64::MAX),
            Err(PrivacyError::TooManyRounds {
                max: MAX_GROWING_ROUNDS
            })
        );
    }

    #[test]
    fn the_papers_own_accounting_gives_their_knobs() {
        // [RK]: the per-iteration ε̄ is the knob (b = Δ₁/ε̄ is the caller's).
        assert_eq!(Baseline::DpIadmm.paper_knob(0.05, 20_000, 1e-6), Ok(0.05));
        // [HG], Theorem 6 with c₀ = 1, by hand: t = 100, l = 10, δ = 1e-5, ε = 1:
        // √(2·1000·ln(125000)) = √(2000·11.736069016284437) = 153.206194498...
        let hg = Baseline::Ipadmm { inner_steps: 10 };
        let sigma = hg.paper_knob(1.0, 100, 1e-5).unwrap();
        assert!((sigma - 153.206_194_498).abs() < 1e-6, "{sigma}");
        assert!((hg.paper_knob(0.5, 100, 1e-5).unwrap() - 2.0 * sigma).abs() < 1e-9);
        assert!(matches!(
            hg.paper_knob(1.0, 100, 1.0),
            Err(PrivacyError::Delta(_))
        ));
        for bad in [0.0, -1.0, f64::NAN, f64::INFINITY] {
            assert!(matches!(
                Baseline::DpIadmm.paper_knob(bad, 1, 1e-6),
                Err(PrivacyError::Epsilon(_))
            ));
        }
        let s = PenaltySchedule::new(1.0, 1.0, 1.0).unwrap();
        let pp =
            PenaltyPerturbation::new(1.0, 0.25, 0.0, 4, Unit::Record { records: 1 }, s).unwrap();
        assert!(matches!(
            Baseline::PenaltyPerturbation(pp).paper_knob(1.0, 10, 1e-6),
            Err(PrivacyError::OutsideProof(_))
        ));
    }

    #[test]
    fn laplace_and_gaussian_families_compose_their_steps() {
        let g = Orders::new(&[2.0, 8.0]).unwrap();
        let rk = Baseline::DpIadmm.spent(&g, 0.5, 10).unwrap();
        assert_eq!(rk, laplace(&g, 2.0).unwrap().repeat(10));
        for bad in [0.0, -1.0, f64::INFINITY, f64::NAN] {
            assert!(matches!(
                Baseline::DpIadmm.spent(&g, bad, 1),
                Err(PrivacyError::Epsilon(_))
            ));
        }
        let hg = Baseline::Ipadmm { inner_steps: 5 }
            .spent(&g, 2.0, 3)
            .unwrap();
        assert_eq!(hg.values(), &[15.0 * 0.25, 15.0]);
        assert!(matches!(
            Baseline::Ipadmm { inner_steps: 5 }.spent(&g, -2.0, 3),
            Err(PrivacyError::NoiseMultiplier(_))
        ));
    }
}
