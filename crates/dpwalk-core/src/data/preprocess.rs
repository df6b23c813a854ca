//! Feature scaling shared by the loaders: per-column max-abs scaling fitted on a training split,
//! and per-row L2 clipping.
//!
//! Both matter for privacy-utility, not for privacy: the step's clip bounds sensitivity whatever
//! the data, but rows of norm ≤ 1 keep the clip from biting and make one `C` fit every dataset.

use super::{DataError, Dataset};

/// Divides each column by its largest absolute value on the data it was fitted on.
///
/// Fitted on the training split and applied unchanged to the test split, so that both live in the
/// same coordinates (test values may then exceed 1 in magnitude). An all-zero column is left as
/// is (its factor is 1).
#[derive(Debug, Clone, PartialEq)]
pub struct MaxAbsScaler {
    factors: Vec<f64>,
}

impl MaxAbsScaler {
    /// Fits the factors on `data`.
    pub fn fit(data: &Dataset) -> Self {
        let mut max = vec![0.0f64; data.n_features];
        for row in data.features.chunks_exact(data.n_features) {
            for (m, v) in max.iter_mut().zip(row) {
                *m = m.max(v.abs());
            }
        }
        let factors = max
            .into_iter()
            .map(|m| if m > 0.0 { 1.0 / m } else { 1.0 })
            .collect();
        MaxAbsScaler { factors }
    }

    /// Scales `data` in place; its feature count must be the fitted one.
    pub fn apply(&self, data: &mut Dataset) -> Result<(), DataError> {
        if data.n_features != self.factors.len() {
            return Err(DataError::Param(format!(
                "scaler fitted on {} features applied to {}",
                self.factors.len(),
                data.n_features
            )));
        }
        for row in data.features.chunks_exact_mut(data.n_features) {
            for (v, f) in row.iter_mut().zip(&self.factors) {
                *v *= f;
            }
        }
        Ok(())
    }
}

/// Scales every row whose L2 norm exceeds `max_norm` down to norm `max_norm` (shorter rows are
/// left alone); `max_norm` must be positive and finite.
pub fn clip_row_norms(data: &mut Dataset, max_norm: f64) -> Result<(), DataError> {
    if !(max_norm > 0.0 && max_norm.is_finite()) {
        return Err(DataError::Param(format!(
            "max row norm must be positive, got {max_norm}"
        )));
    }
    for row in data.features.chunks_exact_mut(data.n_features) {
        let norm = row.iter().map(|v| v * v).sum::<f64>().sqrt();
        if norm > max_norm {
            let f = max_norm / norm;
            row.iter_mut().for_each(|v| *v *= f);
        }
    }
    Ok(())
}

/// Optional preprocessing of a real dataset, fitted on the training split.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct Preprocess {
    /// Max-abs scale the columns (fitted on train, applied to test).
    pub max_abs_scale: bool,
    /// Clip rows to this L2 norm.
    pub max_row_norm: Option<f64>,
}

impl Preprocess {
    /// Applies the preprocessing to a training split and, with the training split's statistics,
    /// to its test split.
    pub fn apply(
        &self,
        train: &mut Dataset,
        mut test: Option<&mut Dataset>,
    ) -> Result<(), DataError> {
        if self.max_abs_scale {
            let scaler = MaxAbsScaler::fit(train);
            scaler.apply(train)?;
            if let Some(t) = test.as_deref_mut() {
                scaler.apply(t)?;
            }
        }
        if let Some(norm) = self.max_row_norm {
            clip_row_norms(train, norm)?;
            if let Some(t) = test {
                clip_row_norms(t, norm)?;
            }
        }
        Ok(())
    }
}
