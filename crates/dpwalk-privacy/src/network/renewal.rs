//! The renewal equation of the path-hidden mixture, `F(s) = g(s) + Σ_{m=1}^{s} a(m)·F(s − m)`,
//! solved in O(K log² K) by divide and conquer with FFT convolutions (the contributions of the
//! left half of a block to its right half are one convolution), instead of O(K²) term by term.
//!
//! # Rounding
//! Every value is nonnegative and the accountant needs an upper bound, so each FFT convolution
//! adds a margin that covers its rounding error: for a convolution of length `N` computed in
//! floating point with unit roundoff `u`, the error of every output is at most
//! `c·u·log₂N·‖x‖₂·‖y‖₂` (Higham, *Accuracy and Stability of Numerical Algorithms*, §24.1); the
//! margin takes `c = 8·√N`, far above the constant of that bound, and costs a relative
//! `≈ 1e-9` at most on the values here. Blocks of [`DIRECT`] or fewer are summed term by term.

/// Blocks of this size or smaller are summed term by term.
const DIRECT: usize = 64;

/// Solves `F(s) = g(s) + Σ_{m=1}^{s} a(m)·F(s − m)` for `s < g.len()` (`a(0)` is not used; `a`
/// shorter than `g` means zeros beyond). Inputs are nonnegative; the result is an upper bound on
/// the exact solution (rounding covered, module docs).
pub fn solve(a: &[f64], g: &[f64]) -> Vec<f64> {
    let len = g.len();
    let mut f = vec![0.0; len];
    let mut acc = vec![0.0; len];
    let coef = |m: usize| {
        if m == 0 {
            0.0
        } else {
            a.get(m).copied().unwrap_or(0.0)
        }
    };
    block(0, len, &coef, g, &mut f, &mut acc);
    f
}

/// Fills `f[lo..hi]`, given that `acc[s]` holds the contributions of `f[..lo]` to every `s`
/// in `lo..hi`.
fn block(
    lo: usize,
    hi: usize,
    coef: &impl Fn(usize) -> f64,
    g: &[f64],
    f: &mut [f64],
    acc: &mut [f64],
) {
    if hi - lo <= DIRECT {
        for s in lo..hi {
            let inner: f64 = (lo..s).map(|j| coef(s - j) * f[j]).sum();
            f[s] = g[s] + acc[s] + inner;
        }
        return;
    }
    let mid = lo + (hi - lo) / 2;
    block(lo, mid, coef, g, f, acc);
    // Contributions of f[lo..mid] to s in mid..hi: Σ_j coef(s − j)·f[j].
    let left = &f[lo..mid];
    let kernel: Vec<f64> = (0..hi - lo).map(coef).collect();
    let conv = convolve(left, &kernel);
    for s in mid..hi {
        acc[s] += conv[s - lo];
    }
    block(mid, hi, coef, g, f, acc);
}

/// The linear convolution of `x` and `y` (nonnegative), each output raised by the rounding
/// margin of the module docs.
fn convolve(x: &[f64], y: &[f64]) -> Vec<f64> {
    let n = (x.len() + y.len()).next_power_of_two();
    let mut fx: Vec<(f64, f64)> = x.iter().map(|&v| (v, 0.0)).collect();
    fx.resize(n, (0.0, 0.0));
    let mut fy: Vec<(f64, f64)> = y.iter().map(|&v| (v, 0.0)).collect();
    fy.resize(n, (0.0, 0.0));
    let twiddles = twiddles(n);
    fft(&mut fx, &twiddles, false);
    fft(&mut fy, &twiddles, false);
    for (a, b) in fx.iter_mut().zip(&fy) {
        *a = (a.0 * b.0 - a.1 * b.1, a.0 * b.1 + a.1 * b.0);
    }
    fft(&mut fx, &twiddles, true);
    let norm = |v: &[f64]| v.iter().map(|x| x * x).sum::<f64>().sqrt();
    let nf = n as f64;
    let margin = 8.0 * nf.sqrt() * f64::EPSILON * nf.log2().max(1.0) * norm(x) * norm(y);
    fx.iter().map(|c| (c.0 / nf).max(0.0) + margin).collect()
}

/// `e^{−2πik/n}` for `k < n/2`, each computed directly (not by repeated multiplication, which
/// accumulates rounding).
fn twiddles(n: usize) -> Vec<(f64, f64)> {
    (0..n / 2)
        .map(|k| {
            let t = -2.0 * std::f64::consts::PI * k as f64 / n as f64;
            (t.cos(), t.sin())
        })
        .collect()
}

/// In-place iterative radix-2 FFT of a power-of-two length `n` with the [`twiddles`] of `n`
/// (`inverse`: the conjugate transform, unscaled).
fn fft(a: &mut [(f64, f64)], twiddles: &[(f64, f64)], inverse: bool) {
    let n = a.len();
    let mut j = 0;
    for i in 1..n {
        let mut bit = n >> 1;
        while j & bit != 0 {
            j ^= bit;
            bit >>= 1;
        }
        j |= bit;
        if i < j {
            a.swap(i, j);
        }
    }
    let mut len = 2;
    while len <= n {
        let half = len / 2;
        let stride = n / len;
        for start in (0..n).step_by(len) {
            for k in 0..half {
                let w = twiddles[k * stride];
                let w = if inverse { (w.0, -w.1) } else { w };
                let (u, v) = (a[start + k], a[start + k + half]);
                let t = (v.0 * w.0 - v.1 * w.1, v.0 * w.1 + v.1 * w.0);
                a[start + k] = (u.0 + t.0, u.1 + t.1);
                a[start + k + half] = (u.0 - t.0, u.1 - t.1);
            }
        }
        len <<= 1;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The term-by-term solution.
    fn direct(a: &[f64], g: &[f64]) -> Vec<f64> {
        let mut f = vec![0.0; g.len()];
        for s in 0..g.len() {
            f[s] = g[s]
                + (1..=s)
                    .map(|m| a.get(m).copied().unwrap_or(0.0) * f[s - m])
                    .sum::<f64>();
        }
        f
    }

    #[test]
    fn divide_and_conquer_matches_the_direct_sum_from_above() {
        for len in [1usize, 5, 64, 65, 200, 1000, 3001] {
            // A renewal like the mixture's: a geometric excursion law slightly above a
            // probability (the exponential weights), g of order one.
            let a: Vec<f64> = (0..len)
                .map(|m| {
                    if m < 2 {
                        0.0
                    } else {
                        0.013 * 0.99f64.powi(m as i32 - 2)
                    }
                })
                .collect();
            let g: Vec<f64> = (0..len)
                .map(|s| 1.0 + 0.5 * 0.97f64.powi(s as i32))
                .collect();
            let want = direct(&a, &g);
            let got = solve(&a, &g);
            for (s, (w, x)) in want.iter().zip(&got).enumerate() {
                assert!(*x >= *w * (1.0 - 1e-13), "len {len} s {s}: {x} below {w}");
                assert!(
                    *x <= *w * (1.0 + 1e-7),
                    "len {len} s {s}: {x} far above {w}"
                );
            }
        }
    }
}
