//! `account gaussian`: the RDP curve and (ε, δ) of K runs of the (Poisson-subsampled) Gaussian
//! mechanism.

use super::flags::ConversionArgs;
use super::{emit, fmt_eps};
use clap::Args;
use dpwalk_privacy::PrivacyError;
use dpwalk_privacy::report::GaussianReport;
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
    let report = GaussianReport::new(
        &orders,
        args.noise_multiplier,
        args.sample_rate,
        args.steps,
        args.conv.delta,
        conversion.conversion(),
    )
    .map_err(|e| {
        let flags = match e {
            PrivacyError::Delta(_) => "invalid --delta",
            _ => "invalid --noise-multiplier or --sample-rate",
        };
        anyhow::Error::new(e).context(flags)
    })?;
    if args.json {
        writeln!(out, "{}", serde_json::to_string_pretty(&report)?)?;
        return emit(&out);
    }
    let figure = report.figure();
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
    for (a, r) in report.orders.iter().zip(&report.rdp) {
        writeln!(out, "{a:>8}  {r:>14.6e}")?;
    }
    emit(&out)
}
