//! The standard normal distribution and Gaussian differential privacy (Dong, Roth & Su 2019):
//! what the Gaussian-DP variant of the audit (Nasr et al. 2023) needs, and the exact privacy
//! curve of the Gaussian mechanism that the audit's own tests compare against.
//!
//! A mechanism is `μ`-GDP when no test between two neighbouring inputs does better than telling
//! `N(0, 1)` from `N(μ, 1)`. Its exact `(ε, δ)` curve (Balle & Wang 2018, Theorem 8; Dong, Roth &
//! Su 2019, Corollary 2.13) is
//! `δ(ε) = Φ(−ε/μ + μ/2) − e^ε Φ(−ε/μ − μ/2)`.

use std::f64::consts::SQRT_2;

/// `Φ(x)`, the standard normal distribution function (accurate in both tails via `erfc`).
pub fn cdf(x: f64) -> f64 {
    0.5 * libm::erfc(-x / SQRT_2)
}

/// `Φ⁻¹(p)` for `p ∈ (0, 1)` by bisection on [`cdf`] (`±∞` at 0 and 1). Slow (about 100 `erfc`
/// calls) but exact to the last bits, which is what bounds need.
pub fn quantile(p: f64) -> f64 {
    if p <= 0.0 {
        return f64::NEG_INFINITY;
    }
    if p >= 1.0 {
        return f64::INFINITY;
    }
    let (mut lo, mut hi) = (-40.0f64, 40.0f64);
    for _ in 0..200 {
        let mid = 0.5 * (lo + hi);
        if mid <= lo || mid >= hi {
            break;
        }
        if cdf(mid) < p {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    0.5 * (lo + hi)
}

/// The smallest `δ` at which a `μ`-GDP mechanism is `(ε, δ)`-DP.
pub fn gdp_delta(mu: f64, epsilon: f64) -> f64 {
    if mu <= 0.0 {
        return 0.0;
    }
    let a = cdf(-epsilon / mu + mu / 2.0);
    let b = cdf(-epsilon / mu - mu / 2.0);
    let second = if b > 0.0 {
        (epsilon + b.ln()).exp()
    } else {
        0.0
    };
    (a - second).max(0.0)
}

/// The smallest `ε ≥ 0` at which a `μ`-GDP mechanism is `(ε, δ)`-DP (bisection on the
/// decreasing [`gdp_delta`]); `+∞` when `μ` is infinite.
pub fn gdp_epsilon(mu: f64, delta: f64) -> f64 {
    if mu.is_nan() || mu <= 0.0 {
        return 0.0;
    }
    if !mu.is_finite() {
        return f64::INFINITY;
    }
    if gdp_delta(mu, 0.0) <= delta {
        return 0.0;
    }
    let mut hi = 1.0;
    while gdp_delta(mu, hi) > delta {
        hi *= 2.0;
        if hi > 1e6 {
            return f64::INFINITY;
        }
    }
    let mut lo = 0.0;
    for _ in 0..200 {
        let mid = 0.5 * (lo + hi);
        if mid <= lo || mid >= hi {
            break;
        }
        if gdp_delta(mu, mid) > delta {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    hi
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cdf_and_quantile_are_inverse() {
        assert!((cdf(0.0) - 0.5).abs() < 1e-16);
        assert!((cdf(1.959_963_984_540_054) - 0.975).abs() < 1e-15);
        for &p in &[1e-300, 1e-12, 1e-3, 0.1, 0.5, 0.9, 0.999_999] {
            let x = quantile(p);
            assert!((cdf(x) / p - 1.0).abs() < 1e-12, "p = {p}");
        }
    }

    #[test]
    fn gdp_curve_is_the_known_one() {
        // μ = 1 at ε = 0: δ = Φ(1/2) − Φ(−1/2) = 0.382924922548026.
        assert!((gdp_delta(1.0, 0.0) - 0.382_924_922_548_026).abs() < 1e-12);
        // Round trip and monotonicity.
        for &mu in &[0.1, 0.5, 1.0, 2.0, 4.0] {
            for &delta in &[1e-3, 1e-6] {
                let eps = gdp_epsilon(mu, delta);
                assert!(eps > 0.0);
                assert!((gdp_delta(mu, eps) - delta).abs() < 1e-9 * delta.max(1e-12) + 1e-15);
                assert!(gdp_epsilon(mu * 1.1, delta) > eps);
            }
        }
        assert_eq!(gdp_epsilon(0.0, 1e-6), 0.0);
    }
}
