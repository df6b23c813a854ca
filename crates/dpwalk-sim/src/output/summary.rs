//! `summary.json`: the figures of each sweep point, averaged over its repetitions, with their
//! privacy accounting.

use crate::method::Family;
use crate::metrics::{EvalPoint, Evaluator, mean_std};
use crate::privacy::PointPrivacy;
use crate::reproduce::PaperPoint;
use crate::run::Clips;
use crate::scenario::{LoadedScenario, Point};
use crate::simulate::{PointResult, Prepared};
use dpwalk_privacy::local::local_rdp;
use dpwalk_privacy::rdp::Orders;
use serde::Serialize;

/// Final figures of a point (means or standard deviations across repetitions).
#[derive(Debug, Clone, Serialize)]
pub struct Figures {
    /// `F(z)`.
    pub train_objective: f64,
    /// Test loss `+ r(z)`.
    pub test_objective: Option<f64>,
    /// Test misclassification rate (classifiers).
    pub test_error: Option<f64>,
    /// `‖z − x*‖₂`.
    pub distance_to_optimum: f64,
    /// `(F(z) − F*) / |F*|`.
    pub relative_gap: f64,
    /// Mean `‖x_i − z‖₂` (ADMM).
    pub consensus_gap: Option<f64>,
}

/// Throughput of a point, averaged over repetitions.
#[derive(Debug, Clone, Serialize)]
pub struct Throughput {
    /// Steps per second, evaluation excluded.
    pub steps_per_second: f64,
    /// Wall-clock seconds of one run.
    pub wall_seconds: f64,
    /// Seconds of one run spent evaluating.
    pub eval_seconds: f64,
    /// `eval_seconds / wall_seconds`.
    pub eval_share: f64,
}

/// Per-contribution privacy of a point (the local view).
#[derive(Debug, Clone, Serialize)]
pub struct Privacy {
    /// Rényi orders α.
    pub orders: Vec<f64>,
    /// `ε_loc(α) = 8αC²/σ²` of one contribution; `null` when unbounded (σ = 0 or no clip).
    pub local_rdp_per_contribution: Option<Vec<f64>>,
    /// What the figure means.
    pub note: String,
    /// Share of the clip's tests where it was active ([`Clips`]: per contribution, or per
    /// record gradient for the per-record clips of DP-IADMM and IPADMM).
    pub clipped_fraction: f64,
    /// (ε, δ) figures of the views, the budget and what they assume.
    #[serde(flatten)]
    pub accounting: PointPrivacy,
}

/// The reference optimum.
#[derive(Debug, Clone, Serialize)]
pub struct Optimum {
    /// `F*`.
    pub objective: f64,
    /// Iterations of the reference solver.
    pub solver_iterations: usize,
    /// The solver's optimality certificate (gradient-mapping norm).
    pub certificate: f64,
}

/// One sweep point of `summary.json`.
#[derive(Debug, Clone, Serialize)]
pub struct PointSummary {
    /// `admm`, `dp-sgd`, `fed-sgd`, `dp-iadmm`, `ipadmm` or `pp-admm`.
    pub algorithm: &'static str,
    /// `decentralized`, `federated` or `centralized` (dpwalk's own), `server` (fed-sgd,
    /// dp-iadmm: every user every round) or `synchronous` (ipadmm, pp-admm on the graph).
    pub mode: &'static str,
    /// The parameters that tell the point apart from others of its kind.
    pub parameters: String,
    /// What `sigma` holds: `sigma`, `laplace-scale` (dp-iadmm) or `nu` (pp-admm; `null`: none).
    pub noise_knob: &'static str,
    /// The communication graph.
    pub topology: String,
    /// Number of users.
    pub n_users: usize,
    /// Model dimension.
    pub dim: usize,
    /// Updates of `w`: the point's horizon (the scenario's `steps`, or its kind's
    /// `[by-kind.<kind>] steps`).
    pub steps: u64,
    /// Blocks updated per run.
    pub contributions: u64,
    /// The noise knob (see `noise_knob`): σ, the Laplace scale or ν.
    pub sigma: f64,
    /// C, or dp-iadmm's ℓ₁ `G₁` (`null`: unclipped, or pp-admm, which has no clip).
    pub clip: Option<f64>,
    /// γ (ADMM).
    pub gamma: f64,
    /// λ (ADMM).
    pub lambda: f64,
    /// Step size (DP-SGD).
    pub lr: f64,
    /// Repetitions averaged.
    pub repetitions: usize,
    /// Run seeds of the repetitions.
    pub seeds: Vec<u64>,
    /// Means over repetitions.
    #[serde(rename = "final")]
    pub final_mean: Figures,
    /// Standard deviations over repetitions.
    pub final_std: Figures,
    /// The non-private optimum.
    pub optimum: Optimum,
    /// Speed.
    pub throughput: Throughput,
    /// Per-contribution local privacy.
    pub privacy: Privacy,
    /// What the point reproduces, in a reproduction panel (absent otherwise).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reproduce: Option<PaperPoint>,
}

/// A fixed model's figures on the scenario's data, for scale: the all-zero model (what
/// predicting nothing scores; every algorithm starts there, and a private model has to get below
/// it to have learned anything) and the non-private optimum `x*`.
#[derive(Debug, Clone, Serialize)]
pub struct FixedModel {
    /// `F(x)`.
    pub train_objective: f64,
    /// Test loss `+ r(x)`.
    pub test_objective: Option<f64>,
    /// Test misclassification rate (classifiers; the all-zero model's ties go to the first class).
    pub test_error: Option<f64>,
    /// `(F(x) − F*) / |F*|`.
    pub relative_gap: f64,
}

impl FixedModel {
    fn of(prepared: &Prepared, x: &[f64]) -> Self {
        let evaluator = Evaluator {
            problem: &prepared.problem,
            test: prepared.test.as_ref(),
            optimum: &prepared.optimum,
        };
        let e = evaluator.evaluate_model(0, 0, x);
        Self {
            train_objective: e.train_objective,
            test_objective: e.test_objective,
            test_error: e.test_error,
            relative_gap: e.relative_gap,
        }
    }
}

/// The majority class (classifiers): the training records' most frequent label predicted for
/// every record ([`dpwalk_core::problem::Problem::majority_class`]). A separate reference from
/// the all-zero model, which predicts `−1` (binary) or the first class (multinomial) and so
/// differs from it wherever the majority is another label.
#[derive(Debug, Clone, Serialize)]
pub struct MajorityClass {
    /// The label.
    pub label: f64,
    /// Its error rate on the training records.
    pub train_error: f64,
    /// Its error rate on the test records, when there are any.
    pub test_error: Option<f64>,
}

impl MajorityClass {
    fn of(prepared: &Prepared) -> Option<Self> {
        let label = prepared.problem.majority_class()?;
        Some(Self {
            label,
            train_error: prepared.problem.data().data.share_not_labelled(label),
            test_error: prepared
                .test
                .as_ref()
                .filter(|t| t.rows() > 0)
                .map(|t| t.share_not_labelled(label)),
        })
    }
}

/// `summary.json`.
#[derive(Debug, Clone, Serialize)]
pub struct Summary {
    /// Scenario name.
    pub scenario: String,
    /// Scenario seed.
    pub seed: u64,
    /// The all-zero model, for scale.
    pub zero_model: FixedModel,
    /// The majority class, for scale (classifiers; `null` for regression).
    pub majority_class: Option<MajorityClass>,
    /// The non-private optimum `x*` (each point's `optimum` has its objective), for scale.
    pub optimum_model: FixedModel,
    /// One entry per sweep point.
    pub points: Vec<PointSummary>,
}

impl Summary {
    /// The majority class's label and test error where that error differs from the zero
    /// model's (where they are equal, the zero model's line says both): what every figure and
    /// table shows as its own reference.
    pub fn distinct_majority(&self) -> Option<(f64, f64)> {
        let m = self.majority_class.as_ref()?;
        let error = m.test_error?;
        (self.zero_model.test_error != Some(error)).then_some((m.label, error))
    }
}

/// Mean and std of an optional figure, `None` unless every repetition has it.
fn mean_std_opt(values: &[Option<f64>]) -> (Option<f64>, Option<f64>) {
    let all: Option<Vec<f64>> = values.iter().copied().collect();
    match all {
        Some(v) if !v.is_empty() => {
            let (m, s) = mean_std(&v);
            (Some(m), Some(s))
        }
        _ => (None, None),
    }
}

fn aggregate(finals: &[EvalPoint]) -> (Figures, Figures) {
    let pick = |f: fn(&EvalPoint) -> f64| mean_std(&finals.iter().map(f).collect::<Vec<_>>());
    let pick_opt =
        |f: fn(&EvalPoint) -> Option<f64>| mean_std_opt(&finals.iter().map(f).collect::<Vec<_>>());
    let (tr, tr_s) = pick(|e| e.train_objective);
    let (te, te_s) = pick_opt(|e| e.test_objective);
    let (er, er_s) = pick_opt(|e| e.test_error);
    let (d, d_s) = pick(|e| e.distance_to_optimum);
    let (g, g_s) = pick(|e| e.relative_gap);
    let (c, c_s) = pick_opt(|e| e.consensus_gap);
    (
        Figures {
            train_objective: tr,
            test_objective: te,
            test_error: er,
            distance_to_optimum: d,
            relative_gap: g,
            consensus_gap: c,
        },
        Figures {
            train_objective: tr_s,
            test_objective: te_s,
            test_error: er_s,
            distance_to_optimum: d_s,
            relative_gap: g_s,
            consensus_gap: c_s,
        },
    )
}

fn privacy(
    orders: &[f64],
    prepared: &Prepared,
    point: &Point,
    clipped_fraction: f64,
    accounting: PointPrivacy,
) -> Privacy {
    if let Ok(Some(account)) = prepared.privacy.point_account(point) {
        let curve = Orders::new(orders)
            .ok()
            .and_then(|o| account.round_curve(&o, &point.method));
        return Privacy {
            orders: orders.to_vec(),
            note: match curve {
                Some(_) => format!(
                    "{}local view, one round of the worst user (dpwalk_privacy::baseline)",
                    accounting.unit.prefix()
                ),
                None => "no noise: no privacy guarantee".to_string(),
            },
            local_rdp_per_contribution: curve.map(|c| c.values().to_vec()),
            clipped_fraction,
            accounting,
        };
    }
    let sigma = point.method.knob();
    let clip = prepared.privacy.accounted_clip(&point.method);
    let (rdp, note) = match clip {
        Some(c) if sigma > 0.0 => (
            Some(local_rdp(orders, sigma, c)),
            match accounting.unit.accounted_clip {
                Some(rc) => format!("record-level local view, one contribution: eps(alpha) = 8 alpha c^2 / sigma^2 with the record-level clip c = {rc:e} in place of C (Gaussian mechanism, record-level sensitivity 2c, noise sigma/2; see unit)"),
                None => "local view, one contribution: eps(alpha) = 8 alpha C^2 / sigma^2 (Gaussian mechanism on the clipped update, sensitivity 2C, noise sigma/2)".to_string(),
            },
        ),
        Some(_) => (None, "sigma = 0: no privacy guarantee".to_string()),
        None => (None, "no clipping: sensitivity is unbounded, no privacy guarantee".to_string()),
    };
    Privacy {
        orders: orders.to_vec(),
        local_rdp_per_contribution: rdp,
        note,
        clipped_fraction,
        accounting,
    }
}

/// Builds `summary.json`'s content.
pub fn summarize(loaded: &LoadedScenario, prepared: &Prepared, results: &[PointResult]) -> Summary {
    let s = loaded.scenario();
    let points = results
        .iter()
        .map(|pr| {
            let finals: Vec<EvalPoint> = pr
                .runs
                .iter()
                .filter_map(|r| r.evals.last().copied())
                .collect();
            let (final_mean, final_std) = aggregate(&finals);
            let reps = pr.runs.len() as f64;
            let wall = pr.runs.iter().map(|r| r.wall_seconds).sum::<f64>() / reps;
            let eval = pr.runs.iter().map(|r| r.eval_seconds).sum::<f64>() / reps;
            let sps = pr
                .runs
                .iter()
                .map(|r| r.steps_per_second(pr.point.steps))
                .sum::<f64>()
                / reps;
            let contributions = pr.runs.first().map_or(0, |r| r.contributions);
            let clips: Clips = pr.runs.iter().map(|r| r.clips).sum();
            let alg = &pr.point.method;
            PointSummary {
                algorithm: pr.point.name.as_str(),
                mode: match alg.family() {
                    Family::Walk => s.algorithm.mode.as_str(),
                    Family::Federated => "server",
                    Family::Graph => "synchronous",
                },
                parameters: alg.describe(),
                noise_knob: alg.knob_name(),
                topology: match alg.family() {
                    Family::Federated => "server (no graph)".to_string(),
                    _ => prepared.topologies[pr.point.topology].label.clone(),
                },
                n_users: s.users,
                dim: prepared.problem.dim(),
                steps: pr.point.steps,
                contributions,
                sigma: alg.knob(),
                clip: alg.clip(),
                gamma: pr.point.gamma,
                lambda: pr.point.lambda,
                lr: pr.point.lr,
                repetitions: pr.runs.len(),
                seeds: pr.seeds.clone(),
                final_mean,
                final_std,
                optimum: Optimum {
                    objective: prepared.optimum.objective,
                    solver_iterations: prepared.optimum.iterations,
                    certificate: prepared.optimum.certificate,
                },
                throughput: Throughput {
                    steps_per_second: sps,
                    wall_seconds: wall,
                    eval_seconds: eval,
                    eval_share: if wall > 0.0 { eval / wall } else { 0.0 },
                },
                privacy: privacy(
                    &s.output.orders,
                    prepared,
                    &pr.point,
                    clips.fraction(),
                    prepared.privacy.report(s, &pr.resolved, &pr.runs),
                ),
                reproduce: pr.paper.clone(),
            }
        })
        .collect();
    Summary {
        scenario: loaded.name().to_string(),
        seed: s.seed,
        zero_model: FixedModel::of(prepared, &vec![0.0; prepared.problem.dim()]),
        majority_class: MajorityClass::of(prepared),
        optimum_model: FixedModel::of(prepared, &prepared.optimum.x),
        points,
    }
}
