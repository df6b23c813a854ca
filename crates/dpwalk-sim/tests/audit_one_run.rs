//! The one-run audit on small walks: ε̂ never exceeds the accountant's ε (complete and sparse
//! graphs, ADMM and DP-SGD, every view), it sees the canaries when the noise is small, and its
//! files are written. Fixed seeds: every figure here is the same on every run.

// Test helpers abort the test on a failed set-up, as the tests themselves do.
#![allow(clippy::expect_used, clippy::unwrap_used)]

#[allow(dead_code)] // the shared helpers; this file needs `SMALL` only
mod audit_common;

use audit_common::SMALL;
use dpwalk_sim::audit::canary::CanaryKind;
use dpwalk_sim::audit::one_run::{self, Config, OneRunPoint};
use dpwalk_sim::audit::statistic::View;
use dpwalk_sim::scenario::{LoadedScenario, parse};
use dpwalk_sim::simulate::prepare;
use std::path::{Path, PathBuf};

/// The two-world tests' small walk ([`SMALL`]) with 200 users, two records each, p = 4 (+ one
/// dedicated feature per canary), 800 hops.
const LARGER: &[&str] = &[
    "seed=11",
    "users=200",
    "steps=800",
    "eval-every=800",
    "data.rows=400",
];

fn audit(sets: &[&str], config: &Config) -> Vec<OneRunPoint> {
    let sets: Vec<String> = LARGER.iter().chain(sets).map(|s| s.to_string()).collect();
    let scenario = parse(SMALL, Path::new("inline.toml"), &sets).expect("parses");
    let loaded = LoadedScenario::new(scenario, PathBuf::from("."), "inline").unwrap();
    let prepared = prepare(&loaded).expect("prepare");
    one_run::audit(&loaded, &prepared, config).expect("audit")
}

fn config() -> Config {
    Config {
        canaries: None,
        observer: None,
        views: vec![View::Local, View::Network, View::Central],
        canary: CanaryKind::WhiteBox,
        steps: None,
        point: None,
        confidence: 0.95,
    }
}

#[test]
fn one_run_leakage_never_exceeds_the_bound_on_small_walks() {
    // σ = 4: per contribution μ = 4C/σ = 0.5, a local bound of about 2, within the reach of 199
    // canaries (about 3 when every guess is right); σ = 0.05: a bound far above reach, where the
    // local view must see the canaries.
    let cases: &[&[&str]] = &[
        &["topology.kind=complete", "algorithm.sigma=4"],
        &["topology.kind=ring", "algorithm.sigma=4"],
        &[
            "topology.kind=complete",
            "algorithm.sigma=4",
            "algorithm.lambda=0.1",
        ],
        &[
            "topology.kind=complete",
            "algorithm.sigma=4",
            "algorithm.kind=dp-sgd",
        ],
        &[
            "topology.kind=ring",
            "algorithm.sigma=4",
            "algorithm.kind=dp-sgd",
        ],
        &["topology.kind=complete", "algorithm.sigma=0.05"],
        &[
            "topology.kind=complete",
            "algorithm.sigma=0.05",
            "algorithm.kind=dp-sgd",
        ],
    ];
    for sets in cases {
        for p in audit(sets, &config()) {
            assert_eq!(p.canary_users.len(), 199);
            for v in &p.views {
                let bound = v.bound.epsilon_or_inf();
                let e = &v.estimate;
                eprintln!(
                    "{sets:?} {:?}: eps_hat {:.3} ({}/{} right, {} of {} canaries reached) <= bound {bound:.3}",
                    v.view, e.epsilon, e.best.correct, e.best.guesses, p.contributed, e.canaries
                );
                assert!(
                    e.epsilon <= bound,
                    "{sets:?} {:?}: {} > {bound}",
                    v.view,
                    e.epsilon
                );
                assert!(!v.exceeds_bound);
            }
            if sets.contains(&"algorithm.sigma=0.05") {
                let local = &p.views[0].estimate;
                assert!(
                    local.epsilon > 1.0,
                    "{sets:?}: local eps_hat {}",
                    local.epsilon
                );
            }
        }
    }
}

#[test]
fn one_run_files_are_written_and_bad_requests_refused() {
    let points = audit(&[], &config());
    let dir = std::env::temp_dir().join(format!("dpwalk-one-run-test-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    one_run::output::write_all(&dir, "inline", &points).unwrap();
    let csv = std::fs::read_to_string(dir.join("audit-one-run.csv")).unwrap();
    let lines: Vec<&str> = csv.lines().collect();
    assert_eq!(lines.len(), 1 + 3);
    assert_eq!(lines[0], one_run::output::csv_header());
    let json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("audit-one-run.json")).unwrap())
            .unwrap();
    assert_eq!(json["points"][0]["views"][2]["view"], "central");
    assert_eq!(json["points"][0]["observer"], 199);
    std::fs::remove_dir_all(&dir).unwrap();

    let sets: Vec<String> = LARGER.iter().map(|s| s.to_string()).collect();
    let scenario = parse(SMALL, Path::new("inline.toml"), &sets).unwrap();
    let loaded = LoadedScenario::new(scenario, PathBuf::from("."), "inline").unwrap();
    let prepared = prepare(&loaded).unwrap();
    for (canaries, observer, needle) in [
        (Some(200), None, "--canaries 200"),
        (Some(1), None, "--canaries 1"),
        (None, Some(500), "--observer 500"),
    ] {
        let cfg = Config {
            canaries,
            observer,
            ..config()
        };
        let err = one_run::audit(&loaded, &prepared, &cfg)
            .unwrap_err()
            .to_string();
        assert!(err.contains(needle), "{err}");
    }
}
