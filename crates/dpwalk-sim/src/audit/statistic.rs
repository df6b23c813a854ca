//! What each attacker computes from a trial's [`Transcript`]: one number per run, larger in
//! world 1.
//!
//! - **first arrival**: the canary coordinate `⟨w, d⟩` of the first token the attacker sees after
//!   the contribution (local: the token the canary sends; network: the first token the observer
//!   receives, or the final model if the token never reaches it; central: the final model).
//! - **hop-weighted first arrival** (network view): the same value divided by its hop count `M`
//!   (the observer reads it from the token's `seq`; without an arrival, the final model divided by
//!   `K`). With noise that grows linearly in the hops and a shift that stays, this is the
//!   direction of the Gaussian likelihood ratio given `M`: the attack the accountant's mixture
//!   bound is exact for.
//! - **composed** (composition mode, several contributions of the canary): the sum over its
//!   contributions of the first value the attacker sees after each (local: the change each made
//!   to the token; network: the first token the observer receives after it).
//! - **transcript**: a linear score over everything the attacker sees (the first
//!   [`KEPT_TOKENS`] tokens or arrivals one by one, the rest summed, the arrivals also divided by
//!   their hop counts, and the final model), with
//!   Fisher's discriminant weights `Σ⁻¹(μ₁ − μ₀)` fitted on the **selection half** of the runs
//!   only ([`super::estimate::selection_len`]), so the evaluation half still bounds a fixed test.
//!   It can see the hidden-state channel (the canary's trace that users visited after it return
//!   to the token at their later visits), which the first arrival cannot.

use super::estimate::selection_len;
use super::trial::{KEPT_TOKENS, Transcript};
use serde::Serialize;

/// Who attacks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum View {
    /// An eavesdropper on every token.
    Local,
    /// Observer `j`: the tokens it receives and the final model.
    Network,
    /// The final model only.
    Central,
}

impl View {
    /// The CLI and file name.
    pub fn as_str(&self) -> &'static str {
        match self {
            View::Local => "local",
            View::Network => "network",
            View::Central => "central",
        }
    }
}

/// What the attacker computes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Statistic {
    /// The canary coordinate at the first token seen after the contribution.
    FirstArrival,
    /// The first arrival divided by its hop count (network view).
    HopWeighted,
    /// A linear score over the whole transcript.
    Transcript,
    /// The sum over the canary's contributions of the first value seen after each.
    Composed,
}

impl Statistic {
    /// The file name.
    pub fn as_str(&self) -> &'static str {
        match self {
            Statistic::FirstArrival => "first-arrival",
            Statistic::HopWeighted => "hop-weighted",
            Statistic::Transcript => "transcript",
            Statistic::Composed => "composed",
        }
    }

    /// The statistics that differ for `view` (the central view sees one number).
    pub fn for_view(view: View) -> &'static [Statistic] {
        match view {
            View::Local => &[Statistic::FirstArrival, Statistic::Transcript],
            View::Network => &[
                Statistic::FirstArrival,
                Statistic::HopWeighted,
                Statistic::Transcript,
            ],
            View::Central => &[Statistic::FirstArrival],
        }
    }

    /// The statistics of `view` when the canary contributes `contributions` times: those of
    /// [`Statistic::for_view`], and the composed sum where there are several to sum.
    pub fn for_contributions(view: View, contributions: u64) -> Vec<Statistic> {
        let mut out = Self::for_view(view).to_vec();
        if contributions > 1 && view != View::Central {
            out.push(Statistic::Composed);
        }
        out
    }
}

/// The sum over the canary's contributions of the first value the attacker of `view` sees after
/// each (the final model for the central view).
fn composed(view: View, t: &Transcript) -> f64 {
    match view {
        View::Local => t.sent_sum,
        View::Network => t.arrival_sum,
        View::Central => t.final_model,
    }
}

/// The first value the attacker of `view` sees.
pub fn first(view: View, t: &Transcript) -> f64 {
    match view {
        View::Local => t.tokens[0],
        View::Network if t.arrival_count > 0 => t.arrivals[0],
        View::Network | View::Central => t.final_model,
    }
}

/// The first arrival divided by its hop count (the final model divided by `steps` without one).
fn hop_weighted(t: &Transcript, steps: u64) -> f64 {
    if t.arrival_count > 0 {
        t.weighted_arrivals[0]
    } else {
        t.final_model / steps.max(1) as f64
    }
}

/// Everything the attacker of `view` sees, as features.
fn features(view: View, t: &Transcript) -> Vec<f64> {
    let seen: &[f64] = match view {
        View::Local => &t.tokens,
        View::Network => &t.arrivals,
        View::Central => &[],
    };
    let mut f = Vec::with_capacity(2 * KEPT_TOKENS + 3);
    f.extend_from_slice(seen);
    if view == View::Network {
        f.extend_from_slice(&t.weighted_arrivals);
    }
    f.push(t.final_model);
    f
}

/// Solves `A x = b` for a symmetric positive definite `A` (row-major `m × m`) by Cholesky;
/// `None` when `A` is not positive definite.
fn cholesky_solve(mut a: Vec<f64>, mut b: Vec<f64>) -> Option<Vec<f64>> {
    let m = b.len();
    for j in 0..m {
        let mut d = a[j * m + j];
        for k in 0..j {
            d -= a[j * m + k] * a[j * m + k];
        }
        if d.is_nan() || d <= 0.0 {
            return None;
        }
        let d = d.sqrt();
        a[j * m + j] = d;
        for i in j + 1..m {
            let mut s = a[i * m + j];
            for k in 0..j {
                s -= a[i * m + k] * a[j * m + k];
            }
            a[i * m + j] = s / d;
        }
    }
    for i in 0..m {
        let mut s = b[i];
        for k in 0..i {
            s -= a[i * m + k] * b[k];
        }
        b[i] = s / a[i * m + i];
    }
    for i in (0..m).rev() {
        let mut s = b[i];
        for k in i + 1..m {
            s -= a[k * m + i] * b[k];
        }
        b[i] = s / a[i * m + i];
    }
    Some(b)
}

/// Fisher's discriminant weights from two samples of feature vectors: `(S + ρI)⁻¹(μ₁ − μ₀)`
/// with the pooled covariance `S` and a small ridge `ρ` (features that never vary, such as
/// arrivals that never happen, would make `S` singular). Zero weights when nothing varies.
pub fn fisher_weights(zero: &[Vec<f64>], one: &[Vec<f64>]) -> Vec<f64> {
    let m = zero.first().or(one.first()).map_or(0, Vec::len);
    let mean = |xs: &[Vec<f64>]| {
        let mut mu = vec![0.0; m];
        for x in xs {
            mu.iter_mut().zip(x).for_each(|(a, b)| *a += b);
        }
        mu.iter_mut().for_each(|a| *a /= xs.len().max(1) as f64);
        mu
    };
    let (mu0, mu1) = (mean(zero), mean(one));
    let mut s = vec![0.0; m * m];
    for (xs, mu) in [(zero, &mu0), (one, &mu1)] {
        for x in xs {
            for i in 0..m {
                for j in 0..m {
                    s[i * m + j] += (x[i] - mu[i]) * (x[j] - mu[j]);
                }
            }
        }
    }
    let count = (zero.len() + one.len()).saturating_sub(2).max(1) as f64;
    s.iter_mut().for_each(|v| *v /= count);
    let trace: f64 = (0..m).map(|i| s[i * m + i]).sum();
    if trace.is_nan() || trace <= 0.0 {
        return vec![0.0; m];
    }
    let ridge = 1e-9 * trace / m as f64;
    (0..m).for_each(|i| s[i * m + i] += ridge);
    let diff: Vec<f64> = mu1.iter().zip(&mu0).map(|(a, b)| a - b).collect();
    cholesky_solve(s, diff).unwrap_or_else(|| vec![0.0; m])
}

/// The statistic of every run of both worlds (trials of `steps` hops); for the transcript score,
/// also its weights.
pub fn scores(
    view: View,
    statistic: Statistic,
    worlds: [&[Transcript]; 2],
    steps: u64,
) -> ([Vec<f64>; 2], Option<Vec<f64>>) {
    match statistic {
        Statistic::FirstArrival => (
            worlds.map(|runs| runs.iter().map(|t| first(view, t)).collect()),
            None,
        ),
        Statistic::Composed => (
            worlds.map(|runs| runs.iter().map(|t| composed(view, t)).collect()),
            None,
        ),
        Statistic::HopWeighted => (
            worlds.map(|runs| runs.iter().map(|t| hop_weighted(t, steps)).collect()),
            None,
        ),
        Statistic::Transcript => {
            let feats =
                worlds.map(|runs| runs.iter().map(|t| features(view, t)).collect::<Vec<_>>());
            let weights = fisher_weights(
                &feats[0][..selection_len(feats[0].len())],
                &feats[1][..selection_len(feats[1].len())],
            );
            let score = |f: &Vec<f64>| f.iter().zip(&weights).map(|(a, b)| a * b).sum::<f64>();
            (
                [
                    feats[0].iter().map(score).collect(),
                    feats[1].iter().map(score).collect(),
                ],
                Some(weights),
            )
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)] // a failed unwrap is a failed test
mod tests {
    use super::*;

    #[test]
    fn cholesky_solves_a_small_system() {
        let a = vec![4.0, 2.0, 0.6, 2.0, 5.0, 1.0, 0.6, 1.0, 3.0];
        let x = cholesky_solve(a.clone(), vec![1.0, 2.0, 3.0]).unwrap();
        for i in 0..3 {
            let r: f64 = (0..3).map(|k| a[i * 3 + k] * x[k]).sum();
            assert!((r - [1.0, 2.0, 3.0][i]).abs() < 1e-12);
        }
        assert!(cholesky_solve(vec![0.0, 0.0, 0.0, 1.0], vec![1.0, 1.0]).is_none());
    }

    #[test]
    fn each_view_reads_what_its_attacker_sees() {
        let mut t = Transcript {
            final_model: 8.0,
            ..Transcript::default()
        };
        t.tokens[0] = 1.0;
        // No arrival: the observer has only the final model (divided by K when hop-weighted).
        assert_eq!(first(View::Local, &t), 1.0);
        assert_eq!(first(View::Network, &t), 8.0);
        assert_eq!(hop_weighted(&t, 4), 2.0);
        assert_eq!(first(View::Central, &t), 8.0);
        t.arrival_count = 1;
        t.first_hop = 3;
        t.arrivals[0] = 6.0;
        t.weighted_arrivals[0] = 2.0;
        assert_eq!(first(View::Network, &t), 6.0);
        assert_eq!(hop_weighted(&t, 4), 2.0);
        assert_eq!(features(View::Central, &t), vec![8.0]);
        assert_eq!(features(View::Network, &t).len(), 2 * (KEPT_TOKENS + 1) + 1);
    }

    #[test]
    fn fisher_weights_find_the_informative_feature() {
        // Feature 0 separates the worlds, feature 1 is noise, feature 2 never varies.
        let zero: Vec<Vec<f64>> = (0..100)
            .map(|k| vec![0.0 + (k % 7) as f64 * 0.01, (k % 5) as f64, 3.0])
            .collect();
        let one: Vec<Vec<f64>> = (0..100)
            .map(|k| vec![1.0 + (k % 7) as f64 * 0.01, (k % 5) as f64, 3.0])
            .collect();
        let w = fisher_weights(&zero, &one);
        assert!(w[0] > 100.0 * w[1].abs(), "{w:?}");
        assert_eq!(fisher_weights(&[vec![1.0]], &[vec![1.0]]), vec![0.0]);
    }
}
