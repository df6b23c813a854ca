//! The privacy unit: what two neighbouring datasets differ in (a scenario's `[privacy] unit`,
//! a run file's `[privacy]` table), and the inputs of the record-level clip a daemon run writes
//! down because its nodes cannot see each other's data.
//!
//! The simulator finds the record-level inputs in the data it holds (the fewest records of a
//! user, the largest feature norm). A daemon's members each hold only their own records, so a
//! run file states them (`min-records = m`, `feature-norm = R`), every member accounts with them
//! alike, and each node checks at start that its own data are within them
//! ([`RecordUnit::fit_rows`]): a node with fewer records or a longer row would make the
//! accounted clip too small for it. A row above the bound by no more than writing its features
//! in decimal can explain ([`ROUNDING`] per feature) is scaled to the bound rather than refused
//! (issue 26: a row of norm 1.0000001 in a six-decimal CSV was refused), so that the bound the
//! accounting uses holds exactly for the data the node steps on.

use super::SpecError;
use crate::problem::Loss;
use crate::problem::linalg::norm;
use serde::{Deserialize, Serialize};
use thiserror::Error;

/// Relative slack on a row's norm against `feature-norm`: a row written to unit norm in its
/// shortest decimal form may come back a few ulps above 1.
pub const NORM_SLACK: f64 = 1e-12;

/// How far one feature written with six decimals may be from the value it stands for: a row of
/// `p` features then reads back at most `ROUNDING·√p` above its norm (triangle inequality).
pub const ROUNDING: f64 = 5e-7;

/// Scales `row` to norm at most `bound` if it is longer (down to exactly within it: a product that
/// rounds up is shrunk by a few ulps until it is not; where even that cannot be computed, as for a
/// bound so small that the squares underflow, the row becomes zero, which is within any bound);
/// returns whether it did.
pub fn scale_to_norm(row: &mut [f64], bound: f64) -> bool {
    let n = norm(row);
    if n <= bound {
        return false;
    }
    let f = bound / n;
    row.iter_mut().for_each(|v| *v *= f);
    for _ in 0..64 {
        if norm(row) <= bound {
            return true;
        }
        row.iter_mut().for_each(|v| *v *= 1.0 - 4.0 * f64::EPSILON);
    }
    if norm(row) > bound {
        row.iter_mut().for_each(|v| *v = 0.0);
    }
    true
}

/// The ℓ₂ norm of a record's features, as every record-level check computes it (`dpwalk data`
/// reports it, and scales rows with it, so that what it writes passes the node's check).
pub fn row_norm(features: &[f64]) -> f64 {
    norm(features)
}

/// What two neighbouring datasets differ in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum UnitName {
    /// All the records of one user.
    #[default]
    User,
    /// One record of one user.
    Record,
}

/// A run file's `[privacy]` table as written: unchecked until [`UnitSpec::check`].
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub struct UnitSpec {
    /// `user` or `record`.
    pub unit: UnitName,
    /// `m`: every member holds at least this many records (record level only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub min_records: Option<u64>,
    /// `R`: every record's feature vector has ℓ₂ norm at most this (record level only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub feature_norm: Option<f64>,
}

/// The checked record-level inputs of a run.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RecordUnit {
    /// `m`, at least 1.
    pub min_records: u64,
    /// `R`, positive and finite.
    pub feature_norm: f64,
    /// `G₂ = ` the loss's factor times `R` ([`Loss::record_grad_bound`]).
    pub grad_bound: f64,
}

impl UnitSpec {
    /// The record-level inputs under `table` for `loss`: `None` at user level (which takes no
    /// other key). At record level both keys are required, `min-records ≥ 1`, `feature-norm > 0`
    /// and finite, and the loss must bound every record's gradient (not the squared loss).
    pub fn check(&self, table: &str, loss: Loss) -> Result<Option<RecordUnit>, SpecError> {
        if self.unit == UnitName::User {
            for (key, given) in [
                ("min-records", self.min_records.is_some()),
                ("feature-norm", self.feature_norm.is_some()),
            ] {
                if given {
                    return Err(SpecError::new(
                        &[table, key],
                        "only applies to unit = \"record\"",
                    ));
                }
            }
            return Ok(None);
        }
        let grad_bound_of = |r: f64| {
            loss.record_grad_bound(r).ok_or_else(|| {
                SpecError::new(
                    &[table, "unit"],
                    format!(
                        "record-level accounting needs a bound on every record's gradient, and \
                         the {loss:?} loss has none (its residual is unbounded): use loss = \
                         \"logistic\" or \"multinomial\", or unit = \"user\""
                    ),
                )
            })
        };
        let min_records = match self.min_records {
            Some(m) if m >= 1 => m,
            Some(m) => {
                return Err(SpecError::new(
                    &[table, "min-records"],
                    format!("must be at least 1, got {m}"),
                ));
            }
            None => {
                return Err(SpecError::new(
                    &[table, "min-records"],
                    "unit = \"record\" needs the fewest records any member holds",
                ));
            }
        };
        let feature_norm = match self.feature_norm {
            Some(r) if r > 0.0 && r.is_finite() => r,
            Some(r) => {
                return Err(SpecError::new(
                    &[table, "feature-norm"],
                    format!("must be > 0 and finite, got {r}"),
                ));
            }
            None => {
                return Err(SpecError::new(
                    &[table, "feature-norm"],
                    "unit = \"record\" needs a bound on every record's feature norm",
                ));
            }
        };
        Ok(Some(RecordUnit {
            min_records,
            feature_norm,
            grad_bound: grad_bound_of(feature_norm)?,
        }))
    }
}

/// A member's data outside the run's record-level inputs.
#[derive(Debug, Clone, PartialEq, Error)]
pub enum OutsideUnit {
    /// Fewer records than `min-records`.
    #[error(
        "this node holds {records} records, fewer than the run's min-records = {min}: the \
         record-level accounting divides by min-records, so this node's figures would be too \
         small; give it at least {min} records, or lower min-records in the run file (every \
         member must use the same file)"
    )]
    TooFew {
        /// The node's records.
        records: u64,
        /// `min-records`.
        min: u64,
    },
    /// A row longer than `feature-norm`, by more than decimal rounding explains.
    #[error(
        "record {} of this node has feature norm {norm}, {} above the run's feature-norm = \
         {bound} (more than the {allowed:.1e} that writing its features with six decimals could \
         explain): the record-level accounting bounds every record's gradient by it; scale the \
         rows to norm at most {bound} (`dpwalk data prepare --feature-norm {bound}`), or raise \
         feature-norm in the run file (every member must use the same file)",
        row + 1,
        excess(*norm, *bound)
    )]
    TooLong {
        /// The 0-based row (said counted from 1).
        row: usize,
        /// Its ℓ₂ norm.
        norm: f64,
        /// `feature-norm`.
        bound: f64,
        /// How far above `bound` rounding was allowed to go.
        allowed: f64,
    },
}

/// `norm − bound`, and relative to the bound.
fn excess(norm: f64, bound: f64) -> String {
    format!(
        "{:.3e} ({:.2e} of it)",
        norm - bound,
        (norm - bound) / bound
    )
}

impl RecordUnit {
    /// Fits a member's own data (`features` row-major, `n_features` per row) to the run's
    /// record-level inputs: at least `min-records` rows, each of norm at most `feature-norm`. A
    /// row above it by at most `feature-norm·NORM_SLACK + min(ROUNDING·√n_features,
    /// feature-norm/1000)` (what writing it in decimal can add) is scaled to it; a longer one is
    /// refused. Returns the rows scaled.
    pub fn fit_rows(&self, features: &mut [f64], n_features: usize) -> Result<usize, OutsideUnit> {
        let rows = features.len().checked_div(n_features).unwrap_or(0) as u64;
        if rows < self.min_records {
            return Err(OutsideUnit::TooFew {
                records: rows,
                min: self.min_records,
            });
        }
        let bound = self.feature_norm;
        // Rounding explains at most ROUNDING·√p, and never more than a thousandth of the bound
        // (a bound that small is not written in six decimals).
        let allowed =
            bound * NORM_SLACK + (ROUNDING * (n_features as f64).sqrt()).min(bound * 1e-3);
        let mut scaled = 0;
        for (row, a) in features.chunks_exact_mut(n_features.max(1)).enumerate() {
            let norm = norm(a);
            if norm.is_nan() || norm > bound + allowed {
                return Err(OutsideUnit::TooLong {
                    row,
                    norm,
                    bound,
                    allowed,
                });
            }
            if scale_to_norm(a, bound) {
                scaled += 1;
            }
        }
        Ok(scaled)
    }
}
