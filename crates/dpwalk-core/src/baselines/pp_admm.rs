//! \[ZKL\] private M-ADMM with penalty perturbation (Zhang, Khalili & Liu), as reconstructed from
//! the supplement in `seed-baselines.md` §3: decentralized rounds in which every node exactly
//! minimizes its local objective plus a penalty term that carries noise of density
//! `∝ exp(−ν‖ε‖₂)`.
//!
//! # Objective
//! The paper's `O(f, D_i) = (C/B_i) Σ L(y fᵀx) + (ρ_R/N) R(f)` with `C = 1`, `R = ½‖f‖²`,
//! `ρ_R = N·l2` is dpwalk's `f_i + r` for `r = (l2/2)‖f‖²`, so that `Σ_i O_i = N F`.
//!
//! # Round `t → t+1` at node `i` (main (25), verified against the supplement's KKT condition (58))
//! ```text
//! ε   ~ density ∝ exp(−ν(t+1) ‖ε‖₂)
//! f_i(t+1) = argmin_f O(f, D_i) + 2 λ_iᵀ f + η(t+1) Σ_{j∈N(i)} ‖f − ½(f_i(t) + f_j(t)) + ε‖²
//!          = prox_{γ O_i}(c̄_i − ε − λ_i/(η V_i)),   γ = 1/(2η V_i)
//! broadcast f_i(t+1); then λ_i ← λ_i + (θ/2) Σ_{j∈N(i)} (f_i(t+1) − f_j(t+1))
//! ```
//! with `c̄_i = ½ f_i(t) + (1/(2V_i)) Σ_j f_j(t)` and `V_i` the degree. The `(l2/2)‖f‖²` of `O_i`
//! is folded into the loss's prox: `prox_{γ(f_i + r)}(v) = prox_{γ' f_i}(v/(1 + γ l2))` with
//! `γ' = γ/(1 + γ l2)`, solved by the problem's certified Newton prox.
//!
//! # Schedules \[INFERRED\]
//! Each node's penalty is `η(t) = min(θ qᵗ, η_max)` (`q ≥ 1`; `q = 1` is a constant penalty) and
//! the dual step is the fixed `θ ≤ η(t)`, as the convergence proof (Theorem 3.1) requires:
//! non-decreasing and bounded. The noise rate is `ν(t) = ν (η(t)/θ)^κ`, `κ ∈ [0, 1]`: `ν q^{κt}`
//! until the cap, then constant. (The spec writes `ν q^{κt}` without a cap; a noise rate that
//! kept growing after the penalty stopped would only shrink the noise while the per-round loss
//! `ν/η` grows without bound, so it stops with the penalty.) All schedules are public and
//! data-independent; every node uses the same ones.
//!
//! # Privacy (Theorem 4.1, Appendix D)
//! The round that produces `f_i(t)` costs node `i` pure [`round_epsilon`]
//! `= (1.4·c_L + ν(t)) / (η(t) V_i B_i)` (`C = 1`, `c_L = 1/4` for the logistic loss, `B_i = m_i`
//! records): the `ν` part is the noise density ratio, the `1.4 c_L` part the Jacobian of the
//! change of variables noise ↔ output, a floor no noise removes. The argument needs
//! - the loss class: binary `L(y fᵀx)` with `|L′| ≤ 1`, `L″ ≤ c_L`, `‖x‖ ≤ 1`, and `R` twice
//!   differentiable and 1-strongly convex; only the logistic loss with an ℓ2 (or no) regularizer
//!   fits, anything else is refused ([`PpError::Loss`], [`PpError::Regularizer`],
//!   [`PpError::FeatureNorm`]);
//! - `2 c_L < B_i (l2 + 2θ V_i)` at every node with records ([`PpError::PrivacyCondition`]);
//! - the **exact** minimizer (the noise ↔ output bijection): the Newton prox's certificate bounds
//!   the distance to it, and a round whose certificate exceeds [`EXACT_TOL`] (relative) is an
//!   error ([`PpError::NotExact`]), not a silent approximation.
//!
//! `ν = ∞` means no noise (and an infinite privacy loss): the non-private M-ADMM.
//!
//! # Randomness
//! Each node draws its noise from its own stream (`radial`: `d` normals, then `d`
//! exponentials), also when `ν = ∞`.

use super::exchange::{Exchange, NetworkError};
use super::radial::fill_radial;
use crate::problem::linalg::norm;
use crate::problem::{Loss, Problem, ProblemError, ProxScratch, Regularizer};
use crate::rng::NodeRng;
use crate::topology::Topology;
use thiserror::Error;

#[cfg(test)]
#[allow(clippy::unwrap_used)] // a failed unwrap is a failed test
mod tests;

/// `c_L = sup L″` of the logistic loss `L(z) = log(1 + e^{−z})`: `σ(z)σ(−z) ≤ 1/4`.
pub const LOGISTIC_CURVATURE: f64 = 0.25;

/// The factor of the Jacobian term: `−ln(1 − x) < 1.4 x` on `[0, ½]` (Appendix D, (66)).
pub const JACOBIAN_FACTOR: f64 = 1.4;

/// Largest certificate of a local solve, relative to `γ' + ‖f‖ + ‖v‖` (the Newton solver's own
/// scale, which it meets at `1e-13`): beyond it the minimizer is not exact enough to stand in for
/// the one the privacy proof inverts.
pub const EXACT_TOL: f64 = 1e-10;

/// Largest feature norm accepted as `‖x‖ ≤ 1`: rows normalized to norm 1 may round just above.
const FEATURE_NORM_MAX: f64 = 1.0 + 1e-12;

/// A parameter, problem or graph penalty perturbation cannot run with, or a local solve that
/// was not exact.
#[derive(Debug, Error, Clone, PartialEq)]
pub enum PpError {
    /// θ must be positive and finite.
    #[error("theta (the initial penalty and dual step) must be > 0 and finite, got {0}")]
    Theta(f64),
    /// q must be at least 1 and finite.
    #[error(
        "growth (the penalty's ratio q) must be >= 1 and finite, got {0}: the convergence proof \
         needs a non-decreasing penalty"
    )]
    Growth(f64),
    /// η_max must lie in `[θ, ∞)`.
    #[error(
        "eta_max (the penalty's cap) must be >= theta = {theta} and finite, got {eta_max}: the \
         convergence proof needs a bounded penalty"
    )]
    Cap {
        /// θ.
        theta: f64,
        /// The cap given.
        eta_max: f64,
    },
    /// ν must lie in `(0, ∞]`.
    #[error("nu (the noise rate) must be > 0 (infinity: no noise), got {0}")]
    Nu(f64),
    /// κ must lie in `[0, 1]`.
    #[error("kappa (the noise rate's growth exponent) must be in [0, 1], got {0}")]
    Kappa(f64),
    /// The loss is outside the class the privacy proof covers.
    #[error("penalty perturbation's privacy proof does not cover the {loss:?} loss: {reason}")]
    Loss {
        /// The loss.
        loss: Loss,
        /// What the proof needs that this loss lacks.
        reason: &'static str,
    },
    /// The regularizer is not twice differentiable.
    #[error(
        "penalty perturbation's privacy proof needs a twice-differentiable, strongly convex \
         regularizer (l2/2)‖f‖²; an l1 weight ({l1}) is not differentiable at 0"
    )]
    Regularizer {
        /// The ℓ1 weight.
        l1: f64,
    },
    /// A record's features have norm above 1.
    #[error(
        "record {} has feature norm {norm}, but penalty perturbation's privacy proof needs \
         ‖x‖ ≤ 1 (normalize the rows; records counted from 1)",
        .row + 1
    )]
    FeatureNorm {
        /// The row (from 0, in the problem's user order; the message counts from 1).
        row: usize,
        /// Its norm.
        norm: f64,
    },
    /// `2 c_L < B_i (l2 + 2θ V_i)` fails at a node.
    #[error(
        "node {node} ({records} records, {degree} neighbours): the change-of-variables bound of \
         the privacy proof needs 2·c_L = {lhs} < records·(l2 + 2·theta·degree) = {rhs}; raise theta"
    )]
    PrivacyCondition {
        /// The node.
        node: usize,
        /// Its records.
        records: usize,
        /// Its degree.
        degree: usize,
        /// `2 c_L`.
        lhs: f64,
        /// `B_i (l2 + 2θ V_i)`.
        rhs: f64,
    },
    /// A local solve's certificate exceeds [`EXACT_TOL`].
    #[error(
        "node {node}'s local solve is certified only to {certificate:e} > {bound:e}: not the \
         exact minimizer the privacy proof needs"
    )]
    NotExact {
        /// The node.
        node: usize,
        /// The solver's bound on the distance to the exact minimizer.
        certificate: f64,
        /// The bound it had to meet.
        bound: f64,
    },
    /// The graph, or the random streams of a round.
    #[error(transparent)]
    Network(#[from] NetworkError),
    /// A vector of the wrong length, or a prox that could not be set up.
    #[error(transparent)]
    Problem(#[from] ProblemError),
}

/// Penalty perturbation's parameters as given (unchecked); [`PpParams::new`] validates them.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct PpSettings {
    /// `θ > 0`: the first penalty and the dual step.
    pub theta: f64,
    /// `q ≥ 1`: the penalty's ratio per round.
    pub growth: f64,
    /// `η_max ≥ θ`, finite: the penalty's cap.
    pub eta_max: f64,
    /// `ν ∈ (0, ∞]`: the noise rate at `η = θ`; `∞` is no noise.
    pub nu: f64,
    /// `κ ∈ [0, 1]`: the noise rate grows like the penalty to the power `κ`.
    pub kappa: f64,
}

/// Validated penalty-perturbation parameters.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct PpParams(PpSettings);

impl PpParams {
    /// Checks every range of [`PpSettings`].
    pub fn new(s: PpSettings) -> Result<Self, PpError> {
        if !(s.theta > 0.0 && s.theta.is_finite()) {
            return Err(PpError::Theta(s.theta));
        }
        if !(s.growth >= 1.0 && s.growth.is_finite()) {
            return Err(PpError::Growth(s.growth));
        }
        if !(s.eta_max >= s.theta && s.eta_max.is_finite()) {
            return Err(PpError::Cap {
                theta: s.theta,
                eta_max: s.eta_max,
            });
        }
        if s.nu.is_nan() || s.nu <= 0.0 {
            return Err(PpError::Nu(s.nu));
        }
        if !(0.0..=1.0).contains(&s.kappa) {
            return Err(PpError::Kappa(s.kappa));
        }
        Ok(Self(s))
    }

    /// The validated settings.
    pub fn settings(&self) -> &PpSettings {
        &self.0
    }

    /// The penalty `η(t) = min(θ qᵗ, η_max)` of the round that produces `f(t)`.
    pub fn eta(&self, t: usize) -> f64 {
        let s = &self.0;
        (s.theta * s.growth.powf(t as f64)).min(s.eta_max)
    }

    /// The noise rate `ν(t) = ν (η(t)/θ)^κ` of the round that produces `f(t)`.
    pub fn nu(&self, t: usize) -> f64 {
        let s = &self.0;
        s.nu * (self.eta(t) / s.theta).powf(s.kappa)
    }
}

/// The pure-DP loss of one round at a node with `degree` neighbours and `records` records, at
/// penalty `eta` and noise rate `nu`: `(1.4·c_L + ν) / (η·V·B)` for the logistic loss (`C = 1`,
/// `c_L = 1/4`), record level (for one record per user it is also the user-level loss). 0 for a
/// node without records (no data enters its solve), `∞` for `ν = ∞`.
pub fn round_epsilon(nu: f64, eta: f64, degree: usize, records: usize) -> f64 {
    if records == 0 {
        return 0.0;
    }
    (JACOBIAN_FACTOR * LOGISTIC_CURVATURE + nu) / (eta * degree as f64 * records as f64)
}

/// What a round did, for metrics.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct PpRound {
    /// The round just completed: it produced `f(round)`.
    pub round: usize,
    /// The largest certificate of the round's local solves (a bound on the distance to the exact
    /// minimizer; 0 for nodes without records).
    pub max_certificate: f64,
}

/// Buffers of one local solve, sized once.
#[derive(Debug)]
struct Work {
    /// `c̄_i`, then the prox's argument.
    v: Vec<f64>,
    /// `ε`.
    noise: Vec<f64>,
    prox: ProxScratch,
}

/// Penalty-perturbation M-ADMM on a graph: every node's dual and the last broadcasts.
#[derive(Debug)]
pub struct PpAdmm<'a> {
    problem: &'a Problem,
    params: PpParams,
    exchange: Exchange,
    /// The weight of `(l2/2)‖f‖²` in `O_i`.
    l2: f64,
    /// Each node's dual `λ_i` (`n · d`).
    dual: Vec<f64>,
    /// The broadcasts being built.
    next: Vec<f64>,
    rounds: usize,
    work: Work,
}

impl<'a> PpAdmm<'a> {
    /// Starts penalty perturbation on `topology` (one node per user of `problem`) with every
    /// broadcast and dual at 0 (data-independent; the dual at 0 is what the one-dual-per-node
    /// form needs).
    ///
    /// # Errors
    /// The loss, regularizer and features the privacy proof does not cover; with `ν < ∞`, a node
    /// where `2 c_L ≥ m_i (l2 + 2θ V_i)`; a graph with fewer than 2 nodes, disconnected, weighted
    /// or of another size than the problem's users (see [`PpError`]).
    pub fn new(
        problem: &'a Problem,
        topology: Topology,
        params: PpParams,
    ) -> Result<Self, PpError> {
        let l2 = covered_l2(problem)?;
        let n = problem.n_users();
        let d = problem.dim();
        let exchange = Exchange::new(topology, n, d)?;
        if params.settings().nu.is_finite() {
            let lhs = 2.0 * LOGISTIC_CURVATURE;
            for node in 0..n {
                let records = problem.data().records(node);
                let degree = exchange.degree(node);
                let rhs = records as f64 * (l2 + 2.0 * params.settings().theta * degree as f64);
                if records > 0 && lhs >= rhs {
                    return Err(PpError::PrivacyCondition {
                        node,
                        records,
                        degree,
                        lhs,
                        rhs,
                    });
                }
            }
        }
        Ok(Self {
            problem,
            params,
            exchange,
            l2,
            dual: vec![0.0; n * d],
            next: vec![0.0; n * d],
            rounds: 0,
            work: Work {
                v: vec![0.0; d],
                noise: vec![0.0; d],
                prox: ProxScratch::default(),
            },
        })
    }

    /// The parameters.
    pub fn params(&self) -> &PpParams {
        &self.params
    }

    /// The graph and the last broadcasts: the released model is their average
    /// ([`Exchange::average`]).
    pub fn exchange(&self) -> &Exchange {
        &self.exchange
    }

    /// Rounds completed.
    pub fn rounds(&self) -> usize {
        self.rounds
    }

    /// Node `i`'s dual `λ_i` (computable by anyone from the broadcasts: `θ` is public).
    pub fn dual(&self, node: usize) -> &[f64] {
        let d = self.problem.dim();
        &self.dual[node * d..(node + 1) * d]
    }

    /// The pure-DP loss of node `i` in the round that produces `f(t)`, `t ≥ 1`
    /// ([`round_epsilon`] at this node's degree and records and the schedules at `t`).
    pub fn epsilon(&self, node: usize, t: usize) -> f64 {
        round_epsilon(
            self.params.nu(t),
            self.params.eta(t),
            self.exchange.degree(node),
            self.problem.data().records(node),
        )
    }

    /// Theorem 4.1's total: pure `β`-DP for rounds `1..=rounds`, `β = max_i Σ_t ε_i(t)` (the
    /// worst node). The accountant composes the per-round losses more tightly.
    pub fn pure_dp_total(&self, rounds: usize) -> f64 {
        (0..self.exchange.n())
            .map(|i| (1..=rounds).map(|t| self.epsilon(i, t)).sum::<f64>())
            .fold(0.0, f64::max)
    }

    /// One synchronous round: every node's noise and exact local solve and broadcast, then every
    /// dual step. `rngs[i]` is node `i`'s stream.
    ///
    /// # Errors
    /// [`NetworkError::Streams`] when there is not one stream per node, [`PpError::NotExact`]
    /// when a local solve is not certified exact; the state is unchanged then (the streams of
    /// the nodes solved before have advanced).
    pub fn round(&mut self, rngs: &mut [NodeRng]) -> Result<PpRound, PpError> {
        self.exchange.check_streams(rngs)?;
        let t = self.rounds + 1;
        let d = self.problem.dim();
        let (eta, nu) = (self.params.eta(t), self.params.nu(t));
        let mut max_certificate: f64 = 0.0;
        for (i, rng) in rngs.iter_mut().enumerate() {
            let Work { v, noise, prox } = &mut self.work;
            let degree = self.exchange.degree(i) as f64;
            self.exchange.midpoint(i, v);
            fill_radial(rng, nu, noise);
            // v = (c̄ − ε − λ/(ηV)) / (1 + γ l2), γ' = γ / (1 + γ l2), γ = 1/(2ηV).
            let gamma = 0.5 / (eta * degree);
            let shrink = 1.0 / (1.0 + gamma * self.l2);
            let inv_eta_deg = 1.0 / (eta * degree);
            let dual = &self.dual[i * d..(i + 1) * d];
            for ((vk, &ek), &lk) in v.iter_mut().zip(noise.iter()).zip(dual) {
                *vk = (*vk - ek - lk * inv_eta_deg) * shrink;
            }
            let out = &mut self.next[i * d..(i + 1) * d];
            // Warm start at the node's last broadcast.
            out.copy_from_slice(self.exchange.broadcast(i));
            let gamma = gamma * shrink;
            self.problem.local_prox(gamma)?.prox(i, v, out, prox)?;
            let certificate = prox.last_certificate();
            let bound = EXACT_TOL * (gamma + norm(out) + norm(v));
            if certificate.is_nan() || certificate > bound {
                return Err(PpError::NotExact {
                    node: i,
                    certificate,
                    bound,
                });
            }
            max_certificate = max_certificate.max(certificate);
        }
        self.exchange.publish(&mut self.next);
        let half_theta = 0.5 * self.params.settings().theta;
        for i in 0..self.exchange.n() {
            let dual = &mut self.dual[i * d..(i + 1) * d];
            self.exchange.add_disagreement(i, half_theta, dual);
        }
        self.rounds = t;
        Ok(PpRound {
            round: t,
            max_certificate,
        })
    }
}

/// The `l2` of `O_i = f_i + (l2/2)‖f‖²` when the problem is in the class the privacy proof
/// covers (see the module docs), else why not.
fn covered_l2(problem: &Problem) -> Result<f64, PpError> {
    match problem.loss() {
        Loss::Logistic => {}
        loss @ Loss::Squared => {
            return Err(PpError::Loss {
                loss,
                reason: "its derivative in the margin is unbounded (the proof needs |L′| ≤ 1) \
                         and its labels are not ±1",
            });
        }
        loss @ Loss::Multinomial { .. } => {
            return Err(PpError::Loss {
                loss,
                reason: "a record's Hessian has rank up to K−1, but the proof's Jacobian bound \
                         needs rank-one records (binary L(y fᵀx))",
            });
        }
    }
    let (l1, l2) = match *problem.regularizer() {
        Regularizer::None => (0.0, 0.0),
        Regularizer::L2 { l2 } => (0.0, l2),
        Regularizer::L1 { l1 } => (l1, 0.0),
        Regularizer::ElasticNet { l1, l2 } => (l1, l2),
    };
    if l1 > 0.0 {
        return Err(PpError::Regularizer { l1 });
    }
    let data = &problem.data().data;
    let p = data.n_features;
    for (row, x) in data.features.chunks_exact(p).enumerate() {
        let length = norm(x);
        // Features are finite (checked by `Problem::new`), so the norm is a number.
        if length > FEATURE_NORM_MAX {
            return Err(PpError::FeatureNorm { row, norm: length });
        }
    }
    Ok(l2)
}
