//! Sweep expansion: the cartesian product of `[sweep]` over `[algorithm]` (and `[by-kind]`),
//! each product validated into a [`Point`], without points that run the same computation.

use super::{Scenario, ScenarioError, UnitName};
use crate::algorithm::AlgorithmName;
use crate::method::{Family, Knobs, Method, PendingMethod, PointNoise, key_error};
use dpwalk_core::spec::{SpecError, check_epsilon};

/// One sweep point as the scenario gives it, validated; its noise is given or still to be
/// calibrated to a budget ([`PendingMethod`]). Only [`PendingPoint::given`] and
/// [`crate::privacy::PrivacyContext::resolve`] make it a [`Point`] a driver can run.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct PendingPoint {
    /// Index into [`Scenario::topologies`] (0 for the federated baselines, which use no graph).
    pub topology: usize,
    /// Which algorithm.
    pub name: AlgorithmName,
    /// Its validated parameters, with the noise given or pending.
    pub method: PendingMethod,
    /// γ (reported even where it is unused).
    pub gamma: f64,
    /// λ (reported even where it is unused).
    pub lambda: f64,
    /// DP-SGD step size (reported even where it is unused).
    pub lr: f64,
    /// The horizon in user updates ([`Scenario::steps_for`] of its kind).
    pub steps: u64,
}

impl PendingPoint {
    /// The runnable point when the noise is given; `None` when a budget calibrates it.
    pub fn given(&self) -> Option<Point> {
        match self.method {
            PendingMethod::Given(method) => Some(self.runnable(method)),
            PendingMethod::Calibrated { .. } => None,
        }
    }

    /// The runnable point with `method` (the given one, or the calibrated one).
    pub(crate) fn runnable(&self, method: Method) -> Point {
        Point {
            topology: self.topology,
            name: self.name,
            method,
            gamma: self.gamma,
            lambda: self.lambda,
            lr: self.lr,
            steps: self.steps,
            budget: self.method.budget(),
        }
    }
}

/// One sweep point a driver runs: the algorithm with validated parameters and its noise knob
/// (given, or calibrated to `budget`), on one of the scenario's topologies.
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
    /// The horizon in user updates: walk hops, or `users` per synchronous round (the run's
    /// length, and what its noise is calibrated and accounted for).
    pub steps: u64,
    /// The budget ε the noise knob was calibrated to, if any.
    pub budget: Option<f64>,
}

impl Scenario {
    /// The noise levels of the points: σ as given, or the budgets σ is calibrated to.
    fn noise_levels(&self) -> Result<Vec<PointNoise>, ScenarioError> {
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
            return Ok(sigmas.into_iter().map(PointNoise::Sigma).collect());
        }
        if !s.sigma.is_empty() || self.algorithm.sigma != 0.0 {
            let sigma: &[&str] = if s.sigma.is_empty() {
                &["algorithm", "sigma"]
            } else {
                &["sweep", "sigma"]
            };
            return Err(SpecError::new(
                sigma,
                "give either sigma or a privacy budget epsilon (then sigma is calibrated), not both",
            )
            .into());
        }
        let key: &[&str] = if s.epsilon.is_empty() {
            &["privacy", "epsilon"]
        } else {
            &["sweep", "epsilon"]
        };
        for &epsilon in &budgets {
            check_epsilon(key, epsilon)?;
        }
        Ok(budgets.into_iter().map(PointNoise::Budget).collect())
    }

    /// The sweep points (one when there is no sweep), validated.
    pub fn points(&self) -> Result<Vec<PendingPoint>, ScenarioError> {
        let s = &self.sweep;
        let or = |v: &Vec<f64>, d: f64| if v.is_empty() { vec![d] } else { v.clone() };
        let record_level = self.privacy.unit == UnitName::Record;
        let mut points = Vec::new();
        for topology in 0..self.topologies().len() {
            for name in self.kinds() {
                let a = &self.algorithm_for(name)?;
                let steps = self.steps_for(name)?;
                let clips: Vec<Option<f64>> = if s.clip.is_empty() {
                    vec![a.clip]
                } else {
                    s.clip.iter().map(|&c| Some(c)).collect()
                };
                for noise in self.noise_levels()? {
                    let budget = noise.budget();
                    for &clip in &clips {
                        if budget.is_some() && clip.is_none() && needs_l2_clip(name) {
                            return Err(key_error(
                                "clip",
                                format!(
                                    "a privacy budget for kind = \"{}\" needs a clip bound C",
                                    name.as_str()
                                ),
                            )
                            .into());
                        }
                        for &gamma in &or(&s.gamma, a.gamma) {
                            for &lambda in &or(&s.lambda, a.lambda) {
                                for &lr in &or(&s.lr, a.lr) {
                                    let knobs = Knobs {
                                        noise,
                                        clip,
                                        gamma,
                                        lambda,
                                        lr,
                                    };
                                    let method = Method::build(name, a, &knobs, record_level)?;
                                    // The federated baselines use no graph: one run per budget.
                                    let topology = match method.family() {
                                        Family::Federated => 0,
                                        _ => topology,
                                    };
                                    let point = PendingPoint {
                                        topology,
                                        name,
                                        method,
                                        gamma,
                                        lambda,
                                        lr,
                                        steps,
                                    };
                                    // Parameters that do not apply to an algorithm do not multiply its points.
                                    if !points.iter().any(|q: &PendingPoint| same_run(q, &point)) {
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
fn same_run(a: &PendingPoint, b: &PendingPoint) -> bool {
    a.method == b.method && a.topology == b.topology && a.steps == b.steps
}
