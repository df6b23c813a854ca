//! Synchronous rounds on an undirected graph: what every node broadcast in the last round, and
//! the sums of its neighbours' broadcasts, which is all a decentralized consensus ADMM reads of
//! the others.
//!
//! Both baselines run Forero et al.'s simplified decentralized ADMM (one dual vector per node,
//! `λ_i = Σ_{j∈N(i)} λ_ij`, valid when every edge dual starts at 0). Its primal step needs the
//! average of the edge midpoints `c̄_i = ½ w_i + (1/(2 deg_i)) Σ_{j∈N(i)} w_j` of the last
//! broadcasts, and its dual step the disagreement `Σ_{j∈N(i)} (w_i − w_j)` of the new ones: both
//! are read here (`Exchange::midpoint`, `Exchange::add_disagreement`).
//!
//! A round's message is one `d`-vector from every node to every neighbour: `d · Σ_i deg_i =
//! 2|E|·d` floats ([`Exchange::floats_per_round`]). On the complete graph the neighbour sums are
//! computed as "total minus own", `O(n d)` instead of `O(n² d)`; the messages counted are the same.

use crate::problem::ProblemError;
use crate::problem::linalg::axpy;
use crate::rng::NodeRng;
use crate::topology::{Topology, TopologyError};
use thiserror::Error;

/// A graph, or a set of node streams, that synchronous rounds cannot run on.
#[derive(Debug, Error, Clone, PartialEq)]
pub enum NetworkError {
    /// Fewer than 2 nodes, or a disconnected graph.
    #[error(
        "decentralized ADMM needs a connected graph of at least 2 nodes (consensus is enforced \
         only along edges, so separate components never agree): {0}"
    )]
    Graph(TopologyError),
    /// Edge weights would be ignored.
    #[error(
        "the graph is weighted, but synchronous consensus ADMM weighs every neighbour alike; \
         the weights would be silently ignored (give an unweighted graph)"
    )]
    Weighted,
    /// The graph's nodes are not the problem's users.
    #[error("the graph has {nodes} nodes but the problem has {users} users")]
    Nodes {
        /// Nodes of the graph.
        nodes: usize,
        /// Users of the problem.
        users: usize,
    },
    /// A round needs one random stream per node.
    #[error("a round needs one random stream per node: {nodes} nodes, {streams} streams")]
    Streams {
        /// Nodes of the graph.
        nodes: usize,
        /// Streams given.
        streams: usize,
    },
}

/// The last broadcasts of every node on a validated graph, and their neighbour sums.
#[derive(Debug, Clone)]
pub struct Exchange {
    topology: Topology,
    dim: usize,
    /// The broadcasts of the last round, node after node (`n · dim`); all 0 before the first.
    sent: Vec<f64>,
    /// `Σ_{j∈N(i)} sent_j`, node after node.
    sums: Vec<f64>,
}

impl Exchange {
    /// Checks the graph (at least 2 nodes, connected, unweighted, one node per user) and starts
    /// with every broadcast at 0, a data-independent initialization.
    pub(crate) fn new(topology: Topology, users: usize, dim: usize) -> Result<Self, NetworkError> {
        topology.require_walkable().map_err(NetworkError::Graph)?;
        if let Topology::Graph(g) = &topology
            && g.is_weighted()
        {
            return Err(NetworkError::Weighted);
        }
        let nodes = topology.n();
        if nodes != users {
            return Err(NetworkError::Nodes { nodes, users });
        }
        Ok(Self {
            topology,
            dim,
            sent: vec![0.0; nodes * dim],
            sums: vec![0.0; nodes * dim],
        })
    }

    /// The graph.
    pub fn topology(&self) -> &Topology {
        &self.topology
    }

    /// Number of nodes.
    pub fn n(&self) -> usize {
        self.topology.n()
    }

    /// Model dimension `d`.
    pub fn dim(&self) -> usize {
        self.dim
    }

    /// Number of neighbours of node `i`.
    pub fn degree(&self, i: usize) -> usize {
        self.topology.degree(i)
    }

    /// What node `i` broadcast in the last round.
    pub fn broadcast(&self, i: usize) -> &[f64] {
        &self.sent[i * self.dim..(i + 1) * self.dim]
    }

    /// `Σ_{j∈N(i)}` of the neighbours' last broadcasts.
    pub fn neighbor_sum(&self, i: usize) -> &[f64] {
        &self.sums[i * self.dim..(i + 1) * self.dim]
    }

    /// Floats sent per round over all links: `d` per node per neighbour, `2|E|·d`.
    pub fn floats_per_round(&self) -> usize {
        let edge_ends: usize = (0..self.n()).map(|i| self.degree(i)).sum();
        edge_ends * self.dim
    }

    /// Bytes sent per round over all links, 8 per float ([`Exchange::floats_per_round`]).
    pub fn bytes_per_round(&self) -> usize {
        8 * self.floats_per_round()
    }

    /// `out = (1/n) Σ_i w_i`, the network average of the last broadcasts: the released model
    /// (post-processing of messages every adversary of the local view sees).
    pub fn average(&self, out: &mut [f64]) -> Result<(), ProblemError> {
        ProblemError::check_length("the average's output", self.dim, out.len())?;
        out.fill(0.0);
        let inv_n = 1.0 / self.n() as f64;
        for w in self.sent.chunks_exact(self.dim) {
            axpy(inv_n, w, out);
        }
        Ok(())
    }

    /// `sqrt((1/n) Σ_i ‖w_i − w̄‖²)`: the root-mean-square distance of the last broadcasts to
    /// their average (0 at consensus).
    pub fn consensus_gap(&self) -> f64 {
        let mut mean = vec![0.0; self.dim];
        let inv_n = 1.0 / self.n() as f64;
        for w in self.sent.chunks_exact(self.dim) {
            axpy(inv_n, w, &mut mean);
        }
        let total: f64 = self
            .sent
            .chunks_exact(self.dim)
            .flat_map(|w| w.iter().zip(&mean).map(|(a, b)| (a - b) * (a - b)))
            .sum();
        (total * inv_n).sqrt()
    }

    /// `out = c̄_i = ½ w_i + (1/(2 deg_i)) Σ_{j∈N(i)} w_j`, the mean over `i`'s edges of the
    /// midpoints `½(w_i + w_j)` of the last broadcasts: where the penalty pulls node `i`.
    pub(crate) fn midpoint(&self, i: usize, out: &mut [f64]) {
        let half_inv_deg = 0.5 / self.degree(i) as f64;
        for ((o, &own), &sum) in out
            .iter_mut()
            .zip(self.broadcast(i))
            .zip(self.neighbor_sum(i))
        {
            *o = 0.5 * own + half_inv_deg * sum;
        }
    }

    /// `dual += scale · Σ_{j∈N(i)} (w_i − w_j)` on the last broadcasts: the dual step of both
    /// baselines (with their own sign conventions in `scale`).
    pub(crate) fn add_disagreement(&self, i: usize, scale: f64, dual: &mut [f64]) {
        let deg = self.degree(i) as f64;
        for ((l, &own), &sum) in dual
            .iter_mut()
            .zip(self.broadcast(i))
            .zip(self.neighbor_sum(i))
        {
            *l += scale * (deg * own - sum);
        }
    }

    /// Refuses a round given another number of random streams than nodes.
    pub(crate) fn check_streams(&self, rngs: &[NodeRng]) -> Result<(), NetworkError> {
        if rngs.len() == self.n() {
            Ok(())
        } else {
            Err(NetworkError::Streams {
                nodes: self.n(),
                streams: rngs.len(),
            })
        }
    }

    /// Makes `next` (every node's new broadcast, node after node) the last round's broadcasts,
    /// leaving the previous ones in `next`, and recomputes the neighbour sums.
    pub(crate) fn publish(&mut self, next: &mut Vec<f64>) {
        debug_assert_eq!(next.len(), self.sent.len());
        std::mem::swap(&mut self.sent, next);
        let d = self.dim;
        match &self.topology {
            Topology::Complete { .. } => {
                let mut total = vec![0.0; d];
                for w in self.sent.chunks_exact(d) {
                    axpy(1.0, w, &mut total);
                }
                for (s, w) in self.sums.chunks_exact_mut(d).zip(self.sent.chunks_exact(d)) {
                    for ((sk, &tk), &wk) in s.iter_mut().zip(&total).zip(w) {
                        *sk = tk - wk;
                    }
                }
            }
            Topology::Graph(g) => {
                for (i, s) in self.sums.chunks_exact_mut(d).enumerate() {
                    s.fill(0.0);
                    for &j in g.neighbors(i) {
                        axpy(1.0, &self.sent[j * d..(j + 1) * d], s);
                    }
                }
            }
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)] // a failed unwrap is a failed test
mod tests {
    use super::*;
    use crate::topology::{Graph, generate};

    fn sums_by_definition(x: &Exchange, i: usize) -> Vec<f64> {
        let mut s = vec![0.0; x.dim()];
        for j in x.topology().neighbors(i) {
            axpy(1.0, x.broadcast(j), &mut s);
        }
        s
    }

    /// The neighbour sums ("total minus own" on the complete graph), the midpoints, the dual
    /// step and the message count agree with their definitions.
    #[test]
    fn sums_midpoints_and_disagreement_follow_their_definitions() {
        for topology in [
            Topology::Complete { n: 5 },
            Topology::Graph(generate::ring(5).unwrap()),
        ] {
            let edges = if matches!(topology, Topology::Complete { .. }) {
                10
            } else {
                5
            };
            let mut x = Exchange::new(topology, 5, 3).unwrap();
            let mut next: Vec<f64> = (0..15).map(|k| (k as f64 * 0.7).sin()).collect();
            x.publish(&mut next);
            assert_eq!(next, vec![0.0; 15]);
            assert_eq!(x.floats_per_round(), 2 * edges * 3);
            assert_eq!(x.bytes_per_round(), 8 * 2 * edges * 3);
            for i in 0..5 {
                let s = sums_by_definition(&x, i);
                for (a, b) in x.neighbor_sum(i).iter().zip(&s) {
                    assert!((a - b).abs() < 1e-14);
                }
                let deg = x.degree(i) as f64;
                let mut mid = vec![0.0; 3];
                x.midpoint(i, &mut mid);
                let mut dual = vec![1.0; 3];
                x.add_disagreement(i, 0.5, &mut dual);
                for k in 0..3 {
                    let own = x.broadcast(i)[k];
                    let by_edges: f64 = x
                        .topology()
                        .neighbors(i)
                        .map(|j| 0.5 * (own + x.broadcast(j)[k]))
                        .sum::<f64>()
                        / deg;
                    assert!((mid[k] - by_edges).abs() < 1e-14);
                    let disagreement: f64 = x
                        .topology()
                        .neighbors(i)
                        .map(|j| own - x.broadcast(j)[k])
                        .sum();
                    assert!((dual[k] - (1.0 + 0.5 * disagreement)).abs() < 1e-14);
                }
            }
        }
    }

    #[test]
    fn average_and_consensus_gap() {
        let mut x = Exchange::new(Topology::Complete { n: 2 }, 2, 2).unwrap();
        assert_eq!(x.consensus_gap(), 0.0);
        x.publish(&mut vec![1.0, 2.0, 3.0, 6.0]);
        let mut avg = vec![0.0; 2];
        x.average(&mut avg).unwrap();
        assert_eq!(avg, vec![2.0, 4.0]);
        // Each node is at distance √(1 + 4) from the average.
        assert!((x.consensus_gap() - 5f64.sqrt()).abs() < 1e-15);
        assert!(matches!(
            x.average(&mut [0.0; 3]),
            Err(ProblemError::Length { got: 3, .. })
        ));
    }

    #[test]
    fn graphs_rounds_cannot_run_on_are_refused() {
        let two_pairs = Graph::unweighted(4, &[(0, 1), (2, 3)]).unwrap();
        let err = Exchange::new(Topology::Graph(two_pairs), 4, 1).unwrap_err();
        assert!(matches!(
            err,
            NetworkError::Graph(TopologyError::Disconnected { count: 2, .. })
        ));
        assert!(err.to_string().contains("separate components never agree"));
        assert!(matches!(
            Exchange::new(Topology::Complete { n: 1 }, 1, 1),
            Err(NetworkError::Graph(TopologyError::TooFewNodes { nodes: 1 }))
        ));
        let weighted = Graph::weighted(2, &[(0, 1, 2.0)]).unwrap();
        assert_eq!(
            Exchange::new(Topology::Graph(weighted), 2, 1).unwrap_err(),
            NetworkError::Weighted
        );
        assert_eq!(
            Exchange::new(Topology::Complete { n: 3 }, 4, 1).unwrap_err(),
            NetworkError::Nodes { nodes: 3, users: 4 }
        );
        let x = Exchange::new(Topology::Complete { n: 3 }, 3, 1).unwrap();
        assert_eq!(
            x.check_streams(&[crate::rng::node_rng(1, 0)]),
            Err(NetworkError::Streams {
                nodes: 3,
                streams: 1
            })
        );
    }
}
