//! The daemon: one node of a run, from `node.toml` to `final_model.json`.
//!
//! [`run`] loads the run file, the identity and the node's data, opens its durable state
//! ([`crate::learner`]), starts the swarm ([`crate::behaviour`]) and the status endpoint, and runs
//! the event loop until the final model is written (or the node is told to stop).
//!
//! # Custody (DESIGN.md, "The daemon")
//! The rules below are kept by [`crate::custody`]'s state machine, without I/O and tested on each
//! transition; this loop feeds it the swarm's events and performs its actions. The loop sleeps
//! until the earliest deadline of custody, of the publication and of the housekeeping (no
//! polling period), or until the swarm has an event.
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

use std::collections::{HashSet, VecDeque};
use std::path::PathBuf;
use std::time::{Duration, Instant};

use dpwalk_core::params::AdmmParams;
use dpwalk_core::problem::ProblemError;
use dpwalk_privacy::ledger::Budget;
use futures::StreamExt;
use libp2p::request_response::{self, OutboundRequestId, ResponseChannel};
use libp2p::swarm::{DialError, ListenError, SwarmEvent};
use libp2p::{Multiaddr, PeerId, Swarm, allow_block_list, identify, kad, mdns};
use thiserror::Error;

use crate::addresses::AddressBook;
use crate::behaviour::{self, Behaviour, BehaviourEvent, BuildError};
use crate::codec::{self, FinalModel, Hello, Message, Rejection};
use crate::config::NodeConfig;
use crate::custody::{self, Action, Machine};
use crate::final_model::{FinalModelError, FinalModelFile, FinalPrivacy};
use crate::keys::{self, KeyError};
use crate::learner::{Learner, LearnerError, Outcome, node_problem};
use crate::limits::{Limits, Refusals, Refused};
use crate::publish::{Publish, prevails};
use crate::run::{Noise, Run, RunError};
use crate::status::{ClippedRecent, SharedStatus, Status, StatusError};

/// The most neighbours a node dials eagerly (see "Connections" above).
const EAGER_MAX: usize = 16;
/// How often neighbours that are not connected are dialled again.
const REDIAL_EVERY: Duration = Duration::from_secs(2);
/// How often the status snapshot is refreshed; the slower housekeeping (redials, the ledger's
/// flush, the report of members awaited) is checked at the same turns.
const STATUS_EVERY: Duration = Duration::from_millis(200);
/// The shortest sleep of the event loop: a deadline already past (one whose condition holds only
/// strictly after it) is looked at again a millisecond later, not in a busy loop.
const MIN_SLEEP: Duration = Duration::from_millis(1);
/// How many times in one turn custody is polled again after acting: a re-routed or resumed token
/// is sent in the same turn. Each re-route of an overdue hand-off counts as a failure, which
/// makes the next wait long, so two rounds are all that is ever needed.
const CUSTODY_ROUNDS: usize = 3;
/// How often the ledger's file is flushed while the node does not hold the token: rarely, since
/// every flush competes for the disk with the holder's commit (see `crate::learner`).
const LEDGER_FLUSH_EVERY: Duration = Duration::from_secs(1);
/// Window of the hop rate.
const RATE_WINDOW: Duration = Duration::from_secs(5);
/// How often a node still waiting for members says whom it waits for (and at once on a change).
const WAITING_EVERY: Duration = Duration::from_secs(30);
/// How long after its start, and between two changes, a node waits before saying whom it waits for.
const WAITING_GRACE: Duration = Duration::from_secs(1);

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
        custody: Machine::new(
            custody::Config {
                handoff: config.timeouts.handoff(),
                resume: config.timeouts.resume(),
                steps: loaded.run.steps(),
                members: loaded.run.members().iter().map(|m| m.peer).collect(),
            },
            Instant::now(),
        ),
        publish: None,
        finished_at: None,
        leaving: None,
        hops: VecDeque::new(),
        last_redial: None,
        ledger_flushed: Instant::now(),
        listen: Vec::new(),
        last_status: None,
        waiting: None,
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
pub(crate) fn member_name(index: Option<usize>) -> String {
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
    /// Custody of the token, and which members are verified, mismatched or down.
    custody: Machine<OutboundRequestId>,
    publish: Option<Publish<OutboundRequestId>>,
    finished_at: Option<Instant>,
    leaving: Option<Instant>,
    hops: VecDeque<Instant>,
    last_redial: Option<Instant>,
    /// When the ledger's file was last flushed.
    ledger_flushed: Instant,
    listen: Vec<String>,
    last_status: Option<Instant>,
    /// The members last reported as awaited, and when.
    waiting: Option<(Vec<usize>, Instant)>,
    /// When the node started.
    started: Instant,
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
    /// first turn dials the neighbours).
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
        if let Some(c) = &s.outgoing {
            self.custody.restarted(c.token.seq, c.to, Instant::now());
        }
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
        let mut stop = std::pin::pin!(stop);
        let mut stopping = false;
        loop {
            let now = Instant::now();
            let wake = self.next_deadline(now).max(now + MIN_SLEEP);
            tokio::select! {
                event = self.swarm.select_next_some() => self.on_swarm_event(event)?,
                () = tokio::time::sleep_until(wake.into()) => {}
                () = &mut stop, if !stopping => {
                    stopping = true;
                    tracing::info!("stop requested: refusing new tokens, handing on the one held");
                    self.leaving = Some(Instant::now());
                }
            }
            self.redial();
            self.drive_custody()?;
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

    /// When the event loop wakes without an event: the earliest deadline of custody, of the
    /// publication, of the end (the linger, or the hand-on when leaving) and of the periodic
    /// housekeeping (see [`STATUS_EVERY`]).
    fn next_deadline(&self, now: Instant) -> Instant {
        let leave = self
            .leaving
            .map(|since| since + self.config.timeouts.handoff() * 2);
        let linger = self
            .finished_at
            .map(|at| at + self.config.timeouts.linger());
        let redial = self.last_redial.map(|t| t + REDIAL_EVERY);
        let status = self.last_status.map_or(now, |t| t + STATUS_EVERY);
        [
            self.custody.next_deadline(now),
            self.publish.as_ref().and_then(|p| p.next_deadline(now)),
            leave,
            linger,
            redial,
        ]
        .into_iter()
        .flatten()
        .fold(status, Instant::min)
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
            handoff_timeouts: self.custody.handoff_timeouts(),
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
            .is_none_or(|p| p.settled(now, |peer| self.custody.is_down(peer, now)));
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
            } => self.custody.closed(peer_id, Instant::now()),
            SwarmEvent::OutgoingConnectionError {
                peer_id: Some(peer),
                error,
                ..
            } if self.member_index(&peer).is_some() => {
                tracing::trace!(%peer, %error, "a dial to a member failed");
                self.custody.dial_failed(peer, Instant::now());
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
                if self.custody.failed(request_id, Instant::now()) {
                    tracing::debug!(peer = %peer, error = %error, "token hand-over failed; retrying");
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
                if !self.custody.is_verified(&peer) {
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
                if !self.custody.is_verified(&peer) {
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
                    self.custody.released(seq);
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
            self.custody.matched(peer);
            return Ok(());
        }
        let differences = self.run.diff_text(&hello.run);
        let theirs = member_name(self.member_index(peer));
        if self.custody.mismatched(*peer) {
            let described: Vec<String> = differences
                .iter()
                .map(|d| d.describe(&format!("{theirs}'s")))
                .collect();
            tracing::error!(
                "{theirs} ({peer}) runs another run file, so no token will go to or come from it: {}. Every member must use the same run file",
                described.join("; ")
            );
        }
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
        let is_token = self.custody.answered(request_id);
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
                self.custody.acknowledged(seq, Instant::now());
                if let Some((predecessor, given)) = self.learner.acknowledged(seq) {
                    let released = Message::Released {
                        run_id: self.run.run_id().to_string(),
                        seq: given,
                    };
                    self.send(&predecessor, released);
                }
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
                if self.custody.mismatched(peer) {
                    tracing::error!(
                        "{} ({peer}) refused our run file: {}. Every member must use the same run file",
                        member_name(self.member_index(&peer)),
                        differences.join("; ")
                    );
                }
            }
            Rejection::NotVerified if is_token => {
                self.custody.not_verified(Instant::now());
                // Say hello again in case the first one was lost.
                let hello = Message::Hello(self.hello());
                self.send(&peer, hello);
            }
            Rejection::Replay { seq, .. } if is_token => {
                tracing::info!(peer = %peer, seq, "the walk has passed our token: dropping it");
                self.learner.superseded(seq);
                self.custody.superseded(seq, Instant::now());
            }
            other if is_token => {
                tracing::warn!(peer = %peer, reason = %other, "token refused: re-routing");
                let now = Instant::now();
                let reroute = self.custody.refused(peer, now);
                self.perform(reroute, now)?;
            }
            other => tracing::warn!(peer = %peer, reason = %other, "message refused"),
        }
        Ok(())
    }

    /// Acts on a step's outcome: start handing the token over, or publish the final model.
    fn after_step(&mut self, outcome: Outcome) -> Result<(), NodeError> {
        let now = Instant::now();
        match outcome {
            Outcome::Forward(c) => {
                if let Some(reroute) = self.custody.stepped(Some((c.token.seq, c.to)), now) {
                    // Drawn, but known down: draw again now rather than wait for it.
                    self.perform(reroute, now)?;
                }
            }
            Outcome::Final(model) => {
                self.custody.stepped(None, now);
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

    /// Dials the eager neighbours that are not connected, every [`REDIAL_EVERY`].
    fn redial(&mut self) {
        let now = Instant::now();
        if self
            .last_redial
            .is_some_and(|t| now.duration_since(t) < REDIAL_EVERY)
        {
            return;
        }
        self.last_redial = Some(now);
        for i in 0..self.neighbours.len() {
            let peer = self.neighbours[i];
            if !self.swarm.is_connected(&peer) {
                self.dial(peer);
            }
        }
    }

    /// Performs what custody says is due (see [`CUSTODY_ROUNDS`]).
    fn drive_custody(&mut self) -> Result<(), NodeError> {
        for _ in 0..CUSTODY_ROUNDS {
            let now = Instant::now();
            let actions = self.custody.poll(now, |p| self.swarm.is_connected(p));
            if actions.is_empty() {
                break;
            }
            for action in actions {
                self.perform(action, now)?;
            }
        }
        Ok(())
    }

    /// Performs one custody action on the swarm and the learner, and reports its result back.
    fn perform(&mut self, action: Action, now: Instant) -> Result<(), NodeError> {
        match action {
            Action::Dial(peer) => self.dial(peer),
            Action::Send { to, seq } => {
                let held = self.learner.state().outgoing.clone();
                match held {
                    Some(c) if c.to == to && c.token.seq == seq => {
                        let id = self.send(&to, Message::Token(c.token));
                        self.custody.sent(id);
                    }
                    // Custody follows the durable state, which holds another token (or none).
                    other => self
                        .custody
                        .handing(other.map(|c| (c.token.seq, c.to)), now),
                }
            }
            Action::Reroute { avoid } => {
                let next = self.learner.reroute(&avoid)?;
                if let Some(c) = &next {
                    tracing::debug!(seq = c.token.seq, to = %member_name(self.member_index(&c.to)), "re-routed the token");
                }
                self.custody.handing(next.map(|c| (c.token.seq, c.to)), now);
            }
            Action::Resume { gone } => {
                let next = self.learner.resume(gone)?;
                self.custody.handing(next.map(|c| (c.token.seq, c.to)), now);
            }
        }
        Ok(())
    }

    /// `peer` runs our run file: tokens may go to it.
    fn on_verified(&mut self, peer: PeerId) {
        if self.custody.verified(peer) {
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
            .filter(|p| !self.custody.is_verified(p))
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
            if self.custody.mismatched_peers().contains(&peer) {
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
            self.custody.finished();
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
            self.custody.finished();
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
            z: model.z.clone(),
            steps: model.seq,
            seed: self.run.seed(),
            run_id: self.run.run_id().to_string(),
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
                conversion: "tight".into(),
            },
        };
        let path = file.write(&self.state_dir)?;
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
            peers: indices(self.custody.verified_peers()),
            mismatched: indices(self.custody.mismatched_peers()),
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
