//! Command-line interface: argument parsing and dispatch to the subcommands' modules.

mod account;
mod audit;
mod calibrate;
mod data;
mod eval;
mod keygen;
mod ledger;
mod node;
mod overrides;
mod report;
mod rundir;
mod runfile;
mod sim;
mod status;
mod swarm;
mod topo;
mod tune;

use clap::{Parser, Subcommand};
use std::process::ExitCode;

/// dpwalk: private decentralized learning by random-walk ADMM, with network-DP accounting.
#[derive(Debug, Parser)]
#[command(name = "dpwalk", version, about)]
struct Cli {
    #[command(subcommand)]
    command: Command,
    /// Log level of dpwalk's own crates: error, warn, info (the default), debug or trace;
    /// libraries (libp2p) stay at warn. Given, it replaces RUST_LOG; otherwise RUST_LOG (any
    /// tracing filter, e.g. `info,libp2p_swarm=debug`) applies when set.
    #[arg(long, global = true, value_name = "LEVEL")]
    log_level: Option<LogLevel>,
    /// More log lines: -v is --log-level debug, -vv trace.
    #[arg(short = 'v', global = true, action = clap::ArgAction::Count, conflicts_with = "log_level")]
    verbose: u8,
}

/// `--log-level`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
enum LogLevel {
    Error,
    Warn,
    Info,
    Debug,
    Trace,
}

impl LogLevel {
    fn as_str(self) -> &'static str {
        match self {
            LogLevel::Error => "error",
            LogLevel::Warn => "warn",
            LogLevel::Info => "info",
            LogLevel::Debug => "debug",
            LogLevel::Trace => "trace",
        }
    }
}

/// The level the flags gave, for the nodes `dpwalk swarm` starts.
static FLAG_LEVEL: std::sync::OnceLock<LogLevel> = std::sync::OnceLock::new();

/// `--log-level <level>` when the flags gave one (for child processes), else nothing.
pub(crate) fn log_level_args() -> Vec<&'static str> {
    FLAG_LEVEL
        .get()
        .map_or_else(Vec::new, |l| vec!["--log-level", l.as_str()])
}

/// Targets kept at `error` when the level comes from the flags or the default (not RUST_LOG),
/// because their warnings need no action:
/// - libp2p's Kademlia warns on every start without bootstrap peers ("Failed to trigger
///   bootstrap"); members are dialled from the run file.
/// - AutoNAT v2's server warns when a dial-back it made for a member fails or times out ("inbound
///   request handle timed out"): the expected answer for a member behind NAT, which the member
///   itself logs (at debug: "not reachable at …"). Only the dial-request handler is quietened: the
///   server's warnings about the dial-back stream itself (a peer breaking the protocol) stay.
const QUIET: [&str; 2] = [
    "libp2p_kad",
    "libp2p_autonat::v2::server::handler::dial_request",
];

/// dpwalk's own crates: the level the flags ask for applies to them; every other crate (libp2p
/// above all, 93 % of a debug log) stays at `warn` unless RUST_LOG says otherwise.
const OWN: [&str; 5] = [
    "dpwalk",
    "dpwalk_core",
    "dpwalk_privacy",
    "dpwalk_sim",
    "dpwalk_net",
];

/// The log filter: the flags, else RUST_LOG, else `info`. The flags' level (and the default)
/// applies to dpwalk's own crates ([`OWN`]); other crates log at `warn` (`error` when that is
/// asked), and [`QUIET`] at `error`.
fn log_filter(level: Option<LogLevel>, verbose: u8) -> tracing_subscriber::EnvFilter {
    let level = level.or(match verbose {
        0 => None,
        1 => Some(LogLevel::Debug),
        _ => Some(LogLevel::Trace),
    });
    let quiet = |level: LogLevel| {
        let others = if level == LogLevel::Error {
            "error"
        } else {
            "warn"
        };
        let own: String = OWN
            .iter()
            .map(|t| format!(",{t}={}", level.as_str()))
            .collect();
        let quiet: String = QUIET.iter().map(|t| format!(",{t}=error")).collect();
        tracing_subscriber::EnvFilter::new(format!("{others}{own}{quiet}"))
    };
    match level {
        Some(level) => {
            let _ = FLAG_LEVEL.set(level);
            quiet(level)
        }
        None => tracing_subscriber::EnvFilter::try_from_default_env()
            .unwrap_or_else(|_| quiet(LogLevel::Info)),
    }
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
    /// Measure leakage: an empirical lower bound on epsilon beside the accountant's bound.
    Audit(audit::AuditArgs),
    /// Tune every algorithm of a comparison with the same number of configurations ([tune]).
    Tune(tune::TuneArgs),
    /// Generate a node identity (ed25519, mode 0600) and print its PeerId.
    Keygen(keygen::KeygenArgs),
    /// Run one daemon of a run (node.toml) until the final model is written.
    Node(node::NodeArgs),
    /// Ask a running node for its status.
    Status(status::StatusArgs),
    /// Start N real nodes on 127.0.0.1 from a scenario and watch them train.
    Swarm(swarm::SwarmArgs),
    /// Apply a final model to a dataset: objective, error rate, predictions.
    Eval(eval::EvalArgs),
    /// Write a run file (run.toml) from the members' PeerIds and addresses.
    #[command(subcommand)]
    Runfile(runfile::RunfileCommand),
    /// Check a CSV for a loss, and split it into per-node files for a run (data.json for
    /// `runfile new --data`).
    #[command(subcommand)]
    Data(data::DataCommand),
    /// Read a node's privacy ledger (state/ledger.bin).
    #[command(subcommand)]
    Ledger(ledger::LedgerCommand),
    /// Inspect topology files.
    #[command(subcommand)]
    Topo(topo::TopoCommand),
}

pub fn main() -> ExitCode {
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) => match scenario_key_tip(&e, &std::env::args().collect::<Vec<_>>()) {
            Some(text) => {
                eprint!("{text}");
                return ExitCode::from(2);
            }
            None => e.exit(),
        },
    };
    tracing_subscriber::fmt()
        .with_env_filter(log_filter(cli.log_level, cli.verbose))
        .with_writer(std::io::stderr)
        // Colours only on a terminal: a node's log is often a file (`dpwalk swarm`'s node.log).
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
        .init();
    let result = match cli.command {
        Command::Account(cmd) => account::run(cmd),
        Command::Calibrate(args) => calibrate::run(args),
        Command::Sim(args) => sim::run(args),
        Command::Audit(args) => audit::run(args),
        Command::Tune(args) => tune::run(args),
        Command::Keygen(args) => keygen::run(args),
        Command::Node(args) => node::run(args),
        Command::Status(args) => status::run(args),
        Command::Swarm(args) => swarm::run(args),
        Command::Topo(cmd) => topo::run(cmd),
        Command::Ledger(cmd) => ledger::run(cmd),
        Command::Eval(args) => eval::run(args),
        Command::Runfile(cmd) => runfile::run(cmd),
        Command::Data(cmd) => data::run(cmd),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            // `{:#}`: the error and its causes, outermost first; each library error either prints
            // its source or chains it, never both, so each reason appears once.
            eprintln!("error: {e:#}");
            ExitCode::FAILURE
        }
    }
}

/// The commands that read a scenario, whose keys are set with `--set KEY=VALUE`.
const SCENARIO_COMMANDS: [&str; 4] = ["sim", "audit", "tune", "swarm"];

/// clap's error for a scenario command given a scenario key as a flag (`sim q.toml --sigma 2`),
/// with the `--set` form in place of clap's tip (`-- --sigma`, which would not help); `None`
/// for any other error.
fn scenario_key_tip(e: &clap::Error, args: &[String]) -> Option<String> {
    use clap::error::{ContextKind, ContextValue, ErrorKind};
    if e.kind() != ErrorKind::UnknownArgument
        || !args
            .get(1)
            .is_some_and(|c| SCENARIO_COMMANDS.contains(&c.as_str()))
    {
        return None;
    }
    let Some(ContextValue::String(flag)) = e.get(ContextKind::InvalidArg) else {
        return None;
    };
    let (name, inline) = match flag.trim_start_matches('-').split_once('=') {
        Some((name, value)) => (name.to_string(), Some(value.to_string())),
        None => (flag.trim_start_matches('-').to_string(), None),
    };
    let value = inline
        .or_else(|| {
            let at = args
                .iter()
                .position(|a| a.split('=').next() == Some(flag))?;
            match args[at].split_once('=') {
                Some((_, value)) => Some(value.to_string()),
                None => args.get(at + 1).filter(|v| !v.starts_with("--")).cloned(),
            }
        })
        .unwrap_or_else(|| "VALUE".into());
    let key = match name.as_str() {
        "sigma" | "gamma" | "lambda" | "clip" | "lr" | "kind" | "mode" => {
            format!("algorithm.{name}")
        }
        "epsilon" | "delta" | "view" | "unit" => format!("privacy.{name}"),
        _ => name,
    };
    let tip = format!(
        "  tip: a scenario's keys are set with --set KEY=VALUE: --set {key}={value} (README, \"Simulating your own scenario\")"
    );
    let rendered = e.render().to_string();
    let mut lines: Vec<String> = rendered.lines().map(String::from).collect();
    match lines
        .iter()
        .position(|l| l.trim_start().starts_with("tip:"))
    {
        Some(at) => lines[at] = tip,
        None => lines.insert(1, format!("\n{tip}")),
    }
    Some(lines.join("\n") + "\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The filter's directives, as a set (EnvFilter may print them in another order).
    fn directives(filter: &tracing_subscriber::EnvFilter) -> Vec<String> {
        filter.to_string().split(',').map(String::from).collect()
    }

    #[test]
    fn the_flags_raise_dpwalk_s_crates_only() {
        for (level, verbose) in [(Some(LogLevel::Debug), 0), (None, 1)] {
            let d = directives(&log_filter(level, verbose));
            for own in OWN {
                assert!(d.contains(&format!("{own}=debug")), "{d:?}");
            }
            assert!(
                d.contains(&"warn".to_string()),
                "libraries stay at warn: {d:?}"
            );
        }
        let d = directives(&log_filter(Some(LogLevel::Error), 0));
        assert!(d.contains(&"error".to_string()), "{d:?}");
    }

    #[test]
    fn warnings_that_need_no_action_are_quiet_at_every_level_the_flags_give() {
        for (level, verbose) in [(Some(LogLevel::Info), 0), (None, 1), (None, 2)] {
            let d = directives(&log_filter(level, verbose));
            for target in QUIET {
                assert!(d.contains(&format!("{target}=error")), "{d:?}");
            }
        }
    }
}
