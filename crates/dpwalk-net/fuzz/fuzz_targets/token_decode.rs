//! Arbitrary bytes as a frame and as a bare payload: decoding must never panic, whatever decodes
//! must re-encode to the same bytes (the format has one encoding per message), and a decoded token
//! or final model then goes through validation against plausible run contexts: validation must
//! never panic, must accept only what its contract allows, and every refusal must itself encode
//! (it is sent back to the peer in `Message::Refused`).
#![no_main]

use std::sync::OnceLock;

use dpwalk_net::codec::{
    self, FinalModel, Message, Rejection, RunContext, Token, decode_frame, decode_payload, encode,
};
use dpwalk_net::run::Run;
use libfuzzer_sys::fuzz_target;

/// The example run (three members, dimension 64, 3000 steps): real PeerIds without a direct
/// libp2p-identity dependency.
fn example() -> &'static Run {
    static RUN: OnceLock<Run> = OnceLock::new();
    RUN.get_or_init(|| {
        Run::parse(include_str!("../../examples/run.toml"), "examples/run.toml")
            .expect("the example run file is valid")
    })
}

/// Contexts to judge a message with: the example run as is (mostly WrongRun / WrongDimension),
/// and contexts that match the message's run id and dimension so that the finiteness and seq
/// checks are reached, with and without a `last_seen`.
fn contexts(run_id: &str, dim: usize, seq: u64) -> Vec<RunContext> {
    let run = example();
    let mut out = vec![run.context(None), run.context(Some(seq))];
    for last_seen in [None, Some(0), Some(seq.wrapping_sub(1)), Some(u64::MAX)] {
        for steps in [run.steps(), seq, seq.wrapping_add(1)] {
            let mut ctx = run.context(last_seen);
            ctx.run_id = run_id.to_string();
            ctx.dim = dim;
            ctx.steps = steps;
            out.push(ctx);
        }
    }
    out
}

/// A refusal goes back on the wire: it must encode, and decode to itself.
fn refusal_encodes(rejection: Rejection) {
    let message = Message::Refused(rejection);
    let frame = encode(&message).expect("a refusal encodes");
    assert_eq!(decode_frame(&frame).expect("a refusal decodes"), message);
}

fn check_token(token: &Token) {
    let run = example();
    let member = run.members()[0].peer;
    for ctx in contexts(&token.run_id, token.w.len(), token.seq) {
        match codec::validate(&member, token, &ctx) {
            Ok(()) => {
                assert_eq!(token.run_id, ctx.run_id);
                assert_eq!(token.w.len(), ctx.dim);
                assert!(token.w.iter().all(|v| v.is_finite()));
                assert!(token.seq < ctx.steps);
                assert!(ctx.last_seen.is_none_or(|last| token.seq > last));
            }
            Err(rejection) => refusal_encodes(rejection),
        }
        // The same token from a peer outside the run is refused, whatever it holds.
        let mut outside = ctx.clone();
        outside.members.remove(&member);
        assert!(matches!(
            codec::validate(&member, token, &outside),
            Err(Rejection::NotMember { .. })
        ));
    }
}

fn check_final(model: &FinalModel) {
    let member = example().members()[0].peer;
    for ctx in contexts(&model.run_id, model.z.len(), model.seq) {
        match codec::validate_final(&member, model, &ctx) {
            // Fuzzed bytes forging a seal would be a broken signature scheme; say so loudly.
            Ok(maker) => {
                assert!(ctx.members.contains(&maker));
                assert_eq!(model.run_id, ctx.run_id);
                assert_eq!(model.z.len(), ctx.dim);
                assert!(model.z.iter().all(|v| v.is_finite()));
                assert_eq!(model.seq, ctx.steps);
            }
            Err(rejection) => refusal_encodes(rejection),
        }
    }
}

fn check(message: &Message) {
    match message {
        Message::Token(token) => check_token(token),
        Message::FinalModel(model) => check_final(model),
        _ => {}
    }
}

fuzz_target!(|data: &[u8]| {
    // The whole frame: prefix, payload, nothing after.
    if let Ok(message) = decode_frame(data) {
        let again = encode(&message).expect("a decoded message re-encodes");
        assert_eq!(again, data);
        check(&message);
    }
    // The same bytes as a bare payload (what a stream reader hands over after `payload_len`), so
    // that the fuzzer need not get the length prefix right to reach bincode.
    if let Ok(message) = decode_payload(data) {
        let again = encode(&message).expect("a decoded payload re-encodes");
        assert_eq!(&again[4..], data);
        check(&message);
    }
});
