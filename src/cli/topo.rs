//! `dpwalk topo`: inspect topology files.

use anyhow::Context;
use clap::{Args, Subcommand};
use dpwalk_core::rng::{Purpose, derive_seed};
use dpwalk_core::topology::Topology;
use std::path::PathBuf;

#[derive(Debug, Subcommand)]
pub enum TopoCommand {
    /// Nodes, edges, degrees, connectivity and spectral gap of a topology file.
    Show(ShowArgs),
}

#[derive(Debug, Args)]
pub struct ShowArgs {
    /// Topology file (TOML), e.g. topologies/ring-100.toml.
    file: PathBuf,
    /// Number of nodes, for files that leave it to the scenario.
    #[arg(long)]
    nodes: Option<usize>,
    /// Run seed for random generators that do not fix their own seed.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Print JSON.
    #[arg(long)]
    json: bool,
}

pub fn run(cmd: TopoCommand) -> anyhow::Result<()> {
    match cmd {
        TopoCommand::Show(args) => show(args),
    }
}

fn show(args: ShowArgs) -> anyhow::Result<()> {
    let topology = Topology::load(
        &args.file,
        args.nodes,
        derive_seed(args.seed, Purpose::Topology, 0),
    )
    .with_context(|| format!("loading topology {}", args.file.display()))?;
    let summary = topology.summary();
    let value = serde_json::to_value(&summary)?;
    if args.json {
        println!("{}", serde_json::to_string_pretty(&value)?);
    } else if let serde_json::Value::Object(fields) = value {
        println!("{}", args.file.display());
        for (key, v) in fields {
            println!("  {key:<12} {v}");
        }
    }
    Ok(())
}
