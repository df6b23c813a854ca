//! A node under a flood of connections, with few descriptors (issue 10, item 5): before, 1,000
//! authenticated non-members stayed connected unlogged, the node exited with "Too many open files"
//! when writing its final model at a 1,024-descriptor limit, and its status endpoint spun the CPU
//! while descriptors were exhausted.
//!
//! Node 0 runs with a descriptor limit of [`NOFILE`] (soft and hard). While it waits for member 1,
//! the test holds [`IDLE_STATUS`] idle connections to its status endpoint (more than its
//! descriptors could hold at once) and asks for its status meanwhile; then [`STRANGERS`] peers with
//! fresh identities connect to it, each over a real Noise handshake. Every stranger is
//! disconnected, node 0 counts each in its WARN summaries, member 1 starts, and both end the walk
//! with the same final model.

#![allow(clippy::expect_used, clippy::unwrap_used)]

mod common;

use std::net::TcpStream;
use std::time::Duration;

use common::{Reaper, tcp_swarm, temp_dir, write_cluster};
use dpwalk_core::spec::Noise;
use futures::StreamExt;
use libp2p::Multiaddr;
use libp2p::identity::Keypair;
use libp2p::swarm::{SwarmEvent, dummy};

/// Node 0's descriptor limit.
const NOFILE: u64 = 256;
/// Idle connections held to node 0's status endpoint.
const IDLE_STATUS: usize = 300;
/// Non-members that connect to node 0.
const STRANGERS: usize = 300;
/// Strangers connecting at once (below node 0's limit of pending incoming connections, so each
/// is refused as a stranger rather than for the limit).
const AT_ONCE: usize = 16;

/// How a stranger's connection ended.
#[derive(Debug, PartialEq, Eq)]
enum Ended {
    /// Established, then closed by the node.
    Disconnected,
    /// Never established.
    Refused(String),
}

/// Connects to `addr` with a fresh identity and waits until the connection ends (the stranger
/// itself keeps it open for a minute: a close is the node's).
async fn stranger(addr: Multiaddr) -> Ended {
    let mut swarm = tcp_swarm(Keypair::generate_ed25519(), dummy::Behaviour);
    swarm.dial(addr).unwrap();
    let wait = async {
        loop {
            match swarm.select_next_some().await {
                SwarmEvent::ConnectionClosed { .. } => return Ended::Disconnected,
                SwarmEvent::OutgoingConnectionError { error, .. } => {
                    return Ended::Refused(error.to_string());
                }
                _ => {}
            }
        }
    };
    tokio::time::timeout(Duration::from_secs(60), wait)
        .await
        .expect("the node kept a stranger connected for a minute")
}

/// The sum of `key=N` over the lines of `log` that contain `marker`.
fn sum_field(log: &str, marker: &str, key: &str) -> u64 {
    log.lines()
        .filter(|l| l.contains(marker))
        .filter_map(|l| {
            l.split_whitespace()
                .find_map(|w| w.strip_prefix(&format!("{key}=")))
                .and_then(|v| v.parse::<u64>().ok())
        })
        .sum()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn strangers_are_disconnected_and_the_status_endpoint_answers_under_a_flood() {
    let dir = temp_dir("flood");
    let cluster = write_cluster(&dir, &["127.0.0.1"; 2], 400, Noise::Sigma(0.5));
    let mut reaper = Reaper::default();
    // `ulimit -n` in sh sets the soft and the hard limit: the node cannot raise it.
    let limit = format!("ulimit -n {NOFILE} && exec \"$0\" \"$@\"");
    let node0 = cluster.spawn(0, &["sh", "-c", &limit]);
    let pid = node0.id();
    reaper.0.push((0, node0));
    let t0 = std::time::Instant::now();
    while cluster.status(0).is_none() {
        assert!(
            t0.elapsed() < Duration::from_secs(60),
            "node 0 did not answer:\n{}",
            cluster.log(0)
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    if let Ok(limits) = std::fs::read_to_string(format!("/proc/{pid}/limits")) {
        let line = limits
            .lines()
            .find(|l| l.starts_with("Max open files"))
            .unwrap();
        assert_eq!(
            line.split_whitespace().nth(3),
            Some(NOFILE.to_string().as_str()),
            "{line}"
        );
    }

    // Idle connections to the status endpoint: the node keeps a bounded number of them open and
    // still answers a request.
    let status_addr = cluster.members[0].status.clone();
    let idle: Vec<TcpStream> = (0..IDLE_STATUS)
        .map(|_| TcpStream::connect(&status_addr).unwrap())
        .collect();
    let status = cluster.status(0);
    assert!(
        status.is_some(),
        "no status under {IDLE_STATUS} idle connections:\n{}",
        cluster.log(0)
    );

    // Strangers, AT_ONCE at a time, while the idle connections are still held.
    let addr: Multiaddr = format!(
        "{}/p2p/{}",
        cluster.members[0].multiaddr(),
        cluster.members[0].peer
    )
    .parse()
    .unwrap();
    let mut ended = Vec::new();
    for batch in 0..STRANGERS.div_ceil(AT_ONCE) {
        let n = AT_ONCE.min(STRANGERS - batch * AT_ONCE);
        let tasks: Vec<_> = (0..n)
            .map(|_| tokio::spawn(stranger(addr.clone())))
            .collect();
        for t in tasks {
            ended.push(t.await.unwrap());
        }
    }
    let refused: Vec<&Ended> = ended
        .iter()
        .filter(|e| **e != Ended::Disconnected)
        .collect();
    assert!(
        refused.is_empty(),
        "{} strangers never connected (the node should let them finish the handshake and then disconnect them): {refused:?}",
        refused.len()
    );
    assert!(
        cluster.status(0).is_some(),
        "no status after the strangers:\n{}",
        cluster.log(0)
    );
    drop(idle);

    // Member 1 joins: the run ends, node 0 writes its final model with its few descriptors.
    reaper.0.push((1, cluster.spawn(1, &[])));
    cluster.wait_all(&mut reaper.0, Duration::from_secs(180));
    cluster.agreed_model();
    let log = cluster.log(0);
    let marker = "not members of the run nor bootstrap peers";
    assert_eq!(
        sum_field(&log, marker, "strangers"),
        STRANGERS as u64,
        "{log}"
    );
    assert_eq!(
        sum_field(&log, marker, "stranger_peers"),
        STRANGERS as u64,
        "{log}"
    );
    assert!(!log.contains("Too many open files"), "{log}");
    let _ = std::fs::remove_dir_all(&dir);
}
