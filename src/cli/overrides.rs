//! The scenario overrides `sim`, `audit`, `swarm` and `tune` share: `--tuned FILE`,
//! `--set key=value` and `--seed`.

use anyhow::Context;
use clap::Args;
use std::path::{Path, PathBuf};

/// `--tuned`, `--set` and `--seed`, turned into the `key=value` list
/// `dpwalk_sim::scenario::load` applies.
#[derive(Debug, Args)]
pub struct Overrides {
    /// Run with the [by-kind] tables of a `dpwalk tune` result (its tuned.toml) in place of
    /// the scenario's, e.g. to run each budget with the configurations tuned at that budget.
    #[arg(long, value_name = "FILE")]
    tuned: Option<PathBuf>,
    /// Override a scenario key, e.g. --set algorithm.sigma=2 (repeatable).
    #[arg(long = "set", value_name = "KEY=VALUE")]
    sets: Vec<String>,
    /// Override the scenario's seed.
    #[arg(long)]
    seed: Option<u64>,
}

impl Overrides {
    /// The overrides in order: `first` (a driver's own, e.g. the swarm's `users`), the tuned
    /// tables, the `--set`s, then the seed, so that a later one wins.
    pub fn with(&self, first: impl IntoIterator<Item = String>) -> anyhow::Result<Vec<String>> {
        let mut sets: Vec<String> = first.into_iter().collect();
        if let Some(path) = &self.tuned {
            sets.extend(tuned_tables(path)?);
        }
        sets.extend(self.sets.iter().cloned());
        sets.extend(self.seed.map(|seed| format!("seed={seed}")));
        Ok(sets)
    }
}

/// `by-kind.<kind>={ … }` for every table of a tuned.toml: each replaces the scenario's table
/// of that kind whole (a tuned table holds the scenario's keys and the tuned ones).
fn tuned_tables(path: &Path) -> anyhow::Result<Vec<String>> {
    let text = std::fs::read_to_string(path)
        .with_context(|| format!("reading the tuned tables {}", path.display()))?;
    let doc: toml::Table = toml::from_str(&text).with_context(|| {
        format!(
            "{} is not TOML (expected the tuned.toml of `dpwalk tune`)",
            path.display()
        )
    })?;
    let Some(toml::Value::Table(by_kind)) = doc.get("by-kind") else {
        anyhow::bail!(
            "{} has no [by-kind.<kind>] tables (expected the tuned.toml of `dpwalk tune`)",
            path.display()
        );
    };
    Ok(by_kind
        .iter()
        .map(|(kind, table)| format!("by-kind.{kind}={table}"))
        .collect())
}
