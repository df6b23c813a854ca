//! The PLD accountant of the Poisson-subsampled Gaussian against Google's `dp-accounting`
//! (`fixtures/pld_reference.json`, its `PLDAccountant` at the same grid step 1e-4;
//! `fixtures/README.md`), against the exact Gaussian profile, and against our RDP figure.
//!
//! - Within 1 % of dp-accounting's PLD ε on every setting (both use connect-the-dots; ours adds
//!   a bound on floating-point error to δ, so it may only sit a little above).
//! - `q = 1` is the Gaussian, whose exact ε is known: never below it.
//! - Never above the RDP figure of the same composition (a looser bound of the same mechanism).

#![allow(clippy::unwrap_used, clippy::expect_used)]

use dpwalk_privacy::gdp;
use dpwalk_privacy::mechanism::subsampled_gaussian;
use dpwalk_privacy::pld::{DEFAULT_INTERVAL, subsampled_gaussian_epsilon};
use dpwalk_privacy::rdp::{Conversion, DpBound, Orders};
use serde_json::Value;

fn rows(kind: &str) -> Vec<Value> {
    let reference: Value =
        serde_json::from_str(include_str!("fixtures/pld_reference.json")).unwrap();
    reference["rows"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|r| r["kind"] == kind)
        .cloned()
        .collect()
}

#[test]
fn subsampled_gaussian_is_within_one_percent_of_dp_accounting() {
    let orders = Orders::default_grid();
    let rows = rows("subsampled_gaussian");
    assert!(rows.len() >= 40, "{} rows", rows.len());
    let (mut lowest, mut highest) = (f64::INFINITY, 0.0_f64);
    let mut worst = String::new();
    let mut below_rdp = Vec::new();
    for row in &rows {
        let q = row["q"].as_f64().unwrap();
        let z = row["z"].as_f64().unwrap();
        let steps = row["steps"].as_u64().unwrap();
        for (delta, theirs) in row["epsilon"].as_object().unwrap() {
            let delta: f64 = delta.parse().unwrap();
            let theirs = theirs.as_f64().unwrap();
            let ours = subsampled_gaussian_epsilon(q, z, steps, delta, DEFAULT_INTERVAL)
                .unwrap()
                .expect("a finite figure");
            let ratio = ours / theirs;
            lowest = lowest.min(ratio);
            if ratio > highest {
                highest = ratio;
                worst = format!("q {q}, z {z}, K {steps}, δ {delta}");
            }
            assert!(
                (0.99..=1.01).contains(&ratio),
                "q {q}, z {z}, K {steps}, δ {delta}: ours {ours}, dp-accounting {theirs}"
            );
            if q == 1.0 {
                let exact = gdp::epsilon((steps as f64).sqrt() / z, delta).unwrap();
                assert!(
                    ours >= exact * (1.0 - 1e-9),
                    "z {z}, K {steps}, δ {delta}: {ours} below the exact {exact}"
                );
            }
            let rdp = match subsampled_gaussian(&orders, q, z)
                .unwrap()
                .repeat(steps)
                .to_dp(delta, Conversion::Tight)
                .unwrap()
            {
                DpBound::Finite(g) => g.rdp_epsilon,
                DpBound::NoFiniteGuarantee { .. } => f64::INFINITY,
            };
            assert!(
                ours <= rdp,
                "q {q}, z {z}, K {steps}, δ {delta}: {ours} above RDP {rdp}"
            );
            below_rdp.push(ours / rdp);
        }
    }
    below_rdp.sort_by(f64::total_cmp);
    println!(
        "ours / dp-accounting in [{lowest:.9}, {highest:.6}] over {} figures (largest at \
         {worst}); ours / RDP: median {:.4}, smallest {:.4}, largest {:.4}",
        below_rdp.len(),
        below_rdp[below_rdp.len() / 2],
        below_rdp[0],
        below_rdp[below_rdp.len() - 1]
    );
}
