//! Command-line interface: argument parsing and dispatch to the subcommands' modules.

mod account;
mod calibrate;
mod keygen;
mod node;
mod report;
mod sim;
mod status;
mod swarm;
mod topo;

use clap::{Parser, Subcommand};
use std::process::ExitCode;

/// dpwalk: private decentralized learning by random-walk ADMM, with network-DP accounting.
#[derive(Debug, Parser)]
#[command(name = "dpwalk", version, about)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Privacy figures: the Gaussian mechanism, and per-user (ε, δ) of the walk on a topology.
    #[command(subcommand)]
    Account(account::AccountCommand),
    /// The smallest noise σ that meets a target (ε, δ) for a view of a scenario.
    Calibrate(calibrate::CalibrateArgs),
    /// Simulate a swarm in-process from a scenario file (sim/*.toml).
    Sim(sim::SimArgs),
    /// Generate a node identity (ed25519, mode 0600) and print its PeerId.
    Keygen(keygen::KeygenArgs),
    /// Run one daemon of a run (node.toml) until the final model is written.
    Node(node::NodeArgs),
    /// Ask a running node for its status.
    Status(status::StatusArgs),
    /// Start N real nodes on 127.0.0.1 from a scenario and watch them train.
    Swarm(swarm::SwarmArgs),
    /// Inspect topology files.
    #[command(subcommand)]
    Topo(topo::TopoCommand),
}

pub fn main() -> ExitCode {
    let cli = Cli::parse();
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env()
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info")),
        )
        .with_writer(std::io::stderr)
        // Colours only on a terminal: a node's log is often a file (`dpwalk swarm`'s node.log).
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
        .init();
    let result = match cli.command {
        Command::Account(cmd) => account::run(cmd),
        Command::Calibrate(args) => calibrate::run(args),
        Command::Sim(args) => sim::run(args),
        Command::Keygen(args) => keygen::run(args),
        Command::Node(args) => node::run(args),
        Command::Status(args) => status::run(args),
        Command::Swarm(args) => swarm::run(args),
        Command::Topo(cmd) => topo::run(cmd),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e:#}");
            ExitCode::FAILURE
        }
    }
}
