//! `dpwalk sim`: run a scenario and write its run directory.

use anyhow::Context;
use clap::Args;
use dpwalk_sim::{output, scenario, simulate};
use std::path::PathBuf;

#[derive(Debug, Args)]
pub struct SimArgs {
    /// Scenario file (TOML), e.g. sim/quickstart.toml.
    scenario: PathBuf,
    /// Output directory [default: runs/<scenario>-<UTC timestamp>].
    #[arg(long)]
    out: Option<PathBuf>,
    /// Override a scenario key, e.g. --set algorithm.sigma=2 (repeatable).
    #[arg(long = "set", value_name = "KEY=VALUE")]
    sets: Vec<String>,
    /// Override the scenario's seed.
    #[arg(long)]
    seed: Option<u64>,
    /// No progress bar.
    #[arg(long)]
    quiet: bool,
}

pub fn run(args: SimArgs) -> anyhow::Result<()> {
    let mut sets = args.sets.clone();
    if let Some(seed) = args.seed {
        sets.push(format!("seed={seed}"));
    }
    let loaded = scenario::load(&args.scenario, &sets)?;
    let out = args
        .out
        .unwrap_or_else(|| PathBuf::from("runs").join(format!("{}-{}", loaded.name, utc_stamp())));
    tracing::info!(scenario = %args.scenario.display(), out = %out.display(), "preparing data, problem and reference optimum");
    let prepared = simulate::prepare(&loaded)
        .with_context(|| format!("preparing scenario {}", args.scenario.display()))?;
    tracing::info!(
        users = prepared.problem.n_users(),
        dim = prepared.problem.dim(),
        optimum = prepared.optimum.objective,
        "reference optimum solved"
    );
    let results = simulate::simulate(&loaded, &prepared, args.quiet)
        .with_context(|| format!("running scenario {}", args.scenario.display()))?;
    let summary = output::write_all(&out, &loaded, &prepared, &results)
        .with_context(|| format!("writing results to {}", out.display()))?;
    println!(
        "{:<8} {:>10} {:>8} {:>14} {:>12} {:>10} {:>12} {:>12}  topology",
        "algo", "sigma", "clip", "objective", "rel. gap", "test err", "network eps", "steps/s"
    );
    for p in &summary.points {
        let network = p.privacy.accounting.network.as_ref().map_or_else(
            || "-".to_string(),
            |n| {
                n.figure
                    .epsilon
                    .map_or_else(|| "inf".to_string(), |e| format!("{e:.4}"))
            },
        );
        println!(
            "{:<8} {:>10.4} {:>8} {:>14.6e} {:>12.3e} {:>10} {:>12} {:>12.0}  {}",
            p.algorithm,
            p.sigma,
            p.clip
                .map_or_else(|| "none".to_string(), |c| format!("{c}")),
            p.final_mean.train_objective,
            p.final_mean.relative_gap,
            p.final_mean
                .test_error
                .map_or_else(|| "-".to_string(), |e| format!("{e:.4}")),
            network,
            p.throughput.steps_per_second,
            p.topology,
        );
    }
    if let Some(delta) = summary.points.first().map(|p| p.privacy.accounting.delta) {
        println!(
            "network eps: worst user against its worst observer, at delta = {delta:e} (details in summary.json)"
        );
    }
    println!(
        "optimum objective {:.6e}; results in {}",
        prepared.optimum.objective,
        out.display()
    );
    Ok(())
}

/// `YYYYMMDD-HHMMSS` in UTC, from the system clock (civil-from-days, Hinnant's algorithm).
fn utc_stamp() -> String {
    let secs = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    let (days, rem) = ((secs / 86_400) as i64, secs % 86_400);
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!(
        "{year:04}{month:02}{day:02}-{:02}{:02}{:02}",
        rem / 3600,
        (rem % 3600) / 60,
        rem % 60
    )
}
