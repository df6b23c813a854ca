//! Privacy in the simulator: calibrating σ to a budget, the budget policy that enforces it,
//! and the privacy figures of `summary.json`. Every number comes from `dpwalk_privacy` (its
//! `walk`, `calibrate` and `budget` modules); this module only decides which view applies.
//!
//! Budgets are on the local view (walks) or the central view (federated, centralized): no network
//! budget is offered ([`dpwalk_privacy::budget`] says why). Network figures are reported only
//! where one is proved: a DP-SGD walk's users with at most one contribution
//! ([`dpwalk_privacy::walk::NETWORK_ONE_CONTRIBUTION`]); ADMM walks have none
//! ([`dpwalk_privacy::walk::ADMM_NETWORK_WITHDRAWN`]).
//!
//! The clip every figure of dpwalk's own kinds is accounted with comes from one place,
//! [`PrivacyContext::accounted_clip`]: `C` at user level, the record-level clip of
//! [`crate::record_level`] under `[privacy] unit = "record"`.

use crate::algorithm::Mode;
use crate::baseline_privacy::{Account, Inputs};
use crate::method::Method;
use crate::record_level::{RecordLevel, UnitReport};
use crate::run::LATE_WINDOW;
use crate::run::RunResult;
use crate::scenario::{BudgetView, ConversionName, Point, Scenario, ScenarioError, UnitName};
use dpwalk_core::problem::Problem;
use dpwalk_core::spec::SpecError;
use dpwalk_core::step::Algorithm;
use dpwalk_core::topology::Topology;
use dpwalk_privacy::Noise;
use dpwalk_privacy::budget::{PLAN_QUANTILE, Policy};
use dpwalk_privacy::calibrate::{REL_TOL, View, account, calibrate};
use dpwalk_privacy::ledger::Budget as BudgetTarget;
use dpwalk_privacy::network::{Charges, HittingOptions};
use dpwalk_privacy::rdp::{Conversion, DpBound, Orders};
use dpwalk_privacy::walk::{
    ADMM_NETWORK_WITHDRAWN, ASSUMPTIONS, Figure, NETWORK_ONE_CONTRIBUTION, Passage, Setup,
    UserFigures, all_users, pair_epsilons, planned_contributions,
};
use serde::Serialize;

/// What the privacy figures of a scenario share: orders, δ, conversion, and the walk's
/// first-passage laws per topology.
#[derive(Debug)]
pub struct PrivacyContext {
    orders: Orders,
    delta: f64,
    conversion: Conversion,
    /// Per topology: the laws, or why they were not computed.
    passage: Vec<Result<Passage, String>>,
    /// What the baselines' accounting reads of the problem and the graphs.
    baselines: Inputs,
    /// The privacy unit.
    unit: UnitName,
    /// The record-level clip's inputs for dpwalk's own kinds, under `unit = "record"`.
    record_level: Option<RecordLevel>,
}

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
    /// Orders from `[output]`, δ and conversion from `[privacy]`, the walk's laws for each
    /// topology (the walk only), and what the baselines' accounting and the record-level unit
    /// need of `problem`.
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
        let passage = topologies
            .iter()
            .map(|t| {
                let walks = scenario.kinds().iter().any(|k| k.is_walk());
                if scenario.algorithm.mode != Mode::Decentralized || !walks {
                    return Err("not a walk: no network view".to_string());
                }
                Passage::for_topology(t, &HittingOptions::default()).map_err(|e| e.to_string())
            })
            .collect();
        Ok(Self {
            orders: Orders::new(&orders)
                .map_err(|e| SpecError::new(&["output", "orders"], e.to_string()))?,
            delta: scenario.privacy.delta,
            conversion: conversion(scenario.privacy.conversion),
            passage,
            baselines: Inputs::new(scenario, problem, topologies),
            unit: scenario.privacy.unit,
            record_level: RecordLevel::new(scenario, problem)?,
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
        UnitReport::new(self.unit, None).prefix()
    }

    /// The unit of `method`'s figures, with the record-level clip where it applies.
    pub fn unit_report(&self, method: &Method) -> UnitReport {
        let record_level = self.record_level.and_then(|r| Some((r, r.clip(method)?)));
        UnitReport::new(self.unit, record_level)
    }

    /// The accounting of a baseline point (`None` for dpwalk's own methods and fed-sgd).
    pub fn account(&self, point: &Point) -> Result<Option<Account>, ScenarioError> {
        Account::of(&self.baselines, &point.method, point.topology)
    }

    /// The knob a baseline point runs under its paper's own accounting of `paper_epsilon` at the
    /// scenario's δ (`crate::reproduce`; [`Account::paper_knob`]).
    ///
    /// # Errors
    /// A point that is not a seed baseline, and the accountant's refusal.
    pub fn paper_knob(&self, point: &Point, paper_epsilon: f64) -> Result<f64, ScenarioError> {
        self.account(point)?
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

    /// The laws of a point's topology when its walk has a network view.
    pub fn passage(&self, scenario: &Scenario, point: &Point) -> Option<&Passage> {
        if !has_network_view(point, scenario) {
            return None;
        }
        self.passage.get(point.topology)?.as_ref().ok()
    }

    /// Calibrates σ for a point with a budget and builds the policy that enforces it.
    pub fn resolve(&self, scenario: &Scenario, point: &Point) -> Result<Resolved, ScenarioError> {
        let Some(epsilon) = point.budget else {
            return Ok(Resolved {
                point: *point,
                policy: None,
                calibrated_for: None,
            });
        };
        let invalid = |m: String| ScenarioError::Invalid(m);
        if let Some(account) = self.account(point)? {
            let knob = account.calibrate(epsilon, self.delta, self.conversion)?;
            return Ok(Resolved {
                point: point.with_knob(knob)?,
                policy: None,
                calibrated_for: Some(scenario.rounds()),
            });
        }
        let clip = self
            .accounted_clip(&point.method)
            .ok_or_else(|| invalid("a budget needs a clip".into()))?;
        let n = scenario.users as u64;
        let walk = scenario.algorithm.mode == Mode::Decentralized;
        let fed_sgd = matches!(point.method, Method::FedSgd(_));
        let k = if fed_sgd {
            scenario.rounds()
        } else if walk {
            planned_contributions(scenario.steps, 1.0 / n as f64, PLAN_QUANTILE)
        } else {
            scenario.steps
        };
        let view = if fed_sgd {
            View::Local { contributions: k }
        } else {
            self.budget_view(scenario, k)
        };
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
        let point = point.with_knob(cal.sigma)?;
        // A central budget is accounted on rounds, not per user: nothing to enforce per user;
        // federated DP-SGD's users contribute exactly the planned rounds.
        let policy = match view {
            View::Local { .. } if scenario.privacy.enforce && !fed_sgd => {
                let noise = Noise::new(cal.sigma, clip).map_err(|e| invalid(e.to_string()))?;
                let target =
                    BudgetTarget::new(epsilon, self.delta).map_err(|e| invalid(e.to_string()))?;
                Some(
                    Policy::new(target, self.conversion, &grid, noise, scenario.steps)
                        .map_err(|e| invalid(format!("budget policy: {e}")))?,
                )
            }
            _ => None,
        };
        Ok(Resolved {
            point,
            policy,
            calibrated_for: Some(k),
        })
    }

    /// The local or central view a budget constrains for `k` contributions (rounds).
    fn budget_view(&self, scenario: &Scenario, k: u64) -> View {
        let n = scenario.users as u64;
        match (scenario.privacy.view, scenario.algorithm.mode) {
            (Some(BudgetView::Central) | None, Mode::Federated) => View::Federated {
                rounds: scenario.steps,
                sampling_rate: scenario
                    .algorithm
                    .blocks_per_round
                    .unwrap_or(scenario.users) as f64
                    / n as f64,
            },
            (Some(BudgetView::Central) | None, Mode::Centralized) => View::Centralized {
                rounds: scenario.steps,
                users: n,
            },
            _ => View::Local { contributions: k },
        }
    }

    /// Each user's contributions in one run, with the horizons the run knows.
    fn charges(run: &RunResult) -> Vec<Charges> {
        let mut recent: Vec<Vec<u64>> = vec![Vec::new(); run.per_user.len()];
        let steps = run.steps;
        for &(user, seq) in &run.late {
            if let Some(r) = recent.get_mut(user) {
                r.push(steps - seq);
            }
        }
        run.per_user
            .iter()
            .zip(&recent)
            .map(|(&k, r)| Charges::recent(k, r, LATE_WINDOW))
            .collect()
    }

    /// The privacy figures of a point's runs: the worst over repetitions and users.
    pub fn report(
        &self,
        scenario: &Scenario,
        resolved: &Resolved,
        runs: &[RunResult],
    ) -> PointPrivacy {
        let point = &resolved.point;
        let budget = point.budget.map(|epsilon| Budget {
            epsilon,
            view: scenario.budget_view(&point.method),
            calibrated_for_contributions: resolved.calibrated_for.unwrap_or(0),
            planned_quantile: PLAN_QUANTILE,
            enforced: resolved.policy.is_some(),
            skipped_contributions: runs.iter().map(|r| r.skipped).sum::<u64>() as f64
                / runs.len().max(1) as f64,
        });
        let base = PointPrivacy {
            delta: self.delta,
            conversion: match self.conversion {
                Conversion::Tight => "tight (Balle et al. 2020 / Canonne, Kamath & Steinke 2020)",
                Conversion::Classic => "classic (eps(alpha) + ln(1/delta)/(alpha - 1))",
            },
            budget,
            local: None,
            network: None,
            central: None,
            notes: Vec::new(),
            unit: self.unit_report(&point.method),
        };
        if let Ok(Some(account)) = self.account(point) {
            let bound = account.bound(&self.orders, &point.method, self.delta, self.conversion);
            return PointPrivacy {
                local: Some(Extreme {
                    figure: bound.map_or(
                        Figure {
                            epsilon: None,
                            order: None,
                        },
                        Figure::from,
                    ),
                    user: None,
                    contributions: scenario.rounds(),
                }),
                notes: vec![match bound {
                    Some(_) => format!(
                        "{}local view of the worst user over the planned {} rounds (dpwalk_privacy::baseline)",
                        base.unit.prefix(),
                        scenario.rounds()
                    ),
                    None => "no noise: no privacy guarantee".to_string(),
                }],
                ..base
            };
        }
        let Some((sigma, clip)) = self.gaussian_noise(&point.method) else {
            return PointPrivacy {
                notes: vec!["no clipping: sensitivity is unbounded, no privacy guarantee".into()],
                ..base
            };
        };
        let Ok(noise) = Noise::new(sigma, clip) else {
            return PointPrivacy {
                notes: vec!["sigma = 0: no privacy guarantee".into()],
                ..base
            };
        };
        let setup = self.setup(noise);
        let mut out = base;
        if matches!(point.method, Method::FedSgd(_)) {
            out.local = self.local_extreme(noise, scenario.rounds());
            return out;
        }
        match scenario.algorithm.mode {
            Mode::Decentralized => {
                self.walk_figures(&setup, scenario, point, runs, &mut out);
            }
            Mode::Federated | Mode::Centralized => {
                let k = scenario.steps;
                out.local = self.local_extreme(noise, k);
                let central_view = match scenario.algorithm.mode {
                    Mode::Federated => View::Federated {
                        rounds: k,
                        sampling_rate: scenario
                            .algorithm
                            .blocks_per_round
                            .unwrap_or(scenario.users)
                            as f64
                            / scenario.users as f64,
                    },
                    _ => View::Centralized {
                        rounds: k,
                        users: scenario.users as u64,
                    },
                };
                let central = account(&central_view, &self.orders, noise)
                    .and_then(|c| c.to_dp(self.delta, self.conversion));
                out.central = central.ok().map(Figure::from);
                out.notes.push("central view: the final model only, with the hidden per-user state assumed not to leak (dpwalk_privacy::central)".into());
            }
        }
        out
    }

    /// The local-view `(ε, δ)` of a user of `point` after `k` contributions (round-based
    /// kinds: after `k` rounds) at the point's knob: what [`PrivacyContext::report`]'s local
    /// figure is for the whole run, at any earlier time (the privacy-spent plot). `None` without
    /// a guarantee (no noise or no clip).
    pub fn local_after(&self, point: &Point, k: u64) -> Option<DpBound> {
        if let Ok(Some(account)) = self.account(point) {
            return account.bound_after(
                &self.orders,
                &point.method,
                k,
                self.delta,
                self.conversion,
            );
        }
        let (sigma, clip) = self.gaussian_noise(&point.method)?;
        self.local_bound(Noise::new(sigma, clip).ok()?, k)
    }

    /// The local-view `(ε, δ)` of `k` contributions with `noise`.
    fn local_bound(&self, noise: Noise, k: u64) -> Option<DpBound> {
        account(&View::Local { contributions: k }, &self.orders, noise)
            .and_then(|c| c.to_dp(self.delta, self.conversion))
            .ok()
    }

    /// The local figure of a user with `k` contributions, all users alike (every user
    /// contributes every round).
    fn local_extreme(&self, noise: Noise, k: u64) -> Option<Extreme> {
        self.local_bound(noise, k).map(|b| Extreme {
            figure: b.into(),
            user: None,
            contributions: k,
        })
    }

    fn walk_figures(
        &self,
        setup: &Setup,
        scenario: &Scenario,
        point: &Point,
        runs: &[RunResult],
        out: &mut PointPrivacy,
    ) {
        let passage = self.passage(scenario, point);
        if !has_network_view(point, scenario) {
            out.notes.push(ADMM_NETWORK_WITHDRAWN.into());
        } else if let Some(Err(reason)) = self.passage.get(point.topology) {
            out.notes
                .push(format!("network view not computed: {reason}"));
        } else if runs.iter().any(|r| r.per_user.iter().any(|&k| k > 1)) {
            out.notes.push(NETWORK_ONE_CONTRIBUTION.into());
        }
        let mut local: Option<Extreme> = None;
        let mut network: Option<NetworkExtreme> = None;
        let mut mean_sum = 0.0;
        let mut mean_count = 0usize;
        for run in runs {
            let figures = match all_users(setup, passage, &Self::charges(run)) {
                Ok(f) => f,
                Err(e) => {
                    out.notes.push(format!("privacy figures failed: {e}"));
                    Vec::new()
                }
            };
            for f in &figures {
                if local
                    .as_ref()
                    .is_none_or(|l| f.local.epsilon_or_inf() > l.figure.epsilon_or_inf())
                {
                    local = Some(Extreme {
                        figure: f.local,
                        user: Some(f.user),
                        contributions: f.contributions,
                    });
                }
                let Some(fig) = f.network else { continue };
                if network
                    .as_ref()
                    .is_none_or(|nw| fig.epsilon_or_inf() > nw.figure.epsilon_or_inf())
                {
                    network = Some(NetworkExtreme {
                        figure: fig,
                        user: f.user,
                        observer: f.worst_observer,
                        contributions: f.contributions,
                        inverse_hitting: f.inverse_hitting,
                        mean_epsilon: 0.0,
                        assumptions: ASSUMPTIONS.to_vec(),
                    });
                }
                mean_sum += fig.epsilon_or_inf();
                mean_count += 1;
            }
        }
        if let Some(nw) = network.as_mut() {
            nw.mean_epsilon = mean_sum / mean_count.max(1) as f64;
        }
        out.local = local;
        out.network = network;
    }

    /// Every user's local and (DP-SGD) network figures in one run, for `privacy_users.csv`,
    /// when σ and C give a guarantee.
    pub fn users(
        &self,
        scenario: &Scenario,
        point: &Point,
        run: &RunResult,
    ) -> Option<Vec<UserFigures>> {
        let algorithm = point.method.walk()?;
        let noise = Noise::new(algorithm.sigma(), self.accounted_clip(&point.method)?).ok()?;
        let passage = self.passage(scenario, point);
        all_users(&self.setup(noise), passage, &Self::charges(run)).ok()
    }

    /// The pairwise network-ε matrix of one run (for the heatmap), on a DP-SGD walk whose
    /// topology has laws, when σ and C give a guarantee.
    ///
    /// A user with several contributions has no network figure ([`dpwalk_privacy::walk::NETWORK_ONE_CONTRIBUTION`]):
    /// its row is NaN (drawn grey), so that one revisited user does not hide every other row.
    /// `None` when no user has exactly one contribution: there is nothing to draw.
    pub fn pairs(&self, scenario: &Scenario, point: &Point, run: &RunResult) -> Option<Vec<f64>> {
        let algorithm = point.method.walk()?;
        let noise = Noise::new(algorithm.sigma(), self.accounted_clip(&point.method)?).ok()?;
        let passage = self.passage(scenario, point)?;
        // Nothing to draw when no user has the one contribution a network figure is proved for.
        if !run.per_user.contains(&1) {
            return None;
        }
        let several: Vec<bool> = run.per_user.iter().map(|&k| k > 1).collect();
        let charges: Vec<Charges> = Self::charges(run)
            .into_iter()
            .zip(&several)
            .map(|(c, &several)| if several { Charges::open(0) } else { c })
            .collect();
        let mut values = pair_epsilons(&self.setup(noise), passage, &charges).ok()?;
        let n = several.len();
        for (row, _) in several.iter().enumerate().filter(|(_, s)| **s) {
            values.get_mut(row * n..(row + 1) * n)?.fill(f64::NAN);
        }
        Some(values)
    }
}

/// The budget of a point and what enforcing it did.
#[derive(Debug, Clone, Serialize)]
pub struct Budget {
    /// Target ε (at the report's δ).
    pub epsilon: f64,
    /// The view it constrains.
    pub view: BudgetView,
    /// Contributions per user the calibration planned for (on the walk, the `planned_quantile`
    /// of a user's visit count).
    pub calibrated_for_contributions: u64,
    /// The quantile of the visit count the plan covers.
    pub planned_quantile: f64,
    /// Whether the budget policy enforced the budget (users whose next contribution would
    /// exceed it made noise-only steps instead).
    pub enforced: bool,
    /// Skipped contributions per run (mean over repetitions).
    pub skipped_contributions: f64,
}

/// The worst user for one view.
#[derive(Debug, Clone, Serialize)]
pub struct Extreme {
    /// ε and the order that achieved it.
    #[serde(flatten)]
    pub figure: Figure,
    /// The user (`null` where all users are alike).
    pub user: Option<usize>,
    /// Its contributions.
    pub contributions: u64,
}

/// The worst (user, observer) pair of the network view.
#[derive(Debug, Clone, Serialize)]
pub struct NetworkExtreme {
    /// ε and the order that achieved it.
    #[serde(flatten)]
    pub figure: Figure,
    /// The user.
    pub user: usize,
    /// The observer (`null` on the complete graph: all observers are alike).
    pub observer: Option<usize>,
    /// The user's contributions.
    pub contributions: u64,
    /// `E[1/M]` of the pair.
    pub inverse_hitting: f64,
    /// Mean over users (and repetitions) of each user's worst network ε.
    pub mean_epsilon: f64,
    /// What the figure assumes.
    pub assumptions: Vec<&'static str>,
}

/// The privacy figures of a point in `summary.json`.
#[derive(Debug, Clone, Serialize)]
pub struct PointPrivacy {
    /// δ of every figure.
    pub delta: f64,
    /// The conversion used.
    pub conversion: &'static str,
    /// The budget, when σ was calibrated.
    pub budget: Option<Budget>,
    /// Worst local ε over users and repetitions.
    pub local: Option<Extreme>,
    /// Worst network ε over users, observers and repetitions (DP-SGD walks only: `null` for
    /// ADMM, see the notes).
    pub network: Option<NetworkExtreme>,
    /// Final-model ε (federated, centralized).
    pub central: Option<Figure>,
    /// What could not be computed, and why.
    pub notes: Vec<String>,
    /// What neighbouring datasets differ in, for every figure above.
    pub unit: UnitReport,
}
