//! Throughput of the decentralized walk: the hot loop of the simulator (and of a daemon's step),
//! without evaluation.
//!
//! `cargo bench -p dpwalk-sim --bench walk`
//!
//! - `lasso_p64`: the paper's Lasso data, 1,000 users with one record each, p = 64, complete graph,
//!   σ > 0 and a clip: one step = prox_{γr}(w), Sherman–Morrison prox, clip, 64 Gaussians, the
//!   u and w updates, the next hop.
//! - `gaussians_p64`: drawing the 64 Gaussians alone from the same `ChaCha12Rng`
//!   (`dpwalk_core::noise::fill_standard_normal`, as the step does): the noise's share of a step.
//! - `chacha12_512_bytes`: the 512 bytes of ChaCha12 output those 64 samples start with: the
//!   generator's floor, which no sampler of 64-bit-quality Gaussians can go below.
//! - `logistic_adult`: logistic regression on UCI Adult (train + test, 45,222 rows, 105 features)
//!   over 100 users (~452 records each), Newton prox. Reads `../shared/data` when present (the
//!   development machines' copy of the full data set), else the vendored sample.

// A benchmark whose fixed set-up fails has nothing to measure: aborting is the right answer.
#![allow(clippy::expect_used, clippy::unwrap_used)]

use divan::Bencher;
use divan::counter::ItemsCount;
use dpwalk_core::data::synthetic::{LassoSpec, lasso};
use dpwalk_core::data::{DataSpec, Dataset, PartitionSpec, UserData, partition};
use dpwalk_core::noise::fill_standard_normal;
use dpwalk_core::params::AdmmParams;
use dpwalk_core::problem::{Loss, Problem, Regularizer};
use dpwalk_core::rng::{NodeRng, node_rng};
use dpwalk_core::step::StepScratch;
use dpwalk_core::topology::Topology;
use dpwalk_core::walk::{Turn, Update, visit};
use rand::Rng;
use std::path::Path;

fn main() {
    divan::main();
}

const STEPS: usize = 100_000;

fn lasso_problem(users: usize, dim: usize) -> Problem {
    let spec = LassoSpec {
        rows: users,
        dim,
        ..LassoSpec::default()
    };
    let data = lasso(&spec, &mut node_rng(1, 0))
        .expect("synthetic data")
        .data;
    let users = partition::iid(&data, users, &mut node_rng(2, 0)).expect("partition");
    Problem::new(Loss::Squared, Regularizer::L1 { l1: 1e-3 }, users).expect("problem")
}

/// Runs `steps` decentralized ADMM steps from a fresh state.
fn walk(b: Bencher, problem: &Problem, params: &AdmmParams, steps: usize) {
    let n = problem.n_users();
    let dim = problem.dim();
    let topology = Topology::Complete { n };
    let prox = problem.local_prox(params.gamma()).expect("prox");
    let mut u = vec![0.0; n * dim];
    let mut w = vec![0.0; dim];
    let mut rngs: Vec<NodeRng> = (0..n as u64).map(|i| node_rng(9, i)).collect();
    let mut scratch = StepScratch::new(dim, prox.scratch());
    let mut holder = 0;
    b.counter(ItemsCount::new(steps)).bench_local(|| {
        for _ in 0..steps {
            let u_i = &mut u[holder * dim..(holder + 1) * dim];
            let update = Update::Admm {
                prox: &prox,
                params,
                u: u_i,
            };
            let (_, next) = visit(
                problem,
                &topology,
                holder,
                update,
                Turn::Contribute,
                &mut w,
                &mut rngs[holder],
                &mut scratch,
            )
            .expect("the bench's vectors fit its problem");
            holder = next;
        }
    });
}

#[divan::bench(sample_count = 10)]
fn lasso_p64(b: Bencher) {
    let problem = lasso_problem(1000, 64);
    let params = AdmmParams::new(2.0, 0.5, 0.05, Some(0.1)).expect("params");
    walk(b, &problem, &params, STEPS);
}

#[divan::bench(sample_count = 10)]
fn chacha12_512_bytes(b: Bencher) {
    let mut rng = node_rng(9, 0);
    let mut out = [0u8; 512];
    b.counter(ItemsCount::new(STEPS)).bench_local(|| {
        for _ in 0..STEPS {
            rng.fill_bytes(&mut out);
            divan::black_box(&out);
        }
    });
}

#[divan::bench(sample_count = 10)]
fn gaussians_p64(b: Bencher) {
    let mut rng = node_rng(9, 0);
    let mut out = [0.0f64; 64];
    b.counter(ItemsCount::new(STEPS)).bench_local(|| {
        for _ in 0..STEPS {
            fill_standard_normal(&mut rng, &mut out);
            divan::black_box(&out);
        }
    });
}

fn concat(a: Dataset, b: Option<Dataset>) -> Dataset {
    let mut a = a;
    if let Some(b) = b {
        a.features.extend_from_slice(&b.features);
        a.labels.extend_from_slice(&b.labels);
    }
    a
}

fn adult_problem() -> Problem {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let shared = root.join("../shared/data");
    let (train, test) = if shared.join("adult.data.gz").exists() {
        (shared.join("adult.data.gz"), shared.join("adult.test.gz"))
    } else {
        (
            root.join("data/adult/adult-sample.data.gz"),
            root.join("data/adult/adult-sample.test.gz"),
        )
    };
    let spec: DataSpec = toml::from_str(&format!(
        "source = \"adult\"\npath = {:?}\ntest = {:?}\n",
        train.display().to_string(),
        test.display().to_string()
    ))
    .expect("spec");
    let loaded = spec.load(Path::new("."), 1).expect("adult");
    let all = concat(loaded.train, loaded.test);
    let users: UserData = PartitionSpec::default()
        .apply(all, 100, 1)
        .expect("partition");
    Problem::new(Loss::Logistic, Regularizer::L2 { l2: 1e-3 }, users).expect("problem")
}

#[divan::bench(sample_count = 5)]
fn logistic_adult(b: Bencher) {
    let problem = adult_problem();
    let params = AdmmParams::new(5.0, 0.5, 0.05, Some(0.1)).expect("params");
    walk(b, &problem, &params, 200);
}
