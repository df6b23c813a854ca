//! `dpwalk swarm`: N real `dpwalk node` processes on 127.0.0.1, set up from a scenario, watched
//! to the end, and summarized like `dpwalk sim`.
//!
//! The swarm prepares the scenario exactly as the simulator does (same data, partition, topology
//! and calibrated σ, from the same seeds), gives each node its own keys, data file and `node.toml`,
//! writes one run file naming them all, and starts the processes. It then only watches: progress
//! comes from the nodes' status endpoints, and the result from their `final_model.json`. With
//! `--kill-holder-every PACE` it kills the token holder with SIGKILL and restarts it, to show
//! custody and recovery at work; `--stop-holder-every PACE` stops it gracefully (SIGTERM: it hands
//! the token on and exits) and restarts it. `--disruptions COUNT` caps how many.
//!
//! A pace is hops of the walk (`100hops`) or seconds (`0.5`, `0.5s`). In hops the schedule is
//! absolute and does not depend on how fast the machine runs: with `Nhops`, disruption `t`
//! (`t = 1, 2, …`, at most `COUNT`) is due once the walk has made `t·N` hops, and every disruption
//! due is made exactly once, late if need be (one at a time: each waits until the previous victim
//! answers again and the walk has moved since, then hits the holder of that moment). Only a walk
//! that ends first can leave a scheduled disruption undone, and the swarm then says so; a schedule
//! whose last disruption is due well before the end (tests: by half the walk) is met under any
//! load. In seconds a disruption is due that long after the previous one (and once the walk has
//! moved): how many a run sees depends on the machine.

use anyhow::{Context, bail, ensure};
use clap::Args;
use dpwalk_core::problem::{Loss, Regularizer};
use dpwalk_core::topology::TopologyKind;
use dpwalk_net::node::FINAL_MODEL_FILE;
use dpwalk_net::run::{AlgorithmSpec, BudgetSpec, LossName, MemberSpec, ProblemSpec, Run, RunFile};
use dpwalk_sim::metrics::Evaluator;
use dpwalk_sim::output;
use dpwalk_sim::run::RunResult;
use dpwalk_sim::scenario::{self, AlgorithmName, LoadedScenario, Mode};
use dpwalk_sim::simulate::{self, PointResult, Prepared};
use indicatif::{ProgressBar, ProgressStyle};
use serde::Deserialize;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use super::report::{self, utc_stamp};
use super::rundir;

/// The scenario `dpwalk swarm` runs without `--scenario`.
const BUILTIN: &str = include_str!("../../sim/swarm.toml");

#[derive(Debug, Args)]
pub struct SwarmArgs {
    /// Number of nodes (the scenario's `users`).
    #[arg(long, default_value_t = 8)]
    nodes: usize,
    /// Scenario file, as for `dpwalk sim` [default: the built-in sim/swarm.toml].
    #[arg(long)]
    scenario: Option<PathBuf>,
    /// Override the scenario's seed.
    #[arg(long)]
    seed: Option<u64>,
    /// Output directory [default: runs/swarm-<UTC timestamp>]; must be new or empty.
    #[arg(long)]
    out: Option<PathBuf>,
    /// Write into a non-empty --out directory: files of the same name are replaced, and the
    /// nodes' earlier state and logs (`node-<i>/state`, `node.log`) are removed first.
    #[arg(long)]
    force: bool,
    /// Kill the token holder with SIGKILL, and restart it, at this pace: hops of the walk
    /// (`100hops`: the t-th kill once the walk has made t·100 hops, however fast the machine) or
    /// seconds (`0.5`, `0.5s`: after the previous one; the count then depends on the machine).
    #[arg(long, value_name = "PACE", value_parser = Pace::parse)]
    kill_holder_every: Option<Pace>,
    /// Stop the token holder with SIGTERM (it hands the token on and exits), and restart it, at
    /// this pace: hops of the walk (`100hops`) or seconds (`0.5`, `0.5s`), as for
    /// --kill-holder-every.
    #[arg(long, value_name = "PACE", value_parser = Pace::parse, conflicts_with = "kill_holder_every")]
    stop_holder_every: Option<Pace>,
    /// Make at most this many kills or stops. With a pace in hops exactly this many are scheduled
    /// (the last due at COUNT·N hops, which must come before the end of the walk); each is made,
    /// late if need be, unless the walk ends first, which the swarm reports.
    #[arg(long, value_name = "COUNT", value_parser = clap::value_parser!(u32).range(1..))]
    disruptions: Option<u32>,
    /// Override a scenario key, e.g. --set steps=2000 (repeatable).
    #[arg(long = "set", value_name = "KEY=VALUE")]
    sets: Vec<String>,
    /// Give up after this many seconds.
    #[arg(long, default_value_t = 600)]
    timeout: u64,
    /// No progress bar.
    #[arg(long)]
    quiet: bool,
}

/// One node process and where its files are.
struct NodeProc {
    index: usize,
    dir: PathBuf,
    status: String,
    child: Option<Child>,
}

/// How the swarm disrupts the token holder.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Disruption {
    /// SIGKILL.
    Kill,
    /// SIGTERM, and the node must exit cleanly.
    Stop,
}

/// How often the swarm disrupts the token holder. Either way, a disruption also waits for the
/// previous victim to be back and for the walk to have moved since the previous disruption, so
/// that a node restarted with the token is not disrupted again before it could hand it on.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Pace {
    /// This long after the previous disruption (machine-dependent: the walk's speed decides how
    /// many a run sees).
    Every(Duration),
    /// Disruption `t` once the walk has made `t` times this many hops (an absolute schedule).
    Hops(u64),
}

impl Pace {
    /// Parses `0.5`, `0.5s` (seconds) or `100hops`.
    fn parse(text: &str) -> Result<Self, String> {
        let text = text.trim();
        if let Some(hops) = text.strip_suffix("hops") {
            return match hops.trim().parse::<u64>() {
                Ok(h) if h > 0 => Ok(Self::Hops(h)),
                _ => Err(format!(
                    "`{text}`: give a whole number of hops above 0, e.g. `100hops`"
                )),
            };
        }
        let seconds = text.strip_suffix('s').unwrap_or(text).trim();
        match seconds.parse::<f64>() {
            Ok(s) if s.is_finite() && s > 0.0 && s < 1e6 => {
                Ok(Self::Every(Duration::from_secs_f64(s)))
            }
            _ => Err(format!(
                "`{text}`: give seconds above 0 (`0.5`, `0.5s`) or hops of the walk (`100hops`)"
            )),
        }
    }
}

/// When the swarm disrupts the holder: a pace, at most `count` times, in a walk of `steps` hops.
#[derive(Debug, Clone, Copy, PartialEq)]
struct Schedule {
    pace: Pace,
    count: Option<u32>,
    steps: u64,
}

impl Schedule {
    /// Checks that a count fits the walk: with `Nhops`, disruption `COUNT` is due at hop
    /// `COUNT·N`, which must come before the walk's last hop.
    fn new(pace: Pace, count: Option<u32>, steps: u64) -> anyhow::Result<Self> {
        let schedule = Self { pace, count, steps };
        if let (Pace::Hops(n), Some(c)) = (pace, count) {
            let last = u64::from(c).saturating_mul(n);
            ensure!(
                last < steps,
                "--disruptions {c} at {n}hops: the last would be due at hop {last}, but the walk \
                 has {steps} hops; give fewer disruptions, a shorter pace or more steps"
            );
        }
        Ok(schedule)
    }

    /// How many disruptions are scheduled: with `Nhops`, one per `N` hops before the walk's end
    /// (at most `count`); with seconds, `count` (`None`: no limit).
    fn planned(self) -> Option<u32> {
        match self.pace {
            Pace::Every(_) => self.count,
            Pace::Hops(n) => {
                let fit = u32::try_from(self.steps.saturating_sub(1) / n).unwrap_or(u32::MAX);
                Some(self.count.map_or(fit, |c| c.min(fit)))
            }
        }
    }

    /// The hop at which disruption `t` (from 1) is due, for a pace in hops.
    fn due_at(self, t: u32) -> Option<u64> {
        match self.pace {
            Pace::Every(_) => None,
            Pace::Hops(n) => Some(u64::from(t).saturating_mul(n)),
        }
    }

    /// Whether disruption `t` (from 1) is due: the walk has made `done` hops, and the previous
    /// disruption came `since` ago, when the walk had made `done_then` (`0` and the swarm's start
    /// for the first).
    fn due(self, t: u32, since: Duration, done_then: u64, done: u64) -> bool {
        let scheduled = self.planned().is_none_or(|p| t <= p);
        let moved = done > done_then;
        scheduled
            && moved
            && match self.pace {
                Pace::Every(every) => since >= every,
                Pace::Hops(n) => done >= u64::from(t).saturating_mul(n),
            }
    }
}

impl NodeProc {
    fn spawn(&mut self) -> anyhow::Result<()> {
        let exe = std::env::current_exe().context("locating the dpwalk binary")?;
        let log = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(self.dir.join("node.log"))
            .with_context(|| format!("opening the log of node {}", self.index))?;
        let child = Command::new(exe)
            .args(super::log_level_args())
            .arg("node")
            .arg("--config")
            .arg(self.dir.join("node.toml"))
            .stdin(Stdio::null())
            .stdout(log.try_clone()?)
            .stderr(log)
            .spawn()
            .with_context(|| format!("starting node {}", self.index))?;
        self.child = Some(child);
        Ok(())
    }
}

/// The parts of a node's `final_model.json` the swarm reads.
#[derive(Debug, Deserialize)]
struct NodeFinal {
    z: Vec<f64>,
    run_hash: String,
    privacy: NodeFinalPrivacy,
}

#[derive(Debug, Deserialize)]
struct NodeFinalPrivacy {
    contributions: u64,
    skipped: u64,
    clipped: Option<u64>,
}

pub fn run(args: SwarmArgs) -> anyhow::Result<()> {
    ensure!(args.nodes >= 2, "a swarm needs at least 2 nodes");
    ensure!(
        args.disruptions.is_none()
            || args.kill_holder_every.is_some()
            || args.stop_holder_every.is_some(),
        "--disruptions counts kills or stops: give --kill-holder-every or --stop-holder-every"
    );
    let mut sets = vec![format!("users={}", args.nodes)];
    sets.extend(args.sets.iter().cloned());
    if let Some(seed) = args.seed {
        sets.push(format!("seed={seed}"));
    }
    let loaded = match &args.scenario {
        Some(path) => scenario::load(path, &sets)?,
        None => {
            let path = Path::new("sim/swarm.toml (built in)");
            LoadedScenario {
                scenario: scenario::parse(BUILTIN, path, &sets)?,
                base_dir: PathBuf::from("."),
                name: "swarm".into(),
            }
        }
    };
    let schedule = args
        .kill_holder_every
        .or(args.stop_holder_every)
        .map(|pace| Schedule::new(pace, args.disruptions, loaded.scenario.steps))
        .transpose()?;
    let out = args.out.clone().unwrap_or_else(|| {
        PathBuf::from("runs").join(format!("{}-swarm-{}", loaded.name, utc_stamp()))
    });
    rundir::prepare(&out, args.force)?;
    rundir::write_scenario(&out, &loaded)?;
    tracing::info!(out = %out.display(), nodes = args.nodes, "preparing data, problem and reference optimum");
    let prepared = simulate::prepare(&loaded).context("preparing the scenario")?;
    let (point, run_file) = plan(&loaded, &prepared)?;
    let mut nodes = write_nodes(&out, &loaded, &prepared, run_file)?;
    let started = Instant::now();
    for node in &mut nodes {
        node.spawn()?;
    }
    tracing::info!(
        nodes = nodes.len(),
        "started the nodes; logs in node-*/node.log"
    );
    let watch = watch(&mut nodes, &args, loaded.scenario.steps, schedule);
    if watch.is_err() {
        for node in &mut nodes {
            if let Some(child) = node.child.as_mut() {
                let _ = child.kill();
                let _ = child.wait();
            }
        }
    }
    let (first_hop, made) = watch?;
    let wall = started.elapsed().as_secs_f64();
    let result = collect(&nodes, &loaded, &prepared, point, wall)?;
    let summary = output::write_all(&out, &loaded, &prepared, std::slice::from_ref(&result))
        .with_context(|| format!("writing results to {}", out.display()))?;
    report::print_table(&summary, prepared.optimum.objective, &out);
    let how = if args.stop_holder_every.is_some() {
        "stopped"
    } else {
        "killed"
    };
    if let Some((schedule, planned)) = schedule.and_then(|s| Some((s, s.planned()?)))
        && made < planned
    {
        let next = made + 1;
        println!(
            "the walk ended before disruption {next} of the {planned} scheduled{}: {} holders {how}, not {planned}",
            schedule
                .due_at(next)
                .map_or_else(String::new, |hop| format!(" (due at hop {hop})")),
            made,
        );
    }
    println!(
        "{} nodes, {} steps in {wall:.2} s (first hop after {}), {made} holders {how} and restarted",
        nodes.len(),
        loaded.scenario.steps,
        first_hop.map_or_else(|| "-".into(), |t| format!("{t:.2} s")),
    );
    Ok(())
}

/// The scenario's single point, with σ calibrated as the simulator does, and the run file.
fn plan(
    loaded: &LoadedScenario,
    prepared: &Prepared,
) -> anyhow::Result<(dpwalk_sim::privacy::Resolved, RunFile)> {
    let s = &loaded.scenario;
    ensure!(
        s.algorithm.mode == Mode::Decentralized && s.algorithm.kind == AlgorithmName::Admm,
        "a swarm runs the decentralized ADMM walk: set algorithm.kind = \"admm\" and mode = \"decentralized\""
    );
    let points = s.points()?;
    let [point] = points.as_slice() else {
        bail!(
            "a swarm runs one point: the scenario sweeps over {} (remove its [sweep])",
            points.len()
        );
    };
    if s.repetitions > 1 {
        tracing::warn!(
            repetitions = s.repetitions,
            "a swarm runs one repetition (seed {})",
            s.seed
        );
    }
    let resolved = prepared.privacy.resolve(s, point)?;
    // An enforced budget goes into the run file: every node calibrates the same σ from it and
    // enforces it with the simulator's policy. Without enforcement the calibrated σ is given.
    let budget = match (resolved.policy, point.budget) {
        (Some(_), Some(epsilon)) => Some(BudgetSpec {
            epsilon,
            delta: s.privacy.delta,
        }),
        _ => None,
    };
    let algorithm = *resolved
        .point
        .method
        .walk()
        .context("a swarm runs dpwalk's ADMM walk")?;
    let clip = algorithm.clip().context(
        "a daemon run needs a clip (algorithm.clip): it is what bounds the privacy loss",
    )?;
    let spec = &s.topologies()[point.topology];
    ensure!(
        spec.kind != TopologyKind::File,
        "the run file must be self-contained: give the topology inline (a generator, or kind = \"edges\")"
    );
    let problem = &prepared.problem;
    let (loss, classes) = match problem.loss() {
        Loss::Squared => (LossName::Squared, None),
        Loss::Logistic => (LossName::Logistic, None),
        Loss::Multinomial { classes } => (LossName::Multinomial, Some(classes)),
    };
    let (l1, l2) = match *problem.regularizer() {
        Regularizer::None => (0.0, 0.0),
        Regularizer::L1 { l1 } => (l1, 0.0),
        Regularizer::L2 { l2 } => (0.0, l2),
        Regularizer::ElasticNet { l1, l2 } => (l1, l2),
    };
    let file = RunFile {
        run_id: format!("{}-{}", loaded.name, s.seed)
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
        steps: s.steps,
        dimension: problem.dim(),
        problem: ProblemSpec {
            loss,
            classes,
            l1,
            l2,
        },
        algorithm: AlgorithmSpec {
            gamma: resolved.point.gamma,
            lambda: resolved.point.lambda,
            clip,
            sigma: budget.is_none().then(|| algorithm.sigma()),
        },
        budget,
        topology: spec.clone(),
        members: Vec::new(),
    };
    Ok((resolved, file))
}

/// Ports the OS says are free now (they are released before the nodes bind them).
fn free_ports(count: usize) -> anyhow::Result<Vec<u16>> {
    let listeners = (0..count)
        .map(|_| std::net::TcpListener::bind("127.0.0.1:0"))
        .collect::<Result<Vec<_>, _>>()
        .context("finding free ports on 127.0.0.1")?;
    listeners
        .iter()
        .map(|l| Ok(l.local_addr()?.port()))
        .collect()
}

/// Keys, data files, `node.toml`s and the shared run file.
fn write_nodes(
    out: &Path,
    loaded: &LoadedScenario,
    prepared: &Prepared,
    mut run_file: RunFile,
) -> anyhow::Result<Vec<NodeProc>> {
    let n = loaded.scenario.users;
    let ports = free_ports(2 * n)?;
    let data = prepared.problem.data();
    let eval_every = loaded.scenario.eval_interval();
    let mut nodes = Vec::with_capacity(n);
    for i in 0..n {
        let dir = out.join(format!("node-{i}"));
        // A node resumes from its state directory: one left by an earlier run (`--force`) goes.
        for stale in [dir.join("state"), dir.join("node.log")] {
            let removed = if stale.is_dir() {
                std::fs::remove_dir_all(&stale)
            } else if stale.exists() {
                std::fs::remove_file(&stale)
            } else {
                Ok(())
            };
            removed.with_context(|| format!("removing the earlier run's {}", stale.display()))?;
        }
        std::fs::create_dir_all(&dir).with_context(|| format!("creating {}", dir.display()))?;
        let key = dir.join("node.key");
        let keypair = match dpwalk_net::keys::load(&key) {
            Ok(k) => k,
            Err(_) => dpwalk_net::keys::generate(&key)?,
        };
        let (p2p, status) = (ports[2 * i], ports[2 * i + 1]);
        run_file.members.push(MemberSpec {
            index: i,
            peer_id: dpwalk_net::keys::peer_id(&keypair).to_base58(),
            addrs: vec![format!("/ip4/127.0.0.1/tcp/{p2p}")],
        });
        // The user's rows exactly: `{:?}` prints the shortest decimal that parses back to the same f64.
        let mut csv = String::new();
        let p = data.data.n_features;
        for (row, label) in data.features(i).chunks_exact(p).zip(data.labels(i)) {
            for v in row {
                let _ = write!(csv, "{v:?},");
            }
            let _ = writeln!(csv, "{label:?}");
        }
        std::fs::write(dir.join("data.csv"), csv)
            .with_context(|| format!("writing the data of node {i}"))?;
        let config = format!(
            "# Node {i} of a local swarm (see the README, \"Running nodes on separate hosts\").\n\
             run = \"../run.toml\"\nidentity = \"node.key\"\nstate-dir = \"state\"\n\
             listen = [\"/ip4/127.0.0.1/tcp/{p2p}\"]\nmdns = false\nstatus = \"127.0.0.1:{status}\"\n\
             eval-every = {eval_every}\n\n\
             [data]\nsource = \"csv\"\npath = \"data.csv\"\n"
        );
        std::fs::write(dir.join("node.toml"), config)
            .with_context(|| format!("writing the config of node {i}"))?;
        nodes.push(NodeProc {
            index: i,
            dir,
            status: format!("127.0.0.1:{status}"),
            child: None,
        });
    }
    let text = toml::to_string(&run_file).context("serializing the run file")?;
    let path = out.join("run.toml");
    std::fs::write(&path, &text).with_context(|| format!("writing {}", path.display()))?;
    let run = Run::parse(&text, &path.display().to_string())?;
    tracing::info!(run = run.run_id(), hash = %run.hash(), "run file written");
    Ok(nodes)
}

/// How often the watcher polls the nodes.
const POLL: Duration = Duration::from_millis(100);
/// How often while a disruption is due or its previous victim is not back yet.
const POLL_BUSY: Duration = Duration::from_millis(25);
/// How long a killed or stopped node stays down before it is restarted.
const RESTART_AFTER: Duration = Duration::from_millis(300);

/// Watches the nodes to the end: progress bar, holder disruptions on `schedule`; returns the time
/// to the first hop and the number of disruptions made.
fn watch(
    nodes: &mut [NodeProc],
    args: &SwarmArgs,
    steps: u64,
    schedule: Option<Schedule>,
) -> anyhow::Result<(Option<f64>, u32)> {
    let started = Instant::now();
    let bar = if args.quiet {
        ProgressBar::hidden()
    } else {
        ProgressBar::new(steps)
    };
    bar.set_style(
        ProgressStyle::with_template(
            "{spinner} {elapsed_precise} [{bar:40}] {human_pos}/{human_len} hops ({per_sec}, eta {eta}) {msg}",
        )
        .unwrap_or_else(|_| ProgressStyle::default_bar())
        .progress_chars("=> "),
    );
    let how = if args.stop_holder_every.is_some() {
        Disruption::Stop
    } else {
        Disruption::Kill
    };
    // The previous disruption: when, how far the walk was, and its victim until it answers again.
    let mut last_at = started;
    let mut done_then = 0u64;
    let mut victim: Option<usize> = None;
    let mut made = 0u32;
    // The most hops any node has reported (a killed node's report goes with it).
    let mut done = 0u64;
    let mut first_hop = None;
    let mut busy = false;
    let mut restart: Vec<(usize, Instant)> = Vec::new();
    let mut stopping: Vec<(usize, Child, Instant)> = Vec::new();
    loop {
        ensure!(
            started.elapsed() < Duration::from_secs(args.timeout),
            "the swarm did not finish within {} s; see {}/node-*/node.log",
            args.timeout,
            nodes
                .first()
                .and_then(|n| n.dir.parent())
                .unwrap_or(Path::new("."))
                .display()
        );
        std::thread::sleep(if busy { POLL_BUSY } else { POLL });
        let mut running = 0;
        for node in nodes.iter_mut() {
            if let Some(child) = node.child.as_mut()
                && let Some(status) = child.try_wait()?
            {
                node.child = None;
                ensure!(
                    status.success(),
                    "node {} failed ({status}); see {}",
                    node.index,
                    node.dir.join("node.log").display()
                );
            }
            running += usize::from(node.child.is_some());
        }
        for (i, mut child, since) in std::mem::take(&mut stopping) {
            match child.try_wait()? {
                Some(status) => {
                    ensure!(
                        status.success(),
                        "node {i} stopped with {status} after SIGTERM"
                    );
                    tracing::info!(node = i, after = ?since.elapsed(), "the stopped holder exited; restarting it");
                    restart.push((i, Instant::now()));
                }
                None if since.elapsed() > Duration::from_secs(15) => {
                    let _ = child.kill();
                    bail!("node {i} did not stop within 15 s of SIGTERM");
                }
                None => stopping.push((i, child, since)),
            }
        }
        restart.retain(|&(i, at)| {
            if at.elapsed() < RESTART_AFTER {
                return true;
            }
            if let Err(e) = nodes[i].spawn() {
                tracing::error!(node = i, error = %e, "restart failed");
            }
            false
        });
        if running == 0 && restart.is_empty() && stopping.is_empty() {
            bar.finish_and_clear();
            return Ok((first_hop, made));
        }
        let statuses: Vec<(usize, dpwalk_net::status::Status)> = nodes
            .iter()
            .filter(|n| n.child.is_some())
            .filter_map(|n| {
                dpwalk_net::status::fetch_status(&n.status, Duration::from_millis(200))
                    .ok()
                    .map(|s| (n.index, s))
            })
            .collect();
        for (_, s) in &statuses {
            done = done.max(if s.finished {
                steps
            } else {
                s.last_seq.map_or(0, |q| q + 1)
            });
        }
        if done > 0 && first_hop.is_none() {
            first_hop = Some(started.elapsed().as_secs_f64());
        }
        bar.set_position(done);
        // The previous victim is back once it answers again (or has exited for good: the walk
        // ended while it was down).
        if let Some(v) = victim
            && (statuses.iter().any(|(i, _)| *i == v)
                || (nodes[v].child.is_none()
                    && restart.iter().all(|(i, _)| *i != v)
                    && stopping.iter().all(|(i, _, _)| *i != v)))
        {
            victim = None;
        }
        let Some(schedule) = schedule else {
            continue;
        };
        let due = schedule.due(made + 1, last_at.elapsed(), done_then, done);
        busy = victim.is_some() || due;
        if !due || victim.is_some() {
            continue;
        }
        let Some((i, _)) = statuses
            .iter()
            .filter(|(_, s)| s.holding && !s.finished)
            .max_by_key(|(_, s)| s.last_seq)
        else {
            continue;
        };
        let i = *i;
        let Some(mut child) = nodes[i].child.take() else {
            continue;
        };
        last_at = Instant::now();
        done_then = done;
        victim = Some(i);
        made += 1;
        bar.set_message(format!("{how:?} node {i} ({made} so far)"));
        match how {
            Disruption::Kill => {
                let _ = child.kill();
                let _ = child.wait();
                tracing::info!(
                    node = i,
                    hops = done,
                    "killed the token holder with SIGKILL; restarting it"
                );
                restart.push((i, Instant::now()));
            }
            Disruption::Stop => {
                let sent = Command::new("kill")
                    .args(["-TERM", &child.id().to_string()])
                    .status()
                    .context("running `kill -TERM`")?;
                ensure!(sent.success(), "could not send SIGTERM to node {i}");
                tracing::info!(node = i, hops = done, "sent SIGTERM to the token holder");
                stopping.push((i, child, Instant::now()));
            }
        }
    }
}

/// Reads every node's final model, checks they agree, and evaluates it like the simulator.
fn collect(
    nodes: &[NodeProc],
    loaded: &LoadedScenario,
    prepared: &Prepared,
    resolved: dpwalk_sim::privacy::Resolved,
    wall_seconds: f64,
) -> anyhow::Result<PointResult> {
    let mut finals = Vec::with_capacity(nodes.len());
    for node in nodes {
        let path = node.dir.join("state").join(FINAL_MODEL_FILE);
        let text = std::fs::read_to_string(&path).with_context(|| {
            format!(
                "node {} wrote no final model ({})",
                node.index,
                path.display()
            )
        })?;
        let f: NodeFinal =
            serde_json::from_str(&text).with_context(|| format!("reading {}", path.display()))?;
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
    let s = &loaded.scenario;
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
    let mut made = Vec::with_capacity(nodes.len());
    for node in nodes {
        let path = node
            .dir
            .join("state")
            .join(dpwalk_net::learner::LEDGER_FILE);
        made.extend(
            dpwalk_privacy::ledger::Ledger::seqs(&path)
                .with_context(|| format!("reading {}", path.display()))?,
        );
    }
    made.sort_unstable();
    let before = |seq: u64| made.partition_point(|&q| q < seq) as u64;
    let recorded = recorded_models(nodes, s.steps, s.eval_interval(), prepared.problem.dim())?;
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
    evals.push(eval(s.steps, contributions, &first.z));
    let eval_seconds = t.elapsed().as_secs_f64();
    let run = RunResult {
        evals,
        z: first.z.clone(),
        w: Vec::new(),
        contributions,
        clipped: finals.iter().filter_map(|f| f.privacy.clipped).sum(),
        steps: s.steps,
        per_user,
        late: Vec::new(),
        skipped: finals.iter().map(|f| f.privacy.skipped).sum(),
        wall_seconds: wall_seconds + eval_seconds,
        eval_seconds,
    };
    Ok(PointResult {
        point: resolved.point,
        resolved,
        runs: vec![run],
        seeds: vec![simulate::repetition_seed(s.seed, 0)],
    })
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

#[cfg(test)]
mod tests {
    use super::{Pace, Schedule};
    use std::time::Duration;

    #[test]
    fn paces_parse_seconds_and_hops_and_refuse_the_rest() {
        assert_eq!(
            Pace::parse("0.5"),
            Ok(Pace::Every(Duration::from_millis(500)))
        );
        assert_eq!(Pace::parse("2s"), Ok(Pace::Every(Duration::from_secs(2))));
        assert_eq!(Pace::parse("100hops"), Ok(Pace::Hops(100)));
        for bad in [
            "0", "-1", "nan", "inf", "0hops", "1.5hops", "hops", "", "fast",
        ] {
            assert!(Pace::parse(bad).is_err(), "{bad:?} accepted");
        }
    }

    #[test]
    fn a_disruption_in_seconds_waits_for_its_pace_and_for_the_walk_to_move() {
        let every = Schedule::new(Pace::Every(Duration::from_secs(1)), None, 1000).unwrap();
        assert_eq!(every.planned(), None, "no limit without a count");
        assert!(!every.due(1, Duration::from_millis(999), 10, 50));
        assert!(every.due(1, Duration::from_secs(1), 10, 11));
        assert!(every.due(500, Duration::from_secs(1), 10, 11));
        assert!(
            !every.due(1, Duration::from_secs(5), 10, 10),
            "the walk has not moved"
        );
        let capped = Schedule::new(Pace::Every(Duration::from_secs(1)), Some(3), 1000).unwrap();
        assert_eq!(capped.planned(), Some(3));
        assert!(capped.due(3, Duration::from_secs(1), 10, 11));
        assert!(
            !capped.due(4, Duration::from_secs(9), 10, 900),
            "past the count"
        );
    }

    #[test]
    fn a_disruption_in_hops_is_due_on_an_absolute_schedule() {
        let hops = Schedule::new(Pace::Hops(100), None, 1000).unwrap();
        // One per 100 hops before the walk's last: hops 100, 200, ..., 900.
        assert_eq!(hops.planned(), Some(9));
        assert_eq!(hops.due_at(3), Some(300));
        assert!(!hops.due(1, Duration::from_secs(60), 0, 99));
        assert!(hops.due(1, Duration::ZERO, 0, 100));
        // Due at t·100, not 100 hops after the previous one: the second, made late at hop 150,
        // leaves the third due at 300, and a late one is due at once (once the walk has moved).
        assert!(!hops.due(2, Duration::ZERO, 110, 199));
        assert!(hops.due(2, Duration::ZERO, 110, 200));
        assert!(!hops.due(3, Duration::ZERO, 250, 299));
        assert!(hops.due(3, Duration::ZERO, 250, 300));
        assert!(
            hops.due(4, Duration::ZERO, 700, 701),
            "three behind: due at once"
        );
        assert!(
            !hops.due(4, Duration::ZERO, 701, 701),
            "but the walk must move"
        );
        assert!(hops.due(9, Duration::ZERO, 900, 999));
        assert!(
            !hops.due(10, Duration::ZERO, 900, 1000),
            "none at the walk's end"
        );
    }

    #[test]
    fn a_count_caps_the_hops_schedule_and_must_fit_the_walk() {
        let capped = Schedule::new(Pace::Hops(50), Some(20), 3000).unwrap();
        assert_eq!(capped.planned(), Some(20));
        assert_eq!(capped.due_at(20), Some(1000));
        assert!(capped.due(20, Duration::ZERO, 990, 2500));
        assert!(
            !capped.due(21, Duration::ZERO, 1000, 2500),
            "past the count"
        );
        assert!(Schedule::new(Pace::Hops(100), Some(9), 1000).is_ok());
        let late = Schedule::new(Pace::Hops(100), Some(10), 1000).unwrap_err();
        assert!(late.to_string().contains("due at hop 1000"), "{late}");
        assert!(Schedule::new(Pace::Hops(u64::MAX), Some(u32::MAX), 1000).is_err());
    }
}
