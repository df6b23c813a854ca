//! The logistic loss as a [`ProxModel`]: `f_i(x) = (1/m) Σ_j log(1 + exp(−b_j a_jᵀx))`, with
//! Hessian `(1/m) Aᵀ D A`, `D = diag(σ(t_j) σ(−t_j))`, `t_j = b_j a_jᵀx`.
//!
//! Newton directions `(∇²f_i + I/γ)⁻¹ g`, with `k = min(m, p)`:
//! - [`LogisticSolve::Primal`] (`m ≥ p`): Cholesky of the `p × p` matrix `I + (γ/m) AᵀDA`, and
//!   `d = γ (I + (γ/m) AᵀDA)⁻¹ g`;
//! - [`LogisticSolve::Dual`] (`m < p`): Woodbury with `S = D^{1/2}`,
//!   `d = γ [g − (γ/m) Aᵀ S (I + (γ/m) S AAᵀ S)⁻¹ S A g]`, an `m × m` Cholesky, with the Gram
//!   matrix `AAᵀ` formed once per prox call (for one record this is `O(p)` per iteration);
//! - [`LogisticSolve::Cg`] (`k` above the direct limit): conjugate gradients on `(1/m) Aᵀ(D(A q))`,
//!   since forming a `k × k` system would cost more than a few dozen products.
//!
//! A factorization can fail only on overflow; the direction then falls back to `γ g`, a descent
//! direction, and the certificate reports whatever accuracy was reached.

use super::newton::{CgWork, ProxModel, conjugate_gradient};
use crate::problem::linalg::{
    add_diagonal_packed, add_outer_packed, axpy, cholesky, cholesky_solve, dot, gram_rows_packed,
    norm, packed_get,
};
use crate::problem::loss::{log1pexp, sigmoid};

/// How the Newton direction is solved.
#[derive(Debug)]
pub(super) enum LogisticSolve<'s> {
    /// `p × p` system in `system` (packed).
    Primal { system: &'s mut [f64] },
    /// `m × m` system in `system`; `gram` holds `AAᵀ` (packed); `work` is `m`-sized.
    Dual {
        gram: &'s mut [f64],
        system: &'s mut [f64],
        work: &'s mut [f64],
    },
    /// Conjugate gradients.
    Cg,
}

/// One user's logistic records and the state of the Newton iteration.
#[derive(Debug)]
pub(super) struct Logistic<'s> {
    a: &'s [f64],
    b: &'s [f64],
    p: usize,
    inv_m: f64,
    /// `A x` at the last `value_grad` point.
    margin: &'s mut [f64],
    /// `σ(t_j) σ(−t_j)` at the last `value_grad` point.
    curv: &'s mut [f64],
    /// `A d` for the line search.
    ad: &'s mut [f64],
    scale: f64,
    solve: LogisticSolve<'s>,
}

impl<'s> Logistic<'s> {
    /// The model of the records `a` (row-major, `p` per row) with labels `b`; `margin`, `curv`,
    /// `ad` have one entry per record.
    pub(super) fn new(
        a: &'s [f64],
        b: &'s [f64],
        p: usize,
        margin: &'s mut [f64],
        curv: &'s mut [f64],
        ad: &'s mut [f64],
        mut solve: LogisticSolve<'s>,
    ) -> Self {
        let m = b.len();
        if let LogisticSolve::Dual { gram, .. } = &mut solve {
            gram_rows_packed(a, m, p, gram);
        }
        let scale = a.chunks_exact(p).map(norm).sum::<f64>() / m as f64;
        Self {
            a,
            b,
            p,
            inv_m: 1.0 / m as f64,
            margin,
            curv,
            ad,
            scale,
            solve,
        }
    }

    fn rows(&self) -> impl Iterator<Item = &'s [f64]> + use<'s> {
        self.a.chunks_exact(self.p)
    }
}

impl ProxModel for Logistic<'_> {
    fn value_grad(&mut self, x: &[f64], g: &mut [f64]) -> f64 {
        g.fill(0.0);
        let mut loss = 0.0;
        for (((aj, &bj), mj), cj) in self
            .rows()
            .zip(self.b)
            .zip(self.margin.iter_mut())
            .zip(self.curv.iter_mut())
        {
            *mj = dot(aj, x);
            let t = bj * *mj;
            let s_neg = sigmoid(-t);
            *cj = sigmoid(t) * s_neg;
            axpy(-bj * s_neg * self.inv_m, aj, g);
            loss += log1pexp(-t);
        }
        loss * self.inv_m
    }

    fn grad_scale(&self) -> f64 {
        self.scale
    }

    fn direction(
        &mut self,
        g: &[f64],
        gamma: f64,
        cg_tol: f64,
        d: &mut [f64],
        cg: &mut CgWork<'_>,
    ) {
        let c = gamma * self.inv_m;
        let (a, p, curv) = (self.a, self.p, &*self.curv);
        match &mut self.solve {
            LogisticSolve::Primal { system } => {
                system.fill(0.0);
                for (aj, &dj) in a.chunks_exact(p).zip(curv.iter()) {
                    add_outer_packed(c * dj, aj, system);
                }
                add_diagonal_packed(1.0, p, system);
                d.iter_mut().zip(g).for_each(|(dk, &gk)| *dk = gamma * gk);
                if cholesky(system, p).is_ok() {
                    cholesky_solve(system, p, d);
                }
            }
            LogisticSolve::Dual { gram, system, work } => {
                let m = curv.len();
                for ((wj, aj), &dj) in work.iter_mut().zip(a.chunks_exact(p)).zip(curv.iter()) {
                    *wj = dj.sqrt() * dot(aj, g);
                }
                let mut idx = 0;
                for i in 0..m {
                    for j in 0..=i {
                        let s = (curv[i] * curv[j]).sqrt();
                        system[idx] =
                            c * s * packed_get(gram, i, j) + if i == j { 1.0 } else { 0.0 };
                        idx += 1;
                    }
                }
                d.iter_mut().zip(g).for_each(|(dk, &gk)| *dk = gamma * gk);
                if cholesky(system, m).is_ok() {
                    cholesky_solve(system, m, work);
                    for ((aj, &wj), &dj) in a.chunks_exact(p).zip(work.iter()).zip(curv.iter()) {
                        axpy(-gamma * c * dj.sqrt() * wj, aj, d);
                    }
                }
            }
            LogisticSolve::Cg => {
                let inv_m = self.inv_m;
                let hess_vec = |q: &[f64], out: &mut [f64]| {
                    out.fill(0.0);
                    for (aj, &dj) in a.chunks_exact(p).zip(curv.iter()) {
                        axpy(dj * inv_m * dot(aj, q), aj, out);
                    }
                };
                conjugate_gradient(hess_vec, gamma, g, cg_tol, d, cg);
            }
        }
    }

    fn line_prepare(&mut self, d: &[f64]) {
        let (a, p) = (self.a, self.p);
        for (adj, aj) in self.ad.iter_mut().zip(a.chunks_exact(p)) {
            *adj = dot(aj, d);
        }
    }

    fn line_value(&self, s: f64) -> f64 {
        let total: f64 = self
            .b
            .iter()
            .zip(self.margin.iter())
            .zip(self.ad.iter())
            .map(|((&bj, &mj), &adj)| log1pexp(-bj * (mj - s * adj)))
            .sum();
        total * self.inv_m
    }
}
