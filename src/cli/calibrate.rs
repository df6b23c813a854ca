//! `dpwalk calibrate`: the smallest σ meeting a target (ε, δ) for a view of a scenario
//! ([`dpwalk_privacy::report::CalibrateReport`], whose docs say how each view reads the scenario
//! flags, those of `dpwalk account walk`). This module only parses and prints.

use crate::cli::account::{ConversionArgs, ScenarioArgs, emit, fmt_eps};
use clap::{Args, ValueEnum};
use dpwalk_privacy::calibrate::REL_TOL;
use dpwalk_privacy::rdp::DpBound;
use dpwalk_privacy::report::{CalibrateQuery, CalibrateReport, CalibrateView as View};
use std::fmt::Write as _;

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

impl From<CalibrateView> for View {
    fn from(view: CalibrateView) -> Self {
        match view {
            CalibrateView::Local => View::Local,
            CalibrateView::Network => View::Network,
            CalibrateView::Centralized => View::Centralized,
            CalibrateView::Federated => View::Federated,
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
    let query = CalibrateQuery {
        epsilon: args.epsilon,
        view: args.view.into(),
        scenario: args.scenario.query()?,
        sample_rate: args.sample_rate,
        conversions: args.conv.conversions(),
    };
    let report = CalibrateReport::new(&query)?;
    if args.json {
        writeln!(out, "{}", serde_json::to_string_pretty(&report)?)?;
        return emit(&out);
    }
    writeln!(
        out,
        "Scenario: {}, clip C = {}",
        report.describe, report.clip
    )?;
    writeln!(
        out,
        "Target: ({}, {:e})-DP against the {} view, {} conversion",
        report.target.epsilon, report.target.delta, report.view, report.conversion
    )?;
    writeln!(
        out,
        "Smallest sigma: {} (relative tolerance {REL_TOL:e})",
        report.sigma
    )?;
    writeln!(
        out,
        "Achieved: {} at delta = {:e}",
        fmt_eps(&DpBound::Finite(report.achieved).into()),
        report.delta
    )?;
    for note in &report.notes {
        writeln!(out, "Note: {note}")?;
    }
    if !report.assumptions.is_empty() {
        writeln!(out, "Assumptions:")?;
        for a in &report.assumptions {
            writeln!(out, "  - {a}")?;
        }
    }
    emit(&out)
}
