//! Tests of the topology module: generators, next hop, parsing, checks, spectrum, shipped files.

#![allow(clippy::unwrap_used, clippy::expect_used)] // a failed unwrap is a failed test

use std::path::{Path, PathBuf};

use rand::RngExt;

use super::spectral::{dense_extremes, lanczos_extremes};
use super::*;
use crate::rng::node_rng;
use crate::toml_location::{key_line, toml_error_location};

fn graph(t: &Topology) -> &Graph {
    match t {
        Topology::Graph(g) => g,
        Topology::Complete { .. } => panic!("expected an explicit graph"),
    }
}

fn build(text: &str, default_nodes: Option<usize>, seed: u64) -> Result<Topology, TopologyError> {
    parse_spec(text, "test.toml")?.build(default_nodes, Path::new("."), seed)
}

fn degrees(t: &Topology) -> Vec<usize> {
    (0..t.n()).map(|i| t.degree(i)).collect()
}

/// Every row strictly increasing (no duplicate) and free of its own node (no self-loop).
fn assert_simple(t: &Topology) {
    for i in 0..t.n() {
        let row: Vec<usize> = t.neighbors(i).collect();
        assert!(
            row.windows(2).all(|w| w[0] < w[1]),
            "row {i} not strictly increasing"
        );
        assert!(!row.contains(&i), "self-loop at {i}");
        for &j in &row {
            assert!(t.neighbors(j).any(|x| x == i), "edge {i}-{j} not symmetric");
        }
    }
}

// ---------------------------------------------------------------- generators

#[test]
fn ring_torus_star_complete_have_their_degrees() {
    let ring = build("kind = \"ring\"", Some(100), 0).unwrap();
    assert_eq!(degrees(&ring), vec![2; 100]);
    assert_eq!(graph(&ring).edge_count(), 100);
    assert_eq!(ring.neighbors(0).collect::<Vec<_>>(), vec![1, 99]);
    assert_simple(&ring);
    assert!(ring.require_walkable().is_ok());

    let torus = build("kind = \"torus\"\nrows = 10\ncols = 10", None, 0).unwrap();
    assert_eq!(degrees(&torus), vec![4; 100]);
    assert_eq!(graph(&torus).edge_count(), 200);
    assert_eq!(torus.neighbors(0).collect::<Vec<_>>(), vec![1, 9, 10, 90]);
    assert_simple(&torus);
    assert!(torus.require_walkable().is_ok());
    let rect = build("kind = \"torus\"\nrows = 3\ncols = 5", Some(15), 0).unwrap();
    assert_eq!(degrees(&rect), vec![4; 15]);

    let star = build("kind = \"star\"\nnodes = 50", None, 0).unwrap();
    let d = degrees(&star);
    assert_eq!(d[0], 49);
    assert!(d[1..].iter().all(|&x| x == 1));
    assert!(star.require_walkable().is_ok());

    let complete = build("kind = \"complete\"", Some(1000), 0).unwrap();
    assert!(matches!(complete, Topology::Complete { n: 1000 }));
    assert_eq!(complete.degree(17), 999);
    let row: Vec<usize> = complete.neighbors(3).collect();
    assert_eq!(row.len(), 999);
    assert!(!row.contains(&3));
    assert_eq!(complete.summary().edges, 1000 * 999 / 2);
    assert_eq!(complete.components(), vec![(0..1000).collect::<Vec<_>>()]);
}

#[test]
fn random_regular_is_exactly_d_regular_simple_and_connected() {
    for (n, d) in [
        (100, 4),
        (31, 4),
        (30, 3),
        (20, 15),
        (8, 7),
        (2, 1),
        (50, 10),
    ] {
        let t = generate::random_regular(n, d, 7).unwrap();
        let t = Topology::Graph(t);
        assert_eq!(degrees(&t), vec![d; n], "n = {n}, d = {d}");
        assert_eq!(graph(&t).edge_count(), n * d / 2);
        assert_simple(&t);
        assert!(t.require_walkable().is_ok(), "n = {n}, d = {d}");
    }
    assert!(matches!(
        build("kind = \"random-regular\"\ndegree = 3", Some(11), 0),
        Err(TopologyError::Parameter { key, .. }) if key == "degree"
    ));
    assert!(matches!(
        build("kind = \"random-regular\"\ndegree = 11", Some(11), 0),
        Err(TopologyError::Parameter { key, .. }) if key == "degree"
    ));
    assert!(generate::random_regular(11, 3, 0).is_err());
}

#[test]
fn random_generators_are_reproducible_and_seed_dependent() {
    let specs = [
        "kind = \"random-regular\"\ndegree = 4",
        "kind = \"erdos-renyi\"\np = 0.1",
        "kind = \"small-world\"\nk = 2\nbeta = 0.2",
    ];
    for text in specs {
        let a = build(text, Some(100), 1).unwrap();
        let b = build(text, Some(100), 1).unwrap();
        let c = build(text, Some(100), 2).unwrap();
        assert_eq!(graph(&a), graph(&b), "{text}");
        assert_ne!(graph(&a), graph(&c), "{text}");
        // A seed in the spec overrides the caller's.
        let pinned = format!("{text}\nseed = 9");
        let x = build(&pinned, Some(100), 1).unwrap();
        let y = build(&pinned, Some(100), 2).unwrap();
        assert_eq!(graph(&x), graph(&y), "{pinned}");
        assert_ne!(graph(&x), graph(&a), "{pinned}");
    }
}

#[test]
fn erdos_renyi_draws_each_pair_with_probability_p() {
    let (n, p, graphs) = (6, 0.3, 4000);
    let mut pair_counts = vec![0usize; n * n];
    let mut edge_total = 0usize;
    for seed in 0..graphs {
        let g = generate::erdos_renyi(n, p, seed).unwrap();
        edge_total += g.edge_count();
        for u in 0..n {
            for &v in g.neighbors(u) {
                pair_counts[u * n + v] += 1;
            }
        }
    }
    // Each of the 15 pairs: Binomial(4000, 0.3), sd ≈ 29; 5 sd tolerance.
    let sd = (graphs as f64 * p * (1.0 - p)).sqrt();
    for u in 0..n {
        for v in u + 1..n {
            let c = pair_counts[u * n + v] as f64;
            assert!(
                (c - graphs as f64 * p).abs() < 5.0 * sd,
                "pair {u}-{v}: {c}"
            );
        }
    }
    let mean_edges = edge_total as f64 / graphs as f64;
    assert!(
        (mean_edges - 15.0 * p).abs() < 0.1,
        "mean edges {mean_edges}"
    );

    let big = generate::erdos_renyi(2000, 0.01, 3).unwrap();
    let expected = 0.01 * 2000.0 * 1999.0 / 2.0;
    assert!((big.edge_count() as f64 - expected).abs() < 5.0 * (expected * 0.99).sqrt());
    assert_eq!(generate::erdos_renyi(7, 1.0, 0).unwrap().edge_count(), 21);
    assert_eq!(generate::erdos_renyi(7, 0.0, 0).unwrap().edge_count(), 0);
}

#[test]
fn small_world_keeps_edges_and_rewires_a_beta_fraction() {
    let (n, k) = (1000, 2);
    let lattice = Topology::Graph(generate::small_world(n, k, 0.0, 1).unwrap());
    assert_eq!(degrees(&lattice), vec![2 * k; n]);
    assert_eq!(
        lattice.neighbors(0).collect::<Vec<_>>(),
        vec![1, 2, 998, 999]
    );

    let rewired = Topology::Graph(generate::small_world(n, k, 0.5, 1).unwrap());
    assert_simple(&rewired);
    assert_eq!(graph(&rewired).edge_count(), n * k);
    let off_lattice: usize = (0..n)
        .map(|u| {
            rewired
                .neighbors(u)
                .filter(|&v| v > u && !lattice.neighbors(u).any(|x| x == v))
                .count()
        })
        .sum();
    // About beta · n · k = 1000 edges leave the lattice (sd ≈ 22).
    assert!(
        (off_lattice as f64 - 1000.0).abs() < 120.0,
        "{off_lattice} rewired"
    );
}

// ---------------------------------------------------------------- next hop

/// Draws `draws` next hops from `holder` and returns the chi-square statistic of the counts
/// against `row` and its degrees of freedom; asserts every draw lands on the support of the
/// topology's own transition row (so never on the holder).
fn chi_square(t: &Topology, holder: usize, row: &[(usize, f64)], draws: usize) -> (f64, usize) {
    let mut rng = node_rng(2024, holder as u64);
    let mut counts = vec![0usize; t.n()];
    for _ in 0..draws {
        let j = t.next_hop(holder, &mut rng);
        assert_ne!(j, holder);
        counts[j] += 1;
    }
    let support: usize = t.transition_row(holder).map(|(j, _)| counts[j]).sum();
    assert_eq!(support, draws, "draws outside the transition row");
    let stat = row
        .iter()
        .map(|&(j, p)| {
            let e = p * draws as f64;
            (counts[j] as f64 - e).powi(2) / e
        })
        .sum();
    (stat, row.len() - 1)
}

/// Chi-square with `df` degrees of freedom has mean `df` and sd `√(2 df)`: 6 sd above the mean
/// is far out of reach of a correct sampler, and within reach of none of the wrong ones.
fn within(stat: f64, df: usize) -> bool {
    stat <= df as f64 + 6.0 * (2.0 * df as f64).sqrt()
}

fn assert_matches_row(t: &Topology, holder: usize) {
    let row: Vec<(usize, f64)> = t.transition_row(holder).collect();
    assert!((row.iter().map(|r| r.1).sum::<f64>() - 1.0).abs() < 1e-12);
    let (stat, df) = chi_square(t, holder, &row, 200_000);
    assert!(
        within(stat, df),
        "holder {holder}: chi-square {stat} with {df} df"
    );
}

#[test]
fn complete_next_hop_is_the_stub_rule_exactly() {
    let t = Topology::Complete { n: 7 };
    let mut a = node_rng(1, 2);
    let mut b = node_rng(1, 2);
    for holder in 0..7 {
        for _ in 0..50 {
            let j = b.random_range(0..6usize);
            let expected = if j >= holder { j + 1 } else { j };
            assert_eq!(t.next_hop(holder, &mut a), expected);
        }
    }
}

#[test]
fn next_hop_frequencies_match_transition_rows() {
    let complete = Topology::Complete { n: 10 };
    for holder in [0, 4, 9] {
        assert_matches_row(&complete, holder);
    }
    let regular = build("kind = \"random-regular\"\ndegree = 6", Some(40), 3).unwrap();
    assert_matches_row(&regular, 5);
    let star = build("kind = \"star\"", Some(30), 0).unwrap();
    assert_matches_row(&star, 0);
    assert_matches_row(&star, 7);
    let weighted = build(
        "kind = \"edges\"\nedges = [[0, 1, 1.0], [0, 2, 2.0], [0, 3, 4.0], [0, 4, 0.25], [1, 2], [3, 4, 8]]",
        None,
        0,
    )
    .unwrap();
    assert_eq!(
        weighted.transition_row(0).collect::<Vec<_>>(),
        vec![
            (1, 1.0 / 7.25),
            (2, 2.0 / 7.25),
            (3, 4.0 / 7.25),
            (4, 0.25 / 7.25)
        ]
    );
    for holder in 0..5 {
        assert_matches_row(&weighted, holder);
    }
    // The test has teeth: the weighted draws do not pass as uniform ones.
    let uniform: Vec<(usize, f64)> = (1..5).map(|j| (j, 0.25)).collect();
    let (stat, df) = chi_square(&weighted, 0, &uniform, 200_000);
    assert!(!within(stat, df), "weighted draws look uniform: {stat}");
}

// ---------------------------------------------------------------- parsing

fn parse_error(text: &str) -> (usize, Option<String>, String) {
    match parse_spec(text, "topologies/x.toml") {
        Err(e @ TopologyError::Parse { .. }) => {
            let shown = e.to_string();
            let TopologyError::Parse { line, key, .. } = e else {
                unreachable!()
            };
            (line, key, shown)
        }
        other => panic!("expected a parse error, got {other:?}"),
    }
}

#[test]
fn parse_errors_name_the_key_and_the_line() {
    let (line, key, shown) = parse_error("# header\nkind = \"ring\"\nnodes = 10\nnodez = 3\n");
    assert_eq!((line, key.as_deref()), (4, Some("nodez")));
    assert!(
        shown.contains("topologies/x.toml, line 4") && shown.contains("nodez"),
        "{shown}"
    );

    let (line, key, _) = parse_error("kind = \"ring\"\n\n\nnodes = \"ten\"\n");
    assert_eq!((line, key.as_deref()), (4, Some("nodes")));

    let (line, key, _) = parse_error("kind = \"ring\"\nnodes = 10\nnodes = 11\n");
    assert_eq!((line, key.as_deref()), (3, Some("nodes")));
    let (key, shown) = (
        parse_error("# c\nnodes = 10\n").1,
        parse_error("nodes = 10\n").2,
    );
    assert_eq!(key.as_deref(), Some("kind"));
    assert!(shown.contains("missing field `kind`"), "{shown}");

    let (line, key, _) = parse_error("# a\n# b\nkind = \"rings\"\n");
    assert_eq!((line, key.as_deref()), (3, Some("kind")));

    let (line, key, _) = parse_error("kind = \"edges\"\nedges = [\n  [0, 1],\n  [1, -2],\n]\n");
    assert_eq!((line, key.as_deref()), (4, Some("edges")));

    // Semantic checks are located too.
    let (line, key, shown) = parse_error("kind = \"ring\"\nnodes = 10\n\ndegree = 4\n");
    assert_eq!((line, key.as_deref()), (4, Some("degree")));
    assert!(shown.contains("does not apply"), "{shown}");
    let (line, key, _) = parse_error("kind = \"erdos-renyi\"\nnodes = 10\np = 1.5\n");
    assert_eq!((line, key.as_deref()), (3, Some("p")));
    let (line, key, _) = parse_error("kind = \"small-world\"\n\nk = 2\n");
    assert_eq!((line, key.as_deref()), (1, Some("beta")));
    let (line, key, _) = parse_error("kind = \"ring\"\n\nnodes = 1\n");
    assert_eq!((line, key.as_deref()), (3, Some("nodes")));
}

#[test]
fn embedded_topology_tables_are_located_too() {
    #[derive(Debug, serde::Deserialize)]
    #[serde(deny_unknown_fields)]
    #[allow(dead_code)]
    struct Scenario {
        users: usize,
        topology: TopologySpec,
    }
    let text = "users = 10\n\n[topology]\nkind = \"ring\"\nnodes = -3\n";
    let err = toml::from_str::<Scenario>(text).unwrap_err();
    assert_eq!(
        toml_error_location(text, &err),
        (5, Some("topology.nodes".into()))
    );
    assert_eq!(key_line(text, &["topology", "kind"]), Some(4));
    assert_eq!(key_line(text, &["topology", "degree"]), None);
}

#[test]
fn edge_lists_are_validated() {
    let err = |text: &str| build(text, None, 0).unwrap_err().to_string();
    let e = err("kind = \"edges\"\nedges = [[0, 1], [1, 1]]");
    assert!(e.contains("edges[1]") && e.contains("self-loop"), "{e}");
    let e = err("kind = \"edges\"\nedges = [[0, 1], [1, 2], [1, 0]]");
    assert!(
        e.contains("edges[2]") && e.contains("duplicate of edges[0]"),
        "{e}"
    );
    let e = err("kind = \"edges\"\nnodes = 3\nedges = [[0, 1], [1, 3]]");
    assert!(e.contains("edges[1]") && e.contains("out of range"), "{e}");
    for w in ["0.0", "-1.0", "nan", "inf"] {
        let e = err(&format!("kind = \"edges\"\nedges = [[0, 1, {w}]]"));
        assert!(e.contains("edges[0]") && e.contains("weight"), "{w}: {e}");
    }
    // Node count: inferred from the largest endpoint, or the caller's default.
    assert_eq!(
        build("kind = \"edges\"\nedges = [[0, 4]]", None, 0)
            .unwrap()
            .n(),
        5
    );
    assert_eq!(
        build("kind = \"edges\"\nedges = [[0, 4]]", Some(9), 0)
            .unwrap()
            .n(),
        9
    );
    // Unweighted entries of a weighted list weigh 1.
    let t = build("kind = \"edges\"\nedges = [[0, 1], [0, 2, 3.0]]", None, 0).unwrap();
    assert_eq!(
        t.transition_row(0).collect::<Vec<_>>(),
        vec![(1, 0.25), (2, 0.75)]
    );
}

#[test]
fn node_counts_are_resolved_and_checked() {
    assert!(matches!(
        build("kind = \"ring\"", None, 0),
        Err(TopologyError::Parameter { key, .. }) if key == "nodes"
    ));
    assert!(matches!(
        build("kind = \"complete\"", Some(1), 0),
        Err(TopologyError::TooFewNodes { nodes: 1 })
    ));
    assert!(build("kind = \"ring\"", Some(2), 0).is_err());
    let e = build("kind = \"torus\"\nrows = 4\ncols = 5", Some(21), 0)
        .unwrap_err()
        .to_string();
    assert!(e.contains("4×5") && e.contains("default"), "{e}");
    // An explicit `nodes` wins over the caller's default.
    assert_eq!(
        build("kind = \"ring\"\nnodes = 12", Some(100), 0)
            .unwrap()
            .n(),
        12
    );
    assert!(build("kind = \"small-world\"\nk = 5\nbeta = 0.1", Some(10), 0).is_err());
}

fn temp_dir(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("dpwalk-topology-{}-{name}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

#[test]
fn edge_files_load_relative_to_the_spec_and_errors_name_lines() {
    let dir = temp_dir("file");
    std::fs::write(
        dir.join("g.edges"),
        "# a weighted triangle\n0 1 2.0\n1,2\n\n2\t0  # tab\n",
    )
    .unwrap();
    std::fs::write(dir.join("g.toml"), "kind = \"file\"\npath = \"g.edges\"\n").unwrap();
    let t = Topology::load(&dir.join("g.toml"), None, 0).unwrap();
    assert_eq!(t.n(), 3);
    assert_eq!(
        t.transition_row(1).collect::<Vec<_>>(),
        vec![(0, 2.0 / 3.0), (2, 1.0 / 3.0)]
    );

    std::fs::write(dir.join("bad.edges"), "0 1\n1 2\n\n2 x\n").unwrap();
    std::fs::write(
        dir.join("bad.toml"),
        "kind = \"file\"\npath = \"bad.edges\"\n",
    )
    .unwrap();
    let e = Topology::load(&dir.join("bad.toml"), None, 0)
        .unwrap_err()
        .to_string();
    assert!(e.contains("bad.edges, line 4") && e.contains("`x`"), "{e}");
    std::fs::write(dir.join("dup.edges"), "0 1\n1 2\n\n1 0\n").unwrap();
    std::fs::write(
        dir.join("dup.toml"),
        "kind = \"file\"\npath = \"dup.edges\"\n",
    )
    .unwrap();
    let e = Topology::load(&dir.join("dup.toml"), None, 0)
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("dup.edges, line 4") && e.contains("duplicate of") && e.contains("line 1"),
        "{e}"
    );
    let e = Topology::load(&dir.join("missing.toml"), None, 0).unwrap_err();
    assert!(matches!(e, TopologyError::Io { .. }));
    std::fs::remove_dir_all(&dir).unwrap();
}

// ---------------------------------------------------------------- checks

#[test]
fn disconnected_graph_error_lists_components() {
    let t = build(
        "kind = \"edges\"\nnodes = 7\nedges = [[0, 1], [5, 6], [1, 2], [3, 4]]",
        None,
        0,
    )
    .unwrap();
    assert_eq!(t.components(), vec![vec![0, 1, 2], vec![3, 4], vec![5, 6]]);
    match t.require_walkable() {
        Err(e @ TopologyError::Disconnected { .. }) => {
            let shown = e.to_string();
            let TopologyError::Disconnected { count, sizes, .. } = e else {
                unreachable!()
            };
            assert_eq!(count, 3);
            assert_eq!(sizes, vec![3, 2, 2]);
            assert!(shown.contains("{0, 1, 2} (3 nodes)"), "{shown}");
            assert!(
                shown.contains("{3, 4} (2 nodes)") && shown.contains("{5, 6} (2 nodes)"),
                "{shown}"
            );
        }
        other => panic!("expected Disconnected, got {other:?}"),
    }
    let s = t.summary();
    assert!(!s.connected);
    assert_eq!(s.components, 3);
    assert_eq!(s.spectral_gap, SpectralGap::Disconnected { gap: 0.0 });
    assert!(matches!(
        Topology::Complete { n: 1 }.require_walkable(),
        Err(TopologyError::TooFewNodes { nodes: 1 })
    ));
}

#[test]
fn disconnection_listing_is_truncated() {
    let edges: Vec<(usize, usize)> = (0..10)
        .map(|c| (2 * c, 2 * c + 1))
        .chain((20..29).map(|i| (i, i + 1)))
        .collect();
    let t = Topology::Graph(Graph::unweighted(30, &edges).unwrap());
    let e = t.require_walkable().unwrap_err().to_string();
    assert!(
        e.starts_with("the graph is disconnected: 11 components"),
        "{e}"
    );
    assert!(
        e.contains("{20, 21, 22, 23, 24, 25, 26, 27, …} (10 nodes)"),
        "{e}"
    );
    assert!(e.contains("and 6 more"), "{e}");
}

// ---------------------------------------------------------------- spectrum

#[test]
fn ring_spectrum_matches_closed_forms() {
    use std::f64::consts::PI;
    for n in [9usize, 25, 101] {
        let s = build("kind = \"ring\"", Some(n), 0).unwrap().summary();
        let SpectralGap::Dense {
            gap,
            lambda_2,
            lambda_min,
        } = s.spectral_gap
        else {
            panic!("expected a dense gap, got {:?}", s.spectral_gap)
        };
        let nf = n as f64;
        // Relaxation gap 1 − λ₂ = 1 − cos(2π/n); the absolute gap is set by λₙ = −cos(π/n).
        assert!(
            (1.0 - lambda_2 - (1.0 - (2.0 * PI / nf).cos())).abs() < 1e-10,
            "n = {n}"
        );
        assert!((lambda_min + (PI / nf).cos()).abs() < 1e-10, "n = {n}");
        assert!((gap - (1.0 - (PI / nf).cos())).abs() < 1e-10, "n = {n}");
    }
    // Even rings are bipartite: λₙ = −1, gap 0.
    let s = build("kind = \"ring\"", Some(10), 0).unwrap().summary();
    assert!(s.spectral_gap.gap().unwrap() < 1e-12);
    let SpectralGap::Dense { lambda_min, .. } = s.spectral_gap else {
        panic!()
    };
    assert!((lambda_min + 1.0).abs() < 1e-12);
}

#[test]
fn complete_gap_is_the_closed_form_and_agrees_with_the_dense_one() {
    let n = 12;
    let s = Topology::Complete { n }.summary();
    let expected = 1.0 - 1.0 / (n - 1) as f64;
    assert_eq!(s.spectral_gap.gap(), Some(expected));
    assert!(matches!(s.spectral_gap, SpectralGap::ClosedForm { .. }));
    // The same graph as an explicit, uniformly weighted edge list goes through the dense path.
    let edges: Vec<(usize, usize, f64)> = (0..n)
        .flat_map(|u| (u + 1..n).map(move |v| (u, v, 2.5)))
        .collect();
    let explicit = Topology::Graph(Graph::weighted(n, &edges).unwrap()).summary();
    assert!(matches!(explicit.spectral_gap, SpectralGap::Dense { .. }));
    assert!((explicit.spectral_gap.gap().unwrap() - expected).abs() < 1e-12);
    assert_eq!(
        (explicit.degree_min, explicit.degree_max, explicit.edges),
        (11, 11, 66)
    );
}

#[test]
fn weighted_spectrum_matches_a_hand_computed_case() {
    // Path 0 – 1 – 2 with weights 1 and 3: P = [[0,1,0],[1/4,0,3/4],[0,1,0]], bipartite,
    // eigenvalues 1, 0, −1.
    let g = Graph::weighted(3, &[(0, 1, 1.0), (1, 2, 3.0)]).unwrap();
    let (l2, lmin) = dense_extremes(&g);
    assert!(
        l2.abs() < 1e-12 && (lmin + 1.0).abs() < 1e-12,
        "{l2} {lmin}"
    );
    // Triangle with weights 1, 1, 2 on edges 01, 12, 20: not bipartite, gap strictly positive.
    let g = Graph::weighted(3, &[(0, 1, 1.0), (1, 2, 1.0), (2, 0, 2.0)]).unwrap();
    let (l2, lmin) = dense_extremes(&g);
    // trace P = 0 and det P = det W / det D = 4/18, so λ₂ + λ₃ = −1 and λ₂λ₃ = 2/9:
    // λ₂ = −1/3, λ₃ = −2/3.
    assert!(
        (l2 + 1.0 / 3.0).abs() < 1e-12 && (lmin + 2.0 / 3.0).abs() < 1e-12,
        "{l2} {lmin}"
    );
}

#[test]
fn lanczos_agrees_with_dense_and_bounds_the_gap_from_above() {
    let g = generate::random_regular(250, 4, 11).unwrap();
    let (l2, lmin) = dense_extremes(&g);
    let (e2, emin, steps) = lanczos_extremes(&g, 120);
    assert_eq!(steps, 120); // fewer steps than nodes: a real Krylov estimate
    assert!(
        (l2 - e2).abs() < 1e-6 && (lmin - emin).abs() < 1e-6,
        "{l2} {e2} {lmin} {emin}"
    );
    // Weighted, through the same operator.
    let edges: Vec<(usize, usize, f64)> = (0..g.n())
        .flat_map(|u| {
            g.neighbors(u)
                .iter()
                .filter(move |&&v| v > u)
                .map(move |&v| (u, v, 1.0 + ((u * 7 + v) % 5) as f64))
        })
        .collect();
    let w = Graph::weighted(g.n(), &edges).unwrap();
    let (l2, lmin) = dense_extremes(&w);
    let (e2, emin, _) = lanczos_extremes(&w, 120);
    assert!(
        (l2 - e2).abs() < 1e-6 && (lmin - emin).abs() < 1e-6,
        "{l2} {e2} {lmin} {emin}"
    );

    // Above the dense limit the summary is an estimate, labelled, and never below the truth.
    let n = DENSE_MAX_NODES + 1 + (DENSE_MAX_NODES % 2); // odd: not bipartite
    let s = build("kind = \"ring\"", Some(n), 0).unwrap().summary();
    let SpectralGap::LanczosEstimate { gap, .. } = s.spectral_gap else {
        panic!("expected an estimate, got {:?}", s.spectral_gap)
    };
    let truth = 1.0 - (std::f64::consts::PI / n as f64).cos();
    assert!(gap >= truth - 1e-9 && gap < 1e-3, "{gap} vs {truth}");
}

#[test]
fn summary_serializes_with_its_method() {
    let s = build("kind = \"torus\"\nrows = 3\ncols = 3", None, 0)
        .unwrap()
        .summary();
    assert_eq!(
        (s.nodes, s.edges, s.degree_min, s.degree_max),
        (9, 18, 4, 4)
    );
    assert_eq!(s.degree_mean, 4.0);
    assert!(s.connected);
    let json = serde_json::to_value(&s).unwrap();
    assert_eq!(json["spectral_gap"]["method"], "dense");
    assert_eq!(json["kind"], "graph");
    assert!(json["spectral_gap"]["gap"].as_f64().unwrap() > 0.0);
}

// ---------------------------------------------------------------- shipped files

#[test]
fn every_shipped_topology_parses_builds_and_is_walkable() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../topologies");
    let mut names: Vec<String> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "toml"))
        .map(|p| {
            let t = Topology::load(&p, None, 42).unwrap_or_else(|e| panic!("{}: {e}", p.display()));
            t.require_walkable()
                .unwrap_or_else(|e| panic!("{}: {e}", p.display()));
            p.file_stem().unwrap().to_string_lossy().into_owned()
        })
        .collect();
    names.sort();
    for expected in [
        "complete-100",
        "edges-example",
        "erdos-renyi-100",
        "random-regular-100-d4",
        "ring-100",
        "small-world-100",
        "star-100",
        "torus-10x10",
    ] {
        assert!(
            names.iter().any(|n| n == expected),
            "{expected} missing from {names:?}"
        );
    }
}
