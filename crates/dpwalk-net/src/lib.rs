//! dpwalk-net: the daemon's side of dpwalk: the wire format, run files, identities, durable node
//! state, the libp2p behaviour, custody of the token and the node's runtime.
//!
//! # Layout
//! - [`codec`]: the wire format of `/dpwalk/token/4` (versioned messages, a size limit checked
//!   before decoding, trailing bytes refused) and the validation of inbound tokens into typed
//!   [`codec::Rejection`]s.
//! - [`run`]: the run file every member shares (parameters, topology, members with PeerIds), its
//!   validation, canonical hash and field-by-field diff.
//! - [`certify`]: the certificate given the walk (N2) of a finished run, from its members'
//!   ledgers brought together (`dpwalk ledger certify`).
//! - [`seal`]: the signature of the member that made the last step on the final model.
//! - [`keys`]: the node's ed25519 identity on disk (mode 0600, never overwritten).
//! - [`state`]: the node's durable state (`u_i`, RNG position, last seq, custody copy of the
//!   outgoing token), committed atomically and checksummed.
//! - [`config`]: `node.toml`, what is the node's own (key, data, addresses, budget).
//! - [`learner`]: what a node does with a token, without the network: validate, step (the
//!   simulator's code), commit, charge the ledger.
//! - [`protocol`], [`behaviour`]: the libp2p codec and behaviours.
//! - [`addresses`]: the node's own address book of members and bootstrap peers.
//! - [`reach`]: members behind NAT: relayed addresses, the relay a node may serve, and how each
//!   member is connected (direct, relayed, hole-punched).
//! - [`limits`]: who may connect, connection and stream limits, descriptors.
//! - [`custody`]: custody of the token as a state machine without I/O: when to send, retry,
//!   re-route or resume, and which members are down.
//! - [`node`]: the event loop: swarm events into custody events, custody actions into swarm
//!   calls; connections, the final model, status.
//! - [`publish`]: publication of the final model and the rule that keeps one per run.
//! - [`final_model`]: `final_model.json`, written by every node, read by `dpwalk swarm` and the
//!   tests.
//! - [`ports`]: listen ports for members started together on one host, outside the kernel's
//!   ephemeral range.
//! - [`hearsay`]: what a token's sender tells its receiver about members down.
//! - [`witness`]: what a node saw of each member's steps, told to that member in hellos, so that
//!   a node restarted from a lost state stops instead of repeating its noise.
//! - [`fault`]: fault injection for the tests of a fork at the last step (an environment variable).
//! - [`quality`]: warnings on the model's quality a node can give alone (clip share, noise).
//! - [`status`]: the status endpoint (JSON and Prometheus) and its client.
//! - [`workspace`]: the files a run's nodes start from (keys, data, `node.toml`, `run.toml`),
//!   written for `dpwalk swarm` and the end-to-end tests.
//!
//! # Usage
//! ```
//! use dpwalk_net::codec::{self, Message, Token};
//! let token = Token { run_id: "demo".into(), seq: 0, w: vec![0.5, -1.0] };
//! let message = Message::Token { token, avoid: Vec::new() };
//! let frame = codec::encode(&message).unwrap();
//! assert_eq!(codec::decode_frame(&frame).unwrap(), message);
//! ```

#![cfg_attr(test, allow(clippy::unwrap_used, clippy::expect_used))]

pub mod addresses;
pub mod behaviour;
pub mod certify;
pub mod codec;
pub mod config;
pub mod custody;
pub mod fault;
pub mod final_model;
pub mod hearsay;
pub mod keys;
pub mod learner;
pub mod limits;
pub mod node;
pub mod ports;
pub mod protocol;
pub mod publish;
pub mod quality;
pub mod reach;
pub mod run;
pub mod seal;
pub mod state;
pub mod status;
pub mod witness;
pub mod workspace;
