//! The CSV files of a run directory: `metrics.csv` (every evaluation) and
//! `privacy_users.csv` (every user's figures).

use crate::privacy::{GivenWalkFigure, UserRow};
use crate::scenario::Scenario;
use crate::simulate::PointResult;
use std::fmt::Write as _;

pub(crate) fn csv_opt(v: Option<f64>) -> String {
    v.map_or_else(String::new, |x| format!("{x:e}"))
}

/// `metrics.csv`: one row per evaluation of every run.
pub fn metrics_csv(scenario: &Scenario, results: &[PointResult]) -> String {
    let mut out = String::from(
        "point,repetition,algorithm,sigma,clip,gamma,lambda,lr,step,contributions,train_objective,test_objective,test_error,distance_to_optimum,relative_gap,round,bytes,consensus_gap\n",
    );
    for (p, pr) in results.iter().enumerate() {
        let alg = &pr.point.method;
        for (r, run) in pr.runs.iter().enumerate() {
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
                    scenario.rounds_at(alg, e.step),
                    e.bytes,
                    csv_opt(e.consensus_gap),
                );
            }
        }
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
