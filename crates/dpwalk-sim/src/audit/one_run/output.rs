//! A one-run audit's files: `audit-one-run.json` (everything) and `audit-one-run.csv` (one row
//! per point and view).

use super::OneRunPoint;
use crate::audit::setting::SETTING_CSV_HEADER;
use crate::output::{OutputError, csv_opt, write_atomic, write_json};
use serde::Serialize;
use std::path::Path;

#[derive(Debug, Serialize)]
struct OneRunFile<'a> {
    scenario: &'a str,
    what: &'static str,
    points: &'a [OneRunPoint],
}

const WHAT: &str = "one-run audit (Steinke, Nasr & Jagielski 2023, Theorem 3 with its delta term): \
many canary users in one walk, each canary's sign uniform and independent; the attacker guesses the \
signs of the highest and lowest scores; epsilon_hat is a lower bound on epsilon at delta holding with \
probability >= confidence (union bound over the guess counts tried). Never a guarantee. bound: the \
accountant's local figure for one contribution, which covers every view.";

/// The CSV header of [`csv_rows`].
pub fn csv_header() -> String {
    format!(
        "{SETTING_CSV_HEADER},canary,canaries,contributed,clipped,observer,view,epsilon_hat,confidence,delta,guesses,correct,plus,minus,tried,bound_epsilon,bound_order,bound_figure,exceeds_bound"
    )
}

/// One CSV row per view of `p`.
pub fn csv_rows(p: &OneRunPoint) -> Vec<String> {
    p.views
        .iter()
        .map(|v| {
            let e = &v.estimate;
            format!(
                "{},{},{},{},{},{},{},{:.6},{},{:e},{},{},{},{},{},{},{},\"{}\",{}",
                p.setting.csv(),
                p.canary.kind.as_str(),
                e.canaries,
                p.contributed,
                p.clipped,
                p.setting.observer,
                v.view.as_str(),
                e.epsilon,
                e.confidence,
                e.delta,
                e.best.guesses,
                e.best.correct,
                e.best.plus,
                e.best.minus,
                e.tried,
                csv_opt(v.bound.epsilon),
                csv_opt(v.bound.order),
                v.bound.figure,
                v.exceeds_bound,
            )
        })
        .collect()
}

/// Writes `audit-one-run.json` and `audit-one-run.csv` into `dir`.
///
/// # Errors
/// A file could not be written.
pub fn write_all(dir: &Path, scenario: &str, points: &[OneRunPoint]) -> Result<(), OutputError> {
    write_json(
        &dir.join("audit-one-run.json"),
        &OneRunFile {
            scenario,
            what: WHAT,
            points,
        },
    )?;
    let mut csv = csv_header();
    csv.push('\n');
    for row in points.iter().flat_map(csv_rows) {
        csv.push_str(&row);
        csv.push('\n');
    }
    write_atomic(&dir.join("audit-one-run.csv"), csv.as_bytes())
}
