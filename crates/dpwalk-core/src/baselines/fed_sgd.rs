//! Federated DP-SGD: the walk's DP-SGD twin for the synchronous, server-based panels.
//!
//! Round: the server sends the model `w` to every agent; agent `i` sends back DP-SGD's message
//! `g_i = clip(∇f_i(w), C) + η_i/2`, `η_i ~ N(0, σ² I)` from its own stream
//! ([`crate::step::noisy_clipped_grad`], the very function of the walk's step); the server takes
//! `w ← prox_{lr·r}(w − lr·(1/n) Σ_i g_i)`, a proximal gradient step on
//! `F = (1/n) Σ_i f_i + r`.
//!
//! Privacy: each message is the walk's DP-SGD contribution, so one round costs each user the same
//! local RDP `8αC²/σ²` (user-level; an eavesdropper who sees every message, server included), and
//! `H` rounds cost `H` contributions.

use super::federated::{FederatedError, check_agents, check_round};
use crate::params::SgdParams;
use crate::problem::Problem;
use crate::rng::NodeRng;
use crate::step::noisy_clipped_grad;

/// The state of a federated DP-SGD run: the server's model and its buffers.
#[derive(Debug, Clone)]
pub struct FedSgd {
    params: SgdParams,
    n_agents: usize,
    rounds: u64,
    w: Vec<f64>,
    g: Vec<f64>,
    eta: Vec<f64>,
    mean: Vec<f64>,
    /// The agent whose message of the last round is kept (an auditor's eavesdropper), and it.
    watched: Option<(usize, Vec<f64>)>,
}

/// What one round did, for metrics.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FedSgdRound {
    /// Agents whose gradient the clip scaled down.
    pub clipped: usize,
}

impl FedSgd {
    /// A run of `n_agents` agents on a model of dimension `dim`, starting from `w = 0`.
    ///
    /// # Errors
    /// [`FederatedError::NoAgents`] when `n_agents` is 0.
    pub fn new(params: SgdParams, n_agents: usize, dim: usize) -> Result<Self, FederatedError> {
        check_agents(n_agents)?;
        Ok(Self {
            params,
            n_agents,
            rounds: 0,
            w: vec![0.0; dim],
            g: vec![0.0; dim],
            eta: vec![0.0; dim],
            mean: vec![0.0; dim],
            watched: None,
        })
    }

    /// One round (see the module docs); agent `i` draws from `rngs[i]`.
    ///
    /// # Errors
    /// [`FederatedError`] when the problem's users, dimension or the streams do not fit the run;
    /// checked before anything changes.
    pub fn round(
        &mut self,
        problem: &Problem,
        rngs: &mut [NodeRng],
    ) -> Result<FedSgdRound, FederatedError> {
        check_round(self.n_agents, self.w.len(), problem, rngs)?;
        self.mean.fill(0.0);
        let inv_n = 1.0 / self.n_agents as f64;
        let mut clipped = 0;
        for (user, rng) in rngs.iter_mut().enumerate() {
            let c = noisy_clipped_grad(
                problem,
                &self.params,
                user,
                &self.w,
                rng,
                &mut self.g,
                &mut self.eta,
            )?;
            clipped += usize::from(c.clipped);
            if let Some((_, message)) = self.watched.as_mut().filter(|(a, _)| *a == user) {
                message.copy_from_slice(&self.g);
            }
            for (m, &gk) in self.mean.iter_mut().zip(&self.g) {
                *m += inv_n * gk;
            }
        }
        let lr = self.params.lr();
        for (m, &wk) in self.mean.iter_mut().zip(&self.w) {
            *m = wk - lr * *m;
        }
        problem.regularizer().prox(lr, &self.mean, &mut self.w);
        self.rounds += 1;
        Ok(FedSgdRound { clipped })
    }

    /// Keeps agent `agent`'s message `g_i` of every round from now on (what an eavesdropper on
    /// its link reads; the audit's local view). Changes nothing else of the run.
    pub fn watch(&mut self, agent: usize) {
        self.watched = Some((agent, vec![0.0; self.w.len()]));
    }

    /// The watched agent's message of the last round (zeros before the first), `None` when no
    /// agent is watched.
    pub fn watched(&self) -> Option<&[f64]> {
        self.watched.as_ref().map(|(_, m)| m.as_slice())
    }

    /// The model `w`.
    pub fn model(&self) -> &[f64] {
        &self.w
    }

    /// Rounds done.
    pub fn rounds(&self) -> u64 {
        self.rounds
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)] // a failed unwrap is a failed test
mod tests {
    use super::*;
    use crate::problem::reference::{ReferenceOptions, solve};
    use crate::problem::test_util::user_data;
    use crate::problem::{Loss, ProblemError, Regularizer};
    use crate::rng::node_rng;
    use crate::step::{StepScratch, sgd_step};

    /// With one agent a round is the walk's DP-SGD step at that user, bit for bit: same clip,
    /// same noise from the same stream, same update.
    #[test]
    fn one_agent_round_is_the_walk_s_sgd_step() {
        let problem = Problem::new(
            Loss::Logistic,
            Regularizer::ElasticNet { l1: 0.05, l2: 0.1 },
            user_data(2, Loss::Logistic, &[9], 5),
        )
        .unwrap();
        let params = SgdParams::new(0.3, 1.5, Some(0.2)).unwrap();
        let mut fed = FedSgd::new(params, 1, 5).unwrap();
        let mut rngs = vec![node_rng(8, 0)];
        let mut rng = node_rng(8, 0);
        let mut w = vec![0.0; 5];
        let mut scratch = StepScratch::new(5, problem.local_prox(1.0).unwrap().scratch());
        for _ in 0..25 {
            let round = fed.round(&problem, &mut rngs).unwrap();
            let step = sgd_step(&problem, &params, 0, &mut w, &mut rng, &mut scratch).unwrap();
            assert_eq!(round.clipped, usize::from(step.clipped));
            assert_eq!(fed.model(), &w[..]);
        }
        assert_eq!(fed.rounds(), 25);
    }

    /// Without noise and clip a round is a proximal gradient step on `F`: it converges to the
    /// reference optimum.
    #[test]
    fn non_private_run_reaches_the_reference_optimum() {
        let problem = Problem::new(
            Loss::Squared,
            Regularizer::L1 { l1: 0.2 },
            user_data(11, Loss::Squared, &[6, 10, 15, 9], 5),
        )
        .unwrap();
        let reference = solve(&problem, &ReferenceOptions::default()).unwrap();
        let mut fed = FedSgd::new(SgdParams::new(0.2, 0.0, None).unwrap(), 4, 5).unwrap();
        let mut rngs: Vec<NodeRng> = (0..4).map(|i| node_rng(1, i)).collect();
        for _ in 0..3_000 {
            fed.round(&problem, &mut rngs).unwrap();
        }
        for (a, b) in fed.model().iter().zip(&reference.x) {
            assert!(
                (a - b).abs() <= 1e-8,
                "{:?} vs {:?}",
                fed.model(),
                reference.x
            );
        }
    }

    #[test]
    fn mismatched_runs_are_refused_without_a_change() {
        let params = SgdParams::new(0.1, 1.0, Some(1.0)).unwrap();
        assert_eq!(
            FedSgd::new(params, 0, 3).unwrap_err(),
            FederatedError::NoAgents
        );
        let problem = Problem::new(
            Loss::Squared,
            Regularizer::None,
            user_data(1, Loss::Squared, &[3, 3], 4),
        )
        .unwrap();
        let mut rngs: Vec<NodeRng> = (0..2).map(|i| node_rng(1, i)).collect();
        let mut three = FedSgd::new(params, 3, 4).unwrap();
        assert_eq!(
            three.round(&problem, &mut rngs).unwrap_err(),
            FederatedError::Agents {
                agents: 3,
                users: 2
            }
        );
        let mut wide = FedSgd::new(params, 2, 5).unwrap();
        assert_eq!(
            wide.round(&problem, &mut rngs).unwrap_err(),
            FederatedError::Problem(ProblemError::Length {
                what: "the server's model",
                expected: 4,
                got: 5
            })
        );
        let mut ok = FedSgd::new(params, 2, 4).unwrap();
        assert_eq!(
            ok.round(&problem, &mut rngs[..1]).unwrap_err(),
            FederatedError::Streams {
                streams: 1,
                agents: 2
            }
        );
        assert_eq!(ok.model(), &[0.0; 4]);
        assert_eq!(ok.rounds(), 0);
        assert!(rngs.iter().all(|r| r.get_word_pos() == 0));
    }

    #[test]
    fn bytes_per_round_counts_d_floats_each_way_per_agent() {
        use crate::baselines::federated::bytes_per_round;
        assert_eq!(bytes_per_round(10, 64), 10 * 64 * 2 * 8);
        assert_eq!(bytes_per_round(usize::MAX, usize::MAX), u64::MAX);
    }
}
