//! The network view: what user `j` learns about user `i` through the walk.
//!
//! # The figures offered (`specs/network-dp-2.md`)
//! The DP-SGD walk's network view for any number of contributions is computed in [`excursion`]
//! (the per-path charge `Ψ` and the ex-post certificate N2), [`mixture`] (the path-hidden
//! mixture N1/N3) and [`given_walk`] (N2's curve); [`crate::walk`] assembles them. What follows
//! in this module is the earlier per-contribution construction: exact for **one** contribution,
//! kept for the audit's one-contribution canaries and as the documented reason why adding
//! per-contribution bounds was withdrawn.
//!
//! # The bound per contribution (`specs/network-dp.md` §2; Cyffers, Bellet & Basu 2023, App. C)
//! User `j` sees `w` only when the token visits it, and the final model. After a contribution of
//! `i`, the token first reaches `j` after `M` moves; each move is one noisy step of some user. A
//! step of user `l` maps `w ↦ w + (2λ/n)·clip(G(w), C) + noise` with `G` 1-Lipschitz, so it is
//! `L = 1 + 2λ/n` Lipschitz in `w` ([`admm_lipschitz`]), not non-expansive. Shift reduction with
//! `L`-Lipschitz noisy maps (Feldman et al. 2018, with the shifts weighted by `L^{−t}`) gives, for
//! a path of `m` noisy hops, `ε_loc(α)·g(m)` with `g(m) = (1 − L⁻²)/(1 − L⁻²ᵐ)` ([`path_factor`]),
//! exact in the linear-Gaussian case. The walk does not depend on the data, so we condition on
//! it (the sender and the hop count included: `seq` reveals the count) and the joint convexity of
//! `(p, q) ↦ p^α q^{1−α}` turns the mixture over paths into, per contribution,
//! `ε_{i→j}(α) = ln( Σ_m P(M = m) · exp((α−1)·ε_loc(α)·g(m)) )/(α − 1)` ([`network_curve`]).
//! It holds at every order (no validity condition), is never above `(1 + c)·ε_loc·E[1/M]` where
//! `L = 1` and that older rule was valid (`c = (α−1)ε_loc ≤ 1`), and is an equality when the
//! observer learns the hop count. It replaces that rule, for one contribution (below).
//!
//! # The final model
//! The model published at the end of a `K`-step walk reaches every member: a contribution at step
//! `k` is seen after `min(M, K − k)` hops ([`Horizon`]), charged at its own horizon.
//!
//! # Spent users
//! A user whose budget is spent still adds noise when it forwards the token (a data-free step,
//! `dpwalk_core::step::noise_only_step`), so every hop of every path is a noisy map and `M`
//! counts noisy hops, as the bound needs.
//!
//! # DP-SGD on the walk
//! The gradient step `w ↦ prox(w − η·clip(∇f_l(w), C))` is non-expansive for a convex `β`-smooth
//! loss with `η ≤ 2/β` when the clipped gradient is itself the gradient of a convex function (as
//! in one dimension); we do not check it on the data and account DP-SGD with `L = 1` under that
//! assumption, which every DP-SGD figure prints ([`DP_SGD_ASSUMPTION`]).
//!
//! # What the exact reference decided ([`crate::linear_gaussian`], `tests/linear_gaussian.rs`)
//! - ADMM: the bound fails even for the first visit (up to 2.30×): a user revisited between the
//!   contribution and the observer takes its own earlier noise back out of the token, so the hops
//!   are not fresh noise on a fixed map. No network figure is offered for the ADMM walk
//!   ([`crate::walk::ADMM_NETWORK_WITHDRAWN`]); the `L = 1 + 2λ/n` analysis above stays as the
//!   documented, tested reason why the per-path form was tried ([`admm_lipschitz`]).
//! - DP-SGD: one contribution is within the bound on every path (the observer's later visits
//!   add nothing), but contributions first seen at the same visit share the noise after them and
//!   do not compose additively (up to 10.8× short): the figure is offered for one contribution
//!   per user ([`crate::walk::NETWORK_ONE_CONTRIBUTION`]).
//!
//! # The laws
//! The complete graph's law is geometric ([`PassageLaw::complete`]); any other graph's laws come
//! from a certified pass over all pairs ([`passage_all_pairs`], in `hitting`). Laws are bucketed
//! and their tails bounded so that every step of the evaluation only over-charges
//! ([`law`]'s docs).
//!
//! # Not offered: the pairwise bound of Cyffers, Bellet & Upadhyay (ICML 2024)
//! We were asked to print, for comparison, the pairwise network-DP bound of *Differentially
//! Private Decentralized Learning with Random Walks* (ICML 2024, arXiv 2402.07471). We do not.
//! The reason is that we could not read the theorem's exact statement, so we cannot state it
//! faithfully or map its sensitivity to ours (checked in stored copies of the sources below):
//! - The paper itself (arXiv HTML v2, ar5iv, the ICML text) was only readable up to the start of
//!   its introduction. The theorem, its constants and its assumptions are beyond that.
//! - The authors' code (`totilas/DPrandomwalk`, `graph.py`: `priv_global`, `logW`, `maxi_priv`)
//!   computes `α T ln T/(σ² n²) + (α T/(σ² n)) · L_uv` with
//!   `L = Σ_{λ_k ≠ 1} −ln(1 − λ_k) φ_k φ_kᵀ = Σ_{t ≥ 1} (Wᵗ − 11ᵀ/n)/t`. It runs on a symmetric,
//!   doubly stochastic gossip matrix `W` with self-loops, has no Lipschitz or clipping constant
//!   in it (the code normalises it away), and has a second variant for a known sender (max over
//!   the observer's neighbours).
//! - Li, Su, Wang, Long & Su, *Mitigating Privacy–Utility Trade-off in Decentralized Federated
//!   Learning via f-DP* (NeurIPS 2025) cite the paper as ref. 15 and restate its analysis in their
//!   Remarks 4.1 and 4.4 and Appendix H.2. The observer's first view is a mixture over `t` with
//!   weights `(Wᵗ)_uv` (not first-hit probabilities), and each step is amplified by iteration.
//!   The per-visit bound then composes over `⌈(1 + ζ) T/n⌉` visits, which holds with probability
//!   `1 − δ′` (Remark 5 of the paper, as they cite it, caps a node's contributions to remove `δ′`). Their code
//!   (`lx10077/PN-f-DP`, `rdp.py`, `OneStepRDP`; `main.py`, `priv_global`, commented "Theorem 3
//!   of arXiv 2402.07471") computes `ε(α) = α (T/n) Σ_{t ≤ T} (Wᵗ)_uv / (t σ²)`. It takes a
//!   sensitivity argument but does not use it.
//!
//! Neither source fixes the constant in front: whether the sensitivity is `L` or `2L`, and whether
//! a weak-convexity factor was kept. Our sensitivity is `2C` at noise `σ/2`, so a guessed mapping
//! could be off by a factor of 4 or more. The sources also do not give the range of `α` where the
//! bound is valid, or the exact loss assumptions. Amplification by iteration needs a contractive
//! step, i.e. a smooth convex loss and step size `η ≤ 2/β` for gradient descent. That is the
//! paper's RW DP-SGD, not our ADMM step.
//!
//! The walk models also differ. The paper's `W` keeps the token with probability `W_uu`, and its
//! number of contributions is random (about `T/n`, with a concentration slack). Our daemon
//! forwards to another user, and `K_i` is counted exactly.
//!
//! One thing can be said without the constant. As restated above, its graph factor
//! `Σ_{t ≤ T} (Wᵗ)_uv / t` is never smaller than the first-hit series behind our `E[1/M_uv]` up
//! to `T`. The reason is `(Wᵗ)_uv = Σ_{s ≤ t} h_uv(s) (W^{t−s})_vv ≥ h_uv(t)`: it counts every
//! visit at time `t`, not only the first.
//!
//! To offer the figure, we need the theorem's text: the statement, its assumptions and its
//! sensitivity convention.

pub mod coalition;
pub mod complete;
pub mod excursion;
pub mod given_walk;
mod hitting;
pub mod law;
pub mod mixture;
pub mod passage;
mod renewal;

pub use hitting::{
    HittingOptions, InverseHitting, LawSink, PairHitting, complete_graph_inverse_hitting,
    inverse_hitting_all_pairs, passage_all_pairs,
};
pub use law::{Horizon, PassageLaw};

use crate::Noise;
use crate::error::PrivacyError;
use crate::local::{eps_loc, mu2_loc};
use crate::rdp::{Orders, RdpCurve};

/// What DP-SGD figures on the walk assume (see the module docs).
pub const DP_SGD_ASSUMPTION: &str = "DP-SGD steps are non-expansive (convex beta-smooth loss, lr <= 2/beta, the clipped gradient the gradient of a convex function: true in one dimension, for a single generalized linear loss, or when the clip never binds; the walk's step clips a user's summed gradient, so in more dimensions this is assumed, not checked); every hop adds noise of the same sigma; the walk does not depend on the data";

/// A walk's transition rows: for each user, `(next user, probability)` pairs summing to 1.
/// The topology implements this to be accounted on.
pub trait Transitions {
    /// Number of users.
    fn users(&self) -> usize;
    /// The transition row of user `i` (`i < users()`).
    fn row(&self, i: usize) -> &[(usize, f64)];
}

impl Transitions for [Vec<(usize, f64)>] {
    fn users(&self) -> usize {
        self.len()
    }
    fn row(&self, i: usize) -> &[(usize, f64)] {
        &self[i]
    }
}

impl Transitions for Vec<Vec<(usize, f64)>> {
    fn users(&self) -> usize {
        self.len()
    }
    fn row(&self, i: usize) -> &[(usize, f64)] {
        &self[i]
    }
}

/// The Lipschitz constant of the ADMM token map `w ↦ w + (2λ/n)·clip(G(w), C) + noise` in `w`:
/// `L = 1 + 2λ/n` (`G` is half of a reflected-resolvent difference, hence 1-Lipschitz). Attained
/// (`r = 0`, a user whose data do not touch a coordinate, clip inactive), so not improvable.
pub fn admm_lipschitz(lambda: f64, users: usize) -> f64 {
    1.0 + 2.0 * lambda / users as f64
}

/// `g(m) = (1 − L⁻²)/(1 − L⁻²ᵐ)`: the share of `ε_loc` that leaks through a path of `m ≥ 1` noisy
/// `L`-Lipschitz hops (shift reduction with `L`-Lipschitz maps; exact for the linear-Gaussian
/// case, whose mean gap is `d·L^{m−1}` against a variance `τ²·Σ_{t<m} L^{2t}`). `g(1) = 1`,
/// `g(m) ≥ 1/m`, `g → 1/m` as `L → 1`, and `g` decreases in `m` to `1 − L⁻²`. Written with
/// `expm1` so that `L` within rounding of 1 gives `1/m`, not `0/0`.
pub fn path_factor(lipschitz: f64, m: u64) -> f64 {
    debug_assert!(lipschitz >= 1.0 && m >= 1);
    let x = -2.0 * lipschitz.ln();
    if x == 0.0 {
        return 1.0 / m as f64;
    }
    x.exp_m1() / (m as f64 * x).exp_m1()
}

/// How many contributions of one user are charged at each [`Horizon`]: the input of
/// [`network_curve`]. Kept sorted by horizon, one entry per horizon.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Default)]
pub struct Charges(Vec<(Horizon, u64)>);

impl Charges {
    /// `count` contributions seen only through the token's visits (no final model).
    pub fn open(count: u64) -> Self {
        Self::from_pairs([(Horizon::Open, count)])
    }

    /// Contributions at known steps `seqs` (0-based) of a walk of `steps` steps, whose final
    /// model every member sees.
    pub fn at_steps(seqs: impl IntoIterator<Item = u64>, steps: u64) -> Self {
        Self::from_pairs(seqs.into_iter().map(|k| (Horizon::of_step(k, steps), 1)))
    }

    /// `count` contributions whose horizons are known only for the `recent` ones (the others
    /// were made more than `window` steps before the end, so each is charged at `window + 1`,
    /// the largest charge they can have).
    pub fn recent(count: u64, recent: &[u64], window: u64) -> Self {
        let older = count.saturating_sub(recent.len() as u64);
        Self::from_pairs(
            recent
                .iter()
                .map(|&h| (Horizon::Final(h.max(1)), 1))
                .chain([(Horizon::Final(window + 1), older)]),
        )
    }

    /// Sorted and merged charges.
    pub fn from_pairs(pairs: impl IntoIterator<Item = (Horizon, u64)>) -> Self {
        let mut v: Vec<(Horizon, u64)> = pairs.into_iter().filter(|p| p.1 > 0).collect();
        v.sort_by_key(|p| p.0);
        let mut out: Vec<(Horizon, u64)> = Vec::with_capacity(v.len());
        for (h, c) in v {
            match out.last_mut() {
                Some(last) if last.0 == h => last.1 += c,
                _ => out.push((h, c)),
            }
        }
        Self(out)
    }

    /// The number of contributions.
    pub fn count(&self) -> u64 {
        self.0.iter().map(|p| p.1).sum()
    }

    /// The entries, sorted by horizon.
    pub fn entries(&self) -> &[(Horizon, u64)] {
        &self.0
    }
}

/// The network view towards one observer (or an envelope of observers) whose first-passage law
/// is `law`: each contribution charged by the mixture bound at its horizon, composed additively.
/// Every value is at most the local view's `ε_loc(α)` per contribution.
pub fn network_curve(
    law: &PassageLaw,
    orders: &Orders,
    noise: Noise,
    charges: &Charges,
) -> RdpCurve {
    let exps: Vec<law::Exps> = orders
        .as_slice()
        .iter()
        .map(|&alpha| law.exps(order_exponent(alpha, noise)))
        .collect();
    curve_with(law, orders, noise, charges, &exps)
}

/// `a = (α − 1)·ε_loc(α)`, the exponent of the mixture at order `α`.
pub(crate) fn order_exponent(alpha: f64, noise: Noise) -> f64 {
    (alpha - 1.0) * eps_loc(alpha, noise.sigma(), noise.clip())
}

/// [`network_curve`] with the `exps` of each order precomputed (one per order of `orders`, for
/// this law's truncation): what evaluating many laws of one pass shares.
pub(crate) fn curve_with(
    law: &PassageLaw,
    orders: &Orders,
    noise: Noise,
    charges: &Charges,
    exps: &[law::Exps],
) -> RdpCurve {
    let horizons: Vec<Horizon> = charges.0.iter().map(|p| p.0).collect();
    let mut logs = vec![0.0; horizons.len()];
    let total: u64 = charges.0.iter().map(|&(_, count)| count).sum();
    let values = orders.as_slice().iter().zip(exps).map(|(&alpha, exps)| {
        let local = eps_loc(alpha, noise.sigma(), noise.clip());
        law.log_mgf(exps, &horizons, &mut logs);
        let sum = charges
            .0
            .iter()
            .zip(&logs)
            .map(|(&(_, count), &log)| count as f64 * (log / (alpha - 1.0)).clamp(0.0, local))
            .sum::<f64>();
        // Never above the local view of all the contributions, computed as `local_view` does:
        // where every contribution is charged its local value (two users), the sum above may
        // round an ulp over it.
        sum.min(total as f64 * local)
    });
    // Never above the local view, which is Gaussian: its exact figure bounds this one too.
    RdpCurve::from_computed(orders.clone(), values)
        .with_gaussian_bound(total as f64 * mu2_loc(noise.sigma(), noise.clip()))
}

/// The paper's Theorem 4 closed form `8 α K C² ln n / (σ² n)`, for printing beside the exact
/// figure (labelled as the paper's: it omits the Lipschitz growth of the ADMM step, the final
/// model and the `n − 1` details).
pub fn paper_closed_form(
    orders: &Orders,
    noise: Noise,
    contributions: u64,
    n: u64,
) -> Result<RdpCurve, PrivacyError> {
    if n < 2 {
        return Err(PrivacyError::Users { min: 2, got: n });
    }
    let factor = contributions as f64 * (n as f64).ln() / n as f64;
    let values = orders
        .as_slice()
        .iter()
        .map(|&a| factor * eps_loc(a, noise.sigma(), noise.clip()));
    Ok(RdpCurve::from_computed(orders.clone(), values))
}

#[cfg(test)]
mod tests;
