//! [`LoadedScenario`]: the checked form of a scenario that every driver takes.

use super::{PendingPoint, Scenario, ScenarioError};
use std::path::{Path, PathBuf};

/// A scenario read and checked, with the directory its relative paths start from: the only form
/// in which the drivers (`sim`, `audit`, `swarm`) take a scenario, so none runs an unchecked one.
#[derive(Debug, Clone)]
pub struct LoadedScenario {
    scenario: Scenario,
    base_dir: PathBuf,
    name: String,
    points: Vec<PendingPoint>,
}

impl LoadedScenario {
    /// Checks `scenario` ([`Scenario::check`]: every key and every sweep point).
    pub fn new(
        scenario: Scenario,
        base_dir: PathBuf,
        name: impl Into<String>,
    ) -> Result<Self, ScenarioError> {
        let points = scenario.check()?;
        Ok(Self {
            scenario,
            base_dir,
            name: name.into(),
            points,
        })
    }
    /// The parsed scenario, overrides applied.
    pub fn scenario(&self) -> &Scenario {
        &self.scenario
    }
    /// The scenario file's directory.
    pub fn base_dir(&self) -> &Path {
        &self.base_dir
    }
    /// The scenario's name (its `name`, else the file stem).
    pub fn name(&self) -> &str {
        &self.name
    }
    /// The validated sweep points (one when there is no sweep).
    pub fn points(&self) -> &[PendingPoint] {
        &self.points
    }
}
