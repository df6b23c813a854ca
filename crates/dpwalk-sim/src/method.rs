//! What a sweep point runs: dpwalk's own update (ADMM or DP-SGD, on the scenario's schedule) or
//! one of the seed baselines (`shared/specs/seed-baselines.md`), each with parameters validated
//! by `dpwalk_core`'s own constructors.
//!
//! | `kind` | family | schedule | noise knob | clip |
//! | --- | --- | --- | --- | --- |
//! | `admm`, `dp-sgd` | dpwalk (\[CBB\]) | the scenario's `mode` | `sigma` (std) | `clip` (ℓ₂, `C`) |
//! | `fed-sgd` | federated DP-SGD | server + every user every round | `sigma` (std) | `clip` (ℓ₂) |
//! | `dp-iadmm` | \[RK\] ObjT / ObjP | server + every user every round | `laplace-scale` (b) | `clip-l1` (ℓ₁, `G₁`) |
//! | `ipadmm` | \[HG\] | synchronous rounds on the graph | `sigma` (multiplier) | `clip` (ℓ₂, `G₂`) |
//! | `pp-admm` | \[ZKL\] | synchronous rounds on the graph | `nu` (rate; absent = no noise) | none (its proof bounds the loss) |
//!
//! Why the knobs differ: each is the one number the family's accountant calibrates
//! (`dpwalk_privacy::baseline`); writing them under one name would hide that a Laplace scale, a
//! Gaussian multiplier and a noise rate run in opposite directions.

use crate::algorithm::{AlgorithmName, AlgorithmSpec, EtaScheduleName, TrustNormName, VariantName};
use dpwalk_core::baselines::dp_iadmm::{
    Decay, DpIadmmParams, RhoSchedule, TrustNorm, Variant as IadmmVariant,
};
use dpwalk_core::baselines::ipadmm::PrivacyUnit as IpadmmUnit;
use dpwalk_core::baselines::ipadmm::{EtaSchedule, IpadmmParams, IpadmmSettings};
use dpwalk_core::baselines::pp_admm::{PpParams, PpSettings};
use dpwalk_core::params::{AdmmParams, ParamError, SgdParams};
use dpwalk_core::spec::{SpecError, param_key};
use dpwalk_core::step::Algorithm;

/// A point's algorithm with validated parameters.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Method {
    /// dpwalk's ADMM or its DP-SGD baseline, on the scenario's `mode`.
    Walk(Algorithm),
    /// Federated DP-SGD.
    FedSgd(SgdParams),
    /// \[RK\] DP-IADMM.
    DpIadmm(DpIadmmParams),
    /// \[HG\] IPADMM.
    Ipadmm(IpadmmParams),
    /// \[ZKL\] penalty perturbation.
    PpAdmm(PpParams),
}

/// How a method's rounds are scheduled, which decides what a step, a graph and a byte mean.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Family {
    /// The walk (or dpwalk's federated and centralized modes): one update of `w` per step.
    Walk,
    /// A server and every user every round; no graph.
    Federated,
    /// Synchronous rounds on the scenario's graph.
    Graph,
}

/// What is known of a point's noise before validation: σ as given, or a budget ε that the
/// noise knob is calibrated to once the point is resolved ([`PendingMethod::Calibrated`]).
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum PointNoise {
    /// σ as given (`sigma`, `[sweep] sigma`).
    Sigma(f64),
    /// The knob is calibrated to this ε (`[privacy] epsilon`, `[sweep] epsilon`); the baselines'
    /// own noise keys must then be absent, since the budget sets them.
    Budget(f64),
}

impl PointNoise {
    /// The budget ε, when the knob is to be calibrated to one.
    pub fn budget(&self) -> Option<f64> {
        match *self {
            PointNoise::Sigma(_) => None,
            PointNoise::Budget(epsilon) => Some(epsilon),
        }
    }

    /// How an error names the point's σ.
    fn describe(&self) -> String {
        match *self {
            PointNoise::Sigma(sigma) => format!("sigma={sigma}"),
            PointNoise::Budget(epsilon) => format!("sigma calibrated to epsilon={epsilon}"),
        }
    }
}

/// A method whose every parameter is validated but its noise knob, which a budget's calibration
/// sets ([`crate::privacy::PrivacyContext::resolve`]). It holds the method *without noise*
/// (σ = 0, b = 0, ν = ∞), which is what the accountant reads before the knob is known (the clip,
/// the rounds' shape), and gives a method a driver can run only with a knob
/// ([`Noiseless::with_knob`]): no budget point can run noise-free by mistake.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Noiseless(Method);

impl Noiseless {
    /// The runnable method with its knob set to `knob`.
    ///
    /// # Errors
    /// A [`SpecError`] on the knob's key when `knob` is out of its range.
    pub fn with_knob(&self, knob: f64) -> Result<Method, SpecError> {
        self.0.with_knob(knob)
    }

    /// Every parameter but the knob, for the accountant and the checks made before calibration.
    pub(crate) fn parameters(&self) -> &Method {
        &self.0
    }
}

/// A point's method as its scenario gives it: runnable with the noise as given, or waiting for
/// the knob a budget calibrates.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum PendingMethod {
    /// The noise knob as given (`sigma`, `laplace-scale`, `nu`; absent: no noise).
    Given(Method),
    /// The knob is calibrated to the budget `epsilon`.
    Calibrated {
        /// The total budget ε (at the scenario's δ).
        epsilon: f64,
        /// Every other parameter.
        noiseless: Noiseless,
    },
}

impl PendingMethod {
    /// The budget ε, when the knob is calibrated to one.
    pub fn budget(&self) -> Option<f64> {
        match self {
            PendingMethod::Given(_) => None,
            PendingMethod::Calibrated { epsilon, .. } => Some(*epsilon),
        }
    }

    /// Every parameter but (for a budget) the knob: for what is decided before calibration.
    pub(crate) fn parameters(&self) -> &Method {
        match self {
            PendingMethod::Given(method) => method,
            PendingMethod::Calibrated { noiseless, .. } => noiseless.parameters(),
        }
    }

    /// Whether it is dpwalk's own update (ADMM or DP-SGD on the scenario's schedule).
    pub fn is_walk(&self) -> bool {
        self.parameters().walk().is_some()
    }

    /// How the method schedules its rounds.
    pub fn family(&self) -> Family {
        self.parameters().family()
    }

    /// The parameters that tell two points of one kind apart ([`Method::describe`]: the knob is
    /// not among them).
    pub fn describe(&self) -> String {
        self.parameters().describe()
    }
}

/// The knob and clip of one point before validation: the sweep's values, or the section's.
#[derive(Debug, Clone, Copy)]
pub struct Knobs {
    /// σ, or the budget it is calibrated to.
    pub noise: PointNoise,
    /// The ℓ₂ clip `C` / `G₂`.
    pub clip: Option<f64>,
    /// γ.
    pub gamma: f64,
    /// λ.
    pub lambda: f64,
    /// DP-SGD's step size.
    pub lr: f64,
}

impl Knobs {
    /// Whether the noise is calibrated to a budget after validation.
    fn calibrated(&self) -> bool {
        self.noise.budget().is_some()
    }
}

/// The error of one `[algorithm]` key (`algorithm.<key>`, as `--set` names it).
pub fn key_error(key: &str, message: impl std::fmt::Display) -> SpecError {
    SpecError::new(&["algorithm", key], message)
}

/// `Some(v)` or the error naming the key `kind` needs.
fn required(kind: AlgorithmName, key: &str, v: Option<f64>) -> Result<f64, SpecError> {
    v.ok_or_else(|| key_error(key, format!("kind = \"{}\" needs it", kind.as_str())))
}

impl Method {
    /// Builds and validates the method `kind` from the section `a` and the point's `knobs`: as
    /// given, or without noise when a budget calibrates its knob.
    ///
    /// # Errors
    /// A [`SpecError`] naming the key that is missing or out of range, and why.
    pub fn build(
        kind: AlgorithmName,
        a: &AlgorithmSpec,
        k: &Knobs,
        record_level: bool,
    ) -> Result<PendingMethod, SpecError> {
        let walk_param = |e: ParamError| {
            key_error(
                param_key(&e),
                format!(
                    "{e} (the {} point {}, clip={:?}, gamma={}, lambda={}, lr={})",
                    kind.as_str(),
                    k.noise.describe(),
                    k.clip,
                    k.gamma,
                    k.lambda,
                    k.lr
                ),
            )
        };
        // A budget's method is built without noise (σ = 0 here, b = 0 and ν = ∞ in the baselines'
        // builders) and wrapped as `Noiseless` below, so that nothing runs it before calibration.
        let sigma = match k.noise {
            PointNoise::Sigma(sigma) => sigma,
            PointNoise::Budget(_) => 0.0,
        };
        let method = match kind {
            AlgorithmName::Admm => Method::Walk(Algorithm::Admm(
                AdmmParams::new(k.gamma, k.lambda, sigma, k.clip).map_err(walk_param)?,
            )),
            AlgorithmName::DpSgd => Method::Walk(Algorithm::Sgd(
                SgdParams::new(k.lr, sigma, k.clip).map_err(walk_param)?,
            )),
            AlgorithmName::FedSgd => {
                Method::FedSgd(SgdParams::new(k.lr, sigma, k.clip).map_err(walk_param)?)
            }
            AlgorithmName::DpIadmm => Method::DpIadmm(dp_iadmm(a, k)?),
            AlgorithmName::Ipadmm => Method::Ipadmm(ipadmm(a, k, sigma, record_level)?),
            AlgorithmName::PpAdmm => Method::PpAdmm(pp_admm(a, k)?),
        };
        Ok(match k.noise {
            PointNoise::Sigma(_) => PendingMethod::Given(method),
            PointNoise::Budget(epsilon) => PendingMethod::Calibrated {
                epsilon,
                noiseless: Noiseless(method),
            },
        })
    }

    /// How the method schedules its rounds.
    pub fn family(&self) -> Family {
        match self {
            Method::Walk(_) => Family::Walk,
            Method::FedSgd(_) | Method::DpIadmm(_) => Family::Federated,
            Method::Ipadmm(_) | Method::PpAdmm(_) => Family::Graph,
        }
    }

    /// The scenario's `algorithm.kind` this method was built from.
    pub fn kind(&self) -> AlgorithmName {
        match self {
            Method::Walk(Algorithm::Admm(_)) => AlgorithmName::Admm,
            Method::Walk(Algorithm::Sgd(_)) => AlgorithmName::DpSgd,
            Method::FedSgd(_) => AlgorithmName::FedSgd,
            Method::DpIadmm(_) => AlgorithmName::DpIadmm,
            Method::Ipadmm(_) => AlgorithmName::Ipadmm,
            Method::PpAdmm(_) => AlgorithmName::PpAdmm,
        }
    }

    /// dpwalk's own update, when the method is one.
    pub fn walk(&self) -> Option<&Algorithm> {
        match self {
            Method::Walk(a) => Some(a),
            _ => None,
        }
    }

    /// The noise knob (module table): σ, the Laplace scale `b`, or ν (`∞`: no noise).
    pub fn knob(&self) -> f64 {
        match self {
            Method::Walk(a) => a.sigma(),
            Method::FedSgd(p) => p.sigma(),
            Method::DpIadmm(p) => p.noise(),
            Method::Ipadmm(p) => p.settings().sigma,
            Method::PpAdmm(p) => p.settings().nu,
        }
    }

    /// The knob's name as written in scenario files.
    pub fn knob_name(&self) -> &'static str {
        match self {
            Method::Walk(_) | Method::FedSgd(_) | Method::Ipadmm(_) => "sigma",
            Method::DpIadmm(_) => "laplace-scale",
            Method::PpAdmm(_) => "nu",
        }
    }

    /// Whether the method adds noise at all (a knob of 0, or ν = ∞, adds none).
    pub fn is_noisy(&self) -> bool {
        match self {
            Method::PpAdmm(p) => p.settings().nu.is_finite(),
            _ => self.knob() > 0.0,
        }
    }

    /// The clip (module table), `None` when unclipped or when the method has none.
    pub fn clip(&self) -> Option<f64> {
        match self {
            Method::Walk(a) => a.clip(),
            Method::FedSgd(p) => p.clip(),
            Method::DpIadmm(p) => p.clip(),
            Method::Ipadmm(p) => Some(p.settings().clip),
            Method::PpAdmm(_) => None,
        }
    }

    /// The same method with its knob set to `knob` (after calibration).
    pub fn with_knob(&self, knob: f64) -> Result<Method, SpecError> {
        let bad = |e: &dyn std::fmt::Display| {
            key_error(self.knob_name(), format!("calibrated value {knob}: {e}"))
        };
        Ok(match *self {
            Method::Walk(Algorithm::Admm(p)) => Method::Walk(Algorithm::Admm(
                AdmmParams::new(p.gamma(), p.relaxation(), knob, p.clip()).map_err(|e| bad(&e))?,
            )),
            Method::Walk(Algorithm::Sgd(p)) => Method::Walk(Algorithm::Sgd(
                SgdParams::new(p.lr(), knob, p.clip()).map_err(|e| bad(&e))?,
            )),
            Method::FedSgd(p) => {
                Method::FedSgd(SgdParams::new(p.lr(), knob, p.clip()).map_err(|e| bad(&e))?)
            }
            Method::DpIadmm(p) => Method::DpIadmm(
                DpIadmmParams::new(p.variant(), p.rho(), knob, p.clip()).map_err(|e| bad(&e))?,
            ),
            Method::Ipadmm(p) => Method::Ipadmm(
                IpadmmParams::new(IpadmmSettings {
                    sigma: knob,
                    ..*p.settings()
                })
                .map_err(|e| bad(&e))?,
            ),
            Method::PpAdmm(p) => Method::PpAdmm(
                PpParams::new(PpSettings {
                    nu: knob,
                    ..*p.settings()
                })
                .map_err(|e| bad(&e))?,
            ),
        })
    }

    /// The parameters that tell two points of one kind apart, for labels and `summary.json`.
    pub fn describe(&self) -> String {
        let clip = |c: Option<f64>| c.map_or_else(|| "none".into(), |c| c.to_string());
        match self {
            Method::Walk(Algorithm::Admm(p)) => {
                format!("C={} γ={} λ={}", clip(p.clip()), p.gamma(), p.relaxation())
            }
            Method::Walk(Algorithm::Sgd(p)) | Method::FedSgd(p) => {
                format!("C={} lr={}", clip(p.clip()), p.lr())
            }
            Method::DpIadmm(p) => {
                let variant = match p.variant() {
                    IadmmVariant::Prox { .. } => "objp",
                    IadmmVariant::Trust { .. } => "objt",
                };
                format!("{variant} G₁={} ρ={}", clip(p.clip()), p.rho().at(1))
            }
            Method::Ipadmm(p) => {
                let s = p.settings();
                format!("l={} ρ={} G₂={}", s.inner_steps, s.rho, s.clip)
            }
            Method::PpAdmm(p) => {
                let s = p.settings();
                format!("θ={} q={} η_max={}", s.theta, s.growth, s.eta_max)
            }
        }
    }
}

/// Refuses a baseline's own noise key when the noise is calibrated to a budget.
fn noise_key(
    key: &str,
    value: Option<f64>,
    calibrated: bool,
    kind: AlgorithmName,
) -> Result<Option<f64>, SpecError> {
    match (value, calibrated) {
        (Some(_), true) => Err(key_error(
            key,
            format!(
                "give either {key} or a privacy budget epsilon for kind = \"{}\" (the budget calibrates it), not both",
                kind.as_str()
            ),
        )),
        _ => Ok(value),
    }
}

/// \[RK\]: `variant`, `rho` (+ `rho-c1`, `rho-period`: the paper's (21)), `eta` / `eta-power`
/// (ObjP), `radius` / `radius-power` / `trust-norm` (ObjT), `clip-l1`, `laplace-scale`.
fn dp_iadmm(a: &AlgorithmSpec, k: &Knobs) -> Result<DpIadmmParams, SpecError> {
    let kind = AlgorithmName::DpIadmm;
    let rho = RhoSchedule::new(a.rho_c1, required(kind, "rho", a.rho)?, a.rho_period)
        .map_err(|e| key_error("rho", e))?;
    let variant = match a.variant {
        VariantName::Objp => IadmmVariant::Prox {
            eta: Decay::new(a.eta.unwrap_or(1.0), a.eta_power.unwrap_or(0.5))
                .map_err(|e| key_error("eta", e))?,
        },
        VariantName::Objt => IadmmVariant::Trust {
            radius: Decay::new(a.radius, a.radius_power).map_err(|e| key_error("radius", e))?,
            norm: match a.trust_norm {
                TrustNormName::Linf => TrustNorm::Linf,
                TrustNormName::L2 => TrustNorm::L2,
            },
        },
    };
    let b = noise_key("laplace-scale", a.laplace_scale, k.calibrated(), kind)?.unwrap_or(0.0);
    if k.calibrated() && a.clip_l1.is_none() {
        return Err(key_error(
            "clip-l1",
            "a privacy budget for kind = \"dp-iadmm\" needs the per-record l1 clip G1",
        ));
    }
    DpIadmmParams::new(variant, rho, b, a.clip_l1).map_err(|e| key_error("laplace-scale", e))
}

/// \[HG\]: `inner-steps` (l), `rho`, `sigma` (the multiplier, 0 without noise), `clip`
/// (required), `eta` and `eta-schedule`.
fn ipadmm(
    a: &AlgorithmSpec,
    k: &Knobs,
    sigma: f64,
    record_level: bool,
) -> Result<IpadmmParams, SpecError> {
    let kind = AlgorithmName::Ipadmm;
    let eta = required(kind, "eta", a.eta)?;
    let settings = IpadmmSettings {
        inner_steps: a.inner_steps,
        rho: required(kind, "rho", a.rho)?,
        sigma,
        clip: required(kind, "clip", k.clip)?,
        eta: match a.eta_schedule {
            EtaScheduleName::SqrtTotal => EtaSchedule::SqrtTotal { eta0: eta },
            EtaScheduleName::Constant => EtaSchedule::Constant { eta },
        },
        unit: if record_level {
            IpadmmUnit::Record
        } else {
            IpadmmUnit::User
        },
    };
    IpadmmParams::new(settings).map_err(|e| {
        let key = match e {
            dpwalk_core::baselines::ipadmm::IpadmmError::InnerSteps => "inner-steps",
            dpwalk_core::baselines::ipadmm::IpadmmError::Rho(_) => "rho",
            dpwalk_core::baselines::ipadmm::IpadmmError::Sigma(_) => "sigma",
            dpwalk_core::baselines::ipadmm::IpadmmError::Clip(_) => "clip",
            _ => "eta",
        };
        key_error(key, e)
    })
}

/// \[ZKL\]: `theta`, `growth`, `eta-max`, `nu` (absent: no noise), `kappa`.
fn pp_admm(a: &AlgorithmSpec, k: &Knobs) -> Result<PpParams, SpecError> {
    let kind = AlgorithmName::PpAdmm;
    let theta = required(kind, "theta", a.theta)?;
    let nu = noise_key("nu", a.nu, k.calibrated(), kind)?.unwrap_or(f64::INFINITY);
    if k.calibrated() && a.kappa != 0.0 {
        return Err(key_error(
            "kappa",
            "the accountant composes a constant noise rate: a budget needs kappa = 0",
        ));
    }
    PpParams::new(PpSettings {
        theta,
        growth: a.growth,
        eta_max: a.eta_max.unwrap_or(theta),
        nu,
        kappa: a.kappa,
    })
    .map_err(|e| {
        let key = match e {
            dpwalk_core::baselines::pp_admm::PpError::Growth(_) => "growth",
            dpwalk_core::baselines::pp_admm::PpError::Cap { .. } => "eta-max",
            dpwalk_core::baselines::pp_admm::PpError::Nu(_) => "nu",
            dpwalk_core::baselines::pp_admm::PpError::Kappa(_) => "kappa",
            _ => "theta",
        };
        key_error(key, e)
    })
}
