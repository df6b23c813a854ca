//! One audit trial: a short walk that starts at the canary user from the zero state, through the
//! same [`visit`] (step, noise, next hop, per-user RNG streams) as every simulated and daemon
//! walk, recording what each attacker sees of the canary direction.
//!
//! The canary contributes at hop 0 and, in the composition mode ([`World::with_contributions`]),
//! at its next visits until it has contributed `k` times; at its later visits it makes the
//! noise-only step of a user whose budget is spent ([`Turn::NoiseOnly`]), so the accountant's
//! figure is for at most `k` contributions (one by default, at step 0) of a `K`-hop walk whose
//! final model every member sees. Every other visit is an ordinary contribution. Users' private state (`u_i`, RNG streams) starts afresh in
//! every trial, from zero or, for the record-level white box, from a public [`Start`].

use super::canary::Canary;
use dpwalk_core::params::{AdmmParams, SgdParams};
use dpwalk_core::problem::{LocalProx, Problem, ProblemError};
use dpwalk_core::rng::{NodeRng, node_rng};
use dpwalk_core::step::{Algorithm, StepScratch};
use dpwalk_core::topology::Topology;
use dpwalk_core::walk::{Turn, Update, visit};
use dpwalk_privacy::network::excursion::phi;

/// Tokens of a transcript kept as separate features (the rest are summed into one more).
pub const KEPT_TOKENS: usize = 8;

/// What the attackers of one trial saw, projected on the canary direction. The default is a
/// trial before its first hop: nothing seen, no arrival.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct Transcript {
    /// Every token after the contribution (the local eavesdropper): the first [`KEPT_TOKENS`],
    /// then the sum of the others.
    pub tokens: [f64; KEPT_TOKENS + 1],
    /// The tokens the observer received, likewise (0 for arrivals that did not happen).
    pub arrivals: [f64; KEPT_TOKENS + 1],
    /// The same arrivals divided by their hop count `M` (hops since the contribution, which the
    /// observer reads from the token's `seq`).
    pub weighted_arrivals: [f64; KEPT_TOKENS + 1],
    /// How many times the token reached the observer.
    pub arrival_count: u64,
    /// `M` at the first arrival (0: none).
    pub first_hop: u64,
    /// The final model `z_K`.
    pub final_model: f64,
    /// The sum, over the canary's contributions, of the change each made to the token (the
    /// local eavesdropper sees the token before and after): `tokens[0]` for one contribution.
    pub sent_sum: f64,
    /// The sum, over the canary's contributions, of the first token the observer receives after
    /// it (one arrival after several contributions counts once; the final model when the token
    /// does not reach the observer after the last): the network first arrival for one.
    pub arrival_sum: f64,
    /// The canary's contributions in this trial (at most the `k` asked for).
    pub contributions: u64,
    /// How many of them the clip scaled down.
    pub clipped: u64,
    /// `Ψ_ij` of this trial's walk: the canary's charge against the observer on the holders and
    /// contributions it realised ([`dpwalk_privacy::network::excursion::psi`]), what the
    /// ex-post certificate N2 of this walk charges.
    pub psi: f64,
}

/// A public state a trial starts from instead of zero: the token's `w` and (ADMM) the `u_i`
/// every user holds when the walk first reaches it. The record-level white box
/// (`super::record`) starts where its canary record's loss is almost linear; any state the
/// eavesdropper knows leaves the accountant's bound unchanged (it holds given every past release).
#[derive(Debug, Clone, PartialEq)]
pub struct Start {
    /// The token's `w` at hop 0.
    pub w: Vec<f64>,
    /// Every user's `u_i` at its first visit (empty for DP-SGD, which has none).
    pub u: Vec<f64>,
}

/// A world ready to run: its problem, prox and the walk's parameters.
#[derive(Debug)]
pub struct World<'a> {
    /// The world's problem (its canary planted).
    pub problem: &'a Problem,
    /// The step, with its prox operators for ADMM.
    pub step: Step<'a>,
    /// The graph.
    pub topology: &'a Topology,
    /// The canary (its user and direction).
    pub canary: &'a Canary,
    /// The network observer `j`.
    pub observer: usize,
    /// Hops `K` (the final model is released after the last).
    pub steps: u64,
    /// The canary's contributions `k` (at its first `k` visits).
    pub contributions: u64,
    /// The state the trials start from (`None`: zero).
    pub start: Option<&'a Start>,
    /// The holders every trial follows (`None`: each trial draws its walk from the topology's
    /// transition rows): `steps` holders, the canary user first ([`World::with_walk`]).
    pub walk: Option<&'a [usize]>,
}

impl<'a> World<'a> {
    /// The world of `problem` for a `steps`-hop trial of `algorithm` on `topology`.
    ///
    /// # Errors
    /// The problem refuses γ.
    pub fn new(
        problem: &'a Problem,
        algorithm: Algorithm,
        topology: &'a Topology,
        canary: &'a Canary,
        observer: usize,
        steps: u64,
    ) -> Result<Self, ProblemError> {
        Ok(Self {
            problem,
            step: Step::new(problem, algorithm)?,
            topology,
            canary,
            observer,
            steps,
            contributions: 1,
            start: None,
            walk: None,
        })
    }

    /// The same world with its trials starting from `start` (`None`: zero).
    pub fn with_start(self, start: Option<&'a Start>) -> Self {
        Self { start, ..self }
    }

    /// The same world with every trial following the holders `walk` (`None`: drawn per trial):
    /// the step and its noise are the shared [`visit`]'s, only the next holder is the given one
    /// instead of the one drawn (the draw still consumes the holder's stream, as in every walk).
    /// The caller checks that `walk` has `steps` holders, starts at the canary user and moves
    /// along the topology's edges (`super::driver`).
    pub fn with_walk(self, walk: Option<&'a [usize]>) -> Self {
        Self { walk, ..self }
    }

    /// The same world with the canary contributing at its first `k ≥ 1` visits (composition).
    pub fn with_contributions(self, k: u64) -> Self {
        Self {
            contributions: k.max(1),
            ..self
        }
    }
}

/// The update every holder makes, with what it needs.
#[derive(Debug)]
pub enum Step<'a> {
    /// Private ADMM and `prox_{γ f_i}` of every user.
    Admm {
        /// γ, λ, σ, C.
        params: AdmmParams,
        /// The users' prox operators.
        prox: LocalProx<'a>,
    },
    /// DP-SGD.
    Sgd(SgdParams),
}

impl<'a> Step<'a> {
    /// The step of `algorithm` on `problem`.
    ///
    /// # Errors
    /// The problem refuses γ.
    pub fn new(problem: &'a Problem, algorithm: Algorithm) -> Result<Self, ProblemError> {
        Ok(match algorithm {
            Algorithm::Admm(params) => Step::Admm {
                params,
                prox: problem.local_prox(params.gamma())?,
            },
            Algorithm::Sgd(params) => Step::Sgd(params),
        })
    }

    /// The algorithm (for the released model).
    pub fn algorithm(&self) -> Algorithm {
        match self {
            Step::Admm { params, .. } => Algorithm::Admm(*params),
            Step::Sgd(params) => Algorithm::Sgd(*params),
        }
    }
}

/// Buffers one thread reuses across trials: only what a trial touched is reset.
#[derive(Debug)]
pub struct Scratch {
    u: Vec<f64>,
    touched: Vec<usize>,
    rngs: Vec<Option<NodeRng>>,
    w: Vec<f64>,
    z: Vec<f64>,
    step: StepScratch,
}

impl Scratch {
    /// Buffers for `world`.
    pub fn new(world: &World<'_>) -> Self {
        let n = world.problem.n_users();
        let dim = world.problem.dim();
        let (admm, prox) = match &world.step {
            Step::Admm { prox, .. } => (true, prox.scratch()),
            Step::Sgd(_) => (false, Default::default()),
        };
        Self {
            u: if admm { vec![0.0; n * dim] } else { Vec::new() },
            touched: Vec::new(),
            rngs: (0..n).map(|_| None).collect(),
            w: vec![0.0; dim],
            z: vec![0.0; dim],
            step: StepScratch::new(dim, prox),
        }
    }

    fn reset(&mut self, dim: usize) {
        for &i in &self.touched {
            if !self.u.is_empty() {
                self.u[i * dim..(i + 1) * dim].fill(0.0);
            }
            self.rngs[i] = None;
        }
        self.touched.clear();
        self.w.fill(0.0);
    }
}

/// Why a trial failed.
#[derive(Debug, thiserror::Error)]
pub enum TrialError {
    /// The step refused its inputs.
    #[error(transparent)]
    Problem(#[from] ProblemError),
    /// The white-box canary's step did not clip (so its contribution was not `±C·d`).
    #[error(
        "the white-box canary's contribution was not clipped: it is not +-C*d (a bug in the canary's construction)"
    )]
    NotClipped,
}

/// Adds `value` to a transcript row: kept as the `count`-th feature, or summed into the last.
pub(crate) fn record(row: &mut [f64; KEPT_TOKENS + 1], count: u64, value: f64) {
    let k = (count as usize).min(KEPT_TOKENS);
    row[k] += value;
}

/// Runs one trial with run seed `seed`: user `l` draws from `node_rng(seed, l)`.
///
/// # Errors
/// [`TrialError`] when the step refuses its inputs, or a white-box canary's step did not clip
/// (`require_clip`).
pub fn run_trial(
    world: &World<'_>,
    scratch: &mut Scratch,
    seed: u64,
    require_clip: bool,
) -> Result<Transcript, TrialError> {
    let dim = world.problem.dim();
    let canary = world.canary.user;
    let mut out = Transcript::default();
    let mut holder = canary;
    // The canary's projection before its contribution in progress, and whether a contribution
    // awaits its first arrival at the observer.
    let mut before: Option<f64> = None;
    let mut pending = false;
    // The canary's contribution times since the observer's last observation (for `psi`).
    let mut since: Vec<u64> = Vec::new();
    let observe = |t_obs: u64, since: &mut Vec<u64>, psi: &mut f64| {
        let mut d: Vec<u64> = since.iter().map(|&s| t_obs - s).collect();
        *psi += phi(&mut d);
        since.clear();
    };
    if let Some(start) = world.start {
        scratch.w.copy_from_slice(&start.w);
    }
    let result = (|| {
        for t in 0..world.steps {
            if t >= 1 {
                let seen = world.canary.project(&scratch.w);
                if let Some(b) = before.take() {
                    out.sent_sum += seen - b;
                }
                if holder == world.observer && pending {
                    out.arrival_sum += seen;
                    pending = false;
                }
                record(&mut out.tokens, t - 1, seen);
                if holder == world.observer {
                    observe(t, &mut since, &mut out.psi);
                    record(&mut out.arrivals, out.arrival_count, seen);
                    record(
                        &mut out.weighted_arrivals,
                        out.arrival_count,
                        seen / t as f64,
                    );
                    if out.arrival_count == 0 {
                        out.first_hop = t;
                    }
                    out.arrival_count += 1;
                }
            }
            let canary_contributes = holder == canary && out.contributions < world.contributions;
            let turn = if holder == canary && !canary_contributes {
                Turn::NoiseOnly
            } else {
                Turn::Contribute
            };
            if canary_contributes {
                before = Some(world.canary.project(&scratch.w));
                pending = true;
                out.contributions += 1;
                since.push(t);
            }
            let rng = match &mut scratch.rngs[holder] {
                Some(r) => r,
                slot @ None => {
                    scratch.touched.push(holder);
                    if let Some(start) = world.start.filter(|s| !s.u.is_empty()) {
                        scratch.u[holder * dim..(holder + 1) * dim].copy_from_slice(&start.u);
                    }
                    slot.insert(node_rng(seed, holder as u64))
                }
            };
            let update = match &world.step {
                Step::Admm { prox, params } => Update::Admm {
                    prox,
                    params,
                    u: &mut scratch.u[holder * dim..(holder + 1) * dim],
                },
                Step::Sgd(params) => Update::Sgd { params },
            };
            let (c, next) = visit(
                world.problem,
                world.topology,
                holder,
                update,
                turn,
                &mut scratch.w,
                rng,
                &mut scratch.step,
            )?;
            if canary_contributes && c.is_some_and(|c| c.clipped) {
                out.clipped += 1;
            }
            if t == 0 && require_clip && !c.is_some_and(|c| c.clipped) {
                return Err(TrialError::NotClipped);
            }
            holder = match world.walk {
                Some(walk) => walk.get(t as usize + 1).copied().unwrap_or(next),
                None => next,
            };
        }
        observe(world.steps, &mut since, &mut out.psi);
        world
            .step
            .algorithm()
            .model(world.problem.regularizer(), &scratch.w, &mut scratch.z);
        out.final_model = world.canary.project(&scratch.z);
        if let Some(b) = before {
            out.sent_sum += world.canary.project(&scratch.w) - b;
        }
        if pending {
            out.arrival_sum += out.final_model;
        }
        Ok(())
    })();
    scratch.reset(dim);
    result.map(|()| out)
}
