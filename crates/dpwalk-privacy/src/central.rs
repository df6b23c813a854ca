//! The central view: an observer who sees only the model released by the centralized (every user
//! each round) and federated (a sample of users each round) modes.
//!
//! # Sensitivity conventions
//! One contribution of user `i` adds `2λ(Δ_i + η_i/2)` to `u_i` with `‖Δ_i‖ ≤ C` and
//! `η_i ~ N(0, σ² I)`: replacing `i`'s data moves `Δ_i` by at most `2C` against noise `σ/2`
//! (noise multiplier `(σ/2)/(2C) = σ/(4C)`), which is the local view `8αC²/σ²`.
//!
//! # Centralized mode (every user, every round)
//! A round updates `w ← w + (2λ/n) Σ_j (Δ_j + η_j/2)`; the final-model observer sees at most the
//! sequence of `w` (the model `prox_{γr}(w)` is post-processing). Up to the public factor `2λ/n`,
//! a round releases `Σ_j Δ_j + Σ_j η_j/2`: a Gaussian mechanism on `Σ_j Δ_j`, whose sensitivity to
//! user `i` is `2C`, with noise `N(0, n σ²/4 · I)`. Hence per round
//! `ε(α) = α (2C)² / (2 n σ²/4) = 8αC²/(nσ²)` and, composing `R` rounds,
//! `8αRC²/(nσ²)` — the local view divided by `n`, the form of the paper's centralized theorem.
//! Assumption: composition treats each round as a mechanism of the released history only, while
//! every user's hidden `u_j` carries its own past noise (the same assumption as the network view;
//! revealing the other users' noise to make this rigorous gives back the local view). The local
//! view `R · 8αC²/σ²` ([`crate::local::local_view`]) needs no assumption and is always valid.
//!
//! # Federated mode (Poisson sampling of users at rate `q`)
//! Each round user `i` takes part with probability `q`, independently of the data. As the standard
//! accountants do for DP-SGD, the round is the Poisson-subsampled Gaussian of Mironov, Talwar &
//! Zhang 2019 ([`crate::mechanism::subsampled_gaussian`]) with `i`'s own noise `σ/2` against the
//! replace-one sensitivity `2C`: noise multiplier `σ/(4C)`, so `q = 1` gives back the local view
//! exactly. `R` rounds compose additively; the curve says it is `R` subsampled Gaussian runs, so
//! its conversion is the PLD figure ([`crate::pld`]) where that is smaller. Assumptions (printed with the figure): the MTZ bound is
//! stated for add/remove neighbours with a noise present whether or not `i` is sampled; here the
//! other participants' noise plays that part, and the hidden-state assumption above applies.
//! Sampling a fixed number `m` of users without replacement is accounted as Poisson with
//! `q = m/n`, the usual approximation (not a proof).

use crate::Noise;
use crate::error::PrivacyError;
use crate::local::{eps_loc, mu2_loc};
use crate::mechanism::subsampled_gaussian;
use crate::rdp::{Orders, RdpCurve};

/// The centralized mode after `rounds` rounds of `users` users: `8αRC²/(nσ²)`, a composition of
/// Gaussian mechanisms (`μ² = 16RC²/(nσ²)`), converted exactly ([`crate::gdp`]).
pub fn centralized_view(
    orders: &Orders,
    noise: Noise,
    rounds: u64,
    users: u64,
) -> Result<RdpCurve, PrivacyError> {
    if users == 0 {
        return Err(PrivacyError::Users { min: 1, got: 0 });
    }
    let factor = rounds as f64 / users as f64;
    let values = orders
        .as_slice()
        .iter()
        .map(|&a| factor * eps_loc(a, noise.sigma(), noise.clip()));
    Ok(RdpCurve::from_computed(orders.clone(), values)
        .with_gaussian_bound(factor * mu2_loc(noise.sigma(), noise.clip())))
}

/// The federated mode after `rounds` rounds with Poisson user sampling at rate `q ∈ (0, 1]`.
pub fn federated_view(
    orders: &Orders,
    noise: Noise,
    rounds: u64,
    sampling_rate: f64,
) -> Result<RdpCurve, PrivacyError> {
    let z = noise.sigma() / (4.0 * noise.clip());
    Ok(subsampled_gaussian(orders, sampling_rate, z)?.repeat(rounds))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::local::local_view;

    #[test]
    fn centralized_is_local_over_n() {
        let g = Orders::default_grid();
        let noise = Noise::new(3.0, 0.5).unwrap();
        let c = centralized_view(&g, noise, 7, 10).unwrap();
        let l = local_view(&g, noise, 7);
        for (a, b) in c.values().iter().zip(l.values()) {
            assert!((a * 10.0 - b).abs() <= 1e-12 * b);
        }
        assert!(centralized_view(&g, noise, 1, 0).is_err());
    }

    #[test]
    fn federated_at_rate_one_is_local_and_subsampling_helps() {
        let g = Orders::default_grid();
        let noise = Noise::new(8.0, 1.0).unwrap();
        let full = federated_view(&g, noise, 5, 1.0).unwrap();
        let local = local_view(&g, noise, 5);
        for (a, b) in full.values().iter().zip(local.values()) {
            assert!((a - b).abs() <= 1e-12 * b);
        }
        let sampled = federated_view(&g, noise, 5, 0.1).unwrap();
        assert!(
            sampled
                .values()
                .iter()
                .zip(full.values())
                .all(|(s, f)| s < f)
        );
        assert!(matches!(
            federated_view(&g, noise, 5, 0.0),
            Err(PrivacyError::SamplingRate(_))
        ));
    }
}
