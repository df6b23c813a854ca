//! The per-user ledger: an append-only file of a member's visits of the walk: each contribution
//! with the RDP it was charged, and each noise-only visit (a step taken with the budget spent).
//!
//! A node appends a record for each visit before the token leaves it, and checks its budget
//! before each step (DESIGN.md, "Ledger"). [`Ledger::append`] flushes each record;
//! [`Ledger::append_unflushed`] and [`Ledger::flush`] let a driver that keeps the records durable
//! elsewhere flush the file later, off its critical path. So the file must survive a crash at
//! any byte: a torn last record is detected and reported, never silently dropped, and never counted
//! twice.
//!
//! Why noise-only visits are recorded: the ledgers of all members, brought together after a run,
//! give the walk's holder at every step and which steps were contributions ([`Ledger::visits`]),
//! which is what the ex-post network certificate (N2,
//! [`crate::network::excursion::certify`]) needs. A noise-only visit of an observer is one of its
//! observations: a holder sequence without them would split the excursions wrongly and
//! under-charge.
//!
//! # Format 3 (little-endian)
//! ```text
//! header:       "DPWLEDG3" | run: 32 bytes | member: u64 | k: u32 | k orders: f64
//!                 | crc32(all previous header bytes): u32
//! contribution: len: u32 (= 16 + 8k) | seq: u64 | μ²: f64 | k values: f64
//!                 | crc32(len bytes ‖ seq ‖ μ² ‖ values): u32
//! noise-only:   len: u32 (= 8)       | seq: u64 | crc32(len bytes ‖ seq): u32
//! ```
//! `μ²` is the contribution's Gaussian bound ([`RdpCurve::gaussian_mu2`]), or −1 where it has
//! none: the total of Gaussian contributions is then converted exactly, as the budget policy
//! that let them in converted it ([`crate::gdp`]). A record whose values exceed `α μ²/2` is
//! refused as corrupt, so a damaged `μ²` can never lower a figure.
//! The header names its owner ([`LedgerOwner`]: the run, by the 32 bytes its driver identifies
//! it with, and the member's index), so that ledgers brought together say whose visits they hold
//! without relying on file names. The orders are stored once; each contribution stores the curve
//! charged on them. The length prefix tells the two kinds apart (`k ≥ 1`, so the lengths
//! differ). Records of both kinds have strictly increasing `seq` (the walk's step index), which
//! refuses duplicates and replays. [`Ledger::records`] and [`Ledger::total`] count contributions
//! only; [`Ledger::noise_only`] counts the others, and [`Ledger::last_seq`] is the last of either.
//!
//! Format 2 (`"DPWLEDG2"`) is format 3 without `μ²` (contributions are `len = 8 + 8k | seq |
//! values`); it is still read and appended to in its own format, and its total is converted by
//! RDP only (a figure above the exact one, never below).
//!
//! Format 1 (`"DPWLEDG1"`, no owner, contributions only) is refused with
//! [`LedgerError::OtherVersion`]: it cannot say which steps were noise-only visits, and a run
//! started by the dpwalk that wrote it is finished with that dpwalk (or started again).
//!
//! # Opening
//! [`Ledger::open`] fails with [`LedgerError::TornTail`] when the file ends inside a record (a
//! crash during an append) and with [`LedgerError::Checksum`] when a record's checksum fails.
//! [`Ledger::recover`] truncates a torn or failed *last* record, says how many bytes it discarded,
//! and makes the truncation durable; damage before the last record is never "recovered".

use crate::error::PrivacyError;
use crate::rdp::{Conversion, DpBound, Orders, RdpCurve, check_delta};
use std::fs::{File, OpenOptions};
use std::io::{Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};
use thiserror::Error;

/// The bytes every format's magic starts with; the last byte is the format version.
const MAGIC_STEM: &[u8; 7] = b"DPWLEDG";
/// The `μ²` field of a contribution without a Gaussian bound (format 3).
const NO_GAUSSIAN_BOUND: f64 = -1.0;

/// The formats this version reads; it creates the newest.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Format {
    /// Contributions without their Gaussian bound.
    V2,
    /// Contributions with their Gaussian bound `μ²`.
    V3,
}

impl Format {
    fn magic(self) -> &'static [u8; 8] {
        match self {
            Format::V2 => b"DPWLEDG2",
            Format::V3 => b"DPWLEDG3",
        }
    }

    fn of_magic(magic: &[u8]) -> Option<Self> {
        [Format::V2, Format::V3]
            .into_iter()
            .find(|f| f.magic().as_slice() == magic)
    }

    /// `curve` as a record of this format holds it, so that the running total is what reopening
    /// the file gives: no subsampled runs in either format, no Gaussian bound in format 2.
    fn as_recorded(self, curve: &RdpCurve) -> Result<RdpCurve, PrivacyError> {
        match self {
            Format::V3 => Ok(curve.clone().without_subsampled_runs()),
            Format::V2 => RdpCurve::new(curve.orders().clone(), curve.values().to_vec()),
        }
    }

    /// Bytes of a contribution's payload (seq, `μ²` in format 3, one value per order) for `k`
    /// orders, and of the whole record (length prefix, payload, checksum): the one place the
    /// record layout's sizes are computed.
    fn record_sizes(self, k: usize) -> (usize, usize) {
        let payload = match self {
            Format::V2 => 8 + 8 * k,
            Format::V3 => 16 + 8 * k,
        };
        (payload, 4 + payload + 4)
    }
}
/// Bytes of a noise-only record's payload (the seq alone).
const NOISE_ONLY_PAYLOAD: usize = 8;

/// Ledger errors.
#[derive(Debug, Error)]
pub enum LedgerError {
    /// The file system failed.
    #[error("ledger I/O")]
    Io(#[from] std::io::Error),
    /// The header is missing, malformed or fails its checksum.
    #[error("ledger header: {0}")]
    Header(String),
    /// The file is a ledger of another format version (another version of dpwalk wrote it).
    #[error(
        "this ledger is of format {found:?}, written by {} version of dpwalk; this one reads formats {expected} (which record every noise-only visit besides the contributions). The run was started by that version of dpwalk: finish the run with the version that started it, or start the run again with fresh state directories",
        if found < expected { "an older" } else { "another" }
    )]
    OtherVersion {
        /// The file's magic.
        found: String,
        /// The magics this version reads.
        expected: String,
    },
    /// The file ends inside its last record (a torn append): `discarded` bytes after `valid_len`.
    #[error("torn last record: {discarded} bytes after offset {valid_len} (use recover)")]
    TornTail {
        /// Length of the valid prefix.
        valid_len: u64,
        /// Bytes of the incomplete record.
        discarded: u64,
    },
    /// A complete record fails its checksum.
    #[error("checksum mismatch in the record at offset {offset} (last record: {last})")]
    Checksum {
        /// Offset of the record.
        offset: u64,
        /// Whether it is the last record of the file (then `recover` may drop it).
        last: bool,
    },
    /// A record passes its checksum but is not valid (bad length, order of seq, values).
    #[error("corrupt record at offset {offset}: {reason}")]
    Corrupt {
        /// Offset of the record.
        offset: u64,
        /// What is wrong.
        reason: String,
    },
    /// `seq` is not after the last recorded one (duplicate or replay).
    #[error("visit {seq} refused: last recorded is {last}")]
    Duplicate {
        /// The refused seq.
        seq: u64,
        /// The last recorded seq.
        last: u64,
    },
    /// A previous append failed and could not be rolled back, or a flush failed; the ledger must
    /// be reopened.
    #[error(
        "a failed append could not be rolled back or a flush failed; reopen (recover) the ledger"
    )]
    Poisoned,
    /// Bad curve or budget.
    #[error(transparent)]
    Privacy(#[from] PrivacyError),
}

impl LedgerError {
    /// What a person reading a ledger that does not open should do about it.
    pub fn advice(&self) -> &'static str {
        match self {
            LedgerError::TornTail { .. } | LedgerError::Checksum { last: true, .. } => {
                "its last record is incomplete or damaged (a crash during an append): start its \
                 node again (`dpwalk node --config node.toml`), which repairs the ledger from its \
                 durable state, then read it"
            }
            LedgerError::Checksum { last: false, .. } | LedgerError::Corrupt { .. } => {
                "it is damaged before its last record, which no node repairs: restore it from a \
                 backup"
            }
            LedgerError::Header(_) => "is it a dpwalk ledger (state/ledger.bin)?",
            LedgerError::OtherVersion { .. } => "read it with the dpwalk version that wrote it",
            _ => "check the path and its permissions",
        }
    }
}

/// A budget `(ε, δ)`, validated.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Budget {
    epsilon: f64,
    delta: f64,
}

impl Budget {
    /// Checks `ε > 0` finite and `δ ∈ (0, 1)`.
    pub fn new(epsilon: f64, delta: f64) -> Result<Self, PrivacyError> {
        if !(epsilon > 0.0 && epsilon.is_finite()) {
            return Err(PrivacyError::Epsilon(epsilon));
        }
        Ok(Self {
            epsilon,
            delta: check_delta(delta)?,
        })
    }
    /// ε.
    pub fn epsilon(&self) -> f64 {
        self.epsilon
    }
    /// δ.
    pub fn delta(&self) -> f64 {
        self.delta
    }
}

/// The outcome of a budget check before a step.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct BudgetCheck {
    /// True when taking the step would exceed the budget's ε.
    pub exceeds: bool,
    /// The guarantee so far.
    pub now: DpBound,
    /// The guarantee after the step.
    pub after: DpBound,
}

/// What [`Ledger::recover`] did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Recovery {
    /// Bytes removed from the end of the file (0 if it was intact).
    pub discarded_bytes: u64,
    /// Complete, valid records kept.
    pub records: u64,
}

/// Whose ledger it is (format 2's header): the run, by the 32 bytes its driver identifies it
/// with (the daemon: the run file's canonical hash), and the member's index in the run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct LedgerOwner {
    /// The run's identifier.
    pub run: [u8; 32],
    /// The member's index.
    pub member: u64,
}

/// One recorded visit: its seq, and whether it was a contribution (else a noise-only visit).
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct LedgerVisit {
    /// The walk's step index.
    pub seq: u64,
    /// A contribution (charged), or a noise-only visit (not charged).
    pub contribution: bool,
}

/// What a ledger holds, read without opening it for writing ([`Ledger::read`]): a reader (an
/// auditor, `dpwalk ledger show`) needs no write permission on a member's file.
#[derive(Debug, Clone, PartialEq)]
pub struct LedgerContents {
    /// Whose ledger it is.
    pub owner: LedgerOwner,
    /// The composition of every contribution's charge, on the ledger's orders.
    pub total: RdpCurve,
    /// Contributions recorded.
    pub records: u64,
    /// Noise-only visits recorded.
    pub noise_only: u64,
    /// Every visit, in order of seq.
    pub visits: Vec<LedgerVisit>,
}

impl LedgerContents {
    /// The seq of every contribution, in order.
    pub fn seqs(&self) -> Vec<u64> {
        self.visits
            .iter()
            .filter(|v| v.contribution)
            .map(|v| v.seq)
            .collect()
    }
}

/// An open ledger: the file, positioned for appending, and the running total.
#[derive(Debug)]
pub struct Ledger {
    file: File,
    path: PathBuf,
    format: Format,
    owner: LedgerOwner,
    total: RdpCurve,
    last_seq: Option<u64>,
    records: u64,
    noise_only: u64,
    len: u64,
    poisoned: bool,
}

/// Bytes of the header before `k`: magic, run, member.
const HEADER_FIXED: usize = 8 + 32 + 8;

fn header_bytes(format: Format, orders: &Orders, owner: LedgerOwner) -> Vec<u8> {
    let mut h = Vec::with_capacity(HEADER_FIXED + 8 + 8 * orders.len());
    h.extend_from_slice(format.magic());
    h.extend_from_slice(&owner.run);
    h.extend_from_slice(&owner.member.to_le_bytes());
    h.extend_from_slice(&(orders.len() as u32).to_le_bytes());
    for a in orders.as_slice() {
        h.extend_from_slice(&a.to_le_bytes());
    }
    let crc = crc32fast::hash(&h);
    h.extend_from_slice(&crc.to_le_bytes());
    h
}

fn read_u32(b: &[u8], at: usize) -> u32 {
    let mut x = [0u8; 4];
    x.copy_from_slice(&b[at..at + 4]);
    u32::from_le_bytes(x)
}

fn read_u64(b: &[u8], at: usize) -> u64 {
    let mut x = [0u8; 8];
    x.copy_from_slice(&b[at..at + 8]);
    u64::from_le_bytes(x)
}

/// Parses the header; returns the format, the orders, the owner and the header length.
fn parse_header(bytes: &[u8]) -> Result<(Format, Orders, LedgerOwner, usize), LedgerError> {
    let bad = |s: &str| LedgerError::Header(s.to_string());
    let format = bytes.get(..8).and_then(Format::of_magic);
    if bytes.len() >= 8 && &bytes[..7] == MAGIC_STEM && format.is_none() {
        return Err(LedgerError::OtherVersion {
            found: String::from_utf8_lossy(&bytes[..8]).into_owned(),
            expected: "DPWLEDG2 or DPWLEDG3".to_string(),
        });
    }
    let fixed = HEADER_FIXED + 4;
    let Some(format) = format.filter(|_| bytes.len() >= fixed) else {
        return Err(bad("not a dpwalk ledger (bad magic or too short)"));
    };
    let k = read_u32(bytes, HEADER_FIXED) as usize;
    let end = k
        .checked_mul(8)
        .and_then(|x| x.checked_add(fixed))
        .ok_or_else(|| bad("bad size"))?;
    if bytes.len() < end + 4 {
        return Err(bad("truncated header"));
    }
    if crc32fast::hash(&bytes[..end]) != read_u32(bytes, end) {
        return Err(bad("header checksum mismatch"));
    }
    let mut run = [0u8; 32];
    run.copy_from_slice(&bytes[8..40]);
    let owner = LedgerOwner {
        run,
        member: read_u64(bytes, 40),
    };
    let orders: Vec<f64> = (0..k)
        .map(|i| f64::from_bits(read_u64(bytes, fixed + 8 * i)))
        .collect();
    let orders = Orders::new(&orders).map_err(|e| LedgerError::Header(e.to_string()))?;
    Ok((format, orders, owner, end + 4))
}

/// Where the scan of the records stopped.
enum Tail {
    Clean,
    Torn { valid_len: u64 },
    BadLast { valid_len: u64 },
}

impl Tail {
    /// `Ok` for a clean file; the error [`Ledger::open`] reports otherwise.
    fn require_clean(self, file_len: u64) -> Result<(), LedgerError> {
        match self {
            Tail::Clean => Ok(()),
            Tail::Torn { valid_len } => Err(LedgerError::TornTail {
                valid_len,
                discarded: file_len - valid_len,
            }),
            Tail::BadLast { valid_len } => Err(LedgerError::Checksum {
                offset: valid_len,
                last: true,
            }),
        }
    }
}

impl Ledger {
    /// Creates a new ledger of `owner` (fails if the file exists) over `orders`, durably.
    pub fn create(path: &Path, orders: &Orders, owner: LedgerOwner) -> Result<Self, LedgerError> {
        let mut file = OpenOptions::new()
            .read(true)
            .write(true)
            .create_new(true)
            .open(path)?;
        let header = header_bytes(Format::V3, orders, owner);
        file.write_all(&header)?;
        file.sync_all()?;
        dpwalk_core::durable::sync_parent(path)?;
        Ok(Self {
            file,
            path: path.to_path_buf(),
            format: Format::V3,
            owner,
            total: RdpCurve::zero(orders),
            last_seq: None,
            records: 0,
            noise_only: 0,
            len: header.len() as u64,
            poisoned: false,
        })
    }

    /// Opens an existing ledger; any damage is an error (see [`Ledger::recover`]).
    pub fn open(path: &Path) -> Result<Self, LedgerError> {
        let (ledger, tail, file_len) = Self::scan(path, true, &mut |_| {})?;
        tail.require_clean(file_len)?;
        Ok(ledger)
    }

    /// The seq of every contribution, in order, for an audit: fails like [`Ledger::open`] on a
    /// torn or damaged file, and changes nothing.
    pub fn seqs(path: &Path) -> Result<Vec<u64>, LedgerError> {
        Ok(Self::read(path)?.seqs())
    }

    /// Every recorded visit (contributions and noise-only visits), in order of seq: what a
    /// certificate of the realised walk reads. Fails like [`Ledger::open`] on a torn or damaged
    /// file, and changes nothing.
    pub fn visits(path: &Path) -> Result<Vec<LedgerVisit>, LedgerError> {
        Ok(Self::read(path)?.visits)
    }

    /// What the ledger holds, read without opening it for writing: fails like [`Ledger::open`]
    /// on a torn or damaged file, and changes nothing.
    pub fn read(path: &Path) -> Result<LedgerContents, LedgerError> {
        let mut visits = Vec::new();
        let (ledger, tail, file_len) = Self::scan(path, false, &mut |v| visits.push(v))?;
        tail.require_clean(file_len)?;
        Ok(LedgerContents {
            owner: ledger.owner,
            total: ledger.total,
            records: ledger.records,
            noise_only: ledger.noise_only,
            visits,
        })
    }

    /// Opens a ledger, truncating a torn or checksum-failing last record, and reports how many
    /// bytes were discarded. Damage before the last record is still an error.
    pub fn recover(path: &Path) -> Result<(Self, Recovery), LedgerError> {
        let (ledger, tail, file_len) = Self::scan(path, true, &mut |_| {})?;
        let discarded_bytes = match tail {
            Tail::Clean => 0,
            Tail::Torn { valid_len } | Tail::BadLast { valid_len } => {
                ledger.file.set_len(valid_len)?;
                ledger.file.sync_all()?;
                dpwalk_core::durable::sync_parent(path)?;
                file_len - valid_len
            }
        };
        let records = ledger.records;
        Ok((
            ledger,
            Recovery {
                discarded_bytes,
                records,
            },
        ))
    }

    /// Reads and validates the file; returns the ledger over its valid prefix and the tail state.
    /// Opened for writing only when `writable` (a ledger opened read-only never leaves this
    /// module: [`Ledger::read`] keeps what it holds, not the file).
    fn scan(
        path: &Path,
        writable: bool,
        on_visit: &mut dyn FnMut(LedgerVisit),
    ) -> Result<(Self, Tail, u64), LedgerError> {
        let mut file = OpenOptions::new().read(true).write(writable).open(path)?;
        let mut bytes = Vec::new();
        file.read_to_end(&mut bytes)?;
        let (format, orders, owner, mut at) = parse_header(&bytes)?;
        let k = orders.len();
        let (payload, _) = format.record_sizes(k);
        let mut ledger = Self {
            file,
            path: path.to_path_buf(),
            format,
            owner,
            total: RdpCurve::zero(&orders),
            last_seq: None,
            records: 0,
            noise_only: 0,
            len: at as u64,
            poisoned: false,
        };
        let tail = loop {
            let rest = bytes.len() - at;
            if rest == 0 {
                break Tail::Clean;
            }
            let offset = at as u64;
            if rest < 4 {
                break Tail::Torn { valid_len: offset };
            }
            // The length prefix tells the kind; a complete prefix of neither length is
            // corruption, not a torn append.
            let len = read_u32(&bytes, at) as usize;
            let contribution = if len == payload {
                true
            } else if len == NOISE_ONLY_PAYLOAD {
                false
            } else {
                return Err(LedgerError::Corrupt {
                    offset,
                    reason: "bad length".into(),
                });
            };
            let record = 4 + len + 4;
            if rest < record {
                break Tail::Torn { valid_len: offset };
            }
            let body = &bytes[at..at + 4 + len];
            if crc32fast::hash(body) != read_u32(&bytes, at + 4 + len) {
                if rest == record {
                    break Tail::BadLast { valid_len: offset };
                }
                return Err(LedgerError::Checksum {
                    offset,
                    last: false,
                });
            }
            let seq = read_u64(body, 4);
            if ledger.last_seq.is_some_and(|last| seq <= last) {
                return Err(LedgerError::Corrupt {
                    offset,
                    reason: format!("seq {seq} not increasing"),
                });
            }
            if contribution {
                let corrupt = |reason: String| LedgerError::Corrupt { offset, reason };
                let (mu2, first) = match format {
                    Format::V2 => (None, 12),
                    Format::V3 => (Some(f64::from_bits(read_u64(body, 12))), 20),
                };
                let values = (0..k)
                    .map(|i| f64::from_bits(read_u64(body, first + 8 * i)))
                    .collect();
                let curve =
                    RdpCurve::new(orders.clone(), values).map_err(|e| corrupt(e.to_string()))?;
                let curve = match mu2 {
                    None => curve,
                    Some(m) if m == NO_GAUSSIAN_BOUND => curve,
                    Some(m) => curve.with_stored_gaussian_bound(m).ok_or_else(|| {
                        corrupt(format!("its curve is not bounded by its mu^2 = {m}"))
                    })?,
                };
                ledger.total.compose_in_place(&curve)?;
                ledger.records += 1;
            } else {
                ledger.noise_only += 1;
            }
            on_visit(LedgerVisit { seq, contribution });
            ledger.last_seq = Some(seq);
            at += record;
            ledger.len = at as u64;
        };
        let file_len = bytes.len() as u64;
        Ok((ledger, tail, file_len))
    }

    /// Appends contribution `seq` charged `curve`, and fsyncs before returning. `seq` must be
    /// after the last recorded visit; `curve` must be on the ledger's orders.
    pub fn append(&mut self, seq: u64, curve: &RdpCurve) -> Result<(), LedgerError> {
        self.append_unflushed(seq, curve)?;
        self.flush()
    }

    /// Appends like [`Ledger::append`] but leaves the record in the operating system's cache: it
    /// survives the process crashing, not the machine. For a driver that keeps the record durable
    /// elsewhere until its next [`Ledger::flush`] (a node keeps the seqs in its own state, which it
    /// flushes anyway on every step, and re-appends them after a machine crash): one flush per
    /// step instead of two on the token's path.
    pub fn append_unflushed(&mut self, seq: u64, curve: &RdpCurve) -> Result<(), LedgerError> {
        if curve.orders() != self.total.orders() {
            return Err(PrivacyError::OrdersMismatch.into());
        }
        self.append_record(seq, Some(curve))
    }

    /// Appends noise-only visit `seq` (a step taken with the budget spent: no charge), and
    /// fsyncs before returning. `seq` must be after the last recorded visit.
    pub fn append_noise_only(&mut self, seq: u64) -> Result<(), LedgerError> {
        self.append_noise_only_unflushed(seq)?;
        self.flush()
    }

    /// [`Ledger::append_noise_only`] without the flush, as [`Ledger::append_unflushed`].
    pub fn append_noise_only_unflushed(&mut self, seq: u64) -> Result<(), LedgerError> {
        self.append_record(seq, None)
    }

    /// Writes one record (a contribution with its curve, or a noise-only visit) after the last.
    fn append_record(&mut self, seq: u64, curve: Option<&RdpCurve>) -> Result<(), LedgerError> {
        if self.poisoned {
            return Err(LedgerError::Poisoned);
        }
        if let Some(last) = self.last_seq.filter(|&last| seq <= last) {
            return Err(LedgerError::Duplicate { seq, last });
        }
        let payload = match curve {
            Some(c) => self.format.record_sizes(c.values().len()).0,
            None => NOISE_ONLY_PAYLOAD,
        };
        let mut rec = Vec::with_capacity(payload + 8);
        rec.extend_from_slice(&(payload as u32).to_le_bytes());
        rec.extend_from_slice(&seq.to_le_bytes());
        if let (Some(c), Format::V3) = (curve, self.format) {
            let mu2 = c.gaussian_mu2().unwrap_or(NO_GAUSSIAN_BOUND);
            rec.extend_from_slice(&mu2.to_le_bytes());
        }
        for v in curve.map_or(&[][..], |c| c.values()) {
            rec.extend_from_slice(&v.to_le_bytes());
        }
        let crc = crc32fast::hash(&rec);
        rec.extend_from_slice(&crc.to_le_bytes());
        let written = self
            .file
            .seek(SeekFrom::Start(self.len))
            .and_then(|_| self.file.write_all(&rec));
        if let Err(e) = written {
            // Roll back so that a later append does not follow a partial record.
            if self
                .file
                .set_len(self.len)
                .and_then(|()| self.file.sync_data())
                .is_err()
            {
                self.poisoned = true;
            }
            return Err(e.into());
        }
        self.len += rec.len() as u64;
        match curve {
            Some(c) => {
                self.total.compose_in_place(&self.format.as_recorded(c)?)?;
                self.records += 1;
            }
            None => self.noise_only += 1,
        }
        self.last_seq = Some(seq);
        Ok(())
    }

    /// Makes every record appended so far durable (`fdatasync`). A failed flush poisons the
    /// ledger: what reached the disk is unknown until it is reopened.
    pub fn flush(&mut self) -> Result<(), LedgerError> {
        if self.poisoned {
            return Err(LedgerError::Poisoned);
        }
        self.file.sync_data().map_err(|e| {
            self.poisoned = true;
            e.into()
        })
    }

    /// The composed curve of every recorded contribution.
    pub fn total(&self) -> &RdpCurve {
        &self.total
    }

    /// The order grid of the ledger.
    pub fn orders(&self) -> &Orders {
        self.total.orders()
    }

    /// Number of recorded contributions.
    pub fn records(&self) -> u64 {
        self.records
    }

    /// Number of recorded noise-only visits.
    pub fn noise_only(&self) -> u64 {
        self.noise_only
    }

    /// The last recorded seq, of either kind.
    pub fn last_seq(&self) -> Option<u64> {
        self.last_seq
    }

    /// Whose ledger it is.
    pub fn owner(&self) -> LedgerOwner {
        self.owner
    }

    /// The file's path.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The guarantee now and after a step charged `next`, and whether that step exceeds `budget`.
    pub fn check_next(
        &self,
        budget: Budget,
        next: &RdpCurve,
        conversion: Conversion,
    ) -> Result<BudgetCheck, PrivacyError> {
        let now = self.total.to_dp(budget.delta, conversion)?;
        let after = self
            .total
            .compose(&self.format.as_recorded(next)?)?
            .to_dp(budget.delta, conversion)?;
        Ok(BudgetCheck {
            exceeds: after.epsilon() > budget.epsilon,
            now,
            after,
        })
    }

    /// Whether a step charged `next` would exceed `budget` (tight conversion).
    pub fn would_exceed(&self, budget: Budget, next: &RdpCurve) -> Result<bool, PrivacyError> {
        Ok(self.check_next(budget, next, Conversion::Tight)?.exceeds)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::fs;

    struct TempDir(PathBuf);
    impl TempDir {
        fn new(name: &str) -> Self {
            let p =
                std::env::temp_dir().join(format!("dpwalk-ledger-{}-{}", name, std::process::id()));
            let _ = fs::remove_dir_all(&p);
            fs::create_dir_all(&p).unwrap();
            Self(p)
        }
    }
    impl Drop for TempDir {
        fn drop(&mut self) {
            let _ = fs::remove_dir_all(&self.0);
        }
    }

    fn orders() -> Orders {
        Orders::new(&[1.5, 2.0, 8.0, 64.0]).unwrap()
    }

    const OWNER: LedgerOwner = LedgerOwner {
        run: [7; 32],
        member: 3,
    };

    fn curve(x: f64) -> RdpCurve {
        RdpCurve::new(orders(), vec![x, 2.0 * x, 8.0 * x, f64::INFINITY]).unwrap()
    }

    fn filled(dir: &TempDir, n: u64) -> PathBuf {
        let path = dir.0.join("l.bin");
        let mut l = Ledger::create(&path, &orders(), OWNER).unwrap();
        for s in 0..n {
            l.append(10 * s, &curve(0.1 * (s + 1) as f64)).unwrap();
        }
        path
    }

    #[test]
    fn round_trip_and_reopen_continues() {
        let dir = TempDir::new("rt");
        let path = filled(&dir, 3);
        let mut l = Ledger::open(&path).unwrap();
        assert_eq!((l.records(), l.last_seq()), (3, Some(20)));
        let want = curve(0.1)
            .compose(&curve(0.2))
            .unwrap()
            .compose(&curve(0.30000000000000004))
            .unwrap();
        assert_eq!(l.total(), &want);
        l.append(21, &curve(1.0)).unwrap();
        drop(l);
        let l = Ledger::open(&path).unwrap();
        assert_eq!((l.records(), l.last_seq()), (4, Some(21)));
        assert!(
            Ledger::create(&path, &orders(), OWNER).is_err(),
            "create must not clobber"
        );
    }

    #[test]
    fn unflushed_records_are_read_back_and_flushed_on_demand() {
        let dir = TempDir::new("unflushed");
        let path = filled(&dir, 2);
        let mut l = Ledger::open(&path).unwrap();
        l.append_unflushed(30, &curve(0.5)).unwrap();
        l.append_unflushed(40, &curve(0.25)).unwrap();
        assert_eq!((l.records(), l.last_seq()), (4, Some(40)));
        // Another reader (a restarted process) sees them before any flush...
        assert_eq!(Ledger::seqs(&path).unwrap(), vec![0, 10, 30, 40]);
        // ...and the same bytes as appends that flush each record.
        l.flush().unwrap();
        let flushed = TempDir::new("flushed");
        let other = filled(&flushed, 2);
        let mut m = Ledger::open(&other).unwrap();
        m.append(30, &curve(0.5)).unwrap();
        m.append(40, &curve(0.25)).unwrap();
        assert_eq!(fs::read(&path).unwrap(), fs::read(&other).unwrap());
        assert!(matches!(
            l.append_unflushed(40, &curve(1.0)),
            Err(LedgerError::Duplicate { seq: 40, last: 40 })
        ));
    }

    #[test]
    fn duplicates_and_wrong_orders_are_refused() {
        let dir = TempDir::new("dup");
        let path = filled(&dir, 2);
        let mut l = Ledger::open(&path).unwrap();
        assert!(matches!(
            l.append(10, &curve(1.0)),
            Err(LedgerError::Duplicate { seq: 10, last: 10 })
        ));
        assert!(matches!(
            l.append(3, &curve(1.0)),
            Err(LedgerError::Duplicate { .. })
        ));
        let other = RdpCurve::zero(&Orders::new(&[2.0]).unwrap());
        assert!(matches!(l.append(11, &other), Err(LedgerError::Privacy(_))));
        assert_eq!(l.records(), 2);
        assert_eq!(Ledger::open(&path).unwrap().records(), 2);
    }

    #[test]
    fn torn_tail_at_every_offset_is_detected_and_recovered() {
        let dir = TempDir::new("torn");
        let path = filled(&dir, 3);
        let full = fs::read(&path).unwrap();
        let (_, record) = Format::V3.record_sizes(4);
        let prev_end = full.len() - record;
        for cut in prev_end + 1..full.len() {
            fs::write(&path, &full[..cut]).unwrap();
            match Ledger::open(&path) {
                Err(LedgerError::TornTail {
                    valid_len,
                    discarded,
                }) => {
                    assert_eq!(valid_len as usize, prev_end);
                    assert_eq!(discarded as usize, cut - prev_end);
                }
                other => panic!("cut at {cut}: {other:?}"),
            }
            let (mut l, rec) = Ledger::recover(&path).unwrap();
            assert_eq!(
                rec,
                Recovery {
                    discarded_bytes: (cut - prev_end) as u64,
                    records: 2
                }
            );
            assert_eq!(l.records(), 2);
            l.append(20, &curve(0.1 * 3.0)).unwrap();
            assert_eq!(
                fs::read(&path).unwrap(),
                full,
                "re-append restores the same bytes"
            );
        }
    }

    #[test]
    fn checksum_failures_are_detected() {
        let dir = TempDir::new("crc");
        let path = filled(&dir, 3);
        let full = fs::read(&path).unwrap();
        let (_, record) = Format::V3.record_sizes(4);
        let header = full.len() - 3 * record;
        // Middle record: an error that recover refuses.
        let mut bad = full.clone();
        bad[header + record + 10] ^= 0x40;
        fs::write(&path, &bad).unwrap();
        assert!(matches!(
            Ledger::open(&path),
            Err(LedgerError::Checksum { last: false, .. })
        ));
        assert!(matches!(
            Ledger::recover(&path),
            Err(LedgerError::Checksum { last: false, .. })
        ));
        // Last record: reported, and recover drops exactly that record.
        let mut bad = full.clone();
        bad[full.len() - 6] ^= 0x01;
        fs::write(&path, &bad).unwrap();
        assert!(matches!(
            Ledger::open(&path),
            Err(LedgerError::Checksum { last: true, .. })
        ));
        let (l, rec) = Ledger::recover(&path).unwrap();
        assert_eq!(
            rec,
            Recovery {
                discarded_bytes: record as u64,
                records: 2
            }
        );
        assert_eq!(l.records(), 2);
        // Header damage is never recovered.
        let mut bad = full;
        bad[HEADER_FIXED + 1] ^= 0x01;
        fs::write(&path, &bad).unwrap();
        assert!(matches!(
            Ledger::recover(&path),
            Err(LedgerError::Header(_))
        ));
    }

    /// Contributions at 0, 10, 20 with noise-only visits at 5, 6 and 25 (the last record).
    fn mixed(dir: &TempDir) -> PathBuf {
        let path = dir.0.join("m.bin");
        let mut l = Ledger::create(&path, &orders(), OWNER).unwrap();
        l.append(0, &curve(0.1)).unwrap();
        l.append_noise_only(5).unwrap();
        l.append_noise_only_unflushed(6).unwrap();
        l.flush().unwrap();
        l.append(10, &curve(0.2)).unwrap();
        l.append_unflushed(20, &curve(0.3)).unwrap();
        l.append_noise_only(25).unwrap();
        path
    }

    #[test]
    fn noise_only_visits_are_recorded_in_seq_order_and_not_charged() {
        let dir = TempDir::new("mixed");
        let path = mixed(&dir);
        let mut l = Ledger::open(&path).unwrap();
        assert_eq!(l.owner(), OWNER);
        assert_eq!(
            (l.records(), l.noise_only(), l.last_seq()),
            (3, 3, Some(25))
        );
        let want = curve(0.1).compose(&curve(0.2)).unwrap();
        assert_eq!(l.total(), &want.compose(&curve(0.3)).unwrap());
        assert_eq!(Ledger::seqs(&path).unwrap(), vec![0, 10, 20]);
        let visits: Vec<(u64, bool)> = Ledger::visits(&path)
            .unwrap()
            .iter()
            .map(|v| (v.seq, v.contribution))
            .collect();
        assert_eq!(
            visits,
            [
                (0, true),
                (5, false),
                (6, false),
                (10, true),
                (20, true),
                (25, false)
            ]
        );
        // Strictly increasing across both kinds.
        assert!(matches!(
            l.append(25, &curve(1.0)),
            Err(LedgerError::Duplicate { seq: 25, last: 25 })
        ));
        assert!(matches!(
            l.append_noise_only(20),
            Err(LedgerError::Duplicate { seq: 20, last: 25 })
        ));
        l.append(26, &curve(1.0)).unwrap();
        assert_eq!(Ledger::open(&path).unwrap().records(), 4);
    }

    #[test]
    fn a_torn_noise_only_record_is_detected_and_recovered() {
        let dir = TempDir::new("torn-noise");
        let path = mixed(&dir);
        let full = fs::read(&path).unwrap();
        let record = 4 + NOISE_ONLY_PAYLOAD + 4;
        let prev_end = full.len() - record;
        for cut in prev_end + 1..full.len() {
            fs::write(&path, &full[..cut]).unwrap();
            assert!(
                matches!(
                    Ledger::open(&path),
                    Err(LedgerError::TornTail { valid_len, discarded })
                        if valid_len as usize == prev_end && discarded as usize == cut - prev_end
                ),
                "cut at {cut}"
            );
            let (mut l, rec) = Ledger::recover(&path).unwrap();
            assert_eq!(rec.discarded_bytes as usize, cut - prev_end);
            assert_eq!((l.records(), l.noise_only()), (3, 2));
            l.append_noise_only(25).unwrap();
            assert_eq!(fs::read(&path).unwrap(), full);
        }
        // A damaged last noise-only record is dropped by recover; one before the last is not.
        let mut bad = full.clone();
        bad[full.len() - 6] ^= 0x01;
        fs::write(&path, &bad).unwrap();
        assert!(matches!(
            Ledger::open(&path),
            Err(LedgerError::Checksum { last: true, .. })
        ));
        let (l, rec) = Ledger::recover(&path).unwrap();
        assert_eq!((rec.discarded_bytes as usize, l.noise_only()), (record, 2));
        let (_, contribution) = Format::V3.record_sizes(4);
        let mut bad = full.clone();
        // The noise-only record at seq 5: after the header and the first contribution.
        let header = full.len() - 3 * contribution - 3 * record;
        bad[header + contribution + 6] ^= 0x01;
        fs::write(&path, &bad).unwrap();
        assert!(matches!(
            Ledger::recover(&path),
            Err(LedgerError::Checksum { last: false, .. })
        ));
    }

    /// `read` (no write access asked) holds what `open` holds. (That it needs no write
    /// permission cannot be shown here: the tests run as root, whom permissions do not stop.)
    #[test]
    fn read_holds_what_open_holds() {
        let dir = TempDir::new("read");
        let path = dir.0.join("l.bin");
        let g = Orders::default_grid();
        let step = crate::local::local_view(&g, crate::Noise::new(4.0, 1.0).unwrap(), 1);
        let mut l = Ledger::create(&path, &g, OWNER).unwrap();
        l.append(2, &step).unwrap();
        l.append_noise_only(5).unwrap();
        l.append(7, &step).unwrap();
        drop(l);
        let read = Ledger::read(&path).unwrap();
        let open = Ledger::open(&path).unwrap();
        assert_eq!(read.owner, OWNER);
        assert_eq!(&read.total, open.total());
        assert_eq!((read.records, read.noise_only), (2, 1));
        let seqs: Vec<u64> = read.visits.iter().map(|v| v.seq).collect();
        assert_eq!(seqs, vec![2, 5, 7]);
        assert_eq!(Ledger::seqs(&path).unwrap(), vec![2, 7]);
        let torn = fs::read(&path).unwrap();
        fs::write(&path, &torn[..torn.len() - 1]).unwrap();
        assert!(matches!(
            Ledger::read(&path),
            Err(LedgerError::TornTail { .. })
        ));
    }

    /// A file keeps no subsampled runs, so the running total and the budget check drop them too:
    /// the figure in memory is the one reopening gives.
    #[test]
    fn subsampled_runs_are_not_kept_in_memory_either() {
        let dir = TempDir::new("runs");
        let path = dir.0.join("r.bin");
        let g = Orders::default_grid();
        let runs = crate::mechanism::subsampled_gaussian(&g, 0.01, 1.0).unwrap();
        assert!(runs.subsampled_runs().is_some());
        let mut l = Ledger::create(&path, &g, OWNER).unwrap();
        let budget = Budget::new(1.0, 1e-5).unwrap();
        let check = l.check_next(budget, &runs, Conversion::Tight).unwrap();
        l.append(0, &runs).unwrap();
        let reopened = Ledger::open(&path).unwrap();
        assert_eq!(l.total().subsampled_runs(), None);
        assert_eq!(l.total(), reopened.total());
        let figure = reopened.total().to_dp(1e-5, Conversion::Tight).unwrap();
        assert_eq!(check.after, figure);
        assert!(matches!(figure, DpBound::Finite(f) if f.pld_interval.is_none()));
    }

    /// Contributions charged the local view keep their Gaussian bound through the file: the
    /// reopened total is converted exactly, as the budget policy converted it.
    #[test]
    fn gaussian_contributions_are_converted_exactly_after_reopening() {
        let dir = TempDir::new("gdp");
        let path = dir.0.join("g.bin");
        let g = Orders::default_grid();
        let noise = crate::Noise::new(4.0, 1.0).unwrap();
        let step = crate::local::local_view(&g, noise, 1);
        let mut l = Ledger::create(&path, &g, OWNER).unwrap();
        for s in 0..9 {
            l.append(s, &step).unwrap();
        }
        l.append_noise_only(9).unwrap();
        let want = crate::local::local_view(&g, noise, 9)
            .to_dp(1e-6, Conversion::Tight)
            .unwrap();
        for total in [
            l.total().clone(),
            Ledger::open(&path).unwrap().total().clone(),
        ] {
            assert_eq!(total.gaussian_mu2(), Some(9.0));
            let got = total.to_dp(1e-6, Conversion::Tight).unwrap();
            assert_eq!(got.epsilon(), want.epsilon());
            assert!(matches!(got, DpBound::Finite(f) if f.gaussian_mu == Some(3.0)));
        }
        // One contribution without a bound makes the total an RDP figure.
        l.append(
            10,
            &RdpCurve::new(g.clone(), step.values().to_vec()).unwrap(),
        )
        .unwrap();
        let mixed = Ledger::open(&path).unwrap();
        assert_eq!(mixed.total().gaussian_mu2(), None);
        assert_eq!(l.total(), mixed.total());
    }

    /// A record whose stored μ² does not bound its curve (damage the checksum missed, or a
    /// writer's bug) is refused, never read as a smaller figure.
    #[test]
    fn a_gaussian_bound_below_the_curve_is_corrupt() {
        let dir = TempDir::new("gdp-bad");
        let path = dir.0.join("g.bin");
        let g = orders();
        let step = crate::mechanism::gaussian(&g, 2.0).unwrap();
        let mut l = Ledger::create(&path, &g, OWNER).unwrap();
        l.append(0, &step).unwrap();
        drop(l);
        let mut bytes = fs::read(&path).unwrap();
        let (payload, record) = Format::V3.record_sizes(4);
        let at = bytes.len() - record;
        bytes[at + 12..at + 20].copy_from_slice(&0.01f64.to_le_bytes());
        let crc = crc32fast::hash(&bytes[at..at + 4 + payload]);
        bytes[at + 4 + payload..].copy_from_slice(&crc.to_le_bytes());
        fs::write(&path, &bytes).unwrap();
        assert!(matches!(
            Ledger::open(&path),
            Err(LedgerError::Corrupt { ref reason, .. }) if reason.contains("not bounded")
        ));
    }

    /// A ledger of format 2 (a run started by the previous version) is read, and appended to in
    /// its own format, with its total converted by RDP.
    #[test]
    fn a_format_2_ledger_is_read_and_extended_in_its_format() {
        let dir = TempDir::new("v2");
        let path = dir.0.join("v2.bin");
        let g = orders();
        let mut h = header_bytes(Format::V2, &g, OWNER);
        let step = crate::mechanism::gaussian(&g, 2.0).unwrap();
        let (payload, record) = Format::V2.record_sizes(4);
        let mut rec = (payload as u32).to_le_bytes().to_vec();
        rec.extend_from_slice(&4u64.to_le_bytes());
        for v in step.values() {
            rec.extend_from_slice(&v.to_le_bytes());
        }
        let crc = crc32fast::hash(&rec);
        rec.extend_from_slice(&crc.to_le_bytes());
        h.extend_from_slice(&rec);
        fs::write(&path, &h).unwrap();
        let mut l = Ledger::open(&path).unwrap();
        assert_eq!((l.records(), l.owner(), l.last_seq()), (1, OWNER, Some(4)));
        assert_eq!(l.total().values(), step.values());
        assert_eq!(l.total().gaussian_mu2(), None);
        l.append(5, &step).unwrap();
        l.append_noise_only(6).unwrap();
        assert_eq!(
            fs::metadata(&path).unwrap().len() as usize,
            h.len() + record + 4 + NOISE_ONLY_PAYLOAD + 4
        );
        let reopened = Ledger::open(&path).unwrap();
        assert_eq!(reopened.total(), l.total());
        assert_eq!(reopened.total().gaussian_mu2(), None);
        assert_eq!(reopened.records(), 2);
    }

    #[test]
    fn a_format_1_ledger_is_refused_with_what_to_do() {
        let dir = TempDir::new("v1");
        let path = dir.0.join("v1.bin");
        // A format-1 header over one order (magic, k, the order, its checksum).
        let mut h = b"DPWLEDG1".to_vec();
        h.extend_from_slice(&1u32.to_le_bytes());
        h.extend_from_slice(&2.0f64.to_le_bytes());
        let crc = crc32fast::hash(&h);
        h.extend_from_slice(&crc.to_le_bytes());
        fs::write(&path, &h).unwrap();
        for e in [
            Ledger::open(&path).unwrap_err(),
            Ledger::recover(&path).unwrap_err(),
            Ledger::visits(&path).unwrap_err(),
        ] {
            assert!(
                matches!(e, LedgerError::OtherVersion { ref found, .. } if found == "DPWLEDG1"),
                "{e:?}"
            );
            let message = e.to_string();
            for what in [
                "DPWLEDG1",
                "DPWLEDG2",
                "an older version of dpwalk",
                "start the run again",
            ] {
                assert!(message.contains(what), "{message}");
            }
        }
        assert_eq!(fs::read(&path).unwrap(), h, "never modified");
    }

    #[test]
    fn budget_check() {
        let dir = TempDir::new("budget");
        let path = dir.0.join("b.bin");
        let g = Orders::default_grid();
        let mut l = Ledger::create(&path, &g, OWNER).unwrap();
        let step = crate::mechanism::gaussian(&g, 10.0).unwrap();
        let budget = Budget::new(1.0, 1e-5).unwrap();
        let mut taken = 0;
        while !l.would_exceed(budget, &step).unwrap() {
            l.append(taken, &step).unwrap();
            taken += 1;
        }
        let check = l.check_next(budget, &step, Conversion::Tight).unwrap();
        assert!(check.exceeds && check.now.epsilon() <= 1.0 && check.after.epsilon() > 1.0);
        // Each step is 0.1-GDP, k steps 0.1·√k-GDP; at ε = 1 the exact δ is 8.03e-6 for k = 7
        // and 2.35e-5 for k = 8 (mpmath, 40 digits): 7 steps fit (RDP conversion: only 6).
        assert_eq!(
            taken, 7,
            "0.1-GDP per step: 7 steps fit in ε = 1 at δ = 1e-5"
        );
        assert!(Budget::new(0.0, 1e-5).is_err() && Budget::new(1.0, 0.0).is_err());
    }
}
