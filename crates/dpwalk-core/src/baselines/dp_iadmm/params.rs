//! DP-IADMM's validated parameters, its schedules, and the sensitivity its noise is calibrated to.
//!
//! | name | meaning | range |
//! |------|---------|-------|
//! | `rho` (ρ^t) | penalty, `min(10⁹, c1·1.2^⌊t/Tc⌋ + c2)` (the paper's (21) with `c2/ε̄` written `c2`) | `c1, c2 ≥ 0` finite, `c1 + c2 > 0`, `Tc ≥ 1` |
//! | `eta` (η^t, ObjP) | proximal weight `a·t^(−q)`; paper: `a = 1`, `q = ½` | `a > 0`, `q ≥ 0`, finite |
//! | `radius` (δ^t, ObjT) | trust radius `a·t^(−q)`; paper: `q = 2`, the authors' code: `q = 0` | `a > 0`, `q ≥ 0`, finite |
//! | `noise` (b) | Laplace scale of the noise on each coordinate of the local gradient | `≥ 0`, finite |
//! | `clip` (G₁) | bound on each record's gradient in ℓ₁; `None` = no clipping (no privacy) | `> 0`, finite |
//!
//! Why `c2` and not the paper's `c2/ε̄`: the step knows the noise scale `b`, not the budget; once ε̄
//! is calibrated to a total budget it is tiny and `c2/ε̄` explodes (spec §1.5 item 9), so the
//! comparison tunes `c1, c2, Tc`; a reproduction passes `c2_paper/ε̄`.

use crate::params::{ParamError, check_clip};
use crate::problem::ProblemError;

use super::super::federated::FederatedError;
use thiserror::Error;

/// The cap on ρ of the paper's (21).
pub const RHO_CAP: f64 = 1e9;

/// ρ's growth factor every `Tc` rounds in the paper's (21).
pub const RHO_GROWTH: f64 = 1.2;

/// A DP-IADMM parameter or run that is refused, and why.
#[derive(Debug, Error, Clone, PartialEq)]
pub enum DpIadmmError {
    /// The ρ schedule's weights.
    #[error(
        "rho schedule needs finite c1, c2 >= 0 with c1 + c2 > 0 (rho > 0), got c1 = {c1}, c2 = {c2}"
    )]
    Rho {
        /// Weight of the growing part.
        c1: f64,
        /// Constant part.
        c2: f64,
    },
    /// The ρ schedule's growth period.
    #[error("rho schedule's growth period Tc must be at least 1 round")]
    RhoPeriod,
    /// A decaying step's scale.
    #[error("the scale a of a step schedule a·t^(-q) must be > 0 and finite, got {0}")]
    DecayScale(f64),
    /// A decaying step's power.
    #[error("the power q of a step schedule a·t^(-q) must be >= 0 and finite, got {0}")]
    DecayPower(f64),
    /// The Laplace scale.
    #[error("the Laplace noise scale b must be >= 0 and finite, got {0}")]
    Noise(f64),
    /// The clip bound.
    #[error(transparent)]
    Clip(#[from] ParamError),
    /// Noise without a clip has no sensitivity behind it.
    #[error(
        "Laplace noise b = {0} without a clip bound G1: no loss gradient has a data-independent l1 bound, so the noise would protect nothing; set a clip"
    )]
    NoiseWithoutClip(f64),
    /// The run does not fit the problem.
    #[error(transparent)]
    Federated(#[from] FederatedError),
}

impl From<ProblemError> for DpIadmmError {
    fn from(e: ProblemError) -> Self {
        DpIadmmError::Federated(FederatedError::Problem(e))
    }
}

/// `ρ^t = min(10⁹, c1·1.2^⌊t/Tc⌋ + c2)`; a constant ρ is `c1 = 0, c2 = ρ`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RhoSchedule {
    c1: f64,
    c2: f64,
    period: u64,
}

impl RhoSchedule {
    /// Checks the ranges of the module table.
    pub fn new(c1: f64, c2: f64, period: u64) -> Result<Self, DpIadmmError> {
        let ok = |c: f64| c.is_finite() && c >= 0.0;
        if !(ok(c1) && ok(c2) && c1 + c2 > 0.0) {
            return Err(DpIadmmError::Rho { c1, c2 });
        }
        if period == 0 {
            return Err(DpIadmmError::RhoPeriod);
        }
        Ok(Self { c1, c2, period })
    }

    /// A constant `ρ > 0`.
    pub fn constant(rho: f64) -> Result<Self, DpIadmmError> {
        Self::new(0.0, rho, 1).map_err(|_| DpIadmmError::Rho { c1: 0.0, c2: rho })
    }

    /// `ρ^t` (positive and finite).
    pub fn at(&self, t: u64) -> f64 {
        if self.c1 == 0.0 {
            // Not c1 times the growth: 0 · ∞ would be NaN once the growth overflows.
            return self.c2.min(RHO_CAP);
        }
        let growth = RHO_GROWTH.powf((t / self.period) as f64);
        (self.c1 * growth + self.c2).min(RHO_CAP)
    }
}

/// A step schedule `a·t^(−q)` (η^t of ObjP, δ^t of ObjT).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Decay {
    a: f64,
    power: f64,
}

impl Decay {
    /// Checks `a > 0` and `q ≥ 0`, both finite.
    pub fn new(a: f64, power: f64) -> Result<Self, DpIadmmError> {
        if !(a > 0.0 && a.is_finite()) {
            return Err(DpIadmmError::DecayScale(a));
        }
        if !(power >= 0.0 && power.is_finite()) {
            return Err(DpIadmmError::DecayPower(power));
        }
        Ok(Self { a, power })
    }

    /// `a·t^(−q)` for round `t ≥ 1`.
    pub fn at(&self, t: u64) -> f64 {
        self.a * (t as f64).powf(-self.power)
    }
}

/// The trust region's norm in ObjT (6b): ℓ₂ as printed, ℓ∞ in the paper's experiments.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TrustNorm {
    /// `‖z − z_p^t‖∞ ≤ δ^t` (the default: a box, so the update is exact coordinate by coordinate).
    Linf,
    /// `‖z − z_p^t‖₂ ≤ δ^t`.
    L2,
}

/// Which subproblem an agent solves.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Variant {
    /// ObjP (Algorithm 1): proximal term `‖z − z_p^t‖²/(2η^t)`.
    Prox {
        /// η^t.
        eta: Decay,
    },
    /// ObjT (Algorithm 2): trust region `‖z − z_p^t‖ ≤ δ^t`.
    Trust {
        /// δ^t.
        radius: Decay,
        /// The region's norm.
        norm: TrustNorm,
    },
}

/// DP-IADMM's parameters (see the module table), checked together.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct DpIadmmParams {
    variant: Variant,
    rho: RhoSchedule,
    noise: f64,
    clip: Option<f64>,
}

impl DpIadmmParams {
    /// Checks the ranges of the module table, and refuses noise without a clip.
    pub fn new(
        variant: Variant,
        rho: RhoSchedule,
        noise: f64,
        clip: Option<f64>,
    ) -> Result<Self, DpIadmmError> {
        if !(noise >= 0.0 && noise.is_finite()) {
            return Err(DpIadmmError::Noise(noise));
        }
        let clip = check_clip(clip)?;
        if noise > 0.0 && clip.is_none() {
            return Err(DpIadmmError::NoiseWithoutClip(noise));
        }
        Ok(Self {
            variant,
            rho,
            noise,
            clip,
        })
    }

    /// ObjP or ObjT, with its schedule.
    pub fn variant(&self) -> Variant {
        self.variant
    }
    /// The ρ schedule.
    pub fn rho(&self) -> RhoSchedule {
        self.rho
    }
    /// The Laplace scale `b`.
    pub fn noise(&self) -> f64 {
        self.noise
    }
    /// `G₁`, or `None` when unclipped.
    pub fn clip(&self) -> Option<f64> {
        self.clip
    }
}

/// Whose privacy the accountant protects.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PrivacyUnit {
    /// All of a user's records replaced at once.
    User,
    /// One record replaced by another (replace-one).
    Record,
}

/// The ℓ₁ sensitivity of the noised quantity `g_p = (1/n)·(1/m_p) Σ_records clip₁(∇ℓ, G₁)`, one
/// agent's gradient in one round, for an agent with `records` records among `n_agents`:
/// `2G₁/n` at user level (the clipped mean moves by at most `2G₁` in ℓ₁), `2G₁/(n·m_p)` at record
/// level (one of `m_p` clipped terms, each of ℓ₁ norm at most `G₁`, changes). An agent without
/// records releases no data (0). Noise `Laplace(b)` on each coordinate then gives pure
/// `ε̄ = Δ₁/b` per round, whose RDP curve is the 1-D Laplace curve at `ε̄` (spec §5.2).
pub fn l1_sensitivity(clip: f64, unit: PrivacyUnit, n_agents: usize, records: usize) -> f64 {
    if records == 0 {
        return 0.0;
    }
    let per_user = 2.0 * clip / n_agents as f64;
    match unit {
        PrivacyUnit::User => per_user,
        PrivacyUnit::Record => per_user / records as f64,
    }
}
