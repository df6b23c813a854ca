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
//! steps = 200000          # updates of w: token hops (decentralized) or rounds (federated, centralized)
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
//! ```

use crate::algorithm::{AlgorithmName, AlgorithmSpec, Mode};
use crate::method::{Family, Knobs, Method};
use dpwalk_core::data::{DataSpec, PartitionSpec};
use dpwalk_core::spec::ProblemSpec;
use dpwalk_core::spec::{SpecError, check_delta, check_epsilon};
use dpwalk_core::topology::{TopologyKind, TopologySpec};
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};
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
    /// The view the budget constrains (default: network for the walk, central otherwise).
    #[serde(default)]
    pub view: Option<BudgetView>,
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
    /// Updates of `w`: hops (decentralized) or rounds (federated, centralized).
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
    /// a comparison has its own tuned step size, clip, …), applied over `[algorithm]`.
    #[serde(default, skip_serializing_if = "std::collections::BTreeMap::is_empty")]
    pub by_kind: std::collections::BTreeMap<AlgorithmName, toml::Table>,
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

/// A scenario read and checked, with the directory its relative paths start from: the only form
/// in which the drivers (`sim`, `audit`, `swarm`) take a scenario, so none runs an unchecked one.
#[derive(Debug, Clone)]
pub struct LoadedScenario {
    scenario: Scenario,
    base_dir: PathBuf,
    name: String,
    points: Vec<Point>,
}

impl LoadedScenario {
    /// Checks `scenario` ([`Scenario::check`]: every key and every sweep point).
    pub fn new(
        scenario: Scenario,
        base_dir: PathBuf,
        name: impl Into<String>,
    ) -> Result<Self, ScenarioError> {
        let points = scenario.check()?;
        Ok(Self {
            scenario,
            base_dir,
            name: name.into(),
            points,
        })
    }
    /// The parsed scenario, overrides applied.
    pub fn scenario(&self) -> &Scenario {
        &self.scenario
    }
    /// The scenario file's directory.
    pub fn base_dir(&self) -> &Path {
        &self.base_dir
    }
    /// The scenario's name (its `name`, else the file stem).
    pub fn name(&self) -> &str {
        &self.name
    }
    /// The validated sweep points (one when there is no sweep).
    pub fn points(&self) -> &[Point] {
        &self.points
    }
}

/// Reads `path`, applies `sets` (`key.path=value`, value in TOML syntax or a bare string), and
/// checks the result.
pub fn load(path: &Path, sets: &[String]) -> Result<LoadedScenario, ScenarioError> {
    let text = std::fs::read_to_string(path).map_err(|source| ScenarioError::Read {
        path: path.to_path_buf(),
        source,
    })?;
    let scenario = parse(&text, path, sets)?;
    let base_dir = path.parent().map(Path::to_path_buf).unwrap_or_default();
    let stem = path.file_stem().map(|s| s.to_string_lossy().into_owned());
    let name = scenario
        .name
        .clone()
        .or(stem)
        .unwrap_or_else(|| "scenario".into());
    LoadedScenario::new(scenario, base_dir, name)
}

/// Parses scenario text (see [`load`]); `path` only names the origin in errors.
pub fn parse(text: &str, path: &Path, sets: &[String]) -> Result<Scenario, ScenarioError> {
    let parse_err = |e: toml::de::Error| ScenarioError::Parse {
        path: path.to_path_buf(),
        message: describe(text, &e),
    };
    let scenario: Scenario = toml::from_str(text).map_err(parse_err)?;
    if sets.is_empty() {
        return Ok(scenario);
    }
    let mut table: toml::Table = toml::from_str(text).map_err(parse_err)?;
    for set in sets {
        apply_override(&mut table, set)?;
    }
    Scenario::deserialize(table).map_err(|e| ScenarioError::Override {
        set: sets.join(" --set "),
        message: e.to_string(),
    })
}

/// `toml`'s message, made precise where it is not: inside sections that are tagged enums
/// (`[data]`, `[partition]`), `toml` can only point at the section header, so an unknown field is
/// located by finding its key among the section's lines.
fn describe(text: &str, e: &toml::de::Error) -> String {
    let message = e.message();
    let unknown = message
        .strip_prefix("unknown field `")
        .and_then(|r| r.split('`').next());
    if let (Some(span), Some(key)) = (e.span(), unknown) {
        let header_line = text[..span.start.min(text.len())].lines().count();
        for (i, line) in text.lines().enumerate().skip(header_line + 1) {
            let t = line.trim_start();
            if t.starts_with('[') {
                break;
            }
            let found = t
                .split_once('=')
                .is_some_and(|(k, _)| k.trim().trim_matches('"') == key);
            if found {
                return format!("line {}: {message}\n  {} | {line}", i + 1, i + 1);
            }
        }
    }
    e.to_string()
}

/// Applies one `a.b.c=value` override to a parsed table.
fn apply_override(table: &mut toml::Table, set: &str) -> Result<(), ScenarioError> {
    let bad = |message: &str| ScenarioError::Override {
        set: set.into(),
        message: message.into(),
    };
    let (key, raw) = set
        .split_once('=')
        .ok_or_else(|| bad("expected key=value"))?;
    let parts: Vec<&str> = key.trim().split('.').collect();
    if parts.iter().any(|p| p.is_empty()) {
        return Err(bad("empty key segment"));
    }
    // A value in TOML syntax (number, bool, array, quoted string), else a bare string.
    let value = toml::from_str::<toml::Table>(&format!("v = {}", raw.trim()))
        .ok()
        .and_then(|mut t| t.remove("v"))
        .unwrap_or_else(|| toml::Value::String(raw.trim().to_string()));
    let (last, parents) = parts.split_last().ok_or_else(|| bad("empty key"))?;
    let mut cur = table;
    for p in parents {
        let entry = cur
            .entry(p.to_string())
            .or_insert_with(|| toml::Value::Table(toml::Table::new()));
        cur = entry
            .as_table_mut()
            .ok_or_else(|| bad(&format!("`{p}` is not a table")))?;
    }
    cur.insert(last.to_string(), value);
    Ok(())
}

/// One sweep point: the algorithm with validated parameters, on one of the scenario's topologies.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Point {
    /// Index into [`Scenario::topologies`] (0 for the federated baselines, which use no graph).
    pub topology: usize,
    /// Which algorithm.
    pub name: AlgorithmName,
    /// Its validated parameters.
    pub method: Method,
    /// γ (reported even where it is unused).
    pub gamma: f64,
    /// λ (reported even where it is unused).
    pub lambda: f64,
    /// DP-SGD step size (reported even where it is unused).
    pub lr: f64,
    /// The budget ε this point's noise must be calibrated to (the knob is a placeholder until
    /// then).
    pub budget: Option<f64>,
}

impl Point {
    /// The same point with its noise knob set to `knob` (after calibration).
    pub fn with_knob(&self, knob: f64) -> Result<Point, ScenarioError> {
        Ok(Point {
            method: self.method.with_knob(knob)?,
            ..*self
        })
    }
}

impl Scenario {
    /// Checks the scenario-level ranges that the sections' own types do not, and returns the
    /// validated sweep points.
    pub fn check(&self) -> Result<Vec<Point>, ScenarioError> {
        let invalid = |m: String| Err(ScenarioError::Invalid(m));
        if self.users < 1 {
            return invalid("users must be >= 1".into());
        }
        if self.steps == 0 {
            return invalid("steps must be >= 1".into());
        }
        if self.repetitions == 0 {
            return invalid("repetitions must be >= 1".into());
        }
        if self.eval_every == Some(0) {
            return invalid("eval-every must be >= 1".into());
        }
        check_delta(&["privacy", "delta"], self.privacy.delta)?;
        self.check_kinds()?;
        match (self.privacy.view, self.algorithm.mode) {
            (Some(BudgetView::Network), _) => {
                return invalid(
                    "[privacy] view = \"network\" is no longer offered: no network bound holds for the ADMM walk, and for DP-SGD one holds only for a single contribution per user (see the README, \"Measuring privacy\"); use view = \"local\"".into(),
                );
            }
            (Some(BudgetView::Central), Mode::Decentralized) => {
                return invalid(
                    "[privacy] view = \"central\" is for the federated and centralized modes"
                        .into(),
                );
            }
            _ => {}
        }
        if let Some(bad) = self
            .output
            .orders
            .iter()
            .find(|&&a| !(a > 1.0 && a.is_finite()))
        {
            return invalid(format!("[output] orders must be > 1 and finite, got {bad}"));
        }
        match (self.algorithm.mode, self.algorithm.blocks_per_round) {
            (Mode::Federated, None) => {
                return invalid("mode = \"federated\" needs blocks-per-round (m)".into());
            }
            (Mode::Federated, Some(m)) if m == 0 || m > self.users => {
                return invalid(format!(
                    "blocks-per-round must be in 1..={} (the number of users), got {m}",
                    self.users
                ));
            }
            (Mode::Decentralized | Mode::Centralized, Some(_)) => {
                return invalid("blocks-per-round is only for mode = \"federated\"".into());
            }
            _ => {}
        }
        self.points()
    }

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
            table.insert(k.clone(), v.clone());
        }
        AlgorithmSpec::deserialize(table).map_err(|e| bad(e.to_string()))
    }

    /// What the kinds need of the rest of the scenario: the baselines are proved in the local
    /// view only and run whole rounds (`steps` counts user updates, `users` per round).
    fn check_kinds(&self) -> Result<(), ScenarioError> {
        for kind in self.kinds() {
            let name = kind.as_str();
            if kind.is_walk() {
                if kind == AlgorithmName::DpSgd && self.algorithm.mode != Mode::Decentralized {
                    return Err(ScenarioError::Invalid(
                        "dp-sgd is the walk baseline: it needs mode = \"decentralized\" (kind = \"fed-sgd\" is its federated twin)".into(),
                    ));
                }
                continue;
            }
            if self.privacy.view == Some(BudgetView::Central) {
                return Err(SpecError::new(
                    &["privacy", "view"],
                    format!(
                        "kind = \"{name}\" is proved only in the local view (an eavesdropper on every message); use view = \"local\""
                    ),
                )
                .into());
            }
            if self.steps < self.users as u64 {
                return Err(SpecError::new(
                    &["steps"],
                    format!(
                        "kind = \"{name}\" runs synchronous rounds of one update per user: steps = {} is less than one round of {} users",
                        self.steps, self.users
                    ),
                )
                .into());
            }
        }
        Ok(())
    }

    /// Rounds of a synchronous method: `steps` counts user updates, a round makes one per user,
    /// so that every kind of a sweep gives each user the same number of updates `H`.
    pub fn rounds(&self) -> u64 {
        self.steps / self.users.max(1) as u64
    }

    /// Evaluation interval in steps.
    pub fn eval_interval(&self) -> u64 {
        self.eval_every
            .unwrap_or((self.steps / 50).max(1))
            .min(self.steps)
    }

    /// The noise levels of the points: `(σ, None)` for given σ, `(0, Some(ε))` for budgets to
    /// calibrate.
    fn noise_levels(&self) -> Result<Vec<(f64, Option<f64>)>, ScenarioError> {
        let s = &self.sweep;
        let budgets: Vec<f64> = if s.epsilon.is_empty() {
            self.privacy.epsilon.into_iter().collect()
        } else {
            s.epsilon.clone()
        };
        if budgets.is_empty() {
            let sigmas = if s.sigma.is_empty() {
                vec![self.algorithm.sigma]
            } else {
                s.sigma.clone()
            };
            return Ok(sigmas.into_iter().map(|x| (x, None)).collect());
        }
        if !s.sigma.is_empty() || self.algorithm.sigma != 0.0 {
            return Err(ScenarioError::Invalid(
                "give either sigma or a privacy budget epsilon (then sigma is calibrated), not both".into(),
            ));
        }
        let key: &[&str] = if s.epsilon.is_empty() {
            &["privacy", "epsilon"]
        } else {
            &["sweep", "epsilon"]
        };
        for &epsilon in &budgets {
            check_epsilon(key, epsilon)?;
        }
        Ok(budgets.into_iter().map(|e| (0.0, Some(e))).collect())
    }

    /// The view a budget on `method` constrains: local for the baselines (the only view they
    /// prove); for dpwalk's own, as given, else local for the walk and central otherwise.
    /// (A network budget is refused: see `dpwalk_privacy::budget`.)
    pub fn budget_view(&self, method: &Method) -> BudgetView {
        if method.walk().is_none() {
            return BudgetView::Local;
        }
        self.privacy.view.unwrap_or(match self.algorithm.mode {
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

    /// The sweep points (one when there is no sweep), validated.
    pub fn points(&self) -> Result<Vec<Point>, ScenarioError> {
        let s = &self.sweep;
        let or = |v: &Vec<f64>, d: f64| if v.is_empty() { vec![d] } else { v.clone() };
        let record_level = self.privacy.unit == UnitName::Record;
        let mut points = Vec::new();
        for topology in 0..self.topologies().len() {
            for name in self.kinds() {
                let a = &self.algorithm_for(name)?;
                let clips: Vec<Option<f64>> = if s.clip.is_empty() {
                    vec![a.clip]
                } else {
                    s.clip.iter().map(|&c| Some(c)).collect()
                };
                for (sigma, budget) in self.noise_levels()? {
                    for &clip in &clips {
                        if budget.is_some() && clip.is_none() && needs_l2_clip(name) {
                            return Err(ScenarioError::Invalid(format!(
                                "a privacy budget for kind = \"{}\" needs a clip bound C",
                                name.as_str()
                            )));
                        }
                        for &gamma in &or(&s.gamma, a.gamma) {
                            for &lambda in &or(&s.lambda, a.lambda) {
                                for &lr in &or(&s.lr, a.lr) {
                                    let knobs = Knobs {
                                        sigma,
                                        clip,
                                        gamma,
                                        lambda,
                                        lr,
                                        calibrated: budget.is_some(),
                                    };
                                    let method = Method::build(name, a, &knobs, record_level)?;
                                    // The federated baselines use no graph: one run per budget.
                                    let topology = match method.family() {
                                        Family::Federated => 0,
                                        _ => topology,
                                    };
                                    let point = Point {
                                        topology,
                                        name,
                                        method,
                                        gamma,
                                        lambda,
                                        lr,
                                        budget,
                                    };
                                    // Parameters that do not apply to an algorithm do not multiply its points.
                                    if !points.iter().any(|q: &Point| same_run(q, &point)) {
                                        points.push(point);
                                    }
                                }
                            }
                        }
                    }
                }
            }
        }
        Ok(points)
    }
}

/// Whether a budget on `kind` needs the ℓ₂ clip `C` (dp-iadmm has its own ℓ₁ clip, pp-admm none).
fn needs_l2_clip(kind: AlgorithmName) -> bool {
    !matches!(kind, AlgorithmName::DpIadmm | AlgorithmName::PpAdmm)
}

/// Whether two points run the same computation (DP-SGD ignores γ, λ; ADMM ignores lr; the
/// baselines ignore what is not theirs).
fn same_run(a: &Point, b: &Point) -> bool {
    a.method == b.method && a.topology == b.topology && a.budget == b.budget
}

#[cfg(test)]
mod tests {
    use super::*;

    const MINIMAL: &str = r#"
users = 10
steps = 100

[data]
source = "synthetic-lasso"

[problem]
loss = "squared"
l1 = 0.01

[algorithm]
sigma = 0.5
clip = 1.0
"#;

    fn p() -> &'static Path {
        Path::new("test.toml")
    }

    #[test]
    fn minimal_scenario_parses_with_defaults() {
        let s = parse(MINIMAL, p(), &[]).expect("parses");
        s.check().expect("valid");
        assert_eq!(s.seed, 1);
        assert_eq!(s.algorithm.mode, Mode::Decentralized);
        assert_eq!(s.points().expect("points").len(), 1);
        assert_eq!(s.eval_interval(), 2);
    }

    #[test]
    fn a_scenario_without_an_algorithm_section_takes_its_defaults() {
        let text = MINIMAL.replace("[algorithm]\nsigma = 0.5\nclip = 1.0\n", "");
        assert!(!text.contains("[algorithm]"));
        let s = parse(&text, p(), &[]).expect("parses");
        assert_eq!(s.algorithm.kind, AlgorithmName::Admm);
        assert_eq!(s.algorithm.gamma, 1.0);
        assert_eq!(s.algorithm.lambda, 0.5);
        assert_eq!(s.algorithm.sigma, 0.0);
        assert_eq!(s.algorithm.clip, None);
        assert_eq!(s.algorithm.lr, 0.1);
        let s = parse(&text, p(), &["algorithm.sigma=2".into()]).expect("an override adds it");
        assert_eq!(s.algorithm.sigma, 2.0);
    }

    #[test]
    fn unknown_key_names_key_file_and_line() {
        let text = MINIMAL.replace("sigma = 0.5", "sigam = 0.5");
        let err = parse(&text, p(), &[]).expect_err("must fail").to_string();
        assert!(err.contains("sigam"), "{err}");
        assert!(err.contains("test.toml"), "{err}");
        assert!(err.contains("line 13"), "{err}");
    }

    #[test]
    fn overrides_apply_and_are_checked() {
        let s = parse(
            MINIMAL,
            p(),
            &["algorithm.sigma=2.5".into(), "seed=9".into()],
        )
        .expect("parses");
        assert_eq!(s.algorithm.sigma, 2.5);
        assert_eq!(s.seed, 9);
        let s = parse(MINIMAL, p(), &["algorithm.mode=federated".into()]).expect("parses");
        assert_eq!(s.algorithm.mode, Mode::Federated);
        assert!(s.check().is_err(), "federated without m must be refused");
        let err = parse(MINIMAL, p(), &["algorithm.sigmaa=1".into()]).expect_err("unknown");
        assert!(err.to_string().contains("sigmaa"), "{err}");
        assert!(parse(MINIMAL, p(), &["novalue".into()]).is_err());
    }

    #[test]
    fn impossible_parameters_are_refused_with_reason() {
        for (set, needle) in [
            ("algorithm.sigma=-1", "sigma"),
            ("algorithm.clip=0", "clip"),
            ("algorithm.lambda=1.5", "lambda"),
            ("algorithm.gamma=0", "gamma"),
        ] {
            let s = parse(MINIMAL, p(), &[set.into()]).expect("parses");
            let err = s.check().expect_err(set).to_string();
            assert!(err.contains(needle), "{set}: {err}");
        }
        let s = parse(
            MINIMAL,
            p(),
            &[
                "algorithm.mode=federated".into(),
                "algorithm.blocks-per-round=11".into(),
            ],
        )
        .expect("parses");
        assert!(
            s.check()
                .expect_err("m > n")
                .to_string()
                .contains("blocks-per-round")
        );
    }

    #[test]
    fn sweep_is_a_product_without_duplicate_runs() {
        let text = format!(
            "{MINIMAL}\n[sweep]\nkind = [\"admm\", \"dp-sgd\"]\nsigma = [0.5, 1.0]\ngamma = [1.0, 2.0]\n"
        );
        let s = parse(&text, p(), &[]).expect("parses");
        let points = s.points().expect("valid");
        // ADMM: 2 sigmas × 2 gammas; DP-SGD ignores gamma: 2 sigmas.
        assert_eq!(points.len(), 6);
        let text = format!(
            "{MINIMAL}\n[sweep]\nkind = [\"admm\", \"dp-sgd\"]\nepsilon = [1.0, 2.0, 4.0]\n"
        )
        .replace("sigma = 0.5", "");
        let s = parse(&text, p(), &[]).expect("parses");
        assert_eq!(
            s.points().expect("valid").len(),
            6,
            "one point per budget and algorithm"
        );
        let both = format!("{MINIMAL}\n[privacy]\nepsilon = 1.0\n");
        assert!(
            parse(&both, p(), &[]).expect("parses").check().is_err(),
            "sigma and a budget"
        );
    }
}
