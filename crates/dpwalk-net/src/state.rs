//! The node's durable state: everything a node must find again after a crash to resume the walk
//! exactly where it left it.
//!
//! A node's state is its `u_i`, its position in its RNG stream ([`NodeRng::get_word_pos`], so that
//! the noise and next hops after a restart are the ones it would have drawn), the last seq it
//! handled (for replay refusal), and the custody copy of the token it sent and has not seen
//! acknowledged, with its intended receiver. The daemon's order for one contribution is
//!
//! ```text
//! receive token → validate → step (dpwalk_core) → ledger append (dpwalk_privacy::ledger)
//!   → StateDir::commit(state with new u_i, rng position, seq, outgoing custody) → send
//! ```
//! so after a crash at any point [`StateDir::load`] returns either the state before the step (the
//! sender still has custody and re-sends) or the state after it, whose `outgoing` is exactly the
//! token to re-send.
//!
//! # File (`state.bin` in the state directory, little-endian)
//! ```text
//! "DPWSTAT1" | len: u32 | payload: len bytes of bincode(NodeState) | crc32(magic ‖ len ‖ payload): u32
//! ```
//! [`StateDir::commit`] writes `state.bin.tmp`, fsyncs it, renames it over `state.bin` and fsyncs
//! the directory: the rename is atomic, so a crash leaves the old file or the new one, never a mix.
//! A file that is short, long, of the wrong magic or fails its checksum is reported and never used
//! (a torn state means the disk lied about fsync, and guessing would fork the walk). A leftover
//! temporary file is ignored and replaced by the next commit.
//!
//! [`NodeRng::get_word_pos`]: dpwalk_core::rng::NodeRng

use std::fs::{File, OpenOptions};
use std::io::{ErrorKind, Read, Write};
use std::path::{Path, PathBuf};

use libp2p_identity::PeerId;
use serde::{Deserialize, Serialize};
use thiserror::Error;

use crate::codec::{FinalModel, MAX_DIM, Token};
use crate::run::RunHash;

/// The state file's name in the state directory.
pub const STATE_FILE: &str = "state.bin";
/// The temporary file a commit writes before renaming it to [`STATE_FILE`].
pub const TEMP_FILE: &str = "state.bin.tmp";

const MAGIC: &[u8; 8] = b"DPWSTAT1";
/// Magic and length before the payload, checksum after.
const HEADER: usize = 8 + 4;
const TRAILER: usize = 4;
/// Four vectors of [`MAX_DIM`] values (`u_i`, the outgoing and backup tokens, the final model)
/// and room for the rest.
const MAX_PAYLOAD: usize = 4 * MAX_DIM * 8 + 4096;

fn config() -> impl bincode::config::Config {
    bincode::config::standard()
        .with_little_endian()
        .with_fixed_int_encoding()
        .with_limit::<MAX_PAYLOAD>()
}

/// A token sent and not yet acknowledged.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Custody {
    /// The intended receiver.
    pub to: PeerId,
    /// The token exactly as sent.
    pub token: Token,
}

/// What a node persists (see the module docs).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct NodeState {
    /// The run this state belongs to ([`crate::run::Run::hash`]).
    pub run_hash: [u8; 32],
    /// The node's `u_i`.
    pub u: Vec<f64>,
    /// The node's position in its RNG stream.
    pub rng_word_pos: u128,
    /// The highest seq this node handled (stepped or forwarded), if any.
    pub last_seq: Option<u64>,
    /// Contributions made (steps that changed `u_i` and charged the ledger).
    pub contributions: u64,
    /// Contributions whose clip was active.
    pub clipped: u64,
    /// Visits where the budget was spent and the token was only forwarded.
    pub skipped: u64,
    /// The seq of the last contribution: the ledger must hold a record for it (see
    /// `crate::learner`, which repairs a ledger a crash left one record short).
    pub last_contribution_seq: Option<u64>,
    /// The peer the last token came from, told by [`crate::codec::Message::Released`] when the
    /// token this node produced is acknowledged downstream.
    pub predecessor: Option<PeerId>,
    /// The token this node sent and has not seen acknowledged.
    pub outgoing: Option<Custody>,
    /// The token this node sent, acknowledged but not yet released downstream: resent to another
    /// neighbour if the receiver vanishes.
    pub backup: Option<Custody>,
    /// The final model, once known (this node published it or received it).
    pub final_model: Option<FinalModel>,
}

impl NodeState {
    /// The state of a node that has not contributed yet: `u_i = 0`, at the start of its stream.
    pub fn fresh(run_hash: RunHash, dim: usize) -> Self {
        NodeState {
            run_hash: run_hash.0,
            u: vec![0.0; dim],
            rng_word_pos: 0,
            last_seq: None,
            contributions: 0,
            clipped: 0,
            skipped: 0,
            last_contribution_seq: None,
            predecessor: None,
            outgoing: None,
            backup: None,
            final_model: None,
        }
    }
}

/// Errors of the state directory. A state that cannot be trusted is always an error.
#[derive(Debug, Error)]
pub enum StateError {
    /// The file system failed.
    #[error("state {path}: {source}")]
    Io {
        /// The file or directory.
        path: PathBuf,
        /// The reason.
        source: std::io::Error,
    },
    /// The file is shorter or longer than its header says (a torn write, or another file).
    #[error("state {path} is torn: {len} bytes where {expected} were expected")]
    Torn {
        /// The file.
        path: PathBuf,
        /// Its length.
        len: u64,
        /// The length its header implies (or the minimum, when the header itself is cut).
        expected: u64,
    },
    /// The file does not start with the state magic.
    #[error("state {path} is not a dpwalk state file")]
    BadMagic {
        /// The file.
        path: PathBuf,
    },
    /// The checksum does not match: the contents are damaged.
    #[error("state {path} fails its checksum")]
    Checksum {
        /// The file.
        path: PathBuf,
    },
    /// The checksum matches but the contents do not decode (another version, or a bug).
    #[error("state {path} is corrupt: {message}")]
    Corrupt {
        /// The file.
        path: PathBuf,
        /// The reason.
        message: String,
    },
    /// The state is for another run.
    #[error("state {path} belongs to run {found}, not to this run {expected}")]
    OtherRun {
        /// The file.
        path: PathBuf,
        /// This run's hash.
        expected: RunHash,
        /// The state's.
        found: RunHash,
    },
}

/// The directory holding a node's state.
#[derive(Debug, Clone)]
pub struct StateDir {
    dir: PathBuf,
}

impl StateDir {
    /// Opens (creating if needed) the state directory `dir`.
    pub fn open(dir: &Path) -> Result<Self, StateError> {
        std::fs::create_dir_all(dir).map_err(|source| StateError::Io {
            path: dir.to_path_buf(),
            source,
        })?;
        Ok(StateDir {
            dir: dir.to_path_buf(),
        })
    }

    /// The state file's path.
    pub fn path(&self) -> PathBuf {
        self.dir.join(STATE_FILE)
    }

    /// The committed state, or `None` when nothing was ever committed here.
    pub fn load(&self) -> Result<Option<NodeState>, StateError> {
        let path = self.path();
        let io = |source| StateError::Io {
            path: path.clone(),
            source,
        };
        let file = match File::open(&path) {
            Ok(f) => f,
            Err(e) if e.kind() == ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(io(e)),
        };
        let len = file.metadata().map_err(io)?.len();
        let max = (HEADER + MAX_PAYLOAD + TRAILER) as u64;
        if len > max {
            return Err(StateError::Torn {
                path,
                len,
                expected: max,
            });
        }
        let mut bytes = Vec::new();
        file.take(max).read_to_end(&mut bytes).map_err(io)?;
        decode(&bytes, &path).map(Some)
    }

    /// As [`StateDir::load`], refusing a state committed for another run.
    pub fn load_for(&self, run: RunHash) -> Result<Option<NodeState>, StateError> {
        match self.load()? {
            Some(state) if state.run_hash != run.0 => Err(StateError::OtherRun {
                path: self.path(),
                expected: run,
                found: RunHash(state.run_hash),
            }),
            other => Ok(other),
        }
    }

    /// Makes `state` the committed state, atomically and durably (see the module docs). When this
    /// returns `Ok`, a crash at any later point leaves `state` for [`StateDir::load`].
    pub fn commit(&self, state: &NodeState) -> Result<(), StateError> {
        let bytes = encode(state).map_err(|message| StateError::Corrupt {
            path: self.path(),
            message,
        })?;
        let temp = self.dir.join(TEMP_FILE);
        let io = |path: &Path| {
            let path = path.to_path_buf();
            move |source| StateError::Io { path, source }
        };
        let mut file = OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(true)
            .open(&temp)
            .map_err(io(&temp))?;
        file.write_all(&bytes).map_err(io(&temp))?;
        file.sync_all().map_err(io(&temp))?;
        drop(file);
        let path = self.path();
        std::fs::rename(&temp, &path).map_err(io(&path))?;
        sync_parent(&path).map_err(io(&self.dir))
    }
}

/// The file bytes of a state.
fn encode(state: &NodeState) -> Result<Vec<u8>, String> {
    let payload = bincode::serde::encode_to_vec(state, config()).map_err(|e| e.to_string())?;
    let len = u32::try_from(payload.len()).map_err(|e| e.to_string())?;
    let mut bytes = Vec::with_capacity(HEADER + payload.len() + TRAILER);
    bytes.extend_from_slice(MAGIC);
    bytes.extend_from_slice(&len.to_le_bytes());
    bytes.extend_from_slice(&payload);
    let crc = crc32fast::hash(&bytes);
    bytes.extend_from_slice(&crc.to_le_bytes());
    Ok(bytes)
}

/// The state in file bytes, with every check of the module docs.
fn decode(bytes: &[u8], path: &Path) -> Result<NodeState, StateError> {
    let torn = |expected: usize| StateError::Torn {
        path: path.to_path_buf(),
        len: bytes.len() as u64,
        expected: expected as u64,
    };
    let Some((header, rest)) = bytes.split_first_chunk::<HEADER>() else {
        return Err(torn(HEADER + TRAILER));
    };
    if &header[..8] != MAGIC {
        return Err(StateError::BadMagic {
            path: path.to_path_buf(),
        });
    }
    let mut len = [0u8; 4];
    len.copy_from_slice(&header[8..]);
    let len = u32::from_le_bytes(len) as usize;
    if len > MAX_PAYLOAD {
        return Err(torn(HEADER + MAX_PAYLOAD + TRAILER));
    }
    if rest.len() != len + TRAILER {
        return Err(torn(HEADER + len + TRAILER));
    }
    let (payload, crc) = rest.split_at(len);
    let mut stored = [0u8; 4];
    stored.copy_from_slice(crc);
    if crc32fast::hash(&bytes[..HEADER + len]) != u32::from_le_bytes(stored) {
        return Err(StateError::Checksum {
            path: path.to_path_buf(),
        });
    }
    let corrupt = |message: String| StateError::Corrupt {
        path: path.to_path_buf(),
        message,
    };
    let (state, used): (NodeState, usize) =
        bincode::serde::decode_from_slice(payload, config()).map_err(|e| corrupt(e.to_string()))?;
    if used != payload.len() {
        return Err(corrupt(format!("{} trailing bytes", payload.len() - used)));
    }
    Ok(state)
}

/// Fsyncs the directory containing `path`, so that a file created or renamed there survives a
/// crash. A no-op where directories cannot be opened (not Unix).
pub(crate) fn sync_parent(path: &Path) -> std::io::Result<()> {
    #[cfg(unix)]
    {
        let parent = match path.parent() {
            Some(p) if !p.as_os_str().is_empty() => p,
            _ => Path::new("."),
        };
        File::open(parent)?.sync_all()?;
    }
    #[cfg(not(unix))]
    let _ = path;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn format_is_pinned() {
        let state = NodeState::fresh(RunHash([7; 32]), 2);
        let bytes = encode(&state).unwrap();
        assert_eq!(&bytes[..8], MAGIC);
        // run_hash 32, u: len 8 + 2×8, word pos 16, last_seq tag 1, three counters 3 × 8,
        // five more None tags.
        let payload = 32 + 8 + 16 + 16 + 1 + 24 + 5;
        assert_eq!(
            u32::from_le_bytes(bytes[8..12].try_into().unwrap()) as usize,
            payload
        );
        assert_eq!(bytes.len(), HEADER + payload + TRAILER);
        assert_eq!(decode(&bytes, Path::new("x")).unwrap(), state);
    }
}
