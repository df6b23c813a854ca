//! Members behind real NATs: network namespaces as a public network with a relay node and a
//! public node, and three private networks, each behind a router namespace doing SNAT with
//! iptables: two plain `MASQUERADE` (cone-like: the source port is kept, so hole punching can work
//! between them), one `MASQUERADE --random-fully` (a new random port per connection, like a
//! symmetric NAT: hole punching cannot work, the relay must carry it). The routers drop every
//! unsolicited packet from outside, as home routers do. A walk among all the members completes
//! and ends with the simulator's model, bit for bit; the test counts how each pair of members was
//! connected (direct, hole-punched or relayed) and prints the counts.
//!
//! Needs root, `ip` (iproute2) and `iptables`; elsewhere the test says it was skipped and passes
//! (`.ci/run` installs iptables where it can).

#![allow(clippy::expect_used, clippy::unwrap_used)]

mod common;

use std::process::Command;
use std::time::{Duration, Instant};

use common::netns::Namespaces;
use common::{Reaper, scenario_records, simulated_model, temp_dir, write_run};
use dpwalk_core::spec::{LossName, ProblemSpec};
use dpwalk_core::topology::{TopologyKind, TopologySpec};
use dpwalk_core::walk::start_holder;
use dpwalk_net::config::Timeouts;
use dpwalk_net::reach::Via;
use dpwalk_net::run::{AlgorithmSpec, RunFile};
use dpwalk_net::status::Status;

/// The run, as the simulator's scenario; the run file below holds the same parameters.
const SCENARIO: &str = r#"
seed = 7
users = 7
steps = 800
[data]
source = "synthetic-lasso"
rows = 280
dim = 8
[problem]
loss = "squared"
l1 = 0.01
[topology]
kind = "complete"
[algorithm]
kind = "admm"
mode = "decentralized"
gamma = 1.0
lambda = 0.5
sigma = 0.3
clip = 0.5
"#;

/// A private network behind a router.
struct Lan {
    name: &'static str,
    /// `MASQUERADE --random-fully` (symmetric-like) rather than plain `MASQUERADE` (cone-like).
    random_fully: bool,
    hosts: usize,
}

const LANS: [Lan; 3] = [
    Lan {
        name: "a",
        random_fully: false,
        hosts: 2,
    },
    Lan {
        name: "b",
        random_fully: true,
        hosts: 2,
    },
    Lan {
        name: "c",
        random_fully: false,
        hosts: 1,
    },
];

/// One host: its namespace, its address, and its private network (`None`: public).
struct Host {
    ns: String,
    ip: String,
    lan: Option<usize>,
}

/// The namespaces: `hub` (the public network's bridge), `pub0` and `pub1` (members 0 and 1, one of
/// them the relay) on `10.213.0.0/24`, and per private network `l` a router `gw-<l>` (`10.213.0.11 + l` outside,
/// `10.213.(l + 1).1` inside, with the network's bridge) and its hosts `10.213.(l + 1).2..`.
struct Net {
    hosts: Vec<Host>,
    _namespaces: Namespaces,
}

impl Net {
    fn create() -> Option<Net> {
        if !common::netns::run("iptables", &["--version"]) {
            return None;
        }
        let mut n = Namespaces::default();
        let hub = n.add("hub")?;
        if !n.bridge(&hub, "br0") {
            return None;
        }
        let mut hosts = Vec::new();
        for (i, name) in ["pub0", "pub1"].iter().enumerate() {
            let ns = n.add(name)?;
            let ip = format!("10.213.0.{}", i + 1);
            if !n.wire(
                &hub,
                "br0",
                &format!("h{i}"),
                &ns,
                "eth0",
                &format!("{ip}/24"),
            ) {
                return None;
            }
            hosts.push(Host { ns, ip, lan: None });
        }
        for (l, lan) in LANS.iter().enumerate() {
            let gw = n.add(&format!("gw-{}", lan.name))?;
            let inside = format!("10.213.{}", l + 1);
            let wan = format!("10.213.0.{}/24", 11 + l);
            let mut masquerade = vec![
                "-t",
                "nat",
                "-A",
                "POSTROUTING",
                "-o",
                "wan",
                "-j",
                "MASQUERADE",
            ];
            if lan.random_fully {
                masquerade.push("--random-fully");
            }
            let established = [
                "-m",
                "conntrack",
                "--ctstate",
                "ESTABLISHED,RELATED",
                "-j",
                "ACCEPT",
            ];
            let ok = n.wire(&hub, "br0", &format!("g{l}"), &gw, "wan", &wan)
                && n.bridge(&gw, "lan")
                && common::netns::ip(&[
                    "-n",
                    &gw,
                    "addr",
                    "add",
                    &format!("{inside}.1/24"),
                    "dev",
                    "lan",
                ])
                && n.exec(&gw, "sysctl", &["-qw", "net.ipv4.ip_forward=1"])
                && n.exec(&gw, "iptables", &masquerade)
                && n.exec(
                    &gw,
                    "iptables",
                    &[&["-A", "FORWARD", "-i", "wan"][..], &established].concat(),
                )
                && n.exec(
                    &gw,
                    "iptables",
                    &["-A", "FORWARD", "-i", "wan", "-j", "DROP"],
                )
                && n.exec(
                    &gw,
                    "iptables",
                    &[&["-A", "INPUT", "-i", "wan"][..], &established].concat(),
                )
                && n.exec(&gw, "iptables", &["-A", "INPUT", "-i", "wan", "-j", "DROP"]);
            if !ok {
                return None;
            }
            for h in 0..lan.hosts {
                let ns = n.add(&format!("{}{h}", lan.name))?;
                let ip = format!("{inside}.{}", h + 2);
                let ok = n.wire(
                    &gw,
                    "lan",
                    &format!("p{h}"),
                    &ns,
                    "eth0",
                    &format!("{ip}/24"),
                ) && common::netns::ip(&[
                    "-n",
                    &ns,
                    "route",
                    "add",
                    "default",
                    "via",
                    &format!("{inside}.1"),
                ]);
                if !ok {
                    return None;
                }
                hosts.push(Host {
                    ns,
                    ip,
                    lan: Some(l),
                });
            }
        }
        Some(Net {
            hosts,
            _namespaces: n,
        })
    }
}

/// How members `i` and `j` were connected, from their logs: hole-punched if either says so, else
/// direct if either had a direct connection, else relayed if either had a relayed one.
fn pair_outcome(logs: &[String], i: usize, j: usize) -> Option<Via> {
    // Each message is followed by its fields, after a space.
    let said = |a: usize, b: usize, needle: &dyn Fn(usize) -> String| logs[a].contains(&needle(b));
    let either = |needle: &dyn Fn(usize) -> String| said(i, j, needle) || said(j, i, needle);
    if either(&|m| format!("hole punched: a direct connection with member {m} ")) {
        Some(Via::HolePunched)
    } else if either(&|m| format!("connection with member {m}: direct ")) {
        Some(Via::Direct)
    } else if either(&|m| format!("connection with member {m}: relayed ")) {
        Some(Via::Relayed)
    } else {
        None
    }
}

/// `dpwalk status --json` of the node whose endpoint is `addr` inside namespace `ns`.
fn status_in(ns: &str, addr: &str) -> Option<Status> {
    let out = Command::new("ip")
        .args([
            "netns",
            "exec",
            ns,
            env!("CARGO_BIN_EXE_dpwalk"),
            "status",
            "--json",
            "--addr",
            addr,
        ])
        .output()
        .ok()?;
    serde_json::from_slice(&out.stdout).ok()
}

#[test]
fn members_behind_two_kinds_of_nat_train_through_a_relay_and_hole_punching() {
    let Some(net) = Net::create() else {
        eprintln!(
            "SKIPPED: network namespaces with iptables are not available here (needs root, iproute2 and iptables)"
        );
        return;
    };
    let dir = temp_dir("nat");
    let (records, n_features) = scenario_records(SCENARIO);
    assert_eq!(records.len(), net.hosts.len());
    let run = RunFile {
        run_id: "nat".into(),
        seed: dpwalk_sim::simulate::repetition_seed(7, 0),
        steps: 800,
        dimension: n_features,
        problem: ProblemSpec {
            loss: LossName::Squared,
            classes: None,
            l1: 0.01,
            l2: 0.0,
        },
        algorithm: AlgorithmSpec {
            gamma: 1.0,
            lambda: 0.5,
            clip: 0.5,
            sigma: Some(0.3),
        },
        budget: None,
        privacy: None,
        topology: TopologySpec::new(TopologyKind::Complete),
        members: Vec::new(),
    };
    let ips: Vec<&str> = net.hosts.iter().map(|h| h.ip.as_str()).collect();
    // A long hand-off timeout: a hop to a member whose relayed connection is not up yet waits for
    // it rather than re-routing, so the walk's path stays the simulator's; the resume timeout, a
    // predecessor's wait for the news that its successor handed the token on, must outlast it.
    let timeouts = Timeouts {
        handoff: 30_000,
        resume: 90_000,
        ..common::TIMEOUTS
    };
    let starter = start_holder(run.seed, net.hosts.len());
    let cluster = write_run(&dir, &ips, run, &records, n_features, timeouts);

    // The members behind NAT are listed at their LAN address (for their LAN's neighbours) and at
    // the relay's circuit address; the relay (a public member, not the one that starts the walk:
    // that one alone has work at once) serves.
    let run_path = dir.join("run.toml");
    let mut file: RunFile = toml::from_str(&std::fs::read_to_string(&run_path).unwrap()).unwrap();
    let relay = &cluster.members[usize::from(starter == 0)];
    for (m, host) in file.members.iter_mut().zip(&net.hosts) {
        if host.lan.is_some() {
            let me = &cluster.members[m.index];
            m.addrs.push(format!(
                "{}/p2p/{}/p2p-circuit/p2p/{}",
                relay.multiaddr(),
                relay.peer,
                me.peer
            ));
        }
    }
    std::fs::write(&run_path, toml::to_string(&file).unwrap()).unwrap();
    let relay_toml = relay.dir.join("node.toml");
    let text = std::fs::read_to_string(&relay_toml).unwrap();
    std::fs::write(&relay_toml, format!("relay = true\n{text}")).unwrap();

    // All members at once: each dial failure within the first hand-off timeout of a node is
    // forgiven (members start at different speeds), so while the relayed connections come up
    // (a few seconds: a reservation is retried every 2 s until the relay listens) no member is
    // taken for down.
    let mut reaper = Reaper::default();
    for (i, host) in net.hosts.iter().enumerate() {
        reaper
            .0
            .push((i, cluster.spawn(i, &["ip", "netns", "exec", &host.ns])));
    }
    let start = Instant::now();

    // While the walk runs, the first member behind the symmetric-like NAT reports a relayed
    // connection in its status (read inside its namespace: the endpoint is on its own loopback).
    let b0 = net.hosts.iter().position(|h| h.lan == Some(1)).unwrap();
    let mut links = None;
    while links.is_none() && reaper.0[b0].1.try_wait().unwrap().is_none() {
        links = status_in(&net.hosts[b0].ns, &cluster.members[b0].status)
            .filter(|s| s.connections.iter().any(|l| l.via == Via::Relayed));
        std::thread::sleep(Duration::from_millis(100));
    }
    let links = links.unwrap_or_else(|| {
        panic!(
            "member {b0} never reported a relayed connection:\n{}",
            cluster.log(b0)
        )
    });
    eprintln!("member {b0}'s connections: {:?}", links.connections);
    cluster.wait_all(&mut reaper.0, Duration::from_secs(300));
    let took = start.elapsed();
    let swarm = cluster.agreed_model();
    let sim = simulated_model(&dir.join("sim"), SCENARIO);
    assert_eq!(swarm, sim, "the swarm behind NAT against the simulator");

    let logs: Vec<String> = (0..net.hosts.len()).map(|i| cluster.log(i)).collect();
    let mut counts = std::collections::BTreeMap::new();
    for i in 0..net.hosts.len() {
        for j in i + 1..net.hosts.len() {
            let outcome = pair_outcome(&logs, i, j);
            *counts
                .entry(outcome.map_or("none", Via::as_str))
                .or_insert(0) += 1;
            let (li, lj) = (net.hosts[i].lan, net.hosts[j].lan);
            let (Some(a), Some(b)) = (li, lj) else {
                continue;
            };
            if a == b {
                continue;
            }
            // Behind two different NATs: never a plain direct dial (the routers refuse those);
            // through a NAT that picks a new port per connection, never a hole punch. Between two
            // cone-like NATs a hole punch may or may not succeed before the run ends (DCUtR races
            // the walk, and a busy machine can lose that race): either is correct, and the counts
            // below say which happened.
            let symmetric = LANS[a].random_fully || LANS[b].random_fully;
            let allowed: &[Via] = if symmetric {
                &[Via::Relayed]
            } else {
                &[Via::HolePunched, Via::Relayed]
            };
            assert!(
                outcome.is_some_and(|via| allowed.contains(&via)),
                "members {i} (lan {}) and {j} (lan {}): {outcome:?}, expected one of {allowed:?}:\n{}\n----\n{}",
                LANS[a].name,
                LANS[b].name,
                logs[i],
                logs[j]
            );
        }
    }
    eprintln!("pairs of members by connection: {counts:?}; the run took {took:?}");
    drop(reaper);
    drop(net);
    let _ = std::fs::remove_dir_all(&dir);
}
