//! Laplace noise: `Laplace(0, b)` samples by the inverse CDF, one uniform per coordinate.
//!
//! `u ~ U(0, 1)` open at both ends (`Open01`, so `ln` never sees 0), `v = u − ½ ∈ (−½, ½)`, and
//! `ξ = −b·sign(v)·ln(1 − 2|v|)`, with `ln_1p` so that small `|v|` keep their precision. The
//! subtraction `u − ½` is exact for every `Open01` value (multiples of 2⁻⁵³ in `(0, 1)`).
//!
//! For a daemon exposed to real adversaries, note the known floating-point weakness of naive
//! Laplace sampling (Mironov 2012: the set of reachable doubles depends on the mean); the simulator
//! does not need to care, and neither does a run whose adversary sees only the released values.

use crate::rng::NodeRng;
use rand::RngExt;
use rand::distr::Open01;

/// Fills `out` with independent `Laplace(0, scale)` samples from `rng`, one uniform each, in
/// coordinate order. `scale = 0` gives zeros and draws the same uniforms (the stream's position
/// does not depend on the noise level).
pub fn fill_laplace(rng: &mut NodeRng, scale: f64, out: &mut [f64]) {
    for o in out {
        let u: f64 = rng.sample(Open01);
        let v = u - 0.5;
        *o = -scale * v.signum() * (-2.0 * v.abs()).ln_1p();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rng::node_rng;

    /// The empirical mean of `|ξ|` is `b` (the Laplace scale), and of `ξ²` is `2b²`. With `N`
    /// samples the standard error of the mean of `|ξ|` is `b/√N` (Var |ξ| = b²), and of `ξ²` is
    /// `b²·√(20/N)` (E ξ⁴ = 24b⁴); six standard errors make a seeded false alarm impossible in
    /// practice and still catch a scale off by 1 %.
    #[test]
    fn empirical_scale_matches_the_parameter() {
        let n = 400_000;
        for (seed, b) in [(1, 1.0), (2, 0.003), (3, 250.0)] {
            let mut rng = node_rng(seed, 0);
            let mut xi = vec![0.0; n];
            fill_laplace(&mut rng, b, &mut xi);
            let nf = n as f64;
            let mean: f64 = xi.iter().sum::<f64>() / nf;
            let mean_abs: f64 = xi.iter().map(|x| x.abs()).sum::<f64>() / nf;
            let mean_sq: f64 = xi.iter().map(|x| x * x).sum::<f64>() / nf;
            let se = 1.0 / nf.sqrt();
            assert!(
                mean.abs() <= 6.0 * b * 2f64.sqrt() * se,
                "mean {mean}, b = {b}"
            );
            assert!(
                (mean_abs - b).abs() <= 6.0 * b * se,
                "E|ξ| = {mean_abs}, b = {b}"
            );
            assert!(
                (mean_sq - 2.0 * b * b).abs() <= 6.0 * b * b * 20f64.sqrt() * se,
                "E ξ² = {mean_sq}, 2b² = {}",
                2.0 * b * b
            );
            // The tails: P(|ξ| > 3b) = e⁻³, a Bernoulli proportion with its own standard error.
            let p = (-3.0f64).exp();
            let tail = xi.iter().filter(|x| x.abs() > 3.0 * b).count() as f64 / nf;
            assert!(
                (tail - p).abs() <= 6.0 * (p * (1.0 - p) / nf).sqrt(),
                "tail {tail}"
            );
            assert!(xi.iter().all(|x| x.is_finite()));
        }
    }

    #[test]
    fn zero_scale_gives_zeros_and_the_same_stream_position() {
        let (mut a, mut b) = (node_rng(5, 1), node_rng(5, 1));
        let mut out = vec![1.0; 10];
        fill_laplace(&mut a, 0.0, &mut out);
        assert!(out.iter().all(|&x| x == 0.0));
        fill_laplace(&mut b, 2.0, &mut out);
        assert_eq!(a.get_word_pos(), b.get_word_pos());
    }
}
