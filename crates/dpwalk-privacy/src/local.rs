//! The local view of one contribution (DESIGN.md, "Privacy accounting").
//!
//! A contribution releases `u_i' − u_i = 2λ(Δ + η/2)`. Up to the public factor `2λ` this is a
//! Gaussian mechanism on `Δ`, whose replace-one sensitivity is `2C` (`‖Δ‖₂ ≤ C` for either
//! neighbouring dataset), with noise standard deviation `σ/2`. The Gaussian mechanism with
//! sensitivity `s` and noise `τ` has RDP `α s² / (2 τ²)` (Mironov 2017, Prop. 7), hence
//! `ε_loc(α) = α (2C)² / (2 (σ/2)²) = 8 α C² / σ²`.
//!
//! The same mechanism is `μ`-GDP with `μ = 2C/(σ/2) = 4C/σ`, and `K` contributions are
//! `4C√K/σ`-GDP; the figure printed is that composition's exact (ε, δ) ([`crate::gdp`]), with the
//! RDP conversion as a cross-check.
//!
//! `K` contributions compose additively: `K · ε_loc(α)`. This view needs no assumption: the
//! eavesdropper sees every increment, so user `i`'s private state `u_i` (its past increments) is
//! a function of what was released and adaptive composition applies as stated.

use crate::Noise;
use crate::rdp::{Orders, RdpCurve};

/// `ε_loc(α) = 8 α C² / σ²`: the one place this formula is written.
pub(crate) fn eps_loc(alpha: f64, sigma: f64, clip: f64) -> f64 {
    8.0 * alpha * clip * clip / (sigma * sigma)
}

/// `μ² = (2C / (σ/2))² = 16 C² / σ²` of one contribution (`ε_loc(α) = α μ²/2`): the one place
/// this formula is written.
pub(crate) fn mu2_loc(sigma: f64, clip: f64) -> f64 {
    16.0 * clip * clip / (sigma * sigma)
}

/// `ε_loc(α) = 8 α C² / σ²` for each order; `+∞` when `σ = 0` (no privacy). Unvalidated inputs,
/// for reporting; the accountant itself uses [`local_view`].
pub fn local_rdp(orders: &[f64], sigma: f64, clip: f64) -> Vec<f64> {
    orders
        .iter()
        .map(|&a| {
            if sigma > 0.0 {
                eps_loc(a, sigma, clip)
            } else {
                f64::INFINITY
            }
        })
        .collect()
}

/// The local view of `contributions` contributions: `K · 8αC²/σ²` at each order, a composition
/// of Gaussian mechanisms with `μ² = 16KC²/σ²`, converted exactly ([`crate::gdp`]).
pub fn local_view(orders: &Orders, noise: Noise, contributions: u64) -> RdpCurve {
    let k = contributions as f64;
    let values = orders
        .as_slice()
        .iter()
        .map(|&a| k * eps_loc(a, noise.sigma(), noise.clip()));
    RdpCurve::from_computed(orders.clone(), values)
        .with_gaussian_bound(k * mu2_loc(noise.sigma(), noise.clip()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn matches_gaussian_mechanism() {
        // sensitivity 2, noise 0.5 → α·4/(2·0.25) = 8α
        let r = local_rdp(&[2.0, 10.0], 1.0, 1.0);
        assert_eq!(r, vec![16.0, 80.0]);
        assert!(local_rdp(&[2.0], 0.0, 1.0)[0].is_infinite());
    }

    #[test]
    fn view_is_the_subsampled_gaussian_at_rate_one_times_k() {
        let g = Orders::new(&[2.0, 10.0]).unwrap();
        let noise = Noise::new(4.0, 1.0).unwrap();
        // noise multiplier (σ/2)/(2C) = 1
        let one = crate::mechanism::gaussian(&g, 1.0).unwrap();
        assert_eq!(local_view(&g, noise, 1), one);
        assert_eq!(local_view(&g, noise, 3).values(), &[3.0, 15.0]);
    }
}
