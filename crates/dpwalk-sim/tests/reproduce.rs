//! The reproduction panels (seed-baselines spec §6.4 item 7): each paper's ε becomes the noise
//! its own accounting gives (checked against the formulas by hand), the common total beside each
//! point is the accountant's for the noise run (what `summary.json` reports, recomputed here from
//! `dpwalk_privacy` directly), and a tiny panel renders with one CSV row per point.

// Test helpers abort the test on a failed set-up, as the tests themselves do.
#![allow(clippy::expect_used, clippy::unwrap_used)]

#[allow(dead_code)] // the shared helpers; this file needs `scenario` only
mod common;

use common::{LASSO, scenario};
use dpwalk_privacy::baseline::Baseline;
use dpwalk_privacy::rdp::{Conversion, Orders};
use dpwalk_sim::output::write_all;
use dpwalk_sim::simulate::{prepare, simulate};
use std::path::PathBuf;

/// The shared Lasso (10 users, 3-regular graph) for 5 rounds, evaluated every round, with
/// `algorithm` appended to its `[algorithm]` section and `tables` after it.
fn panel(algorithm: &str, tables: &str) -> String {
    format!("{LASSO}{algorithm}{tables}").replace(
        "steps = 20000\neval-every = 20000",
        "steps = 50\neval-every = 10",
    )
}

/// The orders every figure of the simulator uses: dpwalk's default grid and `[output] orders`.
fn orders() -> Orders {
    let mut o = Orders::default_grid().as_slice().to_vec();
    o.extend([1.5, 2.0, 4.0, 8.0, 16.0, 32.0, 64.0]);
    o.sort_by(f64::total_cmp);
    o.dedup();
    Orders::new(&o).unwrap()
}

/// Runs a panel into a fresh directory; returns it, `summary.json` as JSON and the knobs run.
fn run(text: &str, tag: &str) -> (PathBuf, serde_json::Value, Vec<f64>) {
    let loaded = scenario(text, &[]);
    let prepared = prepare(&loaded).expect("prepare");
    let results = simulate(&loaded, &prepared, true).expect("simulate");
    let dir = std::env::temp_dir().join(format!("dpwalk-repro-{tag}-{}", std::process::id()));
    write_all(&dir, &loaded, &prepared, &results).expect("outputs");
    let summary = std::fs::read_to_string(dir.join("summary.json")).unwrap();
    let knobs = results.iter().map(|r| r.point.method.knob()).collect();
    (dir, serde_json::from_str(&summary).unwrap(), knobs)
}

/// The panel's CSV rows after its caption and header: `(x, common total)` in file order.
fn rows(dir: &std::path::Path) -> Vec<(f64, f64)> {
    for ext in ["png", "svg", "csv"] {
        assert!(dir.join(format!("reproduce.{ext}")).exists(), "{ext}");
    }
    let text = std::fs::read_to_string(dir.join("reproduce.csv")).unwrap();
    let mut lines = text.lines();
    assert!(lines.next().unwrap().starts_with("# beside each point"));
    assert_eq!(lines.next(), Some("series,x,y,spread,common_local_epsilon"));
    // The reference lines come last, without a total: the zero model's at least.
    let (references, points): (Vec<&str>, Vec<&str>) = lines.partition(|l| {
        [
            "\"zero model: ",
            "\"majority class: ",
            "\"non-private optimum: ",
        ]
        .iter()
        .any(|r| l.starts_with(r))
    });
    assert!(
        references.iter().any(|l| l.starts_with("\"zero model: ")),
        "{text}"
    );
    assert!(
        references.iter().all(|l| l.ends_with(',')),
        "{references:?}"
    );
    points
        .into_iter()
        .map(|line| {
            // The label is quoted and may hold commas: the numbers are the last four fields.
            let f: Vec<&str> = line.rsplitn(5, ',').collect();
            (f[3].parse().unwrap(), f[0].parse().unwrap())
        })
        .collect()
}

/// The accountant's local ε at `delta` of 5 rounds of `baseline` at its knob `knob`, computed
/// here from `dpwalk_privacy` alone.
fn common_total(baseline: &Baseline, knob: f64, delta: f64) -> f64 {
    baseline
        .spent(&orders(), knob, 5)
        .unwrap()
        .to_dp(delta, Conversion::Tight)
        .unwrap()
        .epsilon()
}

fn local_epsilon(point: &serde_json::Value) -> f64 {
    point["privacy"]["local"]["epsilon"].as_f64().unwrap()
}

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() <= 1e-12 * b.abs()
}

#[test]
fn ryu_kim_runs_b_equal_to_delta1_over_the_per_iteration_epsilon() {
    let text = panel(
        "kind = \"dp-iadmm\"\nclip-l1 = 1.0\n",
        "[privacy]\ndelta = 1e-6\n[reproduce]\npaper = \"rk\"\nfigure = \"test\"\n\
         epsilon = [0.05, 0.5]\nmetric = \"train-objective\"\n",
    );
    let (dir, summary, knobs) = run(&text, "rk");
    // User level, 10 users: Δ₁ = 2·G₁/n = 2·1/10 = 0.2, so b = 0.2/ε̄.
    assert_eq!(knobs.len(), 2);
    assert!(close(knobs[0], 4.0), "{}", knobs[0]);
    assert!(close(knobs[1], 0.4), "{}", knobs[1]);
    let points = summary["points"].as_array().unwrap();
    let csv = rows(&dir);
    assert_eq!(csv.len(), 2);
    for ((point, epsilon_bar), (x, total)) in points.iter().zip([0.05, 0.5]).zip(csv) {
        assert_eq!(point["reproduce"]["epsilon"].as_f64(), Some(epsilon_bar));
        assert_eq!(x, epsilon_bar);
        // The common total: 5 rounds of the Laplace curve at ε̄, at δ = 1e-6.
        let want = common_total(&Baseline::DpIadmm, epsilon_bar, 1e-6);
        assert!(close(local_epsilon(point), want), "{point}");
        assert!(close(total, want));
    }
    std::fs::remove_dir_all(dir).ok();
}

#[test]
fn huang_gong_runs_theorem_6s_sigma_and_its_total_does_not_depend_on_l() {
    let text = panel(
        "kind = \"ipadmm\"\n",
        "[privacy]\ndelta = 1e-5\n[reproduce]\npaper = \"hg\"\nfigure = \"test\"\n\
         epsilon = [1.0]\ninner-steps = [1, 3]\nmetric = \"train-objective\"\n",
    )
    .replace("clip = 1e6", "clip = 1.0");
    let (dir, summary, knobs) = run(&text, "hg");
    // t = 5 rounds, δ = 1e-5, ε = 1: σ = √(2·5·l·ln(125000)), ln(125000) = 11.736069016284437.
    assert!(close(knobs[0], (10.0 * 11.736_069_016_284_437_f64).sqrt()));
    assert!(close(knobs[1], (30.0 * 11.736_069_016_284_437_f64).sqrt()));
    let points = summary["points"].as_array().unwrap();
    let csv = rows(&dir);
    assert_eq!(csv.iter().map(|r| r.0).collect::<Vec<_>>(), [1.0, 3.0]);
    for (i, l) in [1_u64, 3].into_iter().enumerate() {
        let (point, total) = (&points[i], csv[i].1);
        let want = common_total(&Baseline::Ipadmm { inner_steps: l }, knobs[i], 1e-5);
        assert!(close(local_epsilon(point), want), "{point}");
        assert!(close(total, want));
    }
    // t·l steps at σ² ∝ t·l: the same curve whatever l.
    assert!((csv[0].1 - csv[1].1).abs() <= 1e-9 * csv[0].1);
    std::fs::remove_dir_all(dir).ok();
}

#[test]
fn cyffers_bellet_basu_runs_the_central_budget_and_reports_the_local_total() {
    let text = panel(
        "kind = \"admm\"\nmode = \"federated\"\nblocks-per-round = 5\ngamma = 1.0\nlambda = 0.5\n",
        "[privacy]\ndelta = 1e-6\nview = \"central\"\n[sweep]\nepsilon = [1.0, 10.0]\n\
         [reproduce]\npaper = \"cbb\"\nfigure = \"test\"\nmetric = \"train-objective\"\n",
    )
    .replace("clip = 1e6", "clip = 1.0");
    let (dir, summary, _) = run(&text, "cbb");
    let points = summary["points"].as_array().unwrap();
    let csv = rows(&dir);
    assert_eq!(csv.len(), 2);
    for (point, (x, total)) in points.iter().zip(csv) {
        // The paper's ε is the point's central budget; the total is the local figure.
        assert_eq!(
            point["reproduce"]["epsilon"],
            point["privacy"]["budget"]["epsilon"]
        );
        assert_eq!(point["privacy"]["budget"]["view"], "central");
        assert_eq!(Some(x), point["reproduce"]["epsilon"].as_f64());
        assert!(close(total, local_epsilon(point)));
        assert!(total > x, "the local view is the stronger adversary");
    }
    std::fs::remove_dir_all(dir).ok();
}

#[test]
fn a_panel_refuses_what_its_paper_does_not_state() {
    let refused = |algorithm: &str, tables: &str, key: &str| {
        let text = panel(algorithm, tables);
        let sets: Vec<String> = Vec::new();
        let parsed = dpwalk_sim::scenario::parse(&text, "inline.toml".as_ref(), &sets).unwrap();
        let err = dpwalk_sim::scenario::LoadedScenario::new(parsed, ".".into(), "inline")
            .expect_err(tables);
        let text = err.to_string();
        assert!(text.contains(key), "{text}");
    };
    let rk = "kind = \"dp-iadmm\"\nclip-l1 = 1.0\n";
    let table = "[reproduce]\npaper = \"rk\"\nfigure = \"t\"\nmetric = \"train-objective\"\n";
    // A budget would calibrate to the common total, not the paper's ε.
    refused(
        rk,
        &format!("[sweep]\nepsilon = [1.0]\n{table}epsilon = [0.1]\n"),
        "reproduce.epsilon",
    );
    refused(rk, table, "reproduce.epsilon");
    refused(
        "kind = \"ipadmm\"\n",
        &format!("{table}epsilon = [0.1]\n"),
        "reproduce.paper",
    );
    refused(
        "kind = \"ipadmm\"\n",
        "[reproduce]\npaper = \"hg\"\nfigure = \"t\"\nmetric = \"train-objective\"\n\
         epsilon = [0.1, 1.0]\ninner-steps = [1, 2]\n",
        "reproduce.epsilon",
    );
    refused(
        "kind = \"admm\"\n",
        "[sweep]\nepsilon = [1.0]\n[reproduce]\npaper = \"cbb\"\nfigure = \"t\"\nmetric = \"train-objective\"\n",
        "reproduce.paper",
    );
}

#[test]
fn the_audit_refuses_a_panel_whose_noise_the_papers_accounting_sets() {
    let text = panel(
        "kind = \"dp-iadmm\"\nclip-l1 = 1.0\n",
        "[reproduce]\npaper = \"rk\"\nfigure = \"test\"\nepsilon = [0.05]\n\
         metric = \"train-objective\"\n",
    );
    let loaded = scenario(&text, &[]);
    let prepared = prepare(&loaded).expect("prepare");
    let config = dpwalk_sim::audit::driver::Config {
        runs: 100,
        user: 0,
        observer: None,
        views: vec![dpwalk_sim::audit::statistic::View::Local],
        canary: dpwalk_sim::audit::canary::CanaryKind::WhiteBox,
        steps: None,
        contributions: 1,
        point: None,
        confidence: 0.95,
        quiet: true,
    };
    let err = dpwalk_sim::audit::driver::audit(&loaded, &prepared, &config)
        .expect_err("a panel's points are not the scenario's");
    assert!(err.to_string().contains("[reproduce] panel"), "{err}");
}
