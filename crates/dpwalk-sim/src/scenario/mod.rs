//! Scenario files (`sim/*.toml`): parsing, `--set` overrides, validation into runnable points.
//!
//! A scenario is read in two passes so that errors stay useful: the file's own text is
//! deserialized first (an unknown or mistyped key is reported with its file and line by `toml`),
//! then the `--set key=value` overrides are applied to the parsed table and it is deserialized
//! again (an error then names the override). Every section uses `deny_unknown_fields`.
//!
//! ```toml
//! name = "quickstart"
//! seed = 7
//! users = 1000
//! steps = 200000          # updates of w: token hops (decentralized) or rounds (federated, centralized);
//!                         # the baselines' rounds make `users` updates each (H = steps / users)
//! eval-every = 10000
//! repetitions = 1
//!
//! [data]                  # dpwalk_core::data::DataSpec
//! source = "synthetic-lasso"
//!
//! [partition]             # dpwalk_core::data::PartitionSpec
//! kind = "iid"
//!
//! [problem]
//! loss = "squared"        # squared | logistic | multinomial
//! l1 = 0.001
//! l2 = 0.0
//!
//! [topology]              # dpwalk_core::topology::TopologySpec
//! kind = "complete"
//!
//! [algorithm]
//! kind = "admm"           # admm | dp-sgd | fed-sgd | dp-iadmm | ipadmm | pp-admm (see `method`)
//! mode = "decentralized"  # decentralized | federated | centralized (admm and dp-sgd only)
//! gamma = 1.0
//! lambda = 0.5
//! sigma = 0.0
//! clip = 1.0              # omit for no clipping (then no privacy guarantee)
//! lr = 0.1                # dp-sgd only
//! blocks-per-round = 10   # federated only (m)
//! # the baselines' keys (module `method`): variant, rho, rho-c1, rho-period, eta, eta-power,
//! # radius, radius-power, trust-norm, clip-l1, laplace-scale (dp-iadmm); inner-steps, rho, eta,
//! # eta-schedule (ipadmm); theta, growth, eta-max, nu, kappa (pp-admm)
//!
//! [sweep]                 # optional: the cartesian product of these lists
//! kind = ["admm", "dp-sgd"]
//! sigma = [0.5, 1.0, 2.0]
//!
//! [by-kind.dp-sgd]        # optional: `[algorithm]` keys of one kind of the sweep only
//! lr = 0.05
//! steps = 400000          # its own horizon (same meaning as the top-level `steps`)
//!
//! # [reproduce]           # optional: a reproduction panel, see `crate::reproduce`
//! # [tune]                # optional: what `dpwalk tune` searches, see `crate::tune`
//! ```
//!
//! The horizon is a property of each point ([`Point::steps`], from [`Scenario::steps_for`]): a
//! comparison tunes every algorithm's horizon like its other hyper-parameters (seed-baselines
//! spec §6.1 item 7), and a budget point's noise is calibrated for its own planned horizon.
//! `eval-every` stays an absolute step interval (its default: the top-level `steps` / 50), so
//! kinds with different horizons are evaluated at the same steps.

use crate::algorithm::{AlgorithmName, AlgorithmSpec, Mode};
use crate::method::Method;
use dpwalk_core::data::{DataSpec, PartitionSpec};
use dpwalk_core::spec::{ProblemSpec, SpecError};
use dpwalk_core::topology::{TopologyKind, TopologySpec};
use serde::{Deserialize, Serialize};
use std::path::PathBuf;
use thiserror::Error;

/// Errors of reading and checking a scenario.
#[derive(Debug, Error)]
pub enum ScenarioError {
    /// The file could not be read.
    #[error("cannot read scenario {path}")]
    Read {
        /// The scenario file.
        path: PathBuf,
        /// The I/O error.
        source: std::io::Error,
    },
    /// The file is not a valid scenario (the message names the key and the line).
    #[error("invalid scenario {path}: {message}")]
    Parse {
        /// The scenario file.
        path: PathBuf,
        /// `toml`'s message, with the line and the offending key.
        message: String,
    },
    /// A `--set` override is malformed or produces an invalid scenario.
    #[error("invalid override --set {set}: {message}")]
    Override {
        /// The override as given.
        set: String,
        /// What is wrong.
        message: String,
    },
    /// A key is missing, out of range, or does not fit the rest of the scenario (the shared
    /// checks of `dpwalk_core::spec`, and the scenario's own).
    #[error(transparent)]
    Spec(#[from] SpecError),
    /// Any other impossible combination.
    #[error("{0}")]
    Invalid(String),
}

/// The optional `[sweep]` section: lists whose cartesian product gives the sweep points.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub struct SweepSpec {
    /// Algorithms.
    #[serde(default)]
    pub kind: Vec<AlgorithmName>,
    /// Noise levels σ.
    #[serde(default)]
    pub sigma: Vec<f64>,
    /// Prox steps γ.
    #[serde(default)]
    pub gamma: Vec<f64>,
    /// Clip bounds C.
    #[serde(default)]
    pub clip: Vec<f64>,
    /// Relaxations λ.
    #[serde(default)]
    pub lambda: Vec<f64>,
    /// DP-SGD step sizes.
    #[serde(default)]
    pub lr: Vec<f64>,
    /// Privacy budgets ε (σ is then calibrated per point; see `[privacy]`).
    #[serde(default)]
    pub epsilon: Vec<f64>,
    /// Topologies (`[[sweep.topology]]` tables, each like `[topology]`); replaces `[topology]`.
    #[serde(default)]
    pub topology: Vec<TopologySpec>,
}

/// Which view a budget constrains.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum BudgetView {
    /// An eavesdropper on every token.
    Local,
    /// The worst other user on the walk (decentralized mode).
    Network,
    /// Whoever sees only the final model (federated and centralized modes).
    Central,
}

/// RDP → (ε, δ) statements of scenario files.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ConversionName {
    /// Balle et al. 2020 / Canonne, Kamath & Steinke 2020.
    #[default]
    Tight,
    /// `ε(α) + ln(1/δ)/(α − 1)`.
    Classic,
}

/// The `[privacy]` section: how privacy is reported, and an optional budget.
///
/// With `epsilon` (or `[sweep] epsilon`), σ is not given but calibrated: the smallest σ such that
/// a user with `ceil(steps / users)` contributions (decentralized) or every round (centralized,
/// federated) meets `(epsilon, delta)` in `view`. With `enforce` (the default), a user whose next
/// contribution would exceed the budget skips it and only forwards the token, as a daemon does.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub struct PrivacySpec {
    /// δ of every (ε, δ) figure.
    #[serde(default = "default_delta")]
    pub delta: f64,
    /// Conversion statement.
    #[serde(default)]
    pub conversion: ConversionName,
    /// Budget ε (calibrates σ).
    #[serde(default)]
    pub epsilon: Option<f64>,
    /// The view the budget constrains (default: local for the walk and the baselines, central
    /// for dpwalk's federated and centralized modes).
    #[serde(default)]
    pub view: Option<BudgetView>,
    /// `[privacy.view-by-kind]`: the view of some kinds of a sweep, in place of `view` (a
    /// comparison puts each algorithm's budget on the view it proves best: the DP-SGD walk on
    /// the network view, federated DP-SGD on the central one, the ADMM walk on the local one).
    #[serde(default, skip_serializing_if = "std::collections::BTreeMap::is_empty")]
    pub view_by_kind: std::collections::BTreeMap<crate::algorithm::AlgorithmName, BudgetView>,
    /// Users skip contributions that would exceed the budget.
    #[serde(default = "default_true")]
    pub enforce: bool,
    /// The privacy unit: `user` (all of a user's records, the default) or `record` (one record;
    /// for admm, dp-sgd and fed-sgd the logistic and multinomial losses only, see
    /// `crate::record_level`).
    #[serde(default)]
    pub unit: UnitName,
}

/// What two neighbouring datasets differ in (shared with the run file's `[privacy]`).
pub use dpwalk_core::spec::UnitName;

impl Default for PrivacySpec {
    fn default() -> Self {
        Self {
            delta: default_delta(),
            conversion: ConversionName::Tight,
            epsilon: None,
            view: None,
            view_by_kind: std::collections::BTreeMap::new(),
            enforce: true,
            unit: UnitName::User,
        }
    }
}

fn default_delta() -> f64 {
    dpwalk_core::spec::DEFAULT_DELTA
}
fn default_true() -> bool {
    true
}

/// The `[output]` section.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub struct OutputSpec {
    /// Rényi orders at which per-contribution privacy is reported.
    #[serde(default = "default_orders")]
    pub orders: Vec<f64>,
}

impl Default for OutputSpec {
    fn default() -> Self {
        Self {
            orders: default_orders(),
        }
    }
}

fn default_orders() -> Vec<f64> {
    vec![1.5, 2.0, 4.0, 8.0, 16.0, 32.0, 64.0]
}

/// A whole scenario file.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub struct Scenario {
    /// Name used for the default output directory; defaults to the file stem.
    #[serde(default)]
    pub name: Option<String>,
    /// Run seed (data, partition, topology, walk and noise all derive from it).
    #[serde(default = "default_seed")]
    pub seed: u64,
    /// Number of users `n`.
    pub users: usize,
    /// Updates of `w`: hops (decentralized) or rounds (federated, centralized); every kind's
    /// horizon unless its `[by-kind.<kind>] steps` gives its own.
    pub steps: u64,
    /// Evaluate every this many steps (default: 50 evaluations per run).
    #[serde(default)]
    pub eval_every: Option<u64>,
    /// Repetitions per sweep point (run seeds `seed`, `seed + 1`, …).
    #[serde(default = "default_reps")]
    pub repetitions: usize,
    /// The data source.
    pub data: DataSpec,
    /// How records are spread among users.
    #[serde(default)]
    pub partition: PartitionSpec,
    /// Loss and regularizer (`dpwalk_core::spec::ProblemSpec`; the classes of a multinomial
    /// loss are the data's).
    pub problem: ProblemSpec,
    /// The communication graph.
    #[serde(default = "default_topology")]
    pub topology: TopologySpec,
    /// The algorithm and its parameters (every key has a default).
    #[serde(default)]
    pub algorithm: AlgorithmSpec,
    /// Optional sweep.
    #[serde(default)]
    pub sweep: SweepSpec,
    /// Privacy reporting and budget.
    #[serde(default)]
    pub privacy: PrivacySpec,
    /// Reporting options.
    #[serde(default)]
    pub output: OutputSpec,
    /// `[by-kind.<kind>]`: `[algorithm]` keys for one kind of a sweep only (each algorithm of
    /// a comparison has its own tuned step size, clip, …), applied over `[algorithm]`; and
    /// `steps`, the kind's own horizon ([`Scenario::steps_for`]).
    #[serde(default, skip_serializing_if = "std::collections::BTreeMap::is_empty")]
    pub by_kind: std::collections::BTreeMap<AlgorithmName, toml::Table>,
    /// `[reproduce]`: the scenario is a reproduction panel (`crate::reproduce`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reproduce: Option<ReproduceSpec>,
    /// `[tune]`: what `dpwalk tune` searches (`crate::tune`); `dpwalk sim` ignores it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tune: Option<TuneSpec>,
}

/// The key of `[by-kind.<kind>]` that is the kind's horizon, not an `[algorithm]` key.
const STEPS_KEY: &str = "steps";

/// Rounds of `users` updates each in `steps` user updates (the one place this is computed).
pub(crate) fn rounds(steps: u64, users: usize) -> u64 {
    steps / users.max(1) as u64
}

fn default_seed() -> u64 {
    1
}
fn default_reps() -> usize {
    1
}
fn default_topology() -> TopologySpec {
    TopologySpec::new(TopologyKind::Complete)
}

mod check;
mod loaded;
mod parse;
mod reproduce;
mod sweep;
mod tune;

pub use loaded::LoadedScenario;
pub use parse::{from_text, load, parse};
pub use reproduce::{Metric, Paper, ReproduceSpec};
pub use sweep::{PendingPoint, Point};
pub use tune::{TuneMetric, TuneSpec};

impl Scenario {
    /// The algorithms of the scenario: the sweep's list, else `[algorithm] kind`.
    pub fn kinds(&self) -> Vec<AlgorithmName> {
        if self.sweep.kind.is_empty() {
            vec![self.algorithm.kind]
        } else {
            self.sweep.kind.clone()
        }
    }

    /// The `[algorithm]` section as `kind` sees it: with its `[by-kind.<kind>]` keys applied.
    ///
    /// # Errors
    /// An unknown or mistyped key of the table, named with its table.
    pub fn algorithm_for(&self, kind: AlgorithmName) -> Result<AlgorithmSpec, ScenarioError> {
        let Some(extra) = self.by_kind.get(&kind) else {
            return Ok(self.algorithm.clone());
        };
        let bad = |message: String| {
            ScenarioError::from(SpecError::new(&["by-kind", kind.as_str()], message))
        };
        let mut table = toml::Table::try_from(&self.algorithm).map_err(|e| bad(e.to_string()))?;
        for (k, v) in extra {
            if k == "kind" {
                return Err(bad("`kind` is the table's name, not a key".into()));
            }
            // The kind's horizon is the point's, not an `[algorithm]` key (`steps_for`).
            if k == STEPS_KEY {
                continue;
            }
            table.insert(k.clone(), v.clone());
        }
        AlgorithmSpec::deserialize(table).map_err(|e| bad(e.to_string()))
    }

    /// The horizon of `kind`'s points in user updates (walk hops, or `users` per synchronous
    /// round): its `[by-kind.<kind>] steps`, else the scenario's `steps`.
    ///
    /// # Errors
    /// A value that is not an integer >= 1, named `by-kind.<kind>.steps`.
    pub fn steps_for(&self, kind: AlgorithmName) -> Result<u64, ScenarioError> {
        let Some(value) = self.by_kind.get(&kind).and_then(|t| t.get(STEPS_KEY)) else {
            return Ok(self.steps);
        };
        match value.as_integer().and_then(|v| u64::try_from(v).ok()) {
            Some(steps) if steps >= 1 => Ok(steps),
            _ => Err(SpecError::new(
                &["by-kind", kind.as_str(), STEPS_KEY],
                format!(
                    "must be an integer >= 1 (user updates, as the top-level steps), got {value}"
                ),
            )
            .into()),
        }
    }

    /// Rounds of a synchronous method run for `steps` user updates (a point's
    /// [`Point::steps`]): a round makes one update per user, so a kind's horizon `H` is the
    /// same whether it walks or runs rounds.
    pub fn rounds(&self, steps: u64) -> u64 {
        rounds(steps, self.users)
    }

    /// Updates per user after `step` steps of `method` (metrics.csv's `round`, the x axis of the
    /// plots against rounds): a walk's hop and a baseline's step update one user (`step / n`),
    /// a step of dpwalk's centralized mode updates every user (`step`), of its federated mode
    /// `blocks-per-round` of them (`step · m / n`).
    pub fn rounds_at(&self, method: &Method, step: u64) -> f64 {
        let n = self.users.max(1) as f64;
        let users_per_step = match (method.walk(), self.algorithm.mode) {
            (Some(_), Mode::Centralized) => n,
            (Some(_), Mode::Federated) => {
                self.algorithm.blocks_per_round.unwrap_or(self.users) as f64
            }
            _ => 1.0,
        };
        step as f64 * users_per_step / n
    }

    /// The share of users a round of dpwalk's federated mode updates (`blocks-per-round` / n; 1
    /// when every user takes part): the sampling rate its central view is accounted with.
    pub fn sampling_rate(&self) -> f64 {
        self.algorithm.blocks_per_round.unwrap_or(self.users) as f64 / self.users.max(1) as f64
    }

    /// Evaluation interval in steps of a point run for `steps`: `eval-every` (default: the
    /// scenario's `steps` / 50, the same for every kind so that their evaluations line up), at
    /// most `steps`.
    pub fn eval_interval(&self, steps: u64) -> u64 {
        self.eval_every
            .unwrap_or((self.steps / 50).max(1))
            .min(steps)
    }

    /// The view given for `kind`'s budget: its `[privacy.view-by-kind]` entry, else
    /// `[privacy] view` (`None`: the default of [`Scenario::budget_view`]).
    pub fn view_given(&self, kind: AlgorithmName) -> Option<BudgetView> {
        self.privacy
            .view_by_kind
            .get(&kind)
            .copied()
            .or(self.privacy.view)
    }

    /// The view a budget on `method` constrains. The seed baselines prove the local view only;
    /// federated DP-SGD the local view, or the central one when given (its users keep no state:
    /// `crate::privacy`); dpwalk's own kinds the view given, else local for the walk and central
    /// for the federated and centralized modes. Which views a kind may be given is checked with
    /// the scenario ([`Scenario::check`]); the network view is refused where no figure is
    /// offered when the point is resolved.
    pub fn budget_view(&self, method: &Method) -> BudgetView {
        let given = self.view_given(method.kind());
        if matches!(method, Method::FedSgd(_)) {
            return given.unwrap_or(BudgetView::Local);
        }
        if method.walk().is_none() {
            return BudgetView::Local;
        }
        given.unwrap_or(match self.algorithm.mode {
            Mode::Decentralized => BudgetView::Local,
            Mode::Federated | Mode::Centralized => BudgetView::Central,
        })
    }

    /// The topologies of the scenario: the sweep's list, else `[topology]`.
    pub fn topologies(&self) -> Vec<TopologySpec> {
        if self.sweep.topology.is_empty() {
            vec![self.topology.clone()]
        } else {
            self.sweep.topology.clone()
        }
    }
}

#[cfg(test)]
mod tests;
