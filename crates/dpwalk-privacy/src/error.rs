//! The accountant's error type: every bad input becomes one of these, never a NaN or a panic.
//!
//! The ledger, which does I/O, has its own [`crate::ledger::LedgerError`].

use thiserror::Error;

/// Errors of the accounting math (curves, mechanisms, views, calibration).
#[derive(Debug, Error, Clone, PartialEq)]
pub enum PrivacyError {
    /// An order grid must not be empty.
    #[error("an RDP order grid needs at least one order")]
    NoOrders,
    /// Rényi orders must be `> 1` and at most `rdp::MAX_ORDER` (the number is written out here, so
    /// that this module does not depend on `rdp`; a test of `rdp` checks that they agree).
    #[error("RDP orders must be > 1 and at most 1048576, got {0}")]
    Order(f64),
    /// Orders must be listed strictly increasing (no duplicates).
    #[error("RDP orders must be strictly increasing, got {0} after {1}")]
    OrdersNotIncreasing(f64, f64),
    /// A curve's values must be `≥ 0` (possibly `+∞`), one per order.
    #[error("RDP value at order {order} must be >= 0 or +inf, got {value}")]
    RdpValue {
        /// The order.
        order: f64,
        /// The offending value.
        value: f64,
    },
    /// A curve must have one value per order.
    #[error("an RDP curve needs one value per order: {orders} orders, {values} values")]
    Length {
        /// Number of orders.
        orders: usize,
        /// Number of values.
        values: usize,
    },
    /// Curves over different order grids cannot be composed or compared.
    #[error("RDP curves over different order grids cannot be combined")]
    OrdersMismatch,
    /// δ must lie in (0, 1).
    #[error("delta must be in (0, 1), got {0}")]
    Delta(f64),
    /// ε targets must be positive and finite.
    #[error("epsilon must be > 0 and finite, got {0}")]
    Epsilon(f64),
    /// σ must be positive and finite for any guarantee.
    #[error("sigma must be > 0 and finite, got {0}")]
    Sigma(f64),
    /// The clipping bound C must be positive and finite.
    #[error("clip must be > 0 and finite, got {0}")]
    Clip(f64),
    /// A noise multiplier (noise std / sensitivity) must be positive and finite.
    #[error("noise multiplier must be > 0 and finite, got {0}")]
    NoiseMultiplier(f64),
    /// All-pairs accounting on an arbitrary graph is quadratic in the number of users.
    #[error(
        "pairwise network accounting is limited to {max} users on a non-complete graph, got {users}"
    )]
    TooManyUsers {
        /// Users of the graph.
        users: usize,
        /// The limit.
        max: usize,
    },
    /// A privacy loss distribution above the grid-point limit (ε in the hundreds).
    #[error(
        "the privacy loss distribution would need {points} grid points, above the limit of {limit}"
    )]
    PldTooLarge {
        /// Grid points needed.
        points: usize,
        /// The limit.
        limit: usize,
    },
    /// A sampling rate must lie in (0, 1].
    #[error("sampling rate must be in (0, 1], got {0}")]
    SamplingRate(f64),
    /// The number of users is out of range for the view.
    #[error("number of users must be >= {min}, got {got}")]
    Users {
        /// Smallest allowed value.
        min: u64,
        /// Given value.
        got: u64,
    },
    /// `E[1/M]` is a probability-weighted mean of `1/m ≤ 1`, so it must lie in `[0, 1]`.
    #[error("E[1/M] must be in [0, 1], got {0}")]
    InverseHitting(f64),
    /// The Lipschitz constant of the token map must be finite and `≥ 1`.
    #[error("the token map's Lipschitz constant must be finite and >= 1, got {0}")]
    Lipschitz(f64),
    /// A transition row is not a probability distribution over valid users.
    #[error("transition row {row}: {reason}")]
    Transition {
        /// The row (user) index.
        row: usize,
        /// What is wrong with it.
        reason: String,
    },
    /// A tolerance or option is out of range.
    #[error("option {name} out of range: {value}")]
    Option {
        /// The option's name.
        name: &'static str,
        /// The offending value.
        value: f64,
    },
    /// The subsampled-Gaussian series did not converge (reported instead of a wrong number).
    #[error("subsampled Gaussian series did not converge at order {order} (q = {q}, z = {z})")]
    NotConverged {
        /// The order.
        order: f64,
        /// Sampling rate.
        q: f64,
        /// Noise multiplier.
        z: f64,
    },
    /// No σ in the searched range meets the target.
    #[error("target epsilon = {epsilon} at delta = {delta} is unattainable: {reason}")]
    Unattainable {
        /// Target ε.
        epsilon: f64,
        /// Target δ.
        delta: f64,
        /// Why.
        reason: String,
    },
    /// The target holds for every σ (the observer never sees anything that depends on the user).
    #[error("the target holds without noise: the observer never sees the user's contributions")]
    NoiseNotNeeded,
    /// A walk's path is not valid for the model (linear-Gaussian reference).
    #[error("path step {step}: {reason}")]
    Path {
        /// The step.
        step: usize,
        /// What is wrong.
        reason: String,
    },
    /// A contributor/observer pair that is not two distinct users of the walk.
    #[error("pair (user {i}, observer {j}) is not two distinct users of a walk of {users} users")]
    Pair {
        /// The contributor.
        i: usize,
        /// The observer.
        j: usize,
        /// Users in the walk.
        users: usize,
    },
    /// The path-hidden network figure would take too long to compute.
    #[error(
        "network view not offered: cost (about {work:.1e} multiply-adds for a walk of {steps} steps among {users} users; the limit is {limit:.1e}): plan a shorter walk, or use the local view, which bounds every observer"
    )]
    NetworkCost {
        /// The estimated arithmetic.
        work: f64,
        /// Steps of the walk.
        steps: u64,
        /// Users.
        users: usize,
        /// The limit.
        limit: f64,
    },
    /// Too many contributions to enumerate their worst sign pattern exactly.
    #[error("{got} contributions, at most {max} can be enumerated exactly")]
    TooManyContributions {
        /// Contributions on the path.
        got: usize,
        /// The limit.
        max: usize,
    },
    /// The setting is outside what the mechanism's privacy proof covers.
    #[error("outside what the privacy proof covers: {0}")]
    OutsideProof(String),
    /// Too many rounds with distinct per-round losses to account one by one.
    #[error(
        "more than {max} rounds before the penalty reaches its cap: raise its growth or lower its cap"
    )]
    TooManyRounds {
        /// The limit.
        max: u64,
    },
    /// A matrix factorization did not converge (reported instead of a wrong number).
    #[error("the SVD of the observation matrix did not converge")]
    NotFactored,
}

/// Checks that a named parameter is finite and `> 0` ([`PrivacyError::Option`] otherwise).
pub(crate) fn positive(name: &'static str, value: f64) -> Result<f64, PrivacyError> {
    if value > 0.0 && value.is_finite() {
        Ok(value)
    } else {
        Err(PrivacyError::Option { name, value })
    }
}

/// Checks that a named parameter is finite and `≥ 0` ([`PrivacyError::Option`] otherwise).
pub(crate) fn nonnegative(name: &'static str, value: f64) -> Result<f64, PrivacyError> {
    if value >= 0.0 && value.is_finite() {
        Ok(value)
    } else {
        Err(PrivacyError::Option { name, value })
    }
}
