//! Topologies and the walk's next hop.
//!
//! INTERFACE STUB: filled in by the topology work; the signatures are what the simulator, the
//! accountant and the daemon rely on.

use rand::{Rng, RngExt};
use thiserror::Error;

/// Errors of topology parsing, generation and checks.
#[derive(Debug, Error, Clone, PartialEq)]
pub enum TopologyError {
    /// Placeholder until the topology module lands.
    #[error("{0}")]
    Invalid(String),
}

/// A communication graph and the random walk's transition rule on it.
#[derive(Debug, Clone)]
pub enum Topology {
    /// Every user forwards uniformly to one of the `n − 1` others (no edge list is stored).
    Complete {
        /// Number of users.
        n: usize,
    },
}

impl Topology {
    /// Number of users.
    pub fn n(&self) -> usize {
        match self {
            Topology::Complete { n } => *n,
        }
    }

    /// The next holder after `holder`, drawn from the walk's transition row of `holder` with the
    /// holder's own RNG. The one next-hop rule of dpwalk: the daemon and the simulator call it.
    pub fn next_hop<R: Rng + ?Sized>(&self, holder: usize, rng: &mut R) -> usize {
        match self {
            Topology::Complete { n } => {
                let j = rng.random_range(0..n - 1);
                if j >= holder { j + 1 } else { j }
            }
        }
    }
}
