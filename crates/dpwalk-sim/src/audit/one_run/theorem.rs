//! From one run's guesses to a lower bound on ε: Steinke, Nasr & Jagielski (2023), "Privacy
//! Auditing with One (1) Training Run" (NeurIPS 2023), Theorem 3 and the p-value of their
//! Algorithm 2 (appendix), computed exactly.
//!
//! # What is proved (their Theorem 3)
//! Let `M : {−1, +1}^m → Y` be `(ε, δ)`-DP with respect to changing any one coordinate of its
//! input, `S` uniform on `{−1, +1}^m`, and `T = A(M(S)) ∈ {−1, 0, +1}^m` any guesses computed
//! from the output alone, with at most `r` non-zero. Then for every `v`,
//!
//! `P[W ≥ v] ≤ f(v) + 2mδ · max_{1 ≤ i ≤ m} (f(v − i) − f(v)) / i`,
//!
//! where `W = #{i : T_i = S_i}` counts the correct guesses and
//! `f(v) = P[Binomial(r, e^ε/(1 + e^ε)) ≥ v]`. (At δ = 0: `W` is stochastically dominated by
//! `Binomial(r, e^ε/(1 + e^ε))`, the accuracy of ε-randomized response.)
//!
//! # What we report
//! The right-hand side is a p-value for the hypothesis "`M` is `(ε, δ)`-DP" after `v` correct
//! guesses. Its δ term need not grow with ε, so we use a slightly larger one that does: each
//! binomial probability `P[B = k]` in `f(v − i) − f(v)` is replaced by its largest value over
//! `q' ≤ q` (itself for `q ≤ k/r`, the one at `q' = k/r` beyond). This is still a valid
//! p-value and it increases with ε, so the set of rejected ε is an interval `[0, ε̂)`.
//! [`epsilon_lower`] returns its end (to bisection precision, from below): if the mechanism were
//! `(ε, δ)`-DP for some `ε < ε̂`, the p-value at that ε would be below `β`, an event of
//! probability at most `β` (over `S` and the mechanism's randomness). So **with probability at
//! least `1 − β`, the true ε at this δ is at least ε̂**. The δ term is kept (not the δ = 0
//! simplification), so ε̂ is compared with the accountant's ε at the same δ.
//!
//! Choosing how many guesses to make after looking at the scores would be multiple testing;
//! [`best_of`] tries a fixed list of guess counts and pays for it with a union bound (`β`
//! divided by the list's length).

use crate::audit::binomial::regularized_beta;

/// Bisection steps on ε: the bracket ends below `1e-9` wide for any ε̂ under `1e3`.
const BISECTION_STEPS: usize = 50;

/// `ln C(r, k)`.
fn ln_choose(r: u64, k: u64) -> f64 {
    libm::lgamma(r as f64 + 1.0) - libm::lgamma(k as f64 + 1.0) - libm::lgamma((r - k) as f64 + 1.0)
}

/// `ln P[Binomial(r, q) = k]` with `q` given by `ln q` and `ln(1 − q)`.
fn ln_pmf(r: u64, k: u64, ln_q: f64, ln_1mq: f64) -> f64 {
    let (a, b) = (k as f64, (r - k) as f64);
    // 0·ln 0 = 0 (q = 0 or 1 at the mode).
    let term = |n: f64, l: f64| if n == 0.0 { 0.0 } else { n * l };
    ln_choose(r, k) + term(a, ln_q) + term(b, ln_1mq)
}

/// `max_{q' ≤ q} P[Binomial(r, q') = k]`: the probability rises in `q'` up to `q' = k/r`.
fn pmf_up_to(r: u64, k: u64, q: f64, ln_q: f64, ln_1mq: f64) -> f64 {
    let mode = k as f64 / r as f64;
    if q <= mode {
        ln_pmf(r, k, ln_q, ln_1mq).exp()
    } else {
        ln_pmf(r, k, mode.ln(), (-mode).ln_1p()).exp()
    }
}

/// The p-value of "`(ε, δ)`-DP" after `v` correct guesses of `r`, with `m` canaries: their
/// Theorem 3's right-hand side with the δ term made increasing in ε (module docs), at most 1.
pub fn p_value(m: u64, r: u64, v: u64, epsilon: f64, delta: f64) -> f64 {
    if v == 0 {
        return 1.0;
    }
    // q = e^ε/(1 + e^ε), with ln q and ln(1 − q) computed without cancellation.
    let ln_q = -(-epsilon).exp().ln_1p();
    let ln_1mq = -epsilon.exp().ln_1p();
    let q = ln_q.exp();
    // f(v) = P[B ≥ v] = I_q(v, r − v + 1).
    let tail = regularized_beta(q, v as f64, (r - v) as f64 + 1.0);
    let mut alpha = 0.0f64;
    if delta > 0.0 {
        let mut sum = 0.0;
        for i in 1..=v {
            sum += pmf_up_to(r, v - i, q, ln_q, ln_1mq);
            alpha = alpha.max(sum / i as f64);
        }
    }
    (tail + 2.0 * m as f64 * delta * alpha).min(1.0)
}

/// ε̂: the largest ε whose p-value after `v` correct guesses of `r` (of `m` canaries) is below
/// `beta` (0 when even ε = 0 is not rejected). The lower end of the final bisection bracket is
/// returned: its p-value was checked to be below `beta`.
pub fn epsilon_lower(m: u64, r: u64, v: u64, delta: f64, beta: f64) -> f64 {
    if p_value(m, r, v, 0.0, delta) >= beta {
        return 0.0;
    }
    let (mut lo, mut hi) = (0.0f64, 1.0f64);
    while p_value(m, r, v, hi, delta) < beta {
        lo = hi;
        hi *= 2.0;
        if hi > 1e3 {
            return lo;
        }
    }
    for _ in 0..BISECTION_STEPS {
        let mid = 0.5 * (lo + hi);
        if p_value(m, r, v, mid, delta) < beta {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    lo
}

/// The guesses of one choice: "+1" for the `plus` highest scores, "−1" for the `minus` lowest,
/// abstain on the rest.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize)]
pub struct Guesses {
    /// `k₊`.
    pub plus: u64,
    /// `k₋`.
    pub minus: u64,
    /// `r = k₊ + k₋`.
    pub guesses: u64,
    /// `v`: correct guesses.
    pub correct: u64,
    /// ε̂ of this choice at the level it was tested at.
    pub epsilon: f64,
}

/// A one-run audit's result.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct OneRunEstimate {
    /// ε̂: a lower bound on ε at `delta` with probability at least `confidence` (Theorem 3, the
    /// union bound over `tried` choices included). No assumption beyond the canaries' signs
    /// being uniform and independent.
    pub epsilon: f64,
    /// The choice that gave it.
    pub best: Guesses,
    /// `m`: canaries (each a coordinate of `S`).
    pub canaries: u64,
    /// Canaries with a score (the others were abstained on: they never contributed).
    pub scored: u64,
    /// How many guess counts were tried (the union bound's factor).
    pub tried: usize,
    /// `1 − β`.
    pub confidence: f64,
    /// δ of the hypothesis tested.
    pub delta: f64,
}

/// The guess counts tried on `scored` scores: `r = scored, scored/2, scored/4, …` down to 2,
/// split evenly between "+1" and "−1" (`k₊ = ⌈r/2⌉`, `k₋ = ⌊r/2⌋`). Fixed before the scores are
/// seen (it depends on their number only).
pub fn guess_counts(scored: u64) -> Vec<(u64, u64)> {
    let mut out = Vec::new();
    let mut r = scored;
    while r >= 2 {
        out.push((r.div_ceil(2), r / 2));
        r /= 2;
    }
    out
}

/// The audit of one run: `scores[c]` is canary `c`'s score (larger: more likely `+1`; `None`:
/// abstain), `signs[c]` its true `S_c`. Tries every [`guess_counts`] choice at level
/// `β / (number of choices)` and reports the largest ε̂ (valid by the union bound).
pub fn best_of(
    scores: &[Option<f64>],
    signs: &[bool],
    delta: f64,
    confidence: f64,
) -> OneRunEstimate {
    let m = scores.len() as u64;
    let mut ranked: Vec<(f64, bool)> = scores
        .iter()
        .zip(signs)
        .filter_map(|(s, &sign)| s.map(|s| (s, sign)))
        .collect();
    ranked.sort_by(|a, b| a.0.total_cmp(&b.0));
    let scored = ranked.len() as u64;
    let counts = guess_counts(scored);
    let beta = (1.0 - confidence) / counts.len().max(1) as f64;
    let mut best = Guesses {
        plus: 0,
        minus: 0,
        guesses: 0,
        correct: 0,
        epsilon: 0.0,
    };
    for &(plus, minus) in &counts {
        let low = ranked[..minus as usize].iter().filter(|x| !x.1).count() as u64;
        let high = ranked[ranked.len() - plus as usize..]
            .iter()
            .filter(|x| x.1)
            .count() as u64;
        let correct = low + high;
        let epsilon = epsilon_lower(m, plus + minus, correct, delta, beta);
        if epsilon > best.epsilon || best.guesses == 0 {
            best = Guesses {
                plus,
                minus,
                guesses: plus + minus,
                correct,
                epsilon,
            };
        }
    }
    OneRunEstimate {
        epsilon: best.epsilon,
        best,
        canaries: m,
        scored,
        tried: counts.len(),
        confidence,
        delta,
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)] // a failed unwrap is a failed test
mod tests {
    use super::*;
    use crate::audit::normal::gdp_epsilon;
    use dpwalk_core::noise::fill_standard_normal;
    use dpwalk_core::rng::node_rng;

    /// `m` canaries of a Gaussian mechanism with sensitivity `mu` (σ = 1): canary `c` releases
    /// `S_c·μ/2 + N(0, 1)`, so each sign is `μ`-GDP, exactly `gdp_epsilon(μ, δ)`-DP at δ.
    fn gaussian_canaries(seed: u64, m: usize, mu: f64) -> (Vec<Option<f64>>, Vec<bool>) {
        let mut rng = node_rng(seed, 1);
        let signs: Vec<bool> = (0..m)
            .map(|_| rand::RngExt::random_bool(&mut rng, 0.5))
            .collect();
        let mut noise = vec![0.0; m];
        fill_standard_normal(&mut rng, &mut noise);
        let scores = signs
            .iter()
            .zip(&noise)
            .map(|(&s, &z)| Some(if s { 0.5 * mu } else { -0.5 * mu } + z))
            .collect();
        (scores, signs)
    }

    /// On a Gaussian mechanism with known ε the one-run ε̂ stays below it on every seed, and with
    /// 10⁴ canaries it is far from nothing (measured: see the eprintln; pinned at > 1 for μ = 2,
    /// > 2 for μ = 4).
    #[test]
    fn gaussian_mechanism_is_audited_below_its_epsilon_in_one_run() {
        let delta = 1e-5;
        for &(mu, floor) in &[(1.0f64, 0.0), (2.0, 1.0), (4.0, 2.0)] {
            let truth = gdp_epsilon(mu, delta);
            for seed in 0..5 {
                let (scores, signs) = gaussian_canaries(seed, 10_000, mu);
                let est = best_of(&scores, &signs, delta, 0.95);
                eprintln!(
                    "mu = {mu}, seed {seed}: eps_hat {:.3} ({} / {} right) <= truth {truth:.3}",
                    est.epsilon, est.best.correct, est.best.guesses
                );
                assert!(est.epsilon <= truth, "mu = {mu}: {} > {truth}", est.epsilon);
                assert!(est.epsilon > floor, "mu = {mu}: {} <= {floor}", est.epsilon);
            }
        }
    }

    #[test]
    fn the_p_value_is_the_binomial_tail_at_delta_zero() {
        // r = 10 guesses, all correct: P[B ≥ 10] = q^10.
        for &eps in &[0.0f64, 0.5, 2.0] {
            let q = eps.exp() / (1.0 + eps.exp());
            let p = p_value(100, 10, 10, eps, 0.0);
            assert!((p - q.powi(10)).abs() < 1e-13 * q.powi(10).max(1e-3), "{p}");
        }
        // v = 0 proves nothing.
        assert_eq!(p_value(10, 10, 0, 1.0, 0.0), 1.0);
        // The δ term only adds: 2mδ·α with α ≥ P[B = v − 1].
        let (plain, with) = (
            p_value(1000, 50, 40, 1.0, 0.0),
            p_value(1000, 50, 40, 1.0, 1e-4),
        );
        assert!(with > plain);
    }

    #[test]
    fn epsilon_lower_inverts_the_p_value() {
        let (m, r, v, delta, beta) = (1000, 200, 170, 1e-5, 0.05);
        let eps = epsilon_lower(m, r, v, delta, beta);
        assert!(eps > 0.5, "{eps}");
        assert!(p_value(m, r, v, eps, delta) < beta);
        assert!(p_value(m, r, v, eps + 1e-6, delta) >= beta);
        // Half right is what ε = 0 predicts: nothing.
        assert_eq!(epsilon_lower(m, 200, 100, delta, beta), 0.0);
        // Monotone in the correct guesses.
        assert!(epsilon_lower(m, r, v + 10, delta, beta) > eps);
    }

    #[test]
    fn guesses_rank_by_score_and_pay_for_the_choices() {
        // Perfect scores for 64 canaries: every choice is all correct.
        let signs: Vec<bool> = (0..64).map(|c| c % 3 == 0).collect();
        let scores: Vec<Option<f64>> = signs
            .iter()
            .map(|&s| Some(if s { 1.0 } else { -1.0 }))
            .collect();
        let est = best_of(&scores, &signs, 0.0, 0.95);
        assert_eq!(est.tried, guess_counts(64).len());
        assert_eq!(est.best.correct, est.best.guesses);
        // At most the all-correct bound of r = 64 at level β/tried.
        let cap = epsilon_lower(64, 64, 64, 0.0, 0.05 / est.tried as f64);
        assert!(est.epsilon <= cap + 1e-12 && est.epsilon > 0.0);
        // Abstentions are not guessed on.
        let mut some = scores.clone();
        some[..32].iter_mut().for_each(|s| *s = None);
        assert_eq!(best_of(&some, &signs, 0.0, 0.95).scored, 32);
    }
}
