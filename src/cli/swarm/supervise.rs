//! The node processes of a swarm: started, watched through their status endpoints to the end,
//! and disrupted on the schedule (`super::schedule`) when asked.

use anyhow::{Context, bail, ensure};
use indicatif::{ProgressBar, ProgressStyle};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use super::SwarmArgs;
use super::schedule::Schedule;

/// One node process and where its files are.
pub(super) struct NodeProc {
    pub(super) index: usize,
    pub(super) dir: PathBuf,
    pub(super) status: String,
    pub(super) child: Option<Child>,
}

/// How the swarm disrupts the token holder.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Disruption {
    /// SIGKILL.
    Kill,
    /// SIGTERM, and the node must exit cleanly.
    Stop,
}

impl NodeProc {
    pub(super) fn spawn(&mut self) -> anyhow::Result<()> {
        let exe = std::env::current_exe().context("locating the dpwalk binary")?;
        let log = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(self.dir.join("node.log"))
            .with_context(|| format!("opening the log of node {}", self.index))?;
        let child = Command::new(exe)
            .args(crate::cli::log_level_args())
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

/// How often the watcher polls the nodes.
const POLL: Duration = Duration::from_millis(100);
/// How often while a disruption is due or its previous victim is not back yet.
const POLL_BUSY: Duration = Duration::from_millis(25);
/// How long a killed or stopped node stays down before it is restarted.
const RESTART_AFTER: Duration = Duration::from_millis(300);

/// Watches the nodes to the end: progress bar, holder disruptions on `schedule`; returns the time
/// to the first hop and the number of disruptions made.
pub(super) fn watch(
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
                tracing::error!(node = i, error = format!("{e:#}"), "restart failed");
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
