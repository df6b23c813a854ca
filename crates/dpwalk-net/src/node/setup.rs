//! What a node loads and checks before any socket opens, and the errors that stop it: the run
//! file, the identity, the data and the budget; the address book and the neighbours dialled
//! eagerly.

use dpwalk_core::params::AdmmParams;
use dpwalk_core::problem::ProblemError;
use dpwalk_privacy::ledger::Budget;
use libp2p::{Multiaddr, PeerId};
use std::path::PathBuf;
use thiserror::Error;

use crate::addresses::AddressBook;
use crate::behaviour::BuildError;
use crate::config::NodeConfig;
use crate::final_model::FinalModelError;
use crate::keys::{self, KeyError};
use crate::learner::LearnerError;
use crate::run::{Noise, Run, RunError};
use crate::status::StatusError;

/// The most neighbours a node dials eagerly (see "Connections" in [`crate::node`]).
pub(super) const EAGER_MAX: usize = 16;

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
    #[error("node data: {0}")]
    Data(#[from] dpwalk_core::data::DataError),
    /// The node's data do not fit the run's problem.
    #[error("node data: {0}")]
    Problem(#[from] ProblemError),
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

/// Everything a node needs, loaded and checked before any socket opens.
pub(super) struct Loaded {
    pub(super) run: Run,
    pub(super) keypair: libp2p::identity::Keypair,
    pub(super) index: usize,
    pub(super) data: dpwalk_core::data::Dataset,
    pub(super) params: AdmmParams,
    /// The run's `[budget]`, enforced by every member (with the node's own, if stricter).
    pub(super) run_budget: Option<Budget>,
}

pub(super) fn load(config: &NodeConfig) -> Result<Loaded, NodeError> {
    let run = Run::load(&config.resolve(&config.run))?;
    let keypair = keys::load(&config.resolve(&config.identity))?;
    let peer = keypair.public().to_peer_id();
    let index = run.index_of(&peer).ok_or_else(|| NodeError::NotMember {
        peer,
        run_id: run.run_id().to_string(),
    })?;
    let (sigma, run_budget) = match run.noise() {
        Noise::Sigma(sigma) => (sigma, None),
        Noise::Budget { epsilon, delta } => {
            let budget_error = |reason: String| NodeError::Budget {
                epsilon,
                delta,
                reason,
            };
            let cal = run
                .calibrate()
                .map_err(|e| budget_error(e.to_string()))?
                .ok_or_else(|| budget_error("nothing to calibrate".into()))?;
            tracing::info!(
                sigma = cal.sigma,
                epsilon = cal.achieved.epsilon,
                order = cal.achieved.order,
                planned_contributions = run.planned_contributions(),
                "sigma calibrated to the run's [budget] (local view)"
            );
            let budget = Budget::new(epsilon, delta).map_err(|e| budget_error(e.to_string()))?;
            (cal.sigma, Some(budget))
        }
    };
    let params = run
        .admm_params_with(sigma)
        .map_err(|e| NodeError::Unsupported(e.to_string()))?;
    let data = config.data.load(&config.base_dir, run.seed())?.train;
    Ok(Loaded {
        run,
        keypair,
        index,
        data,
        params,
        run_budget,
    })
}

/// The address book of the run's other members (their run-file addresses) and of the bootstrap
/// peers of `node.toml` (each multiaddr must end in `/p2p/<PeerId>`), and the bootstrap peers
/// for Kademlia. An address that does not parse is said and skipped.
pub(super) fn address_book(
    run: &Run,
    me: PeerId,
    bootstrap: &[String],
) -> (AddressBook, Vec<(PeerId, Multiaddr)>) {
    let mut book = AddressBook::default();
    for m in run.members().iter().filter(|m| m.peer != me) {
        let addrs = m.addrs.iter().filter_map(|a| match a.parse::<Multiaddr>() {
            Ok(ma) => Some(ma),
            Err(e) => {
                tracing::warn!(member = m.index, addr = %a, error = %e, "ignoring a member address");
                None
            }
        });
        book.configure(m.peer, addrs);
    }
    let mut peers = Vec::new();
    for b in bootstrap {
        let Ok(ma) = b.parse::<Multiaddr>() else {
            tracing::warn!(addr = %b, "ignoring a bootstrap address that is not a multiaddr");
            continue;
        };
        let Some(libp2p::multiaddr::Protocol::P2p(peer)) = ma.iter().last() else {
            tracing::warn!(addr = %b, "ignoring a bootstrap address without /p2p/<PeerId>");
            continue;
        };
        if peer != me {
            book.configure(peer, [ma.clone()]);
            peers.push((peer, ma));
        }
    }
    (book, peers)
}

/// The neighbours member `index` dials eagerly: all of them up to [`EAGER_MAX`]; on a denser
/// graph, the [`EAGER_MAX`] that follow it in index order (cyclically: on a complete graph each
/// member is then dialled by the [`EAGER_MAX`] before it). The others are dialled when the token
/// goes to them.
pub(super) fn eager_neighbours(run: &Run, index: usize) -> Vec<PeerId> {
    let mut neighbours: Vec<usize> = run.topology().neighbors(index).collect();
    if neighbours.len() > EAGER_MAX {
        // Ascending, so those above `index` first, then those below, both in order.
        let above = neighbours.partition_point(|&j| j < index);
        neighbours.rotate_left(above);
        neighbours.truncate(EAGER_MAX);
    }
    neighbours
        .into_iter()
        .map(|j| run.members()[j].peer)
        .collect()
}

/// Why a listen address could not be bound, in words a user can act on. libp2p's transport error
/// prints nothing of its own for an OS error and hides the OS error's kind under its wrappers, so
/// the kind is learnt by binding the same TCP address once more, with the standard library.
pub(super) fn listen_failure(
    addr: &Multiaddr,
    e: &libp2p::TransportError<std::io::Error>,
) -> String {
    use libp2p::multiaddr::Protocol;
    let io = match e {
        libp2p::TransportError::MultiaddrNotSupported(addr) => {
            return format!(
                "{addr} is not an address this node can listen on (use /ip4/<address>/tcp/<port> or /ip6/…)"
            );
        }
        libp2p::TransportError::Other(io) => io,
    };
    let mut parts = addr.iter();
    let ip: Option<std::net::IpAddr> = match parts.next() {
        Some(Protocol::Ip4(ip)) => Some(ip.into()),
        Some(Protocol::Ip6(ip)) => Some(ip.into()),
        _ => None,
    };
    let kind = match (ip, parts.next()) {
        (Some(ip), Some(Protocol::Tcp(port))) => std::net::TcpListener::bind((ip, port))
            .err()
            .map(|e| e.kind()),
        _ => None,
    };
    match kind {
        Some(std::io::ErrorKind::AddrInUse) => "the port is already in use (another dpwalk node, or another program): stop it, or choose another port in node.toml's `listen` (and in this member's `addrs` of the run file)".into(),
        Some(std::io::ErrorKind::AddrNotAvailable) => format!("{io}: this host has no such address; listen on one of its own addresses, or on /ip4/0.0.0.0"),
        Some(std::io::ErrorKind::PermissionDenied) => format!("{io}: ports below 1024 need privileges; choose a higher port in node.toml's `listen`"),
        _ => io.to_string(),
    }
}

/// The node's `[data]` as a user names it: the file it reads, or its built-in source.
pub(super) fn data_origin(config: &NodeConfig) -> String {
    use dpwalk_core::data::spec::DataSpec;
    let path = match &config.data {
        DataSpec::Csv(c) => &c.path,
        DataSpec::Libsvm(c) => &c.path,
        DataSpec::Adult(c) => &c.path,
        DataSpec::Mnist(c) => &c.path,
        DataSpec::SyntheticLasso(_) => return "[data] source = \"synthetic-lasso\"".into(),
        DataSpec::SyntheticLogistic(_) => return "[data] source = \"synthetic-logistic\"".into(),
    };
    config.resolve(path).display().to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A run of `n` members on `topology` (the `[topology]` table's body).
    fn run_of(n: usize, topology: &str) -> Run {
        let mut text = format!(
            "run-id = \"t\"\nseed = 1\nsteps = 10\ndimension = 2\n[problem]\nloss = \"squared\"\n\
             [algorithm]\ngamma = 1.0\nlambda = 0.5\nclip = 1.0\nsigma = 1.0\n[topology]\n{topology}\n"
        );
        for i in 0..n {
            text.push_str(&format!(
                "[[members]]\nindex = {i}\npeer-id = \"{}\"\n",
                PeerId::random()
            ));
        }
        Run::parse(&text, "test").unwrap()
    }

    fn indices(run: &Run, peers: &[PeerId]) -> Vec<usize> {
        peers.iter().map(|p| run.index_of(p).unwrap()).collect()
    }

    #[test]
    fn a_dense_graph_keeps_the_following_neighbours_a_sparse_one_all() {
        let complete = run_of(40, "kind = \"complete\"");
        let eager = indices(&complete, &eager_neighbours(&complete, 30));
        let expected: Vec<usize> = (31..40).chain(0..7).collect();
        assert_eq!(eager, expected);
        let small = run_of(10, "kind = \"complete\"");
        assert_eq!(
            indices(&small, &eager_neighbours(&small, 4)),
            vec![0, 1, 2, 3, 5, 6, 7, 8, 9]
        );
        let ring = run_of(40, "kind = \"ring\"");
        assert_eq!(indices(&ring, &eager_neighbours(&ring, 0)), vec![1, 39]);
    }
}
