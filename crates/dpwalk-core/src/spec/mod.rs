//! What a run *is*, as both drivers write it: the problem (loss, classes, regularizer), the
//! walk's step (γ, λ, C), the noise source (σ, or a budget ε, δ to calibrate σ to) and the
//! topology. The scenario files of `dpwalk-sim` and the run files of `dpwalk-net` embed these
//! types and validate them through these functions, so that "the daemon and the simulator given
//! the same run" is a statement about one set of types; the keys only one driver has (sweeps,
//! members, outputs, the baselines' knobs) stay in that driver's file.
//!
//! Every check names the key it refused in one error type, [`SpecError`]: the dotted key path
//! as a user writes it in the file or in `--set` (`algorithm.lambda`, `members[2].peer-id`) and
//! the reason; [`SpecError::line_in`] finds the key's line when the text is at hand.
//!
//! The calibration of σ to a budget stays in `dpwalk-privacy` (it needs the accountant); a spec
//! only holds and checks ε and δ.

mod key;
pub mod noise;
pub mod problem;
pub mod topology;
pub mod unit;

pub use key::SpecError;
pub use noise::{BudgetSpec, BudgetViewName, DEFAULT_DELTA, Noise, check_delta, check_epsilon};
pub use problem::{LossName, ProblemSpec};
pub use topology::build_topology;
pub use unit::{RecordUnit, UnitName, UnitSpec};

use crate::params::{AdmmStep, ParamError};

/// The key of `[algorithm]` a [`ParamError`] is about.
pub fn param_key(e: &ParamError) -> &'static str {
    match e {
        ParamError::Gamma(_) => "gamma",
        ParamError::Relaxation(_) => "lambda",
        ParamError::Sigma(_) => "sigma",
        ParamError::Clip(_) => "clip",
        ParamError::LearningRate(_) => "lr",
    }
}

/// γ, λ and C of the walk's ADMM step, checked; an error names `<table>.<key>`.
pub fn check_step(
    table: &str,
    gamma: f64,
    lambda: f64,
    clip: Option<f64>,
) -> Result<AdmmStep, SpecError> {
    AdmmStep::new(gamma, lambda, clip).map_err(|e| SpecError::new(&[table, param_key(&e)], e))
}

#[cfg(test)]
mod tests;
