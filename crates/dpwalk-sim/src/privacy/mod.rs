//! Privacy in the simulator: calibrating σ to a budget, the budget policy that enforces it,
//! and the privacy figures of `summary.json`. Every number comes from `dpwalk_privacy` (its
//! `walk`, `calibrate` and `budget` modules); this module only decides which view applies:
//! `resolve` turns a scenario's point into a runnable one, `report` gives its runs' figures.
//!
//! Budgets are on the local view (walks, every baseline), the network view (the DP-SGD walk on
//! the complete graph, N1) or the central view (dpwalk's federated and centralized modes, and
//! federated DP-SGD: [`FED_SGD_CENTRAL`]); each kind's is [`Scenario::budget_view`]. Network
//! figures are reported only
//! where one is proved, both for DP-SGD walks (`specs/network-dp-2.md`):
//! - the **path-hidden** figure ([`dpwalk_privacy::walk::PATH_HIDDEN`]; N1 on the complete graph,
//!   N3 on other graphs of at most 200 users, [`dpwalk_privacy::walk::path_hidden`]): a priori,
//!   computed once per point for its steps and the enforced budget policy's cap on each user's
//!   contributions (the point's steps when no budget is enforced); where it is refused (cost,
//!   too many users) the reason goes to the point's notes;
//! - every user's figure after the run, given the realised walk (N2,
//!   [`dpwalk_privacy::network::given_walk`], from the walk [`crate::given_walk`] records).
//!
//! ADMM walks have none ([`dpwalk_privacy::walk::ADMM_NETWORK_WITHDRAWN`]).
//!
//! The clip every figure of dpwalk's own kinds is accounted with comes from one place,
//! [`PrivacyContext::accounted_clip`]: `C` at user level, the record-level clip of
//! [`crate::record_level`] under `[privacy] unit = "record"`.

mod report;
mod resolve;

pub use report::{
    Budget, Extreme, FED_SGD_CENTRAL, GivenWalkExtreme, GivenWalkFigure, NetworkExtreme,
    NetworkView, PointPrivacy, UserRow,
};
pub use resolve::Resolved;

use crate::algorithm::Mode;
use crate::baseline_privacy::{Account, Inputs};
use crate::method::Method;
use crate::record_level::{self, RecordLevel, UnitReport};
use crate::scenario::{ConversionName, Point, Scenario, ScenarioError, UnitName};
use dpwalk_core::problem::Problem;
use dpwalk_core::spec::SpecError;
use dpwalk_core::step::Algorithm;
use dpwalk_core::topology::Topology;
use dpwalk_privacy::Noise;
use dpwalk_privacy::network::HittingOptions;
use dpwalk_privacy::rdp::{Conversion, Orders};
use dpwalk_privacy::walk::{MAX_PAIRWISE_USERS, Passage, Setup};
use std::sync::{Arc, Mutex, OnceLock};

/// A topology as the network figures need it.
#[derive(Debug)]
struct WalkGraph {
    /// Whether it is the complete graph.
    complete: bool,
    /// The topology, kept where a network figure can be computed at all (the complete graph, or
    /// at most [`MAX_PAIRWISE_USERS`] users): not copied for large graphs.
    topology: Option<Topology>,
    /// Its users.
    users: usize,
    /// The first-passage laws of the withdrawn one-contribution figure, computed on first use
    /// (only the audit still reads them, [`PrivacyContext::passage`]).
    passage: OnceLock<Result<Passage, String>>,
}

/// What a point's path-hidden figure depends on: topology, steps, cap, σ and the accounted clip
/// (bits).
type ViewKey = (usize, u64, u64, u64, u64);

/// A point's path-hidden figure, or why it is not offered.
type ComputedView = Result<Arc<NetworkView>, String>;

/// What the privacy figures of a scenario share: orders, δ, conversion, and the walk's
/// topologies with the path-hidden figures computed so far.
#[derive(Debug)]
pub struct PrivacyContext {
    orders: Orders,
    delta: f64,
    conversion: Conversion,
    /// Per topology.
    graphs: Vec<WalkGraph>,
    /// The path-hidden figures computed so far (a point's summary, `privacy_users.csv` and
    /// heatmap share one computation).
    views: Mutex<Vec<(ViewKey, ComputedView)>>,
    /// What the baselines' accounting reads of the problem and the graphs.
    baselines: Inputs,
    /// The privacy unit.
    unit: UnitName,
    /// The record-level clip's inputs for dpwalk's own kinds, under `unit = "record"`.
    record_level: Option<RecordLevel>,
    /// Users `n`: a point's rounds are its `steps` / `n` ([`crate::scenario::Scenario::rounds`]).
    users: usize,
}

fn conversion(name: ConversionName) -> Conversion {
    match name {
        ConversionName::Tight => Conversion::Tight,
        ConversionName::Classic => Conversion::Classic,
    }
}

/// Whether a point's walk has a network view: DP-SGD only.
fn has_network_view(point: &Point, scenario: &Scenario) -> bool {
    scenario.algorithm.mode == Mode::Decentralized
        && matches!(point.method, Method::Walk(Algorithm::Sgd(_)))
}

impl PrivacyContext {
    /// Orders from `[output]`, δ and conversion from `[privacy]`, the topologies a walk's network
    /// figures need, and what the baselines' accounting and the record-level unit need of
    /// `problem`.
    ///
    /// # Errors
    /// The accountant's refusal of the orders (at `output.orders`), and the record-level unit's
    /// refusals ([`RecordLevel::new`]).
    pub fn new(
        scenario: &Scenario,
        problem: &Problem,
        topologies: &[&Topology],
    ) -> Result<Self, ScenarioError> {
        let mut orders = Orders::default_grid().as_slice().to_vec();
        orders.extend(scenario.output.orders.iter().copied());
        orders.sort_by(f64::total_cmp);
        orders.dedup();
        let walks = scenario.algorithm.mode == Mode::Decentralized
            && scenario.kinds().iter().any(|k| k.is_walk());
        let graphs = topologies
            .iter()
            .map(|&t| {
                let complete = matches!(t, Topology::Complete { .. });
                WalkGraph {
                    complete,
                    topology: (walks && (complete || t.n() <= MAX_PAIRWISE_USERS))
                        .then(|| t.clone()),
                    users: t.n(),
                    passage: OnceLock::new(),
                }
            })
            .collect();
        Ok(Self {
            orders: Orders::new(&orders)
                .map_err(|e| SpecError::new(&["output", "orders"], e.to_string()))?,
            delta: scenario.privacy.delta,
            conversion: conversion(scenario.privacy.conversion),
            graphs,
            views: Mutex::new(Vec::new()),
            baselines: Inputs::new(scenario, problem, topologies),
            unit: scenario.privacy.unit,
            record_level: RecordLevel::new(scenario, problem)?,
            users: scenario.users,
        })
    }

    /// The clip dpwalk's own methods (the walk's ADMM and DP-SGD, federated DP-SGD) are
    /// accounted with: `C` at user level, [`RecordLevel::clip`] at record level; `None` when
    /// unclipped. The one place every view, calibration and budget policy takes it from.
    pub fn accounted_clip(&self, method: &Method) -> Option<f64> {
        match &self.record_level {
            Some(r) => r.clip(method),
            None => method.clip(),
        }
    }

    /// The noise (σ, accounted clip) of dpwalk's own methods and federated DP-SGD, `None` for
    /// the baselines (accounted by [`Account`]) and when unclipped.
    fn gaussian_noise(&self, method: &Method) -> Option<(f64, f64)> {
        let sigma = match method {
            Method::Walk(a) => a.sigma(),
            Method::FedSgd(p) => p.sigma(),
            _ => return None,
        };
        Some((sigma, self.accounted_clip(method)?))
    }

    /// `"record-level "` at record level, `""` at user level: the prefix of figure names.
    pub fn unit_prefix(&self) -> &'static str {
        record_level::prefix(self.unit)
    }

    /// The unit of `method`'s figures, with the record-level clip where it applies.
    pub fn unit_report(&self, method: &Method) -> UnitReport {
        let record_level = self.record_level.and_then(|r| Some((r, r.clip(method)?)));
        UnitReport::new(self.unit, method.kind(), record_level)
    }

    /// The accounting of a baseline method on topology `topology` planned for `steps` user
    /// updates (a point's horizon; `None` for dpwalk's own methods and fed-sgd). It reads every
    /// parameter but the knob, so a budget point's noiseless method will do.
    pub fn account(
        &self,
        method: &Method,
        topology: usize,
        steps: u64,
    ) -> Result<Option<Account>, ScenarioError> {
        Account::of(
            &self.baselines,
            method,
            topology,
            crate::scenario::rounds(steps, self.users),
        )
    }

    /// Whether topology `topology` is the complete graph (where the network budget is offered).
    pub fn is_complete(&self, topology: usize) -> bool {
        self.graphs.get(topology).is_some_and(|g| g.complete)
    }

    /// [`PrivacyContext::account`] of a runnable point, at its horizon.
    pub fn point_account(&self, point: &Point) -> Result<Option<Account>, ScenarioError> {
        self.account(&point.method, point.topology, point.steps)
    }

    /// The knob a baseline point runs under its paper's own accounting of `paper_epsilon` at the
    /// scenario's δ, for the point's planned rounds (`crate::reproduce`; [`Account::paper_knob`]).
    ///
    /// # Errors
    /// A point that is not a seed baseline, and the accountant's refusal.
    pub fn paper_knob(&self, point: &Point, paper_epsilon: f64) -> Result<f64, ScenarioError> {
        self.point_account(point)?
            .ok_or_else(|| {
                ScenarioError::Invalid(format!(
                    "kind = \"{}\" has no paper accounting of its own here",
                    point.name.as_str()
                ))
            })?
            .paper_knob(paper_epsilon, self.delta)
    }

    /// The orders, δ and conversion of every figure, with `noise`.
    pub fn setup(&self, noise: Noise) -> Setup {
        Setup {
            orders: self.orders.clone(),
            noise,
            delta: self.delta,
            conversion: self.conversion,
        }
    }

    /// The first-passage laws of a point's topology when its walk has a network view, for the
    /// withdrawn one-contribution figure that only the audit still reads; computed on first use.
    pub fn passage(&self, scenario: &Scenario, point: &Point) -> Option<&Passage> {
        if !has_network_view(point, scenario) {
            return None;
        }
        let graph = self.graphs.get(point.topology)?;
        graph
            .passage
            .get_or_init(|| {
                let topology = graph.topology.as_ref().ok_or_else(|| {
                    format!(
                        "pairwise network accounting is limited to {MAX_PAIRWISE_USERS} users on a non-complete graph, got {}",
                        graph.users
                    )
                })?;
                Passage::for_topology(topology, &HittingOptions::default())
                    .map_err(|e| e.to_string())
            })
            .as_ref()
            .ok()
    }
}
