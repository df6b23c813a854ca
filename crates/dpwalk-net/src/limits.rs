//! What a node lets in, and how many descriptors it may spend on connections.
//!
//! # Who may connect
//! Only the run's members and the node's configured bootstrap peers (see
//! [`crate::addresses::AddressBook`]). Any other peer is disconnected as soon as Noise has proven
//! its PeerId, before it can open a single stream (libp2p's `allow_block_list`): it cannot send a
//! hello, a token or a request of any other protocol (identify, Kademlia, ping). Each such peer is
//! logged once at debug level, and a summary of the refusals at WARN, at most every
//! [`SUMMARY_EVERY`] ([`Refusals`]).
//!
//! # How many connections
//! Sized from the number `A` of peers allowed in (members but this node, plus bootstrap peers),
//! by [`Limits::for_peers`] (libp2p's `connection_limits`):
//! - per peer [`PER_PEER`]: one each way when two members dial each other at the same moment,
//!   plus one to a member that restarted before its old connection was seen closed, plus one
//!   relayed connection still open while a direct one replaces it, or an AutoNAT dial-back
//!   ([`crate::reach`]);
//! - established in total `2·A + SLACK`: every allowed peer with the two connections of a
//!   simultaneous dial, and [`SLACK`] for reconnections overlapping closes;
//! - pending incoming (TCP accepted, handshake not done) `A + SLACK`: every allowed peer
//!   dialling at once, as when all members start together; a flood of handshakes beyond that is
//!   dropped before it costs more than a moment's descriptor (members keep dialling out);
//! - pending outgoing `A + SLACK`.
//!
//! # How many stay open
//! The limits above are hard: libp2p refuses a connection beyond them. They must admit the
//! moments when every member connects at once (the start, the final model's publication to
//! every member). In between, a node keeps a bounded set open ([`crate::node`]'s idle
//! connections): its eager neighbours both ways (at most 2 × 16), the token's peers, and the
//! members it used within `timeouts.idle` of `node.toml` ([`crate::config::Timeouts::idle`]);
//! above [`KEPT_PEERS`] connected peers, the least recently used idle for [`MIN_IDLE`] are
//! closed. Why these:
//! - [`KEPT_PEERS`] = 64: the 32 eager peers of a dense graph plus as many recent ones. A peer
//!   costs one or two descriptors (a connection each way when both dialled) and about 200 KB
//!   (Noise and Yamux buffers, identify, ping: 50 MB for 255 peers, measured); 64 peers are
//!   about 13 MB, whatever the number of members. Peers used within [`MIN_IDLE`] may take a node
//!   past the bound for a moment, so it is not a hard cap: measured with 256 members on the
//!   complete graph, a node held 68 sockets on average (85 at most) at the end of a 20,000-hop
//!   walk, against 141 (277) before the bound (BENCHMARKS.md).
//! - `idle` = 30 s by default: on a dense graph a node hands the token to a given member about
//!   once every `n` of its own visits, so a connection idle that long is unlikely to be used
//!   again soon, and dialling it again costs its hop a handshake (a few milliseconds).
//! - [`MIN_IDLE`] = 2 s: a peer used within it (a hop just made, its acknowledgement or release
//!   in flight) is never closed, whatever the bound.
//!
//! # Descriptors
//! A node raises its soft `RLIMIT_NOFILE` to the hard limit at start ([`raise_descriptor_limit`]).
//! Connections, the status endpoint ([`crate::status::MAX_CONNECTIONS`]) and [`RESERVE`] (state
//! slots, ledger, evaluation file, the final model's temporary file, lock, log, listeners, mDNS
//! sockets, the runtime's own) must fit below it. When they do not, the connection limits are
//! lowered to fit, with a warning naming the limit to set (`ulimit -n`), so that the node never
//! lacks a descriptor to write its state or its final model.
//!
//! # Streams
//! A member sends at most a handful of requests at once on one connection (hello, token,
//! released, final model): [`STREAMS_PER_CONNECTION`] bounds the concurrent request-response
//! streams per connection. Yamux allows one more stream per allowed peer: a connection to a
//! relay carries a stream for each circuit through it ([`crate::behaviour::build`]).

use std::collections::HashSet;
use std::time::{Duration, Instant};

use libp2p::PeerId;
use libp2p::connection_limits::ConnectionLimits;

/// Connections allowed with one peer.
pub const PER_PEER: u32 = 4;
/// Connections beyond the allowed peers' own, for reconnections and bootstrap churn.
pub const SLACK: u32 = 32;
/// Descriptors kept for anything but connections and the status endpoint.
pub const RESERVE: u64 = 64;
/// Concurrent streams per connection.
pub const STREAMS_PER_CONNECTION: usize = 16;
/// Connected peers above which idle members are closed, least recently used first (see the
/// module docs, "How many stay open").
pub const KEPT_PEERS: usize = 64;
/// Above [`KEPT_PEERS`], a member used within this is not closed.
pub const MIN_IDLE: Duration = Duration::from_secs(2);
/// Least pause between two WARN summaries of refused peers.
pub const SUMMARY_EVERY: Duration = Duration::from_secs(30);
/// Non-members remembered for the once-per-peer debug line (a flood of fresh identities is
/// still summarized at WARN; past this many, debug lines start again from an empty set).
const REMEMBERED: usize = 4096;
/// The fewest established connections a node is limited to, whatever its descriptor limit.
const FLOOR: u32 = 8;

/// The node's connection limits.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// Connections with one peer.
    pub per_peer: u32,
    /// Established connections in total.
    pub established: u32,
    /// Incoming connections still in their handshake.
    pub pending_incoming: u32,
    /// Outgoing dials in progress.
    pub pending_outgoing: u32,
    /// Descriptors the limits above, the status endpoint and [`RESERVE`] need together.
    pub needed: u64,
    /// Whether the limits were lowered to fit the descriptor limit.
    pub lowered: bool,
}

impl Limits {
    /// The limits for `allowed` peers (members but this node, plus bootstrap peers) and a soft
    /// descriptor limit of `descriptors` (`None`: unlimited or unknown).
    pub fn for_peers(allowed: usize, descriptors: Option<u64>) -> Limits {
        let a = u32::try_from(allowed).unwrap_or(u32::MAX);
        let established = a.saturating_mul(2).saturating_add(SLACK);
        let pending = a.saturating_add(SLACK);
        let fixed = RESERVE + crate::status::MAX_CONNECTIONS as u64;
        let needed = u64::from(established) + 2 * u64::from(pending) + fixed;
        match descriptors {
            Some(d) if d < needed => {
                // Half the descriptors left to established connections, a quarter to each kind
                // of pending one.
                let left = u32::try_from(d.saturating_sub(fixed)).unwrap_or(u32::MAX);
                Limits {
                    per_peer: PER_PEER,
                    established: (left / 2).clamp(FLOOR, established),
                    pending_incoming: (left / 4).clamp(1, pending),
                    pending_outgoing: (left / 4).clamp(1, pending),
                    needed,
                    lowered: true,
                }
            }
            _ => Limits {
                per_peer: PER_PEER,
                established,
                pending_incoming: pending,
                pending_outgoing: pending,
                needed,
                lowered: false,
            },
        }
    }

    /// As libp2p's `connection_limits`.
    pub fn connection_limits(&self) -> ConnectionLimits {
        ConnectionLimits::default()
            .with_max_established_per_peer(Some(self.per_peer))
            .with_max_established(Some(self.established))
            .with_max_pending_incoming(Some(self.pending_incoming))
            .with_max_pending_outgoing(Some(self.pending_outgoing))
    }
}

/// The soft descriptor limit after [`raise_descriptor_limit`]: what it was, what it is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Descriptors {
    /// The soft limit the process started with (`None`: unlimited or unknown).
    pub before: Option<u64>,
    /// The soft limit now.
    pub now: Option<u64>,
}

/// Raises the soft `RLIMIT_NOFILE` to the hard limit (a process may always do so), and says what
/// it was and is. Where it cannot be read, both are `None` (no limit is assumed).
#[cfg(unix)]
pub fn raise_descriptor_limit() -> Descriptors {
    use rustix::process::{Resource, getrlimit, setrlimit};
    let limit = getrlimit(Resource::Nofile);
    let before = limit.current;
    if limit.current.is_some() && limit.current != limit.maximum {
        let raised = rustix::process::Rlimit {
            current: limit.maximum,
            maximum: limit.maximum,
        };
        if let Err(e) = setrlimit(Resource::Nofile, raised) {
            tracing::debug!(error = %e, "could not raise the descriptor limit to the hard limit");
        }
    }
    Descriptors {
        before,
        now: getrlimit(Resource::Nofile).current,
    }
}

/// Without `getrlimit`, nothing is known.
#[cfg(not(unix))]
pub fn raise_descriptor_limit() -> Descriptors {
    Descriptors {
        before: None,
        now: None,
    }
}

/// Why a connection was refused, as the node counts it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Refused {
    /// An authenticated peer that is neither a member nor a bootstrap peer.
    Stranger(PeerId),
    /// Over one of the connection limits (the peer may be unknown yet).
    OverLimit,
}

/// Counts refused connections: each stranger logged once at debug level, a summary at WARN at
/// most every [`SUMMARY_EVERY`].
#[derive(Debug, Default)]
pub struct Refusals {
    /// Strangers already logged at debug level.
    seen: HashSet<PeerId>,
    /// Since the last summary: connections from strangers, distinct strangers, and connections
    /// over a limit.
    strangers: u64,
    stranger_peers: HashSet<PeerId>,
    over_limit: u64,
    last_summary: Option<Instant>,
}

impl Refusals {
    /// Counts one refusal (and logs a new stranger at debug level).
    pub fn record(&mut self, refused: Refused) {
        match refused {
            Refused::Stranger(peer) => {
                if self.seen.len() >= REMEMBERED {
                    self.seen.clear();
                }
                if self.seen.insert(peer) {
                    tracing::debug!(%peer, "disconnected a peer that is neither a member of the run nor a bootstrap peer");
                }
                self.strangers += 1;
                if self.stranger_peers.len() < REMEMBERED {
                    self.stranger_peers.insert(peer);
                }
            }
            Refused::OverLimit => self.over_limit += 1,
        }
    }

    /// Logs the summary at WARN if there is anything to say and the last one is old enough (or
    /// `now_anyway`, at exit).
    pub fn summarize(&mut self, now_anyway: bool) {
        if self.strangers == 0 && self.over_limit == 0 {
            return;
        }
        let due = self
            .last_summary
            .is_none_or(|t| t.elapsed() >= SUMMARY_EVERY);
        if !due && !now_anyway {
            return;
        }
        self.last_summary = Some(Instant::now());
        tracing::warn!(
            strangers = self.strangers,
            stranger_peers = self.stranger_peers.len(),
            over_limit = self.over_limit,
            "refused {} connection(s) from {} peer(s) that are not members of the run nor bootstrap peers, and {} over the connection limits (next summary in {} s at the earliest)",
            self.strangers,
            self.stranger_peers.len(),
            self.over_limit,
            SUMMARY_EVERY.as_secs()
        );
        self.strangers = 0;
        self.stranger_peers.clear();
        self.over_limit = 0;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn limits_grow_with_the_members_and_fit_the_descriptors() {
        let roomy = Limits::for_peers(255, Some(1 << 20));
        assert!(!roomy.lowered);
        assert_eq!(roomy.established, 2 * 255 + SLACK);
        assert_eq!(roomy.pending_incoming, 255 + SLACK);
        assert_eq!(roomy.per_peer, PER_PEER);
        assert_eq!(
            roomy.needed,
            u64::from(roomy.established)
                + 2 * u64::from(roomy.pending_incoming)
                + RESERVE
                + crate::status::MAX_CONNECTIONS as u64
        );
        assert_eq!(Limits::for_peers(255, None), roomy);

        // 1,024 descriptors for 255 peers: lowered, and everything fits below the limit.
        let tight = Limits::for_peers(255, Some(1024));
        assert!(tight.lowered);
        let used = u64::from(tight.established)
            + u64::from(tight.pending_incoming)
            + u64::from(tight.pending_outgoing)
            + RESERVE
            + crate::status::MAX_CONNECTIONS as u64;
        assert!(used <= 1024, "{tight:?} uses {used}");
        assert!(tight.established >= 255, "every member still fits once");

        // Absurdly few descriptors: floors, never zero.
        let starved = Limits::for_peers(10, Some(16));
        assert_eq!(starved.established, FLOOR);
        assert_eq!(starved.pending_incoming, 1);
    }

    #[test]
    fn refusals_are_summarized() {
        let mut r = Refusals::default();
        let p = PeerId::random();
        r.record(Refused::Stranger(p));
        r.record(Refused::Stranger(p));
        r.record(Refused::OverLimit);
        assert_eq!(
            (r.strangers, r.stranger_peers.len(), r.over_limit),
            (2, 1, 1)
        );
        r.summarize(false);
        assert_eq!((r.strangers, r.over_limit), (0, 0), "first summary at once");
        r.record(Refused::Stranger(PeerId::random()));
        r.summarize(false);
        assert_eq!(r.strangers, 1, "the next one waits");
        r.summarize(true);
        assert_eq!(r.strangers, 0);
    }

    #[cfg(unix)]
    #[test]
    fn the_soft_limit_is_raised_to_the_hard_one() {
        let d = raise_descriptor_limit();
        let hard = rustix::process::getrlimit(rustix::process::Resource::Nofile).maximum;
        assert_eq!(d.now, hard);
    }
}
