//! The private ADMM step (one contribution of one user) and the DP-SGD baseline step.
//!
//! # The ADMM step (DESIGN.md, "The step")
//! ```text
//! z   = prox_{γ r}(w)                 model of the token's running average w
//! x   = prox_{γ f_i}(2z − u_i)        the only place local data enters
//! Δ   = clip(x − z, C)                ‖Δ‖₂ ≤ C bounds the sensitivity, whatever the solver did
//! η   ~ N(0, σ² I)
//! u_i ← u_i + 2λ (Δ + η/2)
//! w   ← w + (u_i' − u_i) / n
//! ```
//!
//! # Scaling convention (derived once, here)
//! This is Douglas–Rachford splitting on the product space `x = (x_1, …, x_n)` for
//! `g(x) = Σ_i f_i(x_i)` and `h(x) = ι{x_1 = … = x_n} + n·r(x_1)`, with relaxation `2λ`:
//! `prox_{γ h}(u)` minimizes `n r(z) + Σ_i ‖z − u_i‖²/(2γ) = n [r(z) + ‖z − ū‖²/(2γ)] + const`,
//! so it is `prox_{γ r}(ū)` with `ū = w = (1/n) Σ u_i`, and `prox_{γ g}` is `prox_{γ f_i}` block by
//! block. Its fixed points give `z* = argmin Σ_i f_i + n r = argmin (1/n) Σ_i f_i + r`: the `1/n` of
//! the consensus objective goes into the regularizer's weight, and both prox operators use the same
//! `γ`. With `σ = 0` and no clipping the decentralized, federated and centralized schedules (one,
//! `m`, or all `n` blocks per update of `w`) are randomized block-coordinate versions of the same
//! averaged operator (for `λ < 1`); the convergence tests pin this convention.
//!
//! # Why the token carries `w`, not `z`
//! Algorithm 4 as printed adds each update to the thresholded `z`; with an L1 regularizer the
//! shrinkage compounds and the iterates go to 0. Carrying the un-thresholded `w` (as Algorithm 2
//! and Appendix B.3 do) converges, and `w` is built only from the noisy `u` updates.
//!
//! # DP-SGD on the walk
//! The baseline: at user `i`, `g = clip(∇f_i(w), C) + η/2`, `w ← prox_{lr·r}(w − lr·g)`, and the
//! token's `w` *is* the model. Noise `η/2` with `η ~ N(0, σ² I)` on a gradient of sensitivity `2C`
//! costs exactly the ADMM step's local RDP `8αC²/σ²`, so the same `(σ, C)` means the same privacy.
//!
//! # Randomness
//! A contribution draws its `dim` Gaussians from the user's own stream (`crate::rng::node_rng`),
//! one `StandardNormal` sample per coordinate in coordinate order
//! ([`crate::noise::fill_standard_normal`]), and nothing else; the walk's next hop is drawn after it
//! from the same stream (`crate::topology::Topology::next_hop`).
//!
//! # Cost (the simulator's hot loop)
//! No step allocates or copies `z`: buffers live in [`StepScratch`]. The noise is about half of a
//! step at p = 64; the ADMM step draws it after summing `‖Δ‖²`, whose sequential sum is a chain of
//! dependent additions, so that the processor draws the noise while the chain completes.

use crate::noise::fill_standard_normal;
use crate::params::{AdmmParams, SgdParams};
use crate::problem::{LocalProx, Problem, ProblemError, ProxScratch, Regularizer};
use crate::rng::NodeRng;

/// Which update a block performs.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Algorithm {
    /// The private ADMM step; the token carries `w` and the model is `prox_{γ r}(w)`.
    Admm(AdmmParams),
    /// DP-SGD; the token carries the model itself.
    Sgd(SgdParams),
}

impl Algorithm {
    /// The model released for a token value `w`: `prox_{γ r}(w)` for ADMM, `w` itself for DP-SGD.
    pub fn model(&self, reg: &Regularizer, w: &[f64], z: &mut [f64]) {
        match self {
            Algorithm::Admm(p) => reg.prox(p.gamma(), w, z),
            Algorithm::Sgd(_) => z.copy_from_slice(w),
        }
    }

    /// σ.
    pub fn sigma(&self) -> f64 {
        match self {
            Algorithm::Admm(p) => p.sigma(),
            Algorithm::Sgd(p) => p.sigma(),
        }
    }

    /// C, or `None` when unclipped.
    pub fn clip(&self) -> Option<f64> {
        match self {
            Algorithm::Admm(p) => p.clip(),
            Algorithm::Sgd(p) => p.clip(),
        }
    }
}

/// What a contribution did, for metrics.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Contribution {
    /// Whether the clip was active (`‖x − z‖₂ > C`, or `‖∇f_i‖₂ > C`).
    pub clipped: bool,
}

/// Buffers of one driver, sized once, so that a step allocates nothing.
#[derive(Debug)]
pub struct StepScratch {
    z: Vec<f64>,
    v: Vec<f64>,
    x: Vec<f64>,
    du: Vec<f64>,
    /// The contribution's `dim` standard normal samples.
    eta: Vec<f64>,
    prox: ProxScratch,
}

impl StepScratch {
    /// Buffers for a problem of dimension `dim`.
    pub fn new(dim: usize, prox: ProxScratch) -> Self {
        Self {
            z: vec![0.0; dim],
            v: vec![0.0; dim],
            x: vec![0.0; dim],
            du: vec![0.0; dim],
            eta: vec![0.0; dim],
            prox,
        }
    }

    /// The change `u_i' − u_i` of the last ADMM contribution.
    pub fn last_du(&self) -> &[f64] {
        &self.du
    }

    /// The dimension the buffers were sized for.
    pub fn dim(&self) -> usize {
        // Not `z`: the walk step lends `z` out while the contribution runs. All buffers are
        // sized alike by `new`.
        self.du.len()
    }

    /// Refuses buffers sized for another dimension than `dim`.
    fn check(&self, dim: usize) -> Result<(), ProblemError> {
        ProblemError::check_length("the step's scratch buffers", dim, self.dim())
    }
}

/// Scales `d` in place to Euclidean norm at most `clip`; returns whether it was scaled.
pub fn clip_in_place(d: &mut [f64], clip: Option<f64>) -> bool {
    let scale = clip_scale(d.iter().map(|v| v * v).sum(), clip);
    if let Some(s) = scale {
        d.iter_mut().for_each(|v| *v *= s);
    }
    scale.is_some()
}

/// The factor `C / ‖d‖₂` that brings a vector of squared norm `norm_sq` (summed in coordinate
/// order) down to norm `C`, or `None` when it is within the bound or there is no clip.
fn clip_scale(norm_sq: f64, clip: Option<f64>) -> Option<f64> {
    let c = clip?;
    let norm = norm_sq.sqrt();
    (norm > c).then(|| c / norm)
}

/// One ADMM contribution of `user` against the model `z`: updates `u` (the user's `u_i`) in
/// place and leaves `u_i' − u_i` in `scratch.last_du()`. Does not touch `w`: the caller adds
/// `du / n` to it ([`add_to_average`]) now (walk) or after the round (federated, centralized).
///
/// # Errors
/// [`ProblemError::Length`] when `u`, `z` or the scratch is not of the problem's dimension,
/// [`ProblemError::User`] for a user the problem does not have; nothing is changed then.
#[allow(clippy::too_many_arguments)]
pub fn admm_contribution(
    prox: &LocalProx<'_>,
    params: &AdmmParams,
    user: usize,
    u: &mut [f64],
    z: &[f64],
    rng: &mut NodeRng,
    scratch: &mut StepScratch,
) -> Result<Contribution, ProblemError> {
    let dim = prox.dim();
    ProblemError::check_length("u_i", dim, u.len())?;
    ProblemError::check_length("the model z", dim, z.len())?;
    scratch.check(dim)?;
    let StepScratch {
        v,
        x,
        du,
        eta,
        prox: prox_scratch,
        ..
    } = scratch;
    // The prox's argument, and its starting point (the model) for the iterative solvers.
    for (((vk, xk), &zk), &uk) in v.iter_mut().zip(x.iter_mut()).zip(z).zip(u.iter()) {
        *vk = 2.0 * zk - uk;
        *xk = zk;
    }
    prox.prox(user, v, x, prox_scratch)?;
    // Δ = x − z, held in `du` until it becomes the update, and ‖Δ‖² summed in coordinate order.
    let mut norm_sq = 0.0;
    for ((d, &xk), &zk) in du.iter_mut().zip(x.iter()).zip(z) {
        *d = xk - zk;
        norm_sq += *d * *d;
    }
    let scale = clip_scale(norm_sq, params.clip());
    // Drawn here, independent of the sum above, so that it overlaps the sum's latency.
    fill_standard_normal(rng, eta);
    // The clip's scaling is applied in the update; multiplying by 1 leaves an unclipped Δ exact.
    let s = scale.unwrap_or(1.0);
    let two_lambda = 2.0 * params.relaxation();
    let half_sigma = 0.5 * params.sigma();
    for ((d, uk), &ek) in du.iter_mut().zip(u.iter_mut()).zip(eta.iter()) {
        *d = two_lambda * (*d * s + half_sigma * ek);
        *uk += *d;
    }
    Ok(Contribution {
        clipped: scale.is_some(),
    })
}

/// `w ← w + du / n`: how one block's change enters the token's running average.
pub fn add_to_average(w: &mut [f64], du: &[f64], n_users: usize) {
    let inv_n = 1.0 / n_users as f64;
    for (wk, &d) in w.iter_mut().zip(du) {
        *wk += d * inv_n;
    }
}

/// One decentralized ADMM step at the token holder `user`: `z = prox_{γ r}(w)`, the contribution,
/// and `w ← w + (u_i' − u_i)/n`. This is what a node does on receiving the token, in the daemon and
/// in the simulator alike; the next hop is drawn afterwards by the caller.
///
/// # Errors
/// As [`admm_contribution`], and [`ProblemError::Length`] for a `w` of another dimension than
/// the problem's (checked before anything changes).
#[allow(clippy::too_many_arguments)]
pub fn admm_walk_step(
    problem: &Problem,
    prox: &LocalProx<'_>,
    params: &AdmmParams,
    user: usize,
    u: &mut [f64],
    w: &mut [f64],
    rng: &mut NodeRng,
    scratch: &mut StepScratch,
) -> Result<Contribution, ProblemError> {
    let dim = problem.dim();
    ProblemError::check_length("the token's w", dim, w.len())?;
    ProblemError::check_length("u_i", dim, u.len())?;
    scratch.check(dim)?;
    problem
        .regularizer()
        .prox(params.gamma(), w, &mut scratch.z);
    let z = std::mem::take(&mut scratch.z);
    let c = admm_contribution(prox, params, user, u, &z, rng, scratch);
    scratch.z = z;
    let c = c?;
    add_to_average(w, &scratch.du, problem.n_users());
    Ok(c)
}

/// The step of a holder whose budget is spent: the same noise as a contribution, no data. For
/// ADMM `u_i ← u_i + λση` (the step with `Δ = 0`, so `w` stays the average of the `u`); for
/// DP-SGD `w ← prox_{lr·r}(w − lr·(σ/2)η)` (a step with a zero gradient). It costs no privacy
/// (nothing depends on the user's data) and keeps every hop of the walk noisy, which the network
/// view's per-path bound needs (`dpwalk_privacy::network`, "Spent users").
///
/// # Errors
/// [`ProblemError::Length`] when `w`, `u_i` or the scratch is not of the problem's dimension
/// (checked before anything changes).
pub fn noise_only_step(
    problem: &Problem,
    algorithm: &mut NoiseOnly<'_>,
    w: &mut [f64],
    rng: &mut NodeRng,
    scratch: &mut StepScratch,
) -> Result<(), ProblemError> {
    let dim = problem.dim();
    ProblemError::check_length("the token's w", dim, w.len())?;
    if let NoiseOnly::Admm { u, .. } = algorithm {
        ProblemError::check_length("u_i", dim, u.len())?;
    }
    scratch.check(dim)?;
    fill_standard_normal(rng, &mut scratch.eta);
    match algorithm {
        NoiseOnly::Admm { params, u } => {
            let scale = params.relaxation() * params.sigma();
            for ((d, uk), &ek) in scratch.du.iter_mut().zip(u.iter_mut()).zip(&scratch.eta) {
                *d = scale * ek;
                *uk += *d;
            }
            add_to_average(w, &scratch.du, problem.n_users());
        }
        NoiseOnly::Sgd { params } => {
            let step = params.lr() * 0.5 * params.sigma();
            for ((vk, &ek), &wk) in scratch.v.iter_mut().zip(&scratch.eta).zip(w.iter()) {
                *vk = wk - step * ek;
            }
            problem.regularizer().prox(params.lr(), &scratch.v, w);
        }
    }
    Ok(())
}

/// What a spent holder's [`noise_only_step`] needs.
#[derive(Debug)]
pub enum NoiseOnly<'a> {
    /// ADMM: the holder's `u_i` and the parameters.
    Admm {
        /// λ and σ.
        params: &'a AdmmParams,
        /// The holder's private `u_i`.
        u: &'a mut [f64],
    },
    /// DP-SGD: the parameters.
    Sgd {
        /// lr and σ.
        params: &'a SgdParams,
    },
}

/// One DP-SGD step at `user` on the model `w` (carried by the token): see the module docs.
///
/// # Errors
/// [`ProblemError::Length`] when `w` or the scratch is not of the problem's dimension,
/// [`ProblemError::User`] for a user the problem does not have; nothing is changed then.
pub fn sgd_step(
    problem: &Problem,
    params: &SgdParams,
    user: usize,
    w: &mut [f64],
    rng: &mut NodeRng,
    scratch: &mut StepScratch,
) -> Result<Contribution, ProblemError> {
    let dim = problem.dim();
    ProblemError::check_length("the token's w", dim, w.len())?;
    scratch.check(dim)?;
    let g = &mut scratch.x;
    let contribution = noisy_clipped_grad(problem, params, user, w, rng, g, &mut scratch.eta)?;
    let lr = params.lr();
    for ((vk, &gk), &wk) in scratch.v.iter_mut().zip(g.iter()).zip(w.iter()) {
        *vk = wk - lr * gk;
    }
    problem.regularizer().prox(lr, &scratch.v, w);
    Ok(contribution)
}

/// DP-SGD's message of `user` at the model `w`: `g = clip(∇f_i(w), C) + η/2` with
/// `η ~ N(0, σ² I)` drawn from the user's stream into `eta` after the gradient. One function for
/// the walk's [`sgd_step`] and the federated DP-SGD round
/// ([`crate::baselines::fed_sgd`]), so that both spend privacy alike: sensitivity `2C`, noise std
/// `σ/2`, local RDP `8αC²/σ²` per message.
///
/// # Errors
/// [`ProblemError::Length`] when `w`, `g` or `eta` is not of the problem's dimension,
/// [`ProblemError::User`] for a user the problem does not have; nothing is drawn then.
pub fn noisy_clipped_grad(
    problem: &Problem,
    params: &SgdParams,
    user: usize,
    w: &[f64],
    rng: &mut NodeRng,
    g: &mut [f64],
    eta: &mut [f64],
) -> Result<Contribution, ProblemError> {
    let dim = problem.dim();
    ProblemError::check_length("the model w", dim, w.len())?;
    ProblemError::check_length("the gradient buffer", dim, g.len())?;
    ProblemError::check_length("the noise buffer", dim, eta.len())?;
    if user >= problem.n_users() {
        return Err(ProblemError::User {
            user,
            n_users: problem.n_users(),
        });
    }
    problem.user_grad(user, w, g);
    let clipped = clip_in_place(g, params.clip());
    fill_standard_normal(rng, eta);
    let half_sigma = 0.5 * params.sigma();
    for (gk, &ek) in g.iter_mut().zip(eta.iter()) {
        *gk += half_sigma * ek;
    }
    Ok(Contribution { clipped })
}

#[cfg(test)]
#[allow(clippy::unwrap_used)] // a failed unwrap is a failed test
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        #[test]
        fn clip_never_exceeds_bound(v in proptest::collection::vec(-1e6f64..1e6, 1..50), c in 1e-6f64..1e3) {
            let mut d = v.clone();
            let clipped = clip_in_place(&mut d, Some(c));
            let norm = d.iter().map(|x| x * x).sum::<f64>().sqrt();
            prop_assert!(norm <= c * (1.0 + 1e-12));
            let orig = v.iter().map(|x| x * x).sum::<f64>().sqrt();
            prop_assert_eq!(clipped, orig > c);
            if !clipped { prop_assert_eq!(d, v); }
        }
    }

    proptest! {
        /// The clip that bounds the sensitivity is the one inside the step the daemon and the
        /// simulator run, not only `clip_in_place`: with σ = 0 the update is `2λ·clip(x − z, C)`,
        /// so `‖u_i' − u_i‖ ≤ 2λC` whatever the data and the model.
        #[test]
        fn the_admm_update_never_exceeds_two_lambda_c(
            seed in 0u64..1_000,
            records in 1usize..4,
            c in 1e-4f64..10.0,
            lambda in 0.05f64..=1.0,
            gamma in 0.01f64..100.0,
            scale in 0.0f64..1e4,
        ) {
            use crate::problem::test_util::{normals, user_data};
            use crate::problem::{Loss, Problem, ProxScratch};
            use rand::SeedableRng;
            let p = 5;
            let problem = Problem::new(
                Loss::Squared,
                Regularizer::L1 { l1: 0.1 },
                user_data(seed, Loss::Squared, &[records], p),
            ).unwrap();
            let prox = problem.local_prox(gamma).unwrap();
            let params = AdmmParams::new(gamma, lambda, 0.0, Some(c)).unwrap();
            let mut rng = NodeRng::seed_from_u64(seed);
            let z: Vec<f64> = normals(&mut rng, p).iter().map(|v| v * scale).collect();
            let mut u: Vec<f64> = normals(&mut rng, p).iter().map(|v| v * scale).collect();
            let before = u.clone();
            let mut scratch = StepScratch::new(p, ProxScratch::default());
            let out = admm_contribution(&prox, &params, 0, &mut u, &z, &mut rng, &mut scratch).unwrap();
            let du = scratch.last_du();
            let norm = du.iter().map(|v| v * v).sum::<f64>().sqrt();
            prop_assert!(norm <= 2.0 * lambda * c * (1.0 + 1e-12), "{norm} > 2λC = {}", 2.0 * lambda * c);
            for ((a, b), d) in u.iter().zip(&before).zip(du) {
                prop_assert_eq!(*a, b + d);
            }
            if out.clipped {
                // Clipped: exactly on the bound, not merely below it.
                prop_assert!((norm - 2.0 * lambda * c).abs() <= 1e-12 * 2.0 * lambda * c);
            }
        }
    }

    /// Vectors of another length than the problem's dimension (a run file's `dimension` that is
    /// not its data's) are refused with a typed error naming both lengths, and change nothing.
    #[test]
    fn mismatched_lengths_are_refused_without_a_change() {
        use crate::problem::test_util::user_data;
        use crate::problem::{Loss, Problem};
        use crate::topology::Topology;
        use crate::walk::{Turn, Update, visit};
        use rand::SeedableRng;
        let p = 5;
        let problem = Problem::new(
            Loss::Squared,
            Regularizer::L1 { l1: 0.1 },
            user_data(3, Loss::Squared, &[4, 4], p),
        )
        .unwrap();
        let prox = problem.local_prox(1.0).unwrap();
        let params = AdmmParams::new(1.0, 0.5, 1.0, Some(1.0)).unwrap();
        let topology = Topology::Complete { n: 2 };
        let mut rng = NodeRng::seed_from_u64(1);
        let mut scratch = StepScratch::new(p, prox.scratch());
        let mut u = vec![0.25; p];
        let mut w = vec![0.5; p + 2];
        let expected = ProblemError::Length {
            what: "the token's w",
            expected: p,
            got: p + 2,
        };
        let update = Update::Admm {
            prox: &prox,
            params: &params,
            u: &mut u,
        };
        let got = visit(
            &problem,
            &topology,
            0,
            update,
            Turn::Contribute,
            &mut w,
            &mut rng,
            &mut scratch,
        );
        assert_eq!(got.unwrap_err(), expected);
        assert_eq!(
            expected.to_string(),
            "the token's w has 7 values, but the problem's model dimension is 5"
        );
        let update = Update::Admm {
            prox: &prox,
            params: &params,
            u: &mut u,
        };
        let got = visit(
            &problem,
            &topology,
            0,
            update,
            Turn::NoiseOnly,
            &mut w,
            &mut rng,
            &mut scratch,
        );
        assert_eq!(got.unwrap_err(), expected);
        assert_eq!(u, vec![0.25; p]);
        assert_eq!(w, vec![0.5; p + 2]);
        // The prox alone, and a user the problem does not have.
        let mut out = vec![0.0; p];
        assert!(matches!(
            prox.prox(0, &w, &mut out, &mut ProxScratch::default()),
            Err(ProblemError::Length {
                got: 7,
                expected: 5,
                ..
            })
        ));
        assert_eq!(
            prox.prox(9, &u, &mut out, &mut ProxScratch::default()),
            Err(ProblemError::User {
                user: 9,
                n_users: 2
            })
        );
        // Scratch buffers sized for another problem.
        let mut small = StepScratch::new(p - 1, ProxScratch::default());
        let mut w = vec![0.5; p];
        let got = admm_walk_step(
            &problem, &prox, &params, 0, &mut u, &mut w, &mut rng, &mut small,
        );
        assert!(matches!(
            got,
            Err(ProblemError::Length {
                got: 4,
                expected: 5,
                ..
            })
        ));
    }

    #[test]
    fn no_clip_leaves_vector_unchanged() {
        let mut d = vec![3.0, 4.0];
        assert!(!clip_in_place(&mut d, None));
        assert_eq!(d, vec![3.0, 4.0]);
    }
}
