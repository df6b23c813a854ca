//! Speed of the accountant on the questions the CLI and the daemon ask.
//!
//! `cargo bench -p dpwalk-privacy --bench accountant`
//!
//! - `complete_million_one_user`: one user's local and network figures (one DP-SGD contribution,
//!   final model 1,000 hops later) on the complete graph of 1,000,000 users (its geometric law
//!   built, then the mixture at every order): what `dpwalk account walk --complete --step
//!   dp-sgd` computes.
//! - `all_pairs_regular_1000` / `all_pairs_ring_1000`: the certified first-passage laws of every
//!   ordered pair of a random 4-regular graph and of a ring, 1,000 users each, folded into one
//!   envelope per user (one core). Target: under 10 s.
//! - `pair_matrix_regular_1000`: the network ε of every ordered pair of the 4-regular graph (the
//!   laws recomputed and each pair's mixture evaluated): `dpwalk account walk --pairs`.
//! - `calibrate_local_1000`: the smallest σ for (1, 1e-6) against the local view, 100
//!   contributions: what a `[budget]` run calibrates.
//! - `subsampled_gaussian_default_grid`: the Poisson-subsampled Gaussian's curve over the default
//!   grid for a few `(q, z)` of DP-SGD and federated runs (its fractional orders cost a series each).
//! - `calibrate_federated_complete_1000`: the smallest σ for (1, 1e-6) against the federated view,
//!   100 rounds at sampling rate 0.1 (a subsampled-Gaussian curve per bisection step).
//! - `ledger_append_fsync`: one durable ledger append (write + `fdatasync`) in the system's
//!   temporary directory: the latency a node adds before forwarding the token.

// A benchmark on fixed, valid inputs: a failure is a bug to see at once, not an input to handle.
#![allow(clippy::expect_used)]

use divan::Bencher;
use dpwalk_core::topology::{Topology, TopologyKind, TopologySpec};
use dpwalk_privacy::Noise;
use dpwalk_privacy::calibrate::{View, calibrate};
use dpwalk_privacy::ledger::{Ledger, LedgerOwner};
use dpwalk_privacy::local::local_view;
use dpwalk_privacy::mechanism::subsampled_gaussian;
use dpwalk_privacy::network::{Charges, HittingOptions};
use dpwalk_privacy::rdp::{Conversion, Orders};
use dpwalk_privacy::walk::{Passage, Setup, pair_epsilons, user_figures};
use std::path::Path;

fn main() {
    divan::main();
}

fn setup() -> Setup {
    Setup {
        orders: Orders::default_grid(),
        noise: Noise::new(50.0, 1.0).expect("valid noise"),
        delta: 1e-6,
        conversion: Conversion::Tight,
    }
}

#[divan::bench]
fn complete_million_one_user(b: Bencher) {
    let setup = setup();
    let topology = Topology::Complete { n: 1_000_000 };
    b.bench_local(|| {
        let h = Passage::for_topology(divan::black_box(&topology), &HittingOptions::default())
            .expect("complete graph");
        user_figures(&setup, Some(&h), 0, &Charges::at_steps([0], 1000)).expect("figures")
    });
}

fn graph(kind: TopologyKind) -> Topology {
    let mut spec = TopologySpec::new(kind);
    spec.nodes = Some(1000);
    if kind == TopologyKind::RandomRegular {
        spec.degree = Some(4);
    }
    spec.build(None, Path::new("."), 1).expect("topology")
}

fn all_pairs(b: Bencher, kind: TopologyKind) {
    let topology = graph(kind);
    b.bench_local(|| {
        Passage::for_topology(&topology, &HittingOptions::default()).expect("all pairs")
    });
}

#[divan::bench(sample_count = 3, sample_size = 1)]
fn all_pairs_regular_1000(b: Bencher) {
    all_pairs(b, TopologyKind::RandomRegular);
}

#[divan::bench(sample_count = 3, sample_size = 1)]
fn all_pairs_ring_1000(b: Bencher) {
    all_pairs(b, TopologyKind::Ring);
}

#[divan::bench(sample_count = 3, sample_size = 1)]
fn pair_matrix_regular_1000(b: Bencher) {
    let topology = graph(TopologyKind::RandomRegular);
    let passage = Passage::for_topology(&topology, &HittingOptions::default()).expect("laws");
    let charges = vec![Charges::at_steps([0], 1000); 1000];
    let setup = setup();
    b.bench_local(|| pair_epsilons(&setup, &passage, &charges).expect("pairs"));
}

#[divan::bench(sample_count = 20)]
fn calibrate_local_1000(b: Bencher) {
    let orders = Orders::default_grid();
    let view = View::Local { contributions: 100 };
    b.bench_local(|| {
        calibrate(&view, &orders, 1.0, 1.0, 1e-6, Conversion::Tight, 1e-6).expect("calibrated")
    });
}

#[divan::bench(args = [(0.001, 1.0), (0.01, 1.0), (0.1, 2.0), (0.01, 5.0)])]
fn subsampled_gaussian_default_grid(b: Bencher, (q, z): (f64, f64)) {
    let orders = Orders::default_grid();
    b.bench_local(|| {
        subsampled_gaussian(&orders, divan::black_box(q), divan::black_box(z)).expect("curve")
    });
}

#[divan::bench(sample_count = 20)]
fn calibrate_federated_complete_1000(b: Bencher) {
    let orders = Orders::default_grid();
    let view = View::Federated {
        rounds: 100,
        sampling_rate: 0.1,
    };
    b.bench_local(|| {
        calibrate(&view, &orders, 1.0, 1.0, 1e-6, Conversion::Tight, 1e-6).expect("calibrated")
    });
}

#[divan::bench(sample_count = 200)]
fn ledger_append_fsync(b: Bencher) {
    let dir = std::env::temp_dir().join(format!("dpwalk-ledger-bench-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let path = dir.join("user-0.ledger");
    let _ = std::fs::remove_file(&path);
    let orders = Orders::default_grid();
    let curve = local_view(&orders, setup().noise, 1);
    let mut ledger = Ledger::create(
        &path,
        &orders,
        LedgerOwner {
            run: [0; 32],
            member: 0,
        },
    )
    .expect("ledger");
    let mut seq = 0;
    b.bench_local(|| {
        seq += 1;
        ledger.append(seq, &curve).expect("append");
    });
    let _ = std::fs::remove_dir_all(&dir);
}
