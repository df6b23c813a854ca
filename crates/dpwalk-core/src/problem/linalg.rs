//! Small dense kernels for the prox operators and the reference solver: dot products, `axpy`,
//! and a Cholesky factorization in packed storage.
//!
//! Written here rather than taken from nalgebra because the prox operators must work in borrowed,
//! preallocated buffers (one packed triangle per user in one vector, scratch slices in a step), and
//! these few loops are all they need.
//!
//! Packed storage: a symmetric `d × d` matrix is kept as its lower triangle, row by row, entry
//! `(i, j)` with `j ≤ i` at `i(i+1)/2 + j`, so rows are contiguous for both triangular solves.

/// `aᵀb`, with four partial sums so that the loop vectorizes.
#[inline]
pub fn dot(a: &[f64], b: &[f64]) -> f64 {
    dot_in_lanes::<4>(a, b)
}

/// `aᵀb` with `L` partial sums, then the `len mod L` last products: the loop vectorizes, and the
/// result depends only on `L` (for `L = 4` it is `(s₀ + s₁) + (s₂ + s₃) + tail`, what [`dot`] has
/// always computed; otherwise the sums in order). More lanes hide more of the additions' latency
/// (the network accountant's convolutions take 8: a third faster than 4 there).
#[inline]
pub fn dot_in_lanes<const L: usize>(a: &[f64], b: &[f64]) -> f64 {
    debug_assert_eq!(a.len(), b.len());
    let (ca, cb) = (a.chunks_exact(L), b.chunks_exact(L));
    let tail: f64 = ca
        .remainder()
        .iter()
        .zip(cb.remainder())
        .map(|(x, y)| x * y)
        .sum();
    let mut acc = [0.0; L];
    for (x, y) in ca.zip(cb) {
        for k in 0..L {
            acc[k] += x[k] * y[k];
        }
    }
    if L == 4 {
        // What `dot` has always computed.
        (acc[0] + acc[1]) + (acc[2] + acc[3]) + tail
    } else {
        acc.iter().sum::<f64>() + tail
    }
}

/// `y ← y + α x`.
pub(crate) fn axpy(alpha: f64, x: &[f64], y: &mut [f64]) {
    debug_assert_eq!(x.len(), y.len());
    for (yk, &xk) in y.iter_mut().zip(x) {
        *yk += alpha * xk;
    }
}

/// `‖x‖₂`.
pub(crate) fn norm(x: &[f64]) -> f64 {
    dot(x, x).sqrt()
}

/// Length of the packed lower triangle of a `d × d` matrix.
pub(crate) fn packed_len(d: usize) -> usize {
    d * (d + 1) / 2
}

/// Start of row `i` in packed storage.
fn row_start(i: usize) -> usize {
    i * (i + 1) / 2
}

/// A pivot of a factorization was zero, not finite, or (Cholesky) negative.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Singular;

/// Overwrites the packed symmetric `a` (`d × d`) with its lower Cholesky factor `L` (`a = L Lᵀ`).
///
/// Every system factored here is `I + (γ/m)·(PSD)`, whose pivots are ≥ 1 in exact arithmetic; an
/// error means overflow or non-finite input.
pub(crate) fn cholesky(a: &mut [f64], d: usize) -> Result<(), Singular> {
    debug_assert!(a.len() >= packed_len(d));
    for i in 0..d {
        let ri = row_start(i);
        for j in 0..=i {
            let rj = row_start(j);
            let s = a[ri + j] - dot(&a[ri..ri + j], &a[rj..rj + j]);
            if i == j {
                if !(s > 0.0 && s.is_finite()) {
                    return Err(Singular);
                }
                a[ri + i] = s.sqrt();
            } else {
                a[ri + j] = s / a[rj + j];
            }
        }
    }
    Ok(())
}

/// Solves `L Lᵀ x = b` in place (`x` holds `b` on entry) for a packed factor from [`cholesky`].
/// Both sweeps read rows of `L`, which are contiguous.
pub(crate) fn cholesky_solve(l: &[f64], d: usize, x: &mut [f64]) {
    debug_assert!(l.len() >= packed_len(d) && x.len() >= d);
    for i in 0..d {
        let ri = row_start(i);
        x[i] = (x[i] - dot(&l[ri..ri + i], &x[..i])) / l[ri + i];
    }
    for i in (0..d).rev() {
        let ri = row_start(i);
        x[i] /= l[ri + i];
        let xi = x[i];
        axpy(-xi, &l[ri..ri + i], &mut x[..i]);
    }
}

/// Solves `A y = b` in place (`b` becomes `y`) by Gaussian elimination with partial pivoting, for
/// the non-symmetric systems of the reduced multinomial prox; `a` (`n × n`, row-major) is
/// overwritten.
pub(crate) fn lu_solve(a: &mut [f64], n: usize, b: &mut [f64]) -> Result<(), Singular> {
    debug_assert!(a.len() >= n * n && b.len() >= n);
    for col in 0..n {
        let (pivot, size) =
            (col..n)
                .map(|r| (r, a[r * n + col].abs()))
                .fold(
                    (col, -1.0),
                    |best, cur| if cur.1 > best.1 { cur } else { best },
                );
        if !(size > 0.0 && size.is_finite()) {
            return Err(Singular);
        }
        if pivot != col {
            for k in col..n {
                a.swap(col * n + k, pivot * n + k);
            }
            b.swap(col, pivot);
        }
        let diag = a[col * n + col];
        for r in col + 1..n {
            let factor = a[r * n + col] / diag;
            if factor != 0.0 {
                let (top, bottom) = a.split_at_mut(r * n);
                axpy(
                    -factor,
                    &top[col * n + col..(col + 1) * n],
                    &mut bottom[col..n],
                );
                b[r] -= factor * b[col];
            }
        }
    }
    for i in (0..n).rev() {
        b[i] = (b[i] - dot(&a[i * n + i + 1..(i + 1) * n], &b[i + 1..n])) / a[i * n + i];
    }
    Ok(())
}

/// Adds `α a aᵀ` to the packed symmetric `m` (`a.len() × a.len()`).
pub(crate) fn add_outer_packed(alpha: f64, a: &[f64], m: &mut [f64]) {
    for (i, &ai) in a.iter().enumerate() {
        let ri = row_start(i);
        axpy(alpha * ai, &a[..=i], &mut m[ri..=ri + i]);
    }
}

/// Adds `t` to each diagonal entry of the packed `d × d` matrix `m`.
pub(crate) fn add_diagonal_packed(t: f64, d: usize, m: &mut [f64]) {
    for i in 0..d {
        m[row_start(i) + i] += t;
    }
}

/// `(i, j)` entry of a packed symmetric matrix (either triangle).
pub(crate) fn packed_get(m: &[f64], i: usize, j: usize) -> f64 {
    let (r, c) = if j <= i { (i, j) } else { (j, i) };
    m[row_start(r) + c]
}

/// Writes the Gram matrix `A Aᵀ` of the `rows` rows (of `cols` entries, row-major) of `a` into
/// the packed `out`.
pub(crate) fn gram_rows_packed(a: &[f64], rows: usize, cols: usize, out: &mut [f64]) {
    for i in 0..rows {
        let ai = &a[i * cols..(i + 1) * cols];
        let ri = row_start(i);
        for j in 0..=i {
            out[ri + j] = dot(ai, &a[j * cols..(j + 1) * cols]);
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)] // a failed unwrap is a failed test
mod tests {
    use super::*;

    #[test]
    fn cholesky_solves_a_spd_system() {
        // A = [[4, 2, 0.4], [2, 5, 1], [0.4, 1, 3]], b = A · [1, -2, 0.5].
        let mut a = vec![4.0, 2.0, 5.0, 0.4, 1.0, 3.0];
        let x_true = [1.0, -2.0, 0.5];
        let mut x: Vec<f64> = (0..3)
            .map(|i| (0..3).map(|j| packed_get(&a, i, j) * x_true[j]).sum())
            .collect();
        cholesky(&mut a, 3).unwrap();
        cholesky_solve(&a, 3, &mut x);
        for (xi, ti) in x.iter().zip(x_true) {
            assert!((xi - ti).abs() < 1e-14, "{xi} vs {ti}");
        }
    }

    #[test]
    fn cholesky_refuses_an_indefinite_matrix() {
        let mut a = vec![1.0, 2.0, 1.0];
        assert_eq!(cholesky(&mut a, 2), Err(Singular));
    }

    #[test]
    fn lu_solves_a_system_that_needs_pivoting() {
        // A = [[0, 2, 1], [1, 1, 0], [3, 0, 1]], x = (1, 2, -1).
        let a0 = [0.0, 2.0, 1.0, 1.0, 1.0, 0.0, 3.0, 0.0, 1.0];
        let x_true = [1.0, 2.0, -1.0];
        let mut b: Vec<f64> = a0.chunks(3).map(|row| dot(row, &x_true)).collect();
        let mut a = a0;
        lu_solve(&mut a, 3, &mut b).unwrap();
        for (xi, ti) in b.iter().zip(x_true) {
            assert!((xi - ti).abs() < 1e-14, "{xi} vs {ti}");
        }
        let mut singular = [1.0, 2.0, 2.0, 4.0];
        assert_eq!(lu_solve(&mut singular, 2, &mut [1.0, 1.0]), Err(Singular));
    }

    #[test]
    fn dot_matches_naive_sum_on_odd_lengths() {
        let a: Vec<f64> = (0..11).map(|i| i as f64 * 0.5 - 2.0).collect();
        let b: Vec<f64> = (0..11).map(|i| (i * i) as f64 * 0.1).collect();
        let naive: f64 = a.iter().zip(&b).map(|(x, y)| x * y).sum();
        assert!((dot(&a, &b) - naive).abs() < 1e-12);
    }

    #[test]
    fn dot_in_eight_lanes_matches_naive_and_four_lanes_is_dot_bit_for_bit() {
        for len in [0, 3, 8, 13, 64, 67] {
            let a: Vec<f64> = (0..len).map(|i| (i as f64 * 0.37).sin()).collect();
            let b: Vec<f64> = (0..len).map(|i| 1.0 + (i as f64 * 0.11).cos()).collect();
            let naive: f64 = a.iter().zip(&b).map(|(x, y)| x * y).sum();
            assert!(
                (dot_in_lanes::<8>(&a, &b) - naive).abs() < 1e-12,
                "length {len}"
            );
            // The prox operators' arithmetic: four sums, added (s0 + s1) + (s2 + s3), then the tail.
            let mut s = [0.0; 4];
            for (x, y) in a.chunks_exact(4).zip(b.chunks_exact(4)) {
                for k in 0..4 {
                    s[k] += x[k] * y[k];
                }
            }
            let tail: f64 = a[len / 4 * 4..]
                .iter()
                .zip(&b[len / 4 * 4..])
                .map(|(x, y)| x * y)
                .sum();
            let want = (s[0] + s[1]) + (s[2] + s[3]) + tail;
            assert_eq!(dot(&a, &b).to_bits(), want.to_bits(), "length {len}");
        }
    }
}
