//! The seed baselines and federated DP-SGD in the simulator: without noise each converges to the
//! reference optimum the walk is measured against; every kind runs end to end from a scenario
//! file with its outputs; bad parameters are refused with the key and the reason.

// Test helpers abort the test on a failed set-up, as the tests themselves do.
#![allow(clippy::expect_used, clippy::unwrap_used)]

mod common;

use common::{LASSO, LOGISTIC, final_gap, scenario};
use dpwalk_sim::scenario::{BudgetView, LoadedScenario, parse};
use dpwalk_sim::simulate::{prepare, simulate};
use std::path::{Path, PathBuf};

fn assert_converges(text: &str, kind: &str, extra: &[&str]) {
    let mut sets = vec![format!("algorithm.kind={kind}")];
    sets.extend(extra.iter().map(|s| s.to_string()));
    let sets: Vec<&str> = sets.iter().map(String::as_str).collect();
    let gap = final_gap(text, &sets);
    assert!(gap.abs() <= 1e-6, "{kind} {extra:?}: relative gap {gap:e}");
}

#[test]
fn non_private_fed_sgd_converges() {
    assert_converges(LASSO, "fed-sgd", &[]);
    assert_converges(LOGISTIC, "fed-sgd", &[]);
}

#[test]
fn non_private_dp_iadmm_converges_in_both_variants() {
    assert_converges(LASSO, "dp-iadmm", &["algorithm.variant=objt"]);
    assert_converges(LOGISTIC, "dp-iadmm", &["algorithm.variant=objt"]);
    // ObjP with a constant proximal weight: the paper's η = 1/√t makes the proximal term grow
    // without bound and slows the last digits down (a 7 % gap after 2 000 rounds here).
    let objp = [
        "algorithm.variant=objp",
        "algorithm.eta-power=0",
        "algorithm.eta=10",
    ];
    assert_converges(LASSO, "dp-iadmm", &objp);
    assert_converges(LOGISTIC, "dp-iadmm", &objp);
}

#[test]
fn non_private_ipadmm_converges() {
    assert_converges(LASSO, "ipadmm", &[]);
    assert_converges(LOGISTIC, "ipadmm", &["algorithm.inner-steps=3"]);
}

#[test]
fn non_private_pp_admm_converges() {
    assert_converges(LOGISTIC, "pp-admm", &[]);
}

/// A CSV of `users` records whose features are all 0 (every loss gradient is 0, so a run's
/// released model is its noise alone) and labels alternating 1, 0; returns its directory.
fn zero_features(users: usize, dim: usize, tag: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("dpwalk-bl-{tag}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let row = vec!["0"; dim].join(",");
    let text: String = (0..users)
        .map(|i| format!("{row},{}\n", (i + 1) % 2))
        .collect();
    std::fs::write(dir.join("zero.csv"), text).unwrap();
    dir
}

const USERS: usize = 20;
const DIM: usize = 200;

/// Zero features on the complete graph, a budget of ε = 1 at δ = 1e-5, eight repetitions.
fn zero_scenario(loss: &str, labels: &str) -> String {
    let positive = if labels == "binary" {
        "positive-label = \"1\""
    } else {
        ""
    };
    format!(
        r#"
seed = 11
users = {USERS}
steps = {USERS}
repetitions = 8

[data]
source = "csv"
path = "zero.csv"
labels = "{labels}"
{positive}

[problem]
loss = "{loss}"

[algorithm]
rho = 0.5
eta = 2.0
eta-schedule = "constant"
eta-power = 0
variant = "objp"
clip = 0.7
clip-l1 = 0.3
lr = 0.4
theta = 0.5

[privacy]
delta = 1e-5
epsilon = 1.0
"#
    )
}

/// The calibrated knob and the ε of the point in its budget's view (central where the point has
/// a central figure, else local), and the std of every coordinate of every repetition's
/// released model.
fn calibrated_run(text: &str, dir: &Path, sets: &[&str]) -> (f64, f64, f64) {
    let sets: Vec<String> = sets.iter().map(|s| s.to_string()).collect();
    let loaded = LoadedScenario::new(
        parse(text, Path::new("zero.toml"), &sets).expect("parses"),
        dir.to_path_buf(),
        "zero",
    )
    .expect("the scenario checks");
    let prepared = prepare(&loaded).expect("prepare");
    let results = simulate(&loaded, &prepared, true).expect("simulate");
    let summary = dpwalk_sim::output::summarize(&loaded, &prepared, &results);
    let point = &summary.points[0];
    let accounting = &point.privacy.accounting;
    let local = accounting.local.as_ref().expect("a local figure");
    let budget_view = accounting.budget.as_ref().expect("a budget").view;
    let epsilon = match budget_view {
        BudgetView::Central => {
            accounting
                .central
                .as_ref()
                .expect("a central figure")
                .epsilon
        }
        _ => local.figure.epsilon,
    }
    .expect("finite");
    let values: Vec<f64> = results[0].runs.iter().flat_map(|r| r.z.clone()).collect();
    let n = values.len() as f64;
    let mean = values.iter().sum::<f64>() / n;
    let var = values.iter().map(|v| (v - mean) * (v - mean)).sum::<f64>() / (n - 1.0);
    (point.sigma, epsilon, var.sqrt())
}

/// Empirical std of 1 600 draws within 15 % of the calibrated one (about 5 standard errors for
/// the heaviest tail here, the Laplace's), and the calibration within 1 % under its budget.
fn assert_scale(kind: &str, empirical: f64, predicted: f64, epsilon: f64) {
    let ratio = empirical / predicted;
    assert!(
        (0.85..=1.15).contains(&ratio),
        "{kind}: empirical std {empirical:e} vs calibrated {predicted:e}"
    );
    assert!(
        (0.99..=1.0).contains(&epsilon),
        "{kind}: calibrated to local epsilon {epsilon}"
    );
}

#[test]
fn each_noise_has_the_scale_of_its_calibration() {
    let n = USERS as f64;
    let dir = zero_features(USERS, DIM, "scale");
    let squared = zero_scenario("squared", "real");

    // fed-sgd, one round: w = −lr·mean_i(η_i/2), η_i ~ N(0, σ²).
    let (sigma, eps, std) = calibrated_run(&squared, &dir, &["algorithm.kind=fed-sgd"]);
    assert_scale("fed-sgd", std, 0.4 * sigma / 2.0 / n.sqrt(), eps);
    // On the central view (the released sum carries every user's noise) the same budget needs
    // σ/√n: the RDP of the sum at σ is the local view's at σ√n.
    let central = ["algorithm.kind=fed-sgd", "privacy.view=central"];
    let (sigma_c, eps_c, std_c) = calibrated_run(&squared, &dir, &central);
    assert_scale(
        "fed-sgd (central)",
        std_c,
        0.4 * sigma_c / 2.0 / n.sqrt(),
        eps_c,
    );
    let ratio = sigma_c * n.sqrt() / sigma;
    assert!(
        (ratio - 1.0).abs() < 0.01,
        "central sigma {sigma_c} vs local {sigma}: ratio {ratio}"
    );

    // dp-iadmm ObjP, two rounds: z_p = −ξ_p/κ, λ_p = −ρ z_p, so the server's
    // w = mean_p(z_p − λ_p/ρ) = −2 mean_p(ξ_p)/κ, κ = ρ + 1/η; Laplace(b) has std √2·b.
    let (b, eps, std) = calibrated_run(&squared, &dir, &["algorithm.kind=dp-iadmm", "steps=40"]);
    let kappa = 0.5 + 1.0 / 2.0;
    assert_scale(
        "dp-iadmm",
        std,
        2.0 * 2f64.sqrt() * b / (kappa * n.sqrt()),
        eps,
    );
    // Its scale is b = Δ₁/ε̄ with Δ₁ = 2G₁/n at user level.
    assert!(b > 0.0);

    // ipadmm, one round of l = 1: the broadcast is s·σ·ξ, s = 2G/(2ρ·deg + η).
    let (sigma, eps, std) = calibrated_run(&squared, &dir, &["algorithm.kind=ipadmm"]);
    let s = 2.0 * 0.7 / (2.0 * 0.5 * (n - 1.0) + 2.0);
    assert_scale("ipadmm", std, s * sigma / n.sqrt(), eps);

    // pp-admm, one round: f_i = −ε_i, ε_i of density ∝ exp(−ν‖ε‖), per-coordinate variance
    // (d+1)/ν².
    let logistic = zero_scenario("logistic", "binary");
    let (nu, eps, std) = calibrated_run(&logistic, &dir, &["algorithm.kind=pp-admm"]);
    assert_scale(
        "pp-admm",
        std,
        ((DIM + 1) as f64).sqrt() / nu / n.sqrt(),
        eps,
    );
}

/// The error of checking or preparing `text` with `sets`, as text: the error and its causes.
fn refusal(text: &str, sets: &[&str]) -> String {
    let sets: Vec<String> = sets.iter().map(|s| s.to_string()).collect();
    let parsed = parse(text, Path::new("inline.toml"), &sets).expect("parses");
    let loaded = match LoadedScenario::new(parsed, PathBuf::from("."), "inline") {
        Ok(loaded) => loaded,
        Err(e) => return format!("{:#}", anyhow::Error::from(e)),
    };
    match prepare(&loaded) {
        Ok(_) => panic!("{sets:?} must be refused"),
        Err(e) => format!("{:#}", anyhow::Error::from(e)),
    }
}

fn assert_refused(text: &str, sets: &[&str], needles: &[&str]) {
    let err = refusal(text, sets);
    for needle in needles {
        assert!(err.contains(needle), "{sets:?}: {err}");
    }
}

#[test]
fn what_a_method_cannot_run_is_refused_with_the_reason() {
    // A loss or regularizer outside penalty perturbation's proof.
    assert_refused(
        LASSO,
        &["algorithm.kind=pp-admm", "algorithm.theta=1"],
        &["pp-admm", "does not cover the Squared loss"],
    );
    assert_refused(
        LOGISTIC,
        &["algorithm.kind=pp-admm", "problem.l1=0.01"],
        &["pp-admm", "twice-differentiable"],
    );
    // Its proof replaces one record: users holding several are refused at user level.
    assert_refused(
        LOGISTIC,
        &["algorithm.kind=pp-admm", "users=10", "privacy.epsilon=1"],
        &["`algorithm.kind`: kind = \"pp-admm\"", "record"],
    );
    // l = 0, and keys a kind needs.
    assert_refused(
        LASSO,
        &["algorithm.kind=ipadmm", "algorithm.inner-steps=0"],
        &["`algorithm.inner-steps`", "at least 1"],
    );
    assert_refused(
        LASSO,
        &["algorithm.kind=ipadmm", "algorithm.l=0"],
        &["`algorithm.inner-steps`"],
    );
    let no_rho = LASSO.replace("rho = 1.0\n", "");
    assert_refused(
        &no_rho,
        &["algorithm.kind=dp-iadmm"],
        &["`algorithm.rho`", "needs it"],
    );
    assert_refused(
        LASSO,
        &["algorithm.kind=dp-iadmm", "privacy.epsilon=1"],
        &["`algorithm.clip-l1`"],
    );
    assert_refused(
        LOGISTIC,
        &[
            "algorithm.kind=pp-admm",
            "algorithm.nu=3",
            "privacy.epsilon=1",
        ],
        &["`algorithm.nu`", "not both"],
    );
    // Graphs a synchronous method cannot run on: disconnected, weighted.
    let edges = LASSO.replace(
        "kind = \"random-regular\"\ndegree = 3\n",
        "kind = \"edges\"\n",
    );
    let ring = "topology.edges=[[0,1],[1,2],[2,3],[3,4],[4,0],[5,6],[6,7],[7,8],[8,9],[9,5]]";
    assert_refused(
        &edges,
        &["algorithm.kind=ipadmm", ring],
        &["ipadmm", "connected"],
    );
    let weighted = "topology.edges=[[0,1,2.0],[1,2],[2,3],[3,4],[4,5],[5,6],[6,7],[7,8],[8,9]]";
    assert_refused(
        &edges,
        &["algorithm.kind=ipadmm", weighted],
        &["ipadmm", "weighted"],
    );
    // The papers' baselines are proved in the local view only; federated DP-SGD in the local
    // and the central views (it has no walk); and they run whole rounds.
    assert_refused(
        LASSO,
        &["algorithm.kind=ipadmm", "privacy.view=central"],
        &["`privacy.view`", "local"],
    );
    assert_refused(
        LASSO,
        &["algorithm.kind=fed-sgd", "privacy.view=network"],
        &["`privacy.view`", "no walk"],
    );
    assert_refused(
        LASSO,
        &[
            "sweep.kind=[\"admm\", \"dp-iadmm\"]",
            "privacy.view-by-kind.dp-iadmm=\"central\"",
        ],
        &["`privacy.view-by-kind.dp-iadmm`", "local"],
    );
    assert_refused(
        LASSO,
        &["algorithm.kind=ipadmm", "steps=5"],
        &["steps", "round"],
    );
    // dpwalk's own kinds at record level need a per-record gradient bound (tests/record_level.rs).
    assert_refused(
        LASSO,
        &["algorithm.kind=admm", "privacy.unit=record"],
        &["`privacy.unit`", "Squared loss has none"],
    );
}

#[test]
fn federated_kinds_run_once_whatever_the_graphs() {
    let text = format!(
        "{LASSO}\n[sweep]\nkind = [\"fed-sgd\", \"dp-iadmm\", \"ipadmm\"]\n\
         [[sweep.topology]]\nkind = \"complete\"\n[[sweep.topology]]\nkind = \"ring\"\n"
    )
    .replace("[topology]\nkind = \"random-regular\"\ndegree = 3\n", "");
    let loaded = scenario(&text, &[]);
    let points = loaded.points().to_vec();
    let names: Vec<&str> = points.iter().map(|p| p.name.as_str()).collect();
    assert_eq!(names, ["fed-sgd", "dp-iadmm", "ipadmm", "ipadmm"]);
}

#[test]
fn the_clipped_fraction_is_a_share_of_the_clip_s_tests() {
    // Ten users of ten records: DP-IADMM's and IPADMM's clips are per record, so they test ten
    // gradients per user update where the others test one; the fraction is of the tests made.
    let text = format!(
        "{LASSO}\n[sweep]\nkind = [\"admm\", \"dp-sgd\", \"fed-sgd\", \"dp-iadmm\", \"ipadmm\"]\n"
    )
    .replace(
        "steps = 20000\neval-every = 20000",
        "steps = 200\neval-every = 200",
    );
    for (clip, expected) in [("1e-9", 1.0), ("1e9", 0.0)] {
        let loaded = scenario(
            &text,
            &[
                &format!("algorithm.clip={clip}"),
                &format!("algorithm.clip-l1={clip}"),
            ],
        );
        let prepared = prepare(&loaded).expect("prepare");
        let results = simulate(&loaded, &prepared, true).expect("simulate");
        let summary = dpwalk_sim::output::summarize(&loaded, &prepared, &results);
        for p in &summary.points {
            assert_eq!(
                p.privacy.clipped_fraction, expected,
                "{} at clip {clip}",
                p.algorithm
            );
        }
    }
}

#[test]
fn every_kind_runs_end_to_end_with_its_outputs() {
    let text = format!(
        "{LOGISTIC}\n[privacy]\nepsilon = 2.0\ndelta = 1e-5\n[sweep]\n\
         kind = [\"admm\", \"dp-sgd\", \"fed-sgd\", \"dp-iadmm\", \"ipadmm\", \"pp-admm\"]\n"
    )
    .replace("clip = 1e6", "clip = 1.0\nclip-l1 = 1.0")
    // A larger first penalty: at θ = 0.5 the Jacobian floor alone exceeds ε = 2 over 100 rounds.
    .replace("theta = 0.5", "theta = 20")
    .replace(
        "steps = 40000\neval-every = 40000",
        "steps = 4000\neval-every = 400",
    );
    let loaded = scenario(&text, &[]);
    let prepared = prepare(&loaded).expect("prepare");
    let results = simulate(&loaded, &prepared, true).expect("simulate");
    let dir = std::env::temp_dir().join(format!("dpwalk-bl-e2e-{}", std::process::id()));
    let summary = dpwalk_sim::output::write_all(&dir, &loaded, &prepared, &results).unwrap();
    let kinds: Vec<&str> = summary.points.iter().map(|p| p.algorithm).collect();
    assert_eq!(
        kinds,
        ["admm", "dp-sgd", "fed-sgd", "dp-iadmm", "ipadmm", "pp-admm"]
    );
    for p in &summary.points {
        let local = p.privacy.accounting.local.as_ref().expect("local figure");
        let eps = local.figure.epsilon.expect("finite");
        assert!(eps <= 2.0 + 1e-9, "{}: local epsilon {eps}", p.algorithm);
        assert!(p.final_mean.train_objective.is_finite(), "{}", p.algorithm);
    }
    let csv = std::fs::read_to_string(dir.join("metrics.csv")).unwrap();
    let header = csv.lines().next().unwrap();
    assert!(header.ends_with(",round,bytes,consensus_gap"), "{header}");
    // Every row of a kind reports cumulative bytes growing with the rounds.
    let last_bytes = |kind: &str| -> u64 {
        csv.lines()
            .rfind(|l| l.split(',').nth(2) == Some(kind))
            .and_then(|l| l.rsplit(',').nth(1))
            .unwrap()
            .parse()
            .unwrap()
    };
    let (n, d) = (40u64, 5u64);
    // 100 rounds: the walk sends d floats per hop, a server round 2nd, a 4-regular graph 2|E|d.
    assert_eq!(last_bytes("admm"), 4000 * d * 8);
    assert_eq!(last_bytes("fed-sgd"), 100 * 2 * n * d * 8);
    assert_eq!(last_bytes("ipadmm"), 100 * 4 * n * d * 8);
    for file in [
        "summary.json",
        "convergence.png",
        "convergence_rounds.png",
        "convergence_bytes.png",
        "privacy_utility.png",
    ] {
        assert!(dir.join(file).exists(), "{file}");
    }
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn by_kind_tables_set_one_kind_s_keys() {
    let text = format!(
        "{LASSO}\n[sweep]\nkind = [\"dp-sgd\", \"fed-sgd\"]\n[by-kind.fed-sgd]\nlr = 0.01\nclip = 0.03\n"
    );
    let points = scenario(&text, &[]).points().to_vec();
    assert_eq!(points[0].method.describe(), "C=1000000 lr=0.5");
    assert_eq!(points[1].method.describe(), "C=0.03 lr=0.01");
    let typo = text.replace("lr = 0.01", "lrr = 0.01");
    assert_refused(&typo, &[], &["`by-kind.fed-sgd`", "lrr"]);
    // A table for a kind the run leaves out (`--set sweep.kind=…`) is harmless.
    let unused = text.replace("[by-kind.fed-sgd]", "[by-kind.ipadmm]");
    assert_eq!(scenario(&unused, &[]).points().len(), 2);
}
