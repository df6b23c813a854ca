//! The reference solver: an independent, non-private minimizer of
//! `F(x) = (1/n) Σ_i f_i(x) + r(x)`, against which ADMM runs are checked.
//!
//! # Method
//! FISTA (Beck & Teboulle 2009) on `f = (1/n) Σ_i f_i` (smooth) and `r` (prox), from `x = 0`:
//! - backtracking on the step `t` (halved until accepted, never increased) with the test
//!   `⟨x⁺ − y, ∇f(x⁺) − ∇f(y)⟩ ≤ ‖x⁺ − y‖²/(2t)`. For convex `f`,
//!   `f(x⁺) ≤ f(y) + ⟨∇f(y), x⁺ − y⟩ + ⟨∇f(x⁺) − ∇f(y), x⁺ − y⟩`, so the test implies the descent
//!   lemma FISTA needs, and, unlike the usual test on function values, it does not drown in
//!   rounding once `f(x⁺) − f(y)` is ~1e-16 of `f`;
//! - adaptive restart (O'Donoghue & Candès 2015, gradient scheme): the momentum is reset when
//!   `⟨y − x⁺, x⁺ − x⟩ > 0`, which restores linear convergence on strongly convex problems and
//!   keeps Lasso fast once its support is found;
//! - stopping on the gradient mapping `G_t(x) = (x − prox_{t r}(x − t∇f(x)))/t`, which is 0
//!   exactly at minimizers: the solver returns once `‖G_t(x⁺)‖ ≤ tol · ‖∇f(0)‖` (the gradient
//!   at the start sets the scale), and reports `‖G_t(x⁺)‖` as the certificate. Every `r` here is
//!   minimized at 0, so `∇f(0) = 0` means `x = 0` is optimal.
//!
//! For the squared loss with at most as many features as records, `f` is the weighted least
//! squares `½ xᵀQx − cᵀx + const` with `Q = (1/n) Σ_i A_iᵀA_i / m_i`, `c = (1/n) Σ_i A_iᵀb_i / m_i`
//! (users weigh equally whatever their number of records), and the gradient costs `O(p²)` instead
//! of `O(rows · p)`. The returned objective is always recomputed with [`Problem::objective`].

use super::linalg::{axpy, dot, norm};
use super::{Loss, Problem, ProblemError};

/// Options of [`solve`].
///
/// | name | default | meaning | range |
/// |---|---|---|---|
/// | `tol` | `1e-10` | target of `‖G_t(x)‖ / ‖∇f(0)‖` | finite, `> 0` |
/// | `max_iter` | `100_000` | FISTA iterations before [`ProblemError::NotConverged`] | `≥ 1` |
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ReferenceOptions {
    /// Relative tolerance on the gradient-mapping norm.
    pub tol: f64,
    /// Iteration limit.
    pub max_iter: usize,
}

impl Default for ReferenceOptions {
    fn default() -> Self {
        Self {
            tol: 1e-10,
            max_iter: 100_000,
        }
    }
}

/// A certified minimizer of `F`.
#[derive(Debug, Clone, PartialEq)]
pub struct Reference {
    /// The minimizer.
    pub x: Vec<f64>,
    /// `F(x)`.
    pub objective: f64,
    /// FISTA iterations done.
    pub iterations: usize,
    /// `‖G_t(x)‖`, the gradient-mapping norm at `x` (0 at a minimizer).
    pub certificate: f64,
}

/// The smooth part `f = (1/n) Σ_i f_i` and its gradient.
enum Smooth<'a> {
    /// Squared loss: `∇f(x) = Q x − c`, `Q` dense `p × p`.
    Quadratic { q: Vec<f64>, c: Vec<f64> },
    /// Any loss, record by record.
    General(&'a Problem),
}

impl<'a> Smooth<'a> {
    fn new(problem: &'a Problem) -> Self {
        let data = problem.data();
        let p = data.data.n_features;
        if problem.loss() != Loss::Squared || p > data.data.rows() {
            return Smooth::General(problem);
        }
        let n = data.n_users();
        let mut q = vec![0.0; p * p];
        let mut c = vec![0.0; p];
        for user in 0..n {
            let m = data.records(user);
            if m == 0 {
                continue;
            }
            let w = 1.0 / (n as f64 * m as f64);
            for (a, &b) in data.features(user).chunks_exact(p).zip(data.labels(user)) {
                for (qi, &ai) in q.chunks_exact_mut(p).zip(a) {
                    axpy(w * ai, a, qi);
                }
                axpy(w * b, a, &mut c);
            }
        }
        Smooth::Quadratic { q, c }
    }

    fn grad(&self, x: &[f64], out: &mut [f64]) {
        match self {
            Smooth::Quadratic { q, c } => {
                for ((o, qi), &ci) in out.iter_mut().zip(q.chunks_exact(x.len())).zip(c) {
                    *o = dot(qi, x) - ci;
                }
            }
            Smooth::General(problem) => {
                problem.smooth_grad(x, out);
            }
        }
    }
}

/// Minimizes the problem's objective by FISTA with backtracking and adaptive restart (see the
/// module docs); fails with [`ProblemError::NotConverged`] (saying how close it got) if the
/// certificate does not reach `tol · ‖∇f(0)‖` within `max_iter` iterations.
pub fn solve(problem: &Problem, opts: &ReferenceOptions) -> Result<Reference, ProblemError> {
    if !(opts.tol.is_finite() && opts.tol > 0.0) {
        return Err(ProblemError::ReferenceOptions(
            "tol must be finite and positive",
        ));
    }
    if opts.max_iter == 0 {
        return Err(ProblemError::ReferenceOptions(
            "max_iter must be at least 1",
        ));
    }
    let dim = problem.dim();
    let reg = problem.regularizer();
    let smooth = Smooth::new(problem);

    let mut x = vec![0.0; dim];
    let mut gy = vec![0.0; dim];
    smooth.grad(&x, &mut gy);
    let scale = norm(&gy);
    if scale == 0.0 {
        return Ok(Reference {
            objective: problem.objective(&x),
            x,
            iterations: 0,
            certificate: 0.0,
        });
    }
    let target = opts.tol * scale;

    // First step: the inverse curvature of f along the unit steepest-descent direction, which
    // under-estimates L for a quadratic (backtracking only ever shrinks the step).
    let mut tmp: Vec<f64> = gy.iter().map(|g| -g / scale).collect();
    let mut g_new = vec![0.0; dim];
    smooth.grad(&tmp, &mut g_new);
    let curvature = g_new
        .iter()
        .zip(&gy)
        .map(|(a, b)| (a - b).powi(2))
        .sum::<f64>()
        .sqrt();
    let mut t = if curvature.is_finite() && curvature > 0.0 {
        1.0 / curvature
    } else {
        1.0
    };

    let mut y = x.clone();
    let mut x_new = vec![0.0; dim];
    let mut mapped = vec![0.0; dim];
    let mut theta: f64 = 1.0;
    let mut certificate = f64::INFINITY;
    for iteration in 1..=opts.max_iter {
        loop {
            for ((tk, &yk), &gk) in tmp.iter_mut().zip(&y).zip(&gy) {
                *tk = yk - t * gk;
            }
            reg.prox(t, &tmp, &mut x_new);
            smooth.grad(&x_new, &mut g_new);
            let (mut dd, mut curv) = (0.0, 0.0);
            for (((&xn, &yk), &gn), &gk) in x_new.iter().zip(&y).zip(&g_new).zip(&gy) {
                let d = xn - yk;
                dd += d * d;
                curv += d * (gn - gk);
            }
            // A step below 1e-300 means a non-finite gradient: stop shrinking, and let the
            // certificate fail.
            if curv <= dd / (2.0 * t) || dd == 0.0 || t < 1e-300 {
                break;
            }
            t *= 0.5;
        }

        // Certificate at x⁺: ‖x⁺ − prox_{t r}(x⁺ − t∇f(x⁺))‖ / t.
        for ((tk, &xk), &gk) in tmp.iter_mut().zip(&x_new).zip(&g_new) {
            *tk = xk - t * gk;
        }
        reg.prox(t, &tmp, &mut mapped);
        certificate = x_new
            .iter()
            .zip(&mapped)
            .map(|(a, b)| (a - b).powi(2))
            .sum::<f64>()
            .sqrt()
            / t;
        if certificate <= target {
            return Ok(Reference {
                objective: problem.objective(&x_new),
                x: x_new,
                iterations: iteration,
                certificate,
            });
        }

        let restart = y
            .iter()
            .zip(&x_new)
            .zip(&x)
            .map(|((&yk, &xn), &xk)| (yk - xn) * (xn - xk))
            .sum::<f64>()
            > 0.0;
        let theta_next = (1.0 + (1.0 + 4.0 * theta * theta).sqrt()) / 2.0;
        let beta = if restart {
            0.0
        } else {
            (theta - 1.0) / theta_next
        };
        theta = if restart { 1.0 } else { theta_next };
        for ((yk, &xn), &xk) in y.iter_mut().zip(&x_new).zip(&x) {
            *yk = xn + beta * (xn - xk);
        }
        if beta == 0.0 {
            gy.copy_from_slice(&g_new);
        } else {
            smooth.grad(&y, &mut gy);
        }
        std::mem::swap(&mut x, &mut x_new);
    }
    Err(ProblemError::NotConverged {
        iterations: opts.max_iter,
        certificate,
        target,
        objective: problem.objective(&x),
    })
}
