//! Real daemons on loopback, started by `dpwalk swarm`: the same `z` as the simulator, exact
//! ledgers under SIGKILL of the token holder, and graceful hand-over under SIGTERM.

#![allow(clippy::expect_used, clippy::unwrap_used)]

mod common;

use common::{json, steps_made_twice, z_bits};

use dpwalk_net::final_model::FinalModelFile;
use dpwalk_privacy::ledger::Ledger;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Mutex;

fn dpwalk() -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_dpwalk"));
    c.current_dir(env!("CARGO_MANIFEST_DIR"));
    c
}

fn temp_dir(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("dpwalk-swarm-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    dir
}

/// One swarm at a time: several at once on a small machine slow restarts past the hand-off
/// timeout, which is then a test of overload rather than of recovery.
static ONE_SWARM: Mutex<()> = Mutex::new(());

/// Runs `dpwalk swarm` with `args`; returns its stdout.
fn swarm(out: &Path, args: &[&str]) -> String {
    let _one = ONE_SWARM
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    let output = dpwalk()
        .args(["swarm", "--quiet", "--out"])
        .arg(out)
        .args(args)
        .output()
        .expect("runs");
    let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
    assert!(
        output.status.success(),
        "swarm failed: {}\n{stdout}\n{}",
        output.status,
        String::from_utf8_lossy(&output.stderr)
    );
    stdout
}

/// Every node's ledger holds exactly the contributions its durable state reports (the ledger
/// refuses a seq twice), and together the ledgers cover every step `0..steps`: none lost. Returns
/// how many steps were made twice, on two branches of a walk forked by a re-route after a timeout
/// (possible by design: a sender cannot tell a slow receiver from a dead one).
fn check_ledgers(out: &Path, nodes: usize, steps: u64) -> usize {
    let mut all = Vec::new();
    for i in 0..nodes {
        let dir = out.join(format!("node-{i}")).join("state");
        let seqs = Ledger::seqs(&dir.join("ledger.bin")).unwrap();
        let reported = FinalModelFile::read(&dir).unwrap().privacy.contributions;
        assert_eq!(
            seqs.len() as u64,
            reported,
            "node {i}: ledger against its contributions"
        );
        all.extend(seqs);
    }
    steps_made_twice(all, steps)
}

/// The walk ended: every node wrote the final model of the walk's last step, the same one.
fn check_final_models_agree(out: &Path, nodes: usize, steps: u64) -> Vec<u64> {
    let model = |i: usize| {
        let model = FinalModelFile::read(&out.join(format!("node-{i}/state"))).unwrap();
        assert_eq!(model.steps, steps, "node {i}: the walk's end");
        model.z.iter().map(|v| v.to_bits()).collect::<Vec<u64>>()
    };
    let z0 = model(0);
    for i in 1..nodes {
        assert_eq!(model(i), z0, "node {i} against node 0");
    }
    z0
}

/// `dpwalk sim` of `scenario` with the `--set`s of `sets`, into `out/sim`.
fn simulate(out: &Path, scenario: &str, sets: &[&str]) {
    let status = dpwalk()
        .args(["sim", scenario, "--quiet", "--out"])
        .arg(out.join("sim"))
        .args(sets)
        .status()
        .expect("runs");
    assert!(status.success(), "dpwalk sim {scenario} failed");
}

/// The rows of a run directory's `metrics.csv` without the consensus gap (the simulator's only:
/// it needs every user's `u_i`), which the header must end with.
fn metrics_rows(dir: &Path) -> Vec<String> {
    let text = std::fs::read_to_string(dir.join("metrics.csv")).unwrap();
    let mut lines = text.lines();
    let header = lines.next().unwrap();
    assert!(header.ends_with(",consensus_gap"), "{header}");
    lines
        .map(|l| l.rsplit_once(',').unwrap().0.to_string())
        .collect()
}

/// The swarm's metrics are the simulator's, row for row: the nodes record the model at every
/// `eval-every` hops and the swarm evaluates it with the simulator's evaluator.
fn check_metrics_match_the_simulators(out: &Path, rows: usize) {
    let swarm = metrics_rows(&out.join("swarm"));
    assert_eq!(swarm.len(), rows, "{swarm:#?}");
    assert_eq!(swarm, metrics_rows(&out.join("sim")));
}

#[test]
fn five_daemons_end_with_the_simulators_z_bit_for_bit() {
    let out = temp_dir("equivalence");
    swarm(
        &out.join("swarm"),
        &[
            "--scenario",
            "sim/swarm.toml",
            "--nodes",
            "5",
            "--set",
            "steps=200",
            "--set",
            "eval-every=40",
        ],
    );
    simulate(
        &out,
        "sim/swarm.toml",
        &[
            "--set",
            "users=5",
            "--set",
            "steps=200",
            "--set",
            "eval-every=40",
        ],
    );
    check_metrics_match_the_simulators(&out, 5);
    let z = check_final_models_agree(&out.join("swarm"), 5, 200);
    assert_eq!(z, z_bits(&json(&out.join("sim/final_model.json"))));
    assert_eq!(z, z_bits(&json(&out.join("swarm/final_model.json"))));
    assert_eq!(
        check_ledgers(&out.join("swarm"), 5, 200),
        0,
        "no fork without failures"
    );
    // The summary has the simulator's schema.
    let summary = json(&out.join("swarm/summary.json"));
    let point = &summary["points"][0];
    assert_eq!(point["n_users"], 5);
    assert_eq!(point["steps"], 200);
    assert!(
        point["final"]["train_objective"]
            .as_f64()
            .unwrap()
            .is_finite()
    );
    let _ = std::fs::remove_dir_all(&out);
}

/// A run with a budget: every node calibrates σ from the run file's `[budget]` and enforces it
/// with the simulator's policy, so the daemons and `dpwalk sim` skip the same steps (on a star the
/// centre holds the token every other step, far more often than planned) and end with the same
/// `z`; no node ends above the budget.
#[test]
fn with_a_budget_the_daemons_skip_the_simulators_steps_and_stay_within_it() {
    let out = temp_dir("budget");
    let sets = [
        "--set",
        "users=5",
        "--set",
        "steps=200",
        "--set",
        "topology.kind=star",
        "--set",
        "privacy.epsilon=8",
        "--set",
        "algorithm.sigma=0",
        "--set",
        "eval-every=30",
    ];
    swarm(
        &out.join("swarm"),
        &[
            &["--scenario", "sim/swarm.toml", "--nodes", "5"][..],
            &sets[2..],
        ]
        .concat(),
    );
    simulate(&out, "sim/swarm.toml", &sets);
    let z = check_final_models_agree(&out.join("swarm"), 5, 200);
    assert_eq!(z, z_bits(&json(&out.join("sim/final_model.json"))));
    let (mut skipped, mut recorded) = (0, 0);
    for i in 0..5 {
        let dir = out.join(format!("swarm/node-{i}/state"));
        let privacy = FinalModelFile::read(&dir).unwrap().privacy;
        let seqs = Ledger::seqs(&dir.join("ledger.bin")).unwrap();
        assert_eq!(seqs.len() as u64, privacy.contributions, "node {i}");
        recorded += seqs.len() as u64;
        let spent = privacy.epsilon_local.unwrap();
        assert!(spent <= 8.0, "node {i} spent {spent}");
        assert_eq!(privacy.budget_epsilon, Some(8.0));
        let skipped_here = privacy.skipped;
        skipped += skipped_here;
        // One line when the budget runs out, not one per skipped visit.
        let log = std::fs::read_to_string(out.join(format!("swarm/node-{i}/node.log"))).unwrap();
        assert_eq!(
            log.matches("privacy budget spent").count(),
            usize::from(skipped_here > 0),
            "node {i}, {skipped_here} skipped:\n{log}"
        );
        assert!(!log.contains("noise-only step\n"), "node {i}:\n{log}");
    }
    let budget = &json(&out.join("sim/summary.json"))["points"][0]["privacy"]["budget"];
    assert!(skipped > 0, "the star's centre runs out of budget");
    assert_eq!(
        budget["skipped_contributions"].as_f64(),
        Some(skipped as f64)
    );
    assert_eq!(recorded + skipped, 200, "every step made or skipped once");
    // 30, 60, ..., 180 and the end: the contributions of each row (skipped steps excluded) too.
    check_metrics_match_the_simulators(&out, 7);
    let _ = std::fs::remove_dir_all(&out);
}

/// The quick start's swarm (`dpwalk swarm` without `--scenario`) is the record-level scenario
/// `sim/swarm-record.toml` (`[privacy] unit = "record"`, a record-level budget): the run file
/// carries the fewest records and the largest row norm, every node calibrates σ with the
/// simulator's record-level clip and enforces the budget on it, so the daemons end with the
/// simulator's `z`; each node's figure is labelled record-level and within the budget.
#[test]
fn the_quick_start_swarm_is_record_level_and_ends_with_the_simulators_z_bit_for_bit() {
    let out = temp_dir("record");
    let sets = ["--set", "steps=1000", "--set", "eval-every=250"];
    swarm(
        &out.join("swarm"),
        &[&["--nodes", "8"][..], &sets[..]].concat(),
    );
    simulate(&out, "sim/swarm-record.toml", &sets);
    let run = std::fs::read_to_string(out.join("swarm/run.toml")).unwrap();
    assert!(
        run.contains("[privacy]\nunit = \"record\"\nmin-records = 1000\n"),
        "{run}"
    );
    let z = check_final_models_agree(&out.join("swarm"), 8, 1000);
    assert_eq!(z, z_bits(&json(&out.join("sim/final_model.json"))));
    // 250, 500, 750 and the end.
    check_metrics_match_the_simulators(&out, 4);
    for i in 0..8 {
        let privacy = FinalModelFile::read(&out.join(format!("swarm/node-{i}/state")))
            .unwrap()
            .privacy;
        assert_eq!(privacy.unit, "record-level", "node {i}");
        assert_eq!(privacy.budget_epsilon, Some(1.0));
        let spent = privacy.epsilon_local.unwrap();
        assert!(spent <= 1.0, "node {i} spent {spent}");
    }
    let _ = std::fs::remove_dir_all(&out);
}

/// The DP-SGD walk (`sim/swarm-dpsgd.toml`: record level, a budget calibrating σ) on a star of 5
/// nodes: the run file says `kind = "dp-sgd"`, every node steps with the simulator's DP-SGD step
/// and enforces the budget with its policy, the centre (visited every other step, far more than
/// planned) runs out and makes noise-only steps, and the daemons end with the simulator's model
/// bit for bit, with the same metrics and the same skipped steps; no node ends above the budget.
#[test]
fn a_dp_sgd_swarm_ends_with_the_simulators_model_bit_for_bit() {
    let out = temp_dir("dpsgd");
    let sets = [
        "--set",
        "users=5",
        "--set",
        "steps=400",
        "--set",
        "topology.kind=star",
        "--set",
        "eval-every=100",
    ];
    swarm(
        &out.join("swarm"),
        &[
            &["--scenario", "sim/swarm-dpsgd.toml", "--nodes", "5"][..],
            &sets[2..],
        ]
        .concat(),
    );
    simulate(&out, "sim/swarm-dpsgd.toml", &sets);
    let run = std::fs::read_to_string(out.join("swarm/run.toml")).unwrap();
    assert!(
        run.contains("[algorithm]\nkind = \"dp-sgd\"\nlr = "),
        "{run}"
    );
    let z = check_final_models_agree(&out.join("swarm"), 5, 400);
    assert_eq!(z, z_bits(&json(&out.join("sim/final_model.json"))));
    assert_eq!(z, z_bits(&json(&out.join("swarm/final_model.json"))));
    // 100, 200, 300 and the end.
    check_metrics_match_the_simulators(&out, 4);
    let (mut skipped, mut recorded) = (0, 0);
    for i in 0..5 {
        let dir = out.join(format!("swarm/node-{i}/state"));
        let privacy = FinalModelFile::read(&dir).unwrap().privacy;
        let seqs = Ledger::seqs(&dir.join("ledger.bin")).unwrap();
        assert_eq!(seqs.len() as u64, privacy.contributions, "node {i}");
        recorded += seqs.len() as u64;
        skipped += privacy.skipped;
        assert_eq!(privacy.unit, "record-level", "node {i}");
        assert_eq!(privacy.budget_epsilon, Some(1.0));
        let spent = privacy.epsilon_local.unwrap();
        assert!(spent <= 1.0, "node {i} spent {spent}");
    }
    let sim = &json(&out.join("sim/summary.json"))["points"][0];
    assert_eq!(sim["algorithm"], "dp-sgd", "{sim:#}");
    assert!(skipped > 0, "the star's centre runs out of budget");
    assert_eq!(
        sim["privacy"]["budget"]["skipped_contributions"].as_f64(),
        Some(skipped as f64)
    );
    assert_eq!(recorded + skipped, 400, "every step made or skipped once");
    // The swarm's privacy figures are the simulator's, the certificate given the walk included:
    // the members' ledgers hold every visit, so the swarm rebuilds the walk the simulator
    // recorded.
    let swarm = &json(&out.join("swarm/summary.json"))["points"][0];
    assert_eq!(swarm["privacy"], sim["privacy"]);
    assert!(sim["privacy"]["network_given_walk"].is_object(), "{sim:#}");
    let _ = std::fs::remove_dir_all(&out);
}

/// `dpwalk ledger certify` on a DP-SGD swarm's ledgers (a star, whose centre runs out of budget,
/// so that the ledgers hold noise-only visits besides contributions): every user's certificate
/// given the walk is the simulator's for the same walk (`privacy_users.csv`), exactly; the output
/// says that the ledgers reveal the path; and a set of ledgers without one member's is refused
/// with the reason.
#[test]
fn ledger_certify_gives_the_simulators_certificate_given_the_walk() {
    let out = temp_dir("certify");
    let sets = [
        "--set",
        "users=5",
        "--set",
        "steps=400",
        "--set",
        "topology.kind=star",
    ];
    swarm(
        &out.join("swarm"),
        &[
            &["--scenario", "sim/swarm-dpsgd.toml", "--nodes", "5"][..],
            &sets[2..],
        ]
        .concat(),
    );
    simulate(&out, "sim/swarm-dpsgd.toml", &sets);
    let ledgers: Vec<PathBuf> = (0..5)
        .map(|i| out.join(format!("swarm/node-{i}/state/ledger.bin")))
        .collect();
    let noise_only: u64 = ledgers
        .iter()
        .map(|l| Ledger::open(l).unwrap().noise_only())
        .sum();
    assert!(noise_only > 0, "the star's centre runs out of budget");
    let certify = |ledgers: &[PathBuf], json: bool| {
        let mut c = dpwalk();
        c.args(["ledger", "certify", "--run"])
            .arg(out.join("swarm/run.toml"))
            .args(ledgers);
        if json {
            c.arg("--json");
        }
        c.output().expect("runs")
    };
    let output = certify(&ledgers, true);
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let cert: serde_json::Value = serde_json::from_str(&stdout).unwrap();
    assert_eq!(
        cert["label"],
        "network given the walk (ex post; not for calibration)"
    );
    assert!(
        cert["notice"]
            .as_str()
            .unwrap()
            .contains("no longer applies"),
        "{cert:#}"
    );
    // The simulator's users, by index.
    let csv = std::fs::read_to_string(out.join("sim/privacy_users.csv")).unwrap();
    let mut lines = csv.lines();
    let header: Vec<&str> = lines.next().unwrap().split(',').collect();
    let column = |name: &str| header.iter().position(|h| *h == name).unwrap();
    let (eps, observer, contributions) = (
        column("record_level_network_epsilon_given_walk"),
        column("network_observer_given_walk"),
        column("contributions"),
    );
    let rows: Vec<Vec<&str>> = lines.map(|l| l.split(',').collect()).collect();
    let users = cert["users"].as_array().unwrap();
    assert_eq!((rows.len(), users.len()), (5, 5));
    let mut made = 0;
    for (row, user) in rows.iter().zip(users) {
        let want: f64 = row[eps].parse().unwrap();
        let got = user["network_given_walk"]["epsilon"].as_f64().unwrap();
        assert_eq!(
            got.to_bits(),
            want.to_bits(),
            "user {}: {got} against {want}",
            row[0]
        );
        assert_eq!(
            user["worst_observer"].to_string(),
            row[observer],
            "user {}",
            row[0]
        );
        assert_eq!(user["contributions"].to_string(), row[contributions]);
        made += user["contributions"].as_u64().unwrap() + user["noise_only"].as_u64().unwrap();
    }
    assert_eq!(made, 400, "every step once");
    // The text says what the ledgers reveal, and labels the figure.
    let output = certify(&ledgers, false);
    let text = String::from_utf8_lossy(&output.stdout);
    assert!(output.status.success(), "{text}");
    for what in [
        "reveal the walk's path",
        "path-hidden network figure",
        "no longer applies",
        "above or below N1",
        "network given the walk (ex post; not for calibration)",
        "worst observer",
    ] {
        assert!(text.contains(what), "{what}: {text}");
    }
    // One member's ledger missing: refused, naming the member and the steps it leaves uncovered.
    let output = certify(&ledgers[..4], false);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(!output.status.success());
    assert!(
        stderr.contains("no ledger was given for member 4")
            && stderr.contains("the walk's path needs every member's visits")
            && stderr.contains("are not covered"),
        "{stderr}"
    );
    let _ = std::fs::remove_dir_all(&out);
}

/// The network budget (`sim/swarm-network.toml`: the DP-SGD walk, record level, `view =
/// "network"`): the run file's `[budget]` says `view = "network"`, every node calibrates σ to the
/// path-hidden figure N1 and enforces its cap, the daemons end with the simulator's model bit for
/// bit, and every node's `final_model.json` shows a network ε within the budget, below its
/// local ε.
#[test]
fn a_network_budget_swarm_ends_with_the_simulators_model_and_within_its_budget() {
    let out = temp_dir("network");
    let sets = ["--set", "steps=1000", "--set", "eval-every=250"];
    swarm(
        &out.join("swarm"),
        &[
            &["--scenario", "sim/swarm-network.toml", "--nodes", "8"][..],
            &sets[..],
        ]
        .concat(),
    );
    simulate(&out, "sim/swarm-network.toml", &sets);
    let run = std::fs::read_to_string(out.join("swarm/run.toml")).unwrap();
    assert!(run.contains("view = \"network\""), "{run}");
    let z = check_final_models_agree(&out.join("swarm"), 8, 1000);
    assert_eq!(z, z_bits(&json(&out.join("sim/final_model.json"))));
    check_metrics_match_the_simulators(&out, 4);
    for i in 0..8 {
        let privacy = FinalModelFile::read(&out.join(format!("swarm/node-{i}/state")))
            .unwrap()
            .privacy;
        assert_eq!(privacy.budget_view.as_deref(), Some("network"), "node {i}");
        assert_eq!(
            privacy.network_label.as_deref(),
            Some("network (path hidden)")
        );
        let network = privacy.epsilon_network.expect("a network figure");
        assert!(network <= 1.0, "node {i}: network eps {network}");
        let local = privacy.epsilon_local.unwrap();
        assert!(
            local > network,
            "node {i}: local {local} vs network {network}"
        );
    }
    let _ = std::fs::remove_dir_all(&out);
}

/// Parses "N holders killed|stopped" from the swarm's last line.
fn disruptions(stdout: &str) -> u32 {
    let line = stdout.lines().last().unwrap_or("");
    let words: Vec<&str> = line.split_whitespace().collect();
    let at = words
        .iter()
        .position(|w| *w == "holders")
        .expect("the swarm's last line");
    words[at - 1].parse().unwrap()
}

/// The disruptions made, checked against the `scheduled` count: at least one, at most the
/// schedule, and any shortfall (the walk ended first) said by the swarm.
fn disrupted(stdout: &str, scheduled: u32) -> u32 {
    let made = disruptions(stdout);
    assert!(
        (1..=scheduled).contains(&made),
        "{made} disruptions of {scheduled} scheduled:\n{stdout}"
    );
    assert!(
        made == scheduled || stdout.contains("the walk ended before disruption"),
        "{made} of {scheduled} made, and the swarm did not say why:\n{stdout}"
    );
    made
}

// The disruptions are scheduled in hops of the walk, not seconds: disruption t is due once the walk
// has made t·N hops and is made exactly once, late if need be (after the previous victim answers
// again). How many the walk outlasts still depends on the machine: on a loaded one a victim takes
// longer to come back while the walk goes on (once, 19 of 20 at load 6.5). So the tests hold the
// count to what does not depend on speed: at least one, at most the schedule, and a shortfall
// said by the swarm (`disrupted`). They run the user-level `sim/swarm.toml` (σ given, no budget):
// under a budget a node whose re-routed walk visits it more often than planned skips steps, and
// `check_ledgers` holds every step to be made.

#[test]
fn the_walk_survives_sigkill_of_the_holder_with_exact_ledgers() {
    let out = temp_dir("kill");
    let (steps, every, count) = (3000, 50, 20);
    let stdout = swarm(
        &out,
        &[
            "--scenario",
            "sim/swarm.toml",
            "--nodes",
            "8",
            "--set",
            &format!("steps={steps}"),
            "--kill-holder-every",
            &format!("{every}hops"),
            "--disruptions",
            &count.to_string(),
        ],
    );
    let kills = disrupted(&stdout, count);
    let z = check_final_models_agree(&out, 8, steps);
    let doubled = check_ledgers(&out, 8, steps);
    // Issue 27, item 6: where no node routed around a member (no hand-off timed out, no backup
    // was resumed, no member was avoided: each victim was back within the hand-off timeout, so
    // every kill was waited for), the walk is the simulator's, bit for bit. On a machine too
    // loaded for that, the path may differ, and the test says which it saw.
    let logs: String = (0..8)
        .map(|i| std::fs::read_to_string(out.join(format!("node-{i}/node.log"))).unwrap())
        .collect();
    let timeouts: u64 = logs
        .lines()
        .filter_map(|l| l.split("handoff_timeouts=").nth(1))
        .filter_map(|rest| rest.split_whitespace().next()?.parse::<u64>().ok())
        .sum();
    let resumed = logs.matches("resuming the walk from our copy").count();
    // What a node logs (at info or above) when it draws or hands around a member.
    let avoided = [
        "re-routing the token",
        "avoiding member",
        "a dial to member",
        "no longer avoided",
    ]
    .iter()
    .map(|line| logs.matches(line).count())
    .sum::<usize>();
    let sets = ["--set", &format!("steps={steps}")];
    simulate(&out, "sim/swarm.toml", &sets);
    let same = z == z_bits(&json(&out.join("sim/final_model.json")));
    eprintln!(
        "{kills} kills, {doubled} steps made twice after a re-route, {timeouts} hand-off timeouts, {resumed} resumes, {avoided} lines of members avoided; the simulator's model: {same}"
    );
    if timeouts == 0 && resumed == 0 && avoided == 0 {
        assert!(
            same,
            "no hand-off timed out and no backup resumed, yet the walk left the simulator's path"
        );
    }
    let _ = std::fs::remove_dir_all(&out);
}

#[test]
fn a_holder_stopped_by_sigterm_hands_the_token_on() {
    let out = temp_dir("stop");
    let (steps, every, count) = (1500, 100, 6);
    let stdout = swarm(
        &out,
        &[
            "--scenario",
            "sim/swarm.toml",
            "--nodes",
            "5",
            "--set",
            &format!("steps={steps}"),
            "--stop-holder-every",
            &format!("{every}hops"),
            "--disruptions",
            &count.to_string(),
        ],
    );
    // Each stopped node exited with success (the swarm checks) within 15 s of SIGTERM.
    let stops = disrupted(&stdout, count);
    check_final_models_agree(&out, 5, steps);
    let doubled = check_ledgers(&out, 5, steps);
    eprintln!("{stops} stops, {doubled} steps made twice after a re-route");
    let _ = std::fs::remove_dir_all(&out);
}
