//! The accountant's figure that an audit is compared with, for each view, from the same
//! `dpwalk_privacy` functions as every other report: the canary's one contribution at step 0 of a
//! `K`-step walk whose final model every member sees.
//!
//! - **local**: the local view of one contribution (proved, no assumption).
//! - **network**: on a DP-SGD walk, the network figure of one contribution towards the user's
//!   worst observer (an envelope over observers, so at least the audited pair's), with its
//!   assumptions. On the ADMM walk no network bound is proved
//!   ([`dpwalk_privacy::walk::ADMM_NETWORK_WITHDRAWN`]): the audit is compared with the local
//!   figure, which holds for every observer, and says so.
//! - **central** (the final model only): the network figure where there is one (the observer
//!   sees the final model and more), the local figure otherwise; no tighter central bound is
//!   printed for the walk.

use super::statistic::View;
use dpwalk_privacy::PrivacyError;
use dpwalk_privacy::network::Charges;
use dpwalk_privacy::walk::{
    ADMM_NETWORK_WITHDRAWN, ASSUMPTIONS, NETWORK_ONE_CONTRIBUTION, Passage, Setup, user_figures,
};
use serde::Serialize;

/// An upper bound from the accountant, and what it rests on.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Bound {
    /// ε at the audit's δ; `None`: no finite guarantee.
    pub epsilon: Option<f64>,
    /// The Rényi order that achieved it.
    pub order: Option<f64>,
    /// Which figure it is (with `record-level ` in front at record level: [`super::record`]).
    pub figure: String,
    /// Its assumptions (empty: none).
    pub assumptions: Vec<&'static str>,
    /// Why the view's own figure is not printed, where it is not.
    pub note: Option<&'static str>,
}

impl Bound {
    /// ε with `+∞` for "no finite guarantee".
    pub fn epsilon_or_inf(&self) -> f64 {
        self.epsilon.unwrap_or(f64::INFINITY)
    }
}

/// The bound for `view` of user `user`'s one contribution at step 0 of a `steps`-step walk;
/// `passage` is `None` where the walk has no network view (ADMM).
///
/// # Errors
/// The accountant refuses its inputs.
pub fn bound(
    setup: &Setup,
    passage: Option<&Passage>,
    user: usize,
    steps: u64,
    view: View,
) -> Result<Bound, PrivacyError> {
    composed_bound(setup, passage, user, steps, view, 1)
}

/// [`bound`] for up to `contributions` contributions of the user (the composition mode): the
/// local view composes them (proved: the eavesdropper sees every increment, adaptive composition
/// applies); no network figure is proved for more than one
/// ([`dpwalk_privacy::walk::NETWORK_ONE_CONTRIBUTION`]), so every view is compared with the
/// composed local figure, which holds for every observer.
///
/// # Errors
/// The accountant refuses its inputs.
pub fn composed_bound(
    setup: &Setup,
    passage: Option<&Passage>,
    user: usize,
    steps: u64,
    view: View,
    contributions: u64,
) -> Result<Bound, PrivacyError> {
    let k = contributions.max(1);
    let figures = user_figures(setup, passage, user, &Charges::at_steps(0..k, steps))?;
    let local = Bound {
        epsilon: figures.local.epsilon,
        order: figures.local.order,
        figure: if k == 1 {
            "local view, one contribution (proved)"
        } else {
            "local view, the contributions composed (proved); no network figure is proved for several"
        }
        .into(),
        assumptions: Vec::new(),
        note: None,
    };
    let network = figures.network.map(|f| Bound {
        epsilon: f.epsilon,
        order: f.order,
        figure: "network view, one contribution, the user's worst observer with the final model (proved under its assumptions)".into(),
        assumptions: ASSUMPTIONS.to_vec(),
        note: None,
    });
    Ok(match (view, network) {
        (View::Local, _) => local,
        (View::Network | View::Central, Some(n)) => n,
        (View::Network, None) => Bound {
            figure: "local view (holds for every observer): no network bound is proved for this walk"
                .into(),
            note: Some(if k > 1 {
                NETWORK_ONE_CONTRIBUTION
            } else {
                ADMM_NETWORK_WITHDRAWN
            }),
            ..local
        },
        (View::Central, None) => Bound {
            figure: "local view (the final model is computed from the tokens): no central bound is printed for the walk".into(),
            ..local
        },
    })
}
