//! The parts of one token hop that happen inside a node, at p = 64.
//!
//! `cargo bench -p dpwalk-net --bench hop`
//!
//! - `codec_token_roundtrip_p64`: encode and decode one token frame of [`codec::PROTOCOL`] (what the sender
//!   and the receiver pay in the codec).
//! - `state_commit_p64`: one durable state commit (temporary file, fsync, rename, directory fsync).
//! - `receive_p64`: a whole receive at the learner: the ADMM step on 100 records, the next hop,
//!   the state commit and the ledger append (two durable writes).
//!
//! The end-to-end hop over libp2p is measured by `dpwalk swarm` (see BENCHMARKS.md); the
//! difference between the two is libp2p's share.

// A benchmark on fixed, valid inputs: a failure is a bug to see at once, not an input to handle.
#![allow(clippy::expect_used)]

use divan::Bencher;
use dpwalk_core::data::{Dataset, LabelKind};
use dpwalk_core::step::Algorithm;
use dpwalk_net::codec::{self, Message, Token};
use dpwalk_net::learner::{Learner, NodeStep, Outcome, node_problem};
use dpwalk_net::run::{Run, RunHash};
use dpwalk_net::state::{NodeState, StateDir};

const DIM: usize = 64;

fn main() {
    divan::main();
}

fn token(seq: u64) -> Token {
    Token {
        run_id: "bench".into(),
        seq,
        w: (0..DIM).map(|i| (i as f64).sin()).collect(),
    }
}

#[divan::bench]
fn codec_token_roundtrip_p64(bencher: Bencher) {
    let message = Message::Token {
        token: token(7),
        avoid: Vec::new(),
    };
    bencher.bench(|| {
        let frame = codec::encode(divan::black_box(&message)).expect("encodes");
        codec::decode_frame(&frame).expect("decodes")
    });
}

#[divan::bench]
fn state_commit_p64(bencher: Bencher) {
    let dir = std::env::temp_dir().join(format!("dpwalk-bench-state-{}", std::process::id()));
    let mut states = StateDir::open(&dir).expect("state dir");
    let state = NodeState::fresh(RunHash([1; 32]), DIM);
    bencher.bench_local(|| states.commit(divan::black_box(&state)).expect("commits"));
    let _ = std::fs::remove_dir_all(&dir);
}

const RUN: &str = r#"
run-id = "bench"
seed = 1
steps = 1000000000
dimension = 64
[problem]
loss = "squared"
l1 = 0.001
[algorithm]
gamma = 1.0
lambda = 0.5
clip = 0.5
sigma = 0.05
[topology]
kind = "complete"
[[members]]
index = 0
peer-id = "MEMBER0"
[[members]]
index = 1
peer-id = "12D3KooWJWoaqZhDaoEFshF7Rh1bpY9ohihFhzcW6d69Lr2NASuq"
"#;

#[divan::bench]
fn receive_p64(bencher: Bencher) {
    // Member 0's key is fixed, so that the run file can name its PeerId.
    let key = libp2p_identity::Keypair::ed25519_from_bytes([1; 32]).expect("key");
    let text = RUN.replace("MEMBER0", &key.public().to_peer_id().to_base58());
    let run = Run::parse(&text, "bench").expect("run");
    let records = 100;
    let data = Dataset {
        features: (0..records * DIM)
            .map(|i| ((i * 7919) % 101) as f64 / 101.0 - 0.5)
            .collect(),
        labels: (0..records).map(|i| (i % 3) as f64 - 1.0).collect(),
        n_features: DIM,
        label_kind: LabelKind::Real,
    };
    let problem = node_problem(&run, 0, data).expect("problem");
    let Some(Algorithm::Admm(params)) = run.algorithm() else {
        panic!("the bench's run is an ADMM run with sigma given")
    };
    let prox = problem.local_prox(params.gamma()).expect("prox");
    let dir = std::env::temp_dir().join(format!("dpwalk-bench-learner-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let mut learner = Learner::open(
        &run,
        0,
        &key,
        &problem,
        NodeStep::Admm {
            prox: &prox,
            params,
        },
        &dir,
        &[],
    )
    .expect("learner");
    let mut seq = 0;
    bencher.bench_local(|| {
        let outcome = learner.receive(token(seq), None).expect("receives");
        seq += 2;
        matches!(outcome, Outcome::Forward(_))
    });
    let _ = std::fs::remove_dir_all(&dir);
}
