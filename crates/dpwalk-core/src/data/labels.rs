//! Turning the label column of a text file into `f64` labels (see the conventions in
//! [`super`]): real targets, `±1` binary labels, or class indices `0..K-1`.
//!
//! Labels are read in two steps so that a test file is encoded exactly like its training file:
//! the training file's distinct values *fit* a [`LabelMap`], which then *encodes* the training
//! labels and, unchanged, those of the test file. A value the training file never had is an
//! error at the first line where it occurs.
//!
//! Numeric label strings are compared by value (`+1`, `1` and `1.0` are the same label), other
//! strings literally after trimming.

use super::read::{At, file_err};
use super::{DataError, LabelKind};
use std::cmp::Ordering;
use std::collections::HashMap;
use std::path::Path;

/// How to interpret a label column.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum LabelRule {
    /// Real-valued targets: every label must be a finite number.
    #[default]
    Real,
    /// Exactly two distinct values, mapped to `+1` (the positive one) and `-1`. Without a named
    /// positive value, the larger one is positive (numerically if both are numbers, else in string
    /// order: `1` over `0` or `-1`, `>50K` over `<=50K`).
    Binary {
        /// The value that becomes `+1`.
        positive: Option<String>,
    },
    /// Class indices: if every value is a non-negative integer, it is its own class index and
    /// `K = max + 1`; otherwise the distinct values are sorted as strings and numbered `0..K-1`.
    Classes,
}

/// Largest integer class label accepted, so that a stray value cannot allocate a huge model.
const MAX_CLASS: f64 = 1_000_000.0;

/// The label column of one file, collected before the label map is known.
#[derive(Debug)]
pub(crate) enum RawLabels {
    Real(Vec<f64>),
    Named {
        /// Distinct canonical values in order of first appearance, with that line.
        names: Vec<(String, usize)>,
        index: HashMap<String, usize>,
        /// Per row, the position of its value in `names`.
        ids: Vec<usize>,
    },
}

/// The canonical spelling of a label: numbers by value, anything else trimmed.
fn canonical(field: &str) -> String {
    let field = field.trim();
    match field.parse::<f64>() {
        Ok(v) if v.is_finite() => format!("{v}"),
        _ => field.to_string(),
    }
}

impl RawLabels {
    pub fn new(rule: &LabelRule) -> Self {
        match rule {
            LabelRule::Real => RawLabels::Real(Vec::new()),
            _ => RawLabels::Named {
                names: Vec::new(),
                index: HashMap::new(),
                ids: Vec::new(),
            },
        }
    }

    pub fn len(&self) -> usize {
        match self {
            RawLabels::Real(v) => v.len(),
            RawLabels::Named { ids, .. } => ids.len(),
        }
    }

    /// Records the label of the row at `at`.
    pub fn push(&mut self, field: &str, at: At<'_>) -> Result<(), DataError> {
        match self {
            RawLabels::Real(v) => v.push(at.f64(field.trim(), "label")?),
            RawLabels::Named { names, index, ids } => {
                let key = canonical(field);
                if key.is_empty() {
                    return Err(at.err("empty label"));
                }
                let next = names.len();
                let id = *index.entry(key.clone()).or_insert(next);
                if id == next {
                    names.push((key, at.line));
                }
                ids.push(id);
            }
        }
        Ok(())
    }
}

/// How a training file's label values map to `f64` labels; reused for its test file.
#[derive(Debug, Clone, PartialEq)]
pub struct LabelMap {
    kind: LabelKind,
    /// Canonical value → label (empty for [`LabelKind::Real`]).
    values: HashMap<String, f64>,
}

/// Numeric order when both strings are numbers, string order otherwise.
fn label_order(a: &str, b: &str) -> Ordering {
    match (a.parse::<f64>(), b.parse::<f64>()) {
        (Ok(x), Ok(y)) => x.total_cmp(&y),
        _ => a.cmp(b),
    }
}

impl LabelMap {
    /// What the encoded labels mean.
    pub fn kind(&self) -> LabelKind {
        self.kind
    }

    /// Fits the map to the labels of the training file `path`.
    pub(crate) fn fit(rule: &LabelRule, raw: &RawLabels, path: &Path) -> Result<Self, DataError> {
        let names = match raw {
            RawLabels::Real(_) => {
                return Ok(LabelMap {
                    kind: LabelKind::Real,
                    values: HashMap::new(),
                });
            }
            RawLabels::Named { names, .. } => names,
        };
        let malformed = |(name, line): &(String, usize), reason: String| DataError::Malformed {
            path: path.to_path_buf(),
            line: *line,
            reason: format!("label `{name}`: {reason}"),
        };
        match rule {
            LabelRule::Real => Err(file_err(path, "internal: real labels collected by name")),
            LabelRule::Binary { positive } => {
                if let Some(third) = names.get(2) {
                    return Err(malformed(
                        third,
                        format!(
                            "a third distinct value for binary labels (after `{}` and `{}`)",
                            names[0].0, names[1].0
                        ),
                    ));
                }
                let positive = match positive {
                    Some(p) => {
                        let p = canonical(p);
                        if !names.iter().any(|(n, _)| *n == p) {
                            return Err(file_err(
                                path,
                                format!("the positive label `{p}` never occurs"),
                            ));
                        }
                        p
                    }
                    None => match names.as_slice() {
                        [a, b] => {
                            if label_order(&a.0, &b.0) == Ordering::Greater {
                                a.0.clone()
                            } else {
                                b.0.clone()
                            }
                        }
                        _ => {
                            return Err(file_err(
                                path,
                                "binary labels need two distinct values, or a named positive one",
                            ));
                        }
                    },
                };
                let values = names
                    .iter()
                    .map(|(n, _)| (n.clone(), if *n == positive { 1.0 } else { -1.0 }))
                    .collect();
                Ok(LabelMap {
                    kind: LabelKind::Binary,
                    values,
                })
            }
            LabelRule::Classes => {
                let numeric: Vec<Option<f64>> =
                    names.iter().map(|(n, _)| n.parse::<f64>().ok()).collect();
                if numeric.iter().all(Option::is_some) {
                    let mut max = 0.0f64;
                    for (name, v) in names.iter().zip(numeric.iter().flatten()) {
                        if *v < 0.0 || v.fract() != 0.0 || *v > MAX_CLASS {
                            return Err(malformed(
                                name,
                                format!("numeric class labels must be integers in 0..={MAX_CLASS}"),
                            ));
                        }
                        max = max.max(*v);
                    }
                    // Every integer class up to the largest one exists, seen or not, so that a
                    // test file may hold a class its training file lacks.
                    let k = max as usize + 1;
                    let values = (0..k)
                        .map(|c| (format!("{}", c as f64), c as f64))
                        .collect();
                    Ok(LabelMap {
                        kind: LabelKind::Classes(k),
                        values,
                    })
                } else {
                    let mut sorted: Vec<&str> = names.iter().map(|(n, _)| n.as_str()).collect();
                    sorted.sort_unstable();
                    let values = sorted
                        .iter()
                        .enumerate()
                        .map(|(c, n)| (n.to_string(), c as f64))
                        .collect();
                    Ok(LabelMap {
                        kind: LabelKind::Classes(sorted.len()),
                        values,
                    })
                }
            }
        }
    }

    /// The labels of `raw` (read from `path`) under this map.
    pub(crate) fn encode(&self, raw: RawLabels, path: &Path) -> Result<Vec<f64>, DataError> {
        match (raw, self.kind) {
            (RawLabels::Real(v), LabelKind::Real) => Ok(v),
            (RawLabels::Named { names, ids, .. }, LabelKind::Binary | LabelKind::Classes(_)) => {
                let mut by_id = Vec::with_capacity(names.len());
                for (name, line) in &names {
                    let Some(v) = self.values.get(name) else {
                        return Err(DataError::Malformed {
                            path: path.to_path_buf(),
                            line: *line,
                            reason: format!("label `{name}` does not occur in the training file"),
                        });
                    };
                    by_id.push(*v);
                }
                Ok(ids.into_iter().map(|id| by_id[id]).collect())
            }
            _ => Err(file_err(
                path,
                "labels were read with a different rule than the training file",
            )),
        }
    }
}

/// Fits a map on the labels of `path` and encodes them: the training-file path of every loader.
pub(crate) fn fit_encode(
    rule: &LabelRule,
    raw: RawLabels,
    path: &Path,
) -> Result<(Vec<f64>, LabelMap), DataError> {
    let map = LabelMap::fit(rule, &raw, path)?;
    Ok((map.encode(raw, path)?, map))
}
