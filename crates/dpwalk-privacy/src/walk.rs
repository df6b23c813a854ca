//! Per-user privacy of a walk on a topology: the figures `dpwalk account walk` prints and the
//! simulator, the daemon and the audit report, computed here once.
//!
//! - **local**: `K_i · ε_loc(α)`, a composition of Gaussian mechanisms (`4C√K_i/σ`-GDP), converted
//!   to (ε, δ) exactly ([`crate::local`], [`crate::gdp`]). It holds for every step the walk can
//!   run, ADMM included, and needs no assumption. It bounds every network figure too: each is the
//!   smaller of its own RDP conversion and the local exact figure (the observer sees a function of
//!   the tokens; [`crate::rdp`], "Gaussian bounds").
//! - **network, path hidden** ([`path_hidden`], `specs/network-dp-2.md` §5; labelled
//!   [`PATH_HIDDEN`]): the DP-SGD walk with any number of contributions per user, capped by the
//!   budget policy. N1 on the complete graph (one figure for every pair), N3 on any other graph
//!   of at most [`MAX_PAIR_USERS`] users (each user against its worst observer: its neighbours
//!   pair by pair, every other observer through one coalition, [`crate::network::coalition`]);
//!   refused with [`NOT_OFFERED_COST`] above that and where the arithmetic would pass
//!   [`MAX_NETWORK_WORK`] ([`PrivacyError::NetworkCost`]). The mixture itself is in
//!   [`crate::network::mixture`], the per-path charge `Ψ` in [`crate::network::excursion`].
//! - **network given the walk** (N2, labelled [`GIVEN_WALK`]): `ε_loc·max_j Ψ_ij` for a realised
//!   walk ([`crate::network::excursion::certify`], [`crate::network::given_walk`]).
//! - **the one-contribution figure** ([`user_figures`] with a [`Passage`]): the earlier
//!   per-contribution mixture over first-passage laws, still exact for one contribution
//!   ([`NETWORK_ONE_CONTRIBUTION`] says why no more); only the audit's one-contribution canaries
//!   use it.
//!
//! The exact linear-Gaussian reference ([`crate::linear_gaussian`]) decided what is offered:
//! - **ADMM walk: no network figure** ([`ADMM_NETWORK_WITHDRAWN`]): a user revisited between a
//!   contribution and the observer subtracts its own earlier noise from the token, so the noise
//!   between them is not fresh.
//! - **DP-SGD walk: `Ψ` holds on every path** of the reference's sweeps (max exact/Ψ = 1, attained
//!   on flat paths), while adding per-contribution bounds falls short by up to 10.8×.
//!
//! Every network figure rests on the assumptions listed in [`ASSUMPTIONS`]; they are printed with
//! it, and the local figure, which needs none of them, is printed beside it.

use crate::Noise;
use crate::error::PrivacyError;
use crate::local::local_view;
use crate::network::coalition::Coalition;
use crate::network::complete::CompleteView;
use crate::network::mixture::{
    MAX_NETWORK_WORK, MAX_PAIR_USERS, MixtureOptions, Observer, PairChain, PairMixtures,
    check_work, network_orders, work,
};
use crate::network::{
    Charges, HittingOptions, InverseHitting, PassageLaw, complete_graph_inverse_hitting,
    network_curve, passage_all_pairs,
};
use crate::rdp::{Conversion, DpBound, Orders, RdpCurve};
use crate::refine::MAX_PROBES;
use dpwalk_core::topology::Topology;
use rayon::prelude::*;
use serde::Serialize;

/// Largest arbitrary (non-complete) graph for which all pairs are computed.
pub const MAX_PAIRWISE_USERS: usize = 5000;

/// What every network figure (DP-SGD on the walk, one contribution) assumes.
pub const ASSUMPTIONS: [&str; 2] = [
    crate::network::DP_SGD_ASSUMPTION,
    "the walk follows the topology's transition rows independently of the data",
];

/// Why a network figure covers one contribution per user: printed where a user made more.
pub const NETWORK_ONE_CONTRIBUTION: &str = "the network view is proved for one contribution per user (DP-SGD): several contributions first seen at the same visit share the noise after them, and their per-contribution bounds do not add up to a bound (exact linear-Gaussian reference: up to 10.8x short); users with two or more contributions have only the local figure";

/// Why the ADMM walk has no network figure: printed wherever one would stand
/// (`specs/network-dp-2.md` §8).
pub const ADMM_NETWORK_WITHDRAWN: &str = "no network bound is proved for the ADMM walk: a user revisited between a contribution and the observer subtracts its own earlier noise from the token (its u_l stores it), so the noise between them is not fresh; exact linear-Gaussian cases exceed the DP-SGD certificate by up to 4.6x (whole view) and 2.2x on a 4-hop path. The local figure holds for every observer";

/// The label of the a priori network figure of a memoryless walk (N1, N3).
pub const PATH_HIDDEN: &str = "network (path hidden)";

/// The label of the ex-post certificate for a realised walk (N2).
pub const GIVEN_WALK: &str = "network given the walk (ex post; not for calibration)";

/// Why a graph other than the complete one gets no path-hidden figure above
/// [`MAX_PAIR_USERS`] users.
pub const NOT_OFFERED_COST: &str = "not offered: cost (the path-hidden network figure of a graph other than the complete one is computed pair by pair, for at most 200 users); the complete graph has it for any number of users, and the local figure bounds every observer";

/// The transition rows of a topology, in the form the accountant iterates.
pub fn transition_rows(topology: &Topology) -> Vec<Vec<(usize, f64)>> {
    (0..topology.n())
        .map(|i| topology.transition_row(i).collect())
        .collect()
}

/// The first-passage laws of a walk on a topology (with `L = 1`: DP-SGD's non-expansive steps).
#[derive(Debug, Clone, PartialEq)]
pub enum Passage {
    /// The complete graph: every pair has the same exact (geometric) law.
    Complete {
        /// Number of users.
        n: usize,
        /// The law of every pair.
        law: PassageLaw,
        /// `E[1/M] = ln(n−1)/(n−2)`, for reports.
        inverse_hitting: f64,
    },
    /// Certified laws for every ordered pair of another graph.
    Pairs(Box<PairPassage>),
}

/// The laws of a non-complete graph: per user, envelopes of its observers' laws (one per
/// truncation the pass used).
#[derive(Debug, Clone, PartialEq)]
pub struct PairPassage {
    /// Certified `E[1/M_ij]` of every pair, with the pass's convergence figures.
    pub hitting: InverseHitting,
    sources: Vec<Vec<PassageLaw>>,
    rows: Vec<Vec<(usize, f64)>>,
    opts: HittingOptions,
}

/// Adds `law` to a set of envelopes, one per truncation.
fn absorb(set: &mut Vec<PassageLaw>, law: PassageLaw) {
    match set.iter_mut().find(|e| e.truncation() == law.truncation()) {
        Some(env) => {
            if let Some(merged) = PassageLaw::envelope([&*env, &law]) {
                *env = merged;
            }
        }
        None => set.push(law),
    }
}

impl Passage {
    /// Computes the laws of the walk on `topology`.
    pub fn for_topology(topology: &Topology, opts: &HittingOptions) -> Result<Self, PrivacyError> {
        match topology {
            Topology::Complete { n } => Ok(Passage::Complete {
                n: *n,
                law: PassageLaw::complete(*n as u64, 1.0)?,
                inverse_hitting: complete_graph_inverse_hitting(*n as u64)?,
            }),
            other => {
                if other.n() > MAX_PAIRWISE_USERS {
                    return Err(PrivacyError::TooManyUsers {
                        users: other.n(),
                        max: MAX_PAIRWISE_USERS,
                    });
                }
                let rows = transition_rows(other);
                let mut sources: Vec<Vec<PassageLaw>> = vec![Vec::new(); rows.len()];
                let hitting = passage_all_pairs(&rows, opts, 1.0, &mut |i, _, law| {
                    absorb(&mut sources[i], law);
                })?;
                Ok(Passage::Pairs(Box::new(PairPassage {
                    hitting,
                    sources,
                    rows,
                    opts: *opts,
                })))
            }
        }
    }

    /// Number of users.
    pub fn users(&self) -> usize {
        match self {
            Passage::Complete { n, .. } => *n,
            Passage::Pairs(p) => p.rows.len(),
        }
    }

    /// Laws that together bound every observer of user `i`.
    pub fn user_laws(&self, i: usize) -> &[PassageLaw] {
        match self {
            Passage::Complete { law, .. } => std::slice::from_ref(law),
            Passage::Pairs(p) => p.sources.get(i).map_or(&[], Vec::as_slice),
        }
    }

    /// `E[1/M_ij]` (an upper bound on a graph); 0 on the diagonal.
    pub fn inverse_hitting(&self, i: usize, j: usize) -> f64 {
        match self {
            Passage::Complete {
                inverse_hitting, ..
            } => {
                if i == j {
                    0.0
                } else {
                    *inverse_hitting
                }
            }
            Passage::Pairs(p) => p.hitting.get(i, j).map_or(0.0, |h| h.upper),
        }
    }

    /// The observer of user `i` with the largest `E[1/M]` (`None` on the complete graph, where
    /// every observer is alike), and that value: which observer the user's figure is about.
    pub fn worst_observer(&self, i: usize) -> (Option<usize>, f64) {
        match self {
            Passage::Complete {
                inverse_hitting, ..
            } => (None, *inverse_hitting),
            Passage::Pairs(p) => match p.hitting.worst_observer(i) {
                Some((j, v)) => (Some(j), v),
                None => (None, 0.0),
            },
        }
    }
}

/// The network curve bounding every law of `laws` (pointwise maximum): 0 without laws.
pub fn envelope_curve(
    laws: &[PassageLaw],
    orders: &Orders,
    noise: Noise,
    charges: &Charges,
) -> RdpCurve {
    let mut out = RdpCurve::zero(orders);
    for law in laws {
        let curve = network_curve(law, orders, noise, charges);
        out = out.max(&curve);
    }
    out
}

/// The contributions per user that a walk of `steps` hops among `users` users is planned for:
/// the `quantile` of the number of visits of a user that the walk holds with probability
/// `share` at each step (`1/n` on a regular graph), taken as Binomial(`steps`, `share`) — an
/// approximation of the walk's visit count, which is why it is only a plan: the budget policy
/// enforces the budget on the contributions actually made, and users visited more often skip.
pub fn planned_contributions(steps: u64, share: f64, quantile: f64) -> u64 {
    /// The longest walk planned with the exact binomial CDF: beyond it, the log-gamma terms of
    /// the sum lose their precision (at 10¹² steps the "exact" 0.99 quantile is already 160
    /// visits, 0.016 sd, off), and each CDF sums about 11 standard deviations of terms (up to
    /// 5·10⁵ here).
    const EXACT_MAX_STEPS: u64 = 10_000_000_000;
    /// Beyond [`EXACT_MAX_STEPS`], the largest mean planned with the Poisson quantile.
    const POISSON_MAX_MEAN: f64 = 10_000.0;
    let p = share.clamp(0.0, 1.0);
    if steps == 0 || p == 0.0 {
        return 0;
    }
    if p >= 1.0 {
        return steps;
    }
    let mean = steps as f64 * p;
    let sd = (mean * (1.0 - p)).sqrt();
    let z = normal_quantile(quantile.clamp(0.5, 1.0 - 1e-12));
    let k = if steps <= EXACT_MAX_STEPS {
        // The normal approximation, then the exact binomial CDF walked from there (it needs
        // only a few terms around the answer).
        let cdf = |k: u64| binomial_cdf(steps, p, k);
        let mut k = ((mean + z * sd).ceil().max(0.0) as u64).min(steps);
        while k > 0 && cdf(k - 1) >= quantile {
            k -= 1;
        }
        while k < steps && cdf(k) < quantile {
            k += 1;
        }
        k
    } else if mean <= POISSON_MAX_MEAN {
        // Binomial(steps, p) with p ≤ 10⁻⁶ is Poisson(mean) to within p in total variation
        // (Barbour & Hall 1984: d_TV ≤ (1 − e^−mean)·p).
        poisson_quantile(mean, quantile)
    } else {
        // Cornish–Fisher to the skewness (1 − 2p)/sd, with the continuity correction: within a
        // visit of the exact quantile where both apply (sd ≥ 70 here).
        let skew = (1.0 - 2.0 * p) / sd;
        let q = mean + sd * (z + (z * z - 1.0) * skew / 6.0) - 0.5;
        (q.ceil().max(0.0) as u64).min(steps)
    };
    k.max(steps.div_ceil((1.0 / p).round().max(1.0) as u64))
}

/// The smallest `k` with `P(X ≤ k) ≥ quantile` for `X ~ Poisson(mean)`, summed in log space
/// from 0 (`mean` at most 10⁴: a few thousand terms).
fn poisson_quantile(mean: f64, quantile: f64) -> u64 {
    let ln_mean = mean.ln();
    let mut cdf = 0.0;
    let mut k = 0u64;
    loop {
        let kf = k as f64;
        cdf += (kf * ln_mean - mean - libm::lgamma(kf + 1.0)).exp();
        if cdf >= quantile || kf > mean + 50.0 * mean.sqrt() + 50.0 {
            return k;
        }
        k += 1;
    }
}

/// `P(X ≤ k)` for `X ~ Binomial(n, p)`, summed in log space from the mode outwards.
fn binomial_cdf(n: u64, p: f64, k: u64) -> f64 {
    let ln_pmf = |x: u64| {
        let (nf, xf) = (n as f64, x as f64);
        libm::lgamma(nf + 1.0) - libm::lgamma(xf + 1.0) - libm::lgamma(nf - xf + 1.0)
            + xf * p.ln()
            + (nf - xf) * (-p).ln_1p()
    };
    let mut sum = 0.0;
    let mut x = k;
    loop {
        let term = ln_pmf(x).exp();
        sum += term;
        if x == 0 || (term < 1e-18 * sum && (x as f64) < n as f64 * p) {
            break;
        }
        x -= 1;
    }
    sum.min(1.0)
}

/// The standard normal quantile (Acklam's rational approximation, relative error < 1.2e-9).
fn normal_quantile(q: f64) -> f64 {
    const A: [f64; 6] = [
        -3.969_683_028_665_376e1,
        2.209_460_984_245_205e2,
        -2.759_285_104_469_687e2,
        1.383_577_518_672_69e2,
        -3.066_479_806_614_716e1,
        2.506_628_277_459_239,
    ];
    const B: [f64; 5] = [
        -5.447_609_879_822_406e1,
        1.615_858_368_580_409e2,
        -1.556_989_798_598_866e2,
        6.680_131_188_771_972e1,
        -1.328_068_155_288_572e1,
    ];
    const C: [f64; 6] = [
        -7.784_894_002_430_293e-3,
        -3.223_964_580_411_365e-1,
        -2.400_758_277_161_838,
        -2.549_732_539_343_734,
        4.374_664_141_464_968,
        2.938_163_982_698_783,
    ];
    const D: [f64; 4] = [
        7.784_695_709_041_462e-3,
        3.224_671_290_700_398e-1,
        2.445_134_137_142_996,
        3.754_408_661_907_416,
    ];
    let tail = |r: f64| {
        (((((C[0] * r + C[1]) * r + C[2]) * r + C[3]) * r + C[4]) * r + C[5])
            / ((((D[0] * r + D[1]) * r + D[2]) * r + D[3]) * r + 1.0)
    };
    if q < 0.02425 {
        tail((-2.0 * q.ln()).sqrt())
    } else if q > 1.0 - 0.02425 {
        -tail((-2.0 * (1.0 - q).ln()).sqrt())
    } else {
        let x = q - 0.5;
        let r = x * x;
        (((((A[0] * r + A[1]) * r + A[2]) * r + A[3]) * r + A[4]) * r + A[5]) * x
            / (((((B[0] * r + B[1]) * r + B[2]) * r + B[3]) * r + B[4]) * r + 1.0)
    }
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

/// One (ε, δ) figure and how it was obtained ([`crate::rdp::DpGuarantee`]).
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Figure {
    /// ε; `null` when there is no finite guarantee at this δ.
    pub epsilon: Option<f64>,
    /// The order of the RDP figure (`rdp_epsilon`, or `epsilon` when that is the RDP figure).
    pub order: Option<f64>,
    /// `μ` when ε is the exact conversion of a `μ`-GDP bound ([`crate::gdp`]); `null` when it is
    /// the RDP figure.
    pub exact_gaussian_mu: Option<f64>,
    /// The grid step of the privacy loss distribution when ε is the PLD figure of subsampled
    /// Gaussian runs ([`crate::pld`]); `null` otherwise.
    pub pld_interval: Option<f64>,
    /// The RDP figure, above ε, when ε is exact or the PLD figure: the cross-check.
    pub rdp_epsilon: Option<f64>,
}

impl From<DpBound> for Figure {
    fn from(b: DpBound) -> Self {
        match b {
            DpBound::Finite(g) => Figure {
                epsilon: Some(g.epsilon),
                order: Some(g.order),
                exact_gaussian_mu: g.gaussian_mu,
                pld_interval: g.pld_interval,
                rdp_epsilon: (g.gaussian_mu.is_some() || g.pld_interval.is_some())
                    .then_some(g.rdp_epsilon),
            },
            DpBound::NoFiniteGuarantee { .. } => Figure::none(),
        }
    }
}

impl Figure {
    /// No finite guarantee.
    pub fn none() -> Self {
        Figure {
            epsilon: None,
            order: None,
            exact_gaussian_mu: None,
            pld_interval: None,
            rdp_epsilon: None,
        }
    }

    /// ε = 0 (an observer of itself), with no order involved.
    pub fn zero() -> Self {
        Figure {
            epsilon: Some(0.0),
            ..Figure::none()
        }
    }

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
    /// Against its worst observer on the walk; `None` where no network bound holds (ADMM, or
    /// two or more contributions).
    pub network: Option<Figure>,
    /// That observer (`null` on the complete graph, where all are alike).
    pub worst_observer: Option<usize>,
    /// `E[1/M]` towards that observer.
    pub inverse_hitting: f64,
}

/// The figures of user `i` whose contributions are `charges`; `passage` is `None` where the walk
/// has no network view (the ADMM step). The network figure is computed for at most one
/// contribution ([`NETWORK_ONE_CONTRIBUTION`]).
pub fn user_figures(
    setup: &Setup,
    passage: Option<&Passage>,
    user: usize,
    charges: &Charges,
) -> Result<UserFigures, PrivacyError> {
    let contributions = charges.count();
    let local = local_view(&setup.orders, setup.noise, contributions);
    let (network, worst_observer, inverse_hitting) = match passage {
        Some(p) if contributions <= 1 => {
            let curve = envelope_curve(p.user_laws(user), &setup.orders, setup.noise, charges);
            let (observer, inv) = p.worst_observer(user);
            let figure = curve.to_dp(setup.delta, setup.conversion)?.into();
            (Some(figure), observer, inv)
        }
        _ => (None, None, 0.0),
    };
    Ok(UserFigures {
        user,
        contributions,
        local: local.to_dp(setup.delta, setup.conversion)?.into(),
        network,
        worst_observer,
        inverse_hitting,
    })
}

/// The path-hidden network figure of one user of a DP-SGD walk against its worst observer.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct PathHiddenFigure {
    /// The (ε, δ) figure, `min(local, network)` order by order.
    pub figure: Figure,
    /// The observer it is about: `None` on the complete graph, where all are alike, and where
    /// the worst is the coalition's figure, which bounds every observer beyond the user's
    /// neighbours at once ([`crate::network::coalition`]).
    pub observer: Option<usize>,
}

/// The path-hidden network view of a DP-SGD walk (`specs/network-dp-2.md` §5): N1 on the
/// complete graph (one figure for every user), N3 on any other graph of at most
/// [`MAX_PAIR_USERS`] users (per user, its worst observer).
#[derive(Debug, Clone, PartialEq)]
pub struct PathHidden {
    /// Per user; one entry for the complete graph, whose users are all alike.
    pub users: Vec<PathHiddenFigure>,
    /// An ε for every ordered pair (`n × n`, row = user, column = observer, 0 on the diagonal),
    /// when asked for: a neighbour's own pair figure; beyond the neighbours the coalition's
    /// figure, or the smaller of it and the pair's own where the far pairs were computed
    /// ([`path_hidden`]).
    pub pairs: Option<Vec<f64>>,
}

/// The path-hidden network view of a DP-SGD walk of `steps` steps on `topology` in which every
/// user contributes at most `cap` times (the budget policy enforces the cap; spent users take
/// noise-only steps), on the orders calibration and the budget policy use
/// ([`network_orders`]), each figure's order refined between them ([`Observer::bound`]; on a
/// graph other than the complete one only the worst observer's unless `with_pairs`, which gives
/// the same user figures), so that a calibrated σ reads back as its target. Refused above
/// [`MAX_PAIR_USERS`] users on a graph other than the complete one ([`NOT_OFFERED_COST`]), and
/// where the computation would exceed [`MAX_NETWORK_WORK`].
///
/// On a graph other than the complete one, user `i`'s figure is the largest of its neighbours'
/// pair figures and the coalition's ([`crate::network::coalition`]: one bound for every observer
/// outside `N[i]`). Where the coalition's is above every neighbour's and all `n(n − 1)` pairs
/// are within [`MAX_NETWORK_WORK`], the far pairs are computed too and each is charged the
/// smaller of its own figure and the coalition's, so that no figure is above what all pairs
/// give; above that limit the coalition's figure stands (proved, but up to a few per cent above
/// the far pairs' own on the graphs measured).
pub fn path_hidden(
    setup: &Setup,
    topology: &Topology,
    steps: u64,
    cap: u64,
    with_pairs: bool,
) -> Result<PathHidden, PrivacyError> {
    let opts = MixtureOptions::default();
    let k = usize::try_from(steps).unwrap_or(usize::MAX);
    let n = topology.n();
    let complete = matches!(topology, Topology::Complete { .. });
    if !complete && n > MAX_PAIR_USERS {
        return Err(PrivacyError::TooManyUsers {
            users: n,
            max: MAX_PAIR_USERS,
        });
    }
    let orders = network_orders(&setup.orders)?;
    // The local figure bounds every observer too: on its finer grid it can be the smaller.
    let local: Figure = local_view(&setup.orders, setup.noise, cap)
        .to_dp(setup.delta, setup.conversion)?
        .into();
    let smaller = |network: Figure| {
        if local.epsilon_or_inf() < network.epsilon_or_inf() {
            local
        } else {
            network
        }
    };
    if complete {
        let network = CompleteView::new(&setup.orders, n as u64, steps)?.bound(
            setup.noise,
            cap,
            setup.delta,
            setup.conversion,
        )?;
        let f = smaller(network.into());
        let pairs = with_pairs.then(|| {
            (0..n * n)
                .map(|x| {
                    if x / n == x % n {
                        0.0
                    } else {
                        f.epsilon_or_inf()
                    }
                })
                .collect()
        });
        return Ok(PathHidden {
            users: vec![PathHiddenFigure {
                figure: f,
                observer: None,
            }],
            pairs,
        });
    }
    let rows = transition_rows(topology);
    let observers = Network {
        rows: &rows,
        steps: k,
        orders: &orders,
        setup,
        cap,
        opts,
        local,
    };
    // Each user's neighbours pair by pair, every other observer through its coalition
    // ([`crate::network::coalition`]); the far pairs one by one only where the coalition is the
    // worst and all pairs are within the cost limit.
    let coalitions: Vec<Coalition> = (0..n)
        .map(|i| Coalition::new(&rows, i))
        .collect::<Result<_, _>>()?;
    let pair_work = work(&PairChain::pair(&rows, 0, 1)?, k, &opts);
    let neighbour_pairs: usize = coalitions.iter().map(|c| c.neighbours().count()).sum();
    let coalition_work: f64 = coalitions.iter().map(|c| c.work(k, &opts)).sum();
    let per_order = pair_work * neighbour_pairs as f64 + coalition_work;
    // The orders between the grid's: every observer's with the pairs; else each user's coalition
    // and a few pairs (its worst neighbour and observer). The far pairs are decided on the grid's
    // orders alone, so that asking for the pairs changes no user's figure.
    let between = if with_pairs {
        per_order
    } else {
        coalition_work + 2.0 * pair_work * n as f64
    };
    check_work(
        per_order * orders.len() as f64 + between * MAX_PROBES as f64,
        k,
        n,
    )?;
    let far_pairs = pair_work * (n * (n - 1)) as f64 * orders.len() as f64 <= MAX_NETWORK_WORK;
    let rows_and_users: Vec<(Vec<Figure>, PathHiddenFigure)> = coalitions
        .par_iter()
        .enumerate()
        .map(|(i, c)| user_row(i, c, far_pairs, with_pairs, &observers))
        .collect::<Result<_, _>>()?;
    let matrix: Vec<f64> = rows_and_users
        .iter()
        .flat_map(|(row, _)| row.iter().map(Figure::epsilon_or_inf))
        .collect();
    Ok(PathHidden {
        users: rows_and_users.into_iter().map(|(_, u)| u).collect(),
        pairs: with_pairs.then_some(matrix),
    })
}

/// The observers of a user's row ([`user_row`]): each one's figure on the network orders, with
/// what refining it later needs, or at one order alone; and its refinement between the orders
/// ([`Observer::bound`]).
trait RowObservers {
    /// What a figure on the orders keeps to be refined later.
    type Kept;
    /// Pair `(i, j)`'s figure on the orders, with what refining it needs, or at order `at` alone
    /// (nothing kept: any order gives a valid bound).
    fn pair(
        &self,
        i: usize,
        j: usize,
        at: Option<f64>,
    ) -> Result<(Figure, Option<Self::Kept>), PrivacyError>;
    /// The coalition's figure on the orders, with what refining it needs.
    fn coalition(&self, c: &Coalition) -> Result<(Figure, Self::Kept), PrivacyError>;
    /// Pair `(i, j)`'s figure refined from what [`RowObservers::pair`] kept.
    fn refined_pair(&self, i: usize, j: usize, kept: &Self::Kept) -> Result<Figure, PrivacyError>;
    /// The coalition's figure refined from what [`RowObservers::coalition`] kept.
    fn refined_coalition(&self, c: &Coalition, kept: &Self::Kept) -> Result<Figure, PrivacyError>;
}

/// The observers of a DP-SGD walk on a graph: pairs and coalitions by their mixtures, each
/// figure never above the local one.
struct Network<'a> {
    rows: &'a [Vec<(usize, f64)>],
    steps: usize,
    orders: &'a Orders,
    setup: &'a Setup,
    cap: u64,
    opts: MixtureOptions,
    local: Figure,
}

impl Network<'_> {
    fn smaller(&self, bound: DpBound) -> Figure {
        let network = Figure::from(bound);
        if self.local.epsilon_or_inf() < network.epsilon_or_inf() {
            self.local
        } else {
            network
        }
    }
}

impl RowObservers for Network<'_> {
    type Kept = PairMixtures;

    fn pair(
        &self,
        i: usize,
        j: usize,
        at: Option<f64>,
    ) -> Result<(Figure, Option<PairMixtures>), PrivacyError> {
        let chain = PairChain::pair(self.rows, i, j)?;
        let observer = Observer::pair(&chain, self.steps, &self.opts);
        let one;
        let orders = match at {
            Some(alpha) => {
                one = Orders::new(&[alpha])?;
                &one
            }
            None => self.orders,
        };
        let mixtures = observer.mixtures(orders, self.setup.noise);
        let bound = mixtures
            .curve(self.cap)
            .to_dp(self.setup.delta, self.setup.conversion)?;
        Ok((self.smaller(bound), at.is_none().then_some(mixtures)))
    }

    fn coalition(&self, c: &Coalition) -> Result<(Figure, PairMixtures), PrivacyError> {
        let mixtures = c
            .observer(self.steps, &self.opts)
            .mixtures(self.orders, self.setup.noise);
        let bound = mixtures
            .curve(self.cap)
            .to_dp(self.setup.delta, self.setup.conversion)?;
        Ok((self.smaller(bound), mixtures))
    }

    fn refined_pair(
        &self,
        i: usize,
        j: usize,
        kept: &PairMixtures,
    ) -> Result<Figure, PrivacyError> {
        let chain = PairChain::pair(self.rows, i, j)?;
        let observer = Observer::pair(&chain, self.steps, &self.opts);
        let bound = observer.bound(kept, self.cap, self.setup.delta, self.setup.conversion)?;
        Ok(self.smaller(bound))
    }

    fn refined_coalition(
        &self,
        c: &Coalition,
        kept: &PairMixtures,
    ) -> Result<Figure, PrivacyError> {
        let observer = c.observer(self.steps, &self.opts);
        let bound = observer.bound(kept, self.cap, self.setup.delta, self.setup.conversion)?;
        Ok(self.smaller(bound))
    }
}

/// How far a figure of a user's row has been computed.
enum Stage<K> {
    /// Refined between the orders.
    Refined,
    /// On the orders, with what refining it needs.
    Grid(K),
    /// At one order alone (a screened far pair): refining it computes the pair in full.
    OneOrder,
}

/// A figure of a user's row, if computed, and how far.
type Entry<K> = Option<(Figure, Stage<K>)>;

/// The smaller of two figures (each a valid bound).
fn smaller_of(a: Figure, b: Figure) -> Figure {
    if a.epsilon_or_inf() <= b.epsilon_or_inf() {
        a
    } else {
        b
    }
}

/// User `i`'s figures against every observer and against its worst: its neighbours' pair by
/// pair, every other observer's from the coalition's, or, where the coalition is above every
/// neighbour and `far_pairs` allows, the smaller of the coalition's and the pair's own. A far
/// pair's own figure is first taken at the worst neighbour's order alone: where that is already
/// below the neighbour, it is kept (a valid bound at one order) and the pair's full figure is
/// not computed.
///
/// With `refine_all` every figure on the orders is refined between them ([`Observer::bound`]);
/// without, the coalition's, the worst neighbour's (against which the far pairs are decided and
/// screened, as with `refine_all`), and then the worst observer's until the worst is refined:
/// refining only lowers a figure, so the user's figure and worst observer are what refining
/// every one gives, at the cost of a few refinements; the row's other entries stay on the
/// orders.
fn user_row<O: RowObservers>(
    i: usize,
    c: &Coalition,
    far_pairs: bool,
    refine_all: bool,
    observers: &O,
) -> Result<(Vec<Figure>, PathHiddenFigure), PrivacyError> {
    let n = c.users();
    let refine_pair =
        |j: usize, figure: Figure, stage: Stage<O::Kept>| -> Result<Figure, PrivacyError> {
            match stage {
                Stage::Refined => Ok(figure),
                Stage::Grid(kept) => observers.refined_pair(i, j, &kept),
                Stage::OneOrder => {
                    let (_, kept) = observers.pair(i, j, None)?;
                    let full = match kept {
                        Some(kept) => observers.refined_pair(i, j, &kept)?,
                        None => figure,
                    };
                    Ok(smaller_of(figure, full))
                }
            }
        };
    let full_pair = |j: usize| -> Result<(Figure, Stage<O::Kept>), PrivacyError> {
        let (figure, kept) = observers.pair(i, j, None)?;
        let stage = kept.map_or(Stage::OneOrder, Stage::Grid);
        if refine_all {
            Ok((refine_pair(j, figure, stage)?, Stage::Refined))
        } else {
            Ok((figure, stage))
        }
    };
    // Per observer: its own pair figure, and whether the coalition's bounds it too.
    let mut own: Vec<Entry<O::Kept>> = (0..n).map(|_| None).collect();
    let mut by_coalition = vec![false; n];
    // The coalition's figure, refined.
    let mut far: Option<Figure> = None;
    let neighbours: Vec<usize> = c.neighbours().collect();
    for &j in &neighbours {
        own[j] = Some(full_pair(j)?);
    }
    // The worst neighbour's figure refined (and any tied with it), as `refine_all` has it: the
    // far pairs are decided and screened against it.
    loop {
        let eps = |j: usize| own[j].as_ref().map_or(0.0, |o| o.0.epsilon_or_inf());
        let top = neighbours.iter().map(|&j| eps(j)).fold(0.0, f64::max);
        let next = neighbours.iter().copied().find(|&j| {
            eps(j) == top && matches!(&own[j], Some((_, Stage::Grid(_) | Stage::OneOrder)))
        });
        let Some(j) = next else { break };
        if let Some((f, stage)) = own[j].take() {
            own[j] = Some((refine_pair(j, f, stage)?, Stage::Refined));
        }
    }
    let mut near = Figure::zero();
    for &j in &neighbours {
        if let Some((f, _)) = &own[j]
            && f.epsilon_or_inf() > near.epsilon_or_inf()
        {
            near = *f;
        }
    }
    let near_eps = near.epsilon_or_inf();
    if !c.observers().is_empty() {
        // The coalition refined in either mode: the far pairs are decided against it.
        let (_, kept) = observers.coalition(c)?;
        let f = observers.refined_coalition(c, &kept)?;
        let each = far_pairs && f.epsilon_or_inf() > near_eps;
        far = Some(f);
        for &j in c.observers() {
            by_coalition[j] = true;
            if each {
                let screened = match near.order {
                    Some(alpha) => Some(observers.pair(i, j, Some(alpha))?.0),
                    None => None,
                };
                own[j] = Some(match screened {
                    Some(f) if f.epsilon_or_inf() <= near_eps => (f, Stage::OneOrder),
                    _ => full_pair(j)?,
                });
            }
        }
    }
    // Observer j's figure: the smaller of its own and the coalition's, where both bound it.
    let value = |own: &[Entry<O::Kept>], far: Option<Figure>, j: usize| {
        let candidates = own[j]
            .as_ref()
            .map(|o| o.0)
            .into_iter()
            .chain(far.filter(|_| by_coalition[j]));
        candidates.reduce(smaller_of)
    };
    // The worst observer; the first among equals.
    let worst = |own: &[Entry<O::Kept>], far: Option<Figure>| {
        let mut worst: Option<(usize, Figure)> = None;
        for j in (0..n).filter(|&j| j != i) {
            if let Some(f) = value(own, far, j)
                && worst.is_none_or(|w| f.epsilon_or_inf() > w.1.epsilon_or_inf())
            {
                worst = Some((j, f));
            }
        }
        worst
    };
    // The worst observer's own figure refined, until the worst is refined.
    while let Some((j, _)) = worst(&own, far) {
        match own[j].take() {
            Some((f, stage @ (Stage::Grid(_) | Stage::OneOrder))) => {
                own[j] = Some((refine_pair(j, f, stage)?, Stage::Refined));
            }
            other => {
                own[j] = other;
                break;
            }
        }
    }
    let row: Vec<Figure> = (0..n)
        .map(|j| {
            if j == i {
                Figure::zero()
            } else {
                value(&own, far, j).unwrap_or_else(Figure::zero)
            }
        })
        .collect();
    let worst = match worst(&own, far) {
        // The coalition's shared figure names no observer.
        Some((j, figure)) => PathHiddenFigure {
            figure,
            observer: own[j].is_some().then_some(j),
        },
        None => PathHiddenFigure {
            figure: Figure::zero(),
            observer: None,
        },
    };
    Ok((row, worst))
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

    fn ring(n: usize) -> Topology {
        dpwalk_core::topology::TopologySpec::new(dpwalk_core::topology::TopologyKind::Ring)
            .build(Some(n), std::path::Path::new("."), 1)
            .unwrap()
    }

    #[test]
    fn a_million_users_on_the_complete_graph_and_one_contribution_only() {
        let p = Passage::for_topology(
            &Topology::Complete { n: 1_000_000 },
            &HittingOptions::default(),
        )
        .unwrap();
        let f = user_figures(&setup(5.0), Some(&p), 3, &Charges::at_steps([10], 1000)).unwrap();
        let network = f.network.unwrap();
        assert!(network.epsilon_or_inf() < f.local.epsilon_or_inf());
        assert_eq!(f.worst_observer, None);
        let admm = user_figures(&setup(5.0), None, 3, &Charges::at_steps([10], 1000)).unwrap();
        assert_eq!((admm.network, admm.local), (None, f.local));
        let two =
            user_figures(&setup(5.0), Some(&p), 3, &Charges::at_steps([10, 20], 1000)).unwrap();
        assert_eq!(two.network, None, "not offered for two contributions");
    }

    #[test]
    fn ring_worst_observer_is_a_neighbour() {
        let p = Passage::for_topology(&ring(9), &HittingOptions::default()).unwrap();
        let charges = vec![Charges::at_steps([3], 100); 9];
        let f = user_figures(&setup(50.0), Some(&p), 4, &charges[4]).unwrap();
        let j = f.worst_observer.unwrap();
        assert!(j == 3 || j == 5, "worst observer {j}");
        // Never above the local figure; here the ring's network RDP figure (3-4 % below the local
        // RDP one) is above the local view's exact figure (7 % below), which bounds it.
        let network = f.network.unwrap();
        assert_eq!(network.epsilon, f.local.epsilon);
        assert!(network.exact_gaussian_mu.is_some());
    }

    /// Without the pairs, only each user's worst observer is refined: its figure is what refining
    /// every observer gives (up to a screened far pair, which may only be lower).
    #[test]
    fn refining_the_worst_observer_alone_gives_the_figure_of_refining_all() {
        use dpwalk_core::topology::{TopologyKind, TopologySpec};
        let mut spec = TopologySpec::new(TopologyKind::RandomRegular);
        spec.degree = Some(4);
        for (n, steps, cap, sigma) in [(16, 320, 30, 20.0), (12, 120, 10, 5.0)] {
            let topology = spec.build(Some(n), std::path::Path::new("."), 2).unwrap();
            let all = path_hidden(&setup(sigma), &topology, steps, cap, true).unwrap();
            let lazy = path_hidden(&setup(sigma), &topology, steps, cap, false).unwrap();
            let mut equal = 0;
            for (a, l) in all.users.iter().zip(&lazy.users) {
                let (a, l) = (a.figure.epsilon_or_inf(), l.figure.epsilon_or_inf());
                assert!(l <= a, "{l} above {a}");
                equal += usize::from(l == a);
            }
            assert_eq!(equal, n, "n {n}: {:?} against {:?}", lazy.users, all.users);
        }
    }

    #[test]
    fn n3_is_never_above_all_pairs_and_equals_it_where_a_neighbour_is_the_worst() {
        use dpwalk_core::topology::{TopologyKind, TopologySpec};
        let mut spec = TopologySpec::new(TopologyKind::RandomRegular);
        spec.degree = Some(4);
        // A graph and walk where the coalition is above every pair for some users (so the far pairs
        // are computed for them) and below the neighbours for the others.
        let (n, steps, cap, seed) = (16, 320, 30, 2);
        let topology = spec
            .build(Some(n), std::path::Path::new("."), seed)
            .unwrap();
        let setup = setup(20.0);
        let got = path_hidden(&setup, &topology, steps, cap, true).unwrap();
        let rows = transition_rows(&topology);
        let orders = network_orders(&setup.orders).unwrap();
        let opts = MixtureOptions::default();
        let local = local_view(&setup.orders, setup.noise, cap)
            .to_dp(setup.delta, setup.conversion)
            .map(Figure::from)
            .unwrap()
            .epsilon_or_inf();
        let (mut equal, mut below, mut above) = (0, 0, 0);
        for i in 0..n {
            let c = Coalition::new(&rows, i).unwrap();
            let neighbours: Vec<usize> = c.neighbours().collect();
            // Every pair by itself, as N3 was computed before the coalition.
            let mut worst = (0.0, 0);
            for j in (0..n).filter(|&j| j != i) {
                let chain = PairChain::pair(&rows, i, j).unwrap();
                let observer = Observer::pair(&chain, steps as usize, &opts);
                let mixtures = observer.mixtures(&orders, setup.noise);
                let e = observer
                    .bound(&mixtures, cap, setup.delta, setup.conversion)
                    .map(Figure::from)
                    .unwrap()
                    .epsilon_or_inf()
                    .min(local);
                if e > worst.0 {
                    worst = (e, j);
                }
            }
            let user = got.users[i];
            let observer = c.observer(steps as usize, &opts);
            let mixtures = observer.mixtures(&orders, setup.noise);
            let coalition = observer
                .bound(&mixtures, cap, setup.delta, setup.conversion)
                .map(Figure::from)
                .unwrap()
                .epsilon_or_inf();
            above += usize::from(coalition > worst.0);
            let e = user.figure.epsilon_or_inf();
            assert!(e <= worst.0, "user {i}: {e} above all pairs' {}", worst.0);
            for &j in &neighbours {
                let pair = got.pairs.as_ref().unwrap()[i * n + j];
                assert!(e >= pair, "user {i}: {e} below its neighbour {j}'s {pair}");
            }
            if neighbours.contains(&worst.1) {
                assert_eq!(e, worst.0, "user {i}");
                assert_eq!(user.observer, Some(worst.1), "user {i}");
                equal += 1;
            } else {
                below += 1;
            }
        }
        assert!(equal > 0, "some user's worst observer is a neighbour");
        assert!(above > 0, "some user's coalition is above all its pairs");
        assert_eq!(equal + below, n);
    }

    /// `user_row` on made-up figures (ring of 8, user 0: neighbours 1 and 7, far 2..=6): which
    /// pairs it computes, at which orders, and what it keeps.
    #[test]
    fn far_pairs_are_screened_at_the_neighbours_order_and_charged_the_smaller_bound() {
        use std::cell::{Cell, RefCell};
        fn f(e: f64) -> Figure {
            Figure {
                epsilon: Some(e),
                order: Some(5.0),
                ..Figure::none()
            }
        }
        /// Full figures: neighbours 1.0 and 0.8, observer 3 1.5, the others 0.5; at order 5
        /// alone: observer 3 1.6 (above the neighbours), observer 4 0.9, the others 0.7; the
        /// coalition `coalition`. Refined, `gain` times their full figure.
        struct Mock {
            calls: RefCell<Vec<(usize, bool)>>,
            refined: RefCell<Vec<usize>>,
            coalition: Cell<f64>,
            gain: Cell<f64>,
        }
        impl Mock {
            fn full(j: usize) -> f64 {
                match j {
                    1 => 1.0,
                    7 => 0.8,
                    3 => 1.5,
                    _ => 0.5,
                }
            }
        }
        impl RowObservers for Mock {
            type Kept = ();
            fn pair(
                &self,
                _: usize,
                j: usize,
                at: Option<f64>,
            ) -> Result<(Figure, Option<()>), PrivacyError> {
                self.calls.borrow_mut().push((j, at.is_some()));
                let e = match (j, at) {
                    (_, None) => Mock::full(j),
                    (3, Some(_)) => 1.6,
                    (4, Some(_)) => 0.9,
                    (_, Some(_)) => 0.7,
                };
                Ok((f(e), at.is_none().then_some(())))
            }
            fn coalition(&self, _: &Coalition) -> Result<(Figure, ()), PrivacyError> {
                Ok((f(self.coalition.get()), ()))
            }
            fn refined_pair(&self, _: usize, j: usize, _: &()) -> Result<Figure, PrivacyError> {
                self.refined.borrow_mut().push(j);
                Ok(f(self.gain.get() * Mock::full(j)))
            }
            fn refined_coalition(&self, _: &Coalition, _: &()) -> Result<Figure, PrivacyError> {
                Ok(f(self.gain.get() * self.coalition.get()))
            }
        }
        let rows = transition_rows(&ring(8));
        let c = Coalition::new(&rows, 0).unwrap();
        let m = Mock {
            calls: RefCell::new(Vec::new()),
            refined: RefCell::new(Vec::new()),
            coalition: Cell::new(2.0),
            gain: Cell::new(1.0),
        };
        let eps = |row: &[Figure]| -> Vec<f64> { row.iter().map(|x| x.epsilon_or_inf()).collect() };
        // The pairs computed in full, sorted, and the count of calls (then forgotten).
        let full = |m: &Mock| -> (Vec<usize>, usize) {
            let mut v: Vec<usize> = m
                .calls
                .borrow()
                .iter()
                .filter(|c| !c.1)
                .map(|c| c.0)
                .collect();
            v.sort_unstable();
            let count = m.calls.borrow().len();
            m.calls.borrow_mut().clear();
            m.refined.borrow_mut().clear();
            (v, count)
        };
        // The coalition (2.0) above the neighbours: far pairs screened, observer 3 computed.
        let (row, worst) = user_row(0, &c, true, true, &m).unwrap();
        assert_eq!(eps(&row), vec![0.0, 1.0, 0.7, 1.5, 0.9, 0.7, 0.7, 0.8]);
        assert_eq!((worst.figure.epsilon, worst.observer), (Some(1.5), Some(3)));
        assert_eq!(full(&m).0, vec![1, 3, 7]);
        // A coalition between: it bounds observer 3 better than its own figure.
        m.coalition.set(1.2);
        let (row, worst) = user_row(0, &c, true, true, &m).unwrap();
        assert_eq!(row[3].epsilon, Some(1.2));
        assert_eq!((worst.figure.epsilon, worst.observer), (Some(1.2), Some(3)));
        full(&m);
        // Far pairs not affordable: the coalition's figure for every far observer.
        m.coalition.set(2.0);
        let (row, worst) = user_row(0, &c, false, true, &m).unwrap();
        assert_eq!(eps(&row), vec![0.0, 1.0, 2.0, 2.0, 2.0, 2.0, 2.0, 0.8]);
        assert_eq!((worst.figure.epsilon, worst.observer), (Some(2.0), None));
        assert_eq!(full(&m).0, vec![1, 7]);
        // The coalition below the neighbours: no far pair at all.
        m.coalition.set(0.9);
        let (_, worst) = user_row(0, &c, true, true, &m).unwrap();
        assert_eq!((worst.figure.epsilon, worst.observer), (Some(1.0), Some(1)));
        assert_eq!(full(&m).1, 2);
        // Refined (0.9 of the grid's) everywhere, or lazily from the worst down: the same
        // figure. Lazily, the worst neighbour's (1, 0.9) and the coalition's (1.08) are refined,
        // against which observer 3 is decided, then observer 3's own, the worst (1.5 against the
        // coalition's 1.08), which stays the worst.
        m.gain.set(0.9);
        m.coalition.set(1.2);
        let scaled = |x: f64| (x * 1e6).round() / 1e6;
        let (_, all) = user_row(0, &c, true, true, &m).unwrap();
        full(&m);
        let (row, lazy) = user_row(0, &c, true, false, &m).unwrap();
        assert_eq!(lazy.observer, Some(3));
        assert_eq!(lazy.observer, all.observer);
        assert_eq!(lazy.figure.epsilon.map(scaled), Some(1.08));
        assert_eq!(lazy.figure.epsilon, all.figure.epsilon);
        assert_eq!(
            row[1].epsilon.map(scaled),
            Some(0.9),
            "the worst neighbour: refined"
        );
        assert_eq!(row[7].epsilon, Some(0.8), "never the worst: not refined");
        assert_eq!(*m.refined.borrow(), vec![1, 3]);
        assert_eq!(full(&m).0, vec![1, 3, 7]);
    }

    #[test]
    fn planned_contributions_cover_the_quantile() {
        // Binomial(1000, 0.1): mean 100, sd 9.5; the 0.99 quantile is 123.
        assert_eq!(planned_contributions(1000, 0.1, 0.99), 123);
        assert_eq!(planned_contributions(1000, 0.1, 0.5), 100);
        assert_eq!(planned_contributions(0, 0.1, 0.99), 0);
        assert_eq!(planned_contributions(50, 1.0, 0.99), 50);
        let big = planned_contributions(100_000_000, 1e-6, 0.99);
        assert!((120..=125).contains(&big), "{big}");
        // Beyond the exact sum's reach (it took minutes): about mean + 2.33 sd.
        let huge = planned_contributions(u64::MAX, 1e-6, 0.99);
        let (mean, sd) = (u64::MAX as f64 * 1e-6, (u64::MAX as f64 * 1e-6).sqrt());
        assert!(
            huge as f64 >= mean + 2.3 * sd && (huge as f64) < mean + 2.4 * sd,
            "{huge}"
        );
        // Each approximation against the exact sum where both apply: Cornish–Fisher at a mean
        // of 10⁶ (sd 10³), Poisson at p = 10⁻⁶.
        let exact = planned_contributions(10_000_000_000, 1e-4, 0.99);
        let (mean, sd) = (1e6, (1e6_f64 * (1.0 - 1e-4)).sqrt());
        let skew = (1.0 - 2e-4) / sd;
        let z = normal_quantile(0.99);
        let cf = (mean + sd * (z + (z * z - 1.0) * skew / 6.0) - 0.5).ceil();
        assert!((exact as f64 - cf).abs() <= 1.0, "{exact} {cf}");
        for mean in [0.5, 3.0, 40.0, 2000.0] {
            let exact = planned_contributions(10_000_000_000, mean / 1e10, 0.99);
            assert_eq!(exact, poisson_quantile(mean, 0.99), "{mean}");
        }
        // Poisson(3): P(X ≤ 7) = 0.9881, P(X ≤ 8) = 0.9962.
        assert_eq!(poisson_quantile(3.0, 0.99), 8);
        assert!(planned_contributions(1_000_000_000_000, 3e-12, 0.99) >= 8);
    }
}
