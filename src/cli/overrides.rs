//! The scenario overrides `sim`, `audit` and `swarm` share: `--set key=value` and `--seed`.

use clap::Args;

/// `--set` and `--seed`, turned into the `key=value` list `dpwalk_sim::scenario::load` applies.
#[derive(Debug, Args)]
pub struct Overrides {
    /// Override a scenario key, e.g. --set algorithm.sigma=2 (repeatable).
    #[arg(long = "set", value_name = "KEY=VALUE")]
    sets: Vec<String>,
    /// Override the scenario's seed.
    #[arg(long)]
    seed: Option<u64>,
}

impl Overrides {
    /// The overrides in order: `first` (a driver's own, e.g. the swarm's `users`), the `--set`s,
    /// then the seed, so that a later one wins.
    pub fn with(&self, first: impl IntoIterator<Item = String>) -> Vec<String> {
        let mut sets: Vec<String> = first.into_iter().collect();
        sets.extend(self.sets.iter().cloned());
        sets.extend(self.seed.map(|seed| format!("seed={seed}")));
        sets
    }
}
