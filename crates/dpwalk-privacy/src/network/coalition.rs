//! One bound for every observer beyond a contributor's neighbours: N3 without `n²` pairs.
//!
//! # Why a coalition
//! N3 ([`super::mixture`]) computes each pair `(i, j)` on a chain of `n − 1` states, and the
//! worst observer of `i` is nearly always a neighbour: it sees a contribution one hop later
//! with the probability of that hop. For the other `n − 1 − deg(i)` observers one bound that
//! holds for all of them at once suffices, as long as it stays below the neighbours' figure.
//!
//! The coalition `S = V ∖ N[i]` of every user outside `i`'s closed neighbourhood (`i`, and every
//! user it moves to or that moves to it) sees everything each of its members sees, and more, so
//! any bound on what `S` learns about `i` bounds each member's (post-processing). `S` observes
//! the token whenever one of its members holds it, and the final model; between two observations
//! the token stays inside `N[i]`. The analysis of one observer (`specs/network-dp-2.md` §3–§5)
//! never uses that the observer is one user, only which steps are observations: `S` knows the
//! token it sends on (its members know their own noise), the holders between two observations
//! are noisy non-expansive steps, and `i`'s contributions among them are charged together by
//! `Φ ≤ Φ_UNI` at their distances to the next observation. The per-path charge is therefore
//! [`super::excursion::psi_with`] with the observations at `S`'s visits, and joint convexity mixes
//! it over the path's law, which does not depend on the data.
//!
//! # The recursion
//! The excursions live on `N[i]` (`deg(i) + 1` states), so their weights are the pair
//! recursion's ([`super::mixture`], counts of `i`'s visits nearest to the observation first) on
//! that small chain, once per way out `y ∈ N[i]` (the excursion's last holder) and once for an
//! excursion that ends with the final model. Between excursions the walk is in `S`, which
//! observes every step, so the renewal keeps the holder: `V(t, s)` (member `s` of `S` holds the
//! token at step `t`) and `U(t, x)` (the token enters `N[i]` at `x` at step `t`),
//! - `V(K − 1, s) = 1`, `V(t, s) = Σ_{s′ ∈ S} P(s, s′)·V(t + 1, s′) + Σ_{x ∈ N[i]} P(s, x)·U(t + 1, x)`,
//! - `U(t, x) = Σ_L Σ_y w_y(x, L)·R(t + L, y) + w_fin(x, K − t)`, `R(t, y) = Σ_{s ∈ S} P(y, s)·V(t, s)`,
//!
//! with `w_y(x, L)` the weight of an excursion of `L` holders from `x` whose last is `y`. This is
//! `E exp(θ·Ψ_UNI)` exactly (brute force over every path agrees, in the tests) when every
//! distance is computed; beyond `L₀ = min(K, 64·(deg(i) + 1))` the certified geometric tail of
//! [`super::mixture`] bounds the weights from above. Per order it costs
//! O(K·(|E| + (deg(i) + 1)²·L₀)), against O(K·|E|·Q) for one pair by the recursion.
//!
//! # Paths with many visits of `i` in one excursion
//! As for a pair, they are dropped from the mixture and charged the local value through their
//! probability. Here that probability is bounded by a union bound ([`dropped`]): such a path has
//! a visit of `i` followed by `Q` returns to `i` inside `N[i]`, so
//! `P_drop ≤ K·r^Q` with `r` an upper bound on the probability to return to `i` before leaving
//! `N[i]` (value iteration from 1, which only decreases towards it).
//!
//! # What it does not give
//! The coalition's figure bounds every observer beyond the neighbours, but it is not each one's
//! own pair figure: where it is above the neighbours' figure, the user's figure is the
//! coalition's, which may be above what all pairs would give ([`crate::walk::path_hidden`]
//! then computes the far pairs where their cost is within the limit).

use super::Transitions;
use super::mixture::{MixtureOptions, Observer, PairChain, Part, Recursion, Weights};
use super::passage::dot;
use crate::error::PrivacyError;

/// Excursion lengths computed exactly per state of `N[i]` (`L₀ = 64·|N[i]|`, as for a pair's
/// chain, unless the options set one); the certified tail bounds the longer ones. The tail
/// freezes every visit's factor at `Q` visits, which over-charges where `L₀` is short: at
/// `L₀ = 64` the coalition of a 200-user 4-regular graph took the local value, at 128 it was
/// 2 % above the exact 3.4427, from 200 on exact (K = 2,000, σ = 20, cap 18).
const EXCURSION_HORIZON: usize = 64;

/// Excursion lengths whose weight meets the value after them one by one; the longer ones
/// (up to `L₀`) are charged their total weight times the largest value after them (an upper
/// bound: every term is nonnegative), which costs `(deg(i) + 1)²` multiply-adds per step
/// instead of `(deg(i) + 1)²·L₀`. An excursion that long inside `N[i]` is rare: on a 200-user
/// 4-regular graph the coalition's figure did not move in its fifth digit.
const EXCURSIONS_ONE_BY_ONE: usize = 64;

/// Value iterations for the return probability's upper bound (any count gives a valid bound;
/// more give a smaller one).
const RETURN_ITERATIONS: usize = 200;

/// The walk as the coalition of every user outside `N[i]` sees it.
#[derive(Debug, Clone)]
pub struct Coalition {
    users: usize,
    /// `N[i]` in index order: state `x` of the excursion chain is user `members[x]`.
    members: Vec<usize>,
    /// The users of the coalition in index order: index `s` is user `outside[s]`.
    outside: Vec<usize>,
    /// The state of `i` in `members`.
    contributor: usize,
    /// Moves inside `N[i]`, per state: `(state, P)`.
    inside: Vec<Vec<(usize, f64)>>,
    /// Moves out of `N[i]`, per state: `(coalition index, P)`.
    exits: Vec<Vec<(usize, f64)>>,
    /// Moves of each coalition member to another: `(coalition index, P)`.
    stay: Vec<Vec<(usize, f64)>>,
    /// Moves of each coalition member into `N[i]`: `(state, P)`.
    enter: Vec<Vec<(usize, f64)>>,
}

impl Coalition {
    /// The coalition of the users outside `N[i]` in a walk with transition rows `rows`.
    pub fn new<T: Transitions + ?Sized>(rows: &T, i: usize) -> Result<Self, PrivacyError> {
        let n = rows.users();
        if i >= n {
            return Err(PrivacyError::Pair { i, j: i, users: n });
        }
        let mut near = vec![false; n];
        near[i] = true;
        for &(y, p) in rows.row(i) {
            near[y] |= p > 0.0;
        }
        for (x, near) in near.iter_mut().enumerate() {
            *near |= rows.row(x).iter().any(|&(y, p)| y == i && p > 0.0);
        }
        let members: Vec<usize> = (0..n).filter(|&x| near[x]).collect();
        let outside: Vec<usize> = (0..n).filter(|&x| !near[x]).collect();
        // Index of a user in its side.
        let mut index = vec![0; n];
        for (a, &x) in members.iter().enumerate() {
            index[x] = a;
        }
        for (a, &x) in outside.iter().enumerate() {
            index[x] = a;
        }
        let split = |x: usize| {
            let (mut same, mut other) = (Vec::new(), Vec::new());
            for &(y, p) in rows.row(x) {
                if near[y] == near[x] {
                    same.push((index[y], p));
                } else {
                    other.push((index[y], p));
                }
            }
            (same, other)
        };
        let (inside, exits) = members.iter().map(|&x| split(x)).unzip();
        let (stay, enter) = outside.iter().map(|&x| split(x)).unzip();
        Ok(Self {
            users: n,
            contributor: index[i],
            members,
            outside,
            inside,
            exits,
            stay,
            enter,
        })
    }

    /// `i`'s neighbours, in index order: the observers the coalition does not cover.
    pub fn neighbours(&self) -> impl Iterator<Item = usize> + '_ {
        let i = self.members[self.contributor];
        self.members.iter().copied().filter(move |&x| x != i)
    }

    /// Users in the walk.
    pub fn users(&self) -> usize {
        self.users
    }

    /// The users of the coalition (every observer it bounds), in index order.
    pub fn observers(&self) -> &[usize] {
        &self.outside
    }

    /// The excursion chain with the observation after distance 1 weighted by `ret`.
    fn chain(&self, ret: Vec<f64>) -> PairChain {
        PairChain::inside(self.inside.clone(), self.contributor, ret)
    }

    /// The coalition as one observer of a walk of `steps` steps: its mixtures at any orders, and
    /// its curve for any cap, as for a pair ([`Observer`]).
    pub fn observer(&self, steps: usize, opts: &MixtureOptions) -> Observer<'_> {
        let drop = dropped(self, steps, opts.visits);
        let opts = *opts;
        Observer::new(vec![drop; self.users], move |theta| {
            mixture(self, steps, theta, &opts)
        })
    }

    /// The arithmetic of one order of [`mixture`] in multiply-adds, roughly (what
    /// [`super::mixture::check_cost`]'s limit counts).
    pub(crate) fn work(&self, steps: usize, opts: &MixtureOptions) -> f64 {
        let m = self.members.len();
        let l0 = excursion_horizon(m, steps, opts) as f64;
        let moves = |v: &[Vec<(usize, f64)>]| v.iter().map(Vec::len).sum::<usize>() as f64;
        let recursion = (m + 1) as f64 * 2.0 * l0 * moves(&self.inside) * (opts.visits + 2) as f64;
        let per_step = moves(&self.stay) + moves(&self.enter) + moves(&self.exits);
        let near = EXCURSIONS_ONE_BY_ONE.min(steps) as f64;
        recursion + steps as f64 * (per_step + (m * m) as f64 * (near + 1.0))
    }
}

/// `E exp(θ·Ψ_UNI)` of the coalition's view over the paths whose excursions hold at most `Q`
/// visits of `i` each (the others omitted), for a walk of `steps` steps, per initial holder (one
/// value per user, in index order). See the module docs.
pub fn mixture(c: &Coalition, steps: usize, theta: f64, opts: &MixtureOptions) -> Vec<f64> {
    let k = steps;
    if k == 0 {
        return vec![1.0; c.users];
    }
    let m = c.members.len();
    let w = Weights {
        theta,
        visits: opts.visits,
        keep_dropped: false,
    };
    let l0 = excursion_horizon(m, k, opts);
    // One recursion per way out `y` (index y), and one for the final model (index m: every state
    // ends it, as a base of ones).
    let recs: Vec<Recursion> = (0..=m)
        .map(|y| {
            let ret = (0..m)
                .map(|x| f64::from(u8::from(y == m || x == y)))
                .collect();
            Recursion::run(&c.chain(ret), &w, k, l0, &[Part::Kept])
        })
        .collect();
    // `w_y(x, L)` for L = 1..=l0 contiguous in L (index (y·m + x)·l0 + L − 1); the final model's
    // `w_fin(x, T)` for any T, exact up to l0 and the tail's bound beyond.
    let mut weights = vec![0.0; m * m * l0];
    for (y, r) in recs.iter().take(m).enumerate() {
        for x in 0..m {
            for l in 1..=l0 {
                weights[(y * m + x) * l0 + l - 1] = r.parts[0].first[(l - 1) * m + x];
            }
        }
    }
    let fin = |x: usize, t: usize| -> f64 {
        let r = &recs[m];
        if t <= l0 {
            r.parts[0].first[(t - 1) * m + x]
        } else {
            r.tail.as_ref().map_or(0.0, |tail| {
                tail.c_ret
                    * tail.rho.powi(i32::try_from(t - l0).unwrap_or(i32::MAX))
                    * tail.v_sums[x]
            })
        }
    };
    let o = c.outside.len();
    // R(t, y) for every t, contiguous in t per way out (index y·K + t).
    let mut exit_value = vec![0.0; m * k];
    let exits = |v: &[f64], t: usize, values: &mut [f64]| {
        for y in 0..m {
            values[y * k + t] = c.exits[y].iter().map(|&(s, p)| p * v[s]).sum();
        }
    };
    let mut v_next = vec![1.0; o];
    let mut u_next: Vec<f64> = (0..m).map(|x| fin(x, 1)).collect();
    exits(&v_next, k - 1, &mut exit_value);
    // `Σ_{L > l0} ρ_y^{L − l0}·R(t + L, y)` per way out, for the tail.
    let mut far = vec![0.0; m];
    // Lengths in (near, l0] are charged their total weight times the largest R(t′, y) with
    // t′ > t + near (module docs).
    let near = EXCURSIONS_ONE_BY_ONE.min(l0);
    let mass: Vec<f64> = weights.chunks(l0).map(|w| w[near..].iter().sum()).collect();
    let mut latest = vec![0.0_f64; m];
    for t in (0..k - 1).rev() {
        for (y, f) in far.iter_mut().enumerate() {
            if let Some(tail) = &recs[y].tail {
                let ahead = if t + l0 + 1 < k {
                    exit_value[y * k + t + l0 + 1]
                } else {
                    0.0
                };
                *f = tail.rho * (ahead + *f);
            }
        }
        if t + near < k - 1 {
            for (y, r) in latest.iter_mut().enumerate() {
                *r = r.max(exit_value[y * k + t + near + 1]);
            }
        }
        let len = near.min(k - 1 - t);
        let u: Vec<f64> = (0..m)
            .map(|x| {
                let mut v = fin(x, k - t);
                for y in 0..m {
                    let w = &weights[(y * m + x) * l0..(y * m + x) * l0 + len];
                    v += dot(w, &exit_value[y * k + t + 1..y * k + t + 1 + len]);
                    if len == near {
                        v += mass[y * m + x] * latest[y];
                    }
                    if let Some(tail) = &recs[y].tail {
                        v += tail.c_ret * tail.v_sums[x] * far[y];
                    }
                }
                v
            })
            .collect();
        let v: Vec<f64> = (0..o)
            .map(|s| {
                c.stay[s].iter().map(|&(s2, p)| p * v_next[s2]).sum::<f64>()
                    + c.enter[s].iter().map(|&(x, p)| p * u_next[x]).sum::<f64>()
            })
            .collect();
        exits(&v, t, &mut exit_value);
        v_next = v;
        u_next = u;
    }
    let mut out = vec![0.0; c.users];
    for (x, &user) in c.members.iter().enumerate() {
        out[user] = u_next[x];
    }
    for (s, &user) in c.outside.iter().enumerate() {
        out[user] = v_next[s];
    }
    out
}

/// An upper bound on the probability that some excursion of a walk of `steps` steps holds more
/// than `visits` visits of `i` (the paths [`mixture`] omits), from any initial holder: `K·r^Q`,
/// see the module docs.
pub fn dropped(c: &Coalition, steps: usize, visits: usize) -> f64 {
    let m = c.members.len();
    let i = c.contributor;
    // g(x) ≥ P_x(reach i before leaving N[i]), from above; r from i's own row.
    let mut g = vec![1.0; m];
    let step = |g: &[f64], x: usize| -> f64 {
        c.inside[x]
            .iter()
            .map(|&(y, p)| if y == i { p } else { p * g[y] })
            .sum::<f64>()
            .min(1.0)
    };
    for _ in 0..RETURN_ITERATIONS {
        let next: Vec<f64> = (0..m).map(|x| step(&g, x)).collect();
        g = next;
    }
    let r = step(&g, i);
    let exponent = i32::try_from(visits).unwrap_or(i32::MAX);
    (steps as f64 * r.powi(exponent)).min(1.0)
}

/// `L₀` of the excursions inside a neighbourhood of `members` users for a walk of `steps` steps.
fn excursion_horizon(members: usize, steps: usize, opts: &MixtureOptions) -> usize {
    opts.horizon
        .unwrap_or(EXCURSION_HORIZON * members)
        .clamp(1, steps.max(1))
}

#[cfg(test)]
mod tests;
