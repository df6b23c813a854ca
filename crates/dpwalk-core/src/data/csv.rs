//! Delimited text (CSV, TSV, …): one record per line, a label column chosen by header name or the
//! last column, every other column a numeric feature.
//!
//! Deliberately simple: fields are split on a single delimiter character and trimmed; quoting is
//! not supported (a quoted number fails to parse, with its line). Blank lines are skipped.

use super::labels::{LabelMap, LabelRule, RawLabels, fit_encode};
use super::read::{At, file_err, for_each_line};
use super::{DataError, Dataset};
use std::path::Path;

/// How to read a delimited file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CsvOptions {
    /// Field separator.
    pub delimiter: char,
    /// Whether the first non-blank line names the columns.
    pub header: bool,
    /// Name of the label column (needs `header`); `None` means the last column.
    pub label_column: Option<String>,
    /// How to interpret the label column.
    pub labels: LabelRule,
}

impl Default for CsvOptions {
    /// Comma-separated, no header, real labels in the last column.
    fn default() -> Self {
        CsvOptions {
            delimiter: ',',
            header: false,
            label_column: None,
            labels: LabelRule::Real,
        }
    }
}

/// Reads a training file: its labels fit the returned [`LabelMap`].
pub fn read(path: &Path, opts: &CsvOptions) -> Result<(Dataset, LabelMap), DataError> {
    let (features, n_features, raw) = parse(path, opts)?;
    let (labels, map) = fit_encode(&opts.labels, raw, path)?;
    Ok((
        Dataset {
            features,
            labels,
            n_features,
            label_kind: map.kind(),
        },
        map,
    ))
}

/// Reads a file whose labels are encoded like those of a training file (`train_labels`).
pub fn read_like(
    path: &Path,
    opts: &CsvOptions,
    train_labels: &LabelMap,
) -> Result<Dataset, DataError> {
    let (features, n_features, raw) = parse(path, opts)?;
    let labels = train_labels.encode(raw, path)?;
    Ok(Dataset {
        features,
        labels,
        n_features,
        label_kind: train_labels.kind(),
    })
}

/// Row-major features, features per row, and the raw label column.
fn parse(path: &Path, opts: &CsvOptions) -> Result<(Vec<f64>, usize, RawLabels), DataError> {
    if opts.label_column.is_some() && !opts.header {
        return Err(DataError::Param(
            "a label column named by header needs `header = true`".into(),
        ));
    }
    let mut features = Vec::new();
    let mut raw = RawLabels::new(&opts.labels);
    // (number of fields, index of the label field), known after the header or the first row.
    let mut layout: Option<(usize, usize)> = None;
    let mut expect_header = opts.header;
    for_each_line(path, |at: At<'_>, line| {
        if expect_header {
            expect_header = false;
            let names: Vec<&str> = line.split(opts.delimiter).map(str::trim).collect();
            let label = match &opts.label_column {
                Some(name) => names
                    .iter()
                    .position(|n| n == name)
                    .ok_or_else(|| at.err(format!("no column named `{name}` in the header")))?,
                None => names.len() - 1,
            };
            if names.len() < 2 {
                return Err(at.err("a header needs a label column and at least one feature"));
            }
            layout = Some((names.len(), label));
            return Ok(());
        }
        let n_fields = line.split(opts.delimiter).count();
        let (expected, label) = *layout.get_or_insert((n_fields, n_fields - 1));
        if n_fields != expected {
            return Err(at.err(format!("expected {expected} fields, found {n_fields}")));
        }
        if expected < 2 {
            return Err(at.err("a row needs a label and at least one feature"));
        }
        for (i, field) in line.split(opts.delimiter).enumerate() {
            if i == label {
                raw.push(field, at)?;
            } else {
                features.push(at.f64(field.trim(), "feature")?);
            }
        }
        Ok(())
    })?;
    match layout {
        Some((n_fields, _)) if raw.len() > 0 => Ok((features, n_fields - 1, raw)),
        _ => Err(file_err(path, "no data rows")),
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)] // a failed unwrap is a failed test
mod tests {
    use super::*;
    use crate::data::LabelKind;
    use crate::data::testutil::temp_file;

    fn opts(labels: LabelRule) -> CsvOptions {
        CsvOptions {
            labels,
            ..CsvOptions::default()
        }
    }

    #[test]
    fn reads_last_column_real_labels_plain_and_gzipped() {
        let text = "1.5, 2, 3.25\n\n-4,5e-1,-6\r\n";
        for name in ["a.csv", "a.csv.gz"] {
            let f = temp_file(name, text);
            let (d, map) = read(&f, &CsvOptions::default()).unwrap();
            assert_eq!(d.n_features, 2);
            assert_eq!(d.features, vec![1.5, 2.0, -4.0, 0.5]);
            assert_eq!(d.labels, vec![3.25, -6.0]);
            assert_eq!(d.label_kind, LabelKind::Real);
            assert_eq!(map.kind(), LabelKind::Real);
        }
    }

    #[test]
    fn named_label_column_with_header_and_delimiter() {
        let f = temp_file("b.csv", "x1;y;x2\n1;yes;2\n3;no;4\n5;yes;6\n");
        let o = CsvOptions {
            delimiter: ';',
            header: true,
            label_column: Some("y".into()),
            labels: LabelRule::Binary {
                positive: Some("yes".into()),
            },
        };
        let (d, _) = read(&f, &o).unwrap();
        assert_eq!(d.features, vec![1.0, 2.0, 3.0, 4.0, 5.0, 6.0]);
        assert_eq!(d.labels, vec![1.0, -1.0, 1.0]);
        assert_eq!(d.label_kind, LabelKind::Binary);
    }

    #[test]
    fn binary_without_named_positive_takes_the_larger_value() {
        let f = temp_file("c.csv", "1,0\n2,1\n3,0\n");
        let (d, _) = read(&f, &opts(LabelRule::Binary { positive: None })).unwrap();
        assert_eq!(d.labels, vec![-1.0, 1.0, -1.0]);
        // Numeric labels compare by value, so `+1` and `1` are one label and -1 < 1.
        let f = temp_file("c2.csv", "1,+1\n2,-1\n3,1\n");
        let (d, _) = read(&f, &opts(LabelRule::Binary { positive: None })).unwrap();
        assert_eq!(d.labels, vec![1.0, -1.0, 1.0]);
    }

    #[test]
    fn binary_rejects_a_third_value_at_its_line() {
        let f = temp_file("d.csv", "1,a\n2,b\n\n3,a\n4,c\n");
        let err = read(&f, &opts(LabelRule::Binary { positive: None })).unwrap_err();
        assert_eq!(err.line(), Some(5), "{err}");
        let f = temp_file("d2.csv", "1,a\n2,a\n");
        assert!(matches!(
            read(&f, &opts(LabelRule::Binary { positive: None })),
            Err(DataError::File { .. })
        ));
    }

    #[test]
    fn classes_by_integer_or_sorted_name_and_test_file_reuses_the_map() {
        let f = temp_file("e.csv", "1,2\n2,0\n3,1\n");
        let (d, _) = read(&f, &opts(LabelRule::Classes)).unwrap();
        assert_eq!(d.labels, vec![2.0, 0.0, 1.0]);
        assert_eq!(d.label_kind, LabelKind::Classes(3));

        let train = temp_file("f.csv", "1,dog\n2,cat\n3,emu\n4,cat\n");
        let o = opts(LabelRule::Classes);
        let (d, map) = read(&train, &o).unwrap();
        assert_eq!(d.labels, vec![1.0, 0.0, 2.0, 0.0]);
        assert_eq!(d.label_kind, LabelKind::Classes(3));
        let test = temp_file("g.csv", "5,emu\n6,dog\n");
        let t = read_like(&test, &o, &map).unwrap();
        assert_eq!(t.labels, vec![2.0, 1.0]);
        assert_eq!(t.label_kind, LabelKind::Classes(3));
        let bad = temp_file("h.csv", "5,emu\n6,yak\n");
        assert_eq!(read_like(&bad, &o, &map).unwrap_err().line(), Some(2));
    }

    #[test]
    fn malformed_rows_name_their_line() {
        let cases = [
            ("1,2,3\n4,5\n", 2, "fields"),
            ("1,2,3\n4,x,6\n", 2, "parse"),
            ("1,2,3\n\n4,5,6\n7,inf,9\n", 4, "non-finite"),
            ("1,2,3\n4,5,NaN\n", 2, "non-finite"),
            ("7\n", 1, "feature"),
        ];
        for (text, line, what) in cases {
            let f = temp_file("m.csv", text);
            let err = read(&f, &CsvOptions::default()).unwrap_err();
            assert_eq!(err.line(), Some(line), "{text:?}: {err}");
            assert!(err.to_string().contains(what), "{err}");
            assert!(err.to_string().contains("m.csv"), "{err}");
        }
    }

    #[test]
    fn header_errors_and_empty_files() {
        let f = temp_file("n.csv", "a,b\n1,2\n");
        let o = CsvOptions {
            header: true,
            label_column: Some("z".into()),
            ..CsvOptions::default()
        };
        assert_eq!(read(&f, &o).unwrap_err().line(), Some(1));
        let o = CsvOptions {
            label_column: Some("b".into()),
            ..CsvOptions::default()
        };
        assert!(matches!(read(&f, &o), Err(DataError::Param(_))));
        for text in ["", "\n\n", "a,b\n"] {
            let f = temp_file("o.csv", text);
            let o = CsvOptions {
                header: true,
                ..CsvOptions::default()
            };
            assert!(
                matches!(read(&f, &o), Err(DataError::File { .. })),
                "{text:?}"
            );
        }
        let missing = std::env::temp_dir().join("dpwalk-data-does-not-exist.csv");
        assert!(matches!(
            read(&missing, &CsvOptions::default()),
            Err(DataError::Io { .. })
        ));
    }

    #[test]
    fn corrupt_gzip_and_bad_utf8_are_errors_not_panics() {
        let f = temp_file("p.csv.gz", "");
        std::fs::write(&*f, b"\x1f\x8b\x08\x00garbage").unwrap();
        assert!(matches!(
            read(&f, &CsvOptions::default()),
            Err(DataError::Io { .. })
        ));
        let g = temp_file("q.csv", "");
        std::fs::write(&*g, b"1,2\n3,\xff\n").unwrap();
        assert_eq!(
            read(&g, &CsvOptions::default()).unwrap_err().line(),
            Some(2)
        );
    }
}
