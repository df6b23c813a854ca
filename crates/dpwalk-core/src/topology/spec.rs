//! The topology file format (`topologies/*.toml`, and the `[topology]` table of scenario files),
//! its parser with located errors, and the build of a [`Topology`] from it.
//!
//! # Format
//!
//! | key      | kinds            | meaning                                                        |
//! |----------|------------------|----------------------------------------------------------------|
//! | `kind`   | all (required)   | `complete`, `ring`, `torus`, `random-regular`, `erdos-renyi`, `small-world`, `star`, `edges`, `file` |
//! | `nodes`  | all (optional)   | number of nodes; when absent, the caller's default (a scenario's number of users) |
//! | `seed`   | all (optional)   | generator seed; when absent, the caller's seed (derived with `Purpose::Topology`); only random kinds use it |
//! | `rows`, `cols` | torus      | grid sides, each ≥ 3; `nodes`, if known, must equal `rows × cols` |
//! | `degree` | random-regular   | `1 ≤ degree < nodes`, `nodes × degree` even                    |
//! | `p`      | erdos-renyi      | edge probability in `[0, 1]`                                   |
//! | `k`, `beta` | small-world   | `k ≥ 1` neighbours per side (`2k < nodes`), rewiring probability `beta` in `[0, 1]` |
//! | `edges`  | edges            | `[[u, v], [u, v, weight], …]`, 0-based; a missing weight is 1   |
//! | `path`   | file             | an edge-list text file, relative to the spec's directory       |
//!
//! A key that does not apply to the kind is an error (it is almost always a mistake about the
//! kind), except `seed`, which is harmless. The star's centre is node 0. Ring needs ≥ 3 nodes.
//!
//! For `edges` and `file` without `nodes` (and no caller default), the node count is the largest
//! endpoint + 1. Edge rules (no self-loops, no duplicates, positive finite weights) are those of
//! [`super::Graph`].
//!
//! Edge-list files (`kind = "file"`): one edge per line, `u v` or `u v weight`, separated by
//! spaces, tabs or commas; `#` starts a comment; blank lines are ignored. Errors name the line.

use std::path::{Path, PathBuf};

use crate::toml_location::{key_line, toml_error_location};
use serde::de::{self, SeqAccess, Visitor};
use serde::ser::SerializeSeq;
use serde::{Deserialize, Deserializer, Serialize, Serializer};

use super::{Graph, Topology, TopologyError, generate};

/// Which graph a [`TopologySpec`] describes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum TopologyKind {
    /// Every node forwards to any other (no edges stored).
    Complete,
    /// A cycle.
    Ring,
    /// A `rows × cols` grid with wrap-around.
    Torus,
    /// A random connected simple `degree`-regular graph.
    RandomRegular,
    /// Erdős–Rényi G(n, p).
    ErdosRenyi,
    /// Watts–Strogatz small world.
    SmallWorld,
    /// A star centred on node 0.
    Star,
    /// An explicit edge list in the spec.
    Edges,
    /// An edge list in a separate text file.
    File,
}

impl TopologyKind {
    /// The name used in files.
    pub fn name(self) -> &'static str {
        match self {
            TopologyKind::Complete => "complete",
            TopologyKind::Ring => "ring",
            TopologyKind::Torus => "torus",
            TopologyKind::RandomRegular => "random-regular",
            TopologyKind::ErdosRenyi => "erdos-renyi",
            TopologyKind::SmallWorld => "small-world",
            TopologyKind::Star => "star",
            TopologyKind::Edges => "edges",
            TopologyKind::File => "file",
        }
    }

    /// The kind-specific keys this kind requires (all of them, and no other kind's).
    fn keys(self) -> &'static [&'static str] {
        match self {
            TopologyKind::Complete | TopologyKind::Ring | TopologyKind::Star => &[],
            TopologyKind::Torus => &["rows", "cols"],
            TopologyKind::RandomRegular => &["degree"],
            TopologyKind::ErdosRenyi => &["p"],
            TopologyKind::SmallWorld => &["k", "beta"],
            TopologyKind::Edges => &["edges"],
            TopologyKind::File => &["path"],
        }
    }
}

/// One entry of `edges = [...]`: `[u, v]` or `[u, v, weight]`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct EdgeEntry {
    /// One endpoint.
    pub u: usize,
    /// The other endpoint.
    pub v: usize,
    /// The edge's weight; `None` means 1.
    pub weight: Option<f64>,
}

impl<'de> Deserialize<'de> for EdgeEntry {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct EdgeVisitor;
        impl<'de> Visitor<'de> for EdgeVisitor {
            type Value = EdgeEntry;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("an edge [u, v] or [u, v, weight] with non-negative integer endpoints")
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<EdgeEntry, A::Error> {
                let u = seq
                    .next_element()?
                    .ok_or_else(|| de::Error::invalid_length(0, &self))?;
                let v = seq
                    .next_element()?
                    .ok_or_else(|| de::Error::invalid_length(1, &self))?;
                let weight = seq.next_element()?;
                if seq.next_element::<de::IgnoredAny>()?.is_some() {
                    return Err(de::Error::invalid_length(4, &self));
                }
                Ok(EdgeEntry { u, v, weight })
            }
        }
        deserializer.deserialize_seq(EdgeVisitor)
    }
}

impl Serialize for EdgeEntry {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut seq = serializer.serialize_seq(Some(2 + usize::from(self.weight.is_some())))?;
        seq.serialize_element(&self.u)?;
        seq.serialize_element(&self.v)?;
        if let Some(w) = &self.weight {
            seq.serialize_element(w)?;
        }
        seq.end()
    }
}

/// A topology as written in a file: unchecked until [`TopologySpec::check`] (called by
/// [`parse_spec`] and [`TopologySpec::build`]). See the module docs for the keys.
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub struct TopologySpec {
    /// Which graph.
    pub kind: TopologyKind,
    /// Number of nodes (default: the caller's).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub nodes: Option<usize>,
    /// Generator seed (default: the caller's).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub seed: Option<u64>,
    /// Torus rows.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rows: Option<usize>,
    /// Torus columns.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cols: Option<usize>,
    /// Random-regular degree.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub degree: Option<usize>,
    /// Erdős–Rényi edge probability.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub p: Option<f64>,
    /// Small-world neighbours per side.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub k: Option<usize>,
    /// Small-world rewiring probability.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub beta: Option<f64>,
    /// Explicit edges.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub edges: Option<Vec<EdgeEntry>>,
    /// Edge-list file, relative to the spec's directory.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub path: Option<PathBuf>,
}

fn param(key: &str, message: impl Into<String>) -> TopologyError {
    TopologyError::Parameter {
        key: key.into(),
        message: message.into(),
    }
}

fn probability(key: &str, value: Option<f64>) -> Result<(), TopologyError> {
    match value {
        Some(x) if !(0.0..=1.0).contains(&x) => Err(param(key, format!("{x} is not in [0, 1]"))),
        _ => Ok(()),
    }
}

impl TopologySpec {
    /// A spec of `kind` with no parameters set.
    pub fn new(kind: TopologyKind) -> Self {
        TopologySpec {
            kind,
            nodes: None,
            seed: None,
            rows: None,
            cols: None,
            degree: None,
            p: None,
            k: None,
            beta: None,
            edges: None,
            path: None,
        }
    }

    /// Which kind-specific keys are set.
    fn present(&self) -> [(&'static str, bool); 8] {
        [
            ("rows", self.rows.is_some()),
            ("cols", self.cols.is_some()),
            ("degree", self.degree.is_some()),
            ("p", self.p.is_some()),
            ("k", self.k.is_some()),
            ("beta", self.beta.is_some()),
            ("edges", self.edges.is_some()),
            ("path", self.path.is_some()),
        ]
    }

    /// Checks what can be checked without knowing the node count: required keys present, keys of
    /// other kinds absent, parameters in range. Errors are [`TopologyError::Parameter`] naming the
    /// key (use [`key_line`] to locate it in the text).
    pub fn check(&self) -> Result<(), TopologyError> {
        let kind = self.kind.name();
        for (key, set) in self.present() {
            let wanted = self.kind.keys().contains(&key);
            if set && !wanted {
                return Err(param(key, format!("does not apply to kind = \"{kind}\"")));
            }
            if wanted && !set {
                return Err(param(key, format!("is required by kind = \"{kind}\"")));
            }
        }
        if let Some(n) = self.nodes
            && n < 2
        {
            return Err(param(
                "nodes",
                format!("{n} is fewer than 2 (a walk needs two users)"),
            ));
        }
        for key in ["rows", "cols"] {
            let side = if key == "rows" { self.rows } else { self.cols };
            if let Some(side) = side
                && side < 3
            {
                return Err(param(
                    key,
                    format!("{side} is below 3 (a torus side needs 3 nodes to be simple)"),
                ));
            }
        }
        if self.degree == Some(0) {
            return Err(param("degree", "must be at least 1"));
        }
        if self.k == Some(0) {
            return Err(param("k", "must be at least 1"));
        }
        probability("p", self.p)?;
        probability("beta", self.beta)?;
        if self.edges.as_ref().is_some_and(Vec::is_empty) {
            return Err(param("edges", "is empty"));
        }
        Ok(())
    }

    /// Builds the topology. `default_nodes` is used when the spec has no `nodes` (a scenario's
    /// number of users); `base_dir` resolves a relative `path`; `seed` is used when the spec has
    /// no `seed` (derive it with `rng::derive_seed(run_seed, Purpose::Topology, 0)`).
    pub fn build(
        &self,
        default_nodes: Option<usize>,
        base_dir: &Path,
        seed: u64,
    ) -> Result<Topology, TopologyError> {
        self.check()?;
        let seed = self.seed.unwrap_or(seed);
        let nodes = self.nodes.or(default_nodes);
        let origin = if self.nodes.is_some() {
            "nodes"
        } else {
            "the caller's default node count"
        };
        let need_nodes = || match nodes {
            None => Err(param(
                "nodes",
                "not given, and the caller supplied no default",
            )),
            Some(n) if n < 2 => Err(TopologyError::TooFewNodes { nodes: n }),
            Some(n) => Ok(n),
        };
        // `check` guarantees the kind's own keys are present; a missing one is still an error
        // here, never a default.
        fn value<T>(x: Option<T>, key: &str) -> Result<T, TopologyError> {
            x.ok_or_else(|| param(key, "missing"))
        }
        let graph = match self.kind {
            TopologyKind::Complete => return Ok(Topology::Complete { n: need_nodes()? }),
            TopologyKind::Ring => {
                let n = need_nodes()?;
                if n < 3 {
                    return Err(param(
                        "nodes",
                        format!("a ring needs at least 3 nodes, {origin} is {n}"),
                    ));
                }
                generate::ring(n)?
            }
            TopologyKind::Torus => {
                let (rows, cols) = (value(self.rows, "rows")?, value(self.cols, "cols")?);
                // Checked: a wrapped product could pass the node-count check and make the
                // generator loop over an astronomical grid (found by the run_file fuzz target).
                let Some(size) = rows.checked_mul(cols) else {
                    return Err(param(
                        "cols",
                        format!("a {rows}×{cols} torus has more nodes than fit in a usize"),
                    ));
                };
                if let Some(n) = nodes
                    && n != size
                {
                    return Err(param(
                        "nodes",
                        format!("a {rows}×{cols} torus has {size} nodes, but {origin} is {n}"),
                    ));
                }
                generate::torus(rows, cols)?
            }
            TopologyKind::Star => generate::star(need_nodes()?)?,
            TopologyKind::RandomRegular => {
                let (n, d) = (need_nodes()?, value(self.degree, "degree")?);
                if d >= n {
                    return Err(param(
                        "degree",
                        format!("{d} is not below the node count {n}"),
                    ));
                }
                if (n * d) % 2 == 1 {
                    return Err(param(
                        "degree",
                        format!("nodes × degree = {n} × {d} is odd: no such graph"),
                    ));
                }
                generate::random_regular(n, d, seed)?
            }
            TopologyKind::ErdosRenyi => {
                generate::erdos_renyi(need_nodes()?, value(self.p, "p")?, seed)?
            }
            TopologyKind::SmallWorld => {
                let (n, k) = (need_nodes()?, value(self.k, "k")?);
                // `k ≥ n/2` rather than `2k ≥ n`, which overflows for a huge k.
                if k >= n.div_ceil(2) {
                    return Err(param(
                        "k",
                        format!("2k = 2 × {k} is not below the node count {n}"),
                    ));
                }
                generate::small_world(n, k, value(self.beta, "beta")?, seed)?
            }
            TopologyKind::Edges => {
                let list = value(self.edges.as_deref(), "edges")?;
                let edges = EdgeList {
                    pairs: list.iter().map(|e| (e.u, e.v)).collect(),
                    weights: list
                        .iter()
                        .any(|e| e.weight.is_some())
                        .then(|| list.iter().map(|e| e.weight.unwrap_or(1.0)).collect()),
                };
                edges.into_graph(nodes, &|k| format!("edges[{k}] {:?}", list[k]))?
            }
            TopologyKind::File => {
                let path = base_dir.join(self.path.as_deref().unwrap_or(Path::new("")));
                let (edges, lines) = read_edge_file(&path)?;
                let shown = path.display().to_string();
                edges.into_graph(nodes, &|k| format!("{shown}, line {}", lines[k]))?
            }
        };
        Ok(Topology::Graph(graph))
    }
}

/// Edges read from a spec or a file, before the node count is settled.
struct EdgeList {
    pairs: Vec<(usize, usize)>,
    /// Present when any edge has a weight (the others weigh 1).
    weights: Option<Vec<f64>>,
}

impl EdgeList {
    /// The graph on `nodes` nodes, or on `largest endpoint + 1` nodes when `nodes` is unknown.
    fn into_graph(
        self,
        nodes: Option<usize>,
        locate: &dyn Fn(usize) -> String,
    ) -> Result<Graph, TopologyError> {
        let inferred = self
            .pairs
            .iter()
            .map(|&(u, v)| u.max(v) + 1)
            .max()
            .unwrap_or(0);
        let n = nodes.unwrap_or(inferred);
        if n < 2 {
            return Err(TopologyError::TooFewNodes { nodes: n });
        }
        Graph::from_edges(n, &self.pairs, self.weights.as_deref(), locate)
    }
}

/// Reads an edge-list file; returns the edges and the 1-based line of each.
fn read_edge_file(path: &Path) -> Result<(EdgeList, Vec<usize>), TopologyError> {
    let shown = path.display().to_string();
    let text = std::fs::read_to_string(path).map_err(|e| TopologyError::Io {
        path: shown.clone(),
        message: e.to_string(),
    })?;
    let mut pairs = Vec::new();
    let mut weights = Vec::new();
    let mut lines = Vec::new();
    let mut any_weight = false;
    for (index, raw) in text.lines().enumerate() {
        let line = index + 1;
        let content = raw.split('#').next().unwrap_or_default();
        let fields: Vec<&str> = content
            .split(|c: char| c.is_whitespace() || c == ',')
            .filter(|f| !f.is_empty())
            .collect();
        if fields.is_empty() {
            continue;
        }
        let bad = |message: String| TopologyError::Edge {
            at: format!("{shown}, line {line}"),
            message,
        };
        if fields.len() > 3 || fields.len() < 2 {
            return Err(bad(format!(
                "expected `u v` or `u v weight`, found {} fields",
                fields.len()
            )));
        }
        let endpoint = |f: &str| {
            f.parse::<usize>().map_err(|_| {
                bad(format!(
                    "`{f}` is not a node index (a non-negative integer)"
                ))
            })
        };
        pairs.push((endpoint(fields[0])?, endpoint(fields[1])?));
        weights.push(match fields.get(2) {
            Some(f) => {
                any_weight = true;
                f.parse::<f64>()
                    .map_err(|_| bad(format!("`{f}` is not a number")))?
            }
            None => 1.0,
        });
        lines.push(line);
    }
    if pairs.is_empty() {
        return Err(TopologyError::Edge {
            at: shown,
            message: "no edges in the file".into(),
        });
    }
    Ok((
        EdgeList {
            pairs,
            weights: any_weight.then_some(weights),
        },
        lines,
    ))
}

/// Parses a topology spec (a whole `topologies/*.toml` file) and checks it. `origin` names the
/// text in errors (usually its path). Every error names the line and, when there is one, the key.
pub fn parse_spec(text: &str, origin: &str) -> Result<TopologySpec, TopologyError> {
    let spec: TopologySpec = toml::from_str(text).map_err(|e| {
        let (line, key) = toml_error_location(text, &e);
        TopologyError::Parse {
            origin: origin.into(),
            line,
            key,
            message: e.message().to_string(),
        }
    })?;
    spec.check().map_err(|e| match e {
        TopologyError::Parameter { key, message } => TopologyError::Parse {
            origin: origin.into(),
            line: key_line(text, &[key.as_str()]).unwrap_or(1),
            key: Some(key),
            message,
        },
        other => other,
    })?;
    Ok(spec)
}
