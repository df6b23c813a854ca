//! `prox_{γ f_i}(v) = argmin_x f_i(x) + ‖x − v‖²/(2γ)` for every user, at one fixed `γ`.
//!
//! - squared loss: exact, closed form or cached Cholesky factors (`squared`);
//! - logistic: Newton's method with direct solves (`logistic`, `newton`);
//! - multinomial: Newton in a reduced parametrization for users with few records, Newton–CG
//!   otherwise (`multinomial`, `newton`).
//!
//! The iterative solvers start from the point the caller leaves in `out` (the step passes the
//! current model `z`, close to the answer once the walk has mixed) and stop on a certificate
//! `‖x − prox(v)‖ ≤ γ ‖∇φ(x)‖` (see `newton`), which [`ProxScratch::last_certificate`] reports.
//! An inexact prox changes utility, never privacy: the step clips `x − z` whatever the solver did.
//!
//! A user without records has `f_i = 0`, so its prox is the identity.

mod logistic;
mod multinomial;
mod newton;
mod squared;

use super::linalg::packed_len;
use super::{Loss, Problem, ProblemError};
use logistic::{Logistic, LogisticSolve};
use multinomial::{Multinomial, REDUCED_MAX, Reduced, ReducedWork};
use newton::{CgWork, NewtonWork, Primal};
use squared::SquaredCache;

/// Largest `min(m, p)` for which the logistic Newton direction is solved directly; above it, a
/// `k × k` factorization per Newton iteration costs more than conjugate gradients.
const LOGISTIC_DIRECT_MAX: usize = 128;

/// How each user's prox is computed.
#[derive(Debug)]
enum Method {
    Squared(SquaredCache),
    Logistic { direct_max: usize },
    Multinomial { classes: usize },
}

/// `prox_{γ f_i}` for every user `i` of a problem, at one fixed `γ`.
#[derive(Debug)]
pub struct LocalProx<'a> {
    problem: &'a Problem,
    gamma: f64,
    method: Method,
}

/// Reusable buffers for [`LocalProx::prox`], so a step allocates nothing.
///
/// [`LocalProx::scratch`] sizes them for the problem; a default (empty) scratch also works, and
/// grows on first use.
#[derive(Debug, Default)]
pub struct ProxScratch {
    /// Model-sized: Newton's gradient and direction, conjugate gradients' three vectors.
    model: [Vec<f64>; 5],
    /// Record-sized (`records × classes`): margins or logits, curvatures or probabilities, `A d`,
    /// a solve's work vector; the reduced multinomial solver uses all eight.
    records: [Vec<f64>; 8],
    /// The Gram matrix `AAᵀ` of direct solves (logistic: packed; reduced multinomial: full).
    gram: Vec<f64>,
    /// The Newton system of direct solves (logistic: packed; reduced multinomial: full).
    system: Vec<f64>,
    certificate: f64,
}

/// The first `len` entries of `buf`, growing it if needed (only the first use of an undersized
/// scratch allocates).
fn take(buf: &mut Vec<f64>, len: usize) -> &mut [f64] {
    if buf.len() < len {
        buf.resize(len, 0.0);
    }
    &mut buf[..len]
}

impl ProxScratch {
    /// Bound on `‖out − prox_{γ f_i}(v)‖` for the last [`LocalProx::prox`] call: `γ ‖∇φ(out)‖`
    /// for the iterative solvers, 0 for the exact ones (up to rounding).
    pub fn last_certificate(&self) -> f64 {
        self.certificate
    }
}

impl<'a> LocalProx<'a> {
    /// Validates `γ` and builds the caches (the squared loss's factors).
    pub(super) fn new(problem: &'a Problem, gamma: f64) -> Result<Self, ProblemError> {
        Self::with_direct_max(problem, gamma, LOGISTIC_DIRECT_MAX)
    }

    /// [`LocalProx::new`] with a chosen limit for direct logistic solves (tests force each path).
    pub(in crate::problem) fn with_direct_max(
        problem: &'a Problem,
        gamma: f64,
        direct_max: usize,
    ) -> Result<Self, ProblemError> {
        if !(gamma.is_finite() && gamma > 0.0) {
            return Err(ProblemError::Gamma(gamma));
        }
        let method = match problem.loss() {
            Loss::Squared => Method::Squared(SquaredCache::new(problem, gamma)?),
            Loss::Logistic => Method::Logistic { direct_max },
            Loss::Multinomial { classes } => Method::Multinomial { classes },
        };
        Ok(Self {
            problem,
            gamma,
            method,
        })
    }

    /// γ.
    pub fn gamma(&self) -> f64 {
        self.gamma
    }

    /// The problem's model dimension, which [`LocalProx::prox`] requires of its vectors.
    pub fn dim(&self) -> usize {
        self.problem.dim()
    }

    /// Buffers sized for this problem.
    pub fn scratch(&self) -> ProxScratch {
        let data = self.problem.data();
        let p = data.data.n_features;
        let max_m = (0..data.n_users())
            .map(|i| data.records(i))
            .max()
            .unwrap_or(0);
        let mut s = ProxScratch::default();
        match self.method {
            Method::Squared(_) => {
                take(&mut s.records[0], max_m.min(p));
            }
            Method::Logistic { direct_max } => {
                let dim = self.problem.dim();
                s.model.iter_mut().for_each(|b| {
                    take(b, dim);
                });
                s.records[..4].iter_mut().for_each(|b| {
                    take(b, max_m);
                });
                let k = (0..data.n_users())
                    .map(|i| data.records(i).min(p))
                    .filter(|&k| k <= direct_max)
                    .max()
                    .unwrap_or(0);
                take(&mut s.gram, packed_len(k));
                take(&mut s.system, packed_len(k));
            }
            Method::Multinomial { classes } => {
                let dim = self.problem.dim();
                s.model.iter_mut().for_each(|b| {
                    take(b, dim);
                });
                s.records.iter_mut().for_each(|b| {
                    take(b, max_m * classes);
                });
                let m = (0..data.n_users())
                    .map(|i| data.records(i))
                    .filter(|&m| m < p && m * classes <= REDUCED_MAX)
                    .max()
                    .unwrap_or(0);
                take(&mut s.gram, m * m);
                take(&mut s.system, (m * classes).pow(2));
            }
        }
        s
    }

    /// `out = prox_{γ f_i}(v) = argmin_x f_i(x) + ‖x − v‖² / (2γ)`.
    ///
    /// On entry `out` holds a starting point for iterative solvers (the step passes the current
    /// model `z`). Exact for squared loss; certified to a tolerance for the others
    /// ([`ProxScratch::last_certificate`]).
    ///
    /// # Errors
    /// [`ProblemError::Length`] when `v` or `out` is not of the problem's dimension,
    /// [`ProblemError::User`] when `user` is not one of its users; nothing is computed then.
    pub fn prox(
        &self,
        user: usize,
        v: &[f64],
        out: &mut [f64],
        scratch: &mut ProxScratch,
    ) -> Result<(), ProblemError> {
        let dim = self.problem.dim();
        ProblemError::check_length("the prox's argument", dim, v.len())?;
        ProblemError::check_length("the prox's output", dim, out.len())?;
        let n_users = self.problem.n_users();
        if user >= n_users {
            return Err(ProblemError::User { user, n_users });
        }
        let data = self.problem.data();
        let m = data.records(user);
        scratch.certificate = 0.0;
        if m == 0 {
            out.copy_from_slice(v);
            return Ok(());
        }
        let p = data.data.n_features;
        let (a, b) = (data.features(user), data.labels(user));
        let ProxScratch {
            model,
            records,
            gram,
            system,
            certificate,
        } = scratch;
        match &self.method {
            Method::Squared(cache) => {
                cache.prox(
                    self.problem,
                    self.gamma,
                    user,
                    v,
                    out,
                    take(&mut records[0], m.min(p)),
                );
            }
            Method::Logistic { direct_max } => {
                let [r0, r1, r2, r3, ..] = records;
                let k = m.min(p);
                let solve = if k > *direct_max {
                    LogisticSolve::Cg
                } else if m >= p {
                    LogisticSolve::Primal {
                        system: take(system, packed_len(p)),
                    }
                } else {
                    LogisticSolve::Dual {
                        gram: take(gram, packed_len(m)),
                        system: take(system, packed_len(m)),
                        work: take(r3, m),
                    }
                };
                let mut lg = Logistic::new(a, b, p, take(r0, m), take(r1, m), take(r2, m), solve);
                let mut primal = Primal::new(&mut lg, v, out, self.gamma, work(model, dim));
                *certificate = newton::minimize(&mut primal, self.gamma);
            }
            Method::Multinomial { classes } => {
                let k = *classes;
                let len = m * k;
                let [r0, r1, r2, r3, r4, r5, r6, r7] = records;
                if m < p && len <= REDUCED_MAX {
                    let reduced_work = ReducedWork {
                        gram: take(gram, m * m),
                        jac: take(system, len * len),
                        vecs: [r0, r1, r2, r3, r4, r5, r6, r7].map(|r| take(r, len)),
                    };
                    let mut reduced = Reduced::new(a, b, p, k, self.gamma, v, out, reduced_work);
                    *certificate = newton::minimize(&mut reduced, self.gamma);
                    reduced.write_model(a, p, v, out);
                } else {
                    let mut mn =
                        Multinomial::new(a, b, p, k, take(r0, len), take(r1, len), take(r2, len));
                    let mut primal = Primal::new(&mut mn, v, out, self.gamma, work(model, dim));
                    *certificate = newton::minimize(&mut primal, self.gamma);
                }
            }
        }
        Ok(())
    }
}

/// Splits the model-sized buffers into the Newton solver's work space.
fn work(model: &mut [Vec<f64>; 5], dim: usize) -> NewtonWork<'_> {
    let [g, d, r, q, hq] = model;
    NewtonWork {
        g: take(g, dim),
        d: take(d, dim),
        cg: CgWork {
            r: take(r, dim),
            q: take(q, dim),
            hq: take(hq, dim),
        },
    }
}
