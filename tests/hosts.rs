//! Separate hosts: three network namespaces, each with its own address on a private bridge, each
//! running one `dpwalk node`, train together. The run gives a `[budget]` instead of σ, so every
//! node calibrates σ itself; the test checks it is the σ `dpwalk calibrate` prints.
//!
//! Needs root and `ip` (iproute2); elsewhere the test says it was skipped and passes.

#![allow(clippy::expect_used, clippy::unwrap_used)]

mod common;

use std::process::Command;
use std::time::Duration;

use common::netns::Namespaces;
use common::{Reaper, temp_dir, write_cluster};
use dpwalk_core::spec::Noise;

const STEPS: u64 = 1500;
const HOSTS: usize = 3;

/// Namespaces `<prefix>-0..HOSTS` on a bridge inside namespace `<prefix>-hub`, addresses
/// `10.213.0.1..` on a /24 that exists only inside them; all deleted on drop.
struct Hosts {
    names: Vec<String>,
    _namespaces: Namespaces,
}

impl Hosts {
    fn create() -> Option<Self> {
        let mut namespaces = Namespaces::default();
        let hub = namespaces.add("hub")?;
        if !namespaces.bridge(&hub, "br0") {
            return None;
        }
        let mut names = Vec::new();
        for i in 0..HOSTS {
            let ns = namespaces.add(&i.to_string())?;
            let cidr = format!("{}/24", Self::addr(i));
            if !namespaces.wire(&hub, "br0", &format!("h{i}"), &ns, "eth0", &cidr) {
                return None;
            }
            names.push(ns);
        }
        Some(Hosts {
            names,
            _namespaces: namespaces,
        })
    }

    fn addr(i: usize) -> String {
        format!("10.213.0.{}", i + 1)
    }
}

#[test]
fn three_hosts_in_network_namespaces_train_together() {
    let Some(hosts) = Hosts::create() else {
        eprintln!("SKIPPED: network namespaces are not available here (needs root and iproute2)");
        return;
    };
    let dir = temp_dir("hosts");
    let addrs: Vec<String> = (0..HOSTS).map(Hosts::addr).collect();
    let ips: Vec<&str> = addrs.iter().map(String::as_str).collect();
    let (epsilon, delta) = (4.0, 1e-5);
    let cluster = write_cluster(&dir, &ips, STEPS, Noise::Budget { epsilon, delta });
    let mut reaper = Reaper::default();
    for (i, ns) in hosts.names.iter().enumerate() {
        reaper
            .0
            .push((i, cluster.spawn(i, &["ip", "netns", "exec", ns])));
    }
    cluster.wait_all(&mut reaper.0, Duration::from_secs(240));
    cluster.agreed_model();

    // Every host contributed within the run's budget, and calibrated the σ that `dpwalk calibrate`
    // gives for this run (local view, the planned 0.99 quantile of the visit count).
    let expected = Command::new(env!("CARGO_BIN_EXE_dpwalk"))
        .args(["calibrate", "--json", "--view", "local", "--clip", "1"])
        .args(["--complete", &HOSTS.to_string()])
        .args(["--total-steps", &STEPS.to_string()])
        .args([
            "--epsilon",
            &epsilon.to_string(),
            "--delta",
            &delta.to_string(),
        ])
        .output()
        .unwrap();
    assert!(expected.status.success(), "{expected:?}");
    let expected: serde_json::Value = serde_json::from_slice(&expected.stdout).unwrap();
    let sigma = expected["sigma"].as_f64().unwrap();
    for i in 0..HOSTS {
        let model = cluster.final_model(i).unwrap();
        let privacy = &model.privacy;
        assert!(privacy.contributions > 0, "host {i}: {model:?}");
        // The run's budget holds on every host: its local figure is within it.
        let spent = privacy.epsilon_local.unwrap();
        assert!(spent <= epsilon, "host {i} spent {spent} > {epsilon}");
        assert_eq!(privacy.budget_epsilon, Some(epsilon));
        let log = cluster.log(i);
        assert!(
            log.contains(&format!("sigma={sigma}")),
            "host {i} did not calibrate sigma = {sigma}:\n{log}"
        );
        assert!(
            log.contains(&format!("/ip4/{}/tcp/", Hosts::addr(i))),
            "host {i} did not listen on its namespace's address:\n{log}"
        );
    }
    drop(reaper);
    drop(hosts);
    let _ = std::fs::remove_dir_all(&dir);
}

/// A `[budget]` no σ can meet stops the node at once, naming the budget, before it joins the run.
/// (A tiny ε alone is not enough: once the RDP at some order is below δ², the mechanism is
/// `(0, δ)`-DP through the KL bound; a tiny δ as well is.)
#[test]
fn an_unattainable_budget_is_refused_at_start() {
    let dir = temp_dir("budget");
    let cluster = write_cluster(
        &dir,
        &["127.0.0.1"; 2],
        100,
        Noise::Budget {
            epsilon: 1e-9,
            delta: 1e-12,
        },
    );
    let mut reaper = Reaper(vec![(0, cluster.spawn(0, &[]))]);
    let status = common::wait_exit(&mut reaper.0[0].1, Duration::from_secs(60));
    let log = cluster.log(0);
    assert!(!status.is_some_and(|s| s.success()), "{log}");
    assert!(
        log.contains("run file [budget] epsilon = 0.000000001, delta = 0.000000000001")
            && log.contains("give [algorithm] sigma instead"),
        "{log}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}
