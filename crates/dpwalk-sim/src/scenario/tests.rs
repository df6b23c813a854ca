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
    assert_eq!(s.eval_interval(), 2);
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
