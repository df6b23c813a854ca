//! The node's own address book: where each member (and bootstrap peer) can be dialled.
//!
//! libp2p keeps the addresses of peers in a cache of 100 peers per behaviour, and drops an address
//! after a dial to it fails. A member started before the others fails its first dials, and in a
//! run of more than 100 members the cache forgets some members altogether: both left members
//! that no one ever dialled (issue 10, item 3). So a node never relies on that cache: every dial
//! it makes, and every request it sends to a peer that may not be connected, names the addresses
//! of this book explicitly (`DialOpts::peer_id(p).addresses(..)`,
//! `send_request_with_addresses`).
//!
//! - The run file's `addrs` of a member, and the address of a bootstrap peer, are kept for the
//!   whole run: a failed dial removes nothing.
//! - Addresses reported for a *member* by mDNS, identify or Kademlia are learnt too, at most
//!   [`MAX_LEARNED`] per member, newest first (a member that moved is found at its new address;
//!   the oldest learnt one goes). Addresses of peers that are neither members nor bootstrap peers
//!   are never stored: those peers are not let in (see [`crate::limits`]).

use std::collections::HashMap;

use libp2p::swarm::dial_opts::{DialOpts, PeerCondition};
use libp2p::{Multiaddr, PeerId};

/// Addresses learnt per member, beyond the run file's.
pub const MAX_LEARNED: usize = 4;

/// The addresses of one peer.
#[derive(Debug, Clone, Default)]
struct Entry {
    /// From the run file or the bootstrap list: never removed.
    configured: Vec<Multiaddr>,
    /// From discovery, newest first, at most [`MAX_LEARNED`].
    learned: Vec<Multiaddr>,
}

/// Where each allowed peer can be dialled.
#[derive(Debug, Clone, Default)]
pub struct AddressBook {
    peers: HashMap<PeerId, Entry>,
}

impl AddressBook {
    /// Makes `peer` known (a member or a bootstrap peer), with `addrs` kept for good.
    pub fn configure(&mut self, peer: PeerId, addrs: impl IntoIterator<Item = Multiaddr>) {
        let entry = self.peers.entry(peer).or_default();
        for a in addrs {
            if !entry.configured.contains(&a) {
                entry.configured.push(a);
            }
        }
    }

    /// Whether `peer` is in the book (a member or a bootstrap peer).
    pub fn knows(&self, peer: &PeerId) -> bool {
        self.peers.contains_key(peer)
    }

    /// Records that `peer` was reported at `addr` (mDNS, identify, Kademlia); ignored for a peer
    /// the book does not know. Returns whether the address is new.
    pub fn learn(&mut self, peer: &PeerId, addr: Multiaddr) -> bool {
        let Some(entry) = self.peers.get_mut(peer) else {
            return false;
        };
        if entry.configured.contains(&addr) {
            return false;
        }
        let known = entry.learned.iter().position(|a| *a == addr);
        if let Some(i) = known {
            entry.learned.remove(i);
        }
        entry.learned.insert(0, addr);
        entry.learned.truncate(MAX_LEARNED);
        known.is_none()
    }

    /// Every address of `peer`: the configured ones first, then the learnt ones, newest first.
    pub fn addresses(&self, peer: &PeerId) -> Vec<Multiaddr> {
        self.peers
            .get(peer)
            .map(|e| e.configured.iter().chain(&e.learned).cloned().collect())
            .unwrap_or_default()
    }

    /// How to dial `peer`: at its addresses (and at any the behaviours know, such as mDNS's or
    /// Kademlia's latest), unless it is connected or being dialled already.
    pub fn dial_opts(&self, peer: PeerId) -> DialOpts {
        DialOpts::peer_id(peer)
            .condition(PeerCondition::DisconnectedAndNotDialing)
            .addresses(self.addresses(&peer))
            .extend_addresses_through_behaviour()
            .build()
    }

    /// The peers the book knows.
    pub fn peers(&self) -> impl Iterator<Item = PeerId> + '_ {
        self.peers.keys().copied()
    }

    /// How many peers the book knows.
    pub fn len(&self) -> usize {
        self.peers.len()
    }

    /// Whether the book knows no peer.
    pub fn is_empty(&self) -> bool {
        self.peers.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn addr(port: u16) -> Multiaddr {
        format!("/ip4/127.0.0.1/tcp/{port}").parse().unwrap()
    }

    #[test]
    fn configured_addresses_stay_and_learnt_ones_are_bounded() {
        let mut book = AddressBook::default();
        let member = PeerId::random();
        book.configure(member, [addr(1)]);
        for port in 10..20 {
            assert!(book.learn(&member, addr(port)));
        }
        assert!(!book.learn(&member, addr(1)), "already configured");
        let all = book.addresses(&member);
        assert_eq!(all.len(), 1 + MAX_LEARNED);
        assert_eq!(all[0], addr(1), "the run file's address comes first");
        assert_eq!(all[1], addr(19), "newest learnt next");
        // Learning an address again moves it to the front without growing the list.
        assert!(!book.learn(&member, addr(17)));
        assert_eq!(book.addresses(&member)[1], addr(17));
        assert_eq!(book.addresses(&member).len(), 1 + MAX_LEARNED);
    }

    #[test]
    fn strangers_are_not_stored() {
        let mut book = AddressBook::default();
        let stranger = PeerId::random();
        assert!(!book.learn(&stranger, addr(5)));
        assert!(!book.knows(&stranger));
        assert!(book.addresses(&stranger).is_empty());
        assert!(book.is_empty());
    }

    #[test]
    fn a_book_of_many_members_forgets_none() {
        // libp2p's own cache holds 100 peers: the book holds every member.
        let mut book = AddressBook::default();
        let members: Vec<PeerId> = (0..300).map(|_| PeerId::random()).collect();
        for (i, p) in members.iter().enumerate() {
            book.configure(*p, [addr(u16::try_from(1000 + i).unwrap())]);
        }
        assert_eq!(book.len(), 300);
        for (i, p) in members.iter().enumerate() {
            assert_eq!(
                book.addresses(p),
                vec![addr(u16::try_from(1000 + i).unwrap())]
            );
        }
    }
}
