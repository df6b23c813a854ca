//! The exact `prox_{γ f_i}` of the squared loss `f_i(x) = ‖A x − b‖² / (2m)`.
//!
//! Optimality: `x = v − (γ/m) Aᵀ(A x − b)`. Three forms, all with systems `I + (γ/m)·Gram`, whose
//! eigenvalues are ≥ 1 (so the factorization is stable whatever γ):
//! - one record (Sherman–Morrison): `x = v + γ a (b − aᵀv) / (1 + γ‖a‖²)`, with the denominator
//!   cached per user, two `O(p)` loops;
//! - `m ≥ p` (primal): `(I + (γ/m) AᵀA) x = v + γ Aᵀb/m`, with the Cholesky factor and `Aᵀb/m`
//!   cached per user, `O(p²)` per call;
//! - `2 ≤ m < p` (dual, Woodbury): with `r = A x − b`, `(I + (γ/m) AAᵀ) r = A v − b` and
//!   `x = v − (γ/m) Aᵀ r`, the `m × m` factor cached, `O(mp + m²)` per call.
//!
//! The cache therefore holds `n · min(m, p)(min(m, p) + 1)/2` factor entries plus `p` per primal
//! user and one denominator per user, built once per γ.

use crate::problem::linalg::{
    add_diagonal_packed, add_outer_packed, axpy, cholesky, cholesky_solve, dot, gram_rows_packed,
    packed_len,
};
use crate::problem::{Problem, ProblemError};

/// The per-user factors of one γ.
#[derive(Debug)]
pub(super) struct SquaredCache {
    /// `n + 1` starts of each user's packed factor in `factors` (empty when no user has two
    /// records).
    factor_start: Vec<usize>,
    factors: Vec<f64>,
    /// `n + 1` starts of each primal user's `Aᵀb/m` in `atb`.
    atb_start: Vec<usize>,
    atb: Vec<f64>,
    /// `1 + γ‖a‖²` of each user with one record (NaN for the others).
    one_record: Vec<f64>,
}

impl SquaredCache {
    /// Factors every user's system for this `γ`.
    pub(super) fn new(problem: &Problem, gamma: f64) -> Result<Self, ProblemError> {
        let data = problem.data();
        let p = data.data.n_features;
        let n = data.n_users();
        let one_record = (0..n)
            .map(|i| match data.records(i) {
                1 => 1.0 + gamma * dot(data.features(i), data.features(i)),
                _ => f64::NAN,
            })
            .collect();
        if (0..n).all(|i| data.records(i) < 2) {
            return Ok(Self {
                factor_start: Vec::new(),
                factors: Vec::new(),
                atb_start: Vec::new(),
                atb: Vec::new(),
                one_record,
            });
        }
        let mut factor_start = Vec::with_capacity(n + 1);
        let mut atb_start = Vec::with_capacity(n + 1);
        let (mut nf, mut na) = (0, 0);
        for i in 0..n {
            factor_start.push(nf);
            atb_start.push(na);
            let m = data.records(i);
            if m >= 2 {
                nf += packed_len(m.min(p));
                if m >= p {
                    na += p;
                }
            }
        }
        factor_start.push(nf);
        atb_start.push(na);
        let mut factors = vec![0.0; nf];
        let mut atb = vec![0.0; na];
        for user in 0..n {
            let m = data.records(user);
            if m < 2 {
                continue;
            }
            let a = data.features(user);
            let b = data.labels(user);
            let c = gamma / m as f64;
            let factor = &mut factors[factor_start[user]..factor_start[user + 1]];
            let d = if m >= p {
                let atb_i = &mut atb[atb_start[user]..atb_start[user + 1]];
                for (aj, &bj) in a.chunks_exact(p).zip(b) {
                    add_outer_packed(c, aj, factor);
                    axpy(bj / m as f64, aj, atb_i);
                }
                p
            } else {
                gram_rows_packed(a, m, p, factor);
                factor.iter_mut().for_each(|e| *e *= c);
                m
            };
            add_diagonal_packed(1.0, d, factor);
            cholesky(factor, d).map_err(|_| ProblemError::Factorization { user })?;
        }
        Ok(Self {
            factor_start,
            factors,
            atb_start,
            atb,
            one_record,
        })
    }

    /// `out = prox_{γ f_i}(v)` for a user with at least one record; `work` has at least
    /// `min(m, p)` entries (used by the dual form only).
    pub(super) fn prox(
        &self,
        problem: &Problem,
        gamma: f64,
        user: usize,
        v: &[f64],
        out: &mut [f64],
        work: &mut [f64],
    ) {
        let data = problem.data();
        let p = data.data.n_features;
        let a = data.features(user);
        let b = data.labels(user);
        let m = b.len();
        if m == 1 {
            let coef = gamma * (b[0] - dot(a, v)) / self.one_record[user];
            for ((o, &vk), &ak) in out.iter_mut().zip(v).zip(a) {
                *o = vk + coef * ak;
            }
            return;
        }
        let factor = &self.factors[self.factor_start[user]..self.factor_start[user + 1]];
        if m >= p {
            let atb = &self.atb[self.atb_start[user]..self.atb_start[user + 1]];
            for ((o, &vk), &ck) in out.iter_mut().zip(v).zip(atb) {
                *o = vk + gamma * ck;
            }
            cholesky_solve(factor, p, out);
        } else {
            let r = &mut work[..m];
            for ((rj, aj), &bj) in r.iter_mut().zip(a.chunks_exact(p)).zip(b) {
                *rj = dot(aj, v) - bj;
            }
            cholesky_solve(factor, m, r);
            out.copy_from_slice(v);
            let c = gamma / m as f64;
            for (aj, &rj) in a.chunks_exact(p).zip(r.iter()) {
                axpy(-c * rj, aj, out);
            }
        }
    }
}
