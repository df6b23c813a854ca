//! Topologies and the walk's next hop: who may hand the token to whom, and with what probability.
//!
//! A [`Topology`] is either the complete graph, which stores nothing (a million users cost
//! nothing), or an explicit undirected [`Graph`] in CSR form, optionally weighted. The walk's
//! transition row of `i` is uniform over the other users (complete), uniform over `i`'s neighbours
//! (unweighted), or proportional to the weights of `i`'s edges (weighted). [`Topology::next_hop`]
//! is the one place a next holder is drawn; [`Topology::transition_row`] exposes the same rule to
//! the accountant.
//!
//! Layout:
//! - `graph`: the CSR graph, its edge rules (no self-loops, no duplicates) and next hop;
//! - [`generate`]: ring, torus, star, random-regular, Erdős–Rényi, small-world generators;
//! - [`spec`]: the TOML format ([`TopologySpec`]), its parser with located errors, `build`;
//! - `spectral`: [`TopologySummary`] and the walk's spectral gap;
//! - `error`: [`TopologyError`].

mod error;
pub mod generate;
mod graph;
pub mod spec;
mod spectral;

use std::path::Path;

use rand::{Rng, RngExt};

pub use error::TopologyError;
pub use graph::Graph;
pub use spec::{EdgeEntry, TopologyKind, TopologySpec, parse_spec};
pub use spectral::{DENSE_MAX_NODES, SpectralGap, TopologySummary};

/// How many components, and how many members of each, a disconnection error lists.
const LISTED_COMPONENTS: usize = 5;
const LISTED_MEMBERS: usize = 8;

/// A communication graph and the random walk's transition rule on it.
#[derive(Debug, Clone, PartialEq)]
pub enum Topology {
    /// Every user forwards uniformly to one of the `n − 1` others (no edge list is stored).
    Complete {
        /// Number of users.
        n: usize,
    },
    /// An explicit undirected graph; transition rows follow its (optional) edge weights.
    Graph(Graph),
}

impl Topology {
    /// Reads, parses and builds the topology file at `path` (a relative `path` inside it is
    /// resolved against the file's directory). See [`TopologySpec::build`] for the defaults.
    pub fn load(
        path: &Path,
        default_nodes: Option<usize>,
        seed: u64,
    ) -> Result<Self, TopologyError> {
        let text = std::fs::read_to_string(path).map_err(|e| TopologyError::Io {
            path: path.display().to_string(),
            message: e.to_string(),
        })?;
        let spec = parse_spec(&text, &path.display().to_string())?;
        let base = path.parent().unwrap_or(Path::new("."));
        spec.build(default_nodes, base, seed)
    }

    /// Number of users.
    pub fn n(&self) -> usize {
        match self {
            Topology::Complete { n } => *n,
            Topology::Graph(g) => g.n(),
        }
    }

    /// The next holder after `holder`, drawn from the walk's transition row of `holder` with the
    /// holder's own RNG. The one next-hop rule of dpwalk: the daemon and the simulator call it.
    ///
    /// Never returns `holder` (self-loops are not allowed) and never allocates. Precondition: the
    /// topology passed [`Topology::require_walkable`] (a holder without neighbours panics).
    #[inline]
    pub fn next_hop<R: Rng + ?Sized>(&self, holder: usize, rng: &mut R) -> usize {
        match self {
            Topology::Complete { n } => {
                let j = rng.random_range(0..n - 1);
                if j >= holder { j + 1 } else { j }
            }
            Topology::Graph(g) => g.next_hop(holder, rng),
        }
    }

    /// Number of neighbours of `i`.
    pub fn degree(&self, i: usize) -> usize {
        match self {
            Topology::Complete { n } => n - 1,
            Topology::Graph(g) => g.degree(i),
        }
    }

    /// Neighbours of `i`, ascending.
    pub fn neighbors(&self, i: usize) -> Neighbors<'_> {
        match self {
            Topology::Complete { n } => Neighbors::All((0..i).chain(i + 1..*n)),
            Topology::Graph(g) => Neighbors::Listed(g.neighbors(i).iter()),
        }
    }

    /// The walk's transition row of `i`: `(j, P(i, j))` for every `j` with `P(i, j) > 0`,
    /// ascending in `j`, probabilities summing to 1. The same rule as [`Topology::next_hop`].
    pub fn transition_row(&self, i: usize) -> TransitionRow<'_> {
        let (weights, scale) = match self {
            Topology::Complete { n } => (None, 1.0 / (n - 1) as f64),
            Topology::Graph(g) => match g.edge_weights(i) {
                None => (None, 1.0 / g.degree(i) as f64),
                Some(w) => (Some(w.iter()), 1.0 / g.row_total(i)),
            },
        };
        TransitionRow {
            neighbors: self.neighbors(i),
            weights,
            scale,
        }
    }

    /// Connected components, each sorted ascending, ordered by their smallest member.
    pub fn components(&self) -> Vec<Vec<usize>> {
        match self {
            Topology::Complete { n } if *n == 0 => Vec::new(),
            Topology::Complete { n } => vec![(0..*n).collect()],
            Topology::Graph(g) => {
                let (labels, count) = component_labels(g);
                let mut components = vec![Vec::new(); count];
                for (i, &c) in labels.iter().enumerate() {
                    components[c].push(i);
                }
                components
            }
        }
    }

    /// Checks that a walk can run and reach everyone: at least 2 nodes and a connected graph.
    /// A disconnected graph's error gives the number of components, their sizes, and the first
    /// members of the largest few, so the broken file can be fixed.
    pub fn require_walkable(&self) -> Result<(), TopologyError> {
        let n = self.n();
        if n < 2 {
            return Err(TopologyError::TooFewNodes { nodes: n });
        }
        let Topology::Graph(g) = self else {
            return Ok(());
        };
        if component_labels(g).1 == 1 {
            return Ok(());
        }
        let mut components = self.components();
        // Largest first; ties keep the order by smallest member (the sort is stable).
        components.sort_by_key(|c| std::cmp::Reverse(c.len()));
        let sizes: Vec<usize> = components.iter().map(Vec::len).collect();
        let listed: Vec<String> = components
            .iter()
            .take(LISTED_COMPONENTS)
            .map(|c| {
                let members: Vec<String> = c
                    .iter()
                    .take(LISTED_MEMBERS)
                    .map(usize::to_string)
                    .collect();
                let more = if c.len() > LISTED_MEMBERS {
                    ", …"
                } else {
                    ""
                };
                format!("{{{}{more}}} ({} nodes)", members.join(", "), c.len())
            })
            .collect();
        let more = if components.len() > LISTED_COMPONENTS {
            format!(" and {} more", components.len() - LISTED_COMPONENTS)
        } else {
            String::new()
        };
        Err(TopologyError::Disconnected {
            count: components.len(),
            detail: format!("components {}{more}", listed.join(", ")),
            sizes,
        })
    }

    /// Nodes, edges, degrees, connectivity and the walk's spectral gap (see [`SpectralGap`]).
    pub fn summary(&self) -> TopologySummary {
        spectral::summary(self)
    }
}

/// Component label of every node (labels numbered by smallest member) and the number of
/// components, by breadth-first search.
pub(crate) fn component_labels(g: &Graph) -> (Vec<usize>, usize) {
    const UNSEEN: usize = usize::MAX;
    let mut labels = vec![UNSEEN; g.n()];
    let mut queue = Vec::new();
    let mut count = 0;
    for start in 0..g.n() {
        if labels[start] != UNSEEN {
            continue;
        }
        labels[start] = count;
        queue.push(start);
        while let Some(i) = queue.pop() {
            for &j in g.neighbors(i) {
                if labels[j] == UNSEEN {
                    labels[j] = count;
                    queue.push(j);
                }
            }
        }
        count += 1;
    }
    (labels, count)
}

/// The neighbours of a node (see [`Topology::neighbors`]).
#[derive(Debug, Clone)]
pub enum Neighbors<'a> {
    /// Every other node of a complete graph.
    All(std::iter::Chain<std::ops::Range<usize>, std::ops::Range<usize>>),
    /// A stored neighbour list.
    Listed(std::slice::Iter<'a, usize>),
}

impl Iterator for Neighbors<'_> {
    type Item = usize;
    fn next(&mut self) -> Option<usize> {
        match self {
            Neighbors::All(it) => it.next(),
            Neighbors::Listed(it) => it.next().copied(),
        }
    }
    fn size_hint(&self) -> (usize, Option<usize>) {
        match self {
            Neighbors::All(it) => it.size_hint(),
            Neighbors::Listed(it) => it.size_hint(),
        }
    }
}

/// A transition row (see [`Topology::transition_row`]).
#[derive(Debug, Clone)]
pub struct TransitionRow<'a> {
    neighbors: Neighbors<'a>,
    /// Edge weights aligned with `neighbors`, or `None` for a uniform row.
    weights: Option<std::slice::Iter<'a, f64>>,
    /// `1 / (row total)`: the probability of each neighbour of a uniform row.
    scale: f64,
}

impl Iterator for TransitionRow<'_> {
    type Item = (usize, f64);
    fn next(&mut self) -> Option<(usize, f64)> {
        let j = self.neighbors.next()?;
        let weight = self
            .weights
            .as_mut()
            .and_then(Iterator::next)
            .copied()
            .unwrap_or(1.0);
        Some((j, weight * self.scale))
    }
    fn size_hint(&self) -> (usize, Option<usize>) {
        self.neighbors.size_hint()
    }
}

#[cfg(test)]
mod tests;
