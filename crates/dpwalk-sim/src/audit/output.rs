//! An audit's directory: `audit.json` (everything), `audit.csv` (one row per point, view and
//! statistic) and, per row, a plot of the statistic's two distributions with the test's
//! threshold (PNG and SVG, through [`crate::plot`]).

use super::driver::{PointAudit, StatisticAudit, ViewAudit};
use super::estimate::Test;
use crate::output::{OutputError, csv_opt, write_atomic, write_json};
use crate::plot::{LinePlot, Series, write_line_plot};
use serde::Serialize;
use std::path::Path;

/// Bins of a histogram.
const BINS: usize = 60;

/// `audit.json`.
#[derive(Debug, Serialize)]
struct AuditFile<'a> {
    scenario: &'a str,
    what: &'static str,
    points: &'a [PointAudit],
}

const WHAT: &str = "epsilon_hat: an empirical lower bound on epsilon for one attack (Nasr et al. 2021, \
Clopper-Pearson rates, threshold chosen on the first half of each world's runs and evaluated on the second), \
holding with probability >= confidence; gdp_epsilon assumes a Gaussian trade-off curve. Never a guarantee. \
bound: the accountant's upper bound for the same user and view.";

/// The CSV header of [`csv_rows`].
pub const CSV_HEADER: &str = "point,algorithm,sigma,knob,clip,lambda,budget,topology,users,steps,runs,canary,user,observer,view,statistic,epsilon_hat,confidence,delta,gdp_mu,gdp_epsilon,bound_epsilon,bound_order,bound_figure,exceeds_bound,gdp_exceeds_bound,threshold,false_positives,false_negatives,fpr_upper,fnr_upper,gdp_threshold,gdp_false_positives,gdp_false_negatives,gdp_fpr_upper,gdp_fnr_upper";

/// A test's five CSV columns: threshold, false positives and negatives, the rates' upper bounds.
fn test_columns(t: &Test) -> String {
    format!(
        "{:e},{},{},{:e},{:e}",
        t.threshold, t.false_positives, t.false_negatives, t.fpr_upper, t.fnr_upper
    )
}

/// One CSV row per view and statistic of `p`.
pub fn csv_rows(p: &PointAudit) -> Vec<String> {
    let mut rows = Vec::new();
    for v in &p.views {
        for s in &v.statistics {
            let e = &s.estimate;
            rows.push(format!(
                "{},{},{},{},{},{},{},{:.6},{},{:e},{},{},{},{},\"{}\",{},{},{},{}",
                p.setting.csv(),
                p.runs,
                p.canary.kind.as_str(),
                p.canary.user,
                p.setting.observer,
                v.view.as_str(),
                s.statistic.as_str(),
                e.epsilon,
                e.confidence,
                e.delta,
                csv_opt(s.gdp_exceeds_bound.map(|_| e.gdp_mu)),
                csv_opt(s.gdp_epsilon()),
                csv_opt(v.bound.epsilon),
                csv_opt(v.bound.order),
                v.bound.figure,
                s.exceeds_bound,
                s.gdp_exceeds_bound.map_or(String::new(), |b| b.to_string()),
                test_columns(&e.test),
                // The GDP variant's own test, where the variant is reported.
                s.gdp_exceeds_bound
                    .map_or(",,,,".to_string(), |_| test_columns(&e.gdp_test)),
            ));
        }
    }
    rows
}

/// A histogram (density) of `values` on `[lo, hi]` as a step-like line.
fn histogram(values: &[f64], lo: f64, hi: f64, label: String) -> Series {
    let width = (hi - lo) / BINS as f64;
    let mut counts = vec![0usize; BINS];
    for &v in values {
        if v >= lo && v <= hi {
            let b = (((v - lo) / width) as usize).min(BINS - 1);
            counts[b] += 1;
        }
    }
    let scale = 1.0 / (values.len().max(1) as f64 * width);
    let points = counts
        .iter()
        .enumerate()
        .map(|(b, &c)| (lo + (b as f64 + 0.5) * width, c as f64 * scale))
        .collect();
    Series {
        label,
        points,
        spread: None,
    }
}

/// The `q` quantile of sorted values.
fn quantile(sorted: &[f64], q: f64) -> f64 {
    sorted[((sorted.len() - 1) as f64 * q).round() as usize]
}

fn plot(p: &PointAudit, v: &ViewAudit, s: &StatisticAudit, stem: &Path) -> Result<(), OutputError> {
    let mut all: Vec<f64> = s
        .scores
        .iter()
        .flatten()
        .copied()
        .filter(|x| x.is_finite())
        .collect();
    if all.len() < 2 {
        return Ok(());
    }
    all.sort_by(f64::total_cmp);
    let (lo, hi) = (quantile(&all, 0.001), quantile(&all, 0.999));
    if hi.partial_cmp(&lo) != Some(std::cmp::Ordering::Greater) {
        return Ok(());
    }
    let mut series = vec![
        histogram(&s.scores[0], lo, hi, "world 0 (canary -)".into()),
        histogram(&s.scores[1], lo, hi, "world 1 (canary +)".into()),
    ];
    let top = series
        .iter()
        .flat_map(|s| s.points.iter().map(|p| p.1))
        .fold(0.0f64, f64::max);
    let t = s.estimate.test.threshold;
    if t >= lo && t <= hi {
        series.push(Series {
            label: format!("threshold (eps_hat = {:.3})", s.estimate.epsilon),
            points: vec![(t, 0.0), (t, top)],
            spread: None,
        });
    }
    let figure = LinePlot {
        title: format!(
            "{} view, {}: eps_hat {:.3}{} vs bound {}",
            v.view.as_str(),
            s.statistic.as_str(),
            s.estimate.epsilon,
            s.gdp_epsilon()
                .map_or(String::new(), |g| format!(" (GDP {g:.3})")),
            v.bound.epsilon.map_or("none".into(), |e| format!("{e:.3}"))
        ),
        x_label: format!(
            "statistic ({} {} point {})",
            p.setting.algorithm, p.setting.topology, p.setting.point
        ),
        y_label: "density".into(),
        log_x: false,
        log_y: false,
        series,
    };
    write_line_plot(&figure, stem)?;
    Ok(())
}

/// Writes `audit.json`, `audit.csv` and the plots into `dir`.
///
/// # Errors
/// A file could not be written or a plot drawn.
pub fn write_all(dir: &Path, scenario: &str, points: &[PointAudit]) -> Result<(), OutputError> {
    write_json(
        &dir.join("audit.json"),
        &AuditFile {
            scenario,
            what: WHAT,
            points,
        },
    )?;
    let mut csv = String::from(CSV_HEADER);
    csv.push('\n');
    for p in points {
        for row in csv_rows(p) {
            csv.push_str(&row);
            csv.push('\n');
        }
    }
    write_atomic(&dir.join("audit.csv"), csv.as_bytes())?;
    for p in points {
        for v in &p.views {
            for s in &v.statistics {
                let stem = dir.join(format!(
                    "audit-p{}-{}-{}",
                    p.setting.point,
                    v.view.as_str(),
                    s.statistic.as_str()
                ));
                plot(p, v, s, &stem)?;
            }
        }
    }
    Ok(())
}
