//! N2, the ex-post certificate as an RDP curve (`specs/network-dp-2.md` §1, §4): what a user of a
//! DP-SGD walk has against its worst observer once the walk is known.
//!
//! [`super::excursion::certify`] gives each user `i` its charge `Ψ = max_j Ψ_ij` on the realised
//! path. Per path, `D_α(view_j | π) ≤ ε_loc(α)·Ψ_ij`, and every network figure is also bounded by
//! the local one, `K_i·ε_loc(α)`, order by order (the observer's view is a function of all
//! tokens). Both are multiples of the same `ε_loc(α)`, so the minimum is `min(K_i, Ψ)·ε_loc(α)`
//! ([`given_walk_curve`]); since `Φ ≤ c` for every excursion, `Ψ ≤ K_i` and the minimum only
//! guards against a caller passing a `Ψ` of another run.
//!
//! The figure holds for the realised path even against an observer who knows the whole path; it
//! is computed after the walk, so it cannot be used to choose σ before one ([`GIVEN_WALK_LABEL`]).
//! It assumes what every DP-SGD network figure assumes ([`crate::walk::ASSUMPTIONS`]: the steps
//! are non-expansive, [`super::DP_SGD_ASSUMPTION`], and the path it conditions on does not depend
//! on the data).

use crate::Noise;
use crate::error::PrivacyError;
use crate::local::{eps_loc, mu2_loc};
use crate::rdp::{Conversion, DpBound, Orders, RdpCurve};

/// The label of N2 wherever it is printed (part of the spec).
pub const GIVEN_WALK_LABEL: &str = "network given the walk (ex post; not for calibration)";

/// N2's RDP curve: `min(K_i, Ψ)·ε_loc(α)` at each order, for a user with `contributions`
/// contributions charged `psi` (`max_j Ψ_ij` from [`super::excursion::certify`]) on the
/// realised walk, with `noise` the σ and accounted clip of its local figure. A negative or NaN
/// `psi` is taken as 0 (no contribution can charge less).
pub fn given_walk_curve(orders: &Orders, noise: Noise, psi: f64, contributions: u64) -> RdpCurve {
    let charge = psi.max(0.0).min(contributions as f64);
    let values = orders
        .as_slice()
        .iter()
        .map(|&a| charge * eps_loc(a, noise.sigma(), noise.clip()));
    // Never above the local view, which is Gaussian: its exact figure bounds this one too.
    RdpCurve::from_computed(orders.clone(), values)
        .with_gaussian_bound(contributions as f64 * mu2_loc(noise.sigma(), noise.clip()))
}

/// N2's guarantee: [`given_walk_curve`] converted at `delta`, its order refined between the
/// grid's ([`crate::refine`]; the curve is a closed form at any order). What every N2 figure
/// prints.
pub fn given_walk_bound(
    orders: &Orders,
    noise: Noise,
    psi: f64,
    contributions: u64,
    delta: f64,
    conversion: Conversion,
) -> Result<DpBound, PrivacyError> {
    RdpCurve::refined_bound(orders, delta, conversion, |grid| {
        Ok(given_walk_curve(grid, noise, psi, contributions))
    })
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use crate::local::local_view;
    use crate::network::excursion::{Visit, certify};

    fn noise() -> Noise {
        Noise::new(3.0, 0.5).unwrap()
    }

    #[test]
    fn psi_scales_one_contribution_and_the_local_curve_caps_it() {
        let orders = Orders::default_grid();
        let one = local_view(&orders, noise(), 1);
        let curve = given_walk_curve(&orders, noise(), 0.75, 4);
        for (c, o) in curve.values().iter().zip(one.values()) {
            assert!((c - 0.75 * o).abs() <= 1e-12 * o, "{c} against {o}");
        }
        // A Ψ above K (not from this user's walk) is capped at the local figure.
        assert_eq!(
            given_walk_curve(&orders, noise(), 9.0, 4),
            local_view(&orders, noise(), 4)
        );
        assert_eq!(
            given_walk_curve(&orders, noise(), 0.0, 0),
            RdpCurve::zero(&orders)
        );
    }

    /// Two users alternating: every contribution of one is seen by the other at the next hop,
    /// `Φ = 1` per excursion, `Ψ = K`, and N2 is the local figure.
    #[test]
    fn two_users_alternating_get_the_local_curve() {
        let orders = Orders::default_grid();
        let path: Vec<Visit> = (0..11)
            .map(|t| Visit {
                holder: t % 2,
                contribution: true,
            })
            .collect();
        let certified = certify(2, &path);
        for (i, k) in [(0, 6u64), (1, 5)] {
            assert_eq!(certified[i].psi, k as f64);
            assert_eq!(certified[i].observer, Some(1 - i));
            assert_eq!(
                given_walk_curve(&orders, noise(), certified[i].psi, k),
                local_view(&orders, noise(), k)
            );
        }
    }
}
