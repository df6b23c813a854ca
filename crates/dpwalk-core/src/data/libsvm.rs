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
    let opts = LibsvmOptions { n_features: Some(train.n_features), labels: opts.labels.clone() };
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
        Dataset { features, labels, n_features: p, label_kind }
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
                return Err(at.err(format!("feature index {index} after {last}: indices must increase")));
            }
            if let Some(n) = opts.n_features
                && index > n
            {
                return Err(at.err(format!("feature index {index} beyond the {n} features expected")));
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
    Ok(Parsed { rows: SparseRows { entries, starts, n_features }, labels })
}
