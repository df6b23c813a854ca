//! The optional `[tune]` section: what `dpwalk tune` searches (the seed-baselines spec's §6.1
//! item 7, equal tuning effort) and how. `dpwalk sim` ignores it.
//!
//! ```toml
//! [tune]
//! configs = 24                     # configurations drawn per kind: the same for every kind
//! epsilon = 1.0                    # the total budget at which they are compared
//! seed = 9000                      # seed of the tuning runs, the split and the draw
//! validation-fraction = 0.2        # of the training records, held out to score
//! horizon = [30, 100, 300, 1000]   # updates per user H, tuned with the rest
//!
//! [tune.grid.admm]                 # per kind: a list of values per [algorithm] key
//! gamma = [1.0, 4.0, 16.0]
//! clip = [0.01, 0.03, 0.1]
//!
//! [tune.data]                      # optional: tune on public or synthetic records instead
//! source = "synthetic-logistic"    # (the [data] format); the scenario's are then never read
//! ```

use super::{Scenario, ScenarioError};
use crate::algorithm::AlgorithmName;
use dpwalk_core::data::DataSpec;
use dpwalk_core::spec::{SpecError, check_epsilon};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// The `[tune]` section.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub struct TuneSpec {
    /// Configurations drawn per kind (the same number for every kind).
    #[serde(default = "default_configs")]
    pub configs: usize,
    /// The total budget ε at which configurations are compared (at the scenario's δ and view).
    #[serde(default = "default_epsilon")]
    pub epsilon: f64,
    /// Seed of the tuning runs, of the validation split and of the draw of configurations;
    /// the reported runs use the scenario's `seed`, `seed + 1`, …, so keep it apart from them.
    #[serde(default = "default_seed")]
    pub seed: u64,
    /// Repetitions per configuration (the score is their mean).
    #[serde(default = "default_repetitions")]
    pub repetitions: usize,
    /// Fraction of the training records held out as the validation set.
    #[serde(default = "default_validation_fraction")]
    pub validation_fraction: f64,
    /// What a configuration is scored by on the validation set (lower is better).
    #[serde(default)]
    pub metric: TuneMetric,
    /// Horizons H (updates per user) to draw from; empty: the scenario's `steps / users`.
    #[serde(default)]
    pub horizon: Vec<u64>,
    /// Per kind, the values of each `[algorithm]` key to draw from.
    #[serde(default)]
    pub grid: BTreeMap<AlgorithmName, BTreeMap<String, Vec<toml::Value>>>,
    /// `[tune.data]`: tune on these records (public data of the same task, or synthetic data)
    /// instead of the scenario's training records, which the tuning then never reads: its choice
    /// costs the scenario's users nothing. Same format as `[data]`; absent: the scenario's data.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub data: Option<DataSpec>,
}

/// What a configuration is scored by.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum TuneMetric {
    /// The objective F (mean loss and regularizer) of the final model on the validation records.
    #[default]
    Objective,
    /// The final model's error rate on the validation records (classification only).
    Error,
}

fn default_configs() -> usize {
    24
}
fn default_epsilon() -> f64 {
    1.0
}
fn default_seed() -> u64 {
    9000
}
fn default_repetitions() -> usize {
    1
}
fn default_validation_fraction() -> f64 {
    0.2
}

impl TuneSpec {
    /// Checks the section's own ranges (every scenario that has one: a bad section is refused
    /// even by `dpwalk sim`, which does not use it).
    pub fn check(&self) -> Result<(), ScenarioError> {
        let at = |key: &[&str], message: String| Err(SpecError::new(key, message).into());
        if self.configs == 0 {
            return at(&["tune", "configs"], "must be >= 1".into());
        }
        if self.repetitions == 0 {
            return at(&["tune", "repetitions"], "must be >= 1".into());
        }
        check_epsilon(&["tune", "epsilon"], self.epsilon)?;
        let f = self.validation_fraction;
        if !(f > 0.0 && f < 1.0) {
            return at(
                &["tune", "validation-fraction"],
                format!("must be in (0, 1), got {f}"),
            );
        }
        if self.horizon.contains(&0) {
            return at(&["tune", "horizon"], "every horizon must be >= 1".into());
        }
        for (kind, keys) in &self.grid {
            for (key, values) in keys {
                if key == "kind" || key == "steps" {
                    return at(
                        &["tune", "grid", kind.as_str(), key],
                        "is not a tunable key (the horizon is `[tune] horizon`)".into(),
                    );
                }
                if values.is_empty() {
                    return at(
                        &["tune", "grid", kind.as_str(), key],
                        "needs at least one value".into(),
                    );
                }
            }
        }
        Ok(())
    }

    /// Checks that `scenario` (overrides applied) can be tuned: no `[sweep]` list the tuning
    /// would multiply, not a reproduction panel. (A grid of a kind the scenario does not run is
    /// not used.)
    pub fn check_tunable(scenario: &Scenario) -> Result<(), ScenarioError> {
        let at = |key: &[&str], message: String| Err(SpecError::new(key, message).into());
        let s = &scenario.sweep;
        let multiplied = [
            ("sigma", s.sigma.is_empty()),
            ("gamma", s.gamma.is_empty()),
            ("clip", s.clip.is_empty()),
            ("lambda", s.lambda.is_empty()),
            ("lr", s.lr.is_empty()),
        ];
        if let Some((key, _)) = multiplied.iter().find(|(_, empty)| !empty) {
            return at(
                &["sweep", key],
                "`dpwalk tune` runs a sweep of kind, epsilon and topology only: tune this key in [tune.grid.<kind>]".into(),
            );
        }
        if scenario.reproduce.is_some() {
            return at(
                &["tune"],
                "a reproduction panel runs each paper's own parameters: it is not tuned".into(),
            );
        }
        Ok(())
    }
}
