//! `final_model.json`: what every node writes in its state directory at the end of the run, and
//! what `dpwalk swarm` and the end-to-end tests read back: one type for both sides, so a field
//! the node writes is a field they read.
//!
//! The file is written through a temporary file, fsync and rename, so a reader finds either no
//! file or a whole one.

use std::path::{Path, PathBuf};

use dpwalk_core::spec::ProblemSpec;
use serde::{Deserialize, Serialize};
use thiserror::Error;

/// The file's name in a node's state directory.
pub const FILE: &str = "final_model.json";

/// The contents of `final_model.json`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FinalModelFile {
    /// The model.
    pub z: Vec<f64>,
    /// `K`.
    pub steps: u64,
    /// The run seed.
    pub seed: u64,
    /// The run.
    pub run_id: String,
    /// The run's hash (hex).
    pub run_hash: String,
    /// This node's index.
    pub index: usize,
    /// This node's PeerId.
    pub peer_id: String,
    /// The index of the member that made the last step and sealed the model.
    pub maker_index: usize,
    /// That member's PeerId.
    pub maker_peer_id: String,
    /// This node's contributions and privacy figures.
    pub privacy: FinalPrivacy,
    /// The problem the model was trained on (the run file's `[problem]`), so that `dpwalk eval`
    /// scores it on the same loss and regularizer (absent from files written before it was).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub problem: Option<ProblemSpec>,
}

/// The privacy part of `final_model.json`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FinalPrivacy {
    /// Contributions made.
    pub contributions: u64,
    /// Contributions whose clip was active.
    pub clipped: u64,
    /// Visits forwarded without a step (budget spent).
    pub skipped: u64,
    /// δ of the figures.
    pub delta: f64,
    /// Local ε (`null`: unbounded): against an eavesdropper on every token, which bounds what
    /// any member learns.
    pub epsilon_local: Option<f64>,
    /// Network ε, "network (path hidden)": against any other member, who sees the token at its
    /// visits and the final model, the path hidden from it (`null` where none is proved or
    /// computed: the ADMM walk, a graph other than the complete one, a run without a network
    /// budget, which may route around members down and so leave the walk's law).
    #[serde(default)]
    pub epsilon_network: Option<f64>,
    /// What `epsilon_network` is (`network (path hidden)`), `null` without it.
    #[serde(default)]
    pub network_label: Option<String>,
    /// The view of the run's budget (`local` or `network`), `null` without one.
    #[serde(default)]
    pub budget_view: Option<String>,
    /// The unit of the ε figures: `user-level` (all of a member's records) or `record-level`
    /// (one record; the run file's `[privacy] unit = "record"`).
    #[serde(default = "user_level")]
    pub unit: String,
    /// The ε of the budget the node enforced (the run's or its own, the stricter), if any.
    pub budget_epsilon: Option<f64>,
    /// The conversion from RDP.
    pub conversion: String,
}

/// The unit of figures written before the unit was: user level, the only one then.
pub(crate) fn user_level() -> String {
    "user-level".into()
}

/// Why `final_model.json` could not be written or read.
#[derive(Debug, Error)]
pub enum FinalModelError {
    /// Writing the file failed.
    #[error("writing {path}")]
    Write {
        /// The file.
        path: PathBuf,
        /// The reason.
        source: std::io::Error,
    },
    /// Reading the file failed (it may not be written yet).
    #[error("reading {path}")]
    Read {
        /// The file.
        path: PathBuf,
        /// The reason.
        source: std::io::Error,
    },
    /// The file is not a final model.
    #[error("{path} is not a node's final model")]
    Parse {
        /// The file.
        path: PathBuf,
        /// The reason.
        source: serde_json::Error,
    },
}

impl FinalModelFile {
    /// Writes the file into the state directory `dir` durably; returns its path.
    pub fn write(&self, dir: &Path) -> Result<PathBuf, FinalModelError> {
        let path = dir.join(FILE);
        let write = |source| FinalModelError::Write {
            path: path.clone(),
            source,
        };
        let json = serde_json::to_string_pretty(self).map_err(|e| write(e.into()))?;
        write_durably(&path, json.as_bytes()).map_err(write)?;
        Ok(path)
    }

    /// Reads the file of the state directory `dir`.
    pub fn read(dir: &Path) -> Result<Self, FinalModelError> {
        let path = dir.join(FILE);
        let text = std::fs::read_to_string(&path).map_err(|source| FinalModelError::Read {
            path: path.clone(),
            source,
        })?;
        serde_json::from_str(&text).map_err(|source| FinalModelError::Parse { path, source })
    }
}

/// Writes `bytes` to `path` through a temporary file, fsync and rename.
fn write_durably(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    use std::io::Write;
    let temp = path.with_extension("json.tmp");
    let mut f = std::fs::File::create(&temp)?;
    f.write_all(bytes)?;
    f.sync_all()?;
    drop(f);
    std::fs::rename(&temp, path)?;
    dpwalk_core::durable::sync_parent(path)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_written_file_reads_back_the_same_and_an_unbounded_epsilon_is_null() {
        let dir = tempfile::tempdir().unwrap();
        let file = FinalModelFile {
            z: vec![0.1, -2.5e-300, 3.0],
            steps: 200,
            seed: 7,
            run_id: "r".into(),
            run_hash: "ab".into(),
            index: 2,
            peer_id: "p".into(),
            maker_index: 0,
            maker_peer_id: "m".into(),
            privacy: FinalPrivacy {
                contributions: 40,
                clipped: 3,
                skipped: 1,
                delta: 1e-6,
                epsilon_local: None,
                unit: user_level(),
                budget_epsilon: Some(8.0),
                epsilon_network: None,
                network_label: None,
                budget_view: Some("local".into()),
                conversion: "tight".into(),
            },
            problem: Some(ProblemSpec::of(
                dpwalk_core::problem::Loss::Multinomial { classes: 3 },
                dpwalk_core::problem::Regularizer::L2 { l2: 0.01 },
            )),
        };
        let path = file.write(dir.path()).unwrap();
        assert_eq!(path, dir.path().join(FILE));
        assert_eq!(FinalModelFile::read(dir.path()).unwrap(), file);
        let json: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
        assert!(json["privacy"]["epsilon_local"].is_null());
        assert!(!dir.path().join("final_model.json.tmp").exists());
        assert!(matches!(
            FinalModelFile::read(&dir.path().join("none")),
            Err(FinalModelError::Read { .. })
        ));
        std::fs::write(&path, "{}").unwrap();
        assert!(matches!(
            FinalModelFile::read(dir.path()),
            Err(FinalModelError::Parse { .. })
        ));
    }
}
