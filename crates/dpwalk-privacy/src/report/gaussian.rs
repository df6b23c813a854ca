//! `account gaussian`'s document.

use crate::PrivacyError;
use crate::mechanism::subsampled_gaussian;
use crate::rdp::{Conversion, Orders, check_delta};
use crate::walk::Figure;
use serde::Serialize;

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
