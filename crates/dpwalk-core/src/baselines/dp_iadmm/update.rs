//! The agents' closed-form updates (8) and (9): exact minimizers of the linearized subproblems.
//!
//! Agent `p`'s subproblem at round `t`, after the server's `w = w^{t+1}`, is, over `z`,
//! ```text
//! ⟨g̃, z⟩ + ω r(z) − ⟨λ, z⟩ + (ρ/2)‖w − z‖²  +  ‖z − z_p^t‖²/(2η)   (ObjP)
//!                                             s.t. ‖z − z_p^t‖ ≤ δ   (ObjT)
//! ```
//! with `g̃` the noisy gradient of the agent's loss share at `z_p^t`, and `r` kept exact with its
//! weight `ω` in `f_p` (spec §1.2, "recommended" option) instead of linearized. The smooth part is
//! an isotropic quadratic, `(κ/2)‖z − ẑ‖² + const`, so:
//! - ObjP: `κ = ρ + 1/η`, `ẑ = (ρw + λ − g̃ + z_p^t/η)/κ`, and `z = prox_{(ω/κ) r}(ẑ)`;
//! - ObjT, ℓ∞: `κ = ρ`, `ẑ = w + (λ − g̃)/ρ`; the problem is separable and convex in each
//!   coordinate, so `z = clip(prox_{(ω/ρ) r}(ẑ), z_p^t ± δ)` is exact;
//! - ObjT, ℓ₂: not separable once `r` has an ℓ₁ term. The Lagrangian with multiplier `μ ≥ 0` for
//!   `½‖z − c‖² ≤ ½δ²` (`c = z_p^t`) is minimized by
//!   `z(μ) = prox_{ω/(ρ+μ) r}((ρẑ + μc)/(ρ + μ))`, whose distance to `c` does not increase with
//!   `μ`; `z(0)` if it is inside the ball, else `z(μ*)` with `‖z(μ*) − c‖ = δ`, found by bisection
//!   (to the last bit of μ, and always on the feasible side). Without an ℓ₁ term this is the
//!   projection of `z(0)` onto the ball, which the spec gives as the closed form.

use crate::problem::Regularizer;

/// Everything of an agent's subproblem but its own iterate.
#[derive(Debug, Clone, Copy)]
pub(super) struct Subproblem<'a> {
    /// `r`.
    pub reg: &'a Regularizer,
    /// `r`'s weight in the agent's share `f_p`.
    pub omega: f64,
    /// ρ^t.
    pub rho: f64,
    /// The server's point `w^{t+1}`.
    pub w: &'a [f64],
    /// The agent's dual `λ_p^t`.
    pub lambda: &'a [f64],
    /// The noisy linearization `g̃_p^t`.
    pub g: &'a [f64],
}

/// ObjP: `z ← prox_{(ω/κ) r}(ẑ)` with proximal weight `eta`; `zhat` is a buffer.
pub(super) fn prox_update(s: &Subproblem<'_>, eta: f64, z: &mut [f64], zhat: &mut [f64]) {
    let inv_eta = 1.0 / eta;
    let kappa = s.rho + inv_eta;
    for ((((h, &zk), &wk), &lk), &gk) in zhat
        .iter_mut()
        .zip(z.iter())
        .zip(s.w)
        .zip(s.lambda)
        .zip(s.g)
    {
        *h = (s.rho * wk + lk - gk + zk * inv_eta) / kappa;
    }
    s.reg.prox(s.omega / kappa, zhat, z);
}

/// ObjT's unconstrained point `ẑ = w + (λ − g̃)/ρ`.
fn trust_center(s: &Subproblem<'_>, zhat: &mut [f64]) {
    for (((h, &wk), &lk), &gk) in zhat.iter_mut().zip(s.w).zip(s.lambda).zip(s.g) {
        *h = wk + (lk - gk) / s.rho;
    }
}

/// ObjT with an ℓ∞ trust region of radius `delta`; `zhat` and `v` are buffers.
pub(super) fn linf_trust_update(
    s: &Subproblem<'_>,
    delta: f64,
    z: &mut [f64],
    zhat: &mut [f64],
    v: &mut [f64],
) {
    trust_center(s, zhat);
    s.reg.prox(s.omega / s.rho, zhat, v);
    for (zk, &vk) in z.iter_mut().zip(v.iter()) {
        // max/min, not clamp: a NaN stays a NaN instead of panicking.
        *zk = vk.max(*zk - delta).min(*zk + delta);
    }
}

/// ObjT with an ℓ₂ trust region of radius `delta`; `zhat`, `center` and `v` are buffers.
pub(super) fn l2_trust_update(
    s: &Subproblem<'_>,
    delta: f64,
    z: &mut [f64],
    zhat: &mut [f64],
    center: &mut [f64],
    v: &mut [f64],
) {
    trust_center(s, zhat);
    center.copy_from_slice(z);
    let mut at = |mu: f64, z: &mut [f64]| lagrangian_point(s, mu, zhat, center, v, z);
    if at(0.0, z) <= delta {
        return;
    }
    // Bracket μ*: distances are non-increasing in μ and tend to 0, so doubling ends (a NaN
    // distance ends it too, and leaves the NaN in z).
    let (mut lo, mut hi) = (0.0, s.rho);
    while at(hi, z) > delta && hi.is_finite() {
        lo = hi;
        hi *= 2.0;
    }
    loop {
        let mid = 0.5 * (lo + hi);
        if mid <= lo || mid >= hi {
            break;
        }
        if at(mid, z) > delta {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    at(hi, z);
}

/// `z(μ)` of the ℓ₂ trust region's Lagrangian (module docs) into `z`; returns `‖z(μ) − c‖₂`.
fn lagrangian_point(
    s: &Subproblem<'_>,
    mu: f64,
    zhat: &[f64],
    center: &[f64],
    v: &mut [f64],
    z: &mut [f64],
) -> f64 {
    let kappa = s.rho + mu;
    for ((vk, &hk), &ck) in v.iter_mut().zip(zhat).zip(center) {
        *vk = (s.rho * hk + mu * ck) / kappa;
    }
    s.reg.prox(s.omega / kappa, v, z);
    z.iter()
        .zip(center)
        .map(|(a, b)| (a - b) * (a - b))
        .sum::<f64>()
        .sqrt()
}
