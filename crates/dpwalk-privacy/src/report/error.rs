//! Why an accounting query ([`super`]) is refused, in the CLI's words: each variant names the
//! flags at fault, and chains the accountant's own reason as its source.

use crate::PrivacyError;
use dpwalk_core::topology::TopologyError;
use thiserror::Error;

/// A refused accounting query.
#[derive(Debug, Error)]
#[non_exhaustive]
pub enum QueryError {
    /// The topology file could not be read or built.
    #[error("loading topology {path}")]
    Topology {
        /// The file, as given.
        path: String,
        /// Why.
        #[source]
        source: TopologyError,
    },
    /// The complete graph of fewer than two users.
    #[error("--complete {0}: a walk needs at least 2 users")]
    TooFewUsers(usize),
    /// Neither or both of two exclusive options.
    #[error("give one of {0}")]
    OneOf(&'static str),
    /// A value the accountant refuses; `flags` names the options it came from.
    #[error("invalid {flags}")]
    Invalid {
        /// The options at fault, as flags (`--sigma or --clip`).
        flags: &'static str,
        /// The accountant's reason.
        #[source]
        source: PrivacyError,
    },
    /// The record-level inputs are inconsistent.
    #[error("--min-records/--feature-norm/--loss: {0}")]
    RecordLevel(String),
    /// Only some of the record-level inputs.
    #[error("--min-records and --feature-norm go together (with --loss and --gamma)")]
    RecordLevelHalf,
    /// γ not positive and finite.
    #[error("--gamma must be > 0, got {0}")]
    Gamma(f64),
    /// Options that do not go together, or a view not offered for this scenario.
    #[error("{0}")]
    Refused(String),
    /// The network view could not be computed.
    #[error("computing the path-hidden network view")]
    Network(#[source] PrivacyError),
    /// The calibration failed.
    #[error("calibrating sigma for the {view} view")]
    Calibration {
        /// The view's name.
        view: &'static str,
        /// Why.
        #[source]
        source: PrivacyError,
    },
    /// A figure could not be converted.
    #[error(transparent)]
    Privacy(#[from] PrivacyError),
}
