//! `dpwalk audit`: a measured lower bound ε̂ on what an attacker learns, beside the accountant's
//! upper bound ε for the same user, observer and view.
//!
//! # Layout
//! - [`binomial`]: Clopper–Pearson bounds on error rates.
//! - [`normal`]: `Φ`, `Φ⁻¹` and the Gaussian-DP curve.
//! - [`estimate`]: two samples of a statistic → ε̂ (Nasr et al. 2021) and the GDP variant
//!   (Nasr et al. 2023), with the threshold chosen on a separate half of the runs.
//! - [`canary`]: the two worlds (a dedicated feature, the canary record on it).
//! - [`trial`]: one short walk through the shared step, and what each attacker saw.
//! - [`statistic`]: the views (local, network, central) and their statistics (first arrival,
//!   whole transcript).
//! - [`bound`]: the accountant's figure each view is compared with.
//! - [`setting`]: what was audited at one point (both modes' results).
//! - [`record`]: the record-level worlds (one record replaced, within the data's norm bound) and
//!   the record-level figure they are compared with.
//! - [`driver`]: a scenario's points, both worlds' trials in parallel, the results.
//! - [`baseline`]: the same for a seed baseline's point (its rounds, its local view).
//! - [`output`]: `audit.json`, `audit.csv` and the plots.
//! - [`one_run`]: the cheaper one-run mode (Steinke, Nasr & Jagielski 2023): many canaries in
//!   one walk.
//!
//! An audit measures one attack: ε̂ is a lower bound on the true ε (at the stated confidence),
//! never a guarantee; a bound it exceeds is wrong (or its assumptions do not hold).

pub mod baseline;
pub mod binomial;
pub mod bound;
pub mod canary;
pub mod driver;
pub mod estimate;
pub mod normal;
pub mod one_run;
pub mod output;
pub mod record;
pub mod setting;
pub mod statistic;
pub mod trial;

/// Why an audit could not be made.
#[derive(Debug, thiserror::Error)]
pub enum AuditError {
    /// Too few runs to split into a selection and an evaluation half.
    #[error("an audit needs at least 4 runs per world, got {0}")]
    TooFewRuns(usize),
    /// A statistic was NaN (a diverged run).
    #[error("a run produced a NaN statistic: the walk diverged (check sigma, gamma and the data)")]
    NonFinite,
    /// An option is out of range.
    #[error("{0}")]
    Invalid(String),
    /// The scenario is invalid.
    #[error(transparent)]
    Scenario(#[from] crate::scenario::ScenarioError),
    /// The accountant refused its inputs.
    #[error("privacy")]
    Privacy(#[from] dpwalk_privacy::PrivacyError),
    /// The problem refused the step's parameters.
    #[error("problem")]
    Problem(#[from] dpwalk_core::problem::ProblemError),
    /// A trial failed.
    #[error("trial")]
    Trial(#[from] trial::TrialError),
    /// A baseline's round failed.
    #[error("a baseline's round")]
    Round(#[from] crate::run::RunError),
}
