//! The module graph of every crate has no circle: within a crate, if top-level module `a` uses
//! `crate::b`, then `b` does not (directly or through others) use `crate::a`. A circle makes two
//! rooms one (neither can be read, tested or moved without the other), so it fails here rather
//! than in a review. Test code (`tests.rs`, `#[cfg(test)]` modules) and comments are not counted.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// Every `.rs` file under `dir`.
fn sources(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            sources(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// Top-level module → the top-level modules it names as `crate::m`.
fn graph(src: &Path) -> BTreeMap<String, BTreeSet<String>> {
    let mut files = Vec::new();
    sources(src, &mut files);
    let mut graph: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for file in files {
        let rel = file.strip_prefix(src).unwrap();
        let parts: Vec<String> = rel
            .with_extension("")
            .iter()
            .map(|p| p.to_string_lossy().into_owned())
            .collect();
        let module = parts[0].clone();
        if ["lib", "main"].contains(&module.as_str()) || parts.iter().any(|p| p == "tests") {
            continue;
        }
        let text = std::fs::read_to_string(&file).unwrap();
        let code = text.split("#[cfg(test)]").next().unwrap_or("");
        let uses = graph.entry(module.clone()).or_default();
        for line in code.lines().filter(|l| !l.trim_start().starts_with("//")) {
            for (i, _) in line.match_indices("crate::") {
                let after = &line[i + "crate::".len()..];
                let name: String = after
                    .chars()
                    .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
                    .collect();
                // `crate::` preceded by a name character is part of another path.
                let preceded = line[..i].chars().last();
                if name != module
                    && !name.is_empty()
                    && !preceded.is_some_and(|c| c.is_ascii_alphanumeric() || c == '_')
                {
                    uses.insert(name);
                }
            }
        }
    }
    graph
}

/// A circle through `start`, if there is one: the modules on it, `start` first.
fn circle_through(graph: &BTreeMap<String, BTreeSet<String>>, start: &str) -> Option<Vec<String>> {
    let mut stack = vec![(start.to_string(), vec![start.to_string()])];
    let mut seen = BTreeSet::new();
    while let Some((at, path)) = stack.pop() {
        for next in graph.get(&at).into_iter().flatten() {
            if next == start {
                return Some(path);
            }
            if graph.contains_key(next) && seen.insert(next.clone()) {
                let mut longer = path.clone();
                longer.push(next.clone());
                stack.push((next.clone(), longer));
            }
        }
    }
    None
}

#[test]
fn no_crate_has_a_module_circle() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut crates = vec![root.join("src")];
    for entry in std::fs::read_dir(root.join("crates")).unwrap() {
        let src = entry.unwrap().path().join("src");
        if src.is_dir() {
            crates.push(src);
        }
    }
    let mut circles = Vec::new();
    let mut modules = 0;
    for src in &crates {
        let graph = graph(src);
        modules += graph.len();
        for module in graph.keys() {
            if let Some(circle) = circle_through(&graph, module) {
                circles.push(format!("{}: {}", src.display(), circle.join(" -> ")));
            }
        }
    }
    assert!(
        modules > 40,
        "only {modules} modules found: the scan is broken"
    );
    assert!(
        circles.is_empty(),
        "module circles:\n{}",
        circles.join("\n")
    );
}

#[test]
fn a_circle_is_found() {
    // The check itself: a two-module circle and a three-module one are seen, a chain is not.
    let g = |edges: &[(&str, &str)]| {
        let mut graph: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
        for &(a, b) in edges {
            graph.entry(a.into()).or_default().insert(b.into());
            graph.entry(b.into()).or_default();
        }
        graph
    };
    assert!(circle_through(&g(&[("a", "b"), ("b", "a")]), "a").is_some());
    assert!(circle_through(&g(&[("a", "b"), ("b", "c"), ("c", "a")]), "b").is_some());
    assert!(circle_through(&g(&[("a", "b"), ("b", "c")]), "a").is_none());
}
