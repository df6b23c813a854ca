//! Evaluation of a run's current state: objectives, test error, distance to the optimum and the
//! consensus gap.
//!
//! - `train_objective` = `F(z) = (1/n) Σ_i f_i(z) + r(z)`, the objective the algorithms minimize.
//! - `test_objective` = mean per-record loss on the test set `+ r(z)`.
//! - `relative_gap` = `(F(z) − F*) / |F*|` with `F*` from the reference solver.
//! - `consensus_gap` (ADMM only) = `(1/n) Σ_i ‖x_i − z‖₂` with `x_i = prox_{γ f_i}(2z − u_i)` the
//!   local model user `i` would compute now: the fixed-point residual of the iteration, zero
//!   exactly when every user agrees with the shared model.

use dpwalk_core::data::Dataset;
use dpwalk_core::problem::reference::Reference;
use dpwalk_core::problem::{LocalProx, Problem};
use dpwalk_core::step::Algorithm;
use serde::Serialize;

/// One evaluation row.
#[derive(Debug, Clone, Copy, Serialize)]
pub struct EvalPoint {
    /// Updates of `w` so far.
    pub step: u64,
    /// Blocks updated so far.
    pub contributions: u64,
    /// `F(z)`.
    pub train_objective: f64,
    /// Test loss `+ r(z)`, when there is a test set.
    pub test_objective: Option<f64>,
    /// Misclassification rate on the test set, for classifiers.
    pub test_error: Option<f64>,
    /// `‖z − x*‖₂`.
    pub distance_to_optimum: f64,
    /// `(F(z) − F*) / |F*|`.
    pub relative_gap: f64,
    /// Mean `‖x_i − z‖₂` (ADMM).
    pub consensus_gap: Option<f64>,
    /// Bytes sent over all links so far (8 per float; the run sets it, 0 for a lone model).
    pub bytes: u64,
    /// Wall-clock seconds the run has spent so far outside evaluations: its local computation
    /// (and, in the simulator, its bookkeeping), on whatever else the machine was running; the
    /// simulator's runs set it (`None`: not measured, e.g. a lone model or a daemon swarm).
    pub compute_seconds: Option<f64>,
    /// Contributions so far of the user who made the most (round-based kinds: the rounds, every
    /// user contributing once per round): what that user's local-view privacy has spent. The
    /// simulator's runs set it (`None`: not known, e.g. a lone model or a daemon swarm).
    pub most_contributions: Option<u64>,
}

/// Everything an evaluation compares against.
#[derive(Debug)]
pub struct Evaluator<'a> {
    /// The training problem.
    pub problem: &'a Problem,
    /// The test set, if any.
    pub test: Option<&'a Dataset>,
    /// The non-private optimum.
    pub optimum: &'a Reference,
}

/// Euclidean distance.
pub fn distance(a: &[f64], b: &[f64]) -> f64 {
    a.iter()
        .zip(b)
        .map(|(x, y)| (x - y) * (x - y))
        .sum::<f64>()
        .sqrt()
}

/// `(F − F*) / |F*|`, with `|F*|` floored so that a zero optimum does not divide by zero.
pub fn relative_gap(objective: f64, optimum: f64) -> f64 {
    (objective - optimum) / optimum.abs().max(f64::MIN_POSITIVE)
}

impl Evaluator<'_> {
    /// Evaluates the model of token value `w`; `u` and `prox` give the consensus gap for ADMM.
    pub fn evaluate(
        &self,
        step: u64,
        contributions: u64,
        algorithm: &Algorithm,
        w: &[f64],
        u: Option<&[f64]>,
        prox: Option<&LocalProx<'_>>,
    ) -> EvalPoint {
        let mut z = vec![0.0; w.len()];
        algorithm.model(self.problem.regularizer(), w, &mut z);
        let mut point = self.evaluate_model(step, contributions, &z);
        if let (Some(u), Some(prox)) = (u, prox) {
            point.consensus_gap = Some(self.consensus_gap(&z, u, prox));
        }
        point
    }

    /// Evaluates a model `z` itself (no consensus gap: that needs the users' `u`). A daemon swarm's
    /// final model is evaluated here.
    pub fn evaluate_model(&self, step: u64, contributions: u64, z: &[f64]) -> EvalPoint {
        let reg = self.problem.regularizer();
        let train_objective = self.problem.objective(z);
        let test_objective = self
            .test
            .map(|t| self.problem.dataset_loss(t, z) + reg.value(z));
        let test_error = self.test.and_then(|t| self.problem.error_rate(t, z));
        EvalPoint {
            step,
            contributions,
            train_objective,
            test_objective,
            test_error,
            distance_to_optimum: distance(z, &self.optimum.x),
            relative_gap: relative_gap(train_objective, self.optimum.objective),
            consensus_gap: None,
            bytes: 0,
            compute_seconds: None,
            most_contributions: None,
        }
    }

    fn consensus_gap(&self, z: &[f64], u: &[f64], prox: &LocalProx<'_>) -> f64 {
        let dim = z.len();
        let mut scratch = prox.scratch();
        let mut v = vec![0.0; dim];
        let mut x = vec![0.0; dim];
        let n = self.problem.n_users();
        let total: f64 = (0..n)
            .map(|i| {
                let ui = &u[i * dim..(i + 1) * dim];
                for ((vk, &zk), &uk) in v.iter_mut().zip(z).zip(ui) {
                    *vk = 2.0 * zk - uk;
                }
                x.copy_from_slice(z);
                // A metric: a prox that refuses its input (never, for the simulator's own
                // vectors) makes the gap NaN rather than stop the run.
                match prox.prox(i, &v, &mut x, &mut scratch) {
                    Ok(()) => distance(&x, z),
                    Err(_) => f64::NAN,
                }
            })
            .sum();
        total / n as f64
    }
}

/// Mean and sample standard deviation.
pub(crate) fn mean_std(values: &[f64]) -> (f64, f64) {
    let n = values.len() as f64;
    let mean = values.iter().sum::<f64>() / n;
    let var = if values.len() > 1 {
        values.iter().map(|v| (v - mean) * (v - mean)).sum::<f64>() / (n - 1.0)
    } else {
        0.0
    };
    (mean, var.sqrt())
}
