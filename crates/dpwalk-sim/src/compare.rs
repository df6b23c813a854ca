//! The comparison's convergence plots (seed-baselines spec §6.4, plots 2 and 3): relative gap
//! against rounds (updates per user: a synchronous round, or `n` hops of the walk) and against
//! bytes sent over all links, one pair of figures per budget so that each compares the
//! algorithms at one privacy level (`convergence_rounds[_eps-<ε>].png`,
//! `convergence_bytes[_eps-<ε>].png`); and what every convergence plot shares (the series of a
//! point against steps, rounds or bytes, and its legend), which [`crate::output`] draws too.

use crate::method::Method;
use crate::metrics::mean_std;
use crate::plot::{LinePlot, PlotError, Series, significant, write_line_plot};
use crate::scenario::LoadedScenario;
use crate::simulate::{PointResult, Prepared};
use dpwalk_core::step::Algorithm;
use std::fmt::Write as _;

/// Writes the convergence plots against rounds and bytes into `dir`.
pub fn write_convergence(
    dir: &std::path::Path,
    loaded: &LoadedScenario,
    prepared: &Prepared,
    results: &[PointResult],
) -> Result<(), PlotError> {
    let mut budgets: Vec<Option<f64>> = Vec::new();
    for pr in results {
        if !budgets.contains(&pr.point.budget) {
            budgets.push(pr.point.budget);
        }
    }
    for budget in &budgets {
        let group: Vec<&PointResult> = results
            .iter()
            .filter(|pr| pr.point.budget == *budget)
            .collect();
        let unit = prepared.privacy.unit_prefix();
        let (suffix, title) = match budget {
            Some(e) if budgets.len() > 1 => (format!("_eps-{e}"), format!(" at {unit}ε = {e}")),
            Some(e) => (String::new(), format!(" at {unit}ε = {e}")),
            None => (String::new(), String::new()),
        };
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
        ] {
            let series = group
                .iter()
                .map(|pr| {
                    let label = point_label(pr, results, prepared);
                    convergence_series(pr, label, x)
                })
                .collect();
            let plotted = write_line_plot(
                &LinePlot {
                    title: format!("{}: convergence{title}", loaded.name()),
                    x_label: x_label.into(),
                    y_label: "relative gap (F(z) − F*) / |F*|".into(),
                    log_x,
                    log_y: true,
                    series,
                },
                &dir.join(format!("{stem}{suffix}")),
            );
            match plotted {
                // A run without messages (the centralized curator) has no bytes to draw.
                Err(PlotError::NoData { title }) => {
                    tracing::warn!(%title, "nothing to plot: figure skipped");
                }
                other => other?,
            }
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
        let _ = write!(label, " {}", prepared.topologies[pr.point.topology].label);
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
}

/// Relative gap per evaluation, mean and std across repetitions, against `x`.
pub(crate) fn convergence_series(pr: &PointResult, label: String, x: Progress) -> Series {
    let Some(first) = pr.runs.first() else {
        return Series {
            label,
            points: Vec::new(),
            spread: Some(Vec::new()),
        };
    };
    let users = first.per_user.len().max(1) as f64;
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
            Progress::Rounds => e.step as f64 / users,
            Progress::Bytes => e.bytes as f64,
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
