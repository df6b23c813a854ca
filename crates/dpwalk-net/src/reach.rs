//! Members behind NAT: relayed addresses, the relay a node may serve for the run, and how each
//! member's connection was made (direct, relayed or hole-punched).
//!
//! A member that accepts no inbound connection (behind NAT or a firewall) is listed in the run file
//! at a relayed address, `/ip4/R/tcp/P/p2p/<relay>/p2p-circuit/p2p/<member>`: the others dial it
//! through the relay (circuit relay v2), and the member itself, seeing such an address among its
//! own, listens there (a reservation on the relay, [`circuit_listen_addrs`]). Over the relayed
//! connection both ends try a direct one (DCUtR hole punching); where the NATs allow it, the
//! token then goes direct and the relayed connection is closed. Every connection carries the
//! same protocol either way: custody, acknowledgements and the final model do not know how the
//! bytes travel.
//!
//! A node with `relay = true` in `node.toml` serves as a relay for the run's members (and only
//! them: the allow list of [`crate::limits`] applies to the relay too), with circuit limits
//! raised for a whole run ([`relay_config`]).

use std::collections::HashMap;
use std::num::NonZeroU32;
use std::time::Duration;

use libp2p::core::ConnectedPoint;
use libp2p::multiaddr::Protocol;
use libp2p::relay;
use libp2p::swarm::ConnectionId;
use libp2p::{Multiaddr, PeerId};
use serde::{Deserialize, Serialize};

/// How long one relayed circuit may last: a day. libp2p's default of 2 minutes would cut a run's
/// circuits every 2 minutes (each cut costs a re-dial, and a hop in flight a retry); a run longer
/// than a day re-opens its circuits once a day.
pub const CIRCUIT_DURATION: Duration = Duration::from_secs(24 * 60 * 60);

/// Bytes one hop may cost a circuit beyond the token's frame: the acknowledgement, a
/// `Released`, and the framing of yamux, Noise and multistream-select, rounded up generously.
pub const HOP_OVERHEAD: u64 = 2048;

/// How a member is connected to this node.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Via {
    /// Through a relay (a `/p2p-circuit` address): every byte crosses the relay.
    Relayed,
    /// A direct connection one side dialled at the other's address.
    Direct,
    /// A direct connection made by DCUtR hole punching over a relayed one.
    HolePunched,
}

impl Via {
    /// As in the status and the log.
    pub fn as_str(self) -> &'static str {
        match self {
            Via::Relayed => "relayed",
            Via::Direct => "direct",
            Via::HolePunched => "hole-punched",
        }
    }
}

/// Whether `addr` goes through a relay.
pub fn is_relayed(addr: &Multiaddr) -> bool {
    addr.iter().any(|p| p == Protocol::P2pCircuit)
}

/// The open connections of this node and how each was made, by connection.
#[derive(Debug, Default)]
pub struct Links {
    open: HashMap<ConnectionId, (PeerId, Via)>,
}

impl Links {
    /// Records a connection established with `peer`; returns how it was made.
    pub fn established(
        &mut self,
        id: ConnectionId,
        peer: PeerId,
        endpoint: &ConnectedPoint,
    ) -> Via {
        let via = if endpoint.is_relayed() {
            Via::Relayed
        } else {
            Via::Direct
        };
        self.open.insert(id, (peer, via));
        via
    }

    /// Records that DCUtR made connection `id` by hole punching; the peer, if the connection is
    /// open.
    pub fn hole_punched(&mut self, id: ConnectionId) -> Option<PeerId> {
        let (peer, via) = self.open.get_mut(&id)?;
        *via = Via::HolePunched;
        Some(*peer)
    }

    /// Forgets a closed connection.
    pub fn closed(&mut self, id: ConnectionId) {
        self.open.remove(&id);
    }

    /// How `peer` is best connected now (hole-punched, then direct, then relayed), if at all.
    pub fn via(&self, peer: &PeerId) -> Option<Via> {
        self.open
            .values()
            .filter(|(p, _)| p == peer)
            .map(|(_, via)| *via)
            .max()
    }

    /// How many connections with `peer` are open.
    pub fn count(&self, peer: &PeerId) -> usize {
        self.open.values().filter(|(p, _)| p == peer).count()
    }

    /// The relayed connections with `peer`.
    pub fn relayed(&self, peer: &PeerId) -> Vec<ConnectionId> {
        self.open
            .iter()
            .filter(|(_, (p, via))| p == peer && *via == Via::Relayed)
            .map(|(id, _)| *id)
            .collect()
    }
}

/// Where a member listed at relayed addresses listens: each of its own `addrs` that goes through a
/// relay, without the trailing `/p2p/<me>` (a reservation is made at `…/p2p/<relay>/p2p-circuit`).
pub fn circuit_listen_addrs<'a>(
    own: impl IntoIterator<Item = &'a Multiaddr>,
    me: PeerId,
) -> Vec<Multiaddr> {
    let mut listen: Vec<Multiaddr> = Vec::new();
    for addr in own.into_iter().filter(|a| is_relayed(a)) {
        let mut addr = addr.clone();
        if addr.iter().last() == Some(Protocol::P2p(me)) {
            addr.pop();
        }
        if !listen.contains(&addr) {
            listen.push(addr);
        }
    }
    listen
}

/// The relays named in `addrs` (the `/p2p/<relay>` before each `/p2p-circuit`), with the address
/// each is dialled at (what comes before, without the `/p2p/<relay>`): they must be let in and
/// dialled like members.
pub fn relays<'a>(addrs: impl IntoIterator<Item = &'a Multiaddr>) -> Vec<(PeerId, Multiaddr)> {
    let mut relays = Vec::new();
    for addr in addrs {
        let mut head = Multiaddr::empty();
        let mut relay = None;
        for p in addr.iter() {
            if p == Protocol::P2pCircuit {
                break;
            }
            match p {
                Protocol::P2p(peer) => relay = Some(peer),
                p => head.push(p),
            }
        }
        if let Some(peer) = relay.filter(|_| is_relayed(addr))
            && !relays.contains(&(peer, head.clone()))
        {
            relays.push((peer, head));
        }
    }
    relays
}

/// Bytes one circuit may carry: every hop of a run of `steps` hops of a `dimension`-sized model
/// over that one circuit (as in a run of two members), each hop a token frame and
/// [`HOP_OVERHEAD`], and the final model and a hello of `hello_bytes` each way on top.
///
/// An MNIST-sized model (10 classes × 785 = 7,850 values) makes a 63,828-byte token frame, so a
/// run of 10,000 hops may cost one circuit 0.66 GB; libp2p's default of 128 KiB would be spent by
/// the second token. A circuit that reaches the limit is closed by the relay and opened again.
pub fn circuit_bytes(steps: u64, dimension: usize, hello_bytes: usize) -> u64 {
    let frame = 4 + crate::codec::PAYLOAD_OVERHEAD as u64 + 8 * dimension as u64;
    let hop = frame + HOP_OVERHEAD;
    steps
        .saturating_add(2)
        .saturating_mul(hop)
        .saturating_add(2 * (hello_bytes as u64 + HOP_OVERHEAD))
}

/// The relay server of a node with `relay = true`, for a run of `members` members (all of which may
/// hold a reservation on it and a circuit to every other) and circuits of `circuit_bytes`
/// ([`circuit_bytes`]) and [`CIRCUIT_DURATION`].
///
/// libp2p's defaults are sized for a public relay serving strangers: 16 circuits in all, 4 per
/// peer, 128 KiB and 2 minutes each, and new circuits rate-limited per peer and per IP address
/// (one a minute once 60 are spent, per address: every member behind one NAT shares it). This
/// relay lets in members only, so it allows a circuit between every ordered pair of members,
/// twice over (a circuit closed at one end lingers at the relay while its replacement opens), and
/// rate-limits only what a member could not need: more than one new circuit per other member per
/// 10 seconds, after a burst of two per member. libp2p counts a peer's circuits at either end,
/// so a member may be in `2·(members − 1)` circuits at once, doubled for the same reason.
pub fn relay_config(members: usize, circuit_bytes: u64) -> relay::Config {
    let members = members.max(2);
    let burst =
        NonZeroU32::new(u32::try_from(2 * members).unwrap_or(u32::MAX)).unwrap_or(NonZeroU32::MIN);
    let refill = Duration::from_secs(10) / u32::try_from(members).unwrap_or(u32::MAX);
    relay::Config {
        max_reservations: members,
        max_reservations_per_peer: 4,
        max_circuits: 2 * members * (members - 1),
        max_circuits_per_peer: 4 * (members - 1),
        max_circuit_duration: CIRCUIT_DURATION,
        max_circuit_bytes: circuit_bytes,
        reservation_rate_limiters: Vec::new(),
        circuit_src_rate_limiters: Vec::new(),
        ..relay::Config::default()
    }
    .reservation_rate_per_peer(burst, refill.max(Duration::from_millis(1)))
    .circuit_src_per_peer(burst, refill.max(Duration::from_millis(1)))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ma(s: &str) -> Multiaddr {
        s.parse().unwrap()
    }

    #[test]
    fn a_relayed_address_names_its_relay_and_where_to_listen() {
        let relay = PeerId::random();
        let me = PeerId::random();
        let direct = ma("/ip4/10.1.0.2/tcp/4001");
        let relayed = ma(&format!(
            "/ip4/10.9.0.1/tcp/4001/p2p/{relay}/p2p-circuit/p2p/{me}"
        ));
        assert!(!is_relayed(&direct));
        assert!(is_relayed(&relayed));
        assert_eq!(
            circuit_listen_addrs([&direct, &relayed, &relayed], me),
            vec![ma(&format!(
                "/ip4/10.9.0.1/tcp/4001/p2p/{relay}/p2p-circuit"
            ))]
        );
        assert_eq!(
            relays([&direct, &relayed]),
            vec![(relay, ma("/ip4/10.9.0.1/tcp/4001"))]
        );
    }

    #[test]
    fn the_best_open_connection_names_the_link() {
        let mut links = Links::default();
        let peer = PeerId::random();
        let relayed = ConnectedPoint::Dialer {
            address: ma(&format!(
                "/ip4/10.9.0.1/tcp/1/p2p/{}/p2p-circuit/p2p/{peer}",
                PeerId::random()
            )),
            role_override: libp2p::core::Endpoint::Dialer,
            port_use: libp2p::core::transport::PortUse::Reuse,
        };
        let direct = ConnectedPoint::Dialer {
            address: ma("/ip4/10.1.0.2/tcp/1"),
            role_override: libp2p::core::Endpoint::Listener,
            port_use: libp2p::core::transport::PortUse::Reuse,
        };
        let (a, b) = (
            ConnectionId::new_unchecked(1),
            ConnectionId::new_unchecked(2),
        );
        assert_eq!(links.established(a, peer, &relayed), Via::Relayed);
        assert_eq!(links.via(&peer), Some(Via::Relayed));
        assert_eq!(links.established(b, peer, &direct), Via::Direct);
        assert_eq!(links.via(&peer), Some(Via::Direct));
        assert_eq!(links.relayed(&peer), vec![a]);
        assert_eq!(links.hole_punched(b), Some(peer));
        assert_eq!(links.via(&peer), Some(Via::HolePunched));
        links.closed(b);
        assert_eq!(links.via(&peer), Some(Via::Relayed));
        links.closed(a);
        assert_eq!(links.via(&peer), None);
    }

    #[test]
    fn an_mnist_run_fits_one_circuit() {
        let bytes = circuit_bytes(10_000, 7_850, 4096);
        assert!(bytes > 10_000 * 63_828, "{bytes}");
        assert!(bytes < 1 << 30, "{bytes}");
        let config = relay_config(6, bytes);
        // Every ordered pair twice; each member in both ends of a circuit with every other, twice.
        assert_eq!(config.max_circuits, 60);
        assert_eq!(config.max_circuits_per_peer, 20);
        assert_eq!(config.max_circuit_bytes, bytes);
        assert!(config.max_circuit_duration.as_secs() <= u64::from(u32::MAX));
    }
}
