//! The exact linear-Gaussian reference (`dpwalk_privacy::linear_gaussian`) against what dpwalk
//! claims (network-dp spec §1 (A)–(B), §3).
//!
//! Figures are printed with `eprintln!` (run with `--nocapture` to see them); every test is
//! deterministic (ChaCha12 seeds). `ε_loc = 8αC²/σ²` throughout; "share" is the exact RDP of a
//! view over `ε_loc`.
//!
//! ADMM (the network view is withdrawn; dpwalk prints the local view `K_i·ε_loc`):
//! - what is claimed holds: in every sweep case a single contribution leaks at most `ε_loc` and
//!   all of `i`'s contributions (worst signs, whole view) at most `K_i·ε_loc`;
//! - why the network view is withdrawn: the per-path bound `ε_loc·g(min(M, K−k))` fails already
//!   for the first arrival, because users revisited between `i`'s step and `j`'s arrival take
//!   back from the token part of the noise they added (`−(2λ/n)κ_l·u_l`; pinned minimal
//!   counterexample `i → l → m → l → j`); the sweeps assert that the maximum ratio is above 1, so
//!   that a reference "fixed" into agreeing is caught.
//!
//! DP-SGD on the walk (no per-user state, `L = 1`, `lr·a_l ≤ 2`):
//! - a single contribution first seen after `m = min(M, K−k)` hops leaks at most `ε_loc/m`, in
//!   the first-arrival view and in the whole view (which leaks exactly as much);
//! - contributions do not compose additively: several contributions of `i` first seen at the
//!   same observation share the noise of the hops after them (pinned minimal counterexample
//!   `i → l → i → l → j`, exact `1` against `1/4 + 1/2`), and the sweeps assert that the
//!   maximum of exact / `Σ_c 1/min(M_c, K−k_c)` is above 1. The sound figure, composition over
//!   `j`'s observations, `Σ_groups (Σ_{c ∈ group} 1/√m_c)²`, is checked in every case.
//! - the observer-centric certificate of network-dp-2 (§3, §6.1): in every case of the same sweep
//!   the exact share is at most `Ψ_ij(path)` (`network::excursion::psi`), and `Ψ` is at most the
//!   grouped figure; the maximum of exact / Ψ is asserted ≥ 0.999 (it is attained on flat paths),
//!   and the §7 table (exact share, Ψ, withdrawn additive rule) is pinned.
//!
//! ADMM against Ψ (network-dp-2 §7): `i → l → m → l → j`, `n = 5`, leaks 0.303781 / 0.469928 /
//! 0.560641 at `λ = 0.1 / 0.5 / 1` against `Ψ = 1/4`; its stateless variant (`u_l := w`), by
//! direct simulation, exactly 1/4.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::VecDeque;
use std::sync::{Arc, OnceLock};

use dpwalk_core::topology::{Topology, generate};
use dpwalk_privacy::Noise;
use dpwalk_privacy::linear_gaussian::{
    Exact, LinearModel, MAX_CONTRIBUTIONS, Prior, Responses, SgdModel, Window,
    all_contributions_divergence, contribution_divergence,
};
use dpwalk_privacy::network::excursion::{Visit, psi};
use dpwalk_privacy::network::{admm_lipschitz, path_factor};
use dpwalk_privacy::walk::transition_rows;
use nalgebra::DMatrix;
use rand::rngs::ChaCha12Rng;
use rand::{RngExt, SeedableRng};

const LAMBDAS: [f64; 3] = [0.1, 0.5, 1.0];
const PATHS_PER_SETTING: usize = 300;
const TOL: f64 = 1e-9;

fn rng(seed: u64) -> ChaCha12Rng {
    ChaCha12Rng::seed_from_u64(seed)
}

fn unit_noise() -> Noise {
    Noise::new(1.0, 1.0).unwrap()
}

/// The graphs of the sweeps: name and topology.
fn graphs() -> Vec<(String, Topology)> {
    let g = |t: Result<dpwalk_core::topology::Graph, _>| Topology::Graph(t.unwrap());
    vec![
        ("complete-6".into(), Topology::Complete { n: 6 }),
        ("complete-12".into(), Topology::Complete { n: 12 }),
        ("complete-20".into(), Topology::Complete { n: 20 }),
        ("ring-6".into(), g(generate::ring(6))),
        ("ring-11".into(), g(generate::ring(11))),
        ("ring-20".into(), g(generate::ring(20))),
        ("torus-3x3".into(), g(generate::torus(3, 3))),
        ("torus-4x4".into(), g(generate::torus(4, 4))),
        ("regular-10-3".into(), g(generate::random_regular(10, 3, 7))),
        (
            "regular-20-4".into(),
            g(generate::random_regular(20, 4, 11)),
        ),
    ]
}

/// A path of `len` steps from `start`, each next holder drawn from the transition rows.
fn draw_path(
    rows: &[Vec<(usize, f64)>],
    start: usize,
    len: usize,
    r: &mut ChaCha12Rng,
) -> Vec<usize> {
    let mut path = Vec::with_capacity(len);
    let mut at = start;
    for _ in 0..len {
        path.push(at);
        let x: f64 = r.random();
        let mut acc = 0.0;
        let row = &rows[at];
        at = row.last().unwrap().0;
        for &(next, p) in row {
            acc += p;
            if x < acc {
                at = next;
                break;
            }
        }
    }
    path
}

/// Curvatures `a_l ∈ [0, 2]`, about a third of them exactly 0.
fn curvatures(n: usize, r: &mut ChaCha12Rng) -> Vec<f64> {
    (0..n)
        .map(|_| {
            if r.random_bool(0.35) {
                0.0
            } else {
                2.0 * r.random::<f64>()
            }
        })
        .collect()
}

fn random_model(n: usize, lambda: f64, r: &mut ChaCha12Rng) -> LinearModel {
    let a = curvatures(n, r);
    let gamma = 0.5 + 1.5 * r.random::<f64>();
    let mu = if r.random_bool(0.5) {
        0.0
    } else {
        r.random::<f64>()
    };
    LinearModel::new(lambda, gamma, a, mu).unwrap()
}

/// Graph distances from `i` (BFS on the transition rows).
fn distances(rows: &[Vec<(usize, f64)>], i: usize) -> Vec<usize> {
    let mut d = vec![usize::MAX; rows.len()];
    d[i] = 0;
    let mut q = VecDeque::from([i]);
    while let Some(a) = q.pop_front() {
        for &(b, _) in &rows[a] {
            if d[b] == usize::MAX {
                d[b] = d[a] + 1;
                q.push_back(b);
            }
        }
    }
    d
}

/// Observers of `i`: a neighbour, a farthest user, and a uniformly random other user.
fn observers(
    rows: &[Vec<(usize, f64)>],
    i: usize,
    r: &mut ChaCha12Rng,
) -> Vec<(&'static str, usize)> {
    let d = distances(rows, i);
    let near = rows[i][r.random_range(0..rows[i].len())].0;
    let max = *d.iter().max().unwrap();
    let far_all: Vec<usize> = (0..rows.len()).filter(|&l| d[l] == max).collect();
    let far = far_all[r.random_range(0..far_all.len())];
    let mut any = r.random_range(0..rows.len() - 1);
    if any >= i {
        any += 1;
    }
    vec![("near", near), ("far", far), ("any", any)]
}

/// A direct scalar simulation of the ADMM step (`dpwalk_core::step`, clip inactive), written from
/// the step's equations and independent of the module: the token values `w_0..=w_K`.
#[allow(clippy::too_many_arguments)]
fn simulate(
    lambda: f64,
    gamma: f64,
    a: &[f64],
    b: &[f64],
    mu: f64,
    u0: &[f64],
    path: &[usize],
    eta: &[f64],
    shift: &[f64],
) -> Vec<f64> {
    let n = a.len();
    let mut u = u0.to_vec();
    let mut w = u.iter().sum::<f64>() / n as f64;
    let mut out = vec![w];
    for (t, &l) in path.iter().enumerate() {
        let z = w / (1.0 + gamma * mu);
        let v = 2.0 * z - u[l];
        let x = (v + gamma * a[l] * b[l]) / (1.0 + gamma * a[l]);
        let delta = x - z + shift[t];
        let du = 2.0 * lambda * (delta + eta[t] / 2.0);
        u[l] += du;
        w += du / n as f64;
        out.push(w);
    }
    out
}

// ---------------------------------------------------------------------------------------------
// Cross-checks of the construction.

#[test]
fn responses_match_a_direct_simulation_and_a_dense_solve() {
    let mut r = rng(1);
    let (topo_name, topo) = &graphs()[4];
    let rows = transition_rows(topo);
    let n = topo.n();
    let mut worst_resp = 0.0f64;
    let mut worst_dense = 0.0f64;
    for case in 0..20 {
        let lambda = LAMBDAS[case % 3];
        let a = curvatures(n, &mut r);
        let b: Vec<f64> = (0..n).map(|_| r.random::<f64>() * 4.0 - 2.0).collect();
        let gamma = 0.5 + r.random::<f64>();
        let mu = if case % 2 == 0 { 0.0 } else { 0.7 };
        let u0: Vec<f64> = (0..n).map(|_| r.random::<f64>() - 0.5).collect();
        let k_len = 60;
        let path = draw_path(&rows, r.random_range(0..n), k_len, &mut r);
        let model = LinearModel::new(lambda, gamma, a.clone(), mu).unwrap();
        let resp = Responses::new(&model, &path).unwrap();
        let zero = vec![0.0; k_len];
        let base = simulate(lambda, gamma, &a, &b, mu, &u0, &path, &zero, &zero);
        for s in 0..k_len {
            let mut e = zero.clone();
            e[s] = 1.0;
            let shifted = simulate(lambda, gamma, &a, &b, mu, &u0, &path, &zero, &e);
            // A unit shift of Δ and a noise draw η = 2 enter the same way.
            let mut e2 = zero.clone();
            e2[s] = 2.0;
            let noisy = simulate(lambda, gamma, &a, &b, mu, &u0, &path, &e2, &zero);
            for t in 0..=k_len {
                let want = shifted[t] - base[t];
                let scale = 1.0 + want.abs();
                worst_resp = worst_resp.max((resp.response(t, s) - want).abs() / scale);
                worst_resp = worst_resp.max((noisy[t] - shifted[t]).abs() / scale);
            }
        }
        // Dense Cholesky solve of δμᵀΣ⁻¹δμ for the whole view (observer: a user with visits).
        let k = r.random_range(0..k_len);
        let i = path[k];
        let j = (i + 1 + r.random_range(0..n - 1)) % n;
        let noise = Noise::new(0.5 + r.random::<f64>(), 0.1 + r.random::<f64>()).unwrap();
        let e = resp
            .single(k, j, Window::Whole, Prior::Visits, noise)
            .unwrap();
        let obs = &e.observations;
        let cols: Vec<usize> = (0..k_len).filter(|&s| path[s] != j).collect();
        let sigma = noise.sigma();
        // Σ = Var(view) = σ²·B·Bᵀ with B = ½·R (η/2 enters Δ), δμ = 2C·R[:, k].
        let b_mat = DMatrix::from_fn(obs.len(), cols.len(), |x, y| {
            0.5 * resp.response(obs[x], cols[y])
        });
        let cov = (&b_mat * b_mat.transpose()) * (sigma * sigma);
        let dmu = DMatrix::from_fn(obs.len(), 1, |x, _| {
            2.0 * noise.clip() * resp.response(obs[x], k)
        });
        let chol = cov.clone().cholesky().expect("full-rank view");
        let want = 0.5 * (dmu.transpose() * chol.solve(&dmu))[(0, 0)];
        worst_dense = worst_dense.max((e.divergence - want).abs() / want.max(1e-300));
        let unit = 8.0 * noise.clip().powi(2) / sigma.powi(2);
        assert!((e.divergence - e.share * unit).abs() <= 1e-12 * e.divergence.max(1e-300));
        assert!(
            e.share <= 1.0 + TOL,
            "a single contribution leaks at most ε_loc: {e:?}"
        );
        assert!(e.range_residual < 1e-12, "{e:?}");
    }
    eprintln!(
        "[cross-check {topo_name}] responses vs direct simulation: max rel err {worst_resp:.2e}; \
         divergence vs dense Cholesky: max rel err {worst_dense:.2e}"
    );
    assert!(worst_resp < 1e-12, "{worst_resp}");
    assert!(worst_dense < 1e-8, "{worst_dense}");
}

// ---------------------------------------------------------------------------------------------
// Hand-computable cases.

#[test]
fn one_intermediate_hop_has_its_closed_form() {
    // i → l → j: w_2's gap is A·(2λ/n)·2C, its variance (λσ/n)²(A² + 1) with
    // A = 1 + (2λ/n)(2κ_l − 1)ρ, so D = 8C²/σ² · A²/(1 + A²).
    let mut r = rng(2);
    let mut worst = 0.0f64;
    for _ in 0..200 {
        let n = r.random_range(3..12);
        let lambda = 0.05 + r.random::<f64>();
        let model_gamma = 0.2 + 2.0 * r.random::<f64>();
        let mu = if r.random_bool(0.5) {
            0.0
        } else {
            r.random::<f64>()
        };
        let a = curvatures(n, &mut r);
        let (i, l, j) = (0, 1, 2);
        let model = LinearModel::new(lambda, model_gamma, a.clone(), mu).unwrap();
        let noise = Noise::new(0.3 + r.random::<f64>(), 0.1 + r.random::<f64>()).unwrap();
        let e = contribution_divergence(
            &model,
            &[i, l, j],
            0,
            j,
            Window::Whole,
            Prior::Visits,
            noise,
        )
        .unwrap();
        let kappa = 1.0 / (1.0 + model_gamma * a[l]);
        let rho = 1.0 / (1.0 + model_gamma * mu);
        let big_a = 1.0 + 2.0 * lambda / n as f64 * (2.0 * kappa - 1.0) * rho;
        let want = 8.0 * noise.clip().powi(2) / noise.sigma().powi(2) * big_a * big_a
            / (1.0 + big_a * big_a);
        worst = worst.max((e.divergence / want - 1.0).abs());
        // The same view, as the final model (j not on the path): path i → l, K − k = 2.
        let f = contribution_divergence(
            &model,
            &[i, l],
            0,
            j,
            Window::FirstArrival,
            Prior::Visits,
            noise,
        )
        .unwrap();
        worst = worst.max((f.divergence / want - 1.0).abs());
        // Never above the accountant's g(2) = L²/(1 + L²).
        let g2 = path_factor(admm_lipschitz(lambda, n), 2);
        assert!(e.share <= g2 * (1.0 + TOL), "{} > {g2}", e.share);
    }
    eprintln!("[one hop] closed form A²/(1+A²): max rel err {worst:.2e}");
    assert!(worst < 1e-12, "{worst}");
}

#[test]
fn a_chain_of_data_free_users_attains_the_bound() {
    // a_l = 0, r = 0, distinct users: the mean gap grows by L per hop, the bound is attained.
    let mut worst = 0.0f64;
    for &lambda in &LAMBDAS {
        for n in [6usize, 12, 20] {
            let model = LinearModel::new(lambda, 1.0, vec![0.0; n], 0.0).unwrap();
            let lip = admm_lipschitz(lambda, n);
            for m in 1..n {
                let g = path_factor(lip, m as u64);
                // j at the end of the chain (first arrival after m hops) ...
                let path: Vec<usize> = (0..=m).collect();
                for (window, prior) in [
                    (Window::FirstArrival, Prior::Visits),
                    (Window::Whole, Prior::Visits),
                    (Window::FirstArrival, Prior::KnownState),
                ] {
                    let e =
                        contribution_divergence(&model, &path, 0, m, window, prior, unit_noise())
                            .unwrap();
                    worst = worst.max((e.share / g - 1.0).abs());
                }
                // ... or j off the path, seeing the final model after K − k = m hops.
                let path: Vec<usize> = (0..m).collect();
                let e = contribution_divergence(
                    &model,
                    &path,
                    0,
                    n - 1,
                    Window::Whole,
                    Prior::Visits,
                    unit_noise(),
                )
                .unwrap();
                worst = worst.max((e.share / g - 1.0).abs());
                assert!((e.divergence - 8.0 * e.share).abs() < 1e-12);
            }
        }
    }
    eprintln!("[chain] exact / (ε_loc·g(m)): max |ratio − 1| = {worst:.2e}");
    assert!(worst < TOL, "{worst}");
}

#[test]
fn revisits_retract_noise_minimal_counterexample() {
    // i → l → m → l, observed after 4 hops (j receives the token next, or the final model), with
    // a = 0, r = 0. Per unit of (2λ/n)·Δ, the view w_4 has the responses
    // v = (L³ − 2λβ, L² − 2λ, L, 1), β = 2λ/n: at l's second visit the token gives back
    // −β·u_l, which holds 2λ× l's first noise, so l's noise is partly retracted from the token
    // (entirely at λ = 1/2) while i's shift is not. Exact share v_0²/‖v‖², against
    // g(4) = L⁶/(L⁶ + L⁴ + L² + 1): above it at λ ≤ 1/2 for every n (1.08–1.32), and at λ = 1 for
    // n ≤ 6 only (the retraction is then a reflection, which also hits i's shift through w).
    let mut lines = Vec::new();
    for &lambda in &LAMBDAS {
        for n in [5usize, 6, 20, 100] {
            let beta = 2.0 * lambda / n as f64;
            let l = 1.0 + beta;
            let v = [
                l.powi(3) - 2.0 * lambda * beta,
                l * l - 2.0 * lambda,
                l,
                1.0,
            ];
            let want = v[0] * v[0] / v.iter().map(|x| x * x).sum::<f64>();
            let model = LinearModel::new(lambda, 1.0, vec![0.0; n], 0.0).unwrap();
            let g4 = path_factor(admm_lipschitz(lambda, n), 4);
            for path in [vec![0, 1, 2, 1, 3], vec![0, 1, 2, 1]] {
                for prior in [Prior::Visits, Prior::KnownState] {
                    let e = contribution_divergence(
                        &model,
                        &path,
                        0,
                        3,
                        Window::FirstArrival,
                        prior,
                        unit_noise(),
                    )
                    .unwrap();
                    assert!(
                        (e.share / want - 1.0).abs() < 1e-12,
                        "{} vs {want}",
                        e.share
                    );
                }
            }
            lines.push(format!(
                "  λ={lambda} n={n}: exact {want:.6}, g(4) {g4:.6}, ratio {:.6}",
                want / g4
            ));
            if lambda <= 0.5 {
                assert!(want / g4 > 1.08, "the counterexample is above the bound");
            }
            // Whatever the network bound, the local one holds.
            assert!(want <= 1.0 + TOL);
        }
    }
    eprintln!(
        "[counterexample i→l→m→l→j, first arrival after 4 hops]\n{}",
        lines.join("\n")
    );
}

// ---------------------------------------------------------------------------------------------
// ADMM sweeps.

/// The noise of the sweeps (shares do not depend on it; divergences are checked against
/// `8C²/σ²` with it).
fn sweep_noise() -> Noise {
    Noise::new(1.7, 0.6).unwrap()
}

/// `8C²/σ²`: the local RDP of one contribution over `α`.
fn local_unit(noise: Noise) -> f64 {
    8.0 * noise.clip() * noise.clip() / (noise.sigma() * noise.sigma())
}

/// One single-contribution case of a sweep: shares indexed `[own visits, known state]`.
#[derive(Debug, Clone)]
struct Case {
    graph: String,
    /// The column of the tables: `λ` for ADMM, the curvature regime for DP-SGD.
    column: usize,
    seed_path: usize,
    kind: &'static str,
    i: usize,
    j: usize,
    k: usize,
    steps: usize,
    hops: usize,
    bound: f64,
    first: [f64; 2],
    whole: [f64; 2],
    observations: Vec<usize>,
    path: Vec<usize>,
}

/// The single-contribution ADMM sweep, computed once and shared by the tests that read it.
fn admm_sweep() -> &'static Vec<Case> {
    static CASES: OnceLock<Vec<Case>> = OnceLock::new();
    CASES.get_or_init(|| {
        let t0 = std::time::Instant::now();
        let noise = sweep_noise();
        let local = local_unit(noise);
        let mut cases = Vec::new();
        for (gi, (name, topo)) in graphs().iter().enumerate() {
            let rows = transition_rows(topo);
            let n = topo.n();
            for (li, &lambda) in LAMBDAS.iter().enumerate() {
                let mut r = rng(1000 + 10 * gi as u64 + li as u64);
                let lip = admm_lipschitz(lambda, n);
                for p in 0..PATHS_PER_SETTING {
                    let model = random_model(n, lambda, &mut r);
                    let len = r.random_range(20..=120);
                    let path = draw_path(&rows, r.random_range(0..n), len, &mut r);
                    let resp = Responses::new(&model, &path).unwrap();
                    // Two contributions per path: one at random, one near the end (final model).
                    let ks = [
                        r.random_range(0..len),
                        len - 1 - r.random_range(0..len.min(6)),
                    ];
                    for k in ks {
                        let i = path[k];
                        for (kind, j) in observers(&rows, i, &mut r) {
                            cases.push(single_case(
                                &resp,
                                name,
                                li,
                                p,
                                kind,
                                k,
                                j,
                                |m| path_factor(lip, m as u64),
                                noise,
                                local,
                            ));
                        }
                    }
                }
            }
        }
        eprintln!(
            "[admm sweep] {} single-contribution cases (x 2 priors x 2 windows) in {:.1} s",
            cases.len(),
            t0.elapsed().as_secs_f64()
        );
        cases
    })
}

/// Both windows and both priors of one contribution; asserts the numerics, the local bound
/// (`D ≤ 8C²/σ²`), and the orders that hold by construction (the whole view contains the first
/// arrival; the known state contains the own visits).
#[allow(clippy::too_many_arguments)]
fn single_case(
    resp: &Responses,
    graph: &str,
    column: usize,
    seed_path: usize,
    kind: &'static str,
    k: usize,
    j: usize,
    bound: impl Fn(usize) -> f64,
    noise: Noise,
    local: f64,
) -> Case {
    let hops = resp.hops_seen(k, j);
    let mut first = [0.0; 2];
    let mut whole = [0.0; 2];
    let mut observations = Vec::new();
    for (pi, prior) in [Prior::Visits, Prior::KnownState].into_iter().enumerate() {
        let f = resp
            .single(k, j, Window::FirstArrival, prior, noise)
            .unwrap();
        let w = resp.single(k, j, Window::Whole, prior, noise).unwrap();
        for e in [&f, &w] {
            check_numerics(e, 1);
            assert!(
                e.divergence <= local * (1.0 + TOL),
                "one contribution above ε_loc: {e:?}"
            );
        }
        first[pi] = f.share;
        whole[pi] = w.share;
        if pi == 1 {
            observations = w.observations;
        }
    }
    let case = Case {
        graph: graph.to_string(),
        column,
        seed_path,
        kind,
        i: resp.path()[k],
        j,
        k,
        steps: resp.steps(),
        hops,
        bound: bound(hops),
        first,
        whole,
        observations,
        path: resp.path().to_vec(),
    };
    for pi in 0..2 {
        assert!(
            case.first[pi] <= case.whole[pi] * (1.0 + TOL) + 1e-15,
            "window order: {}",
            describe(&case)
        );
    }
    for v in [case.first, case.whole] {
        assert!(
            v[0] <= v[1] * (1.0 + TOL) + 1e-15,
            "prior order: {}",
            describe(&case)
        );
    }
    case
}

/// The rank decision must be clear-cut, the shift inside the range, and the share at most the
/// number of contributions (the local view; also asserted on divergences by the callers).
fn check_numerics(e: &Exact, contributions: usize) {
    assert!(e.range_residual < 1e-10, "{e:?}");
    assert!(e.smallest_kept > 1e-9, "ill-conditioned view: {e:?}");
    assert!(e.largest_dropped < 1e-12, "{e:?}");
    assert!(
        e.share.is_finite() && e.share <= contributions as f64 * (1.0 + TOL),
        "{e:?}"
    );
}

/// Prints the largest `figure` per graph and column, and returns the overall maximum and a case
/// attaining it.
fn report(
    title: &str,
    columns: &[String],
    cases: &[Case],
    figure: impl Fn(&Case) -> f64,
) -> (f64, Option<Case>) {
    let mut overall = 0.0f64;
    let mut worst = None;
    let mut lines = Vec::new();
    for (name, _) in graphs() {
        let mut line = format!("  {name:<13}");
        for (ci, col) in columns.iter().enumerate() {
            let m = cases
                .iter()
                .filter(|c| c.graph == name && c.column == ci)
                .map(&figure)
                .fold(0.0f64, f64::max);
            line += &format!("  {col}: {m:.6}");
        }
        lines.push(line);
    }
    for c in cases {
        let v = figure(c);
        if v > overall {
            overall = v;
            worst = Some(c.clone());
        }
    }
    eprintln!("[{title}] max per graph:\n{}", lines.join("\n"));
    eprintln!("[{title}] overall max {overall:.9}");
    (overall, worst)
}

fn lambda_columns() -> Vec<String> {
    LAMBDAS.iter().map(|l| format!("λ={l}")).collect()
}

fn describe(c: &Case) -> String {
    format!(
        "graph {} column {} path#{} observer {} (i={} j={} k={} K={} hops={} bound={:.6}): \
         first-arrival share [visits {:.6}, known state {:.6}], whole share [visits {:.6}, \
         known state {:.6}]; observations {:?}; path {:?}",
        c.graph,
        c.column,
        c.seed_path,
        c.kind,
        c.i,
        c.j,
        c.k,
        c.steps,
        c.hops,
        c.bound,
        c.first[0],
        c.first[1],
        c.whole[0],
        c.whole[1],
        c.observations,
        c.path
    )
}

#[test]
fn admm_single_contribution_within_the_local_bound() {
    // The local bound itself is asserted on every case as the sweep is built (`single_case`).
    let cases = admm_sweep();
    let cols = lambda_columns();
    let (max, _) = report(
        "ADMM one contribution: whole / ε_loc, known state",
        &cols,
        cases,
        |c| c.whole[1],
    );
    let (max_v, _) = report(
        "ADMM one contribution: whole / ε_loc, own visits",
        &cols,
        cases,
        |c| c.whole[0],
    );
    assert!(max <= 1.0 + TOL && max_v <= 1.0 + TOL);
}

#[test]
fn admm_first_arrival_exceeds_the_withdrawn_network_bound() {
    let cases = admm_sweep();
    let cols = lambda_columns();
    let mut maxima = [0.0; 2];
    for (pi, prior) in ["own visits", "known state"].into_iter().enumerate() {
        let (max, worst) = report(
            &format!("ADMM withdrawn: first arrival / (ε_loc·g(min(M,K−k))), {prior}"),
            &cols,
            cases,
            |c| c.first[pi] / c.bound,
        );
        if let Some(c) = &worst {
            eprintln!(
                "[ADMM withdrawn] worst first arrival ({prior}): {}",
                describe(c)
            );
        }
        report(
            &format!("ADMM withdrawn: whole / (ε_loc·g(min(M,K−k))), {prior}"),
            &cols,
            cases,
            |c| c.whole[pi] / c.bound,
        );
        // The hidden-state channel: what later visits add to the first arrival, in ε_loc.
        report(
            &format!("ADMM hidden state: (whole − first arrival) / ε_loc, {prior}"),
            &cols,
            cases,
            |c| c.whole[pi] - c.first[pi],
        );
        maxima[pi] = max;
    }
    let above = cases
        .iter()
        .filter(|c| c.first[1] > c.bound * (1.0 + TOL))
        .count();
    eprintln!(
        "[ADMM withdrawn] first arrival (known state) above ε_loc·g(min(M,K−k)) in {above} of {} cases",
        cases.len()
    );
    // If these fail, the reference now agrees with the per-path bound: find out why before
    // restoring a network view for ADMM.
    assert!(
        maxima[0] > 1.0 + 1e-3,
        "own visits: max ratio {}",
        maxima[0]
    );
    assert!(
        maxima[1] > 1.0 + 1e-3,
        "known state: max ratio {}",
        maxima[1]
    );
}

/// All of `i`'s contributions: the largest exact share (worst signs, whole view) and its ratios.
#[derive(Debug, Clone, Copy, Default)]
struct CompositionMax {
    /// exact / (K_i·ε_loc): must stay ≤ 1.
    local: f64,
    /// exact / Σ_c (the per-contribution network figure).
    additive: f64,
    /// exact / (the grouped figure), DP-SGD only.
    grouped: f64,
}

#[test]
fn admm_all_contributions_within_the_local_bound() {
    let t0 = std::time::Instant::now();
    let noise = sweep_noise();
    let local = local_unit(noise);
    let mut lines = Vec::new();
    let mut overall = [CompositionMax::default(); 2];
    let mut non_additive: [f64; 2] = [0.0; 2];
    let mut worst_case = String::new();
    let (mut skipped, mut counted) = (0usize, 0usize);
    for (gi, (name, topo)) in graphs().iter().enumerate() {
        let rows = transition_rows(topo);
        let n = topo.n();
        let mut line = format!("  {name:<13}");
        for (li, &lambda) in LAMBDAS.iter().enumerate() {
            let mut r = rng(5000 + 10 * gi as u64 + li as u64);
            let lip = admm_lipschitz(lambda, n);
            let mut max = [CompositionMax::default(); 2];
            for p in 0..PATHS_PER_SETTING {
                let model = random_model(n, lambda, &mut r);
                let len = r.random_range(2 * n..=(8 * n).min(200));
                let path = draw_path(&rows, r.random_range(0..n), len, &mut r);
                let resp = Responses::new(&model, &path).unwrap();
                let i = path[r.random_range(0..len)];
                for (kind, j) in observers(&rows, i, &mut r) {
                    let steps: Vec<usize> = (0..len).filter(|&s| path[s] == i).collect();
                    if steps.len() > MAX_CONTRIBUTIONS {
                        skipped += 1;
                        continue;
                    }
                    counted += 1;
                    let additive: f64 = steps
                        .iter()
                        .map(|&k| path_factor(lip, resp.hops_seen(k, j) as u64))
                        .sum();
                    for (pi, prior) in [Prior::Visits, Prior::KnownState].into_iter().enumerate() {
                        let e = resp.all(i, j, prior, noise).unwrap();
                        check_numerics(&e, steps.len());
                        let local_bound = steps.len() as f64 * local;
                        assert!(
                            e.divergence <= local_bound * (1.0 + TOL),
                            "ADMM: all contributions above K_i·ε_loc: graph {name} λ={lambda} \
                             path#{p} {kind} i={i} j={j}: {e:?}"
                        );
                        let singles: f64 = steps
                            .iter()
                            .map(|&k| {
                                resp.single(k, j, Window::Whole, prior, noise)
                                    .unwrap()
                                    .share
                            })
                            .sum();
                        if singles > 1e-3 {
                            non_additive[pi] = non_additive[pi].max(e.share / singles);
                        }
                        let m = &mut max[pi];
                        m.local = m.local.max(e.divergence / local_bound);
                        m.additive = m.additive.max(e.share / additive);
                        let o = &mut overall[pi];
                        o.local = o.local.max(e.divergence / local_bound);
                        if e.share / additive > o.additive {
                            o.additive = e.share / additive;
                            if pi == 1 {
                                worst_case = format!(
                                    "graph {name} λ={lambda} path#{p} observer {kind} i={i} j={j} \
                                     K={len} contributions at {steps:?}: exact share {:.6} \
                                     (signs {:?}) vs Σ g = {additive:.6}",
                                    e.share, e.signs
                                );
                            }
                        }
                    }
                }
            }
            line += &format!(
                "  λ={lambda}: local {:.4}/{:.4} Σg {:.4}/{:.4}",
                max[0].local, max[1].local, max[0].additive, max[1].additive
            );
        }
        lines.push(line);
    }
    eprintln!(
        "[ADMM all contributions] max exact/(K_i·ε_loc) (\"local\") and exact/(ε_loc·Σ_c g) \
         (\"Σg\", withdrawn), own visits/known state; {counted} cases, {skipped} skipped \
         (> {MAX_CONTRIBUTIONS} contributions), {:.1} s:\n{}",
        t0.elapsed().as_secs_f64(),
        lines.join("\n")
    );
    eprintln!(
        "[ADMM all contributions] overall: local {:.6}/{:.6}, Σg {:.6}/{:.6}; worst Σg: {worst_case}",
        overall[0].local, overall[1].local, overall[0].additive, overall[1].additive
    );
    eprintln!(
        "[ADMM all contributions] exact(all) / Σ_c exact(c alone), where Σ > 1e-3: own visits \
         {:.6}, known state {:.6}",
        non_additive[0], non_additive[1]
    );
    // Consistency with the single-contribution function on a one-contribution path.
    let model = LinearModel::new(0.5, 1.0, vec![0.0, 1.0, 0.0, 2.0], 0.2).unwrap();
    let path = [0, 1, 2, 3, 1, 2];
    let one = all_contributions_divergence(&model, &path, 0, 2, Prior::Visits, noise).unwrap();
    let two =
        contribution_divergence(&model, &path, 0, 2, Window::Whole, Prior::Visits, noise).unwrap();
    assert!((one.share - two.share).abs() < 1e-14);
    assert!(overall[0].local <= 1.0 + TOL && overall[1].local <= 1.0 + TOL);
    // Why the network view is withdrawn (see the module docs).
    assert!(overall[1].additive > 1.0 + 1e-3, "{}", overall[1].additive);
}

// ---------------------------------------------------------------------------------------------
// DP-SGD on the walk.

/// The curvature regimes of the DP-SGD sweeps (the columns of its tables), in `lr·a_l`.
const SGD_REGIMES: [&str; 3] = ["lr·a=0", "lr·a≤1", "lr·a≤2"];

/// A random DP-SGD model: `lr ∈ [0.05, 1]`, `μ = 0` half of the time, and `lr·a_l` by regime:
/// all 0; in `[0, 1]` with 0 and 1 (a step that forgets `w`) exactly; in `[0, 2]` with 0, 1 and 2
/// (a reflection) exactly, and about half of the rest in `(1, 2)` (negative slopes).
fn random_sgd_model(n: usize, regime: usize, r: &mut ChaCha12Rng) -> SgdModel {
    let lr = 0.05 + 0.95 * r.random::<f64>();
    let mu = if r.random_bool(0.5) {
        0.0
    } else {
        2.0 * r.random::<f64>()
    };
    let la: Vec<f64> = (0..n)
        .map(|_| match regime {
            0 => 0.0,
            1 => {
                if r.random_bool(0.3) {
                    0.0
                } else if r.random_bool(0.1) {
                    1.0
                } else {
                    r.random::<f64>()
                }
            }
            _ => {
                if r.random_bool(0.25) {
                    0.0
                } else if r.random_bool(0.1) {
                    2.0
                } else if r.random_bool(0.05) {
                    1.0
                } else {
                    2.0 * r.random::<f64>()
                }
            }
        })
        .collect();
    SgdModel::new(lr, la.iter().map(|x| x / lr).collect(), mu).unwrap()
}

fn regime_columns() -> Vec<String> {
    SGD_REGIMES.iter().map(|s| s.to_string()).collect()
}

/// The DP-SGD step (`dpwalk_core::step::sgd_step`, clip inactive, scalar), written from its
/// equations: the token values `w_0..=w_K`.
#[allow(clippy::too_many_arguments)]
fn simulate_sgd(
    lr: f64,
    a: &[f64],
    b: &[f64],
    mu: f64,
    w0: f64,
    path: &[usize],
    eta: &[f64],
    shift: &[f64],
) -> Vec<f64> {
    let mut w = w0;
    let mut out = vec![w];
    for (t, &l) in path.iter().enumerate() {
        let g = a[l] * (w - b[l]) + shift[t] + eta[t] / 2.0;
        w = (w - lr * g) / (1.0 + lr * mu);
        out.push(w);
    }
    out
}

/// `1/min(M, K−k)` for each contribution, and the grouped figure: contributions first seen at the
/// same observation form a group, `Σ_groups (Σ_c 1/√m_c)²`.
fn sgd_bounds(resp: &Responses, steps: &[usize], j: usize) -> (f64, f64) {
    let mut additive = 0.0;
    let mut groups: Vec<(usize, f64)> = Vec::new();
    for &k in steps {
        let m = resp.hops_seen(k, j);
        additive += 1.0 / m as f64;
        let seen = k + m;
        match groups.iter_mut().find(|(t, _)| *t == seen) {
            Some((_, s)) => *s += 1.0 / (m as f64).sqrt(),
            None => groups.push((seen, 1.0 / (m as f64).sqrt())),
        }
    }
    (additive, groups.iter().map(|(_, s)| s * s).sum())
}

#[test]
fn sgd_responses_match_a_direct_simulation_and_a_dense_solve() {
    let mut r = rng(21);
    let (topo_name, topo) = &graphs()[4];
    let rows = transition_rows(topo);
    let n = topo.n();
    let (mut worst_resp, mut worst_dense) = (0.0f64, 0.0f64);
    for case in 0..30 {
        let model_lr = 0.05 + 0.95 * r.random::<f64>();
        // lr·a in (0, 2), generic (no step forgets w, so the dense covariance is invertible).
        let a: Vec<f64> = (0..n)
            .map(|_| (0.01 + 1.98 * r.random::<f64>()) / model_lr)
            .collect();
        let b: Vec<f64> = (0..n).map(|_| r.random::<f64>() * 4.0 - 2.0).collect();
        let mu = if case % 2 == 0 { 0.0 } else { 0.7 };
        let k_len = 60;
        let path = draw_path(&rows, r.random_range(0..n), k_len, &mut r);
        let model = SgdModel::new(model_lr, a.clone(), mu).unwrap();
        let resp = Responses::sgd(&model, &path).unwrap();
        let zero = vec![0.0; k_len];
        let w0 = r.random::<f64>() - 0.5;
        let base = simulate_sgd(model_lr, &a, &b, mu, w0, &path, &zero, &zero);
        for s in 0..k_len {
            let mut e = zero.clone();
            e[s] = 1.0;
            let shifted = simulate_sgd(model_lr, &a, &b, mu, w0, &path, &zero, &e);
            let mut e2 = zero.clone();
            e2[s] = 2.0;
            let noisy = simulate_sgd(model_lr, &a, &b, mu, w0, &path, &e2, &zero);
            for t in 0..=k_len {
                let want = shifted[t] - base[t];
                let scale = 1.0 + want.abs();
                worst_resp = worst_resp.max((resp.response(t, s) - want).abs() / scale);
                worst_resp = worst_resp.max((noisy[t] - shifted[t]).abs() / scale);
            }
        }
        let k = r.random_range(0..k_len);
        let i = path[k];
        let j = (i + 1 + r.random_range(0..n - 1)) % n;
        let noise = Noise::new(0.5 + r.random::<f64>(), 0.1 + r.random::<f64>()).unwrap();
        let e = resp
            .single(k, j, Window::Whole, Prior::Visits, noise)
            .unwrap();
        let obs = &e.observations;
        if obs.is_empty() {
            continue;
        }
        let cols: Vec<usize> = (0..k_len).filter(|&s| path[s] != j).collect();
        let sigma = noise.sigma();
        let b_mat = DMatrix::from_fn(obs.len(), cols.len(), |x, y| {
            0.5 * resp.response(obs[x], cols[y])
        });
        let cov = (&b_mat * b_mat.transpose()) * (sigma * sigma);
        let dmu = DMatrix::from_fn(obs.len(), 1, |x, _| {
            2.0 * noise.clip() * resp.response(obs[x], k)
        });
        let chol = cov.clone().cholesky().expect("full-rank view");
        let want = 0.5 * (dmu.transpose() * chol.solve(&dmu))[(0, 0)];
        worst_dense = worst_dense.max((e.divergence - want).abs() / want.max(1e-300));
    }
    eprintln!(
        "[sgd cross-check {topo_name}] responses vs direct simulation: max rel err \
         {worst_resp:.2e}; divergence vs dense Cholesky: max rel err {worst_dense:.2e}"
    );
    assert!(worst_resp < 1e-12, "{worst_resp}");
    assert!(worst_dense < 1e-8, "{worst_dense}");
}

#[test]
fn sgd_contributions_seen_together_do_not_compose_additively() {
    // i → l → i → l → … → i → l → j (c contributions of i at steps 0, 2, …, 2c−2, j's arrival
    // at step 2c), a = 0, r = 0: every response is −lr, so the view w_2c has the gap c·lr·2C
    // (worst signs: all equal) against 2c noise terms: exact share c²/(2c) = c/2, while the
    // additive figure is Σ_h 1/(2h) = H_c/2 (ratio c/H_c) and the grouped one (Σ_h 1/√(2h))².
    let noise = sweep_noise();
    let model = SgdModel::new(0.4, vec![0.0; 3], 0.0).unwrap();
    let mut lines = Vec::new();
    for c in 1..=6usize {
        let mut path: Vec<usize> = (0..c).flat_map(|_| [0, 1]).collect();
        path.push(2);
        let resp = Responses::sgd(&model, &path).unwrap();
        let steps: Vec<usize> = (0..c).map(|h| 2 * h).collect();
        let (additive, grouped) = sgd_bounds(&resp, &steps, 2);
        let harmonic: f64 = (1..=c).map(|h| 1.0 / h as f64).sum();
        assert!((additive - harmonic / 2.0).abs() < 1e-12);
        let want = c as f64 / 2.0;
        for prior in [Prior::Visits, Prior::KnownState] {
            let e = resp.all(0, 2, prior, noise).unwrap();
            assert!((e.share / want - 1.0).abs() < 1e-12, "{c}: {e:?}");
            assert!(e.signs.iter().all(|&s| s == e.signs[0]), "{e:?}");
        }
        assert!(want <= grouped * (1.0 + TOL));
        if c >= 2 {
            assert!(want / additive > 1.3, "c = {c}: above the additive figure");
        }
        lines.push(format!(
            "  c={c}: exact {want:.6}, Σ 1/m {additive:.6} (ratio {:.6}), grouped {grouped:.6}",
            want / additive
        ));
    }
    eprintln!(
        "[sgd counterexample i→l→i→l→…→j, all contributions]\n{}",
        lines.join("\n")
    );
}

#[test]
fn sgd_single_contribution_within_one_over_m() {
    let t0 = std::time::Instant::now();
    let noise = sweep_noise();
    let local = local_unit(noise);
    let mut cases = Vec::new();
    let mut markov_gap = 0.0f64;
    for (gi, (name, topo)) in graphs().iter().enumerate() {
        let rows = transition_rows(topo);
        let n = topo.n();
        for regime in 0..SGD_REGIMES.len() {
            let mut r = rng(7000 + 10 * gi as u64 + regime as u64);
            for p in 0..PATHS_PER_SETTING {
                let model = random_sgd_model(n, regime, &mut r);
                let len = r.random_range(20..=120);
                let path = draw_path(&rows, r.random_range(0..n), len, &mut r);
                let resp = Responses::sgd(&model, &path).unwrap();
                let ks = [
                    r.random_range(0..len),
                    len - 1 - r.random_range(0..len.min(6)),
                ];
                for k in ks {
                    let i = path[k];
                    for (kind, j) in observers(&rows, i, &mut r) {
                        let c = single_case(
                            &resp,
                            name,
                            regime,
                            p,
                            kind,
                            k,
                            j,
                            |m| 1.0 / m as f64,
                            noise,
                            local,
                        );
                        // The token is the whole state: later visits are a Markov
                        // post-processing of the first arrival.
                        for pi in 0..2 {
                            markov_gap = markov_gap.max((c.whole[pi] - c.first[pi]).abs());
                        }
                        cases.push(c);
                    }
                }
            }
        }
    }
    eprintln!(
        "[sgd sweep] {} single-contribution cases (x 2 priors x 2 windows) in {:.1} s; \
         max |whole − first arrival| share {markov_gap:.2e}",
        cases.len(),
        t0.elapsed().as_secs_f64()
    );
    let cols = regime_columns();
    let mut worst_all: f64 = 0.0;
    for (pi, prior) in ["own visits", "known state"].into_iter().enumerate() {
        for (window, pick) in [("first arrival", 0usize), ("whole", 1)] {
            let (max, worst) = report(
                &format!("DP-SGD one contribution: {window} / (ε_loc/min(M,K−k)), {prior}"),
                &cols,
                &cases,
                |c| [c.first[pi], c.whole[pi]][pick] / c.bound,
            );
            if max > 1.0 + TOL {
                eprintln!(
                    "[DP-SGD] ABOVE 1/min(M,K−k): {window}, {prior}: {}",
                    worst.as_ref().map(describe).unwrap_or_default()
                );
            }
            worst_all = worst_all.max(max);
        }
    }
    assert!(markov_gap < 1e-9, "{markov_gap}");
    assert!(
        worst_all <= 1.0 + TOL,
        "DP-SGD: a single contribution leaks more than ε_loc/min(M, K−k): {worst_all}"
    );
}

/// Every visit of a path a contribution (the reference shifts every step of `i`).
fn all_visits(path: &[usize]) -> Vec<Visit> {
    path.iter()
        .map(|&holder| Visit {
            holder,
            contribution: true,
        })
        .collect()
}

/// One case of the DP-SGD all-contributions sweep: every contribution of `i` on one path against
/// one observer `j`, whole view, worst signs.
#[derive(Debug, Clone)]
struct SgdAllCase {
    graph: String,
    regime: usize,
    seed_path: usize,
    kind: &'static str,
    i: usize,
    j: usize,
    steps: Vec<usize>,
    /// `min(M_c, K − k_c)` per contribution.
    hops: Vec<usize>,
    /// The exact view, indexed `[own visits, known state]`.
    exact: [Exact; 2],
    /// `Σ_c 1/min(M_c, K − k_c)` (withdrawn).
    additive: f64,
    /// `Σ_groups (Σ_c 1/√m_c)²`.
    grouped: f64,
    /// `Ψ_ij(path)` (`network::excursion::psi`, network-dp-2 §3).
    psi: f64,
    /// Every step's slope is 1 (`lr·a_l = 0` on the path and `μ = 0`): the worst case of Ψ.
    flat: bool,
    path: Arc<[usize]>,
}

/// The DP-SGD all-contributions sweep, computed once and shared by the tests that read it.
struct SgdAllSweep {
    cases: Vec<SgdAllCase>,
    /// Cases with more than [`MAX_CONTRIBUTIONS`] contributions (not computed).
    skipped: usize,
    seconds: f64,
}

fn sgd_all_sweep() -> &'static SgdAllSweep {
    static SWEEP: OnceLock<SgdAllSweep> = OnceLock::new();
    SWEEP.get_or_init(|| {
        let t0 = std::time::Instant::now();
        let noise = sweep_noise();
        let mut cases = Vec::new();
        let mut skipped = 0usize;
        for (gi, (name, topo)) in graphs().iter().enumerate() {
            let rows = transition_rows(topo);
            let n = topo.n();
            for regime in 0..SGD_REGIMES.len() {
                let mut r = rng(9000 + 10 * gi as u64 + regime as u64);
                for p in 0..PATHS_PER_SETTING {
                    let model = random_sgd_model(n, regime, &mut r);
                    let len = r.random_range(2 * n..=(8 * n).min(200));
                    let path = draw_path(&rows, r.random_range(0..n), len, &mut r);
                    let resp = Responses::sgd(&model, &path).unwrap();
                    let i = path[r.random_range(0..len)];
                    let visits = all_visits(&path);
                    let flat = path.iter().all(|&l| model.slope(l) == 1.0);
                    let shared: Arc<[usize]> = path.clone().into();
                    for (kind, j) in observers(&rows, i, &mut r) {
                        let steps: Vec<usize> = (0..len).filter(|&s| path[s] == i).collect();
                        if steps.len() > MAX_CONTRIBUTIONS {
                            skipped += 1;
                            continue;
                        }
                        let (additive, grouped) = sgd_bounds(&resp, &steps, j);
                        let exact = [Prior::Visits, Prior::KnownState]
                            .map(|prior| resp.all(i, j, prior, noise).unwrap());
                        cases.push(SgdAllCase {
                            graph: name.clone(),
                            regime,
                            seed_path: p,
                            kind,
                            i,
                            j,
                            hops: steps.iter().map(|&k| resp.hops_seen(k, j)).collect(),
                            steps,
                            exact,
                            additive,
                            grouped,
                            psi: psi(&visits, i, j),
                            flat,
                            path: Arc::clone(&shared),
                        });
                    }
                }
            }
        }
        SgdAllSweep {
            cases,
            skipped,
            seconds: t0.elapsed().as_secs_f64(),
        }
    })
}

fn describe_all(c: &SgdAllCase) -> String {
    format!(
        "graph {} {} path#{} observer {} i={} j={} K={} flat={} contributions at {:?} hops {:?}: \
         exact share [own visits {:.9}, known state {:.9}] (signs {:?}, {:?}); Σ 1/m {:.9}, \
         grouped {:.9}, Ψ {:.9}; observations {:?}; path {:?}",
        c.graph,
        SGD_REGIMES[c.regime],
        c.seed_path,
        c.kind,
        c.i,
        c.j,
        c.path.len(),
        c.flat,
        c.steps,
        c.hops,
        c.exact[0].share,
        c.exact[1].share,
        c.exact[0].signs,
        c.exact[1].signs,
        c.additive,
        c.grouped,
        c.psi,
        c.exact[1].observations,
        c.path
    )
}

#[test]
fn sgd_all_contributions_against_the_additive_and_grouped_figures() {
    let sweep = sgd_all_sweep();
    let local = local_unit(sweep_noise());
    let mut lines = Vec::new();
    let mut overall = [CompositionMax::default(); 2];
    let mut worst_case = String::new();
    let mut above = 0usize;
    for (name, _) in graphs() {
        let mut line = format!("  {name:<13}");
        for (regime, regime_name) in SGD_REGIMES.iter().enumerate() {
            let mut max = [CompositionMax::default(); 2];
            for c in sweep
                .cases
                .iter()
                .filter(|c| c.graph == name && c.regime == regime)
            {
                let (additive, grouped) = (c.additive, c.grouped);
                for (pi, e) in c.exact.iter().enumerate() {
                    check_numerics(e, c.steps.len());
                    let local_bound = c.steps.len() as f64 * local;
                    assert!(e.divergence <= local_bound * (1.0 + TOL), "{e:?}");
                    assert!(
                        e.share <= grouped * (1.0 + TOL),
                        "DP-SGD: all contributions above the grouped figure {grouped}: {}",
                        describe_all(c)
                    );
                    if e.share > additive * (1.0 + TOL) {
                        above += 1;
                    }
                    let m = &mut max[pi];
                    m.local = m.local.max(e.divergence / local_bound);
                    m.additive = m.additive.max(e.share / additive);
                    m.grouped = m.grouped.max(e.share / grouped);
                    let o = &mut overall[pi];
                    o.local = o.local.max(e.divergence / local_bound);
                    o.grouped = o.grouped.max(e.share / grouped);
                    if e.share / additive > o.additive {
                        o.additive = e.share / additive;
                        if pi == 1 {
                            worst_case = format!(
                                "graph {name} {regime_name} path#{} observer {} i={} j={} K={} \
                                 contributions at {:?} hops {:?}: exact share {:.6} (signs {:?}) \
                                 vs Σ 1/m = {additive:.6}, grouped {grouped:.6}; observations {:?}",
                                c.seed_path,
                                c.kind,
                                c.i,
                                c.j,
                                c.path.len(),
                                c.steps,
                                c.hops,
                                e.share,
                                e.signs,
                                e.observations
                            );
                        }
                    }
                }
                // The excursion charge (network-dp-2 §3) is never above the grouped figure: Φ of
                // one excursion is at most (Σ_c 1/√r_c)² (the shifts spread in proportion).
                assert!(
                    c.psi <= grouped * (1.0 + 1e-12),
                    "Ψ above the grouped figure: {}",
                    describe_all(c)
                );
            }
            line += &format!(
                "  {regime_name}: Σ1/m {:.4}/{:.4} grouped {:.4}/{:.4}",
                max[0].additive, max[1].additive, max[0].grouped, max[1].grouped
            );
        }
        lines.push(line);
    }
    let counted = sweep.cases.len();
    eprintln!(
        "[DP-SGD all contributions] max exact/(ε_loc·Σ_c 1/min(M_c,K−k_c)) (\"Σ1/m\") and \
         exact/(ε_loc·Σ_groups (Σ_c 1/√m_c)²) (\"grouped\"), own visits/known state; {counted} \
         cases, {} skipped (> {MAX_CONTRIBUTIONS} contributions), {:.1} s:\n{}",
        sweep.skipped,
        sweep.seconds,
        lines.join("\n")
    );
    eprintln!(
        "[DP-SGD all contributions] overall: Σ1/m {:.6}/{:.6}, grouped {:.6}/{:.6}, local \
         {:.6}/{:.6}; above Σ1/m in {above} (case, prior) pairs of {}; worst Σ1/m: {worst_case}",
        overall[0].additive,
        overall[1].additive,
        overall[0].grouped,
        overall[1].grouped,
        overall[0].local,
        overall[1].local,
        2 * counted
    );
    assert!(overall[0].grouped <= 1.0 + TOL && overall[1].grouped <= 1.0 + TOL);
    // The additive figure fails (see `sgd_contributions_seen_together_do_not_compose_additively`):
    // if this fails, the reference now agrees with it; find out why before accounting with it.
    assert!(overall[1].additive > 1.0 + 1e-3, "{}", overall[1].additive);
}

/// The ratio exact / Ψ over a set of (case, prior) pairs.
#[derive(Debug, Clone, Default)]
struct RatioStats {
    max: f64,
    sum: f64,
    count: usize,
    worst: String,
}

impl RatioStats {
    fn add(&mut self, ratio: f64, c: &SgdAllCase) {
        self.sum += ratio;
        self.count += 1;
        if ratio > self.max {
            self.max = ratio;
            self.worst = describe_all(c);
        }
    }

    fn mean(&self) -> f64 {
        self.sum / self.count.max(1) as f64
    }
}

#[test]
fn sgd_all_contributions_within_psi() {
    // network-dp-2 §6.1. The reference's view (`Responses::all`) is j's whole view: every visit
    // of j (w_t before j's step) and the final model w_K (dropped when j made the last step, as
    // it is then a function of the rest). Ψ splits the path at exactly these observations (each
    // visit of j, then the final model), with time 0 an observation (w_0 is public), and charges
    // every visit of i (the reference shifts them all); so `D_α(view_j | π) ≤ ε_loc(α)·Ψ_ij(π)`
    // applies to the reference's view as it is, for both priors (the known state before i's
    // first contribution only removes noise before every charged hop).
    let sweep = sgd_all_sweep();
    // [prior][flat, not flat]
    let mut stats: [[RatioStats; 2]; 2] = Default::default();
    let mut lines = Vec::new();
    for (name, _) in graphs() {
        let mut line = format!("  {name:<13}");
        for (regime, regime_name) in SGD_REGIMES.iter().enumerate() {
            let mut max = [0.0f64; 2];
            for c in sweep
                .cases
                .iter()
                .filter(|c| c.graph == name && c.regime == regime)
            {
                assert!(
                    c.psi > 0.0,
                    "i contributes on its path: {}",
                    describe_all(c)
                );
                for (pi, e) in c.exact.iter().enumerate() {
                    assert!(
                        e.share <= c.psi * (1.0 + TOL),
                        "SOUNDNESS: exact share above Ψ ({}): {}",
                        ["own visits", "known state"][pi],
                        describe_all(c)
                    );
                    let ratio = e.share / c.psi;
                    stats[pi][usize::from(!c.flat)].add(ratio, c);
                    max[pi] = max[pi].max(ratio);
                }
            }
            line += &format!("  {regime_name}: {:.6}/{:.6}", max[0], max[1]);
        }
        lines.push(line);
    }
    eprintln!(
        "[DP-SGD all contributions vs Ψ] max exact/(ε_loc·Ψ_ij(path)), own visits/known state; \
         {} cases:\n{}",
        sweep.cases.len(),
        lines.join("\n")
    );
    for (pi, prior) in ["own visits", "known state"].into_iter().enumerate() {
        for (fi, paths) in ["flat", "not flat"].into_iter().enumerate() {
            let s = &stats[pi][fi];
            eprintln!(
                "[DP-SGD all contributions vs Ψ] {prior}, {paths} paths: max exact/Ψ {:.12}, \
                 mean {:.6} over {} cases",
                s.max,
                s.mean(),
                s.count
            );
        }
        let both = [&stats[pi][0], &stats[pi][1]];
        let max = both[0].max.max(both[1].max);
        let mean = (both[0].sum + both[1].sum) / (both[0].count + both[1].count) as f64;
        eprintln!(
            "[DP-SGD all contributions vs Ψ] {prior}: max exact/Ψ {max:.12}, mean {mean:.6}; \
             worst (flat): {}",
            both[0].worst
        );
        // The bound is attained on flat paths: a Ψ inflated by mistake would fail here.
        assert!(
            both[0].count > 0 && both[0].max >= 0.999,
            "{prior}: {}",
            both[0].max
        );
    }
}

#[test]
fn sgd_pinned_paths_of_network_dp_2() {
    // network-dp-2 §7: DP-SGD, all slopes 1 (flat; the worst case), users i = 0, l = 1, m = 3,
    // observer j = 2. Columns: exact share (linear-Gaussian reference, whole view), Ψ (PAVA) and
    // the withdrawn additive rule Σ_c 1/min(M_c, K − k_c).
    let (i, l, j, m) = (0usize, 1usize, 2usize, 3usize);
    let model = SgdModel::new(0.4, vec![0.0; 4], 0.0).unwrap();
    let noise = sweep_noise();
    let mut cases: Vec<(String, Vec<usize>, f64, f64, f64)> = vec![
        ("i l i l → j".into(), vec![i, l, i, l, j], 1.0, 1.0, 0.75),
        (
            "i l i → j".into(),
            vec![i, l, i, j],
            4.0 / 3.0,
            1.5,
            4.0 / 3.0,
        ),
        (
            "i l m i l → final".into(),
            vec![i, l, m, i, l],
            0.8,
            5.0 / 6.0,
            0.7,
        ),
        (
            "i l j i j i l → final".into(),
            vec![i, l, j, i, j, i, l],
            2.0,
            2.0,
            2.0,
        ),
    ];
    for c in 1..=6usize {
        let mut path: Vec<usize> = (0..c).flat_map(|_| [i, l]).collect();
        path.push(j);
        let harmonic: f64 = (1..=c).map(|h| 1.0 / h as f64).sum();
        let half = c as f64 / 2.0;
        cases.push((format!("(i l)×{c} → j"), path, half, half, harmonic / 2.0));
    }
    let mut lines = Vec::new();
    for (label, path, exact, want_psi, want_additive) in &cases {
        let resp = Responses::sgd(&model, path).unwrap();
        let steps: Vec<usize> = (0..path.len()).filter(|&s| path[s] == i).collect();
        let (additive, _) = sgd_bounds(&resp, &steps, j);
        let got_psi = psi(&all_visits(path), i, j);
        assert!((got_psi - want_psi).abs() < 1e-12, "{label}: Ψ {got_psi}");
        assert!(
            (additive - want_additive).abs() < 1e-12,
            "{label}: additive {additive}"
        );
        for prior in [Prior::Visits, Prior::KnownState] {
            let e = resp.all(i, j, prior, noise).unwrap();
            check_numerics(&e, steps.len());
            assert!(
                (e.share / exact - 1.0).abs() < 1e-12,
                "{label} ({prior:?}): exact {} against the table's {exact}",
                e.share
            );
            assert!(e.share <= got_psi * (1.0 + TOL), "{label}: {e:?}");
        }
        lines.push(format!(
            "  {label:<22} exact {exact:.6}  Ψ {got_psi:.6}  additive {additive:.6}"
        ));
    }
    eprintln!("[network-dp-2 §7 pinned paths]\n{}", lines.join("\n"));
    // Why the additive rule was withdrawn: on i l i l → j it charges 1/4 + 1/2 = 3/4 of ε_loc
    // while the view leaks all of it (the two contributions share the noise after them).
    let (_, path, exact, _, additive) = &cases[0];
    assert_eq!(path, &vec![i, l, i, l, j]);
    assert!((additive - 0.75).abs() < 1e-15 && *additive < exact - 0.2);
}

/// The stateless Douglas–Rachford walk (network-dp-2 §8: ADMM's step after
/// `u_l := w`), scalar and clip inactive, written from the step's equations: the token values.
#[allow(clippy::too_many_arguments)]
fn simulate_stateless(
    lambda: f64,
    gamma: f64,
    a: &[f64],
    b: &[f64],
    mu: f64,
    path: &[usize],
    eta: &[f64],
    shift: &[f64],
) -> Vec<f64> {
    let n = a.len() as f64;
    let mut w = 0.0;
    let mut out = vec![w];
    for (t, &l) in path.iter().enumerate() {
        let u_l = w;
        let z = w / (1.0 + gamma * mu);
        let v = 2.0 * z - u_l;
        let x = (v + gamma * a[l] * b[l]) / (1.0 + gamma * a[l]);
        let delta = x - z + shift[t];
        let du = 2.0 * lambda * (delta + eta[t] / 2.0);
        w += du / n;
        out.push(w);
    }
    out
}

#[test]
fn admm_counterexample_exceeds_psi() {
    // network-dp-2 §7, last paragraph: i → l → m → l → j with a = 0, r = 0, n = 5, first-arrival
    // view (here also the whole view: j's only observation is its arrival, the last step, after
    // which the final model is a function of it). The DP-SGD certificate Ψ = Φ([4]) = 1/4 does not
    // hold for ADMM (u_l retracts l's noise), which is why ADMM has no network figure.
    let (i, l, m, j) = (0usize, 1usize, 2usize, 3usize);
    let path = [i, l, m, l, j];
    let n = 5;
    let psi_ij = psi(&all_visits(&path), i, j);
    assert!((psi_ij - 0.25).abs() < 1e-15, "{psi_ij}");
    let pinned = [(0.1, 0.303781), (0.5, 0.469928), (1.0, 0.560641)];
    let mut lines = Vec::new();
    for (lambda, want) in pinned {
        let model = LinearModel::new(lambda, 1.0, vec![0.0; n], 0.0).unwrap();
        for window in [Window::FirstArrival, Window::Whole] {
            for prior in [Prior::Visits, Prior::KnownState] {
                let e = contribution_divergence(&model, &path, 0, j, window, prior, unit_noise())
                    .unwrap();
                // The table's 6 decimals.
                assert!(
                    (e.share - want).abs() < 5e-7,
                    "λ={lambda} {window:?} {prior:?}: {} against {want}",
                    e.share
                );
                assert!(e.share > psi_ij * (1.0 + 1e-3), "λ={lambda}: {}", e.share);
            }
        }
        // The stateless variant (u_l := w before each step) is a DP-SGD-like memoryless walk:
        // with a = 0, r = 0 every step has slope 1 and the same gain 2λ/n on shift and noise, so
        // its view w_4 leaks exactly Ψ = 1/4. (Not in the reference: a direct simulation; the
        // responses of w_4 to the input Δ + η/2 of each step, v_s, give the share v_0²/‖v‖².)
        let zero = [0.0; 4];
        let (a, b) = (vec![0.0; n], vec![0.3; n]);
        let base = simulate_stateless(lambda, 1.0, &a, &b, 0.0, &path[..4], &zero, &zero)[4];
        let v: Vec<f64> = (0..4)
            .map(|s| {
                let mut e = zero;
                e[s] = 1.0;
                simulate_stateless(lambda, 1.0, &a, &b, 0.0, &path[..4], &zero, &e)[4] - base
            })
            .collect();
        let stateless = v[0] * v[0] / v.iter().map(|x| x * x).sum::<f64>();
        assert!((stateless - 0.25).abs() < 1e-12, "λ={lambda}: {stateless}");
        lines.push(format!(
            "  λ={lambda}: exact {want:.6} (ratio to Ψ {:.4}), stateless {stateless:.6}",
            want / psi_ij
        ));
    }
    eprintln!(
        "[ADMM i→l→m→l→j, n=5, against Ψ = 1/4]\n{}",
        lines.join("\n")
    );
}
