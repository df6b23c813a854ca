//! The result of a swarm: every node's final model, checked to agree, and the models recorded
//! on the way, evaluated as the simulator evaluates its own.

use anyhow::{Context, bail, ensure};
use dpwalk_net::certify::walk_from_ledgers;
use dpwalk_net::final_model::FinalModelFile;
use dpwalk_net::run::Run;
use dpwalk_sim::given_walk::{Certificate, GivenWalk};
use dpwalk_sim::method::Method;
use dpwalk_sim::metrics::Evaluator;
use dpwalk_sim::run::{Clips, RunResult};
use dpwalk_sim::scenario::LoadedScenario;
use dpwalk_sim::simulate::{self, PointResult, Prepared};
use std::path::PathBuf;
use std::time::Instant;

use super::supervise::NodeProc;

/// Reads every node's final model, checks they agree, and evaluates it like the simulator.
pub(super) fn collect(
    nodes: &[NodeProc],
    loaded: &LoadedScenario,
    prepared: &Prepared,
    resolved: dpwalk_sim::privacy::Resolved,
    wall_seconds: f64,
) -> anyhow::Result<PointResult> {
    let mut finals = Vec::with_capacity(nodes.len());
    for node in nodes {
        let f = FinalModelFile::read(&node.dir.join("state"))
            .with_context(|| format!("node {} wrote no final model", node.index))?;
        finals.push(f);
    }
    let first = &finals[0];
    for (i, f) in finals.iter().enumerate() {
        ensure!(
            f.run_hash == first.run_hash,
            "node {i} ran another run ({})",
            f.run_hash
        );
        ensure!(
            f.z.iter()
                .map(|v| v.to_bits())
                .eq(first.z.iter().map(|v| v.to_bits())),
            "node {i} holds a different final model from node 0"
        );
    }
    let s = loaded.scenario();
    let steps = resolved.point.steps;
    let per_user: Vec<u64> = finals.iter().map(|f| f.privacy.contributions).collect();
    let contributions = per_user.iter().sum();
    let evaluator = Evaluator {
        problem: &prepared.problem,
        test: prepared.test.as_ref(),
        optimum: &prepared.optimum,
    };
    let t = Instant::now();
    // The simulator's evaluation points: the models the nodes recorded at every `eval-every`
    // hops, then the final model; each counts the contributions made before it (the ledgers).
    // The ledgers also give the contributions of the walk's last steps, by user, which the
    // network view of a DP-SGD walk reads (`RunResult::late`), as the simulator records them.
    let mut made: Vec<(u64, usize)> = Vec::with_capacity(nodes.len());
    for node in nodes {
        let path = node
            .dir
            .join("state")
            .join(dpwalk_net::learner::LEDGER_FILE);
        let seqs = dpwalk_privacy::ledger::Ledger::seqs(&path)
            .with_context(|| format!("reading {}", path.display()))?;
        made.extend(seqs.into_iter().map(|seq| (seq, node.index)));
    }
    made.sort_unstable();
    let before = |seq: u64| made.partition_point(|&(q, _)| q < seq) as u64;
    let late = made
        .iter()
        .filter(|&&(seq, _)| steps.saturating_sub(seq) <= dpwalk_sim::run::LATE_WINDOW)
        .map(|&(seq, user)| (user, seq))
        .collect();
    let recorded = recorded_models(nodes, steps, s.eval_interval(steps), prepared.problem.dim())?;
    // Bytes as the simulator counts them for the walk, so that the two metrics.csv agree.
    let hop_bytes = dpwalk_sim::run::hop_bytes(prepared.problem.dim());
    let eval = |seq: u64, made: u64, z: &[f64]| {
        let mut row = evaluator.evaluate_model(seq, made, z);
        row.bytes = seq.saturating_mul(hop_bytes);
        row
    };
    let mut evals: Vec<_> = recorded
        .iter()
        .map(|(&seq, z)| eval(seq, before(seq), z))
        .collect();
    evals.push(eval(steps, contributions, &first.z));
    let eval_seconds = t.elapsed().as_secs_f64();
    let run = RunResult {
        evals,
        z: first.z.clone(),
        w: Vec::new(),
        contributions,
        clips: Clips {
            tested: contributions,
            clipped: finals.iter().map(|f| f.privacy.clipped).sum(),
        },
        steps,
        per_user,
        late,
        skipped: finals.iter().map(|f| f.privacy.skipped).sum(),
        given_walk: given_walk(nodes, &resolved),
        wall_seconds: wall_seconds + eval_seconds,
        eval_seconds,
    };
    Ok(PointResult {
        point: resolved.point,
        resolved,
        paper: None,
        runs: vec![run],
        seeds: vec![simulate::repetition_seed(s.seed, 0)],
    })
}

/// The certificate given the walk (N2) of a DP-SGD swarm, from its members' ledgers (every visit
/// is in them: `dpwalk_net::certify`), as the simulator computes it from the walk it records;
/// where the ledgers do not give the walk (a forked walk, a ledger missing), the reason.
fn given_walk(nodes: &[NodeProc], resolved: &dpwalk_sim::privacy::Resolved) -> GivenWalk {
    if !matches!(
        resolved.point.method,
        Method::Walk(dpwalk_core::step::Algorithm::Sgd(_))
    ) {
        return GivenWalk::NotOffered;
    }
    let not_computed =
        |why: String| GivenWalk::NotComputed(format!("network given the walk not computed: {why}"));
    let Some(out) = nodes.first().and_then(|n| n.dir.parent()) else {
        return not_computed("no node directory".into());
    };
    let run = match Run::load(&out.join("run.toml")) {
        Ok(run) => run,
        Err(e) => return not_computed(e.to_string()),
    };
    let ledgers: Vec<PathBuf> = nodes
        .iter()
        .map(|n| n.dir.join("state").join(dpwalk_net::learner::LEDGER_FILE))
        .collect();
    match walk_from_ledgers(&run, &ledgers) {
        Ok((visits, _)) => GivenWalk::Certified(Certificate::of(nodes.len(), &visits)),
        Err(e) => not_computed(e.to_string()),
    }
}

/// The models the nodes recorded on the way (`state/evals.csv`, see
/// `dpwalk_net::learner::Learner::with_evals`), by seq. A seq recorded twice with different models
/// (a walk forked by a re-route) keeps the lowest node's, and the swarm says so; seqs that no node
/// recorded (a write that failed) are said too.
fn recorded_models(
    nodes: &[NodeProc],
    steps: u64,
    every: u64,
    dim: usize,
) -> anyhow::Result<std::collections::BTreeMap<u64, Vec<f64>>> {
    let mut models = std::collections::BTreeMap::new();
    let mut forked = 0usize;
    for node in nodes {
        let path = node.dir.join("state").join(dpwalk_net::learner::EVALS_FILE);
        let text = match std::fs::read_to_string(&path) {
            Ok(text) => text,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => continue,
            Err(e) => return Err(e).with_context(|| format!("reading {}", path.display())),
        };
        for (line, row) in text.lines().enumerate() {
            if row.starts_with('#') || row.trim().is_empty() {
                continue;
            }
            let mut fields = row.split(',');
            let parsed = fields
                .next()
                .and_then(|f| f.parse::<u64>().ok())
                .and_then(|seq| {
                    let z: Result<Vec<f64>, _> = fields.map(str::parse::<f64>).collect();
                    Some((seq, z.ok()?))
                });
            let Some((seq, z)) = parsed.filter(|(_, z)| z.len() == dim) else {
                bail!(
                    "{}, line {}: not `seq,z_0,...,z_{{p-1}}` of numbers with p = {dim}",
                    path.display(),
                    line + 1
                );
            };
            match models.get(&seq) {
                None => {
                    models.insert(seq, z);
                }
                Some(known) if bits(known) == bits(&z) => {}
                Some(_) => forked += 1,
            }
        }
    }
    if forked > 0 {
        tracing::warn!(
            forked,
            "the walk forked: nodes recorded different models at the same seq; the metrics keep the lowest node's"
        );
    }
    let missing = (1..)
        .map(|k| k * every)
        .take_while(|&seq| seq < steps)
        .filter(|seq| !models.contains_key(seq))
        .count();
    if missing > 0 {
        tracing::warn!(
            missing,
            "no node recorded the model of some evaluation points; metrics.csv lacks their rows"
        );
    }
    Ok(models)
}

fn bits(z: &[f64]) -> Vec<u64> {
    z.iter().map(|v| v.to_bits()).collect()
}
