//! The `[topology]` table of a run: the graph built for the run's users and checked walkable.

use super::SpecError;
use crate::rng::{Purpose, derive_seed};
use crate::topology::{Topology, TopologyError, TopologyKind, TopologySpec};
use std::path::Path;

/// Where a topology may come from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Source<'a> {
    /// Anywhere: an edge-list file is read relative to this directory (a scenario).
    Files(&'a Path),
    /// Only the spec itself (a run file, compared among members on different hosts).
    SelfContained,
}

/// The graph of `spec` for `users` nodes, generated from the run `seed`, with its node count
/// checked; walkable too when `walk`. Errors name the key under `at` (`["topology"]`, or
/// `["sweep", "topology", "1"]`).
pub fn build_topology(
    spec: &TopologySpec,
    users: usize,
    seed: u64,
    source: Source<'_>,
    walk: bool,
    at: &[&str],
) -> Result<Topology, SpecError> {
    let key = |k: &str| {
        let mut path = at.to_vec();
        path.push(k);
        path.iter().map(|s| s.to_string()).collect::<Vec<_>>()
    };
    let refuse = |k: Option<&str>, message: String| {
        let path = k.map_or_else(|| at.iter().map(|s| s.to_string()).collect(), key);
        let parts: Vec<&str> = path.iter().map(String::as_str).collect();
        SpecError::new(&parts, message)
    };
    let who = match source {
        Source::Files(_) => "users",
        Source::SelfContained => "members",
    };
    let base = match source {
        Source::Files(base) => base,
        Source::SelfContained if spec.kind == TopologyKind::File => {
            return Err(refuse(
                Some("kind"),
                "a run file must be self-contained: write the edges inline with kind = \"edges\""
                    .into(),
            ));
        }
        Source::SelfContained => Path::new(""),
    };
    if let Some(nodes) = spec.nodes
        && nodes != users
    {
        return Err(refuse(
            Some("nodes"),
            format!("{nodes} nodes, but the run has {users} {who}"),
        ));
    }
    let topology_error = |e: TopologyError| match e {
        TopologyError::Parameter { key, message } => refuse(Some(&key), message),
        other => refuse(None, other.to_string()),
    };
    let topology = spec
        .build(Some(users), base, derive_seed(seed, Purpose::Topology, 0))
        .map_err(topology_error)?;
    if topology.n() != users {
        return Err(refuse(
            None,
            format!(
                "the graph has {} nodes, but the run has {users} {who}",
                topology.n()
            ),
        ));
    }
    if walk {
        topology.require_walkable().map_err(topology_error)?;
    }
    Ok(topology)
}
