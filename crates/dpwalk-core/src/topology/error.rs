//! The one error type of topology parsing, generation and checks.
//!
//! Every variant says *where* the problem is (file and line, key, edge) as well as what it is,
//! because topologies are written by hand and the person reading the message must be able to fix
//! the file without a debugger.

use thiserror::Error;

/// Errors of topology parsing, generation and checks.
#[derive(Debug, Error, Clone, PartialEq)]
pub enum TopologyError {
    /// The TOML text is malformed, has an unknown or mistyped key, or a parameter out of range.
    #[error("{origin}, line {line}: {}{message}", key_prefix(.key))]
    Parse {
        /// The file (or other source) the text came from.
        origin: String,
        /// 1-based line number of the offending key or value.
        line: usize,
        /// The offending key, when known.
        key: Option<String>,
        /// What is wrong.
        message: String,
    },
    /// A parameter is missing, does not apply to the kind, or is out of range (a spec that did not
    /// come through [`crate::topology::parse_spec`], so no line is known).
    #[error("topology key `{key}`: {message}")]
    Parameter {
        /// The offending key of the topology table.
        key: String,
        /// What is wrong.
        message: String,
    },
    /// A file could not be read.
    #[error("cannot read {path}: {message}")]
    Io {
        /// The file.
        path: String,
        /// The operating system's reason.
        message: String,
    },
    /// An explicit edge is invalid (endpoint out of range, self-loop, duplicate, bad weight).
    #[error("{at}: {message}")]
    Edge {
        /// Where the edge was given: `edges[3]` of a spec, or `file.txt, line 12`.
        at: String,
        /// What is wrong.
        message: String,
    },
    /// A walk needs at least two users.
    #[error("a topology needs at least 2 nodes, got {nodes}")]
    TooFewNodes {
        /// The number of nodes asked for.
        nodes: usize,
    },
    /// A random generator did not produce its promised graph within its attempt budget.
    #[error("{kind}: no valid graph after {attempts} attempts: {reason}")]
    Generation {
        /// The generator.
        kind: String,
        /// Attempts made.
        attempts: usize,
        /// Why the attempts failed, and what to change.
        reason: String,
    },
    /// The graph is disconnected, so the walk cannot reach every user.
    #[error("the graph is disconnected: {count} components; {detail}")]
    Disconnected {
        /// Number of connected components.
        count: usize,
        /// Size of each component, largest first.
        sizes: Vec<usize>,
        /// Human-readable listing of the first members of the first components.
        detail: String,
    },
}

fn key_prefix(key: &Option<String>) -> String {
    key.as_ref()
        .map(|k| format!("key `{k}`: "))
        .unwrap_or_default()
}
