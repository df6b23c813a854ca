//! Resolving a point: its noise as given, or its knob calibrated to its budget, with the
//! policy that enforces the budget on the walk.

use super::PrivacyContext;
use crate::algorithm::Mode;
use crate::method::{Method, PendingMethod};
use crate::scenario::{BudgetView, PendingPoint, Point, Scenario, ScenarioError};
use dpwalk_core::step::Algorithm;
use dpwalk_privacy::Noise;
use dpwalk_privacy::budget::{PLAN_QUANTILE, Policy};
use dpwalk_privacy::calibrate::{REL_TOL, View, calibrate};
use dpwalk_privacy::ledger::Budget as BudgetTarget;
use dpwalk_privacy::rdp::Orders;
use dpwalk_privacy::walk::{ADMM_NETWORK_WITHDRAWN, planned_contributions};

/// A point ready to run: σ calibrated if it had a budget, and the policy that enforces it.
#[derive(Debug, Clone)]
pub struct Resolved {
    /// The point with its final σ.
    pub point: Point,
    /// The budget policy, when the budget is enforced.
    pub policy: Option<Policy>,
    /// Contributions per user the calibration planned for.
    pub calibrated_for: Option<u64>,
}

impl PrivacyContext {
    /// The runnable point of `pending`: its noise as given, or its knob calibrated to its budget
    /// with the policy that enforces it.
    pub fn resolve(
        &self,
        scenario: &Scenario,
        pending: &PendingPoint,
    ) -> Result<Resolved, ScenarioError> {
        let (epsilon, noiseless) = match pending.method {
            PendingMethod::Given(method) => {
                return Ok(Resolved {
                    point: pending.runnable(method),
                    policy: None,
                    calibrated_for: None,
                });
            }
            PendingMethod::Calibrated { epsilon, noiseless } => (epsilon, noiseless),
        };
        let calibrated = |knob: f64| -> Result<Point, ScenarioError> {
            Ok(pending.runnable(noiseless.with_knob(knob)?))
        };
        let invalid = |m: String| ScenarioError::Invalid(m);
        let parameters = noiseless.parameters();
        let steps = pending.steps;
        if let Some(account) = self.account(parameters, pending.topology, steps)? {
            let knob = account.calibrate(epsilon, self.delta, self.conversion)?;
            return Ok(Resolved {
                point: calibrated(knob)?,
                policy: None,
                calibrated_for: Some(scenario.rounds(steps)),
            });
        }
        let clip = self
            .accounted_clip(parameters)
            .ok_or_else(|| invalid("a budget needs a clip".into()))?;
        let n = scenario.users as u64;
        let walk = scenario.algorithm.mode == Mode::Decentralized;
        let fed_sgd = matches!(parameters, Method::FedSgd(_));
        let k = if fed_sgd {
            scenario.rounds(steps)
        } else if walk {
            planned_contributions(steps, 1.0 / n as f64, PLAN_QUANTILE)
        } else {
            steps
        };
        let view = self.budget_view(scenario, parameters, pending.topology, steps, k)?;
        // Calibration and the policy use the default grid, as every daemon does, so that a run
        // file made from this scenario gets the same σ and skips the same steps.
        let grid = Orders::default_grid();
        let cal = calibrate(
            &view,
            &grid,
            clip,
            epsilon,
            self.delta,
            self.conversion,
            REL_TOL,
        )
        .map_err(|e| invalid(format!("calibrating sigma to epsilon = {epsilon}: {e}")))?;
        let point = calibrated(cal.sigma)?;
        // A central budget is accounted on rounds, not per user: nothing to enforce per user;
        // federated DP-SGD's users contribute exactly the planned rounds.
        let enforce = scenario.privacy.enforce && !fed_sgd;
        let noise = || Noise::new(cal.sigma, clip).map_err(|e| invalid(e.to_string()));
        let target = || BudgetTarget::new(epsilon, self.delta).map_err(|e| invalid(e.to_string()));
        let policy = match view {
            View::Local { .. } if enforce => Some(
                Policy::new(target()?, self.conversion, &grid, noise()?, steps)
                    .map_err(|e| invalid(format!("budget policy: {e}")))?,
            ),
            View::Network { users, .. } if enforce => Some(
                Policy::network(target()?, self.conversion, &grid, noise()?, users, steps)
                    .map_err(|e| invalid(format!("budget policy: {e}")))?,
            ),
            _ => None,
        };
        Ok(Resolved {
            point,
            policy,
            calibrated_for: Some(k),
        })
    }

    /// The view a budget constrains for `k` contributions of a point run for `steps` (its
    /// rounds, in the federated and centralized modes and for federated DP-SGD). A network
    /// budget is offered for the DP-SGD walk on the complete graph only (N1), and refused
    /// elsewhere with the reason. Federated DP-SGD's central view is the released models, the
    /// sum of every user's message each round: the centralized mode's figure, which for it
    /// needs no assumption on hidden state (its users keep none).
    fn budget_view(
        &self,
        scenario: &Scenario,
        method: &Method,
        topology: usize,
        steps: u64,
        k: u64,
    ) -> Result<View, ScenarioError> {
        let n = scenario.users as u64;
        let view = scenario.budget_view(method);
        let key = if scenario.privacy.view_by_kind.contains_key(&method.kind()) {
            format!("privacy.view-by-kind.{}", method.kind().as_str())
        } else {
            "privacy.view".to_string()
        };
        Ok(match view {
            BudgetView::Network => {
                if !matches!(method, Method::Walk(Algorithm::Sgd(_))) {
                    return Err(ScenarioError::Invalid(format!(
                        "{key} = \"network\" is for the DP-SGD walk: {ADMM_NETWORK_WITHDRAWN}; use view = \"local\" or algorithm.kind = \"dp-sgd\""
                    )));
                }
                if !self.is_complete(topology) {
                    return Err(ScenarioError::Invalid(format!(
                        "{key} = \"network\" calibrates on the complete graph's path-hidden figure (N1); on other graphs it is not offered yet: use a complete topology, or view = \"local\""
                    )));
                }
                View::Network {
                    users: n,
                    steps,
                    cap: k,
                }
            }
            BudgetView::Local => View::Local { contributions: k },
            BudgetView::Central => match (method, scenario.algorithm.mode) {
                (Method::FedSgd(_), _) | (_, Mode::Centralized) => View::Centralized {
                    rounds: k,
                    users: n,
                },
                (_, Mode::Federated) => View::Federated {
                    rounds: steps,
                    sampling_rate: scenario.sampling_rate(),
                },
                (_, Mode::Decentralized) => {
                    return Err(ScenarioError::Invalid(format!(
                        "{key} = \"central\" is for the federated and centralized modes, and for kind = \"fed-sgd\""
                    )));
                }
            },
        })
    }
}
