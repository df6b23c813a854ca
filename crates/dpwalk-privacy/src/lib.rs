//! dpwalk-privacy: Rényi-DP accounting for the private random walk.
//!
//! # Layout
//! - [`rdp`]: order grids, RDP curves, composition, conversion to (ε, δ).
//! - [`refine`]: the best order between a grid's orders, for curves computed at any order.
//! - [`mechanism`]: the Gaussian, Poisson-subsampled Gaussian and Laplace mechanisms, and the
//!   tight curve of any pure ε-DP mechanism.
//! - [`pld`]: privacy loss distributions composed by FFT: the tight (ε, δ) of the
//!   Poisson-subsampled Gaussian.
//! - [`local`]: the local view of one contribution (an eavesdropper who sees every token).
//! - [`network`]: the network view (user `j` observing user `i` through a DP-SGD walk) of one
//!   contribution: the mixture bound over first-passage laws, exact on the complete graph and
//!   certified on any sparse graph, with the final model charged.
//! - [`linear_gaussian`]: the exact view of an observer of the linear-Gaussian ADMM and DP-SGD
//!   walks, the reference that decides which network claims hold.
//! - [`central`]: the final-model view of the centralized and federated modes.
//! - [`budget`]: the one budget policy (may this user contribute now?) of the simulator and the
//!   daemon.
//! - [`calibrate`]: the smallest σ meeting a target (ε, δ) for a view, and each seed baseline's
//!   noise knob for a target.
//! - [`baseline`]: the seed baselines (DP-IADMM, IPADMM, penalty perturbation) in the common
//!   accountant: per-round curves and their composition.
//! - [`mod@unit`]: the privacy unit (user or record) and each algorithm's sensitivity under it,
//!   including dpwalk's record-level view.
//! - [`ledger`]: the per-user, append-only, checksummed record of visits (contributions with their
//!   charge, and noise-only visits) and budget checks.
//! - [`walk`]: per-user figures of a walk on a topology (what the CLI prints and the simulator
//!   reports).
//! - [`report`]: the documents of the accounting commands, shared by the CLI and the Python
//!   package.
//! - [`error`]: the accounting error type.
//!
//! # Usage
//! ```
//! use dpwalk_privacy::{local::local_view, rdp::{Conversion, Orders}, Noise};
//! let orders = Orders::default_grid();
//! let noise = Noise::new(20.0, 1.0).unwrap();
//! let curve = local_view(&orders, noise, 10);
//! let eps = curve.to_dp(1e-5, Conversion::Tight).unwrap().epsilon();
//! assert!(eps > 0.0 && eps.is_finite());
//! ```

#![cfg_attr(test, allow(clippy::unwrap_used, clippy::expect_used))]

pub mod baseline;
pub mod budget;
pub mod calibrate;
pub mod central;
pub mod error;
pub mod gdp;
pub mod ledger;
pub mod linear_gaussian;
pub mod local;
pub mod mechanism;
pub mod network;
pub mod pld;
pub mod rdp;
pub mod refine;
pub mod report;
pub mod unit;
pub mod walk;

pub use error::PrivacyError;

/// The noise level σ and clipping bound C of the step, both validated `> 0` and finite: the only
/// form in which the accountant takes them (σ = 0 or no clipping has no guarantee to compute).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Noise {
    sigma: f64,
    clip: f64,
}

impl Noise {
    /// Checks `σ > 0` and `C > 0`, both finite.
    pub fn new(sigma: f64, clip: f64) -> Result<Self, PrivacyError> {
        if !(sigma > 0.0 && sigma.is_finite()) {
            return Err(PrivacyError::Sigma(sigma));
        }
        if !(clip > 0.0 && clip.is_finite()) {
            return Err(PrivacyError::Clip(clip));
        }
        Ok(Self { sigma, clip })
    }

    /// σ.
    pub fn sigma(&self) -> f64 {
        self.sigma
    }

    /// C.
    pub fn clip(&self) -> f64 {
        self.clip
    }
}
