//! End-to-end tests of the `dpwalk` binary.

// Test helpers abort the test on a failed set-up, as the tests themselves do.
#![allow(clippy::expect_used, clippy::unwrap_used)]

use std::path::PathBuf;
use std::process::Command;

fn dpwalk() -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_dpwalk"));
    c.current_dir(env!("CARGO_MANIFEST_DIR"));
    c
}

fn temp_dir(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("dpwalk-cli-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    dir
}

/// Runs `dpwalk sim SCENARIO --quiet --out <temp> --set S…` and returns the run directory.
fn sim(name: &str, scenario: &str, sets: &[&str]) -> PathBuf {
    let out = temp_dir(name);
    let mut c = dpwalk();
    c.args(["sim", scenario, "--quiet", "--out"]).arg(&out);
    for set in sets {
        c.args(["--set", set]);
    }
    assert!(c.status().expect("runs").success(), "dpwalk sim {scenario}");
    out
}

#[test]
fn quickstart_writes_a_complete_run_directory() {
    let out = temp_dir("quickstart");
    let status = dpwalk()
        .args(["sim", "sim/quickstart.toml", "--quiet", "--out"])
        .arg(&out)
        .status()
        .expect("runs");
    assert!(status.success());
    let summary: serde_json::Value =
        serde_json::from_slice(&std::fs::read(out.join("summary.json")).expect("summary.json"))
            .expect("valid JSON");
    let p = &summary["points"][0];
    for key in [
        "algorithm",
        "n_users",
        "dim",
        "steps",
        "sigma",
        "clip",
        "gamma",
        "lambda",
    ] {
        assert!(!p[key].is_null(), "summary.json lacks {key}: {p}");
    }
    assert_eq!(p["algorithm"], "admm");
    assert_eq!(p["n_users"], 1000);
    assert_eq!(p["dim"], 64);
    let train = p["final"]["train_objective"]
        .as_f64()
        .expect("train objective");
    let opt = p["optimum"]["objective"].as_f64().expect("optimum");
    assert!(train.is_finite() && opt.is_finite() && train >= opt * (1.0 - 1e-9));
    assert!(p["final"]["test_objective"].as_f64().is_some());
    assert!(p["final"]["distance_to_optimum"].as_f64().is_some());
    assert!(
        p["throughput"]["steps_per_second"]
            .as_f64()
            .is_some_and(|s| s > 0.0)
    );
    assert!(p["throughput"]["wall_seconds"].as_f64().is_some());
    assert!(
        p["privacy"]["local_rdp_per_contribution"]
            .as_array()
            .is_some_and(|a| !a.is_empty())
    );
    let model: serde_json::Value =
        serde_json::from_slice(&std::fs::read(out.join("final_model.json")).expect("final model"))
            .expect("valid JSON");
    assert_eq!(model["z"].as_array().map(Vec::len), Some(64));
    assert_eq!(model["steps"], p["steps"]);
    let csv = std::fs::read_to_string(out.join("metrics.csv")).expect("metrics.csv");
    assert!(csv.lines().count() > 2);
    // One row per user, its figures those of summary.json's worst user for the worst one.
    let users = std::fs::read_to_string(out.join("privacy_users.csv")).expect("privacy_users.csv");
    let mut lines = users.lines();
    let header: Vec<&str> = lines.next().expect("header").split(',').collect();
    let rows: Vec<Vec<&str>> = lines.map(|l| l.split(',').collect()).collect();
    assert_eq!(rows.len(), 1000);
    let col = |name: &str| header.iter().position(|h| *h == name).expect(name);
    let worst = |name: &str| {
        rows.iter()
            .map(|r| r[col(name)].parse::<f64>().expect(name))
            .fold(0.0f64, f64::max)
    };
    let worst_local = worst("local_epsilon");
    assert_eq!(Some(worst_local), p["privacy"]["local"]["epsilon"].as_f64());
    // An ADMM walk has no network figure: empty columns, a null summary entry, and the reason.
    assert!(
        rows.iter()
            .all(|r| r[col("network_epsilon")].is_empty() && r[col("worst_observer")].is_empty()),
        "no network figure for ADMM"
    );
    assert!(p["privacy"]["network"].is_null());
    assert!(
        p["privacy"]["notes"]
            .to_string()
            .contains("no network bound is proved for the ADMM walk")
    );
    for plot in ["convergence.png", "convergence.svg"] {
        assert!(
            std::fs::metadata(out.join(plot)).is_ok_and(|m| m.len() > 1000),
            "{plot}"
        );
    }
    let _ = std::fs::remove_dir_all(&out);
}

#[test]
fn summary_reports_the_zero_model_and_the_majority_class_for_scale() {
    // The all-zero model of a 10-class multinomial problem has F(0) = ln 10 exactly (every
    // class equally likely, r(0) = 0), and predicts one class, so it errs on most test digits.
    let out = sim(
        "zero-model",
        "sim/mnist-multinomial.toml",
        &["steps=8", "eval-every=4"],
    );
    let summary: serde_json::Value =
        serde_json::from_slice(&std::fs::read(out.join("summary.json")).expect("summary.json"))
            .expect("valid JSON");
    let zero = &summary["zero_model"];
    let f0 = zero["train_objective"].as_f64().expect("train objective");
    assert!((f0 - 10f64.ln()).abs() < 1e-12, "F(0) = {f0}, not ln 10");
    let opt = summary["points"][0]["optimum"]["objective"]
        .as_f64()
        .expect("optimum");
    let gap = zero["relative_gap"].as_f64().expect("relative gap");
    assert!((gap - (f0 - opt) / opt.abs()).abs() < 1e-12, "gap {gap}");
    let error = zero["test_error"].as_f64().expect("test error");
    assert!((0.5..1.0).contains(&error), "one class predicted: {error}");
    // The majority class beside it: a class of the problem, the best constant prediction on the
    // training records (so below 0.9 with ten classes), and the zero model's error where the
    // majority is the first class, which the zero model predicts.
    let majority = &summary["majority_class"];
    let label = majority["label"].as_f64().expect("label");
    assert!(
        label.fract() == 0.0 && (0.0..10.0).contains(&label),
        "{label}"
    );
    let train = majority["train_error"].as_f64().expect("train error");
    assert!(train > 0.0 && train < 0.9, "{train}");
    let test = majority["test_error"].as_f64().expect("test error");
    assert!((0.0..1.0).contains(&test), "{test}");
    assert_eq!(
        label == 0.0,
        test == error,
        "label {label}: {test} against {error}"
    );
    let _ = std::fs::remove_dir_all(&out);
}

#[test]
fn the_heatmap_is_drawn_when_some_users_contributed_twice() {
    // A DP-SGD walk of 8 steps on the 40-user small world revisits two users: every user has the
    // path-hidden network figure (N3, a priori; its own local figure where that is smaller, 0
    // for a user who never contributed), and the heatmap draws every pair.
    let out = sim(
        "heatmap",
        "sim/mnist-multinomial.toml",
        &["algorithm.kind=dp-sgd", "steps=8", "eval-every=4"],
    );
    let users = std::fs::read_to_string(out.join("privacy_users.csv")).expect("privacy_users.csv");
    let mut lines = users.lines();
    let header: Vec<&str> = lines.next().expect("header").split(',').collect();
    let col = header
        .iter()
        .position(|h| *h == "contributions")
        .expect("contributions column");
    let counts: Vec<u64> = lines
        .map(|l| {
            l.split(',')
                .nth(col)
                .expect("field")
                .parse()
                .expect("count")
        })
        .collect();
    assert!(counts.iter().any(|&k| k > 1), "a user contributed twice");
    assert!(counts.contains(&1), "a user contributed once");
    let network = header
        .iter()
        .position(|h| *h == "network_epsilon")
        .expect("network_epsilon column");
    for (line, &k) in users.lines().skip(1).zip(&counts) {
        let epsilon = line.split(',').nth(network).map(str::parse::<f64>);
        assert!(
            epsilon.is_some_and(|e| e.is_ok_and(|e| if k == 0 { e == 0.0 } else { e > 0.0 })),
            "every user has its network figure: {line}"
        );
    }
    for plot in ["privacy_heatmap.png", "privacy_heatmap.svg"] {
        assert!(
            std::fs::metadata(out.join(plot)).is_ok_and(|m| m.len() > 1000),
            "{plot}"
        );
    }
    let _ = std::fs::remove_dir_all(&out);
}

#[test]
fn a_mistyped_key_is_reported_with_file_and_line() {
    let dir = temp_dir("badkey");
    std::fs::create_dir_all(&dir).expect("mkdir");
    let file = dir.join("bad.toml");
    let text = std::fs::read_to_string("sim/quickstart.toml").expect("quickstart");
    let text = text.replacen("steps", "stpes", 1);
    std::fs::write(&file, &text).expect("write");
    let line = text
        .lines()
        .position(|l| l.starts_with("stpes"))
        .expect("mistyped line")
        + 1;
    let out = dpwalk()
        .arg("sim")
        .arg(&file)
        .arg("--quiet")
        .output()
        .expect("runs");
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("stpes"), "{err}");
    assert!(err.contains("bad.toml"), "{err}");
    assert!(err.contains(&format!("line {line}")), "{err}");
    assert!(!err.contains("panicked"), "{err}");
}

/// A missing file's error reaches the user once, whether it is the scenario itself or the data a
/// scenario names (a chain of four: preparing the scenario, data, the file, the OS's reason).
#[test]
fn each_cause_of_an_error_is_printed_once() {
    let dir = temp_dir("missing");
    std::fs::create_dir_all(&dir).expect("mkdir");
    let quickstart = std::fs::read_to_string("sim/quickstart.toml").expect("quickstart");
    let (head, rest) = quickstart.split_once("[data]").expect("a [data] table");
    let (_, tail) = rest.split_once("[problem]").expect("a [problem] table");
    let missing_data = dir.join("missing.csv");
    let scenario = dir.join("csv.toml");
    let text = format!(
        "{head}[data]\nsource = \"csv\"\npath = {:?}\n\n[problem]{tail}",
        missing_data.display().to_string()
    );
    std::fs::write(&scenario, text).expect("write");
    let missing_scenario = dir.join("absent.toml");
    for (file, args) in [
        (&missing_scenario, vec![missing_scenario.clone()]),
        (&missing_data, vec![scenario, dir.join("out")]),
    ] {
        let reason = std::fs::read(file).expect_err("absent").to_string();
        let mut cmd = dpwalk();
        cmd.arg("sim").arg(&args[0]).arg("--quiet");
        if let Some(out) = args.get(1) {
            cmd.arg("--out").arg(out);
        }
        let out = cmd.output().expect("runs");
        assert!(!out.status.success());
        let err = String::from_utf8_lossy(&out.stderr);
        let err = err.lines().last().expect("an error line");
        let file = file.display().to_string();
        assert_eq!(err.matches(&reason).count(), 1, "{err}");
        assert_eq!(err.matches(&file).count(), 1, "{err}");
    }
}

#[test]
fn impossible_parameters_are_refused_without_panic() {
    let out = dpwalk()
        .args([
            "sim",
            "sim/quickstart.toml",
            "--quiet",
            "--set",
            "algorithm.lambda=1.5",
        ])
        .output()
        .expect("runs");
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("lambda"), "{err}");
    assert!(!err.contains("panicked"), "{err}");
}

#[test]
fn a_scenario_key_given_as_a_flag_is_answered_with_its_set_form() {
    for (args, tip) in [
        (
            &["sim", "sim/quickstart.toml", "--sigma", "2"][..],
            "--set algorithm.sigma=2",
        ),
        (
            &["audit", "sim/quickstart.toml", "--epsilon=3"],
            "--set privacy.epsilon=3",
        ),
        (
            &["tune", "sim/quickstart.toml", "--users", "5"],
            "--set users=5",
        ),
    ] {
        let out = dpwalk().args(args).output().expect("runs");
        assert_eq!(out.status.code(), Some(2), "a usage error: {args:?}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(
            err.contains(tip) && !err.contains("-- --"),
            "{args:?}: {err}"
        );
        assert!(err.contains("Usage:"), "{err}");
    }
    // Other commands keep clap's own answer.
    let out = dpwalk()
        .args(["account", "walk", "--bogus"])
        .output()
        .expect("runs");
    assert_eq!(out.status.code(), Some(2));
    assert!(!String::from_utf8_lossy(&out.stderr).contains("--set"));
}

#[test]
fn topo_show_reports_structure() {
    let out = dpwalk()
        .args(["topo", "show", "topologies/ring-100.toml", "--json"])
        .output()
        .expect("runs");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("JSON");
    assert_eq!(v["nodes"], 100);
    assert_eq!(v["edges"], 100);
}

/// `dpwalk tune` writes its files, and `dpwalk sim --tuned` runs each kind with the tuned table
/// (its horizon and keys) in place of the scenario's.
#[test]
fn tune_writes_tuned_tables_that_sim_runs_with() {
    let dir = temp_dir("tune");
    std::fs::create_dir_all(&dir).unwrap();
    let scenario = dir.join("small.toml");
    std::fs::write(
        &scenario,
        r#"
users = 10
steps = 1000
[data]
source = "synthetic-lasso"
rows = 60
dim = 4
sparsity = 2
test-fraction = 0.2
[problem]
loss = "squared"
[algorithm]
clip = 1.0
[sweep]
kind = ["admm", "fed-sgd"]
epsilon = [10.0]
[tune]
configs = 2
horizon = [3, 7]
[tune.grid.admm]
gamma = [0.5, 2.0]
[tune.grid.fed-sgd]
lr = [0.1, 0.3]
"#,
    )
    .unwrap();
    let tuned = dir.join("tuned");
    let status = dpwalk()
        .args(["tune", "--quiet", "--out"])
        .arg(&tuned)
        .arg(&scenario)
        .status()
        .expect("runs");
    assert!(status.success());
    for file in ["tune.csv", "tune.json", "tuned.toml", "tune_horizons.png"] {
        assert!(tuned.join(file).is_file(), "{file} is missing");
    }
    let csv = std::fs::read_to_string(tuned.join("tune.csv")).unwrap();
    assert_eq!(
        csv.lines().count(),
        1 + 2 * 2,
        "two configurations per kind:\n{csv}"
    );
    // The horizons' figure carries the zero model's and the optimum's validation objectives as
    // flat lines (a regression: no majority class), the values of tune.json.
    let json: serde_json::Value =
        serde_json::from_slice(&std::fs::read(tuned.join("tune.json")).unwrap()).unwrap();
    assert!(json["majority_class"].is_null());
    // Every tuned result says what the tuning cost in privacy, and how it chose.
    let cost = json["privacy_cost"].as_str().unwrap();
    assert!(cost.starts_with("not privately accounted"), "{cost}");
    assert!(json["selection"].as_str().unwrap().contains("zero model"));
    let header = std::fs::read_to_string(tuned.join("tuned.toml")).unwrap();
    assert!(header.contains(&format!("# Privacy: {cost}.")), "{header}");
    let figure = std::fs::read_to_string(tuned.join("tune_horizons.csv")).unwrap();
    for (label, key) in [
        ("zero model", "zero_model"),
        ("non-private optimum", "optimum"),
    ] {
        let expected = json[key]["validation_objective"].as_f64().unwrap();
        let ys: Vec<f64> = figure
            .lines()
            .filter(|l| l.starts_with(&format!("\"{label}: ")))
            .map(|l| l.rsplit(',').nth(1).unwrap().parse().unwrap())
            .collect();
        assert_eq!(ys, [expected, expected], "{label}:\n{figure}");
    }
    let table: toml::Table =
        toml::from_str(&std::fs::read_to_string(tuned.join("tuned.toml")).unwrap()).unwrap();
    let steps = |kind: &str| table["by-kind"][kind]["steps"].as_integer().unwrap();
    let run = dir.join("run");
    let status = dpwalk()
        .args(["sim", "--quiet", "--tuned"])
        .arg(tuned.join("tuned.toml"))
        .arg("--out")
        .arg(&run)
        .arg(&scenario)
        .status()
        .expect("runs");
    assert!(status.success());
    let summary: serde_json::Value =
        serde_json::from_slice(&std::fs::read(run.join("summary.json")).unwrap()).unwrap();
    for p in summary["points"].as_array().unwrap() {
        let kind = p["algorithm"].as_str().unwrap();
        assert_eq!(p["steps"].as_i64(), Some(steps(kind)), "{kind}");
    }
    // A file that is not a tuning is refused with the reason.
    let out = dpwalk()
        .args(["sim", "--quiet", "--tuned"])
        .arg(&scenario)
        .arg(&scenario)
        .output()
        .expect("runs");
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("no [by-kind.<kind>] tables"));
    let _ = std::fs::remove_dir_all(&dir);
}
