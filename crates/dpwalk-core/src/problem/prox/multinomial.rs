//! The multinomial (softmax cross-entropy) loss as a [`ProxModel`], solved by Newton–CG.
//!
//! The model has `K · p` entries (7840 for MNIST), too many for a direct solve, but its Hessian
//! `(1/m) Σ_j (diag(π_j) − π_j π_jᵀ) ⊗ a_j a_jᵀ` has rank at most `m (K − 1)`, so conjugate
//! gradients on `I/γ + H` need few Hessian-vector products, each `O(m K p)` and
//! allocation-free (`π_j` is kept from the gradient evaluation).

use super::newton::{CgWork, ProxModel, conjugate_gradient};
use crate::problem::linalg::{axpy, dot, norm};
use crate::problem::loss::{class_index, log_sum_exp};

/// One user's multinomial records and the state of the Newton iteration.
#[derive(Debug)]
pub(super) struct Multinomial<'s> {
    a: &'s [f64],
    labels: &'s [f64],
    p: usize,
    classes: usize,
    inv_m: f64,
    /// Logits `x_kᵀa_j` at the last `value_grad` point, record-major (`m × K`).
    logits: &'s mut [f64],
    /// Softmax probabilities at the same point (`m × K`).
    probs: &'s mut [f64],
    /// `d_kᵀa_j` for the line search (`m × K`); also the Hessian-vector product's work space.
    ud: &'s mut [f64],
    scale: f64,
}

impl<'s> Multinomial<'s> {
    /// The model of the records `a` (row-major, `p` per row) with validated class labels;
    /// `logits`, `probs`, `ud` have `records · classes` entries.
    pub(super) fn new(
        a: &'s [f64],
        labels: &'s [f64],
        p: usize,
        classes: usize,
        logits: &'s mut [f64],
        probs: &'s mut [f64],
        ud: &'s mut [f64],
    ) -> Self {
        let m = labels.len();
        let scale = a.chunks_exact(p).map(norm).sum::<f64>() / m as f64;
        Self {
            a,
            labels,
            p,
            classes,
            inv_m: 1.0 / m as f64,
            logits,
            probs,
            ud,
            scale,
        }
    }

    /// Label of record `j` as a class (validated by `Problem::new`).
    fn label(&self, j: usize) -> usize {
        class_index(self.labels[j], self.classes).unwrap_or(0)
    }
}

impl ProxModel for Multinomial<'_> {
    fn value_grad(&mut self, x: &[f64], g: &mut [f64]) -> f64 {
        let (p, k) = (self.p, self.classes);
        g.fill(0.0);
        let mut loss = 0.0;
        for (j, aj) in self.a.chunks_exact(p).enumerate() {
            let y = self.label(j);
            let lj = &mut self.logits[j * k..(j + 1) * k];
            for (l, xc) in lj.iter_mut().zip(x.chunks_exact(p)) {
                *l = dot(xc, aj);
            }
            let lse = log_sum_exp(lj.iter().copied());
            loss += lse - lj[y];
            let pj = &mut self.probs[j * k..(j + 1) * k];
            for (c, ((pc, &l), gc)) in pj
                .iter_mut()
                .zip(lj.iter())
                .zip(g.chunks_exact_mut(p))
                .enumerate()
            {
                *pc = (l - lse).exp();
                let target = if c == y { 1.0 } else { 0.0 };
                axpy((*pc - target) * self.inv_m, aj, gc);
            }
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
        let (a, p, k, inv_m, probs) = (self.a, self.p, self.classes, self.inv_m, &*self.probs);
        let u = &mut self.ud[..k];
        let hess_vec = |q: &[f64], out: &mut [f64]| {
            out.fill(0.0);
            for (aj, pj) in a.chunks_exact(p).zip(probs.chunks_exact(k)) {
                let mut mean = 0.0;
                for ((uc, qc), &pc) in u.iter_mut().zip(q.chunks_exact(p)).zip(pj) {
                    *uc = dot(qc, aj);
                    mean += pc * *uc;
                }
                for ((&uc, &pc), oc) in u.iter().zip(pj).zip(out.chunks_exact_mut(p)) {
                    axpy(pc * (uc - mean) * inv_m, aj, oc);
                }
            }
        };
        conjugate_gradient(hess_vec, gamma, g, cg_tol, d, cg);
    }

    fn line_prepare(&mut self, d: &[f64]) {
        let (p, k) = (self.p, self.classes);
        for (aj, uj) in self.a.chunks_exact(p).zip(self.ud.chunks_exact_mut(k)) {
            for (uc, dc) in uj.iter_mut().zip(d.chunks_exact(p)) {
                *uc = dot(dc, aj);
            }
        }
    }

    fn line_value(&self, s: f64) -> f64 {
        let k = self.classes;
        let total: f64 = (0..self.labels.len())
            .map(|j| {
                let (lj, uj) = (
                    &self.logits[j * k..(j + 1) * k],
                    &self.ud[j * k..(j + 1) * k],
                );
                let y = self.label(j);
                let lse = log_sum_exp(lj.iter().zip(uj).map(|(&l, &u)| l - s * u));
                lse - (lj[y] - s * uj[y])
            })
            .sum();
        total * self.inv_m
    }
}
