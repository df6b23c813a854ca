//! Seeded synthetic datasets that come with their ground truth: the paper's sparse linear
//! regression (Lasso) data and a binary logistic model for quick tests.
//!
//! # The paper's Lasso data
//! Cyffers, Bellet & Basu (ICML 2023), Section 6 / Appendix E: `n = 1000` rows in dimension
//! `p = 64`, a ground truth `x*` with 8 nonzero entries, labels `b = aᵀx* + N(0, 0.01)`.
//! - **Noise.** `N(0, 0.01)` is read as *variance* 0.01, i.e. standard deviation 0.1: that is
//!   the usual meaning of the notation and exactly what the authors' code does
//!   (`totilas/padadmm`, `main.py`: `make_gaussian(n, p, 8, noise=1e-1)`, and `data.py` adds
//!   `noise * rng.normal(size=n)`). The parameter is named `noise_std` (default 0.1) so that
//!   nobody has to guess again.
//! - **Rows.** The paper says rows are uniform on the unit sphere ([`RowDistribution::Sphere`]);
//!   the authors' code draws `N(0, I)` rows and standardizes each column to mean 0 and variance 1
//!   (scikit-learn's `StandardScaler`, population variance) ([`RowDistribution::Gaussian`]).
//!   Both are offered; the sphere is the default, as in the paper and DESIGN.md.
//! - **Nonzeros.** The authors' code draws them uniform on `[0, 1)`; we draw them uniform on
//!   `(0, 1]` ([`TruthValues::Uniform`], the default, so that exactly `sparsity` entries are
//!   nonzero) or as random signs `±1` ([`TruthValues::Sign`]). Their positions are uniform
//!   without replacement.
//!
//! # Order of draws (value stability)
//! Rows first (row by row, coordinate by coordinate, one `StandardNormal` each; a sphere row is
//! redrawn in the measure-zero event of norm 0), then the positions and values of the truth, then
//! one label draw per row in row order. Changing this order changes every dataset of every seed.

use super::{DataError, Dataset, LabelKind};
use crate::rng::NodeRng;
use rand::RngExt;
use rand::seq::SliceRandom;
use rand_distr::{Distribution, StandardNormal};
use serde::{Deserialize, Serialize};

/// How rows are drawn.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum RowDistribution {
    /// Uniform on the unit sphere (normalized `N(0, I)` draws): every row has norm 1.
    #[default]
    Sphere,
    /// `N(0, I)` rows, then each column standardized to mean 0 and variance 1 over the dataset.
    Gaussian,
}

/// How the nonzero entries of a sparse ground truth are drawn.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum TruthValues {
    /// Uniform on `(0, 1]`, as the authors' code (up to the excluded 0).
    #[default]
    Uniform,
    /// `+1` or `-1` with equal probability.
    Sign,
}

/// Parameters of the paper's sparse linear regression data (`source = "synthetic-lasso"`).
///
/// | field | default | meaning | range |
/// | --- | --- | --- | --- |
/// | `rows` | 1000 | rows generated (train and test together) | ≥ 1 |
/// | `dim` | 64 | features | ≥ 1 |
/// | `sparsity` | 8 | nonzero entries of the truth | 1..=`dim` |
/// | `noise-std` | 0.1 | standard deviation of the label noise (variance 0.01) | ≥ 0 |
/// | `row-distribution` | `"sphere"` | [`RowDistribution`] | |
/// | `truth` | `"uniform"` | [`TruthValues`] | |
/// | `test-fraction` | none | share of rows held out as a test set (used by the spec's `load`) | (0, 1) |
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, rename_all = "kebab-case", deny_unknown_fields)]
pub struct LassoSpec {
    /// Rows generated.
    pub rows: usize,
    /// Features.
    pub dim: usize,
    /// Nonzero entries of the ground truth.
    pub sparsity: usize,
    /// Standard deviation of the Gaussian label noise.
    pub noise_std: f64,
    /// How rows are drawn.
    pub row_distribution: RowDistribution,
    /// How the nonzero entries of the truth are drawn.
    pub truth: TruthValues,
    /// Share of rows held out as a test set.
    pub test_fraction: Option<f64>,
}

impl Default for LassoSpec {
    /// The paper's setting.
    fn default() -> Self {
        LassoSpec {
            rows: 1000,
            dim: 64,
            sparsity: 8,
            noise_std: 0.1,
            row_distribution: RowDistribution::Sphere,
            truth: TruthValues::Uniform,
            test_fraction: None,
        }
    }
}

/// Parameters of the synthetic binary logistic data (`source = "synthetic-logistic"`).
///
/// A dense truth `w*` (a `N(0, I)` draw, rescaled) and labels `+1` with probability
/// `1 / (1 + exp(−aᵀw*))`, else `−1`. The scale of `w*` is set so that the margin `aᵀw*` has
/// standard deviation `margin-std` over the row distribution (`‖w*‖ = margin-std · √dim` for
/// sphere rows, `margin-std` for standardized Gaussian rows): small values give nearly random
/// labels, large ones nearly separable data.
///
/// | field | default | meaning | range |
/// | --- | --- | --- | --- |
/// | `rows` | 1000 | rows generated | ≥ 1 |
/// | `dim` | 16 | features | ≥ 1 |
/// | `margin-std` | 2.0 | standard deviation of `aᵀw*` | ≥ 0 |
/// | `row-distribution` | `"sphere"` | [`RowDistribution`] | |
/// | `test-fraction` | none | held-out share | (0, 1) |
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, rename_all = "kebab-case", deny_unknown_fields)]
pub struct LogisticSpec {
    /// Rows generated.
    pub rows: usize,
    /// Features.
    pub dim: usize,
    /// Standard deviation of the margin `aᵀw*` over the row distribution.
    pub margin_std: f64,
    /// How rows are drawn.
    pub row_distribution: RowDistribution,
    /// Share of rows held out as a test set.
    pub test_fraction: Option<f64>,
}

impl Default for LogisticSpec {
    fn default() -> Self {
        LogisticSpec {
            rows: 1000,
            dim: 16,
            margin_std: 2.0,
            row_distribution: RowDistribution::Sphere,
            test_fraction: None,
        }
    }
}

/// A generated dataset and the parameter vector that generated it.
#[derive(Debug, Clone, PartialEq)]
pub struct Synthetic {
    /// The rows and labels.
    pub data: Dataset,
    /// The ground truth (`x*` or `w*`), `dim` entries.
    pub truth: Vec<f64>,
}

fn check_shape(rows: usize, dim: usize) -> Result<(), DataError> {
    if rows == 0 || dim == 0 {
        return Err(DataError::Param(format!(
            "rows and dim must be ≥ 1, got {rows} and {dim}"
        )));
    }
    Ok(())
}

fn check_nonnegative(name: &str, v: f64) -> Result<(), DataError> {
    if !(v >= 0.0 && v.is_finite()) {
        return Err(DataError::Param(format!(
            "{name} must be finite and ≥ 0, got {v}"
        )));
    }
    Ok(())
}

/// `rows × dim` row-major features drawn from `dist`.
fn draw_rows(rows: usize, dim: usize, dist: RowDistribution, rng: &mut NodeRng) -> Vec<f64> {
    let mut features = vec![0.0; rows * dim];
    for row in features.chunks_exact_mut(dim) {
        loop {
            row.iter_mut().for_each(|v| *v = StandardNormal.sample(rng));
            if dist == RowDistribution::Gaussian {
                break;
            }
            let norm = row.iter().map(|v| v * v).sum::<f64>().sqrt();
            if norm > 0.0 {
                row.iter_mut().for_each(|v| *v /= norm);
                break;
            }
        }
    }
    if dist == RowDistribution::Gaussian {
        standardize_columns(&mut features, dim);
    }
    features
}

/// Mean 0 and population variance 1 per column (a constant column is only centred).
fn standardize_columns(features: &mut [f64], dim: usize) {
    let n = (features.len() / dim) as f64;
    for j in 0..dim {
        let mean = features.iter().skip(j).step_by(dim).sum::<f64>() / n;
        let var = features
            .iter()
            .skip(j)
            .step_by(dim)
            .map(|v| (v - mean).powi(2))
            .sum::<f64>()
            / n;
        let scale = if var > 0.0 { 1.0 / var.sqrt() } else { 1.0 };
        features
            .iter_mut()
            .skip(j)
            .step_by(dim)
            .for_each(|v| *v = (*v - mean) * scale);
    }
}

fn dot(a: &[f64], b: &[f64]) -> f64 {
    a.iter().zip(b).map(|(x, y)| x * y).sum()
}

/// The paper's sparse linear regression data (see the module docs).
pub fn lasso(spec: &LassoSpec, rng: &mut NodeRng) -> Result<Synthetic, DataError> {
    check_shape(spec.rows, spec.dim)?;
    if spec.sparsity == 0 || spec.sparsity > spec.dim {
        return Err(DataError::Param(format!(
            "sparsity must be in 1..={}, got {}",
            spec.dim, spec.sparsity
        )));
    }
    check_nonnegative("noise-std", spec.noise_std)?;
    let features = draw_rows(spec.rows, spec.dim, spec.row_distribution, rng);
    let mut positions: Vec<usize> = (0..spec.dim).collect();
    let (support, _) = positions.partial_shuffle(rng, spec.sparsity);
    let mut truth = vec![0.0; spec.dim];
    for &j in support.iter() {
        truth[j] = match spec.truth {
            TruthValues::Uniform => 1.0 - rng.random::<f64>(),
            TruthValues::Sign => {
                if rng.random::<bool>() {
                    1.0
                } else {
                    -1.0
                }
            }
        };
    }
    let labels = features
        .chunks_exact(spec.dim)
        .map(|a| {
            let e: f64 = StandardNormal.sample(rng);
            dot(a, &truth) + spec.noise_std * e
        })
        .collect();
    let data = Dataset {
        features,
        labels,
        n_features: spec.dim,
        label_kind: LabelKind::Real,
    };
    Ok(Synthetic { data, truth })
}

/// Synthetic binary logistic data (see [`LogisticSpec`]).
pub fn logistic(spec: &LogisticSpec, rng: &mut NodeRng) -> Result<Synthetic, DataError> {
    check_shape(spec.rows, spec.dim)?;
    check_nonnegative("margin-std", spec.margin_std)?;
    let features = draw_rows(spec.rows, spec.dim, spec.row_distribution, rng);
    let mut truth: Vec<f64> = (0..spec.dim).map(|_| StandardNormal.sample(rng)).collect();
    let norm = truth.iter().map(|v| v * v).sum::<f64>().sqrt();
    let target = match spec.row_distribution {
        RowDistribution::Sphere => spec.margin_std * (spec.dim as f64).sqrt(),
        RowDistribution::Gaussian => spec.margin_std,
    };
    let factor = if norm > 0.0 { target / norm } else { 0.0 };
    truth.iter_mut().for_each(|v| *v *= factor);
    let labels = features
        .chunks_exact(spec.dim)
        .map(|a| {
            let p = 1.0 / (1.0 + (-dot(a, &truth)).exp());
            if rng.random::<f64>() < p { 1.0 } else { -1.0 }
        })
        .collect();
    let data = Dataset {
        features,
        labels,
        n_features: spec.dim,
        label_kind: LabelKind::Binary,
    };
    Ok(Synthetic { data, truth })
}

#[cfg(test)]
#[allow(clippy::unwrap_used)] // a failed unwrap is a failed test
mod tests {
    use super::*;
    use crate::rng::node_rng;

    fn residual_std(g: &Synthetic) -> f64 {
        let d = &g.data;
        let r: Vec<f64> = (0..d.rows())
            .map(|i| d.labels[i] - dot(d.row(i), &g.truth))
            .collect();
        let mean = r.iter().sum::<f64>() / r.len() as f64;
        (r.iter().map(|e| (e - mean).powi(2)).sum::<f64>() / r.len() as f64).sqrt()
    }

    #[test]
    fn paper_lasso_data_has_unit_rows_sparse_truth_and_label_noise() {
        let g = lasso(&LassoSpec::default(), &mut node_rng(1, 0)).unwrap();
        assert_eq!((g.data.rows(), g.data.n_features), (1000, 64));
        assert_eq!(g.data.label_kind, LabelKind::Real);
        for r in 0..g.data.rows() {
            let n = g.data.row(r).iter().map(|v| v * v).sum::<f64>().sqrt();
            assert!((n - 1.0).abs() < 1e-12, "{n}");
        }
        assert_eq!(g.truth.iter().filter(|&&v| v != 0.0).count(), 8);
        assert!(g.truth.iter().all(|&v| (0.0..=1.0).contains(&v)));
        // Variance 0.01: the residual has standard deviation 0.1 (1000 draws: ±~5%).
        let s = residual_std(&g);
        assert!((0.09..0.11).contains(&s), "{s}");
    }

    #[test]
    fn same_seed_same_data_other_seed_other_data() {
        let spec = LassoSpec {
            truth: TruthValues::Sign,
            ..LassoSpec::default()
        };
        let a = lasso(&spec, &mut node_rng(5, 0)).unwrap();
        let b = lasso(&spec, &mut node_rng(5, 0)).unwrap();
        let c = lasso(&spec, &mut node_rng(6, 0)).unwrap();
        assert_eq!(a, b);
        assert_ne!(a.data.features, c.data.features);
        assert_ne!(a.data.labels, c.data.labels);
        assert!(a.truth.iter().all(|&v| v == 0.0 || v.abs() == 1.0));
        assert_eq!(a.truth.iter().filter(|&&v| v != 0.0).count(), 8);
    }

    #[test]
    fn gaussian_rows_are_standardized_columns() {
        let spec = LassoSpec {
            rows: 500,
            dim: 10,
            sparsity: 3,
            noise_std: 0.0,
            row_distribution: RowDistribution::Gaussian,
            ..LassoSpec::default()
        };
        let g = lasso(&spec, &mut node_rng(2, 0)).unwrap();
        for j in 0..10 {
            let col: Vec<f64> = (0..500).map(|r| g.data.row(r)[j]).collect();
            let mean = col.iter().sum::<f64>() / 500.0;
            let var = col.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / 500.0;
            assert!(
                mean.abs() < 1e-12 && (var - 1.0).abs() < 1e-12,
                "{mean} {var}"
            );
        }
        assert!(residual_std(&g) < 1e-12);
    }

    #[test]
    fn logistic_labels_follow_the_truth() {
        for dist in [RowDistribution::Sphere, RowDistribution::Gaussian] {
            let spec = LogisticSpec {
                rows: 2000,
                row_distribution: dist,
                ..LogisticSpec::default()
            };
            let g = logistic(&spec, &mut node_rng(3, 0)).unwrap();
            assert_eq!(g.data.label_kind, LabelKind::Binary);
            assert!(g.data.labels.iter().all(|&y| y == 1.0 || y == -1.0));
            let agree = (0..g.data.rows())
                .filter(|&r| dot(g.data.row(r), &g.truth) * g.data.labels[r] > 0.0)
                .count() as f64
                / 2000.0;
            // With margin std 2, P(label = sign of margin) = E[σ(|m|)] ≈ 0.82.
            assert!((0.75..0.9).contains(&agree), "{dist:?}: {agree}");
        }
    }

    #[test]
    fn invalid_parameters_are_errors() {
        let bad = [
            LassoSpec {
                rows: 0,
                ..LassoSpec::default()
            },
            LassoSpec {
                sparsity: 65,
                ..LassoSpec::default()
            },
            LassoSpec {
                sparsity: 0,
                ..LassoSpec::default()
            },
            LassoSpec {
                noise_std: -1.0,
                ..LassoSpec::default()
            },
            LassoSpec {
                noise_std: f64::NAN,
                ..LassoSpec::default()
            },
        ];
        for spec in bad {
            assert!(matches!(
                lasso(&spec, &mut node_rng(0, 0)),
                Err(DataError::Param(_))
            ));
        }
        let spec = LogisticSpec {
            margin_std: f64::INFINITY,
            ..LogisticSpec::default()
        };
        assert!(matches!(
            logistic(&spec, &mut node_rng(0, 0)),
            Err(DataError::Param(_))
        ));
    }
}
