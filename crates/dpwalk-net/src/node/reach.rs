//! The event loop's side of members behind NAT ([`crate::reach`]): how each connection was made,
//! the reservations on relays (made again when a relay goes away), hole punching, relaying for
//! others, and the addresses AutoNAT confirms.
//!
//! Once a member is connected directly (dialled, or hole-punched), its relayed connections are
//! closed: request-response spreads requests over all connections to a peer, and a token should
//! not cross the relay when it need not. A request in flight on the closed connection fails: a
//! token is retried by custody like after any closed connection, and a hello or a release (which
//! nothing else would repeat: a lost release makes the predecessor resume the walk, forking it) is
//! sent again over the connection that remains ([`Node::resend_note`]).

use libp2p::core::ConnectedPoint;
use libp2p::core::transport::ListenerId;
use libp2p::request_response::{OutboundFailure, OutboundRequestId};
use libp2p::swarm::ConnectionId;
use libp2p::{Multiaddr, PeerId, autonat, dcutr, relay};

use super::{Node, member_name};
use crate::reach::Via;

/// A relayed address the node listens on, its relay, and its listener while open.
#[derive(Debug)]
pub(super) struct Circuit {
    pub(super) addr: Multiaddr,
    pub(super) relay: Option<PeerId>,
    pub(super) listener: Option<ListenerId>,
}

impl Node<'_> {
    /// Records how a connection with `peer` was made, says it for a member, closes the member's
    /// relayed connections once a direct one is open, and asks for the reservations on `peer`
    /// that are missing when it is a relay of ours.
    pub(super) fn connected(&mut self, peer: PeerId, id: ConnectionId, endpoint: &ConnectedPoint) {
        let via = self.links.established(id, peer, endpoint);
        // A reservation asked for while this connection was being dialled was given up at once
        // (the relay client's own dial is not made while another dial of the relay is under
        // way): ask again now that the relay is connected, rather than at the next redial.
        let relay = |c: &Circuit| c.listener.is_none() && c.relay == Some(peer);
        if via == Via::Direct && self.circuits.iter().any(relay) {
            self.listen_on_circuits();
        }
        let Some(index) = self.member_index(&peer) else {
            return;
        };
        tracing::info!(
            member = index,
            via = via.as_str(),
            address = %endpoint.get_remote_address(),
            "connection with member {index}: {}",
            via.as_str()
        );
        if via != Via::Relayed {
            self.close_relayed(peer);
        }
    }

    /// Closes the relayed connections with `peer`.
    fn close_relayed(&mut self, peer: PeerId) {
        for id in self.links.relayed(&peer) {
            self.swarm.close_connection(id);
        }
    }

    /// Listens on every relayed address not listened on (at start, and at each redial: a
    /// reservation ends with the connection to its relay).
    pub(super) fn listen_on_circuits(&mut self) {
        for i in 0..self.circuits.len() {
            if self.circuits[i].listener.is_some() {
                continue;
            }
            let addr = self.circuits[i].addr.clone();
            match self.swarm.listen_on(addr.clone()) {
                Ok(id) => self.circuits[i].listener = Some(id),
                Err(e) => tracing::warn!(%addr, error = %e, "cannot listen on a relayed address"),
            }
        }
    }

    /// A listener closed: a relayed one is opened again once the relay is connected, or at the
    /// next redial. It closes without an error when the node has no connection to the relay
    /// (the relay client's dial failed or was not made, or the connection closed), with one when
    /// the relay refused the reservation.
    pub(super) fn listener_closed(&mut self, id: ListenerId, reason: Result<(), std::io::Error>) {
        if let Some(c) = self.circuits.iter_mut().find(|c| c.listener == Some(id)) {
            c.listener = None;
            match reason {
                Ok(()) => tracing::info!(
                    addr = %c.addr,
                    "no reservation on the relay: not connected to it (yet); making it again once connected"
                ),
                Err(error) => tracing::info!(
                    addr = %c.addr,
                    %error,
                    "reservation on the relay ended; making it again"
                ),
            }
        }
    }

    /// A request failed: a hello or a release whose connection closed while the peer stays
    /// connected (a relayed connection replaced by a direct one) is sent again.
    pub(super) fn resend_note(&mut self, id: OutboundRequestId, error: &OutboundFailure) {
        let Some((peer, message)) = self.notes.remove(&id) else {
            return;
        };
        if matches!(error, OutboundFailure::ConnectionClosed) && self.swarm.is_connected(&peer) {
            tracing::debug!(%peer, "a message lost with its connection: sending it again");
            self.send(&peer, message);
        }
    }

    pub(super) fn on_dcutr(&mut self, event: dcutr::Event) {
        let who = member_name(self.member_index(&event.remote_peer_id));
        match event.result {
            Ok(id) => {
                if self.links.hole_punched(id).is_some() {
                    tracing::info!(
                        peer = %event.remote_peer_id,
                        via = Via::HolePunched.as_str(),
                        "hole punched: a direct connection with {who}"
                    );
                    self.close_relayed(event.remote_peer_id);
                }
            }
            Err(e) => tracing::info!(
                peer = %event.remote_peer_id,
                error = %e,
                "hole punching with {who} failed: the connection stays relayed"
            ),
        }
    }

    pub(super) fn on_relay_client(&mut self, event: relay::client::Event) {
        match event {
            relay::client::Event::ReservationReqAccepted {
                relay_peer_id,
                renewal: false,
                ..
            } => {
                tracing::info!(relay = %relay_peer_id, "reservation accepted: reachable through the relay")
            }
            other => tracing::debug!(?other, "relay client"),
        }
    }

    pub(super) fn on_relay(&mut self, event: relay::Event) {
        match event {
            relay::Event::ReservationReqDenied {
                src_peer_id,
                status,
            } => tracing::warn!(
                "relay: refused a reservation of {} ({status:?})",
                member_name(self.member_index(&src_peer_id))
            ),
            relay::Event::CircuitReqDenied {
                src_peer_id,
                dst_peer_id,
                status,
            } => tracing::warn!(
                "relay: refused a circuit from {} to {} ({status:?})",
                member_name(self.member_index(&src_peer_id)),
                member_name(self.member_index(&dst_peer_id))
            ),
            other => tracing::debug!(?other, "relay"),
        }
    }

    pub(super) fn on_autonat(&mut self, event: autonat::v2::client::Event) {
        let server = member_name(self.member_index(&event.server));
        match event.result {
            Ok(()) => tracing::info!(
                address = %event.tested_addr,
                "reachable at {} ({server} dialled it)",
                event.tested_addr
            ),
            Err(e) => tracing::debug!(
                address = %event.tested_addr,
                error = %e,
                "not reachable at {} ({server} could not dial it)",
                event.tested_addr
            ),
        }
    }
}
