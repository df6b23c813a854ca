//! What the federated baselines share: a server and `n` agents, every agent every round, one
//! message of `d` floats each way per agent, and each agent drawing from its own stream.

use crate::problem::{Problem, ProblemError};
use crate::rng::NodeRng;
use thiserror::Error;

/// Bytes of one float on the wire.
const BYTES_PER_FLOAT: u64 = 8;

/// A federated run that cannot start or go on.
#[derive(Debug, Error, Clone, PartialEq)]
pub enum FederatedError {
    /// A federated run needs at least one agent.
    #[error("a federated run needs at least one agent (P = 0)")]
    NoAgents,
    /// The problem has another number of users than the run has agents.
    #[error("the run has {agents} agents but the problem has {users} users: one agent per user")]
    Agents {
        /// Agents of the run.
        agents: usize,
        /// Users of the problem.
        users: usize,
    },
    /// One random stream per agent, so that an agent's noise does not depend on the others.
    #[error("{streams} random streams for {agents} agents: each agent draws from its own")]
    Streams {
        /// Streams given.
        streams: usize,
        /// Agents of the run.
        agents: usize,
    },
    /// A vector of the wrong dimension, or a user the problem does not have.
    #[error(transparent)]
    Problem(#[from] ProblemError),
}

/// Bytes sent over all links in one round: each agent receives the server's `d` floats and sends
/// back its own `d` (8 bytes a float; saturates rather than overflows).
pub fn bytes_per_round(n_agents: usize, dim: usize) -> u64 {
    (n_agents as u64)
        .saturating_mul(dim as u64)
        .saturating_mul(2 * BYTES_PER_FLOAT)
}

/// Refuses a run without agents.
pub(crate) fn check_agents(n_agents: usize) -> Result<(), FederatedError> {
    if n_agents == 0 {
        Err(FederatedError::NoAgents)
    } else {
        Ok(())
    }
}

/// Checks, before a round changes anything, that the problem has one user per agent and the
/// run's dimension, and that there is one stream per agent.
pub(crate) fn check_round(
    n_agents: usize,
    dim: usize,
    problem: &Problem,
    rngs: &[NodeRng],
) -> Result<(), FederatedError> {
    if problem.n_users() != n_agents {
        return Err(FederatedError::Agents {
            agents: n_agents,
            users: problem.n_users(),
        });
    }
    ProblemError::check_length("the server's model", problem.dim(), dim)?;
    if rngs.len() != n_agents {
        return Err(FederatedError::Streams {
            streams: rngs.len(),
            agents: n_agents,
        });
    }
    Ok(())
}
