//! The proof of `dpwalk_privacy::unit::record_level_clip`, tested on the real steps: replace
//! one record of a user, run the released step on both datasets with the same noise, and check
//! that the two messages differ by at most `2·min(C, γG₂/m)` (ADMM) or `2·min(C, G₂/m)` (DP-SGD),
//! `G₂` the problem's per-record gradient bound over both datasets.
//!
//! The ADMM bound assumes an exact prox; the solvers stop at a certified distance `τ` from it
//! (`ProxScratch::last_certificate`, about 1e-13 relative), so the ADMM check adds the two
//! certificates, which the module docs say an inexact prox costs, and nothing else but the
//! rounding of the subtraction itself. Besides random instances, a family built to nearly attain
//! the bound (both records' margins very negative, the loss almost linear there) checks that the
//! test is sharp: it must come within 2 % of the bound.

// A failed unwrap is a failed test.
#![allow(clippy::unwrap_used)]

use dpwalk_core::data::{Dataset, LabelKind, UserData};
use dpwalk_core::noise::fill_standard_normal;
use dpwalk_core::params::{AdmmParams, SgdParams};
use dpwalk_core::problem::{Loss, Problem, ProxScratch, Regularizer};
use dpwalk_core::rng::NodeRng;
use dpwalk_core::step::{Algorithm, StepScratch, admm_contribution, noisy_clipped_grad};
use dpwalk_privacy::unit::record_level_clip;
use rand::{RngExt, SeedableRng};

/// One user's records `(a, b)`, the instance of a test.
struct Instance {
    loss: Loss,
    p: usize,
    rows: Vec<Vec<f64>>,
    labels: Vec<f64>,
}

impl Instance {
    /// The problem of one user holding `rows`, with record `j` replaced by `(a, b)` if given.
    fn problem(&self, replace: Option<(usize, &[f64], f64)>) -> Problem {
        let mut rows = self.rows.clone();
        let mut labels = self.labels.clone();
        if let Some((j, a, b)) = replace {
            rows[j] = a.to_vec();
            labels[j] = b;
        }
        let label_kind = match self.loss {
            Loss::Multinomial { classes } => LabelKind::Classes(classes),
            _ => LabelKind::Binary,
        };
        let m = rows.len();
        let data = UserData {
            data: Dataset {
                features: rows.concat(),
                labels,
                n_features: self.p,
                label_kind,
            },
            offsets: vec![0, m],
        };
        Problem::new(self.loss, Regularizer::None, data).unwrap()
    }
}

fn vector(rng: &mut NodeRng, len: usize, scale: f64) -> Vec<f64> {
    let mut v = vec![0.0; len];
    fill_standard_normal(rng, &mut v);
    v.iter_mut().for_each(|x| *x *= scale);
    v
}

fn norm(v: &[f64]) -> f64 {
    v.iter().map(|x| x * x).sum::<f64>().sqrt()
}

fn diff_norm(a: &[f64], b: &[f64]) -> f64 {
    a.iter()
        .zip(b)
        .map(|(x, y)| (x - y) * (x - y))
        .sum::<f64>()
        .sqrt()
}

fn label(rng: &mut NodeRng, loss: Loss) -> f64 {
    match loss {
        Loss::Multinomial { classes } => rng.random_range(0..classes) as f64,
        _ => {
            if rng.random_bool(0.5) {
                1.0
            } else {
                -1.0
            }
        }
    }
}

/// A random user's data and the same with one record replaced, row norms spread over two
/// decades.
fn random_pair(rng: &mut NodeRng) -> (Problem, Problem) {
    let loss = if rng.random_bool(0.7) {
        Loss::Logistic
    } else {
        Loss::Multinomial {
            classes: rng.random_range(2..5),
        }
    };
    let p = rng.random_range(1..6);
    let m = rng.random_range(1..8);
    let row = |rng: &mut NodeRng| {
        let scale = 10f64.powf(rng.random_range(-1.0..1.0));
        vector(rng, p, scale)
    };
    let rows: Vec<Vec<f64>> = (0..m).map(|_| row(rng)).collect();
    let labels = (0..m).map(|_| label(rng, loss)).collect();
    let j = rng.random_range(0..m);
    let a = row(rng);
    let b = label(rng, loss);
    let inst = Instance {
        loss,
        p,
        rows,
        labels,
    };
    (inst.problem(None), inst.problem(Some((j, &a, b))))
}

/// `G₂` over both datasets: the bound must hold for the replaced record and its replacement.
fn grad_bound(x: &Problem, y: &Problem) -> f64 {
    x.record_grad_bound()
        .unwrap()
        .max(y.record_grad_bound().unwrap())
}

/// What one ADMM comparison measured.
struct Measured {
    /// `‖Δ − Δ'‖` of the released (clipped) updates.
    distance: f64,
    /// `2·min(C, γG₂/m)`.
    bound: f64,
    /// The prox certificates of both runs and the rounding of the subtraction.
    slack: f64,
}

/// Runs the real ADMM contribution on both datasets with the same noise and the same `(z, u)`.
fn admm_case(
    x: &Problem,
    y: &Problem,
    params: &AdmmParams,
    z: &[f64],
    u: &[f64],
    seed: u64,
) -> Measured {
    let dim = x.dim();
    let g = grad_bound(x, y);
    let m = x.data().records(0) as u64;
    let clip = record_level_clip(&Algorithm::Admm(*params), m, g).unwrap();
    let mut released = Vec::new();
    let mut slack = 0.0;
    for problem in [x, y] {
        let prox = problem.local_prox(params.gamma()).unwrap();
        // The certificate of the step's own prox call: same inputs, same start, same solver.
        let v: Vec<f64> = z.iter().zip(u).map(|(zk, uk)| 2.0 * zk - uk).collect();
        let mut out = z.to_vec();
        let mut ps = ProxScratch::default();
        prox.prox(0, &v, &mut out, &mut ps).unwrap();
        slack += ps.last_certificate();
        let mut uu = u.to_vec();
        let mut scratch = StepScratch::new(dim, ProxScratch::default());
        let mut rng = NodeRng::seed_from_u64(seed);
        admm_contribution(&prox, params, 0, &mut uu, z, &mut rng, &mut scratch).unwrap();
        // du = 2λ(clip(Δ) + ση/2): the released message; the noise is the same in both.
        let two_lambda = 2.0 * params.relaxation();
        released.push(
            scratch
                .last_du()
                .iter()
                .map(|d| d / two_lambda)
                .collect::<Vec<f64>>(),
        );
    }
    let rounding = 1e-12 * (norm(&released[0]) + norm(&released[1]));
    Measured {
        distance: diff_norm(&released[0], &released[1]),
        bound: 2.0 * clip,
        slack: slack + rounding,
    }
}

#[test]
fn the_released_admm_update_moves_by_at_most_the_record_level_sensitivity() {
    let mut rng = NodeRng::seed_from_u64(20_240_611);
    let (mut worst, mut active, mut inactive) = ([0.0f64; 2], 0usize, 0usize);
    let mut over = f64::NEG_INFINITY;
    for case in 0..3000u64 {
        let (x, y) = random_pair(&mut rng);
        let dim = x.dim();
        let gamma = 10f64.powf(rng.random_range(-2.0..2.0));
        let clip = 10f64.powf(rng.random_range(-2.0..2.0));
        let lambda = rng.random_range(0.05..=1.0);
        let params = AdmmParams::new(gamma, lambda, 1.0, Some(clip)).unwrap();
        let scale = 10f64.powf(rng.random_range(-1.0..2.0));
        let z = vector(&mut rng, dim, scale);
        let u = vector(&mut rng, dim, scale);
        let r = admm_case(&x, &y, &params, &z, &u, case);
        assert!(
            r.distance <= r.bound + r.slack,
            "case {case}: ‖Δ − Δ'‖ = {} > 2·min(C, γG₂/m) = {} (+ slack {})",
            r.distance,
            r.bound,
            r.slack
        );
        let ratio = r.distance / r.bound;
        if r.bound < 2.0 * clip {
            active += 1;
            worst[0] = worst[0].max(ratio);
        } else {
            inactive += 1;
            worst[1] = worst[1].max(ratio);
        }
        over = over.max(r.distance - r.bound);
    }
    println!(
        "ADMM, 3000 random instances: max ‖Δ − Δ'‖ / bound = {:.6} over {active} with γG₂/m < C, \
         {:.6} over {inactive} with C binding; largest excess over the bound {over:e} (within the \
         certificates and rounding)",
        worst[0], worst[1]
    );
    // Both regimes were exercised.
    assert!(active > 300 && inactive > 300, "{active} / {inactive}");
}

#[test]
fn the_admm_bound_is_nearly_attained_where_the_loss_is_almost_linear() {
    // One user, m records; the replaced record and its replacement are mirror images across the
    // first axis, both with margin about −K·G·cos φ at x ≈ (−K, 0, …), where σ is 1 to many
    // digits: x − x' ≈ γ(g − g')/m with ‖g − g'‖ = 2G sin φ.
    let mut best = 0.0f64;
    for (case, &(m, phi_deg)) in [(1usize, 85.0f64), (3, 88.0), (10, 89.0)]
        .iter()
        .enumerate()
    {
        let g = 1.5;
        let phi = phi_deg.to_radians();
        let p = 3;
        let record = |sign: f64| vec![g * phi.cos(), sign * g * phi.sin(), 0.0];
        let mut rows = vec![record(1.0)];
        // The other records far on the same side: also nearly linear there.
        rows.extend((1..m).map(|_| vec![g * 0.9, 0.0, g * 0.1]));
        let inst = Instance {
            loss: Loss::Logistic,
            p,
            rows,
            labels: vec![1.0; m],
        };
        let x = inst.problem(None);
        let y = inst.problem(Some((0, &record(-1.0), 1.0)));
        let gamma = 0.01;
        let params = AdmmParams::new(gamma, 0.5, 1.0, Some(1e6)).unwrap();
        let z = vec![-20_000.0, 0.0, 0.0];
        let u = z.clone(); // v = 2z − u = z
        let r = admm_case(&x, &y, &params, &z, &u, case as u64);
        assert!(
            r.distance <= r.bound + r.slack,
            "{} > {}",
            r.distance,
            r.bound
        );
        best = best.max(r.distance / r.bound);
    }
    println!("ADMM, near-linear family: max ‖Δ − Δ'‖ / bound = {best:.5}");
    assert!(
        best > 0.98,
        "the construction should nearly attain the bound: {best}"
    );
}

#[test]
fn the_released_dp_sgd_gradient_moves_by_at_most_the_record_level_sensitivity() {
    let mut rng = NodeRng::seed_from_u64(7_777);
    let mut worst = 0.0f64;
    let mut over = f64::NEG_INFINITY;
    for case in 0..3000u64 {
        let (x, y) = random_pair(&mut rng);
        let dim = x.dim();
        let clip = 10f64.powf(rng.random_range(-2.0..2.0));
        let params = SgdParams::new(0.1, 1.0, Some(clip)).unwrap();
        let g = grad_bound(&x, &y);
        let m = x.data().records(0) as u64;
        let bound = 2.0 * record_level_clip(&Algorithm::Sgd(params), m, g).unwrap();
        let w_scale = 10f64.powf(rng.random_range(-1.0..2.0));
        let w = vector(&mut rng, dim, w_scale);
        let mut released = Vec::new();
        for problem in [&x, &y] {
            let mut rng = NodeRng::seed_from_u64(case);
            let (mut out, mut eta) = (vec![0.0; dim], vec![0.0; dim]);
            noisy_clipped_grad(problem, &params, 0, &w, &mut rng, &mut out, &mut eta).unwrap();
            released.push(out);
        }
        let distance = diff_norm(&released[0], &released[1]);
        let rounding = 1e-12 * (norm(&released[0]) + norm(&released[1]));
        assert!(
            distance <= bound + rounding,
            "case {case}: {distance} > 2·min(C, G₂/m) = {bound}"
        );
        worst = worst.max(distance / bound);
        over = over.max(distance - bound);
    }
    println!(
        "DP-SGD, 3000 random instances: max ‖g − g'‖ / bound = {worst:.6}; largest excess {over:e}"
    );
}
