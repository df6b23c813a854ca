//! The libp2p side of a node: transports, security, the behaviours it runs, and the swarm.
//!
//! TCP (and QUIC with the `quic` feature) with Noise and Yamux; `identify` and `ping` for
//! liveness and addresses; mDNS on a LAN (optional); Kademlia for WAN bootstrap; and the token
//! protocol over request-response with [`TokenCodec`].

use std::time::Duration;

use libp2p::swarm::NetworkBehaviour;
use libp2p::swarm::behaviour::toggle::Toggle;
use libp2p::{
    Swarm, identify, identity::Keypair, kad, mdns, noise, ping, request_response, tcp, yamux,
};
use thiserror::Error;

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
    /// `/dpwalk/token/1`.
    pub token: request_response::Behaviour<TokenCodec>,
    /// Addresses and agent versions.
    pub identify: identify::Behaviour,
    /// Liveness.
    pub ping: ping::Behaviour,
    /// LAN discovery, when enabled.
    pub mdns: Toggle<mdns::tokio::Behaviour>,
    /// WAN discovery through bootstrap peers.
    pub kad: kad::Behaviour<kad::store::MemoryStore>,
}

/// The swarm of a node with identity `keypair`; `request_timeout` bounds one token exchange.
pub fn build(
    keypair: Keypair,
    use_mdns: bool,
    request_timeout: Duration,
) -> Result<Swarm<Behaviour>, BuildError> {
    let builder = libp2p::SwarmBuilder::with_existing_identity(keypair)
        .with_tokio()
        .with_tcp(
            tcp::Config::default().nodelay(true),
            noise::Config::new,
            yamux::Config::default,
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
                request_response::Config::default().with_request_timeout(request_timeout),
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
            let mut kad = kad::Behaviour::new(peer, kad::store::MemoryStore::new(peer));
            kad.set_mode(Some(kad::Mode::Server));
            Ok(Behaviour {
                token,
                identify,
                ping: ping::Behaviour::default(),
                mdns: Toggle::from(mdns),
                kad,
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
