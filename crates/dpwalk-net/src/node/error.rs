//! The errors that stop a node.

use dpwalk_core::problem::ProblemError;
use libp2p::PeerId;
use std::path::PathBuf;
use thiserror::Error;

use crate::behaviour::BuildError;
use crate::final_model::FinalModelError;
use crate::keys::KeyError;
use crate::learner::LearnerError;
use crate::run::RunError;
use crate::status::StatusError;

/// Errors that stop a node.
#[derive(Debug, Error)]
pub enum NodeError {
    /// `node.toml` is wrong.
    #[error(transparent)]
    Config(#[from] crate::config::ConfigError),
    /// The run file is wrong.
    #[error(transparent)]
    Run(#[from] RunError),
    /// The identity file is wrong.
    #[error(transparent)]
    Key(#[from] KeyError),
    /// This node is not a member of the run.
    #[error(
        "this node's PeerId {peer} is not a member of run {run_id}: add it to the run file's [[members]]"
    )]
    NotMember {
        /// This node's PeerId.
        peer: PeerId,
        /// The run.
        run_id: String,
    },
    /// The node's data could not be read.
    #[error("node data")]
    Data(#[from] dpwalk_core::data::DataError),
    /// The node's data do not fit the run's problem.
    #[error("node data {data}")]
    Problem {
        /// Where the data came from (node.toml's `[data]`).
        data: String,
        /// Why.
        source: ProblemError,
    },
    /// The node's data make a model of another dimension than the run's `dimension`.
    #[error(
        "the run file {run_file} says dimension = {run_dimension}, but this node's data ({data}) have {features} features per record, a model of dimension {data_dimension}{per_class}: set dimension = {data_dimension} in the run file (every member must use the same file), or give this node data of the run's dimension"
    )]
    Dimension {
        /// The run file.
        run_file: PathBuf,
        /// Its `dimension`.
        run_dimension: usize,
        /// The node's `[data]`, as a user names it.
        data: String,
        /// Features per record of the data.
        features: usize,
        /// The model dimension the data make for the run's loss.
        data_dimension: usize,
        /// `" (k classes × f features)"` for a multinomial loss, else empty.
        per_class: String,
    },
    /// The node's data are outside the run's record-level inputs (`min-records`,
    /// `feature-norm`), so its figures would not bound its records' privacy.
    #[error("this node's data ({data}) do not fit the run file's [privacy] unit = \"record\"")]
    OutsideUnit {
        /// The node's `[data]`, as a user names it.
        data: String,
        /// Which input and what to do.
        #[source]
        source: dpwalk_core::spec::unit::OutsideUnit,
    },
    /// The run asks for something the daemon does not do.
    #[error("run file: {0}")]
    Unsupported(String),
    /// The run's `[budget]` cannot be met or accounted on its topology.
    #[error(
        "run file [budget] epsilon = {epsilon}, delta = {delta}: {reason}; give [algorithm] sigma instead (`dpwalk calibrate` helps)"
    )]
    Budget {
        /// Target ε.
        epsilon: f64,
        /// Target δ.
        delta: f64,
        /// Why no σ was calibrated.
        reason: String,
    },
    /// The member that starts the walk waited `[start] timeout` for the quorum.
    #[error(
        "the walk did not start: {verified} of the {members} members (this one included) ran our run file within the start timeout of {waited} s, and the run file's [start] quorum is {quorum}; missing: {missing}. Start them with this same run file, and check that these addresses reach them from this host (a firewall, a wrong port), or lower `[start] quorum` in the run file of every member; then start this node again"
    )]
    StartTimeout {
        /// Seconds waited.
        waited: u64,
        /// Members verified, this one included.
        verified: usize,
        /// Members of the run.
        members: usize,
        /// The quorum.
        quorum: usize,
        /// The members missing, with their run-file addresses.
        missing: String,
    },
    /// This node's state is older than what the run has seen of it: its state directory was
    /// wiped, or restored from an older copy (issue 27).
    #[error(
        "{member} {seen}, but this node's state directory ({state_dir}) {}: this node's state was lost (wiped, or restored from an older copy). It stops rather than step again, which would repeat noise it has published and leave contributions out of its ledger. Restore the state directory it ran with, or leave the run (the others go on without it)",
        held_text(*.held)
    )]
    StateLost {
        /// The member whose word shows it.
        member: String,
        /// What that member has seen, as a phrase ("has seen this node make step 12").
        seen: String,
        /// The last step in this node's state (none: empty).
        held: Option<u64>,
        /// The state directory.
        state_dir: PathBuf,
    },
    /// Durable state, ledger or accountant.
    #[error(transparent)]
    Learner(#[from] LearnerError),
    /// The swarm could not be built.
    #[error(transparent)]
    Build(#[from] BuildError),
    /// A listen address is invalid or cannot be bound.
    #[error("listen address {addr}: {message}")]
    Listen {
        /// The address.
        addr: String,
        /// Why.
        message: String,
    },
    /// The status endpoint could not start.
    #[error(transparent)]
    Status(#[from] StatusError),
    /// Writing the final model failed.
    #[error(transparent)]
    FinalModel(#[from] FinalModelError),
}

/// What a state directory holds, for [`NodeError::StateLost`].
fn held_text(held: Option<u64>) -> String {
    held.map_or_else(
        || "is empty".into(),
        |last| format!("ends at this node's step {last}"),
    )
}
