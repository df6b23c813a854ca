//! `dpwalk node`: run one daemon until the run's final model is written.

use anyhow::Context;
use clap::Args;
use dpwalk_net::config::NodeConfig;
use std::path::PathBuf;

#[derive(Debug, Args)]
pub struct NodeArgs {
    /// The node's configuration (node.toml).
    #[arg(long)]
    config: PathBuf,
}

pub fn run(args: NodeArgs) -> anyhow::Result<()> {
    let config = NodeConfig::load(&args.config)?;
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("starting the async runtime")?;
    let report = runtime
        .block_on(dpwalk_net::node::run(config, shutdown_signal()))
        .with_context(|| format!("node {}", args.config.display()))?;
    if report.finished {
        tracing::info!(
            contributions = report.contributions,
            handoff_timeouts = report.handoff_timeouts,
            idle_closed = report.idle_closed,
            "run finished"
        );
    } else {
        tracing::info!(
            contributions = report.contributions,
            handoff_timeouts = report.handoff_timeouts,
            idle_closed = report.idle_closed,
            "node stopped before the end of the run; restart it to resume"
        );
    }
    Ok(())
}

/// Resolves on SIGINT or SIGTERM (Ctrl-C elsewhere).
async fn shutdown_signal() {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{SignalKind, signal};
        match (
            signal(SignalKind::interrupt()),
            signal(SignalKind::terminate()),
        ) {
            (Ok(mut int), Ok(mut term)) => {
                tokio::select! {
                    _ = int.recv() => {}
                    _ = term.recv() => {}
                }
            }
            _ => std::future::pending().await,
        }
    }
    #[cfg(not(unix))]
    if tokio::signal::ctrl_c().await.is_err() {
        std::future::pending::<()>().await;
    }
}
