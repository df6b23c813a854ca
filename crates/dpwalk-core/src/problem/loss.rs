//! Per-record losses: numerically stable scalar functions and the value and gradient of one
//! record's loss, shared by [`super::Problem`], the prox operators and the reference solver.
//!
//! Every kernel computes on the fly (no buffers), so that `Problem::user_loss` and
//! `Problem::user_grad` allocate nothing; the multinomial gradient recomputes each logit once more
//! rather than keeping a `classes`-sized buffer.

use super::Loss;
use super::linalg::{axpy, dot};

/// `log(1 + eᶻ)` without overflow for large `z` nor loss of precision for very negative `z`.
pub(crate) fn log1pexp(z: f64) -> f64 {
    if z > 0.0 {
        z + (-z).exp().ln_1p()
    } else {
        z.exp().ln_1p()
    }
}

/// `σ(z) = 1 / (1 + e⁻ᶻ)`, evaluated on the side where the exponential cannot overflow.
pub(crate) fn sigmoid(z: f64) -> f64 {
    if z >= 0.0 {
        1.0 / (1.0 + (-z).exp())
    } else {
        let e = z.exp();
        e / (1.0 + e)
    }
}

/// `log Σ_k exp(l_k)`, shifted by the maximum so that nothing overflows.
pub(crate) fn log_sum_exp(logits: impl Iterator<Item = f64> + Clone) -> f64 {
    let max = logits.clone().fold(f64::NEG_INFINITY, f64::max);
    if !max.is_finite() {
        return max;
    }
    max + logits.map(|l| (l - max).exp()).sum::<f64>().ln()
}

/// The softmax cross-entropy `log Σ_k exp(l_k) − l_y` of the label `y`, without the cancellation
/// of that difference: when the label's logit is the largest and the record is fitted well the loss
/// is tiny (`≈ Σ_{k≠y} e^{l_k − l_y}`) while both terms are large, and the difference would keep
/// only `ε·|l_y|` of absolute precision, too little for the prox's line search to see a decrease
/// (a multinomial prox then stalled far from its tolerance). As `log1pexp` does for two classes,
/// this sums the other classes' exponentials relative to the label's logit and takes `ln_1p`.
pub(crate) fn cross_entropy(logits: impl Iterator<Item = f64> + Clone, y: usize) -> f64 {
    // One pass for the label's logit and the maximum, one for the sum: as many as log_sum_exp.
    let (label, max) = logits
        .clone()
        .enumerate()
        .fold((None, f64::NEG_INFINITY), |(label, max), (k, l)| {
            (if k == y { Some(l) } else { label }, max.max(l))
        });
    let Some(label) = label else {
        return f64::NAN;
    };
    if !max.is_finite() || !label.is_finite() {
        return log_sum_exp(logits) - label;
    }
    if label >= max {
        logits
            .enumerate()
            .filter(|&(k, _)| k != y)
            .map(|(_, l)| (l - label).exp())
            .sum::<f64>()
            .ln_1p()
    } else {
        // Both parts are positive: no cancellation.
        (max - label) + logits.map(|l| (l - max).exp()).sum::<f64>().ln()
    }
}

/// The class of a multinomial label, if it is an integer in `0..classes`.
pub(crate) fn class_index(label: f64, classes: usize) -> Option<usize> {
    (label >= 0.0 && label.fract() == 0.0 && label < classes as f64).then_some(label as usize)
}

/// The logits `x_kᵀa` of one record, class by class (`x` row-major by class).
fn logits<'a>(x: &'a [f64], a: &'a [f64]) -> impl Iterator<Item = f64> + Clone + 'a {
    x.chunks_exact(a.len()).map(move |xk| dot(xk, a))
}

/// A model's prediction for one record (see [`Loss::predict`]).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Prediction {
    /// Squared: `aᵀx`. Logistic: `+1` when `aᵀx > 0`, else `−1`. Multinomial: the first class of
    /// largest logit.
    pub label: f64,
    /// Logistic: `P(y = +1) = σ(aᵀx)`; multinomial: the softmax probability of the predicted
    /// class; squared: none.
    pub probability: Option<f64>,
}

impl Loss {
    /// The prediction of model `x` for features `a` (`x` of the loss's model dimension for
    /// `a.len()` features).
    pub fn predict(self, a: &[f64], x: &[f64]) -> Prediction {
        match self {
            Loss::Squared => Prediction {
                label: dot(a, x),
                probability: None,
            },
            Loss::Logistic => {
                let t = dot(a, x);
                Prediction {
                    label: if t > 0.0 { 1.0 } else { -1.0 },
                    probability: Some(sigmoid(t)),
                }
            }
            Loss::Multinomial { .. } => {
                let (best, best_logit) =
                    logits(x, a)
                        .enumerate()
                        .fold((0, f64::NEG_INFINITY), |(bk, bl), (k, l)| {
                            if l > bl { (k, l) } else { (bk, bl) }
                        });
                Prediction {
                    label: best as f64,
                    probability: Some((best_logit - log_sum_exp(logits(x, a))).exp()),
                }
            }
        }
    }

    /// A bound on `‖∇ℓ(x; a, b)‖₂ / ‖a‖₂` that holds for every model `x` and every valid label
    /// `b`, `None` when there is none. Logistic: the gradient is `−b·σ(−b aᵀx)·a` with `|b| = 1`
    /// and `σ ∈ (0, 1)`, so 1. Multinomial: it is `(p − e_y) ⊗ a` with `p` a probability vector,
    /// and `‖p − e_y‖₂² = (1 − p_y)² + Σ_{k≠y} p_k² ≤ 2(1 − p_y)² ≤ 2`, so `√2`. Squared: the
    /// residual `aᵀx − b` is unbounded, so no bound without a bounded model domain.
    pub fn record_grad_factor(self) -> Option<f64> {
        match self {
            Loss::Squared => None,
            Loss::Logistic => Some(1.0),
            Loss::Multinomial { .. } => Some(std::f64::consts::SQRT_2),
        }
    }

    /// `G₂` for records of feature norm at most `feature_norm`: [`Loss::record_grad_factor`]
    /// times it; `None` for the squared loss.
    pub fn record_grad_bound(self, feature_norm: f64) -> Option<f64> {
        Some(self.record_grad_factor()? * feature_norm)
    }

    /// The model dimension for `n_features` features, `None` on overflow.
    pub(crate) fn model_dim(self, n_features: usize) -> Option<usize> {
        match self {
            Loss::Squared | Loss::Logistic => Some(n_features),
            Loss::Multinomial { classes } => classes.checked_mul(n_features),
        }
    }

    /// The loss of one record `(a, b)` at `x`. A multinomial label that is not a valid class (only
    /// possible on unvalidated test data) gives NaN.
    pub(crate) fn record_loss(self, a: &[f64], b: f64, x: &[f64]) -> f64 {
        match self {
            Loss::Squared => 0.5 * (dot(a, x) - b).powi(2),
            Loss::Logistic => log1pexp(-b * dot(a, x)),
            Loss::Multinomial { classes } => match class_index(b, classes) {
                Some(y) => cross_entropy(logits(x, a), y),
                None => f64::NAN,
            },
        }
    }

    /// Adds `weight · ∇ℓ(x; a, b)` to `out` and returns `ℓ(x; a, b)`. Labels are validated.
    pub(crate) fn add_record_grad(
        self,
        a: &[f64],
        b: f64,
        x: &[f64],
        weight: f64,
        out: &mut [f64],
    ) -> f64 {
        match self {
            Loss::Squared => {
                let r = dot(a, x) - b;
                axpy(weight * r, a, out);
                0.5 * r * r
            }
            Loss::Logistic => {
                let t = b * dot(a, x);
                axpy(-weight * b * sigmoid(-t), a, out);
                log1pexp(-t)
            }
            Loss::Multinomial { classes } => {
                let y = class_index(b, classes).unwrap_or(usize::MAX);
                let lse = log_sum_exp(logits(x, a));
                let mut label_logit = f64::NAN;
                let p = a.len();
                for (k, (xk, gk)) in x.chunks_exact(p).zip(out.chunks_exact_mut(p)).enumerate() {
                    let l = dot(xk, a);
                    let target = if k == y {
                        label_logit = l;
                        1.0
                    } else {
                        0.0
                    };
                    axpy(weight * ((l - lse).exp() - target), a, gk);
                }
                lse - label_logit
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stable_scalars_at_extremes() {
        assert_eq!(log1pexp(1000.0), 1000.0);
        assert!((log1pexp(-1000.0)).abs() < 1e-300);
        assert!((log1pexp(0.0) - 2f64.ln()).abs() < 1e-15);
        assert!((log1pexp(-40.0) - (-40f64).exp()).abs() < 1e-30);
        assert_eq!(sigmoid(1000.0), 1.0);
        assert_eq!(sigmoid(-1000.0), 0.0);
        assert!((sigmoid(2.0) + sigmoid(-2.0) - 1.0).abs() < 1e-15);
        let lse = log_sum_exp([1000.0, 1000.0].into_iter());
        assert!((lse - (1000.0 + 2f64.ln())).abs() < 1e-12);
    }

    #[test]
    fn cross_entropy_keeps_its_precision_when_the_label_dominates() {
        // Two classes: the cross-entropy is log1pexp of the margin, computed independently.
        for (l0, l1) in [
            (-18.0, 2.0),
            (0.3, -0.2),
            (40.0, 1.0),
            (-1e3, 1e3),
            (5.0, 5.0),
        ] {
            for (y, margin) in [(0, l1 - l0), (1, l0 - l1)] {
                let got = cross_entropy([l0, l1].into_iter(), y);
                let want = log1pexp(margin);
                assert!(
                    (got - want).abs() <= 4.0 * f64::EPSILON * want,
                    "logits ({l0}, {l1}), label {y}: {got:e} vs {want:e}"
                );
            }
        }
        // The naive difference loses this value entirely: e^{-40} next to a logit of 40.
        let naive = log_sum_exp([40.0, 0.0, -5.0].into_iter()) - 40.0;
        let exact = ((-40f64).exp() + (-45f64).exp()).ln_1p();
        assert!((cross_entropy([40.0, 0.0, -5.0].into_iter(), 0) - exact).abs() <= 1e-15 * exact);
        assert!(
            (naive - exact).abs() > 1e-3 * exact,
            "the naive form was not the problem"
        );
        assert!(cross_entropy([1.0, 2.0].into_iter(), 2).is_nan());
    }

    #[test]
    fn class_index_accepts_only_integer_classes() {
        assert_eq!(class_index(0.0, 3), Some(0));
        assert_eq!(class_index(2.0, 3), Some(2));
        assert_eq!(class_index(3.0, 3), None);
        assert_eq!(class_index(1.5, 3), None);
        assert_eq!(class_index(-1.0, 3), None);
        assert_eq!(class_index(f64::NAN, 3), None);
    }
}
