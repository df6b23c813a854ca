//! The multinomial (softmax cross-entropy) prox, in one of two parametrizations.
//!
//! The model has `K · p` entries (7840 for MNIST), too many for a direct solve.
//!
//! - [`Multinomial`], a [`ProxModel`] in the model's coordinates, solved by Newton–CG: the
//!   Hessian `(1/m) Σ_j H_j ⊗ a_j a_jᵀ`, `H_j = diag(π_j) − π_j π_jᵀ`, has rank at most
//!   `m (K − 1)`, so conjugate gradients on `I/γ + H` need few Hessian-vector products, each
//!   `O(m K p)` and allocation-free (`π_j` is kept from the gradient evaluation).
//! - [`Reduced`], when `m < p` and `m K` is small (one record: `K` unknowns instead of `K p`):
//!   the optimality condition `x = v − (γ/m) Σ_j (π_j − e_{y_j}) ⊗ a_j` puts the prox in
//!   `v − span{c ⊗ a_j}`, so it writes `x = v − Σ_j c_j ⊗ a_j` with `c_j ∈ R^K`. With the Gram
//!   matrix `G = AAᵀ` and `L0_j = V a_j`, the logits are `L_j = L0_j − Σ_l G_jl c_l`,
//!   `‖x − v‖² = Σ_jl G_jl ⟨c_j, c_l⟩`, and `∇φ(x) = Σ_j r_j ⊗ a_j` with
//!   `r_j = (π_j − e_{y_j})/m − c_j/γ`, so `‖∇φ‖² = Σ_jl G_jl ⟨r_j, r_l⟩`: the same objective,
//!   gradient norm and certificate as in `x`, in `O(m² K)` per evaluation. The Newton step in `x`,
//!   restricted to the span, is `d = Σ_j δ_j ⊗ a_j` with
//!   `δ_j + (γ/m) H_j (G δ)_j = γ r_j` (an `mK × mK` non-symmetric system, solved by LU), and
//!   `x − d` is `c + δ`. Only the setup (`G`, `L0`) and the final `x` cost `O(m K p)`.
//!   The warm start `z` enters through its logits: `c_j = (γ/m)(π_j(z) − e_{y_j})`, which is exact
//!   when `z` is the prox.

use super::newton::{CgWork, NewtonProblem, Point, ProxModel, conjugate_gradient};
use crate::problem::linalg::{axpy, dot, lu_solve, norm};
use crate::problem::loss::{class_index, cross_entropy, log_sum_exp};

/// Largest `m · K` for which [`Reduced`] is used (its `mK × mK` LU costs `(mK)³/3` per Newton
/// iteration, about what Newton–CG's products cost at this size with MNIST's `p`).
pub(super) const REDUCED_MAX: usize = 256;

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
            loss += cross_entropy(lj.iter().copied(), y);
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
                cross_entropy(lj.iter().zip(uj).map(|(&l, &u)| l - s * u), self.label(j))
            })
            .sum();
        total * self.inv_m
    }
}

/// `m × K`-sized buffers of [`Reduced`].
#[derive(Debug)]
pub(super) struct ReducedWork<'s> {
    /// `m × m`, row-major.
    pub(super) gram: &'s mut [f64],
    /// `(mK) × (mK)`, row-major.
    pub(super) jac: &'s mut [f64],
    /// Eight `m × K` vectors.
    pub(super) vecs: [&'s mut [f64]; 8],
}

/// The multinomial prox objective in the coordinates `c` of `x = v − Σ_j c_j ⊗ a_j` (module docs).
#[derive(Debug)]
pub(super) struct Reduced<'s> {
    labels: &'s [f64],
    classes: usize,
    gamma: f64,
    inv_m: f64,
    gram: &'s mut [f64],
    jac: &'s mut [f64],
    /// `V a_j`.
    l0: &'s mut [f64],
    c: &'s mut [f64],
    /// `G c`.
    gc: &'s mut [f64],
    /// `L0 − G c`.
    logits: &'s mut [f64],
    probs: &'s mut [f64],
    /// `(π − e_y)/m − c/γ`.
    r: &'s mut [f64],
    delta: &'s mut [f64],
    /// `G δ` (also `G r` while evaluating).
    gdelta: &'s mut [f64],
    v_norm: f64,
    mean_a: f64,
    /// `⟨c, Gc⟩`, `⟨c, Gδ⟩`, `⟨δ, Gδ⟩`.
    c_gc: f64,
    c_gd: f64,
    d_gd: f64,
}

/// `dst_j = Σ_l G_jl src_l` for `m × K` row blocks.
fn gram_times(gram: &[f64], k: usize, src: &[f64], dst: &mut [f64]) {
    let m = src.len() / k;
    for (dj, gj) in dst.chunks_exact_mut(k).zip(gram.chunks_exact(m)) {
        dj.fill(0.0);
        for (sl, &g) in src.chunks_exact(k).zip(gj) {
            axpy(g, sl, dj);
        }
    }
}

/// `softmax(logits)` into `probs`.
fn softmax(logits: &[f64], probs: &mut [f64]) {
    let lse = log_sum_exp(logits.iter().copied());
    for (pk, &l) in probs.iter_mut().zip(logits) {
        *pk = (l - lse).exp();
    }
}

impl<'s> Reduced<'s> {
    /// Sets up the prox of the records `a` (`m < p` rows) with validated labels at `v`, warm
    /// started from `start` when it is finite.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn new(
        a: &[f64],
        labels: &'s [f64],
        p: usize,
        classes: usize,
        gamma: f64,
        v: &[f64],
        start: &[f64],
        work: ReducedWork<'s>,
    ) -> Self {
        let k = classes;
        let m = labels.len();
        let ReducedWork { gram, jac, vecs } = work;
        let [l0, c, gc, logits, probs, r, delta, gdelta] = vecs;
        let rows = || a.chunks_exact(p);
        for (i, ai) in rows().enumerate() {
            for (j, aj) in rows().enumerate().take(i + 1) {
                let g = dot(ai, aj);
                gram[i * m + j] = g;
                gram[j * m + i] = g;
            }
        }
        let mean_a = (0..m).map(|j| gram[j * m + j].sqrt()).sum::<f64>() / m as f64;
        for (aj, lj) in rows().zip(l0.chunks_exact_mut(k)) {
            for (l, vk) in lj.iter_mut().zip(v.chunks_exact(p)) {
                *l = dot(vk, aj);
            }
        }
        c.fill(0.0);
        if start.iter().all(|s| s.is_finite()) {
            let scale = gamma / m as f64;
            for (j, (aj, cj)) in rows().zip(c.chunks_exact_mut(k)).enumerate() {
                let lj = &mut logits[..k];
                for (l, zk) in lj.iter_mut().zip(start.chunks_exact(p)) {
                    *l = dot(zk, aj);
                }
                softmax(lj, cj);
                cj.iter_mut().for_each(|e| *e *= scale);
                cj[class_index(labels[j], k).unwrap_or(0)] -= scale;
            }
        }
        Self {
            labels,
            classes,
            gamma,
            inv_m: 1.0 / m as f64,
            gram,
            jac,
            l0,
            c,
            gc,
            logits,
            probs,
            r,
            delta,
            gdelta,
            v_norm: norm(v),
            mean_a,
            c_gc: 0.0,
            c_gd: 0.0,
            d_gd: 0.0,
        }
    }

    fn label(&self, j: usize) -> usize {
        class_index(self.labels[j], self.classes).unwrap_or(0)
    }

    /// Writes `x = v − Σ_j c_j ⊗ a_j` to `out`.
    pub(super) fn write_model(&self, a: &[f64], p: usize, v: &[f64], out: &mut [f64]) {
        out.copy_from_slice(v);
        for (aj, cj) in a.chunks_exact(p).zip(self.c.chunks_exact(self.classes)) {
            for (&cjk, ok) in cj.iter().zip(out.chunks_exact_mut(p)) {
                axpy(-cjk, aj, ok);
            }
        }
    }
}

impl NewtonProblem for Reduced<'_> {
    fn evaluate(&mut self) -> Point {
        let k = self.classes;
        let inv_gamma = 1.0 / self.gamma;
        gram_times(self.gram, k, self.c, self.gc);
        let mut f = 0.0;
        for j in 0..self.labels.len() {
            let y = self.label(j);
            let b = j * k..(j + 1) * k;
            for ((l, &l0), &g) in self.logits[b.clone()]
                .iter_mut()
                .zip(&self.l0[b.clone()])
                .zip(&self.gc[b.clone()])
            {
                *l = l0 - g;
            }
            softmax(&self.logits[b.clone()], &mut self.probs[b.clone()]);
            f += cross_entropy(self.logits[b.clone()].iter().copied(), y);
            for (i, ((rk, &pk), &ck)) in self.r[b.clone()]
                .iter_mut()
                .zip(&self.probs[b.clone()])
                .zip(&self.c[b])
                .enumerate()
            {
                let target = if i == y { 1.0 } else { 0.0 };
                *rk = (pk - target) * self.inv_m - ck * inv_gamma;
            }
        }
        gram_times(self.gram, k, self.r, self.gdelta);
        let gn2 = dot(self.r, self.gdelta).max(0.0);
        self.c_gc = dot(self.c, self.gc);
        let x2 = (self.v_norm * self.v_norm - 2.0 * dot(self.c, self.l0) + self.c_gc).max(0.0);
        Point {
            f: f * self.inv_m,
            quad: 0.5 * inv_gamma * self.c_gc,
            grad_norm: gn2.sqrt(),
            scale: self.mean_a + (x2.sqrt() + self.v_norm) * inv_gamma,
        }
    }

    fn direction(&mut self, _cg_tol: f64) -> f64 {
        let k = self.classes;
        let m = self.labels.len();
        let n = m * k;
        let coef = self.gamma * self.inv_m;
        // Row (j, a), column (l, b): δ_{jl} δ_{ab} + (γ/m) G_jl (H_j)_ab.
        for j in 0..m {
            let pj = &self.probs[j * k..(j + 1) * k];
            for (ia, &pa) in pj.iter().enumerate() {
                let row = &mut self.jac[(j * k + ia) * n..(j * k + ia + 1) * n];
                for (l, block) in row.chunks_exact_mut(k).enumerate() {
                    let g = coef * self.gram[j * m + l];
                    for (ib, (e, &pb)) in block.iter_mut().zip(pj).enumerate() {
                        let h = if ia == ib { pa - pa * pb } else { -pa * pb };
                        *e = g * h + if j == l && ia == ib { 1.0 } else { 0.0 };
                    }
                }
            }
        }
        for (dk, &rk) in self.delta.iter_mut().zip(self.r.iter()) {
            *dk = self.gamma * rk;
        }
        // Singular only on overflow; `γ r` is then still a descent direction.
        if lu_solve(self.jac, n, self.delta).is_err() {
            for (dk, &rk) in self.delta.iter_mut().zip(self.r.iter()) {
                *dk = self.gamma * rk;
            }
        }
        gram_times(self.gram, k, self.delta, self.gdelta);
        self.c_gd = dot(self.c, self.gdelta);
        self.d_gd = dot(self.delta, self.gdelta);
        dot(self.r, self.gdelta)
    }

    fn line_value(&self, s: f64) -> f64 {
        let k = self.classes;
        let total: f64 = (0..self.labels.len())
            .map(|j| {
                let b = j * k..(j + 1) * k;
                let (lj, gj) = (&self.logits[b.clone()], &self.gdelta[b]);
                let y = self.label(j);
                cross_entropy(lj.iter().zip(gj).map(|(&l, &g)| l - s * g), y)
            })
            .sum();
        let quad = self.c_gc + 2.0 * s * self.c_gd + s * s * self.d_gd;
        total * self.inv_m + 0.5 * quad / self.gamma
    }

    fn step(&mut self, s: f64) {
        axpy(s, self.delta, self.c);
    }
}
