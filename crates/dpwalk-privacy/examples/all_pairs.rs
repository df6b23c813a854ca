//! Times the certified all-pairs `E[1/M]` on a 1,000-user graph (random 4-regular or ring).
//!
//! `cargo run --release -p dpwalk-privacy --example all_pairs -- [regular|ring] [n]`

use dpwalk_privacy::network::{HittingOptions, inverse_hitting_all_pairs};
use std::time::Instant;

/// Union of two random Hamiltonian cycles: a 4-regular (multi)graph, mixing like a random one.
fn two_cycles(n: usize, seed: u64) -> Vec<Vec<(usize, f64)>> {
    let mut state = seed;
    let mut next = move || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state
    };
    let mut rows = vec![Vec::new(); n];
    for _ in 0..2 {
        let mut perm: Vec<usize> = (0..n).collect();
        for i in (1..n).rev() {
            perm.swap(i, (next() % (i as u64 + 1)) as usize);
        }
        for w in 0..n {
            let (a, b) = (perm[w], perm[(w + 1) % n]);
            rows[a].push((b, 0.25));
            rows[b].push((a, 0.25));
        }
    }
    rows
}

fn ring(n: usize) -> Vec<Vec<(usize, f64)>> {
    (0..n)
        .map(|i| vec![((i + 1) % n, 0.5), ((i + n - 1) % n, 0.5)])
        .collect()
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().collect();
    let kind = args.get(1).map_or("regular", String::as_str);
    let n: usize = args.get(2).map_or(Ok(1000), |s| s.parse())?;
    let p = if kind == "ring" {
        ring(n)
    } else {
        two_cycles(n, 0x9e37_79b9_7f4a_7c15)
    };
    let start = Instant::now();
    let mut opts = HittingOptions::default();
    if let Ok(b) = std::env::var("BLOCK") {
        opts.block = b.parse()?;
    }
    if let Ok(m) = std::env::var("MAX_STEPS") {
        opts.max_steps = m.parse()?;
    }
    let res = inverse_hitting_all_pairs(&p, &opts)?;
    let secs = start.elapsed().as_secs_f64();
    let (j, worst) = res.worst_observer(0).ok_or("no observer")?;
    println!(
        "{kind} n={n}: {secs:.2} s, T={} converged={} max_rel_gap={:.2e} max_abs_gap={:.2e} \
         max_gap_over_worst={:.2e}; worst observer of 0: {j} with E[1/M] <= {worst:.6}",
        res.steps, res.converged, res.max_rel_gap, res.max_abs_gap, res.max_gap_over_worst
    );
    Ok(())
}
