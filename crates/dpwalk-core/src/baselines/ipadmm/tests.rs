//! Tests of IPADMM: the inner step against a generic minimizer of its objective, the clipped
//! gradient, the noise scale, convergence without noise, and refusals.

use super::*;
use crate::baselines::test_util::{dist, streams};
use crate::problem::reference::{ReferenceOptions, solve};
use crate::problem::test_util::{any_regularizer, normals, user_data};
use crate::problem::{Loss, Problem};
use crate::rng::node_rng;
use crate::topology::{Graph, TopologyError, generate};
use proptest::prelude::*;
use rand::SeedableRng;

fn settings(l: usize, sigma: f64, clip: f64, eta: EtaSchedule) -> IpadmmSettings {
    IpadmmSettings {
        inner_steps: l,
        rho: 1.0,
        sigma,
        clip,
        eta,
        unit: PrivacyUnit::Record,
    }
}

/// One inner step's subproblem, written term by term as in the paper (neighbour by neighbour,
/// not through the closed form's sums).
struct Subproblem {
    reg: Regularizer,
    g: Vec<f64>,
    dual: Vec<f64>,
    own: Vec<f64>,
    neighbours: Vec<Vec<f64>>,
    x: Vec<f64>,
    rho: f64,
    eta: f64,
}

impl Subproblem {
    /// `⟨g, w⟩ − 2⟨γ, w⟩ + ρ Σ_j ‖w − ½(w̃_i + w̃_j)‖² + (η/2)‖w − x‖² + r(w)`.
    fn value(&self, w: &[f64]) -> f64 {
        let dot = |a: &[f64], b: &[f64]| a.iter().zip(b).map(|(x, y)| x * y).sum::<f64>();
        let mut v = dot(&self.g, w) - 2.0 * dot(&self.dual, w);
        for wj in &self.neighbours {
            let mid: Vec<f64> = self
                .own
                .iter()
                .zip(wj)
                .map(|(a, b)| 0.5 * (a + b))
                .collect();
            v += self.rho * dist(w, &mid).powi(2);
        }
        v + 0.5 * self.eta * dist(w, &self.x).powi(2) + self.reg.value(w)
    }

    /// The gradient of the smooth part (all but `r`), term by term.
    fn smooth_grad(&self, w: &[f64]) -> Vec<f64> {
        let mut out: Vec<f64> = (0..w.len())
            .map(|k| self.g[k] - 2.0 * self.dual[k] + self.eta * (w[k] - self.x[k]))
            .collect();
        for wj in &self.neighbours {
            for k in 0..w.len() {
                out[k] += 2.0 * self.rho * (w[k] - 0.5 * (self.own[k] + wj[k]));
            }
        }
        out
    }

    /// Proximal gradient with step `1/(2L)`, `L = 2ρ·deg + η` (the smooth part's curvature), so
    /// the error halves every iteration: a generic minimizer, blind to the closed form.
    fn minimize_generically(&self) -> Vec<f64> {
        let t = 0.5 / (2.0 * self.rho * self.neighbours.len() as f64 + self.eta);
        let mut w = vec![0.0; self.g.len()];
        let mut v = w.clone();
        for _ in 0..200 {
            let g = self.smooth_grad(&w);
            for k in 0..w.len() {
                v[k] = w[k] - t * g[k];
            }
            self.reg.prox(t, &v, &mut w);
        }
        w
    }
}

proptest! {
    /// The closed form (18), corrected, with `r` through its prox, is the minimizer of the
    /// linearized augmented Lagrangian: it agrees with a generic minimizer to 1e-8, and no
    /// coordinate move of it lowers the objective.
    #[test]
    fn the_inner_step_minimizes_its_subproblem(
        seed in 0u64..10_000,
        degree in 1usize..5,
        reg in any_regularizer(),
        rho in 0.01f64..10.0,
        eta in 0.0f64..10.0,
    ) {
        let d = 4;
        let mut rng = NodeRng::seed_from_u64(seed);
        let sub = Subproblem {
            reg,
            g: normals(&mut rng, d),
            dual: normals(&mut rng, d),
            own: normals(&mut rng, d),
            neighbours: (0..degree).map(|_| normals(&mut rng, d)).collect(),
            x: normals(&mut rng, d),
            rho,
            eta,
        };
        // c̄ by its definition: the mean of the edge midpoints.
        let mid: Vec<f64> = (0..d)
            .map(|k| {
                sub.neighbours.iter().map(|wj| 0.5 * (sub.own[k] + wj[k])).sum::<f64>()
                    / degree as f64
            })
            .collect();
        let mut w = sub.x.clone();
        let mut num = vec![0.0; d];
        Linearized { rho, degree, eta }.minimize(&reg, &sub.g, &sub.dual, &mid, &mut w, &mut num);
        let generic = sub.minimize_generically();
        let scale = 1.0 + w.iter().map(|v| v.abs()).fold(0.0, f64::max);
        prop_assert!(dist(&w, &generic) <= 1e-8 * scale, "{w:?} vs {generic:?}");
        let best = sub.value(&w);
        for k in 0..d {
            for h in [1e-4, -1e-4] {
                let mut moved = w.clone();
                moved[k] += h;
                prop_assert!(sub.value(&moved) >= best - 1e-12 * best.abs().max(1.0));
            }
        }
    }
}

/// With a clip above every record's gradient, `g` is the mean loss gradient; with a tiny clip
/// every record's gradient is scaled to norm `G` before the mean.
#[test]
fn clipped_gradient_is_the_mean_of_clipped_record_gradients() {
    let p = 3;
    let problem = Problem::new(
        Loss::Squared,
        Regularizer::None,
        user_data(5, Loss::Squared, &[4, 0], p),
    )
    .unwrap();
    let x = [0.3, -1.0, 2.0];
    let (mut g, mut record, mut want) = (vec![0.0; p], vec![0.0; p], vec![0.0; p]);
    assert_eq!(
        clipped_loss_grad(&problem, 0, &x, 1e9, &mut g, &mut record),
        0
    );
    problem.user_grad(0, &x, &mut want);
    assert!(dist(&g, &want) < 1e-12);
    let clip = 1e-3;
    assert_eq!(
        clipped_loss_grad(&problem, 0, &x, clip, &mut g, &mut record),
        4
    );
    let data = problem.data();
    let mut by_hand = vec![0.0; p];
    for (a, &b) in data.features(0).chunks_exact(p).zip(data.labels(0)) {
        let r: f64 = a.iter().zip(&x).map(|(u, v)| u * v).sum::<f64>() - b;
        let length = r.abs() * a.iter().map(|v| v * v).sum::<f64>().sqrt();
        for k in 0..p {
            by_hand[k] += r * a[k] * clip / length / 4.0;
        }
    }
    assert!(dist(&g, &by_hand) < 1e-15);
    // No records: no gradient.
    assert_eq!(
        clipped_loss_grad(&problem, 1, &x, clip, &mut g, &mut record),
        0
    );
    assert_eq!(g, vec![0.0; p]);
}

fn logistic_problem(records: &[usize], p: usize) -> Problem {
    Problem::new(
        Loss::Logistic,
        Regularizer::L2 { l2: 0.1 },
        user_data(11, Loss::Logistic, records, p),
    )
    .unwrap()
}

/// With `l = 1` the first broadcast is `w + s·σ·ξ` with `w` the same as without noise: the
/// difference divided by the node's `s·σ` is standard normal. Over 6,000 coordinates its
/// variance is 1 within 5 standard errors (`√(2/N)`); seeded, so deterministic.
#[test]
fn noise_std_is_sigma_times_the_sensitivity() {
    let p = 5;
    let problem = logistic_problem(&[3, 1, 6], p);
    let sigma = 0.7;
    for unit in [PrivacyUnit::Record, PrivacyUnit::User] {
        let params = |sigma| {
            let mut s = settings(1, sigma, 2.0, EtaSchedule::SqrtTotal { eta0: 0.5 });
            s.unit = unit;
            IpadmmParams::new(s).unwrap()
        };
        let topology = Topology::Graph(Graph::unweighted(3, &[(0, 1), (1, 2)]).unwrap());
        let (mut sum_sq, mut count) = (0.0, 0);
        for seed in 0..400u64 {
            let mut noisy = Ipadmm::new(&problem, topology.clone(), params(sigma)).unwrap();
            let mut exact = Ipadmm::new(&problem, topology.clone(), params(0.0)).unwrap();
            let streams = || streams(seed, 3);
            noisy.round(&mut streams()).unwrap();
            exact.round(&mut streams()).unwrap();
            for i in 0..3 {
                let std = sigma * noisy.sensitivity(i, 1, 1);
                let records = problem.data().records(i) as f64;
                let per = if unit == PrivacyUnit::Record {
                    records
                } else {
                    1.0
                };
                let deg = noisy.exchange().degree(i) as f64;
                let want = sigma * 2.0 * 2.0 / ((2.0 * deg + 0.5) * per);
                assert!((std - want).abs() <= 1e-15 * want);
                let (a, b) = (noisy.exchange().broadcast(i), exact.exchange().broadcast(i));
                for (x, y) in a.iter().zip(b) {
                    sum_sq += ((x - y) / std).powi(2);
                    count += 1;
                }
            }
        }
        let var = sum_sq / count as f64;
        let se = (2.0 / count as f64).sqrt();
        assert!((var - 1.0).abs() < 5.0 * se, "{unit:?}: variance {var}");
    }
}

/// Without noise and with an inactive clip, the network average of the broadcasts converges to
/// the minimizer of dpwalk's `F` from the independent reference solver, on a ring and on the
/// complete graph, for a smooth and a non-smooth regularizer; the nodes agree.
#[test]
fn noiseless_runs_converge_to_the_reference_optimum() {
    let p = 3;
    let records = [3, 5, 2, 4, 4];
    let problems = [
        logistic_problem(&records, p),
        Problem::new(
            Loss::Squared,
            Regularizer::L1 { l1: 0.05 },
            user_data(4, Loss::Squared, &records, p),
        )
        .unwrap(),
    ];
    for problem in &problems {
        let reference = solve(problem, &ReferenceOptions::default()).unwrap();
        let scale = 1.0 + reference.x.iter().map(|v| v.abs()).fold(0.0, f64::max);
        for topology in [
            Topology::Graph(generate::ring(5).unwrap()),
            Topology::Complete { n: 5 },
        ] {
            let params =
                IpadmmParams::new(settings(2, 0.0, 1e9, EtaSchedule::Constant { eta: 40.0 }))
                    .unwrap();
            let mut run = Ipadmm::new(problem, topology.clone(), params).unwrap();
            let mut rngs = streams(1, 5);
            for _ in 0..3000 {
                let report = run.round(&mut rngs).unwrap();
                assert_eq!(report.clipped, 0);
                assert_eq!(report.gradients, 2 * records.iter().sum::<usize>());
            }
            let mut avg = vec![0.0; p];
            run.exchange().average(&mut avg).unwrap();
            let err = dist(&avg, &reference.x);
            assert!(
                err <= 1e-8 * scale,
                "{:?} on {topology:?}: ‖x − x*‖ = {err:e}",
                problem.loss()
            );
            assert!(run.exchange().consensus_gap() <= 1e-8 * scale);
            assert_eq!(run.rounds(), 3000);
        }
    }
}

/// With `l = 1` a round's only inner iterate is the broadcast, so the theorem's output (22) at a
/// node is the mean of its broadcasts before each round (starting from 0).
#[test]
fn inner_average_is_the_mean_of_the_inner_iterates() {
    let problem = logistic_problem(&[2, 3, 1], 2);
    let params =
        IpadmmParams::new(settings(1, 0.5, 1.0, EtaSchedule::SqrtTotal { eta0: 1.0 })).unwrap();
    let mut run = Ipadmm::new(&problem, Topology::Complete { n: 3 }, params).unwrap();
    let mut rngs = streams(9, 3);
    let mut sum = [0.0; 2];
    let mut got = [0.0; 2];
    for rounds in 1..=5 {
        for (s, &b) in sum.iter_mut().zip(run.exchange().broadcast(2)) {
            *s += b;
        }
        run.round(&mut rngs).unwrap();
        run.inner_average(2, &mut got).unwrap();
        let want: Vec<f64> = sum.iter().map(|s| s / rounds as f64).collect();
        assert!(dist(&got, &want) <= 1e-15, "{got:?} vs {want:?}");
    }
}

#[test]
fn schedules_follow_their_formulas() {
    let problem = logistic_problem(&[2, 8], 3);
    let topology = Topology::Complete { n: 2 };
    let run = |eta| {
        Ipadmm::new(
            &problem,
            topology.clone(),
            IpadmmParams::new(settings(4, 1.0, 0.5, eta)).unwrap(),
        )
        .unwrap()
    };
    let sqrt = run(EtaSchedule::SqrtTotal { eta0: 0.3 });
    assert_eq!(sqrt.eta(1, 1, 1), 0.3);
    assert_eq!(sqrt.eta(1, 3, 2), 0.3 * 10f64.sqrt());
    assert_eq!(run(EtaSchedule::Constant { eta: 2.5 }).eta(0, 7, 3), 2.5);
    let (dw, c2, c0, eps, delta, t) = (2.0, 3.0, 0.8, 1.5, 1e-5, 100);
    let paper = run(EtaSchedule::Paper(PaperEta {
        domain_diameter: dw,
        objective_lipschitz: c2,
        c0,
        epsilon: eps,
        delta,
        rounds: t,
    }));
    for (node, m) in [(0usize, 2.0f64), (1, 8.0)] {
        let inner = (c2 / 2.0f64).powi(2)
            + 3.0 * (c0 * 0.5f64).powi(2) * (t * 4) as f64 * 8.0 * (1.25 / delta).ln()
                / (eps * eps * m * m);
        let want = (2.0 * 5.0 * 3.0f64).sqrt() / dw * inner.sqrt();
        assert!((paper.eta(node, 5, 3) - want).abs() <= 1e-12 * want);
    }
    // The sensitivity at that η, record level.
    let s = paper.sensitivity(1, 5, 3);
    assert_eq!(s, 2.0 * 0.5 / ((2.0 + paper.eta(1, 5, 3)) * 8.0));
    assert_eq!(
        inner_step_sensitivity(1.0, 1.0, 3, 1.0, PrivacyUnit::User, 0),
        0.0
    );
}

#[test]
fn bad_parameters_are_refused_with_the_reason() {
    let ok = settings(1, 1.0, 1.0, EtaSchedule::SqrtTotal { eta0: 1.0 });
    let with = |f: &dyn Fn(&mut IpadmmSettings)| {
        let mut s = ok;
        f(&mut s);
        IpadmmParams::new(s)
    };
    assert!(IpadmmParams::new(ok).is_ok());
    assert_eq!(with(&|s| s.inner_steps = 0), Err(IpadmmError::InnerSteps));
    assert_eq!(with(&|s| s.rho = 0.0), Err(IpadmmError::Rho(0.0)));
    assert!(matches!(
        with(&|s| s.rho = f64::NAN),
        Err(IpadmmError::Rho(_))
    ));
    assert_eq!(with(&|s| s.sigma = -1.0), Err(IpadmmError::Sigma(-1.0)));
    assert!(matches!(
        with(&|s| s.sigma = f64::NAN),
        Err(IpadmmError::Sigma(_))
    ));
    assert!(matches!(
        with(&|s| s.sigma = f64::INFINITY),
        Err(IpadmmError::Sigma(_))
    ));
    assert_eq!(with(&|s| s.clip = 0.0), Err(IpadmmError::Clip(0.0)));
    assert!(matches!(
        with(&|s| s.eta = EtaSchedule::SqrtTotal { eta0: f64::NAN }),
        Err(IpadmmError::Eta { name: "eta0", .. })
    ));
    assert!(matches!(
        with(&|s| s.eta = EtaSchedule::Constant { eta: -1.0 }),
        Err(IpadmmError::Eta { name: "eta", .. })
    ));
    let paper = PaperEta {
        domain_diameter: 1.0,
        objective_lipschitz: 1.0,
        c0: 1.0,
        epsilon: 1.0,
        delta: 1e-5,
        rounds: 10,
    };
    let with_paper = |f: &dyn Fn(&mut PaperEta)| {
        let mut e = paper;
        f(&mut e);
        with(&|s| s.eta = EtaSchedule::Paper(e))
    };
    assert!(with_paper(&|_| ()).is_ok());
    type Mutation<'a> = (&'static str, &'a dyn Fn(&mut PaperEta));
    let bad: [Mutation<'_>; 5] = [
        ("domain_diameter", &|e| e.domain_diameter = 0.0),
        ("objective_lipschitz", &|e| e.objective_lipschitz = -1.0),
        ("c0", &|e| e.c0 = f64::INFINITY),
        ("delta", &|e| e.delta = 1.0),
        ("epsilon", &|e| e.epsilon = f64::NAN),
    ];
    for (name, f) in bad {
        assert!(
            matches!(with_paper(f), Err(IpadmmError::Eta { name: n, .. }) if n == name),
            "{name}"
        );
    }
    assert_eq!(with_paper(&|e| e.rounds = 0), Err(IpadmmError::Rounds));

    // Graphs the method cannot run on, and the paper's schedule on a node without records.
    let problem = logistic_problem(&[2, 0, 3, 1], 2);
    let params = IpadmmParams::new(ok).unwrap();
    let split = Graph::unweighted(4, &[(0, 1), (2, 3)]).unwrap();
    let err = Ipadmm::new(&problem, Topology::Graph(split), params).unwrap_err();
    assert!(matches!(
        err,
        IpadmmError::Network(NetworkError::Graph(TopologyError::Disconnected { .. }))
    ));
    assert!(err.to_string().contains("connected graph"), "{err}");
    assert!(matches!(
        Ipadmm::new(&problem, Topology::Complete { n: 3 }, params),
        Err(IpadmmError::Network(NetworkError::Nodes {
            nodes: 3,
            users: 4
        }))
    ));
    let paper_params = with(&|s| s.eta = EtaSchedule::Paper(paper)).unwrap();
    assert_eq!(
        Ipadmm::new(&problem, Topology::Complete { n: 4 }, paper_params).unwrap_err(),
        IpadmmError::EmptyNode { node: 1 }
    );
    let mut run = Ipadmm::new(&problem, Topology::Complete { n: 4 }, params).unwrap();
    let mut too_few = vec![node_rng(1, 0)];
    assert!(matches!(
        run.round(&mut too_few),
        Err(IpadmmError::Network(NetworkError::Streams {
            nodes: 4,
            streams: 1
        }))
    ));
    assert_eq!(run.rounds(), 0);
}
