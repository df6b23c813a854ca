//! A user's gradient with every record's gradient clipped in ℓ₁, for the Laplace mechanisms.
//!
//! Why per record, and why ℓ₁: a Laplace mechanism's noise is calibrated to the ℓ₁ sensitivity of
//! what it releases, and a loss gradient has no data-independent ℓ₁ bound (the squared loss's
//! grows with the residual; the logistic ones with `‖a‖₁`, several hundred on MNIST). Clipping each
//! record's gradient to `‖·‖₁ ≤ G₁` bounds the change of the user's mean gradient when one record is
//! replaced by `2G₁/m_i`, and when all of them are by `2G₁`, whatever the data.

use super::linalg::axpy;
use super::{Problem, ProblemError};

impl Problem {
    /// `out = (1/m_i) Σ_records clip₁(∇ℓ(x; a, b), G₁)` for user `user`, where `clip₁` scales a
    /// vector by `min(1, G₁/‖·‖₁)`; `clip = None` gives the plain `∇f_i(x)`. `record` is a buffer
    /// of the model's dimension for one record's gradient. A user without records gets 0.
    /// Returns how many records were clipped.
    ///
    /// # Errors
    /// [`ProblemError::Length`] when `x`, `out` or `record` is not of the problem's dimension,
    /// [`ProblemError::User`] for a user the problem does not have; nothing is written then.
    pub fn l1_clipped_user_grad(
        &self,
        user: usize,
        x: &[f64],
        clip: Option<f64>,
        out: &mut [f64],
        record: &mut [f64],
    ) -> Result<usize, ProblemError> {
        ProblemError::check_length("the model x", self.dim, x.len())?;
        ProblemError::check_length("the gradient buffer", self.dim, out.len())?;
        ProblemError::check_length("the record's gradient buffer", self.dim, record.len())?;
        if user >= self.n_users() {
            return Err(ProblemError::User {
                user,
                n_users: self.n_users(),
            });
        }
        out.fill(0.0);
        let Some(bound) = clip else {
            self.add_user_grad(user, x, 1.0, out);
            return Ok(0);
        };
        let m = self.data.records(user);
        let mut clipped = 0;
        for (a, b) in self.records(user) {
            record.fill(0.0);
            self.loss.add_record_grad(a, b, x, 1.0, record);
            let l1: f64 = record.iter().map(|v| v.abs()).sum();
            let scale = if l1 > bound {
                clipped += 1;
                bound / l1
            } else {
                1.0
            };
            axpy(scale / m as f64, record, out);
        }
        Ok(clipped)
    }
}
