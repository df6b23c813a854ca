//! Datasets: loaders, synthetic generators, train/test split, partition among users.
//!
//! Layout:
//! - this file: the in-memory types every loader produces and every problem consumes;
//! - [`error`]: [`DataError`], naming the file and line of every malformed input;
//! - loaders: [`csv`], [`libsvm`], [`adult`] (raw UCI Adult with the standard preprocessing),
//!   [`mnist`] (MNIST as CSV); all gunzip transparently when the path ends in `.gz`;
//! - [`labels`]: label columns to `f64` labels, fitted on a training file, reused on its test file;
//! - [`preprocess`]: max-abs column scaling and row-norm clipping;
//! - [`synthetic`]: the paper's Lasso data and a logistic generator, with their ground truth;
//! - [`split`]: row selection and the seeded train/test split;
//! - [`partition`]: iid, label-skew and Dirichlet partitions among users;
//! - [`spec`]: the scenario's `[data]` and `[partition]` tables ([`DataSpec`], [`PartitionSpec`]).
//!
//! Conventions (every loader and generator follows them, every problem relies on them):
//! - features are dense `f64`, row-major, `n_features` per row;
//! - labels are `f64`: real values for regression, `+1.0 / -1.0` for binary classification,
//!   `0.0, 1.0, …, (k-1) as f64` for `k`-class classification.

use serde::{Deserialize, Serialize};

pub mod adult;
pub mod csv;
pub mod error;
pub mod labels;
pub mod libsvm;
pub mod mnist;
pub mod partition;
pub mod preprocess;
mod read;
pub mod spec;
pub mod split;
pub mod synthetic;
#[cfg(test)]
#[allow(clippy::unwrap_used)] // test fixtures: a failed unwrap is a failed test
mod testutil;

pub use error::DataError;
pub use spec::{DataSpec, LoadedData, PartitionSpec};

/// What the labels of a dataset mean.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum LabelKind {
    /// Real-valued targets (least squares).
    Real,
    /// `+1.0 / -1.0` (binary logistic regression).
    Binary,
    /// `0.0 … (classes-1) as f64` (multinomial logistic regression).
    Classes(usize),
}

/// A dense dataset: `labels.len()` rows of `n_features` features.
#[derive(Debug, Clone, PartialEq)]
pub struct Dataset {
    /// Row-major features, `rows() * n_features` values.
    pub features: Vec<f64>,
    /// One label per row (see the module conventions).
    pub labels: Vec<f64>,
    /// Number of features per row.
    pub n_features: usize,
    /// What the labels mean.
    pub label_kind: LabelKind,
}

impl Dataset {
    /// Number of rows.
    pub fn rows(&self) -> usize {
        self.labels.len()
    }

    /// Features of row `r`.
    pub fn row(&self, r: usize) -> &[f64] {
        &self.features[r * self.n_features..(r + 1) * self.n_features]
    }

    /// The share of rows whose label is not `label`: the error rate of predicting `label` for
    /// every row (NaN without rows).
    pub fn share_not_labelled(&self, label: f64) -> f64 {
        let other = self.labels.iter().filter(|&&l| l != label).count();
        other as f64 / self.rows() as f64
    }
}

/// Training data grouped by user: user `i` owns rows `offsets[i]..offsets[i + 1]` of `data`.
///
/// Records of one user are contiguous so that a step touches one slice, and so that a million
/// users cost two vectors, not a million.
#[derive(Debug, Clone, PartialEq)]
pub struct UserData {
    /// The rows, reordered so that each user's rows are contiguous.
    pub data: Dataset,
    /// `n_users + 1` row offsets, non-decreasing, `offsets[0] = 0`, last = `data.rows()`.
    pub offsets: Vec<usize>,
}

impl UserData {
    /// Number of users.
    pub fn n_users(&self) -> usize {
        self.offsets.len().saturating_sub(1)
    }

    /// The row range of user `i`.
    pub fn range(&self, user: usize) -> std::ops::Range<usize> {
        self.offsets[user]..self.offsets[user + 1]
    }

    /// Number of records of user `i`.
    pub fn records(&self, user: usize) -> usize {
        self.offsets[user + 1] - self.offsets[user]
    }

    /// Features of user `i`, row-major (`records(i) * n_features` values).
    pub fn features(&self, user: usize) -> &[f64] {
        let p = self.data.n_features;
        &self.data.features[self.offsets[user] * p..self.offsets[user + 1] * p]
    }

    /// Labels of user `i`.
    pub fn labels(&self, user: usize) -> &[f64] {
        &self.data.labels[self.range(user)]
    }
}
