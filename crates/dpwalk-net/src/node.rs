//! The daemon: one node of a run, from `node.toml` to `final_model.json`.
//!
//! [`run`] loads the run file, the identity and the node's data, opens its durable state
//! ([`crate::learner`]), starts the swarm ([`crate::behaviour`]) and the status endpoint, and runs
//! the event loop until the final model is written (or the node is told to stop).
//!
//! # Custody (DESIGN.md, "The daemon")
//! - A received token is validated ([`crate::codec::validate`]), stepped and committed, *then*
//!   acknowledged: an acknowledgement means "durably taken over".
//! - The outgoing token stays in custody until acknowledged. A transient failure (no connection,
//!   timeout, a peer that has not verified us yet) retries the same receiver for `handoff` ms,
//!   since it may be restarting with the token already taken; after that the peer is avoided for a
//!   while and the token is re-routed by a fresh draw of the walk.
//! - Acknowledged, the token is kept as a backup until the receiver reports, with
//!   [`Message::Released`], that its own successor acknowledged; if that does not come within
//!   `resume` ms, the receiver is presumed gone and the backup resumes the walk elsewhere.
//! - Members known to be down (their connection closed, a dial failed, or a hand-off to them
//!   timed out) are avoided by every draw of the next hop, not only by re-routes, until they
//!   verify again: one member down costs one hand-off timeout at most, not one per draw. The
//!   next hop is then uniform over the neighbours not known down; the figures a node prints are
//!   of the local view, which does not depend on the walk's path (README, "Measuring privacy").
//! - The last step is never made twice by this node's doing: once the token of step `K − 1`
//!   may have reached its receiver, that receiver is waited for, not replaced, and a backup of
//!   that token is never resumed (see [`crate::publish`]).
//! - Duplicates are suppressed by `(run_id, seq)`: a token with the seq this node last handled is
//!   acknowledged again without a step, an older one is refused as a replay, which tells its sender
//!   the walk has passed it.
//! - At `seq = K` the holder seals and publishes the final model ([`crate::publish`]); each member
//!   that receives it from a verified member, with a seal that verifies, writes
//!   `final_model.json`.
//! - SIGINT/SIGTERM: new tokens are refused (senders re-route), the outgoing token is handed on,
//!   then the node exits.
//!
//! # Connections (issue 10, item 3)
//! Every dial names the addresses of the node's own [`AddressBook`] (libp2p's cache of peer
//! addresses holds 100 peers and forgets an address after one failed dial). A token only ever
//! goes to a topology neighbour, and the run files are compared (hello) only before a token
//! crosses a connection, so a node dials **up to `EAGER_MAX` (16) neighbours eagerly**: at start,
//! and every `REDIAL_EVERY` (2 s) those not connected (`eager_neighbours`). Any other member is
//! dialled **on demand**: a neighbour when the token goes to it (the hand-off waits for the
//! connection and the hello like for a member still starting), any member when a message goes to
//! it (the final model at the end, to every member; a `Released` to a predecessor), always at the
//! book's addresses (`send_request_with_addresses`).
//!
//! Why not all neighbours: measured with 256 members on a complete graph on one 2-core machine
//! (BENCHMARKS.md, "Scale"), what costs is holding a connection to every neighbour, not the
//! redial loop as such (a redial skips members connected or being dialled, so once they are
//! connected it does nothing). All 32,640 connections (Noise handshakes, a hello naming 256
//! members each way, identify, ping; about 50 MB per node) let a 1,000-hop walk make 433 hops in
//! 500 s, with 12.9 GB resident in all; with 16 per node the same walk ended in 38 s, with 4.0 GB. A walk of K hops uses at most K
//! edges, and an on-demand connection costs its hop a handshake (a few milliseconds).
//!
//! Not done yet: a connection made on demand stays open like any other (libp2p's idle timeout of
//! an hour, see [`crate::behaviour`]), so a walk much longer than the number of members on a dense
//! graph accumulates connections towards every neighbour again, within the connection limits.

use std::collections::{HashMap, HashSet, VecDeque};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use dpwalk_core::params::AdmmParams;
use dpwalk_core::problem::ProblemError;
use dpwalk_privacy::ledger::Budget;
use futures::StreamExt;
use libp2p::request_response::{self, OutboundRequestId, ResponseChannel};
use libp2p::swarm::{DialError, ListenError, SwarmEvent};
use libp2p::{Multiaddr, PeerId, Swarm, allow_block_list, identify, kad, mdns};
use serde::Serialize;
use thiserror::Error;

use crate::addresses::AddressBook;
use crate::behaviour::{self, Behaviour, BehaviourEvent, BuildError};
use crate::codec::{self, FinalModel, Hello, Message, Rejection};
use crate::config::NodeConfig;
use crate::keys::{self, KeyError};
use crate::learner::{Learner, LearnerError, Outcome, node_problem};
use crate::limits::{Limits, Refusals, Refused};
use crate::publish::{Publish, prevails};
use crate::run::{Noise, Run, RunError};
use crate::state::Custody;
use crate::status::{ClippedRecent, SharedStatus, Status, StatusError};

/// The file every node writes at the end of the run, in its state directory.
pub const FINAL_MODEL_FILE: &str = "final_model.json";

/// How long a member that is connected but did not take a token in time is avoided (one that is
/// not connected is avoided until it verifies again).
const AVOID_FOR: Duration = Duration::from_secs(10);
/// Pause before retrying the same receiver.
const RETRY_PAUSE: Duration = Duration::from_millis(100);
/// Pause before retrying a receiver that has not verified this node yet.
const VERIFY_PAUSE: Duration = Duration::from_millis(20);
/// The most neighbours a node dials eagerly (see "Connections" above).
const EAGER_MAX: usize = 16;
/// How often neighbours that are not connected are dialled again.
const REDIAL_EVERY: Duration = Duration::from_secs(2);
/// The event loop's housekeeping period.
const TICK: Duration = Duration::from_millis(20);
/// How often the status snapshot is refreshed.
const STATUS_EVERY: Duration = Duration::from_millis(200);
/// How often the ledger's file is flushed while the node does not hold the token: rarely, since
/// every flush competes for the disk with the holder's commit (see `crate::learner`).
const LEDGER_FLUSH_EVERY: Duration = Duration::from_secs(1);
/// Window of the hop rate.
const RATE_WINDOW: Duration = Duration::from_secs(5);
/// How often a node still waiting for members says whom it waits for (and at once on a change).
const WAITING_EVERY: Duration = Duration::from_secs(30);
/// How long after its start, and between two changes, a node waits before saying whom it waits for.
const WAITING_GRACE: Duration = Duration::from_secs(1);
/// Least pause between two dials of the same token receiver that is not connected.
const DIAL_RECEIVER_EVERY: Duration = Duration::from_millis(500);

/// Why the token could not be handed to a member.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Unreachable {
    /// No connection (not started yet, or its address is wrong or firewalled).
    NotConnected,
    /// Connected, but it runs another run file.
    OtherRun,
    /// Connected, but the run files were not compared yet.
    NotVerified,
    /// Connected and verified, but it did not take the token in time.
    NoAnswer,
}

impl std::fmt::Display for Unreachable {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Unreachable::NotConnected => {
                "is not connected (not started yet, or its address in the run file is wrong or firewalled)"
            }
            Unreachable::OtherRun => "runs another run file",
            Unreachable::NotVerified => "is connected but has not answered our run file",
            Unreachable::NoAnswer => "did not take the token in time",
        })
    }
}

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
    #[error("writing {path}: {source}")]
    Write {
        /// The file.
        path: PathBuf,
        /// The reason.
        source: std::io::Error,
    },
}

/// What a node did, returned when it stops.
#[derive(Debug, Clone)]
pub struct NodeReport {
    /// Whether the final model was written.
    pub finished: bool,
    /// Contributions made.
    pub contributions: u64,
    /// Hand-offs given up after the hand-off timeout (the receiver did not take the token in
    /// time); a member down costs at most one, not one per draw of it.
    pub handoff_timeouts: u64,
}

/// `final_model.json`.
#[derive(Debug, Serialize)]
pub struct FinalModelFile<'a> {
    /// The model.
    pub z: &'a [f64],
    /// `K`.
    pub steps: u64,
    /// The run seed.
    pub seed: u64,
    /// The run.
    pub run_id: &'a str,
    /// The run's hash (hex).
    pub run_hash: String,
    /// This node's index.
    pub index: usize,
    /// This node's PeerId.
    pub peer_id: String,
    /// The index of the member that made the last step and sealed the model.
    pub maker_index: usize,
    /// That member's PeerId.
    pub maker_peer_id: String,
    /// This node's contributions and privacy figures.
    pub privacy: FinalPrivacy,
}

/// The privacy part of `final_model.json`.
#[derive(Debug, Serialize)]
pub struct FinalPrivacy {
    /// Contributions made.
    pub contributions: u64,
    /// Contributions whose clip was active.
    pub clipped: u64,
    /// Visits forwarded without a step (budget spent).
    pub skipped: u64,
    /// δ of the figures.
    pub delta: f64,
    /// Local ε (`null`: unbounded): against an eavesdropper on every token, which bounds what
    /// any member learns (no tighter network bound holds for the ADMM walk).
    pub epsilon_local: Option<f64>,
    /// The ε of the budget the node enforced (the run's or its own, the stricter), if any.
    pub budget_epsilon: Option<f64>,
    /// The conversion from RDP.
    pub conversion: &'static str,
}

/// Everything a node needs, loaded and checked before any socket opens.
struct Loaded {
    run: Run,
    keypair: libp2p::identity::Keypair,
    index: usize,
    data: dpwalk_core::data::Dataset,
    params: AdmmParams,
    /// The run's `[budget]`, enforced by every member (with the node's own, if stricter).
    run_budget: Option<Budget>,
}

fn load(config: &NodeConfig) -> Result<Loaded, NodeError> {
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

/// Runs a node until the final model is written or `stop` resolves (then hands the token on
/// first). The future borrows nothing: block on it from the binary.
pub async fn run(
    config: NodeConfig,
    stop: impl Future<Output = ()>,
) -> Result<NodeReport, NodeError> {
    let loaded = load(&config)?;
    let features = loaded.data.n_features;
    let problem = node_problem(&loaded.run, loaded.index, loaded.data)?;
    if problem.dim() != loaded.run.dimension() {
        let per_class = match loaded.run.loss() {
            dpwalk_core::problem::Loss::Multinomial { classes } => {
                format!(" ({classes} classes × {features} features)")
            }
            _ => String::new(),
        };
        return Err(NodeError::Dimension {
            run_file: config.resolve(&config.run),
            run_dimension: loaded.run.dimension(),
            data: data_origin(&config),
            features,
            data_dimension: problem.dim(),
            per_class,
        });
    }
    let prox = problem.local_prox(loaded.params.gamma())?;
    let own = config
        .budget
        .map(|b| Budget::new(b.epsilon, b.delta))
        .transpose()
        .map_err(LearnerError::from)?;
    let budgets: Vec<Budget> = loaded.run_budget.into_iter().chain(own).collect();
    let state_dir = config.resolve(&config.state_dir);
    let learner = Learner::open(
        &loaded.run,
        loaded.index,
        &loaded.keypair,
        &problem,
        &prox,
        loaded.params,
        &state_dir,
        &budgets,
    )?;
    let learner = match config.eval_every {
        Some(every) => learner.with_evals(every, &state_dir)?,
        None => learner,
    };
    let me = loaded.keypair.public().to_peer_id();
    let (book, bootstrap) = address_book(&loaded.run, me, &config.bootstrap);
    let descriptors = crate::limits::raise_descriptor_limit();
    let limits = Limits::for_peers(book.len(), descriptors.now);
    tracing::debug!(
        ?descriptors,
        ?limits,
        "descriptor limit and connection limits"
    );
    if limits.lowered {
        tracing::warn!(
            "this process may open {} descriptors (RLIMIT_NOFILE), but a run of {} members wants {}: connections are limited to {} established and {} pending each way; raise the limit (`ulimit -n {}` before starting the node) if members cannot connect",
            descriptors.now.unwrap_or_default(),
            loaded.run.members().len(),
            limits.needed,
            limits.established,
            limits.pending_incoming,
            limits.needed
        );
    }
    let swarm = behaviour::build(
        loaded.keypair,
        config.mdns,
        !bootstrap.is_empty(),
        config.timeouts.request(),
        book.peers(),
        &limits,
    )?;
    let neighbours = eager_neighbours(&loaded.run, loaded.index);
    let status = SharedStatus::default();
    let mut node = Node {
        run: &loaded.run,
        me,
        swarm,
        learner,
        config: &config,
        state_dir,
        status: status.clone(),
        book,
        bootstrap,
        neighbours,
        refusals: Refusals::default(),
        hello: Hello {
            run_hash: loaded.run.hash().0,
            run: loaded.run.canonical_toml(),
        },
        verified: HashSet::new(),
        mismatched: HashSet::new(),
        inflight: None,
        attempt: None,
        resumed: None,
        down: HashMap::new(),
        backup_since: None,
        publish: None,
        finished_at: None,
        leaving: None,
        hops: VecDeque::new(),
        last_redial: None,
        ledger_flushed: Instant::now(),
        listen: Vec::new(),
        last_status: None,
        unreachable: HashMap::new(),
        dialed: HashMap::new(),
        waiting: None,
        failed_handoffs: 0,
        handoff_timeouts: 0,
        started: Instant::now(),
    };
    node.start()?;
    let endpoint = match &config.status {
        Some(addr) => {
            let (bound, serve) = crate::status::bind(addr, status).await?;
            tracing::info!(%bound, "status endpoint: GET /status, GET /metrics");
            if !bound.ip().is_loopback() {
                tracing::warn!(
                    "the status endpoint listens on {bound}, not on loopback: anyone who can reach that address can read this node's privacy spending (local epsilon against its budget) and its step counts; set `status = \"127.0.0.1:{}\"` in node.toml unless that is what you want",
                    bound.port()
                );
            }
            Some(serve)
        }
        None => None,
    };
    let serve = async {
        match endpoint {
            Some(serve) => serve.await,
            None => std::future::pending().await,
        }
    };
    tokio::select! {
        result = node.event_loop(stop) => result,
        () = serve => unreachable_serve(),
    }
}

/// The address book of the run's other members (their run-file addresses) and of the bootstrap
/// peers of `node.toml` (each multiaddr must end in `/p2p/<PeerId>`), and the bootstrap peers
/// for Kademlia. An address that does not parse is said and skipped.
fn address_book(
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
fn eager_neighbours(run: &Run, index: usize) -> Vec<PeerId> {
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

/// `member 3`, or `a non-member` for a peer that is not in the run.
fn member_name(index: Option<usize>) -> String {
    index.map_or_else(|| "a non-member".into(), |i| format!("member {i}"))
}

/// Why a listen address could not be bound, in words a user can act on. libp2p's transport error
/// prints nothing of its own for an OS error and hides the OS error's kind under its wrappers, so
/// the kind is learnt by binding the same TCP address once more, with the standard library.
fn listen_failure(addr: &Multiaddr, e: &libp2p::TransportError<std::io::Error>) -> String {
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
fn data_origin(config: &NodeConfig) -> String {
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

/// The endpoint's accept loop never ends; typed so that `select!` needs no panic.
fn unreachable_serve() -> Result<NodeReport, NodeError> {
    Err(NodeError::Unsupported("the status endpoint stopped".into()))
}

/// The attempt to hand over the outgoing token.
#[derive(Debug, Clone, Copy)]
struct Attempt {
    seq: u64,
    to: PeerId,
    since: Instant,
    next_try: Instant,
    /// Whether the token was sent to `to`: from then on `to` may hold it.
    sent: bool,
}

struct Node<'a> {
    run: &'a Run,
    me: PeerId,
    swarm: Swarm<Behaviour>,
    learner: Learner<'a>,
    config: &'a NodeConfig,
    state_dir: PathBuf,
    status: SharedStatus,
    /// Where members and bootstrap peers are dialled.
    book: AddressBook,
    /// The bootstrap peers of `node.toml`, for Kademlia.
    bootstrap: Vec<(PeerId, Multiaddr)>,
    /// The topology neighbours this node dials eagerly ([`eager_neighbours`]).
    neighbours: Vec<PeerId>,
    /// Connections refused (strangers, limits), for the log.
    refusals: Refusals,
    /// Our hello (the run's canonical form, serialized once: it names every member).
    hello: Hello,
    verified: HashSet<PeerId>,
    mismatched: HashSet<PeerId>,
    /// The token request in flight: its id and seq.
    inflight: Option<(OutboundRequestId, u64)>,
    attempt: Option<Attempt>,
    /// The seq of the outgoing token the durable state held at start: an earlier process may
    /// have sent it, so its receiver may hold it.
    resumed: Option<(u64, PeerId)>,
    /// Members known to be down, and since when (see [`Node::is_down`]).
    down: HashMap<PeerId, Instant>,
    backup_since: Option<(PeerId, Instant)>,
    publish: Option<Publish<OutboundRequestId>>,
    finished_at: Option<Instant>,
    leaving: Option<Instant>,
    hops: VecDeque<Instant>,
    last_redial: Option<Instant>,
    /// When the ledger's file was last flushed.
    ledger_flushed: Instant,
    listen: Vec<String>,
    last_status: Option<Instant>,
    /// Members the token could not be handed to, and why: each reason is logged once (at WARN),
    /// until the member verifies again.
    unreachable: HashMap<PeerId, Unreachable>,
    /// When a token receiver that is not connected was last dialled.
    dialed: HashMap<PeerId, Instant>,
    /// The members last reported as awaited, and when.
    waiting: Option<(Vec<usize>, Instant)>,
    /// When the node started.
    started: Instant,
    /// Hand-offs that timed out in a row since the last acknowledged token.
    failed_handoffs: u32,
    /// Hand-offs given up after waiting (see [`NodeReport::handoff_timeouts`]).
    handoff_timeouts: u64,
}

impl Node<'_> {
    fn hello(&self) -> Hello {
        self.hello.clone()
    }

    fn member_index(&self, peer: &PeerId) -> Option<usize> {
        self.run.index_of(peer)
    }

    /// Sends `message` to `peer`, dialling it at the address book's addresses if it is not
    /// connected.
    fn send(&mut self, peer: &PeerId, message: Message) -> OutboundRequestId {
        let addresses = self.book.addresses(peer);
        self.swarm
            .behaviour_mut()
            .token
            .send_request_with_addresses(peer, message, addresses)
    }

    /// Dials `peer` at the address book's addresses, unless it is connected or being dialled.
    fn dial(&mut self, peer: PeerId) {
        // An error says only that it is connected or being dialled already, or that no address
        // is known (then mDNS, identify or Kademlia may find one; the next redial uses it).
        if let Err(e) = self.swarm.dial(self.book.dial_opts(peer)) {
            tracing::trace!(%peer, error = %e, "not dialled");
        }
    }

    /// Listens, bootstraps Kademlia; restarts whatever the durable state says is pending (the
    /// first [`Node::pump`] dials the neighbours).
    fn start(&mut self) -> Result<(), NodeError> {
        for addr in &self.config.listen {
            let ma: Multiaddr = addr.parse().map_err(|e| NodeError::Listen {
                addr: addr.clone(),
                message: format!("not a multiaddr: {e}"),
            })?;
            self.swarm
                .listen_on(ma.clone())
                .map_err(|e| NodeError::Listen {
                    addr: addr.clone(),
                    message: listen_failure(&ma, &e),
                })?;
        }
        if let Some(kad) = self.swarm.behaviour_mut().kad.as_mut() {
            for (peer, ma) in &self.bootstrap {
                kad.add_address(peer, ma.clone());
            }
            if let Err(e) = kad.bootstrap() {
                tracing::warn!(error = %e, "Kademlia bootstrap failed");
            }
        }
        let s = self.learner.state();
        self.resumed = s.outgoing.as_ref().map(|c| (c.token.seq, c.to));
        tracing::info!(
            run = self.run.run_id(),
            hash = %self.run.hash(),
            index = self.learner.index(),
            peer = %self.me,
            last_seq = %s.last_seq.map_or_else(|| "none".into(), |q| q.to_string()),
            contributions = s.contributions,
            "node started"
        );
        if let Some(warning) = self.learner.quality().noise_warning() {
            tracing::warn!("{warning}");
        }
        if let Some(model) = s.final_model.clone() {
            // The run was over before a restart: write the file again; members that lack the
            // model get it when they connect (see `on_swarm_event`).
            self.write_final(&model)?;
        } else if self.learner.starts_walk() {
            let token = self.learner.initial_token();
            tracing::info!("this node starts the walk");
            let outcome = self.learner.receive(token, None)?;
            self.after_step(outcome)?;
        }
        Ok(())
    }

    async fn event_loop(
        &mut self,
        stop: impl Future<Output = ()>,
    ) -> Result<NodeReport, NodeError> {
        let mut tick = tokio::time::interval(TICK);
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        let mut stop = std::pin::pin!(stop);
        let mut stopping = false;
        loop {
            tokio::select! {
                event = self.swarm.select_next_some() => self.on_swarm_event(event)?,
                _ = tick.tick() => {}
                () = &mut stop, if !stopping => {
                    stopping = true;
                    tracing::info!("stop requested: refusing new tokens, handing on the one held");
                    self.leaving = Some(Instant::now());
                }
            }
            self.pump()?;
            self.publish_step();
            self.flush_ledger_when_idle()?;
            if self.learner.state().outgoing.is_none() {
                self.write_evals();
            }
            self.refresh_status();
            self.report_waiting();
            self.refusals.summarize(false);
            if let Some(report) = self.done() {
                self.refusals.summarize(true);
                self.learner.flush_ledger()?;
                self.write_evals();
                return Ok(report);
            }
        }
    }

    /// Flushes the ledger every [`LEDGER_FLUSH_EVERY`] while the token is elsewhere.
    fn flush_ledger_when_idle(&mut self) -> Result<(), NodeError> {
        if self.learner.state().outgoing.is_none()
            && self.ledger_flushed.elapsed() >= LEDGER_FLUSH_EVERY
        {
            self.ledger_flushed = Instant::now();
            self.learner.flush_ledger()?;
        }
        Ok(())
    }

    /// Appends the models recorded on the way (off the token's path: once it is handed on). A
    /// failure loses those evaluation points only, and is said once per failure.
    fn write_evals(&mut self) {
        if let Err(e) = self.learner.write_evals() {
            tracing::warn!(error = %e, "could not record the model of an evaluation point; the swarm's metrics will lack it");
        }
    }

    /// Whether the node may exit now.
    fn done(&self) -> Option<NodeReport> {
        let report = || NodeReport {
            finished: self.learner.state().final_model.is_some(),
            contributions: self.learner.state().contributions,
            handoff_timeouts: self.handoff_timeouts,
        };
        if let Some(since) = self.leaving {
            let handed = self.learner.state().outgoing.is_none();
            if handed || since.elapsed() > self.config.timeouts.handoff() * 2 {
                if !handed {
                    tracing::warn!(
                        "leaving with the token still in custody: it resumes on restart"
                    );
                }
                return Some(report());
            }
        }
        let finished = self.finished_at?;
        let now = Instant::now();
        let published = self
            .publish
            .as_ref()
            .is_none_or(|p| p.settled(now, |peer| self.is_down(peer, now)));
        (published && finished.elapsed() >= self.config.timeouts.linger()).then(report)
    }

    fn on_swarm_event(&mut self, event: SwarmEvent<BehaviourEvent>) -> Result<(), NodeError> {
        match event {
            SwarmEvent::NewListenAddr { address, .. } => {
                tracing::info!(%address, "listening");
                self.listen.push(address.to_string());
            }
            SwarmEvent::ConnectionEstablished {
                peer_id,
                num_established,
                ..
            } if num_established.get() == 1 && self.member_index(&peer_id).is_some() => {
                tracing::debug!(peer = %peer_id, "connected to a member: sending our run");
                let hello = Message::Hello(self.hello());
                self.send(&peer_id, hello);
                // A member that was away when the final model was published gets it now.
                self.publish_to(peer_id);
            }
            SwarmEvent::ConnectionClosed {
                peer_id,
                num_established: 0,
                ..
            } => {
                if self.verified.remove(&peer_id) {
                    // A member that restarts within the hand-off timeout (a crash, an upgrade) is
                    // waited for as before, which keeps the walk's path; one gone for longer is
                    // down from then on.
                    let from = Instant::now() + self.config.timeouts.handoff();
                    self.down.entry(peer_id).or_insert(from);
                }
                self.mismatched.remove(&peer_id);
            }
            SwarmEvent::OutgoingConnectionError {
                peer_id: Some(peer),
                ..
            } if self.member_index(&peer).is_some()
                && self.started.elapsed() > self.config.timeouts.handoff() =>
            {
                // Members started together may not listen yet when first dialled: a failed dial
                // says a member is down only once they had the time to start.
                self.down.entry(peer).or_insert_with(Instant::now);
            }
            SwarmEvent::Behaviour(BehaviourEvent::Token(event)) => self.on_token_event(event)?,
            SwarmEvent::IncomingConnectionError {
                error: ListenError::Denied { cause },
                peer_id,
                ..
            } => {
                let stranger = cause
                    .downcast_ref::<allow_block_list::NotAllowed>()
                    .is_some();
                self.refusals.record(match peer_id {
                    Some(peer) if stranger => Refused::Stranger(peer),
                    _ => Refused::OverLimit,
                });
            }
            SwarmEvent::OutgoingConnectionError {
                error: DialError::Denied { cause },
                peer_id,
                ..
            } => {
                // Kademlia asking for a stranger, or a dial over the limits.
                tracing::debug!(peer = ?peer_id, cause = %cause, "a dial was not made");
            }
            SwarmEvent::Behaviour(BehaviourEvent::Mdns(mdns::Event::Discovered(found))) => {
                for (peer, addr) in found {
                    if self.book.learn(&peer, addr) && self.neighbours.contains(&peer) {
                        self.dial(peer);
                    }
                }
            }
            SwarmEvent::Behaviour(BehaviourEvent::Identify(identify::Event::Received {
                peer_id,
                info,
                ..
            })) => {
                for addr in info.listen_addrs {
                    if self.member_index(&peer_id).is_some() {
                        self.book.learn(&peer_id, addr.clone());
                    }
                    if let Some(kad) = self.swarm.behaviour_mut().kad.as_mut() {
                        kad.add_address(&peer_id, addr);
                    }
                }
            }
            SwarmEvent::Behaviour(BehaviourEvent::Kad(kad::Event::RoutingUpdated {
                peer,
                addresses,
                ..
            })) if self.member_index(&peer).is_some() => {
                for addr in addresses.iter() {
                    self.book.learn(&peer, addr.clone());
                }
            }
            SwarmEvent::Behaviour(BehaviourEvent::Kad(kad::Event::OutboundQueryProgressed {
                result: kad::QueryResult::Bootstrap(Ok(_)),
                ..
            })) => {
                let absent: Vec<PeerId> = self
                    .run
                    .members()
                    .iter()
                    .map(|m| m.peer)
                    .filter(|p| *p != self.me && !self.swarm.is_connected(p))
                    .collect();
                if let Some(kad) = self.swarm.behaviour_mut().kad.as_mut() {
                    for peer in absent {
                        kad.get_closest_peers(peer);
                    }
                }
            }
            _ => {}
        }
        Ok(())
    }

    fn on_token_event(
        &mut self,
        event: request_response::Event<Message, Message>,
    ) -> Result<(), NodeError> {
        match event {
            request_response::Event::Message { peer, message, .. } => match message {
                request_response::Message::Request {
                    request, channel, ..
                } => self.on_request(peer, request, channel)?,
                request_response::Message::Response {
                    request_id,
                    response,
                } => self.on_response(peer, request_id, response)?,
            },
            request_response::Event::OutboundFailure {
                peer,
                request_id,
                error,
                ..
            } => {
                if let Some(p) = self.publish.as_mut() {
                    p.answered(&request_id, false);
                }
                if self.inflight.is_some_and(|(id, _)| id == request_id) {
                    self.inflight = None;
                    tracing::debug!(peer = %peer, error = %error, "token hand-over failed; retrying");
                    if let Some(a) = self.attempt.as_mut() {
                        a.next_try = Instant::now() + RETRY_PAUSE;
                    }
                }
            }
            request_response::Event::InboundFailure { peer, error, .. } => {
                tracing::warn!(peer = %peer, error = %error, "inbound message rejected");
            }
            request_response::Event::ResponseSent { .. } => {}
        }
        Ok(())
    }

    fn respond(&mut self, channel: ResponseChannel<Message>, message: Message) {
        if self
            .swarm
            .behaviour_mut()
            .token
            .send_response(channel, message)
            .is_err()
        {
            tracing::debug!("the requester went away before our answer");
        }
    }

    fn refuse(&mut self, peer: PeerId, channel: ResponseChannel<Message>, why: Rejection) {
        tracing::warn!(peer = %peer, reason = %why, "refused a message");
        self.respond(channel, Message::Refused(why));
    }

    fn on_request(
        &mut self,
        peer: PeerId,
        request: Message,
        channel: ResponseChannel<Message>,
    ) -> Result<(), NodeError> {
        let run_id = self.run.run_id().to_string();
        match request {
            Message::Hello(hello) => self.on_hello(peer, hello, channel),
            Message::Token(token) => {
                let ctx = self.run.context(self.learner.state().last_seq);
                if let Err(why) = codec::validate(&peer, &token, &ctx) {
                    if matches!(why, Rejection::Replay { .. })
                        && Some(token.seq) == self.learner.state().last_seq
                    {
                        // This node already took this very step: acknowledge again.
                        self.respond(
                            channel,
                            Message::Ack {
                                run_id,
                                seq: token.seq,
                            },
                        );
                    } else {
                        self.refuse(peer, channel, why);
                    }
                    return Ok(());
                }
                if self.leaving.is_some() || self.learner.state().final_model.is_some() {
                    self.respond(channel, Message::Refused(Rejection::Leaving));
                    // A token after the end is a branch of the walk that has not heard of it.
                    self.publish_to(peer);
                    return Ok(());
                }
                if !self.verified.contains(&peer) {
                    self.respond(channel, Message::Refused(Rejection::NotVerified));
                    return Ok(());
                }
                let seq = token.seq;
                // One line per hop at debug level: `scripts/hop-latency` measures hops from them.
                tracing::debug!(seq, "took the token");
                let outcome = self.learner.receive(token, Some(peer))?;
                if matches!(outcome, Outcome::Final(_)) {
                    crate::fault::after_last_step();
                }
                self.record_hop();
                self.respond(channel, Message::Ack { run_id, seq });
                self.after_step(outcome)?;
            }
            Message::FinalModel(model) => {
                let ctx = self.run.context(self.learner.state().last_seq);
                let maker = match codec::validate_final(&peer, &model, &ctx) {
                    Ok(maker) => maker,
                    Err(why) => {
                        self.refuse(peer, channel, why);
                        return Ok(());
                    }
                };
                if !self.verified.contains(&peer) {
                    // Only a member that showed it runs our run file may hand us the result.
                    self.respond(channel, Message::Refused(Rejection::NotVerified));
                    return Ok(());
                }
                let seq = model.seq;
                self.respond(channel, Message::Ack { run_id, seq });
                self.on_final(peer, maker, model)?;
            }
            Message::Released { run_id: rid, seq } => {
                if rid == run_id && self.member_index(&peer).is_some() {
                    self.learner.released(seq);
                    if self.learner.state().backup.is_none() {
                        self.backup_since = None;
                    }
                }
                self.respond(channel, Message::Ack { run_id, seq });
            }
            other => {
                tracing::warn!(peer = %peer, message = ?std::mem::discriminant(&other), "a response sent as a request; ignored");
            }
        }
        Ok(())
    }

    fn on_hello(&mut self, peer: PeerId, hello: Hello, channel: ResponseChannel<Message>) {
        if self.member_index(&peer).is_none() {
            self.refuse(
                peer,
                channel,
                Rejection::NotMember {
                    peer: peer.to_base58(),
                },
            );
            return;
        }
        match self.compare(&peer, &hello) {
            Ok(()) => {
                self.on_verified(peer);
                let mine = Message::Welcome(self.hello());
                self.respond(channel, mine);
            }
            Err(differences) => self.respond(
                channel,
                Message::Refused(Rejection::RunMismatch { differences }),
            ),
        }
    }

    /// Checks a peer's run against ours; on a mismatch, logs (once per connection) each key that
    /// differs with both values, and returns them as the peer should read them (its values
    /// "here", ours "in member <our index>'s").
    fn compare(&mut self, peer: &PeerId, hello: &Hello) -> Result<(), Vec<String>> {
        if hello.run_hash == self.run.hash().0 {
            self.mismatched.remove(peer);
            return Ok(());
        }
        let differences = self.run.diff_text(&hello.run);
        let theirs = member_name(self.member_index(peer));
        if self.mismatched.insert(*peer) {
            let described: Vec<String> = differences
                .iter()
                .map(|d| d.describe(&format!("{theirs}'s")))
                .collect();
            tracing::error!(
                "{theirs} ({peer}) runs another run file, so no token will go to or come from it: {}. Every member must use the same run file",
                described.join("; ")
            );
        }
        self.verified.remove(peer);
        let me = member_name(Some(self.learner.index()));
        Err(differences
            .iter()
            .map(|d| d.swapped().describe(&format!("{me}'s")))
            .collect())
    }

    fn on_response(
        &mut self,
        peer: PeerId,
        request_id: OutboundRequestId,
        response: Message,
    ) -> Result<(), NodeError> {
        let is_token = self.inflight.is_some_and(|(id, _)| id == request_id);
        if is_token {
            self.inflight = None;
        }
        let acknowledged = matches!(response, Message::Ack { .. });
        if let Some(p) = self.publish.as_mut()
            && p.answered(&request_id, acknowledged).is_some()
        {
            return self.on_publish_answer(peer, response);
        }
        match response {
            Message::Welcome(hello) if self.compare(&peer, &hello).is_ok() => {
                self.on_verified(peer);
            }
            Message::Ack { seq, .. } if is_token => {
                self.attempt = None;
                self.failed_handoffs = 0;
                if let Some((predecessor, given)) = self.learner.acknowledged(seq) {
                    let released = Message::Released {
                        run_id: self.run.run_id().to_string(),
                        seq: given,
                    };
                    self.send(&predecessor, released);
                }
                self.backup_since = self
                    .learner
                    .state()
                    .backup
                    .as_ref()
                    .map(|b| (b.to, Instant::now()));
            }
            Message::Refused(why) => self.on_refused(peer, is_token, why)?,
            _ => {}
        }
        Ok(())
    }

    fn on_refused(
        &mut self,
        peer: PeerId,
        is_token: bool,
        why: Rejection,
    ) -> Result<(), NodeError> {
        match why {
            Rejection::RunMismatch { differences } => {
                // Our own comparison of its hello usually said it already, with the same keys.
                if self.mismatched.insert(peer) {
                    tracing::error!(
                        "{} ({peer}) refused our run file: {}. Every member must use the same run file",
                        member_name(self.member_index(&peer)),
                        differences.join("; ")
                    );
                }
                self.verified.remove(&peer);
            }
            Rejection::NotVerified if is_token => {
                if let Some(a) = self.attempt.as_mut() {
                    a.next_try = Instant::now() + VERIFY_PAUSE;
                }
                // Say hello again in case the first one was lost.
                let hello = Message::Hello(self.hello());
                self.send(&peer, hello);
            }
            Rejection::Replay { seq, .. } if is_token => {
                tracing::info!(peer = %peer, seq, "the walk has passed our token: dropping it");
                self.learner.superseded(seq);
                self.attempt = None;
            }
            other if is_token => {
                tracing::warn!(peer = %peer, reason = %other, "token refused: re-routing");
                self.down.insert(peer, Instant::now());
                self.reroute()?;
            }
            other => tracing::warn!(peer = %peer, reason = %other, "message refused"),
        }
        Ok(())
    }

    /// Acts on a step's outcome: start handing the token over, or publish the final model.
    fn after_step(&mut self, outcome: Outcome) -> Result<(), NodeError> {
        match outcome {
            Outcome::Forward(custody) => {
                if self.is_down(&custody.to, Instant::now()) {
                    // Drawn, but known down: draw again now rather than wait for it.
                    return self.reroute();
                }
                self.begin_attempt(&custody);
            }
            Outcome::Final(model) => {
                tracing::info!(
                    steps = model.seq,
                    "the walk is over: publishing the final model"
                );
                self.write_final(&model)?;
                self.begin_publish(model);
            }
        }
        Ok(())
    }

    fn begin_attempt(&mut self, custody: &Custody) {
        let now = Instant::now();
        self.inflight = None;
        self.attempt = Some(Attempt {
            seq: custody.token.seq,
            to: custody.to,
            since: now,
            next_try: now,
            sent: false,
        });
    }

    /// Whether `peer` is known to be down: it was verified and its connection closed more than
    /// the hand-off timeout ago (a quick restart is waited for), a dial to
    /// it failed, or it refused or did not take a token. A member not connected stays down until
    /// it verifies again ([`Node::on_verified`]); one still connected (frozen, or slow) is given
    /// another chance after [`AVOID_FOR`].
    fn is_down(&self, peer: &PeerId, now: Instant) -> bool {
        self.down.get(peer).is_some_and(|&since| {
            now >= since && (!self.verified.contains(peer) || now.duration_since(since) < AVOID_FOR)
        })
    }

    fn reroute(&mut self) -> Result<(), NodeError> {
        let now = Instant::now();
        let avoid: HashSet<PeerId> = self
            .down
            .keys()
            .filter(|p| self.is_down(p, now))
            .copied()
            .chain(self.mismatched.iter().copied())
            .collect();
        if let Some(custody) = self.learner.reroute(&avoid)? {
            tracing::debug!(seq = custody.token.seq, to = %member_name(self.member_index(&custody.to)), "re-routed the token");
            self.begin_attempt(&custody);
        }
        Ok(())
    }

    /// Moves the outgoing token along: sends it when the receiver is verified, re-routes after the
    /// hand-off timeout, resumes from the backup when the receiver vanished.
    fn pump(&mut self) -> Result<(), NodeError> {
        let now = Instant::now();
        if self
            .last_redial
            .is_none_or(|t| now.duration_since(t) > REDIAL_EVERY)
        {
            self.last_redial = Some(now);
            for i in 0..self.neighbours.len() {
                let peer = self.neighbours[i];
                if !self.swarm.is_connected(&peer) {
                    self.dial(peer);
                }
            }
        }
        if let Some((to, since)) = self.backup_since
            && now.duration_since(since) > self.config.timeouts.resume()
            && self.learner.state().outgoing.is_none()
        {
            self.backup_since = None;
            let who = member_name(self.member_index(&to));
            if self.is_last_hop(self.learner.state().backup.as_ref()) {
                // It made the last step: resuming would make a second final model.
                tracing::warn!(
                    "no final model yet from {who}, which took the last step from us: waiting for it to publish (a restart of it publishes the model it made)"
                );
            } else {
                tracing::warn!(
                    "no news of the token since we handed it to {who}: resuming the walk from our copy"
                );
                self.down.insert(to, now);
                if let Some(custody) = self.learner.resume(to)? {
                    self.begin_attempt(&custody);
                }
            }
        }
        let Some(custody) = self.learner.state().outgoing.clone() else {
            self.attempt = None;
            return Ok(());
        };
        let attempt = match self.attempt {
            Some(a) if a.seq == custody.token.seq && a.to == custody.to => a,
            _ => {
                self.begin_attempt(&custody);
                self.attempt
                    .ok_or_else(|| NodeError::Unsupported("no attempt".into()))?
            }
        };
        // Whether the receiver may hold the token: it was sent to it (by this process, or by the
        // one before a restart).
        let may_hold = attempt.sent || self.resumed == Some((custody.token.seq, custody.to));
        // A member with another run file never takes a token, and one known down that was never
        // sent it cannot hold it: re-route at once. Any other receiver gets the hand-off timeout
        // (it may be restarting with the token taken). After hand-offs that failed in a row
        // (every neighbour down, or refusing our run file) the patience doubles, up to 8 times
        // the timeout, rather than re-route every few seconds.
        let other_run = self.mismatched.contains(&custody.to);
        let patience = if (other_run || !may_hold && self.is_down(&custody.to, now))
            && self.failed_handoffs == 0
        {
            Duration::ZERO
        } else {
            self.config.timeouts.handoff() * (1 << self.failed_handoffs.min(3))
        };
        let overdue = now.duration_since(attempt.since) > patience;
        if overdue && may_hold && self.is_last_hop(Some(&custody)) {
            // The receiver may have made the last step: a second maker would make a second
            // final model. Keep trying this one (it acknowledges again if it took it).
            let who = member_name(self.member_index(&custody.to));
            tracing::warn!(
                seq = custody.token.seq,
                "{who} has not acknowledged the token of the last step; it may have made it, so it is waited for rather than replaced"
            );
            if let Some(a) = self.attempt.as_mut() {
                a.since = now;
            }
        } else if overdue {
            // A request in flight to a receiver that timed out is abandoned (a late answer is
            // ignored).
            self.inflight = None;
            if patience > Duration::ZERO {
                self.handoff_timeouts += 1;
            }
            self.failed_handoffs = self.failed_handoffs.saturating_add(1);
            let why = if other_run {
                Unreachable::OtherRun
            } else if !self.swarm.is_connected(&custody.to) {
                Unreachable::NotConnected
            } else if !self.verified.contains(&custody.to) {
                Unreachable::NotVerified
            } else {
                Unreachable::NoAnswer
            };
            let who = member_name(self.member_index(&custody.to));
            if self.unreachable.insert(custody.to, why) == Some(why) {
                tracing::debug!(seq = custody.token.seq, "{who} {why}: re-routing the token");
            } else {
                tracing::warn!(
                    seq = custody.token.seq,
                    "{who} {why}: re-routing the token (said once; later re-routes around it are logged at debug level)"
                );
            }
            self.down.insert(custody.to, now);
            return self.reroute();
        }
        if self.inflight.is_some() || now < attempt.next_try {
            return Ok(());
        }
        if self.verified.contains(&custody.to) {
            let id = self.send(&custody.to, Message::Token(custody.token.clone()));
            self.inflight = Some((id, custody.token.seq));
            if let Some(a) = self.attempt.as_mut() {
                a.sent = true;
            }
        } else if let Some(a) = self.attempt.as_mut() {
            a.next_try = now + VERIFY_PAUSE;
            let recently = self
                .dialed
                .get(&custody.to)
                .is_some_and(|t| now.duration_since(*t) < DIAL_RECEIVER_EVERY);
            if !self.swarm.is_connected(&custody.to) && !recently {
                self.dialed.insert(custody.to, now);
                self.dial(custody.to);
            }
        }
        Ok(())
    }

    /// Whether `custody` hands on the token of the last step (its receiver makes step `K`).
    fn is_last_hop(&self, custody: Option<&Custody>) -> bool {
        custody.is_some_and(|c| c.token.seq + 1 >= self.run.steps())
    }

    /// `peer` runs our run file: tokens may go to it.
    fn on_verified(&mut self, peer: PeerId) {
        self.verified.insert(peer);
        self.mismatched.remove(&peer);
        self.down.remove(&peer);
        if self.unreachable.remove(&peer).is_some() {
            tracing::info!(
                "{} is reachable again and runs our run file",
                member_name(self.member_index(&peer))
            );
        }
    }

    /// Says whom the node waits for: at once when the set of neighbours (the members a token may
    /// go to) not (yet) verified changes, then every [`WAITING_EVERY`] while it is not empty.
    /// Quiet once the run is over.
    fn report_waiting(&mut self) {
        if self.learner.state().final_model.is_some() || self.leaving.is_some() {
            return;
        }
        let now = Instant::now();
        let awaited: Vec<usize> = self
            .neighbours
            .iter()
            .filter(|p| !self.verified.contains(p))
            .filter_map(|p| self.member_index(p))
            .collect();
        let others = self.neighbours.len();
        let degree = self.run.topology().degree(self.learner.index());
        let whom = if others + 1 == self.run.members().len() {
            "other members".to_string()
        } else if others == degree {
            "neighbours in the topology".to_string()
        } else {
            format!(
                "neighbours kept connected (of {degree}; the others are dialled when the token goes to them)"
            )
        };
        if awaited.is_empty() {
            if self
                .waiting
                .as_ref()
                .is_none_or(|(last, _)| !last.is_empty())
            {
                self.waiting = Some((awaited, now));
                tracing::info!(
                    "{} connected and run{} our run file",
                    if others == 1 && whom == "other members" {
                        "the other member is".to_string()
                    } else {
                        format!("all {others} {whom} are")
                    },
                    if others == 1 { "s" } else { "" }
                );
            }
            return;
        }
        // Members started together connect within milliseconds: give them a moment, and then
        // report a change at most once a second.
        if self.started.elapsed() < WAITING_GRACE {
            return;
        }
        let due = self.waiting.as_ref().is_none_or(|(last, at)| {
            let gap = now.duration_since(*at);
            (*last != awaited && gap >= WAITING_GRACE) || gap >= WAITING_EVERY
        });
        if !due {
            return;
        }
        self.waiting = Some((awaited.clone(), now));
        let (mut absent, mut other, mut checking) = (Vec::new(), Vec::new(), Vec::new());
        for &i in &awaited {
            let peer = self.run.members()[i].peer;
            if self.mismatched.contains(&peer) {
                other.push(i);
            } else if self.swarm.is_connected(&peer) {
                checking.push(i);
            } else {
                absent.push(i);
            }
        }
        let list = |v: &[usize]| {
            v.iter()
                .map(usize::to_string)
                .collect::<Vec<_>>()
                .join(", ")
        };
        let mut parts = Vec::new();
        if !absent.is_empty() {
            parts.push(format!(
                "not connected (not started yet, or unreachable at the run file's addrs): {}",
                list(&absent)
            ));
        }
        if !other.is_empty() {
            parts.push(format!("running another run file: {}", list(&other)));
        }
        if !checking.is_empty() {
            parts.push(format!("comparing run files: {}", list(&checking)));
        }
        tracing::info!(
            "waiting for {} of {others} {whom}: {}",
            awaited.len(),
            parts.join("; ")
        );
    }

    /// Publishes `model` to every other member.
    fn begin_publish(&mut self, model: FinalModel) {
        let others: Vec<PeerId> = self
            .run
            .members()
            .iter()
            .map(|m| m.peer)
            .filter(|p| *p != self.me)
            .collect();
        self.publish = Some(Publish::new(model, others, Instant::now()));
    }

    /// Gives the final model this node holds, if any, to member `peer`.
    fn publish_to(&mut self, peer: PeerId) {
        let Some(model) = self.learner.state().final_model.clone() else {
            return;
        };
        let now = Instant::now();
        match self.publish.as_mut() {
            Some(p) if p.model() == &model => p.add(peer, now),
            _ => self.publish = Some(Publish::new(model, [peer], now)),
        }
    }

    /// Sends the final model to members that have not acknowledged it (see [`Publish::due`]).
    fn publish_step(&mut self) {
        let Some(p) = self.publish.as_mut() else {
            return;
        };
        let targets = p.due(Instant::now());
        if targets.is_empty() {
            return;
        }
        let message = Message::FinalModel(p.model().clone());
        for peer in targets {
            let id = self.send(&peer, message.clone());
            if let Some(p) = self.publish.as_mut() {
                p.sent(id, peer);
            }
        }
    }

    /// A member answered our final model (anything but an acknowledgement).
    fn on_publish_answer(&mut self, peer: PeerId, answer: Message) -> Result<(), NodeError> {
        match answer {
            Message::Ack { .. } => {}
            Message::Refused(Rejection::NotVerified) => {
                // It has not compared run files with us yet (or lost our hello): say it again;
                // the model is sent again at the next round.
                let hello = Message::Hello(self.hello());
                self.send(&peer, hello);
            }
            Message::Refused(why) => {
                tracing::warn!(
                    "{} refused the final model: {why}",
                    member_name(self.member_index(&peer))
                );
                if let Some(p) = self.publish.as_mut() {
                    p.drop_member(&peer);
                }
            }
            _ => {}
        }
        Ok(())
    }

    /// A valid final model made by `maker`, from the verified member `from`: written if it is
    /// the first, else kept or replaced by the rule of [`crate::publish`].
    fn on_final(
        &mut self,
        from: PeerId,
        maker: PeerId,
        model: FinalModel,
    ) -> Result<(), NodeError> {
        let maker_index = self.member_index(&maker).unwrap_or(usize::MAX);
        let Some(held) = self.learner.state().final_model.clone() else {
            tracing::info!(
                from = %member_name(self.member_index(&from)),
                maker = %member_name(Some(maker_index)),
                "received the final model"
            );
            self.learner.final_received(model.clone())?;
            return self.write_final(&model);
        };
        if held == model {
            return Ok(());
        }
        let held_maker = crate::seal::maker(&held, &self.run.hash().0)
            .ok()
            .and_then(|p| self.member_index(&p))
            .unwrap_or(usize::MAX);
        if prevails(maker_index, held_maker) {
            tracing::warn!(
                "a second final model, made by {}, prevails over the one made by {} that this node held (the walk forked before its last step; of two final models the one of the lower member index is kept): replacing it and passing it on",
                member_name(Some(maker_index)),
                member_name(Some(held_maker))
            );
            self.learner.final_received(model.clone())?;
            self.write_final(&model)?;
            self.begin_publish(model);
        } else {
            tracing::warn!(
                "{} sent a second final model, made by {}, which does not prevail over the one made by {} that this node holds (the walk forked before its last step): sending it ours",
                member_name(self.member_index(&from)),
                member_name(Some(maker_index)),
                member_name(Some(held_maker))
            );
            self.publish_to(from);
        }
        Ok(())
    }

    fn write_final(&mut self, model: &FinalModel) -> Result<(), NodeError> {
        // Every model this node holds was sealed by it or verified on receipt.
        let maker = crate::seal::maker(model, &self.run.hash().0).map_err(|why| {
            NodeError::Unsupported(format!("the final model held in the state: {why}"))
        })?;
        let state = self.learner.state();
        let file = FinalModelFile {
            z: &model.z,
            steps: model.seq,
            seed: self.run.seed(),
            run_id: self.run.run_id(),
            run_hash: self.run.hash().to_string(),
            index: self.learner.index(),
            peer_id: self.me.to_base58(),
            maker_index: self.member_index(&maker).unwrap_or(usize::MAX),
            maker_peer_id: maker.to_base58(),
            privacy: FinalPrivacy {
                contributions: state.contributions,
                clipped: state.clipped,
                skipped: state.skipped,
                delta: self.learner.delta(),
                epsilon_local: self.learner.local_epsilon()?,
                budget_epsilon: self.learner.budget_epsilon(),
                conversion: "tight",
            },
        };
        let path = self.state_dir.join(FINAL_MODEL_FILE);
        let json = serde_json::to_string_pretty(&file).map_err(|e| NodeError::Write {
            path: path.clone(),
            source: std::io::Error::other(e),
        })?;
        write_durably(&path, json.as_bytes()).map_err(|source| NodeError::Write {
            path: path.clone(),
            source,
        })?;
        tracing::info!(path = %path.display(), "final model written");
        self.finished_at.get_or_insert_with(Instant::now);
        Ok(())
    }

    fn record_hop(&mut self) {
        let now = Instant::now();
        self.hops.push_back(now);
        while self
            .hops
            .front()
            .is_some_and(|t| now.duration_since(*t) > RATE_WINDOW)
        {
            self.hops.pop_front();
        }
    }

    /// Updates the status snapshot, at most every [`STATUS_EVERY`] (the privacy figure costs a
    /// conversion over the order grid).
    fn refresh_status(&mut self) {
        let now = Instant::now();
        if self
            .last_status
            .is_some_and(|t| now.duration_since(t) < STATUS_EVERY)
        {
            return;
        }
        self.last_status = Some(now);
        let state = self.learner.state();
        let indices = |set: &HashSet<PeerId>| {
            let mut v: Vec<usize> = set.iter().filter_map(|p| self.run.index_of(p)).collect();
            v.sort_unstable();
            v
        };
        let window = self
            .hops
            .front()
            .map_or(0.0, |t| t.elapsed().as_secs_f64())
            .max(1.0);
        self.status.set(Status {
            run_id: self.run.run_id().to_string(),
            run_hash: self.run.hash().to_string(),
            index: self.learner.index(),
            peer_id: self.me.to_base58(),
            listen: self.listen.clone(),
            peers: indices(&self.verified),
            mismatched: indices(&self.mismatched),
            steps_done: state.contributions,
            skipped: state.skipped,
            last_seq: state.last_seq,
            total_steps: self.run.steps(),
            holding: state.outgoing.is_some(),
            hop_rate: self.hops.len() as f64 / window,
            delta: self.learner.delta(),
            epsilon_local: self.learner.local_epsilon().ok().flatten(),
            budget_epsilon: self.learner.budget_epsilon(),
            finished: state.final_model.is_some(),
            clipped_recent: self
                .learner
                .quality()
                .clipped_recent()
                .map(|(clipped, of)| ClippedRecent { clipped, of }),
            warnings: self
                .learner
                .quality()
                .warnings()
                .iter()
                .map(ToString::to_string)
                .collect(),
        });
    }
}

/// Writes `bytes` to `path` through a temporary file, fsync and rename.
fn write_durably(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    use std::io::Write;
    let temp = path.with_extension("json.tmp");
    let mut f = std::fs::File::create(&temp)?;
    f.write_all(bytes)?;
    f.sync_all()?;
    drop(f);
    std::fs::rename(&temp, path)?;
    crate::state::sync_parent(path)
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
