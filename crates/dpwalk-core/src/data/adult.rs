//! The UCI Adult (census income) dataset in its raw form, with the standard preprocessing of the
//! private-ADMM literature.
//!
//! Raw format: one record per line, 15 fields separated by `,` (and spaces, trimmed): 14
//! attributes then the label `<=50K` / `>50K`. In `adult.test` the first line is
//! `|1x3 Cross validator` and labels end with a dot; lines starting with `|` are skipped and a
//! trailing dot is stripped in both files. Missing values are `?`.
//!
//! Preprocessing ([`read`] then [`preprocess`], or [`load`] for both):
//! 1. rows with a missing value are dropped (32,561 → 30,162 train, 16,281 → 15,060 test);
//! 2. the 6 continuous attributes are kept as they are and the 8 categorical ones are one-hot
//!    encoded over the *fixed* category lists of `adult.names` ([`ATTRIBUTES`]), so that every
//!    split has the same columns whatever categories it happens to contain: 6 + 99 =
//!    [`N_FEATURES`] = 105 columns. (Encoders that learn the categories from the data get 104:
//!    `workclass = Never-worked` only occurs in rows whose occupation is missing, so it vanishes
//!    with them; here its column stays, all zeros.)
//! 3. each column is divided by its maximum absolute value on the training split (applied to
//!    the test split as is; an all-zero column is left as is);
//! 4. each row is scaled to L2 norm at most 1;
//! 5. labels: `>50K` → `+1`, `<=50K` → `-1`.
//!
//! Any other value (an unknown category, an unparsable number, a wrong field count) is an error
//! naming the file and line.

use super::preprocess::Preprocess;
use super::read::{At, file_err, for_each_line};
use super::{DataError, Dataset, LabelKind};
use std::path::Path;

/// One attribute of the raw records.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Attribute {
    /// A number, kept as one column.
    Continuous(&'static str),
    /// A category, one-hot encoded over this fixed list (from `adult.names`).
    Categorical(&'static str, &'static [&'static str]),
}

impl Attribute {
    /// Number of columns this attribute becomes.
    pub const fn width(&self) -> usize {
        match self {
            Attribute::Continuous(_) => 1,
            Attribute::Categorical(_, cats) => cats.len(),
        }
    }
}

/// The 14 attributes in file order, with the category lists of `adult.names`.
pub const ATTRIBUTES: [Attribute; 14] = {
    use Attribute::{Categorical as Cat, Continuous as Num};
    [
        Num("age"),
        Cat(
            "workclass",
            &[
                "Private",
                "Self-emp-not-inc",
                "Self-emp-inc",
                "Federal-gov",
                "Local-gov",
                "State-gov",
                "Without-pay",
                "Never-worked",
            ],
        ),
        Num("fnlwgt"),
        Cat(
            "education",
            &[
                "Bachelors",
                "Some-college",
                "11th",
                "HS-grad",
                "Prof-school",
                "Assoc-acdm",
                "Assoc-voc",
                "9th",
                "7th-8th",
                "12th",
                "Masters",
                "1st-4th",
                "10th",
                "Doctorate",
                "5th-6th",
                "Preschool",
            ],
        ),
        Num("education-num"),
        Cat(
            "marital-status",
            &[
                "Married-civ-spouse",
                "Divorced",
                "Never-married",
                "Separated",
                "Widowed",
                "Married-spouse-absent",
                "Married-AF-spouse",
            ],
        ),
        Cat(
            "occupation",
            &[
                "Tech-support",
                "Craft-repair",
                "Other-service",
                "Sales",
                "Exec-managerial",
                "Prof-specialty",
                "Handlers-cleaners",
                "Machine-op-inspct",
                "Adm-clerical",
                "Farming-fishing",
                "Transport-moving",
                "Priv-house-serv",
                "Protective-serv",
                "Armed-Forces",
            ],
        ),
        Cat(
            "relationship",
            &[
                "Wife",
                "Own-child",
                "Husband",
                "Not-in-family",
                "Other-relative",
                "Unmarried",
            ],
        ),
        Cat(
            "race",
            &[
                "White",
                "Asian-Pac-Islander",
                "Amer-Indian-Eskimo",
                "Other",
                "Black",
            ],
        ),
        Cat("sex", &["Female", "Male"]),
        Num("capital-gain"),
        Num("capital-loss"),
        Num("hours-per-week"),
        Cat(
            "native-country",
            &[
                "United-States",
                "Cambodia",
                "England",
                "Puerto-Rico",
                "Canada",
                "Germany",
                "Outlying-US(Guam-USVI-etc)",
                "India",
                "Japan",
                "Greece",
                "South",
                "China",
                "Cuba",
                "Iran",
                "Honduras",
                "Philippines",
                "Italy",
                "Poland",
                "Jamaica",
                "Vietnam",
                "Mexico",
                "Portugal",
                "Ireland",
                "France",
                "Dominican-Republic",
                "Laos",
                "Ecuador",
                "Taiwan",
                "Haiti",
                "Columbia",
                "Hungary",
                "Guatemala",
                "Nicaragua",
                "Scotland",
                "Thailand",
                "Yugoslavia",
                "El-Salvador",
                "Trinadad&Tobago",
                "Peru",
                "Hong",
                "Holand-Netherlands",
            ],
        ),
    ]
};

/// Number of feature columns after one-hot encoding: 6 continuous + 99 categories.
pub const N_FEATURES: usize = {
    let mut n = 0;
    let mut i = 0;
    while i < ATTRIBUTES.len() {
        n += ATTRIBUTES[i].width();
        i += 1;
    }
    n
};

/// The column names, `attribute` or `attribute=category`, in feature order.
pub fn feature_names() -> Vec<String> {
    ATTRIBUTES
        .iter()
        .flat_map(|a| match a {
            Attribute::Continuous(name) => vec![(*name).to_string()],
            Attribute::Categorical(name, cats) => {
                cats.iter().map(|c| format!("{name}={c}")).collect()
            }
        })
        .collect()
}

/// Reads a raw Adult file: complete rows only, one-hot encoded, *not* scaled.
pub fn read(path: &Path) -> Result<Dataset, DataError> {
    let mut features = Vec::new();
    let mut labels = Vec::new();
    let mut seen_rows = false;
    for_each_line(path, |at: At<'_>, line| {
        if line.starts_with('|') {
            return Ok(());
        }
        seen_rows = true;
        let fields: Vec<&str> = line.split(',').map(str::trim).collect();
        if fields.len() != ATTRIBUTES.len() + 1 {
            return Err(at.err(format!(
                "expected {} fields, found {}",
                ATTRIBUTES.len() + 1,
                fields.len()
            )));
        }
        if fields.contains(&"?") {
            return Ok(());
        }
        let label = match fields[ATTRIBUTES.len()].trim_end_matches('.') {
            ">50K" => 1.0,
            "<=50K" => -1.0,
            other => return Err(at.err(format!("label `{other}` is neither `>50K` nor `<=50K`"))),
        };
        let start = features.len();
        features.resize(start + N_FEATURES, 0.0);
        let row = &mut features[start..];
        let mut col = 0;
        for (attr, field) in ATTRIBUTES.iter().zip(&fields) {
            match attr {
                Attribute::Continuous(name) => row[col] = at.f64(field, name)?,
                Attribute::Categorical(name, cats) => {
                    let Some(k) = cats.iter().position(|c| c == field) else {
                        return Err(at.err(format!("unknown {name} `{field}`")));
                    };
                    row[col + k] = 1.0;
                }
            }
            col += attr.width();
        }
        labels.push(label);
        Ok(())
    })?;
    if labels.is_empty() {
        let reason = if seen_rows {
            "no rows without missing values"
        } else {
            "no data rows"
        };
        return Err(file_err(path, reason));
    }
    Ok(Dataset {
        features,
        labels,
        n_features: N_FEATURES,
        label_kind: LabelKind::Binary,
    })
}

/// Steps 3 and 4 of the standard preprocessing: max-abs column scaling fitted on `train`, then
/// rows clipped to L2 norm 1.
pub fn preprocess(train: &mut Dataset, test: Option<&mut Dataset>) -> Result<(), DataError> {
    STANDARD.apply(train, test)
}

/// Steps 3 and 4 as a [`Preprocess`], for callers that split the training file first.
pub const STANDARD: Preprocess = Preprocess {
    max_abs_scale: true,
    max_row_norm: Some(1.0),
};

/// Reads and preprocesses a training file and, optionally, its test file.
pub fn load(train: &Path, test: Option<&Path>) -> Result<(Dataset, Option<Dataset>), DataError> {
    let mut train = read(train)?;
    let mut test = test.map(read).transpose()?;
    preprocess(&mut train, test.as_mut())?;
    Ok((train, test))
}

#[cfg(test)]
#[allow(clippy::unwrap_used)] // a failed unwrap is a failed test
mod tests {
    use super::*;
    use crate::data::testutil::{temp_file, vendored};

    const TRAIN: &str = "\
39, State-gov, 77516, Bachelors, 13, Never-married, Adm-clerical, Not-in-family, White, Male, 2174, 0, 40, United-States, <=50K
50, Self-emp-not-inc, 83311, Bachelors, 13, Married-civ-spouse, Exec-managerial, Husband, White, Male, 0, 0, 13, United-States, >50K
54, ?, 180211, Some-college, 10, Married-civ-spouse, ?, Husband, Asian-Pac-Islander, Male, 0, 0, 60, South, >50K

";
    const TEST: &str = "\
|1x3 Cross validator
25, Private, 226802, 11th, 7, Never-married, Machine-op-inspct, Own-child, Black, Male, 0, 0, 40, United-States, <=50K.
44, Private, 160323, Some-college, 10, Married-civ-spouse, Machine-op-inspct, Husband, Black, Male, 7688, 0, 40, Holand-Netherlands, >50K.
";

    fn col(name: &str) -> usize {
        feature_names().iter().position(|n| n == name).unwrap()
    }

    #[test]
    fn feature_layout_is_fixed() {
        assert_eq!(N_FEATURES, 105);
        let names = feature_names();
        assert_eq!(names.len(), N_FEATURES);
        assert_eq!(names[0], "age");
        assert_eq!(names[1], "workclass=Private");
        assert_eq!(names[N_FEATURES - 1], "native-country=Holand-Netherlands");
    }

    #[test]
    fn raw_rows_are_one_hot_and_incomplete_rows_dropped() {
        let f = temp_file("adult.data", TRAIN);
        let d = read(&f).unwrap();
        assert_eq!((d.rows(), d.n_features), (2, N_FEATURES));
        assert_eq!(d.labels, vec![-1.0, 1.0]);
        assert_eq!(d.row(0)[col("age")], 39.0);
        assert_eq!(d.row(0)[col("capital-gain")], 2174.0);
        assert_eq!(d.row(1)[col("workclass=Self-emp-not-inc")], 1.0);
        // 6 continuous values + one 1 per categorical attribute.
        assert_eq!(d.row(0).iter().filter(|&&v| v == 1.0).count(), 8);
    }

    #[test]
    fn test_split_skips_the_header_strips_dots_and_uses_train_scaling() {
        let (tr, te) = (temp_file("a.data.gz", TRAIN), temp_file("a.test", TEST));
        let (train, test) = load(&tr, Some(&te)).unwrap();
        let test = test.unwrap();
        assert_eq!(test.labels, vec![-1.0, 1.0]);
        assert_eq!(test.n_features, train.n_features);
        // A category absent from the training file still has its column.
        let raw = read(&te).unwrap();
        assert_eq!(raw.row(1)[col("native-country=Holand-Netherlands")], 1.0);
        for d in [&train, &test] {
            for r in 0..d.rows() {
                let n = d.row(r).iter().map(|v| v * v).sum::<f64>().sqrt();
                assert!(n <= 1.0 + 1e-12 && n > 0.99, "{n}");
            }
        }
        // The test row's age 25 was divided by the training maximum 50 before row scaling.
        let (a, h) = (col("age"), col("hours-per-week"));
        let ratio = test.row(0)[a] / test.row(0)[h];
        assert!(
            (ratio - (25.0 / 50.0) / (40.0 / 40.0)).abs() < 1e-12,
            "{ratio}"
        );
    }

    #[test]
    fn malformed_rows_name_their_line() {
        let good = TRAIN.lines().next().unwrap();
        let cases = [
            good.replace("State-gov", "Space-gov"),
            good.replace("<=50K", "50K"),
            good.replace(", 77516", ""),
            good.replace("77516", "7x"),
            good.replace("77516", "inf"),
        ];
        for bad in cases {
            let f = temp_file("b.data", &format!("|comment\n{good}\n{bad}\n"));
            assert_eq!(read(&f).unwrap_err().line(), Some(3), "{bad}");
        }
        let f = temp_file("c.data", "|1x3 Cross validator\n");
        assert!(matches!(read(&f), Err(DataError::File { .. })));
        let f = temp_file("d.data", TRAIN.lines().nth(2).unwrap());
        assert!(matches!(read(&f), Err(DataError::File { .. })));
    }

    #[test]
    fn vendored_sample_loads_with_the_standard_preprocessing() {
        let (train, test) = load(
            &vendored("adult/adult-sample.data.gz"),
            Some(&vendored("adult/adult-sample.test.gz")),
        )
        .unwrap();
        let test = test.unwrap();
        assert_eq!(train.rows(), 10_048);
        assert_eq!((train.n_features, test.n_features), (105, 105));
        assert!(
            test.rows() > 4_900 && test.rows() < 5_100,
            "{}",
            test.rows()
        );
        for d in [&train, &test] {
            assert!(d.labels.iter().all(|&y| y == 1.0 || y == -1.0));
            assert!(
                (0..d.rows()).all(|r| d.row(r).iter().map(|v| v * v).sum::<f64>() <= 1.0 + 1e-12)
            );
        }
        let positive =
            train.labels.iter().filter(|&&y| y == 1.0).count() as f64 / train.rows() as f64;
        assert!((0.2..0.3).contains(&positive), "{positive}");
        // Never-worked rows always miss their occupation, so its column is all zero.
        let nw = col("workclass=Never-worked");
        assert!((0..train.rows()).all(|r| train.row(r)[nw] == 0.0));
    }
}
