//! A whole scenario: prepare the problem once, run every sweep point and repetition in parallel
//! (`rayon`), and aggregate; `crate::output` writes the results.

use crate::method::Method;
use crate::metrics::Evaluator;
use crate::privacy::{PrivacyContext, Resolved};
use crate::reproduce::PaperPoint;
use crate::rounds::run_rounds;
use crate::run::{RunError, RunResult, Schedule, run};
use crate::scenario::{LoadedScenario, Point, ScenarioError};
use dpwalk_core::data::{DataError, Dataset, LabelKind, LoadedData};
use dpwalk_core::problem::reference::{self, Reference, ReferenceOptions};
use dpwalk_core::problem::{Problem, ProblemError};
use dpwalk_core::spec::build_topology;
use dpwalk_core::spec::topology::Source;
use dpwalk_core::topology::{Topology, TopologyError};
use indicatif::{ProgressBar, ProgressStyle};
use rayon::prelude::*;
use thiserror::Error;

/// Errors of a simulation.
#[derive(Debug, Error)]
pub enum SimError {
    /// The scenario is invalid.
    #[error(transparent)]
    Scenario(#[from] ScenarioError),
    /// The data could not be loaded or partitioned.
    #[error("data")]
    Data(#[from] DataError),
    /// The topology is invalid or unusable for the walk.
    #[error("topology")]
    Topology(#[from] TopologyError),
    /// The problem could not be built or solved.
    #[error("problem")]
    Problem(#[from] ProblemError),
    /// A run failed.
    #[error("run")]
    Run(#[from] RunError),
    /// The accountant refused its inputs.
    #[error("privacy")]
    Privacy(#[from] dpwalk_privacy::PrivacyError),
}

/// The parts of a scenario shared by all its runs.
#[derive(Debug)]
pub struct Prepared {
    /// Loss, regularizer and the users' data.
    pub problem: Problem,
    /// The held-out test set, if any.
    pub test: Option<Dataset>,
    /// The communication graphs (one unless the scenario sweeps over topologies).
    pub topologies: Vec<NamedTopology>,
    /// The non-private optimum.
    pub optimum: Reference,
    /// Orders, δ, conversion, the topologies the network figures need and those computed.
    pub privacy: PrivacyContext,
}

/// A topology with a label for reports (its `kind` and size).
#[derive(Debug)]
pub struct NamedTopology {
    /// E.g. `random-regular (100 nodes)`.
    pub label: String,
    /// The graph.
    pub topology: Topology,
}

/// Loads the data, partitions it, builds the problem and the topology, and solves the
/// non-private reference problem. Data are the same for every run of the scenario.
pub fn prepare(loaded: &LoadedScenario) -> Result<Prepared, SimError> {
    let s = loaded.scenario();
    // The data and partition derive their own seeds from the run seed (see `data::spec`).
    let data = s.data.load(loaded.base_dir(), s.seed)?;
    prepare_data(loaded, data)
}

/// [`prepare`] on data already loaded (`dpwalk tune` gives its training part without the
/// validation records, and the validation records as the test set).
pub fn prepare_data(loaded: &LoadedScenario, data: LoadedData) -> Result<Prepared, SimError> {
    let s = loaded.scenario();
    let classes = match data.train.label_kind {
        LabelKind::Classes(k) => Some(k),
        _ => None,
    };
    let users = s.partition.apply(data.train, s.users, s.seed)?;
    let loss = s
        .problem
        .loss_for_data(classes)
        .map_err(ScenarioError::from)?;
    let regularizer = s.problem.regularizer().map_err(ScenarioError::from)?;
    let problem = Problem::new(loss, regularizer, users)?;
    // The walk's requirement; the synchronous baselines check their own (`rounds::check`).
    let walks = s.kinds().iter().any(|k| k.is_walk())
        && s.algorithm.mode == crate::algorithm::Mode::Decentralized;
    let mut topologies = Vec::new();
    let specs = s.topologies();
    for (i, spec) in specs.iter().enumerate() {
        // Keys are named where the spec is written: `[topology]` or `[[sweep.topology]]` i.
        let index = i.to_string();
        let at: &[&str] = if s.sweep.topology.is_empty() {
            &["topology"]
        } else {
            &["sweep", "topology", &index]
        };
        let topology = build_topology(
            spec,
            s.users,
            s.seed,
            Source::Files(loaded.base_dir()),
            walks,
            at,
        )
        .map_err(ScenarioError::from)?;
        topologies.push(NamedTopology {
            label: format!("{} ({} nodes)", spec.kind.name(), topology.n()),
            topology,
        });
    }
    let optimum = reference::solve(&problem, &ReferenceOptions::default())?;
    let graphs: Vec<&Topology> = topologies.iter().map(|t| &t.topology).collect();
    let privacy = PrivacyContext::new(s, &problem, &graphs)?;
    // The baselines refuse what they cannot run (a loss outside a proof, a graph) now, with the
    // reason, rather than after the other points have run.
    for point in loaded.points().iter().filter(|p| !p.method.is_walk()) {
        let method = point.method.parameters();
        crate::rounds::check(&problem, graphs[point.topology], method)?;
        privacy.account(method, point.topology, point.steps)?;
    }
    Ok(Prepared {
        problem,
        test: data.test,
        topologies,
        optimum,
        privacy,
    })
}

/// The runs of one sweep point.
#[derive(Debug)]
pub struct PointResult {
    /// The point, σ calibrated where it had a budget.
    pub point: Point,
    /// Its calibration and contribution caps.
    pub resolved: Resolved,
    /// What the point reproduces, in a reproduction panel (`crate::reproduce`).
    pub paper: Option<PaperPoint>,
    /// One result per repetition, in repetition order.
    pub runs: Vec<RunResult>,
    /// The run seed of each repetition.
    pub seeds: Vec<u64>,
}

/// Runs every point × repetition of the scenario; shows a progress bar unless `quiet`.
pub fn simulate(
    loaded: &LoadedScenario,
    prepared: &Prepared,
    quiet: bool,
) -> Result<Vec<PointResult>, SimError> {
    let s = loaded.scenario();
    let (resolved, papers): (Vec<Resolved>, Vec<Option<PaperPoint>>) =
        crate::reproduce::resolve(loaded, &prepared.privacy)?
            .into_iter()
            .unzip();
    for r in resolved.iter().filter(|r| r.point.budget.is_some()) {
        tracing::info!(
            epsilon = r.point.budget,
            knob = r.point.method.knob(),
            contributions = r.calibrated_for,
            "calibrated sigma to the budget"
        );
    }
    let points: Vec<Point> = resolved.iter().map(|r| r.point).collect();
    let reps = s.repetitions;
    // Each point runs its own horizon.
    let total = points.iter().map(|p| p.steps).sum::<u64>() * reps as u64;
    let bar = progress_bar(
        total,
        quiet,
        "{human_pos}/{human_len} steps ({per_sec}, eta {eta})",
    );
    let evaluator = Evaluator {
        problem: &prepared.problem,
        test: prepared.test.as_ref(),
        optimum: &prepared.optimum,
    };
    let tasks: Vec<(usize, usize)> = (0..points.len())
        .flat_map(|p| (0..reps).map(move |r| (p, r)))
        .collect();
    let results: Result<Vec<RunResult>, RunError> = tasks
        .par_iter()
        .map(|&(p, r)| {
            let schedule = Schedule {
                mode: s.algorithm.mode,
                blocks_per_round: s.algorithm.blocks_per_round,
                steps: points[p].steps,
                eval_every: s.eval_interval(points[p].steps),
                run_seed: repetition_seed(s.seed, r),
            };
            let progress = |k: u64| bar.inc(k);
            let topology = &prepared.topologies[points[p].topology].topology;
            let policy = resolved[p].policy.as_ref();
            match points[p].method {
                Method::Walk(algorithm) => run(
                    &prepared.problem,
                    topology,
                    &algorithm,
                    &schedule,
                    policy,
                    &evaluator,
                    &progress,
                ),
                method => run_rounds(
                    &prepared.problem,
                    topology,
                    &method,
                    &schedule,
                    &evaluator,
                    &progress,
                )
                .and_then(|r| r.ok_or(RunError::NotRoundBased)),
            }
        })
        .collect();
    bar.finish_and_clear();
    let mut results = results?.into_iter();
    Ok(resolved
        .into_iter()
        .zip(papers)
        .map(|(resolved, paper)| PointResult {
            point: resolved.point,
            resolved,
            paper,
            runs: results.by_ref().take(reps).collect(),
            seeds: (0..reps).map(|r| repetition_seed(s.seed, r)).collect(),
        })
        .collect())
}

/// A progress bar of `total` units (hidden when `quiet`), its count drawn by `counter` (an
/// `indicatif` template).
pub(crate) fn progress_bar(total: u64, quiet: bool, counter: &str) -> ProgressBar {
    let bar = if quiet {
        ProgressBar::hidden()
    } else {
        ProgressBar::new(total)
    };
    bar.set_style(
        ProgressStyle::with_template(&format!(
            "{{spinner}} {{elapsed_precise}} [{{bar:40}}] {counter}"
        ))
        .unwrap_or_else(|_| ProgressStyle::default_bar())
        .progress_chars("=> "),
    );
    bar
}

/// The run seed of repetition `r`: `seed + r`, so that repetition 0 is the scenario's own seed
/// (the one a daemon swarm given the same run file uses). Repetition 1 of seed 7 is therefore
/// repetition 0 of seed 8: compare scenarios run with seeds at least `repetitions` apart.
pub fn repetition_seed(seed: u64, r: usize) -> u64 {
    seed.wrapping_add(r as u64)
}
