//! Privacy spent against rounds (seed-baselines spec §6.4, plot 5): the local-view ε(δ) of each
//! point's worst user after `r` rounds, at the noise the point was calibrated to, one figure per
//! budget (`privacy_rounds[_eps-<ε>].png`, its data in `privacy_rounds[_eps-<ε>].csv`).
//!
//! Every figure comes from [`crate::privacy::PrivacyContext::local_after`], the accounting of
//! `summary.json`'s local figure taken at an earlier time: on the walk the user with the most
//! contributions so far (its realized count, worst over repetitions), for the round-based kinds
//! the rounds so far (every user contributes once per round). The last point of a curve is
//! therefore `summary.json`'s local ε of the point, except in dpwalk's federated mode, whose
//! summary charges every user every round (a sampled user contributes less often).

use crate::compare::{by_budget, point_label, skip_empty};
use crate::plot::{LinePlot, PlotError, Series, write_line_plot_with_data};
use crate::scenario::{BudgetView, LoadedScenario, Scenario};
use crate::simulate::{PointResult, Prepared};
use std::path::Path;

/// Writes the privacy-spent figures into `dir`, one per budget; a point without a guarantee (no
/// noise or no clip) or without counts (a daemon swarm's rows) draws no curve.
pub fn write_privacy_rounds(
    dir: &Path,
    loaded: &LoadedScenario,
    prepared: &Prepared,
    results: &[PointResult],
) -> Result<(), PlotError> {
    let delta = loaded.scenario().privacy.delta;
    let unit = prepared.privacy.unit_prefix();
    for group in by_budget(results, prepared) {
        let mut series: Vec<Series> = group
            .points
            .iter()
            .filter_map(|pr| {
                let points = spent_series(loaded.scenario(), pr, prepared)?;
                Some(Series {
                    label: point_label(pr, results, prepared),
                    points,
                    spread: None,
                })
            })
            .collect();
        if series.is_empty() {
            continue;
        }
        // The budget bounds these local curves only where it constrains the local view (a
        // federated or centralized budget constrains the central one by default).
        let local_budget = group
            .points
            .iter()
            .all(|pr| loaded.scenario().budget_view(&pr.point.method) == BudgetView::Local);
        if let Some(budget) = group.budget.filter(|_| local_budget) {
            let (lo, hi) = series
                .iter()
                .flat_map(|s| s.points.iter().map(|p| p.0))
                .fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), x| {
                    (lo.min(x), hi.max(x))
                });
            series.push(Series {
                label: format!("{unit}budget ε = {budget} (local view)"),
                points: vec![(lo, budget), (hi, budget)],
                spread: None,
            });
        }
        let plot = LinePlot {
            title: format!("{}: privacy spent{}", loaded.name(), group.title),
            x_label: "rounds (updates per user; walk: hops / n)".into(),
            y_label: format!("{unit}local ε (δ = {delta:e}) of the worst user"),
            log_x: false,
            log_y: false,
            series,
        };
        let caption = "local view (an eavesdropper on every message): walk, the most-visited user's contributions so far; round-based kinds, every user every round";
        let path = dir.join(format!("privacy_rounds{}", group.suffix));
        skip_empty(write_line_plot_with_data(&plot, Some(caption), &path))?;
    }
    Ok(())
}

/// `(rounds, ε)` at each evaluation of a point, `None` when the point has no guarantee or its
/// runs did not count contributions.
fn spent_series(
    scenario: &Scenario,
    pr: &PointResult,
    prepared: &Prepared,
) -> Option<Vec<(f64, f64)>> {
    let first = pr.runs.first()?;
    first
        .evals
        .iter()
        .enumerate()
        .map(|(k, e)| {
            // The worst user over repetitions: the largest count any run reached by then.
            let most = pr
                .runs
                .iter()
                .map(|r| r.evals.get(k).and_then(|e| e.most_contributions))
                .collect::<Option<Vec<u64>>>()?
                .into_iter()
                .max()?;
            let epsilon = prepared.privacy.local_after(&pr.point, most)?.epsilon();
            Some((scenario.rounds_at(&pr.point.method, e.step), epsilon))
        })
        .collect()
}
