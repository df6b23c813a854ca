//! RDP curves over a grid of orders, their composition, and their conversion to (ε, δ).
//!
//! # Curves and composition
//! A mechanism is `(α, ε(α))`-RDP when the Rényi divergence of order `α` between its output
//! distributions on any two neighbouring datasets is at most `ε(α)` (Mironov 2017, Def. 4).
//! Adaptive composition adds curves order by order (Mironov 2017, Prop. 1), so `k` runs of the same
//! mechanism cost `k · ε(α)`. A curve here is a validated [`Orders`] grid plus one value per order,
//! each `≥ 0` or `+∞` (an order at which the mechanism gives no finite bound).
//!
//! # Conversion to (ε, δ)
//! For every order `α` with a finite value, either of two statements gives an `(ε, δ)`-DP bound;
//! the accountant minimizes over the grid and says which order and which statement it used.
//! - [`Conversion::Classic`] (Mironov 2017, Prop. 3): `ε = ε(α) + ln(1/δ) / (α − 1)`.
//! - [`Conversion::Tight`] (Balle, Barthe, Gaboardi, Hsu & Sato 2020, Thm. 21; Canonne, Kamath &
//!   Steinke 2020, Prop. 12): `ε = ε(α) + ln((α − 1)/α) − (ln δ + ln α)/(α − 1)`. It is smaller
//!   than the classic one at every order by `ln(α)/(α−1) − ln(1 − 1/α) > 0`. As in Google's
//!   `dp-accounting`, we also use that `D_α ≥ KL` and the Bretagnolle–Huber inequality
//!   `TV ≤ √(1 − e^{−KL})`: when `δ² ≥ 1 − e^{−ε(α)}` the pair is `(0, δ)`-DP. Negative results
//!   (possible for tiny curves) are raised to 0, which is always a valid ε.
//!
//! Orders where the curve is `+∞` are skipped; if no order is finite the answer is an explicit
//! [`DpBound::NoFiniteGuarantee`], never a NaN.
//!
//! # Orders between the grid's
//! Where the mechanism can be computed at any order, [`RdpCurve::to_dp_refined`] (or
//! [`RdpCurve::refined_bound`]) searches the best order between the grid's neighbours of the
//! best grid order ([`crate::refine`]), computing a few more orders alone; the figure is the
//! smallest ε seen, so never above the grid's. The network views (N1, N3:
//! [`crate::network::mixture::Observer::bound`]; N2:
//! [`crate::network::given_walk::given_walk_bound`]) and the seed baselines
//! ([`crate::baseline::Baseline::bound`]) are printed, calibrated and enforced that way;
//! [`RdpCurve::to_dp`] stays on the grid (compositions and ledgers hold grid values only).
//!
//! # Gaussian bounds
//! Where every contribution is a Gaussian mechanism, the RDP conversion loses 6–8 % of ε against
//! the exact one ([`crate::gdp`]). A curve may therefore carry a `μ²`
//! ([`RdpCurve::gaussian_mu2`]), set only by this crate's formulas (and read back from a ledger
//! with a check), meaning that the mechanism it describes is also `μ`-GDP: a composition
//! of Gaussian mechanisms (the local view [`crate::local::local_view`], the centralized view,
//! [`crate::mechanism::gaussian`]), or a function of one (every network view of a DP-SGD walk is
//! a function of the tokens, whose local view is `μ`-GDP). Its values are then at most `α μ²/2`,
//! equal for a composition of Gaussian mechanisms. [`RdpCurve::to_dp`] returns the exact
//! conversion of `μ`-GDP ([`crate::gdp`]) where it is below the RDP figure, which stays in the
//! guarantee as `rdp_epsilon`; so a Gaussian composition gets its exact figure and a network
//! view is never printed above the local view's exact figure. The tag follows what is proved:
//! composition adds `μ²` (Dong, Roth & Su 2022, Cor. 3.3), `repeat` multiplies it, the maximum of
//! two tagged curves keeps the larger, and anything combined with an untagged curve (a curve
//! from outside, [`RdpCurve::new`], or a ledger record of format 2) is untagged: an RDP curve of
//! the form `α ρ` alone does not make a mechanism `√(2ρ)`-GDP.
//!
//! # Subsampled Gaussian runs
//! Likewise a curve may say that its mechanism is `runs` runs of the Poisson-subsampled Gaussian
//! with rate `q` and noise multiplier `z` ([`RdpCurve::subsampled_runs`], set only by
//! [`crate::mechanism::subsampled_gaussian`] for `q < 1`): [`RdpCurve::to_dp`] then returns the
//! privacy-loss-distribution figure ([`crate::pld`]) where it is below the RDP one. The tag
//! follows the same rules: `repeat` multiplies the runs, composition with runs of the same
//! mechanism adds them, composition with a curve that is 0 at every order (one that reveals nothing:
//! `D_α = 0` at any `α > 1` means equal distributions) keeps them, anything else drops it.
//!
//! # The default grid
//! [`Orders::default_grid`], 198 orders:
//! - 1.01, 1.02, …, 1.09 (steps of 0.01), where the optimum lies when ε is in the hundreds or more;
//! - 1.1, 1.15, …, 3 (steps of 0.05);
//! - 3.1, 3.2, …, 10.9 (steps of 0.1);
//! - every integer 11 … 64;
//! - 72, 80, 96, 112, 128, 160, 192, 224, 256, 320, 384, 448, 512, 640, 768, 896, 1024
//!   (successive ratios at most 1.25), for small ε and many compositions.
//!
//! It contains every order of `dp-accounting`'s `RdpAccountant` default (0.6.0's
//! `DEFAULT_RDP_ORDERS`: `1 + x/10` for x = 1 … 99, that is 1.1, 1.2, …, 10.9, then every integer
//! 11 … 63, then 128, 256, 512, 1024; nothing below 1.1 or between 63 and 128), as the same
//! doubles, and every order of this crate's earlier grid (1.1, 1.25, 1.5, …, 4.5, every integer
//! 5 … 64, 128, 256, 512, 1024). As the conversions are minima over the grid, and our curves are
//! never above `dp-accounting`'s at a shared order (equal for the Gaussian and at integer orders,
//! below at fractional orders of the subsampled Gaussian, where it drops the series' signs, all up
//! to rounding) and the tight conversion is its `compute_epsilon`, our ε for the Gaussian and the
//! Poisson-subsampled Gaussian is never above `dp-accounting`'s with its default orders (checked to
//! 1e-9 relative on 210 settings in `tests/subsampled_gaussian.rs`), nor above what the earlier
//! grid gave. Its cost is the fractional orders of the subsampled Gaussian, a series each,
//! longest near α = 1: the whole curve takes 0.3–1.4 ms for DP-SGD-like `(q, z)` and up to some
//! 20 ms for `q` near 0.5 (4–6× the earlier grid; `benches/accountant.rs`); the other mechanisms
//! are closed forms, linear in the number of orders.

use crate::error::PrivacyError;
use crate::gdp;
use crate::pld;
use crate::refine;
use serde::Serialize;
use std::sync::Arc;

/// The largest order a grid may hold, `2^20`: the subsampled Gaussian's curve at an integer order
/// `α` sums `α + 1` terms, so an order in the billions would take gigabytes; the default grid
/// stops at 1024, where ε is already near 0.01 at δ = 1e-6.
pub const MAX_ORDER: f64 = 1_048_576.0;

/// A validated grid of Rényi orders: `> 1`, at most [`MAX_ORDER`], strictly increasing, not empty.
/// Cheap to clone (shared), so every curve carries its grid.
#[derive(Debug, Clone)]
pub struct Orders(Arc<[f64]>);

impl PartialEq for Orders {
    fn eq(&self, other: &Self) -> bool {
        Arc::ptr_eq(&self.0, &other.0) || self.0 == other.0
    }
}

impl Orders {
    /// Checks that every order is `> 1` and at most [`MAX_ORDER`], and that they increase
    /// strictly.
    pub fn new(values: &[f64]) -> Result<Self, PrivacyError> {
        if values.is_empty() {
            return Err(PrivacyError::NoOrders);
        }
        for &a in values {
            if !(a > 1.0 && a <= MAX_ORDER) {
                return Err(PrivacyError::Order(a));
            }
        }
        for w in values.windows(2) {
            if w[1] <= w[0] {
                return Err(PrivacyError::OrdersNotIncreasing(w[1], w[0]));
            }
        }
        Ok(Self(values.into()))
    }

    /// The default grid (see the module docs): 198 orders.
    pub fn default_grid() -> Self {
        // Each fraction's exact value is the decimal, so the division rounds to the double nearest
        // it: the same doubles as the literals 1.01, 1.15, 3.1 (and as dp-accounting's orders).
        let mut v: Vec<f64> = (101..=109).map(|k| f64::from(k) / 100.0).collect();
        v.extend((22..=60).map(|k| f64::from(k) / 20.0));
        v.extend((31..=109).map(|k| f64::from(k) / 10.0));
        v.extend((11..=64).map(f64::from));
        v.extend([
            72.0, 80.0, 96.0, 112.0, 128.0, 160.0, 192.0, 224.0, 256.0, 320.0, 384.0, 448.0, 512.0,
            640.0, 768.0, 896.0, 1024.0,
        ]);
        Self(v.into())
    }

    /// The orders.
    pub fn as_slice(&self) -> &[f64] {
        &self.0
    }

    /// Number of orders.
    pub fn len(&self) -> usize {
        self.0.len()
    }

    /// Always false (a grid is never empty); present for API symmetry with `len`.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

impl Default for Orders {
    fn default() -> Self {
        Self::default_grid()
    }
}

/// An RDP curve: `ε(α)` at each order of its grid, each `≥ 0` or `+∞`; and, where the mechanism
/// is also `μ`-GDP, that `μ²` (module docs, "Gaussian bounds").
#[derive(Debug, Clone, PartialEq)]
pub struct RdpCurve {
    orders: Orders,
    values: Vec<f64>,
    gaussian_mu2: Option<f64>,
    subsampled: Option<SubsampledRuns>,
}

/// `runs` runs of the Poisson-subsampled Gaussian with rate `q < 1` and noise multiplier `z`
/// (module docs, "Subsampled Gaussian runs").
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SubsampledRuns {
    /// The sampling rate.
    pub q: f64,
    /// The noise multiplier.
    pub z: f64,
    /// The number of runs composed.
    pub runs: u64,
}

/// Which RDP → (ε, δ) statement was used (see the module docs).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize)]
pub enum Conversion {
    /// `ε(α) + ln(1/δ)/(α − 1)` (Mironov 2017, Prop. 3).
    Classic,
    /// `ε(α) + ln((α−1)/α) − (ln δ + ln α)/(α − 1)` (Balle et al. 2020; Canonne, Kamath & Steinke
    /// 2020), with the KL shortcut to ε = 0.
    #[default]
    Tight,
}

impl Conversion {
    /// Every conversion, in the order the CLI lists them.
    pub const ALL: [Conversion; 2] = [Conversion::Tight, Conversion::Classic];

    /// The name printed in every output and taken by the CLI and the Python package.
    pub fn name(self) -> &'static str {
        match self {
            Conversion::Tight => "tight",
            Conversion::Classic => "classic",
        }
    }

    /// The conversion of this name ([`Conversion::name`]), if any.
    pub fn from_name(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|c| c.name() == name)
    }
}

/// A finite `(ε, δ)` guarantee and where it came from.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct DpGuarantee {
    /// ε, finite and `≥ 0`: the exact Gaussian conversion when `gaussian_mu` is set, the PLD
    /// figure when `pld_interval` is set, else the RDP figure `rdp_epsilon`.
    pub epsilon: f64,
    /// δ, in (0, 1).
    pub delta: f64,
    /// `μ` when the mechanism is `μ`-GDP and `epsilon` is its exact conversion ([`crate::gdp`]),
    /// below the RDP figure; `None` when `epsilon` is the RDP figure.
    pub gaussian_mu: Option<f64>,
    /// The grid step of the privacy loss distribution when `epsilon` is the PLD figure of
    /// subsampled Gaussian runs ([`crate::pld`]), below the RDP figure; `None` otherwise.
    pub pld_interval: Option<f64>,
    /// The RDP figure: the smallest ε over the grid with `conversion`; a cross-check (never
    /// below `epsilon`) when `gaussian_mu` or `pld_interval` is set.
    pub rdp_epsilon: f64,
    /// The order that gave `rdp_epsilon`.
    pub order: f64,
    /// The RDP statement used for `rdp_epsilon`.
    pub conversion: Conversion,
}

/// The result of a conversion: a finite guarantee, or an explicit statement that there is none.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub enum DpBound {
    /// A finite guarantee.
    Finite(DpGuarantee),
    /// Every order of the grid is `+∞`: no finite ε at this δ.
    NoFiniteGuarantee {
        /// The δ asked for.
        delta: f64,
    },
}

impl DpBound {
    /// ε, or `+∞` when there is no finite guarantee (for comparisons; never NaN).
    pub fn epsilon(&self) -> f64 {
        match self {
            DpBound::Finite(g) => g.epsilon,
            DpBound::NoFiniteGuarantee { .. } => f64::INFINITY,
        }
    }
}

/// Checks δ ∈ (0, 1).
pub(crate) fn check_delta(delta: f64) -> Result<f64, PrivacyError> {
    if delta > 0.0 && delta < 1.0 {
        Ok(delta)
    } else {
        Err(PrivacyError::Delta(delta))
    }
}

impl RdpCurve {
    /// A curve from values, one per order, each `≥ 0` or `+∞`.
    pub fn new(orders: Orders, values: Vec<f64>) -> Result<Self, PrivacyError> {
        if values.len() != orders.len() {
            return Err(PrivacyError::Length {
                orders: orders.len(),
                values: values.len(),
            });
        }
        for (&order, &value) in orders.as_slice().iter().zip(&values) {
            if value.is_nan() || value < 0.0 {
                return Err(PrivacyError::RdpValue { order, value });
            }
        }
        Ok(Self {
            orders,
            values,
            gaussian_mu2: None,
            subsampled: None,
        })
    }

    /// This curve, computed by a formula of this crate for a mechanism that is also `μ`-GDP
    /// (module docs, "Gaussian bounds"): its values are at most `α μ²/2`. A `μ²` that is not
    /// finite (the noise vanishing against the sensitivity) is not kept.
    pub(crate) fn with_gaussian_bound(mut self, mu2: f64) -> Self {
        debug_assert!(self.iter().all(|(a, v)| {
            let cap = a * mu2 / 2.0;
            v <= cap * (1.0 + 1e-12) || !mu2.is_finite()
        }));
        self.gaussian_mu2 = (mu2.is_finite() && mu2 >= 0.0).then_some(mu2);
        self
    }

    /// This curve, computed by [`crate::mechanism::subsampled_gaussian`] for one run at rate
    /// `q < 1` and noise multiplier `z` (module docs, "Subsampled Gaussian runs").
    pub(crate) fn with_subsampled_runs(mut self, q: f64, z: f64) -> Self {
        self.subsampled = Some(SubsampledRuns { q, z, runs: 1 });
        self
    }

    /// The Poisson-subsampled Gaussian runs this curve is the RDP curve of, if it is one.
    pub fn subsampled_runs(&self) -> Option<SubsampledRuns> {
        self.subsampled
    }

    /// This curve without its subsampled runs (as a ledger stores it, which keeps no runs).
    pub(crate) fn without_subsampled_runs(mut self) -> Self {
        self.subsampled = None;
        self
    }

    /// This curve with a Gaussian bound `μ²` read back from storage (a ledger): `None` unless
    /// `μ²` is finite, `≥ 0`, and bounds every value (`ε(α) ≤ α μ²/2`, to rounding), so that a
    /// damaged `μ²` never lowers a figure.
    pub(crate) fn with_stored_gaussian_bound(self, mu2: f64) -> Option<Self> {
        let bounded = mu2.is_finite()
            && mu2 >= 0.0
            && self.iter().all(|(a, v)| v <= a * mu2 / 2.0 * (1.0 + 1e-12));
        bounded.then(|| self.with_gaussian_bound(mu2))
    }

    /// A curve computed by this crate's formulas from validated inputs. Values are `≥ 0` by
    /// construction; a NaN (only from an overflow like `0 · ∞`) becomes `+∞`, the safe side: no
    /// guarantee at that order.
    pub(crate) fn from_computed(orders: Orders, values: impl Iterator<Item = f64>) -> Self {
        let values: Vec<f64> = values
            .map(|v| {
                if v.is_nan() {
                    f64::INFINITY
                } else {
                    v.max(0.0)
                }
            })
            .collect();
        debug_assert_eq!(values.len(), orders.len());
        Self {
            orders,
            values,
            gaussian_mu2: None,
            subsampled: None,
        }
    }

    /// The curve of a mechanism that reveals nothing (the identity of composition): the
    /// Gaussian curve with `μ = 0`.
    pub fn zero(orders: &Orders) -> Self {
        Self {
            orders: orders.clone(),
            values: vec![0.0; orders.len()],
            gaussian_mu2: Some(0.0),
            subsampled: None,
        }
    }

    /// The order grid.
    pub fn orders(&self) -> &Orders {
        &self.orders
    }

    /// `ε(α)` at each order.
    pub fn values(&self) -> &[f64] {
        &self.values
    }

    /// `μ²` when the mechanism is also `μ`-GDP (a composition of Gaussian mechanisms, or a
    /// function of one; module docs); `None` otherwise.
    pub fn gaussian_mu2(&self) -> Option<f64> {
        self.gaussian_mu2
    }

    /// `(α, ε(α))` pairs.
    pub fn iter(&self) -> impl Iterator<Item = (f64, f64)> + '_ {
        self.orders
            .as_slice()
            .iter()
            .copied()
            .zip(self.values.iter().copied())
    }

    /// Composition with another curve on the same grid: values add.
    pub fn compose(&self, other: &RdpCurve) -> Result<RdpCurve, PrivacyError> {
        let mut out = self.clone();
        out.compose_in_place(other)?;
        Ok(out)
    }

    /// In-place composition (the ledger's running total).
    pub fn compose_in_place(&mut self, other: &RdpCurve) -> Result<(), PrivacyError> {
        if self.orders != other.orders {
            return Err(PrivacyError::OrdersMismatch);
        }
        let is_zero = |c: &RdpCurve| c.values.iter().all(|&v| v == 0.0);
        self.subsampled = match (self.subsampled, other.subsampled) {
            (Some(a), Some(b)) if a.q == b.q && a.z == b.z => a
                .runs
                .checked_add(b.runs)
                .map(|runs| SubsampledRuns { runs, ..a }),
            (Some(a), None) if is_zero(other) => Some(a),
            (None, Some(b)) if is_zero(self) => Some(b),
            _ => None,
        };
        for (a, b) in self.values.iter_mut().zip(&other.values) {
            *a += b; // both ≥ 0 or +∞: no NaN possible
        }
        self.gaussian_mu2 = match (self.gaussian_mu2, other.gaussian_mu2) {
            (Some(a), Some(b)) => Some(a + b),
            _ => None,
        };
        Ok(())
    }

    /// The pointwise maximum of two curves on the same grid (a bound on both); `self` when the
    /// grids differ is never silently mixed: the other curve must share the grid.
    pub fn max(&self, other: &RdpCurve) -> RdpCurve {
        debug_assert_eq!(self.orders, other.orders);
        RdpCurve {
            orders: self.orders.clone(),
            values: self
                .values
                .iter()
                .zip(&other.values)
                .map(|(a, b)| a.max(*b))
                .collect(),
            // A mechanism bounded by either of two Gaussian curves is bounded by the larger.
            gaussian_mu2: match (self.gaussian_mu2, other.gaussian_mu2) {
                (Some(a), Some(b)) => Some(a.max(b)),
                _ => None,
            },
            subsampled: match (self.subsampled, other.subsampled) {
                (Some(a), Some(b)) if a == b => Some(a),
                _ => None,
            },
        }
    }

    /// `count`-fold composition. `count = 0` gives the zero curve (even where a value is `+∞`,
    /// since a mechanism never run reveals nothing).
    pub fn repeat(&self, count: u64) -> RdpCurve {
        if count == 0 {
            return RdpCurve::zero(&self.orders);
        }
        let k = count as f64;
        RdpCurve {
            orders: self.orders.clone(),
            values: self.values.iter().map(|v| v * k).collect(),
            gaussian_mu2: self.gaussian_mu2.map(|m| m * k),
            subsampled: self.subsampled.and_then(|r| {
                Some(SubsampledRuns {
                    runs: r.runs.checked_mul(count)?,
                    ..r
                })
            }),
        }
    }

    /// The guarantee at this δ: the exact conversion of a Gaussian curve, else the smallest ε
    /// over the grid with `conversion` (module docs), with the RDP figure's order and statement.
    pub fn to_dp(&self, delta: f64, conversion: Conversion) -> Result<DpBound, PrivacyError> {
        self.guarantee(delta, conversion, None)
    }

    /// [`RdpCurve::to_dp`] for a curve that can be computed at any order: `at(α)` is the value at
    /// order `α` of the mechanism this curve is the grid's values of, and the RDP figure's order
    /// is refined between the grid's orders ([`crate::refine`]; the figure is never above
    /// [`RdpCurve::to_dp`]'s). An error from `at` is returned.
    pub fn to_dp_refined(
        &self,
        delta: f64,
        conversion: Conversion,
        mut at: impl FnMut(f64) -> Result<f64, PrivacyError>,
    ) -> Result<DpBound, PrivacyError> {
        self.guarantee(delta, conversion, Some(&mut at))
    }

    /// The guarantee of the mechanism whose curve on any grid is `curve(grid)`: on `orders`, its
    /// order refined between them ([`RdpCurve::to_dp_refined`]), each order probed computed by
    /// `curve` on a grid of that order alone.
    pub fn refined_bound(
        orders: &Orders,
        delta: f64,
        conversion: Conversion,
        curve: impl Fn(&Orders) -> Result<RdpCurve, PrivacyError>,
    ) -> Result<DpBound, PrivacyError> {
        curve(orders)?.to_dp_refined(delta, conversion, |alpha| {
            Ok(curve(&Orders::new(&[alpha])?)?.values()[0])
        })
    }

    fn guarantee(
        &self,
        delta: f64,
        conversion: Conversion,
        at: Option<&mut dyn FnMut(f64) -> Result<f64, PrivacyError>>,
    ) -> Result<DpBound, PrivacyError> {
        let delta = check_delta(delta)?;
        let mut best: Option<(f64, usize)> = None;
        for (x, (alpha, rdp)) in self.iter().enumerate() {
            if !rdp.is_finite() {
                continue;
            }
            let eps = epsilon_at(alpha, rdp, delta, conversion).max(0.0);
            if best.is_none_or(|(e, _)| eps < e) {
                best = Some((eps, x));
            }
        }
        let Some((grid_epsilon, x)) = best else {
            return Ok(DpBound::NoFiniteGuarantee { delta });
        };
        let orders = self.orders.as_slice();
        let (rdp_epsilon, order) = match at {
            None => (grid_epsilon, orders[x]),
            Some(at) => {
                let (lo, hi) = (
                    orders[x.saturating_sub(1)],
                    orders[(x + 1).min(orders.len() - 1)],
                );
                let (order, eps) = refine::search(lo, orders[x], hi, grid_epsilon, |alpha| {
                    let rdp = at(alpha)?;
                    Ok::<_, PrivacyError>(if rdp >= 0.0 && rdp.is_finite() {
                        epsilon_at(alpha, rdp, delta, conversion).max(0.0)
                    } else {
                        f64::INFINITY
                    })
                })?;
                (eps, order)
            }
        };
        // The exact figure of the Gaussian bound, where it is below the RDP one (module docs).
        let exact = self.gaussian_mu2.and_then(|mu2| {
            let mu = mu2.sqrt();
            gdp::epsilon(mu, delta)
                .filter(|&e| e <= rdp_epsilon)
                .map(|e| (mu, e))
        });
        // The PLD figure of subsampled Gaussian runs, where it is below the RDP one.
        let pld = match self.subsampled {
            Some(r) if exact.is_none() => {
                pld::subsampled_gaussian_epsilon(r.q, r.z, r.runs, delta, pld::DEFAULT_INTERVAL)?
                    .filter(|&e| e < rdp_epsilon)
            }
            _ => None,
        };
        Ok(DpBound::Finite(DpGuarantee {
            epsilon: pld.unwrap_or(exact.map_or(rdp_epsilon, |(_, e)| e)),
            delta,
            gaussian_mu: exact.map(|(mu, _)| mu),
            pld_interval: pld.map(|_| pld::DEFAULT_INTERVAL),
            rdp_epsilon,
            order,
            conversion,
        }))
    }
}

/// ε at one order (finite `rdp ≥ 0`, `α > 1`, `δ ∈ (0, 1)`: the result is finite).
fn epsilon_at(alpha: f64, rdp: f64, delta: f64, conversion: Conversion) -> f64 {
    match conversion {
        Conversion::Classic => rdp - delta.ln() / (alpha - 1.0),
        Conversion::Tight => {
            if delta * delta + (-rdp).exp_m1() >= 0.0 {
                0.0
            } else {
                rdp + (-1.0 / alpha).ln_1p() - (delta.ln() + alpha.ln()) / (alpha - 1.0)
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn grid(v: &[f64]) -> Orders {
        Orders::new(v).unwrap()
    }

    #[test]
    fn orders_are_validated() {
        assert_eq!(Orders::new(&[]), Err(PrivacyError::NoOrders));
        assert_eq!(Orders::new(&[1.0]), Err(PrivacyError::Order(1.0)));
        assert!(matches!(
            Orders::new(&[f64::NAN]),
            Err(PrivacyError::Order(_))
        ));
        assert_eq!(
            Orders::new(&[2.0, 2.0]),
            Err(PrivacyError::OrdersNotIncreasing(2.0, 2.0))
        );
        let d = Orders::default_grid();
        assert_eq!(d.len(), 198);
        assert_eq!(d.as_slice()[0], 1.01);
        assert_eq!(*d.as_slice().last().unwrap(), 1024.0);
        assert!(Orders::new(d.as_slice()).is_ok());
        for a in [
            1.01, 1.09, 1.1, 1.15, 1.2, 2.95, 3.0, 3.1, 7.3, 10.9, 11.0, 64.0, 72.0, 896.0,
        ] {
            assert!(d.as_slice().contains(&a), "{a} missing");
        }
        // The earlier grid is a subset, so no ε on the default grid is above what it gave.
        let mut earlier = vec![
            1.1, 1.25, 1.5, 1.75, 2.0, 2.25, 2.5, 2.75, 3.0, 3.5, 4.0, 4.5,
        ];
        earlier.extend((5..=64).map(f64::from));
        earlier.extend([128.0, 256.0, 512.0, 1024.0]);
        for a in earlier {
            assert!(d.as_slice().contains(&a), "{a} of the earlier grid missing");
        }
    }

    #[test]
    fn curve_values_are_validated() {
        let g = grid(&[2.0, 3.0]);
        assert!(RdpCurve::new(g.clone(), vec![0.0, f64::INFINITY]).is_ok());
        assert!(matches!(
            RdpCurve::new(g.clone(), vec![0.0, f64::NAN]),
            Err(PrivacyError::RdpValue { .. })
        ));
        assert!(matches!(
            RdpCurve::new(g.clone(), vec![-1.0, 0.0]),
            Err(PrivacyError::RdpValue { .. })
        ));
        assert!(matches!(
            RdpCurve::new(g, vec![0.0]),
            Err(PrivacyError::Length { .. })
        ));
    }

    #[test]
    fn composition_adds_and_checks_grids() {
        let g = grid(&[2.0, 3.0]);
        let a = RdpCurve::new(g.clone(), vec![1.0, 2.0]).unwrap();
        let b = RdpCurve::new(g.clone(), vec![0.5, f64::INFINITY]).unwrap();
        assert_eq!(a.compose(&b).unwrap().values(), &[1.5, f64::INFINITY]);
        assert_eq!(a.repeat(3).values(), &[3.0, 6.0]);
        assert_eq!(b.repeat(0).values(), &[0.0, 0.0]);
        let other = RdpCurve::zero(&grid(&[2.0, 4.0]));
        assert_eq!(a.compose(&other), Err(PrivacyError::OrdersMismatch));
    }

    #[test]
    fn conversions_match_their_formulas() {
        let g = grid(&[2.0, 10.0]);
        let c = RdpCurve::new(g, vec![0.1, 1.0]).unwrap();
        let d = 1e-5_f64;
        let classic = c.to_dp(d, Conversion::Classic).unwrap();
        let want = (0.1 - d.ln()).min(1.0 - d.ln() / 9.0);
        assert!((classic.epsilon() - want).abs() < 1e-12);
        let tight = c.to_dp(d, Conversion::Tight).unwrap();
        let t = |a: f64, r: f64| r + ((a - 1.0) / a).ln() - (d.ln() + a.ln()) / (a - 1.0);
        assert!((tight.epsilon() - t(2.0, 0.1).min(t(10.0, 1.0))).abs() < 1e-12);
        assert!(tight.epsilon() < classic.epsilon());
        match tight {
            DpBound::Finite(g) => {
                assert_eq!(g.order, 10.0);
                assert_eq!(g.conversion, Conversion::Tight);
            }
            DpBound::NoFiniteGuarantee { .. } => panic!("finite curve"),
        }
    }

    #[test]
    fn infinite_orders_are_skipped_and_all_infinite_is_explicit() {
        let g = grid(&[2.0, 10.0]);
        let c = RdpCurve::new(g.clone(), vec![f64::INFINITY, 1.0]).unwrap();
        match c.to_dp(1e-5, Conversion::Tight).unwrap() {
            DpBound::Finite(f) => assert_eq!(f.order, 10.0),
            DpBound::NoFiniteGuarantee { .. } => panic!("one order is finite"),
        }
        let inf = RdpCurve::new(g, vec![f64::INFINITY; 2]).unwrap();
        assert_eq!(
            inf.to_dp(1e-5, Conversion::Classic).unwrap(),
            DpBound::NoFiniteGuarantee { delta: 1e-5 }
        );
        assert_eq!(
            inf.to_dp(1e-5, Conversion::Classic).unwrap().epsilon(),
            f64::INFINITY
        );
    }

    #[test]
    fn bad_delta_is_an_error_and_zero_curve_gives_zero() {
        let c = RdpCurve::zero(&grid(&[2.0]));
        for d in [0.0, 1.0, -1.0, f64::NAN, 2.0] {
            assert!(matches!(
                c.to_dp(d, Conversion::Tight),
                Err(PrivacyError::Delta(_))
            ));
        }
        assert_eq!(c.to_dp(1e-5, Conversion::Tight).unwrap().epsilon(), 0.0);
    }

    #[test]
    fn subsampled_runs_survive_the_zero_curve_on_either_side_and_nothing_else() {
        let g = Orders::default_grid();
        let runs = crate::mechanism::subsampled_gaussian(&g, 0.01, 1.0).unwrap();
        let tag = |c: &RdpCurve| c.subsampled_runs().map(|r| r.runs);
        let mut acc = RdpCurve::zero(&g);
        acc.compose_in_place(&runs.repeat(3)).unwrap();
        assert_eq!(tag(&acc), Some(3));
        acc.compose_in_place(&RdpCurve::zero(&g)).unwrap();
        acc.compose_in_place(&runs).unwrap();
        assert_eq!(tag(&acc), Some(4));
        assert_eq!(acc.values(), runs.repeat(4).values());
        let other = crate::mechanism::subsampled_gaussian(&g, 0.02, 1.0).unwrap();
        assert_eq!(tag(&acc.compose(&other).unwrap()), None);
        let gaussian = crate::mechanism::gaussian(&g, 1.0).unwrap();
        assert_eq!(tag(&gaussian.compose(&runs).unwrap()), None);
        assert_eq!(tag(&runs.compose(&gaussian).unwrap()), None);
    }

    #[test]
    fn the_order_limit_is_the_one_the_error_states() {
        assert!(Orders::new(&[MAX_ORDER]).is_ok());
        let e = Orders::new(&[MAX_ORDER.next_up()]).unwrap_err();
        assert!(
            e.to_string().contains(&format!("at most {MAX_ORDER}")),
            "{e}"
        );
    }
}
