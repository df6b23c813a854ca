//! A node's start-up: what it loads and checks before any socket
//! opens (the run file, the identity, the data and the budget), the address book and the
//! neighbours dialled eagerly, the event loop's state built from them ([`Node::new`]), then
//! listening and resuming what the durable state says is pending ([`Node::start`]), and the
//! status endpoint.

use dpwalk_core::data::Dataset;
use dpwalk_core::problem::{Loss, Problem};
use dpwalk_core::step::Algorithm;
use dpwalk_privacy::ledger::Budget;
use libp2p::{Multiaddr, PeerId};
use std::collections::{HashMap, HashSet, VecDeque};
use std::time::Instant;

use super::connections::{address_book, eager_both_ways, eager_neighbours};
use super::reach::Circuit;
use super::{Node, NodeError};
use crate::behaviour;
use crate::codec::Hello;
use crate::config::NodeConfig;
use crate::custody::{self, Machine};
use crate::keys;
use crate::learner::{Learner, LearnerError, NodeStep, node_problem};
use crate::limits::{Limits, Refusals};
use crate::reach::{self, Links};
use crate::run::Run;
use crate::status::SharedStatus;
use crate::witness::Witness;
use dpwalk_core::spec::{BudgetViewName, Noise};

/// Everything a node needs, loaded and checked before any socket opens.
pub(super) struct Loaded {
    pub(super) run: Run,
    pub(super) keypair: libp2p::identity::Keypair,
    pub(super) index: usize,
    /// The run's step with its σ.
    pub(super) algorithm: Algorithm,
}

/// The run, the identity, σ (given or calibrated to the run's budget) and the node's data.
pub(super) fn load(config: &NodeConfig) -> Result<(Loaded, Dataset), NodeError> {
    let run = Run::load(&config.resolve(&config.run))?;
    let keypair = keys::load(&config.resolve(&config.identity))?;
    let peer = keypair.public().to_peer_id();
    let index = run.index_of(&peer).ok_or_else(|| NodeError::NotMember {
        peer,
        run_id: run.run_id().to_string(),
    })?;
    tracing::info!(
        run = run.run_id(),
        member = index,
        members = run.members().len(),
        %peer,
        "this node is a member of the run"
    );
    let sigma = match run.noise() {
        Noise::Sigma(sigma) => sigma,
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
                exact_gaussian_mu = cal.achieved.gaussian_mu,
                rdp_epsilon = cal.achieved.rdp_epsilon,
                order = cal.achieved.order,
                planned_contributions = run.planned_contributions(),
                unit = run.unit_label(),
                accounted_clip = run.accounted_clip(),
                view = run.budget_view().map_or("local", |v| v.name()),
                "sigma calibrated to the run's [budget]"
            );
            Budget::new(epsilon, delta).map_err(|e| budget_error(e.to_string()))?;
            cal.sigma
        }
    };
    let algorithm = run
        .algorithm_with(sigma)
        .map_err(|e| NodeError::Unsupported(e.to_string()))?;
    let mut data = config.data.load(&config.base_dir, run.seed())?.train;
    // A record-level run accounts every member with the file's `m` and `R`: a node holding
    // fewer records or a longer row refuses to start rather than under-report; a row above `R`
    // by decimal rounding only is scaled to it, so that `R` holds for what the node steps on.
    if let Some(unit) = run.record_unit() {
        let n_features = data.n_features;
        let scaled = unit
            .fit_rows(&mut data.features, n_features)
            .map_err(|source| NodeError::OutsideUnit {
                data: data_origin(config),
                source,
            })?;
        if scaled > 0 {
            tracing::info!(
                "{scaled} records of this node were above the run's feature-norm = {} by no more than decimal rounding explains: scaled to it",
                unit.feature_norm
            );
        }
    }
    let loaded = Loaded {
        run,
        keypair,
        index,
        algorithm,
    };
    Ok((loaded, data))
}

/// The node's problem on its data, checked to make a model of the run's dimension (a mismatch
/// names both, and what to change, before any socket opens).
pub(super) fn problem(
    config: &NodeConfig,
    loaded: &Loaded,
    data: Dataset,
) -> Result<Problem, NodeError> {
    let features = data.n_features;
    let problem =
        node_problem(&loaded.run, loaded.index, data).map_err(|source| NodeError::Problem {
            data: data_origin(config),
            source,
        })?;
    if problem.dim() != loaded.run.dimension() {
        let per_class = match loaded.run.loss() {
            Loss::Multinomial { classes } => {
                format!(" ({classes} classes × {features} features)")
            }
            _ => String::new(),
        };
        return Err(NodeError::Dimension {
            run_file: config.resolve(&config.run),
            run_dimension: loaded.run.dimension(),
            data: data_origin(config),
            features,
            data_dimension: problem.dim(),
            per_class,
        });
    }
    Ok(problem)
}

impl<'a> Node<'a> {
    /// Opens the node's durable state and builds its swarm (within the connection limits its
    /// descriptors allow); nothing listens yet.
    pub(super) fn new(
        config: &'a NodeConfig,
        loaded: &'a Loaded,
        problem: &'a Problem,
        step: NodeStep<'a>,
    ) -> Result<Node<'a>, NodeError> {
        let own = config
            .budget
            .map(|b| Budget::new(b.epsilon, b.delta))
            .transpose()
            .map_err(LearnerError::from)?;
        // The run's budget is the learner's to read from the run, on its view.
        let budgets: Vec<Budget> = own.into_iter().collect();
        let state_dir = config.resolve(&config.state_dir);
        let learner = Learner::open(
            &loaded.run,
            loaded.index,
            &loaded.keypair,
            problem,
            step,
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
        let run = &loaded.run;
        let relay = config.relay.then(|| {
            let bytes =
                reach::circuit_bytes(run.steps(), run.dimension(), run.canonical_toml().len());
            tracing::info!(
                circuit_bytes = bytes,
                circuit_seconds = reach::CIRCUIT_DURATION.as_secs(),
                "serving as a relay for the run's members"
            );
            reach::relay_config(run.members().len(), bytes)
        });
        let swarm = behaviour::build(
            loaded.keypair.clone(),
            config.mdns,
            !bootstrap.is_empty(),
            config.timeouts.request(),
            book.peers(),
            &limits,
            relay,
        )?;
        let circuits = reach::circuit_listen_addrs(&own_addrs(run, loaded.index), me)
            .into_iter()
            .map(|addr| Circuit {
                relay: reach::relays([&addr]).first().map(|(peer, _)| *peer),
                addr,
                listener: None,
            })
            .collect();
        // The neighbours this node dials eagerly: redialled, heard in the roll call, and kept
        // connected with those that dial it eagerly.
        let neighbours = eager_neighbours(run, loaded.index);
        Ok(Node {
            run,
            me,
            swarm,
            learner,
            config,
            state_dir,
            status: SharedStatus::default(),
            book,
            bootstrap,
            links: Links::default(),
            circuits,
            notes: HashMap::new(),
            idle: super::idle::Idle::new(eager_both_ways(run, loaded.index, &neighbours)),
            refusals: Refusals::default(),
            hello: Hello {
                run_hash: run.hash().0,
                run: run.canonical_toml(),
                your_last: None,
            },
            custody: Machine::new(
                custody::Config {
                    handoff: config.timeouts.handoff(),
                    resume: config.timeouts.resume(),
                    steps: run.steps(),
                    members: run.members().iter().map(|m| m.peer).collect(),
                    me,
                    relayed: relayed_members(run),
                    keep_path: run.budget_view() == Some(BudgetViewName::Network),
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
            gate: None,
            gate_dialled: None,
            fresh_start: None,
            witness: Witness::new(
                run.members().len(),
                neighbours.iter().filter_map(|peer| run.index_of(peer)),
            ),
            neighbours,
            greeted_on: HashSet::new(),
            parked: Vec::new(),
        })
    }

    /// Listens, bootstraps Kademlia; restarts whatever the durable state says is pending (the
    /// first turn dials the neighbours).
    pub(super) fn start(&mut self) -> Result<(), NodeError> {
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
        self.listen_on_circuits();
        if self.config.relay {
            // A relay's run-file addresses are where members dial it: the addresses it gives
            // in its reservations.
            for addr in own_addrs(self.run, self.learner.index()) {
                if !reach::is_relayed(&addr) {
                    self.swarm.add_external_address(addr);
                }
            }
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
        if s.last_seq.is_some() {
            // Restarted after the walk reached this node: its failed dials count at once.
            self.custody.reached();
        }
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
            self.wait_for_quorum(Instant::now());
        }
        Ok(())
    }
}

/// The members listed at a relayed address (custody waits for their reservations).
fn relayed_members(run: &Run) -> HashSet<PeerId> {
    run.members()
        .iter()
        .filter(|m| {
            m.addrs
                .iter()
                .filter_map(|a| a.parse::<Multiaddr>().ok())
                .any(|a| reach::is_relayed(&a))
        })
        .map(|m| m.peer)
        .collect()
}

/// Member `index`'s own run-file addresses that parse (the others are said by
/// [`address_book`](super::connections::address_book)).
fn own_addrs(run: &Run, index: usize) -> Vec<Multiaddr> {
    run.members()[index]
        .addrs
        .iter()
        .filter_map(|a| a.parse().ok())
        .collect()
}

/// Binds the status endpoint of `node.toml`, if any (warning when it is not on loopback), and
/// returns its accept loop, which never ends; without one, a future that never resolves.
pub(super) async fn status_endpoint(
    config: &NodeConfig,
    status: SharedStatus,
) -> Result<impl Future<Output = ()>, NodeError> {
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
    Ok(async {
        match endpoint {
            Some(serve) => serve.await,
            None => std::future::pending().await,
        }
    })
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
