//! The CSV files of a run directory: `metrics.csv` (every evaluation) and
//! `privacy_users.csv` (every user's figures).

use crate::privacy::{GivenWalkFigure, UserRow};
use crate::scenario::Scenario;
use crate::simulate::PointResult;
use serde::Serialize;
use std::fmt::Write as _;

pub(crate) fn csv_opt(v: Option<f64>) -> String {
    v.map_or_else(String::new, |x| format!("{x:e}"))
}

/// The columns of `metrics.csv`: the names of [`MetricsRow`]'s fields, in order.
pub const METRICS_COLUMNS: [&str; 18] = [
    "point",
    "repetition",
    "algorithm",
    "sigma",
    "clip",
    "gamma",
    "lambda",
    "lr",
    "step",
    "contributions",
    "train_objective",
    "test_objective",
    "test_error",
    "distance_to_optimum",
    "relative_gap",
    "round",
    "bytes",
    "consensus_gap",
];

/// One evaluation of one run: a row of `metrics.csv`, whose columns are these fields, in this
/// order and with these names (`dpwalk.simulate` returns them as arrays under the same names).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct MetricsRow {
    /// The sweep point's index.
    pub point: usize,
    /// The repetition's index.
    pub repetition: usize,
    /// The algorithm.
    pub algorithm: &'static str,
    /// The method's noise knob (σ, or the baseline's ε̄ or ν).
    pub sigma: f64,
    /// The clip, for methods that have one.
    pub clip: Option<f64>,
    /// γ.
    pub gamma: f64,
    /// λ.
    pub lambda: f64,
    /// The learning rate.
    pub lr: f64,
    /// The step evaluated at.
    pub step: u64,
    /// The contributions made by then.
    pub contributions: u64,
    /// The training objective.
    pub train_objective: f64,
    /// The test objective, with a test split.
    pub test_objective: Option<f64>,
    /// The test error rate (classifiers with a test split).
    pub test_error: Option<f64>,
    /// ‖x − x*‖.
    pub distance_to_optimum: f64,
    /// The relative gap to the optimum's objective.
    pub relative_gap: f64,
    /// The rounds by then (a step of the walk is 1/n of a round).
    pub round: f64,
    /// Bytes sent by then.
    pub bytes: u64,
    /// The consensus gap (graph methods).
    pub consensus_gap: Option<f64>,
}

/// The rows of `metrics.csv`: one per evaluation of every run.
pub fn metrics_rows(scenario: &Scenario, results: &[PointResult]) -> Vec<MetricsRow> {
    let mut rows = Vec::new();
    for (point, pr) in results.iter().enumerate() {
        let alg = &pr.point.method;
        for (repetition, run) in pr.runs.iter().enumerate() {
            rows.extend(run.evals.iter().map(|e| MetricsRow {
                point,
                repetition,
                algorithm: pr.point.name.as_str(),
                sigma: alg.knob(),
                clip: alg.clip(),
                gamma: pr.point.gamma,
                lambda: pr.point.lambda,
                lr: pr.point.lr,
                step: e.step,
                contributions: e.contributions,
                train_objective: e.train_objective,
                test_objective: e.test_objective,
                test_error: e.test_error,
                distance_to_optimum: e.distance_to_optimum,
                relative_gap: e.relative_gap,
                round: scenario.rounds_at(alg, e.step),
                bytes: e.bytes,
                consensus_gap: e.consensus_gap,
            }));
        }
    }
    rows
}

/// `metrics.csv`: one row per evaluation of every run ([`metrics_rows`]).
pub fn metrics_csv(rows: &[MetricsRow]) -> String {
    let mut out = METRICS_COLUMNS.join(",");
    out.push('\n');
    for r in rows {
        let _ = writeln!(
            out,
            "{},{},{},{},{},{},{},{},{},{},{:e},{},{},{:e},{:e},{},{},{}",
            r.point,
            r.repetition,
            r.algorithm,
            r.sigma,
            csv_opt(r.clip),
            r.gamma,
            r.lambda,
            r.lr,
            r.step,
            r.contributions,
            r.train_objective,
            csv_opt(r.test_objective),
            csv_opt(r.test_error),
            r.distance_to_optimum,
            r.relative_gap,
            r.round,
            r.bytes,
            csv_opt(r.consensus_gap),
        );
    }
    out
}

/// `privacy_users.csv`: one row per user, the figures of `summary.json`'s worst user for each of
/// them (an empty field: no finite guarantee, or, for the observer, all observers alike): its
/// contributions and local figure in the run, its path-hidden network figure (the point's, a
/// priori, N1 or N3; empty for ADMM and where it is not offered), then N2 given the walk, `given` (indexed by user; empty fields where there is none: ADMM, or a walk
/// not certified). At record level the ε columns are named `record_level_local_epsilon`,
/// `record_level_network_epsilon` and `record_level_network_epsilon_given_walk`.
pub(super) fn users_csv(
    users: &[UserRow],
    given: Option<&[GivenWalkFigure]>,
    record_level: bool,
) -> String {
    fn field<T: std::fmt::Display>(v: Option<T>) -> String {
        v.map_or_else(String::new, |v| v.to_string())
    }
    let unit = if record_level { "record_level_" } else { "" };
    let mut csv = format!(
        "user,contributions,{unit}local_epsilon,local_order,{unit}network_epsilon,network_order,worst_observer,{unit}network_epsilon_given_walk,network_order_given_walk,network_observer_given_walk\n",
    );
    for u in users {
        let g = given.and_then(|g| g.get(u.user));
        let _ = writeln!(
            csv,
            "{},{},{},{},{},{},{},{},{},{}",
            u.user,
            u.contributions,
            field(u.local.epsilon.map(|e| format!("{e:e}"))),
            field(u.local.order),
            field(u.network.and_then(|n| n.epsilon).map(|e| format!("{e:e}"))),
            field(u.network.and_then(|n| n.order)),
            field(u.worst_observer),
            field(g.and_then(|g| g.figure.epsilon).map(|e| format!("{e:e}"))),
            field(g.and_then(|g| g.figure.order)),
            field(g.and_then(|g| g.observer)),
        );
    }
    csv
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The CSV's header names the row's fields, in order, as [`METRICS_COLUMNS`] says: `dpwalk.simulate` returns the columns
    /// by their field names, which must be the CSV's.
    #[test]
    fn the_header_is_the_rows_field_names() {
        let row = MetricsRow {
            point: 0,
            repetition: 1,
            algorithm: "admm",
            sigma: 2.0,
            clip: None,
            gamma: 0.5,
            lambda: 0.1,
            lr: 0.0,
            step: 10,
            contributions: 3,
            train_objective: 0.25,
            test_objective: Some(0.5),
            test_error: None,
            distance_to_optimum: 1.5,
            relative_gap: 0.125,
            round: 0.5,
            bytes: 80,
            consensus_gap: None,
        };
        let json = serde_json::to_string(&row).unwrap();
        let keys: Vec<String> = json
            .trim_matches(|c| c == '{' || c == '}')
            .split(',')
            .map(|kv| kv.split(':').next().unwrap().trim_matches('"').to_string())
            .collect();
        assert_eq!(keys, METRICS_COLUMNS);
        let csv = metrics_csv(&[row]);
        let mut lines = csv.lines();
        assert_eq!(lines.next().unwrap().split(',').collect::<Vec<_>>(), keys);
        assert_eq!(
            lines.next().unwrap(),
            "0,1,admm,2,,0.5,0.1,0,10,3,2.5e-1,5e-1,,1.5e0,1.25e-1,0.5,80,"
        );
    }
}
