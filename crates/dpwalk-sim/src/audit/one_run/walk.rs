//! The one walk of a one-run audit: many canary users, each with its own dedicated coordinate,
//! through the same [`visit`] (step, noise, next hop, per-user RNG streams) as every simulated
//! and daemon walk, and what each attacker sees of every canary.
//!
//! A canary user contributes at its first visit only (later it makes the noise-only step of a
//! spent user, [`Turn::NoiseOnly`]), so each canary is one contribution, as in the two-world
//! mode; unlike there, its contribution starts from the walk's state at that time, not from zero,
//! so the clip may scale it below `C` (the canary record pushes far beyond `C`, so little).
//! Every other user contributes at every visit. The walk starts where a simulated run's would
//! ([`start_holder`]).

use super::super::trial::{Step, TrialError};
use dpwalk_core::problem::Problem;
use dpwalk_core::rng::{NodeRng, node_rng};
use dpwalk_core::step::StepScratch;
use dpwalk_core::topology::Topology;
use dpwalk_core::walk::{Turn, Update, start_holder, visit};

/// The planted problem and the walk's parameters.
#[derive(Debug)]
pub struct Planted<'a> {
    /// The problem with every canary's record on its own appended column.
    pub problem: &'a Problem,
    /// The step (with the users' prox operators for ADMM).
    pub step: Step<'a>,
    /// The graph.
    pub topology: &'a Topology,
    /// The canary users, in column order.
    pub users: &'a [usize],
    /// Each canary's unit direction (towards `S = +1`), in column order.
    pub directions: &'a [Vec<(usize, f64)>],
    /// The network observer `j` (not a canary).
    pub observer: usize,
    /// Hops `K` (the final model is released after the last).
    pub steps: u64,
}

/// Each canary's score in each view (`None`: it never contributed, so the auditor abstains).
#[derive(Debug, Clone, Default)]
pub struct Scores {
    /// Local eavesdropper: `⟨w_after − w_before, d_c⟩` at the canary's contribution (it sees the
    /// token arrive and leave).
    pub local: Vec<Option<f64>>,
    /// Observer `j`: `⟨w, d_c⟩` of the first token it receives after the contribution (the final
    /// model without one).
    pub network: Vec<Option<f64>>,
    /// The final model: `⟨z_K, d_c⟩`.
    pub central: Vec<Option<f64>>,
    /// Canaries whose contribution the clip scaled (all of them, for a white-box canary that
    /// reached `C`).
    pub clipped: usize,
}

fn project(direction: &[(usize, f64)], v: &[f64]) -> f64 {
    direction.iter().map(|&(k, c)| c * v[k]).sum()
}

/// Runs the walk with run seed `seed` (user `l` draws from `node_rng(seed, l)`).
///
/// # Errors
/// The step refuses its inputs.
pub fn run(planted: &Planted<'_>, seed: u64) -> Result<Scores, TrialError> {
    let problem = planted.problem;
    let (n, dim, m) = (problem.n_users(), problem.dim(), planted.users.len());
    let mut column: Vec<Option<usize>> = vec![None; n];
    for (c, &user) in planted.users.iter().enumerate() {
        column[user] = Some(c);
    }
    let mut u = match planted.step {
        Step::Admm { .. } => vec![0.0; n * dim],
        Step::Sgd(_) => Vec::new(),
    };
    let mut rngs: Vec<Option<NodeRng>> = (0..n).map(|_| None).collect();
    let prox_scratch = match &planted.step {
        Step::Admm { prox, .. } => prox.scratch(),
        Step::Sgd(_) => Default::default(),
    };
    let mut scratch = StepScratch::new(dim, prox_scratch);
    let mut w = vec![0.0; dim];
    let mut out = Scores {
        local: vec![None; m],
        network: vec![None; m],
        central: vec![None; m],
        clipped: 0,
    };
    // Canaries that contributed and have not reached the observer yet.
    let mut pending: Vec<usize> = Vec::new();
    let mut holder = start_holder(seed, n);
    for _ in 0..planted.steps {
        if holder == planted.observer {
            for c in pending.drain(..) {
                out.network[c] = Some(project(&planted.directions[c], &w));
            }
        }
        let canary = column[holder];
        let first = canary.filter(|&c| out.local[c].is_none());
        let turn = match (canary, first) {
            (Some(_), None) => Turn::NoiseOnly,
            _ => Turn::Contribute,
        };
        let before = first.map(|c| project(&planted.directions[c], &w));
        let rng = rngs[holder].get_or_insert_with(|| node_rng(seed, holder as u64));
        let update = match &planted.step {
            Step::Admm { prox, params } => Update::Admm {
                prox,
                params,
                u: &mut u[holder * dim..(holder + 1) * dim],
            },
            Step::Sgd(params) => Update::Sgd { params },
        };
        let (contribution, next) = visit(
            problem,
            planted.topology,
            holder,
            update,
            turn,
            &mut w,
            rng,
            &mut scratch,
        )?;
        if let (Some(c), Some(before)) = (first, before) {
            out.local[c] = Some(project(&planted.directions[c], &w) - before);
            out.clipped += usize::from(contribution.is_some_and(|x| x.clipped));
            pending.push(c);
        }
        holder = next;
    }
    let mut z = vec![0.0; dim];
    planted
        .step
        .algorithm()
        .model(problem.regularizer(), &w, &mut z);
    for c in 0..m {
        if out.local[c].is_some() {
            let value = project(&planted.directions[c], &z);
            out.central[c] = Some(value);
            out.network[c].get_or_insert(value);
        }
    }
    Ok(out)
}
