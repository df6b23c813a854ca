//! The local view of one contribution (DESIGN.md, "Privacy accounting").
//!
//! A contribution releases `u_i' − u_i = 2λ(Δ + η/2)`. Up to the public factor `2λ` this is a
//! Gaussian mechanism on `Δ`, whose replace-one sensitivity is `2C` (`‖Δ‖₂ ≤ C` for either
//! neighbouring dataset), with noise standard deviation `σ/2`. The Gaussian mechanism with
//! sensitivity `s` and noise `τ` has RDP `α s² / (2 τ²)` (Mironov 2017, Prop. 7), hence
//! `ε_loc(α) = α (2C)² / (2 (σ/2)²) = 8 α C² / σ²`.

/// `ε_loc(α) = 8 α C² / σ²` for each order; `+∞` when `σ = 0` (no privacy).
pub fn local_rdp(orders: &[f64], sigma: f64, clip: f64) -> Vec<f64> {
    orders
        .iter()
        .map(|&a| if sigma > 0.0 { 8.0 * a * clip * clip / (sigma * sigma) } else { f64::INFINITY })
        .collect()
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
}
