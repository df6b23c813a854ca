//! The regularizer `r(x) = l1 ‖x‖₁ + (l2/2) ‖x‖²` (every variant is a special case) and its prox.

use super::{ProblemError, Regularizer};

impl Regularizer {
    /// The weights `(l1, l2)` of `l1 ‖x‖₁ + (l2/2) ‖x‖²`.
    fn weights(&self) -> (f64, f64) {
        match *self {
            Regularizer::None => (0.0, 0.0),
            Regularizer::L2 { l2 } => (0.0, l2),
            Regularizer::L1 { l1 } => (l1, 0.0),
            Regularizer::ElasticNet { l1, l2 } => (l1, l2),
        }
    }

    /// Checks that every weight is finite and non-negative (a negative weight makes `r`
    /// non-convex and its prox meaningless).
    pub fn validate(&self) -> Result<(), ProblemError> {
        let (l1, l2) = self.weights();
        for (name, value) in [("l1", l1), ("l2", l2)] {
            if !(value.is_finite() && value >= 0.0) {
                return Err(ProblemError::RegularizerWeight { name, value });
            }
        }
        Ok(())
    }

    /// `r(x)`.
    pub fn value(&self, x: &[f64]) -> f64 {
        let (l1, l2) = self.weights();
        let mut value = 0.0;
        if l1 != 0.0 {
            value += l1 * x.iter().map(|v| v.abs()).sum::<f64>();
        }
        if l2 != 0.0 {
            value += 0.5 * l2 * x.iter().map(|v| v * v).sum::<f64>();
        }
        value
    }

    /// `out = prox_{t r}(v) = argmin_x t r(x) + ½‖x − v‖²`, for `t > 0`.
    ///
    /// Coordinate-wise, `x = soft(v, t·l1) / (1 + t·l2)`: soft-thresholding, scaling, or both
    /// (elastic net), and the identity for `r = 0`. A NaN in `v` stays NaN rather than being
    /// thresholded to 0, so a corrupted model is not silently repaired.
    pub fn prox(&self, t: f64, v: &[f64], out: &mut [f64]) {
        debug_assert_eq!(v.len(), out.len());
        let (l1, l2) = self.weights();
        let tau = t * l1;
        let scale = 1.0 / (1.0 + t * l2);
        for (o, &vk) in out.iter_mut().zip(v) {
            *o = if vk.abs() <= tau {
                0.0
            } else {
                (vk - tau.copysign(vk)) * scale
            };
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::problem::test_util::any_regularizer;
    use proptest::prelude::*;

    proptest! {
        /// `x = prox_{t r}(v)` iff `(v − x)/t ∈ ∂r(x)`, coordinate by coordinate.
        #[test]
        fn prox_satisfies_the_subgradient_condition(
            reg in any_regularizer(),
            t in 1e-3f64..100.0,
            v in proptest::collection::vec(-20.0f64..20.0, 1..20),
        ) {
            let mut x = vec![f64::NAN; v.len()];
            reg.prox(t, &v, &mut x);
            let (l1, l2) = reg.weights();
            for (&xk, &vk) in x.iter().zip(&v) {
                let s = (vk - xk) / t;
                let tol = 1e-9 * (1.0 + vk.abs() / t);
                if xk == 0.0 {
                    prop_assert!(s.abs() <= l1 + tol, "|{s}| > l1 = {l1} at a zero coordinate");
                } else {
                    let expected = l1 * xk.signum() + l2 * xk;
                    prop_assert!((s - expected).abs() <= tol, "{s} vs {expected}");
                }
            }
        }
    }

    #[test]
    fn value_of_each_variant() {
        let x = [1.0, -2.0];
        assert_eq!(Regularizer::None.value(&x), 0.0);
        assert_eq!(Regularizer::L1 { l1: 0.5 }.value(&x), 1.5);
        assert_eq!(Regularizer::L2 { l2: 2.0 }.value(&x), 5.0);
        assert_eq!(Regularizer::ElasticNet { l1: 0.5, l2: 2.0 }.value(&x), 6.5);
    }

    #[test]
    fn prox_keeps_nan() {
        let mut out = [0.0];
        Regularizer::L1 { l1: 1.0 }.prox(1.0, &[f64::NAN], &mut out);
        assert!(out[0].is_nan());
    }

    #[test]
    fn validate_rejects_bad_weights() {
        assert!(Regularizer::L1 { l1: 0.0 }.validate().is_ok());
        assert_eq!(
            Regularizer::ElasticNet { l1: 1.0, l2: -1.0 }.validate(),
            Err(ProblemError::RegularizerWeight {
                name: "l2",
                value: -1.0
            })
        );
        assert!(matches!(
            Regularizer::L1 { l1: f64::INFINITY }.validate(),
            Err(ProblemError::RegularizerWeight { name: "l1", .. })
        ));
        assert!(Regularizer::L2 { l2: f64::NAN }.validate().is_err());
    }
}
