//! A hand-built daemon run for the end-to-end tests that need more control than `dpwalk swarm`
//! gives: member keys the test holds, addresses other than 127.0.0.1, nodes started one by one.
//! Everything goes through the real files a user writes (`run.toml`, `node.toml`, `data.csv`) and
//! the real `dpwalk node` binary.

#![allow(dead_code, clippy::expect_used, clippy::unwrap_used)]

pub mod netns;

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use dpwalk_core::spec::{BudgetSpec, LossName, Noise, ProblemSpec};
use dpwalk_core::topology::{TopologyKind, TopologySpec};
use dpwalk_net::config::Timeouts;
use dpwalk_net::final_model::FinalModelFile;
use dpwalk_net::run::{AlgorithmSpec, RunFile};
use dpwalk_net::status::{Status, fetch_status};
use dpwalk_net::workspace::{MemberPlan, NodeOptions};
use libp2p::identity::Keypair;
use libp2p::swarm::NetworkBehaviour;
use libp2p::{PeerId, Swarm, noise, tcp, yamux};

/// Features per record of the generated data (the model dimension).
pub const DIM: usize = 4;

/// One member's records: the features row after row, and the labels.
pub type Records = (Vec<f64>, Vec<f64>);

/// The tests' timeouts: short, so that a member down costs its hop a second.
pub const TIMEOUTS: Timeouts = Timeouts {
    request: 5000,
    handoff: 1000,
    resume: 5000,
    linger: 3000,
    idle: 30_000,
};

/// One member of the run, as written to disk.
#[derive(Debug)]
pub struct Member {
    pub index: usize,
    pub dir: PathBuf,
    pub keypair: Keypair,
    pub peer: PeerId,
    /// The host's address (`127.0.0.1`, or a namespace's).
    pub ip: String,
    pub port: u16,
    /// `host:port` of its status endpoint (on the member's own loopback).
    pub status: String,
}

impl Member {
    /// The member's listen multiaddr.
    pub fn multiaddr(&self) -> String {
        format!("/ip4/{}/tcp/{}", self.ip, self.port)
    }
}

/// A run directory: `run.toml` and one `node-<i>/` per member.
#[derive(Debug)]
pub struct Cluster {
    pub dir: PathBuf,
    pub members: Vec<Member>,
    pub steps: u64,
    /// The model's dimension.
    pub dimension: usize,
}

/// A test's own libp2p peer as `keypair`, over TCP, Noise and Yamux, running `behaviour`. It keeps
/// a connection with nothing to do open for a minute: a close within that is the other side's.
pub fn tcp_swarm<B: NetworkBehaviour>(keypair: Keypair, behaviour: B) -> Swarm<B> {
    libp2p::SwarmBuilder::with_existing_identity(keypair)
        .with_tokio()
        .with_tcp(
            tcp::Config::default(),
            noise::Config::new,
            yamux::Config::default,
        )
        .unwrap()
        .with_behaviour(move |_| behaviour)
        .unwrap()
        .with_swarm_config(|c| c.with_idle_connection_timeout(Duration::from_secs(60)))
        .build()
}

/// Free ports on 127.0.0.1, outside the kernel's ephemeral range (`dpwalk_net::ports`).
pub fn free_ports(count: usize) -> Vec<u16> {
    dpwalk_net::workspace::free_ports(count).unwrap()
}

/// A fresh directory under the system's temp dir.
pub fn temp_dir(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("dpwalk-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// Member `i`'s records: 30 rows of a noisy linear model, from a fixed LCG, so every run of the
/// test sees the same data; the features row after row, and the labels.
fn records(i: usize) -> Records {
    let mut state = 0x9E37_79B9_7F4A_7C15u64 ^ (i as u64 + 1).wrapping_mul(0xD1B5_4A32_D192_ED03);
    let mut next = || {
        state = state
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        ((state >> 11) as f64 / (1u64 << 53) as f64) * 2.0 - 1.0
    };
    let truth = [0.8, -0.5, 0.0, 0.3];
    let (mut features, mut labels) = (Vec::new(), Vec::new());
    for _ in 0..30 {
        let x: Vec<f64> = (0..DIM).map(|_| next()).collect();
        labels.push(x.iter().zip(truth).map(|(a, b)| a * b).sum::<f64>() + 0.05 * next());
        features.extend(x);
    }
    (features, labels)
}

/// Writes a run of `ips.len()` members (member `i` listening on `ips[i]`), a complete graph, `steps`
/// hops, with `noise` as the `[algorithm]` σ or a `[budget]` table, through the same
/// [`dpwalk_net::workspace::write`] as `dpwalk swarm`.
pub fn write_cluster(dir: &Path, ips: &[&str], steps: u64, noise: Noise) -> Cluster {
    let data: Vec<_> = (0..ips.len()).map(records).collect();
    let (sigma, budget) = match noise {
        Noise::Sigma(sigma) => (Some(sigma), None),
        Noise::Budget { epsilon, delta } => (
            None,
            Some(BudgetSpec {
                epsilon,
                delta,
                view: Default::default(),
            }),
        ),
    };
    let run = RunFile {
        run_id: "e2e".into(),
        seed: 5,
        steps,
        dimension: DIM,
        problem: ProblemSpec {
            loss: LossName::Squared,
            classes: None,
            l1: 0.001,
            l2: 0.0,
        },
        algorithm: AlgorithmSpec::admm(1.0, 0.5, 1.0, sigma),
        budget,
        privacy: None,
        topology: TopologySpec::new(TopologyKind::Complete),
        start: None,
        members: Vec::new(),
    };
    write_run(dir, ips, run, &data, DIM, TIMEOUTS)
}

/// Writes `run` (its members replaced) for `ips.len()` members, member `i` listening on `ips[i]`
/// and holding `data[i]` (features row after row of `n_features` values, and labels), with
/// `timeouts` in every `node.toml`.
pub fn write_run(
    dir: &Path,
    ips: &[&str],
    run: RunFile,
    data: &[Records],
    n_features: usize,
    timeouts: Timeouts,
) -> Cluster {
    let ports = free_ports(2 * ips.len());
    let plans: Vec<MemberPlan> = ips
        .iter()
        .zip(data)
        .enumerate()
        .map(|(i, (ip, (features, labels)))| MemberPlan {
            listen: format!("/ip4/{ip}/tcp/{}", ports[2 * i]),
            status: format!("127.0.0.1:{}", ports[2 * i + 1]),
            features,
            labels,
            n_features,
        })
        .collect();
    let steps = run.steps;
    let dimension = run.dimension;
    let options = NodeOptions {
        eval_every: None,
        timeouts: Some(timeouts),
    };
    let written = dpwalk_net::workspace::write(dir, run, &plans, options).unwrap();
    let members = written
        .members
        .into_iter()
        .zip(ips)
        .enumerate()
        .map(|(i, (m, ip))| Member {
            index: m.index,
            dir: m.dir,
            keypair: m.keypair,
            peer: m.peer,
            ip: (*ip).to_string(),
            port: ports[2 * i],
            status: format!("127.0.0.1:{}", ports[2 * i + 1]),
        })
        .collect();
    Cluster {
        dir: dir.to_path_buf(),
        members,
        steps,
        dimension,
    }
}

/// The records of each user of `scenario` (a scenario file's text) as the simulator partitions
/// them, and the features per record: a cluster holding them, with the scenario's parameters in
/// its run file, ends with the model `dpwalk sim` computes for the scenario.
pub fn scenario_records(scenario: &str) -> (Vec<Records>, usize) {
    let loaded = dpwalk_sim::scenario::LoadedScenario::new(
        dpwalk_sim::scenario::parse(scenario, Path::new("test"), &[]).unwrap(),
        PathBuf::from("."),
        "test",
    )
    .expect("the scenario checks");
    let prepared = dpwalk_sim::simulate::prepare(&loaded).unwrap();
    let data = prepared.problem.data();
    let records = (0..loaded.scenario().users)
        .map(|i| (data.features(i).to_vec(), data.labels(i).to_vec()))
        .collect();
    (records, data.data.n_features)
}

/// A lasso run of `users` members and `steps` hops as the simulator's scenario text (40 synthetic
/// records per member, ADMM with σ = 0.3 and C = 0.5 on the complete graph); [`lasso_run`] is the
/// run file of the same run, so that a cluster holding [`scenario_records`] of it ends with the
/// model `dpwalk sim` computes ([`simulated_model`]).
pub fn lasso_scenario(seed: u64, users: usize, steps: u64) -> String {
    format!(
        r#"
seed = {seed}
users = {users}
steps = {steps}
[data]
source = "synthetic-lasso"
rows = {rows}
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
"#,
        rows = 40 * users
    )
}

/// The run file of [`lasso_scenario`]`(seed, _, steps)` with `n_features` features (its members
/// left to [`write_run`]).
pub fn lasso_run(run_id: &str, seed: u64, steps: u64, n_features: usize) -> RunFile {
    RunFile {
        run_id: run_id.into(),
        seed: dpwalk_sim::simulate::repetition_seed(seed, 0),
        steps,
        dimension: n_features,
        problem: ProblemSpec {
            loss: LossName::Squared,
            classes: None,
            l1: 0.01,
            l2: 0.0,
        },
        algorithm: AlgorithmSpec::admm(1.0, 0.5, 0.5, Some(0.3)),
        budget: None,
        privacy: None,
        topology: TopologySpec::new(TopologyKind::Complete),
        start: None,
        members: Vec::new(),
    }
}

/// `dpwalk sim` on `scenario` (a scenario file's text) in `dir`: its final model's `z`, as bits.
pub fn simulated_model(dir: &Path, scenario: &str) -> Vec<u64> {
    std::fs::create_dir_all(dir).unwrap();
    let file = dir.join("scenario.toml");
    std::fs::write(&file, scenario).unwrap();
    let out = dir.join("out");
    let status = Command::new(env!("CARGO_BIN_EXE_dpwalk"))
        .arg("sim")
        .arg(&file)
        .args(["--quiet", "--out"])
        .arg(&out)
        .status()
        .unwrap();
    assert!(status.success(), "dpwalk sim failed");
    z_bits(&json(&out.join("final_model.json")))
}

/// A JSON file the binary wrote (a final model, a summary), parsed.
pub fn json(path: &Path) -> serde_json::Value {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    serde_json::from_str(&text).unwrap()
}

/// The seqs the members' ledgers recorded, all together: asserts that every step of a walk of
/// `steps` is among them, and returns how many were recorded twice (a fork charges both of its
/// branches).
pub fn steps_made_twice(mut seqs: Vec<u64>, steps: u64) -> usize {
    seqs.sort_unstable();
    let made = seqs.len();
    seqs.dedup();
    assert_eq!(
        seqs,
        (0..steps).collect::<Vec<_>>(),
        "every step of the walk is in a ledger"
    );
    made - seqs.len()
}

/// A final model's `z`, as bits: models are compared bit for bit.
pub fn z_bits(model: &serde_json::Value) -> Vec<u64> {
    let z = model["z"].as_array().unwrap();
    z.iter().map(|v| v.as_f64().unwrap().to_bits()).collect()
}

impl Cluster {
    /// Writes `start` as the run file's `[start]` table (the members read it when they start).
    pub fn set_start(&self, start: dpwalk_net::run::StartSpec) {
        let path = self.dir.join("run.toml");
        let mut file: RunFile = toml::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
        file.start = Some(start);
        std::fs::write(&path, toml::to_string(&file).unwrap()).unwrap();
    }

    /// Starts member `i`'s `dpwalk node`, logging to `node-<i>/node.log` (at `info`, or as
    /// `DPWALK_TEST_LOG` says: a `RUST_LOG` filter, to debug a test); `wrap` runs it through
    /// another command (e.g. `ip netns exec NS`).
    pub fn spawn(&self, i: usize, wrap: &[&str]) -> Child {
        let m = &self.members[i];
        let log = std::fs::File::create(m.dir.join("node.log")).unwrap();
        let bin = env!("CARGO_BIN_EXE_dpwalk");
        let mut cmd = match wrap.split_first() {
            Some((first, rest)) => {
                let mut c = Command::new(first);
                c.args(rest).arg(bin);
                c
            }
            None => Command::new(bin),
        };
        cmd.args(["node", "--config"])
            .arg(m.dir.join("node.toml"))
            .env(
                "RUST_LOG",
                std::env::var("DPWALK_TEST_LOG").unwrap_or_else(|_| "info".into()),
            )
            .stdin(Stdio::null())
            .stdout(log.try_clone().unwrap())
            .stderr(log)
            .spawn()
            .unwrap()
    }

    /// Member `i`'s status, if its endpoint answers.
    pub fn status(&self, i: usize) -> Option<Status> {
        fetch_status(&self.members[i].status, Duration::from_secs(2)).ok()
    }

    /// Member `i`'s log so far.
    pub fn log(&self, i: usize) -> String {
        std::fs::read_to_string(self.members[i].dir.join("node.log")).unwrap_or_default()
    }

    /// Member `i`'s `final_model.json`, once written.
    pub fn final_model(&self, i: usize) -> Option<FinalModelFile> {
        FinalModelFile::read(&self.members[i].dir.join("state")).ok()
    }

    /// Waits for every child to exit successfully within `limit`; panics with the logs otherwise.
    pub fn wait_all(&self, children: &mut [(usize, Child)], limit: Duration) {
        let start = Instant::now();
        for (i, child) in children.iter_mut() {
            let left = limit.saturating_sub(start.elapsed());
            let Some(status) = wait_exit(child, left) else {
                panic!("node {i} still running after {limit:?}:\n{}", self.log(*i));
            };
            assert!(
                status.success(),
                "node {i} exited with {status}:\n{}",
                self.log(*i)
            );
        }
    }

    /// The final models of all members agree bit for bit and are at `seq = K`; returns `z`'s bits.
    pub fn agreed_model(&self) -> Vec<u64> {
        let bits = |i: usize| -> Vec<u64> {
            let model = self
                .final_model(i)
                .unwrap_or_else(|| panic!("node {i} has no final model:\n{}", self.log(i)));
            assert_eq!(model.steps, self.steps, "node {i}");
            model.z.iter().map(|v| v.to_bits()).collect()
        };
        let maker = |i: usize| self.final_model(i).map(|m| m.maker_index);
        let first = bits(0);
        assert_eq!(first.len(), self.dimension);
        assert!(maker(0).is_some_and(|m| m < self.members.len()));
        for i in 1..self.members.len() {
            assert_eq!(
                bits(i),
                first,
                "node {i} ended with another model than node 0"
            );
            assert_eq!(maker(i), maker(0), "node {i} names another maker");
        }
        first
    }
}

/// Waits up to `limit` for `child` to exit: its status, or `None` if it is still running.
pub fn wait_exit(child: &mut Child, limit: Duration) -> Option<std::process::ExitStatus> {
    let start = Instant::now();
    while start.elapsed() < limit {
        if let Some(status) = child.try_wait().unwrap() {
            return Some(status);
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    None
}

/// Kills the children left running (a failed test must not leave daemons behind).
#[derive(Debug, Default)]
pub struct Reaper(pub Vec<(usize, Child)>);

impl Drop for Reaper {
    fn drop(&mut self) {
        for (_, c) in &mut self.0 {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}
