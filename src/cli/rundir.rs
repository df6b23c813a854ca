//! Run directories of `dpwalk sim` and `dpwalk swarm`: refuse to write over an earlier run unless
//! asked (`--force`), and keep the resolved scenario the run ran (`scenario.toml`).

use super::report::utc_stamp;
use anyhow::{Context, bail};
use clap::Args;
use dpwalk_sim::output::write_atomic;
use dpwalk_sim::resolved::{SCENARIO_FILE, resolved_toml};
use dpwalk_sim::scenario::LoadedScenario;
use std::path::{Path, PathBuf};

/// `--out` and `--force` of the commands that write a run directory from a scenario.
#[derive(Debug, Args)]
pub struct OutArgs {
    #[allow(rustdoc::invalid_html_tags)] // `<…>` are placeholders in `--help`, not HTML
    /// Output directory [default: runs/<scenario>[-<command>]-<UTC timestamp>]; must be new or
    /// empty.
    #[arg(long)]
    out: Option<PathBuf>,
    /// Replace the earlier run in --out (a directory holding a scenario.toml): its files are
    /// removed first.
    #[arg(long)]
    force: bool,
}

impl OutArgs {
    /// Creates the run directory ([`prepare`]) and writes the scenario it runs into it; the
    /// default is `runs/<scenario><suffix>-<UTC timestamp>` (`suffix`: e.g. `-audit`).
    pub fn create(&self, loaded: &LoadedScenario, suffix: &str) -> anyhow::Result<PathBuf> {
        let out = self.out.clone().unwrap_or_else(|| {
            PathBuf::from("runs").join(format!("{}{suffix}-{}", loaded.name(), utc_stamp()))
        });
        prepare(&out, self.force)?;
        write_scenario(&out, loaded)?;
        Ok(out)
    }
}

/// Creates `out`, refusing an existing non-empty directory (or a file) unless `force`.
///
/// `force` replaces an earlier run: the directory must be a run directory (it holds the
/// `scenario.toml` every run writes first), and everything in it is removed, so that no file of
/// the earlier run (a heatmap, a node that is not in this run) is read as this run's. Any other
/// non-empty directory is refused even with `force`: `--out ~ --force` must not empty a home.
pub fn prepare(out: &Path, force: bool) -> anyhow::Result<()> {
    if out.exists() {
        if !out.is_dir() {
            bail!(
                "--out {} is a file, not a directory: give another path",
                out.display()
            );
        }
        let mut entries = std::fs::read_dir(out)
            .with_context(|| format!("reading the output directory {}", out.display()))?;
        if entries.next().is_some() {
            if !force {
                bail!(
                    "the output directory {} is not empty (an earlier run?): give another --out, \
                     or --force to replace that run",
                    out.display()
                );
            }
            if !out.join(SCENARIO_FILE).is_file() {
                bail!(
                    "--force replaces an earlier run, and {} is not one (it has no {SCENARIO_FILE}): \
                     give a new or empty --out",
                    out.display()
                );
            }
            std::fs::remove_dir_all(out)
                .with_context(|| format!("removing the earlier run in {}", out.display()))?;
        }
    }
    std::fs::create_dir_all(out).with_context(|| format!("creating {}", out.display()))
}

/// Writes the resolved scenario as `scenario.toml` in `out`.
pub fn write_scenario(out: &Path, loaded: &LoadedScenario) -> anyhow::Result<()> {
    let text = resolved_toml(loaded).context("resolving the scenario for the run directory")?;
    let path = out.join(SCENARIO_FILE);
    write_atomic(&path, text.as_bytes()).with_context(|| format!("writing {}", path.display()))
}
