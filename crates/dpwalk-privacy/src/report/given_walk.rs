//! The certificate given the walk (N2) of a realised DP-SGD walk: every user's charge against its
//! worst observer on the holder sequence ([`crate::network::excursion::certify`]) and its (ε, δ)
//! ([`given_walk_bound`]), beside its local figure. Computed here for `dpwalk ledger certify`
//! (the walk rebuilt from the members' ledgers, `dpwalk_net::certify`) and for Python's
//! `dpwalk.certify_walk` (a holder sequence given directly).
//!
//! The certificate holds for the realised path even against an observer who knows it; it is
//! computed after the walk, so it cannot choose σ before one.

use super::{Conversions, QueryError};
use crate::local::local_view;
use crate::network::excursion::{Visit, certify};
use crate::network::given_walk::{GIVEN_WALK_LABEL, given_walk_bound};
use crate::rdp::{Conversion, Orders};
use crate::walk::{ASSUMPTIONS, Figure};
use crate::{Noise, PrivacyError};
use serde::Serialize;

/// The longest walk certified: the walk takes 16 bytes a step in memory, 160 MB at the limit (the
/// simulator records walks up to it, `dpwalk ledger certify` rebuilds them up to it).
pub const MAX_CERTIFIED_STEPS: u64 = 10_000_000;

/// Largest `users × steps` the simulator certifies (`users × (steps + users)` for
/// `dpwalk.certify_walk`, whose users need not all hold the token): one scan of the walk per
/// observer, on one core (measured: 2.9 s for 1,000 users and 10⁵ steps on a busy 2-core
/// machine, so up to about 30 s at the limit), and memory O(users) per thread.
pub const MAX_CERTIFIED_WORK: u128 = 1_000_000_000;

/// One user's certificate.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct UserCertificate {
    /// The member's index.
    pub user: usize,
    /// Its contributions.
    pub contributions: u64,
    /// Its noise-only visits (the budget spent).
    pub noise_only: u64,
    /// `max_j Ψ_ij`.
    pub psi: f64,
    /// N2 at δ.
    pub network_given_walk: Figure,
    /// The observer attaining `Ψ` (`None` without contributions).
    pub worst_observer: Option<usize>,
    /// The local figure of its contributions, for comparison.
    pub local: Figure,
}

/// Every user's certificate (`0..users`) on `walk`, at δ with `conversion`.
///
/// # Errors
/// δ outside (0, 1).
pub fn certify_users(
    users: usize,
    walk: &[Visit],
    orders: &Orders,
    noise: Noise,
    delta: f64,
    conversion: Conversion,
) -> Result<Vec<UserCertificate>, PrivacyError> {
    let mut contributions = vec![0u64; users];
    let mut noise_only = vec![0u64; users];
    for v in walk.iter().filter(|v| v.holder < users) {
        if v.contribution {
            contributions[v.holder] += 1;
        } else {
            noise_only[v.holder] += 1;
        }
    }
    certify(users, walk)
        .into_iter()
        .enumerate()
        .map(|(user, c)| {
            let k = contributions[user];
            let n2 = given_walk_bound(orders, noise, c.psi, k, delta, conversion)?;
            let local = local_view(orders, noise, k).to_dp(delta, conversion)?;
            Ok(UserCertificate {
                user,
                contributions: k,
                noise_only: noise_only[user],
                psi: c.psi,
                network_given_walk: n2.into(),
                worst_observer: c.observer,
                local: local.into(),
            })
        })
        .collect()
}

/// A DP-SGD walk to certify, given by its holders.
#[derive(Debug, Clone, PartialEq)]
pub struct GivenWalkQuery {
    /// The holder of the token at each step `0..K`.
    pub holders: Vec<usize>,
    /// The number of users (at least 2, above every holder); `None`: one more than the largest
    /// holder.
    pub users: Option<usize>,
    /// Each user's budget: its first `cap` visits contribute, later ones are noise-only (the
    /// budget policy); `None`: every visit contributes.
    pub cap: Option<u64>,
    /// Noise σ of each step.
    pub sigma: f64,
    /// The clip C.
    pub clip: f64,
    /// Orders, δ, conversion.
    pub conversions: Conversions,
}

/// The certificate given the walk of a holder sequence.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct GivenWalkReport {
    /// [`GIVEN_WALK_LABEL`].
    pub label: &'static str,
    /// The walk's length `K`.
    pub steps: u64,
    /// The number of users.
    pub users_count: usize,
    /// Each user's cap, when given.
    pub cap: Option<u64>,
    /// σ.
    pub sigma: f64,
    /// C.
    pub clip: f64,
    /// δ of every figure.
    pub delta: f64,
    /// The conversion.
    pub conversion: &'static str,
    /// What the figure assumes.
    pub assumptions: Vec<&'static str>,
    /// Per user, by index.
    pub users: Vec<UserCertificate>,
}

impl GivenWalkReport {
    /// The certificate of `query`'s walk.
    ///
    /// # Errors
    /// No holders, more than [`MAX_CERTIFIED_STEPS`], fewer than 2 users or a holder not among
    /// them, users × (steps + users) above [`MAX_CERTIFIED_WORK`], σ or C refused by the accountant, the orders or δ refused.
    pub fn new(query: &GivenWalkQuery) -> Result<Self, QueryError> {
        let steps = query.holders.len() as u64;
        if steps == 0 || steps > MAX_CERTIFIED_STEPS {
            return Err(QueryError::Refused(format!(
                "holders: a walk of 1 to {MAX_CERTIFIED_STEPS} steps is certified, got {steps}"
            )));
        }
        let largest = query.holders.iter().copied().max().unwrap_or(0);
        let users = query.users.unwrap_or(largest.saturating_add(1));
        if users < 2 {
            return Err(QueryError::Refused(format!(
                "users: a walk needs at least 2 users, got {users}"
            )));
        }
        if largest >= users {
            return Err(QueryError::Refused(format!(
                "holders: user {largest} is not among the {users} users (0 to {})",
                users - 1
            )));
        }
        // One scan of the walk per observer, each with O(users) of per-user state to reset.
        let work = users as u128 * (u128::from(steps) + users as u128);
        if work > MAX_CERTIFIED_WORK {
            return Err(QueryError::Refused(format!(
                "users x (steps + users) = {users} x ({steps} + {users}) is above the \
                 {MAX_CERTIFIED_WORK} certified (one scan of the walk per observer)"
            )));
        }
        let noise = Noise::new(query.sigma, query.clip).map_err(|source| QueryError::Invalid {
            flags: "sigma or clip",
            source,
        })?;
        let conv = &query.conversions;
        let orders = conv.orders()?;
        let mut visits = vec![0u64; users];
        let walk: Vec<Visit> = query
            .holders
            .iter()
            .map(|&holder| {
                visits[holder] += 1;
                Visit {
                    holder,
                    contribution: query.cap.is_none_or(|cap| visits[holder] <= cap),
                }
            })
            .collect();
        let certificates = certify_users(users, &walk, &orders, noise, conv.delta, conv.conversion)
            .map_err(|source| QueryError::Invalid {
                flags: "delta",
                source,
            })?;
        Ok(Self {
            label: GIVEN_WALK_LABEL,
            steps,
            users_count: users,
            cap: query.cap,
            sigma: noise.sigma(),
            clip: noise.clip(),
            delta: conv.delta,
            conversion: conv.conversion.name(),
            assumptions: ASSUMPTIONS.to_vec(),
            users: certificates,
        })
    }
}
