//! The comparison's convergence plots (seed-baselines spec §6.4, plots 2–4): relative gap
//! against rounds (updates per user: a synchronous round, or `n` hops of the walk), against bytes
//! sent over all links and against the run's wall-clock computing time, one set of figures per
//! budget so that each compares the algorithms at one privacy level
//! (`convergence_rounds[_eps-<ε>].png`, `convergence_bytes[_eps-<ε>].png`,
//! `convergence_compute[_eps-<ε>].png`); and what every convergence plot shares (the points
//! grouped by budget, the series of a point against steps, rounds, bytes or seconds, and its
//! legend), which [`crate::output`] (with its views panel) and [`crate::spent`] draw too.
//!
//! Local computation is measured as wall-clock time, not counted in gradient-equivalents: the
//! prox solvers do not report their Newton and CG iterations, so an honest count is not
//! available. The time is each run's own, evaluations excluded, with the runs of a sweep sharing
//! the machine's cores (and whatever else runs on it): it ranks algorithms whose costs differ by
//! large factors, not close ones, and differs from machine to machine.

use crate::method::{Family, Method};
use crate::metrics::mean_std;
use crate::plot::{
    LinePlot, PlotError, Series, flat_references, significant, write_line_plot,
    write_line_plot_with_data,
};
use crate::scenario::{LoadedScenario, Scenario};
use crate::simulate::{PointResult, Prepared};
use dpwalk_core::step::Algorithm;
use std::fmt::Write as _;

/// The points of one budget: the file-name suffix (`_eps-<ε>` when a sweep has several budgets),
/// the title's ` at ε = …`, and the points.
pub(crate) struct BudgetGroup<'a> {
    /// `_eps-<ε>`, or empty.
    pub suffix: String,
    /// ` at ε = <ε>` (with the unit's prefix), or empty without a budget.
    pub title: String,
    /// The budget, `None` for points with an explicit noise.
    pub budget: Option<f64>,
    /// The points at this budget, in sweep order.
    pub points: Vec<&'a PointResult>,
}

/// `results` grouped by budget, in order of first appearance.
pub(crate) fn by_budget<'a>(
    results: &'a [PointResult],
    prepared: &Prepared,
) -> Vec<BudgetGroup<'a>> {
    let mut budgets: Vec<Option<f64>> = Vec::new();
    for pr in results {
        if !budgets.contains(&pr.point.budget) {
            budgets.push(pr.point.budget);
        }
    }
    let unit = prepared.privacy.unit_prefix();
    let several = budgets.len() > 1;
    budgets
        .iter()
        .map(|&budget| {
            let (suffix, title) = match budget {
                Some(e) if several => (format!("_eps-{e}"), format!(" at {unit}ε = {e}")),
                Some(e) => (String::new(), format!(" at {unit}ε = {e}")),
                None => (String::new(), String::new()),
            };
            BudgetGroup {
                suffix,
                title,
                budget,
                points: results
                    .iter()
                    .filter(|pr| pr.point.budget == budget)
                    .collect(),
            }
        })
        .collect()
}

/// Skips a figure with nothing to draw (a warning), passes every other outcome on.
pub(crate) fn skip_empty(plotted: Result<(), PlotError>) -> Result<(), PlotError> {
    match plotted {
        Err(PlotError::NoData { title }) => {
            tracing::warn!(%title, "nothing to plot: figure skipped");
            Ok(())
        }
        other => other,
    }
}

/// What the computing-time figure measures, under its title.
const COMPUTE_CAPTION: &str = "wall-clock seconds of each run outside evaluations, runs sharing the machine: not gradient-equivalents (the prox solvers do not report their iterations); compare large factors only";

/// The zero model's relative gap `zero_gap` as a flat line across `series`' range (a log axis:
/// nothing where it is not positive): the reference of every relative-gap figure.
pub(crate) fn zero_gap_line(series: &[Series], zero_gap: f64) -> Vec<Series> {
    flat_references(
        series,
        [("zero model", Some(zero_gap).filter(|&g| g > 0.0))],
    )
}

/// Writes the convergence plots against rounds, bytes and computing time into `dir`, with the
/// zero model's relative gap `zero_gap` as a flat reference line.
pub fn write_convergence(
    dir: &std::path::Path,
    loaded: &LoadedScenario,
    prepared: &Prepared,
    results: &[PointResult],
    zero_gap: f64,
) -> Result<(), PlotError> {
    for group in by_budget(results, prepared) {
        for (x, stem, x_label, log_x) in [
            (
                Progress::Rounds,
                "convergence_rounds",
                "rounds (updates per user; walk: hops / n)",
                false,
            ),
            (
                Progress::Bytes,
                "convergence_bytes",
                "bytes sent over all links (8 per float)",
                true,
            ),
            (
                Progress::Compute,
                "convergence_compute",
                "seconds of computation (wall clock, evaluations excluded)",
                false,
            ),
        ] {
            // A daemon swarm's rows measure no computing time: no figure rather than an empty one.
            let measured = |pr: &&PointResult| {
                pr.runs
                    .iter()
                    .all(|r| r.evals.iter().all(|e| e.compute_seconds.is_some()))
            };
            if x == Progress::Compute && !group.points.iter().any(measured) {
                continue;
            }
            let mut series: Vec<Series> = group
                .points
                .iter()
                .map(|pr| {
                    let label = point_label(pr, results, prepared);
                    convergence_series(loaded.scenario(), pr, label, x)
                })
                .collect();
            series.extend(zero_gap_line(&series, zero_gap));
            let plot = LinePlot {
                title: format!("{}: convergence{}", loaded.name(), group.title),
                x_label: x_label.into(),
                y_label: "relative gap (F(z) − F*) / |F*|".into(),
                log_x,
                log_y: true,
                series,
            };
            let path = dir.join(format!("{stem}{}", group.suffix));
            // A run without messages (the centralized curator) has no bytes to draw.
            skip_empty(match x {
                Progress::Compute => write_line_plot_with_data(&plot, Some(COMPUTE_CAPTION), &path),
                _ => write_line_plot(&plot, &path),
            })?;
        }
    }
    Ok(())
}

/// `C` for labels: its value, or `none`.
fn clip_label(clip: Option<f64>) -> String {
    clip.map_or_else(|| "none".into(), |c| c.to_string())
}

/// The legend of a point: its kind, budget and knob, and what else differs among `results`.
pub(crate) fn point_label(
    pr: &PointResult,
    results: &[PointResult],
    prepared: &Prepared,
) -> String {
    let alg = &pr.point.method;
    let knob = knob_label(alg);
    let mut label = match pr.point.budget {
        Some(epsilon) => format!("{} ε={epsilon} ({knob})", pr.point.name.as_str()),
        None => format!("{} {knob}", pr.point.name.as_str()),
    };
    let distinct = |f: &dyn Fn(&PointResult) -> String| {
        let first = f(&results[0]);
        results.iter().any(|q| f(q) != first)
    };
    if distinct(&|q| q.point.topology.to_string()) {
        // The server kinds run once, whatever the graphs: they use none.
        match alg.family() {
            Family::Federated => label.push_str(" server"),
            _ => {
                let _ = write!(label, " {}", prepared.topologies[pr.point.topology].label);
            }
        }
    }
    if distinct(&|q| clip_label(q.point.method.clip())) {
        let _ = write!(label, " C={}", clip_label(alg.clip()));
    }
    let admm = matches!(pr.point.method, Method::Walk(Algorithm::Admm(_)));
    if admm && distinct(&|q| q.point.gamma.to_string()) {
        let _ = write!(label, " γ={}", pr.point.gamma);
    }
    if admm && distinct(&|q| q.point.lambda.to_string()) {
        let _ = write!(label, " λ={}", pr.point.lambda);
    }
    label
}

/// The noise knob for legends: `σ=…`, `b=…` (Laplace scale) or `ν=…`.
fn knob_label(method: &Method) -> String {
    let symbol = match method.knob_name() {
        "laplace-scale" => "b",
        "nu" => "ν",
        _ => "σ",
    };
    format!("{symbol}={}", significant(method.knob()))
}

/// What the x axis of a convergence plot counts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Progress {
    /// Updates of `w` (hops, or rounds of dpwalk's federated and centralized modes).
    Steps,
    /// Rounds: updates per user (a walk's hops over `n`).
    Rounds,
    /// Bytes sent over all links.
    Bytes,
    /// Seconds of computation (wall clock, evaluations excluded; NaN where not measured).
    Compute,
}

/// Relative gap per evaluation, mean and std across repetitions, against `x`.
pub(crate) fn convergence_series(
    scenario: &Scenario,
    pr: &PointResult,
    label: String,
    x: Progress,
) -> Series {
    let Some(first) = pr.runs.first() else {
        return Series {
            label,
            points: Vec::new(),
            spread: Some(Vec::new()),
        };
    };
    let mut points = Vec::new();
    let mut spread = Vec::new();
    for (k, e) in first.evals.iter().enumerate() {
        let vals: Vec<f64> = pr
            .runs
            .iter()
            .filter_map(|r| r.evals.get(k))
            .map(|e| e.relative_gap)
            .collect();
        let (m, s) = mean_std(&vals);
        let at = match x {
            Progress::Steps => e.step as f64,
            Progress::Rounds => scenario.rounds_at(&pr.point.method, e.step),
            Progress::Bytes => e.bytes as f64,
            Progress::Compute => {
                let seconds: Option<Vec<f64>> = pr
                    .runs
                    .iter()
                    .map(|r| r.evals.get(k).and_then(|e| e.compute_seconds))
                    .collect();
                seconds.map_or(f64::NAN, |s| mean_std(&s).0)
            }
        };
        points.push((at, m));
        spread.push(s);
    }
    Series {
        label,
        points,
        spread: Some(spread),
    }
}
