//! [`LearnerError`]: what can go wrong with a node's learning state, and what to do about it.

use std::path::PathBuf;

use dpwalk_core::problem::ProblemError;
use dpwalk_privacy::PrivacyError;
use dpwalk_privacy::ledger::LedgerError;
use thiserror::Error;

use crate::seal::SealError;
use crate::state::StateError;

/// Errors of the node's learning state.
#[derive(Debug, Error)]
pub enum LearnerError {
    /// The durable state failed or cannot be trusted.
    #[error(transparent)]
    State(#[from] StateError),
    /// The ledger failed or cannot be trusted.
    #[error("ledger")]
    Ledger(#[from] LedgerError),
    /// The accountant refused its inputs.
    #[error("privacy")]
    Privacy(#[from] PrivacyError),
    /// The node's data do not fit the run's problem.
    #[error("the node's data do not fit the run")]
    Problem(#[from] ProblemError),
    /// The node's key is not the key of the member it runs as.
    #[error("the node's key (PeerId {key}) is not member {index}'s ({member}) in the run file")]
    NotThisMember {
        /// The member index.
        index: usize,
        /// The key's PeerId (base58).
        key: String,
        /// The run file's PeerId of that member (base58).
        member: String,
    },
    /// The step the node was given is not the run file's (another kind, or other parameters
    /// than σ): the node would leave the walk that the other members make.
    #[error("the node was given the step {given}, but the run file's is {run}")]
    Step {
        /// The run file's step, with the given σ.
        run: String,
        /// The step given.
        given: String,
    },
    /// The final model could not be sealed.
    #[error(transparent)]
    Seal(#[from] SealError),
    /// The problem (the node's data) is not of the run's dimension.
    #[error("the run's dimension is {run}, but the node's data make a model of dimension {data}")]
    Dimension {
        /// The run file's `dimension`.
        run: usize,
        /// The problem's.
        data: usize,
    },
    /// The ledger holds contributions the state does not: the state files were put back from an
    /// older copy (or replaced), which no crash does.
    #[error(
        "the state in {state_dir} is older than its ledger: {ledger} holds {records} contributions up to seq {ledger_last}, the state knows of {contributions}{}. The state files were restored from an older copy (or replaced); resuming from them would draw again the noise this node already used for later steps (the RNG position is rewound) and lose those steps from its privacy accounting, so the node refuses to start. Put back the state files (`state.0` and `state.1`) that go with this ledger; if they are lost, this member cannot rejoin this run safely: its noise stream is fixed by the run's seed and its index, so even a fresh `state-dir` would reuse it. Keep the ledger (it is what this member has spent) and start a new run (another `seed`) with fresh state directories",
        state_last.map_or_else(|| ", and no seq handled".to_string(), |s| format!(" up to seq {s}"))
    )]
    RolledBack {
        /// The state directory.
        state_dir: PathBuf,
        /// The ledger file.
        ledger: PathBuf,
        /// The ledger's records.
        records: u64,
        /// The ledger's last seq.
        ledger_last: u64,
        /// The state's contributions.
        contributions: u64,
        /// The last seq the state handled.
        state_last: Option<u64>,
    },
    /// The state and the ledger disagree in a way no crash explains.
    #[error("state and ledger {ledger} disagree: {message}")]
    Inconsistent {
        /// The ledger file.
        ledger: PathBuf,
        /// How.
        message: String,
    },
    /// The file of evaluation points could not be read or written.
    #[error("{path}")]
    Evals {
        /// The file.
        path: PathBuf,
        /// The reason.
        source: std::io::Error,
    },
}
