//! The network view: what user `j` learns about user `i` through the walk.
//!
//! # The bound (DESIGN.md, "Network view"; Cyffers, Bellet & Basu 2023, Thm. 4 and its proof)
//! User `j` sees `w` only when the token visits it. After a contribution of `i`, the token first
//! reaches `j` after `M` moves; each move adds fresh Gaussian noise, so by amplification by
//! iteration the leak given `M = m` is `ε_loc(α)/m`. The walk does not depend on the data, so we
//! condition on it (sender included), and the weak convexity of the Rényi divergence turns the
//! mixture over `m` into, per contribution,
//! `ε_{i→j}(α) ≤ (1 + c) · ε_loc(α) · E[1/M_ij]`, `c = (α − 1) ε_loc(α)`,
//! **valid only where `c ≤ 1`**. Where `c > 1` only the local bound `ε_loc(α)` holds; we use it
//! there and report those orders ([`NetworkCurve::fallback_orders`]). Where `c ≤ 1` both hold and
//! we take the smaller, which also keeps the curve monotone in σ (needed by calibration).
//! Correction to the paper: its proof drops the `(1 + c)` factor; we keep it.
//! Assumptions (not proved in the paper, to be printed with every network figure): only the first
//! visit of `j` after a contribution counts (later visits are post-processing of it), and the
//! contributions of `i` compose additively although `u_i` carries their noise forward. The local
//! view needs neither and is always printed beside this one.
//! If `j` is never reached from `i`, `j` sees nothing that depends on `i`: the curve is 0 and
//! [`NetworkCurve::reached`] is false.
//!
//! # `E[1/M]` on the complete graph
//! Forwarding uniformly to one of the other `n − 1` users, `P(M = m) = q(1 − q)^{m−1}` with
//! `q = 1/(n−1)`, so `E[1/M] = Σ_m q(1−q)^{m−1}/m = q ln(1/q)/(1 − q) = ln(n−1)/(n−2)` (`= 1` for
//! `n = 2`). The paper's Theorem 4 instead states `8 α K C² ln n / (σ² n)` (its walk may stay at
//! the holder, and the `(1 + c)` factor is dropped); [`paper_closed_form`] gives it, labelled as
//! such, to print beside the exact figure. Note `ln n / n ≤ ln(n−1)/(n−2) ≤ ln n/(n−2)`.
//!
//! # `E[1/M]` on any graph: a certified truncated series
//! For a target `j`, let `Q` be the transition matrix with column `j` removed and `r_m = Q^m 1`:
//! `r_m(i) = P(M_ij > m)`. Then `h_ij(m) = r_{m−1}(i) − r_m(i)` and
//! `E[1/M_ij] = S_T + tail`, `S_T = Σ_{m ≤ T} h(m)/m`. By summation by parts
//! `tail = r_T/(T+1) − Σ_{m>T} r_m/(m(m+1)) ≤ r_T/(T+1)` (all remaining mass hitting at `T + 1`),
//! the crude certified bound. We tighten it, still certified: `Q ≥ 0` is monotone, so if
//! `ρ_min r_{T−1} ≤ r_T ≤ ρ_max r_{T−1}` componentwise then by induction
//! `ρ_min^k r_T ≤ r_{T+k} ≤ ρ_max^k r_T` for all `k`, and the tail lies between
//! `r_T · B(ρ_max, T)` and `r_T · B(ρ_min, T)` with `B(ρ, T) = (1−ρ) Σ_{k≥1} ρ^{k−1}/(T+k)`
//! (`B ≤ 1/(T+1)`, decreasing in `ρ`). `B` is summed exactly for 256 terms; the rest is bounded
//! above and below by exponential integrals (`1/(T+k)` against `∫ dx/(T+x)` on adjacent unit
//! intervals). The reported value is the upper end (plus a relative margin of `(T+100)·4·ε_mach`
//! for rounding), and the gap is the width of the interval. Once the walk has mixed, `ρ_min` and
//! `ρ_max` meet at the Perron root of `Q` and the gap vanishes geometrically; `T` grows in chunks
//! until every pair's gap is below `rel_tol` of its value, or `max_steps` is reached (slowly mixing
//! graphs such as long rings): the achieved gaps are reported either way.
//!
//! All targets are iterated together in blocks of columns (`r` is an `n × block` matrix, each step
//! a sparse-times-dense product with contiguous rows), which vectorizes.
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

use crate::Noise;
use crate::error::PrivacyError;
use crate::local::eps_loc;
use crate::rdp::{Orders, RdpCurve};

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

/// A network-view curve and what it rests on.
#[derive(Debug, Clone, PartialEq)]
pub struct NetworkCurve {
    /// The composed curve over all contributions.
    pub curve: RdpCurve,
    /// Orders where `c = (α−1) ε_loc(α) > 1`, at which the local bound was used instead.
    pub fallback_orders: Vec<f64>,
    /// The `E[1/M]` used.
    pub inverse_hitting: f64,
    /// False when the observer is never reached (`E[1/M] = 0`): the curve is then 0.
    pub reached: bool,
}

/// The network view of `contributions` contributions of one user towards one observer, given
/// `E[1/M] ∈ [0, 1]` for that pair (an upper bound on it is fine: the curve is monotone in it).
pub fn network_view(
    orders: &Orders,
    noise: Noise,
    contributions: u64,
    inverse_hitting: f64,
) -> Result<NetworkCurve, PrivacyError> {
    if !(0.0..=1.0).contains(&inverse_hitting) {
        return Err(PrivacyError::InverseHitting(inverse_hitting));
    }
    let reached = inverse_hitting > 0.0;
    let k = contributions as f64;
    let mut fallback_orders = Vec::new();
    let values: Vec<f64> = orders
        .as_slice()
        .iter()
        .map(|&alpha| {
            let e = eps_loc(alpha, noise.sigma(), noise.clip());
            let c = (alpha - 1.0) * e;
            let per = if !reached {
                0.0
            } else if c <= 1.0 {
                e.min((1.0 + c) * e * inverse_hitting)
            } else {
                fallback_orders.push(alpha);
                e
            };
            k * per
        })
        .collect();
    let curve = RdpCurve::from_computed(orders.clone(), values.into_iter());
    Ok(NetworkCurve {
        curve,
        fallback_orders,
        inverse_hitting,
        reached,
    })
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

/// Exact `E[1/M]` on the complete graph of `n ≥ 2` users forwarding uniformly to one of the
/// other `n − 1`: `ln(n−1)/(n−2)` (1 for `n = 2`). O(1).
pub fn complete_graph_inverse_hitting(n: u64) -> Result<f64, PrivacyError> {
    match n {
        0 | 1 => Err(PrivacyError::Users { min: 2, got: n }),
        2 => Ok(1.0),
        _ => Ok(((n - 1) as f64).ln() / (n - 2) as f64),
    }
}

/// The paper's Theorem 4 closed form `8 α K C² ln n / (σ² n)`, for printing beside the exact
/// figure (labelled as the paper's; it omits the `(1 + c)` factor and the `n − 1` details).
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

/// Options of the certified `E[1/M]` computation.
///
/// | name | default | meaning | range |
/// |------|---------|---------|-------|
/// | `rel_tol` | 1e-3 | stop when every pair's gap ≤ `rel_tol` × its value | (0, 1) |
/// | `max_steps` | 2048 | cap on the truncation `T` (a 1,000-ring stops here, ~5 s) | ≥ 1 |
/// | `check_every` | 32 | steps between convergence checks | ≥ 1 |
/// | `block` | 64 | targets iterated together | ≥ 1 |
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct HittingOptions {
    /// Relative gap at which to stop.
    pub rel_tol: f64,
    /// Cap on the number of steps `T`.
    pub max_steps: usize,
    /// Steps between convergence checks.
    pub check_every: usize,
    /// Number of targets iterated together.
    pub block: usize,
}

impl Default for HittingOptions {
    fn default() -> Self {
        Self {
            rel_tol: 1e-3,
            max_steps: 2048,
            check_every: 32,
            block: 64,
        }
    }
}

/// Certified bounds on `E[1/M_ij]` for one pair.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct PairHitting {
    /// Certified upper bound on `E[1/M_ij]` (the value to account with).
    pub upper: f64,
    /// Width of the certified interval (`upper − lower`).
    pub gap: f64,
    /// False when `j` is never reached from `i` (then `upper = gap = 0` exactly).
    pub reached: bool,
}

/// Certified `E[1/M_ij]` for all ordered pairs of a graph.
#[derive(Debug, Clone, PartialEq)]
pub struct InverseHitting {
    n: usize,
    upper: Vec<f64>,
    gap: Vec<f64>,
    reached: Vec<bool>,
    /// The largest truncation `T` used (over target blocks).
    pub steps: usize,
    /// Whether every pair met `rel_tol` before `max_steps`.
    pub converged: bool,
    /// Largest `gap / upper` over reached pairs.
    pub max_rel_gap: f64,
    /// Largest `gap` over all pairs.
    pub max_abs_gap: f64,
    /// Largest over sources `i` of `max_j gap_ij / max_j upper_ij`: how well each user's
    /// worst-case observer figure is pinned down, even where far pairs are loose (slow mixing).
    pub max_gap_over_worst: f64,
}

impl InverseHitting {
    /// Number of users.
    pub fn users(&self) -> usize {
        self.n
    }

    /// Bounds for source `i` and observer `j`; `None` on the diagonal or out of range.
    pub fn get(&self, i: usize, j: usize) -> Option<PairHitting> {
        if i >= self.n || j >= self.n || i == j {
            return None;
        }
        let at = i * self.n + j;
        Some(PairHitting {
            upper: self.upper[at],
            gap: self.gap[at],
            reached: self.reached[at],
        })
    }

    /// The observer with the largest `E[1/M_ij]` bound for source `i`, and that bound.
    pub fn worst_observer(&self, i: usize) -> Option<(usize, f64)> {
        (0..self.n)
            .filter(|&j| j != i)
            .filter_map(|j| self.get(i, j).map(|p| (j, p.upper)))
            .max_by(|a, b| a.1.total_cmp(&b.1))
    }
}

fn bad_row(row: usize, reason: impl Into<String>) -> PrivacyError {
    PrivacyError::Transition {
        row,
        reason: reason.into(),
    }
}

/// Checks that every row is a probability distribution over valid users.
fn check_rows<T: Transitions + ?Sized>(p: &T) -> Result<(), PrivacyError> {
    let n = p.users();
    for i in 0..n {
        let row = p.row(i);
        if row.is_empty() {
            return Err(bad_row(i, "empty row: the walk would stop here"));
        }
        let mut sum = 0.0;
        for &(k, w) in row {
            if k >= n {
                return Err(bad_row(i, format!("target {k} out of range for {n} users")));
            }
            if !(w >= 0.0 && w.is_finite()) {
                return Err(bad_row(
                    i,
                    format!("probability {w} is not finite and >= 0"),
                ));
            }
            sum += w;
        }
        if (sum - 1.0).abs() > 1e-9 {
            return Err(bad_row(i, format!("probabilities sum to {sum}, not 1")));
        }
    }
    Ok(())
}

/// `e^x E1(x)` for `x > 0` (series below 1, continued fraction above; Numerical Recipes §6.3).
fn e1_scaled(x: f64) -> f64 {
    if x <= 1.0 {
        const EULER_GAMMA: f64 = 0.577_215_664_901_532_9;
        let (mut sum, mut term) = (0.0, 1.0);
        for k in 1..60 {
            let kf = f64::from(k);
            term *= -x / kf;
            sum += term / kf;
            if term.abs() < 1e-17 {
                break;
            }
        }
        x.exp() * (-EULER_GAMMA - x.ln() - sum)
    } else {
        let mut b = x + 1.0;
        let mut c = 1.0 / f64::MIN_POSITIVE;
        let mut d = 1.0 / b;
        let mut h = d;
        for i in 1..500 {
            let an = -f64::from(i) * f64::from(i);
            b += 2.0;
            d = 1.0 / (an * d + b);
            c = b + an / c;
            let del = c * d;
            h *= del;
            if (del - 1.0).abs() < 1e-16 {
                break;
            }
        }
        h
    }
}

/// Terms of `B(ρ, T)` summed exactly before the exponential-integral bounds take over.
const EXACT_TAIL_TERMS: usize = 256;

/// Upper (`upper = true`) or lower bound on `B(ρ, T) = (1−ρ) Σ_{k≥1} ρ^{k−1}/(T+k)`.
fn tail_factor(rho: f64, t: f64, upper: bool) -> f64 {
    let crude = 1.0 / (t + 1.0);
    if rho <= 0.0 {
        return crude;
    }
    if rho >= 1.0 {
        return 0.0;
    }
    let (mut sum, mut w) = (0.0, 1.0 - rho);
    for k in 1..=EXACT_TAIL_TERMS {
        sum += w / (t + k as f64);
        w *= rho;
    }
    // ρ^L · B(ρ, T + L), bounded by (1−ρ)/ρ · e1s(λ(T+L)) above and (1−ρ) · e1s(λ(T+L+1)) below.
    let weight = rho.powi(EXACT_TAIL_TERMS as i32);
    let lambda = -rho.ln();
    let tl = t + EXACT_TAIL_TERMS as f64;
    let rest = if upper {
        (1.0 - rho) / rho * e1_scaled(lambda * tl)
    } else {
        (1.0 - rho) * e1_scaled(lambda * (tl + 1.0))
    };
    let b = sum + weight * rest;
    if b.is_finite() {
        b.clamp(0.0, crude)
    } else if upper {
        crude
    } else {
        0.0
    }
}

/// For target `j`: the users from which `j` can be reached (reverse breadth-first search).
fn reaches(reverse: &[Vec<usize>], j: usize, seen: &mut [bool], queue: &mut Vec<usize>) {
    seen.fill(false);
    queue.clear();
    queue.push(j);
    seen[j] = true;
    while let Some(k) = queue.pop() {
        for &i in &reverse[k] {
            if !seen[i] {
                seen[i] = true;
                queue.push(i);
            }
        }
    }
}

/// Certified `E[1/M_ij]` for every ordered pair (see the module docs for the method).
pub fn inverse_hitting_all_pairs<T: Transitions + ?Sized>(
    p: &T,
    opts: &HittingOptions,
) -> Result<InverseHitting, PrivacyError> {
    if !(opts.rel_tol > 0.0 && opts.rel_tol < 1.0) {
        return Err(PrivacyError::Option {
            name: "rel_tol",
            value: opts.rel_tol,
        });
    }
    for (name, v) in [
        ("max_steps", opts.max_steps),
        ("check_every", opts.check_every),
        ("block", opts.block),
    ] {
        if v == 0 {
            return Err(PrivacyError::Option { name, value: 0.0 });
        }
    }
    check_rows(p)?;
    let n = p.users();
    let mut reverse = vec![Vec::new(); n];
    for i in 0..n {
        for &(k, w) in p.row(i) {
            if w > 0.0 {
                reverse[k].push(i);
            }
        }
    }
    let mut out = InverseHitting {
        n,
        upper: vec![0.0; n * n],
        gap: vec![0.0; n * n],
        reached: vec![false; n * n],
        steps: 0,
        converged: true,
        max_rel_gap: 0.0,
        max_abs_gap: 0.0,
        max_gap_over_worst: 0.0,
    };
    let (mut seen, mut queue) = (vec![false; n], Vec::new());
    for j in 0..n {
        reaches(&reverse, j, &mut seen, &mut queue);
        for (i, &s) in seen.iter().enumerate() {
            out.reached[i * n + j] = i != j && s;
        }
    }
    let mut j0 = 0;
    while j0 < n {
        solve_block(p, j0..n.min(j0 + opts.block), opts, &mut out);
        j0 += opts.block;
    }
    for i in 0..n {
        let row = i * n..(i + 1) * n;
        let worst = out.upper[row.clone()].iter().copied().fold(0.0, f64::max);
        let gap = out.gap[row].iter().copied().fold(0.0, f64::max);
        if worst > 0.0 {
            out.max_gap_over_worst = out.max_gap_over_worst.max(gap / worst);
        }
    }
    Ok(out)
}

/// Iterates `r ← Q r` for a block of targets until every pair in it is within `rel_tol`.
fn solve_block<T: Transitions + ?Sized>(
    p: &T,
    targets: std::ops::Range<usize>,
    opts: &HittingOptions,
    out: &mut InverseHitting,
) {
    let n = p.users();
    let nb = targets.len();
    let mut prev = vec![1.0; n * nb];
    let mut next = vec![0.0; n * nb];
    let mut partial = vec![0.0; n * nb];
    for (b, j) in targets.clone().enumerate() {
        prev[j * nb + b] = 0.0;
    }
    for m in 1..=opts.max_steps {
        let inv_m = 1.0 / m as f64;
        for i in 0..n {
            let row_out = &mut next[i * nb..(i + 1) * nb];
            row_out.fill(0.0);
            for &(k, w) in p.row(i) {
                let src = &prev[k * nb..(k + 1) * nb];
                for (o, s) in row_out.iter_mut().zip(src) {
                    *o += w * s;
                }
            }
            if targets.contains(&i) {
                row_out[i - targets.start] = 0.0;
            }
            let acc = &mut partial[i * nb..(i + 1) * nb];
            let before = &prev[i * nb..(i + 1) * nb];
            for ((a, o), r) in acc.iter_mut().zip(row_out.iter()).zip(before) {
                *a += (r - o) * inv_m;
            }
        }
        let last = m == opts.max_steps;
        if (m % opts.check_every == 0 || last)
            && bounds(
                n,
                targets.clone(),
                m,
                &prev,
                &next,
                &partial,
                opts.rel_tol,
                last,
                out,
            )
        {
            out.steps = out.steps.max(m);
            return;
        }
        std::mem::swap(&mut prev, &mut next);
    }
}

/// Computes the certified interval of every pair of the block at truncation `t`; writes them and
/// returns true when all are within `rel_tol` (or when `force`, at the step cap).
#[allow(clippy::too_many_arguments)]
fn bounds(
    n: usize,
    targets: std::ops::Range<usize>,
    t: usize,
    prev: &[f64],
    next: &[f64],
    partial: &[f64],
    rel_tol: f64,
    force: bool,
    out: &mut InverseHitting,
) -> bool {
    let nb = targets.len();
    let tf = t as f64;
    let margin = 1.0 + (tf + 100.0) * 4.0 * f64::EPSILON;
    let mut factors = Vec::with_capacity(nb);
    for (b, j) in targets.clone().enumerate() {
        let (mut lo, mut hi) = (f64::INFINITY, f64::NEG_INFINITY);
        for i in (0..n).filter(|&i| i != j) {
            let (r0, r1) = (prev[i * nb + b], next[i * nb + b]);
            if r0 > 0.0 {
                let ratio = r1 / r0;
                lo = lo.min(ratio);
                hi = hi.max(ratio);
            }
        }
        if lo > hi {
            (lo, hi) = (0.0, 0.0); // no surviving mass at all: the tail is 0
        }
        let (rho_min, rho_max) = (lo.clamp(0.0, 1.0), hi.clamp(0.0, 1.0));
        factors.push((
            tail_factor(rho_min, tf, true),
            tail_factor(rho_max, tf, false),
        ));
    }
    let mut ok = true;
    for (b, j) in targets.clone().enumerate() {
        let (b_hi, b_lo) = factors[b];
        for i in 0..n {
            let at = i * n + j;
            if !out.reached[at] {
                continue;
            }
            let (s, r) = (partial[i * nb + b], next[i * nb + b].max(0.0));
            let upper = (s + r * b_hi) * margin;
            let gap = upper - (s + r * b_lo);
            if gap > rel_tol * upper {
                ok = false;
                if !force {
                    return false;
                }
            }
            out.upper[at] = upper.min(1.0);
            out.gap[at] = gap;
        }
    }
    for j in targets {
        for i in (0..n).filter(|&i| out.reached[i * n + j]) {
            let at = i * n + j;
            out.max_abs_gap = out.max_abs_gap.max(out.gap[at]);
            if out.upper[at] > 0.0 {
                out.max_rel_gap = out.max_rel_gap.max(out.gap[at] / out.upper[at]);
            }
        }
    }
    if !ok {
        out.converged = false;
    }
    true
}

#[cfg(test)]
mod tests {
    use super::*;

    fn complete(n: usize) -> Vec<Vec<(usize, f64)>> {
        let w = 1.0 / (n - 1) as f64;
        (0..n)
            .map(|i| (0..n).filter(|&k| k != i).map(|k| (k, w)).collect())
            .collect()
    }

    fn ring(n: usize) -> Vec<Vec<(usize, f64)>> {
        (0..n)
            .map(|i| vec![((i + 1) % n, 0.5), ((i + n - 1) % n, 0.5)])
            .collect()
    }

    #[test]
    fn complete_graph_closed_form() {
        assert_eq!(complete_graph_inverse_hitting(2), Ok(1.0));
        assert!(complete_graph_inverse_hitting(1).is_err());
        // Direct sum of q(1−q)^{m−1}/m for n = 11.
        let q = 0.1_f64;
        let direct: f64 = (1..2000)
            .map(|m| q * (1.0 - q).powi(m - 1) / f64::from(m))
            .sum();
        let exact = complete_graph_inverse_hitting(11).unwrap();
        assert!((direct - exact).abs() < 1e-14);
        assert!((exact - q * (1.0 / q).ln() / (1.0 - q)).abs() < 1e-15);
        let big = complete_graph_inverse_hitting(1_000_000).unwrap();
        assert!((big - (999_999_f64).ln() / 999_998.0).abs() < 1e-18);
    }

    #[test]
    fn series_matches_closed_form_on_complete_graph() {
        for n in [3, 5, 20] {
            let res = inverse_hitting_all_pairs(&complete(n), &HittingOptions::default()).unwrap();
            let exact = complete_graph_inverse_hitting(n as u64).unwrap();
            assert!(res.converged);
            for i in 0..n {
                for j in (0..n).filter(|&j| j != i) {
                    let pair = res.get(i, j).unwrap();
                    assert!(pair.reached);
                    assert!(pair.upper >= exact, "{} < {exact}", pair.upper);
                    assert!(pair.upper - pair.gap <= exact * (1.0 + 1e-12));
                    assert!(pair.upper <= exact * (1.0 + 1e-3), "n={n}: {}", pair.upper);
                }
            }
            assert!(res.get(0, 0).is_none());
        }
    }

    #[test]
    fn ring_of_three_is_exact() {
        // From i the walk hits a given neighbour at step 1 w.p. 1/2, else after M = 1 + M' with
        // M' ~ Geometric(1/2) again (a 3-ring is the complete graph on 3 users).
        let res = inverse_hitting_all_pairs(&ring(3), &HittingOptions::default()).unwrap();
        let exact = complete_graph_inverse_hitting(3).unwrap(); // ln 2
        assert!((res.get(0, 1).unwrap().upper - exact).abs() < 1e-3 * exact);
    }

    #[test]
    fn unreachable_pairs_are_exactly_zero_and_flagged() {
        // 0 → 1 → 2 → 2 (absorbing): nothing reaches 0, and 2 reaches no one.
        let p = vec![vec![(1, 1.0)], vec![(2, 1.0)], vec![(2, 1.0)]];
        let res = inverse_hitting_all_pairs(&p, &HittingOptions::default()).unwrap();
        let none = res.get(2, 0).unwrap();
        assert_eq!((none.upper, none.gap, none.reached), (0.0, 0.0, false));
        assert!(!res.get(1, 0).unwrap().reached);
        let one = res.get(0, 1).unwrap();
        assert!(one.reached && (one.upper - 1.0).abs() < 1e-12);
        assert!((res.get(0, 2).unwrap().upper - 0.5).abs() < 1e-12);
    }

    #[test]
    fn bad_rows_and_options_are_errors() {
        let opts = HittingOptions::default();
        let cases: Vec<Vec<Vec<(usize, f64)>>> = vec![
            vec![vec![(1, 1.0)], vec![]],
            vec![vec![(5, 1.0)], vec![(0, 1.0)]],
            vec![vec![(1, 0.5)], vec![(0, 1.0)]],
            vec![vec![(1, f64::NAN)], vec![(0, 1.0)]],
            vec![vec![(1, 2.0), (0, -1.0)], vec![(0, 1.0)]],
        ];
        for p in cases {
            assert!(matches!(
                inverse_hitting_all_pairs(&p, &opts),
                Err(PrivacyError::Transition { .. })
            ));
        }
        let bad = HittingOptions {
            rel_tol: 0.0,
            ..opts
        };
        assert!(matches!(
            inverse_hitting_all_pairs(&ring(4), &bad),
            Err(PrivacyError::Option { .. })
        ));
    }

    #[test]
    fn tail_factor_brackets_the_sum() {
        for &(rho, t) in &[
            (0.5_f64, 10.0_f64),
            (0.999, 100.0),
            (0.999_99, 3000.0),
            (0.1, 1.0),
        ] {
            let exact: f64 = (1..2_000_000)
                .map(|k| (1.0 - rho) * rho.powi(k - 1) / (t + f64::from(k)))
                .sum();
            let (hi, lo) = (tail_factor(rho, t, true), tail_factor(rho, t, false));
            assert!(
                lo <= exact * (1.0 + 1e-12) && exact <= hi * (1.0 + 1e-12),
                "{rho} {t}"
            );
            assert!(
                hi - lo <= 0.05 * exact + 1e-15,
                "{rho} {t}: {lo} {exact} {hi}"
            );
        }
        assert_eq!(tail_factor(0.0, 9.0, true), 0.1);
        assert_eq!(tail_factor(1.0, 9.0, true), 0.0);
    }

    #[test]
    fn network_view_uses_the_bound_where_valid_and_falls_back_elsewhere() {
        let orders = Orders::new(&[2.0, 64.0]).unwrap();
        let noise = Noise::new(20.0, 1.0).unwrap(); // ε_loc = 0.02 α
        let v = network_view(&orders, noise, 3, 0.1).unwrap();
        let (e2, e64) = (0.04, 1.28);
        let c2 = 1.0 * e2;
        assert!((v.curve.values()[0] - 3.0 * (1.0 + c2) * e2 * 0.1).abs() < 1e-15);
        assert_eq!(v.fallback_orders, vec![64.0]); // c = 63 · 1.28 > 1
        assert!((v.curve.values()[1] - 3.0 * e64).abs() < 1e-12);
        let none = network_view(&orders, noise, 3, 0.0).unwrap();
        assert!(!none.reached && none.curve.values().iter().all(|&x| x == 0.0));
        for bad in [-0.1, 1.5, f64::NAN] {
            assert!(network_view(&orders, noise, 1, bad).is_err());
        }
    }
}
