//! The law of the number of noisy hops between a contribution and what an observer sees of it,
//! and the per-contribution Rényi bound it gives (`../mod.rs` has the derivation).
//!
//! # Representation
//! Hop counts `m ≤ EXACT_HOPS` are kept one by one; beyond, they are grouped in buckets whose last
//! count is at most `BUCKET_RATIO` times their first, up to the truncation `T`. A bucket keeps its
//! mass `P(M ∈ bucket)` and `Σ f(m) g(m)` over it (an upper bound is allowed). Past `T` the law
//! keeps the mass `P(M > T)` (never reaching the observer included) and an upper bound on
//! `E[g(M) | M > T]` (`g = 0` where `M = ∞`).
//!
//! # Why the bound is certified
//! The per-contribution bound is `ln E[exp(a·g(M))]/(α−1)` with `a = (α−1)·ε_loc(α)`; `φ(g) =
//! exp(a g)` is convex and increasing, `g` decreasing in `m`. Inside a bucket `[lo, hi]`, `g` lies
//! in `[g(hi), g(lo)]` and the chord of `φ` over that interval bounds `φ` above, so
//! `E[φ(g); bucket] ≤ (mass − c)·φ(g(hi)) + c·φ(g(lo))` with `c = (Σ f g − mass·g(hi))/(g(lo) − g(hi))`:
//! exact for single counts, increasing in `Σ f g` (so an upper bound on it is safe). Past `T` the
//! values of `g` lie in `[0, g(T+1)]` and the chord from 0 gives `P(M > T)·ḡ/g(T+1)` mass at
//! `g(T+1)`, where `ḡ ≥ E[g(M) | M > T]`. Only bounds that grow with every input are used, so any
//! upper bound on the law's tail, or on a bucket's `Σ f g`, stays an upper bound on the figure.
//!
//! # Horizons (the final model)
//! With the final model published `h` hops after the contribution, the observer sees it after
//! `min(M, h)` hops. For `h ≤ T` every hop count from the bucket holding `h` on is charged at that
//! bucket's first count (`g` of it is the largest in reach); for `h > T` the tail gains at most
//! `g(h)` in `ḡ` (`g(min(M, h)) ≤ g(M) + g(h)`), or `g(h) − g(∞)` when the observer is reached
//! for certain (then `g(M) ≥ g(∞)` on every path).
//!
//! # Envelopes
//! For a set of laws, the law whose distribution function is the pointwise maximum of theirs at
//! every bucket end dominates each one stochastically from below (shorter paths), and every charge
//! here is nonincreasing in the hop count and constant inside a bucket once bucket masses are
//! charged at their first count; so one envelope bounds every observer of a user at once. Its
//! buckets lose the chord (their `Σ f g` is taken at the first count).

use super::path_factor;
use crate::error::PrivacyError;
use std::sync::Arc;

/// Hop counts kept one by one before buckets start.
pub const EXACT_HOPS: u64 = 32;
/// A bucket's last hop count is at most this factor times its first.
const BUCKET_RATIO: f64 = 1.1;
/// Truncation of the complete graph's geometric law: its tail past `T` is itself geometric, so
/// the certified tail bound is tight and `T` only needs to cover the short paths.
const COMPLETE_TRUNCATION: u64 = 4096;

/// The first hop count of each bucket covering `1..=t` (`t ≥ 1`).
pub(crate) fn bucket_starts(t: u64) -> Arc<[u64]> {
    let mut starts = Vec::new();
    let mut m = 1_u64;
    while m <= t {
        starts.push(m);
        m = if m < EXACT_HOPS {
            m + 1
        } else {
            ((m as f64 * BUCKET_RATIO).ceil() as u64).max(m + 1)
        };
    }
    starts.into()
}

/// When the observer's view of a contribution ends.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Horizon {
    /// The final model is published to every member `h ≥ 1` noisy hops after the contribution
    /// (`h = K − k` for a contribution at step `k` of a `K`-step walk).
    Final(u64),
    /// No final model reaches the observer: only the token's visits count.
    Open,
}

impl Horizon {
    /// The horizon of a contribution at step `seq` (0-based) of a walk of `steps` steps.
    pub fn of_step(seq: u64, steps: u64) -> Self {
        Horizon::Final(steps.saturating_sub(seq).max(1))
    }
}

/// The first-passage law of one (user, observer) pair, or an envelope over several, bucketed for
/// accounting (see the module docs).
#[derive(Debug, Clone, PartialEq)]
pub struct PassageLaw {
    lipschitz: f64,
    truncation: u64,
    starts: Arc<[u64]>,
    mass: Vec<f64>,
    gsum: Vec<f64>,
    tail: f64,
    tail_g: f64,
    /// The observer is reached with probability one (an irreducible walk): then past the
    /// horizon a path's `g(M) ≥ g(∞)` already, and the final model adds only `g(h) − g(∞)`.
    certain: bool,
}

/// What a law knows past its truncation `T`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Tail {
    /// `P(M > T)`, never reaching the observer included.
    pub mass: f64,
    /// A lower bound on `P(M > m + 1)/P(M > m)` for every `m ≥ T` (0 if unknown).
    pub decay: f64,
    /// Whether the observer is reached with probability one (`M < ∞` almost surely).
    pub certain: bool,
}

/// `ln(eˣ + eʸ)` without overflow; `−∞` is the empty sum.
fn log_add(x: f64, y: f64) -> f64 {
    if x == f64::NEG_INFINITY {
        return y;
    }
    if y == f64::NEG_INFINITY {
        return x;
    }
    let (hi, lo) = if x > y { (x, y) } else { (y, x) };
    hi + (lo - hi).exp().ln_1p()
}

impl PassageLaw {
    /// A law from bucket sums on the grid [`bucket_starts`]`(truncation)`: `mass[b]` and
    /// `gsum[b]` (`Σ f(m) g(m)` or an upper bound on it), and what is known past the truncation.
    pub(crate) fn from_buckets(
        lipschitz: f64,
        truncation: u64,
        starts: Arc<[u64]>,
        mass: Vec<f64>,
        gsum: Vec<f64>,
        tail: Tail,
    ) -> Self {
        let tail_g = Self::tail_g_bound(lipschitz, truncation, tail.decay);
        Self {
            lipschitz,
            truncation,
            starts,
            mass,
            gsum,
            tail: tail.mass.clamp(0.0, 1.0),
            tail_g,
            certain: tail.certain,
        }
    }

    /// The law of an observer the walk never reaches: all its mass at "never" (it sees only the
    /// final model, if one is published).
    pub(crate) fn never(lipschitz: f64, truncation: u64) -> Self {
        let starts = bucket_starts(truncation);
        let zeros = vec![0.0; starts.len()];
        Self {
            lipschitz,
            truncation,
            starts,
            mass: zeros.clone(),
            gsum: zeros,
            tail: 1.0,
            tail_g: 0.0,
            certain: false,
        }
    }

    /// `ḡ ≥ E[g(M) | M > T]`: `g(m) ≤ 1/m + g(∞)` (with `y = L⁻²`, `g(m) − g(∞) =
    /// (1−y)yᵐ/(1−yᵐ) ≤ y/m`), and past `T` the hop count dominates `T + Geometric(1 − decay)`,
    /// whose `E[1/M]` is bounded by [`super::hitting::tail_factor`]. Capped at `g(T+1)`.
    fn tail_g_bound(lipschitz: f64, truncation: u64, decay: f64) -> f64 {
        let g_next = path_factor(lipschitz, truncation + 1);
        let g_inf = -(-2.0 * lipschitz.ln()).exp_m1();
        let inv = super::hitting::tail_factor(decay, truncation as f64, true);
        (inv + g_inf).min(g_next)
    }

    /// The law of the first passage on the complete graph of `n ≥ 2` users forwarding uniformly
    /// to one of the other `n − 1`: `P(M = m) = q(1 − q)^{m−1}`, `q = 1/(n − 1)`.
    pub fn complete(n: u64, lipschitz: f64) -> Result<Self, PrivacyError> {
        if n < 2 {
            return Err(PrivacyError::Users { min: 2, got: n });
        }
        check_lipschitz(lipschitz)?;
        let q = 1.0 / (n - 1) as f64;
        let t = COMPLETE_TRUNCATION;
        let starts = bucket_starts(t);
        let (mut mass, mut gsum) = (vec![0.0; starts.len()], vec![0.0; starts.len()]);
        let mut survive = 1.0_f64; // P(M > m − 1)
        let mut b = 0;
        for m in 1..=t {
            if b + 1 < starts.len() && m >= starts[b + 1] {
                b += 1;
            }
            let f = survive * q;
            survive -= f;
            mass[b] += f;
            gsum[b] += f * path_factor(lipschitz, m);
        }
        Ok(Self::from_buckets(
            lipschitz,
            t,
            starts,
            mass,
            gsum,
            Tail {
                mass: (1.0 - q).powf(t as f64),
                decay: 1.0 - q,
                certain: true,
            },
        ))
    }

    /// The envelope of `laws` (see the module docs); `None` when empty. All must share the
    /// truncation and the Lipschitz constant (they come from one pass).
    pub(crate) fn envelope<'a>(laws: impl IntoIterator<Item = &'a PassageLaw>) -> Option<Self> {
        let mut out: Option<(PassageLaw, Vec<f64>)> = None;
        for law in laws {
            let cdf = law.cdf();
            match &mut out {
                None => out = Some((law.clone(), cdf)),
                Some((env, env_cdf)) => {
                    debug_assert_eq!(env.truncation, law.truncation);
                    for (e, c) in env_cdf.iter_mut().zip(&cdf) {
                        *e = e.max(*c);
                    }
                    env.tail_g = env.tail_g.max(law.tail_g);
                    env.certain &= law.certain;
                }
            }
        }
        let (mut env, cdf) = out?;
        let mut before = 0.0;
        for (b, &c) in cdf.iter().enumerate() {
            env.mass[b] = (c - before).max(0.0);
            env.gsum[b] = env.mass[b] * path_factor(env.lipschitz, env.starts[b]);
            before = c;
        }
        env.tail = (1.0 - before).max(0.0);
        Some(env)
    }

    /// `P(M ≤ end of bucket b)` for every bucket.
    fn cdf(&self) -> Vec<f64> {
        let mut acc = 0.0;
        self.mass
            .iter()
            .map(|m| {
                acc += m;
                acc.min(1.0)
            })
            .collect()
    }

    /// The truncation `T`.
    pub fn truncation(&self) -> u64 {
        self.truncation
    }

    /// An upper bound on `E[g(M)]` (no final model): the first-moment summary of the law, the
    /// share of `ε_loc` a contribution costs when `ε_loc` is small.
    pub fn path_share(&self) -> f64 {
        self.gsum.iter().sum::<f64>() + self.tail * self.tail_g
    }

    /// The last hop count of bucket `b`.
    fn bucket_end(&self, b: usize) -> u64 {
        self.starts
            .get(b + 1)
            .map_or(self.truncation, |next| next - 1)
    }

    /// The `exp(a·g) − 1` of every bucket end of this law's grid (and of `T + 1`): all that
    /// [`PassageLaw::log_mgf`] needs of `a`, shared by every law with the same truncation (and
    /// Lipschitz constant), so that evaluating many laws at one order costs multiplications.
    pub(crate) fn exps(&self, a: f64) -> Exps {
        let g = |m: u64| path_factor(self.lipschitz, m);
        let g_lo: Vec<f64> = self.starts.iter().map(|&m| g(m)).collect();
        let g_hi: Vec<f64> = (0..self.starts.len())
            .map(|b| g(self.bucket_end(b)))
            .collect();
        let em1 = |x: &f64| (a * x).exp_m1();
        Exps {
            a,
            truncation: self.truncation,
            e_lo: g_lo.iter().map(em1).collect(),
            e_hi: g_hi.iter().map(em1).collect(),
            g_next: g(self.truncation + 1),
            e_next: em1(&g(self.truncation + 1)),
            g_lo,
            g_hi,
        }
    }

    /// Writes `ln E[exp(a·g(min(M, h)))]` (an upper bound) for each horizon, `a > 0`: the
    /// per-contribution Rényi divergence times `α − 1`. `horizons` must be sorted; `exps` comes
    /// from [`PassageLaw::exps`] of a law with this one's truncation.
    pub(crate) fn log_mgf(&self, exps: &Exps, horizons: &[Horizon], out: &mut [f64]) {
        debug_assert!(horizons.windows(2).all(|w| w[0] <= w[1]));
        debug_assert_eq!(exps.truncation, self.truncation);
        let mut sum = MgfSum::new(exps.a);
        let mut next = 0; // first horizon not yet written
        let mut rest = 1.0_f64; // mass from this bucket on (tail included)
        for b in 0..self.mass.len() {
            let hi = self.bucket_end(b);
            let (g_lo, e_lo) = (exps.g_lo[b], exps.e_lo[b]);
            // Horizons inside this bucket: everything from here on is seen at ≤ g(lo).
            while let Some(&Horizon::Final(h)) = horizons.get(next) {
                if h > hi {
                    break;
                }
                out[next] = sum.with(rest.max(0.0), g_lo, e_lo).value();
                next += 1;
            }
            let mass = self.mass[b];
            rest -= mass;
            if mass <= 0.0 {
                continue;
            }
            if self.starts[b] == hi {
                sum.add(mass, g_lo, e_lo);
                continue;
            }
            let (g_hi, e_hi) = (exps.g_hi[b], exps.e_hi[b]);
            let upper = ((self.gsum[b] - mass * g_hi) / (g_lo - g_hi)).clamp(0.0, mass);
            sum.add(mass - upper, g_hi, e_hi);
            sum.add(upper, g_lo, e_lo);
        }
        let g_next = exps.g_next;
        let g_inf = if self.certain {
            -(-2.0 * self.lipschitz.ln()).exp_m1()
        } else {
            0.0
        };
        for (h, o) in horizons[next..].iter().zip(&mut out[next..]) {
            let extra = match *h {
                Horizon::Final(h) => (path_factor(self.lipschitz, h) - g_inf).max(0.0),
                Horizon::Open => 0.0,
            };
            let share = ((self.tail_g + extra) / g_next).min(1.0);
            // The tail splits between g(T+1) and 0 (the chord from 0); what is charged at 0
            // (the rest of the tail, and any rounding slack of the bucket masses) costs nothing.
            *o = sum.with(self.tail * share, g_next, exps.e_next).value();
        }
    }
}

/// `exp(a·g) − 1` at the bucket ends of one truncation's grid, for one `a` (see
/// [`PassageLaw::exps`]).
#[derive(Debug, Clone)]
pub(crate) struct Exps {
    a: f64,
    truncation: u64,
    g_lo: Vec<f64>,
    g_hi: Vec<f64>,
    e_lo: Vec<f64>,
    e_hi: Vec<f64>,
    g_next: f64,
    e_next: f64,
}

impl Exps {}

/// `E[exp(a g)]` over weighted points, summed without cancellation: as `Σ w·expm1(a g)` while
/// `a` is moderate (the result is `ln1p` of it, accurate when `a` is tiny, the usual regime), in
/// log space when `exp(a)` could overflow. Points at `g = 0` add nothing in either form, so the
/// weight charged at 0 need not be summed.
#[derive(Clone, Copy)]
struct MgfSum {
    a: f64,
    /// `Σ w·expm1(a g)` (excess form) or `ln Σ w·exp(a g)` (log form).
    acc: f64,
    log_form: bool,
}

/// Above this `a`, sums are kept in log space (`exp(600)` is far from overflow, and there the
/// result is large, so no precision is lost to cancellation).
const LOG_FORM_ABOVE: f64 = 600.0;

impl MgfSum {
    fn new(a: f64) -> Self {
        let log_form = a > LOG_FORM_ABOVE;
        Self {
            a,
            acc: if log_form { f64::NEG_INFINITY } else { 0.0 },
            log_form,
        }
    }

    /// Adds `weight` at `g`, whose `exp(a g) − 1` is `em1` (used in the excess form; the log
    /// form recomputes it in log space, where it cannot overflow).
    fn add(&mut self, weight: f64, g: f64, em1: f64) {
        if weight <= 0.0 {
            return;
        }
        if self.log_form {
            // ln Σ w·expm1(a g); `value` adds the 1 (the weight at g = 0 included).
            self.acc = log_add(self.acc, weight.ln() + (self.a * g).ln_exp_m1());
        } else {
            self.acc += weight * em1;
        }
    }

    fn with(mut self, weight: f64, g: f64, em1: f64) -> Self {
        self.add(weight, g, em1);
        self
    }

    /// `ln(1 + Σ w·expm1(a g))`, i.e. `ln E[exp(a g)]` with the unsummed weight at `g = 0`.
    fn value(&self) -> f64 {
        if self.log_form {
            log_add(0.0, self.acc)
        } else {
            self.acc.ln_1p()
        }
    }
}

/// `ln(expm1(x))` for `x > 0` without overflow.
trait LnExpM1 {
    fn ln_exp_m1(self) -> f64;
}

impl LnExpM1 for f64 {
    fn ln_exp_m1(self) -> f64 {
        if self > 30.0 {
            self + (-(-self).exp()).ln_1p()
        } else {
            self.exp_m1().ln()
        }
    }
}

/// `L ≥ 1` and finite.
pub(crate) fn check_lipschitz(lipschitz: f64) -> Result<(), PrivacyError> {
    if lipschitz >= 1.0 && lipschitz.is_finite() {
        Ok(())
    } else {
        Err(PrivacyError::Lipschitz(lipschitz))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `ln E[exp(a g(min(M,h)))]` summed term by term over a law given hop by hop.
    fn direct(f: &[f64], lipschitz: f64, a: f64, h: Option<u64>) -> f64 {
        let mut s = 0.0;
        let mut seen = 0.0;
        for (i, &p) in f.iter().enumerate() {
            let m = i as u64 + 1;
            if let Some(h) = h
                && m >= h
            {
                s += (1.0 - seen) * (a * path_factor(lipschitz, h)).exp();
                return s.ln();
            }
            s += p * (a * path_factor(lipschitz, m)).exp();
            seen += p;
        }
        (s + (1.0 - seen)).ln()
    }

    fn law_from(f: &[f64], lipschitz: f64) -> PassageLaw {
        let t = f.len() as u64;
        let starts = bucket_starts(t);
        let (mut mass, mut gsum) = (vec![0.0; starts.len()], vec![0.0; starts.len()]);
        let mut b = 0;
        for (i, &p) in f.iter().enumerate() {
            let m = i as u64 + 1;
            if b + 1 < starts.len() && m >= starts[b + 1] {
                b += 1;
            }
            mass[b] += p;
            gsum[b] += p * path_factor(lipschitz, m);
        }
        let tail = 1.0 - f.iter().sum::<f64>();
        let tail = Tail {
            mass: tail.max(0.0),
            decay: 0.0,
            certain: false,
        };
        PassageLaw::from_buckets(lipschitz, t, starts, mass, gsum, tail)
    }

    #[test]
    fn buckets_are_exact_then_geometric() {
        let s = bucket_starts(1000);
        assert_eq!(&s[..32], &(1..=32).collect::<Vec<_>>()[..]);
        for w in s.windows(2).skip(31) {
            assert!(w[1] > w[0] && (w[1] - 1) as f64 <= w[0] as f64 * BUCKET_RATIO + 1.0);
        }
        assert!(*s.last().unwrap() <= 1000);
        assert_eq!(&*bucket_starts(1), &[1]);
    }

    #[test]
    fn exact_where_the_law_lives_on_single_counts() {
        // A law on 1..=20 with no tail: every count is its own bucket, so the bound is exact.
        let f = vec![1.0 / 20.0; 20];
        for lipschitz in [1.0, 1.02, 1.5] {
            let law = law_from(&f, lipschitz);
            for a in [1e-3, 0.5, 30.0, 800.0] {
                for h in [
                    Horizon::Open,
                    Horizon::Final(1),
                    Horizon::Final(7),
                    Horizon::Final(50),
                ] {
                    let mut out = [0.0];
                    law.log_mgf(&law.exps(a), &[h], &mut out);
                    let hh = match h {
                        Horizon::Final(h) => Some(h),
                        Horizon::Open => None,
                    };
                    let d = direct(&f, lipschitz, a, hh);
                    assert!(
                        (out[0] - d).abs() <= 1e-12 * d.abs().max(1.0),
                        "{a} {h:?}: {} {d}",
                        out[0]
                    );
                }
            }
        }
    }

    #[test]
    fn bucketed_bound_is_above_and_close_to_the_exact_sum() {
        // Geometric law truncated at 400 (mass past it goes to the tail).
        let q = 0.01_f64;
        let f: Vec<f64> = (0..400).map(|i| q * (1.0 - q).powi(i)).collect();
        for lipschitz in [1.0, 1.02] {
            let law = law_from(&f, lipschitz);
            for a in [0.01, 1.0, 10.0] {
                let mut out = [0.0];
                law.log_mgf(&law.exps(a), &[Horizon::Final(10_000)], &mut out);
                let exact = direct(&f, lipschitz, a, None);
                assert!(out[0] >= exact * (1.0 - 1e-12), "{a}: {} < {exact}", out[0]);
            }
        }
    }

    #[test]
    fn horizons_only_raise_the_charge_and_h1_is_the_local_charge() {
        let law = PassageLaw::complete(100, 1.0).unwrap();
        let a = 0.7;
        let hs = [
            Horizon::Final(1),
            Horizon::Final(2),
            Horizon::Final(40),
            Horizon::Final(5000),
            Horizon::Open,
        ];
        let mut out = [0.0; 5];
        law.log_mgf(&law.exps(a), &hs, &mut out);
        assert!((out[0] - a).abs() < 1e-12, "h = 1 sees the step itself");
        for w in out.windows(2) {
            assert!(w[0] >= w[1], "{out:?}");
        }
    }

    #[test]
    fn complete_graph_law_matches_e_inverse_m() {
        // L = 1: E[g] = E[1/M] = ln(n−1)/(n−2), to the certified margin.
        for n in [3_u64, 10, 100, 1000, 1_000_000] {
            let law = PassageLaw::complete(n, 1.0).unwrap();
            let exact = ((n - 1) as f64).ln() / (n - 2) as f64;
            let share = law.path_share();
            assert!(share >= exact * (1.0 - 1e-12), "{n}: {share} < {exact}");
            assert!(share <= exact * 1.001, "{n}: {share} vs {exact}");
        }
        assert!(PassageLaw::complete(1, 1.0).is_err());
        assert!(PassageLaw::complete(5, 0.5).is_err());
    }

    #[test]
    fn envelope_dominates_each_law() {
        let f1: Vec<f64> = (0..40)
            .map(|i| if i == 0 { 0.5 } else { 0.5 / 39.0 })
            .collect();
        let f2: Vec<f64> = (0..40)
            .map(|i| if i == 2 { 0.9 } else { 0.1 / 39.0 })
            .collect();
        let (l1, l2) = (law_from(&f1, 1.01), law_from(&f2, 1.01));
        let env = PassageLaw::envelope([&l1, &l2]).unwrap();
        for a in [0.1, 3.0, 50.0] {
            for h in [Horizon::Final(2), Horizon::Final(35), Horizon::Open] {
                let (mut e, mut x1, mut x2) = ([0.0], [0.0], [0.0]);
                env.log_mgf(&env.exps(a), &[h], &mut e);
                l1.log_mgf(&l1.exps(a), &[h], &mut x1);
                l2.log_mgf(&l2.exps(a), &[h], &mut x2);
                assert!(e[0] >= x1[0].max(x2[0]) - 1e-12, "{a} {h:?}");
            }
        }
    }
}
