//! The run file: the example parses; each kind of bad input is refused naming its key and line;
//! the canonical hash ignores formatting, comments and member order but no field; diff names the
//! differing key.

#![allow(clippy::expect_used, clippy::unwrap_used)]

use dpwalk_core::problem::{Loss, Regularizer};
use dpwalk_core::spec::Noise;
use dpwalk_core::step::Algorithm;
use dpwalk_net::run::{Run, RunError, StepKind};

const EXAMPLE: &str = include_str!("../examples/run.toml");
const P0: &str = "12D3KooWK99VoVxNE7XzyBwXEzW7xhK7Gpv85r9F3V3fyKSUKPH5";
const P1: &str = "12D3KooWJWoaqZhDaoEFshF7Rh1bpY9ohihFhzcW6d69Lr2NASuq";
const P2: &str = "12D3KooWRndVhVZPCiQwHBBBdg769GyrPUW13zxwqQyf9r3ANaba";

fn parse(text: &str) -> Result<Run, RunError> {
    Run::parse(text, "run.toml")
}

/// Replaces the one occurrence of `from` in the example.
fn edit(from: &str, to: &str) -> String {
    assert_eq!(EXAMPLE.matches(from).count(), 1, "{from:?} must occur once");
    EXAMPLE.replace(from, to)
}

fn line_of(text: &str, needle: &str) -> usize {
    let at = text.find(needle).expect("needle in text");
    1 + text[..at].matches('\n').count()
}

/// Asserts that `text` is refused at the line of `needle`, naming `key`.
fn refused(text: &str, needle: &str, key: &str) -> String {
    match parse(text) {
        Err(e @ RunError::Invalid { .. }) => {
            let RunError::Invalid {
                ref origin,
                line,
                key: ref got,
                ..
            } = e
            else {
                unreachable!()
            };
            assert_eq!(origin, "run.toml");
            assert_eq!(line, line_of(text, needle), "{e}");
            assert_eq!(got.as_deref(), Some(key), "{e}");
            let shown = e.to_string();
            assert!(
                shown.starts_with(&format!("run.toml, line {line}: ")),
                "{shown}"
            );
            shown
        }
        other => panic!("expected a refusal naming {key}, got {other:?}"),
    }
}

#[test]
fn example_parses() {
    let run = parse(EXAMPLE).unwrap();
    assert_eq!(run.run_id(), "lasso-demo");
    assert_eq!((run.seed(), run.steps(), run.dimension()), (7, 3000, 64));
    assert_eq!(run.loss(), Loss::Squared);
    assert_eq!(run.regularizer(), Regularizer::L1 { l1: 0.001 });
    assert_eq!(run.noise(), Noise::Sigma(2.0));
    let Some(Algorithm::Admm(params)) = run.algorithm() else {
        panic!("the example is an ADMM run with sigma given")
    };
    assert_eq!(run.kind(), StepKind::Admm);
    assert_eq!(
        (
            params.gamma(),
            params.relaxation(),
            params.sigma(),
            params.clip()
        ),
        (1.0, 0.5, 2.0, Some(1.0))
    );
    let peers: Vec<String> = run.members().iter().map(|m| m.peer.to_base58()).collect();
    assert_eq!(peers, [P0, P1, P2]);
    assert_eq!(run.topology().n(), 3);
    assert_eq!(run.index_of(&P2.parse().unwrap()), Some(2));
    let ctx = run.context(Some(4));
    assert_eq!((ctx.dim, ctx.steps, ctx.members.len()), (64, 3000, 3));
    assert_eq!(run.hash().to_string().len(), 64);
}

#[test]
fn load_names_the_file() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("bad.toml");
    std::fs::write(&path, edit("seed = 7", "seed = 7\nsed = 1")).unwrap();
    let e = Run::load(&path).unwrap_err().to_string();
    assert!(e.contains("bad.toml, line 5: `sed`"), "{e}");
    assert!(matches!(
        Run::load(&dir.path().join("missing.toml")),
        Err(RunError::Read { .. })
    ));
    std::fs::write(&path, EXAMPLE).unwrap();
    assert_eq!(
        Run::load(&path).unwrap().hash(),
        parse(EXAMPLE).unwrap().hash()
    );
}

#[test]
fn unknown_keys_are_refused_with_their_line() {
    let text = edit("lambda = 0.5", "lambda = 0.5\ngama = 1.0");
    let e = refused(&text, "gama", "algorithm.gama");
    assert!(e.contains("unknown field"), "{e}");
    let text = edit(
        "run-id = \"lasso-demo\"",
        "run-id = \"lasso-demo\"\nrun_id = \"x\"",
    );
    refused(&text, "run_id", "run_id");
}

#[test]
fn bad_members_are_refused() {
    let text = edit("index = 2", "index = 1");
    let e = refused(
        &text,
        "index = 1\npeer-id = \"12D3KooWRnd",
        "members[2].index",
    );
    assert!(e.contains("already used by members[1]"), "{e}");

    let text = edit("index = 2", "index = 3");
    refused(&text, "index = 3", "members[2].index");

    let text = edit(P1, "12D3KooWnotapeer");
    let e = refused(&text, "12D3KooWnotapeer", "members[1].peer-id");
    assert!(e.contains("not a PeerId"), "{e}");

    let text = edit(P2, P0);
    let e = refused(
        &text,
        &format!("{P0}\"\naddrs = [\"/ip4/127.0.0.1/tcp/4003"),
        "members[2].peer-id",
    );
    assert!(e.contains("appears twice"), "{e}");

    let text = edit("/ip4/127.0.0.1/tcp/4002", "127.0.0.1:4002");
    refused(&text, "127.0.0.1:4002", "members[1].addrs");
}

#[test]
fn member_count_must_match_the_topology() {
    let text = edit("kind = \"complete\"", "kind = \"complete\"\nnodes = 4");
    let e = refused(&text, "nodes = 4", "topology.nodes");
    assert!(e.contains("3 members"), "{e}");

    let text = edit(
        "kind = \"complete\"",
        "kind = \"edges\"\nedges = [[0, 1], [1, 2], [2, 3]]",
    );
    refused(&text, "[topology]", "topology");

    // A disconnected graph cannot carry a walk over all members.
    let text = edit(
        "kind = \"complete\"",
        "kind = \"edges\"\nnodes = 3\nedges = [[0, 1]]",
    );
    refused(&text, "[topology]", "topology");

    let text = edit("kind = \"complete\"", "kind = \"file\"\npath = \"g.txt\"");
    refused(&text, "kind = \"file\"", "topology.kind");
}

#[test]
fn out_of_range_parameters_are_refused() {
    for (from, to, key) in [
        ("gamma = 1.0", "gamma = 0.0", "algorithm.gamma"),
        ("gamma = 1.0", "gamma = -1.0", "algorithm.gamma"),
        ("gamma = 1.0", "gamma = inf", "algorithm.gamma"),
        ("lambda = 0.5", "lambda = 1.5", "algorithm.lambda"),
        ("lambda = 0.5", "lambda = 0.0", "algorithm.lambda"),
        ("sigma = 2.0", "sigma = -0.5", "algorithm.sigma"),
        ("sigma = 2.0", "sigma = nan", "algorithm.sigma"),
        ("clip = 1.0", "clip = 0.0", "algorithm.clip"),
        ("l1 = 0.001", "l1 = -1.0", "problem.l1"),
        ("steps = 3000", "steps = 0", "steps"),
        ("dimension = 64", "dimension = 0", "dimension"),
        ("dimension = 64", "dimension = 1000000", "dimension"),
        (
            "run-id = \"lasso-demo\"",
            "run-id = \"has space\"",
            "run-id",
        ),
        ("run-id = \"lasso-demo\"", "run-id = \"\"", "run-id"),
    ] {
        let text = edit(from, to);
        refused(&text, to, key);
    }
}

#[test]
fn sigma_or_budget() {
    let budget = edit("sigma = 2.0\n", "\n[budget]\nepsilon = 1.0\ndelta = 1e-6\n");
    let run = parse(&budget).unwrap();
    assert_eq!(
        run.noise(),
        Noise::Budget {
            epsilon: 1.0,
            delta: 1e-6
        }
    );
    assert!(run.algorithm().is_none());
    assert_eq!(run.algorithm_with(3.0).unwrap().sigma(), 3.0);

    let both = edit(
        "sigma = 2.0\n",
        "sigma = 2.0\n\n[budget]\nepsilon = 1.0\ndelta = 1e-6\n",
    );
    refused(&both, "sigma = 2.0", "algorithm.sigma");
    let neither = edit("sigma = 2.0\n", "");
    refused(&neither, "[algorithm]", "algorithm");
    let bad_delta = budget.replace("delta = 1e-6", "delta = 1.0");
    refused(&bad_delta, "delta = 1.0", "budget.delta");
    let bad_eps = budget.replace("epsilon = 1.0", "epsilon = 0.0");
    refused(&bad_eps, "epsilon = 0.0", "budget.epsilon");
}

#[test]
fn multinomial_needs_classes_dividing_the_dimension() {
    let ok = edit("loss = \"squared\"", "loss = \"multinomial\"\nclasses = 4");
    assert_eq!(parse(&ok).unwrap().loss(), Loss::Multinomial { classes: 4 });
    let bad = edit("loss = \"squared\"", "loss = \"multinomial\"\nclasses = 5");
    refused(&bad, "classes = 5", "problem.classes");
    let missing = edit("loss = \"squared\"", "loss = \"multinomial\"");
    refused(&missing, "loss = \"multinomial\"", "problem.loss");
    let stray = edit("loss = \"squared\"", "loss = \"squared\"\nclasses = 2");
    refused(&stray, "classes = 2", "problem.classes");
}

/// The example rewritten: other formatting, comments, key order, members reversed, a default
/// written out, a PeerId's non-canonical… none of it changes the run.
const REFORMATTED: &str = r#"
# same run, written differently
dimension=64
steps   = 3_000
seed = 0x7
run-id = 'lasso-demo'

[[members]]
peer-id = "12D3KooWRndVhVZPCiQwHBBBdg769GyrPUW13zxwqQyf9r3ANaba"
addrs = [ "/ip4/127.0.0.1/tcp/4003" ]   # trailing comment
index = 2

[[members]]
index = 0
peer-id = "12D3KooWK99VoVxNE7XzyBwXEzW7xhK7Gpv85r9F3V3fyKSUKPH5"
addrs = ["/ip4/127.0.0.1/tcp/4001"]

[[members]]
addrs = ["/ip4/127.0.0.1/tcp/4002"]
index = 1
peer-id = "12D3KooWJWoaqZhDaoEFshF7Rh1bpY9ohihFhzcW6d69Lr2NASuq"

[topology]
kind = "complete"

[algorithm]
sigma = 2e0
clip = 1
lambda = 0.50
gamma = 1.0

[problem]
l2 = 0.0
l1 = 1e-3
loss = "squared"
"#;

#[test]
fn hash_ignores_formatting_comments_and_member_order() {
    let a = parse(EXAMPLE).unwrap();
    let b = parse(REFORMATTED).unwrap();
    assert_eq!(a.hash(), b.hash());
    assert_eq!(a.canonical_toml(), b.canonical_toml());
    assert!(a.diff(&b).is_empty());
}

#[test]
fn hash_changes_with_every_field_and_diff_names_it() {
    let base = parse(EXAMPLE).unwrap();
    for (from, to, key) in [
        (
            "run-id = \"lasso-demo\"",
            "run-id = \"lasso-demo2\"",
            "run-id",
        ),
        ("seed = 7", "seed = 8", "seed"),
        ("steps = 3000", "steps = 3001", "steps"),
        ("dimension = 64", "dimension = 65", "dimension"),
        ("loss = \"squared\"", "loss = \"logistic\"", "problem.loss"),
        ("l1 = 0.001", "l1 = 0.0010000000000000002", "problem.l1"),
        ("l1 = 0.001", "l1 = 0.001\nl2 = 0.5", "problem.l2"),
        ("gamma = 1.0", "gamma = 2.0", "algorithm.gamma"),
        ("lambda = 0.5", "lambda = 0.25", "algorithm.lambda"),
        ("clip = 1.0", "clip = 1.5", "algorithm.clip"),
        ("sigma = 2.0", "sigma = 2.5", "algorithm.sigma"),
        ("kind = \"complete\"", "kind = \"ring\"", "topology.kind"),
        (
            "kind = \"complete\"",
            "kind = \"complete\"\nnodes = 3",
            "topology.nodes",
        ),
        (
            "kind = \"complete\"",
            "kind = \"complete\"\nseed = 3",
            "topology.seed",
        ),
        ("tcp/4002", "tcp/4012", "members[1].addrs[0]"),
        (
            "addrs = [\"/ip4/127.0.0.1/tcp/4003\"]",
            "addrs = []",
            "members[2].addrs",
        ),
    ] {
        let changed = parse(&edit(from, to)).unwrap();
        assert_ne!(base.hash(), changed.hash(), "{to}");
        assert_eq!(base.diff(&changed), [key], "{to}");
        assert_eq!(changed.diff(&base), [key], "{to}");
    }
    // Swapping two members' PeerIds changes both entries.
    let swapped = parse(&EXAMPLE.replace(P0, "P0").replace(P1, P0).replace("P0", P1)).unwrap();
    assert_ne!(base.hash(), swapped.hash());
    assert_eq!(
        base.diff(&swapped),
        ["members[0].peer-id", "members[1].peer-id"]
    );
}

#[test]
fn absent_keys_do_not_collide() {
    // `nodes = 3` and `seed = 3` in the topology would encode alike in a format without key names.
    let nodes = parse(&edit(
        "kind = \"complete\"",
        "kind = \"complete\"\nnodes = 3",
    ))
    .unwrap();
    let seed = parse(&edit(
        "kind = \"complete\"",
        "kind = \"complete\"\nseed = 3",
    ))
    .unwrap();
    assert_ne!(nodes.hash(), seed.hash());
}

/// A `[budget]` run's σ is the smallest that keeps the planned contributions (the 0.99 quantile
/// of a member's visit count) within budget on the local view: it meets the target, and 0.1 %
/// less noise does not.
#[test]
fn a_budget_calibrates_sigma_for_the_planned_contributions() {
    use dpwalk_privacy::Noise as Sn;
    use dpwalk_privacy::local::local_view;
    use dpwalk_privacy::rdp::{Conversion, Orders};
    use dpwalk_privacy::walk::planned_contributions;

    let ring = |text: String| text.replace("kind = \"complete\"", "kind = \"ring\"");
    for text in [
        edit("sigma = 2.0\n", "\n[budget]\nepsilon = 1.0\ndelta = 1e-6\n"),
        ring(edit(
            "sigma = 2.0\n",
            "\n[budget]\nepsilon = 2.5\ndelta = 1e-5\n",
        )),
    ] {
        let run = parse(&text).unwrap();
        let Noise::Budget { epsilon, delta } = run.noise() else {
            panic!("a budget run");
        };
        let sigma = run.calibrate().unwrap().unwrap().sigma;
        let n = run.members().len() as f64;
        let k = planned_contributions(run.steps(), 1.0 / n, 0.99);
        assert_eq!(k, run.planned_contributions());
        assert!(
            k > run.steps().div_ceil(run.members().len() as u64),
            "the plan covers more than the mean"
        );
        let eps = |s: f64| {
            local_view(&Orders::default_grid(), Sn::new(s, 1.0).unwrap(), k)
                .to_dp(delta, Conversion::Tight)
                .unwrap()
                .epsilon()
        };
        assert!(eps(sigma) <= epsilon, "{} > {epsilon}", eps(sigma));
        assert!(
            eps(sigma * 0.999) > epsilon,
            "sigma {sigma} is not the smallest"
        );
    }
    // A run that gives σ has nothing to calibrate.
    let run = parse(EXAMPLE).unwrap();
    assert!(run.calibrate().unwrap().is_none());
}

/// The refusal of another member's run file names each key with both values, from the other
/// member's canonical text, even when that text is not a valid run.
#[test]
fn differences_carry_both_values() {
    let base = parse(EXAMPLE).unwrap();
    let other = parse(&EXAMPLE.replace("sigma = 2.0", "sigma = 2.5")).unwrap();
    let d = base.diff_text(&other.canonical_toml());
    assert_eq!(d.len(), 1, "{d:?}");
    assert_eq!(
        d[0].describe("member 1's"),
        "algorithm.sigma: 2.0 here, 2.5 in member 1's"
    );
    assert_eq!(
        d[0].swapped().describe("member 0's"),
        "algorithm.sigma: 2.5 here, 2.0 in member 0's"
    );
    // Not a valid run (σ < 0), still TOML: the key and both values.
    let invalid = base.canonical_toml().replace("sigma = 2.0", "sigma = -1.0");
    assert_eq!(
        base.diff_text(&invalid)[0].describe("theirs"),
        "algorithm.sigma: 2.0 here, -1.0 in theirs"
    );
    // A key only one side has.
    let extra =
        parse(&EXAMPLE.replace("kind = \"complete\"", "kind = \"complete\"\nseed = 3")).unwrap();
    assert_eq!(
        base.diff_text(&extra.canonical_toml())[0].describe("theirs"),
        "topology.seed: absent here, 3 in theirs"
    );
    // Not TOML at all: said so, with this run's hash.
    let garbage = base.diff_text("\u{0}not toml");
    assert!(
        garbage[0].describe("theirs").contains("not TOML"),
        "{garbage:?}"
    );
}

/// Fixed run files and the hash of each, pinned: the canonical form (and so every member's
/// agreement on a run) must not change when the code that reads run files does. Each case is the
/// example with one edit: a budget with δ omitted (the default is written out), a multinomial
/// problem with both weights, an inline edge list with a generator key absent, a record-level
/// logistic run, a DP-SGD run.
#[test]
fn canonical_form_and_hash_are_pinned() {
    let cases = [
        (
            EXAMPLE.to_string(),
            "33a854ec6a82c642a72463561cae7e53d5a266968848b7cc5fd7dc66d2b7ece0",
        ),
        (
            edit("sigma = 2.0\n", "\n[budget]\nepsilon = 1.5\n"),
            "c297d55bf80c42cb7b15474f3e1528c77ad5324dfdd9a9e589498f64ec679b9c",
        ),
        (
            edit(
                "loss = \"squared\"\nl1 = 0.001",
                "loss = \"multinomial\"\nclasses = 4\nl1 = 0.001\nl2 = 0.25",
            ),
            "cd240923edd53a784ab6ecdb86e6001b984d6665c0b3593954ed63ce9160c4d1",
        ),
        (
            edit(
                "kind = \"complete\"",
                "kind = \"edges\"\nedges = [[0, 1], [1, 2], [2, 0]]",
            ),
            "f2cc4efbb583e412b3bdfab1f4487039eefaf12f93907517bbedc14e04d8d7e7",
        ),
        (
            edit("loss = \"squared\"", "loss = \"logistic\"").replace(
                "[topology]",
                "[privacy]\nunit = \"record\"\nmin-records = 1000\nfeature-norm = 1.0\n\n[topology]",
            ),
            "b8497e7c20ce8bbb6e12ed64ef8e79a871f1431c2f96c8c3d6625eb7bc9b44d7",
        ),
        (
            dp_sgd("0.05"),
            "ad7c127105ea059719bade30c4474a0f4478632ed94dee3acef24f135b33123d",
        ),
    ];
    for (text, want) in cases {
        let run = parse(&text).unwrap();
        assert_eq!(run.hash().to_string(), want, "{}", run.canonical_toml());
    }
}

/// The example as a DP-SGD run with step size `lr`.
fn dp_sgd(lr: &str) -> String {
    edit(
        "gamma = 1.0\nlambda = 0.5\n",
        &format!("kind = \"dp-sgd\"\nlr = {lr}\n"),
    )
}

/// `kind = "dp-sgd"` runs the DP-SGD step with its `lr`, C and σ; the kind and `lr` are in the
/// canonical form (another run than the ADMM one), and `kind = "admm"` written out is the run
/// without the key, hash and all, so that run files written before the key keep their hash.
#[test]
fn a_dp_sgd_run_parses_and_is_its_own_run() {
    let run = parse(&dp_sgd("0.05")).unwrap();
    assert_eq!(run.kind(), StepKind::DpSgd);
    let Some(Algorithm::Sgd(params)) = run.algorithm() else {
        panic!("a DP-SGD step: {:?}", run.algorithm())
    };
    assert_eq!(
        (params.lr(), params.sigma(), params.clip()),
        (0.05, 2.0, Some(1.0))
    );
    assert_eq!(run.accounted_clip(), 1.0);
    let canonical = run.canonical_toml();
    assert!(
        canonical.contains("[algorithm]\nkind = \"dp-sgd\"\nlr = 0.05\nclip = 1.0\nsigma = 2.0\n"),
        "{canonical}"
    );
    let admm = parse(EXAMPLE).unwrap();
    assert_ne!(run.hash(), admm.hash());
    assert_ne!(run.hash(), parse(&dp_sgd("0.1")).unwrap().hash());
    assert!(
        !admm.canonical_toml().contains("kind = \"admm\""),
        "{}",
        admm.canonical_toml()
    );
    let explicit = parse(&edit("[algorithm]\n", "[algorithm]\nkind = \"admm\"\n")).unwrap();
    assert_eq!(explicit.canonical_toml(), admm.canonical_toml());
    assert_eq!(explicit.hash(), admm.hash());
    // A budget calibrates σ alike for both kinds: they are charged alike per contribution.
    let budget = |text: String| text.replace("sigma = 2.0\n", "\n[budget]\nepsilon = 1.0\n");
    let sgd = parse(&budget(dp_sgd("0.05"))).unwrap();
    assert!(sgd.algorithm().is_none());
    assert_eq!(
        sgd.calibrate().unwrap().unwrap().sigma,
        parse(&budget(EXAMPLE.to_string()))
            .unwrap()
            .calibrate()
            .unwrap()
            .unwrap()
            .sigma
    );
    assert!(matches!(
        sgd.algorithm_with(3.0),
        Ok(Algorithm::Sgd(p)) if p.sigma() == 3.0 && p.lr() == 0.05
    ));
}

/// Each kind needs its own keys and refuses the other's, naming the key and its line (the
/// table's when the key is missing); `lr` is checked like every parameter.
#[test]
fn the_keys_of_each_kind_are_required_and_the_others_refused() {
    let missing = refused(
        &edit("gamma = 1.0\nlambda = 0.5\n", "kind = \"dp-sgd\"\n"),
        "[algorithm]",
        "algorithm.lr",
    );
    assert!(missing.contains("kind = \"dp-sgd\" needs it"), "{missing}");
    let gamma = refused(
        &edit("lambda = 0.5\n", "kind = \"dp-sgd\"\nlr = 0.1\n"),
        "gamma = 1.0",
        "algorithm.gamma",
    );
    assert!(gamma.contains("not a key of kind = \"dp-sgd\""), "{gamma}");
    refused(
        &edit("gamma = 1.0\n", "kind = \"dp-sgd\"\nlr = 0.1\n"),
        "lambda = 0.5",
        "algorithm.lambda",
    );
    let lr = refused(
        &edit("gamma = 1.0\n", "gamma = 1.0\nlr = 0.1\n"),
        "lr = 0.1",
        "algorithm.lr",
    );
    assert!(lr.contains("not a key of kind = \"admm\""), "{lr}");
    refused(&edit("gamma = 1.0\n", ""), "[algorithm]", "algorithm.gamma");
    for bad in ["0.0", "-0.1", "inf", "nan"] {
        refused(&dp_sgd(bad), &format!("lr = {bad}"), "algorithm.lr");
    }
    refused(
        &dp_sgd("0.1").replace("clip = 1.0", "clip = 0.0"),
        "clip = 0.0",
        "algorithm.clip",
    );
    refused(
        &edit("[algorithm]\n", "[algorithm]\nkind = \"sgd\"\n"),
        "kind = \"sgd\"",
        "algorithm.kind",
    );
}

/// At record level a DP-SGD run accounts with `min(C, G₂/m)`: no γ, unlike ADMM's `γG₂/m`.
#[test]
fn a_record_level_dp_sgd_run_accounts_with_its_own_clip() {
    let table = "[privacy]\nunit = \"record\"\nmin-records = 500\nfeature-norm = 2.0\n\n";
    let record = |text: String| {
        text.replace("loss = \"squared\"", "loss = \"logistic\"")
            .replace("[topology]", &format!("{table}[topology]"))
    };
    let sgd = parse(&record(dp_sgd("0.1"))).unwrap();
    // G₂/m = 2 / 500.
    assert_eq!(sgd.accounted_clip(), 0.004);
    let admm = parse(&record(edit("gamma = 1.0", "gamma = 0.5"))).unwrap();
    assert_eq!(admm.accounted_clip(), 0.002);
}

/// The logistic example run with `[privacy]` `table` (empty: none).
fn logistic(table: &str) -> String {
    edit("loss = \"squared\"", "loss = \"logistic\"")
        .replace("[topology]", &format!("{table}[topology]"))
}

/// A record-level run accounts every figure with `min(C, γG₂/m)`, `G₂` the loss's factor times
/// `feature-norm`, and calibrates σ with it; a user-level `[privacy]` is the same run as none.
#[test]
fn a_record_level_run_accounts_with_the_record_level_clip() {
    use dpwalk_core::params::AdmmStep;
    use dpwalk_privacy::Noise as Sn;
    use dpwalk_privacy::local::local_view;
    use dpwalk_privacy::rdp::{Conversion, Orders};
    use dpwalk_privacy::unit::admm_record_level_clip;

    let budget = |text: String| text.replace("sigma = 2.0\n", "\n[budget]\nepsilon = 1.0\n");
    let user = parse(&logistic("")).unwrap();
    assert_eq!(user.accounted_clip(), 1.0);
    assert_eq!(user.unit_label(), "user-level");
    assert!(user.record_unit().is_none());
    let record_table = "[privacy]\nunit = \"record\"\nmin-records = 500\nfeature-norm = 2.0\n\n";
    let record = parse(&logistic(record_table)).unwrap();
    let step = AdmmStep::new(1.0, 0.5, Some(1.0)).unwrap();
    // γG₂/m = 1 · 2 / 500 = 0.004 < C = 1.
    assert_eq!(record.accounted_clip(), 0.004);
    assert_eq!(
        record.accounted_clip(),
        admm_record_level_clip(&step, 500, 2.0).unwrap()
    );
    assert_eq!(record.unit_label(), "record-level");
    assert_ne!(record.hash(), user.hash());
    assert!(
        record
            .canonical_toml()
            .contains("[privacy]\nunit = \"record\"\nmin-records = 500\nfeature-norm = 2.0\n"),
        "{}",
        record.canonical_toml()
    );
    // σ is calibrated with the accounted clip: the smallest σ within the budget at clip 0.004.
    let run = parse(&budget(logistic(record_table))).unwrap();
    let sigma = run.calibrate().unwrap().unwrap().sigma;
    let eps = |s: f64| {
        local_view(
            &Orders::default_grid(),
            Sn::new(s, 0.004).unwrap(),
            run.planned_contributions(),
        )
        .to_dp(1e-6, Conversion::Tight)
        .unwrap()
        .epsilon()
    };
    assert!(eps(sigma) <= 1.0, "{}", eps(sigma));
    assert!(
        eps(sigma * 0.999) > 1.0,
        "sigma {sigma} is not the smallest"
    );
    // A multinomial run's G₂ is √2·R.
    let multi = logistic(record_table)
        .replace("loss = \"logistic\"", "loss = \"multinomial\"\nclasses = 2");
    let multi = parse(&multi).unwrap();
    assert_eq!(
        multi.accounted_clip(),
        admm_record_level_clip(&step, 500, std::f64::consts::SQRT_2 * 2.0).unwrap()
    );
    // `unit = "user"` written out is the run without the table: the same hash.
    let explicit = parse(&logistic("[privacy]\nunit = \"user\"\n\n")).unwrap();
    assert_eq!(explicit.hash(), user.hash());
    assert_eq!(explicit.canonical_toml(), user.canonical_toml());
}

#[test]
fn record_level_keys_are_refused_with_their_line() {
    // The squared loss has no per-record gradient bound.
    let squared = EXAMPLE.replace(
        "[topology]",
        "[privacy]\nunit = \"record\"\nmin-records = 5\nfeature-norm = 1.0\n\n[topology]",
    );
    let shown = refused(&squared, "unit = \"record\"", "privacy.unit");
    assert!(shown.contains("Squared loss has none"), "{shown}");
    refused(
        &logistic("[privacy]\nunit = \"record\"\nmin-records = 0\nfeature-norm = 1.0\n\n"),
        "min-records = 0",
        "privacy.min-records",
    );
    refused(
        &logistic("[privacy]\nunit = \"record\"\nmin-records = 5\nfeature-norm = -1.0\n\n"),
        "feature-norm = -1.0",
        "privacy.feature-norm",
    );
    // A missing key is located at its table.
    refused(
        &logistic("[privacy]\nunit = \"record\"\nmin-records = 5\n\n"),
        "[privacy]",
        "privacy.feature-norm",
    );
    refused(
        &logistic("[privacy]\nunit = \"user\"\nmin-records = 5\n\n"),
        "min-records = 5",
        "privacy.min-records",
    );
}
