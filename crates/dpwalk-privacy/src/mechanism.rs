//! RDP curves of the mechanisms the accountant composes: the Gaussian, the Poisson-subsampled
//! Gaussian, the Laplace mechanism and the tight curve of any pure ε-DP mechanism.
//!
//! The noise multiplier `z` is the noise standard deviation divided by the L2 sensitivity; the
//! Laplace scale ratio is the Laplace scale `b` divided by the L1 sensitivity `Δ₁`.
//!
//! # Gaussian
//! `ε(α) = α / (2 z²)` (Mironov 2017, Prop. 7).
//!
//! # Poisson-subsampled Gaussian (Mironov, Talwar & Zhang 2019, "Rényi Differential Privacy of the
//! Sampled Gaussian Mechanism")
//! With `μ0 = N(0, z²)`, `μ1 = N(1, z²)` and sampling rate `q`, the RDP of order `α` is
//! `ln(A_α) / (α − 1)` with `A_α = ∫ μ0(x) ((1 − q) + q μ1(x)/μ0(x))^α dx` (their Thm. 4 and
//! Sec. 3.3; the other direction of the divergence is never larger, their Thm. 5).
//! - Integer `α`: expanding the binomial, `A_α = Σ_{i=0}^{α} C(α, i) q^i (1−q)^{α−i}
//!   exp((i² − i)/(2z²))` (their Sec. 3.3, eq. for integer α). Summed in log space with the
//!   largest term factored out; exact up to rounding.
//! - Fractional `α`: split the integral at `z₀ = z² ln(1/q − 1) + 1/2`, where `q μ1/μ0 = 1 − q`,
//!   and expand `(a + b)^α` as a binomial series in the smaller term on each side. With
//!   `e0(i) = ½ erfc((i − z₀)/(√2 z))` and `e1(i) = ½ erfc((z₀ − (α−i))/(√2 z))`:
//!   `A_α = Σ_{i≥0} C(α, i) [q^i (1−q)^{α−i} e^{(i²−i)/(2z²)} e0(i)
//!                           + q^{α−i} (1−q)^i e^{((α−i)²−(α−i))/(2z²)} e1(i)]`.
//!   For non-integer `α` the coefficient `C(α, i)` is **negative** for every other `i > ⌊α⌋ + 1`:
//!   the series alternates and must be summed with its signs (as TF-Privacy's
//!   `_compute_log_a_frac` does). Google's `dp-accounting` 0.6.0 takes `ln|C(α, i)|` and adds
//!   every term, which overestimates `A_α` (a valid but loose bound) and, as it caps the series at
//!   1000 terms, often gives up and returns `+∞` (see `tests/fixtures/README.md`). Here positive and
//!   negative terms are accumulated separately in log space and subtracted once; the sum stops after
//!   a positive term, once both term sequences decrease and the terms are below `e^{-30}` of the
//!   total. The tail of an alternating series with decreasing terms lies between 0 and its first
//!   term, here negative, so the result is an upper bound on `A_α`, loose by at most `e^{-30} A_α`
//!   (an absolute error of at most `1e-13 / (α − 1)` on the RDP value). The terms
//!   decay only polynomially (like `i^{−α−2}`), so this takes up to some 10⁴ terms; a cap of
//!   [`MAX_FRACTIONAL_TERMS`] turns non-convergence into [`PrivacyError::NotConverged`].
//!   These values are checked against an independent adaptive quadrature of the defining integral
//!   (`tests/subsampled_gaussian.rs`).
//! - `q = 1` is the plain Gaussian.
//! - Noise multipliers so large or so small that `z²` or `1/z²` is not a finite, non-zero double
//!   (beyond about `1e154` or below `1e-154`) fall back to the plain Gaussian's `α/(2z²)`: Poisson
//!   subsampling never increases the divergence (Rényi divergence is jointly quasi-convex and
//!   `D_α(μ0‖μ0) = 0`), so it is an upper bound there, and it is then `0` to double precision
//!   for a huge `z`, or `+∞` (no finite guarantee) for a vanishing one, where the subsampled curve
//!   is infinite too.

//! # Laplace (Mironov 2017, Prop. 6)
//! With `s = Δ₁/b` (the mechanism is pure `s`-DP):
//! `ε(α) = ln[ (α/(2α−1)) e^{(α−1)s} + ((α−1)/(2α−1)) e^{−αs} ] / (α − 1)`, exact for the 1-D
//! mechanism, with limits `s + e^{−s} − 1` (KL) as `α → 1` and `s` as `α → ∞`. A d-dimensional
//! release `g + Lap(b)^d` with `‖g − g'‖₁ ≤ Δ₁` has the same curve: the divergence adds over
//! coordinates and `(α−1)ε(α)` is convex in `s` and 0 at 0, hence superadditive, so the worst case
//! puts all of `Δ₁` on one coordinate (seed-baselines spec §5.2).
//!
//! # Any pure ε-DP mechanism (Mironov 2017, Prop. 5)
//! A mechanism whose likelihood ratio lies in `[e^{−ε}, e^{ε}]` is at most as far apart, in every
//! Rényi divergence, as randomized response with `p = e^ε/(1 + e^ε)`, which attains
//! `ε(α) = ln[ (e^{αε} + e^{(1−α)ε}) / (1 + e^ε) ] / (α − 1)`: below both `ε` and `αε²/2`, with
//! limits `ε·tanh(ε/2)` (KL) and `ε`. It is the curve to compose for mechanisms whose only
//! guarantee is pure DP (seed-baselines spec §5.3).
//!
//! # Evaluating the two closed forms
//! Both brackets are `1 + (something ≥ 0)`, and written naively they lose every digit where that
//! something is tiny (small `s`, or `α` near 1: the orders where the optimum lies for large
//! compositions) and overflow where `(α−1)s` is large. With `x = (α−1)s` (resp. `(α−1)ε`):
//! - `x ≤ 1`: the excess over 1 is a sum of nonnegative terms, with `f(y) = eʸ − 1 − y`:
//!   Laplace `[f((α−1)s) + ((α−1)/α) f(−αs)] / (2 − 1/α)`, pure DP
//!   `expm1((α−1)ε) · (−expm1(−αε)) · e^ε/(1 + e^ε)`; no cancellation, and `ln_1p` of it.
//! - `x > 1`: the value is `s` plus a correction of size at most `ln 2/(α−1) < 0.7 s`:
//!   Laplace `s + [ln_1p(((α−1)/α) e^{−(2α−1)s}) − ln(2 − 1/α)] / (α − 1)`, pure DP
//!   `ε + [ln_1p(e^{−(2α−1)ε}) − ln_1p(e^{−ε})] / (α − 1)`; nothing can overflow.
//!
//! Each value is finally capped at the pure-DP level (`s`, resp. `ε`), which every order obeys.

use crate::error::PrivacyError;
use crate::gdp::log_erfc;
use crate::rdp::{Orders, RdpCurve};

/// Cap on the number of terms of the fractional-order series.
pub const MAX_FRACTIONAL_TERMS: usize = 1_000_000;

/// Checks a noise multiplier.
fn check_z(z: f64) -> Result<f64, PrivacyError> {
    if z > 0.0 && z.is_finite() {
        Ok(z)
    } else {
        Err(PrivacyError::NoiseMultiplier(z))
    }
}

/// Checks a sampling rate `q ∈ (0, 1]`.
pub(crate) fn check_rate(q: f64) -> Result<f64, PrivacyError> {
    if q > 0.0 && q <= 1.0 {
        Ok(q)
    } else {
        Err(PrivacyError::SamplingRate(q))
    }
}

/// The Gaussian mechanism with noise multiplier `z`: `ε(α) = α/(2z²)`; it is `1/z`-GDP, and
/// its curve carries `μ² = 1/z²` for the exact conversion ([`crate::gdp`]).
pub fn gaussian(orders: &Orders, z: f64) -> Result<RdpCurve, PrivacyError> {
    let z = check_z(z)?;
    Ok(RdpCurve::from_computed(
        orders.clone(),
        orders.as_slice().iter().map(|a| a / (2.0 * z * z)),
    )
    .with_gaussian_bound(1.0 / (z * z)))
}

/// The Poisson-subsampled Gaussian mechanism (sampling rate `q ∈ (0, 1]`, noise multiplier `z`).
pub fn subsampled_gaussian(orders: &Orders, q: f64, z: f64) -> Result<RdpCurve, PrivacyError> {
    let q = check_rate(q)?;
    let z = check_z(z)?;
    let z2 = z * z;
    if q == 1.0 || !(z2.is_finite() && z2 > 0.0 && (1.0 / z2).is_finite()) {
        return gaussian(orders, z);
    }
    let values = orders
        .as_slice()
        .iter()
        .map(|&alpha| {
            let log_a = if alpha.fract() == 0.0 {
                log_a_integer(q, z, alpha)
            } else {
                log_a_fractional(q, z, alpha)?
            };
            // A_α ≥ 1 mathematically; rounding may give a hair below 0, clamped by from_computed.
            // Nor can it exceed the plain Gaussian's α/(2z²) (see the module docs), which rounding
            // in the series may do where both are tiny.
            Ok((log_a / (alpha - 1.0)).min(alpha / (2.0 * z2)))
        })
        .collect::<Result<Vec<f64>, PrivacyError>>()?;
    Ok(RdpCurve::from_computed(orders.clone(), values.into_iter()).with_subsampled_runs(q, z))
}

/// The Laplace mechanism with scale ratio `b/Δ₁ = scale` (module docs: exact, Mironov 2017,
/// Prop. 6; equal to the pure-DP level `Δ₁/b` as `α → ∞`).
pub fn laplace(orders: &Orders, scale: f64) -> Result<RdpCurve, PrivacyError> {
    let s = 1.0 / check_z(scale)?;
    Ok(RdpCurve::from_computed(
        orders.clone(),
        orders.as_slice().iter().map(|&a| laplace_rdp(a, s)),
    ))
}

/// The tight curve of any pure `eps`-DP mechanism: randomized response (module docs; Mironov
/// 2017, Prop. 5).
pub fn pure_dp(orders: &Orders, eps: f64) -> Result<RdpCurve, PrivacyError> {
    if !(eps > 0.0 && eps.is_finite()) {
        return Err(PrivacyError::Epsilon(eps));
    }
    Ok(RdpCurve::from_computed(
        orders.clone(),
        orders.as_slice().iter().map(|&a| pure_dp_rdp(a, eps)),
    ))
}

/// `eʸ − 1 − y ≥ 0`, by its Taylor series where `expm1(y) − y` would cancel.
fn expm1_minus_identity(y: f64) -> f64 {
    if y.abs() < 0.5 {
        // y²/2! + y³/3! + …: at |y| < 0.5 the term after y²⁴/24! is below 1e-30 of the sum.
        let mut term = y * y / 2.0;
        let mut sum = term;
        for k in 3..=24 {
            term *= y / f64::from(k);
            sum += term;
        }
        sum
    } else {
        y.exp_m1() - y
    }
}

/// The Laplace curve at one order `α > 1` for `s = Δ₁/b ≥ 0` (module docs, "Evaluating").
fn laplace_rdp(alpha: f64, s: f64) -> f64 {
    let x = (alpha - 1.0) * s;
    let rdp = if x <= 1.0 {
        let excess = (expm1_minus_identity(x)
            + (alpha - 1.0) / alpha * expm1_minus_identity(-alpha * s))
            / (2.0 - 1.0 / alpha);
        excess.ln_1p() / (alpha - 1.0)
    } else {
        let tail = ((alpha - 1.0) / alpha * (-(2.0 * alpha - 1.0) * s).exp()).ln_1p();
        s + (tail - (2.0 - 1.0 / alpha).ln()) / (alpha - 1.0)
    };
    rdp.min(s)
}

/// The pure-DP (randomized response) curve at one order `α > 1` for `ε ≥ 0` (module docs).
pub(crate) fn pure_dp_rdp(alpha: f64, eps: f64) -> f64 {
    let x = (alpha - 1.0) * eps;
    let rdp = if x <= 1.0 {
        let excess = x.exp_m1() * -(-alpha * eps).exp_m1() / (1.0 + (-eps).exp());
        excess.ln_1p() / (alpha - 1.0)
    } else {
        let tail = (-(2.0 * alpha - 1.0) * eps).exp().ln_1p() - (-eps).exp().ln_1p();
        eps + tail / (alpha - 1.0)
    };
    rdp.min(eps)
}

/// `ln(e^a + e^b)` without overflow.
fn log_add(a: f64, b: f64) -> f64 {
    let (lo, hi) = if a < b { (a, b) } else { (b, a) };
    if lo == f64::NEG_INFINITY {
        hi
    } else {
        hi + (lo - hi).exp().ln_1p()
    }
}

/// `ln A_α` for integer `α ≥ 2`, `0 < q < 1`.
fn log_a_integer(q: f64, z: f64, alpha: f64) -> f64 {
    let n = alpha as u64; // α is a finite integer-valued order > 1
    let (ln_q, ln_1mq) = (q.ln(), (-q).ln_1p());
    let mut log_binom = 0.0;
    let mut terms = Vec::with_capacity(n as usize + 1);
    for i in 0..=n {
        let fi = i as f64;
        if i > 0 {
            log_binom += (alpha - fi + 1.0).ln() - fi.ln();
        }
        terms.push(log_binom + fi * ln_q + (alpha - fi) * ln_1mq + (fi * fi - fi) / (2.0 * z * z));
    }
    let max = terms.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    max + terms.iter().map(|t| (t - max).exp()).sum::<f64>().ln()
}

/// `ln A_α` for non-integer `α > 1`, `0 < q < 1`, by the signed two-sided series.
fn log_a_fractional(q: f64, z: f64, alpha: f64) -> Result<f64, PrivacyError> {
    let (ln_q, ln_1mq) = (q.ln(), (-q).ln_1p());
    let z0 = z * z * (1.0 / q - 1.0).ln() + 0.5;
    let s2 = std::f64::consts::SQRT_2 * z;
    let ln_half = 0.5_f64.ln();
    let (mut pos, mut neg) = (f64::NEG_INFINITY, f64::NEG_INFINITY);
    let (mut log_binom, mut positive) = (0.0_f64, true);
    let (mut last0, mut last1) = (f64::INFINITY, f64::INFINITY);
    for i in 0..MAX_FRACTIONAL_TERMS {
        let fi = i as f64;
        if i > 0 {
            // C(α, i) = C(α, i−1) (α − i + 1)/i; the factor is negative once i > α + 1.
            let f = alpha - fi + 1.0;
            log_binom += f.abs().ln() - fi.ln();
            if f < 0.0 {
                positive = !positive;
            }
        }
        let j = alpha - fi;
        let s0 = log_binom
            + fi * ln_q
            + j * ln_1mq
            + (fi * fi - fi) / (2.0 * z * z)
            + ln_half
            + log_erfc((fi - z0) / s2);
        let s1 = log_binom
            + j * ln_q
            + fi * ln_1mq
            + (j * j - j) / (2.0 * z * z)
            + ln_half
            + log_erfc((z0 - j) / s2);
        let s = log_add(s0, s1);
        if positive {
            pos = log_add(pos, s);
        } else {
            neg = log_add(neg, s);
        }
        let total = pos + (-(neg - pos).exp()).ln_1p();
        // Stop after a positive term: the tail then starts with a negative term and, the terms
        // decreasing, lies in [−|next term|, 0], so the partial sum is an upper bound on A_α.
        // A side whose terms are below e^{-1000} of the total counts as decreasing: at very large
        // z its exponent is a huge `−x²` that absorbs the other parts, so rounding leaves it flat.
        let falling = |t: f64, last: f64| t < last || t < total - 1000.0;
        if positive
            && fi > alpha + 1.0
            && falling(s0, last0)
            && falling(s1, last1)
            && s < total - 30.0
        {
            return if total.is_finite() {
                Ok(total)
            } else {
                Err(PrivacyError::NotConverged { order: alpha, q, z })
            };
        }
        (last0, last1) = (s0, s1);
    }
    Err(PrivacyError::NotConverged { order: alpha, q, z })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gaussian_formula_and_bad_input() {
        let g = Orders::new(&[2.0, 10.0]).unwrap();
        assert_eq!(gaussian(&g, 2.0).unwrap().values(), &[0.25, 1.25]);
        for z in [0.0, -1.0, f64::NAN, f64::INFINITY] {
            assert!(matches!(
                gaussian(&g, z),
                Err(PrivacyError::NoiseMultiplier(_))
            ));
        }
        for q in [0.0, -0.1, 1.5, f64::NAN] {
            assert!(matches!(
                subsampled_gaussian(&g, q, 1.0),
                Err(PrivacyError::SamplingRate(_))
            ));
        }
        assert_eq!(
            subsampled_gaussian(&g, 1.0, 2.0).unwrap(),
            gaussian(&g, 2.0).unwrap()
        );
    }

    #[test]
    fn extreme_noise_multipliers_give_the_gaussian_bound_not_an_error() {
        let g = Orders::new(&[1.5, 2.0, 32.0]).unwrap();
        for q in [1e-6, 0.01, 0.5, 0.999] {
            let huge = subsampled_gaussian(&g, q, 1e300).unwrap();
            assert!(huge.values().iter().all(|&v| v == 0.0), "{huge:?}");
            let tiny = subsampled_gaussian(&g, q, 1e-200).unwrap();
            assert!(
                tiny.values().iter().all(|&v| v == f64::INFINITY),
                "{tiny:?}"
            );
        }
        // Just inside the numerical range the series still runs, below the Gaussian bound.
        let inside = subsampled_gaussian(&g, 0.01, 1e100).unwrap();
        let bound = gaussian(&g, 1e100).unwrap();
        for (a, b) in inside.values().iter().zip(bound.values()) {
            assert!(*a <= *b && a.is_finite(), "{a} vs {b}");
        }
    }

    #[test]
    fn integer_order_two_has_a_closed_form() {
        // A_2 = (1−q)² + 2q(1−q) + q² e^{1/z²} = 1 + q²(e^{1/z²} − 1).
        let g = Orders::new(&[2.0]).unwrap();
        for (q, z) in [(0.01_f64, 1.0_f64), (0.3, 0.7), (0.5, 5.0)] {
            let want = (q * q * (1.0 / (z * z)).exp_m1()).ln_1p();
            let got = subsampled_gaussian(&g, q, z).unwrap().values()[0];
            assert!((got - want).abs() <= 1e-13 * want, "{got} vs {want}");
        }
    }

    #[test]
    fn fractional_orders_interpolate_integer_neighbours() {
        // ε(α) is nondecreasing in α (Rényi divergences are), so fractional orders must sit
        // between their integer neighbours; the unsigned sum overshoots this.
        let g = Orders::new(&[2.0, 2.5, 3.0, 3.5, 4.0]).unwrap();
        for (q, z) in [(0.01, 1.0), (0.1, 0.8), (0.5, 2.0), (0.001, 0.5)] {
            let v = subsampled_gaussian(&g, q, z).unwrap();
            for w in v.values().windows(2) {
                assert!(
                    w[0] <= w[1] * (1.0 + 1e-12),
                    "q={q} z={z}: {:?}",
                    v.values()
                );
            }
        }
    }

    #[test]
    fn laplace_and_pure_dp_match_the_spec_vectors() {
        // seed-baselines spec §5.4, 12 significant digits.
        let close = |got: f64, want: f64| (got - want).abs() <= 1e-11 * want;
        for (alpha, s, want) in [
            (1.5, 0.05, 0.001_843_573_998_51),
            (2.0, 0.5, 0.200_303_896_174),
            (8.0, 1.0, 0.910_198_801_177),
            (64.0, 0.5, 0.489_122_158_681),
        ] {
            let got = laplace_rdp(alpha, s);
            assert!(close(got, want), "Lap({alpha}; {s}) = {got}, spec {want}");
        }
        for (alpha, eps, want) in [
            (1.5, 0.05, 0.001_874_024_120_57),
            (2.0, 0.5, 0.227_336_293_803),
            (8.0, 1.0, 0.955_248_374_055),
        ] {
            let got = pure_dp_rdp(alpha, eps);
            assert!(close(got, want), "RR({alpha}; {eps}) = {got}, spec {want}");
        }
    }

    #[test]
    fn order_two_closed_forms() {
        // Laplace: ln[(2/3)e^s + (1/3)e^{−2s}]; randomized response: ln[(e^{2ε} + e^{−ε})/(1 + e^ε)].
        // (Written naively, so only where the bracket is far from 1.)
        for s in [0.3_f64, 1.0, 4.0] {
            let lap = ((2.0 / 3.0) * s.exp() + (1.0 / 3.0) * (-2.0 * s).exp()).ln();
            assert!((laplace_rdp(2.0, s) - lap).abs() <= 1e-14 * lap, "{s}");
            let rr = (((2.0 * s).exp() + (-s).exp()) / (1.0 + s.exp())).ln();
            assert!((pure_dp_rdp(2.0, s) - rr).abs() <= 1e-14 * rr, "{s}");
        }
    }

    #[test]
    fn curves_grow_with_the_order_and_sit_below_pure_dp() {
        let g = Orders::default_grid();
        for p in [1e-6, 0.01, 0.05, 0.5, 1.0, 5.0, 50.0] {
            let lap = laplace(&g, 1.0 / p).unwrap();
            let rr = pure_dp(&g, p).unwrap();
            for c in [&lap, &rr] {
                for w in c.values().windows(2) {
                    assert!(w[0] <= w[1], "p = {p}: {w:?}");
                }
                assert!(c.values().iter().all(|&v| v <= p && v.is_finite()));
            }
            // Laplace is ε-DP, so randomized response (the worst ε-DP mechanism) bounds it, and
            // both are below αε²/2.
            for ((a, l), r) in lap.iter().zip(rr.values()) {
                assert!(l <= r * (1.0 + 1e-12), "p = {p}, α = {a}: {l} > {r}");
                assert!(*r <= a * p * p / 2.0 * (1.0 + 1e-12), "p = {p}, α = {a}");
            }
        }
    }

    #[test]
    fn limits_at_order_one_and_infinity() {
        // α → 1: the KL divergences s + e^{−s} − 1 and ε·tanh(ε/2); the error is O(α − 1).
        let h = 1e-9;
        for p in [1e-4_f64, 0.05, 1.0, 10.0] {
            let kl = p + (-p).exp_m1();
            assert!((laplace_rdp(1.0 + h, p) - kl).abs() <= 1e-7 * kl, "{p}");
            let kl = p * (p / 2.0).tanh();
            assert!((pure_dp_rdp(1.0 + h, p) - kl).abs() <= 1e-7 * kl, "{p}");
        }
        // α → ∞: the pure-DP level, approached like ln 2/(α − 1).
        for p in [1e-3, 0.5, 3.0] {
            for v in [laplace_rdp(1e15, p), pure_dp_rdp(1e15, p)] {
                assert!(v <= p && p - v <= 1e-14, "{p}: {v}");
            }
            assert_eq!(laplace_rdp(f64::MAX, p), p);
            assert_eq!(pure_dp_rdp(f64::MAX, p), p);
        }
    }

    #[test]
    fn extreme_parameters_give_numbers_not_nan() {
        let g = Orders::new(&[1.000_000_1, 1.01, 2.0, 1e3, crate::rdp::MAX_ORDER]).unwrap();
        for scale in [1e-300, 1e-100, 1e-3, 1.0, 1e3, 1e100, 1e300] {
            let c = laplace(&g, scale).unwrap();
            assert!(
                c.values()
                    .iter()
                    .all(|v| v.is_finite() && *v <= 1.0 / scale),
                "{scale}: {c:?}"
            );
        }
        for eps in [1e-300, 1e-100, 1e-3, 1.0, 1e3, 1e100, 1e300] {
            let c = pure_dp(&g, eps).unwrap();
            assert!(
                c.values().iter().all(|v| v.is_finite() && *v <= eps),
                "{eps}: {c:?}"
            );
        }
        // A subnormal scale has no finite pure-DP level: +∞, never NaN.
        let c = laplace(&g, 1e-310).unwrap();
        assert!(c.values().iter().all(|v| *v == f64::INFINITY), "{c:?}");
        // Tiny s: αs²/2 to full relative precision, not the rounding noise of a cancellation.
        let v = laplace_rdp(2.0, 1e-8);
        assert!((v - 1e-16).abs() <= 1e-6 * 1e-16, "{v}");
        let v = pure_dp_rdp(1.01, 1e-8);
        assert!((v - 1.01e-16 / 2.0).abs() <= 1e-6 * 1e-16, "{v}");
    }

    #[test]
    fn laplace_and_pure_dp_reject_bad_input() {
        let g = Orders::new(&[2.0]).unwrap();
        for bad in [0.0, -1.0, f64::NAN, f64::INFINITY, f64::NEG_INFINITY] {
            assert!(matches!(
                laplace(&g, bad),
                Err(PrivacyError::NoiseMultiplier(_))
            ));
            assert!(matches!(pure_dp(&g, bad), Err(PrivacyError::Epsilon(_))));
        }
    }
}
