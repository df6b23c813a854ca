//! Problems: a per-user loss `f_i` and a regularizer `r`, with their prox operators.
//!
//! The objective of a run is `F(x) = (1/n) Σ_i f_i(x) + r(x)`, where `f_i` is the *mean* loss over
//! user `i`'s records (users weigh equally, whatever their number of records; a user without
//! records has `f_i = 0`).
//!
//! Layout:
//! - this file: the types ([`Loss`], [`Regularizer`], [`Problem`], [`ProblemError`]), validation
//!   of a problem's data, and the objective;
//! - `loss`: stable scalar functions and the loss of one record with its gradient;
//! - `regularizer`: `r` and `prox_{t r}`;
//! - `clipped`: a user's gradient with each record's gradient clipped in ℓ₁ (Laplace mechanisms);
//! - `prox`: [`LocalProx`], the exact (squared) and certified (logistic, multinomial) `prox_{γ f_i}`;
//! - [`reference`](mod@reference): the independent, non-private solver the ADMM runs are checked against;
//! - `linalg`: dot products and a packed Cholesky factorization.
//!
//! Model layout: `x` has `n_features` entries (squared, logistic) or `classes · n_features`
//! (multinomial, row-major by class: class `k` owns `x[k·p..(k+1)·p]`). Labels follow the data
//! module's conventions: real (squared), `±1` (logistic), `0, 1, …, classes − 1` (multinomial).

mod clipped;
pub mod linalg;
mod loss;
mod prox;
pub mod reference;
mod regularizer;

pub use loss::Prediction;
pub use prox::{LocalProx, ProxScratch};

use crate::data::{Dataset, LabelKind, UserData};
use loss::class_index;
use thiserror::Error;

/// Errors of problem construction, of the prox operators' setup and of the reference solver.
#[derive(Debug, Error, Clone, PartialEq)]
pub enum ProblemError {
    /// The data have no users (`offsets` has fewer than two entries).
    #[error("the data have no users")]
    NoUsers,
    /// `n_features` is 0.
    #[error("the data have no features")]
    NoFeatures,
    /// The user offsets do not partition the rows.
    #[error("invalid user offsets: {0}")]
    Offsets(&'static str),
    /// The feature vector's length is not `rows · n_features`.
    #[error("{values} feature values do not make {rows} rows of {n_features} features")]
    Shape {
        /// `features.len()`.
        values: usize,
        /// Number of labels.
        rows: usize,
        /// Features per row.
        n_features: usize,
    },
    /// The model dimension `classes · n_features` overflows `usize`.
    #[error("model dimension {classes} × {n_features} overflows")]
    Dimension {
        /// Number of classes.
        classes: usize,
        /// Features per row.
        n_features: usize,
    },
    /// A feature value is NaN or infinite.
    #[error("feature {} of record {} is not finite (counted from 1)", .col + 1, .row + 1)]
    NonFiniteFeature {
        /// Row (from 0, in the user data's order; the message counts from 1).
        row: usize,
        /// Column (from 0).
        col: usize,
    },
    /// A label is NaN or infinite.
    #[error("the label of record {} is not finite (counted from 1)", .row + 1)]
    NonFiniteLabel {
        /// Row (from 0, in the user data's order; the message counts from 1).
        row: usize,
    },
    /// A logistic label is not `±1`.
    #[error("logistic loss needs labels +1 or -1; record {} has {label} (counted from 1)", .row + 1)]
    BinaryLabel {
        /// Row.
        row: usize,
        /// The label found.
        label: f64,
    },
    /// A multinomial label is not an integer in `0..classes`.
    #[error(
        "multinomial loss with {classes} classes needs integer labels in 0..{classes}; record {} has {label} (counted from 1)",
        .row + 1
    )]
    ClassLabel {
        /// Row.
        row: usize,
        /// The label found.
        label: f64,
        /// Number of classes of the loss.
        classes: usize,
    },
    /// A multinomial loss with fewer than two classes.
    #[error("multinomial loss needs at least 2 classes, got {0}")]
    TooFewClasses(usize),
    /// The dataset's declared label kind does not fit the loss (e.g. real targets for logistic).
    #[error("{loss:?} loss cannot use labels of kind {kind:?}")]
    LabelKind {
        /// The loss.
        loss: Loss,
        /// The dataset's label kind.
        kind: LabelKind,
    },
    /// A regularizer weight is negative or not finite.
    #[error("regularizer weight {name} = {value} must be finite and non-negative")]
    RegularizerWeight {
        /// `"l1"` or `"l2"`.
        name: &'static str,
        /// The weight found.
        value: f64,
    },
    /// The prox parameter γ is not finite and positive.
    #[error("prox parameter gamma = {0} must be finite and positive")]
    Gamma(f64),
    /// A user's prox system could not be factored (only on overflow, e.g. γ·‖a‖² = ∞).
    #[error("the prox system of user {user} is not positive definite (overflow?)")]
    Factorization {
        /// The user.
        user: usize,
    },
    /// Options of the reference solver are out of range.
    #[error("reference solver options: {0}")]
    ReferenceOptions(&'static str),
    /// The reference solver stopped at `max_iter` before its certificate reached the target.
    #[error(
        "reference solver did not converge in {iterations} iterations: gradient-mapping norm {certificate:e} > target {target:e} (objective {objective})"
    )]
    NotConverged {
        /// Iterations done.
        iterations: usize,
        /// Norm of the gradient mapping at the last iterate.
        certificate: f64,
        /// The norm it had to reach.
        target: f64,
        /// Objective at the last iterate.
        objective: f64,
    },
    /// A vector handed to a step or a prox has the wrong length for the problem (e.g. a run's
    /// `dimension` that is not its data's).
    #[error("{what} has {got} values, but the problem's model dimension is {expected}")]
    Length {
        /// Which vector (`"the token's w"`, `"u_i"`, …).
        what: &'static str,
        /// The problem's dimension.
        expected: usize,
        /// The vector's length.
        got: usize,
    },
    /// A user index past the problem's users.
    #[error("user {user} does not exist: the problem has {n_users} users")]
    User {
        /// The index given.
        user: usize,
        /// Users of the problem.
        n_users: usize,
    },
}

impl ProblemError {
    /// `Ok` when `got == expected`, else [`ProblemError::Length`] naming `what`.
    pub fn check_length(what: &'static str, expected: usize, got: usize) -> Result<(), Self> {
        if got == expected {
            Ok(())
        } else {
            Err(ProblemError::Length {
                what,
                expected,
                got,
            })
        }
    }
}

/// The loss of one record.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Loss {
    /// `½ (aᵀx − b)²` (least squares, ridge, Lasso).
    Squared,
    /// `log(1 + exp(−b aᵀx))`, `b ∈ {−1, +1}`.
    Logistic,
    /// Softmax cross-entropy over `classes`; `x` is `classes × n_features`, row-major by class.
    Multinomial {
        /// Number of classes.
        classes: usize,
    },
}

/// The regularizer `r`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Regularizer {
    /// `r = 0`.
    None,
    /// `r(x) = (l2/2) ‖x‖²`.
    L2 {
        /// Weight.
        l2: f64,
    },
    /// `r(x) = l1 ‖x‖₁`.
    L1 {
        /// Weight.
        l1: f64,
    },
    /// `r(x) = l1 ‖x‖₁ + (l2/2) ‖x‖²`.
    ElasticNet {
        /// L1 weight.
        l1: f64,
        /// L2 weight.
        l2: f64,
    },
}

/// A loss, a regularizer and the users' training data, validated together.
#[derive(Debug)]
pub struct Problem {
    loss: Loss,
    reg: Regularizer,
    data: UserData,
    dim: usize,
}

impl Problem {
    /// Checks that labels fit the loss and dimensions agree.
    ///
    /// Refused: no users or no features; offsets that do not partition the rows; a feature vector
    /// of the wrong length; non-finite features or labels; logistic labels other than `±1`;
    /// multinomial labels that are not integers in `0..classes`, or fewer than 2 classes; a label
    /// kind that contradicts the loss (logistic needs [`LabelKind::Binary`], multinomial
    /// [`LabelKind::Classes`] with the same count; squared accepts any kind, regression on class
    /// labels being legitimate); negative or non-finite regularizer weights.
    pub fn new(loss: Loss, reg: Regularizer, data: UserData) -> Result<Self, ProblemError> {
        reg.validate()?;
        let p = data.data.n_features;
        if let Loss::Multinomial { classes } = loss
            && classes < 2
        {
            return Err(ProblemError::TooFewClasses(classes));
        }
        let kind = data.data.label_kind;
        let kind_fits = match loss {
            Loss::Squared => true,
            Loss::Logistic => kind == LabelKind::Binary,
            Loss::Multinomial { classes } => kind == LabelKind::Classes(classes),
        };
        if !kind_fits {
            return Err(ProblemError::LabelKind { loss, kind });
        }
        if data.n_users() == 0 {
            return Err(ProblemError::NoUsers);
        }
        if p == 0 {
            return Err(ProblemError::NoFeatures);
        }
        let dim = loss.model_dim(p).ok_or(ProblemError::Dimension {
            classes: match loss {
                Loss::Multinomial { classes } => classes,
                _ => 1,
            },
            n_features: p,
        })?;
        let rows = data.data.rows();
        if data.offsets[0] != 0 {
            return Err(ProblemError::Offsets("the first offset must be 0"));
        }
        if data.offsets.windows(2).any(|w| w[0] > w[1]) {
            return Err(ProblemError::Offsets("offsets must be non-decreasing"));
        }
        if data.offsets[data.offsets.len() - 1] != rows {
            return Err(ProblemError::Offsets(
                "the last offset must be the number of rows",
            ));
        }
        if rows.checked_mul(p) != Some(data.data.features.len()) {
            return Err(ProblemError::Shape {
                values: data.data.features.len(),
                rows,
                n_features: p,
            });
        }
        if let Some(i) = data.data.features.iter().position(|v| !v.is_finite()) {
            return Err(ProblemError::NonFiniteFeature {
                row: i / p,
                col: i % p,
            });
        }
        for (row, &label) in data.data.labels.iter().enumerate() {
            if !label.is_finite() {
                return Err(ProblemError::NonFiniteLabel { row });
            }
            match loss {
                Loss::Squared => {}
                Loss::Logistic if label == 1.0 || label == -1.0 => {}
                Loss::Logistic => return Err(ProblemError::BinaryLabel { row, label }),
                Loss::Multinomial { classes } => {
                    if class_index(label, classes).is_none() {
                        return Err(ProblemError::ClassLabel {
                            row,
                            label,
                            classes,
                        });
                    }
                }
            }
        }
        Ok(Self {
            loss,
            reg,
            data,
            dim,
        })
    }

    /// Model dimension (`n_features`, or `classes * n_features` for multinomial).
    pub fn dim(&self) -> usize {
        self.dim
    }

    /// Number of users.
    pub fn n_users(&self) -> usize {
        self.data.n_users()
    }

    /// The loss.
    pub fn loss(&self) -> Loss {
        self.loss
    }

    /// The regularizer.
    pub fn regularizer(&self) -> &Regularizer {
        &self.reg
    }

    /// The users' data.
    pub fn data(&self) -> &UserData {
        &self.data
    }

    /// The records `(features, label)` of user `i`.
    fn records(&self, user: usize) -> impl Iterator<Item = (&[f64], f64)> {
        let p = self.data.data.n_features;
        self.data
            .features(user)
            .chunks_exact(p)
            .zip(self.data.labels(user).iter().copied())
    }

    /// `f_i(x)`: mean loss over user `i`'s records (0 without records).
    pub fn user_loss(&self, user: usize, x: &[f64]) -> f64 {
        assert_eq!(x.len(), self.dim, "model dimension");
        let m = self.data.records(user);
        if m == 0 {
            return 0.0;
        }
        self.records(user)
            .map(|(a, b)| self.loss.record_loss(a, b, x))
            .sum::<f64>()
            / m as f64
    }

    /// `G₂`: a bound on every record's loss gradient `‖∇ℓ(x; a, b)‖₂` over all models, the
    /// loss's factor ([`Loss::record_grad_factor`]) times the largest feature norm `max ‖a‖₂` of
    /// the users' records; `None` for the squared loss, which has none. It holds for a record
    /// that replaces one of these only if that record's norm is within the same bound: the
    /// record-level view assumes so (`dpwalk_privacy::unit`).
    pub fn record_grad_bound(&self) -> Option<f64> {
        self.loss.record_grad_bound(self.max_feature_norm())
    }

    /// The largest feature norm `max ‖a‖₂` of the users' records (0 without records).
    pub fn max_feature_norm(&self) -> f64 {
        let p = self.data.data.n_features;
        self.data
            .data
            .features
            .chunks_exact(p)
            .map(linalg::norm)
            .fold(0.0, f64::max)
    }

    /// `out = ∇f_i(x)`.
    pub fn user_grad(&self, user: usize, x: &[f64], out: &mut [f64]) {
        assert_eq!(x.len(), self.dim, "model dimension");
        assert_eq!(out.len(), self.dim, "gradient dimension");
        out.fill(0.0);
        self.add_user_grad(user, x, 1.0, out);
    }

    /// `out += weight · ∇f_i(x)`; returns `f_i(x)`.
    fn add_user_grad(&self, user: usize, x: &[f64], weight: f64, out: &mut [f64]) -> f64 {
        let m = self.data.records(user);
        if m == 0 {
            return 0.0;
        }
        let w = weight / m as f64;
        let total: f64 = self
            .records(user)
            .map(|(a, b)| self.loss.add_record_grad(a, b, x, w, out))
            .sum();
        total / m as f64
    }

    /// `out = ∇((1/n) Σ_i f_i)(x)`, the gradient of the smooth part of `F`; returns its value.
    pub fn smooth_grad(&self, x: &[f64], out: &mut [f64]) -> f64 {
        assert_eq!(x.len(), self.dim, "model dimension");
        assert_eq!(out.len(), self.dim, "gradient dimension");
        out.fill(0.0);
        let n = self.n_users();
        let w = 1.0 / n as f64;
        (0..n)
            .map(|i| self.add_user_grad(i, x, w, out))
            .sum::<f64>()
            * w
    }

    /// `F(x) = (1/n) Σ_i f_i(x) + r(x)`.
    pub fn objective(&self, x: &[f64]) -> f64 {
        let n = self.n_users();
        (0..n).map(|i| self.user_loss(i, x)).sum::<f64>() / n as f64 + self.reg.value(x)
    }

    /// Mean per-record loss on `data` (a test set), without the regularizer.
    ///
    /// NaN when `data` has no rows, a different `n_features`, or (multinomial) a label that is not
    /// a class: a metric, not a validated input.
    pub fn dataset_loss(&self, data: &Dataset, x: &[f64]) -> f64 {
        assert_eq!(x.len(), self.dim, "model dimension");
        if data.n_features != self.data.data.n_features || data.rows() == 0 {
            return f64::NAN;
        }
        let total: f64 = (0..data.rows())
            .map(|r| self.loss.record_loss(data.row(r), data.labels[r], x))
            .sum();
        total / data.rows() as f64
    }

    /// Misclassification rate on `data` for classifiers, `None` for regression.
    ///
    /// Binary: the prediction is `+1` when `aᵀx > 0`, else `−1`. Multinomial: the first class of
    /// largest logit. NaN when `data` has no rows or a different `n_features`.
    pub fn error_rate(&self, data: &Dataset, x: &[f64]) -> Option<f64> {
        assert_eq!(x.len(), self.dim, "model dimension");
        let p = self.data.data.n_features;
        if self.loss == Loss::Squared {
            return None;
        }
        if data.n_features != p || data.rows() == 0 {
            return Some(f64::NAN);
        }
        let errors = (0..data.rows())
            .filter(|&r| self.loss.predict(data.row(r), x).label != data.labels[r])
            .count();
        Some(errors as f64 / data.rows() as f64)
    }

    /// The most frequent label of the training records (all users' rows) for classifiers, the
    /// smallest of the most frequent on a tie; `None` for regression.
    ///
    /// Why beside the all-zero model: that model is not the majority class. A binary model
    /// predicts `+1` only where `aᵀx > 0`, so the zero model predicts `−1` everywhere, and a
    /// multinomial one predicts the first class; on data whose majority is another label the two
    /// references differ (issue 29: 0.628 against 0.372 on a data set of majority `+1`).
    pub fn majority_class(&self) -> Option<f64> {
        if self.loss == Loss::Squared {
            return None;
        }
        let mut labels = self.data.data.labels.clone();
        labels.sort_by(f64::total_cmp);
        let mut best: Option<(f64, usize)> = None;
        for run in labels.chunk_by(|a, b| a == b) {
            if best.is_none_or(|(_, count)| run.len() > count) {
                best = Some((run[0], run.len()));
            }
        }
        best.map(|(label, _)| label)
    }

    /// The prediction of `x` for every row of `data` ([`Loss::predict`]); `None` when `data` has
    /// a different `n_features`.
    pub fn predictions(&self, data: &Dataset, x: &[f64]) -> Option<Vec<Prediction>> {
        assert_eq!(x.len(), self.dim, "model dimension");
        if data.n_features != self.data.data.n_features {
            return None;
        }
        Some(
            (0..data.rows())
                .map(|r| self.loss.predict(data.row(r), x))
                .collect(),
        )
    }

    /// The prox operators `prox_{γ f_i}` for every user, with their caches built for this `γ`.
    pub fn local_prox(&self, gamma: f64) -> Result<LocalProx<'_>, ProblemError> {
        LocalProx::new(self, gamma)
    }
}

#[cfg(test)]
pub(crate) mod test_util;

#[cfg(test)]
#[allow(clippy::unwrap_used)] // a failed unwrap is a failed test
mod tests;
