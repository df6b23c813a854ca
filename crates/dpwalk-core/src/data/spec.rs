//! The `[data]` and `[partition]` tables of a scenario file, and what they do: [`DataSpec::load`]
//! and [`PartitionSpec::apply`].
//!
//! Keys are kebab-case throughout; unknown keys are errors. Paths are relative to a base
//! directory given by the caller (the scenario file's directory), absolute paths are kept.
//!
//! ```toml
//! [data]
//! source = "synthetic-lasso"     # synthetic-lasso | synthetic-logistic | csv | libsvm | adult | mnist
//! rows = 1000
//! dim = 64
//! row-distribution = "sphere"    # or "gaussian"
//! test-fraction = 0.2
//!
//! [partition]
//! kind = "dirichlet"             # iid | label-skew | dirichlet
//! alpha = 0.5
//! ```
//!
//! A real source reads `path`, and either a `test` file or a `test-fraction` of `path` (neither:
//! no test set). For example:
//! ```toml
//! [data]
//! source = "csv"
//! path = "data/heart.csv.gz"
//! header = true
//! label-column = "target"
//! labels = "binary"              # real | binary | classes
//! positive-label = "1"
//! max-abs-scale = true           # columns scaled by their max |value| on the training split
//! max-row-norm = 1.0             # rows clipped to this L2 norm
//! test-fraction = 0.2
//! ```
//!
//! # Seeds
//! From the run seed `s`: synthetic data from `node_rng(derive_seed(s, Data, 0), 0)`, the
//! train/test split from `node_rng(derive_seed(s, Partition, 0), 0)`, the partition among users
//! from `node_rng(derive_seed(s, Partition, 1), 0)` (see [`crate::rng`]). So changing the
//! partition never changes the data, and the data of a run never depends on its number of users.
//!
//! Preprocessing (scaling, row clipping) is fitted on the training split *after* the split, and
//! applied unchanged to the test split.

use super::labels::LabelRule;
use super::preprocess::Preprocess;
use super::synthetic::{self, LassoSpec, LogisticSpec};
use super::{DataError, Dataset, UserData, adult, csv, libsvm, mnist, partition, split};
use crate::rng::{Purpose, derive_seed, node_rng};
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};

/// Where the data of a scenario comes from (the `[data]` table, tagged by `source`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "source", rename_all = "kebab-case")]
pub enum DataSpec {
    /// The paper's sparse linear regression data.
    SyntheticLasso(LassoSpec),
    /// Synthetic binary logistic data.
    SyntheticLogistic(LogisticSpec),
    /// A delimited text file.
    Csv(CsvSpec),
    /// A LIBSVM / SVMlight file.
    Libsvm(LibsvmSpec),
    /// UCI Adult, raw format, standard preprocessing.
    Adult(AdultSpec),
    /// MNIST as CSV.
    Mnist(MnistSpec),
}

/// The label interpretation of a CSV or LIBSVM source.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum LabelType {
    /// Real-valued targets.
    #[default]
    Real,
    /// Two values mapped to `±1` (see `positive-label`).
    Binary,
    /// Class indices `0..K-1`.
    Classes,
}

fn default_delimiter() -> char {
    ','
}

/// `source = "csv"`.
///
/// | field | default | meaning |
/// | --- | --- | --- |
/// | `path` | required | the training file (`.gz` is gunzipped) |
/// | `test` | none | a test file with the same columns |
/// | `test-fraction` | none | share of `path` held out instead, in (0, 1) |
/// | `delimiter` | `","` | one character |
/// | `header` | `false` | the first line names the columns |
/// | `label-column` | last column | name of the label column (needs `header`) |
/// | `labels` | `"real"` | `"real"`, `"binary"` or `"classes"` |
/// | `positive-label` | larger value | the value mapped to `+1` (binary only) |
/// | `max-abs-scale` | `false` | scale columns by their max absolute value on the training split |
/// | `max-row-norm` | none | clip rows to this L2 norm |
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case", deny_unknown_fields)]
pub struct CsvSpec {
    /// Training file.
    pub path: PathBuf,
    /// Test file.
    #[serde(default)]
    pub test: Option<PathBuf>,
    /// Held-out share of the training file.
    #[serde(default)]
    pub test_fraction: Option<f64>,
    /// Field separator.
    #[serde(default = "default_delimiter")]
    pub delimiter: char,
    /// Whether the first line is a header.
    #[serde(default)]
    pub header: bool,
    /// Name of the label column; last column if absent.
    #[serde(default)]
    pub label_column: Option<String>,
    /// Label interpretation.
    #[serde(default)]
    pub labels: LabelType,
    /// The binary label value mapped to `+1`.
    #[serde(default)]
    pub positive_label: Option<String>,
    /// Max-abs column scaling fitted on the training split.
    #[serde(default)]
    pub max_abs_scale: bool,
    /// Row L2 clipping.
    #[serde(default)]
    pub max_row_norm: Option<f64>,
}

/// `source = "libsvm"`.
///
/// | field | default | meaning |
/// | --- | --- | --- |
/// | `path`, `test`, `test-fraction` | | as for CSV |
/// | `n-features` | largest index of `path` | number of features |
/// | `labels`, `positive-label` | `"real"` | as for CSV |
/// | `max-abs-scale`, `max-row-norm` | off | as for CSV |
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case", deny_unknown_fields)]
pub struct LibsvmSpec {
    /// Training file.
    pub path: PathBuf,
    /// Test file.
    #[serde(default)]
    pub test: Option<PathBuf>,
    /// Held-out share of the training file.
    #[serde(default)]
    pub test_fraction: Option<f64>,
    /// Number of features (inferred if absent).
    #[serde(default)]
    pub n_features: Option<usize>,
    /// Label interpretation.
    #[serde(default)]
    pub labels: LabelType,
    /// The binary label value mapped to `+1`.
    #[serde(default)]
    pub positive_label: Option<String>,
    /// Max-abs column scaling fitted on the training split.
    #[serde(default)]
    pub max_abs_scale: bool,
    /// Row L2 clipping.
    #[serde(default)]
    pub max_row_norm: Option<f64>,
}

/// `source = "adult"`: `path` (e.g. `adult.data`), and `test` (e.g. `adult.test`) or
/// `test-fraction`. The preprocessing is the fixed standard one (see [`adult`]).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case", deny_unknown_fields)]
pub struct AdultSpec {
    /// Training file.
    pub path: PathBuf,
    /// Test file.
    #[serde(default)]
    pub test: Option<PathBuf>,
    /// Held-out share of the training file.
    #[serde(default)]
    pub test_fraction: Option<f64>,
}

/// `source = "mnist"`: `path`, `test` or `test-fraction`, and `max-row-norm` (pixels are in
/// `[0, 1]`, so a row's norm can reach 28; `max-row-norm = 1.0` is the usual choice).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case", deny_unknown_fields)]
pub struct MnistSpec {
    /// Training file.
    pub path: PathBuf,
    /// Test file.
    #[serde(default)]
    pub test: Option<PathBuf>,
    /// Held-out share of the training file.
    #[serde(default)]
    pub test_fraction: Option<f64>,
    /// Row L2 clipping.
    #[serde(default)]
    pub max_row_norm: Option<f64>,
}

/// A loaded dataset: training split, optional test split, and the ground truth of synthetic data.
#[derive(Debug, Clone, PartialEq)]
pub struct LoadedData {
    /// The training split (to be partitioned among users).
    pub train: Dataset,
    /// The test split, if any.
    pub test: Option<Dataset>,
    /// The generating parameter vector of synthetic data.
    pub truth: Option<Vec<f64>>,
}

fn label_rule(labels: LabelType, positive: &Option<String>) -> Result<LabelRule, DataError> {
    match (labels, positive) {
        (LabelType::Binary, positive) => Ok(LabelRule::Binary {
            positive: positive.clone(),
        }),
        (_, Some(_)) => Err(DataError::Param(
            "`positive-label` needs `labels = \"binary\"`".into(),
        )),
        (LabelType::Real, None) => Ok(LabelRule::Real),
        (LabelType::Classes, None) => Ok(LabelRule::Classes),
    }
}

/// The test set: the given test file's, or a held-out fraction of `train`, or none; then the
/// preprocessing fitted on the training split.
fn finish(
    train: Dataset,
    test: Option<Dataset>,
    test_fraction: Option<f64>,
    prep: Preprocess,
    seed: u64,
    truth: Option<Vec<f64>>,
) -> Result<LoadedData, DataError> {
    let (mut train, mut test) = match (test, test_fraction) {
        (Some(_), Some(_)) => {
            return Err(DataError::Param(
                "give either `test` or `test-fraction`, not both".into(),
            ));
        }
        (test, None) => (train, test),
        (None, Some(f)) => {
            let mut rng = node_rng(derive_seed(seed, Purpose::Partition, 0), 0);
            let (train, test) = split::train_test(&train, f, &mut rng)?;
            (train, Some(test))
        }
    };
    prep.apply(&mut train, test.as_mut())?;
    Ok(LoadedData { train, test, truth })
}

impl DataSpec {
    /// Loads or generates the data; file paths are relative to `base_dir`, `seed` is the run seed.
    pub fn load(&self, base_dir: &Path, seed: u64) -> Result<LoadedData, DataError> {
        let data_rng = || node_rng(derive_seed(seed, Purpose::Data, 0), 0);
        match self {
            DataSpec::SyntheticLasso(s) => {
                let g = synthetic::lasso(s, &mut data_rng())?;
                finish(
                    g.data,
                    None,
                    s.test_fraction,
                    Preprocess::default(),
                    seed,
                    Some(g.truth),
                )
            }
            DataSpec::SyntheticLogistic(s) => {
                let g = synthetic::logistic(s, &mut data_rng())?;
                finish(
                    g.data,
                    None,
                    s.test_fraction,
                    Preprocess::default(),
                    seed,
                    Some(g.truth),
                )
            }
            DataSpec::Csv(s) => {
                let opts = csv::CsvOptions {
                    delimiter: s.delimiter,
                    header: s.header,
                    label_column: s.label_column.clone(),
                    labels: label_rule(s.labels, &s.positive_label)?,
                };
                let (train, map) = csv::read(&base_dir.join(&s.path), &opts)?;
                let test = s
                    .test
                    .as_ref()
                    .map(|t| csv::read_like(&base_dir.join(t), &opts, &map))
                    .transpose()?;
                let prep = Preprocess {
                    max_abs_scale: s.max_abs_scale,
                    max_row_norm: s.max_row_norm,
                };
                finish(train, test, s.test_fraction, prep, seed, None)
            }
            DataSpec::Libsvm(s) => {
                let opts = libsvm::LibsvmOptions {
                    n_features: s.n_features,
                    labels: label_rule(s.labels, &s.positive_label)?,
                };
                let (train, map) = libsvm::read(&base_dir.join(&s.path), &opts)?;
                let test = s
                    .test
                    .as_ref()
                    .map(|t| libsvm::read_like(&base_dir.join(t), &opts, &train, &map))
                    .transpose()?;
                let prep = Preprocess {
                    max_abs_scale: s.max_abs_scale,
                    max_row_norm: s.max_row_norm,
                };
                finish(train, test, s.test_fraction, prep, seed, None)
            }
            DataSpec::Adult(s) => {
                let train = adult::read(&base_dir.join(&s.path))?;
                let test = s
                    .test
                    .as_ref()
                    .map(|t| adult::read(&base_dir.join(t)))
                    .transpose()?;
                finish(train, test, s.test_fraction, adult::STANDARD, seed, None)
            }
            DataSpec::Mnist(s) => {
                let train = mnist::read(&base_dir.join(&s.path))?;
                let test = s
                    .test
                    .as_ref()
                    .map(|t| mnist::read(&base_dir.join(t)))
                    .transpose()?;
                let prep = Preprocess {
                    max_abs_scale: false,
                    max_row_norm: s.max_row_norm,
                };
                finish(train, test, s.test_fraction, prep, seed, None)
            }
        }
    }
}

/// How the training split is divided among users (the `[partition]` table, tagged by `kind`).
///
/// ```toml
/// [partition]
/// kind = "iid"
/// # kind = "label-skew"
/// # classes-per-user = 2
/// # kind = "dirichlet"
/// # alpha = 0.5
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "kebab-case", deny_unknown_fields)]
pub enum PartitionSpec {
    /// Shuffle and near-equal chunks. (A struct variant without fields, so that
    /// `deny_unknown_fields` applies to it: serde ignores extra keys beside a unit variant's tag.)
    Iid {},
    /// Each user holds records of at most `classes-per-user` classes.
    #[serde(rename_all = "kebab-case")]
    LabelSkew {
        /// Classes per user (`k`).
        classes_per_user: usize,
    },
    /// Per-class Dirichlet(`alpha`) shares among users.
    Dirichlet {
        /// Concentration: small is skewed, large is near iid.
        alpha: f64,
    },
}

impl Default for PartitionSpec {
    /// Iid.
    fn default() -> Self {
        PartitionSpec::Iid {}
    }
}

impl PartitionSpec {
    /// Divides `train` among `n_users` users, every one of them non-empty; `seed` is the run seed.
    pub fn apply(&self, train: Dataset, n_users: usize, seed: u64) -> Result<UserData, DataError> {
        let mut rng = node_rng(derive_seed(seed, Purpose::Partition, 1), 0);
        match *self {
            PartitionSpec::Iid {} => partition::iid(&train, n_users, &mut rng),
            PartitionSpec::LabelSkew { classes_per_user } => {
                partition::label_skew(&train, n_users, classes_per_user, &mut rng)
            }
            PartitionSpec::Dirichlet { alpha } => {
                partition::dirichlet(&train, n_users, alpha, &mut rng)
            }
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)] // a failed unwrap is a failed test
mod tests {
    use super::*;
    use crate::data::LabelKind;
    use crate::data::synthetic::RowDistribution;
    use crate::data::testutil::{repo_root, temp_file};

    /// A scenario file's two tables.
    #[derive(Debug, Deserialize)]
    #[serde(deny_unknown_fields)]
    struct Scenario {
        data: DataSpec,
        #[serde(default)]
        partition: PartitionSpec,
    }

    fn parse(text: &str) -> Result<Scenario, toml::de::Error> {
        toml::from_str(text)
    }

    #[test]
    fn reads_the_documented_example() {
        let s = parse(
            r#"
            [data]
            source = "synthetic-lasso"
            rows = 1000
            dim = 64
            row-distribution = "gaussian"
            test-fraction = 0.2
            [partition]
            kind = "dirichlet"
            alpha = 0.5
            "#,
        )
        .unwrap();
        let DataSpec::SyntheticLasso(l) = &s.data else {
            panic!("{:?}", s.data)
        };
        assert_eq!(l.row_distribution, RowDistribution::Gaussian);
        assert_eq!(
            (l.sparsity, l.noise_std, l.test_fraction),
            (8, 0.1, Some(0.2))
        );
        assert_eq!(s.partition, PartitionSpec::Dirichlet { alpha: 0.5 });
        let s = parse("[data]\nsource = \"mnist\"\npath = \"m.csv\"\n[partition]\nkind = \"label-skew\"\nclasses-per-user = 2\n")
            .unwrap();
        assert_eq!(
            s.partition,
            PartitionSpec::LabelSkew {
                classes_per_user: 2
            }
        );
        let s = parse("[data]\nsource = \"synthetic-logistic\"\n").unwrap();
        assert_eq!(s.data, DataSpec::SyntheticLogistic(LogisticSpec::default()));
        assert_eq!(s.partition, PartitionSpec::Iid {});
    }

    #[test]
    fn unknown_keys_and_sources_are_rejected() {
        let bad = [
            "[data]\nsource = \"synthetic-lasso\"\nrow = 10\n",
            "[data]\nsource = \"synthetic-lasso\"\nrow-distribution = \"cube\"\n",
            "[data]\nsource = \"parquet\"\npath = \"x\"\n",
            "[data]\nsource = \"csv\"\n",
            "[data]\nsource = \"csv\"\npath = \"a\"\nlabel_column = \"y\"\n",
            "[data]\nsource = \"adult\"\npath = \"a\"\nmax-row-norm = 1.0\n",
            "[data]\nsource = \"synthetic-lasso\"\n[partition]\nkind = \"iid\"\nalpha = 1.0\n",
            "[data]\nsource = \"synthetic-lasso\"\n[partition]\nkind = \"dirichlet\"\nalpha = 1.0\nk = 2\n",
            "[data]\nsource = \"synthetic-lasso\"\n[partition]\nkind = \"label-skew\"\n",
        ];
        for text in bad {
            assert!(parse(text).is_err(), "accepted: {text}");
        }
    }

    #[test]
    fn synthetic_load_splits_and_keeps_the_truth() {
        let spec = DataSpec::SyntheticLasso(LassoSpec {
            test_fraction: Some(0.2),
            ..LassoSpec::default()
        });
        let a = spec.load(Path::new("."), 7).unwrap();
        assert_eq!(
            (a.train.rows(), a.test.as_ref().map(Dataset::rows)),
            (800, Some(200))
        );
        assert_eq!(
            a.truth
                .as_ref()
                .map(|t| t.iter().filter(|&&v| v != 0.0).count()),
            Some(8)
        );
        assert_eq!(a, spec.load(Path::new("."), 7).unwrap());
        assert_ne!(a.train, spec.load(Path::new("."), 8).unwrap().train);
    }

    #[test]
    fn vendored_real_data_loads_through_specs() {
        let s = parse(
            "[data]\nsource = \"adult\"\npath = \"data/adult/adult-sample.data.gz\"\n\
             test = \"data/adult/adult-sample.test.gz\"\n",
        )
        .unwrap();
        let d = s.data.load(&repo_root(), 1).unwrap();
        assert_eq!((d.train.rows(), d.train.n_features), (10_048, 105));
        assert_eq!(d.test.as_ref().map(|t| t.n_features), Some(105));
        assert!(d.truth.is_none());

        let s = parse(
            "[data]\nsource = \"mnist\"\npath = \"data/mnist/mnist-500.csv.gz\"\n\
             test-fraction = 0.2\nmax-row-norm = 1.0\n[partition]\nkind = \"label-skew\"\nclasses-per-user = 2\n",
        )
        .unwrap();
        let d = s.data.load(&repo_root(), 1).unwrap();
        assert_eq!(
            (d.train.rows(), d.test.as_ref().map(Dataset::rows)),
            (400, Some(100))
        );
        let norm = |x: &[f64]| x.iter().map(|v| v * v).sum::<f64>().sqrt();
        assert!((0..400).all(|r| (norm(d.train.row(r)) - 1.0).abs() < 1e-12));
        let users = s.partition.apply(d.train, 20, 1).unwrap();
        assert_eq!((users.n_users(), users.data.rows()), (20, 400));
        assert_eq!(users.data.label_kind, LabelKind::Classes(10));
    }

    #[test]
    fn csv_and_libsvm_specs_read_relative_paths_and_preprocess() {
        let train = temp_file("train.csv", "a,y,b\n2,no,0\n-4,yes,1\n1,yes,0.5\n");
        let test = temp_file("test.csv", "a,y,b\n8,no,2\n");
        let base = train.parent().unwrap();
        let name = |f: &Path| f.file_name().unwrap().to_string_lossy().into_owned();
        let text = format!(
            "[data]\nsource = \"csv\"\npath = \"{}\"\ntest = \"{}\"\nheader = true\n\
             label-column = \"y\"\nlabels = \"binary\"\npositive-label = \"yes\"\nmax-abs-scale = true\n",
            name(&train),
            name(&test)
        );
        let d = parse(&text).unwrap().data.load(base, 0).unwrap();
        assert_eq!(d.train.labels, vec![-1.0, 1.0, 1.0]);
        assert_eq!(d.train.features, vec![0.5, 0.0, -1.0, 1.0, 0.25, 0.5]);
        let t = d.test.unwrap();
        assert_eq!(
            (t.features.clone(), t.labels.clone()),
            (vec![2.0, 2.0], vec![-1.0])
        );

        let bad = text.replace("labels = \"binary\"", "labels = \"classes\"");
        assert!(matches!(
            parse(&bad).unwrap().data.load(base, 0),
            Err(DataError::Param(_))
        ));
        let both = format!("{text}test-fraction = 0.5\n");
        assert!(matches!(
            parse(&both).unwrap().data.load(base, 0),
            Err(DataError::Param(_))
        ));

        let svm = temp_file("train.svm", "1 1:3 2:4\n-1 1:1\n1 2:1\n-1 1:2\n");
        let text = format!(
            "[data]\nsource = \"libsvm\"\npath = \"{}\"\nlabels = \"binary\"\nmax-row-norm = 1.0\ntest-fraction = 0.25\n",
            name(&svm)
        );
        let d = parse(&text).unwrap().data.load(base, 3).unwrap();
        assert_eq!((d.train.rows(), d.test.map(|t| t.rows())), (3, Some(1)));
        assert!(d.train.features.iter().all(|v| v.abs() <= 1.0));
    }

    #[test]
    fn partition_depends_on_the_seed_only_through_its_own_stream() {
        let spec = DataSpec::SyntheticLogistic(LogisticSpec::default());
        let d = spec.load(Path::new("."), 5).unwrap();
        let p = PartitionSpec::Dirichlet { alpha: 1.0 };
        let a = p.apply(d.train.clone(), 10, 5).unwrap();
        assert_eq!(a, p.apply(d.train.clone(), 10, 5).unwrap());
        assert_ne!(a, p.apply(d.train.clone(), 10, 6).unwrap());
        assert!(matches!(
            p.apply(d.train, 1001, 5),
            Err(DataError::Param(_))
        ));
    }
}
