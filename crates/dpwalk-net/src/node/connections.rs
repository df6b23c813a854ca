//! Which members a node connects to, and when (issue 10, item 3).
//!
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
//! A connection made on demand is closed again once idle ([`super::idle`]), so that a walk much
//! longer than the number of members on a dense graph does not accumulate connections towards
//! every neighbour again.

use std::collections::HashSet;
use std::time::{Duration, Instant};

use libp2p::request_response::OutboundRequestId;
use libp2p::{Multiaddr, PeerId};

use super::Node;
use crate::addresses::AddressBook;
use crate::codec::Message;
use crate::reach;
use crate::run::Run;

/// The most neighbours a node dials eagerly.
const EAGER_MAX: usize = 16;
/// How often neighbours that are not connected are dialled again.
pub(super) const REDIAL_EVERY: Duration = Duration::from_secs(2);

impl Node<'_> {
    /// Sends `peer` our hello once on each open connection with it: a token or a final model is
    /// taken only on a connection that carried a hello (see [`super::messages`]). libp2p's
    /// request-response puts a request on connection `request id mod connections`, and the ids
    /// sent here follow one another, so each connection carries one.
    pub(super) fn greet(&mut self, peer: &PeerId) {
        for _ in 0..self.links.count(peer).max(1) {
            let hello = Message::Hello(self.hello(peer));
            self.send(peer, hello);
        }
    }

    /// Sends `message` to `peer`, dialling it at the address book's addresses if it is not
    /// connected; a hello or a release is kept until answered ([`Node::resend_note`]).
    pub(super) fn send(&mut self, peer: &PeerId, message: Message) -> OutboundRequestId {
        self.idle.touch(*peer, Instant::now());
        let addresses = self.book.addresses(peer);
        let note = matches!(message, Message::Hello(_) | Message::Released { .. })
            .then(|| message.clone());
        let id = self
            .swarm
            .behaviour_mut()
            .token
            .send_request_with_addresses(peer, message, addresses);
        if let Some(message) = note {
            self.notes.insert(id, (*peer, message));
        }
        id
    }

    /// Dials `peer` at the address book's addresses, unless it is connected or being dialled.
    pub(super) fn dial(&mut self, peer: PeerId) {
        // An error says only that it is connected or being dialled already, or that no address
        // is known (then mDNS, identify or Kademlia may find one; the next redial uses it).
        if let Err(e) = self.swarm.dial(self.book.dial_opts(peer)) {
            tracing::trace!(%peer, error = %e, "not dialled");
        }
    }

    /// Dials the eager neighbours that are not connected, every [`REDIAL_EVERY`].
    pub(super) fn redial(&mut self) {
        let now = Instant::now();
        if self
            .last_redial
            .is_some_and(|t| now.duration_since(t) < REDIAL_EVERY)
        {
            return;
        }
        self.last_redial = Some(now);
        self.listen_on_circuits();
        for i in 0..self.neighbours.len() {
            let peer = self.neighbours[i];
            if !self.swarm.is_connected(&peer) {
                self.dial(peer);
            }
        }
        self.greet_again(self.neighbours.clone());
        self.let_go_idle();
    }

    /// Says hello again to each of `peers` that is connected, has not compared run files with us
    /// (neither verified nor known to run another run file), and has no hello of ours awaiting
    /// its answer. A hello whose request or answer timed out (under the start-up load of hundreds
    /// of members) is not resent by [`Node::resend_note`], and the member would otherwise stay
    /// "comparing run files" for good, holding up the start's quorum.
    pub(super) fn greet_again(&mut self, peers: impl IntoIterator<Item = PeerId>) {
        let awaiting: HashSet<PeerId> = self
            .notes
            .values()
            .filter(|(_, message)| matches!(message, Message::Hello(_)))
            .map(|(peer, _)| *peer)
            .collect();
        for peer in peers {
            if self.swarm.is_connected(&peer)
                && !self.custody.is_verified(&peer)
                && !self.custody.mismatched_peers().contains(&peer)
                && !awaiting.contains(&peer)
            {
                tracing::debug!(%peer, "no answer to our hello: saying it again");
                self.greet(&peer);
            }
        }
    }
}

/// The address book of the run's other members (their run-file addresses), of the relays named in
/// any member's relayed addresses, and of the bootstrap peers of `node.toml` (each multiaddr must
/// end in `/p2p/<PeerId>`), and the bootstrap peers for Kademlia. An address that does not parse
/// is said and skipped.
pub(super) fn address_book(
    run: &Run,
    me: PeerId,
    bootstrap: &[String],
) -> (AddressBook, Vec<(PeerId, Multiaddr)>) {
    let mut book = AddressBook::default();
    let mut relayed = Vec::new();
    for m in run.members() {
        let addrs: Vec<Multiaddr> = m
            .addrs
            .iter()
            .filter_map(|a| match a.parse::<Multiaddr>() {
                Ok(ma) => Some(ma),
                Err(e) => {
                    tracing::warn!(member = m.index, addr = %a, error = %e, "ignoring a member address");
                    None
                }
            })
            .collect();
        relayed.extend(addrs.iter().filter(|a| reach::is_relayed(a)).cloned());
        if m.peer != me {
            book.configure(m.peer, addrs);
        }
    }
    for (relay, addr) in reach::relays(&relayed) {
        if relay != me {
            book.configure(relay, [addr]);
        }
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

/// The members kept connected to member `index` whatever their use ([`super::idle`]): its
/// eager neighbours `own` ([`eager_neighbours`]), and the members it is an eager neighbour of
/// (they dial it every [`REDIAL_EVERY`] when not connected, so letting them go would only make
/// them dial again).
pub(super) fn eager_both_ways(run: &Run, index: usize, own: &[PeerId]) -> HashSet<PeerId> {
    let me = run.members()[index].peer;
    let mut eager: HashSet<PeerId> = own.iter().copied().collect();
    eager.extend(
        run.topology()
            .neighbors(index)
            .filter(|&j| eager_neighbours(run, j).contains(&me))
            .map(|j| run.members()[j].peer),
    );
    eager
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

    #[test]
    fn the_members_kept_are_the_eager_neighbours_both_ways() {
        // Member 30 of 40 dials 31..39 and 0..6, and is dialled by the 16 before it, 14..29.
        let complete = run_of(40, "kind = \"complete\"");
        let own = eager_neighbours(&complete, 30);
        let kept: Vec<PeerId> = eager_both_ways(&complete, 30, &own).into_iter().collect();
        let mut kept = indices(&complete, &kept);
        kept.sort_unstable();
        let expected: Vec<usize> = (0..7).chain(14..30).chain(31..40).collect();
        assert_eq!(kept, expected);
        let ring = run_of(40, "kind = \"ring\"");
        let own = eager_neighbours(&ring, 0);
        let kept: Vec<PeerId> = eager_both_ways(&ring, 0, &own).into_iter().collect();
        let mut kept = indices(&ring, &kept);
        kept.sort_unstable();
        assert_eq!(kept, vec![1, 39]);
    }
}
