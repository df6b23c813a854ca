//! The comparison's convergence plots (seed-baselines spec §6.4, plots 2 and 3): relative gap
//! against rounds (updates per user: a synchronous round, or `n` hops of the walk) and against
//! bytes sent over all links, one pair of figures per budget so that each compares the
//! algorithms at one privacy level (`convergence_rounds[_eps-<ε>].png`,
//! `convergence_bytes[_eps-<ε>].png`).

use crate::output::{OutputError, Progress, convergence_series, point_label};
use crate::plot::{LinePlot, PlotError, write_line_plot};
use crate::scenario::LoadedScenario;
use crate::simulate::{PointResult, Prepared};

/// Writes the convergence plots against rounds and bytes into `dir`.
pub fn write_convergence(
    dir: &std::path::Path,
    loaded: &LoadedScenario,
    prepared: &Prepared,
    results: &[PointResult],
) -> Result<(), OutputError> {
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
        let (suffix, title) = match budget {
            Some(e) if budgets.len() > 1 => (format!("_eps-{e}"), format!(" at ε = {e}")),
            Some(e) => (String::new(), format!(" at ε = {e}")),
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
