//! The walk: where it starts and what a holder does with the token.
//!
//! [`visit`] is the whole of a decentralized step at the holder — the algorithm's update, then
//! the next hop from the holder's own RNG — so the daemon and the simulator cannot drift apart.
//! A node that must skip its step (its privacy budget is spent) takes a [`Turn::NoiseOnly`]: a
//! step with the same noise and no data ([`crate::step::noise_only_step`]), then the next hop;
//! the iteration stays valid, and every hop of the walk adds noise.

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

/// What the holder does with its turn.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Turn {
    /// Its step on its own data: a contribution.
    Contribute,
    /// Its budget is spent: a step with the same noise and no data
    /// ([`crate::step::noise_only_step`]), which costs no privacy and keeps the hop noisy.
    NoiseOnly,
}

/// One decentralized step at `holder`: the update of the token's `w`, then the next holder, drawn
/// from the holder's stream after the step's noise. The contribution is `None` for a
/// [`Turn::NoiseOnly`].
///
/// # Errors
/// A `w`, `u_i` or scratch of another dimension than the problem's, or a holder the problem
/// does not have ([`ProblemError::Length`], [`ProblemError::User`]): nothing changes, no hop is
/// drawn.
#[allow(clippy::too_many_arguments)]
pub fn visit(
    problem: &Problem,
    topology: &Topology,
    holder: usize,
    update: Update<'_, '_>,
    turn: Turn,
    w: &mut [f64],
    rng: &mut NodeRng,
    scratch: &mut StepScratch,
) -> Result<(Option<Contribution>, usize), ProblemError> {
    let contribution = match (turn, update) {
        (Turn::Contribute, Update::Admm { prox, params, u }) => Some(admm_walk_step(
            problem, prox, params, holder, u, w, rng, scratch,
        )?),
        (Turn::Contribute, Update::Sgd { params }) => {
            Some(sgd_step(problem, params, holder, w, rng, scratch)?)
        }
        (Turn::NoiseOnly, Update::Admm { params, u, .. }) => {
            noise_only_step(problem, &mut NoiseOnly::Admm { params, u }, w, rng, scratch)?;
            None
        }
        (Turn::NoiseOnly, Update::Sgd { params }) => {
            noise_only_step(problem, &mut NoiseOnly::Sgd { params }, w, rng, scratch)?;
            None
        }
    };
    Ok((contribution, topology.next_hop(holder, rng)))
}
