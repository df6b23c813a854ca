//! `dpwalk sim`: run a scenario and write its run directory.

use super::overrides::Overrides;
use super::report;
use super::rundir;
use anyhow::Context;
use clap::Args;
use dpwalk_sim::{output, scenario, simulate};
use std::path::PathBuf;

#[derive(Debug, Args)]
pub struct SimArgs {
    /// Scenario file (TOML), e.g. sim/quickstart.toml.
    scenario: PathBuf,
    #[command(flatten)]
    output: rundir::OutArgs,
    #[command(flatten)]
    overrides: Overrides,
    /// No progress bar.
    #[arg(long)]
    quiet: bool,
}

pub fn run(args: SimArgs) -> anyhow::Result<()> {
    let sets = args.overrides.with([])?;
    let loaded = scenario::load(&args.scenario, &sets)?;
    let out = args.output.create(&loaded, "")?;
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
    report::print_table(&summary, prepared.optimum.objective, &out);
    Ok(())
}
