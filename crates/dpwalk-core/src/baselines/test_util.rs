//! Helpers of the baselines' tests.

use crate::rng::{NodeRng, node_rng};

/// `‖a − b‖₂`.
pub(crate) fn dist(a: &[f64], b: &[f64]) -> f64 {
    a.iter()
        .zip(b)
        .map(|(x, y)| (x - y).powi(2))
        .sum::<f64>()
        .sqrt()
}

/// The streams of nodes `0..n` of the run seeded by `seed`.
pub(crate) fn streams(seed: u64, n: usize) -> Vec<NodeRng> {
    (0..n as u64).map(|i| node_rng(seed, i)).collect()
}
