//! Clopper–Pearson confidence bounds for a binomial proportion: the only place the audit turns
//! counts of errors into rates it can state with confidence.
//!
//! The exact (Clopper & Pearson 1934) one-sided upper bound on `p` after `k` successes in `n`
//! trials at level `β` is the `1 − β` quantile of `Beta(k + 1, n − k)` (1 when `k = n`): the
//! largest `p` under which seeing at most `k` successes still has probability `≥ β`. It is
//! conservative (coverage at least `1 − β` for every `p`), which is what a lower bound on ε needs.
//!
//! The quantile is found by bisection on the regularized incomplete beta function `I_x(a, b)`
//! (continued fraction, Lentz's method, as in Numerical Recipes §6.4), and the upper end of the
//! final bracket is returned, so rounding moves the bound up (the safe side), never down.

/// Bisection steps for a quantile: the bracket ends `2⁻¹⁰⁰` wide, below any `f64` spacing in
/// `(0, 1]`'s useful range.
const BISECTION_STEPS: usize = 100;

/// `ln B(a, b)`.
fn ln_beta(a: f64, b: f64) -> f64 {
    libm::lgamma(a) + libm::lgamma(b) - libm::lgamma(a + b)
}

/// Below this, a Lentz denominator is replaced by it (avoids a division by zero).
const TINY: f64 = 1e-300;

/// One step of Lentz's method with numerator `aa`: updates `(c, d)`, returns the factor `c·d`.
fn lentz_step(aa: f64, c: &mut f64, d: &mut f64) -> f64 {
    *d = 1.0 + aa * *d;
    if d.abs() < TINY {
        *d = TINY;
    }
    *c = 1.0 + aa / *c;
    if c.abs() < TINY {
        *c = TINY;
    }
    *d = 1.0 / *d;
    *c * *d
}

/// The continued fraction of `I_x(a, b)` (converges fast for `x < (a + 1)/(a + b + 2)`).
fn beta_fraction(a: f64, b: f64, x: f64) -> f64 {
    const EPS: f64 = 1e-16;
    let (qab, qap, qam) = (a + b, a + 1.0, a - 1.0);
    let mut c = 1.0;
    let mut d = 1.0 - qab * x / qap;
    if d.abs() < TINY {
        d = TINY;
    }
    d = 1.0 / d;
    let mut h = d;
    for m in 1..10_000 {
        let m = m as f64;
        let m2 = 2.0 * m;
        h *= lentz_step(m * (b - m) * x / ((qam + m2) * (a + m2)), &mut c, &mut d);
        let del = lentz_step(
            -(a + m) * (qab + m) * x / ((a + m2) * (qap + m2)),
            &mut c,
            &mut d,
        );
        h *= del;
        if (del - 1.0).abs() < EPS {
            break;
        }
    }
    h
}

/// The regularized incomplete beta function `I_x(a, b)` for `a, b > 0`, `x ∈ [0, 1]`.
pub fn regularized_beta(x: f64, a: f64, b: f64) -> f64 {
    if x <= 0.0 {
        return 0.0;
    }
    if x >= 1.0 {
        return 1.0;
    }
    let ln_front = a * x.ln() + b * (1.0 - x).ln() - ln_beta(a, b);
    if x < (a + 1.0) / (a + b + 2.0) {
        (ln_front.exp() * beta_fraction(a, b, x) / a).clamp(0.0, 1.0)
    } else {
        (1.0 - ln_front.exp() * beta_fraction(b, a, 1.0 - x) / b).clamp(0.0, 1.0)
    }
}

/// The `q` quantile of `Beta(a, b)`, rounded up (the upper end of the bisection bracket).
pub fn beta_quantile_upper(q: f64, a: f64, b: f64) -> f64 {
    let (mut lo, mut hi) = (0.0f64, 1.0f64);
    for _ in 0..BISECTION_STEPS {
        let mid = 0.5 * (lo + hi);
        if mid <= lo || mid >= hi {
            break;
        }
        if regularized_beta(mid, a, b) < q {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    hi
}

/// The Clopper–Pearson one-sided upper bound on a proportion after `successes` of `trials`, at
/// level `beta` (the bound holds with probability at least `1 − beta`). 1 without trials.
pub fn upper_bound(successes: u64, trials: u64, beta: f64) -> f64 {
    if trials == 0 || successes >= trials {
        return 1.0;
    }
    if successes == 0 {
        // Closed form: (1 − p)^n = β. Rounded up by one ulp for safety.
        let p = 1.0 - beta.powf(1.0 / trials as f64);
        return (p * (1.0 + 4.0 * f64::EPSILON)).min(1.0);
    }
    beta_quantile_upper(
        1.0 - beta,
        successes as f64 + 1.0,
        (trials - successes) as f64,
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn incomplete_beta_matches_closed_forms() {
        // I_x(1, b) = 1 − (1 − x)^b and I_x(a, 1) = x^a.
        for &x in &[1e-6f64, 0.01, 0.3, 0.7, 0.99] {
            for &b in &[1.0, 2.5, 40.0] {
                let exact = -(b * (-x).ln_1p()).exp_m1();
                assert!((regularized_beta(x, 1.0, b) - exact).abs() < 1e-13 * exact.max(1e-3));
                let exact = x.powf(b);
                assert!((regularized_beta(x, b, 1.0) - exact).abs() < 1e-12 * exact.max(1e-3));
            }
        }
        // I_{1/2}(a, a) = 1/2 by symmetry.
        for &a in &[0.5, 3.0, 200.0, 5e4] {
            assert!((regularized_beta(0.5, a, a) - 0.5).abs() < 1e-10, "a = {a}");
        }
    }

    #[test]
    fn upper_bound_covers_the_binomial_tail() {
        // At the bound p, P(X ≤ k) = β exactly (Beta–binomial duality): check by summing the pmf.
        for &(k, n) in &[(0u64, 10u64), (1, 10), (3, 50), (17, 200), (499, 1000)] {
            let beta = 0.025;
            let p = upper_bound(k, n, beta);
            let mut cdf = 0.0;
            let mut ln_choose = 0.0f64;
            for i in 0..=k {
                if i > 0 {
                    ln_choose += ((n - i + 1) as f64).ln() - (i as f64).ln();
                }
                cdf += (ln_choose + i as f64 * p.ln() + (n - i) as f64 * (1.0 - p).ln()).exp();
            }
            assert!((cdf - beta).abs() < 1e-9, "k = {k}, n = {n}: cdf {cdf}");
            assert!(p >= k as f64 / n as f64);
        }
        assert_eq!(upper_bound(5, 5, 0.05), 1.0);
        assert_eq!(upper_bound(0, 0, 0.05), 1.0);
    }

    #[test]
    fn upper_bound_is_monotone_in_successes_and_confidence() {
        let mut last = 0.0;
        for k in 0..30 {
            let p = upper_bound(k, 100_000, 0.025);
            assert!(p > last);
            last = p;
        }
        assert!(upper_bound(3, 1000, 0.01) > upper_bound(3, 1000, 0.05));
    }
}
