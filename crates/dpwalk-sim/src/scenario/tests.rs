//! Parsing, overrides, checks and sweep expansion of scenarios.

use super::*;
use crate::algorithm::Mode;
use std::path::Path;

const MINIMAL: &str = r#"
users = 10
steps = 100

[data]
source = "synthetic-lasso"

[problem]
loss = "squared"
l1 = 0.01

[algorithm]
sigma = 0.5
clip = 1.0
"#;

fn p() -> &'static Path {
    Path::new("test.toml")
}

/// Why `MINIMAL` with the override `set` is refused.
fn refusal(set: &str) -> String {
    let s = parse(MINIMAL, p(), &[set.into()]).expect("parses");
    s.check().expect_err(set).to_string()
}

#[test]
fn minimal_scenario_parses_with_defaults() {
    let s = parse(MINIMAL, p(), &[]).expect("parses");
    s.check().expect("valid");
    assert_eq!(s.seed, 1);
    assert_eq!(s.algorithm.mode, Mode::Decentralized);
    assert_eq!(s.points().expect("points").len(), 1);
    assert_eq!(s.eval_interval(s.steps), 2);
}

#[test]
fn a_scenario_without_an_algorithm_section_takes_its_defaults() {
    let text = MINIMAL.replace("[algorithm]\nsigma = 0.5\nclip = 1.0\n", "");
    assert!(!text.contains("[algorithm]"));
    let s = parse(&text, p(), &[]).expect("parses");
    assert_eq!(s.algorithm.kind, AlgorithmName::Admm);
    assert_eq!(s.algorithm.gamma, 1.0);
    assert_eq!(s.algorithm.lambda, 0.5);
    assert_eq!(s.algorithm.sigma, 0.0);
    assert_eq!(s.algorithm.clip, None);
    assert_eq!(s.algorithm.lr, 0.1);
    let s = parse(&text, p(), &["algorithm.sigma=2".into()]).expect("an override adds it");
    assert_eq!(s.algorithm.sigma, 2.0);
}

#[test]
fn unknown_key_names_key_file_and_line() {
    let text = MINIMAL.replace("sigma = 0.5", "sigam = 0.5");
    let err = parse(&text, p(), &[]).expect_err("must fail").to_string();
    assert!(err.contains("sigam"), "{err}");
    assert!(err.contains("test.toml"), "{err}");
    assert!(err.contains("line 13"), "{err}");
}

#[test]
fn a_node_toml_or_a_run_file_is_named_as_what_it_is() {
    let node = "run = \"run.toml\"\nidentity = \"node.key\"\nstate-dir = \"state\"\n[data]\nsource = \"csv\"\npath = \"d.csv\"\n";
    let err = parse(node, p(), &[])
        .expect_err("not a scenario")
        .to_string();
    assert!(
        err.contains("this is a node.toml") && err.contains("dpwalk node --config"),
        "{err}"
    );
    let run = "run-id = \"r\"\nseed = 1\nsteps = 10\ndimension = 3\n[[members]]\nindex = 0\n";
    let err = parse(run, p(), &[])
        .expect_err("not a scenario")
        .to_string();
    assert!(err.contains("this is a run file"), "{err}");
    // A scenario with a mistake keeps toml's own message.
    let err = parse(&MINIMAL.replace("users", "usres"), p(), &[])
        .expect_err("a typo")
        .to_string();
    assert!(err.contains("usres") && !err.contains("this is"), "{err}");
}

#[test]
fn overrides_apply_and_are_checked() {
    let s = parse(
        MINIMAL,
        p(),
        &["algorithm.sigma=2.5".into(), "seed=9".into()],
    )
    .expect("parses");
    assert_eq!(s.algorithm.sigma, 2.5);
    assert_eq!(s.seed, 9);
    let s = parse(MINIMAL, p(), &["algorithm.mode=federated".into()]).expect("parses");
    assert_eq!(s.algorithm.mode, Mode::Federated);
    assert!(s.check().is_err(), "federated without m must be refused");
    let err = parse(MINIMAL, p(), &["algorithm.sigmaa=1".into()]).expect_err("unknown");
    assert!(err.to_string().contains("sigmaa"), "{err}");
    assert!(parse(MINIMAL, p(), &["novalue".into()]).is_err());
}

#[test]
fn impossible_parameters_are_refused_with_reason() {
    for (set, needle) in [
        ("algorithm.sigma=-1", "sigma"),
        ("algorithm.clip=0", "clip"),
        ("algorithm.lambda=1.5", "lambda"),
        ("algorithm.gamma=0", "gamma"),
    ] {
        let err = refusal(set);
        assert!(err.contains(needle), "{set}: {err}");
    }
    let s = parse(
        MINIMAL,
        p(),
        &[
            "algorithm.mode=federated".into(),
            "algorithm.blocks-per-round=11".into(),
        ],
    )
    .expect("parses");
    assert!(
        s.check()
            .expect_err("m > n")
            .to_string()
            .contains("blocks-per-round")
    );
}

#[test]
fn sweep_is_a_product_without_duplicate_runs() {
    let text = format!(
        "{MINIMAL}\n[sweep]\nkind = [\"admm\", \"dp-sgd\"]\nsigma = [0.5, 1.0]\ngamma = [1.0, 2.0]\n"
    );
    let s = parse(&text, p(), &[]).expect("parses");
    let points = s.points().expect("valid");
    // ADMM: 2 sigmas × 2 gammas; DP-SGD ignores gamma: 2 sigmas.
    assert_eq!(points.len(), 6);
    let text =
        format!("{MINIMAL}\n[sweep]\nkind = [\"admm\", \"dp-sgd\"]\nepsilon = [1.0, 2.0, 4.0]\n")
            .replace("sigma = 0.5", "");
    let s = parse(&text, p(), &[]).expect("parses");
    assert_eq!(
        s.points().expect("valid").len(),
        6,
        "one point per budget and algorithm"
    );
    let both = format!("{MINIMAL}\n[privacy]\nepsilon = 1.0\n");
    assert!(
        parse(&both, p(), &[]).expect("parses").check().is_err(),
        "sigma and a budget"
    );
}

#[test]
fn a_budget_point_cannot_run_before_its_noise_is_calibrated() {
    let text = format!("{MINIMAL}\n[privacy]\nepsilon = 2.0\n").replace("sigma = 0.5", "");
    let s = parse(&text, p(), &[]).expect("parses");
    let point = s.points().expect("valid")[0];
    assert_eq!(point.method.budget(), Some(2.0));
    assert!(
        point.given().is_none(),
        "no runnable point without its knob"
    );
    let given = parse(MINIMAL, p(), &[])
        .expect("parses")
        .points()
        .expect("valid")[0];
    let runnable = given.given().expect("sigma is given");
    assert_eq!((runnable.budget, runnable.method.knob()), (None, 0.5));
}

#[test]
fn scenario_level_refusals_name_their_key() {
    for (set, key) in [
        ("users=0", "`users`: "),
        ("repetitions=0", "`repetitions`: "),
        ("eval-every=0", "`eval-every`: "),
        ("output.orders=[0.5]", "`output.orders`: "),
        ("privacy.view=\"central\"", "`privacy.view`: "),
        (
            "algorithm.blocks-per-round=2",
            "`algorithm.blocks-per-round`: ",
        ),
        ("privacy.epsilon=1.0", "`algorithm.sigma`: "),
    ] {
        let err = refusal(set);
        assert!(err.starts_with(key), "{set}: {err}");
    }
    let unclipped = parse(
        MINIMAL,
        p(),
        &["algorithm.sigma=0".into(), "privacy.epsilon=1.0".into()],
    )
    .expect("parses");
    let s = Scenario {
        algorithm: AlgorithmSpec {
            clip: None,
            ..unclipped.algorithm.clone()
        },
        ..unclipped
    };
    let err = s.check().expect_err("a budget without a clip").to_string();
    assert!(err.starts_with("`algorithm.clip`: "), "{err}");
}

#[test]
fn rounds_count_updates_per_user_in_every_mode() {
    let rounds = |sets: &[&str]| {
        let sets: Vec<String> = sets.iter().map(|s| s.to_string()).collect();
        let s = parse(MINIMAL, p(), &sets).expect("parses");
        let point = s.points().expect("valid")[0]
            .given()
            .expect("sigma is given");
        s.rounds_at(&point.method, 30)
    };
    // A hop of the walk, or a baseline's step, updates one of the 10 users.
    assert_eq!(rounds(&[]), 3.0);
    assert_eq!(rounds(&["algorithm.kind=fed-sgd", "algorithm.lr=0.1"]), 3.0);
    // A step of the centralized mode updates every user, of the federated mode m of them.
    assert_eq!(rounds(&["algorithm.mode=centralized"]), 30.0);
    assert_eq!(
        rounds(&["algorithm.mode=federated", "algorithm.blocks-per-round=5"]),
        15.0
    );
}

/// `MINIMAL` sweeping admm, dp-sgd and ipadmm, with the overrides `sets`.
fn three_kinds(sets: &[&str]) -> Result<Vec<PendingPoint>, ScenarioError> {
    let mut all = vec![
        r#"sweep.kind=["admm", "dp-sgd", "ipadmm"]"#.to_string(),
        "by-kind.ipadmm.rho=1.0".to_string(),
        "by-kind.ipadmm.eta=1.0".to_string(),
    ];
    all.extend(sets.iter().map(|s| s.to_string()));
    parse(MINIMAL, p(), &all)?.check()
}

#[test]
fn a_kind_s_own_steps_is_the_horizon_of_its_points_only() {
    let steps_of = |points: &[PendingPoint]| -> Vec<(AlgorithmName, u64)> {
        points.iter().map(|q| (q.name, q.steps)).collect()
    };
    let default = three_kinds(&[]).expect("valid");
    assert_eq!(
        steps_of(&default),
        [
            (AlgorithmName::Admm, 100),
            (AlgorithmName::DpSgd, 100),
            (AlgorithmName::Ipadmm, 100)
        ]
    );
    let longer = three_kinds(&["by-kind.dp-sgd.steps=200"]).expect("valid");
    assert_eq!(
        steps_of(&longer),
        [
            (AlgorithmName::Admm, 100),
            (AlgorithmName::DpSgd, 200),
            (AlgorithmName::Ipadmm, 100)
        ]
    );
    // Only the horizon differs: `steps` is not an `[algorithm]` key of the kind.
    for (a, b) in default.iter().zip(&longer) {
        assert_eq!(a.method, b.method);
    }
    let s = parse(MINIMAL, p(), &["by-kind.dp-sgd.steps=200".into()]).expect("parses");
    assert_eq!(s.steps_for(AlgorithmName::DpSgd).expect("valid"), 200);
    assert_eq!(s.steps_for(AlgorithmName::Admm).expect("valid"), 100);
    assert_eq!(s.rounds(200), 20);
}

#[test]
fn a_bad_kind_horizon_is_refused_with_its_key() {
    for value in ["0", "-3", "1.5", "\"long\""] {
        let set = format!("by-kind.dp-sgd.steps={value}");
        let err = three_kinds(&[&set]).expect_err(&set).to_string();
        assert!(err.starts_with("`by-kind.dp-sgd.steps`: "), "{set}: {err}");
    }
    // A round-based kind needs one round of all users in its own horizon, not the scenario's.
    let err = three_kinds(&["by-kind.ipadmm.steps=5"])
        .expect_err("less than a round")
        .to_string();
    assert!(err.starts_with("`by-kind.ipadmm.steps`: "), "{err}");
    assert!(err.contains("steps = 5"), "{err}");
    let steps: Vec<u64> = three_kinds(&["steps=5", "by-kind.ipadmm.steps=50"])
        .expect("ipadmm's own horizon has its rounds; the walks need none")
        .iter()
        .map(|q| q.steps)
        .collect();
    assert_eq!(steps, [5, 5, 50]);
}

#[test]
fn each_kind_s_budget_view_is_its_own_entry_else_the_common_one() {
    let sets = |extra: &[&str]| -> Vec<String> {
        let mut all = vec![
            r#"sweep.kind=["admm", "dp-sgd", "fed-sgd"]"#.to_string(),
            r#"privacy.view="local""#.to_string(),
        ];
        all.extend(extra.iter().map(|s| s.to_string()));
        all
    };
    let views = [
        r#"privacy.view-by-kind.dp-sgd="network""#,
        r#"privacy.view-by-kind.fed-sgd="central""#,
    ];
    let s = parse(MINIMAL, p(), &sets(&views)).expect("parses");
    s.check().expect("each kind's view fits it");
    assert_eq!(s.view_given(AlgorithmName::Admm), Some(BudgetView::Local));
    assert_eq!(
        s.view_given(AlgorithmName::DpSgd),
        Some(BudgetView::Network)
    );
    assert_eq!(
        s.view_given(AlgorithmName::FedSgd),
        Some(BudgetView::Central)
    );
    // Without the common view, the kinds without an entry keep their default.
    let s = parse(MINIMAL, p(), &views.map(String::from)).expect("parses");
    assert_eq!(s.view_given(AlgorithmName::Admm), None);
    // One view for all three does not fit the walk's ADMM: the refusal names the key it came
    // from, the common one or the kind's own entry.
    let err = parse(MINIMAL, p(), &sets(&[r#"privacy.view="central""#]))
        .expect("parses")
        .check()
        .expect_err("central for a walk")
        .to_string();
    assert!(err.starts_with("`privacy.view`: "), "{err}");
    let err = parse(
        MINIMAL,
        p(),
        &sets(&[r#"privacy.view-by-kind.admm="central""#]),
    )
    .expect("parses")
    .check()
    .expect_err("central for a walk")
    .to_string();
    assert!(err.starts_with("`privacy.view-by-kind.admm`: "), "{err}");
}
