//! The documents of the accounting commands, computed in one place for the CLI (`dpwalk account
//! … --json`, `dpwalk calibrate --json`, `dpwalk ledger show --json`) and the Python package
//! (`dpwalk.account_gaussian`, `dpwalk.account_walk`, …), so that both print the same figures
//! from the same code. Each document serializes to the JSON whose key names are part of the
//! product; keys whose figure does not apply are `null`, never absent, so a reader can tell "not
//! proved here" from "not asked" (the few keys only some views have, such as `rounds`, are left
//! out where they do not apply).
//!
//! A query names its options as the CLI's flags do (`--total-steps`), and so do its refusals
//! ([`QueryError`]): the CLI prints them as they are, Python raises them with the same words.

mod calibrate;
mod error;
mod gaussian;
mod given_walk;
mod ledger;
mod scenario;
mod walk;

pub use calibrate::{CalibrateQuery, CalibrateReport, CalibrateView, TargetDoc};
pub use error::QueryError;
pub use gaussian::GaussianReport;
pub use given_walk::{
    GivenWalkQuery, GivenWalkReport, MAX_CERTIFIED_STEPS, MAX_CERTIFIED_WORK, UserCertificate,
    certify_users,
};
pub use ledger::LedgerReport;
pub use scenario::{
    Accounted, Contributions, DEFAULT_TOPOLOGY_SEED, Graph, RecordLevel, Scenario, ScenarioDoc,
    ScenarioFlags, ScenarioQuery,
};
pub use walk::{ClosedFormDoc, Step, UserDoc, WalkQuery, WalkReport, WalkView, WorstDoc};

use crate::rdp::{Conversion, Orders};

/// The order grid, δ and the conversion every accounting query takes (`--orders`, `--delta`,
/// `--conversion`).
#[derive(Debug, Clone, PartialEq)]
pub struct Conversions {
    /// The Rényi orders as given, `None` for the default grid: checked by the query after the
    /// options it checks first, as the CLI always has.
    pub orders: Option<Vec<f64>>,
    /// δ of the (ε, δ) figures.
    pub delta: f64,
    /// The RDP → (ε, δ) statement.
    pub conversion: Conversion,
}

impl Conversions {
    /// The order grid.
    ///
    /// # Errors
    /// [`QueryError::Invalid`] naming `--orders` when [`Orders::new`] refuses them.
    pub fn orders(&self) -> Result<Orders, QueryError> {
        match &self.orders {
            None => Ok(Orders::default_grid()),
            Some(given) => Orders::new(given).map_err(|source| QueryError::Invalid {
                flags: "--orders",
                source,
            }),
        }
    }
}
