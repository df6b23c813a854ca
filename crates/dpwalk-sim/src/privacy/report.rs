//! The privacy figures of a point's runs (`summary.json`, `privacy_users.csv`, the pairwise
//! heatmap, the privacy-spent curve): the worst user in each view the point has a proof for. The
//! network view of a DP-SGD walk is the path-hidden figure (N1/N3), a priori and computed once
//! per point ([`PrivacyContext::network_view`]), and N2 given each run's walk.

use super::{PrivacyContext, Resolved, has_network_view};
use crate::algorithm::Mode;
use crate::given_walk::GivenWalk;
use crate::method::Method;
use crate::record_level::UnitReport;
use crate::run::RunResult;
use crate::scenario::{BudgetView, Point, Scenario};
use dpwalk_privacy::budget::PLAN_QUANTILE;
use dpwalk_privacy::calibrate::{View, account};
use dpwalk_privacy::local::local_view;
use dpwalk_privacy::network::given_walk::{GIVEN_WALK_LABEL, given_walk_bound};
use dpwalk_privacy::rdp::{Conversion, DpBound, Orders};
use dpwalk_privacy::walk::{
    ADMM_NETWORK_WITHDRAWN, ASSUMPTIONS, Figure, NOT_OFFERED_COST, PATH_HIDDEN, PathHidden,
    PathHiddenFigure, Setup, path_hidden,
};
use dpwalk_privacy::{Noise, PrivacyError};
use serde::Serialize;
use std::collections::HashMap;
use std::sync::{Arc, PoisonError};

/// What federated DP-SGD's central figure proves, and under what.
pub const FED_SGD_CENTRAL: &str = "central view: whoever sees only the server's models (each round releases the sum of every user's message, its noise summed with it), the server trusted with the messages (or secure aggregation); federated DP-SGD keeps no per-user state, so the rounds compose exactly (dpwalk_privacy::central)";

impl PrivacyContext {
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
                    figure: bound.map_or(Figure::none(), Figure::from),
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
            out.central = self.fed_sgd_central(noise, rounds);
            out.notes.push(FED_SGD_CENTRAL.into());
            return out;
        }
        match scenario.algorithm.mode {
            Mode::Decentralized => {
                self.walk_figures(&setup, scenario, resolved, runs, &mut out);
            }
            Mode::Federated | Mode::Centralized => {
                let k = point.steps;
                out.local = self.local_extreme(noise, k);
                let central_view = match scenario.algorithm.mode {
                    Mode::Federated => View::Federated {
                        rounds: k,
                        sampling_rate: scenario.sampling_rate(),
                    },
                    _ => View::Centralized {
                        rounds: k,
                        users: scenario.users as u64,
                    },
                };
                out.central = self.central_figure(&central_view, noise);
                out.notes.push("central view: the final model only, with the hidden per-user state assumed not to leak (dpwalk_privacy::central)".into());
            }
        }
        out
    }

    /// Federated DP-SGD's central `(ε, δ)` after `rounds` rounds at `point`'s noise
    /// ([`FED_SGD_CENTRAL`]): the centralized mode's figure, each round's released sum carrying
    /// every user's noise. `None` for other methods and without a guarantee.
    pub fn fed_sgd_central_after(&self, point: &Point, rounds: u64) -> Option<Figure> {
        if !matches!(point.method, Method::FedSgd(_)) {
            return None;
        }
        let (sigma, clip) = self.gaussian_noise(&point.method)?;
        self.fed_sgd_central(Noise::new(sigma, clip).ok()?, rounds)
    }

    fn fed_sgd_central(&self, noise: Noise, rounds: u64) -> Option<Figure> {
        let users = self.users as u64;
        self.central_figure(&View::Centralized { rounds, users }, noise)
    }

    /// The `(ε, δ)` figure of a central view, `None` where the accountant refuses it.
    fn central_figure(&self, view: &View, noise: Noise) -> Option<Figure> {
        account(view, &self.orders, noise)
            .and_then(|c| c.to_dp(self.delta, self.conversion))
            .ok()
            .map(Figure::from)
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

    /// The path-hidden network figure of a DP-SGD walk point (`None` for other points and
    /// where σ and C give no guarantee), or why it is not offered; computed once per point and
    /// shared by its summary, `privacy_users.csv` and heatmap. It does not depend on the runs:
    /// it is a priori, for the point's steps and the cap the enforced budget policy puts on each
    /// user's contributions (the steps when no budget is enforced: every visit may contribute).
    pub fn network_view(
        &self,
        scenario: &Scenario,
        resolved: &Resolved,
    ) -> Option<Result<Arc<NetworkView>, String>> {
        let point = &resolved.point;
        if !has_network_view(point, scenario) {
            return None;
        }
        let noise = self.walk_setup(point)?.noise;
        let steps = point.steps;
        let cap = resolved
            .policy
            .as_ref()
            .map_or(steps, |p| p.cap().min(steps));
        let key = (
            point.topology,
            steps,
            cap,
            noise.sigma().to_bits(),
            noise.clip().to_bits(),
        );
        // A poisoned lock only means another thread panicked while holding it: the entries are
        // whole values, still usable.
        let views = || self.views.lock().unwrap_or_else(PoisonError::into_inner);
        let found = views()
            .iter()
            .find(|(k, _)| *k == key)
            .map(|(_, r)| r.clone());
        if found.is_some() {
            return found;
        }
        let graph = self.graphs.get(point.topology)?;
        let refused = || {
            format!(
                "{PATH_HIDDEN} {NOT_OFFERED_COST} ({} users here)",
                graph.users
            )
        };
        let computed = match &graph.topology {
            None => Err(refused()),
            Some(topology) => {
                // On the orders calibration and the budget policy use (the default grid, as
                // every daemon does), so that a calibrated σ reads back as its target.
                let setup = Setup {
                    orders: Orders::default_grid(),
                    ..self.setup(noise)
                };
                match path_hidden(&setup, topology, steps, cap, !graph.complete) {
                    Ok(hidden) => Ok(Arc::new(NetworkView {
                        hidden,
                        steps,
                        cap,
                        cap_enforced: resolved.policy.is_some(),
                    })),
                    Err(PrivacyError::TooManyUsers { .. }) => Err(refused()),
                    Err(e @ PrivacyError::NetworkCost { .. }) => Err(e.to_string()),
                    Err(e) => Err(format!("{PATH_HIDDEN} failed: {e}")),
                }
            }
        };
        views().push((key, computed.clone()));
        Some(computed)
    }

    /// The local figure of `k` contributions, from `cache` when already computed.
    fn local_figure(
        setup: &Setup,
        k: u64,
        cache: &mut HashMap<u64, Figure>,
    ) -> Result<Figure, PrivacyError> {
        if let Some(f) = cache.get(&k) {
            return Ok(*f);
        }
        let f: Figure = local_view(&setup.orders, setup.noise, k)
            .to_dp(setup.delta, setup.conversion)?
            .into();
        cache.insert(k, f);
        Ok(f)
    }

    fn walk_figures(
        &self,
        setup: &Setup,
        scenario: &Scenario,
        resolved: &Resolved,
        runs: &[RunResult],
        out: &mut PointPrivacy,
    ) {
        let point = &resolved.point;
        let mut cache = HashMap::new();
        let mut local: Option<Extreme> = None;
        'runs: for run in runs {
            for (user, &k) in run.per_user.iter().enumerate() {
                let f = match Self::local_figure(setup, k, &mut cache) {
                    Ok(f) => f,
                    Err(e) => {
                        out.notes.push(format!("privacy figures failed: {e}"));
                        break 'runs;
                    }
                };
                if local
                    .as_ref()
                    .is_none_or(|l| f.epsilon_or_inf() > l.figure.epsilon_or_inf())
                {
                    local = Some(Extreme {
                        figure: f,
                        user: Some(user),
                        contributions: k,
                    });
                }
            }
        }
        out.local = local;
        if !has_network_view(point, scenario) {
            out.notes.push(ADMM_NETWORK_WITHDRAWN.into());
            return;
        }
        match self.network_view(scenario, resolved) {
            Some(Ok(view)) => out.network = Some(NetworkExtreme::of(&view)),
            Some(Err(reason)) => out.notes.push(reason),
            None => {}
        }
        out.network_given_walk = Self::given_walk_extreme(setup, runs, &mut out.notes);
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
            GivenWalk::Certified(c) => &c.users,
        };
        certified
            .iter()
            .zip(&run.per_user)
            .map(|(c, &k)| {
                let figure = given_walk_bound(
                    &setup.orders,
                    setup.noise,
                    c.psi,
                    k,
                    setup.delta,
                    setup.conversion,
                )
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

    /// Every user's local figure in one run and, on a DP-SGD walk, its path-hidden network
    /// figure (the point's, for the cap on contributions, the same in every run; where the user's
    /// own local figure is smaller, that one), for `privacy_users.csv`, when σ and C give a
    /// guarantee.
    pub fn users(
        &self,
        scenario: &Scenario,
        resolved: &Resolved,
        run: &RunResult,
    ) -> Option<Vec<UserRow>> {
        let setup = self.walk_setup(&resolved.point)?;
        let view = self.network_view(scenario, resolved).and_then(Result::ok);
        let mut cache = HashMap::new();
        run.per_user
            .iter()
            .enumerate()
            .map(|(user, &k)| {
                let network = view.as_ref().and_then(|v| v.user(user));
                let local = Self::local_figure(&setup, k, &mut cache).ok()?;
                Some(UserRow {
                    user,
                    contributions: k,
                    local,
                    // The point's figure is for the cap; a user with fewer contributions has the
                    // smaller of it and its own local figure (both bound every observer).
                    network: network.map(|f| {
                        if local.epsilon_or_inf() < f.figure.epsilon_or_inf() {
                            local
                        } else {
                            f.figure
                        }
                    }),
                    worst_observer: network.and_then(|f| f.observer),
                })
            })
            .collect()
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

    /// Every pair's N2 ε in one run (`n × n`, row = user, column = observer, 0 on the diagonal,
    /// `+∞` without a finite guarantee), for the heatmap: DP-SGD walks whose pairs were
    /// certified (at most [`crate::given_walk::MAX_PAIR_USERS`] users), when σ and C give a
    /// guarantee. Each pair's is `min(K_i, Ψ_ij)·ε_loc` converted as the user's own N2 is.
    pub fn given_walk_pairs(
        &self,
        scenario: &Scenario,
        point: &Point,
        run: &RunResult,
    ) -> Option<Vec<f64>> {
        if !has_network_view(point, scenario) {
            return None;
        }
        let setup = self.walk_setup(point)?;
        let GivenWalk::Certified(certificate) = &run.given_walk else {
            return None;
        };
        let pairs = certificate.pairs.as_ref()?;
        let n = run.per_user.len();
        let epsilon = |(k, &psi): (usize, &f64)| -> f64 {
            let (i, j) = (k / n, k % n);
            if i == j {
                return 0.0;
            }
            given_walk_bound(
                &setup.orders,
                setup.noise,
                psi,
                run.per_user[i],
                setup.delta,
                setup.conversion,
            )
            .map_or(f64::INFINITY, |b| Figure::from(b).epsilon_or_inf())
        };
        Some(pairs.iter().enumerate().map(epsilon).collect())
    }

    /// The setup of a walk point's figures: its σ and accounted clip, when they give a
    /// guarantee.
    fn walk_setup(&self, point: &Point) -> Option<Setup> {
        let algorithm = point.method.walk()?;
        let noise = Noise::new(algorithm.sigma(), self.accounted_clip(&point.method)?).ok()?;
        Some(self.setup(noise))
    }

    /// The path-hidden network ε of every (user, observer) pair of a DP-SGD walk point on a
    /// graph other than the complete one (N3, for the heatmap; `n × n`, row = user, column =
    /// observer, 0 on the diagonal, `+∞` without a finite guarantee; beyond a user's neighbours
    /// the coalition's bound where the far pairs were not computed: `path_hidden`'s docs).
    /// `None` on the complete graph, where every pair has the same figure (N1, in
    /// `summary.json`), and where the figure is not offered.
    pub fn pairs(&self, scenario: &Scenario, resolved: &Resolved) -> Option<Vec<f64>> {
        let view = self.network_view(scenario, resolved)?.ok()?;
        view.hidden.pairs.clone()
    }
}

/// The path-hidden network figure of a point ([`PATH_HIDDEN`]) and what it was computed for.
#[derive(Debug, Clone, PartialEq)]
pub struct NetworkView {
    /// Per user (one entry on the complete graph), with the pair matrix on other graphs.
    pub hidden: PathHidden,
    /// The walk's steps.
    pub steps: u64,
    /// The cap on each user's contributions it assumes.
    pub cap: u64,
    /// Whether a budget policy enforces the cap (otherwise the cap is the steps).
    pub cap_enforced: bool,
}

impl NetworkView {
    /// User `user`'s figure against its worst observer.
    pub fn user(&self, user: usize) -> Option<PathHiddenFigure> {
        match self.hidden.users.as_slice() {
            [all] => Some(*all),
            users => users.get(user).copied(),
        }
    }
}

/// One user's row of `privacy_users.csv`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct UserRow {
    /// The user.
    pub user: usize,
    /// Its contributions in the run.
    pub contributions: u64,
    /// Its local figure.
    pub local: Figure,
    /// Its path-hidden network figure, at most its local one (`None`: ADMM, or not offered).
    pub network: Option<Figure>,
    /// The observer that figure is about (`None` on the complete graph: all alike).
    pub worst_observer: Option<usize>,
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

/// The path-hidden network figure of a point (`specs/network-dp-2.md` N1/N3): its worst
/// (user, observer) pair.
#[derive(Debug, Clone, Serialize)]
pub struct NetworkExtreme {
    /// What the figure is: [`PATH_HIDDEN`].
    pub label: &'static str,
    /// ε and the order that achieved it.
    #[serde(flatten)]
    pub figure: Figure,
    /// The user (`null` on the complete graph: all users are alike).
    pub user: Option<usize>,
    /// Its worst observer (`null` on the complete graph: all observers are alike).
    pub observer: Option<usize>,
    /// The walk's steps the figure is computed for.
    pub steps: u64,
    /// The cap on each user's contributions it assumes: the enforced budget policy's, else the
    /// steps.
    pub cap: u64,
    /// Whether a budget policy enforces that cap.
    pub cap_enforced: bool,
    /// Mean over users of each user's figure against its worst observer.
    pub mean_epsilon: f64,
    /// What the figure assumes.
    pub assumptions: Vec<&'static str>,
}

impl NetworkExtreme {
    fn of(view: &NetworkView) -> Self {
        let users = &view.hidden.users;
        // The first user among equals.
        let (user, worst) =
            users
                .iter()
                .enumerate()
                .fold((0, None::<PathHiddenFigure>), |(u, w), (i, f)| {
                    if w.is_none_or(|w| f.figure.epsilon_or_inf() > w.figure.epsilon_or_inf()) {
                        (i, Some(*f))
                    } else {
                        (u, w)
                    }
                });
        let figure = worst.map_or(Figure::none(), |w| w.figure);
        let mean = users.iter().map(|f| f.figure.epsilon_or_inf()).sum::<f64>()
            / users.len().max(1) as f64;
        NetworkExtreme {
            label: PATH_HIDDEN,
            figure,
            user: (users.len() > 1).then_some(user),
            observer: worst.and_then(|w| w.observer),
            steps: view.steps,
            cap: view.cap,
            cap_enforced: view.cap_enforced,
            mean_epsilon: mean,
            assumptions: ASSUMPTIONS.to_vec(),
        }
    }
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
    /// The path-hidden network figure ([`PATH_HIDDEN`], a priori: the same for every
    /// repetition) of its worst (user, observer) pair (DP-SGD walks only: `null` for ADMM and
    /// where it is not offered, see the notes).
    pub network: Option<NetworkExtreme>,
    /// Worst N2, the ex-post certificate of the realised walk, over users and repetitions
    /// (DP-SGD walks only; labelled [`GIVEN_WALK_LABEL`]: it is computed after the walk and
    /// cannot choose σ before one).
    pub network_given_walk: Option<GivenWalkExtreme>,
    /// Final-model ε (federated, centralized; federated DP-SGD: the server's models).
    pub central: Option<Figure>,
    /// What could not be computed, and why.
    pub notes: Vec<String>,
    /// What neighbouring datasets differ in, for every figure above.
    pub unit: UnitReport,
}
