//! `node.toml`: what one operator configures for their node. Everything the members must agree on
//! is in the run file ([`crate::run`]); this file holds only what is the node's own: its key, its
//! data, where it listens and keeps its state, how it finds the others, its budget.
//!
//! ```toml
//! run = "run.toml"                  # the run file every member shares
//! identity = "node.key"             # from `dpwalk keygen`
//! state-dir = "state"               # u_i, custody, ledger, final_model.json
//! listen = ["/ip4/0.0.0.0/tcp/4001"]
//! bootstrap = []                    # Kademlia bootstrap peers: multiaddrs ending in /p2p/<PeerId>
//! mdns = true                       # discover members on the LAN
//! status = "127.0.0.1:9101"         # status endpoint: GET /status (JSON), GET /metrics (Prometheus)
//! relay = false                     # serve as a circuit relay for the run's members behind NAT
//!
//! [data]                            # the node's own records: a dataset table as in scenarios
//! source = "csv"
//! path = "data.csv"
//!
//! eval-every = 200                  # optional: record the model of every 200th forwarded token
//!                                   # in state/evals.csv (`dpwalk swarm` sets it)
//!
//! [budget]                          # optional: stop contributing before local ε exceeds this
//! epsilon = 10.0
//! delta = 1e-6
//!
//! [timeouts]                        # optional, milliseconds
//! request = 5000                    # one request-response exchange
//! handoff = 3000                    # retrying the same receiver before re-routing the token
//! resume = 10000                    # a predecessor's wait before it resumes a vanished walk
//! linger = 2000                     # after the final model, answering late peers before exiting
//! idle = 30000                      # a member unused this long: its connection is closed
//! ```
//! Relative paths are relative to the directory of `node.toml`.

use std::path::{Path, PathBuf};
use std::time::Duration;

use dpwalk_core::data::DataSpec;
use dpwalk_core::spec::BudgetSpec;
use dpwalk_core::toml_location::{key_line, toml_error_location};
use serde::{Deserialize, Serialize};
use thiserror::Error;

/// Errors of reading `node.toml`.
#[derive(Debug, Error)]
pub enum ConfigError {
    /// The file could not be read.
    #[error("cannot read node config {path}")]
    Read {
        /// The file.
        path: PathBuf,
        /// The reason.
        source: std::io::Error,
    },
    /// A key is unknown, missing or of the wrong type, or a value is out of range.
    #[error("{path}, line {line}: {}{message}", key.as_deref().map(|k| format!("`{k}`: ")).unwrap_or_default())]
    Invalid {
        /// The file.
        path: PathBuf,
        /// 1-based line (1 when unknown).
        line: usize,
        /// The offending key, when known.
        key: Option<String>,
        /// What is wrong.
        message: String,
    },
}

/// Timeouts, in milliseconds.
#[derive(Debug, Clone, Copy, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case", default)]
pub struct Timeouts {
    /// One request-response exchange.
    pub request: u64,
    /// Retrying the same receiver before the token is re-routed.
    pub handoff: u64,
    /// A predecessor's wait for [`crate::codec::Message::Released`] before it resumes the walk.
    pub resume: u64,
    /// After the final model: how long to keep answering before exiting.
    pub linger: u64,
    /// A member neither sent nor sending a message for this long has its connections closed,
    /// unless the node keeps it (its eager neighbours, the token's peers; see
    /// [`crate::limits`], "How many stay open").
    pub idle: u64,
}

impl Default for Timeouts {
    fn default() -> Self {
        Timeouts {
            request: 5_000,
            handoff: 3_000,
            resume: 10_000,
            linger: 2_000,
            idle: 30_000,
        }
    }
}

impl Timeouts {
    /// As a duration.
    pub fn request(&self) -> Duration {
        Duration::from_millis(self.request)
    }
    /// As a duration.
    pub fn handoff(&self) -> Duration {
        Duration::from_millis(self.handoff)
    }
    /// As a duration.
    pub fn resume(&self) -> Duration {
        Duration::from_millis(self.resume)
    }
    /// As a duration.
    pub fn linger(&self) -> Duration {
        Duration::from_millis(self.linger)
    }
    /// As a duration.
    pub fn idle(&self) -> Duration {
        Duration::from_millis(self.idle)
    }
}

fn default_true() -> bool {
    true
}

/// `node.toml` as written.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub struct NodeConfig {
    /// The run file.
    pub run: PathBuf,
    /// The identity file.
    pub identity: PathBuf,
    /// The state directory.
    pub state_dir: PathBuf,
    /// Listen multiaddrs.
    #[serde(default)]
    pub listen: Vec<String>,
    /// Kademlia bootstrap multiaddrs (with `/p2p/<PeerId>`).
    #[serde(default)]
    pub bootstrap: Vec<String>,
    /// mDNS discovery.
    #[serde(default = "default_true")]
    pub mdns: bool,
    /// Serve as a circuit relay (v2) for the run's members ([`crate::reach`]): for a node that
    /// every member can dial, when some members accept no inbound connection.
    #[serde(default)]
    pub relay: bool,
    /// Status endpoint address (`host:port`).
    #[serde(default)]
    pub status: Option<String>,
    /// The node's records.
    pub data: DataSpec,
    /// Record the model `z` of every forwarded token whose seq is a multiple of this, in
    /// `evals.csv` of the state directory ([`crate::learner::Learner::with_evals`]).
    #[serde(default)]
    pub eval_every: Option<u64>,
    /// The node's budget, on the local view and in the run's unit (record-level when the run
    /// file says `[privacy] unit = "record"`: the node has one charge per contribution).
    #[serde(default)]
    pub budget: Option<BudgetSpec>,
    /// Timeouts.
    #[serde(default)]
    pub timeouts: Timeouts,
    /// The directory relative paths start from (not in the file).
    #[serde(skip)]
    pub base_dir: PathBuf,
}

/// The line of `timeouts.<key>` in `text` and the key to name: the key where it is written, else
/// the `[timeouts]` table where that is written (the key took its default), else line 1.
fn timeouts_key(text: &str, key: &str) -> (usize, String) {
    let full = format!("timeouts.{key}");
    match key_line(text, &["timeouts", key]) {
        Some(line) => (line, full),
        None => (key_line(text, &["timeouts"]).unwrap_or(1), full),
    }
}

impl NodeConfig {
    /// Reads `path`.
    pub fn load(path: &Path) -> Result<NodeConfig, ConfigError> {
        let text = std::fs::read_to_string(path).map_err(|source| ConfigError::Read {
            path: path.to_path_buf(),
            source,
        })?;
        let base = path.parent().unwrap_or(Path::new("")).to_path_buf();
        NodeConfig::parse(&text, path, &base)
    }

    /// Parses `text` (from `path`, for messages); relative paths resolve against `base_dir`.
    pub fn parse(text: &str, path: &Path, base_dir: &Path) -> Result<NodeConfig, ConfigError> {
        let invalid = |line, key, message| ConfigError::Invalid {
            path: path.to_path_buf(),
            line,
            key,
            message,
        };
        let mut cfg: NodeConfig = toml::from_str(text).map_err(|e| {
            let (line, key) = toml_error_location(text, &e);
            invalid(line, key, e.message().to_string())
        })?;
        cfg.base_dir = base_dir.to_path_buf();
        // The node's own budget is checked as a run file's `[budget]` is.
        if let Some(Err(e)) = cfg.budget.map(|b| b.check("budget")) {
            return Err(invalid(
                e.line_in(text).unwrap_or(1),
                Some(e.key()),
                e.message().to_string(),
            ));
        }
        if cfg.eval_every == Some(0) {
            return Err(invalid(
                1,
                Some("eval-every".into()),
                "give a number of hops of at least 1, or leave it out".into(),
            ));
        }
        let t = cfg.timeouts;
        if let Some(key) = [
            ("request", t.request),
            ("handoff", t.handoff),
            ("resume", t.resume),
            ("idle", t.idle),
        ]
        .into_iter()
        .find_map(|(key, ms)| (ms == 0).then_some(key))
        {
            let (line, key) = timeouts_key(text, key);
            return Err(invalid(line, Some(key), "must be at least 1 ms".into()));
        }
        if t.resume <= t.handoff {
            // Where the user wrote one of the two: `resume` if given, else `handoff`.
            let given = key_line(text, &["timeouts", "resume"]).map_or("handoff", |_| "resume");
            let (line, key) = timeouts_key(text, given);
            return Err(invalid(
                line,
                Some(key),
                format!(
                    "resume ({} ms) must be greater than handoff ({} ms): a predecessor waits that long for the news that its successor handed the token on, and the successor may retry its receiver for the whole hand-off timeout first; a shorter wait resumes a walk that is not lost, and forks it",
                    t.resume, t.handoff
                ),
            ));
        }
        Ok(cfg)
    }

    /// `p` resolved against the config's directory.
    pub fn resolve(&self, p: &Path) -> PathBuf {
        if p.is_absolute() {
            p.to_path_buf()
        } else {
            self.base_dir.join(p)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `node.toml` with these `[timeouts]` lines, parsed.
    fn parse(timeouts: &str) -> Result<NodeConfig, ConfigError> {
        let text = format!(
            "run = \"run.toml\"\nidentity = \"node.key\"\nstate-dir = \"state\"\n\n[data]\nsource = \"csv\"\npath = \"data.csv\"\n\n[timeouts]\n{timeouts}"
        );
        NodeConfig::parse(&text, Path::new("node.toml"), Path::new(""))
    }

    /// The line, key and message of an [`ConfigError::Invalid`].
    fn invalid(e: ConfigError) -> (usize, Option<String>, String) {
        match e {
            ConfigError::Invalid {
                line, key, message, ..
            } => (line, key, message),
            other => panic!("not a config error: {other}"),
        }
    }

    #[test]
    fn resume_must_outlast_the_handoff() {
        let ok = parse("handoff = 2000\nresume = 2001\n").unwrap();
        assert_eq!((ok.timeouts.handoff, ok.timeouts.resume), (2000, 2001));

        // The resume written too short: the error is at its line (line 11 of the file).
        let (line, key, message) = invalid(parse("handoff = 4000\nresume = 4000\n").unwrap_err());
        assert_eq!((line, key.as_deref()), (11, Some("timeouts.resume")));
        assert!(
            message.contains("resume (4000 ms) must be greater than handoff (4000 ms)"),
            "{message}"
        );

        // A handoff beyond the default resume: the error is at the handoff, the key written.
        let (line, key, message) = invalid(parse("request = 100\nhandoff = 20000\n").unwrap_err());
        assert_eq!((line, key.as_deref()), (11, Some("timeouts.handoff")));
        assert!(
            message.contains("resume (10000 ms) must be greater than handoff (20000 ms)"),
            "{message}"
        );
        let shown = ConfigError::Invalid {
            path: "node.toml".into(),
            line,
            key,
            message,
        }
        .to_string();
        assert!(
            shown.starts_with("node.toml, line 11: `timeouts.handoff`: resume"),
            "{shown}"
        );
    }

    #[test]
    fn a_zero_timeout_is_refused_at_its_key() {
        let (line, key, message) = invalid(parse("request = 0\n").unwrap_err());
        assert_eq!((line, key.as_deref()), (10, Some("timeouts.request")));
        assert_eq!(message, "must be at least 1 ms");
    }
}
