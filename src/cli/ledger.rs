//! `dpwalk ledger show`: read a node's privacy ledger (`state/ledger.bin`) without changing it.
//! `dpwalk ledger certify`: the certificate given the walk (N2) of a finished DP-SGD run, from
//! all of its members' ledgers brought together (`dpwalk_net::certify`, which says why the
//! path-hidden figure no longer applies to whoever has read them).

use crate::cli::account::fmt_eps;
use anyhow::Context;
use clap::{Args, Subcommand};
use dpwalk_privacy::PrivacyError;
use dpwalk_privacy::ledger::LedgerError;
use dpwalk_privacy::report::LedgerReport;
use std::path::PathBuf;

#[derive(Debug, Subcommand)]
pub enum LedgerCommand {
    /// Records, seqs and the local ε spent, from a ledger file (verified, never modified).
    Show(ShowArgs),
    /// Each user's network ε given the walk (N2) against its worst observer, from every member's
    /// ledger of a finished DP-SGD run. The ledgers together reveal the walk's path: to whoever
    /// has read them, the path-hidden network figure no longer applies, and this one holds.
    Certify(CertifyArgs),
}

#[derive(Debug, Args)]
pub struct CertifyArgs {
    /// Every member's ledger (node-*/state/ledger.bin), in any order: each names its member and
    /// run in its header.
    #[arg(required = true)]
    ledgers: Vec<PathBuf>,
    /// The run file the members ran (run.toml): σ (given or calibrated as the nodes do), the
    /// clip, K and the members.
    #[arg(long)]
    run: PathBuf,
    /// δ of the figures (default: the delta of the run's budget, else dpwalk's default).
    #[arg(long)]
    delta: Option<f64>,
    /// Print JSON.
    #[arg(long)]
    json: bool,
}

#[derive(Debug, Args)]
pub struct ShowArgs {
    /// The ledger, e.g. state/ledger.bin.
    path: PathBuf,
    /// δ of the (ε, δ) figure (tight conversion over the ledger's orders).
    #[arg(long, default_value_t = dpwalk_core::spec::DEFAULT_DELTA)]
    delta: f64,
    /// List the seq of every record.
    #[arg(long)]
    records: bool,
    /// Print JSON.
    #[arg(long)]
    json: bool,
}

pub fn run(cmd: LedgerCommand) -> anyhow::Result<()> {
    match cmd {
        LedgerCommand::Show(args) => show(args),
        LedgerCommand::Certify(args) => certify(args),
    }
}

fn show(args: ShowArgs) -> anyhow::Result<()> {
    let report = LedgerReport::read(&args.path, args.delta, args.records).map_err(|e| {
        let context = match &e {
            LedgerError::Privacy(PrivacyError::Delta(_)) => format!("--delta {}", args.delta),
            _ => format!(
                "cannot read the ledger {}; {}",
                args.path.display(),
                e.advice()
            ),
        };
        anyhow::Error::new(e).context(context)
    })?;
    let figure = report.figure();
    if args.json {
        println!("{}", serde_json::to_string_pretty(&report)?);
        return Ok(());
    }
    let seq = |s: Option<u64>| s.map_or_else(|| "-".to_string(), |s| s.to_string());
    println!("ledger     {}", report.path);
    let order = |o: Option<f64>| o.map_or_else(|| "-".to_string(), |o| o.to_string());
    println!(
        "orders     {} ({} … {})",
        report.orders,
        order(report.min_order),
        order(report.max_order)
    );
    println!("records    {}", report.records);
    println!(
        "noise-only {} (visits with the budget spent)",
        report.noise_only
    );
    println!(
        "seq        first {}, last {} (contributions); last visit {}",
        seq(report.first_seq),
        seq(report.last_seq),
        seq(report.last_visit_seq)
    );
    match report.epsilon {
        Some(_) => println!(
            "local {} at delta {:e}, tight conversion",
            fmt_eps(&figure),
            report.delta
        ),
        None => println!(
            "local eps  unbounded at delta {:e} (every order is infinite)",
            args.delta
        ),
    }
    if let Some(seqs) = &report.seqs {
        println!("seqs");
        for s in seqs {
            println!("  {s}");
        }
    }
    Ok(())
}

fn certify(args: CertifyArgs) -> anyhow::Result<()> {
    let run = dpwalk_net::run::Run::load(&args.run)
        .with_context(|| format!("reading the run file {}", args.run.display()))?;
    let cert =
        dpwalk_net::certify::certify_ledgers(&run, &args.ledgers, args.delta).map_err(|e| {
            let hint = match &e {
                dpwalk_net::certify::CertifyError::Ledger { source, .. } => {
                    format!("; {}", source.advice())
                }
                _ => String::new(),
            };
            let message = format!("no certificate given the walk{hint}");
            anyhow::Error::new(e).context(message)
        })?;
    if args.json {
        println!("{}", serde_json::to_string_pretty(&cert)?);
        return Ok(());
    }
    println!("NOTICE: {}", cert.notice);
    println!();
    println!(
        "run {}: {} steps, {} members, {} figures, sigma {}, accounted clip {}, delta {:e}, {} conversion",
        cert.run_id,
        cert.steps,
        cert.users.len(),
        cert.unit,
        cert.sigma,
        cert.accounted_clip,
        cert.delta,
        cert.conversion
    );
    println!("{} ({}):", cert.label, cert.unit);
    println!(
        "{:>6} {:>13} {:>10} {:>12} {:>12} {:>8} {:>14} {:>12}",
        "user",
        "contributions",
        "noise-only",
        "psi",
        "epsilon",
        "order",
        "worst observer",
        "local eps"
    );
    let eps = |f: &dpwalk_privacy::walk::Figure| {
        f.epsilon
            .map_or_else(|| "unbounded".to_string(), |e| format!("{e:.6}"))
    };
    let opt = |o: Option<String>| o.unwrap_or_else(|| "-".to_string());
    for u in &cert.users {
        println!(
            "{:>6} {:>13} {:>10} {:>12.6} {:>12} {:>8} {:>14} {:>12}",
            u.user,
            u.contributions,
            u.noise_only,
            u.psi,
            eps(&u.network_given_walk),
            opt(u.network_given_walk.order.map(|o| o.to_string())),
            opt(u.worst_observer.map(|o| o.to_string())),
            eps(&u.local)
        );
    }
    println!("assumes: {}", cert.assumptions.join("; "));
    Ok(())
}
