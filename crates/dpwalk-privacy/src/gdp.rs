//! The exact (ε, δ) of a composition of Gaussian mechanisms: Gaussian differential privacy.
//!
//! A Gaussian mechanism with L2 sensitivity `s` and noise `N(0, τ² I)` is `μ`-GDP with `μ = s/τ`:
//! distinguishing any two neighbouring inputs is exactly as hard as telling `N(0, 1)` from
//! `N(μ, 1)` (Dong, Roth & Su 2022, "Gaussian Differential Privacy", Thm. 2.7). Adaptive
//! composition of `μ_k`-GDP mechanisms is `√(Σ μ_k²)`-GDP, exactly (their Cor. 3.3), and a `μ`-GDP
//! mechanism is `(ε, δ(ε))`-DP for every `ε ≥ 0` with
//! `δ(ε) = Φ(−ε/μ + μ/2) − e^ε Φ(−ε/μ − μ/2)` (their Cor. 2.13; Balle & Wang 2018, Thm. 8), and
//! for no smaller δ: this is the mechanism's privacy profile, the tightest `(ε, δ)` statement.
//! The RDP curve of the same composition is `α μ²/2`, and its conversions
//! ([`crate::rdp::Conversion`]) are above this one: at δ = 10⁻⁶ on the default grid by 8.3 % for
//! `μ` = 0.1, 7.3 % for 0.5 and 6.3 % for 2 (`tests/gaussian_exact.rs` prints them).
//!
//! # Computing ε at a given δ
//! `δ(ε)` decreases in `ε`, so [`epsilon`] bisects for the smallest `ε` with `δ(ε) ≤ δ` and
//! returns the upper end of the final bracket: the answer always meets δ and is above the exact
//! value by at most [`REL_TOL`] relative. It depends on `μ` and δ only, so every driver computes
//! the same figure. The bracket starts at `[0, μ²/2 + μ√(2 ln(1/δ))]`, whose upper end is the
//! classic RDP conversion at its best continuous order (so it meets δ). The two terms are
//! evaluated in log space through `ln erfc` (with its asymptotic series in the far tail), so
//! nothing overflows or underflows where the answer lies. To absorb rounding in their difference
//! (it cancels at most to the relative size `δ/Φ(−ε/μ + μ/2)`), the bracket is searched against
//! `δ (1 − 10⁻⁹)`; where the computed profile does not confirm the upper end, the answer is `None`
//! and the caller keeps its RDP figure instead of printing a smaller one.

use std::f64::consts::{LN_2, SQRT_2};

/// The relative precision of the exact ε.
pub const REL_TOL: f64 = 1e-10;

/// The fraction of δ the computed profile must stay within (rounding margin, module docs).
const DELTA_MARGIN: f64 = 1.0 - 1e-9;

/// `ln erfc(x)`, accurate in the far right tail where `erfc` underflows.
pub(crate) fn log_erfc(x: f64) -> f64 {
    if x < 25.0 {
        libm::erfc(x).ln()
    } else {
        // erfc(x) = e^{−x²}/(x√π) · (1 − 1/(2x²) + 3/(4x⁴) − 15/(8x⁶) + 105/(16x⁸) − …);
        // at x ≥ 25 the omitted term is below 1e-14.
        let y = 1.0 / (2.0 * x * x);
        let series = 1.0 - y * (1.0 - 3.0 * y * (1.0 - 5.0 * y * (1.0 - 7.0 * y)));
        -x * x - x.ln() - 0.5 * std::f64::consts::PI.ln() + series.ln()
    }
}

/// `ln Φ(x)`, accurate in the far left tail.
fn log_phi(x: f64) -> f64 {
    // Φ(x) = ½ erfc(−x/√2).
    log_erfc(-x / SQRT_2) - LN_2
}

/// `δ(ε)` of a `μ`-GDP mechanism (module docs), for `μ > 0` and `ε ≥ 0`.
pub fn delta(mu: f64, epsilon: f64) -> f64 {
    let a = -epsilon / mu + mu / 2.0;
    let b = -epsilon / mu - mu / 2.0;
    let first = log_phi(a).exp();
    let second = (epsilon + log_phi(b)).exp();
    (first - second).max(0.0)
}

/// The smallest `ε ≥ 0` (to [`REL_TOL`], from above) at which a `μ`-GDP mechanism is
/// `(ε, δ)`-DP, for `μ ≥ 0` finite and `δ ∈ (0, 1)`; `None` when the arithmetic cannot confirm
/// a bracket (module docs).
pub fn epsilon(mu: f64, delta_target: f64) -> Option<f64> {
    if mu == 0.0 {
        return Some(0.0);
    }
    let classic = mu * mu / 2.0 + mu * (2.0 * (1.0 / delta_target).ln()).sqrt();
    if !(mu > 0.0 && classic.is_finite() && delta_target > 0.0 && delta_target < 1.0) {
        return None;
    }
    let target = delta_target * DELTA_MARGIN;
    let meets = |e: f64| {
        let d = delta(mu, e);
        d.is_finite() && d <= target
    };
    if meets(0.0) {
        return Some(0.0);
    }
    if !meets(classic) {
        return None;
    }
    let (mut lo, mut hi) = (0.0_f64, classic);
    while hi - lo > REL_TOL * hi {
        let mid = 0.5 * (lo + hi);
        if meets(mid) {
            hi = mid;
        } else {
            lo = mid;
        }
    }
    Some(hi)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn log_erfc_is_continuous_at_the_switch() {
        let below = libm::erfc(24.999_999).ln();
        let above = log_erfc(25.0);
        assert!((below - above).abs() < 1e-4, "{below} vs {above}");
        assert!((log_erfc(0.0) - 0.0).abs() < 1e-15);
        assert!(log_erfc(1e3).is_finite());
    }

    #[test]
    fn the_profile_is_a_decreasing_function_from_the_total_variation() {
        let mu: f64 = 0.5;
        // δ(0) is the total variation between N(0,1) and N(μ,1): 2Φ(μ/2) − 1.
        let tv = 1.0 - libm::erfc(mu / 2.0 / SQRT_2);
        assert!((delta(mu, 0.0) - tv).abs() < 1e-15);
        let mut last = delta(mu, 0.0);
        for k in 1..200 {
            let d = delta(mu, f64::from(k) * 0.05);
            assert!(d <= last && d >= 0.0);
            last = d;
        }
    }

    #[test]
    fn epsilon_meets_delta_and_is_from_above() {
        for mu in [0.01_f64, 0.1, 0.5, 1.0, 3.0, 10.0] {
            for target in [1e-3_f64, 1e-6, 1e-10] {
                let classic = mu * mu / 2.0 + mu * (2.0 * (1.0 / target).ln()).sqrt();
                let e = epsilon(mu, target).unwrap();
                assert!(delta(mu, e) <= target, "μ {mu}, δ {target}");
                assert!(e <= classic);
                let below = e * (1.0 - 1e-8);
                assert!(
                    delta(mu, below) > target * DELTA_MARGIN,
                    "μ {mu}, δ {target}"
                );
            }
        }
        // A tiny μ is (0, δ)-DP when δ is above the total variation.
        assert_eq!(epsilon(1e-9, 1e-6), Some(0.0));
        assert_eq!(epsilon(0.0, 1e-6), Some(0.0));
        assert_eq!(epsilon(f64::INFINITY, 1e-6), None);
        assert_eq!(epsilon(f64::NAN, 1e-6), None);
    }
}
