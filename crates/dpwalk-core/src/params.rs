//! Validated step parameters.
//!
//! Configs deserialize into plain structs elsewhere; they become these types only through the
//! checked constructors below, so the step and the accountant never see γ ≤ 0, λ ∉ (0, 1],
//! σ < 0 or C ≤ 0.
//!
//! | name | meaning | range |
//! |------|---------|-------|
//! | `gamma` (γ) | prox step of the ADMM splitting | `> 0`, finite |
//! | `relaxation` (λ) | relaxation of the fixed-point update `u ← u + 2λ(x − z)` | `(0, 1]` |
//! | `sigma` (σ) | std of the Gaussian noise `η` added in `u ← u + 2λ(Δ + η/2)` | `≥ 0`, finite |
//! | `clip` (C) | bound on `‖x − z‖₂`; `None` = no clipping (no privacy guarantee) | `> 0`, finite |
//! | `lr` | DP-SGD step size | `> 0`, finite |

use thiserror::Error;

/// A parameter outside its range.
#[derive(Debug, Error, Clone, PartialEq)]
pub enum ParamError {
    /// γ must be positive and finite.
    #[error("gamma must be > 0 and finite, got {0}")]
    Gamma(f64),
    /// λ must lie in (0, 1].
    #[error("lambda (relaxation) must be in (0, 1], got {0}")]
    Relaxation(f64),
    /// σ must be non-negative and finite.
    #[error("sigma must be >= 0 and finite, got {0}")]
    Sigma(f64),
    /// C must be positive and finite.
    #[error("clip must be > 0 and finite, got {0}")]
    Clip(f64),
    /// The learning rate must be positive and finite.
    #[error("learning rate must be > 0 and finite, got {0}")]
    LearningRate(f64),
}

/// Parameters of the private ADMM step (see the module table).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct AdmmParams {
    gamma: f64,
    relaxation: f64,
    sigma: f64,
    clip: Option<f64>,
}

pub(crate) fn check_clip(clip: Option<f64>) -> Result<Option<f64>, ParamError> {
    match clip {
        Some(c) if !(c > 0.0 && c.is_finite()) => Err(ParamError::Clip(c)),
        other => Ok(other),
    }
}

fn check_sigma(sigma: f64) -> Result<f64, ParamError> {
    if sigma >= 0.0 && sigma.is_finite() {
        Ok(sigma)
    } else {
        Err(ParamError::Sigma(sigma))
    }
}

/// γ, λ and C of the ADMM step, validated, without σ: what a run fixes before its σ is known
/// (given, or calibrated to a budget). [`AdmmStep::with_sigma`] is the way to an [`AdmmParams`],
/// so that no validated step holds a placeholder σ while it waits for its calibration.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct AdmmStep {
    gamma: f64,
    relaxation: f64,
    clip: Option<f64>,
}

impl AdmmStep {
    /// Checks the ranges of γ, λ and C (module table).
    pub fn new(gamma: f64, relaxation: f64, clip: Option<f64>) -> Result<Self, ParamError> {
        if !(gamma > 0.0 && gamma.is_finite()) {
            return Err(ParamError::Gamma(gamma));
        }
        if !(relaxation > 0.0 && relaxation <= 1.0) {
            return Err(ParamError::Relaxation(relaxation));
        }
        Ok(Self {
            gamma,
            relaxation,
            clip: check_clip(clip)?,
        })
    }

    /// The step with its σ (checked `>= 0` and finite).
    pub fn with_sigma(&self, sigma: f64) -> Result<AdmmParams, ParamError> {
        Ok(AdmmParams {
            gamma: self.gamma,
            relaxation: self.relaxation,
            sigma: check_sigma(sigma)?,
            clip: self.clip,
        })
    }

    /// γ.
    pub fn gamma(&self) -> f64 {
        self.gamma
    }
    /// λ.
    pub fn relaxation(&self) -> f64 {
        self.relaxation
    }
    /// C, or `None` when unclipped.
    pub fn clip(&self) -> Option<f64> {
        self.clip
    }
}

impl AdmmParams {
    /// Checks every range of the module table.
    pub fn new(
        gamma: f64,
        relaxation: f64,
        sigma: f64,
        clip: Option<f64>,
    ) -> Result<Self, ParamError> {
        AdmmStep::new(gamma, relaxation, clip)?.with_sigma(sigma)
    }

    /// γ.
    pub fn gamma(&self) -> f64 {
        self.gamma
    }
    /// λ.
    pub fn relaxation(&self) -> f64 {
        self.relaxation
    }
    /// σ.
    pub fn sigma(&self) -> f64 {
        self.sigma
    }
    /// C, or `None` when unclipped.
    pub fn clip(&self) -> Option<f64> {
        self.clip
    }
}

/// The learning rate and C of the DP-SGD step, validated, without σ: what a run fixes before its
/// σ is known, as [`AdmmStep`] is for the ADMM step. [`SgdStep::with_sigma`] is the way to an
/// [`SgdParams`].
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SgdStep {
    lr: f64,
    clip: Option<f64>,
}

impl SgdStep {
    /// Checks the ranges of the learning rate and C (module table).
    pub fn new(lr: f64, clip: Option<f64>) -> Result<Self, ParamError> {
        if !(lr > 0.0 && lr.is_finite()) {
            return Err(ParamError::LearningRate(lr));
        }
        Ok(Self {
            lr,
            clip: check_clip(clip)?,
        })
    }

    /// The step with its σ (checked `>= 0` and finite).
    pub fn with_sigma(&self, sigma: f64) -> Result<SgdParams, ParamError> {
        Ok(SgdParams {
            lr: self.lr,
            sigma: check_sigma(sigma)?,
            clip: self.clip,
        })
    }

    /// Step size.
    pub fn lr(&self) -> f64 {
        self.lr
    }
    /// C, or `None` when unclipped.
    pub fn clip(&self) -> Option<f64> {
        self.clip
    }
}

/// Parameters of the DP-SGD baseline on the walk.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SgdParams {
    lr: f64,
    sigma: f64,
    clip: Option<f64>,
}

impl SgdParams {
    /// Checks the ranges of the module table.
    pub fn new(lr: f64, sigma: f64, clip: Option<f64>) -> Result<Self, ParamError> {
        SgdStep::new(lr, clip)?.with_sigma(sigma)
    }
    /// Step size.
    pub fn lr(&self) -> f64 {
        self.lr
    }
    /// σ.
    pub fn sigma(&self) -> f64 {
        self.sigma
    }
    /// C, or `None` when unclipped.
    pub fn clip(&self) -> Option<f64> {
        self.clip
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranges_are_enforced() {
        assert!(AdmmParams::new(1.0, 0.5, 0.0, Some(1.0)).is_ok());
        assert!(AdmmParams::new(1.0, 1.0, 2.0, None).is_ok());
        assert_eq!(
            AdmmParams::new(0.0, 0.5, 0.0, None),
            Err(ParamError::Gamma(0.0))
        );
        assert_eq!(
            AdmmParams::new(1.0, 0.0, 0.0, None),
            Err(ParamError::Relaxation(0.0))
        );
        assert_eq!(
            AdmmParams::new(1.0, 1.5, 0.0, None),
            Err(ParamError::Relaxation(1.5))
        );
        assert_eq!(
            AdmmParams::new(1.0, 0.5, -1.0, None),
            Err(ParamError::Sigma(-1.0))
        );
        assert_eq!(
            AdmmParams::new(1.0, 0.5, 1.0, Some(0.0)),
            Err(ParamError::Clip(0.0))
        );
        assert!(AdmmParams::new(f64::NAN, 0.5, 1.0, None).is_err());
        assert!(AdmmParams::new(1.0, f64::NAN, 1.0, None).is_err());
        assert!(AdmmParams::new(1.0, 0.5, f64::INFINITY, None).is_err());
        assert!(SgdParams::new(-0.1, 1.0, Some(1.0)).is_err());
        assert!(SgdParams::new(0.1, 1.0, Some(f64::NAN)).is_err());
        assert_eq!(
            SgdParams::new(0.1, -1.0, Some(1.0)),
            Err(ParamError::Sigma(-1.0))
        );
        assert_eq!(
            SgdStep::new(0.1, Some(1.0)).and_then(|s| s.with_sigma(2.0)),
            SgdParams::new(0.1, 2.0, Some(1.0))
        );
    }
}
