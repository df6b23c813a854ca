//! Row selection and the seeded train/test split.

use super::{DataError, Dataset};
use crate::rng::NodeRng;
use rand::seq::SliceRandom;

impl Dataset {
    /// A new dataset made of the given rows, in the given order (indices must be `< rows()`).
    pub fn select(&self, rows: &[usize]) -> Dataset {
        let mut features = Vec::with_capacity(rows.len() * self.n_features);
        for &r in rows {
            features.extend_from_slice(self.row(r));
        }
        Dataset {
            features,
            labels: rows.iter().map(|&r| self.labels[r]).collect(),
            n_features: self.n_features,
            label_kind: self.label_kind,
        }
    }
}

/// Splits `data` into `(train, test)` after a uniform shuffle: `round(test_fraction · rows)` rows
/// go to the test set, both sets must be non-empty.
pub fn train_test(
    data: &Dataset,
    test_fraction: f64,
    rng: &mut NodeRng,
) -> Result<(Dataset, Dataset), DataError> {
    if !(test_fraction > 0.0 && test_fraction < 1.0) {
        return Err(DataError::Param(format!("test fraction must be in (0, 1), got {test_fraction}")));
    }
    let n = data.rows();
    let n_test = (test_fraction * n as f64).round() as usize;
    if n_test == 0 || n_test >= n {
        return Err(DataError::Param(format!(
            "a test fraction of {test_fraction} of {n} rows leaves an empty train or test set"
        )));
    }
    let mut order: Vec<usize> = (0..n).collect();
    order.shuffle(rng);
    let (test, train) = order.split_at(n_test);
    Ok((data.select(train), data.select(test)))
}
