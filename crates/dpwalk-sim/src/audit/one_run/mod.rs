//! The one-run audit (Steinke, Nasr & Jagielski 2023): many canary users in **one** walk, each
//! canary's sign `S_c = ±1` drawn independently and uniformly, each canary on its own dedicated
//! coordinate (so they do not interfere, apart from sharing the clip's norm with the walk's
//! state); the attacker scores every canary from its view, guesses the signs of the highest and
//! lowest scores and abstains on the rest, and the number of correct guesses gives ε̂
//! ([`theorem`]).
//!
//! Compared with the two-world mode ([`super::driver`]) it is far cheaper (one walk instead of
//! `2 × runs`) and weaker: with `m` canaries ε̂ cannot exceed about `ln(m / ln(1/β))` (all
//! guesses right), and the statistics are the first-arrival ones (no fitted transcript score).
//!
//! - [`theorem`]: guesses → ε̂ (their Theorem 3, δ term included, exact binomial tails).
//! - [`walk`]: the one walk and every canary's scores.
//! - [`output`]: `audit-one-run.json` and `audit-one-run.csv`.
//!
//! **The bound compared with** is the local figure of one contribution, for every view: each
//! canary contributes once, at a step that differs between canaries, and the local figure does
//! not depend on the step and covers every view (the tokens an observer receives and the final
//! model are computed from the tokens the local eavesdropper sees). The observer is also granted
//! when each canary contributed (the path does not depend on the data), which only makes the
//! attack stronger and stays within the local view.

pub mod output;
pub mod theorem;
pub mod walk;

use super::AuditError;
use super::bound::{Bound, bound};
use super::canary::{self, Canary, CanaryKind, Pick};
use super::driver::{accountant, walk_algorithm, walk_points};
use super::setting::Setting;
use super::statistic::View;
use super::trial::Step;
use crate::scenario::{LoadedScenario, Point};
use crate::simulate::Prepared;
use dpwalk_core::problem::Problem;
use dpwalk_core::rng::{Purpose, derive_seed, node_rng};
use rand::RngExt;
use serde::Serialize;
use std::time::Instant;
use theorem::{OneRunEstimate, best_of};
use walk::{Planted, Scores, run};

/// The walk's and the signs' streams: indices of the schedule purpose far from a run's (0, 1)
/// and from the two-world trials' (from `2⁴⁰`).
const WALK_STREAM: u64 = 1 << 41;
const SIGN_STREAM: u64 = WALK_STREAM + 1;

/// What to audit.
#[derive(Debug, Clone)]
pub struct Config {
    /// Canary users `m` [default: every user but the observer].
    pub canaries: Option<usize>,
    /// The network observer `j` (not a canary) [default: the last user].
    pub observer: Option<usize>,
    /// The views audited.
    pub views: Vec<View>,
    /// White or black box.
    pub canary: CanaryKind,
    /// Hops of the walk [default: `min(steps, 4n)` of the audited point's `steps`].
    pub steps: Option<u64>,
    /// Only this sweep point [default: every point].
    pub point: Option<usize>,
    /// Confidence of ε̂.
    pub confidence: f64,
}

/// One view of a one-run audit.
#[derive(Debug, Clone, Serialize)]
pub struct OneRunView {
    /// Which attacker.
    pub view: View,
    /// The accountant's bound it is compared with.
    pub bound: Bound,
    /// ε̂ and the guesses behind it.
    pub estimate: OneRunEstimate,
    /// ε̂ above the bound: a finding.
    pub exceeds_bound: bool,
}

/// The one-run audit of one sweep point.
#[derive(Debug, Clone, Serialize)]
pub struct OneRunPoint {
    /// The walk audited.
    #[serde(flatten)]
    pub setting: Setting,
    /// The canary record (its user: the first canary; every canary has the same record on its
    /// own column).
    pub canary: Canary,
    /// The canary users.
    pub canary_users: Vec<usize>,
    /// Canaries the walk reached (the others never contributed and are abstained on).
    pub contributed: usize,
    /// Contributions the clip scaled.
    pub clipped: usize,
    /// Seconds the walk took.
    pub seconds: f64,
    /// The views.
    pub views: Vec<OneRunView>,
}

/// One-run audits of the points of `loaded` (prepared by [`crate::simulate::prepare`]).
///
/// # Errors
/// [`AuditError`]: a scenario that is not a walk, a baseline point, canaries or observer out of
/// range, no clip, a failed step.
pub fn audit(
    loaded: &LoadedScenario,
    prepared: &Prepared,
    config: &Config,
) -> Result<Vec<OneRunPoint>, AuditError> {
    let s = loaded.scenario();
    let (points, chosen) = walk_points(loaded, config.point, &config.views)?;
    // Its many canaries replace whole users' data (each user holds one record of its own): the
    // worlds and the bound are user-level.
    if s.privacy.unit == crate::scenario::UnitName::Record {
        return Err(AuditError::Invalid(
            "[privacy] unit = \"record\": the one-run mode is user-level (each canary replaces a \
             user's data); audit a record-level scenario in two worlds (without --one-run)"
                .into(),
        ));
    }
    if config.steps == Some(0) {
        return Err(AuditError::Invalid("--steps must be >= 1".into()));
    }
    chosen
        .into_iter()
        .map(|p| {
            // The audited point's own horizon (`[by-kind.<kind>] steps`).
            let steps = config
                .steps
                .unwrap_or(points[p].steps.min(4 * s.users as u64));
            let resolved = prepared.privacy.resolve(s, &points[p])?;
            audit_point(loaded, prepared, config, p, &resolved.point, steps)
        })
        .collect()
}

/// The observer and the canary users: `m` users other than the observer, from user 0 up.
fn cast(n: usize, config: &Config) -> Result<(usize, Vec<usize>), AuditError> {
    let observer = config.observer.unwrap_or(n.saturating_sub(1));
    if observer >= n {
        return Err(AuditError::Invalid(format!(
            "--observer {observer} is not a user (0 to {})",
            n.saturating_sub(1)
        )));
    }
    let m = config.canaries.unwrap_or(n.saturating_sub(1));
    if m < 2 || m >= n {
        return Err(AuditError::Invalid(format!(
            "--canaries {m}: a one-run audit needs 2 to {} canaries (users other than the observer)",
            n.saturating_sub(1)
        )));
    }
    Ok((
        observer,
        (0..n).filter(|&i| i != observer).take(m).collect(),
    ))
}

fn audit_point(
    loaded: &LoadedScenario,
    prepared: &Prepared,
    config: &Config,
    index: usize,
    point: &Point,
    steps: u64,
) -> Result<OneRunPoint, AuditError> {
    let s = loaded.scenario();
    let named = &prepared.topologies[point.topology];
    let topology = &named.topology;
    let (observer, users) = cast(topology.n(), config)?;
    let algorithm = walk_algorithm(point)?;
    let setup = accountant(prepared, &algorithm)?;
    let base = &prepared.problem;
    let design = canary::design(
        base.data(),
        base.loss(),
        *base.regularizer(),
        &algorithm,
        users[0],
        config.canary,
        Pick::Steadiest,
    )?;
    let mut signs_rng = node_rng(derive_seed(s.seed, Purpose::Schedule, SIGN_STREAM), 0);
    let signs: Vec<bool> = users.iter().map(|_| signs_rng.random_bool(0.5)).collect();
    let planted: Vec<(usize, f64)> = users
        .iter()
        .zip(&signs)
        .map(|(&u, &plus)| (u, if plus { design.scale } else { -design.scale }))
        .collect();
    let problem = Problem::new(
        base.loss(),
        *base.regularizer(),
        canary::plant(base.data(), config.canary, &planted, design.label),
    )
    .map_err(|e| AuditError::Invalid(format!("the canaries' problem: {e}")))?;
    let directions: Vec<Vec<(usize, f64)>> = (0..users.len())
        .map(|c| design.on_column(users.len(), c))
        .collect();
    let walk = Planted {
        problem: &problem,
        step: Step::new(&problem, algorithm)?,
        topology,
        users: &users,
        directions: &directions,
        observer,
        steps,
    };
    let start = Instant::now();
    let scores = run(&walk, derive_seed(s.seed, Purpose::Schedule, WALK_STREAM))?;
    let seconds = start.elapsed().as_secs_f64();
    // One contribution of any canary: the local figure (the same for every canary and step).
    let local = bound(&setup, None, users[0], steps, View::Local)?;
    let views = config
        .views
        .iter()
        .map(|&view| {
            let estimate = best_of(
                view_scores(&scores, view),
                &signs,
                s.privacy.delta,
                config.confidence,
            );
            let bound = Bound {
                figure: match view {
                    View::Local => local.figure.clone(),
                    View::Network | View::Central => {
                        "local view, one contribution (proved; covers every observer and the final model)".into()
                    }
                },
                ..local.clone()
            };
            OneRunView {
                view,
                exceeds_bound: estimate.epsilon > bound.epsilon_or_inf(),
                bound,
                estimate,
            }
        })
        .collect();
    Ok(OneRunPoint {
        setting: Setting::new(
            index, point, &algorithm, &setup, named, steps, s.seed, observer,
        ),
        contributed: scores.local.iter().filter(|x| x.is_some()).count(),
        clipped: scores.clipped,
        canary: design,
        canary_users: users,
        seconds,
        views,
    })
}

fn view_scores(scores: &Scores, view: View) -> &[Option<f64>] {
    match view {
        View::Local => &scores.local,
        View::Network => &scores.network,
        View::Central => &scores.central,
    }
}
