//! `calibrate`'s document: the smallest σ meeting a target (ε, δ) for a view of a scenario, by
//! bisection on the accountant itself ([`crate::calibrate::calibrate`]).
//!
//! How each view reads the scenario:
//! - local: K contributions per user (it bounds what every other user learns too);
//! - network: the DP-SGD walk on the complete graph (N1, path hidden): a walk of `--total-steps`
//!   steps (or n·K for `--steps-per-user K`), each user capped at K contributions; no network
//!   bound holds for the ADMM walk;
//! - centralized: K rounds of all n users (each user contributes once per round);
//! - federated: `R = ceil(K / q)` rounds with Poisson sampling at rate q, so that each user
//!   contributes K times in expectation.

use super::walk::notes;
use super::{Conversions, QueryError, ScenarioDoc, ScenarioQuery};
use crate::calibrate::{REL_TOL, View, calibrate};
use crate::rdp::DpGuarantee;
use crate::walk::ASSUMPTIONS;
use serde::Serialize;

/// What the final-model views assume (see [`crate::central`]).
const CENTRAL_ASSUMPTIONS: [&str; 1] = [
    "each round is accounted as a mechanism of the released model history only, although every user's hidden u_j carries its own past noise",
];

/// What the federated view adds to [`CENTRAL_ASSUMPTIONS`].
const FEDERATED_ASSUMPTION: &str = "users take part in each round independently with probability q (Poisson sampling; a fixed m users per round is only approximated by q = m/n)";

/// Which observer σ is calibrated against (`--view`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CalibrateView {
    /// An eavesdropper who sees every token (needs no assumption).
    Local,
    /// Every other user of a DP-SGD walk on the complete graph (path hidden).
    Network,
    /// The final model of the centralized mode (all users every round).
    Centralized,
    /// The final model of the federated mode (Poisson-sampled users, `--sample-rate`).
    Federated,
}

impl CalibrateView {
    /// Every view, in the CLI's order.
    pub const ALL: [CalibrateView; 4] = [
        CalibrateView::Local,
        CalibrateView::Network,
        CalibrateView::Centralized,
        CalibrateView::Federated,
    ];

    /// The name the flag takes and the document prints.
    pub fn name(self) -> &'static str {
        match self {
            CalibrateView::Local => "local",
            CalibrateView::Network => "network",
            CalibrateView::Centralized => "centralized",
            CalibrateView::Federated => "federated",
        }
    }
}

/// `calibrate`'s options.
#[derive(Debug, Clone, PartialEq)]
pub struct CalibrateQuery {
    /// Target ε > 0 (`--epsilon`; δ is `conversions.delta`).
    pub epsilon: f64,
    /// The view to protect against.
    pub view: CalibrateView,
    /// The scenario.
    pub scenario: ScenarioQuery,
    /// Poisson user-sampling rate q ∈ (0, 1] of the federated view (`--sample-rate`).
    pub sample_rate: Option<f64>,
    /// Orders, δ, conversion.
    pub conversions: Conversions,
}

/// The target `calibrate` met.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct TargetDoc {
    /// ε.
    pub epsilon: f64,
    /// δ.
    pub delta: f64,
}

/// `calibrate --json`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CalibrateReport {
    /// The view's name.
    pub view: &'static str,
    /// The smallest σ found.
    pub sigma: f64,
    /// C as given.
    pub clip: f64,
    /// `user-level` or `record-level` (`--min-records`, `--feature-norm`).
    pub unit: &'static str,
    /// The clip σ is calibrated with: `clip`, or at record level `min(C, γ·G₂/m)`.
    pub accounted_clip: f64,
    /// ε achieved at σ.
    pub epsilon: f64,
    /// δ.
    pub delta: f64,
    /// `μ` when ε is the exact Gaussian conversion.
    pub exact_gaussian_mu: Option<f64>,
    /// The RDP figure at σ (above ε when ε is exact).
    pub rdp_epsilon: f64,
    /// The order of the RDP figure.
    pub order: f64,
    /// The conversion's name.
    pub conversion: &'static str,
    /// The target.
    pub target: TargetDoc,
    /// The bisection's relative tolerance on σ.
    pub relative_tolerance: f64,
    /// The scenario as read.
    pub scenario: ScenarioDoc,
    /// Rounds of the final-model views.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rounds: Option<u64>,
    /// The federated view's Poisson sampling rate.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sample_rate: Option<f64>,
    /// How the scenario was read, in words.
    pub notes: Vec<String>,
    /// What the figure assumes (empty for the local view).
    pub assumptions: Vec<&'static str>,
    /// The scenario in one line, for people.
    #[serde(skip)]
    pub describe: String,
    /// The guarantee achieved, as the accountant returned it.
    #[serde(skip)]
    pub achieved: DpGuarantee,
}

impl CalibrateReport {
    /// The smallest σ meeting `query`'s target.
    ///
    /// # Errors
    /// The scenario's refusals ([`ScenarioQuery::load`]), `--sample-rate` missing, out of range
    /// or given to another view than federated, the network view off the complete graph, and the
    /// calibration's own refusals (target, δ, a σ that cannot meet it).
    pub fn new(query: &CalibrateQuery) -> Result<Self, QueryError> {
        let scenario = query.scenario.load()?;
        let conv = &query.conversions;
        let orders = conv.orders()?;
        let k = scenario.contributions;
        let n = scenario.topology.n() as u64;
        if query.sample_rate.is_some() && query.view != CalibrateView::Federated {
            return Err(QueryError::Refused(
                "--sample-rate applies to --view federated only".into(),
            ));
        }
        let accounted = query.scenario.accounted()?;
        let mut notes = notes(&scenario, &accounted);
        let mut assumptions: Vec<&'static str> = Vec::new();
        // What the final-model views add to the document: their rounds and sampling rate.
        let (mut rounds, mut sample_rate) = (None, None);
        let view = match query.view {
            CalibrateView::Local => View::Local { contributions: k },
            CalibrateView::Network => {
                if !scenario.is_complete() {
                    return Err(QueryError::Refused(
                        "--view network calibrates the DP-SGD walk on the complete graph (--complete N): on other graphs it is not offered yet; use --view local, which bounds every observer".into(),
                    ));
                }
                let steps = scenario.walk_steps();
                notes.push(format!(
                    "the DP-SGD walk only (no network bound is proved for the ADMM walk); a walk of {steps} steps, each user's contributions capped at K = {k}; the observer sees the token at its visits and the final model, the path hidden from it"
                ));
                assumptions.extend(ASSUMPTIONS);
                View::Network {
                    users: n,
                    steps,
                    cap: k,
                }
            }
            CalibrateView::Centralized => {
                notes.push(format!(
                    "{k} rounds of all {n} users (one contribution per user per round)"
                ));
                rounds = Some(k);
                assumptions.extend(CENTRAL_ASSUMPTIONS);
                View::Centralized {
                    rounds: k,
                    users: n,
                }
            }
            CalibrateView::Federated => {
                let Some(q) = query.sample_rate else {
                    return Err(QueryError::Refused(
                        "--view federated needs --sample-rate Q".into(),
                    ));
                };
                if !(q > 0.0 && q <= 1.0) {
                    return Err(QueryError::Refused(format!(
                        "--sample-rate must be in (0, 1], got {q}"
                    )));
                }
                let r = (k as f64 / q).ceil() as u64;
                notes.push(format!(
                    "R = ceil(K / q) = {r} rounds at sampling rate {q}: each user contributes K = {k} times in expectation"
                ));
                (rounds, sample_rate) = (Some(r), Some(q));
                assumptions.extend(CENTRAL_ASSUMPTIONS);
                assumptions.push(FEDERATED_ASSUMPTION);
                View::Federated {
                    rounds: r,
                    sampling_rate: q,
                }
            }
        };
        let cal = calibrate(
            &view,
            &orders,
            accounted.clip,
            query.epsilon,
            conv.delta,
            conv.conversion,
            REL_TOL,
        )
        .map_err(|source| QueryError::Calibration {
            view: query.view.name(),
            source,
        })?;
        Ok(CalibrateReport {
            view: query.view.name(),
            sigma: cal.sigma,
            clip: query.scenario.clip,
            unit: accounted.unit(),
            accounted_clip: accounted.clip,
            epsilon: cal.achieved.epsilon,
            delta: cal.achieved.delta,
            exact_gaussian_mu: cal.achieved.gaussian_mu,
            rdp_epsilon: cal.achieved.rdp_epsilon,
            order: cal.achieved.order,
            conversion: conv.conversion.name(),
            target: TargetDoc {
                epsilon: query.epsilon,
                delta: conv.delta,
            },
            relative_tolerance: REL_TOL,
            scenario: scenario.doc(),
            rounds,
            sample_rate,
            notes,
            assumptions,
            describe: scenario.describe(),
            achieved: cal.achieved,
        })
    }
}
