//! The wire format of the token protocol [`PROTOCOL`] (`/dpwalk/token/4`), and the validation of
//! what arrives on it.
//!
//! This module alone owns the bytes. A frame is
//! ```text
//! len: u32 LE | payload: len bytes = bincode 2 (serde, fixed-width little-endian ints) of Wire::V4(Message)
//! ```
//! Decoding is layered so that nothing from the network is trusted before it has passed the layer
//! below:
//! 1. [`payload_len`]: the 4-byte prefix is checked against [`MAX_PAYLOAD`] *before* anything is
//!    read or allocated, so a peer claiming 4 GiB costs nothing.
//! 2. [`decode_payload`]: bincode with its own limit (also [`MAX_PAYLOAD`]), and every payload byte
//!    must be consumed (trailing bytes are an error, not ignored: they would mean the two ends
//!    disagree about the format).
//! 3. [`validate`] / [`crate::seal::validate_final`] (a final model: also its seal): a decoded message is well-formed but not yet acceptable;
//!    the run context decides, and a refusal carries a typed [`Rejection`] that is both logged and
//!    sent back in [`Message::Refused`].
//!
//! The outer `Wire` enum is the version: a future `/dpwalk/token/5` adds `Wire::V5` and converts,
//! while [`Message`] is what the daemon handles. `f64` values are written as their IEEE-754 bits,
//! so a round trip is bit-exact (NaN payloads and `-0.0` included), which the determinism test of
//! daemon against simulator relies on.
//!
//! The token carries the run id, the step counter `seq` (the number of steps already applied to
//! `w`) and `w`; nothing about the path it took. The message that hands it over also carries the
//! sender's advice about members down ([`Avoided`], module [`crate::hearsay`]): which members
//! were unreachable, nothing about anyone's data.
//!
//! Version 4 (`/dpwalk/token/4`) added [`Message::Parting`]; version 3 added
//! [`Hello::your_last`] (module [`crate::witness`]) and [`Message::Holding`]; version 2 added the
//! advice; version 1 had `Message::Token(Token)` alone. A node of one version and a node of the other do not agree on the protocol name, so libp2p
//! refuses their streams rather than one end misreading the other's bytes.

use std::collections::HashSet;
use std::time::Duration;

use libp2p_identity::PeerId;
use serde::{Deserialize, Serialize};
use thiserror::Error;

/// The request-response protocol name.
pub const PROTOCOL: &str = "/dpwalk/token/4";

/// Largest model dimension a run may have: `w` is then exactly 1 MiB of `f64`.
pub const MAX_DIM: usize = 1 << 17;

/// Longest run id, in bytes (checked by the run file and by [`encode`]).
pub const MAX_RUN_ID: usize = 64;

/// The most members a token's advice names ([`Avoided`]): enough for every member down at once
/// in any run this daemon has been tested with, and a bound on what a sender can make a receiver
/// store.
pub const MAX_AVOIDED: usize = 64;

/// How long a member is avoided on one observation: custody avoids a connected member that did
/// not take a token in time this long (one that is not connected is avoided until it verifies
/// again), and a token's advice may ask to avoid a member for at most this long.
pub const AVOID_FOR: Duration = Duration::from_secs(10);

/// Bytes of a payload beyond the `f64` values: the version and message tags (4 + 4), a refusal's
/// reason, the run id with its length (8 + [`MAX_RUN_ID`]), `seq` (8) and the vector's length (8),
/// a final model's seal (two lengths, [`crate::seal::MAX_KEY`] and
/// [`crate::seal::MAX_SIGNATURE`]), a token's advice (a length and [`MAX_AVOIDED`] × 8), rounded
/// up generously.
pub(crate) const PAYLOAD_OVERHEAD: usize = 1024;

/// Largest payload accepted: a token or final model of [`MAX_DIM`] values with room to spare.
pub const MAX_PAYLOAD: usize = MAX_DIM * 8 + PAYLOAD_OVERHEAD;

/// Largest frame (prefix included).
pub const MAX_FRAME: usize = 4 + MAX_PAYLOAD;

/// The bincode configuration of dpwalk's binary formats (the wire here, the node's state in
/// [`crate::state`]): fixed-width little-endian integers (every frame of a given dimension has
/// the same size, and lengths cannot hide in varints) and a limit of `LIMIT` bytes.
pub(crate) fn bincode_config<const LIMIT: usize>() -> impl bincode::config::Config {
    bincode::config::standard()
        .with_little_endian()
        .with_fixed_int_encoding()
        .with_limit::<LIMIT>()
}

/// The wire's configuration: [`bincode_config`] with the payload limit.
fn config() -> impl bincode::config::Config {
    bincode_config::<MAX_PAYLOAD>()
}

/// The walk's token: `w` after `seq` steps of run `run_id`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Token {
    /// The run this token belongs to.
    pub run_id: String,
    /// Steps already applied to `w` (the paper's `k`).
    pub seq: u64,
    /// The running average `w` of the users' `u_i`.
    pub w: Vec<f64>,
}

/// A member the sender of a token avoids, and for how much longer (see [`crate::hearsay`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Avoided {
    /// The member's index in the run file.
    pub member: u32,
    /// Milliseconds the receiver should avoid it from receipt, at most
    /// [`AVOID_FOR`].
    pub for_ms: u32,
}

/// The final model, published by the holder of the token when `seq` reaches the run's `K`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FinalModel {
    /// The run.
    pub run_id: String,
    /// Always the run's total steps `K`.
    pub seq: u64,
    /// `z = prox_{γ r}(w)`.
    pub z: Vec<f64>,
    /// The maker's signature (see [`crate::seal`]).
    pub seal: Seal,
}

/// The signature of the member that made the run's last step, over the run hash and the model.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Seal {
    /// The maker's public key, protobuf-encoded (its PeerId derives from it).
    pub key: Vec<u8>,
    /// The signature of [`crate::seal`]'s bytes.
    pub signature: Vec<u8>,
}

/// Why a token or final model was refused.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Error)]
pub enum Rejection {
    /// The message is for another run.
    #[error("run id {got:?} is not this run")]
    WrongRun {
        /// The run id in the message.
        got: String,
    },
    /// The vector has the wrong length.
    #[error("dimension {got} instead of {expected}")]
    WrongDimension {
        /// The run's dimension.
        expected: u64,
        /// The message's vector length.
        got: u64,
    },
    /// A value is NaN or infinite.
    #[error("non-finite value at index {index}")]
    NonFinite {
        /// The first offending coordinate.
        index: u64,
    },
    /// The token is not newer than one this node already handled: a duplicate or a replay.
    #[error("seq {seq} is not newer than {last_seen}, already handled here")]
    Replay {
        /// The token's seq.
        seq: u64,
        /// The highest seq this node handled.
        last_seen: u64,
    },
    /// A token at or past the end of the walk (the holder of step `K` publishes, never forwards),
    /// or a final model announced before the end.
    #[error("seq {seq} does not fit a run of {steps} steps")]
    SeqOutOfRange {
        /// The message's seq.
        seq: u64,
        /// The run's `K`.
        steps: u64,
    },
    /// The sender is not a member of the run.
    #[error("sender {peer} is not a member of the run")]
    NotMember {
        /// The sender, as its base58 PeerId.
        peer: String,
    },
    /// The sender has not yet shown (by [`Message::Hello`]) that it runs the same run file. The
    /// sender retries the same peer shortly: this is transient, not a reason to re-route.
    #[error("the sender's run file is not verified yet")]
    NotVerified,
    /// The two run files differ: the dotted keys that differ (see [`crate::run::Run::diff`]).
    #[error("the run files differ in: {}", differences.join(", "))]
    RunMismatch {
        /// The keys whose values differ.
        differences: Vec<String>,
    },
    /// The receiver is shutting down or has finished the run: try another neighbour.
    #[error("the receiver is leaving the run")]
    Leaving,
    /// A final model whose seal does not verify: not signed by its key, or signed for another
    /// run file (see [`crate::seal`]).
    #[error("the final model's seal does not verify against this run")]
    BadSeal,
    /// A token's advice about members down is malformed (see [`validate_advice`]).
    #[error("the token's advice about members down is malformed: {reason}")]
    BadAdvice {
        /// What is wrong with it.
        reason: String,
    },
}

/// Everything that travels on [`PROTOCOL`]. Requests are [`Message::Token`] and
/// [`Message::FinalModel`]; responses are [`Message::Ack`] and [`Message::Refused`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub enum Message {
    /// Custody transfer of the token, with the sender's advice about members down.
    Token {
        /// The token.
        token: Token,
        /// The members the sender avoids (at most [`MAX_AVOIDED`]).
        avoid: Vec<Avoided>,
    },
    /// The token `(run_id, seq)` was received and durably taken over: the sender may drop its
    /// custody copy.
    Ack {
        /// The run.
        run_id: String,
        /// The acknowledged seq.
        seq: u64,
    },
    /// The message was refused; the sender keeps custody and tries elsewhere.
    Refused(Rejection),
    /// The final model.
    FinalModel(FinalModel),
    /// Sent on every new connection: the sender's run, so that both ends check they run the same
    /// one before trading tokens.
    Hello(Hello),
    /// The answer to a matching [`Message::Hello`]: the responder's own run.
    Welcome(Hello),
    /// From a holder to the peer that gave it the token: the token `seq` it produced has been
    /// acknowledged by its successor, so the predecessor's backup of the earlier token can go.
    Released {
        /// The run.
        run_id: String,
        /// The seq acknowledged downstream.
        seq: u64,
    },
    /// From a holder to the peer that gave it token `seq`: it still holds the token it made from
    /// it and is handing it on (its receiver is slow, restarting, or makes the last step). The
    /// predecessor's backup of `seq` waits on: a holder alive and waiting is never forked by a
    /// resume of its predecessor's backup (issue 27). Sent every quarter of a hand-off timeout
    /// while a hand-off is pending ([`crate::custody::Machine::hold_due`]).
    Holding {
        /// The run.
        run_id: String,
        /// The seq of the token the holder took from its predecessor.
        seq: u64,
    },
    /// From a member about to close its idle connections with the receiver (it keeps a bounded
    /// set open, `crate::limits::KEPT_PEERS`): the close that follows the answer is not a
    /// failure, so the receiver does not count the sender down for it, and either end dials the
    /// other again when a message needs it.
    Parting {
        /// The run.
        run_id: String,
    },
}

/// A node's run as announced on connection.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Hello {
    /// [`crate::run::Run::hash`].
    pub run_hash: [u8; 32],
    /// [`crate::run::Run::canonical_toml`], to name the differences on a mismatch.
    pub run: String,
    /// The last step the sender saw the receiver make (it took a token the receiver handed on
    /// after that step, or the receiver acknowledged its token of that seq), if any: how the
    /// receiver tells that its own state is older than what the run has seen of it
    /// ([`crate::witness`]). Each hello is addressed to one member and speaks only of its steps.
    pub your_last: Option<u64>,
}

/// The versioned envelope, as decoded.
#[derive(Deserialize)]
enum Wire {
    V4(Message),
}

/// The versioned envelope, as encoded (borrowing, so a 1 MiB token is not cloned to be sent).
/// Must stay variant-for-variant identical to [`Wire`].
#[derive(Serialize)]
enum WireRef<'a> {
    V4(&'a Message),
}

/// Why bytes could not be encoded or decoded.
#[derive(Debug, Error)]
pub enum CodecError {
    /// The prefix claims (or the message needs) more than [`MAX_PAYLOAD`] bytes.
    #[error("payload of {len} bytes exceeds the limit of {MAX_PAYLOAD}")]
    TooLarge {
        /// Claimed or needed length.
        len: u64,
    },
    /// The frame ends before its prefix or payload does.
    #[error("truncated frame: {got} bytes of {expected}")]
    Truncated {
        /// Bytes needed.
        expected: u64,
        /// Bytes present.
        got: u64,
    },
    /// Bytes follow the message, inside the payload or after the frame.
    #[error("{extra} trailing bytes after the message")]
    Trailing {
        /// How many.
        extra: u64,
    },
    /// The payload is not a message of this protocol version. The decoder's reason is printed, not
    /// chained: a refused frame is logged by its message alone, and reaches libp2p's
    /// `InboundFailure` inside an `io::Error`, whose display is this one.
    #[error("malformed payload: {0}")]
    Malformed(bincode::error::DecodeError),
    /// A run id longer than [`MAX_RUN_ID`].
    #[error("run id of {len} bytes exceeds {MAX_RUN_ID}")]
    RunIdTooLong {
        /// Its length.
        len: usize,
    },
    /// bincode refused to encode (only the size limit can cause it). Printed, not chained, like
    /// [`CodecError::Malformed`].
    #[error("encoding failed: {0}")]
    Encode(bincode::error::EncodeError),
}

/// The run id of a message, for the encode-side length check.
fn run_id(message: &Message) -> Option<&str> {
    match message {
        Message::Token { token: t, .. } => Some(&t.run_id),
        Message::Ack { run_id, .. } => Some(run_id),
        Message::FinalModel(f) => Some(&f.run_id),
        Message::Released { run_id, .. }
        | Message::Holding { run_id, .. }
        | Message::Parting { run_id } => Some(run_id),
        Message::Refused(Rejection::WrongRun { got }) => Some(got),
        Message::Refused(_) | Message::Hello(_) | Message::Welcome(_) => None,
    }
}

/// Refuses a run id longer than [`MAX_RUN_ID`].
fn check_run_id(message: &Message) -> Result<(), CodecError> {
    match run_id(message) {
        Some(id) if id.len() > MAX_RUN_ID => Err(CodecError::RunIdTooLong { len: id.len() }),
        _ => Ok(()),
    }
}

/// The frame of `message`: prefix and payload. Refuses what the other end would refuse to decode,
/// so an oversized message fails here rather than on the peer.
pub fn encode(message: &Message) -> Result<Vec<u8>, CodecError> {
    check_run_id(message)?;
    let payload = bincode::serde::encode_to_vec(WireRef::V4(message), config())
        .map_err(CodecError::Encode)?;
    if payload.len() > MAX_PAYLOAD {
        return Err(CodecError::TooLarge {
            len: payload.len() as u64,
        });
    }
    // Cannot fail: MAX_PAYLOAD < u32::MAX.
    let len = u32::try_from(payload.len()).map_err(|_| CodecError::TooLarge {
        len: payload.len() as u64,
    })?;
    let mut frame = Vec::with_capacity(4 + payload.len());
    frame.extend_from_slice(&len.to_le_bytes());
    frame.extend_from_slice(&payload);
    Ok(frame)
}

/// The payload length announced by a frame's 4-byte prefix, refused when over [`MAX_PAYLOAD`].
/// A stream reader calls this, then reads exactly that many bytes, then [`decode_payload`].
pub fn payload_len(prefix: [u8; 4]) -> Result<usize, CodecError> {
    let len = u32::from_le_bytes(prefix);
    match usize::try_from(len) {
        Ok(len) if len <= MAX_PAYLOAD => Ok(len),
        _ => Err(CodecError::TooLarge {
            len: u64::from(len),
        }),
    }
}

/// The message in a payload (the bytes after the prefix), which must be consumed exactly.
pub fn decode_payload(payload: &[u8]) -> Result<Message, CodecError> {
    if payload.len() > MAX_PAYLOAD {
        return Err(CodecError::TooLarge {
            len: payload.len() as u64,
        });
    }
    let (wire, used): (Wire, usize) =
        bincode::serde::decode_from_slice(payload, config()).map_err(CodecError::Malformed)?;
    if used != payload.len() {
        return Err(CodecError::Trailing {
            extra: (payload.len() - used) as u64,
        });
    }
    let Wire::V4(message) = wire;
    // What `encode` refuses is refused here too, so that every accepted payload has exactly one
    // encoding.
    check_run_id(&message)?;
    Ok(message)
}

/// The message in a whole frame (prefix and payload, nothing after).
pub fn decode_frame(frame: &[u8]) -> Result<Message, CodecError> {
    let Some((prefix, rest)) = frame.split_first_chunk::<4>() else {
        return Err(CodecError::Truncated {
            expected: 4,
            got: frame.len() as u64,
        });
    };
    let len = payload_len(*prefix)?;
    if rest.len() < len {
        return Err(CodecError::Truncated {
            expected: (4 + len) as u64,
            got: frame.len() as u64,
        });
    }
    if rest.len() > len {
        return Err(CodecError::Trailing {
            extra: (rest.len() - len) as u64,
        });
    }
    decode_payload(rest)
}

/// What a node knows to judge an inbound message: its run and how far it has seen the walk.
#[derive(Debug, Clone)]
pub struct RunContext {
    /// The run id.
    pub run_id: String,
    /// The model dimension.
    pub dim: usize,
    /// The run's total steps `K`.
    pub steps: u64,
    /// The run's members.
    pub members: HashSet<PeerId>,
    /// The run's hash, which a final model's seal must sign.
    pub run_hash: [u8; 32],
    /// The highest seq this node has handled (received and stepped or forwarded), if any.
    pub last_seen: Option<u64>,
}

/// The checks shared by tokens and final models: sender, run, dimension, finiteness.
pub(crate) fn check_common(
    from: &PeerId,
    run_id: &str,
    values: &[f64],
    ctx: &RunContext,
) -> Result<(), Rejection> {
    if !ctx.members.contains(from) {
        return Err(Rejection::NotMember {
            peer: from.to_base58(),
        });
    }
    if run_id != ctx.run_id {
        // Echoed back in the refusal: cut to what `encode` accepts.
        let mut end = run_id.len().min(MAX_RUN_ID);
        while !run_id.is_char_boundary(end) {
            end -= 1;
        }
        return Err(Rejection::WrongRun {
            got: run_id[..end].to_string(),
        });
    }
    if values.len() != ctx.dim {
        return Err(Rejection::WrongDimension {
            expected: ctx.dim as u64,
            got: values.len() as u64,
        });
    }
    if let Some(index) = values.iter().position(|v| !v.is_finite()) {
        return Err(Rejection::NonFinite {
            index: index as u64,
        });
    }
    Ok(())
}

/// Whether a decoded token from `from` may be stepped: the sender is a member, the run and
/// dimension match, every value is finite, the walk is not over (`seq < K`), and the token is
/// newer than anything this node has handled. Checks run in that order; the first failure is
/// returned.
pub fn validate(from: &PeerId, token: &Token, ctx: &RunContext) -> Result<(), Rejection> {
    check_common(from, &token.run_id, &token.w, ctx)?;
    if token.seq >= ctx.steps {
        return Err(Rejection::SeqOutOfRange {
            seq: token.seq,
            steps: ctx.steps,
        });
    }
    if let Some(last_seen) = ctx.last_seen
        && token.seq <= last_seen
    {
        return Err(Rejection::Replay {
            seq: token.seq,
            last_seen,
        });
    }
    Ok(())
}

/// Whether a token's advice can be taken: at most [`MAX_AVOIDED`] entries, each naming a member
/// of the run (`members` of them) once, for at most [`AVOID_FOR`]. A member that
/// sends more is refused like any malformed message: it runs other code than ours.
pub fn validate_advice(avoid: &[Avoided], members: usize) -> Result<(), Rejection> {
    let bad = |reason: String| Err(Rejection::BadAdvice { reason });
    if avoid.len() > MAX_AVOIDED {
        return bad(format!("{} entries, at most {MAX_AVOIDED}", avoid.len()));
    }
    let longest = AVOID_FOR.as_millis();
    let mut seen = HashSet::new();
    for a in avoid {
        if a.member as usize >= members {
            return bad(format!("member {} of a run of {members} members", a.member));
        }
        if u128::from(a.for_ms) > longest {
            return bad(format!("{} ms, at most {longest} ms", a.for_ms));
        }
        if !seen.insert(a.member) {
            return bad(format!("member {} named twice", a.member));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The largest advice a token may carry: [`MAX_AVOIDED`] members, the longest time each.
    fn full_advice() -> Vec<Avoided> {
        (0..MAX_AVOIDED as u32)
            .map(|member| Avoided {
                member,
                for_ms: AVOID_FOR.as_millis() as u32,
            })
            .collect()
    }

    #[test]
    fn limits_are_consistent() {
        assert!(u32::try_from(MAX_PAYLOAD).is_ok());
        assert_eq!(MAX_FRAME, MAX_PAYLOAD + 4);
        // A token of the largest dimension with the longest run id and the fullest advice fits;
        // one more value does not.
        let mut token = Token {
            run_id: "r".repeat(MAX_RUN_ID),
            seq: u64::MAX,
            w: vec![0.0; MAX_DIM],
        };
        let avoid = full_advice();
        let frame = encode(&Message::Token {
            token: token.clone(),
            avoid: avoid.clone(),
        })
        .unwrap();
        assert!(frame.len() <= MAX_FRAME);
        token.w.push(0.0);
        token
            .w
            .extend(std::iter::repeat_n(0.0, PAYLOAD_OVERHEAD / 8));
        assert!(matches!(
            encode(&Message::Token { token, avoid }),
            Err(CodecError::Encode(_) | CodecError::TooLarge { .. })
        ));
    }

    #[test]
    fn a_hello_says_the_last_step_seen_of_its_receiver() {
        let hello = |your_last| {
            Message::Hello(Hello {
                run_hash: [7; 32],
                run: "r".into(),
                your_last,
            })
        };
        for your_last in [None, Some(0), Some(u64::MAX)] {
            let frame = encode(&hello(your_last)).unwrap();
            assert_eq!(decode_frame(&frame).unwrap(), hello(your_last));
        }
        // The field is the frame's tail: an option tag, then the seq.
        let frame = encode(&hello(Some(5))).unwrap();
        let tail: Vec<u8> = [1u8].into_iter().chain(5u64.to_le_bytes()).collect();
        assert!(frame.ends_with(&tail));
        assert_eq!(encode(&hello(None)).unwrap().len() + 8, frame.len());
    }

    #[test]
    fn fixed_layout_of_a_token() {
        // The layout is the protocol: pin it so that an innocent change of config fails here.
        let frame = encode(&Message::Token {
            token: Token {
                run_id: "ab".into(),
                seq: 3,
                w: vec![1.5],
            },
            avoid: vec![Avoided {
                member: 7,
                for_ms: 2500,
            }],
        })
        .unwrap();
        let mut expected = Vec::new();
        let payload_len: u32 = 4 + 4 + 8 + 2 + 8 + 8 + 8 + 8 + 4 + 4;
        expected.extend_from_slice(&payload_len.to_le_bytes());
        expected.extend_from_slice(&0u32.to_le_bytes()); // Wire::V4
        expected.extend_from_slice(&0u32.to_le_bytes()); // Message::Token
        expected.extend_from_slice(&2u64.to_le_bytes());
        expected.extend_from_slice(b"ab");
        expected.extend_from_slice(&3u64.to_le_bytes());
        expected.extend_from_slice(&1u64.to_le_bytes());
        expected.extend_from_slice(&1.5f64.to_le_bytes());
        expected.extend_from_slice(&1u64.to_le_bytes()); // one member avoided
        expected.extend_from_slice(&7u32.to_le_bytes());
        expected.extend_from_slice(&2500u32.to_le_bytes());
        assert_eq!(frame, expected);
    }

    #[test]
    fn advice_is_checked_against_the_run() {
        let ok = full_advice();
        assert_eq!(validate_advice(&ok, MAX_AVOIDED), Ok(()));
        assert_eq!(validate_advice(&[], 1), Ok(()));
        let refused = |avoid: &[Avoided], members| match validate_advice(avoid, members) {
            Err(Rejection::BadAdvice { reason }) => reason,
            other => panic!("expected a refusal, got {other:?}"),
        };
        assert_eq!(
            refused(&ok, MAX_AVOIDED - 1),
            "member 63 of a run of 63 members"
        );
        let mut long = ok.clone();
        long.push(Avoided {
            member: 0,
            for_ms: 1,
        });
        assert_eq!(refused(&long, 1000), "65 entries, at most 64");
        let too_long = [Avoided {
            member: 0,
            for_ms: 10_001,
        }];
        assert_eq!(refused(&too_long, 4), "10001 ms, at most 10000 ms");
        let twice = [ok[1], ok[1]];
        assert_eq!(refused(&twice, 4), "member 1 named twice");
    }
}
