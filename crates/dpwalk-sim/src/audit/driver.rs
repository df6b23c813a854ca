//! An audit of a scenario: for each sweep point, the two worlds, many trials of each in parallel
//! (`rayon`, with a progress bar), each view's statistics turned into ε̂ and set beside the
//! accountant's bound.

use super::AuditError;
use super::bound::{Bound, Walk, composed_bound};
use super::canary::{self, Canary, CanaryKind, Pick};
use super::estimate::{Estimate, Options, estimate};
use super::record;
use super::setting::Setting;
use super::statistic::{Statistic, View, scores};
use super::trial::{Scratch, Transcript, World, run_trial};
use crate::algorithm::Mode;
use crate::scenario::{LoadedScenario, PendingPoint, Point, UnitName};
use crate::simulate::Prepared;
use dpwalk_core::rng::{Purpose, derive_seed};
use dpwalk_core::step::Algorithm;
use dpwalk_core::topology::Topology;
use dpwalk_privacy::Noise;
use dpwalk_privacy::network::excursion::{Visit, psi};
use dpwalk_privacy::network::given_walk::given_walk_bound;
use dpwalk_privacy::walk::GIVEN_WALK;
use indicatif::{ProgressBar, ProgressStyle};
use rayon::prelude::*;
use serde::Serialize;
use std::time::Instant;

/// What to audit and how hard.
#[derive(Debug, Clone)]
pub struct Config {
    /// Trials per world.
    pub runs: usize,
    /// The canary user `i`.
    pub user: usize,
    /// The network observer `j`; default: the neighbour the canary forwards to most often.
    pub observer: Option<usize>,
    /// The views audited.
    pub views: Vec<View>,
    /// White or black box.
    pub canary: CanaryKind,
    /// Hops of a trial; default: `min(steps, 2n·k)` of the audited point's `steps` (`k` the
    /// contributions).
    /// Rounds for a baseline; default: `min(rounds, 4)`.
    pub steps: Option<u64>,
    /// The canary's contributions `k` on the walk (composition mode when above 1): it
    /// contributes at its first `k` visits. Ignored by the baselines, whose users contribute
    /// every round.
    pub contributions: u64,
    /// Only this sweep point; default: every point.
    pub point: Option<usize>,
    /// Confidence of ε̂.
    pub confidence: f64,
    /// No progress bar.
    pub quiet: bool,
}

/// One statistic of one view.
#[derive(Debug, Clone, Serialize)]
pub struct StatisticAudit {
    /// Which statistic.
    pub statistic: Statistic,
    /// Its lower bounds.
    pub estimate: Estimate,
    /// ε̂ above the bound: a finding (the bound, or its assumptions, are wrong).
    pub exceeds_bound: bool,
    /// The GDP variant's ε̂ above the bound; `None` where the noise is not Gaussian (dp-iadmm's
    /// Laplace, pp-admm's radial noise), whose trade-off curve the GDP variant would misread: no
    /// GDP figure is then reported.
    pub gdp_exceeds_bound: Option<bool>,
    /// The transcript score's weights (first tokens one by one, the rest summed, final model).
    pub weights: Option<Vec<f64>>,
    /// The statistic of every run: `[world 0, world 1]` (for plots and CSV).
    #[serde(skip)]
    pub scores: [Vec<f64>; 2],
}

/// One view of one point.
#[derive(Debug, Clone, Serialize)]
pub struct ViewAudit {
    /// Which attacker.
    pub view: View,
    /// The accountant's bound for it.
    pub bound: Bound,
    /// Each statistic's lower bounds.
    pub statistics: Vec<StatisticAudit>,
}

/// How much the canary contributed in the trials.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Activity {
    /// The contributions the bound is for (at most this many in a trial): `k` on the walk, the
    /// rounds of a baseline.
    pub bound_for: u64,
    /// Mean contributions per trial.
    pub mean: f64,
    /// Mean contributions per trial that the clip scaled down (`None`: not observed, the
    /// baselines; their first round's is forced by the canary's construction).
    pub mean_clipped: Option<f64>,
}

/// The audit of one sweep point.
#[derive(Debug, Clone, Serialize)]
pub struct PointAudit {
    /// The walk audited.
    #[serde(flatten)]
    pub setting: Setting,
    /// Trials per world.
    pub runs: usize,
    /// The canary.
    pub canary: Canary,
    /// The canary's contributions.
    pub contributions: Activity,
    /// Share of trials in which the token reached the observer before the end (1 for a
    /// baseline: the eavesdropper reads every message).
    pub arrival_rate: f64,
    /// Trials per second (both worlds).
    pub trials_per_second: f64,
    /// The views.
    pub views: Vec<ViewAudit>,
    /// The ex-post certificate N2 of the trials' own walks (DP-SGD walks; `None` for ADMM).
    pub given_walks: Option<GivenWalks>,
}

/// The ex-post certificate N2 ([`dpwalk_privacy::walk::GIVEN_WALK`]) of the canary against the
/// observer on the walks the trials realised: `min(k, Ψ)·ε_loc` with `Ψ` each trial's charge
/// ([`Transcript::psi`]). With one given walk every trial has the same `Ψ` and the network view
/// is compared with its figure; where each trial draws its own walk, the figure of one walk
/// bounds an observer who knows that walk, not the audit's ε̂ over all of them (which the
/// path-hidden figure bounds): it is reported, not compared.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct GivenWalks {
    /// The label.
    pub figure: &'static str,
    /// Whether every trial followed one given walk.
    pub fixed: bool,
    /// The smallest, mean and largest `Ψ` over the trials.
    pub psi_min: f64,
    /// See `psi_min`.
    pub psi_mean: f64,
    /// See `psi_min`.
    pub psi_max: f64,
    /// N2's ε at the largest `Ψ` (`None`: no finite guarantee).
    pub epsilon_max: Option<f64>,
    /// N2's ε at the mean `Ψ`.
    pub epsilon_mean: Option<f64>,
}

/// The seeds of audit trials start this far into the schedule purpose's index space, away from
/// the indices a run uses (0: the walk's first holder, 1: federated sampling).
const TRIAL_STREAMS: u64 = 1 << 40;

/// The run seed of trial `run` of world `world`: distinct for every trial, derived from the
/// scenario seed with [`derive_seed`] (the one place seeds are derived).
pub fn trial_seed(seed: u64, world: usize, run: usize) -> u64 {
    derive_seed(
        seed,
        Purpose::Schedule,
        TRIAL_STREAMS + 2 * run as u64 + world as u64,
    )
}

/// The neighbour user `i` forwards to most often (the smallest index among ties).
pub fn default_observer(topology: &Topology, user: usize) -> Option<usize> {
    let mut best: Option<(usize, f64)> = None;
    for (j, p) in topology.transition_row(user) {
        if j != user && best.is_none_or(|b| p > b.1 || (p == b.1 && j < b.0)) {
            best = Some((j, p));
        }
    }
    best.map(|b| b.0)
}

/// Runs `runs` trials of `world` in parallel.
fn sample(
    world: &World<'_>,
    runs: usize,
    seed: u64,
    index: usize,
    bar: &ProgressBar,
) -> Result<Vec<Transcript>, AuditError> {
    // The user-level white box is forced to `±C·d`; the record-level one is measured instead.
    let require_clip =
        world.canary.kind == CanaryKind::WhiteBox && world.canary.record_level.is_none();
    let out: Result<Vec<Transcript>, _> = (0..runs)
        .into_par_iter()
        .map_init(
            || Scratch::new(world),
            |scratch, r| {
                let t = run_trial(world, scratch, trial_seed(seed, index, r), require_clip);
                if r % 64 == 63 {
                    bar.inc(64);
                }
                t
            },
        )
        .collect();
    Ok(out?)
}

impl StatisticAudit {
    /// The GDP variant's ε̂, where the noise is Gaussian (see `gdp_exceeds_bound`).
    pub fn gdp_epsilon(&self) -> Option<f64> {
        self.gdp_exceeds_bound.map(|_| self.estimate.gdp_epsilon)
    }
}

/// Each view's bound (from `bound_of`) beside the ε̂ of each of its statistics (those of
/// `contributions` contributions) on the trials `pair` of `steps` hops (rounds); the GDP variant
/// only where the noise is `gaussian`.
#[allow(clippy::too_many_arguments)]
pub(crate) fn view_audits(
    views: &[View],
    pair: [&[Transcript]; 2],
    steps: u64,
    contributions: u64,
    gaussian: bool,
    opts: &Options,
    mut bound_of: impl FnMut(View) -> Result<Bound, AuditError>,
) -> Result<Vec<ViewAudit>, AuditError> {
    let mut out = Vec::new();
    for &view in views {
        let bound = bound_of(view)?;
        let mut statistics = Vec::new();
        for statistic in Statistic::for_contributions(view, contributions) {
            let (scores, weights) = scores(view, statistic, pair, steps);
            let estimate = estimate(&scores[0], &scores[1], opts)?;
            statistics.push(StatisticAudit {
                statistic,
                exceeds_bound: estimate.epsilon > bound.epsilon_or_inf(),
                gdp_exceeds_bound: gaussian.then(|| estimate.gdp_epsilon > bound.epsilon_or_inf()),
                estimate,
                weights,
                scores,
            });
        }
        out.push(ViewAudit {
            view,
            bound,
            statistics,
        });
    }
    Ok(out)
}

/// The progress bar of `trials` trials (hidden when `quiet`).
pub(crate) fn progress(trials: usize, quiet: bool) -> ProgressBar {
    let bar = if quiet {
        ProgressBar::hidden()
    } else {
        ProgressBar::new(trials as u64)
    };
    bar.set_style(
        ProgressStyle::with_template(
            "{spinner} {elapsed_precise} [{bar:40}] {human_pos}/{human_len} trials ({per_sec}, eta {eta})",
        )
        .unwrap_or_else(|_| ProgressStyle::default_bar())
        .progress_chars("=> "),
    );
    bar
}

/// The scenario's sweep points and the indices of those to audit (`point`, or all), after
/// checking that the scenario runs walks and that there is a view to audit.
///
/// # Errors
/// [`AuditError`]: not a walk, no view, a point out of range, an invalid sweep.
pub(crate) fn walk_points(
    loaded: &LoadedScenario,
    point: Option<usize>,
    views: &[View],
) -> Result<(Vec<PendingPoint>, Vec<usize>), AuditError> {
    let s = loaded.scenario();
    // A panel's points get their noise from the paper's accounting (`crate::reproduce`), which
    // the audit's points (the scenario's own) do not have: they would audit the wrong noise.
    if let Some(r) = &s.reproduce {
        return Err(AuditError::Invalid(format!(
            "a [reproduce] panel ({}) sets each point's noise by the paper's own accounting, \
             which the audit does not run: audit the comparison scenario of the same algorithm \
             (sim/compare/) at the knob the panel's summary.json reports, with --set",
            r.figure
        )));
    }
    let walks = loaded.points().iter().any(|p| p.method.is_walk());
    if walks && s.algorithm.mode != Mode::Decentralized {
        return Err(AuditError::Invalid(format!(
            "the audit runs walks: the scenario's mode is {} (set algorithm.mode = \"decentralized\")",
            s.algorithm.mode.as_str()
        )));
    }
    if views.is_empty() {
        return Err(AuditError::Invalid("no view to audit".into()));
    }
    let points = loaded.points().to_vec();
    let chosen: Vec<usize> = match point {
        Some(p) if p >= points.len() => {
            return Err(AuditError::Invalid(format!(
                "--point {p}: the scenario has {} point(s), 0 to {}",
                points.len(),
                points.len() - 1
            )));
        }
        Some(p) => vec![p],
        None => (0..points.len()).collect(),
    };
    Ok((points, chosen))
}

/// Audits the points of `loaded` (prepared by [`crate::simulate::prepare`]).
///
/// # Errors
/// [`AuditError`]: a scenario that is not a walk, a user, observer or point out of range, a
/// point without a privacy guarantee (no clip, σ = 0), a failed trial.
pub fn audit(
    loaded: &LoadedScenario,
    prepared: &Prepared,
    config: &Config,
) -> Result<Vec<PointAudit>, AuditError> {
    audit_with(loaded, prepared, config, None)
}

/// [`audit`] with every trial following the holders `walk` (the canary user first, every move an
/// edge of the topology; `steps` defaults to its length) instead of drawing its own: on a
/// DP-SGD walk the network view is then compared with the ex-post certificate N2 of this walk
/// ([`super::bound::Walk::Given`]), which holds against an observer who knows it. Walks only.
///
/// # Errors
/// As [`audit`]; a walk of the wrong length, not starting at the canary user, or leaving the
/// topology's edges; a baseline's point.
pub fn audit_on_walk(
    loaded: &LoadedScenario,
    prepared: &Prepared,
    config: &Config,
    walk: &[usize],
) -> Result<Vec<PointAudit>, AuditError> {
    audit_with(loaded, prepared, config, Some(walk))
}

fn audit_with(
    loaded: &LoadedScenario,
    prepared: &Prepared,
    config: &Config,
    walk: Option<&[usize]>,
) -> Result<Vec<PointAudit>, AuditError> {
    let s = loaded.scenario();
    let (points, chosen) = walk_points(loaded, config.point, &config.views)?;
    if config.contributions == 0 {
        return Err(AuditError::Invalid("--contributions must be >= 1".into()));
    }
    let k = config.contributions;
    if config.steps == Some(0) {
        return Err(AuditError::Invalid("--steps must be >= 1".into()));
    }
    // Each point's trial length comes from its own horizon (`[by-kind.<kind>] steps`): hops of a
    // walk, rounds of a baseline; all are checked before any trial runs.
    let lengths = chosen
        .iter()
        .map(|&p| {
            let horizon = points[p].steps;
            if points[p].method.is_walk() {
                return Ok(config.steps.unwrap_or(match walk {
                    Some(walk) => walk.len() as u64,
                    None => horizon.min((2 * s.users as u64).saturating_mul(k)),
                }));
            }
            if walk.is_some() {
                return Err(AuditError::Invalid(format!(
                    "--walk gives the holders of dpwalk's walk; point {p} is a baseline ({}), whose users contribute every round",
                    points[p].method.describe()
                )));
            }
            let rounds = config.steps.unwrap_or(s.rounds(horizon).min(4));
            if rounds == 0 {
                return Err(AuditError::Invalid(format!(
                    "a baseline's trial runs whole rounds, and point {p} has none (steps = {horizon} < users = {}): give --steps ROUNDS",
                    s.users
                )));
            }
            Ok(rounds)
        })
        .collect::<Result<Vec<u64>, AuditError>>()?;
    let bar = progress(chosen.len() * 2 * config.runs, config.quiet);
    let mut out = Vec::new();
    for (p, length) in chosen.into_iter().zip(lengths) {
        let resolved = prepared.privacy.resolve(s, &points[p])?;
        let point = &resolved.point;
        out.push(if point.method.walk().is_some() {
            audit_point(loaded, prepared, config, walk, (p, point), length, &bar)?
        } else {
            super::baseline::audit_point(loaded, prepared, config, p, point, length, &bar)?
        });
    }
    bar.finish_and_clear();
    Ok(out)
}

/// The walk's algorithm at `point` (a baseline is refused: the one-run mode audits walks only).
///
/// # Errors
/// [`AuditError::Invalid`] for a baseline.
pub(crate) fn walk_algorithm(point: &Point) -> Result<Algorithm, AuditError> {
    point.method.walk().copied().ok_or_else(|| {
        AuditError::Invalid(format!(
            "the one-run audit runs dpwalk's walk (algorithm.kind = \"admm\" or \"dp-sgd\"); {} \
             is a baseline: audit it in two worlds (without --one-run)",
            point.method.describe()
        ))
    })
}

/// The accountant's setup for `algorithm`'s noise.
///
/// # Errors
/// [`AuditError`]: no clip, or a noise the accountant refuses.
pub(crate) fn accountant(
    prepared: &Prepared,
    algorithm: &Algorithm,
) -> Result<dpwalk_privacy::walk::Setup, AuditError> {
    let clip = algorithm
        .clip()
        .ok_or_else(|| AuditError::Invalid("no clip: nothing to audit".into()))?;
    let noise = Noise::new(algorithm.sigma(), clip)?;
    Ok(prepared.privacy.setup(noise))
}

#[allow(clippy::too_many_arguments)]
fn audit_point(
    loaded: &LoadedScenario,
    prepared: &Prepared,
    config: &Config,
    given: Option<&[usize]>,
    (index, point): (usize, &Point),
    steps: u64,
    bar: &ProgressBar,
) -> Result<PointAudit, AuditError> {
    let s = loaded.scenario();
    let named = &prepared.topologies[point.topology];
    let topology = &named.topology;
    let n = topology.n();
    let observer = match config.observer {
        Some(j) if j >= n || j == config.user => {
            return Err(AuditError::Invalid(format!(
                "--observer {j} must be a user (0 to {}) other than the canary user {}",
                n - 1,
                config.user
            )));
        }
        Some(j) => j,
        None => default_observer(topology, config.user).ok_or_else(|| {
            AuditError::Invalid(format!(
                "user {} has no neighbour to observe it",
                config.user
            ))
        })?,
    };
    let algorithm = walk_algorithm(point)?;
    if let Some(walk) = given {
        check_walk(walk, topology, config.user, steps)?;
    }
    let base = &prepared.problem;
    let k = config.contributions;
    let pick = if k > 1 {
        Pick::Steadiest
    } else {
        Pick::Strongest
    };
    let record_level = s.privacy.unit == UnitName::Record;
    let (worlds, initial, setup) = if record_level {
        let pair = record::walk(s, prepared, &algorithm, config.user, config.canary)?;
        let clip = pair
            .privacy
            .accounted_clip(&point.method)
            .ok_or_else(|| AuditError::Invalid("no clip: nothing to audit".into()))?;
        let setup = pair.privacy.setup(Noise::new(algorithm.sigma(), clip)?);
        (pair.worlds, pair.start, setup)
    } else {
        let worlds = canary::for_problem(base, &algorithm, config.user, config.canary, pick)?;
        (worlds, None, accountant(prepared, &algorithm)?)
    };
    let passage = prepared.privacy.passage(s, point);
    let start = Instant::now();
    let mut transcripts = Vec::with_capacity(2);
    for (w, problem) in worlds.problems.iter().enumerate() {
        let world = World::new(
            problem,
            algorithm,
            topology,
            &worlds.canary,
            observer,
            steps,
        )?
        .with_contributions(k)
        .with_start(initial.as_ref())
        .with_walk(given);
        transcripts.push(sample(&world, config.runs, s.seed, w, bar)?);
    }
    let trials_per_second = (2 * config.runs) as f64 / start.elapsed().as_secs_f64().max(1e-9);
    let opts = Options {
        delta: s.privacy.delta,
        confidence: config.confidence,
        ..Options::default()
    };
    let pair = [transcripts[0].as_slice(), transcripts[1].as_slice()];
    let all = || pair.iter().flat_map(|t| t.iter());
    let walk = match given {
        Some(holders) => Walk::Given {
            observer,
            psi: given_psi(holders, config.user, observer, k),
        },
        None => Walk::Drawn { topology, observer },
    };
    let views = view_audits(&config.views, pair, steps, k, true, &opts, |view| {
        let bound = composed_bound(&setup, passage, config.user, steps, view, k, walk)?;
        Ok(record::label(bound, point.method.kind(), s.privacy.unit))
    })?;
    let given_walks = match passage {
        Some(_) => Some(given_walks(&setup, all(), k, given.is_some())?),
        None => None,
    };
    let arrivals = all().filter(|t| t.arrival_count > 0).count();
    let trials = (2 * config.runs).max(1) as f64;
    let contributions = Activity {
        bound_for: k,
        mean: all().map(|t| t.contributions).sum::<u64>() as f64 / trials,
        mean_clipped: Some(all().map(|t| t.clipped).sum::<u64>() as f64 / trials),
    };
    let mut setting = Setting::new(
        index, point, &algorithm, &setup, named, steps, s.seed, observer,
    );
    // The step's own clip C (the record-level one is the canary's `accounted_clip`).
    setting.clip = algorithm.clip().unwrap_or(f64::INFINITY);
    Ok(PointAudit {
        setting,
        runs: config.runs,
        canary: worlds.canary,
        contributions,
        arrival_rate: arrivals as f64 / trials,
        trials_per_second,
        views,
        given_walks,
    })
}

/// Checks a given walk: `steps` holders, the canary user first, every move along an edge of
/// `topology` (a transition of positive probability).
fn check_walk(
    walk: &[usize],
    topology: &Topology,
    user: usize,
    steps: u64,
) -> Result<(), AuditError> {
    let n = topology.n();
    if walk.len() as u64 != steps {
        return Err(AuditError::Invalid(format!(
            "--walk has {} holders and the trials {steps} steps: give one holder per step (--steps defaults to the walk's length)",
            walk.len()
        )));
    }
    if walk.first() != Some(&user) {
        return Err(AuditError::Invalid(format!(
            "--walk must start at the canary user {user} (the trials start there)"
        )));
    }
    if let Some(&x) = walk.iter().find(|&&x| x >= n) {
        return Err(AuditError::Invalid(format!(
            "--walk: holder {x} is not a user (0 to {})",
            n - 1
        )));
    }
    for (t, pair) in walk.windows(2).enumerate() {
        let (x, y) = (pair[0], pair[1]);
        if !topology.transition_row(x).any(|(z, p)| z == y && p > 0.0) {
            return Err(AuditError::Invalid(format!(
                "--walk: step {t} moves from {x} to {y}, which the topology's walk never does"
            )));
        }
    }
    Ok(())
}

/// `Ψ` of the canary `user` against `observer` on the given walk `holders`, the canary
/// contributing at its first `k` visits (as the trials do), by the accountant's own
/// [`psi`].
fn given_psi(holders: &[usize], user: usize, observer: usize, k: u64) -> f64 {
    let mut made = 0;
    let path: Vec<Visit> = holders
        .iter()
        .map(|&holder| {
            let contribution = holder != user || made < k;
            if holder == user && contribution {
                made += 1;
            }
            Visit {
                holder,
                contribution,
            }
        })
        .collect();
    psi(&path, user, observer)
}

/// N2 over the trials' walks (see [`GivenWalks`]).
fn given_walks<'a>(
    setup: &dpwalk_privacy::walk::Setup,
    trials: impl Iterator<Item = &'a Transcript>,
    k: u64,
    fixed: bool,
) -> Result<GivenWalks, AuditError> {
    let (mut lo, mut hi, mut sum, mut count) = (f64::INFINITY, 0.0f64, 0.0, 0usize);
    for t in trials {
        lo = lo.min(t.psi);
        hi = hi.max(t.psi);
        sum += t.psi;
        count += 1;
    }
    let mean = sum / count.max(1) as f64;
    let epsilon = |psi: f64| -> Result<Option<f64>, AuditError> {
        let f: dpwalk_privacy::walk::Figure = given_walk_bound(
            &setup.orders,
            setup.noise,
            psi,
            k,
            setup.delta,
            setup.conversion,
        )?
        .into();
        Ok(f.epsilon)
    };
    Ok(GivenWalks {
        figure: GIVEN_WALK,
        fixed,
        psi_min: if count == 0 { 0.0 } else { lo },
        psi_mean: mean,
        psi_max: hi,
        epsilon_max: epsilon(hi)?,
        epsilon_mean: epsilon(mean)?,
    })
}
