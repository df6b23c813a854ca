//! `account gaussian`: the RDP curve and (ε, δ) of K runs of the (Poisson-subsampled) Gaussian
//! mechanism.

use super::flags::ConversionArgs;
use super::{emit, fmt_eps};
use crate::cli::documents::GaussianDoc;
use anyhow::Context;
use clap::Args;
use dpwalk_privacy::mechanism::subsampled_gaussian;
use dpwalk_privacy::walk::Figure;
use std::fmt::Write as _;

#[derive(Debug, Args)]
pub struct GaussianArgs {
    /// Noise standard deviation divided by the L2 sensitivity (z > 0).
    #[arg(long, value_name = "Z", allow_negative_numbers = true)]
    noise_multiplier: f64,
    /// Poisson sampling rate q ∈ (0, 1]; 1 is no subsampling.
    #[arg(
        long,
        value_name = "Q",
        default_value_t = 1.0,
        allow_negative_numbers = true
    )]
    sample_rate: f64,
    /// Number of composed runs.
    #[arg(long, value_name = "K", default_value_t = 1)]
    steps: u64,
    #[command(flatten)]
    conv: ConversionArgs,
    /// Print JSON.
    #[arg(long)]
    json: bool,
}

pub(super) fn gaussian(args: GaussianArgs) -> anyhow::Result<()> {
    let mut out = String::new();
    let orders = args.conv.orders()?;
    let conversion = args.conv.conversion;
    let curve = subsampled_gaussian(&orders, args.sample_rate, args.noise_multiplier)
        .context("invalid --noise-multiplier or --sample-rate")?
        .repeat(args.steps);
    let bound = curve
        .to_dp(args.conv.delta, conversion.conversion())
        .context("invalid --delta")?;
    let figure = Figure::from(bound);
    if args.json {
        let v = GaussianDoc {
            orders: orders.as_slice(),
            rdp: curve.values(),
            epsilon: figure.epsilon,
            delta: args.conv.delta,
            best_order: figure.order,
            exact_gaussian_mu: figure.exact_gaussian_mu,
            rdp_epsilon: figure.rdp_epsilon,
            pld_interval: figure.pld_interval,
            conversion: conversion.name(),
            noise_multiplier: args.noise_multiplier,
            sample_rate: args.sample_rate,
            steps: args.steps,
        };
        writeln!(out, "{}", serde_json::to_string_pretty(&v)?)?;
        return emit(&out);
    }
    let sampling = if args.sample_rate < 1.0 {
        format!("Poisson-subsampled at q = {:?}", args.sample_rate)
    } else {
        "no subsampling".to_string()
    };
    writeln!(
        out,
        // `{:?}`: the shortest exact form, with an exponent for huge or tiny values.
        "Gaussian mechanism, noise multiplier z = {:?}, {sampling}, composed {} times",
        args.noise_multiplier, args.steps
    )?;
    writeln!(
        out,
        "({}, {:e})-DP: {}, {} conversion",
        figure
            .epsilon
            .map_or("inf".to_string(), |e| format!("{e:.6}")),
        args.conv.delta,
        fmt_eps(&figure),
        conversion.name()
    )?;
    writeln!(out, "{:>8}  {:>14}", "order", "RDP")?;
    for (a, r) in curve.iter() {
        writeln!(out, "{a:>8}  {r:>14.6e}")?;
    }
    emit(&out)
}
