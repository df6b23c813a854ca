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
    assert!(
        close(f(&v["epsilon"]), want, 1e-12),
        "{} vs {want}",
        v["epsilon"]
    );
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
    assert!(close(f(&c["epsilon"]), want, 1e-12));
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
        assert!(
            close(f(&v["epsilon"]), f(&c["epsilon"]), 1e-9),
            "{c}: got {}",
            v["epsilon"]
        );
        assert_eq!(f(&v["best_order"]), f(&c["order"]), "{c}");
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
    // 100 contributions at σ = 50, C = 1: RDP 100 · 8α/2500 = 0.32α, tight conversion.
    let local = f(&u["local"]["epsilon"]);
    let order = f(&u["local"]["order"]);
    assert!(close(local, tight(order, 0.32 * order, 1e-6), 1e-12));
    assert!(
        v["network_withheld"]
            .as_str()
            .is_some_and(|s| s.contains("ADMM")),
        "{v}"
    );
    assert!(v["passage"].is_null() && v["pairs"].is_null());
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

/// DP-SGD with one contribution: the network figure, below the local one, above the paper's
/// closed form; with several contributions, none, and the reason.
#[test]
fn a_dp_sgd_contribution_has_a_network_figure_and_several_do_not() {
    let one = |k: &str, extra: &[&str]| {
        let mut a = vec![
            "account",
            "walk",
            "--complete",
            "1000",
            "--sigma",
            "3",
            "--clip",
            "1",
            "--steps-per-user",
            k,
            "--step",
            "dp-sgd",
            "--delta",
            "1e-6",
            "--json",
        ];
        a.extend(extra);
        json(&a)
    };
    let v = one("1", &[]);
    let u = &v["users"][0];
    let (local, network) = (f(&u["local"]["epsilon"]), f(&u["network"]["epsilon"]));
    assert!(network < local, "network {network} vs local {local}");
    assert!(close(f(&u["inverse_hitting"]), 999f64.ln() / 998.0, 1e-12));
    assert_eq!(v["passage"]["method"], "exact");
    assert_eq!(f(&v["worst"]["epsilon"]), network);
    assert!(v["worst"]["observer"].is_null());
    assert!(f(&v["paper_closed_form"]["epsilon"]) <= network);
    assert_eq!(v["assumptions"].as_array().map(Vec::len), Some(2));
    assert!(v["network_withheld"].is_null());
    // The final model charged: a contribution at the last step is seen by everyone at once.
    let last = one("1", &["--horizon", "1"]);
    assert!(close(
        f(&last["users"][0]["network"]["epsilon"]),
        local,
        1e-12
    ));
    let later = one("1", &["--horizon", "5000"]);
    let h = f(&later["users"][0]["network"]["epsilon"]);
    assert!(h >= network && h < local, "{h}");
    // Two contributions: not proved, not printed.
    let two = one("2", &[]);
    assert!(two["users"][0]["network"].is_null());
    assert!(
        two["network_withheld"]
            .as_str()
            .is_some_and(|s| s.contains("one contribution"))
    );
}

/// A million users cost nothing: the complete graph takes its geometric law (one representative
/// user), never a pass over pairs of users. What is asserted is the method (the command takes
/// milliseconds; BENCHMARKS.md has the timings), never the clock.
#[test]
fn a_million_users_take_one_representative_user() {
    let v = json(&[
        "account",
        "walk",
        "--complete",
        "1000000",
        "--sigma",
        "50",
        "--clip",
        "1",
        "--steps-per-user",
        "1",
        "--step",
        "dp-sgd",
        "--json",
    ]);
    assert_eq!(v["users"].as_array().map(Vec::len), Some(1));
    assert_eq!(v["passage"]["method"], "exact");
    assert_eq!(v["pairs"], Value::Null);
    assert!(f(&v["users"][0]["network"]["epsilon"]) < f(&v["users"][0]["local"]["epsilon"]));
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

fn ring_neighbours(i: u64, j: u64) -> bool {
    (i + 1) % 100 == j || (j + 1) % 100 == i
}

#[test]
fn ring_worst_observer_is_a_neighbour_and_pairs_are_n_by_n() {
    let v = json(&[
        "account",
        "walk",
        "--topology",
        "topologies/ring-100.toml",
        "--sigma",
        "5",
        "--clip",
        "1",
        "--steps-per-user",
        "1",
        "--step",
        "dp-sgd",
        "--pairs",
        "--json",
    ]);
    let users = v["users"].as_array().expect("users");
    assert_eq!(users.len(), 100);
    for u in users {
        let (i, j) = (
            u["user"].as_u64().expect("user"),
            u["worst_observer"].as_u64().expect("observer"),
        );
        assert_eq!(u["all"], false);
        assert!(ring_neighbours(i, j), "user {i}: worst observer {j}");
    }
    let worst = &v["worst"];
    assert!(ring_neighbours(
        worst["user"].as_u64().expect("user"),
        worst["observer"].as_u64().expect("observer")
    ));
    assert_eq!(v["passage"]["method"], "certified upper bound");
    assert!(
        v["paper_closed_form"].is_null(),
        "the closed form is for the complete graph"
    );
    let pairs = v["pairs"].as_array().expect("pairs");
    assert_eq!(pairs.len(), 100);
    for (i, row) in pairs.iter().enumerate() {
        let row: Vec<f64> = row.as_array().expect("row").iter().map(f).collect();
        assert_eq!(row.len(), 100);
        assert_eq!(row[i], 0.0);
        let max = row.iter().copied().fold(0.0, f64::max);
        // The user's figure bounds every one of its pairs (an envelope of its observers).
        let user = f(&users[i]["network"]["epsilon"]);
        assert!(max <= user * (1.0 + 1e-12), "row {i}: {max} > {user}");
        assert!(
            row[(i + 50) % 100] < row[(i + 1) % 100],
            "far observers learn less"
        );
    }
}

fn temp_file(name: &str, text: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("dpwalk-account-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("mkdir");
    let path = dir.join(name);
    std::fs::write(&path, text).expect("write");
    path
}

#[test]
fn unreached_observers_leak_nothing_and_are_reported() {
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
        "1",
        "--step",
        "dp-sgd",
        "--pairs",
        "--json",
    ]);
    assert_eq!(v["unreached"]["pairs"], 18);
    assert!(
        v["unreached"]["note"]
            .as_str()
            .is_some_and(|s| s.contains("0 leakage"))
    );
    for u in v["users"].as_array().expect("users") {
        assert_eq!(u["unreached_observers"], 3);
    }
    assert_eq!(f(&v["pairs"][0][4]), 0.0);
    assert!(f(&v["pairs"][0][1]) > 0.0);
    let out = dpwalk(&[
        "account",
        "walk",
        "--topology",
        p,
        "--sigma",
        "50",
        "--clip",
        "1",
        "--steps-per-user",
        "1",
        "--step",
        "dp-sgd",
    ]);
    assert!(String::from_utf8_lossy(&out.stdout).contains("Unreached observers: 18"));
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
}

#[test]
fn network_calibration_is_refused_with_the_reason() {
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
        err.contains("no longer offered") && err.contains("--view local"),
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
    let cases: Vec<(Vec<&str>, &str)> = vec![
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
        (
            walk(&["--sigma", "1", "--clip", "1", "--horizon", "5"]),
            "--horizon is for",
        ),
        (
            vec![
                "account",
                "walk",
                "--complete",
                "10",
                "--steps-per-user",
                "1",
                "--sigma",
                "1",
                "--clip",
                "1",
                "--step",
                "dp-sgd",
                "--horizon",
                "0",
            ],
            "--horizon 0",
        ),
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
