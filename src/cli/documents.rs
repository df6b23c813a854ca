//! The JSON documents `dpwalk account` and `dpwalk calibrate` print with `--json`, as typed
//! structs: their key names are part of the product, so they are written down once, here, and
//! serialized by serde (a key cannot be misspelt in one branch, and a value cannot change type
//! from one run to the next).
//!
//! Keys whose figure does not apply are `null`, never absent, so a reader can tell "not proved
//! here" from "not asked"; the few keys that only some views have (`rounds`, `sample_rate`) are
//! left out where they do not apply.

use dpwalk_privacy::walk::Figure;
use serde::Serialize;

/// The scenario flags as the accountant read them (shared by `account walk` and `calibrate`).
#[derive(Debug, Serialize)]
pub struct ScenarioDoc {
    /// `complete` or the topology file.
    pub topology: String,
    pub complete: bool,
    pub users: usize,
    /// K, the contributions charged to every user.
    pub contributions_per_user: u64,
    /// `--total-steps`, when K was derived from it.
    pub total_steps: Option<u64>,
    /// How K was derived, in words (`null` when given directly).
    pub contributions_note: Option<String>,
}

/// One row of `account walk`'s per-user report. On the complete graph (or without a network
/// view) every user is alike and the report has one row with `user = null`, `all = true`.
#[derive(Debug, Serialize)]
pub struct UserDoc {
    pub user: Option<usize>,
    pub all: bool,
    /// K, the contributions each user is capped at.
    pub contributions: u64,
    pub local: Option<Figure>,
    pub network: Option<Figure>,
    /// What the network figure is (`network (path hidden)`).
    pub network_label: Option<&'static str>,
    pub worst_observer: Option<usize>,
}

/// The worst (user, observer) pair of the network view.
#[derive(Debug, Serialize)]
pub struct WorstDoc {
    pub user: Option<usize>,
    pub observer: Option<usize>,
    #[serde(flatten)]
    pub figure: Figure,
}

/// The paper's closed form, printed for comparison only.
#[derive(Debug, Serialize)]
pub struct ClosedFormDoc {
    pub label: &'static str,
    pub epsilon: Option<f64>,
    pub order: Option<f64>,
}

/// `account walk --json`.
#[derive(Debug, Serialize)]
pub struct WalkDoc<'a> {
    pub scenario: ScenarioDoc,
    /// `admm` or `dp-sgd`.
    pub step: &'static str,
    pub sigma: f64,
    pub clip: f64,
    /// `user-level` or `record-level` (`--min-records`, `--feature-norm`).
    pub unit: &'static str,
    /// The clip every figure is accounted with: `clip`, or at record level `min(C, γ·G₂/m)`.
    pub accounted_clip: f64,
    pub delta: f64,
    pub conversion: &'static str,
    /// `local`, `network` or `both`.
    pub view: &'static str,
    /// Steps of the walk the network view is computed for.
    pub walk_steps: u64,
    /// Why no network figure is printed here (`null` when one is).
    pub network_withheld: Option<String>,
    /// What the network figures are (`network (path hidden)`; `null` without them).
    pub network_label: Option<&'static str>,
    /// What the network figures charge, in words (`null` without them).
    pub network_charges: Option<String>,
    pub users: Vec<UserDoc>,
    pub worst: Option<WorstDoc>,
    pub paper_closed_form: Option<ClosedFormDoc>,
    /// The assumptions of the network figures (empty without them).
    pub assumptions: &'a [&'static str],
    /// The n × n matrix of network ε (row = user, column = observer), with `--pairs`.
    pub pairs: Option<Vec<&'a [f64]>>,
}

/// The target `calibrate` met.
#[derive(Debug, Serialize)]
pub struct TargetDoc {
    pub epsilon: f64,
    pub delta: f64,
}

/// `calibrate --json`.
#[derive(Debug, Serialize)]
pub struct CalibrateDoc<'a> {
    pub view: &'static str,
    pub sigma: f64,
    pub clip: f64,
    /// `user-level` or `record-level` (`--min-records`, `--feature-norm`).
    pub unit: &'static str,
    /// The clip σ is calibrated with: `clip`, or at record level `min(C, γ·G₂/m)`.
    pub accounted_clip: f64,
    pub epsilon: f64,
    pub delta: f64,
    /// `μ` when ε is the exact Gaussian conversion.
    pub exact_gaussian_mu: Option<f64>,
    /// The RDP figure at σ (above ε when ε is exact).
    pub rdp_epsilon: f64,
    /// The order of the RDP figure.
    pub order: f64,
    pub conversion: &'static str,
    pub target: TargetDoc,
    pub relative_tolerance: f64,
    pub scenario: ScenarioDoc,
    /// Rounds of the final-model views.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rounds: Option<u64>,
    /// The federated view's Poisson sampling rate.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sample_rate: Option<f64>,
    pub notes: Vec<String>,
    pub assumptions: Vec<&'a str>,
}
