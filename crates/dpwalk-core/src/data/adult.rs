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
            &["Wife", "Own-child", "Husband", "Not-in-family", "Other-relative", "Unmarried"],
        ),
        Cat("race", &["White", "Asian-Pac-Islander", "Amer-Indian-Eskimo", "Other", "Black"]),
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
        let reason = if seen_rows { "no rows without missing values" } else { "no data rows" };
        return Err(file_err(path, reason));
    }
    Ok(Dataset { features, labels, n_features: N_FEATURES, label_kind: LabelKind::Binary })
}

/// Steps 3 and 4 of the standard preprocessing: max-abs column scaling fitted on `train`, then
/// rows clipped to L2 norm 1.
pub fn preprocess(train: &mut Dataset, test: Option<&mut Dataset>) -> Result<(), DataError> {
    STANDARD.apply(train, test)
}

/// Steps 3 and 4 as a [`Preprocess`], for callers that split the training file first.
pub const STANDARD: Preprocess = Preprocess { max_abs_scale: true, max_row_norm: Some(1.0) };

/// Reads and preprocesses a training file and, optionally, its test file.
pub fn load(train: &Path, test: Option<&Path>) -> Result<(Dataset, Option<Dataset>), DataError> {
    let mut train = read(train)?;
    let mut test = test.map(read).transpose()?;
    preprocess(&mut train, test.as_mut())?;
    Ok((train, test))
}
