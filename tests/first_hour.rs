//! What a new user sees when a node cannot start or cannot talk to a member: each mistake of the
//! first hour stops the node (or is logged) with a message naming what is wrong, both values where
//! two disagree, and what to do, never a panic. Real `dpwalk` processes on loopback.

#![allow(clippy::expect_used, clippy::unwrap_used)]

mod common;

use std::process::{Command, Output};
use std::time::{Duration, Instant};

use common::{Cluster, DIM, Reaper, free_ports, temp_dir, wait_exit, write_cluster};
use dpwalk_core::spec::Noise;
use dpwalk_net::run::RunHash;
use dpwalk_net::state::{NodeState, StateDir};

fn dpwalk(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_dpwalk"))
        .args(args)
        .output()
        .unwrap()
}

/// Starts member `i` and waits for it to exit (it must, on its own): returns its log.
fn start_and_fail(cluster: &Cluster, i: usize) -> String {
    let mut child = cluster.spawn(i, &[]);
    let status = wait_exit(&mut child, Duration::from_secs(60));
    let log = cluster.log(i);
    let status = status.unwrap_or_else(|| {
        let _ = child.kill();
        panic!("node {i} did not stop:\n{log}")
    });
    assert!(!status.success(), "node {i} exited with success:\n{log}");
    assert!(!log.contains("panicked"), "node {i} panicked:\n{log}");
    log
}

/// Polls member `i`'s log until it contains `needle`.
fn wait_for_line(cluster: &Cluster, i: usize, needle: &str, limit: Duration) {
    let start = Instant::now();
    while !cluster.log(i).contains(needle) {
        assert!(
            start.elapsed() < limit,
            "node {i} did not log {needle:?} within {limit:?}:\n{}",
            cluster.log(i)
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}

#[test]
fn a_run_dimension_that_is_not_the_datas_stops_the_node_before_it_joins() {
    let dir = temp_dir("first-hour-dimension");
    let cluster = write_cluster(&dir, &["127.0.0.1"; 2], 100, Noise::Sigma(0.5));
    let run = std::fs::read_to_string(dir.join("run.toml")).unwrap();
    let wrong = DIM + 3;
    let run = run.replace(
        &format!("dimension = {DIM}\n"),
        &format!("dimension = {wrong}\n"),
    );
    std::fs::write(dir.join("run.toml"), run).unwrap();
    // Either member may be the walk's first holder: both must refuse alike.
    for i in 0..2 {
        let log = start_and_fail(&cluster, i);
        assert!(
            log.contains(&format!("dimension = {wrong}"))
                && log.contains(&format!("{DIM} features per record"))
                && log.contains(&format!("set dimension = {DIM} in the run file")),
            "node {i} does not name both dimensions:\n{log}"
        );
        assert!(
            !log.contains("listening"),
            "node {i} listened before refusing:\n{log}"
        );
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_busy_listen_port_is_named_with_the_key_to_change() {
    let dir = temp_dir("first-hour-port");
    let cluster = write_cluster(&dir, &["127.0.0.1"; 2], 100, Noise::Sigma(0.5));
    let _busy = std::net::TcpListener::bind(("127.0.0.1", cluster.members[0].port)).unwrap();
    let log = start_and_fail(&cluster, 0);
    assert!(
        log.contains(&cluster.members[0].multiaddr())
            && log.contains("the port is already in use")
            && log.contains("`listen`"),
        "{log}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_state_directory_of_another_run_says_which_and_what_to_do() {
    let dir = temp_dir("first-hour-state");
    let cluster = write_cluster(&dir, &["127.0.0.1"; 2], 100, Noise::Sigma(0.5));
    let state = cluster.members[0].dir.join("state");
    let mut slots = StateDir::open(&state).unwrap();
    slots
        .commit(&NodeState::fresh(RunHash([0xab; 32]), DIM))
        .unwrap();
    drop(slots);
    let log = start_and_fail(&cluster, 0);
    assert!(
        log.contains(&format!(
            "{} holds the state of another run (run hash abababab",
            state.display()
        )) && log.contains("another `state-dir` in node.toml")
            && log.contains(&format!("remove {}", state.display())),
        "{log}"
    );
    assert!(!log.contains("state state"), "{log}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn status_says_when_nothing_listens_and_accepts_host_names() {
    let port = free_ports(1)[0];
    let addr = format!("localhost:{port}");
    let out = dpwalk(&["status", "--addr", &addr]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert!(
        stderr.contains(&format!("nothing is listening at {addr}"))
            && stderr.contains("dpwalk node --config"),
        "{stderr}"
    );
    assert!(!stderr.contains("not a dpwalk status"), "{stderr}");
    let out = dpwalk(&["status", "--addr", "localhost"]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert!(stderr.contains("not a host:port address"), "{stderr}");
}

/// Two members with run files that differ in σ: each names the key with both values (its own
/// "here"), says whom it waits for, and neither hands the token to the other. `dpwalk status`
/// reaches a node by `localhost`.
#[test]
fn members_with_different_run_files_name_the_key_and_both_values() {
    let dir = temp_dir("first-hour-mismatch");
    let cluster = write_cluster(&dir, &["127.0.0.1"; 2], 100, Noise::Sigma(0.5));
    let run = std::fs::read_to_string(dir.join("run.toml")).unwrap();
    std::fs::write(
        dir.join("run-b.toml"),
        run.replace("sigma = 0.5", "sigma = 0.75"),
    )
    .unwrap();
    let config = cluster.members[1].dir.join("node.toml");
    let text = std::fs::read_to_string(&config).unwrap();
    std::fs::write(
        &config,
        text.replace("run = \"../run.toml\"", "run = \"../run-b.toml\""),
    )
    .unwrap();
    let mut reaper = Reaper::default();
    for i in 0..2 {
        reaper.0.push((i, cluster.spawn(i, &[])));
    }
    let limit = Duration::from_secs(60);
    wait_for_line(
        &cluster,
        0,
        "algorithm.sigma: 0.5 here, 0.75 in member 1's",
        limit,
    );
    wait_for_line(
        &cluster,
        1,
        "algorithm.sigma: 0.75 here, 0.5 in member 0's",
        limit,
    );
    wait_for_line(
        &cluster,
        0,
        "waiting for 1 of 1 other members: running another run file: 1",
        limit,
    );
    // Neither starts the walk: the starter waits for the other member, and the other says who
    // starts it and when.
    let starter = dpwalk_core::walk::start_holder(5, 2);
    wait_for_line(
        &cluster,
        starter,
        "this node starts the walk once 2 of the 2 members (itself included) run our run file",
        limit,
    );
    wait_for_line(
        &cluster,
        1 - starter,
        &format!(
            "member {starter} (the run's seed designates it) starts the walk once 2 of the 2 members run our run file"
        ),
        limit,
    );
    let port = cluster.members[0].status.rsplit_once(':').unwrap().1;
    let out = dpwalk(&["status", "--addr", &format!("localhost:{port}")]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(stdout.contains("with another run file"), "{stdout}");
    // No token crossed, and the walk never started: no step at all.
    let steps: u64 = (0..2).map(|i| cluster.status(i).unwrap().steps_done).sum();
    assert_eq!(steps, 0, "{steps} steps across a run-file mismatch");
    for i in 0..2 {
        let log = cluster.log(i);
        // Without bootstrap peers Kademlia has nothing to bootstrap from: not worth a warning.
        assert!(!log.contains("Failed to trigger bootstrap"), "{log}");
        // The mismatch is said once per member (from its hello or from its refusal of ours,
        // whichever comes first), however often the token is re-routed.
        assert_eq!(
            log.matches("runs another run file, so no token").count()
                + log.matches("refused our run file").count(),
            1,
            "{log}"
        );
    }
    drop(reaper);
    let _ = std::fs::remove_dir_all(&dir);
}

/// One δ everywhere: `account` and `calibrate` default to the δ of scenarios and run files.
#[test]
fn delta_defaults_to_one_value_everywhere() {
    let delta = dpwalk_core::spec::DEFAULT_DELTA;
    assert_eq!(delta, 1e-6);
    for args in [
        &[
            "account",
            "gaussian",
            "--noise-multiplier",
            "2",
            "--steps",
            "10",
            "--json",
        ][..],
        &[
            "calibrate",
            "--epsilon",
            "1",
            "--complete",
            "10",
            "--clip",
            "1",
            "--steps-per-user",
            "2",
            "--json",
        ][..],
    ] {
        let out = dpwalk(args);
        assert!(
            out.status.success(),
            "{args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let json: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        let text = json.to_string();
        assert!(
            text.contains("\"delta\":1e-6") || text.contains("\"delta\":0.000001"),
            "{args:?}: {text}"
        );
    }
    // A run file's and a node.toml's [budget] may leave delta out.
    let config = dpwalk_net::config::NodeConfig::parse(
        "run = \"r\"\nidentity = \"k\"\nstate-dir = \"s\"\n[data]\nsource = \"csv\"\npath = \"d\"\n[budget]\nepsilon = 2.0\n",
        std::path::Path::new("node.toml"),
        std::path::Path::new(""),
    )
    .unwrap();
    assert_eq!(config.budget.map(|b| b.delta), Some(delta));
}

/// `--log-level` replaces RUST_LOG: at `warn` a failing node prints its error and no INFO line.
#[test]
fn log_level_flag_replaces_rust_log() {
    let dir = temp_dir("first-hour-log-level");
    let cluster = write_cluster(&dir, &["127.0.0.1"; 2], 100, Noise::Sigma(0.5));
    let _busy = std::net::TcpListener::bind(("127.0.0.1", cluster.members[0].port)).unwrap();
    let run = |level: &str| {
        let out = Command::new(env!("CARGO_BIN_EXE_dpwalk"))
            .args(["--log-level", level, "node", "--config"])
            .arg(cluster.members[0].dir.join("node.toml"))
            .env("RUST_LOG", "info")
            .output()
            .unwrap();
        assert!(!out.status.success());
        String::from_utf8_lossy(&out.stderr).into_owned()
    };
    let warn = run("warn");
    assert!(warn.contains("the port is already in use"), "{warn}");
    assert!(!warn.contains(" INFO "), "{warn}");
    let info = run("info");
    assert!(info.contains(" INFO "), "{info}");
    let _ = std::fs::remove_dir_all(&dir);
}

/// Item 3 of "A new user's first hour": a run whose noise dwarfs the clipped update, and whose clip
/// then cuts every update, is said in the log (once per condition) and in the status (JSON and
/// `dpwalk status`), with what to change.
#[test]
fn noise_that_dwarfs_the_update_and_a_clip_cutting_every_update_are_warned_about() {
    let dir = temp_dir("first-hour-quality");
    // σ = 40, C = 1, p = 4: one step's noise is (40/2)·√4 = 40 times the largest update.
    let cluster = write_cluster(&dir, &["127.0.0.1"; 2], 400, Noise::Sigma(40.0));
    // The first holder alone (a quorum of one): it makes the walk's first step and holds the
    // token.
    cluster.set_start(dpwalk_net::run::StartSpec {
        quorum: Some(1),
        timeout: None,
    });
    let first = dpwalk_core::walk::start_holder(5, 2);
    let mut reaper = Reaper::default();
    reaper.0.push((first, cluster.spawn(first, &[])));
    let start = Instant::now();
    let status = loop {
        if let Some(s) = cluster.status(first).filter(|s| s.steps_done == 1) {
            break s;
        }
        assert!(
            start.elapsed() < Duration::from_secs(60),
            "no first step:\n{}",
            cluster.log(first)
        );
        std::thread::sleep(Duration::from_millis(100));
    };
    assert_eq!(status.warnings.len(), 1, "{:?}", status.warnings);
    assert!(
        status.warnings[0].contains("40.0 times the largest update"),
        "{:?}",
        status.warnings
    );
    let recent = status.clipped_recent.expect("one contribution");
    assert_eq!(recent.of, 1);
    let port = cluster.members[first].status.rsplit_once(':').unwrap().1;
    let out = dpwalk(&["status", "--addr", &format!("127.0.0.1:{port}")]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        stdout.contains("warning    the noise of one step"),
        "{stdout}"
    );
    assert!(stdout.contains("of the last 1 updates"), "{stdout}");
    // The other member joins; the walk ends.
    let other = 1 - first;
    reaper.0.push((other, cluster.spawn(other, &[])));
    cluster.wait_all(&mut reaper.0, Duration::from_secs(120));
    for i in 0..2 {
        let log = cluster.log(i);
        assert_eq!(
            log.matches("times the largest update").count(),
            1,
            "node {i}, the noise said once:\n{log}"
        );
        // About 200 contributions each, nearly all clipped under this noise: said once.
        assert_eq!(
            log.matches("of the last 50 updates of this node").count(),
            1,
            "node {i}, the clip said once:\n{log}"
        );
        assert!(log.contains("raise clip C"), "{log}");
    }
}
