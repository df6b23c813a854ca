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

//!
//! # Layout
//! - `plan`: the scenario as a run file, and the nodes' files written from it
//!   ([`dpwalk_net::workspace`]).
//! - `supervise`: the node processes, watched to the end, with the holder disruptions.
//! - `schedule`: when a disruption is due (`--kill-holder-every`, `--stop-holder-every`).
//! - `collect`: the nodes' final models and recorded models, evaluated like the simulator's.

mod collect;
mod plan;
mod schedule;
mod supervise;

use crate::cli::overrides::Overrides;
use anyhow::{Context, ensure};
use clap::Args;
use dpwalk_sim::output;
use dpwalk_sim::scenario::{self, LoadedScenario};
use dpwalk_sim::simulate;
use std::path::{Path, PathBuf};
use std::time::Instant;

use super::report::{self, utc_stamp};
use super::rundir;
use schedule::{Pace, Schedule};

/// The scenario `dpwalk swarm` runs without `--scenario`: record-level ε = 1, so that the quick
/// start shows a privacy level a reader can take seriously and a model that learns under it (at
/// user level no budget ε ≤ 100 learns anything on a swarm of 8; see the file's comments).
const BUILTIN: &str = include_str!("../../../sim/swarm-record.toml");

#[derive(Debug, Args)]
pub struct SwarmArgs {
    /// Number of nodes (the scenario's `users`).
    #[arg(long, default_value_t = 8)]
    nodes: usize,
    /// Scenario file, as for `dpwalk sim` [default: the built-in sim/swarm-record.toml].
    #[arg(long)]
    scenario: Option<PathBuf>,
    #[allow(rustdoc::invalid_html_tags)] // `<…>` are placeholders in `--help`, not HTML
    /// Output directory [default: runs/swarm-<UTC timestamp>]; must be new or empty.
    #[arg(long)]
    out: Option<PathBuf>,
    /// Replace the earlier run in --out (a directory holding a scenario.toml): its files, the
    /// nodes' state and logs among them, are removed first.
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
    #[command(flatten)]
    overrides: Overrides,
    /// Give up after this many seconds.
    #[arg(long, default_value_t = 600)]
    timeout: u64,
    /// No progress bar.
    #[arg(long)]
    quiet: bool,
}

pub fn run(args: SwarmArgs) -> anyhow::Result<()> {
    ensure!(args.nodes >= 2, "a swarm needs at least 2 nodes");
    ensure!(
        args.disruptions.is_none()
            || args.kill_holder_every.is_some()
            || args.stop_holder_every.is_some(),
        "--disruptions counts kills or stops: give --kill-holder-every or --stop-holder-every"
    );
    let sets = args.overrides.with([format!("users={}", args.nodes)])?;
    let loaded = match &args.scenario {
        Some(path) => scenario::load(path, &sets)?,
        None => {
            let path = Path::new("sim/swarm-record.toml (built in)");
            LoadedScenario::new(
                scenario::parse(BUILTIN, path, &sets)?,
                PathBuf::from("."),
                "swarm-record",
            )?
        }
    };
    // The point's horizon: the scenario's `steps`, or its kind's `[by-kind.<kind>] steps`.
    let steps = plan::single_point(&loaded)?.steps;
    let schedule = args
        .kill_holder_every
        .or(args.stop_holder_every)
        .map(|pace| Schedule::new(pace, args.disruptions, steps))
        .transpose()?;
    let out = args.out.clone().unwrap_or_else(|| {
        PathBuf::from("runs").join(format!("{}-swarm-{}", loaded.name(), utc_stamp()))
    });
    rundir::prepare(&out, args.force)?;
    rundir::write_scenario(&out, &loaded)?;
    tracing::info!(out = %out.display(), nodes = args.nodes, "preparing data, problem and reference optimum");
    let prepared = simulate::prepare(&loaded).context("preparing the scenario")?;
    let (point, run_file) = plan::plan(&loaded, &prepared)?;
    let mut nodes = plan::write_nodes(&out, &loaded, &prepared, run_file)?;
    let started = Instant::now();
    for node in &mut nodes {
        node.spawn()?;
    }
    tracing::info!(
        nodes = nodes.len(),
        "started the nodes; logs in node-*/node.log"
    );
    let watch = supervise::watch(&mut nodes, &args, steps, schedule);
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
    let result = collect::collect(&nodes, &loaded, &prepared, point, wall)?;
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
        steps,
        first_hop.map_or_else(|| "-".into(), |t| format!("{t:.2} s")),
    );
    Ok(())
}
