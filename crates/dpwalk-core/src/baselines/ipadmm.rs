//! \[HG\] IPADMM (Huang & Gong): decentralized ADMM whose round is `l` noisy linearized primal
//! steps, the broadcast of their average to every neighbour, then a dual step
//! (`seed-baselines.md` §2).
//!
//! # Objective
//! Node `i` minimizes `L_i = f_i + r` (its mean loss plus dpwalk's regularizer), so that
//! `Σ_i L_i = n F` for dpwalk's `F = (1/n) Σ_i f_i + r`: the paper's `(λ/n)φ` is dpwalk's `r`.
//!
//! # Round `k` at node `i` (Algorithm 1, with the sign correction of §2.5)
//! ```text
//! x⁰ = last inner iterate of round k−1 (0 before the first)
//! for r = 0 .. l−1:
//!     g    = (1/m_i) Σ_j clip₂(∇ℓ(x^r; a_j, b_j), G)          per-record clipping
//!     η    = η_i^{k,r+1},  den = 2ρ·deg_i + η
//!     w    = prox_{r/den}( (−g + 2γ_i + 2ρ·deg_i·c̄_i + η x^r) / den )
//!     x^{r+1} = w + s·σ·ξ,  ξ ~ N(0, I),  s = 2G / (den·m_i)      (record level; 2G/den user level)
//! broadcast w̃_i = (1/l) Σ_{r=1..l} x^r to every neighbour
//! γ_i ← γ_i − (ρ/2) Σ_{j∈N(i)} (w̃_i − w̃_j)                       (on the new broadcasts)
//! ```
//! with `c̄_i = ½ w̃_i + (1/(2 deg_i)) Σ_{j∈N(i)} w̃_j` on the previous round's broadcasts
//! (`2ρ deg_i c̄_i = ρ Σ_j w̃_j + ρ deg_i w̃_i`, (18)). The step minimizes exactly
//! `⟨g, w⟩ − 2⟨γ_i, w⟩ + ρ Σ_{j∈N(i)} ‖w − ½(w̃_i + w̃_j)‖² + (η/2)‖w − x^r‖² + r(w)`:
//! the linearized augmented Lagrangian with the standard sign of the linear term (the paper's
//! (11)–(12) step uphill as printed).
//!
//! # Why the regularizer goes through its prox
//! The spec linearizes an ℓ2 `r` inside `g` and recommends the prox for ℓ1. Here every `r` (none,
//! ℓ2, ℓ1, elastic net) is kept exact through `prox_{r/den}`: one code path, no step-size
//! condition from `r`'s curvature, and the same fixed points. The prox is 1-Lipschitz and
//! data-independent, so the sensitivity bound `s` is unchanged, and the noise comes after it.
//!
//! # Privacy
//! Each inner step is a Gaussian mechanism of multiplier `σ` (std / ℓ2 sensitivity) on an output
//! of sensitivity [`inner_step_sensitivity`]: replacing one record moves `g` by at most `2G/m_i`,
//! hence `w` by at most `2G/(den·m_i)`. A node runs `t·l` of them adaptively: RDP `t·l·α/(2σ²)`
//! (calibration lives in dpwalk-privacy). The clip `G` is required: the squared loss's gradients
//! are unbounded, and data-dependent bounds are not valid sensitivities.
//!
//! # Randomness
//! Each inner step draws `d` standard normals from the node's own stream
//! ([`fill_standard_normal`]), also when `σ = 0`, so a stream's position depends only on the
//! number of steps.

use super::exchange::{Exchange, NetworkError};
use crate::noise::fill_standard_normal;
use crate::problem::linalg::{axpy, norm};
use crate::problem::{Problem, ProblemError, Regularizer};
use crate::rng::NodeRng;
use crate::topology::Topology;
use thiserror::Error;

#[cfg(test)]
#[allow(clippy::unwrap_used)] // a failed unwrap is a failed test
mod tests;

/// A parameter, graph or problem IPADMM cannot run with.
#[derive(Debug, Error, Clone, PartialEq)]
pub enum IpadmmError {
    /// `l = 0`: a round would release nothing.
    #[error("the number of inner steps l must be at least 1 (the broadcast averages them)")]
    InnerSteps,
    /// ρ must be positive and finite.
    #[error("rho (the ADMM penalty) must be > 0 and finite, got {0}")]
    Rho(f64),
    /// σ must be non-negative and finite.
    #[error("sigma (the noise multiplier) must be >= 0 and finite, got {0}")]
    Sigma(f64),
    /// G must be positive and finite.
    #[error(
        "clip (the per-record gradient bound G) must be > 0 and finite, got {0}: it is what \
         bounds the sensitivity"
    )]
    Clip(f64),
    /// A parameter of the η schedule is out of range.
    #[error("eta schedule: {name} must be {range}, got {value}")]
    Eta {
        /// The parameter.
        name: &'static str,
        /// Its range.
        range: &'static str,
        /// The value given.
        value: f64,
    },
    /// The paper's schedule with `t = 0` planned rounds.
    #[error("the paper's eta schedule (23) needs the planned number of rounds t >= 1")]
    Rounds,
    /// The paper's schedule divides by a node's number of records.
    #[error("the paper's eta schedule (23) divides by m_i, but node {node} has no records")]
    EmptyNode {
        /// The node.
        node: usize,
    },
    /// The graph, or the random streams of a round.
    #[error(transparent)]
    Network(#[from] NetworkError),
    /// A vector of the wrong length.
    #[error(transparent)]
    Problem(#[from] ProblemError),
}

/// The proximal weight `η_i^{k,r}` of the linearization (§2.2).
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum EtaSchedule {
    /// `η^{k,r} = η₀ √((k−1)·l + r)`, growing with the number of inner steps done (the default).
    SqrtTotal {
        /// `η₀ > 0`.
        eta0: f64,
    },
    /// A constant `η > 0` (linearized ADMM's classical choice; converges linearly without noise
    /// when `η` dominates the local curvature).
    Constant {
        /// `η > 0`.
        eta: f64,
    },
    /// The paper's (23), literally (see [`PaperEta`]).
    Paper(PaperEta),
}

/// The paper's schedule (23): `η_i^{k,r} = (√(2kr)/D_w) · √(c₂²/n² + d c₀² G² t l ·
/// 8 ln(1.25/δ) / (ε² m_i²))`, non-monotone (it resets at every round), and per node (`m_i`).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct PaperEta {
    /// `D_w > 0`, the diameter of the model domain.
    pub domain_diameter: f64,
    /// `c₂ ≥ 0`, the Lipschitz constant of the objective.
    pub objective_lipschitz: f64,
    /// `c₀ > 0`, the theorem's unspecified constant.
    pub c0: f64,
    /// The target `ε > 0`.
    pub epsilon: f64,
    /// The target `δ ∈ (0, 1)`.
    pub delta: f64,
    /// The planned number of rounds `t ≥ 1`.
    pub rounds: usize,
}

impl PaperEta {
    /// Checks every range of the fields.
    fn check(&self) -> Result<(), IpadmmError> {
        check_positive("domain_diameter", self.domain_diameter)?;
        let c2 = self.objective_lipschitz;
        let c2_ok = c2 >= 0.0 && c2.is_finite();
        check_eta("objective_lipschitz", ">= 0 and finite", c2, c2_ok)?;
        check_positive("c0", self.c0)?;
        check_positive("epsilon", self.epsilon)?;
        let delta = self.delta;
        check_eta("delta", "in (0, 1)", delta, delta > 0.0 && delta < 1.0)?;
        if self.rounds == 0 {
            return Err(IpadmmError::Rounds);
        }
        Ok(())
    }

    /// The factor of `√(2kr)` at a node with `records` records, in a run of `nodes` nodes,
    /// dimension `dim`, clip `G` and `l` inner steps.
    fn node_factor(&self, nodes: usize, dim: usize, clip: f64, l: usize, records: usize) -> f64 {
        let noise_term = dim as f64
            * (self.c0 * clip).powi(2)
            * (self.rounds * l) as f64
            * 8.0
            * (1.25 / self.delta).ln()
            / (self.epsilon * records as f64).powi(2);
        let lipschitz_term = (self.objective_lipschitz / nodes as f64).powi(2);
        (lipschitz_term + noise_term).sqrt() / self.domain_diameter
    }
}

/// Whose data the noise protects: one record, or a node's whole dataset.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PrivacyUnit {
    /// Replace one record of a node: sensitivity `2G/(den·m_i)`.
    Record,
    /// Replace a node's whole dataset: sensitivity `2G/den`.
    User,
}

/// IPADMM's parameters as given (unchecked); [`IpadmmParams::new`] validates them.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct IpadmmSettings {
    /// `l ≥ 1`, noisy linearized steps per round.
    pub inner_steps: usize,
    /// `ρ > 0`, the ADMM penalty.
    pub rho: f64,
    /// `σ ≥ 0`, the noise multiplier (std / ℓ2 sensitivity) of every inner step.
    pub sigma: f64,
    /// `G > 0`, the per-record gradient clip.
    pub clip: f64,
    /// The proximal weights `η`.
    pub eta: EtaSchedule,
    /// The privacy unit the noise is scaled for.
    pub unit: PrivacyUnit,
}

/// Validated IPADMM parameters.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct IpadmmParams(IpadmmSettings);

/// `Ok(())` when `ok`, else the schedule error naming the parameter and its range.
fn check_eta(
    name: &'static str,
    range: &'static str,
    value: f64,
    ok: bool,
) -> Result<(), IpadmmError> {
    if ok {
        Ok(())
    } else {
        Err(IpadmmError::Eta { name, range, value })
    }
}

/// [`check_eta`] for a parameter that must be `> 0` and finite.
fn check_positive(name: &'static str, value: f64) -> Result<(), IpadmmError> {
    check_eta(
        name,
        "> 0 and finite",
        value,
        value > 0.0 && value.is_finite(),
    )
}

impl IpadmmParams {
    /// Checks every range of [`IpadmmSettings`] and [`EtaSchedule`].
    pub fn new(s: IpadmmSettings) -> Result<Self, IpadmmError> {
        if s.inner_steps == 0 {
            return Err(IpadmmError::InnerSteps);
        }
        if !(s.rho > 0.0 && s.rho.is_finite()) {
            return Err(IpadmmError::Rho(s.rho));
        }
        if !(s.sigma >= 0.0 && s.sigma.is_finite()) {
            return Err(IpadmmError::Sigma(s.sigma));
        }
        if !(s.clip > 0.0 && s.clip.is_finite()) {
            return Err(IpadmmError::Clip(s.clip));
        }
        match s.eta {
            EtaSchedule::SqrtTotal { eta0 } => {
                check_positive("eta0", eta0)?;
            }
            EtaSchedule::Constant { eta } => {
                check_positive("eta", eta)?;
            }
            EtaSchedule::Paper(paper) => paper.check()?,
        }
        Ok(Self(s))
    }

    /// The validated settings.
    pub fn settings(&self) -> &IpadmmSettings {
        &self.0
    }

    /// `η^{k,r}` for a node whose paper-schedule factor is `base` (see [`Ipadmm::eta`]).
    fn eta(&self, base: f64, k: usize, r: usize) -> f64 {
        let l = self.0.inner_steps;
        match self.0.eta {
            EtaSchedule::SqrtTotal { eta0 } => eta0 * ((k.saturating_sub(1) * l + r) as f64).sqrt(),
            EtaSchedule::Constant { eta } => eta,
            EtaSchedule::Paper(_) => base * ((2 * k * r) as f64).sqrt(),
        }
    }
}

/// The ℓ2 sensitivity of one inner step's output `w` (before its noise) to the privacy unit:
/// `2G / ((2ρ·deg + η)·m)` for one record of `m` (record level), `2G / (2ρ·deg + η)` for the
/// node's whole dataset (user level), and 0 for a node without records (no data enters its
/// steps). The noise std of the step is this times `σ`.
pub fn inner_step_sensitivity(
    clip: f64,
    rho: f64,
    degree: usize,
    eta: f64,
    unit: PrivacyUnit,
    records: usize,
) -> f64 {
    if records == 0 {
        return 0.0;
    }
    let per = match unit {
        PrivacyUnit::Record => records as f64,
        PrivacyUnit::User => 1.0,
    };
    2.0 * clip / ((2.0 * rho * degree as f64 + eta) * per)
}

/// What a round did, for metrics.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct IpadmmRound {
    /// The round just completed (1-based).
    pub round: usize,
    /// Per-record gradients computed, over all nodes and inner steps.
    pub gradients: usize,
    /// Of which clipped (norm above `G`).
    pub clipped: usize,
}

/// Buffers of one inner step, sized once.
#[derive(Debug)]
struct Work {
    /// `c̄_i`.
    mid: Vec<f64>,
    /// The clipped mean loss gradient `g`.
    grad: Vec<f64>,
    /// One record's gradient.
    record: Vec<f64>,
    /// `ξ`.
    noise: Vec<f64>,
    /// The prox's argument.
    num: Vec<f64>,
}

/// IPADMM on a graph: every node's primal and dual state and the last broadcasts.
#[derive(Debug)]
pub struct Ipadmm<'a> {
    problem: &'a Problem,
    params: IpadmmParams,
    exchange: Exchange,
    /// The paper schedule's per-node factor of `√(2kr)`; 1 for the other schedules.
    eta_base: Vec<f64>,
    /// Each node's last inner iterate `x^l` (`n · d`).
    inner: Vec<f64>,
    /// Each node's dual `γ_i`.
    dual: Vec<f64>,
    /// Each node's sum of the inner iterates `x^0 .. x^{l−1}` of every round, for (22).
    inner_sum: Vec<f64>,
    /// The broadcasts being built.
    next: Vec<f64>,
    rounds: usize,
    work: Work,
}

impl<'a> Ipadmm<'a> {
    /// Starts IPADMM on `topology` (one node per user of `problem`) with every iterate, broadcast
    /// and dual at 0 (data-independent; the dual at 0 is what the one-dual-per-node form needs).
    ///
    /// # Errors
    /// [`IpadmmError::Network`] for a graph with fewer than 2 nodes, disconnected, weighted, or
    /// of another size than the problem's users; [`IpadmmError::EmptyNode`] for the paper's
    /// schedule on a node without records.
    pub fn new(
        problem: &'a Problem,
        topology: Topology,
        params: IpadmmParams,
    ) -> Result<Self, IpadmmError> {
        let n = problem.n_users();
        let d = problem.dim();
        let exchange = Exchange::new(topology, n, d)?;
        let s = params.settings();
        let eta_base = (0..n)
            .map(|i| match s.eta {
                EtaSchedule::Paper(paper) => match problem.data().records(i) {
                    0 => Err(IpadmmError::EmptyNode { node: i }),
                    m => Ok(paper.node_factor(n, d, s.clip, s.inner_steps, m)),
                },
                _ => Ok(1.0),
            })
            .collect::<Result<_, _>>()?;
        Ok(Self {
            problem,
            params,
            exchange,
            eta_base,
            inner: vec![0.0; n * d],
            dual: vec![0.0; n * d],
            inner_sum: vec![0.0; n * d],
            next: vec![0.0; n * d],
            rounds: 0,
            work: Work {
                mid: vec![0.0; d],
                grad: vec![0.0; d],
                record: vec![0.0; d],
                noise: vec![0.0; d],
                num: vec![0.0; d],
            },
        })
    }

    /// The parameters.
    pub fn params(&self) -> &IpadmmParams {
        &self.params
    }

    /// The graph and the last broadcasts: the released model is their average
    /// ([`Exchange::average`]), each node's own model its broadcast.
    pub fn exchange(&self) -> &Exchange {
        &self.exchange
    }

    /// Rounds completed.
    pub fn rounds(&self) -> usize {
        self.rounds
    }

    /// `η_i^{k,r}` for round `k ≥ 1` and inner index `r ∈ 1..=l` (the `r`-th step of the round
    /// uses `η^{k,r}`).
    pub fn eta(&self, node: usize, k: usize, r: usize) -> f64 {
        self.params.eta(self.eta_base[node], k, r)
    }

    /// The ℓ2 sensitivity of node `i`'s `r`-th inner step of round `k` ([`inner_step_sensitivity`]
    /// at this node's degree, records and `η`); its noise std is this times `σ`.
    pub fn sensitivity(&self, node: usize, k: usize, r: usize) -> f64 {
        let s = self.params.settings();
        inner_step_sensitivity(
            s.clip,
            s.rho,
            self.exchange.degree(node),
            self.eta(node, k, r),
            s.unit,
            self.problem.data().records(node),
        )
    }

    /// `out` = the theorem's output (22) at node `i`: the mean of its inner iterates `x^0 ..
    /// x^{l−1}` over all rounds so far (0 before the first). A function of the node's noisy
    /// iterates, which are not broadcast: the node's private model, not a released one.
    pub fn inner_average(&self, node: usize, out: &mut [f64]) -> Result<(), ProblemError> {
        let d = self.problem.dim();
        ProblemError::check_length("the inner average's output", d, out.len())?;
        let steps = (self.rounds * self.params.settings().inner_steps).max(1) as f64;
        for (o, &s) in out
            .iter_mut()
            .zip(&self.inner_sum[node * d..(node + 1) * d])
        {
            *o = s / steps;
        }
        Ok(())
    }

    /// One synchronous round: every node's `l` noisy steps and broadcast, then every dual step.
    /// `rngs[i]` is node `i`'s stream.
    ///
    /// # Errors
    /// [`NetworkError::Streams`] when there is not one stream per node (nothing changes then).
    pub fn round(&mut self, rngs: &mut [NodeRng]) -> Result<IpadmmRound, IpadmmError> {
        self.exchange.check_streams(rngs)?;
        let k = self.rounds + 1;
        let d = self.problem.dim();
        let s = *self.params.settings();
        let mut report = IpadmmRound {
            round: k,
            gradients: 0,
            clipped: 0,
        };
        for (i, rng) in rngs.iter_mut().enumerate() {
            let range = i * d..(i + 1) * d;
            self.exchange.midpoint(i, &mut self.work.mid);
            let degree = self.exchange.degree(i);
            let m = self.problem.data().records(i);
            let next = &mut self.next[range.clone()];
            next.fill(0.0);
            for r in 1..=s.inner_steps {
                let eta = self.params.eta(self.eta_base[i], k, r);
                let x = &mut self.inner[range.clone()];
                axpy(1.0, x, &mut self.inner_sum[range.clone()]);
                let Work {
                    mid,
                    grad,
                    record,
                    noise,
                    num,
                } = &mut self.work;
                report.clipped += clipped_loss_grad(self.problem, i, x, s.clip, grad, record);
                report.gradients += m;
                let step = Linearized {
                    rho: s.rho,
                    degree,
                    eta,
                };
                let dual = &self.dual[range.clone()];
                step.minimize(self.problem.regularizer(), grad, dual, mid, x, num);
                fill_standard_normal(rng, noise);
                let std = s.sigma * inner_step_sensitivity(s.clip, s.rho, degree, eta, s.unit, m);
                axpy(std, noise, x);
                axpy(1.0 / s.inner_steps as f64, x, next);
            }
        }
        self.exchange.publish(&mut self.next);
        for i in 0..self.exchange.n() {
            let dual = &mut self.dual[i * d..(i + 1) * d];
            self.exchange.add_disagreement(i, -0.5 * s.rho, dual);
        }
        self.rounds = k;
        Ok(report)
    }
}

/// `g = (1/m) Σ_j clip₂(∇ℓ(x; a_j, b_j), G)` over user `i`'s `m` records (0 without records);
/// returns how many were clipped. `record` is one record's gradient buffer.
fn clipped_loss_grad(
    problem: &Problem,
    user: usize,
    x: &[f64],
    clip: f64,
    g: &mut [f64],
    record: &mut [f64],
) -> usize {
    g.fill(0.0);
    let data = problem.data();
    let m = data.records(user);
    if m == 0 {
        return 0;
    }
    let p = data.data.n_features;
    let inv_m = 1.0 / m as f64;
    let mut clipped = 0;
    for (a, &b) in data.features(user).chunks_exact(p).zip(data.labels(user)) {
        record.fill(0.0);
        problem.loss().add_record_grad(a, b, x, 1.0, record);
        let length = norm(record);
        let scale = if length > clip {
            clipped += 1;
            clip / length
        } else {
            1.0
        };
        axpy(scale * inv_m, record, g);
    }
    clipped
}

/// One linearized primal step's penalty and proximal weights.
#[derive(Debug, Clone, Copy)]
struct Linearized {
    rho: f64,
    degree: usize,
    eta: f64,
}

impl Linearized {
    /// Replaces the iterate `x` by `prox_{r/den}((−g + 2γ + 2ρ·deg·c̄ + η x) / den)`,
    /// `den = 2ρ·deg + η`: the exact minimizer of the linearized augmented Lagrangian of the
    /// module docs. `num` is a buffer for the prox's argument.
    #[allow(clippy::too_many_arguments)]
    fn minimize(
        &self,
        reg: &Regularizer,
        grad: &[f64],
        dual: &[f64],
        mid: &[f64],
        x: &mut [f64],
        num: &mut [f64],
    ) {
        let anchor = 2.0 * self.rho * self.degree as f64;
        let den = anchor + self.eta;
        for ((((v, &g), &y), &c), &xk) in num.iter_mut().zip(grad).zip(dual).zip(mid).zip(x.iter())
        {
            *v = (-g + 2.0 * y + anchor * c + self.eta * xk) / den;
        }
        reg.prox(1.0 / den, num, x);
    }
}
