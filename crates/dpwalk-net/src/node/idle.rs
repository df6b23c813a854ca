//! The bounded set of connections a node keeps open (issue 28, item 3).
//!
//! A member dials a neighbour the walk draws when it is not connected ([`super::connections`]),
//! so on a dense graph a long walk would leave each node connected to most members: on a
//! complete graph of `n` members up to `n − 1` connections each way, every one holding a
//! descriptor, Noise and Yamux buffers, identify and ping. A node therefore keeps open only:
//! - the peers it must keep: its eager neighbours and the members it is an eager neighbour of
//!   (either end dials the other again every 2 s anyway), every peer that is not a member
//!   (relays, bootstrap peers), the token's peers (its next receiver, the receiver of the
//!   backup this node keeps until that one hands it on, and the predecessor), and any peer with a
//!   hello or a release of ours awaiting its answer;
//! - the others while they are in use: a member neither sent nor sent us a message for
//!   `timeouts.idle` of `node.toml` (30 s by default) is let go, and above [`KEPT_PEERS`]
//!   connected peers the least recently used are let go as soon as they have been idle for
//!   [`MIN_IDLE`] (the bound and why: [`crate::limits`]).
//!
//! Letting a member go is a [`Message::Parting`] first, then closing the connections once it is
//! answered, unless the member was used again in between: the parting tells it that the close
//! is not a failure, so neither end counts the other down for it
//! ([`crate::custody::Machine::parting`]) and the draws of the next hop stay those of the
//! simulator. Either end dials the other again when a message needs it. Nothing is let go while
//! the walk starts (the starter's gate) or ends (the final model's publication, the linger, a
//! node leaving).

use std::collections::{HashMap, HashSet};
use std::hash::Hash;
use std::time::{Duration, Instant};

use libp2p::PeerId;
use libp2p::request_response::OutboundRequestId;

use super::Node;
use crate::codec::Message;
use crate::limits::{KEPT_PEERS, MIN_IDLE};

/// When each peer was last used, and the partings awaiting their answer (`Id`: the node's
/// request ids).
#[derive(Debug)]
pub(super) struct Idle<Id> {
    /// The members kept whatever their use: the node's eager neighbours and those it is an
    /// eager neighbour of ([`super::connections::eager_both_ways`]).
    eager: HashSet<PeerId>,
    /// The last message sent to or received from each connected peer (or its connection).
    used: HashMap<PeerId, Instant>,
    /// Partings sent and not answered: the peer, and when the parting was sent.
    partings: HashMap<Id, (PeerId, Instant)>,
    /// Members let go so far (for the node's report).
    closed: u64,
}

impl<Id: Copy + Eq + Hash> Idle<Id> {
    /// Nothing used yet; the members in `eager` are never let go.
    pub(super) fn new(eager: HashSet<PeerId>) -> Self {
        Self {
            eager,
            used: HashMap::new(),
            partings: HashMap::new(),
            closed: 0,
        }
    }

    /// How many members were let go so far.
    pub(super) fn closed(&self) -> u64 {
        self.closed
    }

    /// `peer` was used at `now`: a message went to it or came from it, or it connected.
    pub(super) fn touch(&mut self, peer: PeerId, now: Instant) {
        self.used.insert(peer, now);
    }

    /// The last connection with `peer` closed.
    pub(super) fn forget(&mut self, peer: &PeerId) {
        self.used.remove(peer);
    }

    /// A parting was sent to `peer` at `now` as request `id`.
    fn parting(&mut self, id: Id, peer: PeerId, now: Instant) {
        self.partings.insert(id, (peer, now));
    }

    /// Whether a parting to `peer` awaits its answer.
    fn is_parting(&self, peer: &PeerId) -> bool {
        self.partings.values().any(|(p, _)| p == peer)
    }

    /// The answer to parting `id`, if it was one: the peer, and whether it may be let go (it
    /// was not used after the parting was sent).
    pub(super) fn answered(&mut self, id: &Id) -> Option<(PeerId, bool)> {
        let (peer, sent) = self.partings.remove(id)?;
        let unused = self.used.get(&peer).is_none_or(|&at| at <= sent);
        Some((peer, unused))
    }

    /// The peers to let go at `now`, among `connected`, least recently used first: every peer
    /// neither eager nor `kept` idle for `close`, then, while more than `bound` peers would stay
    /// connected, the least recently used idle for `min_idle`. A peer never used counts from
    /// when it was first seen connected (`touch` at connection).
    fn choose(
        &self,
        connected: &[PeerId],
        kept: impl Fn(&PeerId) -> bool,
        now: Instant,
        close: Duration,
        bound: usize,
        min_idle: Duration,
    ) -> Vec<PeerId> {
        let idle = |p: &PeerId| {
            self.used
                .get(p)
                .map_or(Duration::MAX, |&at| now.saturating_duration_since(at))
        };
        let mut candidates: Vec<(Duration, PeerId)> = connected
            .iter()
            .filter(|p| !self.eager.contains(p) && !kept(p) && !self.is_parting(p))
            .map(|p| (idle(p), *p))
            .filter(|(d, _)| *d >= min_idle)
            .collect();
        // Longest idle first; ties in a fixed order.
        candidates.sort_by(|a, b| b.0.cmp(&a.0).then_with(|| a.1.cmp(&b.1)));
        let mut staying = connected.len();
        candidates
            .into_iter()
            .take_while(|(d, _)| {
                let go = *d >= close || staying > bound;
                staying -= usize::from(go);
                go
            })
            .map(|(_, p)| p)
            .collect()
    }
}

impl Node<'_> {
    /// Lets go the members [`Idle::choose`] picks (see the module docs); called every
    /// [`super::connections::REDIAL_EVERY`].
    pub(super) fn let_go_idle(&mut self) {
        if self.gate.is_some()
            || self.publish.is_some()
            || self.finished_at.is_some()
            || self.leaving.is_some()
        {
            return;
        }
        let now = Instant::now();
        let connected: Vec<PeerId> = self.swarm.connected_peers().copied().collect();
        let state = self.learner.state();
        let token_peers = [
            state.outgoing.as_ref().map(|c| c.to),
            state.backup.as_ref().map(|c| c.to),
            state.predecessor,
        ];
        let awaited: Vec<PeerId> = self.notes.values().map(|(p, _)| *p).collect();
        let kept = |p: &PeerId| {
            self.member_index(p).is_none() || token_peers.contains(&Some(*p)) || awaited.contains(p)
        };
        let go = self.idle.choose(
            &connected,
            kept,
            now,
            self.config.timeouts.idle(),
            KEPT_PEERS,
            MIN_IDLE,
        );
        if go.is_empty() {
            return;
        }
        tracing::debug!(
            connected = connected.len(),
            letting_go = go.len(),
            "closing idle connections"
        );
        for peer in go {
            self.custody.parting(peer, now);
            let parting = Message::Parting {
                run_id: self.run.run_id().to_string(),
            };
            let id = self
                .swarm
                .behaviour_mut()
                .token
                .send_request(&peer, parting);
            self.idle.parting(id, peer, now);
        }
    }

    /// The answer to a parting (`answered`), or its failure: an answered parting closes the
    /// connections with its peer unless the peer was used since. A failed one closes nothing:
    /// the peer may not have heard it, and would count the close a failure. Returns whether `id`
    /// was a parting.
    pub(super) fn parting_answered(&mut self, id: &OutboundRequestId, answered: bool) -> bool {
        let Some((peer, unused)) = self.idle.answered(id) else {
            return false;
        };
        if answered && unused && self.swarm.is_connected(&peer) {
            // Fails only when the peer is no longer connected: nothing to close then.
            let _ = self.swarm.disconnect_peer_id(peer);
            self.idle.closed += 1;
        }
        // Otherwise the connections stay; custody's mark expires by itself.
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn peers(n: usize) -> Vec<PeerId> {
        let mut p: Vec<PeerId> = (0..n).map(|_| PeerId::random()).collect();
        p.sort();
        p
    }

    #[test]
    fn idle_members_go_and_the_bound_takes_the_least_recently_used() {
        let t0 = Instant::now();
        let p = peers(7);
        let mut idle: Idle<u64> = Idle::new([p[6]].into());
        // p[k] last used 10·k seconds before t0 + 60 s; p[5] is kept, p[6] eager.
        let now = t0 + Duration::from_secs(60);
        for (k, peer) in p.iter().enumerate() {
            idle.touch(*peer, now - Duration::from_secs(k as u64 * 10));
        }
        let kept = |q: &PeerId| *q == p[5];
        let (close, min) = (Duration::from_secs(30), Duration::from_secs(2));
        // Under the bound: only the idle past `close` (30 s): p[3] (30 s) and p[4] (40 s).
        assert_eq!(idle.choose(&p, kept, now, close, 10, min), vec![p[4], p[3]]);
        // A bound of 4: also the least recently used of the rest until 4 stay, p[2] (20 s);
        // p[0] was just used and stays whatever the bound.
        assert_eq!(
            idle.choose(&p, kept, now, close, 4, min),
            vec![p[4], p[3], p[2]]
        );
        assert_eq!(
            idle.choose(&p, kept, now, close, 0, min),
            vec![p[4], p[3], p[2], p[1]]
        );
        // Nothing kept or eager goes, however idle.
        assert!(idle.choose(&p[5..], kept, now, close, 0, min).is_empty());
        // Never used since first seen: as idle as can be.
        let fresh = peers(1)[0];
        let mut all = p.clone();
        all.push(fresh);
        assert_eq!(idle.choose(&all, kept, now, close, 10, min)[0], fresh);
    }

    #[test]
    fn a_parting_is_answered_once_and_a_peer_used_since_stays() {
        let p = peers(2);
        let t0 = Instant::now();
        let mut idle: Idle<u64> = Idle::new(HashSet::new());
        idle.touch(p[0], t0);
        idle.touch(p[1], t0);
        let (a, b) = (1, 2);
        idle.parting(a, p[0], t0 + Duration::from_secs(1));
        idle.parting(b, p[1], t0 + Duration::from_secs(1));
        // A peer with a parting under way is not picked again.
        let now = t0 + Duration::from_secs(100);
        assert!(
            idle.choose(&p, |_| false, now, Duration::ZERO, 0, Duration::ZERO)
                .is_empty()
        );
        idle.touch(p[1], t0 + Duration::from_secs(2));
        assert_eq!(idle.answered(&a), Some((p[0], true)));
        assert_eq!(
            idle.answered(&b),
            Some((p[1], false)),
            "used after the parting"
        );
        assert_eq!(idle.answered(&a), None);
    }
}
