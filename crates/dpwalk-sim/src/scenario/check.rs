//! The checks of a scenario that its sections' own types cannot make: ranges of the top-level
//! keys, keys that must fit each other (`mode` and `blocks-per-round`, the budget's view and the
//! kinds), each refusal naming its key as [`SpecError`] does.

use super::{BudgetView, PendingPoint, STEPS_KEY, Scenario, ScenarioError, reproduce};
use crate::algorithm::{AlgorithmName, Mode};
use dpwalk_core::spec::{SpecError, check_delta};

impl Scenario {
    /// Checks the scenario-level ranges that the sections' own types do not, and returns the
    /// validated sweep points.
    pub fn check(&self) -> Result<Vec<PendingPoint>, ScenarioError> {
        let at = |key: &[&str], message: String| Err(SpecError::new(key, message).into());
        if self.users < 1 {
            return at(&["users"], "must be >= 1".into());
        }
        if self.steps == 0 {
            return at(&["steps"], "must be >= 1".into());
        }
        if self.repetitions == 0 {
            return at(&["repetitions"], "must be >= 1".into());
        }
        if self.eval_every == Some(0) {
            return at(&["eval-every"], "must be >= 1".into());
        }
        check_delta(&["privacy", "delta"], self.privacy.delta)?;
        self.check_kinds()?;
        reproduce::check(self)?;
        if let Some(tune) = &self.tune {
            tune.check()?;
        }
        self.check_views()?;
        if let Some(bad) = self
            .output
            .orders
            .iter()
            .find(|&&a| !(a > 1.0 && a.is_finite()))
        {
            return at(
                &["output", "orders"],
                format!("must be > 1 and finite, got {bad}"),
            );
        }
        let blocks = &["algorithm", "blocks-per-round"];
        match (self.algorithm.mode, self.algorithm.blocks_per_round) {
            (Mode::Federated, None) => {
                return at(blocks, "mode = \"federated\" needs it (m)".into());
            }
            (Mode::Federated, Some(m)) if m == 0 || m > self.users => {
                return at(
                    blocks,
                    format!(
                        "must be in 1..={} (the number of users), got {m}",
                        self.users
                    ),
                );
            }
            (Mode::Decentralized | Mode::Centralized, Some(_)) => {
                return at(blocks, "is only for mode = \"federated\"".into());
            }
            _ => {}
        }
        self.points()
    }

    /// What the kinds need of the rest of the scenario: the baselines run whole rounds (each kind's `steps` counts user updates, `users` per
    /// round); a kind's own `steps` is an integer >= 1.
    fn check_kinds(&self) -> Result<(), ScenarioError> {
        for kind in self.kinds() {
            let name = kind.as_str();
            if kind.is_walk() {
                if kind == AlgorithmName::DpSgd && self.algorithm.mode != Mode::Decentralized {
                    return Err(SpecError::new(
                        &["algorithm", "mode"],
                        "dp-sgd is the walk baseline: it needs mode = \"decentralized\" (kind = \"fed-sgd\" is its federated twin)",
                    )
                    .into());
                }
                continue;
            }
            let steps = self.steps_for(kind)?;
            if steps < self.users as u64 {
                let own = self
                    .by_kind
                    .get(&kind)
                    .is_some_and(|t| t.contains_key(STEPS_KEY));
                let key: &[&str] = if own {
                    &["by-kind", name, STEPS_KEY]
                } else {
                    &["steps"]
                };
                return Err(SpecError::new(
                    key,
                    format!(
                        "kind = \"{name}\" runs synchronous rounds of one update per user: steps = {steps} is less than one round of {} users",
                        self.users
                    ),
                )
                .into());
            }
        }
        Ok(())
    }

    /// Every kind's budget view fits it: the network view is the walk's (a DP-SGD walk's: the
    /// ADMM walk's is refused with its reason when a budget point is resolved), the central view
    /// is dpwalk's federated and centralized modes' and federated DP-SGD's, the seed baselines
    /// are proved in the local view only. (`[privacy.view-by-kind]` may name kinds the sweep
    /// does not run, as `[by-kind]` may: a sweep narrowed by `--set` keeps its views.)
    fn check_views(&self) -> Result<(), ScenarioError> {
        for kind in self.kinds() {
            let Some(view) = self.view_given(kind) else {
                continue;
            };
            let name = kind.as_str();
            let key: &[&str] = if self.privacy.view_by_kind.contains_key(&kind) {
                &["privacy", "view-by-kind", name]
            } else {
                &["privacy", "view"]
            };
            let walk_mode = self.algorithm.mode == Mode::Decentralized;
            let refusal = match (view, kind) {
                (BudgetView::Local, _) => None,
                (BudgetView::Network, AlgorithmName::Admm | AlgorithmName::DpSgd) if !walk_mode => {
                    Some("\"network\" is for the walk (mode = \"decentralized\", DP-SGD)".to_string())
                }
                (BudgetView::Central, AlgorithmName::Admm | AlgorithmName::DpSgd) if walk_mode => {
                    Some("\"central\" is for the federated and centralized modes, and for kind = \"fed-sgd\"".to_string())
                }
                (BudgetView::Network, AlgorithmName::FedSgd) => Some(
                    "kind = \"fed-sgd\" has no walk: its views are \"local\" and \"central\"".to_string(),
                ),
                (_, AlgorithmName::Admm | AlgorithmName::DpSgd | AlgorithmName::FedSgd) => None,
                _ => Some(format!(
                    "kind = \"{name}\" is proved only in the local view (an eavesdropper on every message); use view = \"local\""
                )),
            };
            if let Some(message) = refusal {
                return Err(SpecError::new(key, message).into());
            }
        }
        Ok(())
    }
}
