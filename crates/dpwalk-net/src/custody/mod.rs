//! Custody of the token for one node, as a state machine without I/O: events in, actions out,
//! time passed in (DESIGN.md, "The daemon"; the rules are listed in [`crate::node`]).
//!
//! The token itself, the walk's draws and the durable copy live in [`crate::learner`]; this
//! module decides *when* the node sends, retries, re-routes or resumes, and which members the
//! walk avoids. [`crate::node`] translates swarm events into the calls below and the [`Action`]s
//! of [`Machine::poll`] into swarm calls and learner calls, and reports their results back
//! ([`Machine::handing`], [`Machine::sent`]). Nothing here reads a clock: every call that depends
//! on time takes `now`, and [`Machine::next_deadline`] says when to call [`Machine::poll`] next,
//! so the tests below drive every transition with made-up instants.
//!
//! # States of the outgoing token
//! ```text
//! stepped ─► handing to R ──Send──► in flight ──ack──► backup (until Released, or resume;
//!               (the predecessor told Holding                  Holding from R restarts the wait)
//!                every quarter hand-off)
//!               ▲  │ not verified: dial, retry      │ failure: retry R after a pause
//!               │  │ overdue (hand-off timeout)     │ refused: R down, re-route
//!               └──┴──── Reroute (a fresh draw) ◄───┘ overdue: same, unless R may hold the
//!                                                      last step (then R is waited for)
//! ```
//!
//! # Members down
//! A member is *down* from an instant on: a verified member whose connection closed, from the
//! hand-off timeout after the close (a quick restart is waited for, which keeps the walk's path);
//! a member whose dial failed, at once but only once the walk has reached this node and after its
//! first hand-off timeout (before, no token needs the member, and members started at other times
//! may not listen yet), and from the hand-off timeout after the failure for a member reached
//! through a relay (its reservation may be on its way; [`Machine::dial_failed`]);
//! a member that refused or did not take the token, at once. A member not connected stays down until it verifies again; one still connected is given
//! another chance after [`AVOID_FOR`]. Every draw of the next hop avoids members down and members
//! that run another run file. A member that verifies is up: nothing seen or heard of it before
//! counts any more ([`crate::hearsay`]).
//!
//! What the node saw itself is passed on with each token it sends ([`Machine::advice`]), and what
//! a token's sender saw is avoided here for as long as the sender said ([`Machine::heard`]): a
//! member down costs the run one hand-off timeout, not one per node (module [`crate::hearsay`]).
//!
//! # Keeping the path
//! A run with a network budget ([`Config::keep_path`]) never routes around a member: its
//! path-hidden figure (N1) mixes over the walk's law, the transition rows of the complete graph,
//! and a walk that avoids members down, re-routes a hand-off or resumes from a backup follows
//! another law, for which that figure is not proved. Its draws avoid nobody, an overdue hand-off
//! keeps waiting for its receiver (said every hand-off timeout), a refused one is tried again,
//! and a backup is never resumed: a member down stalls the walk until it is back (its durable
//! state carries the token on).

use std::collections::{HashMap, HashSet};
use std::time::{Duration, Instant};

use libp2p::PeerId;

use crate::codec::{AVOID_FOR, Avoided};
use crate::hearsay::Hearsay;

/// `member 3`, or `a non-member` for a peer that is not in the run: how logs name a peer.
pub(crate) fn member_name(index: Option<usize>) -> String {
    index.map_or_else(|| "a non-member".into(), |i| format!("member {i}"))
}

/// Pause before retrying the same receiver after a failed request.
pub const RETRY_PAUSE: Duration = Duration::from_millis(100);
/// Pause before retrying a receiver that has not verified this node yet.
pub const VERIFY_PAUSE: Duration = Duration::from_millis(20);
/// Least pause between two dials of the same token receiver that is not connected.
pub const DIAL_RECEIVER_EVERY: Duration = Duration::from_millis(500);
/// The longest pause between two [`crate::codec::Message::Holding`] to the predecessor while a
/// hand-off is pending (a quarter of the hand-off timeout when that is shorter).
pub const HOLD_EVERY_MAX: Duration = Duration::from_secs(1);

/// The run's facts custody needs.
#[derive(Debug, Clone)]
pub struct Config {
    /// How long a receiver is retried before the token is re-routed (`node.toml`'s
    /// `timeouts.handoff`).
    pub handoff: Duration,
    /// How long a backup waits for [`crate::codec::Message::Released`] before the walk resumes
    /// from it (`timeouts.resume`).
    pub resume: Duration,
    /// The run's `K`: the receiver of seq `K − 1` makes the last step.
    pub steps: u64,
    /// The run's members, in index order (for the log and the advice sent with tokens).
    pub members: Vec<PeerId>,
    /// This node.
    pub me: PeerId,
    /// Members listed at a relayed address in the run file ([`crate::reach`]): a dial to one fails
    /// while its reservation on the relay is being made, not only when it is down.
    pub relayed: HashSet<PeerId>,
    /// Keep the walk's path (a run with a network budget): never draw around a member down,
    /// re-route a hand-off or resume from a backup; wait for the receiver instead (see the
    /// module docs, "Keeping the path").
    pub keep_path: bool,
}

/// What the node does for custody.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Action {
    /// Dial this member (the token's receiver, not connected).
    Dial(PeerId),
    /// Send the outgoing token to `to`, then report the request with [`Machine::sent`].
    Send {
        /// The receiver.
        to: PeerId,
        /// The token's seq.
        seq: u64,
    },
    /// Redraw the receiver of the outgoing token avoiding these members
    /// ([`crate::learner::Learner::reroute`]), then report it with [`Machine::handing`].
    Reroute {
        /// Members down or running another run file.
        avoid: HashSet<PeerId>,
    },
    /// The backup's receiver is presumed gone: resume the walk from the backup
    /// ([`crate::learner::Learner::resume`]), then report it with [`Machine::handing`].
    Resume {
        /// The receiver presumed gone.
        gone: PeerId,
    },
}

/// Why the token could not be handed to a member (said once per member and reason).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Unreachable {
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

/// The attempt to hand over the outgoing token.
#[derive(Debug, Clone, Copy)]
struct Attempt<Id> {
    seq: u64,
    to: PeerId,
    since: Instant,
    next_try: Instant,
    /// Whether the token was sent to `to`: from then on `to` may hold it.
    sent: bool,
    /// The request in flight, if any.
    inflight: Option<Id>,
    /// Waited for past its hand-off timeout, in a run that keeps its path: tried at the pace of
    /// [`DIAL_RECEIVER_EVERY`], not [`VERIFY_PAUSE`] (a walk stalled for hours wakes twice a
    /// second, not fifty times).
    stalled: bool,
    /// When the predecessor is next told that this node still holds the walk
    /// ([`Machine::hold_due`]).
    hold_due: Instant,
}

/// The token handed on and acknowledged, kept until its receiver says it was passed on.
#[derive(Debug, Clone, Copy)]
struct Backup {
    seq: u64,
    to: PeerId,
    /// Since when the release is awaited; `None` once the wait is over without a resume (the
    /// last hop, which is never resumed).
    since: Option<Instant>,
}

/// The custody of the token at one node (see the module docs). `Id` names a request in flight
/// (the node's request ids).
#[derive(Debug)]
pub struct Machine<Id> {
    config: Config,
    index: HashMap<PeerId, usize>,
    started: Instant,
    /// Members that showed they run our run file (see [`Machine::verified`]).
    verified: HashSet<PeerId>,
    /// Members that run another run file.
    mismatched: HashSet<PeerId>,
    /// Members known to be down, and from when (see [`Machine::is_down`]).
    down: HashMap<PeerId, Instant>,
    /// Members whose connections close because one end keeps them no longer, and since when
    /// ([`Machine::parting`]): their close is not a failure.
    parting: HashMap<PeerId, Instant>,
    /// What this node saw of members down, and what tokens' senders told it.
    hearsay: Hearsay,
    attempt: Option<Attempt<Id>>,
    backup: Option<Backup>,
    /// The outgoing token the durable state held at start: an earlier process may have sent it,
    /// so its receiver may hold it.
    resumed: Option<(u64, PeerId)>,
    /// Members the token could not be handed to, and why: each reason is logged once (at WARN),
    /// until the member verifies again.
    unreachable: HashMap<PeerId, Unreachable>,
    /// When a token receiver that is not connected was last dialled.
    dialed: HashMap<PeerId, Instant>,
    /// Hand-offs that timed out in a row since the last acknowledged token.
    failed_handoffs: u32,
    /// Hand-offs given up after waiting.
    handoff_timeouts: u64,
    /// Whether the walk has reached this node (it stepped a token, or restarted holding one):
    /// failed dials count from then on ([`Machine::dial_failed`]).
    reached: bool,
}

impl<Id: Copy + Eq> Machine<Id> {
    /// Custody of a node started at `now`, holding nothing.
    pub fn new(config: Config, now: Instant) -> Self {
        let index = config
            .members
            .iter()
            .enumerate()
            .map(|(i, p)| (*p, i))
            .collect();
        Machine {
            config,
            index,
            started: now,
            verified: HashSet::new(),
            mismatched: HashSet::new(),
            down: HashMap::new(),
            parting: HashMap::new(),
            hearsay: Hearsay::default(),
            attempt: None,
            backup: None,
            resumed: None,
            unreachable: HashMap::new(),
            dialed: HashMap::new(),
            failed_handoffs: 0,
            handoff_timeouts: 0,
            reached: false,
        }
    }

    /// `member 3`, or `a non-member`.
    fn name(&self, peer: &PeerId) -> String {
        member_name(self.index.get(peer).copied())
    }

    /// The durable state held outgoing token `seq` for `to` at start: it is handed over again,
    /// and `to` may hold it already (an earlier process may have sent it).
    pub fn restarted(&mut self, seq: u64, to: PeerId, now: Instant) {
        self.reached();
        self.resumed = Some((seq, to));
        self.handing(Some((seq, to)), now);
    }

    /// The node stepped a token: `next` is the outgoing token `(seq, receiver)` drawn by the
    /// walk, `None` after the last step. Any backup is gone (the walk came back). A receiver
    /// known down is replaced at once by a fresh draw.
    pub fn stepped(&mut self, next: Option<(u64, PeerId)>, now: Instant) -> Option<Action> {
        self.reached();
        self.backup = None;
        self.handing(next, now);
        let (_, to) = next?;
        (self.is_down(&to, now) && !self.config.keep_path).then(|| Action::Reroute {
            avoid: self.avoid(now),
        })
    }

    /// The walk has reached this node: from now on a failed dial says a member is down.
    pub fn reached(&mut self) {
        self.reached = true;
    }

    /// The outgoing token is `next` (after a step, a re-route or a resume; `None`: nothing to
    /// hand on): a new attempt starts, nothing in flight.
    pub fn handing(&mut self, next: Option<(u64, PeerId)>, now: Instant) {
        self.attempt = next.map(|(seq, to)| Attempt {
            seq,
            to,
            since: now,
            next_try: now,
            sent: false,
            inflight: None,
            stalled: false,
            hold_due: now + self.hold_every(),
        });
    }

    /// How often the predecessor is told, while a hand-off is pending, that this node holds the
    /// walk: often enough that a predecessor whose resume timeout exceeds its hand-off timeout
    /// (as `node.toml` requires) hears it at least twice before it would resume.
    fn hold_every(&self) -> Duration {
        (self.config.handoff / 4).min(HOLD_EVERY_MAX)
    }

    /// The seq of the token this node took, when its predecessor is due word that the token made
    /// from it is still being handed on ([`crate::codec::Message::Holding`]); `None` otherwise
    /// (no hand-off pending, not due yet, or this node started the walk: no predecessor).
    pub fn hold_due(&mut self, now: Instant) -> Option<u64> {
        let every = self.hold_every();
        let a = self.attempt.as_mut()?;
        if a.seq < 2 || now < a.hold_due {
            return None;
        }
        a.hold_due = now + every;
        Some(a.seq - 1)
    }

    /// `peer`, which took our token `seq`, still holds the walk and is handing it on: the backup
    /// of `seq` waits on, its resume timeout counted from now.
    pub fn holding(&mut self, peer: &PeerId, seq: u64, now: Instant) {
        if let Some(b) = self.backup.as_mut()
            && b.seq == seq
            && b.to == *peer
            && b.since.is_some()
        {
            b.since = Some(now);
        }
    }

    /// The node holds the final model: nothing to hand on, no backup to resume.
    pub fn finished(&mut self) {
        self.attempt = None;
        self.backup = None;
    }

    /// The token went to its receiver as request `id` (after [`Action::Send`]).
    pub fn sent(&mut self, id: Id) {
        if let Some(a) = self.attempt.as_mut() {
            a.inflight = Some(id);
        }
    }

    /// Request `id` was answered: whether it was the token's (no longer in flight).
    pub fn answered(&mut self, id: Id) -> bool {
        match self.attempt.as_mut() {
            Some(a) if a.inflight == Some(id) => {
                a.inflight = None;
                true
            }
            _ => false,
        }
    }

    /// Request `id` failed (no connection, timeout of the request): if it was the token's, the
    /// same receiver is retried after [`RETRY_PAUSE`], within the hand-off timeout.
    pub fn failed(&mut self, id: Id, now: Instant) -> bool {
        let token = self.answered(id);
        if token && let Some(a) = self.attempt.as_mut() {
            a.next_try = now + RETRY_PAUSE;
        }
        token
    }

    /// The receiver acknowledged token `seq` (an answer to the token's request): it becomes the
    /// backup until released.
    pub fn acknowledged(&mut self, seq: u64, now: Instant) {
        self.failed_handoffs = 0;
        match self.attempt.take() {
            Some(a) if a.seq == seq => {
                self.backup = Some(Backup {
                    seq,
                    to: a.to,
                    since: Some(now),
                });
            }
            // An answer for another token than the one held: hand the held one over anew.
            other => self.handing(other.map(|a| (a.seq, a.to)), now),
        }
    }

    /// The receiver refused token `seq` as one the walk has passed: it is dropped.
    pub fn superseded(&mut self, seq: u64, now: Instant) {
        match self.attempt.take() {
            Some(a) if a.seq == seq => {}
            other => self.handing(other.map(|a| (a.seq, a.to)), now),
        }
    }

    /// The receiver has not verified this node yet: retried after [`VERIFY_PAUSE`] (the node says
    /// hello again).
    pub fn not_verified(&mut self, now: Instant) {
        if let Some(a) = self.attempt.as_mut() {
            a.next_try = now + VERIFY_PAUSE;
        }
    }

    /// The token's receiver `peer` refused it for good (leaving, finished, or a defect): it is
    /// down, and the token goes elsewhere; where the path is kept, the same receiver is tried
    /// again after [`RETRY_PAUSE`] (`None`).
    pub fn refused(&mut self, peer: PeerId, now: Instant) -> Option<Action> {
        self.down.insert(peer, now);
        self.hearsay.observe(peer, now);
        if self.config.keep_path {
            if let Some(a) = self.attempt.as_mut() {
                a.next_try = now + RETRY_PAUSE;
            }
            return None;
        }
        Some(Action::Reroute {
            avoid: self.avoid(now),
        })
    }

    /// The receiver of the backup `seq` passed the token on: the backup is dropped.
    pub fn released(&mut self, seq: u64) {
        if self.backup.is_some_and(|b| b.seq == seq) {
            self.backup = None;
        }
    }

    /// `peer` runs our run file: tokens may go to it, and it is no longer down. Returns whether
    /// it had been said unreachable (the node says it is back).
    pub fn verified(&mut self, peer: PeerId, now: Instant) -> bool {
        let avoided = self.is_down(&peer, now) && !self.config.keep_path;
        if let Some(a) = self.attempt.as_mut()
            && a.to == peer
            && a.inflight.is_none()
        {
            // A hand-off waiting for this receiver's hello goes now, not at its next pause: a
            // first contact with a member cost the pause, about 20 ms, on every such hop.
            a.next_try = a.next_try.min(now);
        }
        self.verified.insert(peer);
        self.mismatched.remove(&peer);
        self.down.remove(&peer);
        self.hearsay.verified(peer, now);
        self.unreachable.remove(&peer).is_some() || avoided
    }

    /// `peer` runs another run file: no token goes to it. Returns whether this is news (the node
    /// says it once).
    pub fn mismatched(&mut self, peer: PeerId) -> bool {
        self.verified.remove(&peer);
        self.mismatched.insert(peer)
    }

    /// `peer` and we run the same run file, before [`Machine::verified`]: no longer mismatched.
    pub fn matched(&mut self, peer: &PeerId) {
        self.mismatched.remove(peer);
    }

    /// The connections with `peer` are about to close on purpose (at `now`): this node, or
    /// `peer`, keeps a bounded set of connections and these are idle
    /// ([`crate::codec::Message::Parting`]). A close within the resume timeout is then not a
    /// failure: `peer` is not counted down for it (it is dialled again when a token or a message
    /// needs it, and counted down if that dial fails). Both ends may part at once, and a parting
    /// may be called off (the peer was used again); the mark is used by the next close or
    /// expires, so that it needs no cancelling and no race of the two ends undoes it.
    pub fn parting(&mut self, peer: PeerId, now: Instant) {
        self.parting.insert(peer, now);
    }

    /// The last connection to `peer` closed at `now`: a verified member is down from the
    /// hand-off timeout on, unless it verifies again first, or unless the close follows a
    /// parting ([`Machine::parting`]).
    pub fn closed(&mut self, peer: PeerId, now: Instant) {
        if self
            .parting
            .remove(&peer)
            .is_some_and(|at| now.saturating_duration_since(at) < self.config.resume)
        {
            tracing::debug!("{}'s idle connection closed", self.name(&peer));
            self.verified.remove(&peer);
            self.mismatched.remove(&peer);
            return;
        }
        if self.verified.remove(&peer) && !self.down.contains_key(&peer) {
            self.down.insert(peer, now + self.config.handoff);
            if self.config.keep_path {
                tracing::info!(
                    "{}'s connection closed: a token drawn for it waits for it to come back",
                    self.name(&peer)
                );
            } else {
                tracing::info!(
                    "{}'s connection closed: it is avoided from {:.1} s from now unless it reconnects first",
                    self.name(&peer),
                    self.config.handoff.as_secs_f64()
                );
            }
        }
        self.mismatched.remove(&peer);
    }

    /// A dial to member `peer` failed at `now`. Before the walk has reached this node, and within
    /// its first hand-off timeout, nothing: no token needs the member yet, and members started at
    /// another time may not listen yet (a member started 5 s late must not be advised down for
    /// the dials made before it started). After, a member reached through a relay is down from the
    /// hand-off timeout on, unless it verifies first (its reservation on the relay may be on its
    /// way: made at its start and again whenever it ends, retried every 2 s until the relay takes
    /// it), as after a closed connection; any other member is down at once. A verified member is
    /// connected: a dial that failed beside that connection (a hole punch, an address that does
    /// not answer) says nothing about whether it is up.
    pub fn dial_failed(&mut self, peer: PeerId, now: Instant) {
        if !self.reached
            || now.duration_since(self.started) <= self.config.handoff
            || self.verified.contains(&peer)
        {
            return;
        }
        if let Some(&from) = self.down.get(&peer) {
            // Already down: a new failure refreshes the advice. But a member whose connection
            // closed (or whose relayed dial failed) less than a hand-off timeout ago is waited
            // for: its restart may be under way, and advising it down now would send the walk
            // around a member that is back within the timeout (issue 27: the walk left the
            // simulator's path after holder kills that cost no hand-off timeout).
            if now >= from && !self.config.relayed.contains(&peer) {
                self.hearsay.observe(peer, now);
            }
            return;
        }
        let after = if self.config.relayed.contains(&peer) {
            // Its reservation on the relay may be on its way.
            self.config.handoff
        } else {
            self.hearsay.observe(peer, now);
            Duration::ZERO
        };
        self.down.insert(peer, now + after);
        if !self.config.keep_path {
            tracing::info!(
                "a dial to {} failed: it is avoided from {:.1} s from now until it connects and verifies, and the tokens sent meanwhile advise the others to avoid it",
                self.name(&peer),
                after.as_secs_f64()
            );
        }
    }

    /// Whether `peer` runs our run file.
    pub fn is_verified(&self, peer: &PeerId) -> bool {
        self.verified.contains(peer)
    }

    /// Members that run our run file.
    pub fn verified_peers(&self) -> &HashSet<PeerId> {
        &self.verified
    }

    /// Members that run another run file.
    pub fn mismatched_peers(&self) -> &HashSet<PeerId> {
        &self.mismatched
    }

    /// Hand-offs given up after waiting for the receiver.
    pub fn handoff_timeouts(&self) -> u64 {
        self.handoff_timeouts
    }

    /// Whether `peer` is known down at `now`, from this node's own evidence or a token's sender's
    /// (see the module docs).
    pub fn is_down(&self, peer: &PeerId, now: Instant) -> bool {
        let seen = self.down.get(peer).is_some_and(|&since| {
            now >= since && (!self.verified.contains(peer) || now.duration_since(since) < AVOID_FOR)
        });
        seen || self.hearsay.avoids(peer, now)
    }

    /// The members a draw of the next hop avoids at `now` (none where the path is kept).
    pub fn avoid(&self, now: Instant) -> HashSet<PeerId> {
        if self.config.keep_path {
            return HashSet::new();
        }
        self.down
            .keys()
            .filter(|p| self.is_down(p, now))
            .chain(self.hearsay.avoided(now))
            .chain(self.mismatched.iter())
            .copied()
            .collect()
    }

    /// A token came with its sender's advice `avoid` (validated by
    /// [`crate::codec::validate_advice`]): those members are avoided here for as long as it says.
    /// Advice about this node itself is ignored.
    /// A member that starts being avoided on `from`'s word is said once, at INFO (who, for how
    /// long, on whose word); advice resting on an observation older than the member's last
    /// verification here is ignored ([`crate::hearsay`]).
    pub fn heard(&mut self, from: &PeerId, avoid: &[Avoided], now: Instant) {
        for a in avoid {
            let Some(&peer) = self.config.members.get(a.member as usize) else {
                continue;
            };
            if peer != self.config.me {
                let remaining = Duration::from_millis(u64::from(a.for_ms));
                if self.hearsay.hear(peer, remaining, now) && !self.config.keep_path {
                    tracing::info!(
                        "avoiding {} for {:.1} s: {} advised it (it failed to take a token or a dial {:.1} s ago, as {} saw or heard)",
                        self.name(&peer),
                        remaining.min(AVOID_FOR).as_secs_f64(),
                        self.name(from),
                        AVOID_FOR.saturating_sub(remaining).as_secs_f64(),
                        self.name(from),
                    );
                }
            }
        }
    }

    /// The advice to send with a token for `to` at `now` (see [`crate::hearsay`]).
    pub fn advice(&self, to: &PeerId, now: Instant) -> Vec<Avoided> {
        self.hearsay.advice(&self.config.members, to, now)
    }

    /// Whether token `seq` is the last hop's (its receiver makes step `K`).
    fn is_last_hop(&self, seq: u64) -> bool {
        seq + 1 >= self.config.steps
    }

    /// Whether the receiver of `a` may hold its token: it was sent (by this process, or by the
    /// one before a restart).
    fn may_hold(&self, a: &Attempt<Id>) -> bool {
        a.sent || self.resumed == Some((a.seq, a.to))
    }

    /// How long `a`'s receiver is waited for at `now`. A member with another run file never
    /// takes a token, and one known down that was never sent it cannot hold it: no wait. Any
    /// other receiver gets the hand-off timeout (it may be restarting with the token taken).
    /// After hand-offs that failed in a row (every neighbour down, or refusing our run file) the
    /// patience doubles, up to 8 times the timeout, rather than re-route every few seconds.
    fn patience(&self, a: &Attempt<Id>, now: Instant) -> Duration {
        let other_run = self.mismatched.contains(&a.to);
        if (other_run || !self.may_hold(a) && self.is_down(&a.to, now))
            && self.failed_handoffs == 0
            && !self.config.keep_path
        {
            Duration::ZERO
        } else {
            self.config.handoff * (1 << self.failed_handoffs.min(3))
        }
    }

    /// What to do at `now`; `connected` says whether a member has a connection. Performs the
    /// transitions that are due: resume a backup whose receiver was not heard of, re-route an
    /// overdue hand-off, send or dial the receiver.
    pub fn poll(&mut self, now: Instant, connected: impl Fn(&PeerId) -> bool) -> Vec<Action> {
        self.hearsay.prune(now);
        if let Some(action) = self.poll_backup(now) {
            return vec![action];
        }
        let Some(attempt) = self.attempt else {
            return Vec::new();
        };
        let patience = self.patience(&attempt, now);
        let overdue = now.saturating_duration_since(attempt.since) >= patience;
        let last_hop = self.may_hold(&attempt) && self.is_last_hop(attempt.seq);
        if overdue && (last_hop || self.config.keep_path) {
            // The receiver may have made the last step: a second maker would make a second
            // final model. Or the run keeps its path. Keep trying this one (it acknowledges
            // again if it took it).
            if last_hop {
                tracing::warn!(
                    seq = attempt.seq,
                    "{} has not acknowledged the token of the last step; it may have made it, so it is waited for rather than replaced",
                    self.name(&attempt.to)
                );
            } else {
                tracing::warn!(
                    seq = attempt.seq,
                    "{} has not taken the token; this run has a network budget, whose path-hidden figure holds only for the walk's own draws, so it is waited for rather than routed around (start it again if it is down)",
                    self.name(&attempt.to)
                );
            }
            if let Some(a) = self.attempt.as_mut() {
                a.since = now;
                a.stalled = self.config.keep_path;
            }
        } else if overdue {
            return vec![self.give_up(attempt, patience, now, connected)];
        }
        let Some(a) = self.attempt.as_mut() else {
            return Vec::new();
        };
        if a.inflight.is_some() || now < a.next_try {
            return Vec::new();
        }
        if self.verified.contains(&a.to) {
            a.sent = true;
            return vec![Action::Send {
                to: a.to,
                seq: a.seq,
            }];
        }
        a.next_try = now
            + if a.stalled {
                DIAL_RECEIVER_EVERY
            } else {
                VERIFY_PAUSE
            };
        let to = a.to;
        let recently = self
            .dialed
            .get(&to)
            .is_some_and(|t| now.saturating_duration_since(*t) < DIAL_RECEIVER_EVERY);
        if connected(&to) || recently {
            return Vec::new();
        }
        self.dialed.insert(to, now);
        vec![Action::Dial(to)]
    }

    /// The backup's release is overdue: resume from it, unless it is the last hop's.
    fn poll_backup(&mut self, now: Instant) -> Option<Action> {
        let b = self.backup?;
        let since = b.since?;
        if self.attempt.is_some() || now.saturating_duration_since(since) < self.config.resume {
            return None;
        }
        let who = self.name(&b.to);
        if self.is_last_hop(b.seq) {
            // It made the last step: resuming would make a second final model.
            tracing::warn!(
                "no final model yet from {who}, which took the last step from us: waiting for it to publish (a restart of it publishes the model it made)"
            );
            self.backup = Some(Backup { since: None, ..b });
            return None;
        }
        if self.config.keep_path {
            tracing::warn!(
                "no news of the token since we handed it to {who}; this run has a network budget, so the walk waits for it rather than resume from our copy (a restart of it carries the token on)"
            );
            self.backup = Some(Backup { since: None, ..b });
            return None;
        }
        tracing::warn!(
            "no news of the token since we handed it to {who}: resuming the walk from our copy"
        );
        self.backup = None;
        self.down.insert(b.to, now);
        self.hearsay.observe(b.to, now);
        Some(Action::Resume { gone: b.to })
    }

    /// The hand-off `a` is overdue: its receiver is down, the token goes elsewhere (a request in
    /// flight is abandoned; a late answer is ignored).
    fn give_up(
        &mut self,
        a: Attempt<Id>,
        patience: Duration,
        now: Instant,
        connected: impl Fn(&PeerId) -> bool,
    ) -> Action {
        if let Some(attempt) = self.attempt.as_mut() {
            attempt.inflight = None;
        }
        if patience > Duration::ZERO {
            self.handoff_timeouts += 1;
        }
        self.failed_handoffs = self.failed_handoffs.saturating_add(1);
        let why = if self.mismatched.contains(&a.to) {
            Unreachable::OtherRun
        } else if !connected(&a.to) {
            Unreachable::NotConnected
        } else if !self.verified.contains(&a.to) {
            Unreachable::NotVerified
        } else {
            Unreachable::NoAnswer
        };
        let who = self.name(&a.to);
        if self.unreachable.insert(a.to, why) == Some(why) {
            tracing::debug!(seq = a.seq, "{who} {why}: re-routing the token");
        } else {
            tracing::warn!(
                seq = a.seq,
                "{who} {why}: re-routing the token (said once; later re-routes around it are logged at debug level)"
            );
        }
        self.down.insert(a.to, now);
        self.hearsay.observe(a.to, now);
        Action::Reroute {
            avoid: self.avoid(now),
        }
    }

    /// When [`Machine::poll`] has something to do next, or when a member's state changes (it
    /// becomes down, or is given another chance), at the latest; `None`: only an event changes
    /// anything.
    pub fn next_deadline(&self, now: Instant) -> Option<Instant> {
        let attempt = self.attempt.iter().flat_map(|a| {
            let overdue = a.since + self.patience(a, now);
            let next_try = a.inflight.is_none().then_some(a.next_try);
            let hold = (a.seq >= 2).then_some(a.hold_due);
            [Some(overdue), next_try, hold]
        });
        let backup = self
            .backup
            .filter(|_| self.attempt.is_none())
            .and_then(|b| b.since)
            .map(|since| since + self.config.resume);
        let down = self
            .down
            .values()
            .flat_map(|&since| [since, since + AVOID_FOR])
            .filter(|&t| t > now)
            .map(Some);
        attempt.chain([backup]).chain(down).flatten().min()
    }
}

#[cfg(test)]
mod tests;
