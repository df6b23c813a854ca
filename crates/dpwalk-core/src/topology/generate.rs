//! Graph generators: the deterministic families and the seeded random models.
//!
//! Random generators draw from `rng::node_rng(seed, 0)` (a `ChaCha12Rng`, never `StdRng`, whose
//! algorithm may change between releases), so a seed names one graph forever. Hash sets are used
//! for membership tests only, never iterated, so their random order cannot leak into the output.
//!
//! Every generator returns a simple graph (no self-loop, no duplicate edge); the CSR constructor
//! checks it again.

use std::collections::HashSet;

use rand::RngExt;

use super::{Graph, TopologyError};
use crate::rng::{NodeRng, node_rng};

/// How many times the random-regular generator restarts before giving up.
pub const REGULAR_ATTEMPTS: usize = 200;

fn generator_rng(seed: u64) -> NodeRng {
    node_rng(seed, 0)
}

/// An undirected pair in canonical order, for membership sets.
fn pair(u: usize, v: usize) -> (usize, usize) {
    if u < v { (u, v) } else { (v, u) }
}

/// The cycle `0 – 1 – … – (n−1) – 0`; needs `n ≥ 3` to be simple. Every degree is 2.
pub fn ring(n: usize) -> Result<Graph, TopologyError> {
    let edges: Vec<(usize, usize)> = (0..n).map(|i| (i, (i + 1) % n)).collect();
    Graph::unweighted(n, &edges)
}

/// The `rows × cols` torus (grid with wrap-around), node `r * cols + c`; needs `rows, cols ≥ 3`
/// to be simple. Every degree is 4.
pub fn torus(rows: usize, cols: usize) -> Result<Graph, TopologyError> {
    let mut edges = Vec::with_capacity(2 * rows * cols);
    for r in 0..rows {
        for c in 0..cols {
            let i = r * cols + c;
            edges.push((i, r * cols + (c + 1) % cols));
            edges.push((i, ((r + 1) % rows) * cols + c));
        }
    }
    Graph::unweighted(rows * cols, &edges)
}

/// The star with centre 0: node 0 has degree `n − 1`, every other node degree 1.
pub fn star(n: usize) -> Result<Graph, TopologyError> {
    let edges: Vec<(usize, usize)> = (1..n).map(|i| (0, i)).collect();
    Graph::unweighted(n, &edges)
}

/// A connected simple `d`-regular graph on `n` nodes (`1 ≤ d < n`, `n·d` even).
///
/// Pairing model with the Steger–Wormald (1999) refinement: points (d per node) are paired at
/// random, a draw that would create a loop or a duplicate edge is redrawn, and an attempt that
/// gets stuck (or ends disconnected) restarts, at most [`REGULAR_ATTEMPTS`] times. The output is
/// asymptotically uniform over d-regular graphs for fixed d; conditioning on connectivity costs
/// nothing for d ≥ 3 (almost every such graph is connected). When `d > (n − 1)/2` the complement
/// of an `(n − 1 − d)`-regular graph is built instead, since dense pairings get stuck often.
pub fn random_regular(n: usize, d: usize, seed: u64) -> Result<Graph, TopologyError> {
    let fail = |attempts: usize, reason: String| TopologyError::Generation {
        kind: "random-regular".into(),
        attempts,
        reason,
    };
    if d == 0 || d >= n {
        return Err(fail(
            0,
            format!("degree {d} must be in 1..{n} (1 ≤ degree < nodes)"),
        ));
    }
    if (n * d) % 2 == 1 {
        return Err(fail(0, format!("nodes × degree = {n} × {d} is odd")));
    }
    let mut rng = generator_rng(seed);
    let complement = d > (n - 1) / 2;
    let sparse_d = if complement { n - 1 - d } else { d };
    for _ in 0..REGULAR_ATTEMPTS {
        let Some(sparse) = regular_pairing(n, sparse_d, &mut rng) else {
            continue;
        };
        let edges = if complement {
            let present: HashSet<(usize, usize)> = sparse.into_iter().collect();
            (0..n)
                .flat_map(|u| (u + 1..n).map(move |v| (u, v)))
                .filter(|e| !present.contains(e))
                .collect()
        } else {
            sparse
        };
        let graph = Graph::unweighted(n, &edges)?;
        if super::component_labels(&graph).1 == 1 {
            return Ok(graph);
        }
    }
    Err(fail(
        REGULAR_ATTEMPTS,
        format!(
            "no connected simple {d}-regular graph on {n} nodes found{}",
            if d <= 2 {
                " (random graphs of degree ≤ 2 are rarely connected: use kind = \"ring\")"
            } else {
                ""
            }
        ),
    ))
}

/// One attempt of the pairing model: canonical edges of a simple `d`-regular graph, or `None`
/// when the attempt got stuck.
fn regular_pairing(n: usize, d: usize, rng: &mut NodeRng) -> Option<Vec<(usize, usize)>> {
    let mut points: Vec<usize> = (0..n).flat_map(|u| std::iter::repeat_n(u, d)).collect();
    let mut present = HashSet::with_capacity(n * d / 2);
    let mut edges = Vec::with_capacity(n * d / 2);
    // Redraws per pairing before declaring the attempt stuck: plenty while many points remain,
    // and a stuck end game (every remaining pair forbidden) is detected quickly.
    const REDRAWS: usize = 256;
    while points.len() >= 2 {
        let mut paired = false;
        for _ in 0..REDRAWS {
            let a = rng.random_range(0..points.len());
            let b = rng.random_range(0..points.len());
            let (u, v) = (points[a], points[b]);
            if a == b || u == v || present.contains(&pair(u, v)) {
                continue;
            }
            present.insert(pair(u, v));
            edges.push(pair(u, v));
            // Remove the higher index first so the lower one stays valid.
            points.swap_remove(a.max(b));
            points.swap_remove(a.min(b));
            paired = true;
            break;
        }
        if !paired {
            return None;
        }
    }
    Some(edges)
}

/// The Erdős–Rényi graph G(n, p): each of the `n(n−1)/2` pairs is an edge independently with
/// probability `p`. Uses geometric skipping (Batagelj & Brandes 2005), so the cost is
/// `O(n + edges)`, not `O(n²)`. Not conditioned on connectivity: G(n, p) is what it promises, and
/// [`super::Topology::require_walkable`] reports a disconnected draw.
pub fn erdos_renyi(n: usize, p: f64, seed: u64) -> Result<Graph, TopologyError> {
    let mut edges = Vec::new();
    if p >= 1.0 {
        edges.extend((0..n).flat_map(|u| (u + 1..n).map(move |v| (u, v))));
    } else if p > 0.0 {
        let mut rng = generator_rng(seed);
        let log_q = (1.0 - p).ln();
        // Pairs (v, w) with w < v, enumerated row by row; `w` jumps over the non-edges.
        let (mut v, mut w) = (1usize, -1i64);
        let limit = (n as f64) * (n as f64);
        while v < n {
            let r: f64 = rng.random();
            let skip = ((1.0 - r).ln() / log_q).floor();
            if skip >= limit {
                break; // the jump leaves the last row: no more edges
            }
            w += 1 + skip as i64;
            while v < n && w >= v as i64 {
                w -= v as i64;
                v += 1;
            }
            if v < n {
                edges.push((w as usize, v));
            }
        }
    }
    Graph::unweighted(n, &edges)
}

/// The Watts–Strogatz small world: the ring lattice where each node is joined to its `k`
/// nearest neighbours on each side (degree `2k`, needs `2k < n`), then each lattice edge
/// `(u, u + j)` is, with probability `beta`, rewired to `(u, w)` with `w` uniform among the nodes
/// not already adjacent to `u` (skipped when `u` is adjacent to everyone), as in NetworkX. The
/// graph stays simple and keeps `n·k` edges; it is not conditioned on connectivity.
pub fn small_world(n: usize, k: usize, beta: f64, seed: u64) -> Result<Graph, TopologyError> {
    let mut rng = generator_rng(seed);
    // Lattice edge (u, u + j) sits at index u * k + (j − 1) until its own rewiring turn, which is
    // the only time it can change.
    let mut edges: Vec<(usize, usize)> = (0..n)
        .flat_map(|u| (1..=k).map(move |j| (u, (u + j) % n)))
        .collect();
    let mut present: HashSet<(usize, usize)> = edges.iter().map(|&(u, v)| pair(u, v)).collect();
    let mut degree = vec![2 * k; n];
    for j in 1..=k {
        for u in 0..n {
            if rng.random::<f64>() >= beta || degree[u] >= n - 1 {
                continue;
            }
            let v = (u + j) % n;
            let w = loop {
                let w = rng.random_range(0..n);
                if w != u && !present.contains(&pair(u, w)) {
                    break w;
                }
            };
            present.remove(&pair(u, v));
            present.insert(pair(u, w));
            edges[u * k + (j - 1)] = (u, w);
            degree[v] -= 1;
            degree[w] += 1;
        }
    }
    Graph::unweighted(n, &edges)
}
