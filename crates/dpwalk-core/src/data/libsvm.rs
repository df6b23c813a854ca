//! LIBSVM / SVMlight sparse text: `label [qid:n] index:value …  [# comment]`, indices 1-based and
//! strictly increasing, densified on load (the problems work on dense rows).

use super::labels::{LabelMap, LabelRule, RawLabels, fit_encode};
use super::read::{At, file_err, for_each_line};
use super::{DataError, Dataset};
use std::path::Path;

/// How to read a LIBSVM file.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct LibsvmOptions {
    /// Number of features; `None` infers the largest index of the file. A larger index is an
    /// error at its line.
    pub n_features: Option<usize>,
    /// How to interpret the labels.
    pub labels: LabelRule,
}

/// Reads a training file: its labels fit the returned [`LabelMap`].
pub fn read(path: &Path, opts: &LibsvmOptions) -> Result<(Dataset, LabelMap), DataError> {
    let sparse = parse(path, opts)?;
    let (labels, map) = fit_encode(&opts.labels, sparse.labels, path)?;
    Ok((sparse.rows.densify(labels, map.kind()), map))
}

/// Reads a test file encoded like its training file: `train` fixes the labels, and the number of
/// features (an index beyond the training file's features is an error at its line).
pub fn read_like(
    path: &Path,
    opts: &LibsvmOptions,
    train: &Dataset,
    train_labels: &LabelMap,
) -> Result<Dataset, DataError> {
    let opts = LibsvmOptions {
        n_features: Some(train.n_features),
        labels: opts.labels.clone(),
    };
    let sparse = parse(path, &opts)?;
    let labels = train_labels.encode(sparse.labels, path)?;
    Ok(sparse.rows.densify(labels, train_labels.kind()))
}

/// Sparse rows: 0-based `(index, value)` entries, row `r` at `entries[starts[r]..starts[r + 1]]`.
struct SparseRows {
    entries: Vec<(usize, f64)>,
    starts: Vec<usize>,
    n_features: usize,
}

impl SparseRows {
    fn densify(self, labels: Vec<f64>, label_kind: super::LabelKind) -> Dataset {
        let p = self.n_features;
        let mut features = vec![0.0; labels.len() * p];
        for (r, w) in self.starts.windows(2).enumerate() {
            for &(j, v) in &self.entries[w[0]..w[1]] {
                features[r * p + j] = v;
            }
        }
        Dataset {
            features,
            labels,
            n_features: p,
            label_kind,
        }
    }
}

struct Parsed {
    rows: SparseRows,
    labels: RawLabels,
}

fn parse(path: &Path, opts: &LibsvmOptions) -> Result<Parsed, DataError> {
    let mut entries = Vec::new();
    let mut starts = vec![0];
    let mut labels = RawLabels::new(&opts.labels);
    let mut max_index = 0;
    for_each_line(path, |at: At<'_>, line| {
        let content = line.split('#').next().unwrap_or_default();
        let mut tokens = content.split_whitespace();
        let Some(label) = tokens.next() else {
            // A comment-only line.
            return Ok(());
        };
        labels.push(label, at)?;
        let mut last = 0;
        for token in tokens {
            let Some((index, value)) = token.split_once(':') else {
                return Err(at.err(format!("expected `index:value`, found `{token}`")));
            };
            if index == "qid" {
                continue;
            }
            let index: usize = index
                .parse()
                .map_err(|_| at.err(format!("cannot parse feature index `{index}`")))?;
            if index == 0 {
                return Err(at.err("feature indices are 1-based; found 0"));
            }
            if index <= last {
                return Err(at.err(format!(
                    "feature index {index} after {last}: indices must increase"
                )));
            }
            if let Some(n) = opts.n_features
                && index > n
            {
                return Err(at.err(format!(
                    "feature index {index} beyond the {n} features expected"
                )));
            }
            last = index;
            entries.push((index - 1, at.f64(value, "feature value")?));
        }
        max_index = max_index.max(last);
        starts.push(entries.len());
        Ok(())
    })?;
    if labels.len() == 0 {
        return Err(file_err(path, "no data rows"));
    }
    let n_features = opts.n_features.unwrap_or(max_index);
    if n_features == 0 {
        return Err(file_err(path, "no features: every row is empty"));
    }
    Ok(Parsed {
        rows: SparseRows {
            entries,
            starts,
            n_features,
        },
        labels,
    })
}

#[cfg(test)]
#[allow(clippy::unwrap_used)] // a failed unwrap is a failed test
mod tests {
    use super::*;
    use crate::data::LabelKind;
    use crate::data::testutil::temp_file;

    fn binary() -> LibsvmOptions {
        LibsvmOptions {
            n_features: None,
            labels: LabelRule::Binary { positive: None },
        }
    }

    #[test]
    fn reads_sparse_rows_with_qid_and_comments() {
        let text = "+1 qid:3 1:0.5 4:-2 # first\n# a comment line\n-1 2:1e-1\n+1\n";
        for name in ["s.svm", "s.svm.gz"] {
            let f = temp_file(name, text);
            let (d, _) = read(&f, &binary()).unwrap();
            assert_eq!(d.n_features, 4);
            assert_eq!(d.rows(), 3);
            assert_eq!(d.row(0), &[0.5, 0.0, 0.0, -2.0]);
            assert_eq!(d.row(1), &[0.0, 0.1, 0.0, 0.0]);
            assert_eq!(d.row(2), &[0.0; 4]);
            assert_eq!(d.labels, vec![1.0, -1.0, 1.0]);
            assert_eq!(d.label_kind, LabelKind::Binary);
        }
    }

    #[test]
    fn given_feature_count_pads_and_bounds() {
        let f = temp_file("t.svm", "2.5 1:1\n-0.5 3:2\n");
        let o = LibsvmOptions {
            n_features: Some(5),
            labels: LabelRule::Real,
        };
        let (d, _) = read(&f, &o).unwrap();
        assert_eq!(d.n_features, 5);
        assert_eq!(d.labels, vec![2.5, -0.5]);
        let o = LibsvmOptions {
            n_features: Some(2),
            labels: LabelRule::Real,
        };
        assert_eq!(read(&f, &o).unwrap_err().line(), Some(2));
    }

    #[test]
    fn test_file_takes_the_training_shape_and_labels() {
        let train = temp_file("u.svm", "0 1:1 3:1\n1 2:1\n");
        let o = LibsvmOptions {
            n_features: None,
            labels: LabelRule::Classes,
        };
        let (d, map) = read(&train, &o).unwrap();
        assert_eq!(d.label_kind, LabelKind::Classes(2));
        let test = temp_file("v.svm", "1 3:4\n0 1:2\n");
        let t = read_like(&test, &o, &d, &map).unwrap();
        assert_eq!((t.n_features, t.labels.clone()), (3, vec![1.0, 0.0]));
        assert_eq!(t.row(0), &[0.0, 0.0, 4.0]);
        let wide = temp_file("w.svm", "1 3:4\n0 4:2\n");
        assert_eq!(read_like(&wide, &o, &d, &map).unwrap_err().line(), Some(2));
    }

    #[test]
    fn malformed_lines_name_their_line() {
        let cases = [
            "1 1:1\n1 0:1\n",
            "1 1:1\n1 2:1 2:3\n",
            "1 1:1\n1 3:1 2:3\n",
            "1 1:1\n1 2\n",
            "1 1:1\n1 x:2\n",
            "1 1:1\n1 2:nan\n",
            "1 1:1\nabc 2:1\n",
        ];
        for text in cases {
            let f = temp_file("x.svm", text);
            let o = LibsvmOptions {
                n_features: None,
                labels: LabelRule::Real,
            };
            let err = read(&f, &o).unwrap_err();
            assert_eq!(err.line(), Some(2), "{text:?}: {err}");
        }
        let f = temp_file("y.svm", "# only a comment\n\n");
        assert!(matches!(read(&f, &binary()), Err(DataError::File { .. })));
        let f = temp_file("z.svm", "1\n-1\n");
        assert!(matches!(read(&f, &binary()), Err(DataError::File { .. })));
    }
}
