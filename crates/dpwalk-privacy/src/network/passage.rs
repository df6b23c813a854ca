//! N3's mixture by first passages: the same `E exp(θ·Ψ_UNI)` per initial holder as
//! [`super::mixture::mixture`] on a general graph whose distances are all computed (no tail),
//! without the (state × count) recursion, whose cost is the graph's edges times the counts at
//! every order.
//!
//! # Once per pair (independent of θ)
//! With `{i, j}` absorbing, for every state `x` and step `m ≤ K`: `u_i^m(x)` (the first hit of
//! `{i, j}` is `i`, at step `m`), `u_j^m(x)` (it is `j`) and `s^m(x)` (no hit in steps `1..=m`),
//! by one backward pass over the chain's moves: O(K·|E|) time, 3·K·n numbers.
//!
//! # Per order
//! With `f(q, r) = e^{θ(2q−1)/r}` (a visit of `i` that is the `q`-th nearest at distance `r`) and
//! the return kernel `a_m = u_i^m(i)`, `i` at distance `r` with `q` visits:
//! `h_q(r) = f(q, r)·([q = 1]·b(r) + Σ_{m<r} a_m·h_{q−1}(r − m))`, with `b(r) = u_j^r(i)` for an
//! excursion that ends with `j`'s step and `b(r) = s^{r−1}(i)` for one that ends with the final
//! model; `H(r) = Σ_{q ≤ Q} h_q(r)` (paths with more than `Q` visits in one excursion are
//! dropped, as in the recursion). From `j`: `W(L) = u_j^{L+1}(j) + Σ_{m ≤ L} u_i^m(j)·H(L − m + 1)`,
//! the same with the final model for the last segment, and the renewal over `j`'s steps
//! `E(K − 1) = 1`, `E(t) = Σ_L W(L)·E(t + L + 1) + W_fin(K − 1 − t)`. From any other initial
//! holder `x`: `M(x) = Σ_L u_j^L(x)·E(L) + Σ_m u_i^m(x)·G(m) + s^{K−1}(x) + Σ_m u_i^m(x)·H_fin(K − m)`
//! with `G(m) = Σ_r H(r)·E(m + r)` (the value of `i` holding the token at step `m`).
//!
//! # The geometric envelopes
//! The levels are convolutions with the return kernel `a_m`, and the excursions from `j` with the
//! first-visit kernel `u_i^m(j)`. Each is used exactly up to [`EXACT_RETURNS`] steps and beyond
//! by an envelope `k_m ≤ c·ρ^{m − M₀ − 1}`, which makes each convolution O(K·M₀) (a running
//! geometric sum) instead of O(K²): `ρ` is a Collatz–Wielandt bound on the spectral radius of the
//! chain killed at `{i, j}` (the rate both kernels decay at; any `ρ` gives a valid envelope), and
//! `c = max_{m > M₀} k_m/ρ^{m−M₀−1}` over every `m ≤ K`, so the envelope bounds every term it
//! replaces by construction. Every term is nonnegative, so the result only over-charges: the tests
//! hold the mixture and the dropped paths' probability within 1e-3 of the recursion and never
//! below it (largest excess measured 7.5e-5; a window of 48 gave 6e-4, one of 32 above 1e-3).
//!
//! Tried and dropped: the levels by FFT with `super::renewal`'s rounding margin. The margin is
//! absolute (relative to the inputs' norms), and `f(q, r)` is huge at small `r` and large `q`
//! (e^{23.7} for θ = 0.3, q = 40, r = 1), where the exact convolution is 0 or tiny: the margin,
//! multiplied by it, inflated one mixture 2.7× (K = 300, Q = 40) and overflowed at K = 2,000.
//!
//! # Cost
//! Per order O(Q·K·M₀ + K² + n·K), against O(K·|E|·Q) for the recursion: a pair of a 200-user
//! 4-regular graph at K = 2,000 (34 orders and the dropped paths) takes 62 ms instead of 829 ms
//! (BENCHMARKS.md).

use super::mixture::PairChain;
use super::renewal;
use dpwalk_core::problem::linalg::dot_in_lanes;

/// Steps of the return kernel used exactly; beyond, its geometric envelope (module docs).
pub const EXACT_RETURNS: usize = 64;

/// Power iterations for the envelope's rate (any positive vector gives a valid bound).
const POWER_ITERATIONS: usize = 50;

/// Walks longer than this solve the renewal by divide and conquer ([`renewal::solve`]); up to
/// it, term by term (`K²/2` multiply-adds, vectorised, and no rounding margin) is the cheaper:
/// at K = 2,000 the FFTs took 15 % of a pair's time.
pub(super) const FAST_RENEWAL: usize = 8192;

/// The first passages of one pair's chain to `{i, j}`, for every state and step `0..=K`, and the
/// return kernel's envelope.
pub(super) struct Passages {
    states: usize,
    steps: usize,
    contributor: usize,
    /// `u_i^m(x)` at `x·(K + 1) + m` (each state's passages contiguous in `m`).
    to_i: Vec<f64>,
    /// `u_j^m(x)`.
    to_j: Vec<f64>,
    /// `s^m(x)`.
    stay: Vec<f64>,
    /// The same three from `j` (index `m`).
    from_j: [Vec<f64>; 3],
    /// The return kernel `a_m = u_i^m(i)`.
    returns: Kernel,
    /// `u_i^m(j)`: the first visit of `i` after `j`'s step.
    first_visit: Kernel,
}

impl Passages {
    /// The passages of `chain` for a walk of `steps ≥ 1` steps.
    pub(super) fn new(chain: &PairChain, steps: usize) -> Self {
        let (s, k, c) = (chain.states(), steps, chain.contributor);
        let mut to_i = vec![0.0; (k + 1) * s];
        let mut to_j = vec![0.0; (k + 1) * s];
        let mut stay = vec![0.0; (k + 1) * s];
        let len = k + 1;
        // One backward step from the vectors of step m − 1 (over a state's row, or j's entry),
        // first hits at step 1 given.
        let step = |row: &[(usize, f64)], m: usize, hit_i: f64, hit_j: f64, v: [&[f64]; 3]| {
            let mut out = [hit_i, hit_j, 0.0];
            for &(y, p) in row.iter().filter(|&&(y, _)| y != c) {
                for (o, v) in out.iter_mut().zip(v) {
                    *o += p * v[y * len + m - 1];
                }
            }
            out
        };
        for x in 0..s {
            stay[x * len] = 1.0;
        }
        for m in 1..=k {
            for x in 0..s {
                let first = m == 1;
                let hit_i: f64 = if first {
                    chain.moves[x]
                        .iter()
                        .filter(|&&(y, _)| y == c)
                        .map(|&(_, p)| p)
                        .sum()
                } else {
                    0.0
                };
                let hit_j = if first { chain.ret[x] } else { 0.0 };
                let [ui, uj, st] = step(&chain.moves[x], m, hit_i, hit_j, [&to_i, &to_j, &stay]);
                to_i[x * len + m] = ui;
                to_j[x * len + m] = uj;
                stay[x * len + m] = st;
            }
        }
        let entry: Vec<(usize, f64)> = chain.entry.iter().copied().enumerate().collect();
        let mut from_j = [vec![0.0; len], vec![0.0; len], vec![0.0; len]];
        from_j[2][0] = 1.0;
        for m in 1..=k {
            let hit_i = if m == 1 { chain.entry[c] } else { 0.0 };
            let out = step(&entry, m, hit_i, 0.0, [&to_i, &to_j, &stay]);
            for (f, o) in from_j.iter_mut().zip(out) {
                f[m] = o;
            }
        }
        let rate = killed_rate(chain);
        let exact = |values: Vec<f64>| Kernel::new(values, EXACT_RETURNS, rate);
        let returns = exact(to_i[c * len..(c + 1) * len].to_vec());
        let first_visit = exact(from_j[0].clone());
        Self {
            states: s,
            steps: k,
            contributor: c,
            to_i,
            to_j,
            stay,
            from_j,
            returns,
            first_visit,
        }
    }

    /// State `x`'s passages in `v` (one of `to_i`, `to_j`, `stay`), indexed by the step.
    fn of<'a>(&self, v: &'a [f64], x: usize) -> &'a [f64] {
        let len = self.steps + 1;
        &v[x * len..(x + 1) * len]
    }

    /// `H(r) = Σ_{q ≤ Q} h_q(r)` for `r = 0..=K` (index `r`; `H(0) = 0`), `base(r)` the
    /// single-visit term, and the last level `h_Q`.
    fn levels(&self, theta: f64, visits: usize, base: impl Fn(usize) -> f64) -> Levels {
        let k = self.steps;
        // f(q, r) = b_r^{2q−1} with b_r = e^{θ/r}: fac[r] holds it for the current q.
        let b: Vec<f64> = (0..=k).map(|r| (theta / r.max(1) as f64).exp()).collect();
        let mut fac = b.clone();
        let mut total = vec![0.0; k + 1];
        let mut prev = vec![0.0; k + 1];
        let mut cur = vec![0.0; k + 1];
        for q in 1..=visits {
            let mut returns = self.returns.running();
            for r in 1..=k {
                let inner = if q == 1 {
                    base(r)
                } else {
                    returns.next(&prev, r)
                };
                // A zero stays zero whatever its factor (which may overflow at large θ).
                cur[r] = if inner > 0.0 { fac[r] * inner } else { 0.0 };
            }
            total.iter_mut().zip(&cur).for_each(|(t, c)| *t += c);
            std::mem::swap(&mut prev, &mut cur);
            fac.iter_mut().zip(&b).for_each(|(f, &b)| *f *= b * b);
        }
        Levels { total, last: prev }
    }

    /// `D(r)`: the probability weight of the paths from `i` at distance `r` that hold at least
    /// `Q` more visits of `i` before the observation (a dropped excursion), from the last level
    /// `h_Q` at θ = 0: `D(r) = Σ_m a_m·(h_Q(r − m) + D(r − m))`.
    fn beyond(&self, last: &[f64]) -> Vec<f64> {
        let k = self.steps;
        let mut d = vec![0.0; k + 1];
        let mut x = vec![0.0; k + 1]; // h_Q + D
        let mut returns = self.returns.running();
        for r in 1..=k {
            d[r] = returns.next(&x, r);
            x[r] = last[r] + d[r];
        }
        d
    }
}

/// A level's total over the visit counts and its last count.
struct Levels {
    total: Vec<f64>,
    last: Vec<f64>,
}

/// The rate `ρ` of the chain killed at `{i, j}`: a Collatz–Wielandt bound `B v ≤ ρ v` from
/// power iteration (any positive `v` gives a valid bound; a better one a smaller `ρ`). The
/// first-passage kernels decay at this rate; `None` where the arithmetic cannot confirm it.
fn killed_rate(chain: &PairChain) -> Option<f64> {
    let c = chain.contributor;
    let apply = |v: &[f64], out: &mut [f64]| {
        for (o, row) in out.iter_mut().zip(&chain.moves) {
            *o = row
                .iter()
                .filter(|&&(y, _)| y != c)
                .map(|&(y, p)| p * v[y])
                .sum();
        }
    };
    let mut v = vec![1.0; chain.states()];
    let mut bv = vec![0.0; v.len()];
    for _ in 0..POWER_ITERATIONS {
        apply(&v, &mut bv);
        let top = bv.iter().copied().fold(0.0, f64::max);
        if !(top > 0.0 && top.is_finite()) {
            break;
        }
        // The floor keeps every entry positive.
        v.iter_mut()
            .zip(&bv)
            .for_each(|(x, &b)| *x = b / top + 1e-12);
    }
    apply(&v, &mut bv);
    let rho = v.iter().zip(&bv).map(|(&x, &b)| b / x).fold(0.0, f64::max);
    (rho > 0.0 && rho.is_finite()).then_some(rho)
}

/// A first-passage kernel `k_m` (`m = 1..=K`), exact up to `m₀` and beyond bounded by its
/// geometric envelope `k_m ≤ scale·ρ^{m−m₀−1}` (module docs); exact throughout where the walk is
/// short or the envelope cannot be confirmed.
struct Kernel {
    /// `rev[t] = k_{m₀ − t}`, so that a window of a sequence dots with it.
    rev: Vec<f64>,
    rho: f64,
    scale: f64,
}

impl Kernel {
    /// `values[m]` is `k_m` (`values[0]` unused).
    fn new(values: Vec<f64>, exact: usize, rate: Option<f64>) -> Self {
        let k = values.len() - 1;
        let whole = |values: &[f64]| Self {
            rev: values[1..].iter().rev().copied().collect(),
            rho: 0.0,
            scale: 0.0,
        };
        let Some(rho) = rate.filter(|_| k > exact + 1) else {
            return whole(&values);
        };
        let mut scale: f64 = 0.0;
        let mut inv = 1.0;
        for &v in &values[exact + 1..] {
            scale = scale.max(v * inv);
            inv /= rho;
        }
        if !scale.is_finite() {
            return whole(&values);
        }
        Self {
            rev: values[1..=exact].iter().rev().copied().collect(),
            rho,
            scale,
        }
    }

    /// A running convolution with this kernel.
    fn running(&self) -> Running<'_> {
        Running {
            kernel: self,
            geometric: 0.0,
        }
    }
}

/// `Σ_{1 ≤ m < r} k_m·x(r − m)` for `r = 1, 2, …` in turn: the exact kernel over the last `m₀`
/// values of `x` (one dot product) and its envelope over the older ones (a running geometric
/// sum, `Σ_{m > m₀} ρ^{m−m₀−1}·x(r − m)`).
struct Running<'a> {
    kernel: &'a Kernel,
    geometric: f64,
}

impl Running<'_> {
    /// The sum at `r` (called for `r = 1, 2, …` in order; `x` known below `r`).
    fn next(&mut self, x: &[f64], r: usize) -> f64 {
        let m0 = self.kernel.rev.len();
        let len = m0.min(r - 1);
        let exact = dot(&self.kernel.rev[m0 - len..], &x[r - len..r]);
        if r > m0 + 1 {
            self.geometric = self.kernel.rho * self.geometric + x[r - m0 - 1];
        }
        exact + self.kernel.scale * self.geometric
    }
}

/// `E exp(θ·Ψ_UNI)` over the paths whose excursions hold at most `visits` visits of `i` (the
/// others omitted) for the walk of `passages`, per initial holder in the order of
/// [`super::mixture::mixture`]: every state of the chain, then `j`.
pub(super) fn mixture(p: &Passages, theta: f64, visits: usize) -> Vec<f64> {
    let k = p.steps;
    let (to_j_c, stay_c) = p.own();
    let h_ret = p.levels(theta, visits, |r| to_j_c[r]).total;
    let h_fin = p.levels(theta, visits, |r| stay_c[r - 1]).total;
    let j_stay = &p.from_j[2];
    // The excursions from j: W(L) for L = 1..K − 2, W_fin(t) for t = 1..K − 1 (index L, t),
    // and the renewal E(K − 1) = 1, E(t) = Σ_L W(L)·E(t + L + 1) + W_fin(K − 1 − t).
    let w = p.excursions(&h_ret);
    let via_fin = p.through_i(&h_fin);
    let extra: Vec<f64> = (0..k)
        .map(|t| if t == 0 { 1.0 } else { j_stay[t] + via_fin[t] })
        .collect();
    let e = renew(&w, &extra);
    // G(m) = Σ_{r ≥ 1, m + r < K} H(r)·E(m + r): the value of i holding the token at step m.
    let g: Vec<f64> = (0..k)
        .map(|m| dot(&h_ret[1..k - m], &e[m + 1..k]))
        .collect();
    p.per_initial_holder(&e, &g, &h_fin, 1.0)
}

/// An upper bound on the probability that some excursion holds more than `visits` visits of
/// `i` (the paths [`mixture`] omits), per initial holder as in [`mixture`]: the same walk at
/// θ = 0 with the dropped paths' own weight carried beside the kept ones (as
/// [`super::mixture::dropped`] does; no `1 − x` cancellation), the envelope only over-charging.
pub(super) fn dropped(p: &Passages, visits: usize) -> Vec<f64> {
    let k = p.steps;
    let (to_j_c, stay_c) = p.own();
    let ret = p.levels(0.0, visits, |r| to_j_c[r]);
    let fin = p.levels(0.0, visits, |r| stay_c[r - 1]);
    let (d_ret, d_fin) = (p.beyond(&ret.last), p.beyond(&fin.last));
    let kept = ret.total;
    let (via_ret, via_fin) = (p.through_i(&d_ret), p.through_i(&d_fin));
    // From j's step at t: kept excursions renew, dropped ones (of any length within the walk,
    // or the last segment) end the question. In s = K − 1 − t the extra term is
    // Σ_{L ≤ s − 1} W_D(L) + W_D,fin(s).
    let w = p.excursions(&kept);
    let mut extra = vec![0.0; k];
    let mut before = 0.0;
    for s in 1..k {
        before += via_ret[s - 1];
        extra[s] = before + via_fin[s];
    }
    let e = renew(&w, &extra);
    // i holding the token at step m: a dropped first excursion, or a kept one and later.
    let mut dropped_within = vec![0.0; k + 1]; // Σ_{r ≤ n} D_ret(r)
    for n in 1..=k {
        dropped_within[n] = dropped_within[n - 1] + d_ret[n];
    }
    let g: Vec<f64> = (0..k)
        .map(|m| dot(&kept[1..k - m], &e[m + 1..k]) + dropped_within[k - 1 - m])
        .collect();
    p.per_initial_holder(&e, &g, &d_fin, 0.0)
        .into_iter()
        .map(|x| x.min(1.0))
        .collect()
}

impl Passages {
    /// `i`'s own `u_j(i)` and `s(i)`, indexed by the step.
    fn own(&self) -> (Vec<f64>, Vec<f64>) {
        let c = self.contributor;
        (
            self.of(&self.to_j, c).to_vec(),
            self.of(&self.stay, c).to_vec(),
        )
    }

    /// `Σ_{m=1}^{L} u_i^m(j)·h(L − m + 1)` for `L = 0..K − 1` (index `L`): an excursion from `j`
    /// whose first visit of `i` is at step `m`.
    fn through_i(&self, h: &[f64]) -> Vec<f64> {
        let mut run = self.first_visit.running();
        (0..self.steps)
            .map(|l| if l == 0 { 0.0 } else { run.next(h, l + 1) })
            .collect()
    }

    /// `W(L) = u_j^{L+1}(j) + Σ_{m ≤ L} u_i^m(j)·H(L − m + 1)` for `L = 0..K − 1` (index `L`,
    /// `W(0) = 0`): the weight of an excursion of `L` holders from `j` back to `j`, `h` the
    /// levels' total.
    fn excursions(&self, h: &[f64]) -> Vec<f64> {
        let j_to_j = &self.from_j[1];
        let via = self.through_i(h);
        (0..self.steps)
            .map(|l| if l == 0 { 0.0 } else { j_to_j[l + 1] + via[l] })
            .collect()
    }

    /// The value of each initial holder given `e(t)` (`j` holds the token at step `t`), `g(m)`
    /// (`i` holds it at step `m`), `fin(r)` (`i` at distance `r` from the final model, no `j`
    /// between) and the weight `stay` of a walk that meets neither: every state, then `j`.
    fn per_initial_holder(&self, e: &[f64], g: &[f64], fin: &[f64], stay: f64) -> Vec<f64> {
        let (k, c) = (self.steps, self.contributor);
        // fin(K − m) for m = 1..K − 1, in the order of m.
        let fin_rev: Vec<f64> = (1..k).map(|m| fin[k - m]).collect();
        (0..self.states)
            .map(|x| {
                if x == c {
                    g[0] + fin[k]
                } else {
                    let (to_i, to_j) = (self.of(&self.to_i, x), self.of(&self.to_j, x));
                    dot(&to_j[1..k], &e[1..k])
                        + dot(&to_i[1..k], &g[1..k])
                        + stay * self.of(&self.stay, x)[k - 1]
                        + dot(&to_i[1..k], &fin_rev)
                }
            })
            .chain([e[0]])
            .collect()
    }
}

/// The renewal over `j`'s steps, in `s = K − 1 − t`: `F(s) = extra(s) + Σ_{m ≥ 2} W(m − 1)·F(s − m)`,
/// returned in `t` (`E(t) = F(K − 1 − t)`); long walks by [`renewal::solve`] (O(K log² K),
/// rounding covered).
fn renew(w: &[f64], extra: &[f64]) -> Vec<f64> {
    let k = extra.len();
    if k > FAST_RENEWAL {
        let a: Vec<f64> = (0..k)
            .map(|m| if m >= 2 { w[m - 1] } else { 0.0 })
            .collect();
        let mut e = renewal::solve(&a, extra);
        e.reverse();
        return e;
    }
    let mut e = vec![0.0; k];
    e[k - 1] = extra[0];
    for t in (0..k.saturating_sub(1)).rev() {
        e[t] = extra[k - 1 - t] + dot(&w[1..k - 1 - t], &e[t + 2..k]);
    }
    e
}

/// The convolutions' dot products, in eight partial sums (a third faster than four here).
pub(super) fn dot(a: &[f64], b: &[f64]) -> f64 {
    dot_in_lanes::<8>(a, b)
}

#[cfg(test)]
mod tests;
