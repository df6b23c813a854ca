//! One run of a round-based baseline (federated DP-SGD, DP-IADMM, IPADMM, penalty perturbation):
//! the `dpwalk_core::baselines` state driven round after round, evaluated like the walk.
//!
//! Every number comes from `dpwalk_core`; this module only schedules. A round updates every user
//! once, so a run of `steps` user updates is `⌊steps/n⌋` rounds and an evaluation every
//! `eval_every` steps is one every `⌊eval_every/n⌋` rounds (at least 1): the `step` of an
//! evaluation row is `rounds · n`, on the walk's scale of one update per step.
//!
//! User `i` draws from `node_rng(run_seed, i)`, the stream it has on the walk.
//!
//! # Bytes
//! Cumulative bytes over all links, 8 per float: `2·n·d·8` per round for the federated ones
//! (the server's model down and the agent's vector up, [`federated::bytes_per_round`]);
//! `2|E|·d·8` per round on a graph (every node to every neighbour, [`Exchange::bytes_per_round`]).

use crate::given_walk::GivenWalk;
use crate::method::Method;
use crate::metrics::Evaluator;
use crate::run::{Clips, RunError, RunResult, Schedule};
use dpwalk_core::baselines::dp_iadmm::DpIadmm;
use dpwalk_core::baselines::exchange::Exchange;
use dpwalk_core::baselines::fed_sgd::FedSgd;
use dpwalk_core::baselines::federated;
use dpwalk_core::baselines::ipadmm::Ipadmm;
use dpwalk_core::baselines::pp_admm::PpAdmm;
use dpwalk_core::problem::Problem;
use dpwalk_core::rng::{NodeRng, node_rng};
use dpwalk_core::topology::Topology;
use std::time::Instant;

/// A baseline's state, one variant per family (also driven by the audit's trials,
/// `crate::audit::baseline`).
pub(crate) enum Runner<'a> {
    FedSgd(FedSgd),
    DpIadmm(DpIadmm),
    Ipadmm(Ipadmm<'a>),
    PpAdmm(PpAdmm<'a>),
}

impl<'a> Runner<'a> {
    /// The state at round 0; `None` for dpwalk's own methods (the walk's [`crate::run::run`]).
    pub(crate) fn new(
        problem: &'a Problem,
        topology: &Topology,
        method: &Method,
    ) -> Result<Option<Self>, RunError> {
        let (n, d) = (problem.n_users(), problem.dim());
        Ok(Some(match *method {
            Method::Walk(_) => return Ok(None),
            Method::FedSgd(p) => Runner::FedSgd(FedSgd::new(p, n, d)?),
            Method::DpIadmm(p) => Runner::DpIadmm(DpIadmm::new(p, n, d)?),
            Method::Ipadmm(p) => Runner::Ipadmm(Ipadmm::new(problem, topology.clone(), p)?),
            Method::PpAdmm(p) => Runner::PpAdmm(PpAdmm::new(problem, topology.clone(), p)?),
        }))
    }

    /// One round; returns how many clip tests it made and how many the clip scaled down:
    /// one per user update for federated DP-SGD (its clip bounds the update), one per record
    /// gradient for DP-IADMM and IPADMM (their clips are per record), none for penalty
    /// perturbation (no clip).
    pub(crate) fn round(
        &mut self,
        problem: &Problem,
        rngs: &mut [NodeRng],
    ) -> Result<Clips, RunError> {
        Ok(match self {
            Runner::FedSgd(r) => Clips {
                tested: problem.n_users() as u64,
                clipped: r.round(problem, rngs)?.clipped as u64,
            },
            Runner::DpIadmm(r) => Clips {
                tested: problem.data().data.rows() as u64,
                clipped: r.round(problem, rngs)?.clipped as u64,
            },
            Runner::Ipadmm(r) => {
                let report = r.round(rngs)?;
                Clips {
                    tested: report.gradients as u64,
                    clipped: report.clipped as u64,
                }
            }
            Runner::PpAdmm(r) => {
                r.round(rngs)?;
                Clips::default()
            }
        })
    }

    /// The released model: the server's, or the average of the last broadcasts.
    pub(crate) fn model(&self, out: &mut [f64]) -> Result<(), RunError> {
        match self {
            Runner::FedSgd(r) => out.copy_from_slice(r.model()),
            Runner::DpIadmm(r) => out.copy_from_slice(r.model()),
            Runner::Ipadmm(r) => r.exchange().average(out)?,
            Runner::PpAdmm(r) => r.exchange().average(out)?,
        }
        Ok(())
    }

    /// Starts keeping `user`'s messages (federated DP-SGD keeps only a watched agent's; the
    /// others' messages are their state). Call before the first round.
    pub(crate) fn watch(&mut self, user: usize) {
        if let Runner::FedSgd(r) = self {
            r.watch(user);
        }
    }

    /// What `user` sent in the last round, as an eavesdropper on its links reads it: its
    /// gradient message (federated DP-SGD, [`Runner::watch`]ed), its iterate `z_p` (DP-IADMM),
    /// its broadcast (IPADMM, penalty perturbation). `None` for an unwatched federated agent.
    pub(crate) fn message(&self, user: usize) -> Option<&[f64]> {
        match self {
            Runner::FedSgd(r) => r.watched(),
            Runner::DpIadmm(r) => r.agents().get(user).map(|a| a.z()),
            Runner::Ipadmm(r) => Some(r.exchange().broadcast(user)),
            Runner::PpAdmm(r) => Some(r.exchange().broadcast(user)),
        }
    }

    /// Bytes sent over all links in one round.
    fn bytes_per_round(&self, n: usize, d: usize) -> u64 {
        let graph = |e: &Exchange| e.bytes_per_round() as u64;
        match self {
            Runner::FedSgd(_) | Runner::DpIadmm(_) => federated::bytes_per_round(n, d),
            Runner::Ipadmm(r) => graph(r.exchange()),
            Runner::PpAdmm(r) => graph(r.exchange()),
        }
    }
}

/// Checks that `method` can start on `problem` and `topology` (its loss, regularizer, data and
/// graph), building its round-0 state and dropping it: the simulator refuses a scenario before
/// running anything.
pub fn check(problem: &Problem, topology: &Topology, method: &Method) -> Result<(), RunError> {
    Runner::new(problem, topology, method).map(|_| ())
}

/// Runs a round-based `method` (module docs); `None` for dpwalk's own methods.
pub fn run_rounds(
    problem: &Problem,
    topology: &Topology,
    method: &Method,
    schedule: &Schedule,
    evaluator: &Evaluator<'_>,
    progress: &(dyn Fn(u64) + Sync),
) -> Result<Option<RunResult>, RunError> {
    let start = Instant::now();
    let Some(mut runner) = Runner::new(problem, topology, method)? else {
        return Ok(None);
    };
    let (n, d) = (problem.n_users(), problem.dim());
    let per_round = n as u64;
    let rounds = schedule.steps / per_round;
    let eval_every = (schedule.eval_every / per_round).max(1);
    let bytes_per_round = runner.bytes_per_round(n, d);
    let mut rngs: Vec<NodeRng> = (0..n as u64)
        .map(|i| node_rng(schedule.run_seed, i))
        .collect();
    let mut z = vec![0.0; d];
    let (mut evals, mut eval_seconds, mut clips) = (Vec::new(), 0.0, Clips::default());
    let mut done = 0u64;
    while done < rounds {
        let chunk = eval_every.min(rounds - done);
        for _ in 0..chunk {
            clips += runner.round(problem, &mut rngs)?;
        }
        done += chunk;
        progress(chunk * per_round);
        let compute_seconds = start.elapsed().as_secs_f64() - eval_seconds;
        let t = Instant::now();
        runner.model(&mut z)?;
        let mut row = evaluator.evaluate_model(done * per_round, done * per_round, &z);
        row.bytes = done.saturating_mul(bytes_per_round);
        row.compute_seconds = Some(compute_seconds);
        row.most_contributions = Some(done);
        evals.push(row);
        eval_seconds += t.elapsed().as_secs_f64();
    }
    runner.model(&mut z)?;
    Ok(Some(RunResult {
        evals,
        z,
        w: Vec::new(),
        contributions: rounds * per_round,
        clips,
        steps: rounds * per_round,
        per_user: vec![rounds; n],
        late: Vec::new(),
        skipped: 0,
        given_walk: GivenWalk::NotOffered,
        wall_seconds: start.elapsed().as_secs_f64(),
        eval_seconds,
    }))
}
