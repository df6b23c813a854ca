//! Newton's method for `φ(x) = f_i(x) + ‖x − v‖²/(2γ)`, the objective of `prox_{γ f_i}(v)`, with
//! an Armijo backtracking line search and a certificate.
//!
//! # Certificate
//! `φ` is `(1/γ)`-strongly convex, so for its minimizer `x*` (where `∇φ(x*) = 0`)
//! `‖∇φ(x)‖ · ‖x − x*‖ ≥ ⟨∇φ(x) − ∇φ(x*), x − x*⟩ ≥ ‖x − x*‖²/γ`, i.e. `‖x − x*‖ ≤ γ ‖∇φ(x)‖`.
//! The solver stops when `‖∇φ(x)‖ ≤ PROX_TOL · scale`, where `scale` bounds the magnitude of the
//! terms of `∇φ` (`mean_j ‖a_j‖ + (‖x‖ + ‖v‖)/γ`, the loss's gradient being at most
//! `mean_j ‖a_j‖` for logistic and `√2 mean_j ‖a_j‖` for multinomial), and returns `γ‖∇φ(x)‖`,
//! a bound on the distance to the exact prox, evaluated at the point it returns. It also stops
//! when rounding stalls it (steps that neither decrease `φ` beyond rounding nor `‖∇φ‖`), or after
//! [`MAX_NEWTON`] iterations; the certificate then says how close it got.
//!
//! The loop ([`minimize`]) sees a [`NewtonProblem`]: an iterate it can evaluate, a direction and
//! a line. [`Primal`] works in the model's coordinates `x`, with the loss-specific parts (the
//! gradient, the Newton direction, the loss along a line) from a [`ProxModel`], the direction
//! solved directly (logistic, small systems) or by conjugate gradients on Hessian-vector
//! products ([`conjugate_gradient`]); the multinomial loss with few records works in a reduced
//! parametrization of `x` instead (see `multinomial`).

use crate::problem::linalg::{axpy, dot, norm};

/// Target of `‖∇φ‖ / scale` (see the module docs).
pub(super) const PROX_TOL: f64 = 1e-13;
/// Newton iterations before giving up (from a warm start, a handful are typical).
const MAX_NEWTON: usize = 100;
/// Step halvings before the line search gives up.
const MAX_HALVINGS: usize = 60;
/// Armijo's sufficient-decrease fraction.
const ARMIJO: f64 = 1e-4;
/// Relative size of rounding errors in `φ`, below which a decrease is not a decrease.
const ROUNDING: f64 = 64.0 * f64::EPSILON;
/// Cap on conjugate-gradient iterations per Newton direction.
const MAX_CG: usize = 1000;

/// The loss-specific half of the prox Newton solver, for one user's records.
pub(super) trait ProxModel {
    /// Returns `f_i(x)` and writes `∇f_i(x)` to `g`; remembers what `direction` and the line
    /// search need at `x` (margins, curvatures, probabilities).
    fn value_grad(&mut self, x: &[f64], g: &mut [f64]) -> f64;
    /// Bound on `‖∇f_i‖` used to make the stopping rule relative.
    fn grad_scale(&self) -> f64;
    /// `d ≈ (∇²f_i(x) + I/γ)⁻¹ g` at the last `value_grad` point: exactly for direct solvers, to a
    /// relative residual `cg_tol` for conjugate gradients.
    fn direction(&mut self, g: &[f64], gamma: f64, cg_tol: f64, d: &mut [f64], cg: &mut CgWork<'_>);
    /// Prepares [`ProxModel::line_value`] along `x − s d` (e.g. computes `A d`).
    fn line_prepare(&mut self, d: &[f64]);
    /// `f_i(x − s d)`, in `O(records)` after `line_prepare`.
    fn line_value(&self, s: f64) -> f64;
}

/// Model-sized buffers of the conjugate-gradient solver.
#[derive(Debug)]
pub(super) struct CgWork<'s> {
    pub(super) r: &'s mut [f64],
    pub(super) q: &'s mut [f64],
    pub(super) hq: &'s mut [f64],
}

/// Solves `(H + I/γ) d = g` from `d = 0` by conjugate gradients until `‖residual‖ ≤ rel_tol ‖g‖`,
/// where `hess_vec(q, out)` writes `H q`. Every iterate is a descent direction for `φ` (`gᵀd > 0`),
/// so a truncated solve still gives a usable Newton step. With `H` of rank `k` (≤ records ·
/// classes) it converges in at most `k + 1` iterations in exact arithmetic.
pub(super) fn conjugate_gradient(
    mut hess_vec: impl FnMut(&[f64], &mut [f64]),
    gamma: f64,
    g: &[f64],
    rel_tol: f64,
    d: &mut [f64],
    cg: &mut CgWork<'_>,
) {
    let CgWork { r, q, hq } = cg;
    let inv_gamma = 1.0 / gamma;
    d.fill(0.0);
    r.copy_from_slice(g);
    q.copy_from_slice(g);
    let mut rr = dot(r, r);
    let target = rel_tol * rel_tol * rr;
    for _ in 0..MAX_CG.min(g.len() + 1) {
        if rr <= target {
            break;
        }
        hess_vec(q, hq);
        axpy(inv_gamma, q, hq);
        let qhq = dot(q, hq);
        if !(qhq > 0.0 && qhq.is_finite()) {
            break;
        }
        let alpha = rr / qhq;
        axpy(alpha, q, d);
        axpy(-alpha, hq, r);
        let rr_next = dot(r, r);
        let beta = rr_next / rr;
        rr = rr_next;
        for (qk, &rk) in q.iter_mut().zip(r.iter()) {
            *qk = rk + beta * *qk;
        }
    }
}

/// What the Newton loop needs to know about the current iterate.
#[derive(Debug, Clone, Copy)]
pub(super) struct Point {
    /// `f_i(x)`.
    pub(super) f: f64,
    /// `‖x − v‖² / (2γ)`.
    pub(super) quad: f64,
    /// `‖∇φ(x)‖`.
    pub(super) grad_norm: f64,
    /// The scale of the stopping rule (see the module docs).
    pub(super) scale: f64,
}

/// A prox objective in some coordinates (the model itself, or a reduced parametrization).
pub(super) trait NewtonProblem {
    /// Evaluates the current iterate.
    fn evaluate(&mut self) -> Point;
    /// Computes the Newton direction at the evaluated iterate and returns the slope
    /// `−dφ/ds` at `s = 0` along it (positive for a descent direction).
    fn direction(&mut self, cg_tol: f64) -> f64;
    /// `φ` at step `s` along the direction.
    fn line_value(&self, s: f64) -> f64;
    /// Moves the iterate to step `s` along the direction.
    fn step(&mut self, s: f64);
}

/// Damped Newton iterations on `problem` until the stopping rule of the module docs; returns
/// the certificate `γ ‖∇φ(x)‖` of the final iterate.
pub(super) fn minimize(problem: &mut impl NewtonProblem, gamma: f64) -> f64 {
    let mut prev_gn = f64::INFINITY;
    let mut last_step_flat = false;
    let mut stalls = 0;
    let mut iteration = 0;
    loop {
        let Point {
            f,
            quad,
            grad_norm: gn,
            scale,
        } = problem.evaluate();
        if gn <= PROX_TOL * scale || iteration == MAX_NEWTON {
            return gamma * gn;
        }
        // At the rounding floor steps stop changing φ and ‖∇φ‖ stops shrinking: give up there.
        if last_step_flat && gn >= prev_gn {
            stalls += 1;
            if stalls >= 2 {
                return gamma * gn;
            }
        } else {
            stalls = 0;
        }
        prev_gn = gn;
        iteration += 1;

        // Newton–CG forcing term √(‖∇φ‖/scale): superlinear convergence, cheap early directions.
        let slope = problem.direction((gn / scale).sqrt().min(0.5));
        if !(slope > 0.0 && slope.is_finite()) {
            return gamma * gn;
        }
        let phi0 = f + quad;
        let slack = ROUNDING * (f.abs() + quad);
        let mut s = 1.0;
        let mut accepted = None;
        for _ in 0..MAX_HALVINGS {
            let phi = problem.line_value(s);
            if phi <= phi0 - ARMIJO * s * slope + slack {
                accepted = Some(phi);
                break;
            }
            s *= 0.5;
        }
        let Some(phi) = accepted else {
            return gamma * gn;
        };
        last_step_flat = phi0 - phi <= slack;
        problem.step(s);
    }
}

/// Model-sized buffers of the Newton solver in the model's own coordinates.
#[derive(Debug)]
pub(super) struct NewtonWork<'s> {
    pub(super) g: &'s mut [f64],
    pub(super) d: &'s mut [f64],
    pub(super) cg: CgWork<'s>,
}

/// The prox objective in the model's coordinates `x`, for a [`ProxModel`]; the step is
/// `x − s d` with `d ≈ (∇²φ)⁻¹ ∇φ`.
#[derive(Debug)]
pub(super) struct Primal<'a, 's, M> {
    model: &'a mut M,
    v: &'a [f64],
    x: &'a mut [f64],
    work: NewtonWork<'s>,
    gamma: f64,
    v_norm: f64,
    /// `‖x − v‖²`, `(x − v)ᵀd`, `‖d‖²`: the quadratic term along the line.
    xv2: f64,
    xv_d: f64,
    d2: f64,
}

impl<'a, 's, M: ProxModel> Primal<'a, 's, M> {
    /// Starts from `x` (replaced by `v` if not finite).
    pub(super) fn new(
        model: &'a mut M,
        v: &'a [f64],
        x: &'a mut [f64],
        gamma: f64,
        work: NewtonWork<'s>,
    ) -> Self {
        if x.iter().any(|c| !c.is_finite()) {
            x.copy_from_slice(v);
        }
        let v_norm = norm(v);
        Self {
            model,
            v,
            x,
            work,
            gamma,
            v_norm,
            xv2: 0.0,
            xv_d: 0.0,
            d2: 0.0,
        }
    }
}

impl<M: ProxModel> NewtonProblem for Primal<'_, '_, M> {
    fn evaluate(&mut self) -> Point {
        let inv_gamma = 1.0 / self.gamma;
        let g = &mut *self.work.g;
        let f = self.model.value_grad(self.x, g);
        let (mut xv2, mut gn2, mut x2) = (0.0, 0.0, 0.0);
        for ((gk, &xk), &vk) in g.iter_mut().zip(self.x.iter()).zip(self.v) {
            let dk = xk - vk;
            *gk += dk * inv_gamma;
            xv2 += dk * dk;
            gn2 += *gk * *gk;
            x2 += xk * xk;
        }
        self.xv2 = xv2;
        Point {
            f,
            quad: 0.5 * inv_gamma * xv2,
            grad_norm: gn2.sqrt(),
            scale: self.model.grad_scale() + (x2.sqrt() + self.v_norm) * inv_gamma,
        }
    }

    fn direction(&mut self, cg_tol: f64) -> f64 {
        let NewtonWork { g, d, cg } = &mut self.work;
        self.model.direction(g, self.gamma, cg_tol, d, cg);
        self.model.line_prepare(d);
        self.xv_d = dot(self.x, d) - dot(self.v, d);
        self.d2 = dot(d, d);
        dot(g, d)
    }

    fn line_value(&self, s: f64) -> f64 {
        let quad = self.xv2 - 2.0 * s * self.xv_d + s * s * self.d2;
        self.model.line_value(s) + 0.5 * quad / self.gamma
    }

    fn step(&mut self, s: f64) {
        axpy(-s, self.work.d, self.x);
    }
}
