//! Throughput of `dpwalk audit`'s trials: short walks of a 100-user swarm from the zero state
//! through the shared `visit`, as the audit runs them (one thread here; the audit spreads trials
//! over all cores with rayon).
//!
//! `cargo bench -p dpwalk-sim --bench audit`
//!
//! - `trials_100_users`: one world of a white-box audit of the paper's Lasso data (1,250 rows,
//!   1,000 for training: 10 records per user, p = 64 + the dedicated feature), complete graph,
//!   trials of 2n = 200 hops (the audit's default), counted in trials.
//! - `estimate_200k_runs`: the statistics of one statistic at the run count that brings the
//!   local view's GDP figure to 0.8 of its bound at ε = 1 (2·10⁵ runs per world, N(0, 1) against
//!   N(0.24, 1)): sorting, the threshold choices on the selection half, Clopper–Pearson on the
//!   evaluation half.

// A benchmark whose fixed set-up fails has nothing to measure: aborting is the right answer.
#![allow(clippy::expect_used, clippy::unwrap_used)]

use divan::Bencher;
use divan::counter::ItemsCount;
use dpwalk_core::noise::fill_standard_normal;
use dpwalk_core::rng::node_rng;
use dpwalk_sim::audit::canary::{self, CanaryKind};
use dpwalk_sim::audit::driver::trial_seed;
use dpwalk_sim::audit::estimate::{Options, estimate};
use dpwalk_sim::audit::trial::{Scratch, World, run_trial};
use dpwalk_sim::scenario::{LoadedScenario, parse};
use dpwalk_sim::simulate::prepare;
use std::path::{Path, PathBuf};

fn main() {
    divan::main();
}

const TRIALS: usize = 2_000;

const SCENARIO: &str = r#"
seed = 7
users = 100
steps = 200
[data]
source = "synthetic-lasso"
rows = 1250
dim = 64
test-fraction = 0.2
[problem]
loss = "squared"
l1 = 0.001
[algorithm]
gamma = 2.0
lambda = 0.5
sigma = 0.05
clip = 0.1
"#;

#[divan::bench(sample_count = 10)]
fn trials_100_users(b: Bencher) {
    let loaded = LoadedScenario::new(
        parse(SCENARIO, Path::new("bench.toml"), &[]).unwrap(),
        PathBuf::from("."),
        "bench",
    )
    .expect("the scenario checks");
    let prepared = prepare(&loaded).unwrap();
    let point = loaded.points()[0].given().expect("sigma is given");
    let algorithm = *point.method.walk().unwrap();
    let base = &prepared.problem;
    let worlds = canary::for_problem(
        base,
        &algorithm,
        0,
        CanaryKind::WhiteBox,
        canary::Pick::Strongest,
    )
    .unwrap();
    let problem = &worlds.problems[1];
    let world = World::new(
        problem,
        algorithm,
        &prepared.topologies[0].topology,
        &worlds.canary,
        1,
        200,
    )
    .unwrap();
    let mut scratch = Scratch::new(&world);
    let mut r = 0;
    b.counter(ItemsCount::new(TRIALS)).bench_local(|| {
        for _ in 0..TRIALS {
            let t = run_trial(&world, &mut scratch, trial_seed(7, 1, r), true).unwrap();
            divan::black_box(t);
            r += 1;
        }
    });
}

/// `runs` draws of `N(mean, 1)`.
fn gaussian(seed: u64, runs: usize, mean: f64) -> Vec<f64> {
    let mut v = vec![0.0; runs];
    fill_standard_normal(&mut node_rng(seed, 0), &mut v);
    v.iter_mut().for_each(|x| *x += mean);
    v
}

#[divan::bench(sample_count = 10)]
fn estimate_200k_runs(b: Bencher) {
    let zero = gaussian(1, 200_000, 0.0);
    let one = gaussian(2, 200_000, 0.24);
    let opts = Options::default();
    b.bench_local(|| divan::black_box(estimate(&zero, &one, &opts).unwrap()));
}
