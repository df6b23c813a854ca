//! The privacy unit (what two neighbouring datasets differ in) and each algorithm's sensitivity
//! under it: dpwalk's record-level view and the seed baselines' noise scales (seed-baselines spec
//! §6.1 point 3 and the §6.2 table).
//!
//! # Units
//! - [`Unit::User`]: all the records of one user may be replaced. dpwalk's accountant has always
//!   used it: a contribution's sensitivity is `2C` whatever the user's data.
//! - [`Unit::Record`]: one record of a user holding `m` records is replaced. With one record per
//!   user this is the user-level unit as well, and every formula below gives the user-level value
//!   (dpwalk's can only be smaller), so "one record per user" is `Record { records: 1 }`.
//!
//! # dpwalk's record-level view ([`record_level_clip`])
//! Our derivation (spec §6.1 point 3). The ADMM step releases `clip(x − z, C)` with
//! `x = prox_{γ f_i}(v)`, where `v = 2z − u_i` is known to the local-view eavesdropper (`z` is
//! `prox_{γ r}` of the token's `w`, and `u_i` is the sum of the user's released updates, each
//! `n` times a change of `w`), so the two neighbouring datasets see the same `v` at every
//! contribution given the past releases (adaptive composition). `f_i` is the mean loss over the user's `m` records;
//! if every per-record gradient has ℓ₂ norm at most `G₂`, replacing one record moves `∇f_i` by at
//! most `2G₂/m` everywhere, and the prox of convex functions whose gradients differ by at most `g`
//! differ by at most `γg` (compare the optimality conditions and use monotonicity). Clipping is a
//! projection, 1-Lipschitz. So `‖Δ − Δ'‖ ≤ min(2C, 2γG₂/m)`: the step is accounted exactly like a
//! user-level step whose clip is `min(C, γG₂/m)`. DP-SGD on the walk releases
//! `clip(∇f_i(w), C)`, whose record-level sensitivity is `min(2C, 2G₂/m)` by the same argument
//! (no γ). Every view (local, central, network) takes the sensitivity only through `C`, so all of
//! them apply unchanged with this clip. The simulator feeds it to its accountant for the worst
//! user (fewest records) under `[privacy] unit = "record"` (`dpwalk_sim::record_level`), and
//! `tests/record_sensitivity.rs` checks the bound on the real steps.
//!
//! Assumptions: the loss has a data-independent per-record gradient bound `G₂` (logistic:
//! `max ‖a‖₂`; multinomial: `√2 max ‖a‖₂`; **not** the squared loss without a bounded domain), and
//! the prox is computed exactly: a solver stopped at error `τ` adds `2τ` to the sensitivity, which
//! this bound does not include (the user-level `2C` holds whatever the solver did).
//!
//! # The baselines' sensitivities
//! - \[RK\] DP-IADMM ([`dp_iadmm_sensitivity`]): the ℓ₁ sensitivity of the released local gradient
//!   under dpwalk's weighting, with per-example ℓ₁ clipping at `G₁`: `Δ₁ = 2G₁/(n·m)` (`m = 1` at
//!   user level, spec §1.3). The Laplace scale is `b = Δ₁/ε̄`.
//! - \[HG\] IPADMM ([`ipadmm_sensitivity`]): the ℓ₂ sensitivity of one inner primal step (its
//!   Lemma 5) with per-example ℓ₂ clipping at `G₂`: `s = 2G₂/((2ρ·deg_i + η)·m)` (spec §2.3). The
//!   noise std is `s·σ`.
//! - \[ZKL\] penalty perturbation: the unit enters the per-round loss through `B_i = m`
//!   ([`crate::baseline::PenaltyPerturbation`]); its proof covers replace-one of a record only.

use crate::error::{PrivacyError, positive};
use dpwalk_core::params::AdmmStep;
use dpwalk_core::step::Algorithm;

/// What two neighbouring datasets differ in (module docs).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Unit {
    /// All the records of one user.
    User,
    /// One record of a user holding `records` records (`≥ 1`).
    Record {
        /// The user's number of records `m`.
        records: u64,
    },
}

impl Unit {
    /// The `m` that divides a mean-gradient sensitivity: the user's record count at record level,
    /// 1 at user level (the whole mean may move).
    pub(crate) fn share(self) -> Result<f64, PrivacyError> {
        match self {
            Unit::User => Ok(1.0),
            Unit::Record { records: 0 } => Err(PrivacyError::Option {
                name: "records",
                value: 0.0,
            }),
            Unit::Record { records } => Ok(records as f64),
        }
    }
}

/// The clip to account one of dpwalk's steps with at record level, `min(C, γG₂/m)` for the ADMM
/// step and `min(C, G₂/m)` for DP-SGD (module docs), for a user with `records` records and a
/// per-record ℓ₂ gradient bound `grad_bound`. Use it in place of `C` in [`crate::Noise`]; the
/// users with the fewest records are the worst case.
pub fn record_level_clip(
    algorithm: &Algorithm,
    records: u64,
    grad_bound: f64,
) -> Result<f64, PrivacyError> {
    let clip = algorithm.clip().ok_or(PrivacyError::Clip(f64::INFINITY))?;
    let step = match algorithm {
        Algorithm::Admm(p) => p.gamma(),
        Algorithm::Sgd(_) => 1.0,
    };
    clip_at(clip, step, records, grad_bound)
}

/// [`record_level_clip`] of the ADMM step from γ and C alone, before σ is known: a daemon's run
/// file states `m` and `G₂`, and its members calibrate σ with this clip.
pub fn admm_record_level_clip(
    step: &AdmmStep,
    records: u64,
    grad_bound: f64,
) -> Result<f64, PrivacyError> {
    let clip = step.clip().ok_or(PrivacyError::Clip(f64::INFINITY))?;
    clip_at(clip, step.gamma(), records, grad_bound)
}

/// `min(C, step · G₂ / m)`, the one formula of both: `step` is γ for the ADMM step and 1 for
/// DP-SGD (what `dpwalk calibrate` and `account walk` take as `--gamma`).
pub fn clip_at(clip: f64, step: f64, records: u64, grad_bound: f64) -> Result<f64, PrivacyError> {
    let m = Unit::Record { records }.share()?;
    let grad_bound = positive("grad_bound", grad_bound)?;
    Ok(clip.min(step * grad_bound / m))
}

/// \[RK\] DP-IADMM's ℓ₁ sensitivity `Δ₁ = 2G₁/(n·m)` of an agent's released gradient, for `users`
/// agents (`n`) and per-example ℓ₁ clip `clip_l1` (`G₁`); the Laplace scale is `Δ₁/ε̄`.
pub fn dp_iadmm_sensitivity(unit: Unit, users: u64, clip_l1: f64) -> Result<f64, PrivacyError> {
    if users == 0 {
        return Err(PrivacyError::Users { min: 1, got: 0 });
    }
    let clip = positive("clip_l1", clip_l1)?;
    Ok(2.0 * clip / (users as f64 * unit.share()?))
}

/// \[HG\] IPADMM's ℓ₂ sensitivity `2G₂/((2ρ·deg_i + η)·m)` of one inner step of node `i` with
/// `degree` neighbours, ADMM penalty `penalty` (ρ), proximal weight `eta` (η) and per-example ℓ₂
/// clip `clip_l2` (`G₂`); the noise std is this times σ.
pub fn ipadmm_sensitivity(
    unit: Unit,
    clip_l2: f64,
    penalty: f64,
    degree: u64,
    eta: f64,
) -> Result<f64, PrivacyError> {
    let clip = positive("clip_l2", clip_l2)?;
    let penalty = positive("penalty", penalty)?;
    let eta = positive("eta", eta)?;
    Ok(2.0 * clip / ((2.0 * penalty * degree as f64 + eta) * unit.share()?))
}

#[cfg(test)]
mod tests {
    use super::*;
    use dpwalk_core::params::{AdmmParams, SgdParams};

    #[test]
    fn record_level_clip_is_the_smaller_bound() {
        let admm = Algorithm::Admm(AdmmParams::new(0.5, 1.0, 1.0, Some(1.0)).unwrap());
        // γG₂/m = 0.5 · 2 / 100 = 0.01 < C
        assert_eq!(record_level_clip(&admm, 100, 2.0).unwrap(), 0.01);
        // one record: γG₂ = 1.0 = C
        assert_eq!(record_level_clip(&admm, 1, 2.0).unwrap(), 1.0);
        let sgd = Algorithm::Sgd(SgdParams::new(0.1, 1.0, Some(1.0)).unwrap());
        assert_eq!(record_level_clip(&sgd, 4, 2.0).unwrap(), 0.5);
        assert!(matches!(
            record_level_clip(&admm, 0, 2.0),
            Err(PrivacyError::Option {
                name: "records",
                ..
            })
        ));
        for g in [0.0, -1.0, f64::NAN, f64::INFINITY] {
            assert!(record_level_clip(&admm, 3, g).is_err());
        }
        let step = AdmmStep::new(0.5, 1.0, Some(1.0)).unwrap();
        assert_eq!(
            admm_record_level_clip(&step, 100, 2.0).unwrap(),
            record_level_clip(&admm, 100, 2.0).unwrap()
        );
        let unclipped = Algorithm::Admm(AdmmParams::new(0.5, 1.0, 1.0, None).unwrap());
        assert!(matches!(
            record_level_clip(&unclipped, 3, 1.0),
            Err(PrivacyError::Clip(_))
        ));
    }

    #[test]
    fn baseline_sensitivities_follow_the_spec_table() {
        assert_eq!(dp_iadmm_sensitivity(Unit::User, 10, 3.0).unwrap(), 0.6);
        let rec = Unit::Record { records: 4 };
        assert_eq!(dp_iadmm_sensitivity(rec, 10, 3.0).unwrap(), 0.15);
        assert_eq!(
            dp_iadmm_sensitivity(Unit::Record { records: 1 }, 10, 3.0).unwrap(),
            dp_iadmm_sensitivity(Unit::User, 10, 3.0).unwrap()
        );
        assert!(dp_iadmm_sensitivity(Unit::User, 0, 3.0).is_err());
        assert!(dp_iadmm_sensitivity(Unit::User, 10, -3.0).is_err());
        // 2·1/((2·0.5·4 + 1)·m)
        assert_eq!(
            ipadmm_sensitivity(Unit::User, 1.0, 0.5, 4, 1.0).unwrap(),
            0.4
        );
        assert_eq!(ipadmm_sensitivity(rec, 1.0, 0.5, 4, 1.0).unwrap(), 0.1);
        assert!(ipadmm_sensitivity(Unit::User, 1.0, f64::NAN, 4, 1.0).is_err());
        assert!(ipadmm_sensitivity(Unit::Record { records: 0 }, 1.0, 0.5, 4, 1.0).is_err());
    }
}
