//! N1: the path-hidden network view of a DP-SGD walk on the complete graph, where every pair is
//! alike, so one pair's figure is every user's (`specs/network-dp-2.md` §5). One type computes
//! it for calibration ([`crate::calibrate`]), the budget policy ([`crate::budget`]) and every
//! printed figure ([`crate::walk::path_hidden`]), so that a calibrated σ reads back as its
//! target and a budget's cap is what the figure allows.

use super::mixture::{
    MixtureOptions, Observer, PairChain, check_cost, computed_orders, dropped, network_orders,
};
use crate::Noise;
use crate::error::PrivacyError;
use crate::rdp::{Conversion, DpBound, Orders};

/// The path-hidden network view of the complete graph (N1, [`crate::calibrate::View::Network`])
/// apart from σ and the cap: the complete graph's pair, checked (users,
/// steps, cost), on the network view's orders ([`network_orders`]), with its dropped paths'
/// probability computed once (it depends on neither σ nor the order). Its figure
/// ([`CompleteView::bound`]) is the one calibration meets, the budget policy enforces and
/// [`crate::walk::path_hidden`] prints.
#[derive(Debug, Clone)]
pub struct CompleteView {
    chain: PairChain,
    steps: usize,
    orders: Orders,
    dropped: Vec<f64>,
}

impl CompleteView {
    /// The view of a walk of `steps` steps among `users ≥ 2` users of the complete graph, on the
    /// network orders of `orders`; refused where its figure would cost more than
    /// [`crate::network::mixture::MAX_NETWORK_WORK`].
    pub fn new(orders: &Orders, users: u64, steps: u64) -> Result<Self, PrivacyError> {
        let users =
            usize::try_from(users).map_err(|_| PrivacyError::Users { min: 2, got: users })?;
        if users < 2 {
            return Err(PrivacyError::Users {
                min: 2,
                got: users as u64,
            });
        }
        let chain = PairChain::complete(users)?;
        let steps = usize::try_from(steps).unwrap_or(usize::MAX);
        let orders = network_orders(orders)?;
        check_cost(&chain, steps, 1.0, computed_orders(&orders))?;
        let dropped = dropped(&chain, steps, &MixtureOptions::default());
        Ok(Self {
            chain,
            steps,
            orders,
            dropped,
        })
    }

    /// The network orders the view is computed on.
    pub fn orders(&self) -> &Orders {
        &self.orders
    }

    /// Any other user, the observer of the view.
    pub fn observer(&self) -> Observer<'_> {
        Observer::pair_with_dropped(
            &self.chain,
            self.steps,
            &MixtureOptions::default(),
            self.dropped.clone(),
        )
    }

    /// The figure of a user capped at `cap` at noise `noise`: the mixtures on the network
    /// orders, the order refined between them ([`Observer::bound`]).
    pub fn bound(
        &self,
        noise: Noise,
        cap: u64,
        delta: f64,
        conversion: Conversion,
    ) -> Result<DpBound, PrivacyError> {
        let observer = self.observer();
        let mixtures = observer.mixtures(&self.orders, noise);
        observer.bound(&mixtures, cap, delta, conversion)
    }
}
