//! The libp2p side of a node: transports, security, the behaviours it runs, and the swarm.
//!
//! TCP (and QUIC with the `quic` feature) with Noise and Yamux; `identify` and `ping` for
//! liveness and addresses; mDNS on a LAN (optional); Kademlia for WAN bootstrap; and the token
//! protocol over request-response with [`TokenCodec`]. In front of them, the peers let in (an
//! allow list: members and bootstrap peers) and the connection limits ([`crate::limits`]).

use std::time::Duration;

use libp2p::swarm::NetworkBehaviour;
use libp2p::swarm::behaviour::toggle::Toggle;
use libp2p::{
    PeerId, Swarm, allow_block_list, connection_limits, identify, identity::Keypair, kad, mdns,
    noise, ping, request_response, tcp, yamux,
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
}

/// The swarm of a node with identity `keypair` that lets in only the `allowed` peers, within
/// `limits`; `request_timeout` bounds one token exchange.
pub fn build(
    keypair: Keypair,
    use_mdns: bool,
    use_kad: bool,
    request_timeout: Duration,
    allowed: impl IntoIterator<Item = PeerId>,
    limits: &Limits,
) -> Result<Swarm<Behaviour>, BuildError> {
    let builder = libp2p::SwarmBuilder::with_existing_identity(keypair)
        .with_tokio()
        .with_tcp(
            tcp::Config::default().nodelay(true),
            noise::Config::new,
            || {
                let mut c = yamux::Config::default();
                c.set_max_num_streams(STREAMS_PER_CONNECTION);
                c
            },
        )
        .map_err(|e| BuildError::Transport(e.to_string()))?;
    #[cfg(feature = "quic")]
    let builder = builder.with_quic();
    let swarm = builder
        .with_behaviour(|key| {
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
