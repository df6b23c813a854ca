//! The daemon: one node of a run, from `node.toml` to `final_model.json`.
//!
//! [`run`] loads the run file, the identity and the node's data, opens its durable state
//! ([`crate::learner`]), starts the swarm ([`crate::behaviour`]) and the status endpoint, and runs
//! the event loop until the final model is written (or the node is told to stop).
//!
//! # Layout
//! This module is the event loop: it turns swarm events into custody events and custody's
//! actions into swarm calls. Around it: `setup` (what is loaded and checked before any socket
//! opens, the loop's state built from it, listening and resuming), `error` ([`NodeError`]),
//! `connections` (which members are dialled, and when: a few eagerly, the others on demand),
//! `messages` (answers to peers' messages and to ours), `publishing` (the final model), `reach`
//! (members behind NAT: relayed and hole-punched connections, reservations), `report` (status
//! and the log of members awaited), `start` (the starter waits for the run's quorum before step
//! 0).
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
//!   `resume` ms, the receiver is presumed gone and the backup resumes the walk elsewhere. A
//!   receiver still handing the token on says so ([`Message::Holding`], every quarter of a
//!   hand-off timeout), which restarts that wait: a holder alive and waiting for a slow
//!   receiver (the maker of the last step stalled or restarting included) is never forked.
//! - Members known to be down (their connection closed, a dial failed, or a hand-off to them
//!   timed out) are avoided by every draw of the next hop, not only by re-routes, until they
//!   verify again. Each token carries its sender's advice about members down
//!   ([`crate::hearsay`]), which its receiver avoids too for as long as it says: one member down
//!   costs the run about one hand-off timeout, not one per node nor one per draw. The next hop
//!   is then uniform over the neighbours not known down; the figures a node prints are of the
//!   local view, which does not depend on the walk's path (README, "Measuring privacy").
//! - The last step is never made twice by this node's doing: once the token of step `K − 1`
//!   may have reached its receiver, that receiver is waited for, not replaced, and a backup of
//!   that token is never resumed (see [`crate::publish`]).
//! - A token or a final model is taken only from a member that showed, by a hello or a welcome
//!   on the same connection, that it runs our run file: a second process with a member's key
//!   is not that member until it shows its run file on its own connection. One that comes
//!   before the hello on its connection waits for it, briefly (`node::parked`).
//! - Duplicates are suppressed by `(run_id, seq)`: a token with the seq this node last handled is
//!   acknowledged again without a step, an older one is refused as a replay, which tells its sender
//!   the walk has passed it.
//! - At `seq = K` the holder seals and publishes the final model ([`crate::publish`]); each member
//!   that receives it from a verified member, with a seal that verifies, writes
//!   `final_model.json`.
//! - SIGINT/SIGTERM: new tokens are refused (senders re-route), the outgoing token is handed on,
//!   then the node exits.

mod connections;
mod error;
mod idle;
mod messages;
mod parked;
mod publishing;
mod reach;
mod report;
mod setup;
mod start;

use std::collections::{HashMap, HashSet, VecDeque};
use std::path::PathBuf;
use std::time::{Duration, Instant};

use dpwalk_core::step::Algorithm;
use futures::StreamExt;
use libp2p::request_response::OutboundRequestId;
use libp2p::swarm::{ConnectionId, DialError, ListenError, SwarmEvent};
use libp2p::{Multiaddr, PeerId, Swarm, allow_block_list, identify, kad, mdns};

use connections::REDIAL_EVERY;
pub use error::NodeError;
use setup::load;

use crate::addresses::AddressBook;
use crate::behaviour::{Behaviour, BehaviourEvent};
use crate::codec::{Hello, Message};
use crate::config::NodeConfig;
use crate::custody::{Action, Machine, member_name};
use crate::learner::{Learner, NodeStep, Outcome};
use crate::limits::{Refusals, Refused};
use crate::publish::Publish;
use crate::reach::Links;
use crate::run::Run;
use crate::status::SharedStatus;
use crate::witness::Witness;

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
    /// Members whose idle connections this node closed ([`crate::config::Timeouts::idle`]).
    pub idle_closed: u64,
}

/// Runs a node until the final model is written or `stop` resolves (then hands the token on
/// first). The future borrows nothing: block on it from the binary.
pub async fn run(
    config: NodeConfig,
    stop: impl Future<Output = ()>,
) -> Result<NodeReport, NodeError> {
    let (loaded, data) = load(&config)?;
    let problem = setup::problem(&config, &loaded, data)?;
    // The ADMM step's local prox, built once here (it may factor the node's data) and borrowed
    // by the learner; DP-SGD has none.
    let prox;
    let step = match loaded.algorithm {
        Algorithm::Admm(params) => {
            prox = problem
                .local_prox(params.gamma())
                .map_err(|source| NodeError::Problem {
                    data: setup::data_origin(&config),
                    source,
                })?;
            NodeStep::Admm {
                prox: &prox,
                params,
            }
        }
        Algorithm::Sgd(params) => NodeStep::Sgd(params),
    };
    let mut node = Node::new(&config, &loaded, &problem, step)?;
    node.start()?;
    let serve = setup::status_endpoint(&config, node.status.clone()).await?;
    tokio::select! {
        result = node.event_loop(stop) => result,
        () = serve => unreachable_serve(),
    }
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
    /// How each open connection was made (direct, relayed, hole-punched).
    links: Links,
    /// The relayed addresses this node listens on (its own run-file addresses through a relay).
    circuits: Vec<reach::Circuit>,
    /// Hellos and releases sent and not answered yet ([`Node::resend_note`]).
    notes: HashMap<OutboundRequestId, (PeerId, Message)>,
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
    /// Since when this node, the walk's starter, waits for the quorum (`node::start`).
    gate: Option<Instant>,
    /// When the starter last dialled the members it waits for.
    gate_dialled: Option<Instant>,
    /// The first token this node hands on after starting the walk from an empty state (its seq
    /// and first receiver), until someone takes it: that receiver refusing it as already seen
    /// means the walk had gone on before, so the state was lost (`NodeError::StateLost`). Only
    /// the first receiver counts: after a re-route, another member may have seen later seqs of
    /// this very walk (the first receiver took the token, but its acknowledgement was late).
    fresh_start: Option<(u64, PeerId)>,
    /// What this node saw of each member's steps, and the roll call before its first step here.
    witness: Witness,
    /// The open connections that carried the peer's hello or welcome: a token or a final model
    /// is taken only on one of them (verification per connection, not per key).
    greeted_on: HashSet<ConnectionId>,
    /// Requests that came before the hello on their connection ([`parked`]).
    parked: Vec<parked::Parked>,
    /// When each peer was last used, for the bounded set of connections ([`idle`]).
    idle: idle::Idle<OutboundRequestId>,
}

impl Node<'_> {
    /// Our hello to `peer`, with the last step we saw it make ([`Witness::told`]).
    fn hello(&self, peer: &PeerId) -> Hello {
        Hello {
            your_last: self.member_index(peer).and_then(|i| self.witness.told(i)),
            ..self.hello.clone()
        }
    }

    fn member_index(&self, peer: &PeerId) -> Option<usize> {
        self.run.index_of(peer)
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
            self.expire_parked();
            self.redial();
            self.open_gate()?;
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
            self.gate_deadline(),
            self.parked_deadline(),
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
            tracing::warn!(
                error = &e as &dyn std::error::Error,
                "could not record the model of an evaluation point; the swarm's metrics will lack it"
            );
        }
    }

    /// Whether the node may exit now.
    fn done(&self) -> Option<NodeReport> {
        let report = || NodeReport {
            finished: self.learner.state().final_model.is_some(),
            contributions: self.learner.state().contributions,
            handoff_timeouts: self.custody.handoff_timeouts(),
            idle_closed: self.idle.closed(),
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
                connection_id,
                endpoint,
                num_established,
                ..
            } => {
                self.connected(peer_id, connection_id, &endpoint);
                self.idle.touch(peer_id, Instant::now());
                if self.member_index(&peer_id).is_some() {
                    tracing::debug!(peer = %peer_id, "connected to a member: sending our run");
                    // On each connection, the new one included: messages are taken only on a
                    // connection that carried a hello.
                    self.greet(&peer_id);
                    if num_established.get() == 1 {
                        // A member that was away when the final model was published gets it now.
                        self.publish_to(peer_id);
                    }
                }
            }
            SwarmEvent::ConnectionClosed {
                peer_id,
                connection_id,
                num_established,
                ..
            } => {
                self.links.closed(connection_id);
                self.greeted_on.remove(&connection_id);
                self.forget_parked(connection_id);
                if num_established == 0 {
                    self.custody.closed(peer_id, Instant::now());
                    self.idle.forget(&peer_id);
                }
            }
            SwarmEvent::ListenerClosed {
                listener_id,
                reason,
                ..
            } => self.listener_closed(listener_id, reason),
            SwarmEvent::ExternalAddrConfirmed { address } => {
                tracing::info!(%address, "external address confirmed");
            }
            SwarmEvent::Behaviour(BehaviourEvent::Dcutr(event)) => self.on_dcutr(event),
            SwarmEvent::Behaviour(BehaviourEvent::RelayClient(event)) => {
                self.on_relay_client(event);
            }
            SwarmEvent::Behaviour(BehaviourEvent::Relay(event)) => self.on_relay(event),
            SwarmEvent::Behaviour(BehaviourEvent::Autonat(event)) => self.on_autonat(event),
            SwarmEvent::OutgoingConnectionError {
                peer_id: Some(peer),
                error,
                ..
            } if self.member_index(&peer).is_some() => {
                tracing::trace!(%peer, %error, "a dial to a member failed");
                self.custody.dial_failed(peer, Instant::now());
                if let Some(i) = self.member_index(&peer) {
                    self.witness.excuse(i);
                }
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

    /// Performs what custody says is due (see [`CUSTODY_ROUNDS`]).
    fn drive_custody(&mut self) -> Result<(), NodeError> {
        if let Some(seq) = self.custody.hold_due(Instant::now())
            && let Some(predecessor) = self.learner.state().predecessor
        {
            let holding = Message::Holding {
                run_id: self.run.run_id().to_string(),
                seq,
            };
            self.send(&predecessor, holding);
        }
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
                        let avoid = self.custody.advice(&to, now);
                        let id = self.send(
                            &to,
                            Message::Token {
                                token: c.token,
                                avoid,
                            },
                        );
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
}
