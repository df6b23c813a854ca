//! The daemon's learners, passing the token among themselves in-process, end with the simulator's
//! `z` bit for bit: the step, the next hop, the seeding and the final model are shared code. (The
//! same is checked over real sockets in `tests/swarm.rs`; this test isolates the arithmetic.)

#![allow(clippy::expect_used, clippy::unwrap_used)]

use dpwalk_core::data::Dataset;
use dpwalk_core::spec::{LossName, ProblemSpec};
use dpwalk_core::step::Algorithm;
use dpwalk_net::learner::{Learner, NodeStep, Outcome, node_problem};
use dpwalk_net::run::{AlgorithmSpec, MemberSpec, Run, RunFile};
use dpwalk_sim::algorithm::Mode;
use dpwalk_sim::metrics::Evaluator;
use dpwalk_sim::run::{Schedule, run};
use dpwalk_sim::scenario::{self, LoadedScenario};
use dpwalk_sim::simulate;
use std::path::{Path, PathBuf};

const SCENARIO: &str = r#"
seed = 5
users = 5
steps = 200
[data]
source = "synthetic-lasso"
rows = 60
dim = 16
[problem]
loss = "squared"
l1 = 0.01
[topology]
kind = "ring"
[algorithm]
kind = "admm"
mode = "decentralized"
gamma = 1.0
lambda = 0.5
sigma = 0.3
clip = 0.2
"#;

fn keys(n: usize) -> Vec<libp2p::identity::Keypair> {
    (0..n)
        .map(|_| libp2p::identity::Keypair::generate_ed25519())
        .collect()
}

fn temp_dir(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("dpwalk-eq-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    dir
}

/// The scenario as a DP-SGD walk: the ADMM keys replaced by the step size.
fn dp_sgd_scenario() -> String {
    SCENARIO.replace(
        "kind = \"admm\"\nmode = \"decentralized\"\ngamma = 1.0\nlambda = 0.5\n",
        "kind = \"dp-sgd\"\nmode = \"decentralized\"\nlr = 0.2\n",
    )
}

#[test]
fn learners_reproduce_the_simulator_bit_for_bit() {
    learners_reproduce("admm", SCENARIO);
}

#[test]
fn dp_sgd_learners_reproduce_the_simulator_bit_for_bit() {
    let text = dp_sgd_scenario();
    assert!(text.contains("kind = \"dp-sgd\""), "{text}");
    learners_reproduce("dp-sgd", &text);
}

/// Runs the scenario `text` in the simulator and as learners handing the token on in-process;
/// both end with the same `z`, contributions and visits. `name` keeps its files apart.
fn learners_reproduce(name: &str, text: &str) {
    let loaded = LoadedScenario::new(
        scenario::parse(text, Path::new("test"), &[]).unwrap(),
        PathBuf::from("."),
        "eq",
    )
    .expect("the scenario checks");
    let s = loaded.scenario();
    let prepared = simulate::prepare(&loaded).unwrap();
    let point = loaded.points()[0].given().expect("sigma is given");
    let topology = &prepared.topologies[0].topology;
    let evaluator = Evaluator {
        problem: &prepared.problem,
        test: None,
        optimum: &prepared.optimum,
    };
    let schedule = Schedule {
        mode: Mode::Decentralized,
        blocks_per_round: None,
        steps: s.steps,
        eval_every: s.steps,
        run_seed: simulate::repetition_seed(s.seed, 0),
    };
    let algorithm = point.method.walk().expect("a walk");
    let sim = run(
        &prepared.problem,
        topology,
        algorithm,
        &schedule,
        None,
        &evaluator,
        &|_| {},
    )
    .unwrap();

    let n = s.users;
    let keys = keys(n);
    let file = RunFile {
        run_id: "eq".into(),
        seed: s.seed,
        steps: s.steps,
        dimension: prepared.problem.dim(),
        problem: ProblemSpec {
            loss: LossName::Squared,
            classes: None,
            l1: 0.01,
            l2: 0.0,
        },
        algorithm: AlgorithmSpec::of(algorithm, 0.2, Some(0.3)),
        budget: None,
        privacy: None,
        topology: s.topology.clone(),
        start: None,
        members: keys
            .iter()
            .enumerate()
            .map(|(index, key)| MemberSpec {
                index,
                peer_id: key.public().to_peer_id().to_base58(),
                addrs: vec![],
            })
            .collect(),
    };
    let run_ = Run::parse(&toml::to_string(&file).unwrap(), "eq").unwrap();
    assert_eq!(run_.algorithm().as_ref(), Some(algorithm));
    let data = prepared.problem.data();
    let problems: Vec<_> = (0..n)
        .map(|i| {
            let own = Dataset {
                features: data.features(i).to_vec(),
                labels: data.labels(i).to_vec(),
                n_features: data.data.n_features,
                label_kind: data.data.label_kind,
            };
            let mut csv = String::new();
            for (row, label) in own.features.chunks_exact(own.n_features).zip(&own.labels) {
                for v in row {
                    csv.push_str(&format!("{v:?},"));
                }
                csv.push_str(&format!("{label:?}\n"));
            }
            let d = temp_dir(&format!("{name}-csv{i}"));
            std::fs::create_dir_all(&d).unwrap();
            std::fs::write(d.join("data.csv"), csv).unwrap();
            let spec: dpwalk_core::data::DataSpec =
                toml::from_str("source = \"csv\"\npath = \"data.csv\"").unwrap();
            let back = spec.load(&d, 5).unwrap().train;
            let b = |v: &[f64]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
            assert_eq!(b(&back.features), b(&own.features), "features of {i}");
            assert_eq!(b(&back.labels), b(&own.labels), "labels of {i}");
            node_problem(&run_, i, own).unwrap()
        })
        .collect();
    let proxes: Vec<_> = problems
        .iter()
        .map(|p| match algorithm {
            Algorithm::Admm(params) => Some((p.local_prox(params.gamma()).unwrap(), *params)),
            Algorithm::Sgd(_) => None,
        })
        .collect();
    let dir = temp_dir(&format!("{name}-learners"));
    let mut learners: Vec<Learner<'_>> = (0..n)
        .map(|i| {
            Learner::open(
                &run_,
                i,
                &keys[i],
                &problems[i],
                match (algorithm, &proxes[i]) {
                    (Algorithm::Sgd(params), _) => NodeStep::Sgd(*params),
                    (Algorithm::Admm(_), Some((prox, params))) => NodeStep::Admm {
                        prox,
                        params: *params,
                    },
                    (Algorithm::Admm(_), None) => unreachable!("built above"),
                },
                &dir.join(format!("node-{i}")),
                &[],
            )
            .unwrap()
        })
        .collect();
    let start = learners.iter().position(Learner::starts_walk).unwrap();
    let mut holder = start;
    let mut token = learners[holder].initial_token();
    let z = loop {
        match learners[holder].receive(token, None).unwrap() {
            Outcome::Forward(custody) => {
                holder = run_.index_of(&custody.to).unwrap();
                token = custody.token;
            }
            Outcome::Final(model) => break model.z,
        }
    };
    let bits = |v: &[f64]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
    assert_eq!(bits(&z), bits(&sim.z));
    let contributions: u64 = learners.iter().map(|l| l.ledger_records()).sum();
    assert_eq!(contributions, s.steps);
    let per_user: Vec<u64> = learners.iter().map(|l| l.state().contributions).collect();
    assert_eq!(per_user, sim.per_user);
    let _ = std::fs::remove_dir_all(&dir);
}
