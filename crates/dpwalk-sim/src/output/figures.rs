//! The privacy plots of a run directory: the per-user files and pairwise heatmap of each point,
//! and the privacy–utility curves of a sweep.

use super::csv::users_csv;
use super::summary::Summary;
use super::{OutputError, write_atomic};
use crate::compare::zero_gap_line;
use crate::plot::{
    Heatmap, LinePlot, Series, flat_references, significant, write_heatmap, write_line_plot,
};
use crate::scenario::{BudgetView, LoadedScenario, Scenario};
use crate::simulate::{PointResult, Prepared};
use std::path::Path;

/// Largest number of users for which `privacy_users.csv` is written.
const MAX_USERS_CSV: usize = 100_000;
/// Largest number of users for which the pairwise heatmap is drawn.
const MAX_USERS_HEATMAP: usize = 2_000;

/// Per-user figures (`privacy_users.csv`, from each point's first repetition) and the pairwise
/// network-ε heatmaps of DP-SGD walks: path hidden (`privacy_heatmap`, N3: graphs other than the
/// complete one, up to 200 users; on the complete graph every pair has the same figure, the one
/// in `summary.json`, and none is drawn) and given the first repetition's walk
/// (`privacy_heatmap_given_walk`, N2, up to 200 users, any graph); in `point-<p>/` when
/// sweeping.
pub(super) fn write_privacy_details(
    dir: &Path,
    s: &Scenario,
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
            && let Some(users) = prepared.privacy.users(s, &pr.resolved, run)
        {
            let unit = &summary.points[p].privacy.accounting.unit;
            let given = prepared.privacy.given_walk_users(s, &pr.point, run);
            write_atomic(
                &sub.join("privacy_users.csv"),
                users_csv(&users, given.as_deref(), unit.record_level()).as_bytes(),
            )?;
        }
        let point = &summary.points[p];
        let unit = point.privacy.accounting.unit.prefix();
        let heatmap = |figure: &str, short: &str, values: Vec<f64>, file: &str| {
            write_heatmap(
                &Heatmap {
                    title: format!(
                        "{name}: {unit}network ε ({figure}; δ = {delta:e}) of each user towards each observer, {} σ={} on {} (grey: no finite figure)",
                        point.algorithm,
                        significant(point.sigma),
                        point.topology,
                        delta = point.privacy.accounting.delta,
                    ),
                    n,
                    values,
                    x_label: "observer j".into(),
                    y_label: "user i".into(),
                    colorbar_label: format!(
                        "{unit}network ε ({short}) of user i towards observer j"
                    ),
                },
                &sub.join(file),
            )
        };
        if let Some(pairs) = (n <= MAX_USERS_HEATMAP)
            .then(|| prepared.privacy.pairs(s, &pr.resolved))
            .flatten()
        {
            heatmap(
                "path hidden, a priori (far observers: one bound)",
                "path hidden",
                pairs,
                "privacy_heatmap",
            )?;
        }
        if let Some(pairs) = prepared.privacy.given_walk_pairs(s, &pr.point, run) {
            heatmap(
                "given the walk of repetition 1, ex post",
                "given the walk",
                pairs,
                "privacy_heatmap_given_walk",
            )?;
        }
    }
    Ok(())
}

/// The final figure a privacy–utility plot shows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Utility {
    /// The relative gap to the optimum (log axis).
    Gap,
    /// The test error (linear axis).
    TestError,
}

/// Final relative gap (or test error) against σ (or the budget ε), one series per algorithm and
/// parameters.
pub(super) fn write_privacy_utility(
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
    let mut series: Vec<Series> = groups.into_iter().map(|(_, s)| s).collect();
    series.extend(references(summary, utility, &series));
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
            series,
        },
        &dir.join(utility.stem()),
    )?;
    Ok(())
}

/// Flat reference lines across the plotted range (the seed-baselines spec's §6.4 plot 1): the
/// all-zero model, and for the test error the majority class where its error differs from the
/// zero model's, and the non-private optimum (its relative gap is 0, off a log axis). Nothing
/// when no point is finite.
fn references(summary: &Summary, utility: Utility, series: &[Series]) -> Vec<Series> {
    let (zero, optimum) = (&summary.zero_model, &summary.optimum_model);
    match utility {
        Utility::Gap => zero_gap_line(series, zero.relative_gap),
        Utility::TestError => flat_references(
            series,
            [
                ("zero model", zero.test_error),
                (
                    "majority class",
                    summary.distinct_majority().map(|(_, e)| e),
                ),
                ("non-private optimum", optimum.test_error),
            ],
        ),
    }
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
