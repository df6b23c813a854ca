//! \[RK\] DP-IADMM (Ryu & Kim): federated inexact ADMM with Laplace noise on each agent's local
//! gradient; ObjP (Algorithm 1, proximal term) and ObjT (Algorithm 2, trust region).
//! Spec: `shared/specs/seed-baselines.md` §1.
//!
//! # Objective and scaling
//! Consensus form `min Σ_p f_p(z_p)` s.t. `w = z_p`, with agent `p`'s share
//! `f_p = (1/n)·(f_p^mean + r)`: `f_p^mean` the mean loss over its records, `r` the problem's
//! regularizer, `n` the number of agents. Then `Σ_p f_p = F = (1/n) Σ_p f_p^mean + r`, dpwalk's
//! objective (users weigh equally; with equal partitions this is the paper's (2c) with
//! `l2 = 2β`). `r` stays exact in the agents' subproblems with weight `ω = 1/n` (only the loss is
//! linearized), so an ℓ₁ regularizer gives sparse iterates.
//!
//! # Round `t = 1, 2, …` (from `w = z_p = λ_p = 0`)
//! ```text
//! server:   w ← (1/n) Σ_p (z_p − λ_p/ρ^t)                               (4a)
//! agent p:  g̃ = (1/n)·(1/m_p) Σ_records clip₁(∇ℓ(z_p), G₁) + ξ,  ξ ~ Laplace(b)^d
//!           z_p ← argmin of the linearized subproblem (8) or (9)        (update.rs)
//!           λ_p ← λ_p + ρ^t (w − z_p)                                   (4c), agent and server alike
//! ```
//! The released model is the server's last `w`. Given the public `(w, λ_p, z_p^t)`, the new `z_p`
//! is a function of `g̃` alone, so each round each agent runs exactly one Laplace mechanism on
//! its clipped local gradient, of ℓ₁ sensitivity [`l1_sensitivity`], and the rest is
//! post-processing: the paper's objective-perturbation argument is not needed.
//!
//! # Deliberate departures from the paper (spec §1.5)
//! - Per-record ℓ₁ clipping at `G₁` and a data-independent sensitivity, instead of the paper's
//!   noise scale computed from the live data ((11b), (20)), which is not a valid sensitivity.
//! - The noise scale `b` is a parameter: calibration to a total budget is the accountant's (the
//!   paper's budgets are per iteration).
//! - `r` kept exact (its prox) instead of linearized; ρ's `c2/ε̄` is a tuned `c2`.
//!
//! # Randomness
//! Agent `p` draws its `d` Laplace samples from its own stream, one uniform per coordinate in
//! coordinate order, every round (also when `b = 0`), and nothing else.
//!
//! # Messages
//! Per round and agent, `w` down and `z_p` up: `d` floats each way
//! ([`super::federated::bytes_per_round`]); no dual is sent, both sides update `λ_p` by
//! [`dual_update`].

mod params;
mod update;

pub use params::{
    Decay, DpIadmmError, DpIadmmParams, PrivacyUnit, RHO_CAP, RHO_GROWTH, RhoSchedule, TrustNorm,
    Variant, l1_sensitivity,
};

use super::federated::{check_agents, check_round};
use super::laplace::fill_laplace;
use crate::problem::{Problem, ProblemError};
use crate::rng::NodeRng;
use update::{Subproblem, l2_trust_update, linf_trust_update, prox_update};

/// One agent's iterate and dual; the server keeps a copy of each (it receives `z_p` and updates
/// its own `λ_p`).
#[derive(Debug, Clone, PartialEq)]
pub struct Agent {
    z: Vec<f64>,
    lambda: Vec<f64>,
}

/// Buffers of an agent's step, sized once.
#[derive(Debug, Clone)]
pub struct AgentScratch {
    g: Vec<f64>,
    record: Vec<f64>,
    xi: Vec<f64>,
    zhat: Vec<f64>,
    center: Vec<f64>,
    v: Vec<f64>,
}

impl AgentScratch {
    /// Buffers for dimension `dim`.
    pub fn new(dim: usize) -> Self {
        Self {
            g: vec![0.0; dim],
            record: vec![0.0; dim],
            xi: vec![0.0; dim],
            zhat: vec![0.0; dim],
            center: vec![0.0; dim],
            v: vec![0.0; dim],
        }
    }
}

/// `λ ← λ + ρ (w − z)`, the dual update (4c) both the agent and the server apply.
pub fn dual_update(lambda: &mut [f64], rho: f64, w: &[f64], z: &[f64]) {
    for ((lk, &wk), &zk) in lambda.iter_mut().zip(w).zip(z) {
        *lk += rho * (wk - zk);
    }
}

impl Agent {
    /// `z_p = λ_p = 0` in dimension `dim`.
    pub fn new(dim: usize) -> Self {
        Self {
            z: vec![0.0; dim],
            lambda: vec![0.0; dim],
        }
    }

    /// The agent's iterate `z_p` (what it sends).
    pub fn z(&self) -> &[f64] {
        &self.z
    }

    /// The agent's dual `λ_p`.
    pub fn lambda(&self) -> &[f64] {
        &self.lambda
    }

    /// Agent `user`'s side of round `t ≥ 1` on the server's point `w`: the noisy clipped
    /// gradient, the closed-form update of `z_p`, and its dual update. Returns how many of its
    /// records the clip scaled down.
    ///
    /// # Errors
    /// [`ProblemError`] when `w`, the agent or the scratch is not of the problem's dimension, or
    /// the user does not exist; checked before anything changes or is drawn.
    #[allow(clippy::too_many_arguments)]
    pub fn step(
        &mut self,
        problem: &Problem,
        params: &DpIadmmParams,
        user: usize,
        t: u64,
        w: &[f64],
        rng: &mut NodeRng,
        scratch: &mut AgentScratch,
    ) -> Result<usize, ProblemError> {
        let dim = problem.dim();
        ProblemError::check_length("the server's w", dim, w.len())?;
        ProblemError::check_length("z_p", dim, self.z.len())?;
        ProblemError::check_length("lambda_p", dim, self.lambda.len())?;
        ProblemError::check_length("the agent's scratch buffers", dim, scratch.v.len())?;
        let AgentScratch {
            g,
            record,
            xi,
            zhat,
            center,
            v,
        } = scratch;
        let clipped = problem.l1_clipped_user_grad(user, &self.z, params.clip(), g, record)?;
        fill_laplace(rng, params.noise(), xi);
        let inv_n = 1.0 / problem.n_users() as f64;
        for (gk, &xk) in g.iter_mut().zip(xi.iter()) {
            *gk = *gk * inv_n + xk;
        }
        let rho = params.rho().at(t);
        let sub = Subproblem {
            reg: problem.regularizer(),
            omega: inv_n,
            rho,
            w,
            lambda: &self.lambda,
            g: g.as_slice(),
        };
        match params.variant() {
            Variant::Prox { eta } => prox_update(&sub, eta.at(t), &mut self.z, zhat),
            Variant::Trust {
                radius,
                norm: TrustNorm::Linf,
            } => linf_trust_update(&sub, radius.at(t), &mut self.z, zhat, v),
            Variant::Trust {
                radius,
                norm: TrustNorm::L2,
            } => l2_trust_update(&sub, radius.at(t), &mut self.z, zhat, center, v),
        }
        dual_update(&mut self.lambda, rho, w, &self.z);
        Ok(clipped)
    }
}

/// `w = (1/n) Σ_p (z_p − λ_p/ρ)`, the server's update (4a), from its copies of the agents.
pub fn server_point(agents: &[Agent], rho: f64, w: &mut [f64]) {
    w.fill(0.0);
    let inv_n = 1.0 / agents.len() as f64;
    for agent in agents {
        for ((wk, &zk), &lk) in w.iter_mut().zip(&agent.z).zip(&agent.lambda) {
            *wk += inv_n * (zk - lk / rho);
        }
    }
}

/// What one round did, for metrics.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RoundReport {
    /// ρ^t of the round.
    pub rho: f64,
    /// Records, over all agents, whose gradient the clip scaled down.
    pub clipped: usize,
}

/// A whole DP-IADMM run in one process (the simulator's view): the server's point and the agents.
#[derive(Debug, Clone)]
pub struct DpIadmm {
    params: DpIadmmParams,
    rounds: u64,
    w: Vec<f64>,
    agents: Vec<Agent>,
    scratch: AgentScratch,
}

impl DpIadmm {
    /// `n_agents` agents in dimension `dim`, all at 0.
    ///
    /// # Errors
    /// [`DpIadmmError::Federated`] when `n_agents` is 0.
    pub fn new(params: DpIadmmParams, n_agents: usize, dim: usize) -> Result<Self, DpIadmmError> {
        check_agents(n_agents)?;
        Ok(Self {
            params,
            rounds: 0,
            w: vec![0.0; dim],
            agents: vec![Agent::new(dim); n_agents],
            scratch: AgentScratch::new(dim),
        })
    }

    /// One round (module docs); agent `p` (user `p` of the problem) draws from `rngs[p]`.
    ///
    /// # Errors
    /// [`DpIadmmError::Federated`] when the problem's users or dimension, or the number of
    /// streams, do not fit the run; checked before anything changes.
    pub fn round(
        &mut self,
        problem: &Problem,
        rngs: &mut [NodeRng],
    ) -> Result<RoundReport, DpIadmmError> {
        check_round(self.agents.len(), self.w.len(), problem, rngs)?;
        let t = self.rounds + 1;
        let rho = self.params.rho().at(t);
        server_point(&self.agents, rho, &mut self.w);
        let mut clipped = 0;
        for (user, (agent, rng)) in self.agents.iter_mut().zip(rngs.iter_mut()).enumerate() {
            clipped += agent.step(
                problem,
                &self.params,
                user,
                t,
                &self.w,
                rng,
                &mut self.scratch,
            )?;
        }
        self.rounds = t;
        Ok(RoundReport { rho, clipped })
    }

    /// The released model: the server's point `w` of the last round.
    pub fn model(&self) -> &[f64] {
        &self.w
    }

    /// The agents.
    pub fn agents(&self) -> &[Agent] {
        &self.agents
    }

    /// Rounds done.
    pub fn rounds(&self) -> u64 {
        self.rounds
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)] // a failed unwrap is a failed test
mod tests;
