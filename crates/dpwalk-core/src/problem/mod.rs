//! Problems: a per-user loss `f_i` and a regularizer `r`, with their prox operators.
//!
//! The objective of a run is `F(x) = (1/n) Σ_i f_i(x) + r(x)`, where `f_i` is the *mean* loss over
//! user `i`'s records (users weigh equally, whatever their number of records).
//!
//! INTERFACE STUB: the bodies are filled in by the problem/prox work; the signatures are what the
//! step, the simulator and the reference solver rely on.

use crate::data::{Dataset, UserData};
use thiserror::Error;

/// Errors of problem construction.
#[derive(Debug, Error, Clone, PartialEq)]
pub enum ProblemError {
    /// Placeholder until the problem module lands.
    #[error("{0}")]
    Invalid(String),
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

impl Regularizer {
    /// `r(x)`.
    pub fn value(&self, _x: &[f64]) -> f64 {
        todo!()
    }
    /// `out = prox_{t r}(v) = argmin_x t r(x) + ½‖x − v‖²`.
    pub fn prox(&self, _t: f64, _v: &[f64], _out: &mut [f64]) {
        todo!()
    }
}

/// A loss, a regularizer and the users' training data.
#[derive(Debug)]
pub struct Problem {
    _private: (),
}

impl Problem {
    /// Checks that labels fit the loss and dimensions agree.
    pub fn new(_loss: Loss, _reg: Regularizer, _data: UserData) -> Result<Self, ProblemError> {
        todo!()
    }
    /// Model dimension (`n_features`, or `classes * n_features` for multinomial).
    pub fn dim(&self) -> usize {
        todo!()
    }
    /// Number of users.
    pub fn n_users(&self) -> usize {
        todo!()
    }
    /// The loss.
    pub fn loss(&self) -> Loss {
        todo!()
    }
    /// The regularizer.
    pub fn regularizer(&self) -> &Regularizer {
        todo!()
    }
    /// The users' data.
    pub fn data(&self) -> &UserData {
        todo!()
    }
    /// `f_i(x)`: mean loss over user `i`'s records.
    pub fn user_loss(&self, _user: usize, _x: &[f64]) -> f64 {
        todo!()
    }
    /// `out = ∇f_i(x)`.
    pub fn user_grad(&self, _user: usize, _x: &[f64], _out: &mut [f64]) {
        todo!()
    }
    /// `F(x) = (1/n) Σ_i f_i(x) + r(x)`.
    pub fn objective(&self, _x: &[f64]) -> f64 {
        todo!()
    }
    /// Mean per-record loss on `data` (a test set), without the regularizer.
    pub fn dataset_loss(&self, _data: &Dataset, _x: &[f64]) -> f64 {
        todo!()
    }
    /// Misclassification rate on `data` for classifiers, `None` for regression.
    pub fn error_rate(&self, _data: &Dataset, _x: &[f64]) -> Option<f64> {
        todo!()
    }
    /// The prox operators `prox_{γ f_i}` for every user, with their caches built for this `γ`.
    pub fn local_prox(&self, _gamma: f64) -> Result<LocalProx<'_>, ProblemError> {
        todo!()
    }
}

/// `prox_{γ f_i}` for every user `i` of a problem, at one fixed `γ`.
#[derive(Debug)]
pub struct LocalProx<'a> {
    _problem: &'a Problem,
}

/// Reusable buffers for [`LocalProx::prox`], so a step allocates nothing.
#[derive(Debug, Default)]
pub struct ProxScratch {
    _private: (),
}

impl LocalProx<'_> {
    /// Buffers sized for this problem.
    pub fn scratch(&self) -> ProxScratch {
        todo!()
    }
    /// `out = prox_{γ f_i}(v) = argmin_x f_i(x) + ‖x − v‖² / (2γ)`.
    ///
    /// On entry `out` holds a starting point for iterative solvers (the step passes the current
    /// model `z`). Exact for squared loss; certified to a tolerance for the others.
    pub fn prox(&self, _user: usize, _v: &[f64], _out: &mut [f64], _scratch: &mut ProxScratch) {
        todo!()
    }
}
