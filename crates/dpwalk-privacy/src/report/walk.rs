//! `account walk`'s document: per-user figures of the private walk on a topology
//! ([`crate::walk`]): the local ε of every step; for a DP-SGD walk, the path-hidden network ε (N1
//! on the complete graph, N3 against the worst observer on other graphs up to 200 users) with
//! its assumptions. No network figure is given where none is proved (ADMM) or computed (cost),
//! and the document says why.

use super::{Accounted, Conversions, QueryError, Scenario, ScenarioDoc, ScenarioQuery};
use crate::local::local_view;
use crate::network::mixture::MAX_PAIR_USERS;
use crate::network::paper_closed_form;
use crate::rdp::RdpCurve;
use crate::walk::{
    ADMM_NETWORK_WITHDRAWN, ASSUMPTIONS, Figure, NOT_OFFERED_COST, PATH_HIDDEN, PathHidden, Setup,
    path_hidden,
};
use crate::{Noise, PrivacyError};
use dpwalk_core::topology::Topology;
use serde::Serialize;

/// Which views `account walk` reports (`--view`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WalkView {
    /// An eavesdropper who sees every token (needs no assumption).
    Local,
    /// Every other user, who sees the token when it visits them, and the final model.
    Network,
    /// Both.
    Both,
}

impl WalkView {
    /// Every view, in the CLI's order.
    pub const ALL: [WalkView; 3] = [WalkView::Local, WalkView::Network, WalkView::Both];

    /// The name the flag takes and the document prints.
    pub fn name(self) -> &'static str {
        match self {
            WalkView::Local => "local",
            WalkView::Network => "network",
            WalkView::Both => "both",
        }
    }
}

/// The step the walk runs, which decides which network figure, if any, is proved (`--step`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Step {
    /// The private ADMM step: local figures only.
    Admm,
    /// DP-SGD on the walk (memoryless): the path-hidden network figure.
    DpSgd,
}

impl Step {
    /// Every step, in the CLI's order.
    pub const ALL: [Step; 2] = [Step::Admm, Step::DpSgd];

    /// The name the flag takes and the document prints.
    pub fn name(self) -> &'static str {
        match self {
            Step::Admm => "admm",
            Step::DpSgd => "dp-sgd",
        }
    }
}

/// `account walk`'s options.
#[derive(Debug, Clone, PartialEq)]
pub struct WalkQuery {
    /// The scenario.
    pub scenario: ScenarioQuery,
    /// Noise σ > 0 of each step (`--sigma`).
    pub sigma: f64,
    /// The step the walk runs.
    pub step: Step,
    /// Which views to report.
    pub view: WalkView,
    /// Also the n × n matrix of network ε (`--pairs`).
    pub pairs: bool,
    /// Orders, δ, conversion.
    pub conversions: Conversions,
}

/// One row of the per-user report. On the complete graph (or without a network view) every user
/// is alike and the report has one row with `user = null`, `all = true`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct UserDoc {
    /// The user, or `null` for every user at once.
    pub user: Option<usize>,
    /// Whether the row is every user's.
    pub all: bool,
    /// K, the contributions each user is capped at.
    pub contributions: u64,
    /// The local figure (`null` with `--view network`).
    pub local: Option<Figure>,
    /// The network figure, where one is proved and computed.
    pub network: Option<Figure>,
    /// What the network figure is (`network (path hidden)`).
    pub network_label: Option<&'static str>,
    /// The observer of the network figure: `null` on the complete graph and for the coalition
    /// of every observer beyond the user's neighbours.
    pub worst_observer: Option<usize>,
}

/// The worst (user, observer) pair of the network view.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct WorstDoc {
    /// The user (`null` when all are alike).
    pub user: Option<usize>,
    /// The observer (`null` on the complete graph, or the coalition).
    pub observer: Option<usize>,
    /// The figure.
    #[serde(flatten)]
    pub figure: Figure,
}

/// The paper's closed form, printed for comparison only.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ClosedFormDoc {
    /// What it is, and that it is not a bound used here.
    pub label: &'static str,
    /// Its ε.
    pub epsilon: Option<f64>,
    /// Its order.
    pub order: Option<f64>,
    /// The whole figure, for people.
    #[serde(skip)]
    pub figure: Figure,
}

/// `account walk --json`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct WalkReport {
    /// The scenario as read.
    pub scenario: ScenarioDoc,
    /// `admm` or `dp-sgd`.
    pub step: &'static str,
    /// σ.
    pub sigma: f64,
    /// C as given.
    pub clip: f64,
    /// `user-level` or `record-level` (`--min-records`, `--feature-norm`).
    pub unit: &'static str,
    /// The clip every figure is accounted with: `clip`, or at record level `min(C, γ·G₂/m)`.
    pub accounted_clip: f64,
    /// δ.
    pub delta: f64,
    /// The conversion's name.
    pub conversion: &'static str,
    /// `local`, `network` or `both`.
    pub view: &'static str,
    /// Steps of the walk the network view is computed for.
    pub walk_steps: u64,
    /// Why no network figure is given here (`null` when one is).
    pub network_withheld: Option<String>,
    /// What the network figures are (`network (path hidden)`; `null` without them).
    pub network_label: Option<&'static str>,
    /// What the network figures charge, in words (`null` without them).
    pub network_charges: Option<String>,
    /// One row per user, or one for all.
    pub users: Vec<UserDoc>,
    /// The worst pair of the network view.
    pub worst: Option<WorstDoc>,
    /// The paper's closed form on the complete graph, for comparison.
    pub paper_closed_form: Option<ClosedFormDoc>,
    /// The assumptions of the network figures (empty without them).
    pub assumptions: Vec<&'static str>,
    /// The n × n matrix of network ε (row = user, column = observer), with `--pairs`.
    pub pairs: Option<Vec<Vec<f64>>>,
    /// The scenario in one line, for people.
    #[serde(skip)]
    pub describe: String,
    /// How K was derived and what a record-level figure protects, for people.
    #[serde(skip)]
    pub notes: Vec<String>,
    /// The number of orders.
    #[serde(skip)]
    pub order_count: usize,
}

/// Why no network figure is given, when none is.
fn no_network_reason(step: Step, topology: &Topology) -> Option<&'static str> {
    match step {
        Step::Admm => Some(ADMM_NETWORK_WITHDRAWN),
        Step::DpSgd
            if !matches!(topology, Topology::Complete { .. }) && topology.n() > MAX_PAIR_USERS =>
        {
            Some(NOT_OFFERED_COST)
        }
        Step::DpSgd => None,
    }
}

/// The walk's note on what the network figures charge.
fn walk_note(steps: u64, k: u64) -> String {
    format!(
        "a walk of {steps} steps, each user's contributions capped at K = {k} by the budget \
         policy (spent users take noise-only steps); the observer sees the token at its visits \
         and the final model; the path is hidden from it and does not depend on the data"
    )
}

impl WalkReport {
    /// The report of `query`.
    ///
    /// # Errors
    /// The scenario's refusals ([`ScenarioQuery::load`]), σ or C refused by the accountant, δ
    /// outside (0, 1), `--pairs` or `--view network` where there is no network figure (the ADMM
    /// walk, whose network view is withdrawn; a graph too large for it), and a network view that
    /// cannot be computed.
    pub fn new(query: &WalkQuery) -> Result<Self, QueryError> {
        let scenario = query.scenario.load()?;
        let accounted = query.scenario.accounted()?;
        let noise =
            Noise::new(query.sigma, accounted.clip).map_err(|source| QueryError::Invalid {
                flags: "--sigma or --clip",
                source,
            })?;
        let conv = &query.conversions;
        let setup = Setup {
            orders: conv.orders()?,
            noise,
            delta: conv.delta,
            conversion: conv.conversion,
        };
        // δ is checked first, so that the message names the flag.
        RdpCurve::zero(&setup.orders)
            .to_dp(setup.delta, setup.conversion)
            .map_err(|source| QueryError::Invalid {
                flags: "--delta",
                source,
            })?;
        let n = scenario.topology.n();
        let k = scenario.contributions;
        let steps = scenario.walk_steps();
        let reason = no_network_reason(query.step, &scenario.topology);
        if query.pairs && query.view == WalkView::Local {
            return Err(QueryError::Refused(
                "--pairs lists network figures: use it with --view network or both".into(),
            ));
        }
        if let (true, Some(reason)) = (query.pairs, reason) {
            return Err(QueryError::Refused(format!(
                "--pairs lists network figures, and there are none here: {reason}"
            )));
        }
        let (network, withheld): (Option<PathHidden>, Option<String>) = match (query.view, reason) {
            (WalkView::Local, _) => (None, reason.map(String::from)),
            (_, Some(r)) => (None, Some(r.to_string())),
            _ => match path_hidden(&setup, &scenario.topology, steps, k, query.pairs) {
                Ok(p) => (Some(p), None),
                Err(e @ PrivacyError::NetworkCost { .. }) if !query.pairs => {
                    (None, Some(e.to_string()))
                }
                Err(e) => return Err(QueryError::Network(e)),
            },
        };
        // Asked for the network figure alone, a document without one would answer nothing.
        if let (WalkView::Network, Some(reason)) = (query.view, &withheld) {
            return Err(QueryError::Refused(format!(
                "--view network asks for the network figure only, and there is none here: {reason}"
            )));
        }
        let local: Figure = local_view(&setup.orders, noise, k)
            .to_dp(setup.delta, setup.conversion)?
            .into();
        let show_local = query.view != WalkView::Network;
        let all = network.as_ref().is_none_or(|p| p.users.len() == 1);
        let users = user_rows(network.as_ref(), all, k, show_local.then_some(local));
        let closed_form = match (&network, &scenario.topology) {
            (Some(_), Topology::Complete { n }) => {
                let curve = paper_closed_form(&setup.orders, noise, k, *n as u64)?;
                let f = Figure::from(curve.to_dp(setup.delta, setup.conversion)?);
                Some(ClosedFormDoc {
                    label: "paper (Cyffers, Bellet & Basu 2023, Theorem 4): 8 alpha K C^2 ln n / (sigma^2 n); for comparison only, not a bound used here",
                    epsilon: f.epsilon,
                    order: f.order,
                    figure: f,
                })
            }
            _ => None,
        };
        Ok(WalkReport {
            scenario: scenario.doc(),
            step: query.step.name(),
            sigma: noise.sigma(),
            clip: query.scenario.clip,
            unit: accounted.unit(),
            accounted_clip: noise.clip(),
            delta: setup.delta,
            conversion: setup.conversion.name(),
            view: query.view.name(),
            walk_steps: steps,
            network_withheld: withheld,
            network_label: network.as_ref().map(|_| PATH_HIDDEN),
            network_charges: network.as_ref().map(|_| walk_note(steps, k)),
            worst: worst(network.as_ref(), all),
            users,
            paper_closed_form: closed_form,
            assumptions: if network.is_some() {
                ASSUMPTIONS.to_vec()
            } else {
                Vec::new()
            },
            pairs: network
                .as_ref()
                .and_then(|p| p.pairs.as_ref())
                .map(|p| p.chunks(n.max(1)).map(<[f64]>::to_vec).collect()),
            describe: scenario.describe(),
            notes: notes(&scenario, &accounted),
            order_count: setup.orders.len(),
        })
    }

    /// Whether every user is alike (one row for all).
    pub fn all_alike(&self) -> bool {
        self.users.first().is_some_and(|u| u.all)
    }
}

/// How K was derived and what a record-level figure protects.
pub(super) fn notes(scenario: &Scenario, accounted: &Accounted) -> Vec<String> {
    scenario
        .contributions_note()
        .into_iter()
        .chain(accounted.unit_note())
        .collect()
}

/// One row per user, or one for all.
fn user_rows(
    network: Option<&PathHidden>,
    all: bool,
    k: u64,
    local: Option<Figure>,
) -> Vec<UserDoc> {
    match network {
        Some(p) if !all => p
            .users
            .iter()
            .enumerate()
            .map(|(i, f)| UserDoc {
                user: Some(i),
                all: false,
                contributions: k,
                local,
                network: Some(f.figure),
                network_label: Some(PATH_HIDDEN),
                worst_observer: f.observer,
            })
            .collect(),
        other => vec![UserDoc {
            user: None,
            all: true,
            contributions: k,
            local,
            network: other.and_then(|p| p.users.first()).map(|f| f.figure),
            network_label: other.map(|_| PATH_HIDDEN),
            worst_observer: None,
        }],
    }
}

/// The worst (user, observer) pair: the first user among equals.
fn worst(network: Option<&PathHidden>, all: bool) -> Option<WorstDoc> {
    // `max_by` keeps the last, so scan backwards.
    network.and_then(|p| {
        p.users
            .iter()
            .enumerate()
            .rev()
            .max_by(|a, b| {
                a.1.figure
                    .epsilon_or_inf()
                    .total_cmp(&b.1.figure.epsilon_or_inf())
            })
            .map(|(i, f)| WorstDoc {
                user: (!all).then_some(i),
                observer: f.observer,
                figure: f.figure,
            })
    })
}
