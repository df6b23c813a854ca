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
//! The loss-specific parts (the gradient, the Newton direction, the loss along a line) are a
//! [`ProxModel`]; the direction is solved directly (logistic, small systems) or by conjugate
//! gradients on Hessian-vector products ([`conjugate_gradient`]).

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

/// Model-sized buffers of the Newton solver.
#[derive(Debug)]
pub(super) struct NewtonWork<'s> {
    pub(super) g: &'s mut [f64],
    pub(super) d: &'s mut [f64],
    pub(super) cg: CgWork<'s>,
}

/// Minimizes `f_i(x) + ‖x − v‖²/(2γ)` from the starting point in `x` (replaced by `v` if not
/// finite) and returns the certificate `γ ‖∇φ(x)‖ ≥ ‖x − prox_{γ f_i}(v)‖`.
pub(super) fn minimize(
    model: &mut impl ProxModel,
    v: &[f64],
    gamma: f64,
    x: &mut [f64],
    work: NewtonWork<'_>,
) -> f64 {
    let NewtonWork { g, d, mut cg } = work;
    if x.iter().any(|c| !c.is_finite()) {
        x.copy_from_slice(v);
    }
    let inv_gamma = 1.0 / gamma;
    let v_norm = norm(v);
    let mut prev_gn = f64::INFINITY;
    let mut last_step_flat = false;
    let mut stalls = 0;
    let mut iteration = 0;
    loop {
        let f = model.value_grad(x, g);
        let (mut xv2, mut gn2, mut x2) = (0.0, 0.0, 0.0);
        for ((gk, &xk), &vk) in g.iter_mut().zip(x.iter()).zip(v) {
            let dk = xk - vk;
            *gk += dk * inv_gamma;
            xv2 += dk * dk;
            gn2 += *gk * *gk;
            x2 += xk * xk;
        }
        let gn = gn2.sqrt();
        let scale = model.grad_scale() + (x2.sqrt() + v_norm) * inv_gamma;
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
        let cg_tol = (gn / scale).sqrt().min(0.5);
        model.direction(g, gamma, cg_tol, d, &mut cg);
        let slope = dot(g, d);
        if !(slope > 0.0 && slope.is_finite()) {
            return gamma * gn;
        }
        model.line_prepare(d);
        let xv_d = dot(x, d) - dot(v, d);
        let d2 = dot(d, d);
        let quad0 = 0.5 * inv_gamma * xv2;
        let phi0 = f + quad0;
        let slack = ROUNDING * (f.abs() + quad0);
        let mut s = 1.0;
        let mut accepted = None;
        for _ in 0..MAX_HALVINGS {
            let quad = 0.5 * inv_gamma * (xv2 - 2.0 * s * xv_d + s * s * d2);
            let phi = model.line_value(s) + quad;
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
        axpy(-s, d, x);
    }
}
