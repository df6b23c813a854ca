//! A node keeps a bounded set of connections open (issue 28, item 3): a member it has not used
//! for `timeouts.idle` is told it is let go (`Message::Parting`) and its connections are closed.
//! Such a close is not a failure: no member may be counted down for it, since a member counted
//! down is avoided by the draws of the next hop, and the walk would leave the simulator's path.
//!
//! 40 members on the complete graph: each keeps its 32 eager neighbours both ways and dials the 7
//! others when the walk draws them; with `idle` at 200 ms, those on-demand connections are
//! closed within a few seconds of their hop, many times over a walk of 6,000 hops.

#![allow(clippy::expect_used, clippy::unwrap_used)]

mod common;

use std::time::Duration;

use common::{
    Reaper, lasso_run, lasso_scenario, scenario_records, simulated_model, temp_dir, write_run,
};
use dpwalk_net::config::Timeouts;

const MEMBERS: usize = 40;
const STEPS: u64 = 6_000;

/// The number after `key=` on the node's last line (`run finished …`).
fn reported(log: &str, key: &str) -> u64 {
    let line = log
        .lines()
        .rfind(|l| l.contains("run finished"))
        .unwrap_or_else(|| panic!("no end of run:\n{log}"));
    line.split(&format!("{key}="))
        .nth(1)
        .and_then(|rest| rest.split_whitespace().next())
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("no {key} in {line:?}"))
}

#[test]
fn members_let_go_when_idle_are_not_counted_down_and_the_model_is_the_simulators() {
    let dir = temp_dir("idle");
    let seed = 11;
    let scenario = lasso_scenario(seed, MEMBERS, STEPS);
    let (records, n_features) = scenario_records(&scenario);
    let run = lasso_run("idle", seed, STEPS, n_features);
    // The default hand-off and resume timeouts (a busy machine must not make a member late
    // enough to be routed around), and members idle after 200 ms.
    let timeouts = Timeouts {
        idle: 200,
        ..Timeouts::default()
    };
    let cluster = write_run(
        &dir,
        &["127.0.0.1"; MEMBERS],
        run,
        &records,
        n_features,
        timeouts,
    );
    let mut reaper = Reaper::default();
    for i in 0..MEMBERS {
        reaper.0.push((i, cluster.spawn(i, &[])));
    }
    cluster.wait_all(&mut reaper.0, Duration::from_secs(900));
    let model = cluster.agreed_model();
    assert_eq!(
        model,
        simulated_model(&dir.join("sim"), &scenario),
        "the swarm left the simulator's walk"
    );
    let mut closed = 0;
    for i in 0..MEMBERS {
        let log = cluster.log(i);
        assert_eq!(reported(&log, "handoff_timeouts"), 0, "node {i}:\n{log}");
        // Until the walk ends: then members exit one after the other, and each exit is a close
        // counted as such.
        let walk = log
            .split("the walk is over")
            .next()
            .and_then(|l| l.split("received the final model").next())
            .unwrap_or_default();
        assert!(
            !walk.contains("connection closed:"),
            "node {i} counted a member down:\n{log}"
        );
        closed += reported(&log, "idle_closed");
    }
    assert!(closed > 0, "no idle connection was closed");
    let _ = std::fs::remove_dir_all(&dir);
}
