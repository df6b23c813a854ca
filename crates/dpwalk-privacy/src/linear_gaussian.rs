//! An exact reference for the network view in the linear-Gaussian case (ground truth for tests):
//! the ADMM walk ([`LinearModel`], [`Responses::new`]) and the DP-SGD walk ([`SgdModel`],
//! [`Responses::sgd`]).
//!
//! # The ADMM model (`../shared/specs/network-dp.md`, §3)
//! Scalar parameter (`p = 1`), `n` users with quadratic losses `f_l(x) = (a_l/2)(x − b_l)²`
//! (`a_l ≥ 0`; `a_l = 0` means user `l`'s data do not touch the coordinate, the worst case for the
//! growth of a shift), regularizer `r = 0` (`μ = 0`) or `r = (μ/2)x²`, clip inactive. The step at
//! user `l` (`dpwalk_core::step`) is then affine: with `ρ = 1/(1 + γμ)` (`prox_{γr}(w) = ρw`) and
//! `κ_l = 1/(1 + γa_l)` (`prox_{γf_l}(v) = κ_l(v + γa_l b_l)`),
//! ```text
//! Δ    = x − z = (2κ_l − 1)ρ·w − κ_l·u_l + const      (+ d when user i's data change)
//! u_l' = u_l + 2λ(Δ + η/2)                            η ~ N(0, σ²)
//! w'   = w + (u_l' − u_l)/n
//! ```
//! so `u_l' = (1 − 2λκ_l)u_l + 2λ(2κ_l − 1)ρ·w + 2λd + λη` and
//! `w' = (1 + (2λ/n)(2κ_l − 1)ρ)·w − (2λ/n)κ_l·u_l + (2λ/n)d + (λ/n)η`. The noise enters `w` as
//! `λη/n` (`step.rs`: `du = 2λ(Δ + (σ/2)ξ)` with `ξ` standard, then `w += du/n`).
//!
//! # The observer's view and why the figure is exact
//! Fix the path (the users holding the token at steps `0..K`; the walk does not depend on the
//! data, so conditioning on it is the observer's worst case and costs nothing). Every `w_t` is
//! then `c_t + Σ_s R[t][s]·(d_s + η_s/2)`, where `R[t][s]` is the response of `w_t` to a unit
//! change of `Δ` at step `s` (computed here by propagating the state `(w, u_0, …, u_{n−1})` step
//! by step), `c_t` does not depend on user `i`'s contribution shifts `d_s` or on the noise, and
//! `d_s = 0` unless `path[s] = i`. Observer `j` sees `w_t` at each of its visits (`path[t] = j`,
//! before its step) and the final `w_K` (the published model `prox_{γr}(w_K)` is a function of
//! it). It knows its own data and noise: the columns of its own steps are constants to it and
//! are dropped. The view is `y = c + G·d + B·η` with `B = ½R[obs][cols]` and `G = R[obs][i's
//! steps]`, a Gaussian with covariance `σ²BBᵀ` that does not depend on `d` and a mean linear in
//! `d`. The Rényi divergence of two Gaussians with the same covariance `Σ` is exactly
//! `α/2·δμᵀΣ⁻¹δμ` (`Σ⁺` on its range; `∞` if `δμ` leaves the range, as the two laws are then
//! mutually singular). With `|d_s| ≤ 2C` this is `α·(8C²/σ²)·sᵀQs` with `s = d/(2C) ∈ [−1, 1]^c`
//! and `Q = Gᵀ(R_oR_oᵀ)⁺G` (`R_o = R[obs][cols]`): a convex quadratic, so its maximum over the
//! box is at a vertex, and we enumerate the sign patterns (`c ≤ 16`). Nothing is bounded or
//! approximated: the returned `share = max_s sᵀQs` is the exact RDP of the view divided by
//! `α·ε_loc/α = 8C²/σ²`, to compare with the accountant's `g(m)` per contribution.
//!
//! A remark that the tests check: the shift and the noise of a step enter at the same place
//! (`Δ + η/2`), so `G`'s column for step `k` is a column of `R_o` and `Q_kk` is the leverage
//! score of that noise column in `R_o`: always in `[0, 1]`, so a single contribution never leaks
//! more than `ε_loc` whatever the path, and `δμ` is always in the range.
//!
//! # Numerics
//! `R_o` (observations × noise columns, at most a few hundred columns) is factored by an SVD
//! (nalgebra's Golub–Kahan bidiagonalization and implicit QR, run on the tall `R_oᵀ = WΣUᵀ`) for
//! the rank decision: singular values above `tol = s_max·max(rows, cols)·ε_mach·16` are kept.
//! When `R_o` has full row rank (every sweep case), `Q = ZᵀZ` with `Z = R⁻ᵀG` and the thin
//! Householder QR `R_oᵀ = Q_rR` (`R_oR_oᵀ = RᵀR`), which is backward stable. Only a rank-deficient
//! `R_o` uses the singular vectors, `(R_oR_oᵀ)⁺ = UΣ⁻²Uᵀ` on the kept values and
//! `Z = Σ⁻¹UᵀG`: nalgebra's singular vectors were found off by up to 2e-4 in a leverage score
//! (nearly equal singular values on a strongly contracting DP-SGD path, where the QR agrees with a
//! dense solve to 1e-16). Neither form builds `R_oR_oᵀ`, whose condition number is the square of
//! //! `R_o`'s). Two rank deficiencies are structural and removed before the SVD: an observation row
//! that is exactly zero on the kept columns (`w_0`, or a visit before any unknown noise), and the
//! final `w_K` when `j` itself made the last step (it is then a linear function of `j`'s earlier
//! observations and its own noise). [`Exact`] reports the smallest kept and the largest dropped
//! singular value (relative to the largest) so that a caller can check the rank decision, and the
//! relative residual of `G` outside the range (`∞` share when above `1e-9`).
//!
//! # DP-SGD on the walk ([`SgdModel`], [`Responses::sgd`])
//! The baseline step (`dpwalk_core::step`, "DP-SGD on the walk") at user `l` is
//! `g = clip(∇f_l(w), C) + η/2`, `w ← prox_{lr·r}(w − lr·g)`, and the token's `w` is the model
//! (no per-user state). With the same quadratic losses and the clip inactive it is affine,
//! `w ← A_l·w + const − s_r·lr·(d + η/2)` with `s_r = 1/(1 + lr·μ)` and `A_l = s_r(1 − lr·a_l)`,
//! and user `i`'s gradient shift `d` (`|d| ≤ 2C`) enters where its noise `η/2` does, as for ADMM:
//! the same observer, the same views and the same computation apply to the responses
//! `R[t][s] = −s_r·lr·Π_{s<τ<t} A_{path[τ]}`, and `ε_loc = 8αC²/σ²` is the same.
//!
//! # What it shows (`tests/linear_gaussian.rs`)
//! ADMM. A single contribution never leaks more than `ε_loc` (the leverage-score remark above),
//! and all of `i`'s contributions never more than `K_i·ε_loc` (the local view, of which the
//! observer's is a post-processing): the sweeps check both. The per-path network bound
//! `ε_loc·g(min(M, K − k))` does not hold. The chain of data-free users (`a_l = 0`, `r = 0`,
//! distinct users) attains `g(m)` exactly, but with revisits the bound fails: at user `l`'s
//! next visit the token gives back `−(2λ/n)κ_l·u_l`, and `u_l` holds part of the noise `l` added
//! before, so noise added on the path is partly retracted (entirely at `λ = 1/2`, `a_l = 0`)
//! while `i`'s shift need not be. The per-path bound's "noisy hops" are therefore not
//! independent fresh noise for ADMM, even before `j`'s first visit (`i → l → m → l → j` is above
//! `g(4)` at every `λ ≤ 1/2`). Hence no network view is claimed for ADMM.
//!
//! DP-SGD (`lr·a_l ≤ 2`). A single contribution first seen after `m = min(M, K − k)` hops leaks at
//! most `ε_loc/m` (`|A| ≤ 1`: the shift's response is the smallest of the `m` noise responses
//! that reach the observation), and the later visits add nothing (the token is the whole state,
//! so they are a Markov post-processing of the first arrival). Several contributions of `i` first
//! seen at the same observation do not compose additively: they share the noise of the hops
//! after the last of them (`i → l → i → l → j`: exact `1` against `1/4 + 1/2`). Composing over
//! `j`'s observations instead (each is, given the previous one, a Gaussian whose mean moves only
//! with the contributions in between) gives `Σ_groups (Σ_{c ∈ group} 1/√m_c)²`, which the tests
//! check and which is at most `|group|·Σ_{c ∈ group} 1/m_c`.
//!
//! # Cost
//! [`Responses::new`] and [`Responses::sgd`] are `O(K²)` time and memory (`K + 1` rows of `K` responses); each query is
//! one SVD of at most `(visits + 1) × K`, plus `2^(c−1)·c` for `c` contributions.

use nalgebra::DMatrix;

use crate::Noise;
use crate::error::PrivacyError;

/// Most contributions of user `i` whose sign patterns are enumerated (`2^15` patterns).
pub const MAX_CONTRIBUTIONS: usize = 16;

/// Singular values at most this multiple of `s_max·max(rows, cols)·ε_mach` count as zero.
const RANK_TOLERANCE_FACTOR: f64 = 16.0;

/// Relative residual of `G` outside the range of `R_o` above which the share is `∞`.
const RANGE_TOLERANCE: f64 = 1e-9;

/// The linear-Gaussian ADMM model: relaxation `λ`, prox step `γ`, curvatures `a_l` of the
/// users' quadratic losses, and the weight `μ` of `r = (μ/2)x²` (`0` for `r = 0`).
#[derive(Debug, Clone, PartialEq)]
pub struct LinearModel {
    lambda: f64,
    gamma: f64,
    curvatures: Vec<f64>,
    mu: f64,
}

impl LinearModel {
    /// Checks `λ > 0`, `γ > 0`, every `a_l ≥ 0` and `μ ≥ 0` (all finite), and at least 2 users.
    pub fn new(
        lambda: f64,
        gamma: f64,
        curvatures: Vec<f64>,
        mu: f64,
    ) -> Result<Self, PrivacyError> {
        let positive = |name: &'static str, v: f64| {
            if v > 0.0 && v.is_finite() {
                Ok(())
            } else {
                Err(PrivacyError::Option { name, value: v })
            }
        };
        positive("lambda", lambda)?;
        positive("gamma", gamma)?;
        check_users(&curvatures, mu)?;
        Ok(Self {
            lambda,
            gamma,
            curvatures,
            mu,
        })
    }

    /// Number of users.
    pub fn users(&self) -> usize {
        self.curvatures.len()
    }

    /// `λ`.
    pub fn lambda(&self) -> f64 {
        self.lambda
    }

    /// The linear part of a step at user `l`: `(w←w, w←u_l, u_l←w, u_l←u_l)`.
    fn step_matrix(&self, l: usize) -> [f64; 4] {
        let n = self.users() as f64;
        let rho = 1.0 / (1.0 + self.gamma * self.mu);
        let kappa = 1.0 / (1.0 + self.gamma * self.curvatures[l]);
        let two_lambda = 2.0 * self.lambda;
        let dw = (2.0 * kappa - 1.0) * rho; // ∂Δ/∂w
        let du = -kappa; // ∂Δ/∂u_l
        [
            1.0 + two_lambda / n * dw,
            two_lambda / n * du,
            two_lambda * dw,
            1.0 + two_lambda * du,
        ]
    }
}

/// The linear-Gaussian DP-SGD walk (`dpwalk_core::step::sgd_step`, clip inactive): step `lr`,
/// curvatures `a_l` of the users' quadratic losses, and the weight `μ` of `r = (μ/2)x²` (`0` for
/// `r = 0`). The step at user `l` is `w ← s_r·(w − lr·a_l·(w − b_l)) − s_r·lr·(d + η/2)` with
/// `s_r = 1/(1 + lr·μ)`, i.e. `w ← A_l·w + const − s_r·lr·(d + η/2)`, `A_l = s_r(1 − lr·a_l)`.
/// `lr·a_l ≤ 2` makes every step non-expansive (`|A_l| ≤ 1`; negative for `lr·a_l > 1`, `0` at
/// `lr·a_l = 1`); the model does not require it (the reference is exact either way).
#[derive(Debug, Clone, PartialEq)]
pub struct SgdModel {
    lr: f64,
    curvatures: Vec<f64>,
    mu: f64,
}

impl SgdModel {
    /// Checks `lr > 0`, every `a_l ≥ 0` and `μ ≥ 0` (all finite), and at least 2 users.
    pub fn new(lr: f64, curvatures: Vec<f64>, mu: f64) -> Result<Self, PrivacyError> {
        if !(lr > 0.0 && lr.is_finite()) {
            return Err(PrivacyError::Option {
                name: "lr",
                value: lr,
            });
        }
        check_users(&curvatures, mu)?;
        Ok(Self { lr, curvatures, mu })
    }

    /// Number of users.
    pub fn users(&self) -> usize {
        self.curvatures.len()
    }

    /// The slope `A_l = s_r(1 − lr·a_l)` of a step at user `l`.
    pub fn slope(&self, l: usize) -> f64 {
        self.prox_slope() * (1.0 - self.lr * self.curvatures[l])
    }

    /// `s_r = 1/(1 + lr·μ)`.
    fn prox_slope(&self) -> f64 {
        1.0 / (1.0 + self.lr * self.mu)
    }

    /// `∂w'/∂g = −s_r·lr`.
    fn gain(&self) -> f64 {
        -self.prox_slope() * self.lr
    }
}

/// Users `< n`, a nonempty path, no user twice in a row.
fn check_path(n: usize, path: &[usize]) -> Result<(), PrivacyError> {
    if path.is_empty() {
        return Err(PrivacyError::Path {
            step: 0,
            reason: "the path is empty".into(),
        });
    }
    for (t, &l) in path.iter().enumerate() {
        if l >= n {
            return Err(PrivacyError::Path {
                step: t,
                reason: format!("user {l} out of range (n = {n})"),
            });
        }
        if t > 0 && path[t - 1] == l {
            return Err(PrivacyError::Path {
                step: t,
                reason: format!("user {l} holds the token twice in a row"),
            });
        }
    }
    Ok(())
}

/// Which of the observer's visits are in its view.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Window {
    /// Every visit up to and including the first one after the contribution, or the final model if
    /// there is none before the end (the view the accountant's `g(min(M, K − k))` is about).
    /// Single contribution only.
    FirstArrival,
    /// Every visit and the final model.
    Whole,
}

/// What the observer knows before `i`'s (first) contribution.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Prior {
    /// Only its own visits (from a known initial state at step 0).
    Visits,
    /// The whole state `(w, u)` just before the contribution: the noise of earlier steps is
    /// known. The strongest observer (its divergence is never below [`Prior::Visits`]'s).
    KnownState,
}

/// An exact divergence and the diagnostics of its computation.
#[derive(Debug, Clone, PartialEq)]
pub struct Exact {
    /// `D` with exact RDP `α·D` at every order `α` (`∞` if the view reveals the shift).
    pub divergence: f64,
    /// `D / (8C²/σ²)`: the share of `ε_loc` the view leaks (to compare with `g(m)`).
    pub share: f64,
    /// The worst shifts, in units of `2C`, one per contribution (`±1`).
    pub signs: Vec<i8>,
    /// The steps shifted (`i`'s contributions counted).
    pub steps: Vec<usize>,
    /// The observation times kept (`K` stands for the final model).
    pub observations: Vec<usize>,
    /// Number of noise columns (steps whose noise the observer does not know).
    pub noise_columns: usize,
    /// Rank of `R_o`.
    pub rank: usize,
    /// Smallest kept singular value over the largest (1 when there is none).
    pub smallest_kept: f64,
    /// Largest dropped singular value over the largest (0 when none was dropped).
    pub largest_dropped: f64,
    /// Relative residual of `G` outside the range of `R_o`.
    pub range_residual: f64,
}

/// The responses `R[t][s]` of `w_t` (`t = 0..=K`) to a unit change of the noisy input at step
/// `s < K` (`Δ` for ADMM, the gradient `g` for DP-SGD), for one model and one path.
#[derive(Debug, Clone, PartialEq)]
pub struct Responses {
    path: Vec<usize>,
    /// Row-major, `(K + 1) × K`.
    w: Vec<f64>,
}

impl Responses {
    /// Propagates the ADMM state along `path` (users `< n`, no user twice in a row: the walk has
    /// no self-loops). `O(K²)`.
    pub fn new(model: &LinearModel, path: &[usize]) -> Result<Self, PrivacyError> {
        let n = model.users();
        let k_len = path.len();
        check_path(n, path)?;
        let mut w_row = vec![0.0; k_len];
        let mut u_rows = vec![vec![0.0; k_len]; n];
        let mut w = Vec::with_capacity((k_len + 1) * k_len);
        w.extend_from_slice(&w_row);
        let two_lambda = 2.0 * model.lambda;
        let nf = n as f64;
        for (t, &l) in path.iter().enumerate() {
            let [ww, wu, uw, uu] = model.step_matrix(l);
            let u_row = &mut u_rows[l];
            // Only columns s < t are nonzero so far.
            for (wv, uv) in w_row[..t].iter_mut().zip(u_row[..t].iter_mut()) {
                let (w0, u0) = (*wv, *uv);
                *wv = ww * w0 + wu * u0;
                *uv = uw * w0 + uu * u0;
            }
            u_row[t] = two_lambda;
            w_row[t] = two_lambda / nf;
            w.extend_from_slice(&w_row);
        }
        Ok(Self {
            path: path.to_vec(),
            w,
        })
    }

    /// The responses of the DP-SGD walk (see [`SgdModel`]) along `path` (same rules as
    /// [`Responses::new`]): `R[t][s]` is the response of `w_t` to a unit change of the noisy
    /// gradient `g` at step `s`, `−s_r·lr·Π_{s<τ<t} A_{path[τ]}`. `O(K²)`.
    pub fn sgd(model: &SgdModel, path: &[usize]) -> Result<Self, PrivacyError> {
        check_path(model.users(), path)?;
        let k_len = path.len();
        let gain = model.gain();
        let mut w_row = vec![0.0; k_len];
        let mut w = Vec::with_capacity((k_len + 1) * k_len);
        w.extend_from_slice(&w_row);
        for (t, &l) in path.iter().enumerate() {
            let slope = model.slope(l);
            for wv in &mut w_row[..t] {
                *wv *= slope;
            }
            w_row[t] = gain;
            w.extend_from_slice(&w_row);
        }
        Ok(Self {
            path: path.to_vec(),
            w,
        })
    }

    /// Number of steps `K`.
    pub fn steps(&self) -> usize {
        self.path.len()
    }

    /// The path.
    pub fn path(&self) -> &[usize] {
        &self.path
    }

    /// `R[t][s]`: the response of `w_t` to a unit change of `Δ` at step `s`.
    pub fn response(&self, t: usize, s: usize) -> f64 {
        self.w[t * self.steps() + s]
    }

    /// First passage `M ≥ 1` from step `k` to `j`: the smallest `m` with `path[k + m] = j`, or
    /// `None` when `j` does not hold the token after step `k`.
    pub fn first_passage(&self, k: usize, j: usize) -> Option<usize> {
        self.path
            .iter()
            .enumerate()
            .skip(k + 1)
            .find(|&(_, &l)| l == j)
            .map(|(t, _)| t - k)
    }

    /// The hops after which the observer first sees the contribution at step `k`:
    /// `min(M, K − k)` (the final model is published after step `K`).
    pub fn hops_seen(&self, k: usize, j: usize) -> usize {
        let to_end = self.steps() - k;
        self.first_passage(k, j).map_or(to_end, |m| m.min(to_end))
    }

    /// Exact divergence of `j`'s view when only the contribution at step `k` (of user
    /// `path[k] ≠ j`) is shifted, by `±2C`.
    pub fn single(
        &self,
        k: usize,
        j: usize,
        window: Window,
        prior: Prior,
        noise: Noise,
    ) -> Result<Exact, PrivacyError> {
        self.check_pair(k, j)?;
        self.exact(&[k], j, window, prior, noise)
    }

    /// Exact divergence of `j`'s whole view when every contribution of user `i ≠ j` on the path is
    /// shifted, by `±2C` each, with the worst signs. `0` if `i` never holds the token; an error
    /// above [`MAX_CONTRIBUTIONS`].
    pub fn all(
        &self,
        i: usize,
        j: usize,
        prior: Prior,
        noise: Noise,
    ) -> Result<Exact, PrivacyError> {
        if i == j {
            return Err(PrivacyError::Path {
                step: 0,
                reason: format!("observer {j} is the contributor"),
            });
        }
        let steps: Vec<usize> = (0..self.steps()).filter(|&s| self.path[s] == i).collect();
        if steps.len() > MAX_CONTRIBUTIONS {
            return Err(PrivacyError::TooManyContributions {
                got: steps.len(),
                max: MAX_CONTRIBUTIONS,
            });
        }
        self.exact(&steps, j, Window::Whole, prior, noise)
    }

    fn check_pair(&self, k: usize, j: usize) -> Result<(), PrivacyError> {
        if k >= self.steps() {
            return Err(PrivacyError::Path {
                step: k,
                reason: format!("beyond the path's {} steps", self.steps()),
            });
        }
        if self.path[k] == j {
            return Err(PrivacyError::Path {
                step: k,
                reason: format!("observer {j} is the contributor"),
            });
        }
        Ok(())
    }

    /// The observation times of `j`'s view (before removing zero rows).
    fn observation_times(&self, shifted: &[usize], j: usize, window: Window) -> Vec<usize> {
        let big_k = self.steps();
        let last_seen = match (window, shifted.first()) {
            (Window::FirstArrival, Some(&k)) => self.first_passage(k, j).map(|m| k + m),
            _ => None,
        };
        let mut times: Vec<usize> = (0..big_k)
            .filter(|&t| self.path[t] == j && last_seen.is_none_or(|last| t <= last))
            .collect();
        let final_needed = match window {
            Window::Whole => true,
            Window::FirstArrival => last_seen.is_none(),
        };
        // When j made the last step, w_K is a function of its earlier views and its own noise.
        if final_needed && self.path[big_k - 1] != j {
            times.push(big_k);
        }
        times
    }

    fn exact(
        &self,
        shifted: &[usize],
        j: usize,
        window: Window,
        prior: Prior,
        noise: Noise,
    ) -> Result<Exact, PrivacyError> {
        let unit = 8.0 * noise.clip() * noise.clip() / (noise.sigma() * noise.sigma());
        let first = shifted.first().copied().unwrap_or(self.steps());
        let cols: Vec<usize> = (0..self.steps())
            .filter(|&s| self.path[s] != j && (prior == Prior::Visits || s >= first))
            .collect();
        let times: Vec<usize> = self
            .observation_times(shifted, j, window)
            .into_iter()
            .filter(|&t| cols.iter().any(|&s| self.response(t, s) != 0.0))
            .collect();
        let mut out = Exact {
            divergence: 0.0,
            share: 0.0,
            signs: vec![1; shifted.len()],
            steps: shifted.to_vec(),
            observations: times.clone(),
            noise_columns: cols.len(),
            rank: 0,
            smallest_kept: 1.0,
            largest_dropped: 0.0,
            range_residual: 0.0,
        };
        if times.is_empty() || shifted.is_empty() {
            return Ok(out);
        }
        let (q, c) = (times.len(), shifted.len());
        let r_o = DMatrix::from_fn(q, cols.len(), |a, b| self.response(times[a], cols[b]));
        let g = DMatrix::from_fn(q, c, |a, b| self.response(times[a], shifted[b]));
        // SVD of the tall R_oᵀ = WΣVᵀ, so that R_o = VΣWᵀ and U = V (see "Numerics").
        let svd = r_o
            .transpose()
            .try_svd_unordered(false, true, f64::EPSILON, 100_000)
            .ok_or(PrivacyError::NotFactored)?;
        let u = svd
            .v_t
            .as_ref()
            .ok_or(PrivacyError::NotFactored)?
            .transpose();
        let sv = &svd.singular_values;
        let s_max = sv.iter().copied().fold(0.0, f64::max);
        let tol = s_max * q.max(cols.len()) as f64 * f64::EPSILON * RANK_TOLERANCE_FACTOR;
        let kept: Vec<usize> = (0..sv.len()).filter(|&r| sv[r] > tol).collect();
        out.rank = kept.len();
        if s_max > 0.0 {
            out.smallest_kept = kept.iter().map(|&r| sv[r]).fold(s_max, f64::min) / s_max;
            out.largest_dropped = (0..sv.len())
                .filter(|&r| sv[r] <= tol)
                .map(|r| sv[r])
                .fold(0.0, f64::max)
                / s_max;
        }
        let z = if kept.len() == q {
            // Full row rank (the usual case): G is in the range, and with the thin QR
            // R_oᵀ = Q_rR, R_oR_oᵀ = RᵀR, so Z = R⁻ᵀG (see "Numerics").
            let r = r_o.transpose().qr().r();
            r.transpose()
                .solve_lower_triangular(&g)
                .ok_or(PrivacyError::NotFactored)?
        } else {
            // Z = Σ⁻¹UᵀG on the kept directions; the residual of G outside span(U_kept).
            let mut z = DMatrix::zeros(kept.len(), c);
            let mut projected = DMatrix::zeros(q, c);
            for (row, &r) in kept.iter().enumerate() {
                let u_r = u.column(r);
                for b in 0..c {
                    let coef = u_r.dot(&g.column(b));
                    z[(row, b)] = coef / sv[r];
                    projected.column_mut(b).axpy(coef, &u_r, 1.0);
                }
            }
            let g_norm = g.norm();
            out.range_residual = if g_norm > 0.0 {
                (&g - &projected).norm() / g_norm
            } else {
                0.0
            };
            if out.range_residual > RANGE_TOLERANCE {
                out.share = f64::INFINITY;
                out.divergence = f64::INFINITY;
                return Ok(out);
            }
            z
        };
        let quad = z.transpose() * &z;
        let (share, signs) = max_over_signs(&quad);
        out.share = share;
        out.signs = signs;
        out.divergence = share * unit;
        Ok(out)
    }
}

/// `max_{s ∈ {±1}^c} sᵀQs` for a symmetric `Q` (`c ≥ 1`), by a Gray-code walk over the `2^(c−1)`
/// patterns with `s_0 = +1` (`s` and `−s` give the same value): `O(2^c·c)`.
fn max_over_signs(quad: &DMatrix<f64>) -> (f64, Vec<i8>) {
    let c = quad.nrows();
    let mut s = vec![1.0f64; c];
    // v = Q s
    let mut v: Vec<f64> = (0..c).map(|a| (0..c).map(|b| quad[(a, b)]).sum()).collect();
    let mut value: f64 = v.iter().sum();
    let mut best = value;
    let mut best_s = s.clone();
    let patterns: u64 = 1u64 << (c - 1);
    for step in 1..patterns {
        // Flip bit b (1-based in the pattern, so s_0 stays fixed).
        let b = step.trailing_zeros() as usize + 1;
        let sb = s[b];
        // sᵀQs changes by −4 s_b (Qs)_b + 4 Q_bb.
        value += -4.0 * sb * v[b] + 4.0 * quad[(b, b)];
        for (a, va) in v.iter_mut().enumerate() {
            *va -= 2.0 * sb * quad[(a, b)];
        }
        s[b] = -sb;
        if value > best {
            best = value;
            best_s.clone_from(&s);
        }
    }
    if c > 1 {
        // Recompute the best exactly (the running value accumulates rounding).
        let exact: f64 = (0..c)
            .map(|a| {
                (0..c)
                    .map(|b| best_s[a] * quad[(a, b)] * best_s[b])
                    .sum::<f64>()
            })
            .sum();
        best = exact;
    }
    let signs = best_s
        .iter()
        .map(|&x| if x > 0.0 { 1 } else { -1 })
        .collect();
    (best.max(0.0), signs)
}

/// Exact divergence `D` (RDP `α·D`) of `j`'s view of the path when only the contribution at step
/// `k` is shifted: see [`Responses::single`]. Compare `D` with `8C²/σ²·g(min(M, K − k))`.
pub fn contribution_divergence(
    model: &LinearModel,
    path: &[usize],
    k: usize,
    j: usize,
    window: Window,
    prior: Prior,
    noise: Noise,
) -> Result<Exact, PrivacyError> {
    Responses::new(model, path)?.single(k, j, window, prior, noise)
}

/// Exact divergence `D` of `j`'s whole view of the path when all of `i`'s contributions are
/// shifted with the worst signs: see [`Responses::all`].
pub fn all_contributions_divergence(
    model: &LinearModel,
    path: &[usize],
    i: usize,
    j: usize,
    prior: Prior,
    noise: Noise,
) -> Result<Exact, PrivacyError> {
    Responses::new(model, path)?.all(i, j, prior, noise)
}

/// The users' curvatures (each `≥ 0`, at least two users) and the regularizer's weight `μ ≥ 0`,
/// shared by both models.
fn check_users(curvatures: &[f64], mu: f64) -> Result<(), PrivacyError> {
    if !(mu >= 0.0 && mu.is_finite()) {
        return Err(PrivacyError::Option {
            name: "mu",
            value: mu,
        });
    }
    if let Some(&a) = curvatures.iter().find(|a| !(**a >= 0.0 && a.is_finite())) {
        return Err(PrivacyError::Option {
            name: "curvature",
            value: a,
        });
    }
    if curvatures.len() < 2 {
        return Err(PrivacyError::Users {
            min: 2,
            got: curvatures.len() as u64,
        });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::network::{admm_lipschitz, path_factor};

    #[test]
    fn one_hop_is_eps_loc() {
        let model = LinearModel::new(0.5, 1.0, vec![0.0, 1.0, 2.0], 0.0).unwrap();
        let noise = Noise::new(3.0, 0.5).unwrap();
        let e = contribution_divergence(&model, &[0, 2], 0, 2, Window::Whole, Prior::Visits, noise)
            .unwrap();
        assert!((e.share - 1.0).abs() < 1e-12, "{e:?}");
        assert!((e.divergence - 8.0 * 0.25 / 9.0).abs() < 1e-12);
    }

    #[test]
    fn chain_attains_path_factor() {
        let n = 8;
        let model = LinearModel::new(1.0, 1.0, vec![0.0; n], 0.0).unwrap();
        let noise = Noise::new(1.0, 1.0).unwrap();
        let path: Vec<usize> = (0..n).collect();
        let e = contribution_divergence(
            &model,
            &path,
            0,
            n - 1,
            Window::FirstArrival,
            Prior::Visits,
            noise,
        )
        .unwrap();
        let g = path_factor(admm_lipschitz(1.0, n), (n - 1) as u64);
        assert!((e.share / g - 1.0).abs() < 1e-9, "{} vs {g}", e.share);
    }

    #[test]
    fn signs_enumeration_finds_the_vertex() {
        let q = DMatrix::from_row_slice(3, 3, &[1.0, -0.9, 0.0, -0.9, 1.0, 0.2, 0.0, 0.2, 1.0]);
        let (v, s) = max_over_signs(&q);
        let mut best = 0.0f64;
        for p in 0..8u32 {
            let x: Vec<f64> = (0..3)
                .map(|b| if p >> b & 1 == 1 { -1.0 } else { 1.0 })
                .collect();
            let val: f64 = (0..3)
                .map(|a| (0..3).map(|b| x[a] * q[(a, b)] * x[b]).sum::<f64>())
                .sum();
            best = best.max(val);
        }
        assert!((v - best).abs() < 1e-12);
        assert_eq!(s[0], 1);
        assert_eq!(s[1], -1);
    }

    #[test]
    fn bad_input_is_an_error() {
        assert!(LinearModel::new(0.5, 1.0, vec![0.0], 0.0).is_err());
        assert!(LinearModel::new(0.5, 1.0, vec![0.0, -1.0], 0.0).is_err());
        assert!(LinearModel::new(f64::NAN, 1.0, vec![0.0, 1.0], 0.0).is_err());
        let model = LinearModel::new(0.5, 1.0, vec![0.0; 3], 0.0).unwrap();
        assert!(Responses::new(&model, &[0, 0]).is_err());
        assert!(Responses::new(&model, &[0, 3]).is_err());
        assert!(Responses::new(&model, &[]).is_err());
        let r = Responses::new(&model, &[0, 1, 2]).unwrap();
        let noise = Noise::new(1.0, 1.0).unwrap();
        assert!(r.single(0, 0, Window::Whole, Prior::Visits, noise).is_err());
        assert!(r.single(3, 1, Window::Whole, Prior::Visits, noise).is_err());
        assert!(r.all(1, 1, Prior::Visits, noise).is_err());
        let long: Vec<usize> = (0..40).map(|t| t % 2).collect();
        let r = Responses::new(&model, &long).unwrap();
        assert!(matches!(
            r.all(0, 1, Prior::Visits, noise),
            Err(PrivacyError::TooManyContributions { .. })
        ));
        assert!(SgdModel::new(0.0, vec![0.0, 1.0], 0.0).is_err());
        assert!(SgdModel::new(1.0, vec![0.0], 0.0).is_err());
        assert!(SgdModel::new(1.0, vec![0.0, f64::INFINITY], 0.0).is_err());
        assert!(SgdModel::new(1.0, vec![0.0, 1.0], -1.0).is_err());
        let sgd = SgdModel::new(1.0, vec![0.0; 3], 0.0).unwrap();
        assert!(Responses::sgd(&sgd, &[1, 1]).is_err());
        assert!(Responses::sgd(&sgd, &[]).is_err());
    }

    #[test]
    fn sgd_chain_attains_one_over_m() {
        // a = 0, r = 0: every response is −lr, so m hops give exactly 1/m.
        let model = SgdModel::new(0.3, vec![0.0; 6], 0.0).unwrap();
        let noise = Noise::new(2.0, 0.5).unwrap();
        for m in 1..6usize {
            let path: Vec<usize> = (0..=m).collect();
            let r = Responses::sgd(&model, &path).unwrap();
            for window in [Window::FirstArrival, Window::Whole] {
                let e = r.single(0, m, window, Prior::Visits, noise).unwrap();
                assert!((e.share * m as f64 - 1.0).abs() < 1e-12, "{m}: {e:?}");
            }
        }
    }
}
