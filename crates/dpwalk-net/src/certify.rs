//! The certificate given the walk (N2) of a finished daemon run, from its members' ledgers brought
//! together (`dpwalk ledger certify`).
//!
//! Every member's ledger (formats 2 and 3, `dpwalk_privacy::ledger`) records each of its visits by
//! seq: its contributions and its noise-only visits (the budget spent). Together the ledgers of all
//! members give the walk's holder at every step `0..K` and which steps were contributions, which
//! is the input of the ex-post certificate
//! ([`certify_users`], [`dpwalk_privacy::network::excursion::certify`])
//! (`specs/network-dp-2.md` §4). [`certify_ledgers`] reads them, checks that they are this run's
//! (each ledger's header names the run's hash and the member, so file names do not matter), that
//! every member brought one and only one, and that together they cover every seq `0..K` exactly
//! once, rebuilds the walk and certifies it: per user, `Ψ = max_j Ψ_ij` against its worst
//! observer `j` and the (ε, δ) of
//! [`dpwalk_privacy::network::given_walk::given_walk_bound`] at the run's δ.
//!
//! The numbers come from where the node takes them: σ is the run file's, or calibrated by
//! [`Run::calibrate`] as every member calibrates it; the clip is [`Run::accounted_clip`]; the
//! orders are the ledgers' own; the conversion is the tight one the node's budget policy uses.
//!
//! **The ledgers reveal the path.** Whoever has read them knows who held the token at every
//! step, so the path-hidden figure (N1, `network (path hidden)`) no longer applies against them;
//! the certificate given the walk holds even against an observer who knows the path, and is the
//! figure that holds then ([`PATH_REVEALED_NOTICE`]). For a given path it can be above or below
//! N1: N1 is an average over the paths the walk might take.
//!
//! Only DP-SGD walks are certified: no network figure is proved for the ADMM walk
//! ([`ADMM_NETWORK_WITHDRAWN`]).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use dpwalk_core::spec::{DEFAULT_DELTA, Noise as SpecNoise};
use dpwalk_privacy::ledger::{Ledger, LedgerError};
use dpwalk_privacy::network::excursion::Visit;
use dpwalk_privacy::network::given_walk::GIVEN_WALK_LABEL;
use dpwalk_privacy::rdp::{Conversion, Orders};
use dpwalk_privacy::report::certify_users;
pub use dpwalk_privacy::report::{MAX_CERTIFIED_STEPS, UserCertificate};
use dpwalk_privacy::walk::{ADMM_NETWORK_WITHDRAWN, ASSUMPTIONS};
use dpwalk_privacy::{Noise, PrivacyError};
use serde::Serialize;
use thiserror::Error;

use crate::run::{Run, RunHash, StepKind};

/// What every certificate from ledgers says with it (part of the output and the docs).
pub const PATH_REVEALED_NOTICE: &str = "These ledgers, brought together, reveal the walk's path (who held the token at every step). To whoever has read them the path-hidden network figure (N1, \"network (path hidden)\") no longer applies; the figure that holds is the certificate given the walk below (N2), which holds even against an observer who knows the path. For a given path N2 can be above or below N1.";

/// How many seqs an error lists before it says how many more there are.
const LISTED: usize = 10;

/// Why a run's ledgers give no certificate.
#[derive(Debug, Error)]
pub enum CertifyError {
    /// The run is an ADMM walk: no network figure is proved.
    #[error("{ADMM_NETWORK_WITHDRAWN}")]
    Admm,
    /// A ledger does not open.
    #[error("cannot read the ledger {path}")]
    Ledger {
        /// The file.
        path: PathBuf,
        /// Why.
        source: LedgerError,
    },
    /// A ledger belongs to another run.
    #[error(
        "the ledger {path} is of another run (run hash {found}; the run file's is {expected}): bring the ledgers of this run's members"
    )]
    OtherRun {
        /// The file.
        path: PathBuf,
        /// Its run hash.
        found: RunHash,
        /// The run file's.
        expected: RunHash,
    },
    /// A ledger names a member the run does not have.
    #[error("the ledger {path} is member {member}'s, but the run has {members} members")]
    NoSuchMember {
        /// The file.
        path: PathBuf,
        /// The member it names.
        member: u64,
        /// The run's members.
        members: usize,
    },
    /// Two ledgers of one member.
    #[error(
        "{first} and {second} are both member {member}'s ledger: give each member's ledger once"
    )]
    SameMember {
        /// The member.
        member: u64,
        /// The first file.
        first: PathBuf,
        /// The second.
        second: PathBuf,
    },
    /// The ledgers are not on the same orders.
    #[error("the ledger {path} is on other RDP orders than {first}: ledgers of one run share them")]
    Orders {
        /// The file.
        path: PathBuf,
        /// The first ledger.
        first: PathBuf,
    },
    /// Members without a ledger: their visits are unknown, so the path is.
    #[error(
        "no ledger was given for member{} {}: the walk's path needs every member's visits ({} of the seqs 0..{steps} are not covered: {}). Bring every member's ledger (node-*/state/ledger.bin)",
        plural(.members.len()), list(.members), .missing.len(), list(.missing)
    )]
    MissingMembers {
        /// The members without a ledger.
        members: Vec<usize>,
        /// The seqs no ledger covers.
        missing: Vec<u64>,
        /// The walk's length `K`.
        steps: u64,
    },
    /// Seqs of the walk no ledger covers.
    #[error(
        "the ledgers do not cover every step of the walk: {} of the seqs 0..{steps} are in no ledger ({}). A ledger was truncated or replaced, or a node was not reopened after a crash (reopening repairs its ledger from its state)",
        .missing.len(), list(.missing)
    )]
    Missing {
        /// The seqs.
        missing: Vec<u64>,
        /// The walk's length `K`.
        steps: u64,
    },
    /// Seqs in more than one ledger.
    #[error(
        "{} seqs are in more than one ledger ({}): these steps were made twice, on two branches of a walk forked by a re-route after a timeout, so the walk is not one holder sequence and is not certified",
        .duplicate.len(), list(.duplicate)
    )]
    Duplicate {
        /// The seqs.
        duplicate: Vec<u64>,
    },
    /// A ledger records a seq past the walk.
    #[error("the ledger {path} records seq {seq}, past the walk's {steps} steps")]
    BeyondWalk {
        /// The file.
        path: PathBuf,
        /// The seq.
        seq: u64,
        /// `K`.
        steps: u64,
    },
    /// The walk is longer than [`MAX_CERTIFIED_STEPS`].
    #[error(
        "not offered: cost (the walk has {steps} steps; certificates from ledgers are computed up to {MAX_CERTIFIED_STEPS})"
    )]
    TooLong {
        /// `K`.
        steps: u64,
    },
    /// The accountant refused (σ, clip or δ).
    #[error(transparent)]
    Privacy(#[from] PrivacyError),
}

fn plural(n: usize) -> &'static str {
    if n == 1 { "" } else { "s" }
}

/// The first [`LISTED`] items, comma-separated, and how many more.
fn list<T: std::fmt::Display>(items: &[T]) -> String {
    let shown: Vec<String> = items.iter().take(LISTED).map(ToString::to_string).collect();
    let more = items.len().saturating_sub(LISTED);
    if more > 0 {
        format!("{}, and {more} more", shown.join(", "))
    } else {
        shown.join(", ")
    }
}

/// The certificate of a run from its ledgers.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RunCertificate {
    /// [`GIVEN_WALK_LABEL`].
    pub label: &'static str,
    /// [`PATH_REVEALED_NOTICE`].
    pub notice: &'static str,
    /// The run's id.
    pub run_id: String,
    /// `"record-level"` or `"user-level"`.
    pub unit: &'static str,
    /// The walk's length `K`.
    pub steps: u64,
    /// σ (given or calibrated).
    pub sigma: f64,
    /// The accounted clip.
    pub accounted_clip: f64,
    /// δ of every figure.
    pub delta: f64,
    /// The conversion.
    pub conversion: &'static str,
    /// What the figure assumes.
    pub assumptions: Vec<&'static str>,
    /// Per user, by index.
    pub users: Vec<UserCertificate>,
}

/// One ledger read: its visits.
struct Read {
    path: PathBuf,
    member: usize,
    orders: Orders,
    visits: Vec<dpwalk_privacy::ledger::LedgerVisit>,
}

fn read(path: &Path, run: &Run) -> Result<Read, CertifyError> {
    let ledger_error = |source| CertifyError::Ledger {
        path: path.to_path_buf(),
        source,
    };
    let ledger = Ledger::open(path).map_err(ledger_error)?;
    let owner = ledger.owner();
    if owner.run != run.hash().0 {
        return Err(CertifyError::OtherRun {
            path: path.to_path_buf(),
            found: RunHash(owner.run),
            expected: run.hash(),
        });
    }
    let members = run.members().len();
    let member = usize::try_from(owner.member)
        .ok()
        .filter(|&m| m < members)
        .ok_or_else(|| CertifyError::NoSuchMember {
            path: path.to_path_buf(),
            member: owner.member,
            members,
        })?;
    let visits = Ledger::visits(path).map_err(ledger_error)?;
    Ok(Read {
        path: path.to_path_buf(),
        member,
        orders: ledger.orders().clone(),
        visits,
    })
}

/// The walk's visits `0..K` from the members' ledgers, each checked (module docs), and the
/// ledgers' orders.
pub fn walk_from_ledgers(
    run: &Run,
    ledgers: &[PathBuf],
) -> Result<(Vec<Visit>, Orders), CertifyError> {
    let steps = run.steps();
    if steps > MAX_CERTIFIED_STEPS {
        return Err(CertifyError::TooLong { steps });
    }
    let mut by_member: BTreeMap<usize, Read> = BTreeMap::new();
    for path in ledgers {
        let r = read(path, run)?;
        if let Some(first) = by_member.get(&r.member) {
            return Err(CertifyError::SameMember {
                member: r.member as u64,
                first: first.path.clone(),
                second: r.path,
            });
        }
        by_member.insert(r.member, r);
    }
    let Some(first) = by_member.values().next() else {
        return Err(CertifyError::MissingMembers {
            members: (0..run.members().len()).collect(),
            missing: (0..steps).collect(),
            steps,
        });
    };
    let orders = first.orders.clone();
    if let Some(other) = by_member.values().find(|r| r.orders != orders) {
        return Err(CertifyError::Orders {
            path: other.path.clone(),
            first: first.path.clone(),
        });
    }
    let len = usize::try_from(steps).unwrap_or(usize::MAX);
    let mut path: Vec<Option<Visit>> = vec![None; len];
    let mut duplicate = Vec::new();
    for r in by_member.values() {
        for v in &r.visits {
            let slot = usize::try_from(v.seq)
                .ok()
                .and_then(|s| path.get_mut(s))
                .ok_or_else(|| CertifyError::BeyondWalk {
                    path: r.path.clone(),
                    seq: v.seq,
                    steps,
                })?;
            if slot.is_some() {
                duplicate.push(v.seq);
            }
            *slot = Some(Visit {
                holder: r.member,
                contribution: v.contribution,
            });
        }
    }
    let missing: Vec<u64> = (0..steps)
        .filter(|&s| path.get(s as usize).is_none_or(Option::is_none))
        .collect();
    let absent: Vec<usize> = (0..run.members().len())
        .filter(|m| !by_member.contains_key(m))
        .collect();
    if !absent.is_empty() {
        return Err(CertifyError::MissingMembers {
            members: absent,
            missing,
            steps,
        });
    }
    if !duplicate.is_empty() {
        duplicate.sort_unstable();
        duplicate.dedup();
        return Err(CertifyError::Duplicate { duplicate });
    }
    if !missing.is_empty() {
        return Err(CertifyError::Missing { missing, steps });
    }
    Ok((path.into_iter().flatten().collect(), orders))
}

/// The run's noise as every member accounts it: σ from the run file or [`Run::calibrate`], and
/// [`Run::accounted_clip`].
pub fn run_noise(run: &Run) -> Result<Noise, PrivacyError> {
    let sigma = match run.noise() {
        SpecNoise::Sigma(sigma) => sigma,
        SpecNoise::Budget { .. } => match run.calibrate()? {
            Some(c) => c.sigma,
            None => return Err(PrivacyError::Sigma(f64::NAN)),
        },
    };
    Noise::new(sigma, run.accounted_clip())
}

/// The δ of a run's figures: the run's `[budget]` δ, or the default.
pub fn run_delta(run: &Run) -> f64 {
    match run.noise() {
        SpecNoise::Budget { delta, .. } => delta,
        SpecNoise::Sigma(_) => DEFAULT_DELTA,
    }
}

/// The certificate given the walk of `run` from its members' `ledgers` (module docs), at `delta`
/// (the run's δ when `None`).
pub fn certify_ledgers(
    run: &Run,
    ledgers: &[PathBuf],
    delta: Option<f64>,
) -> Result<RunCertificate, CertifyError> {
    if run.kind() == StepKind::Admm {
        return Err(CertifyError::Admm);
    }
    let (walk, orders) = walk_from_ledgers(run, ledgers)?;
    let noise = run_noise(run)?;
    let delta = delta.unwrap_or_else(|| run_delta(run));
    let conversion = Conversion::Tight;
    let users = certify_users(
        run.members().len(),
        &walk,
        &orders,
        noise,
        delta,
        conversion,
    )?;
    Ok(RunCertificate {
        label: GIVEN_WALK_LABEL,
        notice: PATH_REVEALED_NOTICE,
        run_id: run.run_id().to_string(),
        unit: run.unit_label(),
        steps: run.steps(),
        sigma: noise.sigma(),
        accounted_clip: noise.clip(),
        delta,
        conversion: conversion.name(),
        assumptions: ASSUMPTIONS.to_vec(),
        users,
    })
}
