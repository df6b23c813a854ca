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
        return Err(DataError::Param(format!(
            "test fraction must be in (0, 1), got {test_fraction}"
        )));
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

#[cfg(test)]
#[allow(clippy::unwrap_used)] // a failed unwrap is a failed test
mod tests {
    use super::*;
    use crate::data::LabelKind;
    use crate::rng::node_rng;

    /// Row `r` has features `[r, -r]` and label `r`, so rows can be traced.
    pub(crate) fn traced(n: usize) -> Dataset {
        Dataset {
            features: (0..n).flat_map(|r| [r as f64, -(r as f64)]).collect(),
            labels: (0..n).map(|r| r as f64).collect(),
            n_features: 2,
            label_kind: LabelKind::Real,
        }
    }

    #[test]
    fn split_is_a_seeded_partition_of_the_rows() {
        let d = traced(10);
        let (train, test) = train_test(&d, 0.3, &mut node_rng(1, 0)).unwrap();
        assert_eq!((train.rows(), test.rows()), (7, 3));
        let mut all: Vec<f64> = train.labels.iter().chain(&test.labels).copied().collect();
        all.sort_by(f64::total_cmp);
        assert_eq!(all, d.labels);
        for s in [&train, &test] {
            assert!((0..s.rows()).all(|r| s.row(r) == [s.labels[r], -s.labels[r]]));
        }
        let again = train_test(&d, 0.3, &mut node_rng(1, 0)).unwrap();
        assert_eq!(again.1, test);
        let other = train_test(&d, 0.3, &mut node_rng(2, 0)).unwrap();
        assert_ne!(other.1, test);
    }

    #[test]
    fn split_rejects_empty_sides() {
        for f in [0.0, 1.0, -0.1, f64::NAN, 0.01, 0.99] {
            assert!(matches!(
                train_test(&traced(10), f, &mut node_rng(1, 0)),
                Err(DataError::Param(_))
            ));
        }
    }
}
