//! The `[algorithm]` section of a scenario: which algorithm a point runs, on which schedule, with
//! which parameters (every key has a default). The walk's own step is checked through
//! `dpwalk_core::spec` ([`crate::method`]); the baselines' keys are the simulator's alone.

use serde::{Deserialize, Serialize};

/// Algorithm names of scenario files.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum AlgorithmName {
    /// Private ADMM (the paper's algorithm).
    Admm,
    /// DP-SGD on the same walk (the baseline).
    DpSgd,
    /// Federated DP-SGD: the walk's DP-SGD message, averaged by a server every round.
    FedSgd,
    /// \[RK\] DP-IADMM (federated, Laplace noise on the local gradient).
    DpIadmm,
    /// \[HG\] IPADMM (synchronous rounds on the graph, `l` noisy linearized steps).
    Ipadmm,
    /// \[ZKL\] penalty-perturbation M-ADMM (synchronous rounds on the graph).
    PpAdmm,
}

impl AlgorithmName {
    /// The name as written in scenario files and outputs.
    pub fn as_str(&self) -> &'static str {
        match self {
            AlgorithmName::Admm => "admm",
            AlgorithmName::DpSgd => "dp-sgd",
            AlgorithmName::FedSgd => "fed-sgd",
            AlgorithmName::DpIadmm => "dp-iadmm",
            AlgorithmName::Ipadmm => "ipadmm",
            AlgorithmName::PpAdmm => "pp-admm",
        }
    }

    /// Whether the kind is dpwalk's own update, run on the scenario's `mode`.
    pub fn is_walk(&self) -> bool {
        matches!(self, AlgorithmName::Admm | AlgorithmName::DpSgd)
    }
}

/// \[RK\]'s two subproblems.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum VariantName {
    /// ObjT (Algorithm 2): a trust region around the last iterate.
    #[default]
    Objt,
    /// ObjP (Algorithm 1): a proximal term.
    Objp,
}

/// The norm of ObjT's trust region.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum TrustNormName {
    /// A box (the paper's experiments).
    #[default]
    Linf,
    /// A ball (the paper's (6b)).
    L2,
}

/// IPADMM's proximal weights.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum EtaScheduleName {
    /// `η₀ √(inner steps done)` (the spec's default).
    #[default]
    SqrtTotal,
    /// A constant `η`.
    Constant,
}

/// Block schedules.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Mode {
    /// One block per update of `w`, chosen by the random walk (Algorithm 4).
    Decentralized,
    /// `m` uniformly random blocks per round (Algorithm 3).
    Federated,
    /// Every block every round (Algorithm 2).
    Centralized,
}

impl Mode {
    /// The name as written in scenario files and outputs.
    pub fn as_str(&self) -> &'static str {
        match self {
            Mode::Decentralized => "decentralized",
            Mode::Federated => "federated",
            Mode::Centralized => "centralized",
        }
    }
}

/// The `[algorithm]` section.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub struct AlgorithmSpec {
    /// `admm` or `dp-sgd`.
    #[serde(default = "default_kind")]
    pub kind: AlgorithmName,
    /// `decentralized`, `federated` or `centralized`.
    #[serde(default = "default_mode")]
    pub mode: Mode,
    /// γ (ADMM).
    #[serde(default = "default_one")]
    pub gamma: f64,
    /// λ, the relaxation (ADMM).
    #[serde(default = "default_lambda")]
    pub lambda: f64,
    /// σ.
    #[serde(default)]
    pub sigma: f64,
    /// C; absent means no clipping.
    #[serde(default)]
    pub clip: Option<f64>,
    /// Step size (DP-SGD).
    #[serde(default = "default_lr")]
    pub lr: f64,
    /// `m`, blocks per round (federated).
    #[serde(default)]
    pub blocks_per_round: Option<usize>,
    /// DP-IADMM: `objt` (default) or `objp`.
    #[serde(default)]
    pub variant: VariantName,
    /// ρ: DP-IADMM's constant part `c2` of (21), IPADMM's penalty.
    #[serde(default)]
    pub rho: Option<f64>,
    /// DP-IADMM: the growing part `c1` of (21), `c1·1.2^⌊t/Tc⌋` (default 0: constant ρ).
    #[serde(default)]
    pub rho_c1: f64,
    /// DP-IADMM: the growth period `Tc` of (21), in rounds.
    #[serde(default = "default_period")]
    pub rho_period: u64,
    /// DP-IADMM ObjP: the proximal weight's scale `a` (default 1); IPADMM: `η₀` or `η`.
    #[serde(default)]
    pub eta: Option<f64>,
    /// DP-IADMM ObjP: the proximal weight's power `q` in `a·t^(−q)` (default ½).
    #[serde(default)]
    pub eta_power: Option<f64>,
    /// IPADMM: `sqrt-total` (default) or `constant`.
    #[serde(default)]
    pub eta_schedule: EtaScheduleName,
    /// DP-IADMM ObjT: the trust radius' scale `a` (default 1).
    #[serde(default = "default_one")]
    pub radius: f64,
    /// DP-IADMM ObjT: the trust radius' power `q` in `a·t^(−q)` (default 0, the authors' code).
    #[serde(default)]
    pub radius_power: f64,
    /// DP-IADMM ObjT: `linf` (default) or `l2`.
    #[serde(default)]
    pub trust_norm: TrustNormName,
    /// DP-IADMM: the per-record ℓ₁ clip `G₁`.
    #[serde(default)]
    pub clip_l1: Option<f64>,
    /// DP-IADMM: the Laplace scale `b` per coordinate (absent: 0, or calibrated to a budget).
    #[serde(default)]
    pub laplace_scale: Option<f64>,
    /// IPADMM: `l`, noisy linearized steps per round.
    #[serde(default = "default_inner_steps", alias = "l")]
    pub inner_steps: usize,
    /// Penalty perturbation: `θ`, the first penalty and the dual step.
    #[serde(default)]
    pub theta: Option<f64>,
    /// Penalty perturbation: the penalty's ratio `q ≥ 1` per round (default 1).
    #[serde(default = "default_one")]
    pub growth: f64,
    /// Penalty perturbation: the penalty's cap (default θ).
    #[serde(default)]
    pub eta_max: Option<f64>,
    /// Penalty perturbation: the noise rate ν (absent: no noise, or calibrated to a budget).
    #[serde(default)]
    pub nu: Option<f64>,
    /// Penalty perturbation: ν grows like the penalty to this power (default 0).
    #[serde(default)]
    pub kappa: f64,
}

impl Default for AlgorithmSpec {
    /// The defaults of the `[algorithm]` keys, as if the section were empty.
    fn default() -> Self {
        Self {
            kind: default_kind(),
            mode: default_mode(),
            gamma: default_one(),
            lambda: default_lambda(),
            sigma: 0.0,
            clip: None,
            lr: default_lr(),
            blocks_per_round: None,
            variant: VariantName::default(),
            rho: None,
            rho_c1: 0.0,
            rho_period: default_period(),
            eta: None,
            eta_power: None,
            eta_schedule: EtaScheduleName::default(),
            radius: default_one(),
            radius_power: 0.0,
            trust_norm: TrustNormName::default(),
            clip_l1: None,
            laplace_scale: None,
            inner_steps: default_inner_steps(),
            theta: None,
            growth: default_one(),
            eta_max: None,
            nu: None,
            kappa: 0.0,
        }
    }
}

fn default_period() -> u64 {
    1
}
fn default_inner_steps() -> usize {
    1
}

fn default_kind() -> AlgorithmName {
    AlgorithmName::Admm
}
fn default_mode() -> Mode {
    Mode::Decentralized
}
fn default_one() -> f64 {
    1.0
}
fn default_lambda() -> f64 {
    0.5
}
fn default_lr() -> f64 {
    0.1
}
