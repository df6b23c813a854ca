//! What `dpwalk tune` writes: every configuration's score (`tune.csv`, `tune.json`), the best
//! one of each kind as `[by-kind.<kind>]` tables to put in the scenario (`tuned.toml`), and the
//! best score at each horizon per kind (`tune_horizons.png`, `.svg`, `.csv`).

use super::{KindTrials, Reference, Trial, Tuned};
use crate::output::{OutputError, csv_opt, write_atomic, write_json};
use crate::plot::{LinePlot, Series, flat_references, write_line_plot_with_data};
use crate::scenario::{Scenario, TuneMetric};
use serde::Serialize;
use std::fmt::Write as _;
use std::path::Path;

/// Writes every file of a tuning to `dir`; `command` is how it was run (for `tuned.toml`'s
/// header).
pub fn write_all(
    dir: &Path,
    scenario: &Scenario,
    tuned: &Tuned,
    command: &str,
) -> Result<(), OutputError> {
    write_atomic(&dir.join("tune.csv"), tune_csv(tuned).as_bytes())?;
    write_json(&dir.join("tune.json"), &summary(tuned))?;
    let path = dir.join("tuned.toml");
    let toml = tuned_toml(scenario, tuned, command).map_err(|source| OutputError::Toml {
        path: path.clone(),
        source,
    })?;
    write_atomic(&path, toml.as_bytes())?;
    write_line_plot_with_data(
        &by_horizon(tuned),
        Some(&format!(
            "{} configurations per kind at epsilon = {}, tuning seed {}; not privately accounted",
            tuned.spec.configs, tuned.spec.epsilon, tuned.spec.seed
        )),
        &dir.join("tune_horizons"),
    )?;
    Ok(())
}

/// `tune.csv`: one row per configuration.
pub fn tune_csv(tuned: &Tuned) -> String {
    let mut out = String::from(
        "kind,config,horizon,parameters,knob,validation_objective,validation_error,train_relative_gap,score,best\n",
    );
    for k in &tuned.kinds {
        for (i, t) in k.trials.iter().enumerate() {
            let _ = writeln!(
                out,
                "{},{},{},{},{:e},{:e},{},{:e},{:e},{}",
                k.kind.as_str(),
                i + 1,
                t.config.horizon,
                t.config.describe(),
                t.knob,
                t.validation_objective,
                csv_opt(t.validation_error),
                t.train_gap,
                t.score,
                i == k.best,
            );
        }
    }
    out
}

/// The best trial of a kind.
fn best(k: &KindTrials) -> Option<&Trial> {
    k.trials.get(k.best)
}

/// `tuned.toml`: the best configuration of every kind, as the `[by-kind.<kind>]` table the
/// scenario runs it with (its own keys over the scenario's table, `steps` = horizon × users).
///
/// # Errors
/// The tables cannot be written as TOML (never an empty file in their place).
pub fn tuned_toml(
    scenario: &Scenario,
    tuned: &Tuned,
    command: &str,
) -> Result<String, toml::ser::Error> {
    let mut by_kind = toml::Table::new();
    for k in &tuned.kinds {
        let Some(t) = best(k) else { continue };
        let mut table = scenario.by_kind.get(&k.kind).cloned().unwrap_or_default();
        for (key, value) in &t.config.keys {
            table.insert(key.clone(), value.clone());
        }
        let steps = t.config.horizon.saturating_mul(scenario.users as u64);
        table.insert(
            "steps".into(),
            toml::Value::Integer(i64::try_from(steps).unwrap_or(i64::MAX)),
        );
        by_kind.insert(k.kind.as_str().into(), toml::Value::Table(table));
    }
    let mut doc = toml::Table::new();
    doc.insert("by-kind".into(), toml::Value::Table(by_kind));
    let spec = &tuned.spec;
    let metric = match spec.metric {
        TuneMetric::Objective => "validation objective",
        TuneMetric::Error => "validation error",
    };
    let tables = toml::to_string(&doc)?;
    Ok(format!(
        "# Written by `{command}`: the best of {} configurations per kind by final {metric}\n\
         # at epsilon = {} (tuning seed {}, {} training and {} validation records, {} users);\n\
         # `steps` is the tuned horizon times the scenario's {} users.\n\
         # Privacy: {}.\n\
         # Put these tables in the scenario in place of its [by-kind] tables.\n\n{}",
        spec.configs,
        spec.epsilon,
        spec.seed,
        tuned.train_records,
        tuned.validation_records,
        tuned.users,
        scenario.users,
        tuned.privacy_cost(),
        tables
    ))
}

#[derive(Debug, Serialize)]
struct Summary<'a> {
    /// What the tuning cost in privacy: not accounted ([`Tuned::privacy_cost`]).
    privacy_cost: String,
    /// How the best configuration of a kind was chosen ([`super::selection_rule`]).
    selection: &'static str,
    configs_per_kind: usize,
    epsilon: f64,
    seed: u64,
    metric: TuneMetric,
    users: usize,
    train_records: usize,
    validation_records: usize,
    /// The zero model's and the non-private optimum's scores, for scale.
    zero_model: Reference,
    /// The training records' majority class and its validation error (classifiers).
    majority_class: Option<MajorityReference>,
    optimum: Reference,
    kinds: Vec<KindSummary<'a>>,
}

#[derive(Debug, Serialize)]
struct MajorityReference {
    label: f64,
    validation_error: f64,
}

#[derive(Debug, Serialize)]
struct KindSummary<'a> {
    kind: &'a str,
    best_config: usize,
    horizon: u64,
    parameters: String,
    score: f64,
    validation_objective: f64,
    validation_error: Option<f64>,
    /// Configurations whose final model was not finite.
    diverged: usize,
    /// Configurations set aside because their model fits the validation records worse than the
    /// zero model ([`super::best_trial`]).
    worse_than_zero: usize,
}

fn summary(tuned: &Tuned) -> Summary<'_> {
    Summary {
        privacy_cost: tuned.privacy_cost(),
        selection: super::selection_rule(tuned.spec.metric),
        configs_per_kind: tuned.spec.configs,
        epsilon: tuned.spec.epsilon,
        seed: tuned.spec.seed,
        metric: tuned.spec.metric,
        users: tuned.users,
        train_records: tuned.train_records,
        validation_records: tuned.validation_records,
        zero_model: tuned.zero_model,
        majority_class: tuned
            .majority_class
            .map(|(label, validation_error)| MajorityReference {
                label,
                validation_error,
            }),
        optimum: tuned.optimum,
        kinds: tuned
            .kinds
            .iter()
            .filter_map(|k| {
                best(k).map(|t| KindSummary {
                    kind: k.kind.as_str(),
                    best_config: k.best + 1,
                    horizon: t.config.horizon,
                    parameters: t.config.describe(),
                    score: t.score,
                    validation_objective: t.validation_objective,
                    validation_error: t.validation_error,
                    diverged: k.trials.iter().filter(|t| t.score.is_infinite()).count(),
                    worse_than_zero: k.worse_than_zero(tuned.zero_model.validation_objective),
                })
            })
            .collect(),
    }
}

/// Per kind, the best score among its configurations at each horizon drawn, with the zero
/// model's, the majority class's (error metric, where it differs) and the non-private optimum's
/// validation scores as flat lines.
fn by_horizon(tuned: &Tuned) -> LinePlot {
    let mut series: Vec<Series> = tuned
        .kinds
        .iter()
        .map(|k| {
            let mut horizons: Vec<u64> = k.trials.iter().map(|t| t.config.horizon).collect();
            horizons.sort_unstable();
            horizons.dedup();
            let points = horizons
                .into_iter()
                .map(|h| {
                    let score = k
                        .trials
                        .iter()
                        .filter(|t| t.config.horizon == h)
                        .map(|t| t.score)
                        .fold(f64::INFINITY, f64::min);
                    (h as f64, score)
                })
                .collect();
            Series {
                label: k.kind.as_str().into(),
                points,
                spread: None,
            }
        })
        .collect();
    series.extend(references(tuned, &series));
    let y_label = match tuned.spec.metric {
        TuneMetric::Objective => "best validation objective",
        TuneMetric::Error => "best validation error",
    };
    LinePlot {
        title: "Tuning: the best configuration at each horizon".into(),
        x_label: "horizon H (updates per user)".into(),
        y_label: y_label.into(),
        log_x: true,
        log_y: tuned.spec.metric == TuneMetric::Objective,
        series,
    }
}

/// The reference lines of [`by_horizon`]: the validation scores of the zero model, of the
/// majority class (error metric, where it differs) and of the non-private optimum.
fn references(tuned: &Tuned, series: &[Series]) -> Vec<Series> {
    let score = |r: &Reference| match tuned.spec.metric {
        TuneMetric::Objective => Some(r.validation_objective),
        TuneMetric::Error => r.validation_error,
    };
    let zero = score(&tuned.zero_model);
    let majority = tuned
        .distinct_majority()
        .filter(|_| tuned.spec.metric == TuneMetric::Error)
        .map(|(_, error)| error);
    flat_references(
        series,
        [
            ("zero model", zero),
            ("majority class", majority),
            ("non-private optimum", score(&tuned.optimum)),
        ],
    )
}
