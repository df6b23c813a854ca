//! Budgets in the simulator: σ is calibrated, the budget policy keeps every user within its
//! budget on the view it names, and the reported figures say who leaks most to whom.

// Test helpers abort the test on a failed set-up, as the tests themselves do.
#![allow(clippy::expect_used, clippy::unwrap_used)]

use dpwalk_sim::output::summarize;
use dpwalk_sim::scenario::{LoadedScenario, parse};
use dpwalk_sim::simulate::{prepare, simulate};
use std::path::{Path, PathBuf};

const BUDGET: &str = r#"
seed = 4
users = 40
steps = 4000
eval-every = 4000

[data]
source = "synthetic-lasso"
rows = 40
dim = 8
sparsity = 2

[problem]
loss = "squared"
l1 = 0.01

[algorithm]
clip = 0.5

[privacy]
delta = 1e-5
epsilon = 4.0
"#;

fn summary(text: &str, sets: &[&str]) -> serde_json::Value {
    let sets: Vec<String> = sets.iter().map(|s| s.to_string()).collect();
    let scenario = parse(text, Path::new("inline.toml"), &sets).expect("parses");
    let loaded =
        LoadedScenario::new(scenario, PathBuf::from("."), "inline").expect("the scenario checks");
    let prepared = prepare(&loaded).expect("prepare");
    let results = simulate(&loaded, &prepared, true).expect("simulate");
    serde_json::to_value(summarize(&loaded, &prepared, &results)).expect("json")
}

/// The figure a budget constrains: network for a DP-SGD walk, local for an ADMM walk.
fn worst(privacy: &serde_json::Value, view: &str) -> f64 {
    privacy[view]["epsilon"]
        .as_f64()
        .unwrap_or_else(|| panic!("{view} epsilon in {privacy}"))
}

#[test]
fn an_admm_walk_has_no_network_figure_and_its_local_budget_holds() {
    // On a star the centre holds the token every other step: far more visits than planned.
    let s = summary(BUDGET, &["topology.kind=star"]);
    let privacy = &s["points"][0]["privacy"];
    assert!(privacy["network"].is_null(), "{privacy}");
    let notes = privacy["notes"].to_string();
    assert!(
        notes.contains("no network bound is proved for the ADMM walk"),
        "{notes}"
    );
    assert_eq!(privacy["budget"]["view"], "local");
    // The 0.99 quantile of Binomial(4000, 1/40): 124 contributions planned.
    assert_eq!(privacy["budget"]["calibrated_for_contributions"], 124);
    let local = worst(privacy, "local");
    assert!(
        local <= 4.0 * (1.0 + 1e-12),
        "local {local} exceeds the budget"
    );
    assert!(local > 3.9, "the policy stops close to the budget: {local}");
    assert!(
        privacy["budget"]["skipped_contributions"]
            .as_f64()
            .expect("skipped")
            > 1000.0
    );
}

/// A DP-SGD walk of one pass (as many steps as users: 12, small enough for the ring's
/// pair-by-pair figure to take a fraction of a second) at a given σ.
fn one_pass(topology: &str) -> serde_json::Value {
    let text = BUDGET
        .replace(
            "steps = 4000\neval-every = 4000",
            "steps = 12\neval-every = 12",
        )
        .replace("users = 40", "users = 12")
        .replace("epsilon = 4.0", "");
    summary(
        &text,
        &[
            "algorithm.kind=dp-sgd",
            "algorithm.sigma=2",
            &format!("topology.kind={topology}"),
        ],
    )
}

#[test]
fn a_dp_sgd_walk_has_the_path_hidden_network_figure() {
    for topology in ["complete", "ring"] {
        let s = one_pass(topology);
        let privacy = &s["points"][0]["privacy"];
        let nw = &privacy["network"];
        assert_eq!(nw["label"], "network (path hidden)", "{nw}");
        // No budget: every visit may contribute, the cap is the walk's steps.
        assert_eq!(nw["steps"], 12, "{nw}");
        assert_eq!(nw["cap"], 12, "{nw}");
        assert_eq!(nw["cap_enforced"], false, "{nw}");
        assert!(nw.get("inverse_hitting").is_none(), "{nw}");
        assert!(
            nw["assumptions"].to_string().contains("non-expansive"),
            "{nw}"
        );
        // All users alike on the complete graph; on the ring, a worst user and observer.
        assert_eq!(nw["user"].is_null(), topology == "complete", "{nw}");
        assert_eq!(nw["observer"].is_null(), topology == "complete", "{nw}");
        let network = worst(privacy, "network");
        assert!(network > 0.0 && network.is_finite(), "{topology}: {nw}");
        assert!(
            !privacy["notes"].to_string().contains("one contribution"),
            "{privacy}"
        );
    }
}

#[test]
fn without_enforcement_the_busiest_user_overspends() {
    let sets = ["topology.kind=star", "privacy.enforce=false"];
    let s = summary(BUDGET, &sets);
    let privacy = &s["points"][0]["privacy"];
    assert!(
        worst(privacy, "local") > 4.0,
        "the star's centre exceeds the plan: {privacy}"
    );
    assert_eq!(privacy["budget"]["skipped_contributions"], 0.0);
}

#[test]
fn on_a_ring_the_worst_observer_is_a_neighbour() {
    let s = one_pass("ring");
    let nw = &s["points"][0]["privacy"]["network"];
    let user = nw["user"].as_u64().expect("user") as i64;
    let observer = nw["observer"].as_u64().expect("observer") as i64;
    assert_eq!(
        (user - observer)
            .rem_euclid(12)
            .min((observer - user).rem_euclid(12)),
        1,
        "{nw}"
    );
}

#[test]
fn unattainable_or_inconsistent_budgets_are_refused() {
    let loaded = |sets: &[&str]| {
        let sets: Vec<String> = sets.iter().map(|s| s.to_string()).collect();
        parse(BUDGET, Path::new("inline.toml"), &sets).expect("parses")
    };
    assert!(
        loaded(&["algorithm.sigma=1"]).check().is_err(),
        "sigma and a budget"
    );
    assert!(loaded(&["privacy.epsilon=-1"]).check().is_err());
    assert!(loaded(&["privacy.delta=1"]).check().is_err());
    assert!(
        loaded(&["privacy.view=central"]).check().is_err(),
        "central view on a walk"
    );
    let err = loaded(&["privacy.view=network", "algorithm.mode=federated"])
        .check()
        .unwrap_err()
        .to_string();
    assert!(err.contains("for the walk"), "{err}");
}

/// A DP-SGD walk of 50 users and 2,000 steps on the complete graph (about 40 contributions
/// each) under an enforced budget: local ε = 8 here, `[privacy] view = "network"` by override.
const MANY: &str = r#"
seed = 5
users = 50
steps = 2000
eval-every = 2000

[data]
source = "synthetic-lasso"
rows = 100
dim = 4
sparsity = 2

[problem]
loss = "squared"
l1 = 0.01

[algorithm]
kind = "dp-sgd"
clip = 0.5

[topology]
kind = "complete"

[privacy]
delta = 1e-6
epsilon = 8.0
"#;

/// The path-hidden figure of `o`'s first point recomputed through the public API: N1 for its
/// steps, the enforced cap, σ and C, on the default grid.
fn path_hidden_by_hand(o: &Outputs) -> dpwalk_privacy::walk::PathHidden {
    use dpwalk_privacy::rdp::{Conversion, Orders};
    let pr = &o.results[0];
    let topology = &o.prepared.topologies[pr.point.topology].topology;
    let policy = pr.resolved.policy.as_ref().expect("an enforced budget");
    let sigma = pr.point.method.walk().expect("a walk").sigma();
    let setup = dpwalk_privacy::walk::Setup {
        orders: Orders::default_grid(),
        noise: dpwalk_privacy::Noise::new(sigma, 0.5).expect("noise"),
        delta: 1e-6,
        conversion: Conversion::Tight,
    };
    dpwalk_privacy::walk::path_hidden(&setup, topology, pr.point.steps, policy.cap(), false)
        .expect("path hidden")
}

#[test]
fn many_contributions_on_the_complete_graph_have_a_network_figure_below_the_local_one() {
    let o = outputs(MANY, &[], "many");
    let privacy = &o.summary["points"][0]["privacy"];
    let nw = &privacy["network"];
    assert_eq!(nw["label"], "network (path hidden)", "{nw}");
    let cap = o.results[0].resolved.policy.as_ref().expect("policy").cap();
    assert_eq!(nw["cap"].as_u64(), Some(cap), "{nw}");
    assert_eq!(nw["steps"], 2000, "{nw}");
    assert_eq!(nw["cap_enforced"], true, "{nw}");
    let most = o.results[0].runs[0].per_user.iter().max().copied();
    assert!(most.is_some_and(|k| k > 10), "many contributions: {most:?}");
    let (network, local) = (worst(privacy, "network"), worst(privacy, "local"));
    assert!(network < local, "network {network} against local {local}");
    // Exactly N1 computed directly for the same steps, cap, σ and C.
    let want = path_hidden_by_hand(&o).users[0].figure;
    assert_eq!(nw["epsilon"].as_f64(), want.epsilon, "{nw}");
    assert_eq!(nw["order"].as_f64(), want.order, "{nw}");
    // Every user's row carries it, with no observer (all alike), or its own local figure
    // where that is smaller (fewer contributions than the cap).
    let mut own_local = 0;
    for row in users_csv(&o.dir) {
        let network = row["network_epsilon"].parse::<f64>().ok();
        let local = row["local_epsilon"].parse::<f64>().ok();
        if local < want.epsilon {
            assert_eq!(network, local, "{row:?}");
            own_local += 1;
        } else {
            assert_eq!(network, want.epsilon, "{row:?}");
        }
        assert!(row["worst_observer"].is_empty(), "{row:?}");
        assert!(!row.contains_key("inverse_hitting"), "{row:?}");
    }
    eprintln!("{own_local} users with their own local figure below N1");
    // One figure for every pair: no path-hidden heatmap on the complete graph.
    assert!(!o.dir.join("privacy_heatmap.png").exists());
    // Given the walk, every pair has its own: the heatmap of N2, whose row maxima are each
    // user's N2 against its worst observer.
    assert!(o.dir.join("privacy_heatmap_given_walk.png").exists());
    let (scenario, pr) = (o.loaded.scenario(), &o.results[0]);
    let run = &pr.runs[0];
    let pairs = o
        .prepared
        .privacy
        .given_walk_pairs(scenario, &pr.point, run)
        .expect("50 users: every pair certified");
    let users = o
        .prepared
        .privacy
        .given_walk_users(scenario, &pr.point, run)
        .expect("certified");
    let n = users.len();
    for (i, user) in users.iter().enumerate() {
        let row = &pairs[i * n..(i + 1) * n];
        assert_eq!(row[i], 0.0);
        let worst = row.iter().cloned().fold(0.0, f64::max);
        assert_eq!(Some(worst), user.figure.epsilon, "user {i}");
        if let Some(j) = user.observer {
            assert_eq!(Some(row[j]), user.figure.epsilon, "user {i}, observer {j}");
        }
    }
    let _ = std::fs::remove_dir_all(&o.dir);
}

#[test]
fn a_network_budget_holds_in_the_network_view_and_not_in_the_local_one() {
    let o = outputs(
        MANY,
        &["privacy.view=network", "privacy.epsilon=1"],
        "network-budget",
    );
    let privacy = &o.summary["points"][0]["privacy"];
    assert_eq!(privacy["budget"]["view"], "network", "{privacy}");
    let (network, local) = (worst(privacy, "network"), worst(privacy, "local"));
    assert!(
        network <= 1.0 * (1.0 + 1e-12),
        "network {network} above the budget"
    );
    assert!(
        local > 1.0,
        "local {local}: the budget is on the network view"
    );
    assert_eq!(
        privacy["network"]["epsilon"].as_f64(),
        path_hidden_by_hand(&o).users[0].figure.epsilon
    );
    let _ = std::fs::remove_dir_all(&o.dir);
}

#[test]
fn each_kind_s_budget_holds_in_its_own_view() {
    // One sweep, three views: the DP-SGD walk on the network view, federated DP-SGD on the
    // central one, the ADMM walk on the local one (the README's "What the network view buys").
    let o = outputs(
        MANY,
        &[
            r#"sweep.kind=["dp-sgd", "fed-sgd", "admm"]"#,
            "privacy.epsilon=1",
            r#"privacy.view="local""#,
            r#"privacy.view-by-kind.dp-sgd="network""#,
            r#"privacy.view-by-kind.fed-sgd="central""#,
        ],
        "views",
    );
    let points = o.summary["points"].as_array().expect("points");
    let views: Vec<(&str, &str)> = points
        .iter()
        .map(|p| {
            let view = p["privacy"]["budget"]["view"].as_str().expect("a view");
            (p["algorithm"].as_str().expect("a kind"), view)
        })
        .collect();
    assert_eq!(
        views,
        [
            ("dp-sgd", "network"),
            ("fed-sgd", "central"),
            ("admm", "local")
        ]
    );
    for (p, (kind, view)) in points.iter().zip(views) {
        let privacy = &p["privacy"];
        let held = worst(privacy, view);
        assert!(held <= 1.0 + 1e-12, "{kind}: {view} epsilon {held}");
        // The a-priori figures (network at the cap, central for every round) are what σ was
        // calibrated to, within the calibration's 1 %; the local one is the worst user's in the
        // run, who may have made fewer contributions than planned.
        if view != "local" {
            assert!(held >= 0.99, "{kind}: {view} epsilon {held}");
        }
        // Every other view it has is weaker, so its local figure is above the budget.
        if view != "local" {
            assert!(worst(privacy, "local") > 1.0, "{kind}: {privacy}");
        }
    }
    let _ = std::fs::remove_dir_all(&o.dir);
}

/// A DP-SGD walk of 10 users and 300 steps under an enforced local budget: about 30
/// contributions each, planned for 43.
const GIVEN_WALK: &str = r#"
seed = 11
users = 10
steps = 300
eval-every = 300

[data]
source = "synthetic-lasso"
rows = 40
dim = 4
sparsity = 2

[problem]
loss = "squared"
l1 = 0.01

[algorithm]
kind = "dp-sgd"
clip = 0.5

[privacy]
delta = 1e-6
epsilon = 8.0
"#;

/// The run directory of `text` with `sets`: the scenario, what it ran and its outputs.
struct Outputs {
    loaded: LoadedScenario,
    prepared: dpwalk_sim::simulate::Prepared,
    results: Vec<dpwalk_sim::simulate::PointResult>,
    summary: serde_json::Value,
    dir: PathBuf,
}

fn outputs(text: &str, sets: &[&str], name: &str) -> Outputs {
    let sets: Vec<String> = sets.iter().map(|s| s.to_string()).collect();
    let scenario = parse(text, Path::new("inline.toml"), &sets).expect("parses");
    let loaded =
        LoadedScenario::new(scenario, PathBuf::from("."), "inline").expect("the scenario checks");
    let prepared = prepare(&loaded).expect("prepare");
    let results = simulate(&loaded, &prepared, true).expect("simulate");
    let dir = std::env::temp_dir().join(format!("dpwalk-n2-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let summary = dpwalk_sim::output::write_all(&dir, &loaded, &prepared, &results).expect("write");
    let summary = serde_json::to_value(&summary).expect("json");
    Outputs {
        loaded,
        prepared,
        results,
        summary,
        dir,
    }
}

/// `privacy_users.csv` as maps from column name to field.
fn users_csv(dir: &Path) -> Vec<std::collections::HashMap<String, String>> {
    let text = std::fs::read_to_string(dir.join("privacy_users.csv")).expect("privacy_users.csv");
    let mut lines = text.lines();
    let header: Vec<String> = lines
        .next()
        .expect("a header")
        .split(',')
        .map(String::from)
        .collect();
    for column in [
        "network_epsilon_given_walk",
        "network_order_given_walk",
        "network_observer_given_walk",
    ] {
        assert!(header.iter().any(|h| h == column), "{column} in {header:?}");
    }
    lines
        .map(|l| {
            let fields: Vec<&str> = l.split(',').collect();
            assert_eq!(fields.len(), header.len(), "{l}");
            header
                .iter()
                .cloned()
                .zip(fields.iter().map(|f| f.to_string()))
                .collect()
        })
        .collect()
}

fn number(row: &std::collections::HashMap<String, String>, column: &str) -> f64 {
    row[column]
        .parse()
        .unwrap_or_else(|_| panic!("{column} in {row:?}"))
}

/// The walk of repetition 0 replayed through `dpwalk_core`'s public walk (the simulator's seeds,
/// step and next hop, the point's budget policy): who held the token at each step and whether it
/// contributed.
fn replay(o: &Outputs) -> Vec<dpwalk_privacy::network::excursion::Visit> {
    use dpwalk_core::rng::node_rng;
    use dpwalk_core::step::{Algorithm, StepScratch};
    use dpwalk_core::walk::{Turn, Update, start_holder, visit};
    let s = o.loaded.scenario();
    let pr = &o.results[0];
    let Some(Algorithm::Sgd(params)) = pr.point.method.walk() else {
        panic!("a DP-SGD walk");
    };
    let problem = &o.prepared.problem;
    let topology = &o.prepared.topologies[pr.point.topology].topology;
    let policy = pr.resolved.policy.as_ref().expect("an enforced budget");
    let n = problem.n_users();
    let seed = dpwalk_sim::simulate::repetition_seed(s.seed, 0);
    let mut rngs: Vec<_> = (0..n as u64).map(|i| node_rng(seed, i)).collect();
    let mut scratch = StepScratch::new(problem.dim(), Default::default());
    let mut w = vec![0.0; problem.dim()];
    let mut made = vec![0u64; n];
    let mut holder = start_holder(seed, n);
    let mut path = Vec::new();
    for _ in 0..pr.point.steps {
        let turn = if policy.allows(made[holder]) {
            Turn::Contribute
        } else {
            Turn::NoiseOnly
        };
        let update = Update::Sgd { params };
        let (c, next) = visit(
            problem,
            topology,
            holder,
            update,
            turn,
            &mut w,
            &mut rngs[holder],
            &mut scratch,
        )
        .expect("a step");
        made[holder] += u64::from(c.is_some());
        path.push(dpwalk_privacy::network::excursion::Visit {
            holder,
            contribution: c.is_some(),
        });
        holder = next;
    }
    assert_eq!(made, pr.runs[0].per_user, "the replay is the run");
    path
}

/// N2 recomputed from a user's Ψ by hand: `min(K, Ψ)·8αC²/σ²`, tight conversion, or the local
/// view's exact figure where that is smaller.
/// N2 by hand: `min(Ψ, K)·ε_loc(α)` is linear in α, its tight conversion
/// `ρα + ln((α−1)/α) − (ln δ + ln α)/(α − 1)` (0 where `δ² ≥ 1 − e^{−ρα}`) scanned over 20,000
/// orders evenly spread in `ln(α − 1)` across the default grid's span (the best order within
/// 0.03 % in `α − 1`), and the local view's exact figure, which bounds it too.
fn n2_by_hand(psi: f64, k: u64, sigma: f64, clip: f64, delta: f64) -> f64 {
    let rho = psi.min(k as f64) * dpwalk_privacy::local::local_rdp(&[2.0], sigma, clip)[0] / 2.0;
    let at = |a: f64| {
        let r = rho * a;
        if delta * delta >= -(-r).exp_m1() {
            return 0.0;
        }
        (r + ((a - 1.0) / a).ln() - (delta.ln() + a.ln()) / (a - 1.0)).max(0.0)
    };
    let (lo, hi) = (0.01_f64.ln(), 1023.0_f64.ln());
    let rdp = (0..20_000)
        .map(|x| at(1.0 + (lo + (hi - lo) * x as f64 / 19_999.0).exp()))
        .fold(f64::INFINITY, f64::min);
    // The local view (exact: K contributions are 4C√K/σ-GDP) bounds every observer too.
    let noise = dpwalk_privacy::Noise::new(sigma, clip).expect("noise");
    let orders = dpwalk_privacy::rdp::Orders::default_grid();
    let local = dpwalk_privacy::local::local_view(&orders, noise, k)
        .to_dp(delta, dpwalk_privacy::rdp::Conversion::Tight)
        .expect("a bound")
        .epsilon();
    rdp.min(local)
}

#[test]
fn every_user_of_a_dp_sgd_walk_gets_its_figure_given_the_walk() {
    for topology in ["complete", "star"] {
        let o = outputs(
            GIVEN_WALK,
            &[&format!("topology.kind={topology}")],
            topology,
        );
        let rows = users_csv(&o.dir);
        assert_eq!(rows.len(), 10);
        let privacy = &o.summary["points"][0]["privacy"];
        let sigma = o.summary["points"][0]["sigma"].as_f64().expect("sigma");
        let clip = 0.5;
        // On the star the centre holds the token every other step: it is spent long before the
        // end and makes noise-only steps, which the walk records as visits without contribution.
        let skipped = privacy["budget"]["skipped_contributions"]
            .as_f64()
            .expect("skipped");
        assert_eq!(skipped > 0.0, topology == "star", "{topology}: {privacy}");

        // Against the local figure, and > 0 for every user with a contribution.
        let mut below = 0;
        for row in &rows {
            let k = number(row, "contributions") as u64;
            let n2 = number(row, "network_epsilon_given_walk");
            let local = number(row, "local_epsilon");
            assert!(n2 <= local * (1.0 + 1e-12), "{topology}: {row:?}");
            if n2 < local * (1.0 - 1e-9) {
                below += 1;
            }
            assert_eq!(k > 0, n2 > 0.0, "{topology}: {row:?}");
            assert_eq!(k > 0, !row["network_observer_given_walk"].is_empty());
        }
        assert!(below > 0, "{topology}: some user is below its local figure");

        // An independent recomputation: the walk replayed through the public API, Ψ by
        // `certify`, ε by hand.
        let path = replay(&o);
        assert_eq!(
            path.iter().filter(|v| !v.contribution).count() as f64,
            skipped,
            "{topology}: the spent visits"
        );
        let certified = dpwalk_privacy::network::excursion::certify(10, &path);
        let delta = privacy["delta"].as_f64().expect("delta");
        for (row, c) in rows.iter().zip(&certified) {
            let k = number(row, "contributions") as u64;
            let want = n2_by_hand(c.psi, k, sigma, clip, delta);
            let got = number(row, "network_epsilon_given_walk");
            // Within 0.1 % of the best order, and never below it (an order's own figure).
            assert!(
                got <= want * (1.0 + 1e-3) + 1e-12 && got >= want * (1.0 - 1e-6),
                "{topology}: {got} against {want} ({row:?})"
            );
            let observer = c.observer.map(|j| j.to_string()).unwrap_or_default();
            assert_eq!(row["network_observer_given_walk"], observer);
        }

        // summary.json: the worst user's figure, labelled, with its observer.
        let n2 = &privacy["network_given_walk"];
        assert_eq!(
            n2["label"],
            "network given the walk (ex post; not for calibration)"
        );
        let worst = rows
            .iter()
            .map(|r| number(r, "network_epsilon_given_walk"))
            .fold(0.0, f64::max);
        assert_eq!(n2["epsilon"].as_f64(), Some(worst), "{n2}");
        let user = n2["user"].as_u64().expect("user") as usize;
        assert_eq!(
            n2["observer"].as_u64().map(|j| j as usize),
            certified[user].observer
        );
        assert!(n2["epsilon"].as_f64() <= privacy["local"]["epsilon"].as_f64());
        assert!(
            n2["assumptions"].to_string().contains("non-expansive"),
            "{n2}"
        );
        let _ = std::fs::remove_dir_all(&o.dir);
    }
}

#[test]
fn two_users_alternating_have_their_local_figure_given_the_walk() {
    // Each contribution is seen by the other user at the next hop: Ψ = K, N2 = local.
    let o = outputs(
        GIVEN_WALK,
        &[
            "users=2",
            "steps=41",
            "eval-every=41",
            "privacy.enforce=false",
        ],
        "two",
    );
    for row in users_csv(&o.dir) {
        let (n2, local) = (
            number(&row, "network_epsilon_given_walk"),
            number(&row, "local_epsilon"),
        );
        assert!((n2 - local).abs() <= 1e-12 * local, "{row:?}");
    }
    let _ = std::fs::remove_dir_all(&o.dir);
}

#[test]
fn an_admm_walk_has_no_figure_given_the_walk() {
    let o = outputs(GIVEN_WALK, &["algorithm.kind=admm"], "admm");
    for row in users_csv(&o.dir) {
        assert!(number(&row, "local_epsilon") > 0.0);
        for column in [
            "network_epsilon_given_walk",
            "network_order_given_walk",
            "network_observer_given_walk",
        ] {
            assert!(row[column].is_empty(), "{row:?}");
        }
    }
    let privacy = &o.summary["points"][0]["privacy"];
    assert!(privacy["network_given_walk"].is_null(), "{privacy}");
    assert!(
        privacy["notes"]
            .to_string()
            .contains("no network bound is proved for the ADMM walk"),
        "{privacy}"
    );
    let _ = std::fs::remove_dir_all(&o.dir);
}
