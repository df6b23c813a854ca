//! The privacy figures of a point's runs (`summary.json`, `privacy_users.csv`, the pairwise
//! heatmap, the privacy-spent curve): the worst user in each view the point has a proof for.

use super::{PrivacyContext, Resolved, has_network_view};
use crate::algorithm::Mode;
use crate::given_walk::GivenWalk;
use crate::method::Method;
use crate::record_level::UnitReport;
use crate::run::{LATE_WINDOW, RunResult};
use crate::scenario::{BudgetView, Point, Scenario};
use dpwalk_privacy::Noise;
use dpwalk_privacy::budget::PLAN_QUANTILE;
use dpwalk_privacy::calibrate::{View, account};
use dpwalk_privacy::network::Charges;
use dpwalk_privacy::network::given_walk::{GIVEN_WALK_LABEL, given_walk_curve};
use dpwalk_privacy::rdp::{Conversion, DpBound};
use dpwalk_privacy::walk::{
    ADMM_NETWORK_WITHDRAWN, ASSUMPTIONS, Figure, NETWORK_ONE_CONTRIBUTION, Setup, UserFigures,
    all_users, pair_epsilons,
};
use serde::Serialize;

impl PrivacyContext {
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
            network_given_walk: None,
            central: None,
            notes: Vec::new(),
            unit: self.unit_report(&point.method),
        };
        let rounds = scenario.rounds(point.steps);
        if let Ok(Some(account)) = self.point_account(point) {
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
                    contributions: rounds,
                }),
                notes: vec![match bound {
                    Some(_) => format!(
                        "{}local view of the worst user over the planned {} rounds (dpwalk_privacy::baseline)",
                        base.unit.prefix(),
                        rounds
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
            out.local = self.local_extreme(noise, rounds);
            return out;
        }
        match scenario.algorithm.mode {
            Mode::Decentralized => {
                self.walk_figures(&setup, scenario, point, runs, &mut out);
            }
            Mode::Federated | Mode::Centralized => {
                let k = point.steps;
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
        if let Ok(Some(account)) = self.point_account(point) {
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
        if has_network_view(point, scenario) {
            out.network_given_walk = Self::given_walk_extreme(setup, runs, &mut out.notes);
        }
    }

    /// Every user's N2 in `run` (indexed by user): `Ok(None)` where the run has no certificate
    /// to offer (not a DP-SGD walk), `Err` with the reason where it was not computed.
    fn given_walk_figures(
        setup: &Setup,
        run: &RunResult,
    ) -> Result<Option<Vec<GivenWalkFigure>>, String> {
        let certified = match &run.given_walk {
            GivenWalk::NotOffered => return Ok(None),
            GivenWalk::NotComputed(reason) => return Err(reason.clone()),
            GivenWalk::Certified(c) => c,
        };
        certified
            .iter()
            .zip(&run.per_user)
            .map(|(c, &k)| {
                let curve = given_walk_curve(&setup.orders, setup.noise, c.psi, k);
                let figure = curve
                    .to_dp(setup.delta, setup.conversion)
                    .map_err(|e| format!("network given the walk failed: {e}"))?;
                Ok(GivenWalkFigure {
                    figure: figure.into(),
                    observer: c.observer,
                    psi: c.psi,
                })
            })
            .collect::<Result<Vec<_>, String>>()
            .map(Some)
    }

    /// The worst user's N2 over users and repetitions, with the mean; why a run had none goes to
    /// `notes` (once).
    fn given_walk_extreme(
        setup: &Setup,
        runs: &[RunResult],
        notes: &mut Vec<String>,
    ) -> Option<GivenWalkExtreme> {
        let mut worst: Option<GivenWalkExtreme> = None;
        let (mut sum, mut count) = (0.0, 0usize);
        for run in runs {
            let figures = match Self::given_walk_figures(setup, run) {
                Ok(Some(f)) => f,
                Ok(None) => continue,
                Err(reason) => {
                    if !notes.contains(&reason) {
                        notes.push(reason);
                    }
                    continue;
                }
            };
            for (user, (f, &k)) in figures.iter().zip(&run.per_user).enumerate() {
                let eps = f.figure.epsilon_or_inf();
                if worst
                    .as_ref()
                    .is_none_or(|w| eps > w.figure.epsilon_or_inf())
                {
                    worst = Some(GivenWalkExtreme {
                        label: GIVEN_WALK_LABEL,
                        figure: f.figure,
                        user,
                        observer: f.observer,
                        contributions: k,
                        psi: f.psi,
                        mean_epsilon: 0.0,
                        assumptions: ASSUMPTIONS.to_vec(),
                    });
                }
                sum += eps;
                count += 1;
            }
        }
        if let Some(w) = worst.as_mut() {
            w.mean_epsilon = sum / count.max(1) as f64;
        }
        worst
    }

    /// Every user's local and (DP-SGD) network figures in one run, for `privacy_users.csv`,
    /// when σ and C give a guarantee.
    pub fn users(
        &self,
        scenario: &Scenario,
        point: &Point,
        run: &RunResult,
    ) -> Option<Vec<UserFigures>> {
        let passage = self.passage(scenario, point);
        all_users(&self.walk_setup(point)?, passage, &Self::charges(run)).ok()
    }

    /// Every user's N2 in one run (indexed by user), for `privacy_users.csv`: DP-SGD walks whose
    /// walk was certified, when σ and C give a guarantee.
    pub fn given_walk_users(
        &self,
        scenario: &Scenario,
        point: &Point,
        run: &RunResult,
    ) -> Option<Vec<GivenWalkFigure>> {
        if !has_network_view(point, scenario) {
            return None;
        }
        Self::given_walk_figures(&self.walk_setup(point)?, run)
            .ok()
            .flatten()
    }

    /// The setup of a walk point's figures: its σ and accounted clip, when they give a
    /// guarantee.
    fn walk_setup(&self, point: &Point) -> Option<Setup> {
        let algorithm = point.method.walk()?;
        let noise = Noise::new(algorithm.sigma(), self.accounted_clip(&point.method)?).ok()?;
        Some(self.setup(noise))
    }

    /// The pairwise network-ε matrix of one run (for the heatmap), on a DP-SGD walk whose
    /// topology has laws, when σ and C give a guarantee.
    ///
    /// A user with several contributions has no network figure ([`dpwalk_privacy::walk::NETWORK_ONE_CONTRIBUTION`]):
    /// its row is NaN (drawn grey), so that one revisited user does not hide every other row.
    /// `None` when no user has exactly one contribution: there is nothing to draw.
    pub fn pairs(&self, scenario: &Scenario, point: &Point, run: &RunResult) -> Option<Vec<f64>> {
        let setup = self.walk_setup(point)?;
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
        let mut values = pair_epsilons(&setup, passage, &charges).ok()?;
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

/// One user's N2 in one run: its charge against its worst observer on the realised walk.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct GivenWalkFigure {
    /// ε of `min(K_i, Ψ)·ε_loc(α)` and the order that achieved it.
    pub figure: Figure,
    /// The observer `j` attaining `max_j Ψ_ij` (`None` without contributions).
    pub observer: Option<usize>,
    /// `Ψ = max_j Ψ_ij`.
    pub psi: f64,
}

/// The worst user's N2 (`specs/network-dp-2.md` §4) over users and repetitions.
#[derive(Debug, Clone, Serialize)]
pub struct GivenWalkExtreme {
    /// What the figure is: [`GIVEN_WALK_LABEL`].
    pub label: &'static str,
    /// ε and the order that achieved it.
    #[serde(flatten)]
    pub figure: Figure,
    /// The user.
    pub user: usize,
    /// Its worst observer on the walk (`null` for a user without contributions).
    pub observer: Option<usize>,
    /// The user's contributions.
    pub contributions: u64,
    /// The user's charge `max_j Ψ_ij` (its local figure is that of `contributions`).
    pub psi: f64,
    /// Mean over users and repetitions of each user's N2.
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
    /// Worst N2, the ex-post certificate of the realised walk, over users and repetitions
    /// (DP-SGD walks only; labelled [`GIVEN_WALK_LABEL`]: it is computed after the walk and
    /// cannot choose σ before one).
    pub network_given_walk: Option<GivenWalkExtreme>,
    /// Final-model ε (federated, centralized).
    pub central: Option<Figure>,
    /// What could not be computed, and why.
    pub notes: Vec<String>,
    /// What neighbouring datasets differ in, for every figure above.
    pub unit: UnitReport,
}
