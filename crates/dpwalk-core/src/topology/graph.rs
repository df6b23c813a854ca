//! Explicit graphs in compressed sparse row (CSR) form, and the walk's next hop on them.
//!
//! An undirected edge `{u, v}` is stored twice, once in each endpoint's row, so that the row of `i`
//! is exactly the support of the walk's transition row `P(i, ·)`. Rows are sorted by neighbour
//! index, which makes the stored graph (and therefore every next hop drawn on it) independent of
//! the order in which its edges were listed.
//!
//! Edge-list rules, checked once here for every source (generators, `edges = [...]`, edge files):
//! - endpoints must be `< n`;
//! - **self-loops are rejected**: the walk must hand the token to *another* user (the daemon never
//!   sends to itself, and the accountant's first-hitting times assume a move is a move). A lazy or
//!   aperiodic walk has to be built from real edges (e.g. add a triangle), not from loops;
//! - **duplicate edges are rejected** (in either orientation), not merged: silently adding their
//!   weights would hide a mistake in a hand-written file, and merging is one line for whoever
//!   means it;
//! - weights, when present, must be finite and `> 0`. The transition row of `i` is proportional to
//!   the weights of its edges (uniform over neighbours when the graph is unweighted).

use rand::{Rng, RngExt};

use super::TopologyError;

/// Per-entry weights of a weighted graph, aligned with [`Graph`]'s neighbour array.
#[derive(Debug, Clone, PartialEq)]
struct Weights {
    /// The weight of each stored (directed) entry.
    weight: Vec<f64>,
    /// Running sum of `weight` within each row: the last entry of row `i` is `i`'s total weight.
    /// Kept beside `weight` because the next hop needs the sums and the accountant needs the
    /// weights, and differencing sums would lose precision when weights differ in magnitude.
    cumulative: Vec<f64>,
}

/// An undirected graph on nodes `0..n`, optionally weighted, in CSR form.
#[derive(Debug, Clone, PartialEq)]
pub struct Graph {
    /// `n + 1` offsets: row `i` is `targets[offsets[i]..offsets[i + 1]]`.
    offsets: Vec<usize>,
    /// Neighbours of every node, row after row, each row sorted ascending.
    targets: Vec<usize>,
    /// `None` for an unweighted graph (uniform transition rows).
    weights: Option<Weights>,
}

impl Graph {
    /// An unweighted graph from an edge list; `edges[k]` is located as `edge k` in errors.
    pub fn unweighted(n: usize, edges: &[(usize, usize)]) -> Result<Self, TopologyError> {
        Self::from_edges(n, edges, None, &|k| format!("edge {k} {:?}", edges[k]))
    }

    /// A weighted graph from an edge list; `edges[k]` is located as `edge k` in errors.
    pub fn weighted(n: usize, edges: &[(usize, usize, f64)]) -> Result<Self, TopologyError> {
        let pairs: Vec<(usize, usize)> = edges.iter().map(|&(u, v, _)| (u, v)).collect();
        let weights: Vec<f64> = edges.iter().map(|&(_, _, w)| w).collect();
        Self::from_edges(n, &pairs, Some(&weights), &|k| {
            format!("edge {k} {:?}", edges[k])
        })
    }

    /// The one constructor behind every source of edges. `locate(k)` names edge `k` in errors
    /// (`edges[3]` of a spec, a line of an edge file, …).
    pub(crate) fn from_edges(
        n: usize,
        edges: &[(usize, usize)],
        weights: Option<&[f64]>,
        locate: &dyn Fn(usize) -> String,
    ) -> Result<Self, TopologyError> {
        let edge_error = |k: usize, message: String| TopologyError::Edge {
            at: locate(k),
            message,
        };
        if let Some(w) = weights
            && w.len() != edges.len()
        {
            return Err(edge_error(
                0,
                format!("{} weights for {} edges", w.len(), edges.len()),
            ));
        }
        let mut degree = vec![0usize; n];
        for (k, &(u, v)) in edges.iter().enumerate() {
            if u >= n || v >= n {
                return Err(edge_error(
                    k,
                    format!("endpoint out of range: the graph has nodes 0..{n}"),
                ));
            }
            if u == v {
                return Err(edge_error(
                    k,
                    format!("self-loop at node {u} (the walk must move to another node)"),
                ));
            }
            if let Some(w) = weights
                && !(w[k].is_finite() && w[k] > 0.0)
            {
                return Err(edge_error(
                    k,
                    format!("weight {} is not a finite positive number", w[k]),
                ));
            }
            degree[u] += 1;
            degree[v] += 1;
        }
        let mut offsets = Vec::with_capacity(n + 1);
        offsets.push(0usize);
        for d in &degree {
            offsets.push(offsets[offsets.len() - 1] + d);
        }
        // Fill rows with (neighbour, edge index), then sort each row: sorting both canonicalizes
        // the graph and puts duplicate edges next to each other.
        let mut fill = offsets[..n].to_vec();
        let mut entries = vec![(0usize, 0usize); 2 * edges.len()];
        for (k, &(u, v)) in edges.iter().enumerate() {
            entries[fill[u]] = (v, k);
            fill[u] += 1;
            entries[fill[v]] = (u, k);
            fill[v] += 1;
        }
        for i in 0..n {
            let row = &mut entries[offsets[i]..offsets[i + 1]];
            row.sort_unstable();
            if let Some(pair) = row.windows(2).find(|p| p[0].0 == p[1].0) {
                let (first, second) = (pair[0].1.min(pair[1].1), pair[0].1.max(pair[1].1));
                return Err(edge_error(
                    second,
                    format!(
                        "duplicate of {} (edge {{{i}, {}}} given twice; duplicates are not merged)",
                        locate(first),
                        pair[0].0
                    ),
                ));
            }
        }
        let targets = entries.iter().map(|&(t, _)| t).collect();
        let weights = weights.map(|w| {
            let weight: Vec<f64> = entries.iter().map(|&(_, k)| w[k]).collect();
            let mut cumulative = Vec::with_capacity(weight.len());
            for i in 0..n {
                let mut sum = 0.0;
                for &x in &weight[offsets[i]..offsets[i + 1]] {
                    sum += x;
                    cumulative.push(sum);
                }
            }
            Weights { weight, cumulative }
        });
        Ok(Graph {
            offsets,
            targets,
            weights,
        })
    }

    /// Number of nodes.
    pub fn n(&self) -> usize {
        self.offsets.len() - 1
    }

    /// Number of undirected edges.
    pub fn edge_count(&self) -> usize {
        self.targets.len() / 2
    }

    /// Whether transition rows follow edge weights (otherwise they are uniform over neighbours).
    pub fn is_weighted(&self) -> bool {
        self.weights.is_some()
    }

    /// Number of neighbours of `i`.
    pub fn degree(&self, i: usize) -> usize {
        self.offsets[i + 1] - self.offsets[i]
    }

    /// Neighbours of `i`, ascending.
    pub fn neighbors(&self, i: usize) -> &[usize] {
        &self.targets[self.offsets[i]..self.offsets[i + 1]]
    }

    /// Weights of `i`'s edges, aligned with [`Graph::neighbors`]; `None` when unweighted.
    pub fn edge_weights(&self, i: usize) -> Option<&[f64]> {
        self.weights
            .as_ref()
            .map(|w| &w.weight[self.offsets[i]..self.offsets[i + 1]])
    }

    /// Total weight of `i`'s edges (its degree when unweighted): the normalizer of its
    /// transition row, and `D_ii` of the spectral analysis.
    pub fn row_total(&self, i: usize) -> f64 {
        match &self.weights {
            None => self.degree(i) as f64,
            Some(w) if self.degree(i) > 0 => w.cumulative[self.offsets[i + 1] - 1],
            Some(_) => 0.0,
        }
    }

    /// The next holder after `holder`: one uniform index into the neighbour list when
    /// unweighted; one uniform `f64` scaled by the row total and a binary search in the row's
    /// running sums when weighted. No allocation: this is the simulator's hot path.
    ///
    /// `holder` must have a neighbour (true of every node of a graph that passed
    /// [`super::Topology::require_walkable`]); an isolated holder panics.
    #[inline]
    pub fn next_hop<R: Rng + ?Sized>(&self, holder: usize, rng: &mut R) -> usize {
        let (start, end) = (self.offsets[holder], self.offsets[holder + 1]);
        match &self.weights {
            None => self.targets[start + rng.random_range(0..end - start)],
            Some(w) => {
                let row = &w.cumulative[start..end];
                let x = rng.random::<f64>() * row[row.len() - 1];
                // First entry whose running sum exceeds x: entry k is hit with probability
                // weight_k / total. The clamp only guards the rounding of `x` up to `total`.
                let k = row.partition_point(|&c| c <= x).min(row.len() - 1);
                self.targets[start + k]
            }
        }
    }
}
