//! The everyday commands, end to end through the binary: run directories (`scenario.toml`,
//! `--force`), `dpwalk eval`, `dpwalk ledger show` and `dpwalk runfile new`.

#![allow(clippy::expect_used, clippy::unwrap_used)]

mod common;

use common::{json, z_bits};

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn dpwalk() -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_dpwalk"));
    c.current_dir(env!("CARGO_MANIFEST_DIR"));
    c
}

fn temp_dir(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("dpwalk-everyday-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    dir
}

fn run(args: &[&str]) -> Output {
    dpwalk().args(args).output().expect("runs")
}

/// Runs and requires success; returns stdout.
fn ok(args: &[&str]) -> String {
    let out = run(args);
    assert!(
        out.status.success(),
        "dpwalk {args:?} failed:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

/// Runs and requires failure; returns stderr.
fn fails(args: &[&str]) -> String {
    let out = run(args);
    assert!(!out.status.success(), "dpwalk {args:?} succeeded");
    String::from_utf8(out.stderr).unwrap()
}

fn refs(a: &[String]) -> Vec<&str> {
    a.iter().map(String::as_str).collect()
}

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

#[test]
fn a_sim_run_directory_keeps_its_resolved_scenario_and_is_not_overwritten() {
    let dir = temp_dir("rundir");
    let out = dir.join("run");
    let args = [
        "sim",
        "sim/swarm.toml",
        "--quiet",
        "--set",
        "steps=300",
        "--set",
        "algorithm.sigma=0.1",
        "--seed",
        "5",
        "--out",
        s(&out),
    ];
    ok(&args);
    let text = std::fs::read_to_string(out.join("scenario.toml")).unwrap();
    let resolved: toml::Table = toml::from_str(&text).unwrap();
    assert_eq!(resolved["seed"].as_integer(), Some(5), "{text}");
    assert_eq!(resolved["steps"].as_integer(), Some(300));
    assert_eq!(resolved["algorithm"]["sigma"].as_float(), Some(0.1));
    assert_eq!(resolved["name"].as_str(), Some("swarm"));

    // The same --out again is refused, naming the flag, and the earlier run is untouched.
    let before = std::fs::read(out.join("final_model.json")).unwrap();
    let err = fails(&args);
    assert!(
        err.contains("not empty") && err.contains("--force"),
        "{err}"
    );
    assert_eq!(std::fs::read(out.join("final_model.json")).unwrap(), before);
    // A file is refused too.
    std::fs::write(dir.join("file"), "x").unwrap();
    let err = fails(&[
        "sim",
        "sim/swarm.toml",
        "--quiet",
        "--out",
        s(&dir.join("file")),
    ]);
    assert!(err.contains("is a file"), "{err}");
    // With --force it runs again, to the same model, and nothing of the earlier run is left.
    std::fs::write(out.join("privacy_heatmap.png"), "stale").unwrap();
    let mut forced = args.to_vec();
    forced.push("--force");
    ok(&forced);
    assert_eq!(std::fs::read(out.join("final_model.json")).unwrap(), before);
    assert!(
        !out.join("privacy_heatmap.png").exists(),
        "a stale file survived --force"
    );
    // --force replaces a run directory only: another non-empty directory is left alone.
    let other = dir.join("other");
    std::fs::create_dir_all(&other).unwrap();
    std::fs::write(other.join("notes.txt"), "mine").unwrap();
    let err = fails(&[
        "sim",
        "sim/swarm.toml",
        "--quiet",
        "--force",
        "--out",
        s(&other),
    ]);
    assert!(err.contains("is not one"), "{err}");
    assert_eq!(std::fs::read(other.join("notes.txt")).unwrap(), b"mine");

    // The kept scenario, run from elsewhere and with no override, is the same run bit for bit.
    let again = dir.join("again");
    ok(&[
        "sim",
        s(&out.join("scenario.toml")),
        "--quiet",
        "--out",
        s(&again),
    ]);
    assert_eq!(
        z_bits(&json(&again.join("final_model.json"))),
        z_bits(&json(&out.join("final_model.json")))
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn eval_reproduces_the_simulators_test_objective_and_writes_predictions() {
    let dir = temp_dir("eval");
    let out = dir.join("run");
    ok(&[
        "sim",
        "sim/swarm.toml",
        "--quiet",
        "--set",
        "steps=400",
        "--out",
        s(&out),
    ]);
    let summary = json(&out.join("summary.json"));
    let test_objective = summary["points"][0]["final"]["test_objective"]
        .as_f64()
        .unwrap();
    // The kept scenario's [data] table and seed give the simulator's test split.
    let predictions = dir.join("pred.csv");
    let report: serde_json::Value = serde_json::from_str(&ok(&[
        "eval",
        "--model",
        s(&out.join("final_model.json")),
        "--data",
        s(&out.join("scenario.toml")),
        "--l1",
        "0.001",
        "--predictions",
        s(&predictions),
        "--json",
    ]))
    .unwrap();
    assert_eq!(report["split"], "test");
    assert_eq!(report["rows"], 200);
    assert_eq!(report["dimension"], 64);
    assert!(
        report["error_rate"].is_null(),
        "no error rate for regression"
    );
    let objective = report["objective"].as_f64().unwrap();
    assert!(
        (objective - test_objective).abs() <= 1e-12 * test_objective.abs(),
        "eval {objective} against the simulator's {test_objective}"
    );
    // The predictions are the model's: their squared error is the mean loss.
    let csv = std::fs::read_to_string(&predictions).unwrap();
    let mut lines = csv.lines();
    assert_eq!(lines.next(), Some("row,prediction,label"));
    let rows: Vec<(f64, f64)> = lines
        .map(|l| {
            let f: Vec<f64> = l.split(',').map(|v| v.parse().unwrap()).collect();
            (f[1], f[2])
        })
        .collect();
    assert_eq!(rows.len(), 200);
    let mean_loss = rows.iter().map(|(p, y)| 0.5 * (p - y).powi(2)).sum::<f64>() / 200.0;
    let reported = report["mean_loss"].as_f64().unwrap();
    assert!(
        (mean_loss - reported).abs() <= 1e-12 * reported,
        "{mean_loss} {reported}"
    );

    // The simulator's model says what it was trained on, and eval takes it without the flags.
    let model = json(&out.join("final_model.json"));
    assert_eq!(model["problem"]["loss"], "squared", "{model}");
    assert_eq!(model["problem"]["l1"], 0.001, "{model}");
    let bare: serde_json::Value = serde_json::from_str(&ok(&[
        "eval",
        "--model",
        s(&out.join("final_model.json")),
        "--data",
        s(&out.join("scenario.toml")),
        "--json",
    ]))
    .unwrap();
    assert_eq!(bare["objective"], report["objective"]);

    // A model of another dimension is refused with both numbers.
    std::fs::write(dir.join("three.csv"), "1,2,3,0.5\n0,1,0,1.5\n").unwrap();
    let err = fails(&[
        "eval",
        "--model",
        s(&out.join("final_model.json")),
        "--data",
        s(&dir.join("three.csv")),
    ]);
    assert!(
        err.contains("dimension 64") && err.contains("3 features"),
        "{err}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn eval_computes_a_logistic_objective_and_error_rate_by_hand() {
    let dir = temp_dir("eval-logistic");
    std::fs::create_dir_all(&dir).unwrap();
    // A node's final_model.json carries more than z; eval reads z only.
    std::fs::write(
        dir.join("model.json"),
        r#"{"z": [1.0, -1.0], "steps": 10, "seed": 1, "run_id": "r", "privacy": {}}"#,
    )
    .unwrap();
    // Scores aᵀz: 1 (+1, right), -1 (+1, wrong), 1 (-1, wrong), -2 (-1, right).
    std::fs::write(dir.join("d.csv"), "1,0,1\n0,1,1\n2,1,-1\n0,2,-1\n").unwrap();
    let model = dir.join("model.json");
    let data = dir.join("d.csv");
    let args = [
        "eval",
        "--model",
        s(&model),
        "--data",
        s(&data),
        "--loss",
        "logistic",
        "--l2",
        "0.5",
        "--json",
    ];
    let report: serde_json::Value = serde_json::from_str(&ok(&args)).unwrap();
    let l = |t: f64| (1.0 + (-t).exp()).ln();
    let mean_loss = (l(1.0) + l(-1.0) + l(-1.0) + l(2.0)) / 4.0;
    let regularizer = 0.25 * 2.0; // (l2/2)‖z‖²
    let objective = report["objective"].as_f64().unwrap();
    assert!(
        (objective - (mean_loss + regularizer)).abs() < 1e-12,
        "{report}"
    );
    assert_eq!(report["error_rate"].as_f64(), Some(0.5));
    let text = ok(&args[..args.len() - 1]);
    assert!(
        text.contains("error      0.5000 (2 of 4 misclassified)"),
        "{text}"
    );
    // Labels that are not ±1, and a multinomial loss without its classes, are refused.
    std::fs::write(dir.join("bad.csv"), "1,0,0.3\n").unwrap();
    let err = fails(&[
        "eval",
        "--model",
        s(&model),
        "--data",
        s(&dir.join("bad.csv")),
        "--loss",
        "logistic",
    ]);
    assert!(err.contains("+1 or -1"), "{err}");
    let err = fails(&[
        "eval",
        "--model",
        s(&model),
        "--data",
        s(&data),
        "--loss",
        "multinomial",
    ]);
    assert!(err.contains("--classes"), "{err}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn eval_takes_the_problem_from_the_model_file_and_refuses_flags_that_contradict_it() {
    let dir = temp_dir("eval-problem");
    std::fs::create_dir_all(&dir).unwrap();
    let model = dir.join("model.json");
    std::fs::write(
        &model,
        r#"{"z": [1.0, -1.0], "problem": {"loss": "logistic", "l1": 0.0, "l2": 0.5}}"#,
    )
    .unwrap();
    std::fs::write(dir.join("d.csv"), "1,0,1\n0,1,1\n2,1,-1\n0,2,-1\n").unwrap();
    let data = dir.join("d.csv");
    let eval = |extra: &[&str]| -> Vec<String> {
        let mut args = vec!["eval", "--model", s(&model), "--data", s(&data)];
        args.extend_from_slice(extra);
        args.iter().map(|a| a.to_string()).collect()
    };
    fn strs(v: &[String]) -> Vec<&str> {
        v.iter().map(String::as_str).collect()
    }
    // The file's logistic loss with l2 = 0.5, as eval_computes_a_logistic_objective… by hand.
    let bare: serde_json::Value = serde_json::from_str(&ok(&strs(&eval(&["--json"])))).unwrap();
    let l = |t: f64| (1.0 + (-t).exp()).ln();
    let objective = (l(1.0) + l(-1.0) + l(-1.0) + l(2.0)) / 4.0 + 0.25 * 2.0;
    assert_eq!(bare["loss"], "logistic", "{bare}");
    assert!(
        (bare["objective"].as_f64().unwrap() - objective).abs() < 1e-12,
        "{bare}"
    );
    // Flags that agree change nothing; flags that contradict are refused, naming the problem.
    let agree = eval(&["--loss", "logistic", "--l2", "0.5", "--json"]);
    let agreed: serde_json::Value = serde_json::from_str(&ok(&strs(&agree))).unwrap();
    assert_eq!(agreed["objective"], bare["objective"]);
    for flags in [
        &["--loss", "squared"][..],
        &["--l2", "0.1"],
        &["--l1", "0.01"],
    ] {
        let err = fails(&strs(&eval(flags)));
        assert!(
            err.contains("was trained on the logistic loss with l1 = 0, l2 = 0.5")
                && err.contains("contradict"),
            "{flags:?}: {err}"
        );
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn ledger_show_reads_a_nodes_ledger_and_refuses_a_torn_one() {
    let out = temp_dir("ledger");
    let args = [
        "swarm",
        "--nodes",
        "3",
        "--quiet",
        "--set",
        "steps=90",
        "--out",
        s(&out),
    ];
    ok(&args);
    let mut total = 0;
    for i in 0..3 {
        let state = out.join(format!("node-{i}/state"));
        let ledger = state.join("ledger.bin");
        let report: serde_json::Value =
            serde_json::from_str(&ok(&["ledger", "show", s(&ledger), "--records", "--json"]))
                .unwrap();
        let node = json(&state.join("final_model.json"));
        // The node's model says what it was trained on (the run file's problem: the default
        // swarm's, sim/swarm-record.toml's).
        assert_eq!(node["problem"]["loss"], "logistic", "{node}");
        assert_eq!(node["problem"]["l2"], 0.001, "{node}");
        let records = report["records"].as_u64().unwrap();
        assert_eq!(records, node["privacy"]["contributions"].as_u64().unwrap());
        let seqs: Vec<u64> = report["seqs"]
            .as_array()
            .unwrap()
            .iter()
            .map(|v| v.as_u64().unwrap())
            .collect();
        assert_eq!(seqs.len() as u64, records);
        assert!(seqs.windows(2).all(|w| w[0] < w[1]));
        assert_eq!(report["first_seq"].as_u64(), seqs.first().copied());
        assert_eq!(report["last_seq"].as_u64(), seqs.last().copied());
        assert_eq!(report["orders"], 198);
        // The node's own figure at the same δ, by the same conversion.
        let eps = report["epsilon"].as_f64().unwrap();
        let node_eps = node["privacy"]["epsilon_local"].as_f64().unwrap();
        assert!(
            (eps - node_eps).abs() <= 1e-12 * node_eps,
            "{eps} {node_eps}"
        );
        // A looser δ gives a smaller ε.
        let looser: serde_json::Value = serde_json::from_str(&ok(&[
            "ledger",
            "show",
            s(&ledger),
            "--delta",
            "1e-3",
            "--json",
        ]))
        .unwrap();
        assert!(looser["epsilon"].as_f64().unwrap() < eps);
        assert!(looser.get("seqs").is_none(), "seqs only with --records");
        total += records;
    }
    assert_eq!(total, 90, "every step in exactly one ledger");

    // A torn copy: a clear error that says how to repair it; the original is untouched.
    let ledger = out.join("node-0/state/ledger.bin");
    let bytes = std::fs::read(&ledger).unwrap();
    let torn = out.join("torn.bin");
    std::fs::write(&torn, &bytes[..bytes.len() - 5]).unwrap();
    let err = fails(&["ledger", "show", s(&torn)]);
    assert!(
        err.contains("torn last record") && err.contains("dpwalk node"),
        "{err}"
    );
    assert_eq!(std::fs::read(&torn).unwrap().len(), bytes.len() - 5);
    let err = fails(&["ledger", "show", s(&out.join("run.toml"))]);
    assert!(err.contains("not a dpwalk ledger"), "{err}");
    // A ledger of format 1 (written by an older dpwalk): refused, with what to do.
    let mut v1 = b"DPWLEDG1".to_vec();
    v1.extend_from_slice(&1u32.to_le_bytes());
    v1.extend_from_slice(&2.0f64.to_le_bytes());
    let crc = crc32fast::hash(&v1);
    v1.extend_from_slice(&crc.to_le_bytes());
    let old = out.join("v1.bin");
    std::fs::write(&old, &v1).unwrap();
    let err = fails(&["ledger", "show", s(&old)]);
    assert!(
        err.contains("\"DPWLEDG1\"")
            && err.contains("an older version of dpwalk")
            && err.contains("start the run again"),
        "{err}"
    );
    // This swarm is an ADMM walk: no certificate given the walk, with the reason.
    let ledgers: Vec<String> = (0..3)
        .map(|i| s(&out.join(format!("node-{i}/state/ledger.bin"))).to_string())
        .collect();
    let run = out.join("run.toml");
    let mut certify = vec!["ledger", "certify", "--run", s(&run)];
    certify.extend(ledgers.iter().map(String::as_str));
    let err = fails(&certify);
    assert!(
        err.contains("no network bound is proved for the ADMM walk"),
        "{err}"
    );

    // The swarm refuses its earlier directory; with --force the nodes start afresh (their old
    // state removed), so the ledgers again hold the 90 steps once.
    let err = fails(&args);
    assert!(err.contains("--force"), "{err}");
    let mut forced = args.to_vec();
    forced.push("--force");
    ok(&forced);
    assert!(out.join("scenario.toml").exists());
    let records: u64 = (0..3)
        .map(|i| {
            let ledger = out.join(format!("node-{i}/state/ledger.bin"));
            let r: serde_json::Value =
                serde_json::from_str(&ok(&["ledger", "show", s(&ledger), "--json"])).unwrap();
            r["records"].as_u64().unwrap()
        })
        .sum();
    assert_eq!(records, 90);
    let _ = std::fs::remove_dir_all(&out);
}

#[test]
fn runfile_new_writes_a_run_file_a_node_accepts_and_refuses_bad_members() {
    let dir = temp_dir("runfile");
    std::fs::create_dir_all(&dir).unwrap();
    let peers: Vec<String> = (0..3)
        .map(|i| {
            let key = dir.join(format!("k{i}"));
            let printed = ok(&["keygen", "--out", s(&key)]);
            let id = printed
                .split_whitespace()
                .find(|w| w.starts_with("12D3KooW"))
                .expect("a PeerId")
                .to_string();
            format!("{id}=/ip4/10.0.0.{}/tcp/4001", i + 1)
        })
        .collect();
    let out = dir.join("run.toml");
    let mut args: Vec<String> = vec!["runfile".into(), "new".into()];
    for p in &peers {
        args.extend(["--peer".into(), p.clone()]);
    }
    let common: Vec<String> = [
        "--run-id",
        "hospitals",
        "--steps",
        "300",
        "--dimension",
        "6",
        "--loss",
        "multinomial",
        "--classes",
        "3",
        "--l2",
        "0.01",
        "--clip",
        "0.5",
        "--epsilon",
        "2",
        "--delta",
        "1e-6",
        "--topology",
        "ring",
    ]
    .map(String::from)
    .to_vec();
    args.extend(common.iter().cloned());
    let with_out = |out: &Path, extra: &[&str]| {
        let mut a = args.clone();
        a.extend(["--out".to_string(), s(out).to_string()]);
        a.extend(extra.iter().map(|e| e.to_string()));
        a
    };
    let written: serde_json::Value =
        serde_json::from_str(&ok(&refs(&with_out(&out, &["--json"])))).unwrap();

    // What a node checks: the file validates, and its hash is the one printed.
    let parsed = dpwalk_net::run::Run::load(&out).expect("a valid run file");
    assert_eq!(written["hash"], parsed.hash().to_string());
    assert_eq!(parsed.run_id(), "hospitals");
    assert_eq!(parsed.steps(), 300);
    assert_eq!(
        parsed.loss(),
        dpwalk_core::problem::Loss::Multinomial { classes: 3 }
    );
    assert!(matches!(
        parsed.noise(),
        dpwalk_core::spec::Noise::Budget { epsilon, .. } if epsilon == 2.0
    ));
    for (i, m) in parsed.members().iter().enumerate() {
        assert_eq!(m.index, i);
        assert_eq!(format!("{}={}", m.peer, m.addrs[0]), peers[i]);
    }
    assert_eq!(parsed.topology().n(), 3);

    // An existing file needs --force.
    let err = fails(&refs(&with_out(&out, &[])));
    assert!(err.contains("--force"), "{err}");
    ok(&refs(&with_out(&out, &["--force"])));

    // When the walk starts: every member, within 10 minutes, unless [start] says otherwise; the
    // defaults written out are the same run.
    assert_eq!(parsed.start_quorum(), 3);
    assert_eq!(parsed.start_timeout().as_secs(), 600);
    let start = dir.join("start.toml");
    ok(&refs(&with_out(
        &start,
        &["--quorum", "2", "--start-timeout", "60"],
    )));
    let quorum = dpwalk_net::run::Run::load(&start).expect("a valid run file");
    assert_eq!(quorum.start_quorum(), 2);
    assert_eq!(quorum.start_timeout().as_secs(), 60);
    assert_ne!(quorum.hash(), parsed.hash());
    let all = dir.join("all.toml");
    ok(&refs(&with_out(
        &all,
        &["--quorum", "3", "--start-timeout", "600"],
    )));
    assert_eq!(
        dpwalk_net::run::Run::load(&all).unwrap().hash(),
        parsed.hash()
    );
    let err = fails(&refs(&with_out(&dir.join("bad.toml"), &["--quorum", "4"])));
    assert!(
        err.contains("start.quorum") && err.contains("4 is not in 1..=3"),
        "{err}"
    );

    // Record level: --min-records and --feature-norm write the [privacy] table every node checks
    // its data against; the figures are then accounted at the record-level clip γG₂/m (G₂ = √2·R
    // for the multinomial loss), below C.
    let record = dir.join("record.toml");
    ok(&refs(&with_out(
        &record,
        &["--min-records", "500", "--feature-norm", "1"],
    )));
    let parsed = dpwalk_net::run::Run::load(&record).expect("a valid record-level run file");
    let unit = parsed.record_unit().expect("record level");
    assert_eq!((unit.min_records, unit.feature_norm), (500, 1.0));
    assert_eq!(parsed.unit_label(), "record-level");
    assert!(
        (parsed.accounted_clip() - 2f64.sqrt() / 500.0).abs() < 1e-15,
        "{}",
        parsed.accounted_clip()
    );
    // The DP-SGD walk: --algorithm dp-sgd with its step size; the ADMM keys are refused with it,
    // and it needs --lr.
    let sgd = dir.join("sgd.toml");
    ok(&refs(&with_out(
        &sgd,
        &["--algorithm", "dp-sgd", "--lr", "0.05"],
    )));
    let parsed = dpwalk_net::run::Run::load(&sgd).expect("a valid DP-SGD run file");
    assert_eq!(parsed.kind(), dpwalk_net::run::StepKind::DpSgd);
    assert_eq!(parsed.file().algorithm.lr, Some(0.05));
    assert_eq!(parsed.file().algorithm.gamma, None);
    for (extra, says) in [
        (&["--algorithm", "dp-sgd"][..], "needs --lr"),
        (
            &["--algorithm", "dp-sgd", "--lr", "0.1", "--gamma", "2"][..],
            "--gamma",
        ),
        (&["--lr", "0.1"][..], "--algorithm dp-sgd"),
    ] {
        let refused = dir.join("refused.toml");
        let err = fails(&refs(&with_out(&refused, extra)));
        assert!(err.contains(says), "{extra:?}: {err}");
        assert!(!refused.exists(), "nothing written");
    }

    // δ defaults to 1e-6 as everywhere; without a noise the refusal names both ways to give one.
    let without_delta: Vec<String> = {
        let mut a = with_out(&dir.join("no-delta.toml"), &[]);
        let at = a.iter().position(|x| x == "--delta").unwrap();
        a.drain(at..at + 2);
        a
    };
    ok(&refs(&without_delta));
    let parsed = dpwalk_net::run::Run::load(&dir.join("no-delta.toml")).expect("valid");
    assert!(matches!(
        parsed.noise(),
        dpwalk_core::spec::Noise::Budget { epsilon, delta } if epsilon == 2.0 && delta == 1e-6
    ));
    let without_noise: Vec<String> = {
        let mut a = with_out(&dir.join("no-noise.toml"), &[]);
        let at = a.iter().position(|x| x == "--epsilon").unwrap();
        a.drain(at..at + 4);
        a
    };
    let err = fails(&refs(&without_noise));
    assert!(
        err.contains("--sigma") && err.contains("--epsilon"),
        "{err}"
    );
    assert!(!dir.join("no-noise.toml").exists());

    // One without the other is refused before anything is written.
    let half = dir.join("half.toml");
    let err = fails(&refs(&with_out(&half, &["--min-records", "500"])));
    assert!(err.contains("--feature-norm"), "{err}");
    assert!(!half.exists());

    // Bad members are refused with the reason, naming the --peer.
    let id0 = peers[0].split('=').next().unwrap();
    let bad = |member: String| {
        let mut a: Vec<String> = vec!["runfile".into(), "new".into()];
        a.extend(["--peer".into(), peers[0].clone(), "--peer".into(), member]);
        a.extend(common.iter().cloned());
        a.extend(["--out".into(), s(&dir.join("bad.toml")).into()]);
        let err = fails(&refs(&a));
        assert!(!dir.join("bad.toml").exists(), "nothing written");
        err
    };
    let err = bad(format!("{id0}=/ip4/10.0.0.9/tcp/4001"));
    assert!(err.contains("already given"), "{err}");
    let err = bad(format!(
        "{}=/ip4/10.0.0.1/tcp/4001",
        peers[1].split('=').next().unwrap()
    ));
    assert!(err.contains("already given"), "duplicate address: {err}");
    let err = bad("12D3KooWnotapeer=/ip4/10.0.0.2/tcp/4001".into());
    assert!(err.contains("is not a PeerId"), "{err}");
    let err = bad(format!(
        "{}=/ip4/10.0.0.2/tcpp/4001",
        peers[1].split('=').next().unwrap()
    ));
    assert!(
        err.contains("is not a multiaddr") && err.contains("tcpp"),
        "{err}"
    );
    let err = bad(peers[1].split('=').next().unwrap().to_string());
    assert!(err.contains("PEERID=MULTIADDR"), "{err}");
    let _ = std::fs::remove_dir_all(&dir);
}

/// `dpwalk data` (issue 26, item 4): a CSV checked for a loss, with its problems named by line;
/// prepared into per-node files a node reads, a test file and data.json; and `runfile new --data
/// --record-level` takes the run file's figures from it.
#[test]
fn data_check_and_prepare_make_a_csv_ready_for_a_record_level_run() {
    let dir = temp_dir("data");
    std::fs::create_dir_all(&dir).unwrap();
    // 40 rows of 3 features and a yes/no label; row 7 has norm 3 (2, 2, 1), the others at most 1.
    let mut text = String::from("a,b,c,label\n");
    for i in 0..40 {
        let (x, y) = (f64::from(i) / 80.0, f64::from(i % 5) / 10.0);
        let row = if i == 6 {
            "2,2,1".to_string()
        } else {
            format!("{x:.6},{y:.6},0.1")
        };
        text.push_str(&format!(
            "{row},{}\n",
            if i % 3 == 0 { "yes" } else { "no" }
        ));
    }
    let csv = dir.join("records.csv");
    std::fs::write(&csv, &text).unwrap();
    let read = ["--loss", "logistic", "--header", "--positive-label", "yes"];
    let mut check = vec!["data", "check", s(&csv), "--json"];
    check.extend(read);
    let summary: serde_json::Value = serde_json::from_str(&ok(&check)).unwrap();
    assert_eq!(summary["rows"], 40);
    assert_eq!(summary["dimension"], 3);
    assert_eq!(summary["loss"], "logistic");
    assert!((summary["feature-norm"].as_f64().unwrap() - 3.0).abs() < 1e-12);

    // What a node would refuse is said with its line, counted from 1.
    let bad = dir.join("bad.csv");
    std::fs::write(&bad, "a,b,label\n1,2,yes\n1,no\n").unwrap();
    let err = fails(&["data", "check", s(&bad), "--loss", "logistic", "--header"]);
    assert!(
        err.contains("bad.csv:3: expected 3 fields, found 2"),
        "{err}"
    );
    std::fs::write(&bad, "1,nan,1\n").unwrap();
    let err = fails(&["data", "check", s(&bad), "--loss", "squared"]);
    assert!(err.contains("bad.csv:1"), "{err}");
    std::fs::write(&bad, "1,2,0\n1,2,1\n1,2,2\n").unwrap();
    let err = fails(&["data", "check", s(&bad), "--loss", "logistic"]);
    assert!(
        err.contains("bad.csv:3") && err.contains("a third distinct value"),
        "{err}"
    );

    // Prepared for 3 nodes, rows scaled to norm 1, a quarter held out.
    let out = dir.join("prepared");
    let mut prepare = vec![
        "data",
        "prepare",
        s(&csv),
        "--nodes",
        "3",
        "--feature-norm",
        "1",
        "--test-fraction",
        "0.25",
        "--out",
        s(&out),
    ];
    prepare.extend(read);
    ok(&prepare);
    let data: serde_json::Value = json(&out.join("data.json"));
    assert_eq!(data["scaled-rows"], 1);
    assert_eq!(data["test"]["rows"], 10);
    let rows: Vec<u64> = (0..3)
        .map(|i| data["nodes"][i]["rows"].as_u64().unwrap())
        .collect();
    assert_eq!(rows.iter().sum::<u64>(), 30);
    assert_eq!(data["min-records"], *rows.iter().min().unwrap());
    let bound = data["feature-norm"].as_f64().unwrap();
    assert!(bound <= 1.0, "{bound}");
    // The files are what a node reads: ±1 labels last, every row within the bound.
    let mut labels = Vec::new();
    for (i, &expected) in rows.iter().enumerate() {
        let path = out.join(format!("node-{i}.csv"));
        let (node, _) = dpwalk_core::data::csv::read(&path, &Default::default()).unwrap();
        assert_eq!(node.rows() as u64, expected);
        assert!((0..node.rows()).all(|r| dpwalk_core::spec::unit::row_norm(node.row(r)) <= bound));
        labels.extend(node.labels);
    }
    assert!(labels.iter().all(|&l| l == 1.0 || l == -1.0));
    assert!(labels.contains(&1.0) && labels.contains(&-1.0));
    // Again into the same directory: refused without --force.
    let err = fails(&prepare);
    assert!(err.contains("--force"), "{err}");

    // `runfile new --data --record-level`: the dimension, loss and record-level inputs from it.
    let peers: Vec<String> = (0..3)
        .map(|i| {
            let key = dir.join(format!("k{i}"));
            let printed = ok(&["keygen", "--out", s(&key)]);
            let id = printed
                .split_whitespace()
                .find(|w| w.starts_with("12D3KooW"))
                .unwrap();
            format!("--peer={id}=/ip4/10.0.0.{}/tcp/4001", i + 1)
        })
        .collect();
    let run = dir.join("run.toml");
    let data_json = out.join("data.json");
    let mut new = vec![
        "runfile",
        "new",
        "--steps",
        "300",
        "--clip",
        "1",
        "--epsilon",
        "1",
    ];
    new.extend(peers.iter().map(String::as_str));
    new.extend(["--data", s(&data_json), "--record-level", "--out", s(&run)]);
    ok(&new);
    let parsed = dpwalk_net::run::Run::load(&run).unwrap();
    assert_eq!(parsed.dimension(), 3);
    assert_eq!(parsed.loss(), dpwalk_core::problem::Loss::Logistic);
    let unit = parsed.record_unit().expect("record level");
    assert_eq!(unit.min_records, *rows.iter().min().unwrap());
    // The bound chosen for prepare, not the data's own largest norm.
    assert_eq!(unit.feature_norm, 1.0);
    assert_eq!(data["bound"], 1.0);
    // Prepared without a bound chosen in public: no record-level run from it.
    let unbounded = dir.join("unbounded");
    let mut plain = vec![
        "data",
        "prepare",
        s(&csv),
        "--nodes",
        "3",
        "--out",
        s(&unbounded),
    ];
    plain.extend(read);
    ok(&plain);
    let mut from_unbounded: Vec<&str> = new.clone();
    let at = from_unbounded.iter().position(|a| *a == "--data").unwrap();
    let unbounded_json = unbounded.join("data.json");
    from_unbounded[at + 1] = s(&unbounded_json);
    from_unbounded.push("--force");
    let err = fails(&from_unbounded);
    assert!(err.contains("prepared without --feature-norm"), "{err}");
    // Flags that contradict it are refused, naming both.
    let mut wrong = new.clone();
    wrong.extend(["--force", "--dimension", "4"]);
    let err = fails(&wrong);
    assert!(
        err.contains("--dimension 4") && err.contains("dimension 3"),
        "{err}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// `dpwalk data --format adult` reads UCI Adult as distributed, with the seed papers'
/// preprocessing (the vendored sample).
#[test]
fn data_check_reads_adult_as_distributed() {
    let summary: serde_json::Value = serde_json::from_str(&ok(&[
        "data",
        "check",
        "data/adult/adult-sample.data.gz",
        "--format",
        "adult",
        "--loss",
        "logistic",
        "--json",
    ]))
    .unwrap();
    assert_eq!(summary["dimension"], 105);
    assert!(summary["feature-norm"].as_f64().unwrap() <= 1.0 + 1e-12);
    let err = fails(&[
        "data",
        "check",
        "data/adult/adult-sample.data.gz",
        "--format",
        "adult",
        "--loss",
        "squared",
    ]);
    assert!(
        err.contains("--format adult has the binary labels"),
        "{err}"
    );
}
