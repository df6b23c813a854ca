//! The node's durable state: everything a node must find again after a crash to resume the walk
//! exactly where it left it.
//!
//! A node's state is its `u_i`, its position in its RNG stream ([`NodeRng::get_word_pos`], so that
//! the noise and next hops after a restart are the ones it would have drawn), the last seq it
//! handled (for replay refusal), and the custody copy of the token it sent and has not seen
//! acknowledged, with its intended receiver. The daemon's order for one contribution is
//!
//! ```text
//! receive token → validate → step (dpwalk_core)
//!   → StateDir::commit(state with new u_i, rng position, seq, outgoing custody, the step's seq
//!     among the ledger's unflushed visits) → ledger append, unflushed → send
//! ```
//! so after a crash at any point [`StateDir::load`] returns either the state before the step (the
//! sender still has custody and re-sends) or the state after it, whose `outgoing` is exactly the
//! token to re-send. A noise-only visit (the budget spent) takes the same path, its ledger record
//! without a charge. The ledger's file is flushed later, off the token's path; until then the
//! state carries the seqs and kinds of its records (see `crate::learner`).
//!
//! # Files (`state.0` and `state.1` in the state directory, little-endian)
//! ```text
//! "DPWSTAT5" | generation: u64 | len: u32 | payload: len bytes of bincode(NodeState)
//!   | crc32(everything before): u32 | (older bytes past the record, ignored)
//! ```
//! The last byte of the magic is the format's version: 5 lists the unflushed ledger records of
//! both kinds (contributions and noise-only visits, [`NodeState::unflushed_visits`]), where 4
//! listed contributions only. A state of another version is refused
//! ([`StateError::OtherVersion`]: finish its run with the dpwalk that started it, or start a new
//! run), never decoded as this one.
//! Two slots, written in turn. [`StateDir::commit`] writes the new record, one generation above
//! the newest, over the *other* slot, in place, and flushes it with one `fdatasync`: no temporary
//! file, no rename, no directory sync (both files are created and made durable once, by
//! [`StateDir::open`]). A crash mid-commit can tear only the slot being written, so
//! [`StateDir::load`] takes the valid record with the higher generation: the new state if the
//! commit finished, the one before it otherwise (a torn newer slot is logged and ignored). If no
//! slot holds a valid record although one is not empty, the state cannot be trusted and is
//! reported, never guessed (guessing would fork the walk): a torn or damaged file, the wrong
//! magic, a checksum failure.
//!
//! # One process per state directory
//! [`StateDir::open`] first takes an exclusive advisory lock on `lock` in the directory
//! ([`std::fs::File::try_lock`]: `flock` on Unix, `LockFileEx` on Windows), before it reads
//! anything, and holds it as long as the [`StateDir`] lives (the node's lifetime): a second process
//! on the same directory, such as the same `node.toml` started twice, is refused with
//! [`StateError::Locked`], naming the directory and the holder's PID, which the holder writes into
//! the lock file. The lock is tried for [`LOCK_GRACE`] before that: a lock can outlive its holder
//! for a moment, in a process still exiting or in a child it forked whose `exec` has not yet
//! closed the inherited descriptor (`flock` locks belong to the open file, which a fork shares). Two processes on one state would fork the walk from one `u_i` and one RNG
//! position and split one ledger between them. The lock is released by the operating system when
//! the process ends, however it ends; the file stays.
//!
//! This costs one flush of one small file per commit where the rename scheme cost two file and
//! directory flushes (`BENCHMARKS.md`, `state_commit_p64`); it is what keeps a hop near 1 ms.
//!
//! [`NodeRng::get_word_pos`]: dpwalk_core::rng::NodeRng

use std::fs::{File, OpenOptions};
use std::io::{ErrorKind, Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};

use dpwalk_privacy::ledger::LedgerVisit;
use libp2p_identity::PeerId;
use serde::{Deserialize, Serialize};
use thiserror::Error;

use crate::codec::{FinalModel, MAX_DIM, Token};
use crate::run::RunHash;

/// The two slot files' names in the state directory.
pub const SLOT_FILES: [&str; 2] = ["state.0", "state.1"];

/// The lock file's name in the state directory (it holds the PID of the process holding it).
pub const LOCK_FILE: &str = "lock";

const MAGIC: &[u8; 8] = b"DPWSTAT5";
/// Magic, generation and length before the payload, checksum after.
const HEADER: usize = 8 + 8 + 4;
const TRAILER: usize = 4;
/// Four vectors of [`MAX_DIM`] values (`u_i`, the outgoing and backup tokens, the final model)
/// and room for the rest.
const MAX_PAYLOAD: usize = 4 * MAX_DIM * 8 + 4096;

/// The state's bincode configuration: the wire's ([`crate::codec::bincode_config`]) with the
/// state's own limit.
fn config() -> impl bincode::config::Config {
    crate::codec::bincode_config::<MAX_PAYLOAD>()
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
    /// The visits (contributions and noise-only visits, by seq) whose ledger records were
    /// appended after the ledger's last flush, oldest first: a machine crash may lose those
    /// records, and `crate::learner` appends them again when it reopens the ledger. Bounded by
    /// the learner (it flushes the ledger before the list outgrows `MAX_UNFLUSHED`).
    pub unflushed_visits: Vec<LedgerVisit>,
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
            unflushed_visits: Vec::new(),
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
    #[error("state {path}")]
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
    /// The file is a state of another format version (another version of dpwalk wrote it).
    #[error(
        "state {path} was written by another version of dpwalk (state format {found:?}, this one reads {expected:?}): finish that run with the version that started it, or start a new run with fresh state directories"
    )]
    OtherVersion {
        /// The file.
        path: PathBuf,
        /// Its magic.
        found: String,
        /// This version's magic.
        expected: String,
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
    /// Another process holds the state directory (see the module docs).
    #[error(
        "the state directory {dir} is in use by another process{}: a second node on the same state would fork the walk and split its privacy ledger. Stop that node first; to run another member, give it its own node.toml with its own `identity` and `state-dir`",
        holder(*.pid)
    )]
    Locked {
        /// The state directory.
        dir: PathBuf,
        /// The PID the holder wrote into the lock file, if it is there yet.
        pid: Option<u32>,
    },
    /// The state is for another run.
    #[error(
        "the state directory {path} holds the state of another run (run hash {found}; this run's is {expected}): give this node another `state-dir` in node.toml, or, if that run is over and you no longer need its model and ledger, remove {path}"
    )]
    OtherRun {
        /// The file.
        path: PathBuf,
        /// This run's hash.
        expected: RunHash,
        /// The state's.
        found: RunHash,
    },
}

/// ` (pid 1234)`, or nothing when the PID is not known.
fn holder(pid: Option<u32>) -> String {
    pid.map_or_else(String::new, |pid| format!(" (pid {pid})"))
}

/// The directory holding a node's state: its two slot files, open for commits, and its lock.
#[derive(Debug)]
pub struct StateDir {
    dir: PathBuf,
    /// The lock file, locked exclusively until this value drops.
    _lock: File,
    slots: [File; 2],
    /// The slot holding the newest valid record and its generation, if any.
    newest: Option<(usize, u64)>,
}

/// A slot's record, read and checked.
type SlotRecord = Result<Option<(u64, NodeState)>, StateError>;

impl StateDir {
    /// Opens the state directory `dir`, creating it and its slot files (durably) if needed, and
    /// locks it for this process first (see the module docs): [`StateError::Locked`] if another
    /// process holds it.
    pub fn open(dir: &Path) -> Result<Self, StateError> {
        let io = |path: &Path| {
            let path = path.to_path_buf();
            move |source| StateError::Io { path, source }
        };
        std::fs::create_dir_all(dir).map_err(io(dir))?;
        let lock = lock(dir)?;
        let mut created = false;
        let mut open = |name: &str| -> Result<File, StateError> {
            let path = dir.join(name);
            created |= !path.exists();
            OpenOptions::new()
                .read(true)
                .write(true)
                .create(true)
                .truncate(false)
                .open(&path)
                .map_err(io(&path))
        };
        let slots = [open(SLOT_FILES[0])?, open(SLOT_FILES[1])?];
        if created {
            dpwalk_core::durable::sync_parent(&dir.join(SLOT_FILES[0])).map_err(io(dir))?;
        }
        let mut states = StateDir {
            dir: dir.to_path_buf(),
            _lock: lock,
            slots,
            newest: None,
        };
        states.newest = states
            .read_slots()
            .iter()
            .enumerate()
            .filter_map(|(i, r)| match r {
                Ok(Some((generation, _))) => Some((i, *generation)),
                _ => None,
            })
            .max_by_key(|&(_, generation)| generation);
        Ok(states)
    }

    /// The path of slot `i`.
    pub fn slot_path(&self, i: usize) -> PathBuf {
        self.dir.join(SLOT_FILES[i])
    }

    /// Both slots' records: `None` for an empty slot.
    fn read_slots(&self) -> [SlotRecord; 2] {
        [0, 1].map(|i| read_slot(&self.slot_path(i)))
    }

    /// The committed state, or `None` when nothing was ever committed here.
    pub fn load(&self) -> Result<Option<NodeState>, StateError> {
        let [a, b] = self.read_slots();
        match (a, b) {
            (Ok(a), Ok(b)) => Ok(match (a, b) {
                (Some(a), Some(b)) => Some(if a.0 > b.0 { a.1 } else { b.1 }),
                (Some((_, s)), None) | (None, Some((_, s))) => Some(s),
                (None, None) => None,
            }),
            (Ok(Some((_, s))), Err(e)) | (Err(e), Ok(Some((_, s)))) => {
                tracing::warn!(
                    error = &e as &dyn std::error::Error,
                    "ignoring a slot torn by a crash mid-commit: the other slot holds the state before it"
                );
                Ok(Some(s))
            }
            (Err(e), _) | (Ok(None), Err(e)) => Err(e),
        }
    }

    /// As [`StateDir::load`], refusing a state committed for another run.
    pub fn load_for(&self, run: RunHash) -> Result<Option<NodeState>, StateError> {
        match self.load()? {
            Some(state) if state.run_hash != run.0 => Err(StateError::OtherRun {
                path: self.dir.clone(),
                expected: run,
                found: RunHash(state.run_hash),
            }),
            other => Ok(other),
        }
    }

    /// Makes `state` the committed state, atomically and durably (see the module docs). When this
    /// returns `Ok`, a crash at any later point leaves `state` for [`StateDir::load`].
    pub fn commit(&mut self, state: &NodeState) -> Result<(), StateError> {
        let (slot, generation) = match self.newest {
            Some((i, g)) => (1 - i, g + 1),
            None => (0, 1),
        };
        let path = self.slot_path(slot);
        let bytes = encode(generation, state).map_err(|message| StateError::Corrupt {
            path: path.clone(),
            message,
        })?;
        let file = &mut self.slots[slot];
        file.seek(SeekFrom::Start(0))
            .and_then(|_| file.write_all(&bytes))
            .and_then(|()| file.sync_data())
            .map_err(|source| StateError::Io { path, source })?;
        self.newest = Some((slot, generation));
        Ok(())
    }
}

/// How long a held lock is tried again before the directory is reported in use.
pub const LOCK_GRACE: std::time::Duration = std::time::Duration::from_secs(1);
/// The pause between two tries.
const LOCK_RETRY: std::time::Duration = std::time::Duration::from_millis(20);

/// Takes the exclusive lock on `dir`'s lock file and writes this process's PID into it.
fn lock(dir: &Path) -> Result<File, StateError> {
    let path = dir.join(LOCK_FILE);
    let io = |source| StateError::Io {
        path: path.clone(),
        source,
    };
    let mut file = OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .open(&path)
        .map_err(io)?;
    let tried_since = std::time::Instant::now();
    let locked = loop {
        match file.try_lock() {
            Err(std::fs::TryLockError::WouldBlock) if tried_since.elapsed() < LOCK_GRACE => {
                std::thread::sleep(LOCK_RETRY);
            }
            other => break other,
        }
    };
    match locked {
        Ok(()) => {}
        Err(std::fs::TryLockError::WouldBlock) => {
            // The holder may not have written its PID yet: then it is not named.
            let mut text = String::new();
            let pid = file
                .read_to_string(&mut text)
                .ok()
                .and_then(|_| text.trim().parse().ok());
            return Err(StateError::Locked {
                dir: dir.to_path_buf(),
                pid,
            });
        }
        Err(std::fs::TryLockError::Error(e)) => return Err(io(e)),
    }
    file.set_len(0)
        .and_then(|()| file.write_all(format!("{}\n", std::process::id()).as_bytes()))
        .map_err(io)?;
    Ok(file)
}

/// The record in slot file `path`: `None` when it is empty.
fn read_slot(path: &Path) -> SlotRecord {
    let io = |source| StateError::Io {
        path: path.to_path_buf(),
        source,
    };
    let file = match File::open(path) {
        Ok(f) => f,
        Err(e) if e.kind() == ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(io(e)),
    };
    let mut bytes = Vec::new();
    file.take((HEADER + MAX_PAYLOAD + TRAILER) as u64)
        .read_to_end(&mut bytes)
        .map_err(io)?;
    if bytes.is_empty() {
        return Ok(None);
    }
    decode(&bytes, path).map(Some)
}

/// The record bytes of a state at `generation`.
fn encode(generation: u64, state: &NodeState) -> Result<Vec<u8>, String> {
    let payload = bincode::serde::encode_to_vec(state, config()).map_err(|e| e.to_string())?;
    let len = u32::try_from(payload.len()).map_err(|e| e.to_string())?;
    let mut bytes = Vec::with_capacity(HEADER + payload.len() + TRAILER);
    bytes.extend_from_slice(MAGIC);
    bytes.extend_from_slice(&generation.to_le_bytes());
    bytes.extend_from_slice(&len.to_le_bytes());
    bytes.extend_from_slice(&payload);
    let crc = crc32fast::hash(&bytes);
    bytes.extend_from_slice(&crc.to_le_bytes());
    Ok(bytes)
}

/// The generation and state of a slot's bytes, with every check of the module docs; bytes past
/// the record are an older, longer record's and are ignored.
fn decode(bytes: &[u8], path: &Path) -> Result<(u64, NodeState), StateError> {
    let torn = |expected: usize| StateError::Torn {
        path: path.to_path_buf(),
        len: bytes.len() as u64,
        expected: expected as u64,
    };
    let Some((header, rest)) = bytes.split_first_chunk::<HEADER>() else {
        return Err(torn(HEADER + TRAILER));
    };
    if &header[..8] != MAGIC {
        if header[..7] == MAGIC[..7] {
            return Err(StateError::OtherVersion {
                path: path.to_path_buf(),
                found: String::from_utf8_lossy(&header[..8]).into_owned(),
                expected: String::from_utf8_lossy(MAGIC).into_owned(),
            });
        }
        return Err(StateError::BadMagic {
            path: path.to_path_buf(),
        });
    }
    let mut generation = [0u8; 8];
    generation.copy_from_slice(&header[8..16]);
    let mut len = [0u8; 4];
    len.copy_from_slice(&header[16..]);
    let len = u32::from_le_bytes(len) as usize;
    if len > MAX_PAYLOAD {
        return Err(torn(HEADER + MAX_PAYLOAD + TRAILER));
    }
    if rest.len() < len + TRAILER {
        return Err(torn(HEADER + len + TRAILER));
    }
    let (payload, rest) = rest.split_at(len);
    let mut stored = [0u8; 4];
    stored.copy_from_slice(&rest[..TRAILER]);
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
    Ok((u64::from_le_bytes(generation), state))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn format_is_pinned() {
        let state = NodeState::fresh(RunHash([7; 32]), 2);
        let bytes = encode(9, &state).unwrap();
        assert_eq!(&bytes[..8], MAGIC);
        assert_eq!(u64::from_le_bytes(bytes[8..16].try_into().unwrap()), 9);
        // run_hash 32, u: len 8 + 2×8, word pos 16, last_seq tag 1, three counters 3 × 8,
        // unflushed visits: len 8, four more None tags.
        let payload = 32 + 8 + 16 + 16 + 1 + 24 + 8 + 4;
        assert_eq!(
            u32::from_le_bytes(bytes[16..20].try_into().unwrap()) as usize,
            payload
        );
        assert_eq!(bytes.len(), HEADER + payload + TRAILER);
        assert_eq!(decode(&bytes, Path::new("x")).unwrap(), (9, state));
    }
}
