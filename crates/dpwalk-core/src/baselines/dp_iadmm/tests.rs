//! DP-IADMM: the closed forms against a brute-force minimizer of the subproblem as written, a
//! non-private run against the reference optimum, the sensitivity against replaced records, and
//! the refusals.

use super::update::{Subproblem, l2_trust_update, linf_trust_update, prox_update};
use super::*;
use crate::baselines::federated::FederatedError;
use crate::params::ParamError;
use crate::problem::reference::{ReferenceOptions, solve};
use crate::problem::test_util::user_data;
use crate::problem::{Loss, Regularizer};
use crate::rng::node_rng;
use proptest::prelude::*;
use proptest::test_runner::RngSeed;

/// One coordinate of an agent's subproblem, written from its objective (module docs of
/// `update`): `φ(z) = (g − λ) z + ω (l1 |z| + l2 z²/2) + (ρ/2)(w − z)² + (κ/2)(z − c)²`, where
/// the last term is ObjP's proximal term (`κ = 1/η`) or the ℓ₂ trust region's multiplier (`κ = μ`).
#[derive(Debug, Clone, Copy)]
struct Coordinate {
    g: f64,
    lambda: f64,
    w: f64,
    c: f64,
    kappa: f64,
}

/// `l1`, `l2`, `ω`, `ρ` of a brute-force subproblem.
#[derive(Debug, Clone, Copy)]
struct Weights {
    l1: f64,
    l2: f64,
    omega: f64,
    rho: f64,
}

impl Coordinate {
    /// The right derivative of `φ` at `z` (`|z|`'s right derivative at 0 is +1).
    fn right_derivative(&self, k: &Weights, z: f64) -> f64 {
        let sign = if z >= 0.0 { 1.0 } else { -1.0 };
        self.g - self.lambda + k.omega * (k.l1 * sign + k.l2 * z) - k.rho * (self.w - z)
            + self.kappa * (z - self.c)
    }

    /// The minimizer of the convex `φ` over `[lo, hi]`, by bisection on the sign of its right
    /// derivative (non-decreasing), to the last bit.
    fn minimize(&self, k: &Weights, mut lo: f64, mut hi: f64) -> f64 {
        if self.right_derivative(k, lo) >= 0.0 {
            return lo;
        }
        if self.right_derivative(k, hi) < 0.0 {
            return hi;
        }
        loop {
            let mid = 0.5 * (lo + hi);
            if mid <= lo || mid >= hi {
                return hi;
            }
            if self.right_derivative(k, mid) < 0.0 {
                lo = mid;
            } else {
                hi = mid;
            }
        }
    }
}

/// A wide interval that holds every minimizer of the tests' instances.
const WIDE: f64 = 1e6;

/// Brute force of ObjP and ObjT-ℓ∞, coordinate by coordinate (both are separable).
fn brute_separable(
    k: &Weights,
    s: &Subproblem<'_>,
    z_t: &[f64],
    kappa: f64,
    radius: Option<f64>,
) -> Vec<f64> {
    (0..z_t.len())
        .map(|i| {
            let c = Coordinate {
                g: s.g[i],
                lambda: s.lambda[i],
                w: s.w[i],
                c: z_t[i],
                kappa,
            };
            match radius {
                Some(d) => c.minimize(k, z_t[i] - d, z_t[i] + d),
                None => c.minimize(k, -WIDE, WIDE),
            }
        })
        .collect()
}

/// Brute force of ObjT-ℓ₂: the Lagrangian's minimizer for a multiplier μ is separable (each
/// coordinate by bisection), and μ is found by bisection on the (non-increasing) distance to the
/// center until it equals the radius.
fn brute_l2_trust(k: &Weights, s: &Subproblem<'_>, z_t: &[f64], radius: f64) -> Vec<f64> {
    let at = |mu: f64| brute_separable(k, s, z_t, mu, None);
    let dist = |z: &[f64]| {
        z.iter()
            .zip(z_t)
            .map(|(a, b)| (a - b) * (a - b))
            .sum::<f64>()
            .sqrt()
    };
    let z0 = at(0.0);
    if dist(&z0) <= radius {
        return z0;
    }
    let (mut lo, mut hi) = (0.0, 1.0);
    while dist(&at(hi)) > radius {
        lo = hi;
        hi *= 2.0;
    }
    for _ in 0..200 {
        let mid = 0.5 * (lo + hi);
        if dist(&at(mid)) > radius {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    at(hi)
}

/// Random instances of an agent's subproblem.
fn instance() -> impl Strategy<Value = (Weights, Vec<[f64; 4]>, f64)> {
    let weight = prop_oneof![Just(0.0), 1e-3f64..3.0];
    (
        weight.clone(),
        weight,
        0.01f64..1.0,
        0.05f64..50.0,
        proptest::collection::vec(proptest::array::uniform4(-5.0f64..5.0), 1..8),
        1e-3f64..5.0,
    )
        .prop_map(|(l1, l2, omega, rho, coords, step)| {
            (Weights { l1, l2, omega, rho }, coords, step)
        })
}

/// Splits `[g, λ, w, z_t]` rows into vectors.
fn columns(coords: &[[f64; 4]]) -> [Vec<f64>; 4] {
    [0, 1, 2, 3].map(|j| coords.iter().map(|c| c[j]).collect())
}

/// `|a − b| ≤ radius`, up to the rounding of `b ± radius`.
fn within_box(a: f64, b: f64, radius: f64) -> bool {
    (a - b).abs() <= radius + 2.0 * f64::EPSILON * (b.abs() + radius)
}

fn assert_close(got: &[f64], want: &[f64], what: &str) {
    for (i, (a, b)) in got.iter().zip(want).enumerate() {
        assert!(
            (a - b).abs() <= 1e-8 * (1.0 + b.abs()),
            "{what}, coordinate {i}: closed form {a} vs brute force {b}"
        );
    }
}

proptest! {
    // A fixed seed: the same cases on every run and machine.
    #![proptest_config(ProptestConfig {
        rng_seed: RngSeed::Fixed(0x5eed),
        ..ProptestConfig::default()
    })]

    /// ObjP (8): the closed form is the subproblem's minimizer, with `r` kept exact.
    #[test]
    fn prox_update_minimizes_its_subproblem((k, coords, eta) in instance()) {
        let [g, lambda, w, z_t] = columns(&coords);
        let reg = Regularizer::ElasticNet { l1: k.l1, l2: k.l2 };
        let s = Subproblem { reg: &reg, omega: k.omega, rho: k.rho, w: &w, lambda: &lambda, g: &g };
        let mut z = z_t.clone();
        let mut zhat = vec![0.0; z.len()];
        prox_update(&s, eta, &mut z, &mut zhat);
        assert_close(&z, &brute_separable(&k, &s, &z_t, 1.0 / eta, None), "ObjP");
    }

    /// ObjT (9) with the ℓ∞ trust region: the closed form is the constrained minimizer.
    #[test]
    fn linf_trust_update_minimizes_its_subproblem((k, coords, radius) in instance()) {
        let [g, lambda, w, z_t] = columns(&coords);
        let reg = Regularizer::ElasticNet { l1: k.l1, l2: k.l2 };
        let s = Subproblem { reg: &reg, omega: k.omega, rho: k.rho, w: &w, lambda: &lambda, g: &g };
        let mut z = z_t.clone();
        let (mut zhat, mut v) = (vec![0.0; z.len()], vec![0.0; z.len()]);
        linf_trust_update(&s, radius, &mut z, &mut zhat, &mut v);
        assert_close(&z, &brute_separable(&k, &s, &z_t, 0.0, Some(radius)), "ObjT-linf");
        prop_assert!(z.iter().zip(&z_t).all(|(&a, &b)| within_box(a, b, radius)));
    }

    /// ObjT (9) with the ℓ₂ trust region of (6b): the closed form (bisection on the multiplier)
    /// is the constrained minimizer and stays inside the region.
    #[test]
    fn l2_trust_update_minimizes_its_subproblem((k, coords, radius) in instance()) {
        let [g, lambda, w, z_t] = columns(&coords);
        let reg = Regularizer::ElasticNet { l1: k.l1, l2: k.l2 };
        let s = Subproblem { reg: &reg, omega: k.omega, rho: k.rho, w: &w, lambda: &lambda, g: &g };
        let mut z = z_t.clone();
        let n = z.len();
        let (mut zhat, mut center, mut v) = (vec![0.0; n], vec![0.0; n], vec![0.0; n]);
        l2_trust_update(&s, radius, &mut z, &mut zhat, &mut center, &mut v);
        assert_close(&z, &brute_l2_trust(&k, &s, &z_t, radius), "ObjT-l2");
        let dist = z.iter().zip(&z_t).map(|(a, b)| (a - b) * (a - b)).sum::<f64>().sqrt();
        prop_assert!(dist <= radius, "{dist} > {radius}");
    }

    /// The ℓ₁ sensitivity bounds what one replaced record (record level) or a whole replaced
    /// user (user level) changes in the clipped gradient `g_p`, whatever the data and the point.
    #[test]
    fn sensitivity_bounds_a_replaced_record(
        seed in 0u64..1_000,
        m in 1usize..6,
        clip in 1e-3f64..5.0,
        scale in 0.1f64..30.0,
        logistic in any::<bool>(),
    ) {
        let (loss, p, n) = (if logistic { Loss::Logistic } else { Loss::Squared }, 4, 3);
        let data = user_data(seed, loss, &[m, m, m], p);
        let mut replaced = user_data(seed + 1, loss, &[m, m, m], p);
        // Neighbours: user 1's first record replaced (record level), or all of it (user level).
        let mut one = data.clone();
        let row = data.offsets[1];
        one.data.features[row * p..(row + 1) * p]
            .iter_mut()
            .for_each(|v| *v *= scale);
        one.data.labels[row] = replaced.data.labels[row];
        replaced.data.features.iter_mut().for_each(|v| *v *= scale);
        let reg = Regularizer::L1 { l1: 0.1 };
        let x: Vec<f64> = (0..p).map(|i| (i as f64 - 1.5) * scale).collect();
        let grad = |d| {
            let problem = Problem::new(loss, reg, d).unwrap();
            let (mut g, mut rec) = (vec![0.0; p], vec![0.0; p]);
            problem.l1_clipped_user_grad(1, &x, Some(clip), &mut g, &mut rec).unwrap();
            g.iter().map(|v| v / n as f64).collect::<Vec<f64>>()
        };
        let base = grad(data);
        let l1 = |other: &[f64]| base.iter().zip(other).map(|(a, b)| (a - b).abs()).sum::<f64>();
        let record = l1_sensitivity(clip, PrivacyUnit::Record, n, m);
        let user = l1_sensitivity(clip, PrivacyUnit::User, n, m);
        prop_assert!(l1(&grad(one)) <= record * (1.0 + 1e-12));
        prop_assert!(l1(&grad(replaced)) <= user * (1.0 + 1e-12));
    }
}

#[test]
fn sensitivity_values() {
    assert!((l1_sensitivity(1.5, PrivacyUnit::User, 10, 7) - 0.3).abs() < 1e-16);
    assert!((l1_sensitivity(1.5, PrivacyUnit::Record, 10, 3) - 0.1).abs() < 1e-16);
    assert_eq!(l1_sensitivity(1.5, PrivacyUnit::Record, 10, 0), 0.0);
}

/// A validated problem on `user_data(seed, loss, records, p)`.
fn problem(loss: Loss, reg: Regularizer, seed: u64, records: &[usize], p: usize) -> Problem {
    Problem::new(loss, reg, user_data(seed, loss, records, p)).unwrap()
}

/// The streams of agents `0..n` of the run seeded by `seed`.
fn streams(seed: u64, n: usize) -> Vec<NodeRng> {
    (0..n as u64).map(|i| node_rng(seed, i)).collect()
}

/// ObjT, ℓ∞, constant radius and ρ = 1, with noise `b` and clip `G₁`.
fn linf_params(radius: f64, noise: f64, clip: f64) -> DpIadmmParams {
    let variant = Variant::Trust {
        radius: Decay::new(radius, 0.0).unwrap(),
        norm: TrustNorm::Linf,
    };
    DpIadmmParams::new(
        variant,
        RhoSchedule::constant(1.0).unwrap(),
        noise,
        Some(clip),
    )
    .unwrap()
}

/// Runs `rounds` non-private rounds (b = 0, no clip) of `variant` on `problem`.
fn run(problem: &Problem, variant: Variant, rho: f64, rounds: u64) -> DpIadmm {
    let params =
        DpIadmmParams::new(variant, RhoSchedule::constant(rho).unwrap(), 0.0, None).unwrap();
    let n = problem.n_users();
    let mut state = DpIadmm::new(params, n, problem.dim()).unwrap();
    let mut rngs: Vec<NodeRng> = streams(1, n);
    for _ in 0..rounds {
        state.round(problem, &mut rngs).unwrap();
    }
    state
}

/// `max_k |a_k − b_k|`.
fn max_diff(a: &[f64], b: &[f64]) -> f64 {
    a.iter()
        .zip(b)
        .map(|(x, y)| (x - y).abs())
        .fold(0.0, f64::max)
}

/// Without noise and clip, every variant converges to the minimizer of dpwalk's objective `F`
/// computed by the reference solver: this pins the scaling (`f_p = (1/n)(f_p^mean + r)`, `r` kept
/// exact with weight `1/n`), on unequal partitions where the paper's `1/I` weighting would differ.
#[test]
fn non_private_runs_reach_the_reference_optimum() {
    let cases = [
        (
            Loss::Squared,
            Regularizer::L1 { l1: 0.2 },
            &[6, 10, 15, 9][..],
        ),
        (
            Loss::Logistic,
            Regularizer::ElasticNet { l1: 0.02, l2: 0.1 },
            &[12, 20, 8][..],
        ),
    ];
    for (loss, reg, records) in cases {
        let problem = problem(loss, reg, 11, records, 5);
        let reference = solve(&problem, &ReferenceOptions::default()).unwrap();
        let constant = |a| Decay::new(a, 0.0).unwrap();
        let variants = [
            ("ObjP", Variant::Prox { eta: constant(1.0) }),
            (
                "ObjT-linf",
                Variant::Trust {
                    radius: constant(1.0),
                    norm: TrustNorm::Linf,
                },
            ),
            (
                "ObjT-l2",
                Variant::Trust {
                    radius: constant(1.0),
                    norm: TrustNorm::L2,
                },
            ),
        ];
        for (name, variant) in variants {
            let state = run(&problem, variant, 2.0, 3_000);
            let w = state.model();
            let gap = problem.objective(w) - reference.objective;
            assert!(
                max_diff(w, &reference.x) <= 1e-8,
                "{loss:?} {name}: w = {w:?}, optimum {:?}",
                reference.x
            );
            assert!(
                gap.abs() <= 1e-10 * reference.objective.abs().max(1.0),
                "{name}: gap {gap}"
            );
            for agent in state.agents() {
                assert!(max_diff(agent.z(), w) <= 1e-8, "{name}: consensus");
            }
        }
    }
}

/// ObjP with the paper's own schedules (η = 1/√t and a growing ρ) still heads for the optimum:
/// slowly (η shrinks), so only a coarse tolerance is asked.
#[test]
fn paper_schedules_approach_the_optimum() {
    let problem = problem(
        Loss::Squared,
        Regularizer::L1 { l1: 0.2 },
        5,
        &[10, 10, 10],
        4,
    );
    let reference = solve(&problem, &ReferenceOptions::default()).unwrap();
    let prox = Variant::Prox {
        eta: Decay::new(1.0, 0.5).unwrap(),
    };
    let params =
        DpIadmmParams::new(prox, RhoSchedule::new(2.0, 0.5, 500).unwrap(), 0.0, None).unwrap();
    let mut state = DpIadmm::new(params, 3, problem.dim()).unwrap();
    let mut rngs: Vec<NodeRng> = streams(2, 3);
    for _ in 0..2_000 {
        state.round(&problem, &mut rngs).unwrap();
    }
    let gap = problem.objective(state.model()) - reference.objective;
    assert!(gap.abs() <= 1e-3 * reference.objective, "gap {gap}");
}

/// Same seeds, same bits; the noise comes from each agent's own stream, `d` uniforms per round.
#[test]
fn noisy_runs_are_reproducible_and_use_each_agent_s_stream() {
    let problem = problem(Loss::Logistic, Regularizer::L2 { l2: 0.1 }, 3, &[5, 7], 4);
    let params = linf_params(1.0, 0.05, 0.5);
    let go = || {
        let mut state = DpIadmm::new(params, 2, 4).unwrap();
        let mut rngs: Vec<NodeRng> = streams(9, 2);
        let mut clipped = 0;
        for _ in 0..20 {
            clipped += state.round(&problem, &mut rngs).unwrap().clipped;
        }
        (state.model().to_vec(), rngs, clipped)
    };
    let (a, rngs_a, clipped) = go();
    let (b, _, _) = go();
    assert_eq!(a, b);
    assert!(
        clipped > 0,
        "a clip of 0.5 in l1 binds on Gaussian features"
    );
    // 20 rounds of 4 Open01 samples, one 64-bit word (two 32-bit words) each.
    for rng in &rngs_a {
        assert_eq!(rng.get_word_pos(), 20 * 4 * 2);
    }
}

/// ObjT's ℓ∞ trust region caps how far a noisy round moves an agent, whatever the noise.
#[test]
fn the_trust_region_caps_each_move() {
    let problem = problem(Loss::Squared, Regularizer::None, 4, &[4, 4], 3);
    let radius = 0.01;
    let params = linf_params(radius, 100.0, 1.0);
    let mut state = DpIadmm::new(params, 2, 3).unwrap();
    let mut rngs: Vec<NodeRng> = streams(4, 2);
    for _ in 0..10 {
        let before: Vec<Vec<f64>> = state.agents().iter().map(|a| a.z().to_vec()).collect();
        state.round(&problem, &mut rngs).unwrap();
        for (agent, z) in state.agents().iter().zip(&before) {
            assert!(
                agent
                    .z()
                    .iter()
                    .zip(z)
                    .all(|(&a, &b)| within_box(a, b, radius))
            );
        }
    }
}

#[test]
fn schedules() {
    let rho = RhoSchedule::new(2.0, 5.0, 10).unwrap();
    assert_eq!(rho.at(9), 7.0);
    assert!((rho.at(10) - (2.0 * 1.2 + 5.0)).abs() < 1e-15);
    assert_eq!(rho.at(u64::MAX), RHO_CAP);
    assert_eq!(RhoSchedule::constant(3.0).unwrap().at(u64::MAX), 3.0);
    let eta = Decay::new(2.0, 0.5).unwrap();
    assert_eq!(eta.at(1), 2.0);
    assert_eq!(eta.at(4), 1.0);
    assert_eq!(Decay::new(1.0, 2.0).unwrap().at(10), 0.01);
}

#[test]
fn bad_parameters_are_refused_with_the_reason() {
    assert_eq!(
        RhoSchedule::new(-1.0, 1.0, 1),
        Err(DpIadmmError::Rho { c1: -1.0, c2: 1.0 })
    );
    assert!(matches!(
        RhoSchedule::new(0.0, 0.0, 1),
        Err(DpIadmmError::Rho { .. })
    ));
    assert!(matches!(
        RhoSchedule::new(f64::NAN, 1.0, 1),
        Err(DpIadmmError::Rho { .. })
    ));
    assert_eq!(RhoSchedule::new(1.0, 0.0, 0), Err(DpIadmmError::RhoPeriod));
    assert_eq!(
        RhoSchedule::constant(0.0),
        Err(DpIadmmError::Rho { c1: 0.0, c2: 0.0 })
    );
    assert_eq!(Decay::new(0.0, 1.0), Err(DpIadmmError::DecayScale(0.0)));
    assert_eq!(Decay::new(-2.0, 1.0), Err(DpIadmmError::DecayScale(-2.0)));
    assert_eq!(Decay::new(1.0, -0.5), Err(DpIadmmError::DecayPower(-0.5)));
    assert!(matches!(
        Decay::new(1.0, f64::INFINITY),
        Err(DpIadmmError::DecayPower(_))
    ));
    let variant = Variant::Prox {
        eta: Decay::new(1.0, 0.5).unwrap(),
    };
    let rho = RhoSchedule::constant(1.0).unwrap();
    assert_eq!(
        DpIadmmParams::new(variant, rho, -0.1, Some(1.0)),
        Err(DpIadmmError::Noise(-0.1))
    );
    assert!(matches!(
        DpIadmmParams::new(variant, rho, f64::NAN, Some(1.0)),
        Err(DpIadmmError::Noise(_))
    ));
    assert_eq!(
        DpIadmmParams::new(variant, rho, 1.0, Some(0.0)),
        Err(DpIadmmError::Clip(ParamError::Clip(0.0)))
    );
    let no_clip = DpIadmmParams::new(variant, rho, 1.0, None);
    assert_eq!(no_clip, Err(DpIadmmError::NoiseWithoutClip(1.0)));
    assert!(no_clip.unwrap_err().to_string().contains("set a clip"));
    let params = DpIadmmParams::new(variant, rho, 0.0, None).unwrap();
    assert_eq!(
        DpIadmm::new(params, 0, 3).unwrap_err(),
        DpIadmmError::Federated(FederatedError::NoAgents)
    );
}

/// A run that does not fit its problem or streams is refused before anything changes.
#[test]
fn mismatched_runs_are_refused_without_a_change() {
    let problem = problem(Loss::Squared, Regularizer::None, 1, &[3, 3], 4);
    let variant = Variant::Prox {
        eta: Decay::new(1.0, 0.5).unwrap(),
    };
    let params =
        DpIadmmParams::new(variant, RhoSchedule::constant(1.0).unwrap(), 0.1, Some(1.0)).unwrap();
    let mut rngs: Vec<NodeRng> = streams(1, 2);
    let mut three = DpIadmm::new(params, 3, 4).unwrap();
    assert_eq!(
        three.round(&problem, &mut rngs).unwrap_err(),
        DpIadmmError::Federated(FederatedError::Agents {
            agents: 3,
            users: 2
        })
    );
    let mut wide = DpIadmm::new(params, 2, 5).unwrap();
    assert!(matches!(
        wide.round(&problem, &mut rngs).unwrap_err(),
        DpIadmmError::Federated(FederatedError::Problem(ProblemError::Length {
            expected: 4,
            got: 5,
            ..
        }))
    ));
    let mut ok = DpIadmm::new(params, 2, 4).unwrap();
    assert_eq!(
        ok.round(&problem, &mut rngs[..1]).unwrap_err(),
        DpIadmmError::Federated(FederatedError::Streams {
            streams: 1,
            agents: 2
        })
    );
    assert_eq!(ok.rounds(), 0);
    assert_eq!(ok.model(), &[0.0; 4]);
    assert!(rngs.iter().all(|r| r.get_word_pos() == 0));
    // The agent's step alone: a user the problem does not have.
    let mut agent = Agent::new(4);
    let mut scratch = AgentScratch::new(4);
    assert_eq!(
        agent.step(
            &problem,
            &params,
            7,
            1,
            &[0.0; 4],
            &mut rngs[0],
            &mut scratch
        ),
        Err(ProblemError::User {
            user: 7,
            n_users: 2
        })
    );
    assert_eq!(agent, Agent::new(4));
}

/// The noise an agent adds is `Laplace(b)` on each coordinate of its gradient, once: with ObjT,
/// `r = 0` and a trust region that never binds, `z = w + (λ − g̃)/ρ` and the dual update gives
/// back `λ' = g̃` exactly, so `λ' − g` is the drawn noise. Its mean absolute value is `b`, within
/// six standard errors (`b/√N`, Var |ξ| = b²).
#[test]
fn the_agent_s_noise_has_the_laplace_scale_it_was_given() {
    let problem = problem(Loss::Logistic, Regularizer::None, 6, &[5, 8], 4);
    let b = 0.3;
    let params = linf_params(1e9, b, 0.7);
    let (mut agent, mut scratch) = (Agent::new(4), AgentScratch::new(4));
    let mut rng = node_rng(6, 1);
    let (mut g, mut record) = (vec![0.0; 4], vec![0.0; 4]);
    let w = [0.1, -0.2, 0.3, 0.0];
    let mut abs_sum = 0.0;
    let rounds = 20_000;
    for t in 1..=rounds {
        problem
            .l1_clipped_user_grad(1, agent.z(), Some(0.7), &mut g, &mut record)
            .unwrap();
        agent
            .step(&problem, &params, 1, t, &w, &mut rng, &mut scratch)
            .unwrap();
        for (&l, &gk) in agent.lambda().iter().zip(&g) {
            abs_sum += (l - gk / 2.0).abs();
        }
    }
    let n = (4 * rounds) as f64;
    let mean_abs = abs_sum / n;
    assert!(
        (mean_abs - b).abs() <= 6.0 * b / n.sqrt(),
        "E|ξ| = {mean_abs}, b = {b}"
    );
}
