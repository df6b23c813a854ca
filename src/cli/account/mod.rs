//! `dpwalk account`: privacy figures from the accountant (`dpwalk_privacy`), printed for people or
//! as JSON whose key names are part of the product.
//!
//! - `account gaussian`: the RDP curve and (ε, δ) of K runs of the (Poisson-subsampled) Gaussian
//!   mechanism, the building block every other figure reduces to.
//! - `account walk`: per-user figures of the private walk on a topology ([`dpwalk_privacy::walk`]):
//!   local ε for every step; for a DP-SGD walk, the path-hidden network ε (N1 on the complete
//!   graph, N3 against the worst observer on other graphs up to 200 users) with its assumptions.
//!   No network figure is printed where none is proved (ADMM) or computed (cost), and the output
//!   says why.
//!
//! This module only parses, loads and prints; every number comes from `dpwalk_privacy`. The
//! scenario flags (graph, clip, contributions) are shared with `dpwalk calibrate`.

mod flags;
mod gaussian;
mod walk;

use anyhow::Context;
use clap::Subcommand;
use dpwalk_privacy::walk::Figure;
pub use flags::{ConversionArgs, ScenarioArgs};
use gaussian::{GaussianArgs, gaussian};
use std::io::Write as _;
use walk::{WalkArgs, walk};

#[derive(Debug, Subcommand)]
pub enum AccountCommand {
    /// RDP and (ε, δ) of K runs of the Gaussian mechanism, optionally Poisson-subsampled.
    Gaussian(GaussianArgs),
    /// Per-user privacy of the random walk on a topology: local and network views.
    Walk(WalkArgs),
}

pub fn run(cmd: AccountCommand) -> anyhow::Result<()> {
    match cmd {
        AccountCommand::Gaussian(args) => gaussian(args),
        AccountCommand::Walk(args) => walk(args),
    }
}

/// Writes a command's output to stdout at once. A closed pipe (`dpwalk ... | head`) is not an
/// error: the reader has what it wanted.
pub fn emit(text: &str) -> anyhow::Result<()> {
    let mut stdout = std::io::stdout().lock();
    match stdout
        .write_all(text.as_bytes())
        .and_then(|()| stdout.flush())
    {
        Err(e) if e.kind() != std::io::ErrorKind::BrokenPipe => Err(e).context("writing to stdout"),
        _ => Ok(()),
    }
}

/// ε for people, with how it was obtained: the exact Gaussian conversion or the PLD figure (with
/// the RDP figure beside either), or the RDP order; or "no finite guarantee".
pub fn fmt_eps(figure: &Figure) -> String {
    match (
        figure.epsilon,
        figure.exact_gaussian_mu,
        figure.pld_interval,
        figure.rdp_epsilon,
        figure.order,
    ) {
        (Some(e), Some(mu), _, Some(rdp), Some(a)) => {
            format!("eps = {e:.6} (exact, {mu:.4}-GDP; RDP gives {rdp:.6} at order {a})")
        }
        (Some(e), None, Some(h), Some(rdp), Some(a)) => {
            format!("eps = {e:.6} (PLD, grid {h:e}; RDP gives {rdp:.6} at order {a})")
        }
        (Some(e), .., Some(a)) => format!("eps = {e:.6} (order {a})"),
        (Some(e), .., None) => format!("eps = {e:.6}"),
        (None, ..) => "no finite guarantee".to_string(),
    }
}
