//! A node's state directory and status endpoint under an operator's mistakes, against real
//! `dpwalk node` processes on loopback: the same `node.toml` started twice (the second process is
//! refused, the first finishes the run), and a status endpoint on a non-loopback address (a
//! warning at start).

#![allow(clippy::expect_used, clippy::unwrap_used)]

mod common;

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use common::{Reaper, free_ports, temp_dir, wait_exit, write_cluster};

/// Polls until `check` holds, panicking with `what` after `limit`.
fn wait_until(limit: Duration, what: &str, mut check: impl FnMut() -> bool) {
    let start = Instant::now();
    while !check() {
        assert!(start.elapsed() < limit, "{what} within {limit:?}");
        std::thread::sleep(Duration::from_millis(50));
    }
}

#[test]
fn the_same_node_toml_started_twice_is_refused_and_the_first_finishes() {
    let dir = temp_dir("faults-lock");
    let cluster = write_cluster(&dir, &["127.0.0.1"; 2], 300, "sigma = 0.5");
    let state = cluster.members[0].dir.join("state");
    let mut reaper = Reaper::default();
    let first = cluster.spawn(0, &[]);
    let pid = first.id();
    reaper.0.push((0, first));
    // The first process holds the lock once its PID is in the lock file.
    let lock = state.join(dpwalk_net::state::LOCK_FILE);
    wait_until(
        Duration::from_secs(60),
        "the first node took its lock",
        || std::fs::read_to_string(&lock).is_ok_and(|t| t.trim() == pid.to_string()),
    );

    // The same node.toml again, logging elsewhere.
    let second_log = cluster.members[0].dir.join("second.log");
    let log_file = std::fs::File::create(&second_log).unwrap();
    let mut second = Command::new(env!("CARGO_BIN_EXE_dpwalk"))
        .args(["node", "--config"])
        .arg(cluster.members[0].dir.join("node.toml"))
        .env("RUST_LOG", "info")
        .stdin(Stdio::null())
        .stdout(log_file.try_clone().unwrap())
        .stderr(log_file)
        .spawn()
        .unwrap();
    let status = wait_exit(&mut second, Duration::from_secs(60));
    let log = std::fs::read_to_string(&second_log).unwrap();
    let status = status.unwrap_or_else(|| {
        let _ = second.kill();
        panic!("the second node did not stop:\n{log}")
    });
    assert!(!status.success(), "the second node succeeded:\n{log}");
    assert!(
        log.contains(&format!(
            "the state directory {} is in use by another process (pid {pid})",
            state.display()
        )) && log.contains("Stop that node first"),
        "{log}"
    );
    assert!(
        !log.contains("listening"),
        "the second node listened:\n{log}"
    );
    assert!(
        reaper.0[0].1.try_wait().unwrap().is_none(),
        "the first node stopped:\n{}",
        cluster.log(0)
    );

    // The first node's run goes on: member 1 joins and both finish with the same model.
    reaper.0.push((1, cluster.spawn(1, &[])));
    cluster.wait_all(&mut reaper.0, Duration::from_secs(120));
    cluster.agreed_model();
    let ledger = dpwalk_privacy::ledger::Ledger::seqs(&state.join("ledger.bin")).unwrap();
    let final_model = cluster.final_model(0).unwrap();
    assert_eq!(
        Some(ledger.len() as u64),
        final_model["privacy"]["contributions"].as_u64(),
        "node 0's ledger is its own, whole"
    );
    assert!(
        !cluster.log(0).contains("not on loopback"),
        "a loopback status endpoint was warned about:\n{}",
        cluster.log(0)
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_status_endpoint_off_loopback_is_warned_about_once() {
    let dir = temp_dir("faults-status");
    let cluster = write_cluster(&dir, &["127.0.0.1"; 2], 100, "sigma = 0.5");
    let config = cluster.members[0].dir.join("node.toml");
    let port = free_ports(1)[0];
    let text = std::fs::read_to_string(&config).unwrap().replace(
        &format!("status = \"{}\"", cluster.members[0].status),
        &format!("status = \"0.0.0.0:{port}\""),
    );
    assert!(text.contains("0.0.0.0"));
    std::fs::write(&config, text).unwrap();
    let mut reaper = Reaper::default();
    reaper.0.push((0, cluster.spawn(0, &[])));
    // The node waits for member 1 once it is up; the warning comes before.
    wait_until(
        Duration::from_secs(60),
        "the node said whom it waits for",
        || cluster.log(0).contains("waiting for"),
    );
    let log = cluster.log(0);
    let warnings: Vec<&str> = log
        .lines()
        .filter(|l| l.contains("not on loopback"))
        .collect();
    assert_eq!(warnings.len(), 1, "{log}");
    let line = warnings[0];
    assert!(
        line.contains("WARN")
            && line.contains(&format!("0.0.0.0:{port}"))
            && line.contains("privacy spending")
            && line.contains("step counts")
            && line.contains(&format!("status = \"127.0.0.1:{port}\"")),
        "{line}"
    );
    drop(reaper);
    let _ = std::fs::remove_dir_all(&dir);
}
