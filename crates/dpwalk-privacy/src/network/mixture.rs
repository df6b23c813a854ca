//! The path-hidden network view of a memoryless walk (`specs/network-dp-2.md` §5): N1 on the
//! complete graph, N3 on any graph of at most [`MAX_PAIR_USERS`] users.
//!
//! # What is computed
//! For a contributor `i` and an observer `j`, the walk's path `π` does not depend on the data, so
//! joint convexity mixes the per-path bound of [`super::excursion`] over the path's law:
//! `ε_ij(α) = ln E_π exp(θ·Ψ_ij(π)) / (α − 1)` with `θ = (α − 1)·ε_loc(α)`. Inside the
//! expectation `Φ` is relaxed to `Φ_UNI = Σ_q (2q−1)/r_(q)` (one factor per visit of `i`,
//! nearest to the observation first), and every visit of `i` is counted as a contribution (the
//! budget cap only removes contributions, and `Φ` never decreases when one is added). The cap
//! `K_max` on `i`'s contributions then bounds every path by `K_max·ε_loc`, so the figure is
//! `min(K_max·ε_loc(α), ε_ij(α))` order by order.
//!
//! # The recursion
//! `h^r(x, q)`: the expected product of the weights of a path of `r` holders that starts at `x`
//! and ends with an observation (`j`'s next step, or the final model), `q` counting the visits of
//! `i` among them. Walking backwards from the observation, a visit of `i` at distance `r` that is
//! the `q`-th nearest gets the factor `e^{θ(2q−1)/r}`. The renewal over `j`'s own steps then
//! assembles excursions (`E(t)`: `j` steps at `t`), and the first segment runs from the public
//! initial holder to `j`'s first step; the figure takes the worst initial holder.
//!
//! # Paths with many visits of `i` in one excursion
//! As the spec says, a path with an excursion holding more than `Q` visits of `i` is dropped
//! from the mixture and charged the local value: every path has `Ψ ≤ K_max` (`Φ ≤ c`, and `i`
//! makes at most `K_max` contributions), so such paths add at most `P_drop·e^{θ·K_max}`. Where
//! this deviates from the spec, on purpose: the spec computes `P_drop = 1 − M|_{θ=0}`, which
//! needs a lower bound on the mass kept, and the certified tail beyond `L₀` is an upper bound.
//! Here `P_drop` is bounded from the dropped paths' own mass instead ([`dropped`]: the
//! recursion at `θ = 0` with the paths past `Q` visits kept in a state of their own, and every
//! excursion longer than `L₀` counted as dropped), so no probability is bounded from below and
//! no `1 − x` cancels.
//!
//! # Long walks
//! On the complete graph every distance up to `K` is computed exactly (two classes: O(K·Q)), and
//! the renewal, a convolution, is solved in O(K log² K) (the `renewal` module). On a general graph
//! the distances beyond `L₀ = min(K, 64·n)` take the certified tail below; where `L₀ = K` (and
//! the passages fit in memory), [`PairMixtures`] computes the same mixture and drop probability
//! by first passages instead ([`super::passage`]), which costs O(Q·K·64 + K²) per order instead
//! of O(K·|E|·Q). [`mixture`] and [`dropped`] stay the recursion: the reference the passages
//! are tested against.
//!
//! # Truncation with a certified tail
//! Beyond distance `L₀` the weights are frozen at `L₀ + 1` (they only decrease with `r`, so this
//! over-charges); the frozen map `A` is linear and nonnegative. With `v > 0` from power
//! iteration, `ρ = max (Av)/v` (Collatz–Wielandt: `A v ≤ ρ v`) and `c = max h^{L₀}/v`, so
//! `h^{L₀+k} ≤ c·ρ^k·v` entrywise, and the renewal's tail sum obeys
//! `S(t) = ρ·(E(t + L₀ + 2) + S(t + 1))`.
//!
//! # Overflow
//! Orders with `θ·K_max > 600` take the local value `K_max·ε_loc` without computing (the mixture
//! could only be smaller where it is below `e^{600}`); a value that overflows anyway (an infinite
//! or undefined `E`) also takes the local value. Both are sound: the local value holds on every
//! path.

use super::passage::{self, EXACT_RETURNS, Passages};
use super::{Transitions, renewal};
use crate::Noise;
use crate::error::PrivacyError;
use crate::local::{eps_loc, mu2_loc};
use crate::rdp::{Conversion, DpBound, Orders, RdpCurve};
use rayon::prelude::*;
use std::sync::Mutex;

/// Largest non-complete graph whose pairs are computed (N3): each user's neighbours pair by
/// pair, each pair a recursion over the graph's edges (and the far pairs too where their cost
/// allows, [`crate::walk::path_hidden`]).
pub const MAX_PAIR_USERS: usize = 200;

/// Visits of `i` in one excursion that are charged by their own factor; a path with more in one
/// excursion is dropped and charged the local value (see the module docs).
pub const DEFAULT_VISITS: usize = 40;

/// Orders whose `θ·K_max` exceeds this take the local value (see the module docs, "Overflow").
pub(super) const LOCAL_ABOVE: f64 = 600.0;

/// Power iterations for the tail's eigenvector estimate (any `v > 0` gives a valid bound; a
/// better one gives a smaller `ρ`).
const POWER_ITERATIONS: usize = 50;

/// The knobs of the recursion; the defaults are the spec's.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MixtureOptions {
    /// Visits of `i` per excursion charged exactly (`Q`); a path with more is dropped and charged
    /// the local value.
    pub visits: usize,
    /// Distances computed exactly (`L₀`); `None`: `min(K, 64·n)`.
    pub horizon: Option<usize>,
}

impl Default for MixtureOptions {
    fn default() -> Self {
        Self {
            visits: DEFAULT_VISITS,
            horizon: None,
        }
    }
}

/// The walk seen by one pair `(i, j)`, lumped into states that are not `j`: the complete graph
/// needs two (`i`, and any other user), a general graph one per user other than `j`.
#[derive(Debug, Clone)]
pub struct PairChain {
    /// `moves[y]`: `(x, P(y → x))` over states `x` (moves to `j` excluded).
    pub(super) moves: Vec<Vec<(usize, f64)>>,
    /// `P(y → j)`.
    pub(super) ret: Vec<f64>,
    /// `P(j → y)` (summed over a lumped class).
    pub(super) entry: Vec<f64>,
    /// The state of `i`.
    pub(super) contributor: usize,
    /// Users in the walk (for the default horizon).
    users: usize,
    /// The complete graph's two classes (every distance is cheap to compute exactly).
    lumped: bool,
}

impl PairChain {
    /// The complete graph on `n ≥ 3` users: states `0 = i`, `1 =` any other user but `j`.
    pub fn complete(n: usize) -> Result<Self, PrivacyError> {
        if n < 3 {
            // n = 2 has no "other" class; the general form handles it.
            let rows: Vec<Vec<(usize, f64)>> = (0..n)
                .map(|x| (0..n).filter(|&y| y != x).map(|y| (y, 1.0)).collect())
                .collect();
            return Self::pair(&rows, 0, 1);
        }
        let p = 1.0 / (n - 1) as f64;
        Ok(Self {
            moves: vec![
                vec![(1, (n - 2) as f64 * p)],
                vec![(0, p), (1, (n - 3) as f64 * p)],
            ],
            ret: vec![p, p],
            entry: vec![p, (n - 2) as f64 * p],
            contributor: 0,
            users: n,
            lumped: true,
        })
    }

    /// The pair `(i, j)` of a walk with transition rows `rows`.
    pub fn pair<T: Transitions + ?Sized>(
        rows: &T,
        i: usize,
        j: usize,
    ) -> Result<Self, PrivacyError> {
        let n = rows.users();
        if i >= n || j >= n || i == j {
            return Err(PrivacyError::Pair { i, j, users: n });
        }
        let state = |x: usize| if x < j { x } else { x - 1 };
        let mut moves = vec![Vec::new(); n - 1];
        let mut ret = vec![0.0; n - 1];
        for y in (0..n).filter(|&y| y != j) {
            for &(x, p) in rows.row(y) {
                if x == j {
                    ret[state(y)] += p;
                } else {
                    moves[state(y)].push((state(x), p));
                }
            }
        }
        let mut entry = vec![0.0; n - 1];
        for &(x, p) in rows.row(j) {
            if x != j {
                entry[state(x)] += p;
            }
        }
        Ok(Self {
            moves,
            ret,
            entry,
            contributor: state(i),
            users: n,
            lumped: false,
        })
    }

    /// A chain on the states of `moves` (moves that leave them excluded) whose observation after
    /// distance 1 has weight `ret[y]` from state `y`: what the coalition's excursions
    /// ([`super::coalition`]) run the recursion on, one `ret` per way out.
    pub(super) fn inside(moves: Vec<Vec<(usize, f64)>>, contributor: usize, ret: Vec<f64>) -> Self {
        let states = moves.len();
        Self {
            moves,
            ret,
            entry: vec![0.0; states],
            contributor,
            users: states,
            lumped: false,
        }
    }

    pub(super) fn states(&self) -> usize {
        self.ret.len()
    }

    /// The state index of a user of the complete graph's lumping: `i`, another user, or `None`
    /// for `j` (see [`Initial`]).
    fn initial_state(&self, initial: Initial) -> Option<usize> {
        match initial {
            Initial::Contributor => Some(self.contributor),
            Initial::Other => (0..self.states()).find(|&s| s != self.contributor),
            Initial::Observer => None,
        }
    }
}

/// Who holds the token at step 0 (public: it comes from the run seed), in the classes of the
/// complete graph.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Initial {
    /// The contributor `i`.
    Contributor,
    /// Another user, neither `i` nor `j`.
    Other,
    /// The observer `j`.
    Observer,
}

/// The weights of one order on the `(state, q)` grid, `q ∈ 0..=Q+1`; `Q + 1` holds the paths with
/// more than `Q` visits of `i` in one excursion: dropped (factor 0) for the mixture, kept with
/// factor 1 for their probability.
pub(super) struct Weights {
    pub(super) theta: f64,
    pub(super) visits: usize,
    pub(super) keep_dropped: bool,
}

impl Weights {
    /// The factor of a visit of `i` that becomes the `q`-th nearest at distance `r`.
    fn factor(&self, q: usize, r: usize) -> f64 {
        if q > self.visits {
            if self.keep_dropped { 1.0 } else { 0.0 }
        } else {
            (self.theta * (2 * q - 1) as f64 / r as f64).exp()
        }
    }
}

impl Weights {
    /// The factors of distance `dist` for every count `q ∈ 0..=Q+1` (`e^{θ(2q−1)/dist}` by
    /// repeated squares of one exponential: one `exp` per distance, not one per count).
    fn at(&self, dist: usize, out: &mut [f64]) {
        let b = (self.theta / dist as f64).exp();
        let (b2, mut f) = (b * b, b);
        out[0] = 0.0;
        for slot in out.iter_mut().take(self.visits + 1).skip(1) {
            *slot = f;
            f *= b2;
        }
        out[self.visits + 1] = self.factor(self.visits + 1, dist);
    }
}

/// One backward step `h^r → h^{r+1}` with the `factors` of its distance ([`Weights::at`]).
fn advance(chain: &PairChain, factors: &[f64], h: &[f64], out: &mut [f64]) {
    let qn = factors.len();
    out.iter_mut().for_each(|o| *o = 0.0);
    for (y, moves) in chain.moves.iter().enumerate() {
        let row = &mut out[y * qn..(y + 1) * qn];
        for &(x, p) in moves {
            let from = &h[x * qn..(x + 1) * qn];
            row.iter_mut().zip(from).for_each(|(o, &f)| *o += p * f);
        }
        if y == chain.contributor {
            // The visit of i moves every count up by one (a dropped path stays dropped).
            let over = row[qn - 1] + row[qn - 2];
            for q in (1..qn - 1).rev() {
                row[q] = row[q - 1] * factors[q];
            }
            row[0] = 0.0;
            row[qn - 1] = over * factors[qn - 1];
        }
    }
}

/// The base `h¹`: the holder at distance 1 moves to `j` (`ret`) or makes the last step (`fin`).
fn base(chain: &PairChain, w: &Weights, to_observer: bool) -> Vec<f64> {
    let qn = w.visits + 2;
    let mut h = vec![0.0; chain.states() * qn];
    for y in 0..chain.states() {
        let p = if to_observer { chain.ret[y] } else { 1.0 };
        if y == chain.contributor {
            h[y * qn + 1] = p * w.factor(1, 1);
        } else {
            h[y * qn] = p;
        }
    }
    h
}

/// Which counts a series sums: the paths kept (`q ≤ Q`) or the dropped ones (`q = Q + 1`).
#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) enum Part {
    Kept,
    Dropped,
}

/// `Σ_q h(y, q)` over the counts of `part`, for every state.
fn sums(h: &[f64], qn: usize, part: Part) -> Vec<f64> {
    h.chunks(qn)
        .map(|c| match part {
            Part::Kept => c[..qn - 1].iter().sum(),
            Part::Dropped => c[qn - 1],
        })
        .collect()
}

/// The excursion weights of one part, exact up to `l0` (index `L − 1`), and beyond it bounded by
/// the tail.
pub(super) struct Series {
    /// `W(L) = Σ_y P(j → y) Σ_q h^L_ret(y, q)`.
    ret: Vec<f64>,
    /// `W_fin(L)`, the same for a last segment that ends with the final model.
    fin: Vec<f64>,
    /// `Σ_q h^L_ret(x₀, q)` per state, for the first segment: row `L − 1` of `states` values.
    pub(super) first: Vec<f64>,
    /// States per row of `first`.
    states: usize,
    /// `Σ_q h^K_fin(x₀, q)` per state when `K ≤ l0`.
    fin_at_k: Option<Vec<f64>>,
}

/// The recursion of one order (or of the drop probability) for a walk of `k` steps.
pub(super) struct Recursion {
    l0: usize,
    pub(super) parts: Vec<Series>,
    pub(super) tail: Option<Tail>,
}

impl Recursion {
    pub(super) fn run(chain: &PairChain, w: &Weights, k: usize, l0: usize, parts: &[Part]) -> Self {
        let qn = w.visits + 2;
        let mut ret = base(chain, w, true);
        let mut fin = base(chain, w, false);
        let mut next = vec![0.0; ret.len()];
        let mut factors = vec![0.0; qn];
        let mut series: Vec<Series> = parts
            .iter()
            .map(|_| Series {
                ret: Vec::with_capacity(l0),
                fin: Vec::with_capacity(l0),
                first: Vec::with_capacity(l0 * chain.states()),
                states: chain.states(),
                fin_at_k: None,
            })
            .collect();
        let entry_sum = |s: &[f64]| -> f64 { chain.entry.iter().zip(s).map(|(p, v)| p * v).sum() };
        for r in 1..=l0 {
            if r > 1 {
                w.at(r, &mut factors);
                advance(chain, &factors, &ret, &mut next);
                std::mem::swap(&mut ret, &mut next);
                advance(chain, &factors, &fin, &mut next);
                std::mem::swap(&mut fin, &mut next);
            }
            for (s, &part) in series.iter_mut().zip(parts) {
                let rs = sums(&ret, qn, part);
                let fs = sums(&fin, qn, part);
                s.ret.push(entry_sum(&rs));
                s.fin.push(entry_sum(&fs));
                s.first.extend_from_slice(&rs);
                if r == k {
                    s.fin_at_k = Some(fs);
                }
            }
        }
        let tail = (k > l0).then(|| Tail::new(chain, w, l0, &ret, &fin));
        Self {
            l0,
            parts: series,
            tail,
        }
    }

    /// `W_fin(T)` of part `p` for any `T ≥ 1`.
    fn fin(&self, p: usize, t: usize) -> f64 {
        match &self.tail {
            Some(tl) if t > self.l0 => tl.c_fin * tl.rho.powi((t - self.l0) as i32) * tl.entry_v,
            _ => self.parts[p].fin[t - 1],
        }
    }

    /// The renewal over `j`'s steps: `E(t) = Σ_L W(L)·E(t + L + 1) + extra(t)`, `E(K − 1) = last`.
    /// Without a tail, long walks go through [`renewal::solve`] (O(K log² K)).
    fn renew(&self, k: usize, last: f64, extra: impl Fn(usize) -> f64) -> Vec<f64> {
        let l0 = self.l0;
        let w = &self.parts[0].ret;
        if self.tail.is_none() && k > FAST_RENEWAL {
            // In s = K − 1 − t: F(s) = g(s) + Σ_{m ≥ 2} W(m − 1)·F(s − m), F(0) = last.
            let a: Vec<f64> = (0..k)
                .map(|m| if m >= 2 && m - 1 <= l0 { w[m - 2] } else { 0.0 })
                .collect();
            let g: Vec<f64> = (0..k)
                .map(|s| if s == 0 { last } else { extra(k - 1 - s) })
                .collect();
            let mut e = renewal::solve(&a, &g);
            e.reverse();
            return e;
        }
        let mut e = vec![0.0; k];
        e[k - 1] = last;
        let mut tail_sum = 0.0; // S(t + 1) while computing E(t)
        for t in (0..k - 1).rev() {
            let mut v = extra(t);
            for l in 1..=l0.min(k - 2 - t) {
                v += w[l - 1] * e[t + l + 1];
            }
            if let Some(tl) = &self.tail {
                let ahead = if t + l0 + 2 < k { e[t + l0 + 2] } else { 0.0 };
                tail_sum = tl.rho * (ahead + tail_sum);
                v += tl.c_ret * tl.entry_v * tail_sum;
            }
            e[t] = v;
        }
        e
    }

    /// The first segment from state `x` into the renewal: `Σ_{L<K} Σ_q h^L_ret(x, q)·E(L)` for
    /// part `p`, `far` = `Σ_{L > l0} ρ^{L−l0}·E(L)`.
    fn first(&self, p: usize, x: usize, k: usize, e: &[f64], far: f64) -> f64 {
        let s = &self.parts[p];
        let m: f64 = (1..k.min(self.l0 + 1))
            .map(|l| s.first[(l - 1) * s.states + x] * e[l])
            .sum();
        match &self.tail {
            Some(t) => m + t.c_ret * t.v_sums[x] * far,
            None => m,
        }
    }

    /// A first segment from state `x` that ends with the final model: `Σ_q h^K_fin(x, q)` of
    /// part `p`.
    fn first_fin(&self, p: usize, x: usize, k: usize) -> f64 {
        match (&self.parts[p].fin_at_k, &self.tail) {
            (Some(f), _) => f[x],
            (None, Some(t)) => t.c_fin * t.rho.powi((k - self.l0) as i32) * t.v_sums[x],
            (None, None) => 0.0,
        }
    }

    /// `Σ_{L=l0+1}^{last} ρ^{L−l0}` (0 when `last ≤ l0` or without a tail).
    fn geometric(&self, last: usize) -> f64 {
        match &self.tail {
            Some(t) if last > self.l0 => {
                let m = (last - self.l0) as i32;
                if (t.rho - 1.0).abs() < 1e-12 {
                    f64::from(m)
                } else {
                    t.rho * (1.0 - t.rho.powi(m)) / (1.0 - t.rho)
                }
            }
            _ => 0.0,
        }
    }

    /// `Σ_{L > l0, L < K} ρ^{L−l0}·e(L)`.
    fn far(&self, k: usize, e: &[f64]) -> f64 {
        match &self.tail {
            Some(t) => (self.l0 + 1..k)
                .map(|l| t.rho.powi((l - self.l0) as i32) * e[l])
                .sum(),
            None => 0.0,
        }
    }
}

/// `L₀` for a walk of `k` steps: by default every distance on the complete graph's two classes
/// (a step of the recursion costs O(Q) there), `min(K, 64·n)` on a general graph.
pub(super) fn horizon(chain: &PairChain, k: usize, opts: &MixtureOptions) -> usize {
    let default = if chain.lumped { k } else { 64 * chain.users };
    opts.horizon.unwrap_or(default).clamp(1, k.max(1))
}

/// Walks longer than this solve the renewal by divide and conquer (when there is no tail).
pub(super) const FAST_RENEWAL: usize = 1024;

/// `E exp(θ·Ψ_UNI)` over the paths whose excursions hold at most `Q` visits of `i` each (the
/// others omitted), for every initial holder: every state of `chain`, then `j` last.
pub fn mixture(chain: &PairChain, steps: usize, theta: f64, opts: &MixtureOptions) -> Vec<f64> {
    let k = steps;
    let s = chain.states();
    if k == 0 {
        return vec![1.0; s + 1];
    }
    let w = Weights {
        theta,
        visits: opts.visits,
        keep_dropped: false,
    };
    let rec = Recursion::run(chain, &w, k, horizon(chain, k, opts), &[Part::Kept]);
    let e = rec.renew(k, 1.0, |t| rec.fin(0, k - 1 - t));
    let far = rec.far(k, &e);
    (0..s)
        .map(|x| rec.first(0, x, k, &e, far) + rec.first_fin(0, x, k))
        .chain([e[0]])
        .collect()
}

/// An upper bound on the probability that some excursion holds more than `Q` visits of `i`
/// (the paths [`mixture`] omits), for every initial holder as in [`mixture`]. Computed from the
/// dropped paths' own mass (no `1 − x` cancellation).
pub fn dropped(chain: &PairChain, steps: usize, opts: &MixtureOptions) -> Vec<f64> {
    let k = steps;
    let s = chain.states();
    if k == 0 {
        return vec![0.0; s + 1];
    }
    let w = Weights {
        theta: 0.0,
        visits: opts.visits,
        keep_dropped: true,
    };
    let l0 = horizon(chain, k, opts);
    let rec = Recursion::run(chain, &w, k, l0, &[Part::Kept, Part::Dropped]);
    // Beyond l0 the tail bounds kept and dropped mass together: a long excursion is charged as
    // if it dropped (its D is at most 1).
    let long = |last: usize| -> f64 {
        rec.tail
            .as_ref()
            .map_or(0.0, |t| t.c_ret * t.entry_v * rec.geometric(last))
    };
    let dropped_ret: Vec<f64> = rec.parts[1]
        .ret
        .iter()
        .scan(0.0, |acc, &x| {
            *acc += x;
            Some(*acc)
        })
        .collect();
    let d = rec.renew(k, 0.0, |t| {
        let last = k - 2 - t;
        let within = last.min(l0);
        let short = if within > 0 {
            dropped_ret[within - 1]
        } else {
            0.0
        };
        short + long(last) + rec.fin(1, k - 1 - t)
    });
    let far = rec.far(k, &d);
    let p = &rec.parts[1];
    (0..s)
        .map(|x| {
            let short: f64 = (1..k.min(l0 + 1))
                .map(|l| p.first[(l - 1) * p.states + x])
                .sum();
            let long = rec
                .tail
                .as_ref()
                .map_or(0.0, |t| t.c_ret * t.v_sums[x] * rec.geometric(k - 1));
            let v = rec.first(0, x, k, &d, far) + short + long + rec.first_fin(1, x, k);
            v.min(1.0)
        })
        .chain([d[0].min(1.0)])
        .collect()
}

/// The complete graph's `ln E exp(θ·Ψ_UNI)` per initial holder, paths with more than `Q` visits
/// of `i` in one excursion omitted (the spec's pinned table).
pub fn complete_log_mgf(
    n: usize,
    steps: usize,
    theta: f64,
    initial: Initial,
    opts: &MixtureOptions,
) -> Result<f64, PrivacyError> {
    let chain = PairChain::complete(n)?;
    let all = mixture(&chain, steps, theta, opts);
    Ok(match chain.initial_state(initial) {
        Some(s) => all[s],
        None => all[chain.states()],
    }
    .ln())
}

/// What an observer's mixtures are computed from at any order: its mixture per `θ` (one value
/// per initial holder) and its dropped paths' probability. A pair ([`Observer::pair`]) or a
/// coalition ([`super::coalition::Coalition::observer`]). Its figures are refined between the
/// orders of the grid ([`Observer::bound`], [`crate::refine`]), which computes a few more
/// orders alone.
pub struct Observer<'a> {
    dropped: Vec<f64>,
    mixture: Box<dyn Fn(f64) -> Vec<f64> + Sync + 'a>,
    /// The orders refinement computed, with their noise: the budget policy's search over caps
    /// probes the same orders again and again.
    probes: Mutex<Vec<(f64, Noise, PairMixtures)>>,
}

impl std::fmt::Debug for Observer<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Observer")
            .field("dropped", &self.dropped)
            .finish_non_exhaustive()
    }
}

impl<'a> Observer<'a> {
    /// The observer `j` of `chain` for a walk of `steps` steps: by first passages where they
    /// apply (module docs, "Long walks"), else by the recursion.
    pub fn pair(chain: &'a PairChain, steps: usize, opts: &MixtureOptions) -> Self {
        if by_passages(chain, steps, opts) {
            let passages = Passages::new(chain, steps);
            let drop = passage::dropped(&passages, opts.visits);
            return Self::from_passages(passages, drop, opts);
        }
        Self::pair_with_dropped(chain, steps, opts, dropped(chain, steps, opts))
    }

    /// [`Observer::pair`] with the dropped paths' probability given ([`dropped`]: it depends
    /// neither on σ nor on the order, so a search over σ computes it once).
    pub fn pair_with_dropped(
        chain: &'a PairChain,
        steps: usize,
        opts: &MixtureOptions,
        dropped: Vec<f64>,
    ) -> Self {
        if by_passages(chain, steps, opts) {
            return Self::from_passages(Passages::new(chain, steps), dropped, opts);
        }
        let opts = *opts;
        Self::new(dropped, move |theta| mixture(chain, steps, theta, &opts))
    }

    fn from_passages(passages: Passages, dropped: Vec<f64>, opts: &MixtureOptions) -> Self {
        let visits = opts.visits;
        Self::new(dropped, move |theta| {
            passage::mixture(&passages, theta, visits)
        })
    }

    /// An observer given its mixture per `θ` and its dropped paths' probability.
    pub(super) fn new(dropped: Vec<f64>, mixture: impl Fn(f64) -> Vec<f64> + Sync + 'a) -> Self {
        Self {
            dropped,
            mixture: Box::new(mixture),
            probes: Mutex::new(Vec::new()),
        }
    }

    /// The mixtures at every order of `orders` (in parallel: the orders are independent).
    pub fn mixtures(&self, orders: &Orders, noise: Noise) -> PairMixtures {
        let per_step: Vec<f64> = orders
            .as_slice()
            .iter()
            .map(|&a| eps_loc(a, noise.sigma(), noise.clip()))
            .collect();
        let kept = orders
            .as_slice()
            .par_iter()
            .zip(&per_step)
            .map(|(&alpha, &e)| {
                let theta = (alpha - 1.0) * e;
                (theta <= LOCAL_ABOVE).then(|| (self.mixture)(theta))
            })
            .collect();
        PairMixtures {
            orders: orders.clone(),
            noise,
            per_step,
            mu2_step: mu2_loc(noise.sigma(), noise.clip()),
            kept,
            dropped: self.dropped.clone(),
        }
    }

    /// The guarantee of a user who contributes at most `cap` times, from `mixtures` (this
    /// observer's, on the grid) with its order refined between the grid's orders: each order
    /// probed costs one mixture ([`crate::refine::MAX_PROBES`] at most), computed once per
    /// observer and noise.
    pub fn bound(
        &self,
        mixtures: &PairMixtures,
        cap: u64,
        delta: f64,
        conversion: Conversion,
    ) -> Result<DpBound, PrivacyError> {
        let noise = mixtures.noise;
        mixtures
            .curve(cap)
            .to_dp_refined(delta, conversion, |alpha| {
                // A poisoned lock only means another thread panicked: the probes are still valid.
                let mut probes = self.probes.lock().unwrap_or_else(|e| e.into_inner());
                let known = probes
                    .iter()
                    .position(|(a, n, _)| *a == alpha && *n == noise);
                let x = match known {
                    Some(x) => x,
                    None => {
                        let one = self.mixtures(&Orders::new(&[alpha])?, noise);
                        probes.push((alpha, noise, one));
                        probes.len() - 1
                    }
                };
                Ok(probes[x].2.curve(cap).values()[0])
            })
    }
}

/// The part of an observer's curve that does not depend on the cap: per order, the mixture of
/// every initial holder, and the dropped paths' probability ([`Observer::mixtures`]).
/// [`PairMixtures::curve`] then gives the curve of any cap at no further cost (what the budget
/// policy's search for the largest cap within a network budget needs).
#[derive(Debug, Clone)]
pub struct PairMixtures {
    orders: Orders,
    /// σ and C the mixtures were computed at.
    noise: Noise,
    /// `ε_loc(α)` per order.
    per_step: Vec<f64>,
    /// `μ²` of one contribution's local view (the Gaussian bound of the curve).
    mu2_step: f64,
    /// `E exp(θ·Ψ_UNI)` per order and initial holder; `None` above [`LOCAL_ABOVE`] for one
    /// contribution (every cap takes the local value there).
    kept: Vec<Option<Vec<f64>>>,
    /// The dropped paths' probability per initial holder.
    dropped: Vec<f64>,
}

impl PairMixtures {
    /// The mixtures of the pair of `chain` for a walk of `steps` steps at every order of
    /// `orders` ([`Observer::pair`]).
    pub fn new(
        chain: &PairChain,
        steps: usize,
        orders: &Orders,
        noise: Noise,
        opts: &MixtureOptions,
    ) -> Self {
        Observer::pair(chain, steps, opts).mixtures(orders, noise)
    }

    /// The curve for a user who contributes at most `cap` times: at every order
    /// `min(K_max·ε_loc(α), ln max_{x₀}(M(x₀) + P_drop(x₀)·e^{θ·K_max})/(α−1))`.
    pub fn curve(&self, cap: u64) -> RdpCurve {
        let values = self
            .orders
            .as_slice()
            .iter()
            .zip(&self.per_step)
            .zip(&self.kept)
            .map(|((&alpha, &e), kept)| {
                let local = cap as f64 * e;
                let capped = (alpha - 1.0) * local;
                match kept {
                    _ if cap == 0 => 0.0,
                    Some(kept) if capped <= LOCAL_ABOVE => {
                        let worst = kept
                            .iter()
                            .zip(&self.dropped)
                            .map(|(&m, &d)| m + d * capped.exp())
                            .fold(
                                0.0,
                                |a: f64, b| if b.is_nan() { f64::INFINITY } else { a.max(b) },
                            );
                        let network = worst.ln() / (alpha - 1.0);
                        if network.is_finite() {
                            network.clamp(0.0, local)
                        } else {
                            local
                        }
                    }
                    _ => local,
                }
            });
        // The observer sees a function of the tokens, whose local view is Gaussian.
        RdpCurve::from_computed(self.orders.clone(), values)
            .with_gaussian_bound(cap as f64 * self.mu2_step)
    }
}

/// The path-hidden network curve of one pair (N1, N3): at every order
/// `min(K_max·ε_loc(α), ln max_{x₀}(M(x₀) + P_drop(x₀)·e^{θ·K_max})/(α−1))`, for a walk of `steps`
/// steps where `i` contributes at most `cap` times, whatever the initial holder.
pub fn pair_curve(
    chain: &PairChain,
    steps: usize,
    cap: u64,
    orders: &Orders,
    noise: Noise,
    opts: &MixtureOptions,
) -> RdpCurve {
    PairMixtures::new(chain, steps, orders, noise, opts).curve(cap)
}

/// The arithmetic of one order of [`pair_curve`] in multiply-adds, roughly: the recursion over
/// the distances computed exactly and the renewal over the walk's steps. What
/// [`MAX_NETWORK_WORK`] limits (times the orders and the pairs).
pub(crate) fn work(chain: &PairChain, steps: usize, opts: &MixtureOptions) -> f64 {
    let l0 = horizon(chain, steps, opts);
    let k = steps as f64;
    // Divide and conquer: about log₂K levels of FFTs of total length 4K, ~5·N·log₂N each.
    let fft = 20.0 * k * k.log2() * k.log2();
    if by_passages(chain, steps, opts) {
        // Two sets of levels and the excursions from j, each a running convolution with an
        // exact window; G and the renewal term by term (FFT above `passage::FAST_RENEWAL`);
        // every initial holder.
        let window = EXACT_RETURNS.min(steps) as f64 + 2.0;
        let levels = 2.0 * (opts.visits as f64 + 1.0) * k * window;
        let renewal = if steps > passage::FAST_RENEWAL {
            fft
        } else {
            k * k / 2.0
        };
        return levels + k * k / 2.0 + renewal + 3.0 * (chain.states() as f64) * k;
    }
    let renewal = if l0 >= steps && steps > FAST_RENEWAL {
        fft
    } else {
        k * l0 as f64
    };
    let moves: usize = chain.moves.iter().map(Vec::len).sum();
    let recursion = 2.0 * l0 as f64 * (moves * (opts.visits + 2)) as f64;
    recursion + 2.0 * renewal
}

/// The most numbers the first passages of one pair may hold (3·K·n; 64 MiB).
const PASSAGE_NUMBERS: usize = 1 << 23;

/// Whether a pair's mixture is computed by first passages ([`super::passage`]) rather than by the
/// recursion: on a general graph whose distances are all computed (no tail), when the passages
/// fit in [`PASSAGE_NUMBERS`].
fn by_passages(chain: &PairChain, steps: usize, opts: &MixtureOptions) -> bool {
    !chain.lumped
        && steps > 0
        && horizon(chain, steps, opts) >= steps
        && 3 * (steps + 1) * chain.states() <= PASSAGE_NUMBERS
}

/// Refuses, as "not offered: cost" ([`PrivacyError::NetworkCost`]), a path-hidden figure of
/// `pairs` pairs like `chain` on `orders` orders of a walk of `steps` steps whose arithmetic would
/// pass [`MAX_NETWORK_WORK`]: the one check of calibration, the budget policy and every printed
/// figure.
pub fn check_cost(
    chain: &PairChain,
    steps: usize,
    pairs: f64,
    orders: usize,
) -> Result<(), PrivacyError> {
    let estimate = work(chain, steps, &MixtureOptions::default()) * pairs * orders as f64;
    check_work(estimate, steps, chain.users)
}

/// Refuses, as [`check_cost`] does, an estimate of `work` multiply-adds for a walk of `steps`
/// steps among `users` users above [`MAX_NETWORK_WORK`].
pub(crate) fn check_work(work: f64, steps: usize, users: usize) -> Result<(), PrivacyError> {
    if work > MAX_NETWORK_WORK {
        return Err(PrivacyError::NetworkCost {
            work,
            steps: steps as u64,
            users,
            limit: MAX_NETWORK_WORK,
        });
    }
    Ok(())
}

/// How many orders one figure on `orders` computes: all of them, and up to
/// [`crate::refine::MAX_PROBES`] more where its order is refined ([`Observer::bound`]). What
/// the cost checks count.
pub fn computed_orders(orders: &Orders) -> usize {
    orders.len() + crate::refine::MAX_PROBES
}

/// The orders the network view is computed on: every sixth order of `orders` and its last (any
/// subset gives a valid bound, and each order costs a whole mixture), the best of them then
/// refined between its neighbours ([`Observer::bound`]). Calibration, the budget policy and every
/// printed network figure use these, so that a calibrated σ reads back as its target.
pub fn network_orders(orders: &Orders) -> Result<Orders, PrivacyError> {
    let all = orders.as_slice();
    let picked: Vec<f64> = all
        .iter()
        .enumerate()
        .filter(|(x, _)| x % 6 == 0 || x + 1 == all.len())
        .map(|(_, &a)| a)
        .collect();
    Orders::new(&picked)
}

/// The most arithmetic (multiply-adds, all orders and pairs together) a path-hidden view may take
/// before it is refused as "not offered: cost": about four minutes on one core here (N3 of a
/// 200-user 4-regular graph at K = 2,000, estimated at about 5e11, took 100–105 s of CPU time).
pub const MAX_NETWORK_WORK: f64 = 1e12;

/// The certified geometric tail beyond `l0`, on the counts summed: `u^r(x) = Σ_q h^r(x, q)`.
/// Beyond `l0` every factor of a visit of `i` is at most `β = e^{θ(2Q−1)/(l0+1)}` (factors only
/// decrease with the distance, and a dropped path's factor is 0 or 1), so `u^{r+1} ≤ B u^r` with
/// `B(y, x) = (y = i ? β : 1)·P(y → x)`: a nonnegative `S × S` map with no count structure. With
/// `v > 0` from power iteration on `B`, `ρ = max (Bv)/v` (Collatz–Wielandt: `B v ≤ ρ v`) and
/// `c = max u^{l0}/v`, `u^{l0+m} ≤ c·ρ^m·v`.
pub(super) struct Tail {
    pub(super) rho: f64,
    pub(super) c_ret: f64,
    c_fin: f64,
    /// `Σ_y P(j → y)·v(y)`.
    entry_v: f64,
    /// `v` per state.
    pub(super) v_sums: Vec<f64>,
}

impl Tail {
    fn new(chain: &PairChain, w: &Weights, l0: usize, ret: &[f64], fin: &[f64]) -> Self {
        let qn = w.visits + 2;
        let beta = w
            .factor(w.visits, l0 + 1)
            .max(w.factor(w.visits + 1, l0 + 1));
        let apply = |v: &[f64], out: &mut [f64]| {
            for (y, moves) in chain.moves.iter().enumerate() {
                let s: f64 = moves.iter().map(|&(x, p)| p * v[x]).sum();
                out[y] = if y == chain.contributor { beta * s } else { s };
            }
        };
        let u_ret = sums_all(ret, qn);
        let u_fin = sums_all(fin, qn);
        let max_of = |h: &[f64]| h.iter().cloned().fold(0.0, f64::max);
        // Any v > 0 gives a valid bound; the floor keeps every entry positive.
        let floor = 1e-12;
        let mut v = vec![1.0; chain.states()];
        let mut bv = vec![0.0; v.len()];
        for _ in 0..POWER_ITERATIONS {
            apply(&v, &mut bv);
            let top = max_of(&bv);
            if !(top > 0.0 && top.is_finite()) {
                break;
            }
            v.iter_mut()
                .zip(&bv)
                .for_each(|(x, &a)| *x = a / top + floor);
        }
        apply(&v, &mut bv);
        let rho = v.iter().zip(&bv).map(|(&x, &a)| a / x).fold(0.0, f64::max);
        let ratio = |u: &[f64]| u.iter().zip(&v).map(|(&a, &x)| a / x).fold(0.0, f64::max);
        let entry_v = chain.entry.iter().zip(&v).map(|(p, x)| p * x).sum();
        Self {
            rho,
            c_ret: ratio(&u_ret),
            c_fin: ratio(&u_fin),
            entry_v,
            v_sums: v,
        }
    }
}

/// `Σ_q h(y, q)` over every count, dropped included (the tail bounds them together).
fn sums_all(h: &[f64], qn: usize) -> Vec<f64> {
    h.chunks(qn).map(|c| c.iter().sum()).collect()
}
