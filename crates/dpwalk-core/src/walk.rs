//! The walk: where it starts and what a holder does with the token.
//!
//! [`visit`] is the whole of a decentralized step at the holder — the algorithm's update, then
//! the next hop from the holder's own RNG — so the daemon and the simulator cannot drift apart.
//! A node that must skip its step (its privacy budget is spent) calls [`visit_spent`]: a step
//! with the same noise and no data ([`crate::step::noise_only_step`]), then the next hop; the
//! iteration stays valid, and every hop of the walk adds noise.

use crate::params::AdmmParams;
use crate::params::SgdParams;
use crate::problem::{LocalProx, Problem, ProblemError};
use crate::rng::{NodeRng, Purpose, derive_seed, node_rng};
use crate::step::{
    Contribution, NoiseOnly, StepScratch, admm_walk_step, noise_only_step, sgd_step,
};
use crate::topology::Topology;
use rand::RngExt;

/// The walk's first holder for a run: drawn uniformly from the run's schedule stream.
pub fn start_holder(run_seed: u64, n_users: usize) -> usize {
    let mut rng = node_rng(derive_seed(run_seed, Purpose::Schedule, 0), 0);
    rng.random_range(0..n_users)
}

/// The update a holder performs, with the state it needs.
#[derive(Debug)]
pub enum Update<'a, 'p> {
    /// Private ADMM: the holder's `u_i` and the prox operators.
    Admm {
        /// `prox_{γ f_i}` of every user.
        prox: &'a LocalProx<'p>,
        /// γ, λ, σ, C.
        params: &'a AdmmParams,
        /// The holder's private `u_i`.
        u: &'a mut [f64],
    },
    /// DP-SGD (no private state).
    Sgd {
        /// lr, σ, C.
        params: &'a SgdParams,
    },
}

/// One decentralized step at `holder`: the update of the token's `w`, then the next holder.
///
/// # Errors
/// A `w`, `u_i` or scratch of another dimension than the problem's, or a holder the problem
/// does not have ([`ProblemError::Length`], [`ProblemError::User`]): nothing changes, no hop is
/// drawn.
pub fn visit(
    problem: &Problem,
    topology: &Topology,
    holder: usize,
    update: Update<'_, '_>,
    w: &mut [f64],
    rng: &mut NodeRng,
    scratch: &mut StepScratch,
) -> Result<(Contribution, usize), ProblemError> {
    let contribution = match update {
        Update::Admm { prox, params, u } => {
            admm_walk_step(problem, prox, params, holder, u, w, rng, scratch)?
        }
        Update::Sgd { params } => sgd_step(problem, params, holder, w, rng, scratch)?,
    };
    Ok((contribution, topology.next_hop(holder, rng)))
}

/// The step of a holder whose budget is spent: noise without data, then the next holder (same
/// draws from the holder's stream as [`visit`]: `dim` normals, then the hop).
///
/// # Errors
/// As [`visit`].
pub fn visit_spent(
    problem: &Problem,
    topology: &Topology,
    holder: usize,
    update: Update<'_, '_>,
    w: &mut [f64],
    rng: &mut NodeRng,
    scratch: &mut StepScratch,
) -> Result<usize, ProblemError> {
    let mut noise = match update {
        Update::Admm { params, u, .. } => NoiseOnly::Admm { params, u },
        Update::Sgd { params } => NoiseOnly::Sgd { params },
    };
    noise_only_step(problem, &mut noise, w, rng, scratch)?;
    Ok(topology.next_hop(holder, rng))
}
