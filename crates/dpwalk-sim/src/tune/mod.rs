//! `dpwalk tune`: equal tuning effort for a comparison (seed-baselines spec §6.1 item 7).
//!
//! Every kind of the scenario gets the same number of configurations ([`draw`]), each run at
//! the `[tune]` budget on the scenario's data (or `[tune.data]`'s: public or synthetic records)
//! with a validation split carved from the training records, and scored on that split; the runs
//! use the tuning seed, never a reported seed. On the scenario's data the tuning is not privately
//! accounted (as in all four seed papers): it reads the training data many times, which the
//! reported budgets do not include; every output says so ([`Tuned::privacy_cost`]).
//!
//! Results are written by [`output`]: every configuration's score (`tune.csv`, `tune.json`)
//! and the best one of every kind as `[by-kind.<kind>]` tables (`tuned.toml`), with `steps`
//! set to its horizon for the scenario's users.

pub mod draw;
pub mod output;

use crate::algorithm::AlgorithmName;
use crate::metrics::Evaluator;
use crate::scenario::{LoadedScenario, Scenario, ScenarioError, TuneMetric, TuneSpec};
use crate::simulate::{PointResult, SimError, prepare_data, progress_bar, simulate};
use dpwalk_core::data::split::train_test;
use dpwalk_core::data::{DataError, LabelKind, LoadedData};
use dpwalk_core::rng::{Purpose, derive_seed, node_rng};
use draw::Config;
use rayon::prelude::*;
use serde::Serialize;
use thiserror::Error;

/// Errors of a tuning.
#[derive(Debug, Error)]
pub enum TuneError {
    /// The scenario has no `[tune]` section.
    #[error("the scenario has no [tune] section: nothing to tune (see `dpwalk tune --help`)")]
    NoSection,
    /// A kind's grid has fewer configurations than every kind must get.
    #[error(
        "[tune.grid.{}] with the horizons gives {size} configurations, fewer than configs = {configs}: every kind gets the same number; widen its grid or lower configs",
        kind.as_str()
    )]
    GridTooSmall {
        /// The kind.
        kind: AlgorithmName,
        /// Its grid's configurations.
        size: usize,
        /// What every kind must get.
        configs: usize,
    },
    /// A kind's grid has more configurations than can be counted.
    #[error("[tune.grid.{}] is too large to enumerate", kind.as_str())]
    GridTooLarge {
        /// The kind.
        kind: AlgorithmName,
    },
    /// `[tune.data]` is the scenario's own `[data]`.
    #[error(
        "[tune.data] is the scenario's own [data]: tuning on it reads the private records; give public or synthetic records of the same task, or drop [tune.data]"
    )]
    PublicIsPrivate,
    /// The validation split could not be carved.
    #[error("carving the validation split from the training records")]
    Split(#[source] DataError),
    /// `metric = "error"` on a loss without classes.
    #[error("[tune] metric = \"error\" needs a classification loss (logistic or multinomial)")]
    NoErrorRate,
    /// A configuration is not a valid scenario.
    #[error("configuration {} of kind {} ({})", index + 1, config.kind.as_str(), config.describe())]
    Config {
        /// Its index within its kind.
        index: usize,
        /// The configuration.
        config: Config,
        /// What is wrong.
        #[source]
        source: ScenarioError,
    },
    /// Preparing or running the tuning scenario failed.
    #[error(transparent)]
    Sim(#[from] SimError),
    /// The scenario is invalid.
    #[error(transparent)]
    Scenario(#[from] ScenarioError),
}

/// One configuration's run and score.
#[derive(Debug, Clone)]
pub struct Trial {
    /// The configuration.
    pub config: Config,
    /// The score (lower is better; `+∞` for a run whose model is not finite).
    pub score: f64,
    /// The final model's objective on the validation records (mean over topologies and
    /// repetitions).
    pub validation_objective: f64,
    /// Its error rate there (classification only).
    pub validation_error: Option<f64>,
    /// Its relative gap on the tuning runs' training records.
    pub train_gap: f64,
    /// The noise knob calibrated to the budget (of the first topology's point).
    pub knob: f64,
}

/// The trials of one kind, and its best.
#[derive(Debug, Clone)]
pub struct KindTrials {
    /// The kind.
    pub kind: AlgorithmName,
    /// Its trials, in the draw's order.
    pub trials: Vec<Trial>,
    /// The index of the best trial ([`best_trial`]).
    pub best: usize,
}

impl KindTrials {
    /// Its trials with a finite model that fits the validation records worse than the zero
    /// model, whose objective there is `zero_objective`: set aside by [`best_trial`] unless
    /// every finite one is.
    pub fn worse_than_zero(&self, zero_objective: f64) -> usize {
        self.trials
            .iter()
            .filter(|t| t.score.is_finite() && fits_worse(t, zero_objective))
            .count()
    }
}

/// Whether `t`'s model fits the validation records worse than the zero model.
fn fits_worse(t: &Trial, zero_objective: f64) -> bool {
    t.validation_objective > zero_objective
}

/// [`best_trial`]'s rule in words, for the outputs.
pub fn selection_rule(metric: TuneMetric) -> &'static str {
    match metric {
        TuneMetric::Error => {
            "the lowest validation error among the configurations whose model is finite and fits the validation records no worse than the zero model (objective), or among all finite ones when none does (worse_than_zero); ties by the validation objective, then the draw's order"
        }
        TuneMetric::Objective => {
            "the lowest validation objective among the configurations whose model is finite and fits the validation records no worse than the zero model, or among all finite ones when none does (worse_than_zero); ties by the validation error (classifiers), then the draw's order"
        }
    }
}

/// The index of the best trial of `trials`, the zero model's validation objective being
/// `zero_objective`. The rule, in order:
/// 1. a trial whose model is not finite is never chosen while another is;
/// 2. nor is one whose validation **objective** is above the zero model's (a diverging run: at
///    small ε a DP-SGD run can blow its objective up 10²–10⁴-fold and still score a fair error
///    rate by chance), while another is not;
/// 3. among the rest, the lowest score (the `[tune] metric`);
/// 4. ties on the score go to the lower **secondary key**: the validation objective when the
///    metric is the error rate, the error rate (classifiers) when it is the objective;
/// 5. then to the first in the draw's order.
pub fn best_trial(trials: &[Trial], metric: TuneMetric, zero_objective: f64) -> usize {
    let worse = |t: &Trial| fits_worse(t, zero_objective);
    let secondary = |t: &Trial| match metric {
        TuneMetric::Error => t.validation_objective,
        TuneMetric::Objective => t.validation_error.unwrap_or(0.0),
    };
    // Lower tiers first: 0 eligible, 1 worse than the zero model, 2 not finite.
    let tier = |t: &Trial| u8::from(worse(t)) + 2 * u8::from(!t.score.is_finite());
    trials
        .iter()
        .enumerate()
        .min_by(|(i, a), (j, b)| {
            tier(a)
                .cmp(&tier(b))
                .then(a.score.total_cmp(&b.score))
                .then(secondary(a).total_cmp(&secondary(b)))
                .then(i.cmp(j))
        })
        .map_or(0, |(i, _)| i)
}

/// A whole tuning.
#[derive(Debug, Clone)]
pub struct Tuned {
    /// The `[tune]` section it ran.
    pub spec: TuneSpec,
    /// Users of the tuning runs: the scenario's, or the training records left when fewer.
    pub users: usize,
    /// Training records of the tuning runs.
    pub train_records: usize,
    /// Validation records.
    pub validation_records: usize,
    /// The zero model on the validation records, for scale.
    pub zero_model: Reference,
    /// The majority class of the tuning runs' training records (classifiers): its label and
    /// its error rate on the validation records, for scale (it differs from the zero model's
    /// where the majority is not `−1`, or not the first class).
    pub majority_class: Option<(f64, f64)>,
    /// The non-private optimum of the tuning runs' training records, on the validation records.
    pub optimum: Reference,
    /// Per kind, in the scenario's order.
    pub kinds: Vec<KindTrials>,
}

impl Tuned {
    /// What the tuning cost in privacy, printed with every tuned result: it is not accounted.
    pub fn privacy_cost(&self) -> String {
        let configs: usize = self.kinds.iter().map(|k| k.trials.len()).sum();
        if self.spec.data.is_some() {
            return format!(
                "none to the scenario's users: the tuning ran {configs} configurations ({} per \
                 kind) on the records of [tune.data] and read none of the scenario's (as long \
                 as those records are public, or about other people)",
                self.spec.configs
            );
        }
        format!(
            "not privately accounted: the tuning ran {configs} configurations ({} per kind, {} \
             repetition(s) each) on the training records and chose among them by their \
             validation records, carved from the same training data; no printed epsilon \
             includes that choice (Papernot & Steinke 2022 bound what an accounted tuning costs)",
            self.spec.configs, self.spec.repetitions
        )
    }

    /// The majority class's label and validation error where that error differs from the zero
    /// model's: what the tuning's output shows as its own reference.
    pub fn distinct_majority(&self) -> Option<(f64, f64)> {
        self.majority_class
            .filter(|&(_, error)| self.zero_model.validation_error != Some(error))
    }
}

/// A fixed model's figures on the validation records.
#[derive(Debug, Clone, Copy, Serialize)]
pub struct Reference {
    /// Its objective there.
    pub validation_objective: f64,
    /// Its error rate there (classification only).
    pub validation_error: Option<f64>,
}

impl Reference {
    fn of(evaluator: &Evaluator<'_>, z: &[f64]) -> Self {
        let e = evaluator.evaluate_model(0, 0, z);
        Self {
            validation_objective: e.test_objective.unwrap_or(f64::NAN),
            validation_error: e.test_error,
        }
    }
}

/// Runs every configuration of `loaded`'s `[tune]` section; a progress bar unless `quiet`.
pub fn tune(loaded: &LoadedScenario, quiet: bool) -> Result<Tuned, TuneError> {
    let s = loaded.scenario();
    let spec = s.tune.clone().ok_or(TuneError::NoSection)?;
    TuneSpec::check_tunable(s)?;
    // The reported runs' data (or `[tune.data]`); the validation records come out of its
    // training part, its test split is never read.
    let data = match &spec.data {
        // Its own seed: a synthetic `[tune.data]` on the scenario's seed would draw the
        // scenario's own records (or a prefix of them).
        Some(public) if *public == s.data => return Err(TuneError::PublicIsPrivate),
        Some(public) => public.load(
            loaded.base_dir(),
            derive_seed(spec.seed, Purpose::Tuning, 1),
        ),
        None => s.data.load(loaded.base_dir(), s.seed),
    }
    .map_err(SimError::from)?;
    let mut rng = node_rng(derive_seed(spec.seed, Purpose::Tuning, 0), 0);
    let (train, validation) =
        train_test(&data.train, spec.validation_fraction, &mut rng).map_err(TuneError::Split)?;
    let users = s.users.min(train.rows());
    if users < s.users {
        tracing::warn!(
            users,
            scenario_users = s.users,
            "fewer training records than users once the validation split is out: the tuning runs have one user per record"
        );
    }
    if spec.metric == TuneMetric::Error && train.label_kind == LabelKind::Real {
        return Err(TuneError::NoErrorRate);
    }
    let (train_records, validation_records) = (train.rows(), validation.rows());
    let configs = draw::configs(s, &spec)?;
    // Data, partition, graphs and reference optimum are shared by every configuration.
    let base = tuning_base(s, &spec, users);
    let runs: Vec<(Config, LoadedScenario)> = configs
        .into_iter()
        .enumerate()
        .map(|(i, config)| {
            let scenario = LoadedScenario::new(
                tuning_scenario(&base, &config),
                loaded.base_dir().into(),
                loaded.name(),
            );
            match scenario {
                Ok(scenario) => Ok((config, scenario)),
                Err(source) => Err(TuneError::Config {
                    index: i % spec.configs,
                    config,
                    source,
                }),
            }
        })
        .collect::<Result<_, _>>()?;
    let base = LoadedScenario::new(base, loaded.base_dir().into(), loaded.name())?;
    let held_out = LoadedData {
        train,
        test: Some(validation),
        truth: None,
    };
    let prepared = prepare_data(&base, held_out)?;
    let evaluator = Evaluator {
        problem: &prepared.problem,
        test: prepared.test.as_ref(),
        optimum: &prepared.optimum,
    };
    let zero_model = Reference::of(&evaluator, &vec![0.0; prepared.problem.dim()]);
    let optimum = Reference::of(&evaluator, &prepared.optimum.x);
    let majority_class = prepared.problem.majority_class().and_then(|label| {
        let validation = prepared.test.as_ref().filter(|t| t.rows() > 0)?;
        Some((label, validation.share_not_labelled(label)))
    });
    let bar = progress_bar(
        runs.len() as u64,
        quiet,
        "{pos}/{len} configurations (eta {eta})",
    );
    let scored: Vec<Result<Trial, TuneError>> = runs
        .par_iter()
        .map(|(config, scenario)| {
            let trial = simulate(scenario, &prepared, true)
                .map_err(TuneError::from)
                .and_then(|results| score(config, &results, spec.metric));
            bar.inc(1);
            trial
        })
        .collect();
    bar.finish_and_clear();
    let trials: Vec<Trial> = scored.into_iter().collect::<Result<_, _>>()?;
    let kinds = s
        .kinds()
        .into_iter()
        .map(|kind| {
            let trials: Vec<Trial> = trials
                .iter()
                .filter(|t| t.config.kind == kind)
                .cloned()
                .collect();
            let best = best_trial(&trials, spec.metric, zero_model.validation_objective);
            KindTrials { kind, trials, best }
        })
        .collect();
    Ok(Tuned {
        spec,
        users,
        train_records,
        validation_records,
        zero_model,
        majority_class,
        optimum,
        kinds,
    })
}

/// The scenario every tuning run derives from: the scenario's, on the tuning seed and users,
/// at the tuning budget.
fn tuning_base(s: &Scenario, spec: &TuneSpec, users: usize) -> Scenario {
    let mut base = s.clone();
    base.tune = None;
    base.seed = spec.seed;
    base.users = users;
    base.repetitions = spec.repetitions;
    base.sweep.epsilon = vec![spec.epsilon];
    base.privacy.epsilon = None;
    if let Some(data) = &spec.data {
        base.data = data.clone();
    }
    base
}

/// The scenario that runs `config`: `base` for `config`'s kind and horizon only, its keys over
/// the kind's `[by-kind]` table.
fn tuning_scenario(base: &Scenario, config: &Config) -> Scenario {
    let mut t = base.clone();
    t.steps = config.horizon.saturating_mul(base.users as u64);
    // Only the final model is scored.
    t.eval_every = Some(t.steps);
    t.sweep.kind = vec![config.kind];
    let table = t.by_kind.entry(config.kind).or_default();
    // The configuration's horizon is the run's `steps`, not an earlier tuning's.
    table.remove("steps");
    for (key, value) in &config.keys {
        table.insert(key.clone(), value.clone());
    }
    t
}

/// The score of a trial whose metric is `value` and validation objective `objective`: `+∞`
/// unless both are finite (a model that is not finite still has a finite error rate, its
/// predictions defaulting to a class, so its objective decides).
fn trial_score(value: f64, objective: f64) -> f64 {
    if value.is_finite() && objective.is_finite() {
        value
    } else {
        f64::INFINITY
    }
}

/// A configuration's score from its runs' final evaluations.
fn score(config: &Config, results: &[PointResult], metric: TuneMetric) -> Result<Trial, TuneError> {
    let finals: Vec<&crate::metrics::EvalPoint> = results
        .iter()
        .flat_map(|p| p.runs.iter().filter_map(|r| r.evals.last()))
        .collect();
    let mean = |values: Vec<f64>| values.iter().sum::<f64>() / values.len().max(1) as f64;
    let validation_objective = mean(
        finals
            .iter()
            .map(|e| e.test_objective.unwrap_or(f64::NAN))
            .collect(),
    );
    let errors: Option<Vec<f64>> = finals.iter().map(|e| e.test_error).collect();
    let validation_error = errors.map(mean);
    let value = match metric {
        TuneMetric::Objective => validation_objective,
        TuneMetric::Error => validation_error.ok_or(TuneError::NoErrorRate)?,
    };
    Ok(Trial {
        config: config.clone(),
        score: trial_score(value, validation_objective),
        validation_objective,
        validation_error,
        train_gap: mean(finals.iter().map(|e| e.relative_gap).collect()),
        knob: results.first().map_or(f64::NAN, |p| p.point.method.knob()),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A trial of score `score`, objective `objective`, error `error`.
    fn trial(score: f64, objective: f64, error: f64) -> Trial {
        Trial {
            config: Config {
                kind: AlgorithmName::DpSgd,
                horizon: 1,
                keys: Default::default(),
            },
            score,
            validation_objective: objective,
            validation_error: Some(error),
            train_gap: 0.0,
            knob: 1.0,
        }
    }

    #[test]
    fn a_diverging_run_is_not_chosen_for_its_error_rate() {
        // The zero model's objective is 0.69; trial 0 has the lowest error and an exploded
        // objective, trial 2 is not finite.
        let trials = [
            trial(0.20, 80.0, 0.20),
            trial(0.22, 0.50, 0.22),
            trial(f64::INFINITY, f64::NAN, 0.5),
        ];
        assert_eq!(best_trial(&trials, TuneMetric::Error, 0.69), 1);
        let kind = |trials: &[Trial]| KindTrials {
            kind: AlgorithmName::DpSgd,
            trials: trials.to_vec(),
            best: 0,
        };
        assert_eq!(kind(&trials).worse_than_zero(0.69), 1);
        // When every finite run is worse than the zero model, the best of them is still chosen.
        let worse = [trial(0.3, 5.0, 0.3), trial(0.2, 9.0, 0.2)];
        assert_eq!(best_trial(&worse, TuneMetric::Error, 0.69), 1);
        assert_eq!(kind(&worse).worse_than_zero(0.69), 2);
        // Nothing finite: the first.
        let none = [
            trial(f64::INFINITY, f64::NAN, 0.5),
            trial(f64::INFINITY, f64::NAN, 0.5),
        ];
        assert_eq!(best_trial(&none, TuneMetric::Error, 0.69), 0);
        assert_eq!(kind(&none).worse_than_zero(0.69), 0);
    }

    #[test]
    fn a_model_that_is_not_finite_scores_infinity_whatever_its_error_rate() {
        assert_eq!(trial_score(0.25, f64::NAN), f64::INFINITY);
        assert_eq!(trial_score(0.25, f64::INFINITY), f64::INFINITY);
        assert_eq!(trial_score(f64::NAN, 0.5), f64::INFINITY);
        assert_eq!(trial_score(0.25, 0.5), 0.25);
    }

    #[test]
    fn ties_go_to_the_secondary_key_then_the_draw_order() {
        let by_error = [
            trial(0.2, 0.6, 0.2),
            trial(0.2, 0.4, 0.2),
            trial(0.2, 0.4, 0.2),
        ];
        assert_eq!(best_trial(&by_error, TuneMetric::Error, 0.69), 1);
        let by_objective = [trial(0.4, 0.4, 0.3), trial(0.4, 0.4, 0.1)];
        assert_eq!(best_trial(&by_objective, TuneMetric::Objective, 0.69), 1);
    }
}
