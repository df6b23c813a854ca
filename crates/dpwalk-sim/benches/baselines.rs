//! Throughput of the seed baselines and federated DP-SGD beside the walk (BENCHMARKS.md, "Seed
//! baselines"): rounds of every algorithm on the walk bench's Lasso data (1,000 users with one
//! record each, p = 64; complete graph), counted in user updates so that a round of `n` updates
//! compares with `n` hops of the walk (`walk::lasso_p64`). Penalty perturbation needs the
//! logistic loss: it runs on synthetic logistic data of the same size, rows of norm ≤ 1, on a
//! random 4-regular graph, beside IPADMM on the same data and graph.
//!
//! `cargo bench -p dpwalk-sim --bench baselines`

// A benchmark whose fixed set-up fails has nothing to measure: aborting is the right answer.
#![allow(clippy::expect_used, clippy::unwrap_used)]

use divan::Bencher;
use divan::counter::ItemsCount;
use dpwalk_core::baselines::dp_iadmm::{
    Decay, DpIadmm, DpIadmmParams, RhoSchedule, TrustNorm, Variant,
};
use dpwalk_core::baselines::fed_sgd::FedSgd;
use dpwalk_core::baselines::ipadmm::{
    EtaSchedule, Ipadmm, IpadmmParams, IpadmmSettings, PrivacyUnit,
};
use dpwalk_core::baselines::pp_admm::{PpAdmm, PpParams, PpSettings};
use dpwalk_core::data::partition;
use dpwalk_core::data::synthetic::{LassoSpec, LogisticSpec, lasso, logistic};
use dpwalk_core::params::SgdParams;
use dpwalk_core::problem::{Loss, Problem, Regularizer};
use dpwalk_core::rng::{NodeRng, node_rng};
use dpwalk_core::topology::{Topology, TopologyKind, TopologySpec};

fn main() {
    divan::main();
}

const USERS: usize = 1000;
const ROUNDS: usize = 20;

fn lasso_problem() -> Problem {
    let spec = LassoSpec {
        rows: USERS,
        dim: 64,
        ..LassoSpec::default()
    };
    let data = lasso(&spec, &mut node_rng(1, 0)).expect("data").data;
    let users = partition::iid(&data, USERS, &mut node_rng(2, 0)).expect("partition");
    Problem::new(Loss::Squared, Regularizer::L1 { l1: 1e-3 }, users).expect("problem")
}

fn logistic_problem() -> Problem {
    let spec = LogisticSpec {
        rows: USERS,
        dim: 64,
        ..LogisticSpec::default()
    };
    let data = logistic(&spec, &mut node_rng(1, 0)).expect("data").data;
    let users = partition::iid(&data, USERS, &mut node_rng(2, 0)).expect("partition");
    Problem::new(Loss::Logistic, Regularizer::L2 { l2: 1e-3 }, users).expect("problem")
}

fn rngs() -> Vec<NodeRng> {
    (0..USERS as u64).map(|i| node_rng(9, i)).collect()
}

fn regular() -> Topology {
    let mut spec = TopologySpec::new(TopologyKind::RandomRegular);
    spec.degree = Some(4);
    spec.build(Some(USERS), std::path::Path::new("."), 3)
        .expect("graph")
}

/// Runs `ROUNDS` rounds of `round`, counted in user updates.
fn rounds(b: Bencher, mut round: impl FnMut(&mut [NodeRng])) {
    let mut rngs = rngs();
    b.counter(ItemsCount::new(ROUNDS * USERS)).bench_local(|| {
        for _ in 0..ROUNDS {
            round(&mut rngs);
        }
    });
}

#[divan::bench(sample_count = 10)]
fn fed_sgd_lasso_p64(b: Bencher) {
    let problem = lasso_problem();
    let params = SgdParams::new(0.01, 0.5, Some(0.1)).unwrap();
    let mut run = FedSgd::new(params, USERS, 64).unwrap();
    rounds(b, |r| {
        run.round(&problem, r).unwrap();
    });
}

#[divan::bench(sample_count = 10, args = ["objt", "objp"])]
fn dp_iadmm_lasso_p64(b: Bencher, variant: &str) {
    let problem = lasso_problem();
    let variant = match variant {
        "objt" => Variant::Trust {
            radius: Decay::new(1.0, 0.0).unwrap(),
            norm: TrustNorm::Linf,
        },
        _ => Variant::Prox {
            eta: Decay::new(1.0, 0.5).unwrap(),
        },
    };
    let rho = RhoSchedule::constant(1.0).unwrap();
    let params = DpIadmmParams::new(variant, rho, 0.01, Some(0.1)).unwrap();
    let mut run = DpIadmm::new(params, USERS, 64).unwrap();
    rounds(b, |r| {
        run.round(&problem, r).unwrap();
    });
}

fn ipadmm(b: Bencher, problem: &Problem, topology: Topology, l: usize) {
    let params = IpadmmParams::new(IpadmmSettings {
        inner_steps: l,
        rho: 1.0,
        sigma: 0.5,
        clip: 0.1,
        eta: EtaSchedule::Constant { eta: 1.0 },
        unit: PrivacyUnit::User,
    })
    .unwrap();
    let mut run = Ipadmm::new(problem, topology, params).unwrap();
    rounds(b, |r| {
        run.round(r).unwrap();
    });
}

#[divan::bench(sample_count = 10, args = [1, 5])]
fn ipadmm_lasso_p64_complete(b: Bencher, l: usize) {
    let problem = lasso_problem();
    ipadmm(b, &problem, Topology::Complete { n: USERS }, l);
}

#[divan::bench(sample_count = 10)]
fn ipadmm_logistic_p64_regular4(b: Bencher) {
    let problem = logistic_problem();
    ipadmm(b, &problem, regular(), 1);
}

#[divan::bench(sample_count = 10)]
fn pp_admm_logistic_p64_regular4(b: Bencher) {
    let problem = logistic_problem();
    let params = PpParams::new(PpSettings {
        theta: 1.0,
        growth: 1.0,
        eta_max: 1.0,
        nu: 50.0,
        kappa: 0.0,
    })
    .unwrap();
    let mut run = PpAdmm::new(&problem, regular(), params).unwrap();
    rounds(b, |r| {
        run.round(r).unwrap();
    });
}
