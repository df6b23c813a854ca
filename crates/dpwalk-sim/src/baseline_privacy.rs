//! The seed baselines' privacy in the simulator: which `dpwalk_privacy::baseline` accounting a
//! point's method has on this problem and graph, the calibration of its knob to a total budget,
//! and its local-view figure. Every number comes from `dpwalk_privacy`; this module only picks
//! the worst user and converts the scenario's knob to the accountant's.
//!
//! Local view only (an eavesdropper on every message, server included): the only view the
//! three papers prove (seed-baselines spec §6.1 point 2). The horizon is the point's planned
//! number of rounds ([`Scenario::rounds`] of its `steps`), every user updating once per round.
//!
//! | kind | accountant's knob | scenario's knob | worst user |
//! | --- | --- | --- | --- |
//! | `dp-iadmm` | per-round ε̄ | `b = Δ₁/ε̄` (`laplace-scale`) | largest Δ₁ = `2G₁/(n·m)` (fewest records at record level) |
//! | `ipadmm` | σ | σ (multiplier; each node's std is its own sensitivity × σ) | all alike |
//! | `pp-admm` | ν | ν | smallest `V_i·B_i` (degree × records) |

use crate::method::Method;
use crate::scenario::{Scenario, ScenarioError, UnitName};
use dpwalk_core::baselines::dp_iadmm::{PrivacyUnit, l1_sensitivity};
use dpwalk_core::baselines::pp_admm::LOGISTIC_CURVATURE;
use dpwalk_core::problem::{Problem, Regularizer};
use dpwalk_core::spec::SpecError;
use dpwalk_core::topology::Topology;
use dpwalk_privacy::baseline::{Baseline, PenaltyPerturbation, PenaltySchedule};
use dpwalk_privacy::calibrate::{REL_TOL, calibrate_baseline};
use dpwalk_privacy::rdp::{Conversion, DpBound, Orders, RdpCurve};
use dpwalk_privacy::unit::Unit;

/// What the baselines' accounting reads of the prepared scenario: records per user and the
/// degrees of every graph.
#[derive(Debug, Clone)]
pub struct Inputs {
    records: Vec<usize>,
    /// Per topology, every node's degree.
    degrees: Vec<Vec<usize>>,
    l2: f64,
    record_level: bool,
}

impl Inputs {
    /// Reads them from the problem and the graphs.
    pub fn new(scenario: &Scenario, problem: &Problem, topologies: &[&Topology]) -> Self {
        let n = problem.n_users();
        let l2 = match *problem.regularizer() {
            Regularizer::L2 { l2 } | Regularizer::ElasticNet { l2, .. } => l2,
            Regularizer::None | Regularizer::L1 { .. } => 0.0,
        };
        Self {
            records: (0..n).map(|i| problem.data().records(i)).collect(),
            degrees: topologies
                .iter()
                .map(|t| (0..t.n()).map(|i| t.degree(i)).collect())
                .collect(),
            l2,
            record_level: scenario.privacy.unit == UnitName::Record,
        }
    }
}

/// A baseline point's accounting: the family's curve, and how the scenario's knob maps to it.
#[derive(Debug, Clone)]
pub struct Account {
    baseline: Baseline,
    /// DP-IADMM's ℓ₁ sensitivity Δ₁ (`b = Δ₁/ε̄`); unused by the others.
    l1_sensitivity: f64,
    rounds: u64,
}

impl Account {
    /// The accounting of `method` on topology `topology` planned for `rounds` rounds (the
    /// point's horizon), `None` for dpwalk's own methods and federated DP-SGD (accounted as the
    /// walk's DP-SGD, `crate::privacy`).
    ///
    /// # Errors
    /// A [`ScenarioError`] when the accountant refuses the setting (penalty perturbation for a
    /// user holding several records at user level, or a first penalty too small for its proof).
    pub fn of(
        inputs: &Inputs,
        method: &Method,
        topology: usize,
        rounds: u64,
    ) -> Result<Option<Account>, ScenarioError> {
        let n = inputs.records.len();
        let with = |baseline, l1_sensitivity| {
            Ok(Some(Account {
                baseline,
                l1_sensitivity,
                rounds,
            }))
        };
        match method {
            Method::Walk(_) | Method::FedSgd(_) => Ok(None),
            Method::DpIadmm(p) => {
                let unit = if inputs.record_level {
                    PrivacyUnit::Record
                } else {
                    PrivacyUnit::User
                };
                let g1 = p.clip().unwrap_or(f64::INFINITY);
                let worst = inputs
                    .records
                    .iter()
                    .map(|&m| l1_sensitivity(g1, unit, n, m))
                    .fold(0.0, f64::max);
                with(Baseline::DpIadmm, worst)
            }
            Method::Ipadmm(p) => with(
                Baseline::Ipadmm {
                    inner_steps: p.settings().inner_steps as u64,
                },
                0.0,
            ),
            Method::PpAdmm(p) => {
                let s = p.settings();
                let degrees = inputs.degrees.get(topology).ok_or_else(|| {
                    ScenarioError::Invalid(format!("no topology {topology} for pp-admm"))
                })?;
                // The node with the smallest V·B loses the most in every round (spec §3.3).
                let Some((degree, records)) = degrees
                    .iter()
                    .zip(&inputs.records)
                    .filter(|&(_, &m)| m > 0)
                    .map(|(&v, &m)| (v, m))
                    .min_by_key(|&(v, m)| v.saturating_mul(m))
                else {
                    return Err(ScenarioError::Invalid(
                        "pp-admm: no user has records".into(),
                    ));
                };
                let unit = match (inputs.record_level, inputs.records.iter().max()) {
                    (true, _) | (false, Some(1)) => Unit::Record {
                        records: records as u64,
                    },
                    (false, _) => Unit::User,
                };
                let refused = |e: dpwalk_privacy::PrivacyError| {
                    ScenarioError::from(SpecError::new(
                        &["algorithm", "kind"],
                        format!(
                            "kind = \"pp-admm\": {e} (users hold up to {} records; privacy.unit = \"record\" accounts one record)",
                            inputs.records.iter().max().unwrap_or(&0)
                        ),
                    ))
                };
                let schedule =
                    PenaltySchedule::new(s.theta, s.growth, s.eta_max).map_err(refused)?;
                let pp = PenaltyPerturbation::new(
                    1.0,
                    LOGISTIC_CURVATURE,
                    inputs.l2,
                    degree as u64,
                    unit,
                    schedule,
                )
                .map_err(refused)?;
                with(Baseline::PenaltyPerturbation(pp), 0.0)
            }
        }
    }

    /// The accountant's knob for `method`'s knob (ε̄ = Δ₁/b for DP-IADMM), `None` when the
    /// method adds no noise (no guarantee).
    fn accountant_knob(&self, method: &Method) -> Option<f64> {
        if !method.is_noisy() {
            return None;
        }
        Some(match self.baseline {
            Baseline::DpIadmm => self.l1_sensitivity / method.knob(),
            _ => method.knob(),
        })
    }

    /// The local-view curve after the first `rounds` rounds, `None` without noise.
    pub fn curve_after(&self, orders: &Orders, method: &Method, rounds: u64) -> Option<RdpCurve> {
        let knob = self.accountant_knob(method)?;
        self.baseline.spent(orders, knob, rounds).ok()
    }

    /// The local-view curve of the whole run, `None` without noise.
    pub fn curve(&self, orders: &Orders, method: &Method) -> Option<RdpCurve> {
        self.curve_after(orders, method, self.rounds)
    }

    /// The curve of one round, `None` without noise.
    pub fn round_curve(&self, orders: &Orders, method: &Method) -> Option<RdpCurve> {
        self.curve_after(orders, method, 1)
    }

    /// The local-view `(ε, δ)` bound after the first `rounds` rounds, `None` without noise.
    pub fn bound_after(
        &self,
        orders: &Orders,
        method: &Method,
        rounds: u64,
        delta: f64,
        conversion: Conversion,
    ) -> Option<DpBound> {
        let knob = self.accountant_knob(method)?;
        self.baseline
            .bound(orders, knob, rounds, delta, conversion)
            .ok()
    }

    /// The local-view `(ε, δ)` bound of the whole run, `None` without noise.
    pub fn bound(
        &self,
        orders: &Orders,
        method: &Method,
        delta: f64,
        conversion: Conversion,
    ) -> Option<DpBound> {
        self.bound_after(orders, method, self.rounds, delta, conversion)
    }

    /// The scenario's knob with the least noise that makes the run `(epsilon, delta)`-DP in the
    /// local view (on the default order grid, as every calibration of the simulator).
    ///
    /// # Errors
    /// The accountant's refusal (an unattainable budget, with its reason).
    pub fn calibrate(
        &self,
        epsilon: f64,
        delta: f64,
        conversion: Conversion,
    ) -> Result<f64, ScenarioError> {
        let cal = calibrate_baseline(
            &self.baseline,
            &Orders::default_grid(),
            self.rounds,
            epsilon,
            delta,
            conversion,
            REL_TOL,
        )
        .map_err(|e| {
            ScenarioError::Invalid(format!("calibrating the noise to epsilon = {epsilon}: {e}"))
        })?;
        Ok(self.scenario_knob(cal.knob))
    }

    /// The scenario's knob that the paper's own accounting gives for the ε it states (per
    /// iteration for DP-IADMM, the total at `delta` for IPADMM; `Baseline::paper_knob`), for
    /// the planned rounds: what a reproduction panel runs (`crate::reproduce`).
    ///
    /// # Errors
    /// The accountant's refusal (an ε out of range, penalty perturbation).
    pub fn paper_knob(&self, paper_epsilon: f64, delta: f64) -> Result<f64, ScenarioError> {
        let knob = self
            .baseline
            .paper_knob(paper_epsilon, self.rounds, delta)
            .map_err(|e| {
                ScenarioError::Invalid(format!(
                    "the paper's accounting of epsilon = {paper_epsilon}: {e}"
                ))
            })?;
        Ok(self.scenario_knob(knob))
    }

    /// The scenario's knob for the accountant's (`b = Δ₁/ε̄` for DP-IADMM; the inverse of
    /// [`Account::accountant_knob`]).
    fn scenario_knob(&self, knob: f64) -> f64 {
        match self.baseline {
            Baseline::DpIadmm => self.l1_sensitivity / knob,
            _ => knob,
        }
    }
}
