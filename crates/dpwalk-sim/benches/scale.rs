//! Memory and time of a million-user walk: 1,000,000 users with one record each, p = 64, on the
//! complete graph, 1,000,000 steps. Prints the peak resident set size (`VmHWM`).
//!
//! `cargo bench -p dpwalk-sim --bench scale`
//!
//! Memory is O(n·p): the users' records (n·p f64), their private `u_i` (n·p f64), their labels and
//! one `ChaCha12Rng` each (320 bytes).

// A benchmark whose fixed set-up fails has nothing to measure: aborting is the right answer.
#![allow(clippy::expect_used, clippy::unwrap_used)]

use dpwalk_core::data::partition;
use dpwalk_core::data::synthetic::{LassoSpec, lasso};
use dpwalk_core::params::AdmmParams;
use dpwalk_core::problem::{Loss, Problem, Regularizer};
use dpwalk_core::rng::{NodeRng, node_rng};
use dpwalk_core::step::StepScratch;
use dpwalk_core::topology::Topology;
use dpwalk_core::walk::{Turn, Update, visit};
use std::time::Instant;

fn peak_rss_mib() -> Option<f64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    let kib: f64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib / 1024.0)
}

fn main() {
    // `cargo bench` passes `--bench`; `cargo test --benches` would pass nothing: run only for real.
    if !std::env::args().any(|a| a == "--bench") {
        return;
    }
    let n = 1_000_000;
    let dim = 64;
    let t = Instant::now();
    let spec = LassoSpec {
        rows: n,
        dim,
        ..LassoSpec::default()
    };
    let data = lasso(&spec, &mut node_rng(1, 0))
        .expect("synthetic data")
        .data;
    let users = partition::iid(&data, n, &mut node_rng(2, 0)).expect("partition");
    drop(data);
    let problem =
        Problem::new(Loss::Squared, Regularizer::L1 { l1: 1e-3 }, users).expect("problem");
    let params = AdmmParams::new(2.0, 0.5, 0.05, Some(0.1)).expect("params");
    let prox = problem.local_prox(params.gamma()).expect("prox");
    let topology = Topology::Complete { n };
    let mut u = vec![0.0; n * dim];
    let mut w = vec![0.0; dim];
    let mut rngs: Vec<NodeRng> = (0..n as u64).map(|i| node_rng(9, i)).collect();
    let mut scratch = StepScratch::new(dim, prox.scratch());
    let setup = t.elapsed().as_secs_f64();
    let t = Instant::now();
    let steps = 1_000_000;
    let mut holder = 0;
    for _ in 0..steps {
        let u_i = &mut u[holder * dim..(holder + 1) * dim];
        let update = Update::Admm {
            prox: &prox,
            params: &params,
            u: u_i,
        };
        let (_, next) = visit(
            &problem,
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
    let run = t.elapsed().as_secs_f64();
    println!(
        "scale: n = {n}, p = {dim}: setup {setup:.2} s, {steps} steps in {run:.2} s ({:.0} steps/s), peak RSS {:.0} MiB",
        steps as f64 / run,
        peak_rss_mib().unwrap_or(f64::NAN)
    );
}
