//! `dpwalk calibrate`: the smallest σ meeting a target (ε, δ) for a view of a scenario, by
//! bisection on the accountant itself ([`dpwalk_privacy::calibrate::calibrate`]).
//!
//! The scenario flags are those of `dpwalk account walk`. How each view reads them:
//! - local: K contributions per user (it bounds what every other user learns too);
//! - network: the DP-SGD walk on the complete graph (N1, path hidden): a walk of `--total-steps`
//!   steps (or n·K for `--steps-per-user K`), each user capped at K contributions; no network
//!   bound holds for the ADMM walk;
//! - centralized: K rounds of all n users (each user contributes once per round);
//! - federated: `R = ceil(K / q)` rounds with Poisson sampling at rate q, so that each user
//!   contributes K times in expectation.

use crate::cli::account::{ConversionArgs, ScenarioArgs, emit, fmt_eps};
use crate::cli::documents::{CalibrateDoc, TargetDoc};
use anyhow::{Context, bail};
use clap::{Args, ValueEnum};
use dpwalk_privacy::calibrate::{REL_TOL, View, calibrate};
use dpwalk_privacy::rdp::DpBound;
use dpwalk_privacy::walk::ASSUMPTIONS;
use std::fmt::Write as _;

/// What the final-model views assume (see `dpwalk_privacy::central`).
const CENTRAL_ASSUMPTIONS: [&str; 1] = [
    "each round is accounted as a mechanism of the released model history only, although every user's hidden u_j carries its own past noise",
];

/// What the federated view adds to [`CENTRAL_ASSUMPTIONS`].
const FEDERATED_ASSUMPTION: &str = "users take part in each round independently with probability q (Poisson sampling; a fixed m users per round is only approximated by q = m/n)";

/// Which observer σ is calibrated against.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum CalibrateView {
    /// An eavesdropper who sees every token (needs no assumption).
    Local,
    /// Every other user of a DP-SGD walk on the complete graph (path hidden).
    Network,
    /// The final model of the centralized mode (all users every round).
    Centralized,
    /// The final model of the federated mode (Poisson-sampled users, --sample-rate).
    Federated,
}

impl CalibrateView {
    fn name(self) -> &'static str {
        match self {
            CalibrateView::Local => "local",
            CalibrateView::Network => "network",
            CalibrateView::Centralized => "centralized",
            CalibrateView::Federated => "federated",
        }
    }
}

#[derive(Debug, Args)]
pub struct CalibrateArgs {
    /// Target ε > 0.
    #[arg(long, value_name = "E", allow_negative_numbers = true)]
    epsilon: f64,
    /// The view to protect against.
    #[arg(long, value_enum, default_value_t = CalibrateView::Local)]
    view: CalibrateView,
    #[command(flatten)]
    scenario: ScenarioArgs,
    /// Poisson user-sampling rate q ∈ (0, 1] of the federated view.
    #[arg(long, value_name = "Q", allow_negative_numbers = true)]
    sample_rate: Option<f64>,
    #[command(flatten)]
    conv: ConversionArgs,
    /// Print JSON.
    #[arg(long)]
    json: bool,
}

pub fn run(args: CalibrateArgs) -> anyhow::Result<()> {
    let mut out = String::new();
    let scenario = args.scenario.load()?;
    let orders = args.conv.orders()?;
    let k = scenario.contributions;
    let n = scenario.topology.n() as u64;
    if args.sample_rate.is_some() && args.view != CalibrateView::Federated {
        bail!("--sample-rate applies to --view federated only");
    }
    let accounted = args.scenario.accounted()?;
    let mut notes: Vec<String> = scenario.contributions_note().into_iter().collect();
    if accounted.record.is_some() {
        notes.push(accounted.unit_note(args.scenario.clip, args.scenario.gamma()));
    }
    let mut assumptions: Vec<&str> = Vec::new();
    // What the final-model views add to the document: their rounds and sampling rate.
    let (mut rounds, mut sample_rate) = (None, None);
    let view = match args.view {
        CalibrateView::Local => View::Local { contributions: k },
        CalibrateView::Network => {
            if !scenario.is_complete() {
                bail!(
                    "--view network calibrates the DP-SGD walk on the complete graph (--complete N): on other graphs it is not offered yet; use --view local, which bounds every observer"
                );
            }
            let steps = scenario.walk_steps();
            notes.push(format!(
                "the DP-SGD walk only (no network bound is proved for the ADMM walk); a walk of {steps} steps, each user's contributions capped at K = {k}; the observer sees the token at its visits and the final model, the path hidden from it"
            ));
            assumptions.extend(ASSUMPTIONS);
            View::Network {
                users: n,
                steps,
                cap: k,
            }
        }
        CalibrateView::Centralized => {
            notes.push(format!(
                "{k} rounds of all {n} users (one contribution per user per round)"
            ));
            rounds = Some(k);
            assumptions.extend(CENTRAL_ASSUMPTIONS);
            View::Centralized {
                rounds: k,
                users: n,
            }
        }
        CalibrateView::Federated => {
            let Some(q) = args.sample_rate else {
                bail!("--view federated needs --sample-rate Q");
            };
            if !(q > 0.0 && q <= 1.0) {
                bail!("--sample-rate must be in (0, 1], got {q}");
            }
            let r = (k as f64 / q).ceil() as u64;
            notes.push(format!(
                "R = ceil(K / q) = {r} rounds at sampling rate {q}: each user contributes K = {k} times in expectation"
            ));
            (rounds, sample_rate) = (Some(r), Some(q));
            assumptions.extend(CENTRAL_ASSUMPTIONS);
            assumptions.push(FEDERATED_ASSUMPTION);
            View::Federated {
                rounds: r,
                sampling_rate: q,
            }
        }
    };
    let conversion = args.conv.conversion;
    let cal = calibrate(
        &view,
        &orders,
        accounted.clip,
        args.epsilon,
        args.conv.delta,
        conversion.conversion(),
        REL_TOL,
    )
    .with_context(|| format!("calibrating sigma for the {} view", args.view.name()))?;

    if args.json {
        let v = CalibrateDoc {
            view: args.view.name(),
            sigma: cal.sigma,
            clip: args.scenario.clip,
            unit: accounted.unit(),
            accounted_clip: accounted.clip,
            epsilon: cal.achieved.epsilon,
            delta: cal.achieved.delta,
            exact_gaussian_mu: cal.achieved.gaussian_mu,
            rdp_epsilon: cal.achieved.rdp_epsilon,
            order: cal.achieved.order,
            conversion: conversion.name(),
            target: TargetDoc {
                epsilon: args.epsilon,
                delta: args.conv.delta,
            },
            relative_tolerance: REL_TOL,
            scenario: scenario.doc(),
            rounds,
            sample_rate,
            notes,
            assumptions,
        };
        writeln!(out, "{}", serde_json::to_string_pretty(&v)?)?;
        return emit(&out);
    }
    writeln!(
        out,
        "Scenario: {}, clip C = {}",
        scenario.describe(),
        args.scenario.clip
    )?;

    writeln!(
        out,
        "Target: ({}, {:e})-DP against the {} view, {} conversion",
        args.epsilon,
        args.conv.delta,
        args.view.name(),
        conversion.name()
    )?;
    writeln!(
        out,
        "Smallest sigma: {} (relative tolerance {REL_TOL:e})",
        cal.sigma
    )?;
    writeln!(
        out,
        "Achieved: {} at delta = {:e}",
        fmt_eps(&DpBound::Finite(cal.achieved).into()),
        cal.achieved.delta
    )?;
    for note in &notes {
        writeln!(out, "Note: {note}")?;
    }
    if !assumptions.is_empty() {
        writeln!(out, "Assumptions:")?;
        for a in &assumptions {
            writeln!(out, "  - {a}")?;
        }
    }
    emit(&out)
}
