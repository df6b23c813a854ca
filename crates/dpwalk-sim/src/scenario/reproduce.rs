//! The `[reproduce]` table of a scenario: one reproduction panel (plot 7 of seed-baselines spec
//! §6.4), a paper's headline figure re-run under that paper's own accounting
//! ([`crate::reproduce`] runs it, `output` draws it).
//!
//! A scenario with a `[reproduce]` table is one panel:
//!
//! ```toml
//! [reproduce]
//! paper = "rk"                      # rk (Ryu & Kim) | hg (Huang & Gong) | cbb (Cyffers, Bellet & Basu)
//! figure = "Ryu & Kim, Fig. 2a"     # the figure re-run, for the title
//! epsilon = [0.05, 0.1, 1.0]        # the paper's own ε (rk: per iteration; hg: total at [privacy] delta)
//! inner-steps = [1, 5, 10]          # hg only: l; with several, x is l at the one ε given
//! metric = "test-error"             # test-error | train-objective | test-objective
//! rho-per-epsilon = true            # rk only: ρ's constant part is rho / ε̄, the paper's (21)
//! note = "the paper: T = 2·10⁴"     # appended to the caption
//! ```

use super::{BudgetView, Scenario, ScenarioError};
use crate::algorithm::{AlgorithmName, Mode};
use dpwalk_core::spec::SpecError;
use serde::{Deserialize, Serialize};

/// Whose figure a panel re-runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Paper {
    /// Ryu & Kim, DP-IADMM (`dp-iadmm`): ε̄ per iteration.
    Rk,
    /// Huang & Gong, IPADMM (`ipadmm`): total ε at δ through Theorem 6.
    Hg,
    /// Cyffers, Bellet & Basu, dpwalk's own (`admm`, federated or centralized): central ε.
    Cbb,
}

impl Paper {
    /// The one kind whose figure the paper's panel re-runs.
    fn kind(self) -> AlgorithmName {
        match self {
            Paper::Rk => AlgorithmName::DpIadmm,
            Paper::Hg => AlgorithmName::Ipadmm,
            Paper::Cbb => AlgorithmName::Admm,
        }
    }
}

/// What the panel's y axis shows (the paper's metric), from the final evaluation.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Metric {
    /// Misclassified share of the test set.
    TestError,
    /// `F(z)`, the training objective ("empirical risk").
    TrainObjective,
    /// Test loss `+ r(z)`.
    TestObjective,
}

impl Metric {
    /// The y axis's label.
    pub(crate) fn axis(self) -> &'static str {
        match self {
            Metric::TestError => "test error (misclassified share of the test set)",
            Metric::TrainObjective => "empirical risk F(z) (training objective)",
            Metric::TestObjective => "test objective (test loss + r(z))",
        }
    }
}

/// The `[reproduce]` table (module docs).
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub struct ReproduceSpec {
    /// Whose figure.
    pub paper: Paper,
    /// The figure re-run, for the title (e.g. `"Ryu & Kim, Fig. 2a"`).
    pub figure: String,
    /// The paper's own ε per point (`rk`, `hg`); empty for `cbb`, whose ε are `[sweep] epsilon`.
    #[serde(default)]
    pub epsilon: Vec<f64>,
    /// `hg`: the inner steps `l` to run (default: `[algorithm] inner-steps`).
    #[serde(default)]
    pub inner_steps: Vec<usize>,
    /// The y axis.
    pub metric: Metric,
    /// `rk`: ρ's constant part is `[algorithm] rho / ε̄` at each point, the paper's (21).
    #[serde(default)]
    pub rho_per_epsilon: bool,
    /// Appended to the caption (what the re-run does differently from the paper).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub note: String,
}

impl ReproduceSpec {
    /// Whether the x axis is `l` (several inner-step counts at one ε) rather than the paper's ε.
    pub(crate) fn x_is_inner_steps(&self) -> bool {
        self.inner_steps.len() > 1
    }
}

/// Checks the `[reproduce]` table against the rest of the scenario (every refusal names its key).
pub(crate) fn check(s: &Scenario) -> Result<(), ScenarioError> {
    let Some(r) = &s.reproduce else {
        return Ok(());
    };
    let at = |key: &str, message: String| -> Result<(), ScenarioError> {
        Err(SpecError::new(&["reproduce", key], message).into())
    };
    let kind = r.paper.kind();
    if let Some(other) = s.kinds().into_iter().find(|&k| k != kind) {
        return at(
            "paper",
            format!(
                "the panel re-runs kind = \"{}\" only, not \"{}\"",
                kind.as_str(),
                other.as_str()
            ),
        );
    }
    let budget = s.privacy.epsilon.is_some() || !s.sweep.epsilon.is_empty();
    if r.paper != Paper::Hg && !r.inner_steps.is_empty() {
        return at("inner-steps", "is for paper = \"hg\" only".into());
    }
    if r.paper != Paper::Rk && r.rho_per_epsilon {
        return at("rho-per-epsilon", "is for paper = \"rk\" only".into());
    }
    if r.inner_steps.contains(&0) {
        return at("inner-steps", "every l must be >= 1".into());
    }
    match r.paper {
        Paper::Cbb => {
            if !r.epsilon.is_empty() {
                return at(
                    "epsilon",
                    "paper = \"cbb\" takes its ε from [sweep] epsilon (central-view budgets that dpwalk's accountant calibrates)".into(),
                );
            }
            if !budget
                || s.algorithm.mode == Mode::Decentralized
                || s.privacy.view != Some(BudgetView::Central)
            {
                return at(
                    "paper",
                    "paper = \"cbb\" needs mode = \"federated\" or \"centralized\", [privacy] view = \"central\" and budgets in [sweep] epsilon".into(),
                );
            }
        }
        Paper::Rk | Paper::Hg => {
            if budget {
                return at(
                    "epsilon",
                    "the paper's ε sets the noise: remove [privacy] epsilon and [sweep] epsilon (they calibrate to the common total)".into(),
                );
            }
            if r.epsilon.is_empty() {
                return at("epsilon", "give the paper's ε of each point".into());
            }
            if let Some(bad) = r.epsilon.iter().find(|e| !(**e > 0.0 && e.is_finite())) {
                return at("epsilon", format!("must be > 0 and finite, got {bad}"));
            }
            if r.x_is_inner_steps() && r.epsilon.len() != 1 {
                return at(
                    "epsilon",
                    "with several inner-steps the x axis is l: give one ε".into(),
                );
            }
        }
    }
    Ok(())
}
