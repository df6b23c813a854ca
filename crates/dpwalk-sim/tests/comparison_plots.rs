//! The comparison's figures beyond privacy–utility (seed-baselines spec §6.4, plots 4–6), from a
//! small sweep: each is written into the run directory with the data it draws, and that data has
//! the properties the figure claims (privacy spent grows with the rounds and ends at the run's
//! local figure, within the budget; the views panel draws a view only where a figure is proved).

// Test helpers abort the test on a failed set-up, as the tests themselves do.
#![allow(clippy::expect_used, clippy::unwrap_used)]

#[allow(dead_code)] // the shared helpers; this file needs `scenario` only
mod common;

use common::{LASSO, scenario};
use dpwalk_sim::output::{Summary, write_all};
use dpwalk_sim::simulate::{prepare, simulate};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// The shared Lasso (squared loss + ℓ₁, 3-regular graph of 10 users) with every kind whose proof
/// covers it, two budgets, two repetitions, 100 updates per user evaluated every 10.
fn sweep() -> String {
    format!(
        "{LASSO}clip-l1 = 1.0\n[privacy]\ndelta = 1e-6\n[sweep]\n\
         kind = [\"admm\", \"dp-sgd\", \"fed-sgd\", \"dp-iadmm\", \"ipadmm\"]\n\
         epsilon = [3.0, 30.0]\n"
    )
    .replace(
        "steps = 20000\neval-every = 20000",
        "steps = 1000\neval-every = 100\nrepetitions = 2",
    )
    .replace("clip = 1e6", "clip = 1.0")
    .replace("lr = 0.5", "lr = 0.1")
}

/// Runs `text` into a fresh directory named after `tag`; returns it and the summary.
fn run(text: &str, tag: &str) -> (PathBuf, Summary) {
    let loaded = scenario(text, &[]);
    let prepared = prepare(&loaded).expect("prepare");
    let results = simulate(&loaded, &prepared, true).expect("simulate");
    let dir = std::env::temp_dir().join(format!("dpwalk-cmp-{tag}-{}", std::process::id()));
    let summary = write_all(&dir, &loaded, &prepared, &results).expect("outputs");
    (dir, summary)
}

/// A figure's data file: `(x, y)` per series, in file order.
fn series(path: &Path) -> BTreeMap<String, Vec<(f64, f64)>> {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{path:?}: {e}"));
    // The caption first (every figure of the comparison has one), then the header.
    let mut lines = text.lines();
    assert!(
        lines.next().is_some_and(|l| l.starts_with("# ")),
        "{path:?}: the caption line"
    );
    assert_eq!(lines.next(), Some("series,x,y,spread"), "{path:?}");
    let mut out: BTreeMap<String, Vec<(f64, f64)>> = BTreeMap::new();
    for line in lines {
        // The label is quoted and may hold commas: the numbers are the last three fields.
        let mut fields = line.rsplitn(4, ',');
        let _spread = fields.next().unwrap();
        let y: f64 = fields.next().unwrap().parse().unwrap();
        let x: f64 = fields.next().unwrap().parse().unwrap();
        let label = fields.next().unwrap().trim_matches('"').to_string();
        out.entry(label).or_default().push((x, y));
    }
    out
}

/// Removes the zero model's flat reference line from a figure's `curves`, checking it is at `gap`.
fn take_zero_model_line(curves: &mut BTreeMap<String, Vec<(f64, f64)>>, gap: f64) {
    let key = curves
        .keys()
        .find(|l| l.starts_with("zero model: "))
        .expect("the zero model's line")
        .clone();
    let line = curves.remove(&key).unwrap();
    assert!(line.iter().all(|&(_, y)| y == gap), "{line:?}");
}

fn assert_figure(dir: &Path, stem: &str) {
    for ext in ["png", "svg", "csv"] {
        let file = dir.join(format!("{stem}.{ext}"));
        assert!(file.exists(), "{file:?} missing");
    }
}

#[test]
fn privacy_spent_grows_with_the_rounds_up_to_each_points_figure() {
    let (dir, summary) = run(&sweep(), "spent");
    for budget in [3.0, 30.0] {
        let stem = format!("privacy_rounds_eps-{budget}");
        assert_figure(&dir, &stem);
        let curves = series(&dir.join(format!("{stem}.csv")));
        let points: Vec<_> = summary
            .points
            .iter()
            .filter(|p| p.privacy.accounting.budget.as_ref().unwrap().epsilon == budget)
            .collect();
        // One curve per point, and the budget's reference line.
        assert_eq!(curves.len(), points.len() + 1, "{:?}", curves.keys());
        let line = &curves[&format!("budget ε = {budget} (local view)")];
        assert!(line.iter().all(|&(_, y)| y == budget));
        for (label, curve) in curves.iter().filter(|(l, _)| !l.starts_with("budget")) {
            assert_eq!(curve.len(), 10, "{label}: one point per evaluation");
            for pair in curve.windows(2) {
                assert!(pair[1].0 > pair[0].0, "{label}: rounds increase");
                assert!(pair[1].1 >= pair[0].1, "{label}: epsilon never decreases");
            }
            let last = curve.last().unwrap();
            assert_eq!(last.0, 100.0, "{label}: 100 updates per user");
            assert!(
                last.1 <= budget * (1.0 + 1e-9),
                "{label}: {} > {budget}",
                last.1
            );
            // The last point is the run's local figure of summary.json, computed alike.
            let kind = label.split_whitespace().next().unwrap();
            let point = points.iter().find(|p| p.algorithm == kind).unwrap();
            let local = point.privacy.accounting.local.as_ref().unwrap();
            let expected = local.figure.epsilon.unwrap();
            assert!(
                (last.1 - expected).abs() <= 1e-12 * expected,
                "{label}: {} against summary's {expected}",
                last.1
            );
        }
    }
    // The computing-time figure: seconds accumulate along each curve; the zero model's gap is
    // the flat reference line.
    let zero = summary.zero_model.relative_gap;
    for budget in [3.0, 30.0] {
        let stem = format!("convergence_compute_eps-{budget}");
        assert_figure(&dir, &stem);
        let mut curves = series(&dir.join(format!("{stem}.csv")));
        assert_eq!(curves.len(), 6);
        take_zero_model_line(&mut curves, zero);
        for (label, curve) in &curves {
            assert_eq!(curve.len(), 10, "{label}");
            assert!(curve.iter().all(|&(x, y)| x >= 0.0 && y.is_finite()));
            assert!(curve.windows(2).all(|p| p[1].0 >= p[0].0), "{label}");
        }
    }
    // The views panel: dpwalk's three kinds in the local view, the DP-SGD walk in the network
    // view too (its path-hidden figure, N3 on this 10-node graph), federated DP-SGD in the
    // central view too, and the caption says why ADMM has no network figure.
    assert_figure(&dir, "privacy_views");
    let mut views = series(&dir.join("privacy_views.csv"));
    // The zero model's gap is the flat reference line.
    take_zero_model_line(&mut views, zero);
    let kinds: Vec<&str> = views
        .keys()
        .map(|l| l.split_whitespace().next().unwrap())
        .collect();
    assert_eq!(
        kinds,
        ["admm", "dp-sgd", "dp-sgd", "fed-sgd", "fed-sgd"],
        "{:?}",
        views.keys()
    );
    let others: Vec<&String> = views
        .keys()
        .filter(|l| !l.ends_with("— local view"))
        .collect();
    assert_eq!(others.len(), 2, "{others:?}");
    assert!(
        others[0].starts_with("dp-sgd") && others[0].ends_with("— network (another user) view"),
        "{others:?}"
    );
    assert!(
        others[1].starts_with("fed-sgd")
            && others[1].ends_with("— central (released models only) view"),
        "{others:?}"
    );
    assert!(views.values().all(|c| c.len() == 2));
    let svg = std::fs::read_to_string(dir.join("privacy_views.svg")).unwrap();
    assert!(svg.contains("ADMM walk: no network figure"));
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn the_views_panel_draws_the_central_view_where_it_is_proved() {
    let text = sweep()
        .replace(
            "eta-schedule = \"constant\"",
            "eta-schedule = \"constant\"\nmode = \"centralized\"",
        )
        .replace(
            "kind = [\"admm\", \"dp-sgd\", \"fed-sgd\", \"dp-iadmm\", \"ipadmm\"]",
            "kind = [\"admm\"]",
        )
        .replace(
            "steps = 1000\neval-every = 100",
            "steps = 20\neval-every = 10",
        );
    let (dir, summary) = run(&text, "views");
    assert_figure(&dir, "privacy_views");
    let views = series(&dir.join("privacy_views.csv"));
    let view = |name: &str| {
        views
            .iter()
            .find(|(l, _)| l.contains(name))
            .map(|(_, c)| c.clone())
            .unwrap_or_else(|| panic!("no {name} series in {:?}", views.keys()))
    };
    let (local, central) = (view("local view"), view("central"));
    assert!(!views.keys().any(|l| l.contains("network")));
    // Each point appears once per view, at its summary figures; the final model alone is the
    // weaker adversary, so its ε is the smaller at the same utility.
    for p in &summary.points {
        let a = &p.privacy.accounting;
        let (eps_local, eps_central) = (
            a.local.as_ref().unwrap().figure.epsilon.unwrap(),
            a.central.unwrap().epsilon.unwrap(),
        );
        assert!(eps_central < eps_local);
        let gap = p.final_mean.relative_gap;
        assert!(local.contains(&(eps_local, gap)), "{local:?}");
        assert!(central.contains(&(eps_central, gap)), "{central:?}");
    }
    std::fs::remove_dir_all(&dir).ok();
}
