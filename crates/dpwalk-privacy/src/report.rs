//! The documents of the accounting commands, computed in one place for the CLI (`dpwalk account
//! … --json`) and the Python package (`dpwalk.account_gaussian`), so that both print the same
//! figures from the same code. Each document serializes to the JSON whose key names are part of
//! the product.

use crate::PrivacyError;
use crate::ledger::{Ledger, LedgerError};
use crate::mechanism::subsampled_gaussian;
use crate::rdp::{Conversion, Orders, check_delta};
use crate::walk::Figure;
use serde::Serialize;
use std::path::Path;

/// `account gaussian`: the RDP curve and (ε, δ) of `steps` runs of the Gaussian mechanism with
/// noise multiplier `z`, Poisson-subsampled at rate `q` (`q = 1`: no subsampling).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct GaussianReport {
    /// The order grid.
    pub orders: Vec<f64>,
    /// The composed RDP curve, one value per order.
    pub rdp: Vec<f64>,
    /// ε; `null` when there is no finite guarantee.
    pub epsilon: Option<f64>,
    /// δ.
    pub delta: f64,
    /// The order of the RDP figure.
    pub best_order: Option<f64>,
    /// `μ` when ε is the exact Gaussian conversion (`q = 1`).
    pub exact_gaussian_mu: Option<f64>,
    /// The RDP figure when ε is exact or the PLD figure.
    pub rdp_epsilon: Option<f64>,
    /// The grid step of the privacy loss distribution when ε is the PLD figure (`q < 1`).
    pub pld_interval: Option<f64>,
    /// The RDP → (ε, δ) statement of the RDP figure ([`Conversion::name`]).
    pub conversion: &'static str,
    /// The noise multiplier `z`.
    pub noise_multiplier: f64,
    /// The sampling rate `q`.
    pub sample_rate: f64,
    /// The number of runs composed.
    pub steps: u64,
}

impl GaussianReport {
    /// The report of `steps` runs of the Gaussian mechanism (noise multiplier `z`) subsampled at
    /// rate `q`, at δ with `conversion`.
    ///
    /// # Errors
    /// [`PrivacyError::Delta`] first (δ outside (0, 1)), then the mechanism's refusals of `z`
    /// and `q`.
    pub fn new(
        orders: &Orders,
        z: f64,
        q: f64,
        steps: u64,
        delta: f64,
        conversion: Conversion,
    ) -> Result<Self, PrivacyError> {
        let delta = check_delta(delta)?;
        let curve = subsampled_gaussian(orders, q, z)?.repeat(steps);
        let figure = Figure::from(curve.to_dp(delta, conversion)?);
        Ok(Self {
            orders: curve.orders().as_slice().to_vec(),
            rdp: curve.values().to_vec(),
            epsilon: figure.epsilon,
            delta,
            best_order: figure.order,
            exact_gaussian_mu: figure.exact_gaussian_mu,
            rdp_epsilon: figure.rdp_epsilon,
            pld_interval: figure.pld_interval,
            conversion: conversion.name(),
            noise_multiplier: z,
            sample_rate: q,
            steps,
        })
    }

    /// The figure, as every other command prints it.
    pub fn figure(&self) -> Figure {
        Figure {
            epsilon: self.epsilon,
            order: self.best_order,
            exact_gaussian_mu: self.exact_gaussian_mu,
            pld_interval: self.pld_interval,
            rdp_epsilon: self.rdp_epsilon,
        }
    }
}

/// `ledger show`: what a node's privacy ledger holds and the local ε it has spent, read without
/// changing the file.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct LedgerReport {
    /// The file, as given.
    pub path: String,
    /// The number of orders of the ledger's grid.
    pub orders: usize,
    /// The smallest order.
    pub min_order: Option<f64>,
    /// The largest order.
    pub max_order: Option<f64>,
    /// Contributions recorded.
    pub records: u64,
    /// Visits with the budget spent (recorded, not charged).
    pub noise_only: u64,
    /// The first contribution's seq.
    pub first_seq: Option<u64>,
    /// The last contribution's seq.
    pub last_seq: Option<u64>,
    /// The last visit's seq (a contribution or a noise-only visit).
    pub last_visit_seq: Option<u64>,
    /// The total local ε at `delta`: `null` when no order gives a finite figure.
    pub epsilon: Option<f64>,
    /// `μ` when ε is the exact conversion (every contribution recorded with its Gaussian bound).
    pub exact_gaussian_mu: Option<f64>,
    /// The RDP figure when ε is exact.
    pub rdp_epsilon: Option<f64>,
    /// The order of the RDP figure.
    pub order: Option<f64>,
    /// δ.
    pub delta: f64,
    /// The RDP → (ε, δ) statement (always the tight one).
    pub conversion: &'static str,
    /// Every contribution's seq, when asked for.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub seqs: Option<Vec<u64>>,
}

impl LedgerReport {
    /// Reads the ledger at `path` (verified, never modified, opened read-only) and converts its
    /// total at δ with the tight conversion; with `seqs`, lists every contribution's seq.
    ///
    /// # Errors
    /// [`LedgerError::Privacy`] for δ outside (0, 1), checked first (and only then: a damaged
    /// header is a [`LedgerError::Header`]); then the ledger's refusals ([`Ledger::read`],
    /// [`LedgerError::advice`] says what to do about them).
    pub fn read(path: &Path, delta: f64, seqs: bool) -> Result<Self, LedgerError> {
        let delta = check_delta(delta)?;
        let ledger = Ledger::read(path)?;
        let all_seqs = ledger.seqs();
        let conversion = Conversion::Tight;
        let figure = Figure::from(ledger.total.to_dp(delta, conversion)?);
        let orders = ledger.total.orders().as_slice();
        Ok(Self {
            path: path.display().to_string(),
            orders: orders.len(),
            min_order: orders.first().copied(),
            max_order: orders.last().copied(),
            records: ledger.records,
            noise_only: ledger.noise_only,
            first_seq: all_seqs.first().copied(),
            last_seq: all_seqs.last().copied(),
            last_visit_seq: ledger.visits.last().map(|v| v.seq),
            epsilon: figure.epsilon,
            exact_gaussian_mu: figure.exact_gaussian_mu,
            rdp_epsilon: figure.rdp_epsilon,
            order: figure.order,
            delta,
            conversion: conversion.name(),
            seqs: seqs.then_some(all_seqs),
        })
    }

    /// The total's figure, as every other command prints it.
    pub fn figure(&self) -> Figure {
        Figure {
            epsilon: self.epsilon,
            order: self.order,
            exact_gaussian_mu: self.exact_gaussian_mu,
            pld_interval: None,
            rdp_epsilon: self.rdp_epsilon,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn delta_is_checked_before_the_mechanism() {
        let g = Orders::default_grid();
        assert!(matches!(
            GaussianReport::new(&g, -1.0, 1.0, 1, 2.0, Conversion::Tight),
            Err(PrivacyError::Delta(_))
        ));
        assert!(matches!(
            GaussianReport::new(&g, -1.0, 1.0, 1, 1e-5, Conversion::Tight),
            Err(PrivacyError::NoiseMultiplier(_))
        ));
        assert!(matches!(
            GaussianReport::new(&g, 1.0, 1.5, 1, 1e-5, Conversion::Tight),
            Err(PrivacyError::SamplingRate(_))
        ));
    }

    #[test]
    fn the_gaussian_is_exact_and_the_subsampled_one_is_pld() {
        let g = Orders::default_grid();
        let r = GaussianReport::new(&g, 1.0, 1.0, 100, 1e-5, Conversion::Tight).unwrap();
        assert!(r.exact_gaussian_mu.is_some() && r.pld_interval.is_none());
        assert!(r.epsilon < r.rdp_epsilon);
        let r = GaussianReport::new(&g, 1.0, 0.01, 100, 1e-5, Conversion::Tight).unwrap();
        assert!(r.exact_gaussian_mu.is_none() && r.pld_interval.is_some());
        assert_eq!(r.rdp.len(), g.len());
        assert_eq!(r.figure().epsilon, r.epsilon);
    }
}
