//! Noise of density `∝ exp(−ν ‖ε‖₂)` on `R^d`, the perturbation of penalty-perturbation ADMM.
//!
//! In polar coordinates the density of the radius is `∝ r^{d−1} e^{−ν r}`, a Gamma law of shape
//! `d` and rate `ν` (mean `d/ν`), independent of the direction, which is uniform on the sphere.
//! So: a direction from `d` standard normals, normalized (rotation invariance), and a radius
//! `Gamma(d, 1)/ν`, drawn as a sum of `d` standard exponentials (exact for the integer shape `d`,
//! and infallible, unlike a general Gamma sampler's constructor). `ν = ∞` gives 0: no noise.
//!
//! Order on the node's stream: the `d` normals (bulk, [`fill_standard_normal`]), then the `d`
//! exponentials; the same count whatever `ν`, so a node's stream position depends only on the
//! number of rounds.

use crate::noise::fill_standard_normal;
use crate::problem::linalg::norm;
use crate::rng::NodeRng;
use rand_distr::{Distribution, Exp1};

/// Fills `out` with one draw of density `∝ exp(−ν ‖ε‖₂)`, for `ν ∈ (0, ∞]` (checked by the
/// parameters, not here).
pub(crate) fn fill_radial(rng: &mut NodeRng, nu: f64, out: &mut [f64]) {
    // An all-zero normal vector has no direction; it has probability 0, but is redrawn rather
    // than divided by.
    let mut length = 0.0;
    while length == 0.0 {
        fill_standard_normal(rng, out);
        length = norm(out);
    }
    let gamma: f64 = (0..out.len())
        .map(|_| -> f64 { Exp1.sample(&mut *rng) })
        .sum();
    let scale = gamma / nu / length;
    out.iter_mut().for_each(|v| *v *= scale);
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rng::node_rng;

    /// The radius has mean `d/ν` and variance `d/ν²`; the coordinates have mean 0 and
    /// `E‖ε‖² = d(d+1)/ν²`. Seeded, so deterministic; the tolerances are 5 standard errors of
    /// the sample means, derived from the law's moments.
    #[test]
    fn norm_and_coordinates_have_the_laws_moments() {
        let samples = 20_000;
        for (d, nu) in [(1usize, 2.0f64), (3, 0.5), (10, 4.0)] {
            let mut rng = node_rng(17, d as u64);
            let mut eps = vec![0.0; d];
            let (mut sum_r, mut sum_r2) = (0.0, 0.0);
            let mut sum_coord = vec![0.0; d];
            for _ in 0..samples {
                fill_radial(&mut rng, nu, &mut eps);
                let r = norm(&eps);
                sum_r += r;
                sum_r2 += r * r;
                sum_coord.iter_mut().zip(&eps).for_each(|(s, e)| *s += e);
            }
            let n = samples as f64;
            let df = d as f64;
            let mean_r = sum_r / n;
            let se_r = df.sqrt() / nu / n.sqrt();
            assert!(
                (mean_r - df / nu).abs() < 5.0 * se_r,
                "d = {d}, ν = {nu}: mean norm {mean_r} vs {}",
                df / nu
            );
            // E r² = d(d+1)/ν², Var r² = E r⁴ − (E r²)² with E r⁴ = d(d+1)(d+2)(d+3)/ν⁴.
            let m2 = df * (df + 1.0) / (nu * nu);
            let m4 = df * (df + 1.0) * (df + 2.0) * (df + 3.0) / nu.powi(4);
            let se_r2 = ((m4 - m2 * m2) / n).sqrt();
            assert!((sum_r2 / n - m2).abs() < 5.0 * se_r2);
            // Each coordinate: variance (d+1)/ν².
            let se_coord = ((df + 1.0) / (nu * nu) / n).sqrt();
            for s in &sum_coord {
                assert!((s / n).abs() < 5.0 * se_coord);
            }
        }
    }

    #[test]
    fn infinite_rate_is_no_noise_and_draws_alike() {
        let (mut a, mut b) = (node_rng(3, 0), node_rng(3, 0));
        let mut eps = vec![1.0; 4];
        fill_radial(&mut a, f64::INFINITY, &mut eps);
        assert_eq!(eps, vec![0.0; 4]);
        fill_radial(&mut b, 1.0, &mut eps);
        assert_eq!(a.get_word_pos(), b.get_word_pos());
    }
}
