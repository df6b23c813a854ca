//! The libp2p side of a node: transports, security, the behaviours it runs, and the swarm.
//!
//! TCP (and QUIC with the `quic` feature) with Noise and Yamux; `identify` and `ping` for
//! liveness and addresses; mDNS on a LAN (optional); Kademlia for WAN bootstrap; and the token
//! protocol over request-response with [`TokenCodec`]. For members behind NAT ([`crate::reach`]):
//! the circuit relay v2 client in every node (dials through a relay, reservations on one), the
//! relay server when `node.toml` says `relay = true`, DCUtR hole punching over relayed
//! connections, and AutoNAT v2 (client and server: which of a node's addresses others can dial;
//! v2, unlike v1, also tests private addresses, so it works on a LAN and in the tests' network
//! namespaces). In front of them, the peers let in (an allow list: members, relays and bootstrap
//! peers) and the connection limits ([`crate::limits`]).

use std::time::Duration;

use libp2p::swarm::NetworkBehaviour;
use libp2p::swarm::behaviour::toggle::Toggle;
use libp2p::{
    PeerId, Swarm, allow_block_list, autonat, connection_limits, dcutr, identify,
    identity::Keypair, kad, mdns, noise, ping, relay, request_response, tcp, yamux,
};
use thiserror::Error;

use crate::limits::{Limits, STREAMS_PER_CONNECTION};
use crate::protocol::{TOKEN_PROTOCOL, TokenCodec};

/// The identify protocol version: nodes of other protocol generations are told apart at once.
pub const IDENTIFY_VERSION: &str = "/dpwalk/1";

/// Errors of building the swarm.
#[derive(Debug, Error)]
pub enum BuildError {
    /// The transport could not be built.
    #[error("building the transport: {0}")]
    Transport(String),
}

/// The node's behaviours.
#[allow(missing_debug_implementations)] // libp2p's behaviours do not implement Debug
#[derive(NetworkBehaviour)]
pub struct Behaviour {
    /// Only these peers may hold a connection (asked first: a stranger is refused as such, not
    /// counted against the limits).
    pub allowed: allow_block_list::Behaviour<allow_block_list::AllowedPeers>,
    /// Connection limits.
    pub limits: connection_limits::Behaviour,
    /// `/dpwalk/token/1`.
    pub token: request_response::Behaviour<TokenCodec>,
    /// Addresses and agent versions.
    pub identify: identify::Behaviour,
    /// Liveness.
    pub ping: ping::Behaviour,
    /// LAN discovery, when enabled.
    pub mdns: Toggle<mdns::tokio::Behaviour>,
    /// WAN discovery through bootstrap peers, when the node has any (without them, Kademlia
    /// would only add queries among members that already know each other's addresses).
    pub kad: Toggle<kad::Behaviour<kad::store::MemoryStore>>,
    /// Dials through relays, and reservations on them (listening on `/p2p-circuit`).
    pub relay_client: relay::client::Behaviour,
    /// Serving as a relay for the run's members, when `node.toml` says `relay = true`.
    pub relay: Toggle<relay::Behaviour>,
    /// Hole punching over a relayed connection.
    pub dcutr: dcutr::Behaviour,
    /// Asks members to dial back this node's candidate addresses.
    pub autonat: autonat::v2::client::Behaviour,
    /// Dials back the candidate addresses of members that ask.
    pub autonat_server: autonat::v2::server::Behaviour,
}

/// Yamux with at most `streams` streams per connection.
fn yamux_config(streams: usize) -> yamux::Config {
    let mut c = yamux::Config::default();
    c.set_max_num_streams(streams);
    c
}

/// The swarm of a node with identity `keypair` that lets in only the `allowed` peers, within
/// `limits`; `request_timeout` bounds one token exchange; `relay` the relay server's
/// configuration, if the node serves as one.
///
/// A connection to a relay carries one stream per circuit through it, so yamux allows
/// [`STREAMS_PER_CONNECTION`] plus one per allowed peer.
pub fn build(
    keypair: Keypair,
    use_mdns: bool,
    use_kad: bool,
    request_timeout: Duration,
    allowed: impl IntoIterator<Item = PeerId>,
    limits: &Limits,
    relay: Option<relay::Config>,
) -> Result<Swarm<Behaviour>, BuildError> {
    let allowed: Vec<PeerId> = allowed.into_iter().collect();
    let streams = STREAMS_PER_CONNECTION + allowed.len();
    let builder = libp2p::SwarmBuilder::with_existing_identity(keypair)
        .with_tokio()
        .with_tcp(
            tcp::Config::default().nodelay(true),
            noise::Config::new,
            move || yamux_config(streams),
        )
        .map_err(|e| BuildError::Transport(e.to_string()))?;
    #[cfg(feature = "quic")]
    let builder = builder.with_quic();
    let swarm = builder
        .with_relay_client(noise::Config::new, move || yamux_config(streams))
        .map_err(|e| BuildError::Transport(e.to_string()))?
        .with_behaviour(|key, relay_client| {
            let peer = key.public().to_peer_id();
            let token = request_response::Behaviour::with_codec(
                TokenCodec,
                [(TOKEN_PROTOCOL, request_response::ProtocolSupport::Full)],
                request_response::Config::default()
                    .with_request_timeout(request_timeout)
                    .with_max_concurrent_streams(STREAMS_PER_CONNECTION),
            );
            let identify = identify::Behaviour::new(identify::Config::new(
                IDENTIFY_VERSION.to_string(),
                key.public(),
            ));
            let mdns = if use_mdns {
                Some(mdns::tokio::Behaviour::new(mdns::Config::default(), peer)?)
            } else {
                None
            };
            let kad = use_kad.then(|| {
                let mut kad = kad::Behaviour::new(peer, kad::store::MemoryStore::new(peer));
                kad.set_mode(Some(kad::Mode::Server));
                kad
            });
            let mut gate = allow_block_list::Behaviour::default();
            for p in allowed {
                gate.allow_peer(p);
            }
            Ok(Behaviour {
                allowed: gate,
                limits: connection_limits::Behaviour::new(limits.connection_limits()),
                token,
                identify,
                ping: ping::Behaviour::default(),
                mdns: Toggle::from(mdns),
                kad: Toggle::from(kad),
                relay_client,
                relay: Toggle::from(relay.map(|config| {
                    let mut server = relay::Behaviour::new(peer, config);
                    // Serve whether or not AutoNAT has confirmed an external address yet: the
                    // operator says this node is reachable.
                    server.set_status(Some(relay::Status::Enable));
                    server
                })),
                dcutr: dcutr::Behaviour::new(peer),
                autonat: autonat::v2::client::Behaviour::default(),
                autonat_server: autonat::v2::server::Behaviour::default(),
            })
        })
        .map_err(|e| BuildError::Transport(e.to_string()))?
        // Members keep their connections for the whole run: a token hop must not pay a handshake.
        // Every request opens a stream; lazy multistream-select sends the request with the
        // protocol proposal instead of waiting one round trip for the proposal's confirmation
        // (every stream we open names one protocol, which a member of the run supports; a peer
        // that does not support it fails the request as before, one round trip later).
        .with_swarm_config(|c| {
            c.with_idle_connection_timeout(Duration::from_secs(3600))
                .with_substream_upgrade_protocol_override(libp2p::core::upgrade::Version::V1Lazy)
        })
        .build();
    Ok(swarm)
}
