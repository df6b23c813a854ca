//! End-to-end tests of `dpwalk account` and `dpwalk calibrate`: the JSON keys that are part of the
//! product, values against hand computations and the vendored dp-accounting fixture, the walk's
//! per-user figures on the complete graph and a ring, calibration round trips, and bad input.

// Helpers outside `#[test]` functions panic on failure too: that is how a test fails.
#![allow(clippy::expect_used)]

use serde_json::Value;
use std::path::PathBuf;
use std::process::{Command, Output};

fn dpwalk(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_dpwalk"))
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .args(args)
        .output()
        .expect("runs")
}

/// Runs a command that must succeed and print JSON.
fn json(args: &[&str]) -> Value {
    let out = dpwalk(args);
    assert!(
        out.status.success(),
        "{args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).expect("valid JSON")
}

fn f(v: &Value) -> f64 {
    v.as_f64().unwrap_or_else(|| panic!("not a number: {v}"))
}

fn close(a: f64, b: f64, rel: f64) -> bool {
    (a - b).abs() <= rel * b.abs().max(1e-300)
}

/// The tight conversion at one order, written out independently of the library.
fn tight(alpha: f64, rdp: f64, delta: f64) -> f64 {
    rdp + ((alpha - 1.0) / alpha).ln() - (delta.ln() + alpha.ln()) / (alpha - 1.0)
}

#[test]
fn gaussian_composes_k_alpha_over_two_z_squared() {
    // z = 1, no sampling, K = 7: RDP = 7α/2.
    let v = json(&[
        "account",
        "gaussian",
        "--noise-multiplier",
        "1",
        "--steps",
        "7",
        "--orders",
        "1.5,2,10,40",
        "--delta",
        "1e-5",
        "--json",
    ]);
    for key in [
        "orders",
        "rdp",
        "epsilon",
        "delta",
        "best_order",
        "conversion",
    ] {
        assert!(v.get(key).is_some(), "missing {key}: {v}");
    }
    assert_eq!(v["conversion"], "tight");
    let orders: Vec<f64> = v["orders"]
        .as_array()
        .expect("orders")
        .iter()
        .map(f)
        .collect();
    assert_eq!(orders, [1.5, 2.0, 10.0, 40.0]);
    let rdp: Vec<f64> = v["rdp"].as_array().expect("rdp").iter().map(f).collect();
    for (a, r) in orders.iter().zip(&rdp) {
        assert!(close(*r, 7.0 * a / 2.0, 1e-14), "order {a}: {r}");
    }
    let (want, at) = orders
        .iter()
        .map(|&a| (tight(a, 7.0 * a / 2.0, 1e-5), a))
        .fold((f64::INFINITY, 0.0), |m, x| if x.0 < m.0 { x } else { m });
    // The RDP figure is the cross-check; the figure is the exact conversion of √7-GDP
    // (tests/gaussian_exact.rs checks it against an independent computation), below it.
    assert!(
        close(f(&v["rdp_epsilon"]), want, 1e-12),
        "{} vs {want}",
        v["rdp_epsilon"]
    );
    assert!(close(f(&v["exact_gaussian_mu"]), 7.0_f64.sqrt(), 1e-14));
    assert!(f(&v["epsilon"]) < 0.95 * want, "{} vs {want}", v["epsilon"]);
    assert_eq!(f(&v["best_order"]), at);
    assert_eq!(f(&v["delta"]), 1e-5);

    let c = json(&[
        "account",
        "gaussian",
        "--noise-multiplier",
        "2",
        "--orders",
        "2,8",
        "--delta",
        "1e-6",
        "--conversion",
        "classic",
        "--json",
    ]);
    let want = [2.0_f64, 8.0]
        .iter()
        .map(|a| a / 8.0 + (1e6_f64).ln() / (a - 1.0))
        .fold(f64::INFINITY, f64::min);
    assert_eq!(c["conversion"], "classic");
    // The conversion names the RDP cross-check's statement; the figure stays exact.
    assert!(close(f(&c["rdp_epsilon"]), want, 1e-12));
    assert!(close(f(&c["exact_gaussian_mu"]), 0.5, 1e-15));
    assert!(f(&c["epsilon"]) < want);
}

#[test]
fn subsampled_gaussian_matches_dp_accounting() {
    let text = std::fs::read_to_string(
        "crates/dpwalk-privacy/tests/fixtures/dp_accounting_reference.json",
    )
    .expect("fixture");
    let fixture: Value = serde_json::from_str(&text).expect("fixture JSON");
    let orders: Vec<String> = fixture["integer_orders"]
        .as_array()
        .expect("orders")
        .iter()
        .map(|a| f(a).to_string())
        .collect();
    let orders = orders.join(",");
    let cases = fixture["epsilons"].as_array().expect("epsilons");
    let picked: Vec<&Value> = cases
        .iter()
        .filter(|c| {
            (f(&c["q"]) == 0.01 && f(&c["z"]) == 1.0) || (f(&c["q"]) == 0.1 && f(&c["z"]) == 2.0)
        })
        .filter(|c| f(&c["steps"]) <= 1000.0)
        .collect();
    assert!(picked.len() >= 6);
    for c in picked {
        let (q, z, k, d) = (
            f(&c["q"]).to_string(),
            f(&c["z"]).to_string(),
            f(&c["steps"]).to_string(),
            f(&c["delta"]).to_string(),
        );
        let v = json(&[
            "account",
            "gaussian",
            "--noise-multiplier",
            &z,
            "--sample-rate",
            &q,
            "--steps",
            &k,
            "--delta",
            &d,
            "--orders",
            &orders,
            "--json",
        ]);
        // With subsampling the printed ε is the PLD accountant's (tests of the PLD figure
        // itself: crates/dpwalk-privacy/tests/pld.rs); the RDP figure stays beside it.
        assert!(
            close(f(&v["rdp_epsilon"]), f(&c["epsilon"]), 1e-9),
            "{c}: got {}",
            v["rdp_epsilon"]
        );
        assert_eq!(f(&v["best_order"]), f(&c["order"]), "{c}");
        assert!(f(&v["epsilon"]) < f(&v["rdp_epsilon"]), "{c}");
        assert_eq!(f(&v["pld_interval"]), 1e-4, "{c}");
    }
}

#[test]
fn no_finite_guarantee_is_null_not_nan() {
    let out = dpwalk(&[
        "account",
        "gaussian",
        "--noise-multiplier",
        "1e-200",
        "--json",
    ]);
    assert!(out.status.success());
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(!text.contains("NaN"), "{text}");
    let v: Value = serde_json::from_str(&text).expect("JSON");
    assert!(v["epsilon"].is_null() && v["best_order"].is_null(), "{v}");
}

/// The ADMM walk (the default step) has no network figure: the local one, and the reason.
#[test]
fn an_admm_walk_prints_the_local_figure_and_why_there_is_no_network_one() {
    let args = [
        "account",
        "walk",
        "--complete",
        "1000",
        "--sigma",
        "50",
        "--clip",
        "1",
        "--steps-per-user",
        "100",
        "--delta",
        "1e-6",
    ];
    let mut with_json = args.to_vec();
    with_json.push("--json");
    let v = json(&with_json);
    assert_eq!(v["step"], "admm");
    let u = &v["users"][0];
    assert_eq!(u["all"], true);
    assert!(u["network"].is_null() && u["worst_observer"].is_null());
    // 100 contributions at σ = 50, C = 1: RDP 100 · 8α/2500 = 0.32α, tight conversion, beside
    // the exact figure of μ = 4C√K/σ = 0.8.
    let rdp = f(&u["local"]["rdp_epsilon"]);
    let order = f(&u["local"]["order"]);
    assert!(close(rdp, tight(order, 0.32 * order, 1e-6), 1e-12));
    assert!(close(f(&u["local"]["exact_gaussian_mu"]), 0.8, 1e-14));
    assert!(f(&u["local"]["epsilon"]) < rdp);
    assert!(
        v["network_withheld"]
            .as_str()
            .is_some_and(|s| s.contains("ADMM")),
        "{v}"
    );
    assert!(v["pairs"].is_null() && v["network_label"].is_null());
    assert_eq!(v["assumptions"].as_array().map(Vec::len), Some(0));
    assert_eq!(v["conversion"], "tight");
    assert_eq!(v["scenario"]["users"], 1000);
    assert_eq!(v["scenario"]["contributions_per_user"], 100);

    let out = dpwalk(&args);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success());
    assert!(
        text.contains("No network figure: no network bound is proved for the ADMM walk"),
        "{text}"
    );
}

/// DP-SGD on the walk: the path-hidden network figure (N1) for any number of contributions,
/// below the local one; the spec's regression case (`specs/network-dp-2.md` §7: 1.409 on its
/// 28 orders, 1.3806 on our finer grid, which can only lower it).
#[test]
fn a_dp_sgd_walk_has_a_path_hidden_network_figure_for_many_contributions() {
    let run = |steps: &[&str]| {
        let mut a = vec![
            "account",
            "walk",
            "--complete",
            "100",
            "--sigma",
            "20",
            "--clip",
            "1",
            "--step",
            "dp-sgd",
            "--delta",
            "1e-6",
            "--json",
        ];
        a.extend(steps);
        json(&a)
    };
    let v = run(&["--total-steps", "1000"]);
    let u = &v["users"][0];
    let (local, network) = (f(&u["local"]["epsilon"]), f(&u["network"]["epsilon"]));
    assert_eq!(u["contributions"], 18);
    // A third of the local RDP figure; 0.34 of the local view's exact figure.
    let local_rdp = f(&u["local"]["rdp_epsilon"]);
    assert!(
        network < local_rdp / 3.0,
        "network {network} vs local {local_rdp}"
    );
    assert!(network < local / 2.9, "network {network} vs local {local}");
    assert!(
        u["network"]["exact_gaussian_mu"].is_null(),
        "the RDP figure, below"
    );
    assert!(
        (1.409 * 0.975..=1.409 * 1.01).contains(&network),
        "N1 {network} far from the spec's 1.409"
    );
    assert_eq!(u["network_label"], "network (path hidden)");
    assert_eq!(v["network_label"], "network (path hidden)");
    assert_eq!(v["walk_steps"], 1000);
    assert_eq!(f(&v["worst"]["epsilon"]), network);
    assert!(v["worst"]["observer"].is_null());
    assert_eq!(v["assumptions"].as_array().map(Vec::len), Some(2));
    assert!(v["network_withheld"].is_null());
    // More contributions per user (a longer walk): a larger figure, below local. One
    // contribution in a walk of n steps gains nothing: the relaxation counts every visit of the
    // user as a contribution, and a second visit is likely.
    let one = run(&["--steps-per-user", "1"]);
    let u = &one["users"][0];
    assert_eq!(f(&u["network"]["epsilon"]), f(&u["local"]["epsilon"]));
    let mut last = 0.0;
    for k in ["2", "5", "20"] {
        let v = run(&["--steps-per-user", k]);
        let u = &v["users"][0];
        let (local, network) = (f(&u["local"]["epsilon"]), f(&u["network"]["epsilon"]));
        assert!(
            network < local && network > last,
            "K = {k}: {network} vs {local}"
        );
        last = network;
    }
}

/// A million users on the complete graph: one representative pair (two classes of users),
/// never a pass over pairs; a walk too long to compute is refused with the reason, and the
/// local figure is still printed. What is asserted is the method, never the clock.
#[test]
fn a_million_users_take_one_representative_user() {
    let run = |steps: &str| {
        json(&[
            "account",
            "walk",
            "--complete",
            "1000000",
            "--sigma",
            "5",
            "--clip",
            "1",
            "--total-steps",
            steps,
            "--step",
            "dp-sgd",
            "--json",
        ])
    };
    let v = run("3000");
    assert_eq!(v["users"].as_array().map(Vec::len), Some(1));
    assert_eq!(v["pairs"], Value::Null);
    assert!(f(&v["users"][0]["network"]["epsilon"]) < f(&v["users"][0]["local"]["epsilon"]));
    let far = run("1000000000");
    assert!(far["users"][0]["network"].is_null());
    assert!(far["users"][0]["local"]["epsilon"].is_f64());
    assert!(
        far["network_withheld"]
            .as_str()
            .is_some_and(|s| s.contains("not offered: cost")),
        "{far}"
    );
}

#[test]
fn total_steps_are_planned_at_the_visit_quantile() {
    let v = json(&[
        "account",
        "walk",
        "--complete",
        "1000",
        "--sigma",
        "50",
        "--clip",
        "1",
        "--total-steps",
        "100500",
        "--json",
    ]);
    // The 0.99 quantile of Binomial(100500, 1/1000): mean 100.5, sd 10.0.
    let k = v["scenario"]["contributions_per_user"].as_u64().expect("k");
    assert!((122..=126).contains(&k), "{k}");
    assert_eq!(v["scenario"]["total_steps"], 100500);
    assert!(
        v["scenario"]["contributions_note"]
            .as_str()
            .is_some_and(|s| s.contains("quantile"))
    );
    assert_eq!(v["users"][0]["contributions"], k);
}

/// N3 (the per-pair recursion of any graph) on the complete graph's edges gives the complete
/// graph's two-class figure; every user's figure is its worst observer's, below local.
#[test]
fn the_pair_recursion_on_a_graph_file_matches_the_complete_graph() {
    let edges: Vec<String> = (0..12)
        .flat_map(|a| (a + 1..12).map(move |b| format!("[{a}, {b}]")))
        .collect();
    let path = temp_file(
        "k12.toml",
        &format!(
            "kind = \"edges\"\nnodes = 12\nedges = [{}]\n",
            edges.join(", ")
        ),
    );
    let walk = |graph: &[&str]| {
        let mut a = vec!["account", "walk"];
        a.extend(graph);
        a.extend([
            "--sigma",
            "20",
            "--clip",
            "1",
            "--steps-per-user",
            "5",
            "--step",
            "dp-sgd",
            "--pairs",
            "--json",
        ]);
        json(&a)
    };
    let complete = walk(&["--complete", "12"]);
    let graph = walk(&["--topology", path.to_str().expect("utf-8 path")]);
    let want = f(&complete["users"][0]["network"]["epsilon"]);
    let users = graph["users"].as_array().expect("users");
    assert_eq!(users.len(), 12);
    let pairs = graph["pairs"].as_array().expect("pairs");
    for (i, u) in users.iter().enumerate() {
        let got = f(&u["network"]["epsilon"]);
        assert!(close(got, want, 1e-9), "user {i}: {got} vs {want}");
        // Never above the local figure (here equal: the network RDP figure is above the local
        // view's exact one, which bounds every observer).
        assert!(got <= f(&u["local"]["epsilon"]));
        let row: Vec<f64> = pairs[i].as_array().expect("row").iter().map(f).collect();
        assert_eq!(row[i], 0.0);
        assert_eq!(row.iter().copied().fold(0.0, f64::max), got);
    }
}

fn temp_file(name: &str, text: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("dpwalk-account-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("mkdir");
    let path = dir.join(name);
    std::fs::write(&path, text).expect("write");
    path
}

/// Two triangles: an observer the walk never reaches from a user still sees the final model.
#[test]
fn unreached_observers_see_the_final_model() {
    let path = temp_file(
        "two-triangles.toml",
        "kind = \"edges\"\nnodes = 6\nedges = [[0, 1], [1, 2], [2, 0], [3, 4], [4, 5], [5, 3]]\n",
    );
    let p = path.to_str().expect("utf-8 path");
    let v = json(&[
        "account",
        "walk",
        "--topology",
        p,
        "--sigma",
        "50",
        "--clip",
        "1",
        "--steps-per-user",
        "2",
        "--step",
        "dp-sgd",
        "--pairs",
        "--json",
    ]);
    // The final model reaches every member: an observer the token never visits still learns
    // from it (when the walk starts in the user's triangle), never more than one it visits.
    let (far, near) = (f(&v["pairs"][0][4]), f(&v["pairs"][0][1]));
    assert!(far > 0.0 && far <= near, "far {far}, near {near}");
}

/// Calibrates, then accounts at the σ found: the target is met, and not met just below.
fn round_trip(view: &str, key: &str, slack: f64) {
    let scenario = [
        "--complete",
        "1000",
        "--clip",
        "1",
        "--steps-per-user",
        "100",
    ];
    let mut args = vec![
        "calibrate",
        "--epsilon",
        "1",
        "--delta",
        "1e-6",
        "--view",
        view,
        "--json",
    ];
    args.extend(scenario);
    let cal = json(&args);
    assert_eq!(cal["view"], view);
    let sigma = f(&cal["sigma"]);
    assert!(f(&cal["epsilon"]) <= 1.0 && cal["order"].is_number());
    assert_eq!(f(&cal["delta"]), 1e-6);
    let eps_at = |s: f64| {
        let s = s.to_string();
        let mut a = vec![
            "account", "walk", "--sigma", &s, "--delta", "1e-6", "--json",
        ];
        a.extend(scenario);
        f(&json(&a)["users"][0][key]["epsilon"])
    };
    let at = eps_at(sigma);
    assert!(
        at <= 1.0 && at >= 1.0 - slack,
        "{view}: eps {at} at sigma {sigma}"
    );
    // serde_json's default float parsing may be off by an ulp: not bit-equal.
    assert!(close(at, f(&cal["epsilon"]), 1e-12));
    assert!(
        eps_at(sigma * (1.0 - 1e-5)) > 1.0,
        "{view}: sigma {sigma} is not minimal"
    );
}

#[test]
fn calibration_round_trips_through_account_walk() {
    round_trip("local", "local", 1e-4);
}

#[test]
fn federated_calibration_round_trips_through_the_gaussian_mechanism() {
    let cal = json(&[
        "calibrate",
        "--epsilon",
        "2",
        "--delta",
        "1e-5",
        "--view",
        "federated",
        "--sample-rate",
        "0.1",
        "--complete",
        "100",
        "--clip",
        "0.5",
        "--steps-per-user",
        "20",
        "--json",
    ]);
    assert_eq!(cal["rounds"], 200);
    // The federated round is the subsampled Gaussian with noise multiplier σ / (4C).
    let z = (f(&cal["sigma"]) / 2.0).to_string();
    let g = json(&[
        "account",
        "gaussian",
        "--noise-multiplier",
        &z,
        "--sample-rate",
        "0.1",
        "--steps",
        "200",
        "--delta",
        "1e-5",
        "--json",
    ]);
    assert!(close(f(&g["epsilon"]), f(&cal["epsilon"]), 1e-12));
    assert!(f(&g["epsilon"]) <= 2.0 && f(&g["epsilon"]) > 1.999);
    // Both are the PLD figure, below the RDP one.
    assert_eq!(f(&g["pld_interval"]), 1e-4);
    assert!(f(&g["epsilon"]) < f(&g["rdp_epsilon"]));
}

/// The network view calibrates the DP-SGD walk on the complete graph (round trip through
/// `account walk`), and is refused on other graphs with the reason.
#[test]
fn network_calibration_round_trips_and_is_refused_off_the_complete_graph() {
    let cal = json(&[
        "calibrate",
        "--epsilon",
        "1",
        "--delta",
        "1e-6",
        "--view",
        "network",
        "--complete",
        "100",
        "--clip",
        "1",
        "--total-steps",
        "1000",
        "--json",
    ]);
    let sigma = f(&cal["sigma"]);
    assert!(f(&cal["epsilon"]) <= 1.0);
    let at = |sigma: f64| {
        let s = sigma.to_string();
        json(&[
            "account",
            "walk",
            "--complete",
            "100",
            "--clip",
            "1",
            "--total-steps",
            "1000",
            "--step",
            "dp-sgd",
            "--sigma",
            &s,
            "--json",
        ])["users"][0]["network"]["epsilon"]
            .as_f64()
            .expect("network epsilon")
    };
    assert!(at(sigma) <= 1.0, "{}", at(sigma));
    assert!(at(sigma * 0.99) > 1.0, "not the smallest sigma");
    let local = json(&[
        "calibrate",
        "--epsilon",
        "1",
        "--delta",
        "1e-6",
        "--complete",
        "100",
        "--clip",
        "1",
        "--total-steps",
        "1000",
        "--json",
    ]);
    assert!(sigma < f(&local["sigma"]) / 2.0, "network {sigma} vs local");
    let out = dpwalk(&[
        "calibrate",
        "--epsilon",
        "1",
        "--delta",
        "1e-6",
        "--view",
        "network",
        "--topology",
        "topologies/ring-100.toml",
        "--clip",
        "1",
        "--steps-per-user",
        "10",
    ]);
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("complete graph") && err.contains("--view local"),
        "{err}"
    );
    assert!(!err.contains("panicked"), "{err}");
}

#[test]
fn bad_input_is_refused_with_a_message() {
    let walk = |extra: &[&'static str]| {
        let mut a = vec![
            "account",
            "walk",
            "--complete",
            "100",
            "--steps-per-user",
            "3",
        ];
        a.extend(extra);
        a
    };
    let mut cases: Vec<(Vec<&str>, &str)> = vec![
        (
            vec!["account", "gaussian", "--noise-multiplier", "0"],
            "noise multiplier",
        ),
        (
            vec!["account", "gaussian", "--noise-multiplier", "-1"],
            "noise multiplier",
        ),
        (
            vec!["account", "gaussian", "--noise-multiplier", "nan"],
            "noise multiplier",
        ),
        (
            vec![
                "account",
                "gaussian",
                "--noise-multiplier",
                "1",
                "--sample-rate",
                "0",
            ],
            "sampling rate",
        ),
        (
            vec![
                "account",
                "gaussian",
                "--noise-multiplier",
                "1",
                "--sample-rate",
                "1.5",
            ],
            "sampling rate",
        ),
        (
            vec![
                "account",
                "gaussian",
                "--noise-multiplier",
                "1",
                "--delta",
                "1",
            ],
            "delta",
        ),
        (
            vec![
                "account",
                "gaussian",
                "--noise-multiplier",
                "1",
                "--delta",
                "0",
            ],
            "delta",
        ),
        (
            vec![
                "account",
                "gaussian",
                "--noise-multiplier",
                "1",
                "--orders",
                "1,2",
            ],
            "orders",
        ),
        (
            vec![
                "account",
                "gaussian",
                "--noise-multiplier",
                "1",
                "--orders",
                "0.5",
            ],
            "orders",
        ),
        (walk(&["--sigma", "0", "--clip", "1"]), "sigma"),
        (walk(&["--sigma", "-2", "--clip", "1"]), "sigma"),
        (walk(&["--sigma", "1", "--clip", "0"]), "clip"),
        (
            walk(&["--sigma", "1", "--clip", "1", "--delta", "1.5"]),
            "delta",
        ),
        (
            walk(&["--sigma", "1", "--clip", "1", "--orders", "2,1"]),
            "orders",
        ),
        (
            vec![
                "account",
                "walk",
                "--topology",
                "no/such.toml",
                "--sigma",
                "1",
                "--clip",
                "1",
                "--steps-per-user",
                "3",
            ],
            "no/such.toml",
        ),
        (
            vec![
                "account",
                "walk",
                "--complete",
                "1",
                "--sigma",
                "1",
                "--clip",
                "1",
                "--steps-per-user",
                "3",
            ],
            "2 users",
        ),
        (
            vec![
                "account",
                "walk",
                "--complete",
                "9000",
                "--sigma",
                "1",
                "--clip",
                "1",
                "--steps-per-user",
                "3",
                "--pairs",
            ],
            "--pairs",
        ),
        (
            vec![
                "calibrate",
                "--epsilon",
                "1",
                "--delta",
                "1e-6",
                "--complete",
                "10",
                "--clip",
                "1",
                "--steps-per-user",
                "3",
                "--view",
                "federated",
            ],
            "--sample-rate",
        ),
        (
            vec![
                "calibrate",
                "--epsilon",
                "1",
                "--delta",
                "1e-6",
                "--complete",
                "10",
                "--clip",
                "1",
                "--steps-per-user",
                "3",
                "--view",
                "federated",
                "--sample-rate",
                "0",
            ],
            "sample-rate",
        ),
        (
            vec![
                "calibrate",
                "--epsilon",
                "-1",
                "--delta",
                "1e-6",
                "--complete",
                "10",
                "--clip",
                "1",
                "--steps-per-user",
                "3",
            ],
            "epsilon",
        ),
        (
            vec![
                "calibrate",
                "--epsilon",
                "1",
                "--delta",
                "2",
                "--complete",
                "10",
                "--clip",
                "1",
                "--steps-per-user",
                "3",
            ],
            "delta",
        ),
        (
            vec![
                "calibrate",
                "--epsilon",
                "1",
                "--delta",
                "1e-6",
                "--complete",
                "10",
                "--clip",
                "-1",
                "--steps-per-user",
                "3",
            ],
            "clip",
        ),
    ];
    // The network figure alone where none is proved (ADMM) or offered (cost): the reason, and an
    // error rather than a document with nothing in it.
    cases.push((
        walk(&["--sigma", "1", "--clip", "1", "--view", "network"]),
        "no network bound is proved for the ADMM walk",
    ));
    cases.push((
        vec![
            "account",
            "walk",
            "--complete",
            "1000000",
            "--sigma",
            "5",
            "--clip",
            "1",
            "--total-steps",
            "1000000000",
            "--step",
            "dp-sgd",
            "--view",
            "network",
        ],
        "not offered: cost",
    ));
    for (args, needle) in cases {
        let out = dpwalk(&args);
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success(), "{args:?} succeeded");
        assert!(err.contains(needle), "{args:?}: {err}");
        assert!(!err.contains("panicked"), "{args:?}: {err}");
        assert!(
            !String::from_utf8_lossy(&out.stdout).contains("NaN"),
            "{args:?}"
        );
    }
}

/// Issue 26: `calibrate` and `account walk` take a record-level run's inputs (`--min-records`,
/// `--feature-norm`, `--loss`, `--gamma`): the σ `calibrate` prints is the one every member of a
/// run file with the same `[privacy]` table calibrates, and `account walk` at that σ reads it back
/// within the budget, record level, with the clip `min(C, γ·G₂/m)`.
#[test]
fn record_level_flags_calibrate_the_sigma_of_a_record_level_run_file() {
    let user_level = ["--complete", "3", "--clip", "10", "--total-steps", "6000"];
    let record_level = [
        "--min-records",
        "8043",
        "--feature-norm",
        "1",
        "--gamma",
        "2",
    ];
    let record: Vec<&str> = user_level.iter().chain(&record_level).copied().collect();
    let mut args = vec!["calibrate", "--epsilon", "1", "--json"];
    args.extend(&record);
    let cal = json(&args);
    assert_eq!(cal["unit"], "record-level");
    assert!(close(f(&cal["accounted_clip"]), 2.0 / 8043.0, 1e-15));
    let sigma = f(&cal["sigma"]);

    let mut text = String::from(
        "run-id = \"r\"\nseed = 1\nsteps = 6000\ndimension = 4\n[problem]\nloss = \"logistic\"\n\
         [algorithm]\ngamma = 2.0\nlambda = 0.5\nclip = 10.0\n[budget]\nepsilon = 1.0\n\
         [privacy]\nunit = \"record\"\nmin-records = 8043\nfeature-norm = 1.0\n\
         [topology]\nkind = \"complete\"\n",
    );
    for i in 0..3 {
        let peer = libp2p::identity::Keypair::generate_ed25519()
            .public()
            .to_peer_id();
        text.push_str(&format!("[[members]]\nindex = {i}\npeer-id = \"{peer}\"\n"));
    }
    let run = dpwalk_net::run::Run::parse(&text, "test").unwrap();
    let node = run.calibrate().unwrap().expect("a budget").sigma;
    assert_eq!(
        sigma.to_bits(),
        node.to_bits(),
        "calibrate {sigma}, a node {node}"
    );

    let s = sigma.to_string();
    let walk = |flags: &[&str]| {
        let mut a = vec!["account", "walk", "--sigma", &s, "--json"];
        a.extend(flags);
        json(&a)
    };
    let doc = walk(&record);
    assert_eq!(doc["unit"], "record-level");
    let eps = f(&doc["users"][0]["local"]["epsilon"]);
    assert!(eps <= 1.0 && eps > 0.999, "{eps}");
    // At user level the same σ protects almost nothing.
    let user = walk(&user_level);
    assert_eq!(user["unit"], "user-level");
    assert!(f(&user["users"][0]["local"]["epsilon"]) > 1000.0);
}
