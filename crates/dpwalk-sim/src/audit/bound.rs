//! The accountant's figure that an audit is compared with, for each view, from the same
//! `dpwalk_privacy` functions as every other report: the canary's contributions (one at step 0,
//! or at its first `k` visits in the composition mode) in a `K`-step walk that starts at the
//! canary user and whose final model every member sees.
//!
//! - **local**: the local view of the contributions (proved, no assumption).
//! - **network**, on a DP-SGD walk, with its assumptions:
//!   - one contribution, each trial drawing its own walk: the network figure of one contribution
//!     towards the user's worst observer (an envelope over observers, so at least the audited
//!     pair's);
//!   - several contributions, each trial drawing its own walk: the path-hidden figure
//!     ([`dpwalk_privacy::walk::path_hidden`]: N1 on the complete graph, N3 on any other graph
//!     of at most 200 users) of the canary against the audited observer, at the trial's `K` and
//!     with the cap `k` (the canary contributes at most `k` times; the figure charges every
//!     visit up to the cap, whatever the initial holder), labelled
//!     [`dpwalk_privacy::walk::PATH_HIDDEN`];
//!   - every trial following one given walk ([`Walk::Given`]): the ex-post certificate N2 of
//!     that walk, `min(k, Ψ)·ε_loc` with `Ψ` the canary's charge against the observer
//!     ([`dpwalk_privacy::network::excursion::psi`]), labelled
//!     [`dpwalk_privacy::walk::GIVEN_WALK`]. It holds against an observer who knows the walk,
//!     which the audit's attacker does (every trial follows it). The path-hidden figure does
//!     not apply to such trials: their walk is not drawn.
//!
//!   On the ADMM walk no network bound is proved
//!   ([`dpwalk_privacy::walk::ADMM_NETWORK_WITHDRAWN`]): the audit is compared with the local
//!   figure, which holds for every observer, and says so.
//! - **central** (the final model only): the network figure where there is one (the observer
//!   sees the final model and more), the local figure otherwise; no tighter central bound is
//!   printed for the walk.

use super::statistic::View;
use dpwalk_core::topology::Topology;
use dpwalk_privacy::PrivacyError;
use dpwalk_privacy::network::Charges;
use dpwalk_privacy::network::given_walk::given_walk_bound;
use dpwalk_privacy::walk::{
    ADMM_NETWORK_WITHDRAWN, ASSUMPTIONS, Figure, GIVEN_WALK, PATH_HIDDEN, Passage, Setup,
    path_hidden, user_figures,
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
    figure(setup, passage, user, steps, view, 1, None)
}

/// The walks of an audit's trials, for the network figure.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Walk<'a> {
    /// Each trial draws its own walk on `topology`, from the canary user: the path-hidden
    /// figure of the canary against `observer`.
    Drawn {
        /// The graph.
        topology: &'a Topology,
        /// The audited observer.
        observer: usize,
    },
    /// Every trial follows the same given walk, on which the canary's charge against the
    /// observer is `psi` (`Ψ_ij`, its contributions marked): the ex-post certificate N2.
    Given {
        /// The audited observer.
        observer: usize,
        /// `Ψ_ij` of the walk.
        psi: f64,
    },
}

/// [`bound`] for up to `contributions` contributions of the user (the composition mode) on the
/// trials' `walk`: the local view composes them (proved: the eavesdropper sees every increment,
/// adaptive composition applies); on a DP-SGD walk (`passage` given) the network view is
/// compared with the path-hidden figure of the canary against the observer (several
/// contributions, walks drawn per trial), N2 of the given walk, or the one-contribution figure
/// (one contribution, walks drawn per trial); see the module docs.
///
/// # Errors
/// The accountant refuses its inputs (a graph above 200 users other than the complete one has
/// no path-hidden figure: "not offered: cost").
pub fn composed_bound(
    setup: &Setup,
    passage: Option<&Passage>,
    user: usize,
    steps: u64,
    view: View,
    contributions: u64,
    walk: Walk<'_>,
) -> Result<Bound, PrivacyError> {
    figure(setup, passage, user, steps, view, contributions, Some(walk))
}

/// [`composed_bound`]; `walk` `None`: walks drawn per trial (one contribution: the
/// one-contribution figure needs no graph).
fn figure(
    setup: &Setup,
    passage: Option<&Passage>,
    user: usize,
    steps: u64,
    view: View,
    contributions: u64,
    walk: Option<Walk<'_>>,
) -> Result<Bound, PrivacyError> {
    let k = contributions.max(1);
    let figures = user_figures(setup, passage, user, &Charges::at_steps(0..k, steps))?;
    let local = Bound {
        epsilon: figures.local.epsilon,
        order: figures.local.order,
        figure: if k == 1 {
            "local view, one contribution (proved)"
        } else {
            "local view, the contributions composed (proved)"
        }
        .into(),
        assumptions: Vec::new(),
        note: None,
    };
    let network = match (passage, walk) {
        (None, _) => None,
        (Some(_), Some(Walk::Given { observer, psi })) => {
            let f: Figure = given_walk_bound(&setup.orders, setup.noise, psi, k, setup.delta, setup.conversion)?
                .into();
            Some(Bound {
                epsilon: f.epsilon,
                order: f.order,
                figure: format!(
                    "{GIVEN_WALK}: at most {k} contribution(s) of the user on the walk every trial follows, charge {psi:.4} against observer {observer} with the final model (proved under its assumptions)"
                ),
                assumptions: ASSUMPTIONS.to_vec(),
                note: None,
            })
        }
        (Some(_), Some(Walk::Drawn { topology, observer })) if k > 1 => {
            let complete = matches!(topology, Topology::Complete { .. });
            let hidden = path_hidden(setup, topology, steps, k, !complete)?;
            let (epsilon, order) = match &hidden.pairs {
                // The audited pair's own figure (its order is not kept with the matrix).
                Some(pairs) => {
                    let e = pairs[user * topology.n() + observer];
                    (e.is_finite().then_some(e), None)
                }
                // Every pair of the complete graph has the one figure.
                None => {
                    let f = hidden.users[0].figure;
                    (f.epsilon, f.order)
                }
            };
            Some(Bound {
                epsilon,
                order,
                figure: format!(
                    "{PATH_HIDDEN}: at most {k} contributions of the user in {steps} steps, against observer {observer} with the final model, the walk hidden (N{}; proved under its assumptions)",
                    if complete { 1 } else { 3 }
                ),
                assumptions: ASSUMPTIONS.to_vec(),
                note: None,
            })
        }
        (Some(_), _) => figures.network.map(|f| Bound {
            epsilon: f.epsilon,
            order: f.order,
            figure: "network view, one contribution, the user's worst observer with the final model (proved under its assumptions)".into(),
            assumptions: ASSUMPTIONS.to_vec(),
            note: None,
        }),
    };
    Ok(match (view, network) {
        (View::Local, _) => local,
        (View::Network | View::Central, Some(n)) => n,
        (View::Network, None) => Bound {
            figure: "local view (holds for every observer): no network bound is proved for this walk"
                .into(),
            note: Some(ADMM_NETWORK_WITHDRAWN),
            ..local
        },
        (View::Central, None) => Bound {
            figure: "local view (the final model is computed from the tokens): no central bound is printed for the walk".into(),
            ..local
        },
    })
}
