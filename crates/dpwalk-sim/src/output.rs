//! The run directory: `summary.json`, `metrics.csv`, `final_model.json` files and plots.
//!
//! Every file is written to a temporary name and renamed into place, so an interrupted run never
//! leaves a half-written file that looks complete.
//!
//! `summary.json` holds one entry per sweep point, averaged over repetitions (`final`) with the
//! standard deviation beside it (`final_std`, sample std, 0 for one repetition).
//! A single run (one point, one repetition) writes `final_model.json` at the top of the
//! directory; otherwise `point-<p>/rep-<r>/final_model.json`.

use crate::compare::{Progress, convergence_series, point_label, write_convergence};
use crate::method::Family;
use crate::metrics::{EvalPoint, mean_std};
use crate::plot::{
    Heatmap, LinePlot, PlotError, Series, significant, write_heatmap, write_line_plot,
};
use crate::privacy::PointPrivacy;
use crate::scenario::{BudgetView, LoadedScenario, Point};
use crate::simulate::{PointResult, Prepared};
use dpwalk_privacy::local::local_rdp;
use dpwalk_privacy::rdp::Orders;
use dpwalk_privacy::walk::UserFigures;
use serde::Serialize;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use thiserror::Error;

/// Errors writing the run directory.
#[derive(Debug, Error)]
pub enum OutputError {
    /// A file could not be written.
    #[error("cannot write {path}")]
    Io {
        /// The file.
        path: PathBuf,
        /// The I/O error.
        source: std::io::Error,
    },
    /// JSON encoding failed.
    #[error("cannot encode {path}")]
    Json {
        /// The file.
        path: PathBuf,
        /// The encoder's error.
        source: serde_json::Error,
    },
    /// A plot could not be drawn.
    #[error(transparent)]
    Plot(#[from] PlotError),
}

/// Writes `bytes` to `path` atomically (temporary file, then rename).
pub fn write_atomic(path: &Path, bytes: &[u8]) -> Result<(), OutputError> {
    let io = |source| OutputError::Io {
        path: path.to_path_buf(),
        source,
    };
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir).map_err(io)?;
    }
    let tmp = path.with_extension("tmp");
    std::fs::write(&tmp, bytes).map_err(io)?;
    std::fs::rename(&tmp, path).map_err(io)
}

pub(crate) fn write_json<T: Serialize>(path: &Path, value: &T) -> Result<(), OutputError> {
    let bytes = serde_json::to_vec_pretty(value).map_err(|source| OutputError::Json {
        path: path.to_path_buf(),
        source,
    })?;
    write_atomic(path, &bytes)
}

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
    /// Share of contributions whose clip was active.
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
    /// Updates of `w`.
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
}

/// `summary.json`.
#[derive(Debug, Clone, Serialize)]
pub struct Summary {
    /// Scenario name.
    pub scenario: String,
    /// Scenario seed.
    pub seed: u64,
    /// One entry per sweep point.
    pub points: Vec<PointSummary>,
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
    if let Ok(Some(account)) = prepared.privacy.account(point) {
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
                .map(|r| r.steps_per_second(s.steps))
                .sum::<f64>()
                / reps;
            let contributions = pr.runs.first().map_or(0, |r| r.contributions);
            let clipped: u64 = pr.runs.iter().map(|r| r.clipped).sum();
            let all: u64 = pr.runs.iter().map(|r| r.contributions).sum();
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
                steps: s.steps,
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
                    if all > 0 {
                        clipped as f64 / all as f64
                    } else {
                        0.0
                    },
                    prepared.privacy.report(s, &pr.resolved, &pr.runs),
                ),
            }
        })
        .collect();
    Summary {
        scenario: loaded.name().to_string(),
        seed: s.seed,
        points,
    }
}

pub(crate) fn csv_opt(v: Option<f64>) -> String {
    v.map_or_else(String::new, |x| format!("{x:e}"))
}

/// `metrics.csv`: one row per evaluation of every run.
pub fn metrics_csv(results: &[PointResult]) -> String {
    let mut out = String::from(
        "point,repetition,algorithm,sigma,clip,gamma,lambda,lr,step,contributions,train_objective,test_objective,test_error,distance_to_optimum,relative_gap,round,bytes,consensus_gap\n",
    );
    for (p, pr) in results.iter().enumerate() {
        let alg = &pr.point.method;
        for (r, run) in pr.runs.iter().enumerate() {
            let n = run.per_user.len().max(1) as f64;
            for e in &run.evals {
                let _ = writeln!(
                    out,
                    "{p},{r},{},{},{},{},{},{},{},{},{:e},{},{},{:e},{:e},{},{},{}",
                    pr.point.name.as_str(),
                    alg.knob(),
                    csv_opt(alg.clip()),
                    pr.point.gamma,
                    pr.point.lambda,
                    pr.point.lr,
                    e.step,
                    e.contributions,
                    e.train_objective,
                    csv_opt(e.test_objective),
                    csv_opt(e.test_error),
                    e.distance_to_optimum,
                    e.relative_gap,
                    e.step as f64 / n,
                    e.bytes,
                    csv_opt(e.consensus_gap),
                );
            }
        }
    }
    out
}

/// `final_model.json`.
#[derive(Debug, Serialize)]
struct FinalModel<'a> {
    z: &'a [f64],
    /// The token's final value; a daemon swarm publishes only `z`, and leaves this out.
    #[serde(skip_serializing_if = "<[f64]>::is_empty")]
    w: &'a [f64],
    steps: u64,
    seed: u64,
    algorithm: &'static str,
}

/// Writes every output file of a simulation into `dir`.
pub fn write_all(
    dir: &Path,
    loaded: &LoadedScenario,
    prepared: &Prepared,
    results: &[PointResult],
) -> Result<Summary, OutputError> {
    let s = loaded.scenario();
    let summary = summarize(loaded, prepared, results);
    write_json(&dir.join("summary.json"), &summary)?;
    write_atomic(&dir.join("metrics.csv"), metrics_csv(results).as_bytes())?;
    let single = results.len() == 1 && s.repetitions == 1;
    for (p, pr) in results.iter().enumerate() {
        for (r, run) in pr.runs.iter().enumerate() {
            let path = if single {
                dir.join("final_model.json")
            } else {
                dir.join(format!("point-{p:03}"))
                    .join(format!("rep-{r:03}"))
                    .join("final_model.json")
            };
            let model = FinalModel {
                z: &run.z,
                w: &run.w,
                steps: s.steps,
                seed: pr.seeds[r],
                algorithm: pr.point.name.as_str(),
            };
            write_json(&path, &model)?;
        }
    }
    let series: Vec<Series> = results
        .iter()
        .map(|pr| {
            let label = point_label(pr, results, prepared);
            convergence_series(pr, label, Progress::Steps)
        })
        .collect();
    write_line_plot(
        &LinePlot {
            title: format!("{}: convergence", loaded.name()),
            x_label: "steps".into(),
            y_label: "relative gap (F(z) − F*) / |F*|".into(),
            log_x: false,
            log_y: true,
            series,
        },
        &dir.join("convergence"),
    )?;
    if results.len() > 1 {
        write_privacy_utility(dir, loaded, &summary, Utility::Gap)?;
        if summary
            .points
            .iter()
            .all(|p| p.final_mean.test_error.is_some())
        {
            write_privacy_utility(dir, loaded, &summary, Utility::TestError)?;
        }
    }
    write_convergence(dir, loaded, prepared, results)?;
    crate::spent::write_privacy_rounds(dir, loaded, prepared, results)?;
    crate::views::write_privacy_views(dir, &summary)?;
    write_privacy_details(dir, loaded.scenario(), prepared, results, &summary)?;
    Ok(summary)
}

/// Largest number of users for which `privacy_users.csv` is written.
const MAX_USERS_CSV: usize = 100_000;
/// Largest number of users for which the pairwise heatmap is drawn.
const MAX_USERS_HEATMAP: usize = 2_000;

/// Per-user figures (`privacy_users.csv`) and the pairwise network-ε heatmap, from each point's
/// first repetition; in `point-<p>/` when sweeping.
fn write_privacy_details(
    dir: &Path,
    s: &crate::scenario::Scenario,
    prepared: &Prepared,
    results: &[PointResult],
    summary: &Summary,
) -> Result<(), OutputError> {
    let n = prepared.problem.n_users();
    let name = &summary.scenario;
    for (p, pr) in results.iter().enumerate() {
        let Some(run) = pr.runs.first() else { continue };
        let sub = if results.len() == 1 {
            dir.to_path_buf()
        } else {
            dir.join(format!("point-{p:03}"))
        };
        if n <= MAX_USERS_CSV
            && let Some(users) = prepared.privacy.users(s, &pr.point, run)
        {
            let unit = &summary.points[p].privacy.accounting.unit;
            write_atomic(
                &sub.join("privacy_users.csv"),
                users_csv(&users, unit.record_level()).as_bytes(),
            )?;
        }
        let Some(pairs) = (n <= MAX_USERS_HEATMAP)
            .then(|| prepared.privacy.pairs(s, &pr.point, run))
            .flatten()
        else {
            continue;
        };
        let point = &summary.points[p];
        write_heatmap(
            &Heatmap {
                title: format!(
                    "{name}: {}network ε (δ = {delta:e}) of each user towards each observer, {} σ={} on {} (grey: no finite figure, or a user with several contributions)",
                    point.privacy.accounting.unit.prefix(),
                    point.algorithm,
                    significant(point.sigma),
                    point.topology,
                    delta = point.privacy.accounting.delta,
                ),
                n,
                values: pairs,
                x_label: "observer j".into(),
                y_label: "user i".into(),
                colorbar_label: format!(
                    "{}network ε of user i towards observer j",
                    point.privacy.accounting.unit.prefix()
                ),
            },
            &sub.join("privacy_heatmap"),
        )?;
    }
    Ok(())
}

/// `privacy_users.csv`: one row per user, the figures of `summary.json`'s worst user for each of
/// them (an empty field: no finite guarantee, or, for the observer, all observers alike). At
/// record level the ε columns are named `record_level_local_epsilon` and
/// `record_level_network_epsilon`.
fn users_csv(users: &[UserFigures], record_level: bool) -> String {
    fn field<T: std::fmt::Display>(v: Option<T>) -> String {
        v.map_or_else(String::new, |v| v.to_string())
    }
    let unit = if record_level { "record_level_" } else { "" };
    let mut csv = format!(
        "user,contributions,{unit}local_epsilon,local_order,{unit}network_epsilon,network_order,worst_observer,inverse_hitting\n",
    );
    for u in users {
        let _ = writeln!(
            csv,
            "{},{},{},{},{},{},{},{:e}",
            u.user,
            u.contributions,
            field(u.local.epsilon.map(|e| format!("{e:e}"))),
            field(u.local.order),
            field(u.network.and_then(|n| n.epsilon).map(|e| format!("{e:e}"))),
            field(u.network.and_then(|n| n.order)),
            field(u.worst_observer),
            u.inverse_hitting,
        );
    }
    csv
}

/// The final figure a privacy–utility plot shows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Utility {
    /// The relative gap to the optimum (log axis).
    Gap,
    /// The test error (linear axis).
    TestError,
}

/// Final relative gap (or test error) against σ (or the budget ε), one series per algorithm and
/// parameters.
fn write_privacy_utility(
    dir: &Path,
    loaded: &LoadedScenario,
    summary: &Summary,
    utility: Utility,
) -> Result<(), OutputError> {
    let mut groups: Vec<(String, Series)> = Vec::new();
    for p in &summary.points {
        let key = format!("{} {} {}", p.algorithm, p.parameters, p.topology);
        let idx = match groups.iter().position(|(k, _)| *k == key) {
            Some(i) => i,
            None => {
                groups.push((
                    key.clone(),
                    Series {
                        label: key,
                        points: Vec::new(),
                        spread: Some(Vec::new()),
                    },
                ));
                groups.len() - 1
            }
        };
        let series = &mut groups[idx].1;
        let x = p
            .privacy
            .accounting
            .budget
            .as_ref()
            .map_or(p.sigma, |b| b.epsilon);
        let (y, spread) = match utility {
            Utility::Gap => (p.final_mean.relative_gap, p.final_std.relative_gap),
            Utility::TestError => (
                p.final_mean.test_error.unwrap_or(f64::NAN),
                p.final_std.test_error.unwrap_or(f64::NAN),
            ),
        };
        series.points.push((x, y));
        if let Some(sp) = series.spread.as_mut() {
            sp.push(spread);
        }
    }
    for (_, s) in &mut groups {
        let mut order: Vec<usize> = (0..s.points.len()).collect();
        order.sort_by(|&a, &b| s.points[a].0.total_cmp(&s.points[b].0));
        s.points = order.iter().map(|&i| s.points[i]).collect();
        s.spread = s
            .spread
            .as_ref()
            .map(|sp| order.iter().map(|&i| sp[i]).collect());
    }
    let budget = summary
        .points
        .iter()
        .find_map(|p| p.privacy.accounting.budget.as_ref());
    let (title, x_label) = match budget {
        Some(b) => {
            let view = match b.view {
                BudgetView::Local => "local",
                BudgetView::Network => "network",
                BudgetView::Central => "central",
            };
            let first = summary.points.first().map(|p| &p.privacy.accounting);
            let d = first.map_or(0.0, |a| a.delta);
            let unit = first.map_or("", |a| a.unit.prefix());
            (
                format!("final {} vs {unit}{view} privacy budget ε", utility.name()),
                format!("{unit}{view} ε (δ = {d:e}; σ calibrated to each budget)"),
            )
        }
        None => (
            format!("final {} vs noise σ", utility.name()),
            "σ (noise std; one contribution's local RDP is 8αC²/σ²)".to_string(),
        ),
    };
    write_line_plot(
        &LinePlot {
            title: format!("{}: {title}", loaded.name()),
            x_label,
            y_label: utility.axis().into(),
            log_x: true,
            log_y: utility == Utility::Gap,
            series: groups.into_iter().map(|(_, s)| s).collect(),
        },
        &dir.join(utility.stem()),
    )?;
    Ok(())
}

impl Utility {
    fn name(self) -> &'static str {
        match self {
            Utility::Gap => "relative gap",
            Utility::TestError => "test error",
        }
    }
    fn axis(self) -> &'static str {
        match self {
            Utility::Gap => "relative gap (F(z) − F*) / |F*|",
            Utility::TestError => "test error (misclassified share of the test set)",
        }
    }
    fn stem(self) -> &'static str {
        match self {
            Utility::Gap => "privacy_utility",
            Utility::TestError => "privacy_utility_test_error",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::significant;

    #[test]
    fn legends_show_four_significant_digits() {
        assert_eq!(significant(3.532704443390534), "3.533");
        assert_eq!(significant(0.05), "0.05");
        assert_eq!(significant(0.15811398365903284), "0.1581");
        assert_eq!(significant(35.327044433905336), "35.33");
        assert_eq!(significant(12345.6), "12346");
        assert_eq!(significant(2.0), "2");
        assert_eq!(significant(1.2e-7), "0.00000012");
        assert_eq!(significant(0.0), "0");
    }
}
