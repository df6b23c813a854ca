//! The swarm's run: the scenario's single point as a run file (σ or the budget as the simulator
//! resolves them, and the record-level inputs under `[privacy] unit = "record"`), and the nodes'
//! files written from it on 127.0.0.1.

use anyhow::{Context, bail, ensure};
use dpwalk_core::spec::{BudgetSpec, BudgetViewName, ProblemSpec, UnitName, UnitSpec};
use dpwalk_core::topology::TopologyKind;
use dpwalk_net::config::Timeouts;
use dpwalk_net::run::{AlgorithmSpec, RunFile};
use dpwalk_net::workspace::{self, MemberPlan, NodeOptions};
use dpwalk_sim::algorithm::Mode;
use dpwalk_sim::record_level::RecordLevel;
use dpwalk_sim::scenario::{BudgetView, LoadedScenario, PendingPoint};
use dpwalk_sim::simulate::{self, Prepared};
use std::path::Path;

use super::supervise::NodeProc;

/// The scenario's single point, with σ calibrated as the simulator does, and the run file.
pub(super) fn plan(
    loaded: &LoadedScenario,
    prepared: &Prepared,
) -> anyhow::Result<(dpwalk_sim::privacy::Resolved, RunFile)> {
    let s = loaded.scenario();
    ensure!(
        s.algorithm.mode == Mode::Decentralized && s.algorithm.kind.is_walk(),
        "a swarm runs dpwalk's decentralized walk: set algorithm.kind = \"admm\" or \"dp-sgd\", and mode = \"decentralized\""
    );
    let point = single_point(loaded)?;
    if s.repetitions > 1 {
        tracing::warn!(
            repetitions = s.repetitions,
            "a swarm runs one repetition (seed {})",
            s.seed
        );
    }
    let resolved = prepared.privacy.resolve(s, point)?;
    // A run file's `[budget]` is calibrated and enforced on its view (local, or network) by
    // every node, with the simulator's calibration and policy.
    let view = match s.budget_view(&resolved.point.method) {
        BudgetView::Local => BudgetViewName::Local,
        BudgetView::Network => BudgetViewName::Network,
        BudgetView::Central => {
            anyhow::bail!(
                "a swarm runs the walk: its budget is on the local or the network view, not \"central\""
            )
        }
    };
    // An enforced budget goes into the run file: every node calibrates the same σ from it and
    // enforces it with the simulator's policy. Without enforcement the calibrated σ is given.
    let budget = match (resolved.policy, resolved.point.budget) {
        (Some(_), Some(epsilon)) => Some(BudgetSpec {
            epsilon,
            delta: s.privacy.delta,
            view,
        }),
        _ => None,
    };
    let algorithm = *resolved
        .point
        .method
        .walk()
        .context("a swarm runs dpwalk's walk (ADMM or DP-SGD)")?;
    let clip = algorithm.clip().context(
        "a daemon run needs a clip (algorithm.clip): it is what bounds the privacy loss",
    )?;
    let spec = &s.topologies()[point.topology];
    ensure!(
        spec.kind != TopologyKind::File,
        "the run file must be self-contained: give the topology inline (a generator, or kind = \"edges\")"
    );
    let problem = &prepared.problem;
    let file = RunFile {
        run_id: format!("{}-{}", loaded.name(), s.seed)
            .chars()
            .map(|c| {
                if c.is_ascii_alphanumeric() || "._-".contains(c) {
                    c
                } else {
                    '-'
                }
            })
            .take(dpwalk_net::codec::MAX_RUN_ID)
            .collect(),
        seed: simulate::repetition_seed(s.seed, 0),
        steps: point.steps,
        dimension: problem.dim(),
        // The loss and regularizer the simulator built (classes counted in the data), written
        // back as the shared `[problem]` table.
        problem: ProblemSpec::of(problem.loss(), *problem.regularizer()),
        algorithm: AlgorithmSpec::of(
            &algorithm,
            clip,
            budget.is_none().then(|| algorithm.sigma()),
        ),
        budget,
        privacy: record_unit(loaded, prepared)?,
        topology: spec.clone(),
        start: None,
        members: Vec::new(),
    };
    Ok((resolved, file))
}

/// The scenario's single point (a swarm runs no sweep).
pub(super) fn single_point(loaded: &LoadedScenario) -> anyhow::Result<&PendingPoint> {
    let points = loaded.points();
    let [point] = points else {
        bail!(
            "a swarm runs one point: the scenario sweeps over {} (remove its [sweep])",
            points.len()
        );
    };
    Ok(point)
}

/// The run file's `[privacy]` at record level: `min-records` the fewest records of a user in the
/// partition and `feature-norm` the largest row norm of the data, the inputs the simulator's
/// record-level clip takes from the same data (`dpwalk_sim::record_level`), so that the nodes
/// account with the same clip, calibrate the same σ and skip the same steps. `None` at user
/// level.
fn record_unit(loaded: &LoadedScenario, prepared: &Prepared) -> anyhow::Result<Option<UnitSpec>> {
    let Some(record) = RecordLevel::new(loaded.scenario(), &prepared.problem)? else {
        return Ok(None);
    };
    Ok(Some(UnitSpec {
        unit: UnitName::Record,
        min_records: Some(record.fewest_records),
        feature_norm: Some(prepared.problem.max_feature_norm()),
    }))
}

/// Nodes per core from which the timeouts are lengthened ([`crowded_timeouts`]).
const NODES_PER_CORE: usize = 8;

/// The nodes' timeouts when `nodes` daemons share `cores` cores: the defaults (one node per host)
/// times `⌈nodes / (NODES_PER_CORE · cores)⌉`, for the request, the hand-off and the resume; `None`
/// (the defaults) up to `NODES_PER_CORE` nodes per core.
///
/// Why: a receiver that does not acknowledge within the hand-off timeout is routed around, and if
/// it had taken the token the walk forks (README, "Limits"). Daemons crowded on one machine
/// starve each other: with 256 nodes on 2 cores, at start-up while they all connect, a member's
/// event loop ran about twice a second and one took longer than the default 3 s to acknowledge
/// (tests/scale.rs failed on it: seqs 14 to 77 stepped twice). Hosts of a real run are not
/// crowded like this, and a swarm of a few nodes keeps the defaults, so the fault tests still
/// see the defaults' timings.
fn crowded_timeouts(nodes: usize, cores: usize) -> Option<Timeouts> {
    let factor = nodes.div_ceil(NODES_PER_CORE * cores.max(1));
    let factor = u64::try_from(factor).ok().filter(|&f| f > 1)?;
    let d = Timeouts::default();
    Some(Timeouts {
        request: d.request * factor,
        handoff: d.handoff * factor,
        resume: d.resume * factor,
        ..d
    })
}

/// Keys, data files, `node.toml`s and the shared run file ([`dpwalk_net::workspace`]), each
/// node on two free ports of 127.0.0.1 (libp2p and status) and holding its user's rows.
pub(super) fn write_nodes(
    out: &Path,
    loaded: &LoadedScenario,
    prepared: &Prepared,
    run_file: RunFile,
) -> anyhow::Result<Vec<NodeProc>> {
    let n = loaded.scenario().users;
    let ports = workspace::free_ports(2 * n)?;
    let data = prepared.problem.data();
    let plans: Vec<MemberPlan> = (0..n)
        .map(|i| MemberPlan {
            listen: format!("/ip4/127.0.0.1/tcp/{}", ports[2 * i]),
            status: format!("127.0.0.1:{}", ports[2 * i + 1]),
            features: data.features(i),
            labels: data.labels(i),
            n_features: data.data.n_features,
        })
        .collect();
    let cores = std::thread::available_parallelism().map_or(1, std::num::NonZero::get);
    let timeouts = crowded_timeouts(n, cores);
    if let Some(t) = timeouts {
        tracing::info!(
            nodes = n,
            cores,
            handoff_ms = t.handoff,
            resume_ms = t.resume,
            request_ms = t.request,
            "{n} nodes on {cores} cores: the hand-off, resume and request timeouts are lengthened {}-fold, so that a member slowed by the others is waited for rather than routed around (which would fork the walk)",
            t.handoff / Timeouts::default().handoff
        );
    }
    let options = NodeOptions {
        eval_every: Some(loaded.scenario().eval_interval(run_file.steps)),
        timeouts,
    };
    let written = workspace::write(out, run_file, &plans, options)
        .with_context(|| format!("writing the nodes' files in {}", out.display()))?;
    tracing::info!(run = written.run.run_id(), hash = %written.run.hash(), "run file written");
    Ok(written
        .members
        .into_iter()
        .zip(plans)
        .map(|(member, plan)| NodeProc {
            index: member.index,
            dir: member.dir,
            status: plan.status,
            child: None,
        })
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn crowded_daemons_get_longer_timeouts_and_a_few_keep_the_defaults() {
        let d = Timeouts::default();
        // Up to eight nodes per core: the defaults (the fault tests run 5 to 8 nodes).
        assert_eq!(crowded_timeouts(8, 1), None);
        assert_eq!(crowded_timeouts(16, 2), None);
        assert_eq!(crowded_timeouts(3, 0), None);
        // 256 nodes on 2 cores: 16 times the defaults, resume still above the hand-off.
        let t = crowded_timeouts(256, 2).unwrap();
        assert_eq!(
            (t.request, t.handoff, t.resume),
            (16 * d.request, 16 * d.handoff, 16 * d.resume)
        );
        assert_eq!((t.linger, t.idle), (d.linger, d.idle));
        assert!(t.resume > t.handoff);
        // One node past the threshold rounds up.
        assert_eq!(crowded_timeouts(17, 2).unwrap().handoff, 2 * d.handoff);
        // The same swarm on the 16-core machine: 2 times.
        assert_eq!(crowded_timeouts(256, 16).unwrap().handoff, 2 * d.handoff);
    }
}
