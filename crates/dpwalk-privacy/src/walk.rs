//! Per-user privacy of a walk on a topology: the figures `dpwalk account walk` prints and the
//! simulator reports, computed here once.
//!
//! For a user `i` with `K_i` contributions:
//! - **local**: `K_i · ε_loc(α)` converted to (ε, δ) ([`crate::local`]);
//! - **network**: for every observer `j`, `K_i · min(ε_loc, (1 + c) ε_loc E[1/M_ij])` at orders
//!   where `c = (α − 1) ε_loc(α) ≤ 1`, the local bound elsewhere ([`crate::network`]); the user's
//!   figure is the worst observer's. `E[1/M_ij]` is exact on the complete graph (one value for
//!   every pair, O(1) for any `n`) and a certified upper bound on any other graph (all pairs,
//!   O(n²) memory: refused above [`MAX_PAIRWISE_USERS`]).
//!
//! Every network figure rests on the assumptions listed in [`ASSUMPTIONS`]; they are printed with
//! it, and the local figure, which needs none of them, is always printed beside it.

use crate::Noise;
use crate::error::PrivacyError;
use crate::local::local_view;
use crate::network::{
    HittingOptions, InverseHitting, complete_graph_inverse_hitting, inverse_hitting_all_pairs,
    network_view,
};
use crate::rdp::{Conversion, DpBound, Orders};
use dpwalk_core::topology::Topology;
use serde::Serialize;

/// Largest arbitrary (non-complete) graph for which all pairs are computed.
pub const MAX_PAIRWISE_USERS: usize = 5000;

/// What every network figure assumes (DESIGN.md, "Privacy accounting").
pub const ASSUMPTIONS: [&str; 3] = [
    "only the observer's first visit by the token after each contribution counts (later visits are treated as post-processing)",
    "a user's contributions compose additively, as if its private u_i did not carry earlier noise into later steps",
    "the walk follows the topology's transition rows independently of the data",
];

/// The transition rows of a topology, in the form the accountant iterates.
pub fn transition_rows(topology: &Topology) -> Vec<Vec<(usize, f64)>> {
    (0..topology.n())
        .map(|i| topology.transition_row(i).collect())
        .collect()
}

/// `E[1/M_ij]` for a topology: one exact value on the complete graph, all certified pairs on
/// another graph.
#[derive(Debug, Clone, PartialEq)]
pub enum Hitting {
    /// The complete graph: every pair has the same exact value.
    Complete {
        /// Number of users.
        n: usize,
        /// `ln(n−1)/(n−2)`.
        value: f64,
    },
    /// Certified upper bounds for every ordered pair.
    Pairs(InverseHitting),
}

impl Hitting {
    /// Computes `E[1/M]` for the walk on `topology`.
    pub fn for_topology(topology: &Topology, opts: &HittingOptions) -> Result<Self, PrivacyError> {
        match topology {
            Topology::Complete { n } => Ok(Hitting::Complete {
                n: *n,
                value: complete_graph_inverse_hitting(*n as u64)?,
            }),
            other => {
                if other.n() > MAX_PAIRWISE_USERS {
                    return Err(PrivacyError::TooManyUsers {
                        users: other.n(),
                        max: MAX_PAIRWISE_USERS,
                    });
                }
                let rows = transition_rows(other);
                Ok(Hitting::Pairs(inverse_hitting_all_pairs(&rows, opts)?))
            }
        }
    }

    /// Number of users.
    pub fn users(&self) -> usize {
        match self {
            Hitting::Complete { n, .. } => *n,
            Hitting::Pairs(p) => p.users(),
        }
    }

    /// `E[1/M_ij]` (upper bound); 0 on the diagonal.
    pub fn get(&self, i: usize, j: usize) -> f64 {
        match self {
            Hitting::Complete { value, .. } => {
                if i == j {
                    0.0
                } else {
                    *value
                }
            }
            Hitting::Pairs(p) => p.get(i, j).map_or(0.0, |h| h.upper),
        }
    }

    /// The pair with the largest `E[1/M_ij]` (every user against its worst observer): the pair a
    /// network budget must protect so that it holds for every user.
    pub fn worst_pair(&self) -> WorstPair {
        let none = WorstPair {
            user: None,
            observer: None,
            inverse_hitting: 0.0,
        };
        match self {
            Hitting::Complete { value, .. } => WorstPair {
                inverse_hitting: *value,
                ..none
            },
            Hitting::Pairs(p) => (0..p.users())
                .filter_map(|i| {
                    p.worst_observer(i).map(|(j, v)| WorstPair {
                        user: Some(i),
                        observer: Some(j),
                        inverse_hitting: v,
                    })
                })
                .max_by(|a, b| a.inverse_hitting.total_cmp(&b.inverse_hitting))
                .unwrap_or(none),
        }
    }

    /// The observer with the largest `E[1/M_ij]` for source `i` (`None` on the complete graph,
    /// where every observer is equally placed), and that value.
    pub fn worst_observer(&self, i: usize) -> (Option<usize>, f64) {
        match self {
            Hitting::Complete { value, .. } => (None, *value),
            Hitting::Pairs(p) => match p.worst_observer(i) {
                Some((j, v)) => (Some(j), v),
                None => (None, 0.0),
            },
        }
    }
}

/// The pair of a walk whose observer learns most: user and observer are `None` on the complete
/// graph, where every pair is alike (and when no user reaches any other).
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct WorstPair {
    /// The user.
    pub user: Option<usize>,
    /// Its observer.
    pub observer: Option<usize>,
    /// `E[1/M]` of the pair (an upper bound on a graph).
    pub inverse_hitting: f64,
}

/// The contributions per user that a walk of `steps` hops among `users` users is accounted and
/// calibrated for when only the total is known: `ceil(steps / users)`, the expected count rounded
/// up. Conservative for the average user, not a bound for a user the walk happens to visit more
/// often (per-user caps or a node's own budget enforce that).
pub fn expected_contributions(steps: u64, users: u64) -> u64 {
    steps.div_ceil(users.max(1))
}

/// The noise, orders and conversion every figure of a report shares.
#[derive(Debug, Clone)]
pub struct Setup {
    /// Rényi orders.
    pub orders: Orders,
    /// σ and C.
    pub noise: Noise,
    /// δ of the (ε, δ) figures.
    pub delta: f64,
    /// RDP → (ε, δ) statement.
    pub conversion: Conversion,
}

/// One (ε, δ) figure and how it was obtained.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Figure {
    /// ε; `null` when there is no finite guarantee at this δ.
    pub epsilon: Option<f64>,
    /// The order that achieved it.
    pub order: Option<f64>,
}

impl From<DpBound> for Figure {
    fn from(b: DpBound) -> Self {
        match b {
            DpBound::Finite(g) => Figure {
                epsilon: Some(g.epsilon),
                order: Some(g.order),
            },
            DpBound::NoFiniteGuarantee { .. } => Figure {
                epsilon: None,
                order: None,
            },
        }
    }
}

impl Figure {
    /// ε with `+∞` for "no finite guarantee", for comparisons.
    pub fn epsilon_or_inf(&self) -> f64 {
        self.epsilon.unwrap_or(f64::INFINITY)
    }
}

/// The privacy figures of one user.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct UserFigures {
    /// The user.
    pub user: usize,
    /// Its contributions.
    pub contributions: u64,
    /// Against an eavesdropper on every token.
    pub local: Figure,
    /// Against the worst observer on the walk.
    pub network: Figure,
    /// That observer (`null` on the complete graph: all are alike).
    pub worst_observer: Option<usize>,
    /// `E[1/M]` towards that observer.
    pub inverse_hitting: f64,
    /// Orders where the network bound was not valid and the local one was used.
    pub fallback_orders: Vec<f64>,
}

/// The figures of user `i` after `contributions` contributions.
pub fn user_figures(
    setup: &Setup,
    hitting: &Hitting,
    user: usize,
    contributions: u64,
) -> Result<UserFigures, PrivacyError> {
    let local = local_view(&setup.orders, setup.noise, contributions);
    let (worst_observer, inverse_hitting) = hitting.worst_observer(user);
    let network = network_view(&setup.orders, setup.noise, contributions, inverse_hitting)?;
    Ok(UserFigures {
        user,
        contributions,
        local: local.to_dp(setup.delta, setup.conversion)?.into(),
        network: network.curve.to_dp(setup.delta, setup.conversion)?.into(),
        worst_observer,
        inverse_hitting,
        fallback_orders: network.fallback_orders,
    })
}

/// The figures of every user, given each one's contributions. Users with the same count on the
/// complete graph share one computation.
pub fn all_users(
    setup: &Setup,
    hitting: &Hitting,
    contributions: &[u64],
) -> Result<Vec<UserFigures>, PrivacyError> {
    let mut cache: std::collections::HashMap<u64, UserFigures> = std::collections::HashMap::new();
    contributions
        .iter()
        .enumerate()
        .map(|(i, &k)| match hitting {
            Hitting::Complete { .. } => {
                if let Some(f) = cache.get(&k) {
                    return Ok(UserFigures {
                        user: i,
                        ..f.clone()
                    });
                }
                let f = user_figures(setup, hitting, i, k)?;
                cache.insert(k, f.clone());
                Ok(f)
            }
            Hitting::Pairs(_) => user_figures(setup, hitting, i, k),
        })
        .collect()
}

/// The network ε of every ordered pair (`n × n`, row = user, column = observer; 0 on the
/// diagonal and for observers never reached; `+∞` where there is no finite guarantee).
pub fn pair_epsilons(
    setup: &Setup,
    hitting: &Hitting,
    contributions: &[u64],
) -> Result<Vec<f64>, PrivacyError> {
    let n = hitting.users();
    let mut out = vec![0.0; n * n];
    // Pairs with the same (contributions, E[1/M]) share one figure: on the complete graph a
    // whole row does.
    let mut cache: std::collections::HashMap<(u64, u64), f64> = std::collections::HashMap::new();
    for (i, &k) in contributions.iter().enumerate().take(n) {
        for j in (0..n).filter(|&j| j != i) {
            let e = hitting.get(i, j);
            if e == 0.0 {
                continue;
            }
            let eps = match cache.get(&(k, e.to_bits())) {
                Some(&eps) => eps,
                None => {
                    let curve = network_view(&setup.orders, setup.noise, k, e)?.curve;
                    let eps = curve.to_dp(setup.delta, setup.conversion)?.epsilon();
                    cache.insert((k, e.to_bits()), eps);
                    eps
                }
            };
            out[i * n + j] = eps;
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn setup(sigma: f64) -> Setup {
        Setup {
            orders: Orders::default_grid(),
            noise: Noise::new(sigma, 1.0).unwrap(),
            delta: 1e-6,
            conversion: Conversion::Tight,
        }
    }

    #[test]
    fn complete_graph_is_instant_and_below_local() {
        let t = std::time::Instant::now();
        let h = Hitting::for_topology(
            &Topology::Complete { n: 1_000_000 },
            &HittingOptions::default(),
        )
        .unwrap();
        let f = user_figures(&setup(50.0), &h, 3, 100).unwrap();
        assert!(t.elapsed().as_secs_f64() < 1.0);
        assert!(f.network.epsilon_or_inf() < f.local.epsilon_or_inf());
        assert_eq!(f.worst_observer, None);
    }

    #[test]
    fn ring_worst_observer_is_a_neighbour() {
        let ring =
            dpwalk_core::topology::TopologySpec::new(dpwalk_core::topology::TopologyKind::Ring)
                .build(Some(9), std::path::Path::new("."), 1)
                .unwrap();
        let h = Hitting::for_topology(&ring, &HittingOptions::default()).unwrap();
        let f = user_figures(&setup(50.0), &h, 4, 10).unwrap();
        let j = f.worst_observer.unwrap();
        assert!(j == 3 || j == 5, "worst observer {j}");
        let pairs = pair_epsilons(&setup(50.0), &h, &[10; 9]).unwrap();
        assert_eq!(pairs[4 * 9 + 4], 0.0);
        assert!(
            pairs[4 * 9 + 3] > pairs[4 * 9],
            "a neighbour learns more than a far node"
        );
        let users = all_users(&setup(50.0), &h, &[10; 9]).unwrap();
        assert_eq!(users[4], f);
    }

    #[test]
    fn same_counts_share_figures_on_the_complete_graph() {
        let h = Hitting::for_topology(&Topology::Complete { n: 100 }, &HittingOptions::default())
            .unwrap();
        let users = all_users(&setup(30.0), &h, &[5, 7, 5]).unwrap();
        assert_eq!(users[0].network, users[2].network);
        assert_eq!(users[2].user, 2);
        assert!(users[1].network.epsilon_or_inf() > users[0].network.epsilon_or_inf());
    }
}
