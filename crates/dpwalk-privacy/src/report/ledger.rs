//! `ledger show`'s document.

use crate::ledger::{Ledger, LedgerError};
use crate::rdp::{Conversion, check_delta};
use crate::walk::Figure;
use serde::Serialize;
use std::path::Path;

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
