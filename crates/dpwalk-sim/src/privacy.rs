//! Privacy in the simulator: calibrating σ to a budget, the per-user contribution caps that
//! enforce it, and the privacy figures of `summary.json`. Every number comes from
//! `dpwalk_privacy` (its `walk` and `calibrate` modules); this module only decides which
//! contributions count.

use crate::run::RunResult;
use crate::scenario::{BudgetView, ConversionName, Mode, Point, Scenario, ScenarioError};
use dpwalk_core::topology::Topology;
use dpwalk_privacy::calibrate::{REL_TOL, View, account, calibrate};
use dpwalk_privacy::network::HittingOptions;
use dpwalk_privacy::rdp::{Conversion, Orders};
use dpwalk_privacy::walk::{
    ASSUMPTIONS, Figure, Hitting, Setup, UserFigures, all_users, expected_contributions,
    pair_epsilons,
};
use dpwalk_privacy::{Noise, PrivacyError};
use serde::Serialize;

/// What the privacy figures of a scenario share: orders, δ, conversion, and `E[1/M]` per topology.
#[derive(Debug)]
pub struct PrivacyContext {
    orders: Orders,
    delta: f64,
    conversion: Conversion,
    /// Per topology: `E[1/M]`, or why it was not computed.
    hitting: Vec<Result<Hitting, String>>,
}

/// How many contributions each user may make before its budget is spent.
#[derive(Debug, Clone, PartialEq)]
pub enum Cap {
    /// The same for every user.
    Uniform(u64),
    /// One per user.
    PerUser(Vec<u64>),
}

impl Cap {
    /// The cap of user `i`.
    pub fn of(&self, user: usize) -> u64 {
        match self {
            Cap::Uniform(k) => *k,
            Cap::PerUser(v) => v.get(user).copied().unwrap_or(0),
        }
    }
}

/// A point ready to run: σ calibrated if it had a budget, and the cap that enforces it.
#[derive(Debug, Clone)]
pub struct Resolved {
    /// The point with its final σ.
    pub point: Point,
    /// Contribution caps, when the budget is enforced.
    pub cap: Option<Cap>,
    /// Contributions per user the calibration assumed.
    pub calibrated_for: Option<u64>,
}

fn conversion(name: ConversionName) -> Conversion {
    match name {
        ConversionName::Tight => Conversion::Tight,
        ConversionName::Classic => Conversion::Classic,
    }
}

impl PrivacyContext {
    /// Orders from `[output]`, δ and conversion from `[privacy]`, `E[1/M]` for each topology
    /// (the walk only).
    pub fn new(scenario: &Scenario, topologies: &[&Topology]) -> Result<Self, PrivacyError> {
        let mut orders = Orders::default_grid().as_slice().to_vec();
        orders.extend(scenario.output.orders.iter().copied());
        orders.sort_by(f64::total_cmp);
        orders.dedup();
        let hitting = topologies
            .iter()
            .map(|t| {
                if scenario.algorithm.mode != Mode::Decentralized {
                    return Err("not a walk: no network view".to_string());
                }
                Hitting::for_topology(t, &HittingOptions::default()).map_err(|e| e.to_string())
            })
            .collect();
        Ok(Self {
            orders: Orders::new(&orders)?,
            delta: scenario.privacy.delta,
            conversion: conversion(scenario.privacy.conversion),
            hitting,
        })
    }

    fn setup(&self, noise: Noise) -> Setup {
        Setup {
            orders: self.orders.clone(),
            noise,
            delta: self.delta,
            conversion: self.conversion,
        }
    }

    /// The largest `E[1/M]` towards any observer over all users of topology `t`.
    fn worst_hitting(&self, t: usize) -> Result<f64, String> {
        let h = self.hitting[t].as_ref().map_err(Clone::clone)?;
        Ok(h.worst_pair().inverse_hitting)
    }

    /// The view a budget constrains for a user with `k` contributions, `e` = its `E[1/M]`.
    fn view(&self, scenario: &Scenario, k: u64, e: f64) -> View {
        let n = scenario.users as u64;
        match (scenario.budget_view(), scenario.algorithm.mode) {
            (BudgetView::Local, _) => View::Local { contributions: k },
            (BudgetView::Network, _) => View::Network {
                contributions: k,
                inverse_hitting: e,
            },
            (BudgetView::Central, Mode::Federated) => View::Federated {
                rounds: scenario.steps,
                sampling_rate: scenario
                    .algorithm
                    .blocks_per_round
                    .unwrap_or(scenario.users) as f64
                    / n as f64,
            },
            (BudgetView::Central, _) => View::Centralized {
                rounds: scenario.steps,
                users: n,
            },
        }
    }

    /// Calibrates σ for a point with a budget and computes its caps.
    pub fn resolve(&self, scenario: &Scenario, point: &Point) -> Result<Resolved, ScenarioError> {
        let Some(epsilon) = point.budget else {
            return Ok(Resolved {
                point: *point,
                cap: None,
                calibrated_for: None,
            });
        };
        let invalid = |m: String| ScenarioError::Invalid(m);
        let clip = point
            .algorithm
            .clip()
            .ok_or_else(|| invalid("a budget needs a clip".into()))?;
        let n = scenario.users as u64;
        let k = match scenario.algorithm.mode {
            Mode::Decentralized => expected_contributions(scenario.steps, n),
            _ => scenario.steps,
        };
        let worst = match scenario.budget_view() {
            BudgetView::Network => self.worst_hitting(point.topology).map_err(|e| {
                invalid(format!(
                    "cannot calibrate to a network budget on this topology: {e}"
                ))
            })?,
            _ => 0.0,
        };
        let view = self.view(scenario, k, worst);
        let cal = calibrate(
            &view,
            &self.orders,
            clip,
            epsilon,
            self.delta,
            self.conversion,
            REL_TOL,
        )
        .map_err(|e| invalid(format!("calibrating sigma to epsilon = {epsilon}: {e}")))?;
        let point = point.with_sigma(cal.sigma)?;
        let cap = if scenario.privacy.enforce && scenario.algorithm.mode == Mode::Decentralized {
            let noise = Noise::new(cal.sigma, clip).map_err(|e| invalid(e.to_string()))?;
            Some(self.caps(scenario, point.topology, noise, epsilon, k))
        } else {
            None
        };
        Ok(Resolved {
            point,
            cap,
            calibrated_for: Some(k),
        })
    }

    /// The largest number of contributions within budget, per user (per observer position on
    /// a graph; one value on the complete graph or for the local view).
    fn caps(
        &self,
        scenario: &Scenario,
        topology: usize,
        noise: Noise,
        epsilon: f64,
        at_least: u64,
    ) -> Cap {
        let largest_within = |e: f64| -> u64 {
            let fits = |k: u64| {
                account(&self.view(scenario, k, e), &self.orders, noise)
                    .and_then(|c| c.to_dp(self.delta, self.conversion))
                    .is_ok_and(|b| b.epsilon() <= epsilon)
            };
            // fits(at_least) holds by calibration; grow, then bisect.
            let (mut lo, mut hi) = (at_least, at_least.max(1) * 2);
            while fits(hi) && hi < scenario.steps {
                lo = hi;
                hi *= 2;
            }
            if fits(hi) {
                return hi;
            }
            while hi - lo > 1 {
                let mid = lo + (hi - lo) / 2;
                if fits(mid) { lo = mid } else { hi = mid }
            }
            lo
        };
        match (scenario.budget_view(), &self.hitting[topology]) {
            (BudgetView::Network, Ok(h @ Hitting::Pairs(_))) => Cap::PerUser(
                (0..h.users())
                    .map(|i| largest_within(h.worst_observer(i).1))
                    .collect(),
            ),
            (BudgetView::Network, Ok(h)) => Cap::Uniform(largest_within(h.worst_observer(0).1)),
            _ => Cap::Uniform(largest_within(0.0)),
        }
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
            view: scenario.budget_view(),
            calibrated_for_contributions: resolved.calibrated_for.unwrap_or(0),
            enforced: resolved.cap.is_some(),
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
        };
        let (Some(clip), sigma) = (point.algorithm.clip(), point.algorithm.sigma()) else {
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
        match scenario.algorithm.mode {
            Mode::Decentralized => {
                self.walk_figures(&setup, point.topology, runs, &mut out);
                out.notes.push(
                    "central view: not separately bounded for the walk; the final model is a token value (see the network assumptions)".into(),
                );
            }
            Mode::Federated | Mode::Centralized => {
                let k = scenario.steps;
                let local = account(&View::Local { contributions: k }, &self.orders, noise)
                    .and_then(|c| c.to_dp(self.delta, self.conversion));
                out.local = local.ok().map(|b| Extreme {
                    figure: b.into(),
                    user: None,
                    contributions: k,
                });
                let central = account(&self.view(scenario, k, 0.0), &self.orders, noise)
                    .and_then(|c| c.to_dp(self.delta, self.conversion));
                out.central = central.ok().map(Figure::from);
                out.notes.push("central view: the final model only, with the hidden per-user state assumed not to leak (dpwalk_privacy::central)".into());
            }
        }
        out
    }

    fn walk_figures(
        &self,
        setup: &Setup,
        topology: usize,
        runs: &[RunResult],
        out: &mut PointPrivacy,
    ) {
        let hitting = match &self.hitting[topology] {
            Ok(h) => Some(h),
            Err(reason) => {
                out.notes
                    .push(format!("network view not computed: {reason}"));
                None
            }
        };
        let mut local: Option<Extreme> = None;
        let mut network: Option<NetworkExtreme> = None;
        let mut mean_sum = 0.0;
        let mut mean_count = 0usize;
        for run in runs {
            let figures = match hitting {
                Some(h) => all_users(setup, h, &run.per_user),
                None => Ok(Vec::new()),
            };
            let figures = match figures {
                Ok(f) => f,
                Err(e) => {
                    out.notes.push(format!("network view failed: {e}"));
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
                if network
                    .as_ref()
                    .is_none_or(|nw| f.network.epsilon_or_inf() > nw.figure.epsilon_or_inf())
                {
                    network = Some(NetworkExtreme {
                        figure: f.network,
                        user: f.user,
                        observer: f.worst_observer,
                        contributions: f.contributions,
                        inverse_hitting: f.inverse_hitting,
                        fallback_orders: f.fallback_orders.clone(),
                        mean_epsilon: 0.0,
                        assumptions: ASSUMPTIONS.to_vec(),
                    });
                }
                mean_sum += f.network.epsilon_or_inf();
                mean_count += 1;
            }
        }
        if let Some(nw) = network.as_mut() {
            nw.mean_epsilon = mean_sum / mean_count.max(1) as f64;
        }
        out.local = local;
        out.network = network;
    }

    /// Every user's local and network figures in one run (for `privacy_users.csv`), when the
    /// topology has `E[1/M]` and σ, C give a guarantee.
    pub fn users(&self, point: &Point, run: &RunResult) -> Option<Vec<UserFigures>> {
        let noise = Noise::new(point.algorithm.sigma(), point.algorithm.clip()?).ok()?;
        let h = self.hitting[point.topology].as_ref().ok()?;
        all_users(&self.setup(noise), h, &run.per_user).ok()
    }

    /// The pairwise network-ε matrix of one run (for the heatmap), when the topology has
    /// `E[1/M]` and σ, C give a guarantee.
    pub fn pairs(&self, point: &Point, run: &RunResult) -> Option<Vec<f64>> {
        let noise = Noise::new(point.algorithm.sigma(), point.algorithm.clip()?).ok()?;
        let h = self.hitting[point.topology].as_ref().ok()?;
        pair_epsilons(&self.setup(noise), h, &run.per_user).ok()
    }
}

/// The budget of a point and what enforcing it did.
#[derive(Debug, Clone, Serialize)]
pub struct Budget {
    /// Target ε (at the report's δ).
    pub epsilon: f64,
    /// The view it constrains.
    pub view: BudgetView,
    /// Contributions per user the calibration assumed (`ceil(steps / users)` on the walk).
    pub calibrated_for_contributions: u64,
    /// Whether users skipped contributions beyond their budget.
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
    /// Orders where `(α − 1) ε_loc(α) > 1` and the local bound was used.
    pub fallback_orders: Vec<f64>,
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
    /// Worst network ε over users, observers and repetitions.
    pub network: Option<NetworkExtreme>,
    /// Final-model ε (federated, centralized).
    pub central: Option<Figure>,
    /// What could not be computed, and why.
    pub notes: Vec<String>,
}
