//! The wire format: bit-exact round trips, the size limit before decoding, truncation, trailing
//! bytes, arbitrary input, and every rejection reason of the validation step.

#![allow(clippy::expect_used, clippy::unwrap_used)]

use std::collections::HashSet;

use dpwalk_net::codec::{
    self, Avoided, CodecError, FinalModel, MAX_PAYLOAD, Message, Rejection, RunContext, Seal,
    Token, decode_frame, decode_payload, encode, payload_len,
};
use dpwalk_net::seal::seal;
use libp2p_identity::{Keypair, PeerId};
use proptest::prelude::*;

fn token(seq: u64, w: Vec<f64>) -> Token {
    Token {
        run_id: "demo".into(),
        seq,
        w,
    }
}

fn bits(v: &[f64]) -> Vec<u64> {
    v.iter().map(|x| x.to_bits()).collect()
}

fn any_f64_bits() -> impl Strategy<Value = f64> {
    any::<u64>().prop_map(f64::from_bits)
}

fn any_rejection() -> impl Strategy<Value = Rejection> {
    prop_oneof![
        "[a-z]{0,64}".prop_map(|got| Rejection::WrongRun { got }),
        (any::<u64>(), any::<u64>())
            .prop_map(|(expected, got)| Rejection::WrongDimension { expected, got }),
        any::<u64>().prop_map(|index| Rejection::NonFinite { index }),
        (any::<u64>(), any::<u64>())
            .prop_map(|(seq, last_seen)| Rejection::Replay { seq, last_seen }),
        (any::<u64>(), any::<u64>())
            .prop_map(|(seq, steps)| Rejection::SeqOutOfRange { seq, steps }),
        Just(Rejection::NotMember {
            peer: PeerId::random().to_base58()
        }),
        Just(Rejection::BadSeal),
        "[a-z ]{0,40}".prop_map(|reason| Rejection::BadAdvice { reason }),
    ]
}

proptest! {
    #[test]
    fn token_round_trip_is_bit_exact(
        run_id in "[A-Za-z0-9._-]{0,64}",
        seq in any::<u64>(),
        w in proptest::collection::vec(any_f64_bits(), 0..200),
        avoid in proptest::collection::vec(
            (any::<u32>(), any::<u32>()).prop_map(|(member, for_ms)| Avoided { member, for_ms }),
            0..=codec::MAX_AVOIDED,
        ),
    ) {
        let sent = Token { run_id, seq, w };
        let message = Message::Token { token: sent.clone(), avoid: avoid.clone() };
        let frame = encode(&message).unwrap();
        let Message::Token { token: got, avoid: got_avoid } = decode_frame(&frame).unwrap() else {
            panic!("not a token");
        };
        prop_assert_eq!(got_avoid, avoid);
        prop_assert_eq!(&got.run_id, &sent.run_id);
        prop_assert_eq!(got.seq, sent.seq);
        prop_assert_eq!(bits(&got.w), bits(&sent.w));
    }

    #[test]
    fn other_messages_round_trip(
        rejection in any_rejection(),
        seq in any::<u64>(),
        z in proptest::collection::vec(any_f64_bits(), 0..50),
    ) {
        for message in [
            Message::Refused(rejection.clone()),
            Message::Ack { run_id: "r".into(), seq },
        ] {
            prop_assert_eq!(decode_frame(&encode(&message).unwrap()).unwrap(), message);
        }
        let model = FinalModel {
            run_id: "r".into(),
            seq,
            z,
            seal: Seal { key: vec![7; 36], signature: vec![9; 64] },
        };
        let Message::FinalModel(got) =
            decode_frame(&encode(&Message::FinalModel(model.clone())).unwrap()).unwrap()
        else {
            panic!("not a final model");
        };
        prop_assert_eq!(bits(&got.z), bits(&model.z));
    }

    #[test]
    fn random_bytes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..2048)) {
        let _ = decode_frame(&bytes);
        let _ = decode_payload(&bytes);
        // With a consistent prefix, the bytes reach bincode.
        let mut framed = (bytes.len() as u32).to_le_bytes().to_vec();
        framed.extend_from_slice(&bytes);
        let _ = decode_frame(&framed);
    }

    #[test]
    fn mutated_frames_never_panic(index in any::<prop::sample::Index>(), byte in any::<u8>()) {
        let mut frame = encode(&Message::Token { token: token(5, vec![1.0, 2.0, 3.0]), avoid: Vec::new() }).unwrap();
        let i = index.index(frame.len());
        frame[i] = byte;
        let _ = decode_frame(&frame);
    }
}

#[test]
fn oversized_prefix_is_refused_before_reading_the_payload() {
    // The claimed payload is absent: only the prefix decides.
    for claimed in [MAX_PAYLOAD as u32 + 1, u32::MAX] {
        let prefix = claimed.to_le_bytes();
        assert!(matches!(
            payload_len(prefix),
            Err(CodecError::TooLarge { len }) if len == u64::from(claimed)
        ));
        assert!(matches!(
            decode_frame(&prefix),
            Err(CodecError::TooLarge { .. })
        ));
    }
    assert_eq!(
        payload_len((MAX_PAYLOAD as u32).to_le_bytes()).unwrap(),
        MAX_PAYLOAD
    );
}

#[test]
fn huge_vector_length_inside_a_small_frame_is_refused_without_allocating() {
    // V1, Token, run id "", seq 0, then a vector claiming 2^60 values: allocating that would abort
    // the test process.
    let mut payload = Vec::new();
    payload.extend_from_slice(&0u32.to_le_bytes());
    payload.extend_from_slice(&0u32.to_le_bytes());
    payload.extend_from_slice(&0u64.to_le_bytes());
    payload.extend_from_slice(&0u64.to_le_bytes());
    payload.extend_from_slice(&(1u64 << 60).to_le_bytes());
    payload.extend_from_slice(&1.0f64.to_le_bytes());
    assert!(matches!(
        decode_payload(&payload),
        Err(CodecError::Malformed(_))
    ));
    // Same for the run id's length.
    let mut payload = Vec::new();
    payload.extend_from_slice(&0u32.to_le_bytes());
    payload.extend_from_slice(&0u32.to_le_bytes());
    payload.extend_from_slice(&u64::MAX.to_le_bytes());
    assert!(matches!(
        decode_payload(&payload),
        Err(CodecError::Malformed(_))
    ));
}

#[test]
fn oversized_payload_slice_is_refused() {
    let payload = vec![0u8; MAX_PAYLOAD + 1];
    assert!(matches!(
        decode_payload(&payload),
        Err(CodecError::TooLarge { .. })
    ));
}

#[test]
fn every_truncation_is_refused() {
    let frame = encode(&Message::Token {
        token: token(9, vec![0.25, -3.0, 1e300]),
        avoid: Vec::new(),
    })
    .unwrap();
    for cut in 0..frame.len() {
        match decode_frame(&frame[..cut]) {
            Err(CodecError::Truncated { expected, got }) => {
                assert_eq!(got, cut as u64);
                assert!(expected > got);
            }
            other => panic!("cut at {cut}: {other:?}"),
        }
        // A prefix rewritten to match the cut payload: bincode runs out of bytes.
        if cut > 4 {
            let mut short = ((cut - 4) as u32).to_le_bytes().to_vec();
            short.extend_from_slice(&frame[4..cut]);
            assert!(
                matches!(decode_frame(&short), Err(CodecError::Malformed(_))),
                "consistent prefix, payload cut at {cut}"
            );
        }
    }
}

#[test]
fn trailing_bytes_are_refused() {
    let frame = encode(&Message::Ack {
        run_id: "demo".into(),
        seq: 1,
    })
    .unwrap();
    // After the frame.
    let mut long = frame.clone();
    long.push(0);
    assert!(matches!(
        decode_frame(&long),
        Err(CodecError::Trailing { extra: 1 })
    ));
    // Inside the payload, with the prefix counting them.
    let mut inside = ((frame.len() - 4 + 3) as u32).to_le_bytes().to_vec();
    inside.extend_from_slice(&frame[4..]);
    inside.extend_from_slice(&[1, 2, 3]);
    assert!(matches!(
        decode_frame(&inside),
        Err(CodecError::Trailing { extra: 3 })
    ));
}

#[test]
fn unknown_version_and_variant_are_refused() {
    let frame = encode(&Message::Token {
        token: token(1, vec![1.0]),
        avoid: Vec::new(),
    })
    .unwrap();
    let mut v2 = frame.clone();
    v2[4..8].copy_from_slice(&1u32.to_le_bytes());
    assert!(matches!(decode_frame(&v2), Err(CodecError::Malformed(_))));
    let mut variant = frame;
    variant[8..12].copy_from_slice(&99u32.to_le_bytes());
    assert!(matches!(
        decode_frame(&variant),
        Err(CodecError::Malformed(_))
    ));
}

#[test]
fn encode_refuses_a_long_run_id() {
    let long = Token {
        run_id: "x".repeat(codec::MAX_RUN_ID + 1),
        seq: 0,
        w: vec![],
    };
    assert!(matches!(
        encode(&Message::Token {
            token: long,
            avoid: Vec::new()
        }),
        Err(CodecError::RunIdTooLong { len: 65 })
    ));
    // Nor is one decoded: a hand-made payload with a 65-byte run id.
    let mut payload = Vec::new();
    payload.extend_from_slice(&0u32.to_le_bytes());
    payload.extend_from_slice(&1u32.to_le_bytes()); // Message::Ack
    payload.extend_from_slice(&65u64.to_le_bytes());
    payload.extend_from_slice(&[b'x'; 65]);
    payload.extend_from_slice(&0u64.to_le_bytes());
    assert!(matches!(
        decode_payload(&payload),
        Err(CodecError::RunIdTooLong { len: 65 })
    ));
    payload[8] = 64;
    payload.remove(16);
    assert!(decode_payload(&payload).is_ok());
}

fn context(member: PeerId, last_seen: Option<u64>) -> RunContext {
    RunContext {
        run_id: "demo".into(),
        dim: 3,
        steps: 100,
        members: HashSet::from([member]),
        run_hash: [5; 32],
        last_seen,
    }
}

#[test]
fn every_rejection_reason() {
    let member = PeerId::random();
    let ctx = context(member, Some(10));
    let ok = token(11, vec![1.0, -2.0, 0.0]);
    assert_eq!(codec::validate(&member, &ok, &ctx), Ok(()));
    assert_eq!(
        codec::validate(&member, &ok, &context(member, None)),
        Ok(())
    );

    let stranger = PeerId::random();
    assert_eq!(
        codec::validate(&stranger, &ok, &ctx),
        Err(Rejection::NotMember {
            peer: stranger.to_base58()
        })
    );
    let other_run = Token {
        run_id: "other".into(),
        ..ok.clone()
    };
    assert_eq!(
        codec::validate(&member, &other_run, &ctx),
        Err(Rejection::WrongRun {
            got: "other".into()
        })
    );
    assert_eq!(
        codec::validate(&member, &token(11, vec![1.0; 4]), &ctx),
        Err(Rejection::WrongDimension {
            expected: 3,
            got: 4
        })
    );
    for bad in [f64::NAN, f64::INFINITY, f64::NEG_INFINITY] {
        assert_eq!(
            codec::validate(&member, &token(11, vec![1.0, bad, bad]), &ctx),
            Err(Rejection::NonFinite { index: 1 })
        );
    }
    for seq in [0, 9, 10] {
        assert_eq!(
            codec::validate(&member, &token(seq, vec![0.0; 3]), &ctx),
            Err(Rejection::Replay { seq, last_seen: 10 })
        );
    }
    for seq in [100, u64::MAX] {
        assert_eq!(
            codec::validate(&member, &token(seq, vec![0.0; 3]), &ctx),
            Err(Rejection::SeqOutOfRange { seq, steps: 100 })
        );
    }
    assert_eq!(
        codec::validate(&member, &token(99, vec![0.0; 3]), &ctx),
        Ok(())
    );
}

#[test]
fn final_model_validation() {
    let key = Keypair::generate_ed25519();
    let member = key.public().to_peer_id();
    let ctx = context(member, Some(99));
    let model = seal(&key, &[5; 32], "demo".into(), 100, vec![0.0; 3]).unwrap();
    assert_eq!(
        dpwalk_net::seal::validate_final(&member, &model, &ctx),
        Ok(member)
    );
    // Relayed by another member: the maker is still the sealing member.
    let relay = PeerId::random();
    let mut both = ctx.clone();
    both.members.insert(relay);
    assert_eq!(
        dpwalk_net::seal::validate_final(&relay, &model, &both),
        Ok(member)
    );
    // Sealed by a key outside the run, or for another run file.
    let outsider = seal(
        &Keypair::generate_ed25519(),
        &[5; 32],
        "demo".into(),
        100,
        vec![0.0; 3],
    )
    .unwrap();
    assert!(matches!(
        dpwalk_net::seal::validate_final(&member, &outsider, &ctx),
        Err(Rejection::NotMember { .. })
    ));
    let other_run = seal(&key, &[6; 32], "demo".into(), 100, vec![0.0; 3]).unwrap();
    assert_eq!(
        dpwalk_net::seal::validate_final(&member, &other_run, &ctx),
        Err(Rejection::BadSeal)
    );
    // Altered after sealing.
    let mut altered = model.clone();
    altered.z[0] = 1.0;
    assert_eq!(
        dpwalk_net::seal::validate_final(&member, &altered, &ctx),
        Err(Rejection::BadSeal)
    );
    let early = FinalModel {
        seq: 99,
        ..model.clone()
    };
    assert_eq!(
        dpwalk_net::seal::validate_final(&member, &early, &ctx),
        Err(Rejection::SeqOutOfRange {
            seq: 99,
            steps: 100
        })
    );
    let nan = FinalModel {
        z: vec![0.0, 0.0, f64::NAN],
        ..model.clone()
    };
    assert_eq!(
        dpwalk_net::seal::validate_final(&member, &nan, &ctx),
        Err(Rejection::NonFinite { index: 2 })
    );
    assert!(matches!(
        dpwalk_net::seal::validate_final(&PeerId::random(), &model, &ctx),
        Err(Rejection::NotMember { .. })
    ));
}

#[test]
fn a_refusal_of_a_long_foreign_run_id_can_be_sent_back() {
    let member = PeerId::random();
    let foreign = Token {
        run_id: "é".repeat(200),
        seq: 1,
        w: vec![0.0; 3],
    };
    let rejection = codec::validate(&member, &foreign, &context(member, None)).unwrap_err();
    let frame = encode(&Message::Refused(rejection.clone())).unwrap();
    assert_eq!(decode_frame(&frame).unwrap(), Message::Refused(rejection));
}
