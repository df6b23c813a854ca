//! One run: a scenario's problem driven by one algorithm, schedule and seed on a virtual clock.
//!
//! The run owns the users' private state (`u`, one flat `n × p` vector, and one RNG per user)
//! and the token's `w`; every number it produces comes from `dpwalk_core`: the walk's
//! [`visit`] for the decentralized mode, the same
//! [`admm_contribution`] for the federated and centralized rounds. Nothing here decides a number.

use crate::algorithm::Mode;
use crate::given_walk::{GivenWalk, Recorder};
use crate::metrics::{EvalPoint, Evaluator};
use dpwalk_core::baselines::federated;
use dpwalk_core::params::{AdmmParams, SgdParams};
use dpwalk_core::problem::{LocalProx, Problem, ProblemError};
use dpwalk_core::rng::{NodeRng, Purpose, derive_seed, node_rng};
use dpwalk_core::step::{Algorithm, StepScratch, add_to_average, admm_contribution};
use dpwalk_core::topology::Topology;
use dpwalk_core::walk::{Turn, Update, start_holder, visit};
use dpwalk_privacy::budget::Policy;
use std::time::Instant;

/// Why a run could not proceed.
#[derive(Debug, thiserror::Error)]
pub enum RunError {
    /// The problem refused the prox parameters.
    #[error(transparent)]
    Problem(#[from] ProblemError),
    /// DP-SGD is only defined on the walk.
    #[error("dp-sgd is the walk baseline: it runs only in the decentralized mode")]
    SgdNeedsWalk,
    /// dpwalk's own methods run on the walk's schedule, not in rounds.
    #[error("admm and dp-sgd run on the walk's schedule, not in synchronous rounds")]
    NotRoundBased,
    /// A federated baseline refused its run.
    #[error("kind = \"fed-sgd\"")]
    Federated(#[from] dpwalk_core::baselines::federated::FederatedError),
    /// DP-IADMM refused its run.
    #[error("kind = \"dp-iadmm\"")]
    DpIadmm(#[from] dpwalk_core::baselines::dp_iadmm::DpIadmmError),
    /// IPADMM refused its graph or parameters.
    #[error("kind = \"ipadmm\"")]
    Ipadmm(#[from] dpwalk_core::baselines::ipadmm::IpadmmError),
    /// Penalty perturbation refused its problem or graph, or a local solve was not exact.
    #[error("kind = \"pp-admm\"")]
    PpAdmm(#[from] dpwalk_core::baselines::pp_admm::PpError),
}

/// How a run schedules its blocks and how long it runs.
#[derive(Debug, Clone, Copy)]
pub struct Schedule {
    /// Decentralized, federated or centralized.
    pub mode: Mode,
    /// `m` for the federated mode.
    pub blocks_per_round: Option<usize>,
    /// Updates of `w`.
    pub steps: u64,
    /// Evaluate after every this many steps (and after the last).
    pub eval_every: u64,
    /// The run seed: user `i` draws from `node_rng(run_seed, i)`.
    pub run_seed: u64,
}

/// How often a run's clip was tested and how often it was active. A test is one contribution
/// for dpwalk's walk and schedules and for federated DP-SGD (their clip bounds a user's
/// update), one record gradient for DP-IADMM and IPADMM (their clips are per record).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Clips {
    /// Clip tests made.
    pub tested: u64,
    /// Of which the clip scaled the vector down.
    pub clipped: u64,
}

/// Counts add up over rounds, runs and repetitions.
impl std::ops::AddAssign for Clips {
    fn add_assign(&mut self, other: Self) {
        self.tested += other.tested;
        self.clipped += other.clipped;
    }
}

impl std::iter::Sum for Clips {
    fn sum<I: Iterator<Item = Self>>(iter: I) -> Self {
        iter.fold(Self::default(), |mut total, c| {
            total += c;
            total
        })
    }
}

impl Clips {
    /// The share of tests where the clip was active; 0 when none was made.
    pub fn fraction(&self) -> f64 {
        if self.tested == 0 {
            0.0
        } else {
            self.clipped as f64 / self.tested as f64
        }
    }
}

/// What a run produced.
#[derive(Debug, Clone)]
pub struct RunResult {
    /// One row per evaluation.
    pub evals: Vec<EvalPoint>,
    /// The final model `z`.
    pub z: Vec<f64>,
    /// The final token value `w`.
    pub w: Vec<f64>,
    /// Contributions made (blocks updated).
    pub contributions: u64,
    /// The clip's tests and how many it scaled down.
    pub clips: Clips,
    /// Steps of the run.
    pub steps: u64,
    /// Contributions of each user.
    pub per_user: Vec<u64>,
    /// `(user, step)` of every walk contribution made within [`LATE_WINDOW`] steps of the end,
    /// in step order: how long before the final model they were made.
    pub late: Vec<(usize, u64)>,
    /// Visits where the holder's budget was spent: it made a noise-only step (walk) or sat the
    /// round out (federated, centralized).
    pub skipped: u64,
    /// The ex-post certificate of a DP-SGD walk (each user against its worst observer on the
    /// realised walk), computed after the clock stops.
    pub given_walk: GivenWalk,
    /// Wall-clock seconds of the whole run.
    pub wall_seconds: f64,
    /// Of which spent evaluating.
    pub eval_seconds: f64,
}

impl RunResult {
    /// Steps per second, evaluation excluded.
    pub fn steps_per_second(&self, steps: u64) -> f64 {
        let t = self.wall_seconds - self.eval_seconds;
        if t > 0.0 {
            steps as f64 / t
        } else {
            f64::INFINITY
        }
    }
}

/// The users' private state and the token.
struct State {
    u: Vec<f64>,
    w: Vec<f64>,
    rngs: Vec<NodeRng>,
}

impl State {
    fn new(n: usize, dim: usize, algorithm: &Algorithm, run_seed: u64) -> Self {
        let u = match algorithm {
            Algorithm::Admm(_) => vec![0.0; n * dim],
            Algorithm::Sgd(_) => Vec::new(),
        };
        let rngs = (0..n as u64).map(|i| node_rng(run_seed, i)).collect();
        Self {
            u,
            w: vec![0.0; dim],
            rngs,
        }
    }
}

/// Bytes a hop of the walk sends: the token's `d` floats, 8 bytes each (the daemon's message adds
/// a header, not counted, as no other algorithm's is).
pub fn hop_bytes(dim: usize) -> u64 {
    8 * dim as u64
}

/// The last steps of a walk whose contributions a run lists with their step
/// ([`RunResult::late`]): a user's network figure needs how long before the final model its
/// contribution was made.
pub const LATE_WINDOW: u64 = 65_536;

/// An algorithm's parameters with what its steps need besides: ADMM's prox operators.
enum Stepper<'a, 'p> {
    Admm(&'a AdmmParams, LocalProx<'p>),
    Sgd(&'a SgdParams),
}

/// Runs `algorithm` on `problem` with `schedule`; `progress(k)` is called as steps complete.
/// With a `policy`, every contribution is first allowed by it (the run's budget, as a daemon
/// asks its own); a walk holder it refuses makes a noise-only step
/// ([`Turn::NoiseOnly`]), a federated or centralized block sits the round out.
#[allow(clippy::too_many_arguments)]
pub fn run(
    problem: &Problem,
    topology: &Topology,
    algorithm: &Algorithm,
    schedule: &Schedule,
    policy: Option<&Policy>,
    evaluator: &Evaluator<'_>,
    progress: &(dyn Fn(u64) + Sync),
) -> Result<RunResult, RunError> {
    let start = Instant::now();
    let n = problem.n_users();
    let dim = problem.dim();
    // ADMM's prox operators are built once, beside the parameters that need them.
    let stepper = match algorithm {
        Algorithm::Admm(p) => Stepper::Admm(p, problem.local_prox(p.gamma())?),
        Algorithm::Sgd(p) => Stepper::Sgd(p),
    };
    let prox = match &stepper {
        Stepper::Admm(_, prox) => Some(prox),
        Stepper::Sgd(_) => None,
    };
    let mut scratch = StepScratch::new(dim, prox.map(LocalProx::scratch).unwrap_or_default());
    let mut state = State::new(n, dim, algorithm, schedule.run_seed);
    let mut schedule_rng = node_rng(derive_seed(schedule.run_seed, Purpose::Schedule, 1), 0);
    let mut holder = start_holder(schedule.run_seed, n);
    let mut round_du = vec![0.0; dim];
    let mut evals = Vec::new();
    let mut eval_seconds = 0.0;
    let (mut contributions, mut clipped, mut skipped) = (0u64, 0u64, 0u64);
    let mut per_user = vec![0u64; n];
    let mut late = Vec::new();
    let admit = |made: u64| policy.is_none_or(|p| p.allows(made));
    let dp_sgd_walk =
        schedule.mode == Mode::Decentralized && matches!(algorithm, Algorithm::Sgd(_));
    let mut recorder = Recorder::new(dp_sgd_walk, n, schedule.steps);
    // Bytes over all links: a hop sends the token (d floats); a federated round sends z to each
    // sampled user and its Δu back; the centralized curator sends nothing.
    let hop_bytes = hop_bytes(dim);
    let mut bytes = 0u64;
    let mut done = 0u64;
    while done < schedule.steps {
        let chunk = schedule.eval_every.min(schedule.steps - done);
        for t in 0..chunk {
            let seq = done + t;
            match schedule.mode {
                Mode::Decentralized => {
                    let update = match &stepper {
                        Stepper::Admm(params, prox) => {
                            let u = &mut state.u[holder * dim..(holder + 1) * dim];
                            Update::Admm { prox, params, u }
                        }
                        Stepper::Sgd(params) => Update::Sgd { params },
                    };
                    let turn = if admit(per_user[holder]) {
                        Turn::Contribute
                    } else {
                        Turn::NoiseOnly
                    };
                    let (c, next) = visit(
                        problem,
                        topology,
                        holder,
                        update,
                        turn,
                        &mut state.w,
                        &mut state.rngs[holder],
                        &mut scratch,
                    )?;
                    recorder.push(holder, c.is_some());
                    match c {
                        Some(c) => {
                            clipped += u64::from(c.clipped);
                            contributions += 1;
                            per_user[holder] += 1;
                            if schedule.steps - seq <= LATE_WINDOW {
                                late.push((holder, seq));
                            }
                        }
                        None => skipped += 1,
                    }
                    holder = next;
                    bytes = bytes.saturating_add(hop_bytes);
                }
                Mode::Federated | Mode::Centralized => {
                    let Stepper::Admm(params, prox) = &stepper else {
                        return Err(RunError::SgdNeedsWalk);
                    };
                    let blocks: Vec<usize> = match schedule.mode {
                        Mode::Federated => {
                            let m = schedule.blocks_per_round.unwrap_or(n);
                            rand::seq::index::sample(&mut schedule_rng, n, m).into_vec()
                        }
                        _ => (0..n).collect(),
                    };
                    let mut z = vec![0.0; dim];
                    algorithm.model(problem.regularizer(), &state.w, &mut z);
                    round_du.iter_mut().for_each(|d| *d = 0.0);
                    for &i in &blocks {
                        if !admit(per_user[i]) {
                            skipped += 1;
                            continue;
                        }
                        let (rng, u) = (&mut state.rngs[i], &mut state.u[i * dim..(i + 1) * dim]);
                        let c = admm_contribution(prox, params, i, u, &z, rng, &mut scratch)?;
                        for (acc, d) in round_du.iter_mut().zip(scratch.last_du()) {
                            *acc += d;
                        }
                        clipped += u64::from(c.clipped);
                        contributions += 1;
                        per_user[i] += 1;
                    }
                    add_to_average(&mut state.w, &round_du, n);
                    if schedule.mode == Mode::Federated {
                        bytes = bytes.saturating_add(federated::bytes_per_round(blocks.len(), dim));
                    }
                }
            }
        }
        done += chunk;
        progress(chunk);
        let compute_seconds = start.elapsed().as_secs_f64() - eval_seconds;
        let t = Instant::now();
        let u = (!state.u.is_empty()).then_some(state.u.as_slice());
        let mut row = evaluator.evaluate(done, contributions, algorithm, &state.w, u, prox);
        row.bytes = bytes;
        row.compute_seconds = Some(compute_seconds);
        row.most_contributions = per_user.iter().copied().max();
        evals.push(row);
        eval_seconds += t.elapsed().as_secs_f64();
    }
    let mut z = vec![0.0; dim];
    algorithm.model(problem.regularizer(), &state.w, &mut z);
    let wall_seconds = start.elapsed().as_secs_f64();
    Ok(RunResult {
        evals,
        z,
        w: state.w,
        contributions,
        clips: Clips {
            tested: contributions,
            clipped,
        },
        steps: schedule.steps,
        per_user,
        late,
        skipped,
        given_walk: recorder.certify(),
        wall_seconds,
        eval_seconds,
    })
}
