//! The certified all-pairs pass over the walk's first-passage laws.
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
//! # The laws
//! The same iteration gives every pair's first-passage law `h_ij(m)`, which is summed into the
//! buckets of [`super::law`] (mass and `Σ h g`) as it goes; at the truncation `T` each pair's law is
//! handed to the caller with its tail `r_T(i)` and `ρ_min` of its target (the decay the tail bound
//! needs). `T` is chosen by the `E[1/M]` criterion above, which keeps the pass as fast as before.
//!
//! All targets are iterated together in blocks of columns (`r` is an `n × block` matrix, each step
//! a sparse-times-dense product with contiguous rows), which vectorizes.

use super::Transitions;
use super::law::{PassageLaw, Tail, bucket_starts};
use super::path_factor;
use crate::error::PrivacyError;

/// Exact `E[1/M]` on the complete graph of `n ≥ 2` users forwarding uniformly to one of the
/// other `n − 1`: `ln(n−1)/(n−2)` (1 for `n = 2`). O(1).
pub fn complete_graph_inverse_hitting(n: u64) -> Result<f64, PrivacyError> {
    match n {
        0 | 1 => Err(PrivacyError::Users { min: 2, got: n }),
        2 => Ok(1.0),
        _ => Ok(((n - 1) as f64).ln() / (n - 2) as f64),
    }
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
pub(crate) fn tail_factor(rho: f64, t: f64, upper: bool) -> f64 {
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
    all_pairs(p, opts, None)
}

/// What receives each ordered pair's first-passage law during the pass.
pub type LawSink<'a> = &'a mut dyn FnMut(usize, usize, PassageLaw);

/// Certified `E[1/M_ij]` for every ordered pair, and each pair's first-passage law (with `g`
/// for Lipschitz constant `lipschitz`) handed to `sink` as `(user, observer, law)`; pairs whose
/// observer is never reached get a law with all its mass at "never".
pub fn passage_all_pairs<T: Transitions + ?Sized>(
    p: &T,
    opts: &HittingOptions,
    lipschitz: f64,
    sink: LawSink<'_>,
) -> Result<InverseHitting, PrivacyError> {
    super::law::check_lipschitz(lipschitz)?;
    all_pairs(p, opts, Some((lipschitz, sink)))
}

/// Largest number of bucket accumulators (two per pair and bucket) held at once, which bounds
/// the block of targets when laws are built: about 64 MiB.
const MAX_ACCUMULATORS: usize = 1 << 23;

fn all_pairs<T: Transitions + ?Sized>(
    p: &T,
    opts: &HittingOptions,
    mut laws: Option<(f64, LawSink<'_>)>,
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
    let block = match &laws {
        Some(_) => {
            let buckets = bucket_starts(opts.max_steps as u64).len();
            opts.block
                .min((MAX_ACCUMULATORS / (2 * n * buckets)).max(1))
        }
        None => opts.block,
    };
    let mut j0 = 0;
    while j0 < n {
        let targets = j0..n.min(j0 + block);
        match &mut laws {
            Some((lipschitz, sink)) => {
                solve_block(p, targets, opts, &mut out, Some((*lipschitz, &mut **sink)))
            }
            None => solve_block(p, targets, opts, &mut out, None),
        }
        j0 += block;
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

/// The bucket sums of a block's laws while the pass runs: `mass` and `Σ h g`, laid out
/// `[bucket][user][target]` so that each step streams through one contiguous slice.
struct LawAccumulators {
    lipschitz: f64,
    starts: std::sync::Arc<[u64]>,
    mass: Vec<f64>,
    gsum: Vec<f64>,
}

/// Iterates `r ← Q r` for a block of targets until every pair in it is within `rel_tol`.
fn solve_block<T: Transitions + ?Sized>(
    p: &T,
    targets: std::ops::Range<usize>,
    opts: &HittingOptions,
    out: &mut InverseHitting,
    sink: Option<(f64, LawSink<'_>)>,
) {
    let n = p.users();
    let nb = targets.len();
    let mut prev = vec![1.0; n * nb];
    let mut next = vec![0.0; n * nb];
    let mut partial = vec![0.0; n * nb];
    for (b, j) in targets.clone().enumerate() {
        prev[j * nb + b] = 0.0;
    }
    let (mut acc, mut sink) = match sink {
        Some((lipschitz, sink)) => {
            let starts = bucket_starts(opts.max_steps as u64);
            let len = starts.len() * n * nb;
            let acc = LawAccumulators {
                lipschitz,
                starts,
                mass: vec![0.0; len],
                gsum: vec![0.0; len],
            };
            (Some(acc), Some(sink))
        }
        None => (None, None),
    };
    let mut bucket = 0;
    for m in 1..=opts.max_steps {
        let inv_m = 1.0 / m as f64;
        let law_step = acc.as_mut().map(|a| {
            if bucket + 1 < a.starts.len() && m as u64 >= a.starts[bucket + 1] {
                bucket += 1;
            }
            let g = path_factor(a.lipschitz, m as u64);
            let at = bucket * n * nb..(bucket + 1) * n * nb;
            (g, &mut a.mass[at.clone()], &mut a.gsum[at])
        });
        let (g_m, mut mass, mut gsum) = match law_step {
            Some((g, mass, gsum)) => (g, Some(mass), Some(gsum)),
            None => (0.0, None, None),
        };
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
            if let (Some(mass), Some(gsum)) = (mass.as_deref_mut(), gsum.as_deref_mut()) {
                let (mass, gsum) = (
                    &mut mass[i * nb..(i + 1) * nb],
                    &mut gsum[i * nb..(i + 1) * nb],
                );
                for (((ms, gs), o), r) in mass
                    .iter_mut()
                    .zip(gsum.iter_mut())
                    .zip(row_out.iter())
                    .zip(before)
                {
                    let hit = r - o;
                    *ms += hit;
                    *gs += hit * g_m;
                }
            }
        }
        let last = m == opts.max_steps;
        if m % opts.check_every == 0 || last {
            let found = bounds(
                n,
                targets.clone(),
                m,
                &prev,
                &next,
                &partial,
                opts.rel_tol,
                last,
                out,
            );
            if let Some(decay) = found {
                out.steps = out.steps.max(m);
                if let (Some(acc), Some(sink)) = (acc.as_ref(), sink.as_mut()) {
                    hand_over(
                        acc,
                        m as u64,
                        n,
                        targets,
                        &next,
                        &decay,
                        &out.reached,
                        &mut **sink,
                    );
                }
                return;
            }
        }
        std::mem::swap(&mut prev, &mut next);
    }
}

/// Builds each pair's law of the block at truncation `t` (tail `r_t`) and hands it to `sink`.
#[allow(clippy::too_many_arguments)]
fn hand_over(
    acc: &LawAccumulators,
    t: u64,
    n: usize,
    targets: std::ops::Range<usize>,
    survival: &[f64],
    decay: &[f64],
    reached: &[bool],
    sink: &mut dyn FnMut(usize, usize, PassageLaw),
) {
    let nb = targets.len();
    let starts = bucket_starts(t);
    // A walk in which every user reaches every other is irreducible: each observer is reached
    // with probability one.
    let certain = reached
        .iter()
        .enumerate()
        .all(|(at, &r)| r || at / n == at % n);
    for (b, j) in targets.enumerate() {
        for i in (0..n).filter(|&i| i != j) {
            let law = if reached[i * n + j] {
                let at = |bucket: usize| (bucket * n + i) * nb + b;
                let mass = (0..starts.len())
                    .map(|k| acc.mass[at(k)].max(0.0))
                    .collect();
                let gsum = (0..starts.len())
                    .map(|k| acc.gsum[at(k)].max(0.0))
                    .collect();
                PassageLaw::from_buckets(
                    acc.lipschitz,
                    t,
                    starts.clone(),
                    mass,
                    gsum,
                    Tail {
                        mass: survival[i * nb + b].max(0.0),
                        decay: decay[b],
                        certain,
                    },
                )
            } else {
                PassageLaw::never(acc.lipschitz, t)
            };
            sink(i, j, law);
        }
    }
}

/// Computes the certified interval of every pair of the block at truncation `t`; writes them and
/// returns, when all are within `rel_tol` (or when `force`, at the step cap), each target's
/// `ρ_min` (a lower bound on the survival ratio from `t` on).
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
) -> Option<Vec<f64>> {
    let nb = targets.len();
    let tf = t as f64;
    let margin = 1.0 + (tf + 100.0) * 4.0 * f64::EPSILON;
    let mut factors = Vec::with_capacity(nb);
    let mut decay = Vec::with_capacity(nb);
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
        decay.push(rho_min);
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
                    return None;
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
    Some(decay)
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
    fn the_pass_gives_the_complete_graphs_law() {
        for lipschitz in [1.0, 1.04] {
            let n = 12;
            let mut laws = Vec::new();
            let res = passage_all_pairs(
                &complete(n),
                &HittingOptions::default(),
                lipschitz,
                &mut |i, j, law| {
                    laws.push((i, j, law));
                },
            )
            .unwrap();
            assert_eq!(laws.len(), n * (n - 1));
            let closed = PassageLaw::complete(n as u64, lipschitz).unwrap();
            for (i, j, law) in &laws {
                assert!(res.get(*i, *j).unwrap().reached);
                let (a, b) = (law.path_share(), closed.path_share());
                assert!(a >= b * (1.0 - 1e-9) && a <= b * 1.01, "{a} vs {b}");
            }
        }
    }

    #[test]
    fn unreached_observers_get_a_law_with_nothing_before_the_final_model() {
        let p = vec![vec![(1, 1.0)], vec![(2, 1.0)], vec![(2, 1.0)]];
        let mut seen = Vec::new();
        passage_all_pairs(&p, &HittingOptions::default(), 1.0, &mut |i, j, law| {
            seen.push((i, j, law.path_share() > 0.0, law.path_share()));
        })
        .unwrap();
        let never = seen.iter().find(|s| s.0 == 2 && s.1 == 0).unwrap();
        assert_eq!((never.2, never.3), (false, 0.0));
        let one = seen.iter().find(|s| s.0 == 0 && s.1 == 1).unwrap();
        assert!(one.2 && (one.3 - 1.0).abs() < 1e-12);
    }
}
