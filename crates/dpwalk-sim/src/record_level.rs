//! The record-level unit (`[privacy] unit = "record"`) for dpwalk's own kinds: the ADMM walk and
//! its federated and centralized schedules, DP-SGD on the walk, and federated DP-SGD.
//!
//! Their accountant sees the sensitivity only through the clip `C` (`dpwalk_privacy::Noise`);
//! at record level it is given [`dpwalk_privacy::unit::record_level_clip`] instead,
//! `min(C, γG₂/m)` (ADMM) or `min(C, G₂/m)` (DP-SGD), for the user with the fewest records `m`
//! (the largest clip: a bound for every user) and the per-record gradient bound `G₂` of the
//! problem ([`Problem::record_grad_bound`]). Every view, the calibration and the budget policy
//! then take that clip from [`RecordLevel::clip`], through `crate::privacy`; the step itself still
//! clips at `C`, so the noise it adds is the calibrated σ whatever the unit.
//!
//! Refused, with the key: the squared loss (no per-record gradient bound) and a user without
//! records (the worst user's `m` would be 0). The seed baselines have their own record-level
//! sensitivities (`crate::baseline_privacy`) and do not use this.

use crate::algorithm::AlgorithmName;
use crate::method::Method;
use crate::scenario::{Scenario, ScenarioError, UnitName};
use dpwalk_core::problem::Problem;
use dpwalk_core::spec::SpecError;
use dpwalk_core::step::Algorithm;
use dpwalk_privacy::unit::record_level_clip;
use serde::Serialize;

/// The record-level unit itself: what every record-level figure means.
const UNIT: &str = "neighbouring datasets differ in one record of one user (record-level unit)";

/// What the record-level clip `min(C, γG₂/m)` (or `min(C, G₂/m)`) of dpwalk's own kinds needs
/// of the records: `G₂` is read from the run's data.
const DATA_NORM: &str = "every record, the replaced one and its replacement alike, has a feature \
     norm of at most the largest feature norm of the run's data (grad_bound = loss factor x that \
     norm: logistic 1, multinomial sqrt(2)); a public bound on the feature domain makes this \
     data-independent";

/// What the ADMM's `γG₂/m` needs of its solver (DP-SGD computes its gradient exactly).
const EXACT_PROX: &str = "the local prox is exact: a solver stopped at distance tau from it adds \
     tau to the clip (the prox certificate of the logistic and multinomial solvers is about \
     1e-13 relative)";

/// What penalty perturbation's proof (\[ZKL\]) needs of the records, at either unit: the run's
/// records are checked, a neighbour's cannot be.
const PP_DOMAIN: &str = "every record, those of the neighbouring dataset included, has a feature \
     norm of at most 1 (penalty perturbation's proof; the run's records are checked)";

/// What penalty perturbation's proof needs of its solver: it inverts the exact minimizer.
const PP_EXACT: &str = "each node's perturbed local problem is solved exactly (the proof inverts \
     its minimizer; a round whose solve is certified above 1e-10 relative stops the run)";

/// What a figure of `kind` at `unit` assumes beyond the accountant's own proof, in
/// `summary.json` and the audit's bounds: only what that kind's sensitivity rests on.
/// DP-IADMM and IPADMM clip every record themselves, so their record-level sensitivity needs
/// nothing of the data.
pub fn assumptions(kind: AlgorithmName, unit: UnitName) -> &'static [&'static str] {
    match (unit, kind) {
        (UnitName::User, AlgorithmName::PpAdmm) => &[PP_DOMAIN, PP_EXACT],
        (UnitName::User, _) => &[],
        (UnitName::Record, AlgorithmName::Admm) => &[UNIT, DATA_NORM, EXACT_PROX],
        (UnitName::Record, AlgorithmName::DpSgd | AlgorithmName::FedSgd) => &[UNIT, DATA_NORM],
        (UnitName::Record, AlgorithmName::DpIadmm | AlgorithmName::Ipadmm) => &[UNIT],
        (UnitName::Record, AlgorithmName::PpAdmm) => &[UNIT, PP_DOMAIN, PP_EXACT],
    }
}

/// `"record-level "` at record level, `""` at user level (the default, unlabelled): the
/// prefix of every printed figure's name.
pub fn prefix(unit: UnitName) -> &'static str {
    match unit {
        UnitName::User => "",
        UnitName::Record => "record-level ",
    }
}

/// The record-level clip's inputs, when the unit is `record` and the scenario runs one of
/// dpwalk's own kinds.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct RecordLevel {
    /// The fewest records of a user (`m` of the worst user).
    pub fewest_records: u64,
    /// A user holding that many.
    pub worst_user: usize,
    /// `G₂`: the bound on every record's loss gradient.
    pub grad_bound: f64,
}

/// The kinds this module accounts at record level.
fn accounted_here(kind: AlgorithmName) -> bool {
    kind.is_walk() || kind == AlgorithmName::FedSgd
}

impl RecordLevel {
    /// The record-level inputs of `scenario` on `problem`: `None` at user level, or when no kind
    /// of the scenario is one of dpwalk's own.
    ///
    /// # Errors
    /// [`ScenarioError::Spec`] on `privacy.unit` for a loss without a per-record gradient bound
    /// (squared) or a user without records.
    pub fn new(scenario: &Scenario, problem: &Problem) -> Result<Option<Self>, ScenarioError> {
        let kinds = scenario.kinds();
        let Some(kind) = kinds.iter().find(|k| accounted_here(**k)) else {
            return Ok(None);
        };
        if scenario.privacy.unit != UnitName::Record {
            return Ok(None);
        }
        let refuse =
            |message: String| ScenarioError::from(SpecError::new(&["privacy", "unit"], message));
        let kind = kind.as_str();
        let grad_bound = problem.record_grad_bound().ok_or_else(|| {
            refuse(format!(
                "record-level accounting of kind = \"{kind}\" needs a bound on every record's \
                 gradient, and the {:?} loss has none (its residual is unbounded): use loss = \
                 \"logistic\" or \"multinomial\", or unit = \"user\"",
                problem.loss()
            ))
        })?;
        let data = problem.data();
        let Some((worst_user, fewest)) = (0..problem.n_users())
            .map(|i| (i, data.records(i)))
            .min_by_key(|&(_, m)| m)
        else {
            return Err(refuse("the data have no users".into()));
        };
        if fewest == 0 {
            return Err(refuse(format!(
                "user {worst_user} holds no records after the partition: record-level accounting \
                 of kind = \"{kind}\" divides by the fewest records of a user (give every user \
                 at least one record, or use unit = \"user\")"
            )));
        }
        Ok(Some(Self {
            fewest_records: fewest as u64,
            worst_user,
            grad_bound,
        }))
    }

    /// The clip to account `method` with: [`record_level_clip`] for dpwalk's own kinds (the
    /// walk's ADMM and DP-SGD, federated DP-SGD), `None` for the baselines and an unclipped
    /// method.
    pub fn clip(&self, method: &Method) -> Option<f64> {
        let algorithm = match method {
            Method::Walk(a) => *a,
            Method::FedSgd(p) => Algorithm::Sgd(*p),
            _ => return None,
        };
        record_level_clip(&algorithm, self.fewest_records, self.grad_bound).ok()
    }
}

/// How a point's figures are scoped, in `summary.json`.
#[derive(Debug, Clone, Serialize)]
pub struct UnitReport {
    /// `user-level` (every record of a user replaced) or `record-level` (one record).
    pub unit: &'static str,
    /// For dpwalk's own kinds at record level: the clip the accountant used in place of `C`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub accounted_clip: Option<f64>,
    /// Its inputs.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub record_level: Option<RecordLevel>,
    /// What the figures assume beyond the accountant's proof ([`assumptions`]).
    #[serde(skip_serializing_if = "<[&str]>::is_empty")]
    pub assumptions: &'static [&'static str],
}

impl UnitReport {
    /// The report of a `kind` point at `unit`, with the record-level clip of the point where it
    /// applies.
    pub fn new(
        unit: UnitName,
        kind: AlgorithmName,
        record_level: Option<(RecordLevel, f64)>,
    ) -> Self {
        Self {
            unit: match unit {
                UnitName::User => "user-level",
                UnitName::Record => "record-level",
            },
            accounted_clip: record_level.map(|(_, c)| c),
            record_level: record_level.map(|(r, _)| r),
            assumptions: assumptions(kind, unit),
        }
    }

    /// [`prefix`] of this report's unit.
    pub fn prefix(&self) -> &'static str {
        if self.record_level() {
            prefix(UnitName::Record)
        } else {
            prefix(UnitName::User)
        }
    }

    /// Whether the figures are record-level.
    pub fn record_level(&self) -> bool {
        self.unit == "record-level"
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)] // a failed unwrap is a failed test
mod tests {
    use super::*;
    use crate::scenario::parse;
    use dpwalk_core::data::{Dataset, LabelKind, UserData};
    use dpwalk_core::problem::{Loss, Regularizer};
    use std::path::Path;

    fn scenario(sets: &[&str]) -> Scenario {
        let sets: Vec<String> = sets.iter().map(|s| s.to_string()).collect();
        parse(
            "users = 2\nsteps = 10\n[data]\nsource = \"synthetic-logistic\"\n[problem]\nloss = \"logistic\"\n[algorithm]\nclip = 1.0\n",
            Path::new("inline.toml"),
            &sets,
        )
        .unwrap()
    }

    /// Two users holding `offsets`' records of two features with norms 3 and 4·√2.
    fn problem(loss: Loss, offsets: Vec<usize>) -> Problem {
        let data = UserData {
            data: Dataset {
                features: vec![3.0, 0.0, 4.0, -4.0],
                labels: vec![1.0, 0.0],
                n_features: 2,
                label_kind: LabelKind::Classes(2),
            },
            offsets,
        };
        let data = match loss {
            Loss::Logistic => UserData {
                data: Dataset {
                    labels: vec![1.0, -1.0],
                    label_kind: LabelKind::Binary,
                    ..data.data
                },
                ..data
            },
            _ => data,
        };
        Problem::new(loss, Regularizer::None, data).unwrap()
    }

    #[test]
    fn the_worst_user_and_the_gradient_bound_come_from_the_data() {
        let s = scenario(&["privacy.unit=record"]);
        let r = RecordLevel::new(&s, &problem(Loss::Logistic, vec![0, 1, 2]))
            .unwrap()
            .unwrap();
        assert_eq!((r.fewest_records, r.worst_user), (1, 0));
        assert_eq!(r.grad_bound, 32f64.sqrt());
        let multi = problem(Loss::Multinomial { classes: 2 }, vec![0, 1, 2]);
        let r = RecordLevel::new(&s, &multi).unwrap().unwrap();
        assert_eq!(r.grad_bound, std::f64::consts::SQRT_2 * 32f64.sqrt());
        // User level, or only baselines: nothing to do here.
        let user = scenario(&[]);
        assert!(RecordLevel::new(&user, &multi).unwrap().is_none());
        let baselines = scenario(&["privacy.unit=record", "algorithm.kind=ipadmm"]);
        assert!(RecordLevel::new(&baselines, &multi).unwrap().is_none());
    }

    #[test]
    fn each_kind_assumes_only_what_its_sensitivity_rests_on() {
        use AlgorithmName::*;
        let has = |kind, unit, text| assumptions(kind, unit).contains(&text);
        // User level: the clips and the baselines' own per-record clips need nothing.
        for kind in [Admm, DpSgd, FedSgd, DpIadmm, Ipadmm] {
            assert!(assumptions(kind, UnitName::User).is_empty(), "{kind:?}");
        }
        // Penalty perturbation's proof needs ‖x‖ ≤ 1 and its exact minimizer at either unit.
        for unit in [UnitName::User, UnitName::Record] {
            assert!(has(PpAdmm, unit, PP_DOMAIN) && has(PpAdmm, unit, PP_EXACT));
            assert!(!has(PpAdmm, unit, DATA_NORM) && !has(PpAdmm, unit, EXACT_PROX));
        }
        // Record level: every figure states the unit; G₂ for dpwalk's kinds, the prox for ADMM.
        for kind in [Admm, DpSgd, FedSgd, DpIadmm, Ipadmm, PpAdmm] {
            assert!(has(kind, UnitName::Record, UNIT), "{kind:?}");
            let own = matches!(kind, Admm | DpSgd | FedSgd);
            assert_eq!(has(kind, UnitName::Record, DATA_NORM), own, "{kind:?}");
            assert_eq!(
                has(kind, UnitName::Record, EXACT_PROX),
                kind == Admm,
                "{kind:?}"
            );
        }
    }

    #[test]
    fn a_user_without_records_is_refused_with_the_key() {
        let s = scenario(&["privacy.unit=record"]);
        let err = RecordLevel::new(&s, &problem(Loss::Logistic, vec![0, 2, 2])).unwrap_err();
        let text = err.to_string();
        assert!(
            text.starts_with("`privacy.unit`: user 1 holds no records"),
            "{text}"
        );
    }
}
