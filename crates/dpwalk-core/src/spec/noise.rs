//! The noise source of a run: σ given, or a budget `(ε, δ)` that σ is calibrated to.

use super::SpecError;
use serde::{Deserialize, Serialize};

/// The δ every part of dpwalk uses when none is given: the CLI's `--delta`, a scenario's
/// `[privacy]`, the `[budget]` of a run file and of a `node.toml`, and the figures a node reports
/// without a budget. `1e-6` is below `1/n` for every swarm of up to a million users.
pub const DEFAULT_DELTA: f64 = 1e-6;

fn default_delta() -> f64 {
    DEFAULT_DELTA
}

/// A budget as written (the run file's `[budget]` table): unchecked until [`BudgetSpec::check`].
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub struct BudgetSpec {
    /// Target ε.
    pub epsilon: f64,
    /// Target δ ([`DEFAULT_DELTA`] when omitted; serializing always names it, so omitting it and
    /// writing the default are the same run).
    #[serde(default = "default_delta")]
    pub delta: f64,
    /// The view the budget is on: `local` (the default: an eavesdropper on every token) or
    /// `network` (every other member, path hidden: the DP-SGD walk on the complete graph only).
    /// Left out of the written form when local, so that runs without it keep their hash.
    #[serde(default, skip_serializing_if = "BudgetViewName::is_local")]
    pub view: BudgetViewName,
}

/// The view a run file's budget is on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum BudgetViewName {
    /// An eavesdropper on every token (bounds every member).
    #[default]
    Local,
    /// Every other member, who sees the token at its visits and the final model, the path
    /// hidden from it (`dpwalk_privacy::network::mixture`).
    Network,
}

impl BudgetViewName {
    /// Whether this is the local view.
    pub fn is_local(&self) -> bool {
        *self == BudgetViewName::Local
    }

    /// The name as written.
    pub fn name(&self) -> &'static str {
        match self {
            BudgetViewName::Local => "local",
            BudgetViewName::Network => "network",
        }
    }
}

impl BudgetSpec {
    /// The budget as a noise source, ε and δ checked; errors name `<table>.epsilon`/`.delta`.
    pub fn check(&self, table: &str) -> Result<Noise, SpecError> {
        Ok(Noise::Budget {
            epsilon: check_epsilon(&[table, "epsilon"], self.epsilon)?,
            delta: check_delta(&[table, "delta"], self.delta)?,
        })
    }
}

/// How σ is set, checked.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Noise {
    /// Given: `>= 0` and finite.
    Sigma(f64),
    /// To be calibrated (by `dpwalk_privacy::calibrate`) to this budget.
    Budget {
        /// ε > 0, finite.
        epsilon: f64,
        /// δ ∈ (0, 1).
        delta: f64,
    },
}

impl Noise {
    /// Exactly one of σ (at `sigma_key`) and a budget (the table `budget_table`), checked.
    pub fn check(
        sigma: Option<f64>,
        sigma_key: &[&str],
        budget: Option<&BudgetSpec>,
        budget_table: &str,
    ) -> Result<Noise, SpecError> {
        match (sigma, budget) {
            (Some(sigma), None) if sigma >= 0.0 && sigma.is_finite() => Ok(Noise::Sigma(sigma)),
            (Some(sigma), None) => Err(SpecError::new(
                sigma_key,
                format!("sigma must be >= 0 and finite, got {sigma}"),
            )),
            (None, Some(budget)) => budget.check(budget_table),
            (Some(_), Some(_)) => Err(SpecError::new(
                sigma_key,
                format!("give either sigma or a [{budget_table}], not both"),
            )),
            (None, None) => Err(SpecError::new(
                &sigma_key[..sigma_key.len().saturating_sub(1)],
                format!("needs sigma, or a [{budget_table}] to calibrate it"),
            )),
        }
    }
}

/// ε of a budget: `> 0` and finite.
pub fn check_epsilon(key: &[&str], epsilon: f64) -> Result<f64, SpecError> {
    if epsilon > 0.0 && epsilon.is_finite() {
        Ok(epsilon)
    } else {
        Err(SpecError::new(
            key,
            format!("must be > 0 and finite, got {epsilon}"),
        ))
    }
}

/// δ of a budget or of a reported figure: in `(0, 1)`.
pub fn check_delta(key: &[&str], delta: f64) -> Result<f64, SpecError> {
    if delta > 0.0 && delta < 1.0 {
        Ok(delta)
    } else {
        Err(SpecError::new(
            key,
            format!("must be in (0, 1), got {delta}"),
        ))
    }
}
