//! The reproduction panel (`reproduce.png`, `.svg`, `.csv`) of a scenario with a `[reproduce]`
//! table: each point's metric against the paper's own ε (or `l`), the common accountant's total
//! beside it (`summary.json`'s local figure of that point, never re-derived here).

use super::{PointSummary, Summary};
use crate::algorithm::Mode;
use crate::plot::{
    LinePlot, PlotError, PointNotes, Series, flat_references, write_line_plot_with_notes,
};
use crate::scenario::{LoadedScenario, Metric, Paper};
use std::path::Path;

/// The mean and standard deviation of `metric` over repetitions; NaN where the run has no such
/// figure.
fn metric_of(metric: Metric, p: &PointSummary) -> (f64, f64) {
    let nan = f64::NAN;
    match metric {
        Metric::TestError => (
            p.final_mean.test_error.unwrap_or(nan),
            p.final_std.test_error.unwrap_or(nan),
        ),
        Metric::TrainObjective => (p.final_mean.train_objective, p.final_std.train_objective),
        Metric::TestObjective => (
            p.final_mean.test_objective.unwrap_or(nan),
            p.final_std.test_objective.unwrap_or(nan),
        ),
    }
}

/// Flat lines of the zero model, the majority class (test error, where it differs) and the
/// non-private optimum in `metric`, across the panel's range.
fn references(metric: Metric, summary: &Summary, series: &[Series]) -> Vec<Series> {
    let (zero, optimum) = (&summary.zero_model, &summary.optimum_model);
    let lines = match metric {
        Metric::TestError => [
            ("zero model", zero.test_error),
            (
                "majority class",
                summary.distinct_majority().map(|(_, e)| e),
            ),
            ("non-private optimum", optimum.test_error),
        ],
        Metric::TrainObjective => [
            ("zero model", Some(zero.train_objective)),
            ("majority class", None),
            ("non-private optimum", Some(optimum.train_objective)),
        ],
        Metric::TestObjective => [
            ("zero model", zero.test_objective),
            ("majority class", None),
            ("non-private optimum", optimum.test_objective),
        ],
    };
    flat_references(series, lines)
}

/// Writes the panel (`reproduce.png`, `.svg`, `.csv`) into `dir` when the scenario has a
/// `[reproduce]` table.
pub fn write_panel(
    dir: &Path,
    loaded: &LoadedScenario,
    summary: &Summary,
) -> Result<(), PlotError> {
    let s = loaded.scenario();
    let Some(r) = &s.reproduce else {
        return Ok(());
    };
    let by_l = r.x_is_inner_steps();
    // Per curve: (x, y, sd, common total).
    let mut groups: Vec<(String, Vec<[f64; 4]>)> = Vec::new();
    for p in &summary.points {
        let Some(paper) = &p.reproduce else { continue };
        let x = match (by_l, paper.inner_steps) {
            (true, Some(l)) => l as f64,
            _ => paper.epsilon,
        };
        let (y, sd) = metric_of(r.metric, p);
        let total = p
            .privacy
            .accounting
            .local
            .as_ref()
            .and_then(|l| l.figure.epsilon)
            .unwrap_or(f64::NAN);
        let row = [x, y, sd, total];
        match groups.iter_mut().find(|(k, _)| *k == paper.series) {
            Some((_, rows)) => rows.push(row),
            None => groups.push((paper.series.clone(), vec![row])),
        }
    }
    let mut series = Vec::new();
    let mut totals = Vec::new();
    for (label, mut rows) in groups {
        rows.sort_by(|a, b| a[0].total_cmp(&b[0]));
        series.push(Series {
            label,
            points: rows.iter().map(|r| (r[0], r[1])).collect(),
            spread: Some(rows.iter().map(|r| r[2]).collect()),
        });
        totals.push(rows.iter().map(|r| r[3]).collect());
    }
    series.extend(references(r.metric, summary, &series));
    let delta = s.privacy.delta;
    let x_label = match (r.paper, by_l) {
        (_, true) => format!(
            "inner steps l (at the paper's ε = {}, δ = {delta:e})",
            r.epsilon.first().copied().unwrap_or(f64::NAN)
        ),
        // ε̄'s combining macron is drawn off its letter by the plot's font: spelled out.
        (Paper::Rk, false) => {
            "the paper's per-iteration ε-bar (Laplace scale b = Δ₁/ε-bar)".to_string()
        }
        (Paper::Hg, false) => {
            format!("the paper's ε (δ = {delta:e}; σ = √(2·t·l·ln(1.25/δ))/ε, c₀ = 1)")
        }
        (Paper::Cbb, false) => format!(
            "the paper's central ε (final model only, δ = {delta:e}; σ calibrated by dpwalk's central accountant)"
        ),
    };
    let plot = LinePlot {
        title: format!(
            "{}: {} re-run under the paper's own accounting",
            loaded.name(),
            r.figure
        ),
        x_label,
        y_label: r.metric.axis().into(),
        log_x: !by_l,
        // Objectives span decades at small ε (the Lasso's); an error rate is read linearly.
        log_y: r.metric != Metric::TestError,
        series,
    };
    let rounds = match (r.paper, s.algorithm.mode) {
        (Paper::Cbb, Mode::Federated) => format!(
            "T = {} rounds of {} sampled users of {}",
            horizon(summary, s.steps, |steps| steps),
            s.algorithm.blocks_per_round.unwrap_or(s.users),
            s.users
        ),
        (Paper::Cbb, _) => format!(
            "T = {} rounds of all {} users",
            horizon(summary, s.steps, |steps| steps),
            s.users
        ),
        _ => format!(
            "T = {} rounds of all {} users (the noise is planned for T)",
            horizon(summary, s.steps, |steps| s.rounds(steps)),
            s.users
        ),
    };
    let mut caption = format!(
        "beside each point: the common accountant's total for the noise run, local view (an eavesdropper on every message), ε at δ = {delta:e}; {rounds}; mean ± sd over {} repetitions",
        s.repetitions
    );
    if !r.note.is_empty() {
        caption.push_str("; ");
        caption.push_str(&r.note);
    }
    let notes = PointNotes {
        column: "common_local_epsilon".into(),
        prefix: "local ε = ".into(),
        values: totals,
    };
    write_line_plot_with_notes(&plot, Some(&caption), &notes, &dir.join("reproduce"))
}

/// The rounds `T` of the panel's points (`rounds` of each point's `steps`): one number when they
/// share it, else each kind's (`[by-kind.<kind>] steps` gives a kind its own horizon); the
/// scenario's `steps` when the panel has no point.
fn horizon(summary: &Summary, steps: u64, rounds: impl Fn(u64) -> u64) -> String {
    let mut per_kind: Vec<(&str, u64)> = Vec::new();
    for p in summary.points.iter().filter(|p| p.reproduce.is_some()) {
        let t = rounds(p.steps);
        if !per_kind.contains(&(p.algorithm, t)) {
            per_kind.push((p.algorithm, t));
        }
    }
    match per_kind.as_slice() {
        [] => rounds(steps).to_string(),
        [(_, t), rest @ ..] if rest.iter().all(|(_, u)| u == t) => t.to_string(),
        _ => per_kind
            .iter()
            .map(|(kind, t)| format!("{t} ({kind})"))
            .collect::<Vec<_>>()
            .join(", "),
    }
}
