//! The files `dpwalk node` reads, written for a run planned elsewhere: one directory per member
//! (`node-<i>/` with `node.key`, `data.csv` and `node.toml`) and the `run.toml` naming them all.
//!
//! `dpwalk swarm` and the end-to-end tests both start real nodes from such a directory; writing it
//! here, once, keeps the files they start from the files a user would write (and the node reads),
//! with the key names of [`crate::config`] and [`crate::run`] checked by the round trip in the
//! tests below rather than kept alike by hand.
//!
//! ```text
//! out/
//!   run.toml            the run file: `run` with a `[[members]]` entry per member
//!   node-<i>/
//!     node.key          the member's identity (kept if present: its PeerId is in run.toml)
//!     data.csv          its records, every value written so that it parses back to the same f64
//!     node.toml         run = "../run.toml", its listen and status addresses, options
//! ```

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use libp2p_identity::{Keypair, PeerId};
use serde::Serialize;
use thiserror::Error;

use crate::config::Timeouts;
use crate::keys::{self, KeyError};
use crate::run::{MemberSpec, Run, RunError, RunFile};

/// The run file's name in the output directory; each `node.toml` names it as `../run.toml`.
pub const RUN_FILE: &str = "run.toml";

/// Errors of writing a workspace.
#[derive(Debug, Error)]
pub enum WorkspaceError {
    /// A file or directory could not be written or removed.
    #[error("{action} {}", path.display())]
    Io {
        /// What was being done (`writing`, `creating`, `removing the earlier run's`).
        action: &'static str,
        /// The file or directory.
        path: PathBuf,
        /// The operating system's reason.
        #[source]
        source: std::io::Error,
    },
    /// No free port could be found.
    #[error("finding free ports on 127.0.0.1")]
    Ports(#[source] std::io::Error),
    /// A member's identity could not be read or generated.
    #[error(transparent)]
    Key(#[from] KeyError),
    /// A file could not be serialized (a value TOML cannot hold).
    #[error("serializing {what}")]
    Serialize {
        /// `the run file` or `node.toml`.
        what: &'static str,
        /// The serializer's reason.
        #[source]
        source: toml::ser::Error,
    },
    /// The run file written is not a valid run.
    #[error(transparent)]
    Run(#[from] RunError),
}

/// One member to write: where it listens and its records.
#[derive(Debug, Clone)]
pub struct MemberPlan<'a> {
    /// The multiaddr it listens on, and is dialled at (`/ip4/127.0.0.1/tcp/4001`).
    pub listen: String,
    /// Its status endpoint, `host:port`.
    pub status: String,
    /// Its records' features, row after row of `n_features` values.
    pub features: &'a [f64],
    /// One label per record.
    pub labels: &'a [f64],
    /// Features per record.
    pub n_features: usize,
}

/// The `node.toml` keys every member gets alike beyond its own addresses and data.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct NodeOptions {
    /// `eval-every`: record the model every this many hops ([`crate::config::NodeConfig`]).
    pub eval_every: Option<u64>,
    /// `[timeouts]`, when not the defaults.
    pub timeouts: Option<Timeouts>,
}

/// A member as written.
#[derive(Debug, Clone)]
pub struct WrittenMember {
    /// Its index in the run.
    pub index: usize,
    /// Its directory (`node.toml` is in it).
    pub dir: PathBuf,
    /// Its identity.
    pub keypair: Keypair,
    /// Its PeerId.
    pub peer: PeerId,
}

/// A workspace as written: the run (as the nodes will read it) and its members.
#[derive(Debug, Clone)]
pub struct Workspace {
    /// `run.toml`, validated as every node validates it.
    pub run: Run,
    /// The members, by index.
    pub members: Vec<WrittenMember>,
}

/// `node.toml` as this module writes it; the keys are [`crate::config::NodeConfig`]'s.
#[derive(Serialize)]
#[serde(rename_all = "kebab-case")]
struct NodeFile<'a> {
    run: String,
    identity: &'static str,
    state_dir: &'static str,
    listen: [&'a str; 1],
    mdns: bool,
    status: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    eval_every: Option<u64>,
    data: DataFile,
    #[serde(skip_serializing_if = "Option::is_none")]
    timeouts: Option<Timeouts>,
}

/// The `[data]` table of [`NodeFile`].
#[derive(Serialize)]
struct DataFile {
    source: &'static str,
    path: &'static str,
}

/// Free ports on 127.0.0.1 for the members' listen and status addresses, outside the kernel's
/// ephemeral range ([`crate::ports`]: released before the nodes bind them, so another program
/// may still take one in between; the node then says which `listen` port is in use).
pub fn free_ports(count: usize) -> Result<Vec<u16>, WorkspaceError> {
    crate::ports::free_loopback_ports(count).map_err(WorkspaceError::Ports)
}

/// Writes member `i` of `members` to `out/node-<i>/` and `run` (its `members` replaced by them)
/// to `out/run.toml`; returns the run as a node reads it. A member's key is kept if its directory
/// has one, and its earlier state and log are removed: a node resumes from its state directory,
/// which would be another run's.
pub fn write(
    out: &Path,
    mut run: RunFile,
    members: &[MemberPlan<'_>],
    options: NodeOptions,
) -> Result<Workspace, WorkspaceError> {
    run.members.clear();
    let mut written = Vec::with_capacity(members.len());
    for (index, member) in members.iter().enumerate() {
        let dir = out.join(format!("node-{index}"));
        let (keypair, peer) = write_member(&dir, index, member, options)?;
        run.members.push(MemberSpec {
            index,
            peer_id: peer.to_base58(),
            addrs: vec![member.listen.clone()],
        });
        written.push(WrittenMember {
            index,
            dir,
            keypair,
            peer,
        });
    }
    let text = toml::to_string(&run).map_err(|source| WorkspaceError::Serialize {
        what: "the run file",
        source,
    })?;
    let path = out.join(RUN_FILE);
    std::fs::write(&path, &text).map_err(io("writing", &path))?;
    let run = Run::parse(&text, &path.display().to_string())?;
    Ok(Workspace {
        run,
        members: written,
    })
}

/// Member `index`'s directory: key, data and `node.toml`.
fn write_member(
    dir: &Path,
    index: usize,
    member: &MemberPlan<'_>,
    options: NodeOptions,
) -> Result<(Keypair, PeerId), WorkspaceError> {
    for stale in [dir.join("state"), dir.join("node.log")] {
        let removed = if stale.is_dir() {
            std::fs::remove_dir_all(&stale)
        } else if stale.exists() {
            std::fs::remove_file(&stale)
        } else {
            Ok(())
        };
        removed.map_err(io("removing the earlier run's", &stale))?;
    }
    std::fs::create_dir_all(dir).map_err(io("creating", dir))?;
    let key = dir.join("node.key");
    let keypair = if key.exists() {
        keys::load(&key)?
    } else {
        keys::generate(&key)?
    };
    let data = dir.join("data.csv");
    std::fs::write(&data, data_csv(member)).map_err(io("writing", &data))?;
    let node = NodeFile {
        run: format!("../{RUN_FILE}"),
        identity: "node.key",
        state_dir: "state",
        listen: [&member.listen],
        mdns: false,
        status: &member.status,
        eval_every: options.eval_every,
        data: DataFile {
            source: "csv",
            path: "data.csv",
        },
        timeouts: options.timeouts,
    };
    let body = toml::to_string(&node).map_err(|source| WorkspaceError::Serialize {
        what: "node.toml",
        source,
    })?;
    let text = format!(
        "# Node {index} of a local swarm (see the README, \"Running nodes on separate hosts\").\n{body}"
    );
    let path = dir.join("node.toml");
    std::fs::write(&path, text).map_err(io("writing", &path))?;
    let peer = keys::peer_id(&keypair);
    Ok((keypair, peer))
}

/// The member's records exactly ([`records_csv`]).
fn data_csv(member: &MemberPlan<'_>) -> String {
    records_csv(member.features, member.labels, member.n_features)
}

/// Records as a node's `[data] source = "csv"` reads them (features, then the label; no header),
/// exactly: `{:?}` prints the shortest decimal that parses back to the same f64, so the node
/// steps on the very numbers it was given (and a row scaled to a norm bound reads back within it).
pub fn records_csv(features: &[f64], labels: &[f64], n_features: usize) -> String {
    let mut csv = String::new();
    let rows = features.chunks_exact(n_features.max(1));
    for (row, label) in rows.zip(labels) {
        for v in row {
            // Writing to a String cannot fail.
            let _ = write!(csv, "{v:?},");
        }
        let _ = writeln!(csv, "{label:?}");
    }
    csv
}

fn io<'a>(
    action: &'static str,
    path: &'a Path,
) -> impl FnOnce(std::io::Error) -> WorkspaceError + 'a {
    move |source| WorkspaceError::Io {
        action,
        path: path.to_path_buf(),
        source,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::NodeConfig;
    use crate::run::AlgorithmSpec;
    use dpwalk_core::spec::{LossName, ProblemSpec};
    use dpwalk_core::topology::{TopologyKind, TopologySpec};

    fn run_file() -> RunFile {
        RunFile {
            run_id: "ws".into(),
            seed: 3,
            steps: 10,
            dimension: 2,
            problem: ProblemSpec {
                loss: LossName::Squared,
                classes: None,
                l1: 0.0,
                l2: 0.0,
            },
            algorithm: AlgorithmSpec::admm(1.0, 0.5, 1.0, Some(0.5)),
            budget: None,
            privacy: None,
            topology: TopologySpec::new(TopologyKind::Complete),
            start: None,
            members: Vec::new(),
        }
    }

    #[test]
    fn what_is_written_is_what_a_node_reads() {
        let out = tempfile::tempdir().unwrap();
        let features = [0.1, 1.0 / 3.0, -2.5, 1e-300];
        let labels = [0.7, f64::MIN_POSITIVE];
        let ports = free_ports(4).unwrap();
        let plans: Vec<MemberPlan> = (0..2)
            .map(|i| MemberPlan {
                listen: format!("/ip4/127.0.0.1/tcp/{}", ports[2 * i]),
                status: format!("127.0.0.1:{}", ports[2 * i + 1]),
                features: &features,
                labels: &labels,
                n_features: 2,
            })
            .collect();
        let timeouts = Timeouts {
            handoff: 1000,
            ..Timeouts::default()
        };
        let options = NodeOptions {
            eval_every: Some(5),
            timeouts: Some(timeouts),
        };
        let ws = write(out.path(), run_file(), &plans, options).unwrap();
        assert_eq!(ws.run.members().len(), 2);
        for (member, plan) in ws.members.iter().zip(&plans) {
            assert_eq!(ws.run.index_of(&member.peer), Some(member.index));
            let config = NodeConfig::load(&member.dir.join("node.toml")).unwrap();
            let run = Run::load(&config.resolve(&config.run)).unwrap();
            assert_eq!(run.hash(), ws.run.hash());
            assert_eq!(config.listen, vec![plan.listen.clone()]);
            assert_eq!(config.status.as_deref(), Some(plan.status.as_str()));
            assert_eq!(config.eval_every, Some(5));
            assert_eq!(config.timeouts, timeouts);
            assert!(!config.mdns);
            let data = std::fs::read_to_string(config.resolve(Path::new("data.csv"))).unwrap();
            let values: Vec<f64> = data
                .split(['\n', ','])
                .filter(|v| !v.is_empty())
                .map(|v| v.parse().unwrap())
                .collect();
            let expected = [0.1, 1.0 / 3.0, 0.7, -2.5, 1e-300, f64::MIN_POSITIVE];
            assert_eq!(
                values.iter().map(|v| v.to_bits()).collect::<Vec<_>>(),
                expected.iter().map(|v| v.to_bits()).collect::<Vec<_>>()
            );
        }
    }

    #[test]
    fn written_again_a_member_keeps_its_key_and_loses_its_state() {
        let out = tempfile::tempdir().unwrap();
        let plan = MemberPlan {
            listen: "/ip4/127.0.0.1/tcp/1".into(),
            status: "127.0.0.1:2".into(),
            features: &[1.0, 2.0],
            labels: &[3.0],
            n_features: 2,
        };
        let plans = [plan.clone(), plan];
        let first = write(out.path(), run_file(), &plans, NodeOptions::default()).unwrap();
        let state = first.members[0].dir.join("state");
        std::fs::create_dir_all(&state).unwrap();
        std::fs::write(first.members[0].dir.join("node.log"), "old").unwrap();
        let again = write(out.path(), run_file(), &plans, NodeOptions::default()).unwrap();
        assert_eq!(again.run.hash(), first.run.hash());
        assert_eq!(again.members[1].peer, first.members[1].peer);
        assert!(!state.exists());
        assert!(!first.members[0].dir.join("node.log").exists());
        let text = std::fs::read_to_string(first.members[0].dir.join("node.toml")).unwrap();
        assert!(
            !text.contains("eval-every") && !text.contains("[timeouts]"),
            "{text}"
        );
    }
}
