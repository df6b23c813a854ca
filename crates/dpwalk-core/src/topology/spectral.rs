//! Summary of a topology, including the spectral gap of its walk.
//!
//! The walk's transition matrix is `P = D⁻¹W` (`W` the symmetric weight matrix, `D` its row sums).
//! `P` is similar to the symmetric `S = D^{-1/2} W D^{-1/2}`, so both have the same real
//! eigenvalues `1 = λ₁ ≥ λ₂ ≥ … ≥ λₙ ≥ −1`, and `S` has the known top eigenvector `√d / ‖√d‖`.
//! The gap reported is the *absolute* spectral gap `1 − max(|λ₂|, |λₙ|)`: it governs how fast the
//! walk forgets where it started (mixing), which is what the network-DP amplification depends on.
//! `λ₂` and `λₙ` are reported beside it, so the relaxation gap `1 − λ₂`, which ignores
//! periodicity, can be read off too (on an odd ring `1 − λ₂ = 1 − cos(2π/n)` while the absolute
//! gap is `1 − cos(π/n)`, since `λₙ = −cos(π/n)`).
//!
//! - A bipartite graph (an even ring, a torus with an even side, a star) has `λₙ = −1`, so its
//!   gap is 0: the walk is periodic and never mixes, even though it is connected and its hitting
//!   times are finite. The accountant's first-hitting-time figures are still valid on it.
//! - A disconnected graph has `λ₂ = 1`: gap 0, reported without computing anything.
//! - The complete graph has eigenvalues 1 and `−1/(n−1)` (multiplicity `n − 1`): closed form,
//!   gap `1 − 1/(n−1)`, and no matrix is ever built.
//! - Up to [`DENSE_MAX_NODES`] nodes, `S` is built and fully diagonalized (exact up to rounding).
//! - Above, a Lanczos iteration on `S` restricted to the complement of its top eigenvector, with
//!   its number of steps capped by a work budget so that it never runs for minutes. Its Ritz
//!   values lie inside the spectrum, so the estimated `max |λ|` is never too large and the
//!   estimated gap is an upper bound (up to rounding) on the true one; it is labelled as an
//!   estimate. Graphs too large for the budget get "not computed" with the reason.

use nalgebra::{DMatrix, DVector};
use rand::RngExt;
use serde::Serialize;

use super::{Graph, Topology};

/// Largest graph whose walk matrix is diagonalized densely (`O(n³)` time, `O(n²)` memory).
pub const DENSE_MAX_NODES: usize = 1000;
/// Maximum number of Lanczos steps.
const LANCZOS_MAX_STEPS: usize = 300;
/// Fewer affordable steps than this and the estimate is not worth printing.
const LANCZOS_MIN_STEPS: usize = 20;
/// Budget of Lanczos work, in (nodes + stored entries) × steps.
const LANCZOS_WORK: usize = 300_000_000;

/// The spectral gap of the walk and how it was obtained.
///
/// `gap` is the absolute gap `1 − max(|λ₂|, |λₙ|)` (clamped to `[0, 1]`); `lambda_2` and
/// `lambda_min` are the second-largest and the smallest eigenvalue of `P`, so that the
/// relaxation gap `1 − λ₂` (which ignores periodicity) can be read off as well. On an odd ring the
/// two differ: `1 − λ₂ = 1 − cos(2π/n)` while `gap = 1 − cos(π/n)` (from `λₙ = −cos(π/n)`).
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "method", rename_all = "kebab-case")]
pub enum SpectralGap {
    /// From the closed form of the complete graph's spectrum.
    ClosedForm {
        /// Absolute spectral gap.
        gap: f64,
        /// Second-largest eigenvalue.
        lambda_2: f64,
        /// Smallest eigenvalue.
        lambda_min: f64,
    },
    /// From a full symmetric eigendecomposition.
    Dense {
        /// Absolute spectral gap.
        gap: f64,
        /// Second-largest eigenvalue.
        lambda_2: f64,
        /// Smallest eigenvalue.
        lambda_min: f64,
    },
    /// Disconnected graph: a second eigenvalue 1, so the gap is exactly 0.
    Disconnected {
        /// Always 0.
        gap: f64,
    },
    /// A Lanczos estimate: the extreme Ritz values, which lie inside the spectrum, so `gap` is an
    /// upper bound on the true gap (up to rounding).
    LanczosEstimate {
        /// Estimated absolute spectral gap.
        gap: f64,
        /// Largest Ritz value (estimate of the second-largest eigenvalue, from below).
        lambda_2: f64,
        /// Smallest Ritz value (estimate of the smallest eigenvalue, from above).
        lambda_min: f64,
        /// Lanczos steps taken.
        steps: usize,
    },
    /// Not computed.
    NotComputed {
        /// Why.
        reason: String,
    },
}

impl SpectralGap {
    /// The absolute gap, when there is one.
    pub fn gap(&self) -> Option<f64> {
        match self {
            SpectralGap::ClosedForm { gap, .. }
            | SpectralGap::Dense { gap, .. }
            | SpectralGap::Disconnected { gap }
            | SpectralGap::LanczosEstimate { gap, .. } => Some(*gap),
            SpectralGap::NotComputed { .. } => None,
        }
    }

    /// The second-largest eigenvalue of `P`, when known.
    pub fn lambda_2(&self) -> Option<f64> {
        match self {
            SpectralGap::ClosedForm { lambda_2, .. }
            | SpectralGap::Dense { lambda_2, .. }
            | SpectralGap::LanczosEstimate { lambda_2, .. } => Some(*lambda_2),
            SpectralGap::Disconnected { .. } => Some(1.0),
            SpectralGap::NotComputed { .. } => None,
        }
    }
}

/// `1 − max(|λ₂|, |λₙ|)`, clamped to `[0, 1]` so that a bipartite graph's `−1 ± rounding` reads
/// as gap 0.
fn absolute_gap(lambda_2: f64, lambda_min: f64) -> f64 {
    (1.0 - lambda_2.abs().max(lambda_min.abs())).clamp(0.0, 1.0)
}

/// What `dpwalk topo` prints about a topology.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct TopologySummary {
    /// `"complete"` (no stored edges) or `"graph"`.
    pub kind: &'static str,
    /// Number of nodes.
    pub nodes: usize,
    /// Number of undirected edges.
    pub edges: u64,
    /// Whether transition rows follow edge weights.
    pub weighted: bool,
    /// Smallest degree.
    pub degree_min: usize,
    /// Mean degree.
    pub degree_mean: f64,
    /// Largest degree.
    pub degree_max: usize,
    /// Whether every node can reach every other.
    pub connected: bool,
    /// Number of connected components.
    pub components: usize,
    /// The walk's absolute spectral gap.
    pub spectral_gap: SpectralGap,
}

pub(super) fn summary(topology: &Topology) -> TopologySummary {
    match topology {
        Topology::Complete { n } => {
            let n = *n;
            let spectral_gap = if n >= 2 {
                let lambda = -1.0 / (n - 1) as f64;
                SpectralGap::ClosedForm {
                    gap: absolute_gap(lambda, lambda),
                    lambda_2: lambda,
                    lambda_min: lambda,
                }
            } else {
                SpectralGap::NotComputed {
                    reason: format!("{n} node(s): no walk"),
                }
            };
            TopologySummary {
                kind: "complete",
                nodes: n,
                edges: (n as u64) * (n as u64).saturating_sub(1) / 2,
                weighted: false,
                degree_min: n.saturating_sub(1),
                degree_mean: n.saturating_sub(1) as f64,
                degree_max: n.saturating_sub(1),
                connected: n >= 1,
                components: usize::from(n >= 1),
                spectral_gap,
            }
        }
        Topology::Graph(g) => {
            let n = g.n();
            let components = super::component_labels(g).1;
            let degrees = (0..n).map(|i| g.degree(i));
            TopologySummary {
                kind: "graph",
                nodes: n,
                edges: g.edge_count() as u64,
                weighted: g.is_weighted(),
                degree_min: degrees.clone().min().unwrap_or(0),
                degree_mean: if n > 0 {
                    2.0 * g.edge_count() as f64 / n as f64
                } else {
                    0.0
                },
                degree_max: degrees.max().unwrap_or(0),
                connected: components == 1,
                components,
                spectral_gap: graph_gap(g, components),
            }
        }
    }
}

fn graph_gap(g: &Graph, components: usize) -> SpectralGap {
    let n = g.n();
    if n < 2 {
        return SpectralGap::NotComputed {
            reason: format!("{n} node(s): no walk"),
        };
    }
    if components > 1 {
        return SpectralGap::Disconnected { gap: 0.0 };
    }
    if n <= DENSE_MAX_NODES {
        let (lambda_2, lambda_min) = dense_extremes(g);
        return SpectralGap::Dense {
            gap: absolute_gap(lambda_2, lambda_min),
            lambda_2,
            lambda_min,
        };
    }
    let steps = (LANCZOS_WORK / (n + g.edge_count() * 2)).min(LANCZOS_MAX_STEPS);
    if steps < LANCZOS_MIN_STEPS {
        return SpectralGap::NotComputed {
            reason: format!(
                "{n} nodes and {} edges exceed the work budget of the Lanczos estimate",
                g.edge_count()
            ),
        };
    }
    let (lambda_2, lambda_min, steps) = lanczos_extremes(g, steps);
    SpectralGap::LanczosEstimate {
        gap: absolute_gap(lambda_2, lambda_min),
        lambda_2,
        lambda_min,
        steps,
    }
}

/// `D^{-1/2}` of a connected graph with n ≥ 2 (every row total is positive).
fn inv_sqrt_degrees(g: &Graph) -> Vec<f64> {
    (0..g.n()).map(|i| 1.0 / g.row_total(i).sqrt()).collect()
}

/// `(λ₂, λₙ)` of a connected graph with `n ≥ 2` by dense symmetric eigendecomposition.
pub(super) fn dense_extremes(g: &Graph) -> (f64, f64) {
    let n = g.n();
    let s = inv_sqrt_degrees(g);
    let mut m = DMatrix::<f64>::zeros(n, n);
    for i in 0..n {
        let weights = g.edge_weights(i);
        for (k, &j) in g.neighbors(i).iter().enumerate() {
            let w = weights.map_or(1.0, |w| w[k]);
            m[(i, j)] = w * s[i] * s[j];
        }
    }
    let mut eigenvalues: Vec<f64> = m.symmetric_eigenvalues().iter().copied().collect();
    eigenvalues.sort_by(|a, b| b.total_cmp(a));
    (eigenvalues[1], eigenvalues[n - 1])
}

/// `y = S x` for `S = D^{-1/2} W D^{-1/2}`.
fn apply_s(g: &Graph, s: &[f64], x: &[f64], y: &mut [f64]) {
    for (i, yi) in y.iter_mut().enumerate() {
        let weights = g.edge_weights(i);
        let mut acc = 0.0;
        for (k, &j) in g.neighbors(i).iter().enumerate() {
            acc += weights.map_or(1.0, |w| w[k]) * s[j] * x[j];
        }
        *yi = s[i] * acc;
    }
}

fn dot(a: &[f64], b: &[f64]) -> f64 {
    a.iter().zip(b).map(|(x, y)| x * y).sum()
}

/// Removes from `x` its component along the unit vector `top`.
fn deflate(x: &mut [f64], top: &[f64]) {
    let c = dot(x, top);
    x.iter_mut().zip(top).for_each(|(xi, ti)| *xi -= c * ti);
}

/// Lanczos estimates of `(λ₂, λₙ)` of a connected graph with `n ≥ 2`, at most `max_steps` steps;
/// returns them and the steps taken. The top eigenvector `√d/‖√d‖` is projected out at every step (loss of
/// orthogonality would otherwise bring the eigenvalue 1 back); the start vector is drawn from a
/// fixed seed so that a summary is reproducible.
pub(super) fn lanczos_extremes(g: &Graph, max_steps: usize) -> (f64, f64, usize) {
    let n = g.n();
    let s = inv_sqrt_degrees(g);
    let norm = (0..n).map(|i| g.row_total(i)).sum::<f64>().sqrt();
    let top: Vec<f64> = (0..n).map(|i| g.row_total(i).sqrt() / norm).collect();
    let mut rng = crate::rng::node_rng(0x05EC_77A1, 0);
    let mut q: Vec<f64> = (0..n).map(|_| rng.random::<f64>() - 0.5).collect();
    deflate(&mut q, &top);
    let q_norm = dot(&q, &q).sqrt();
    q.iter_mut().for_each(|x| *x /= q_norm);
    let mut q_prev = vec![0.0; n];
    let mut w = vec![0.0; n];
    let (mut alphas, mut betas) = (Vec::new(), Vec::new());
    let mut beta_prev = 0.0;
    for _ in 0..max_steps.min(n - 1) {
        apply_s(g, &s, &q, &mut w);
        w.iter_mut()
            .zip(&q_prev)
            .for_each(|(wi, pi)| *wi -= beta_prev * pi);
        let alpha = dot(&q, &w);
        w.iter_mut().zip(&q).for_each(|(wi, qi)| *wi -= alpha * qi);
        deflate(&mut w, &top);
        alphas.push(alpha);
        let beta = dot(&w, &w).sqrt();
        if beta < 1e-12 {
            break; // invariant subspace: the Ritz values are exact eigenvalues
        }
        betas.push(beta);
        std::mem::swap(&mut q_prev, &mut q);
        q.iter_mut().zip(&w).for_each(|(qi, wi)| *qi = wi / beta);
        beta_prev = beta;
    }
    let m = alphas.len();
    let mut t = DMatrix::<f64>::from_diagonal(&DVector::from_vec(alphas));
    for (i, &b) in betas.iter().take(m - 1).enumerate() {
        t[(i, i + 1)] = b;
        t[(i + 1, i)] = b;
    }
    // T holds no eigenvalue 1 (the top eigenvector was projected out): its extreme Ritz values
    // estimate λ₂ and λₙ directly.
    let ritz = t.symmetric_eigenvalues();
    (ritz.max(), ritz.min(), m)
}
