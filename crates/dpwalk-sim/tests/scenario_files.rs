//! The repository's scenario files (`sim/*.toml`, `sim/compare/*.toml`, `sim/reproduce/*.toml`) read the same way as
//! the day they were pinned: each parses, checks, serializes (the resolved `scenario.toml` of a
//! run directory) to the same text and gives the same validated points. A fingerprint of both is
//! pinned per file, so a change in how scenarios are read that changes any of it fails here.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use dpwalk_sim::scenario::load;
use std::path::Path;

/// FNV-1a, 64 bits: a stable fingerprint without a hashing dependency.
fn fnv(text: &str) -> u64 {
    text.bytes().fold(0xcbf2_9ce4_8422_2325, |h, b| {
        (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
    })
}

/// The serialized scenario and its points, as text.
fn fingerprint(path: &Path) -> (u64, u64) {
    let loaded = load(path, &[]).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let s = loaded.scenario();
    s.check()
        .unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let text = toml::to_string(s).unwrap();
    let points: Vec<String> = s
        .points()
        .unwrap()
        .iter()
        .map(|p| {
            // A kind's own horizon (`[by-kind.<kind>] steps`) is pinned where one is given.
            let horizon = if p.steps == s.steps {
                String::new()
            } else {
                format!(" steps {}", p.steps)
            };
            format!(
                "{} {:?} {:?} {:?} {:?} {:?}{horizon}",
                p.topology, p.name, p.method, p.gamma, p.lambda, p.lr
            )
        })
        .collect();
    (fnv(&text), fnv(&points.join("\n")))
}

#[test]
fn every_scenario_file_reads_as_pinned() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let pinned: &[(&str, u64, u64)] = &[
        (
            "sim/audit-pp-small.toml",
            0xc321920f683ef1,
            0x44fbae3c76b9fe73,
        ),
        (
            "sim/audit-record.toml",
            0x1be58c5f31eabd6f,
            0x7db002b2a563c59b,
        ),
        (
            "sim/lasso-paper.toml",
            0xbfe2a60cc0b8237f,
            0x8e34a305a11f99a4,
        ),
        (
            "sim/logreg-adult.toml",
            0x67ea99554629a454,
            0x6221fa08c2ab5fea,
        ),
        (
            "sim/mnist-multinomial.toml",
            0x746c2840e9cb9dc6,
            0x3f40bd60fdd3d461,
        ),
        (
            "sim/quickstart.toml",
            0x65a41731a61df01b,
            0xe3eb5a582b37a9e4,
        ),
        (
            "sim/swarm-dpsgd.toml",
            0xe26a4fbeb0d79796,
            0x49686bc36b31dd6e,
        ),
        (
            "sim/swarm-network.toml",
            0x1201d9bd083fe220,
            0x49686bc36b31dd6e,
        ),
        (
            "sim/swarm-record.toml",
            0xf9a26538df1be579,
            0x91c07353af2dc638,
        ),
        ("sim/swarm.toml", 0x9f285acd5b1fb02d, 0xea1791dfe21ae7ec),
        (
            "sim/compare/adult-record.toml",
            0x61d347992ef28c7,
            0xc913383db695c569,
        ),
        (
            "sim/compare/adult.toml",
            0x7599290c141469d1,
            0xeb3e8efefd1b5cbf,
        ),
        (
            "sim/compare/lasso.toml",
            0x140ee81d4999847b,
            0x960133b6fe279426,
        ),
        (
            "sim/compare/mnist-record.toml",
            0xa73bc6c60859b4ab,
            0xccf9c9f182a6a213,
        ),
        (
            "sim/compare/mnist.toml",
            0xeec23128696334fb,
            0x4dd06fdfa117fd0b,
        ),
        (
            "sim/compare/views-adult-record.toml",
            0xa8acb7ff5bf117c7,
            0x1e751e5386408034,
        ),
        (
            "sim/compare/views-mnist-record.toml",
            0xfe6363088e39cac3,
            0x374d95eca756eace,
        ),
        (
            "sim/reproduce/cbb-fig1.toml",
            0x437f31c8ad4f6b24,
            0x54d4ffdd6e1ee6c8,
        ),
        (
            "sim/reproduce/hg-fig1.toml",
            0x30da69c12309c3c5,
            0xd81fa6ce2a95278,
        ),
        (
            "sim/reproduce/hg-fig2.toml",
            0xc13179a7b44a4677,
            0x85d5487ea8116b16,
        ),
        (
            "sim/reproduce/rk-fig2.toml",
            0xb38dbab79ef4bc30,
            0x1cb6107fd446eeef,
        ),
    ];
    let mut seen = Vec::new();
    for dir in ["sim", "sim/compare", "sim/reproduce"] {
        let mut files: Vec<_> = std::fs::read_dir(root.join(dir))
            .unwrap()
            .map(|e| e.unwrap().path())
            .filter(|p| p.extension().is_some_and(|x| x == "toml"))
            .collect();
        files.sort();
        for path in files {
            let name = format!("{dir}/{}", path.file_name().unwrap().to_string_lossy());
            let (text, points) = fingerprint(&path);
            seen.push((name, text, points));
        }
    }
    let got: Vec<(&str, u64, u64)> = seen.iter().map(|(n, t, p)| (n.as_str(), *t, *p)).collect();
    assert_eq!(got, pinned);
}
