//! The run file: what every member of a daemon run must agree on, its validation, its canonical
//! hash, and the naming of differences between two runs.
//!
//! # Format (TOML, kebab-case, unknown keys refused)
//! ```toml
//! run-id = "lasso-demo"   # 1..=64 bytes of [A-Za-z0-9._-]; carried by every token
//! seed = 7                # run seed: node RNGs, topology generation
//! steps = 3000            # K, the total steps of the walk (>= 1)
//! dimension = 64          # model dimension p (1..=codec::MAX_DIM; classes × features for multinomial)
//!
//! [problem]
//! loss = "squared"        # squared | logistic | multinomial
//! classes = 3             # multinomial only (required there, refused elsewhere); divides dimension
//! l1 = 0.001              # default 0
//! l2 = 0.0                # default 0
//!
//! [algorithm]             # the walk's step: dpwalk_core::step::Algorithm
//! kind = "admm"           # admm (default: the private ADMM step, AdmmParams) | dp-sgd (SgdParams)
//! gamma = 1.0             # admm only (required there): γ > 0
//! lambda = 0.5            # admm only (required there): λ ∈ (0, 1]
//! # lr = 0.1              # dp-sgd only (required there): the step size, > 0
//! clip = 1.0              # C > 0 (required: a daemon run always has a privacy guarantee)
//! sigma = 2.0             # σ ≥ 0; either this or [budget]
//!
//! [budget]                # either this or sigma: σ is calibrated to (epsilon, delta) on the
//!                         # budget's view, for a member's planned visits ([`Run::calibrate`])
//! epsilon = 1.0           # > 0
//! delta = 1e-6            # ∈ (0, 1); default dpwalk_core::spec::DEFAULT_DELTA (1e-6)
//! # view = "network"      # local (default) | network: the DP-SGD walk on a complete graph only
//!
//! [privacy]               # optional: the privacy unit (dpwalk_core::spec::UnitSpec)
//! unit = "record"         # user (default, the table may be left out) | record
//! min-records = 1000      # record only: every member holds at least m records
//! feature-norm = 1.0      # record only: every record's features have l2 norm <= R
//!
//! [topology]              # dpwalk_core::topology::TopologySpec; not kind = "file"
//! kind = "complete"
//!
//! [start]                 # optional: when the member that starts the walk makes step 0
//! quorum = 3              # members (itself included) verified first; default all, 1..=n
//! timeout = 600           # seconds it waits for them, then stops naming those missing; default 600
//!
//! [[members]]             # exactly one per index 0..n-1, n = the topology's node count
//! index = 0
//! peer-id = "12D3KooW…"   # distinct libp2p PeerIds
//! addrs = ["/ip4/10.0.0.1/tcp/4001"]   # dial hints (multiaddrs, checked to parse)
//! ```
//! `kind = "dp-sgd"` runs the DP-SGD walk (`w ← prox_{lr·r}(w − lr·(clip(∇f_i(w), C) + η/2))`,
//! the simulator's `kind = "dp-sgd"`, `mode = "decentralized"`): the same token, next hop,
//! seeding, charge per contribution (`8αC²/σ²`, local view), calibration and budget policy as
//! the ADMM walk; only the step and the model (`w` itself, no prox) differ. The keys of the other
//! kind are refused, not ignored. `kind = "admm"` written out is the same run as no key (the same
//! canonical form and hash), so the run files written before DP-SGD existed keep their hash.
//!
//! With `unit = "record"` every figure of the run (calibration, the members' charges and budget
//! policies, their reported ε) is record-level: one record of a member replaced. The members
//! account with the clip `min(C, γG₂/m)` (DP-SGD: `min(C, G₂/m)`) ([`Run::accounted_clip`]),
//! `G₂` the loss's factor times
//! `R` (logistic `R`, multinomial `√2·R`; the squared loss is refused), and each node refuses to
//! start when its own data are outside `m` or `R` (`dpwalk_core::spec::unit`). The table is part
//! of the canonical form only at record level, so a run without it (or with `unit = "user"`)
//! keeps its hash.
//!
//! A run file must be self-contained, since members on different hosts compare it: an edge list
//! in another file (`kind = "file"`) is refused; write it inline with `kind = "edges"`.
//!
//! # Identity of a run
//! [`Run::canonical_toml`] serializes the *validated* run (defaults filled in, members sorted by
//! index, PeerIds in canonical base58), so comments, formatting, key order and member order do not
//! matter, and [`Run::hash`] is its SHA-256. The canonical form is TOML rather than bincode because
//! `TopologySpec` skips absent keys when serializing, which a format without field names would make
//! ambiguous (`nodes = 5` and `seed = 5` would encode alike); TOML names every key, and Rust writes
//! each `f64` in its shortest exact form. [`Run::diff`] walks the same canonical tree and names the
//! keys that differ, for the refusal message when two members' runs disagree.

use std::path::Path;

use dpwalk_core::params::{AdmmStep, ParamError, SgdStep};
use dpwalk_core::problem::{Loss, Regularizer};
use dpwalk_core::spec::topology::Source;
use dpwalk_core::spec::{
    BudgetSpec, BudgetViewName, Noise, ProblemSpec, RecordUnit, SpecError, UnitSpec,
    build_topology, check_step, param_key,
};
use dpwalk_core::step::Algorithm;
use dpwalk_core::toml_location::toml_error_location;
use dpwalk_core::topology::{Topology, TopologySpec};
use dpwalk_privacy::PrivacyError;
use dpwalk_privacy::budget::PLAN_QUANTILE;
use dpwalk_privacy::calibrate::{Calibration, REL_TOL, View, calibrate};
use dpwalk_privacy::rdp::{Conversion, Orders};
use dpwalk_privacy::unit::{admm_record_level_clip, record_level_clip};
use dpwalk_privacy::walk::{ADMM_NETWORK_WITHDRAWN, planned_contributions};
use libp2p_identity::PeerId;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use thiserror::Error;

use crate::codec::{MAX_DIM, MAX_RUN_ID, RunContext};

mod diff;
mod members;

pub use diff::Difference;
use members::check_members;

/// The unit label of record-level figures ([`Run::unit_label`]).
pub const RECORD_LEVEL: &str = "record-level";

/// Errors of reading and validating a run file. Every one names the file and a line.
#[derive(Debug, Error)]
pub enum RunError {
    /// The file could not be read.
    #[error("cannot read run file {path}")]
    Read {
        /// The file.
        path: String,
        /// The operating system's reason.
        source: std::io::Error,
    },
    /// The file is malformed or a value is out of range.
    #[error("{origin}, line {line}: {}{message}", key.as_deref().map(|k| format!("`{k}`: ")).unwrap_or_default())]
    Invalid {
        /// The file (or other source) the text came from.
        origin: String,
        /// 1-based line of the offending key (1 when unknown).
        line: usize,
        /// The offending key, dotted (`algorithm.gamma`, `members[2].peer-id`), when known.
        key: Option<String>,
        /// What is wrong.
        message: String,
    },
}

/// `[algorithm] kind`: the walk's update.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum StepKind {
    /// The private ADMM step (the default, and the only kind before DP-SGD).
    #[default]
    Admm,
    /// The DP-SGD step on the walk.
    DpSgd,
}

impl StepKind {
    /// The name as written in run files.
    pub fn as_str(self) -> &'static str {
        match self {
            StepKind::Admm => "admm",
            StepKind::DpSgd => "dp-sgd",
        }
    }

    /// Whether it is ADMM: the canonical form leaves the key out then, so that a run file
    /// written before the key existed keeps its hash.
    fn is_admm(&self) -> bool {
        *self == StepKind::Admm
    }
}

/// The `[algorithm]` table. Each kind's keys are optional here and required (or refused) by
/// the validation, which names the kind; the field order is the canonical key order, and with
/// the other kind's keys absent an ADMM table is written exactly as before `kind` existed.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub struct AlgorithmSpec {
    /// `admm` (default) or `dp-sgd`.
    #[serde(default, skip_serializing_if = "StepKind::is_admm")]
    pub kind: StepKind,
    /// γ (ADMM).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gamma: Option<f64>,
    /// λ (ADMM).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lambda: Option<f64>,
    /// The step size (DP-SGD).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lr: Option<f64>,
    /// C.
    pub clip: f64,
    /// σ, unless a `[budget]` calibrates it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sigma: Option<f64>,
}

impl AlgorithmSpec {
    /// The table of the ADMM step.
    pub fn admm(gamma: f64, lambda: f64, clip: f64, sigma: Option<f64>) -> Self {
        Self {
            kind: StepKind::Admm,
            gamma: Some(gamma),
            lambda: Some(lambda),
            lr: None,
            clip,
            sigma,
        }
    }

    /// The table of the DP-SGD step.
    pub fn dp_sgd(lr: f64, clip: f64, sigma: Option<f64>) -> Self {
        Self {
            kind: StepKind::DpSgd,
            gamma: None,
            lambda: None,
            lr: Some(lr),
            clip,
            sigma,
        }
    }

    /// The table of `algorithm`'s step (with its C, which must be there) and `sigma`.
    pub fn of(algorithm: &Algorithm, clip: f64, sigma: Option<f64>) -> Self {
        match algorithm {
            Algorithm::Admm(p) => Self::admm(p.gamma(), p.relaxation(), clip, sigma),
            Algorithm::Sgd(p) => Self::dp_sgd(p.lr(), clip, sigma),
        }
    }

    /// The step without σ, checked: the kind's keys required, the other kind's refused.
    fn check(&self) -> Result<WalkStep, SpecError> {
        let kind = self.kind.as_str();
        let required = |key: &str, v: Option<f64>| {
            v.ok_or_else(|| {
                SpecError::new(&["algorithm", key], format!("kind = \"{kind}\" needs it"))
            })
        };
        let refused = |key: &str, v: Option<f64>| match v {
            Some(_) => Err(SpecError::new(
                &["algorithm", key],
                format!("not a key of kind = \"{kind}\""),
            )),
            None => Ok(()),
        };
        match self.kind {
            StepKind::Admm => {
                refused("lr", self.lr)?;
                let gamma = required("gamma", self.gamma)?;
                let lambda = required("lambda", self.lambda)?;
                check_step("algorithm", gamma, lambda, Some(self.clip)).map(WalkStep::Admm)
            }
            StepKind::DpSgd => {
                refused("gamma", self.gamma)?;
                refused("lambda", self.lambda)?;
                let lr = required("lr", self.lr)?;
                SgdStep::new(lr, Some(self.clip))
                    .map(WalkStep::Sgd)
                    .map_err(|e| SpecError::new(&["algorithm", param_key(&e)], e))
            }
        }
    }
}

/// Checks `[start]` for a run of `members` members and normalizes it: the defaults written out
/// are the same run as no table (the same canonical form and hash). A network budget needs every
/// member at the start: a walk that avoids absent members does not follow the complete graph's
/// draws, which its path-hidden figure assumes.
fn check_start(
    start: Option<StartSpec>,
    members: usize,
    budget: Option<&BudgetSpec>,
) -> Result<Option<StartSpec>, SpecError> {
    let Some(start) = start else {
        return Ok(None);
    };
    if let Some(q) = start.quorum {
        if q == 0 || q > members {
            return Err(SpecError::new(
                &["start", "quorum"],
                format!(
                    "{q} is not in 1..={members} (the members of the run, the starter included)"
                ),
            ));
        }
        let network = budget.is_some_and(|b| b.view == BudgetViewName::Network);
        if network && q < members {
            return Err(SpecError::new(
                &["start", "quorum"],
                format!(
                    "{q} of {members}: a network budget needs every member at the start (its path-hidden figure assumes the walk draws every member; one that avoids absent members does not); leave `quorum` out, or use view = \"local\""
                ),
            ));
        }
    }
    if let Some(t) = start.timeout.filter(|&t| t == 0 || t > MAX_START_TIMEOUT) {
        return Err(SpecError::new(
            &["start", "timeout"],
            format!("{t} is not in 1..={MAX_START_TIMEOUT} seconds (a day)"),
        ));
    }
    let normalized = StartSpec {
        quorum: start.quorum.filter(|&q| q != members),
        timeout: start.timeout.filter(|&t| t != DEFAULT_START_TIMEOUT),
    };
    Ok((normalized != StartSpec::default()).then_some(normalized))
}

/// A run's step without σ, validated.
#[derive(Debug, Clone, Copy, PartialEq)]
enum WalkStep {
    Admm(AdmmStep),
    Sgd(SgdStep),
}

/// One `[[members]]` entry.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub struct MemberSpec {
    /// The member's node index in the topology.
    pub index: usize,
    /// Its libp2p PeerId (base58).
    pub peer_id: String,
    /// Multiaddrs to dial it at.
    #[serde(default)]
    pub addrs: Vec<String>,
}

/// The default of `[start] timeout`, in seconds: ten minutes to start every host of a run.
pub const DEFAULT_START_TIMEOUT: u64 = 600;

/// The longest `[start] timeout`, in seconds: a day.
pub const MAX_START_TIMEOUT: u64 = 24 * 60 * 60;

/// `[start]`: when the member that starts the walk makes step 0 (issue 26). It waits until
/// `quorum` members, itself included, have shown they run this run file (a hello), so that a
/// member started a few seconds after the others is in the walk's draws from the first hop; a
/// member absent at the start is drawn from the hop after it verifies. Waiting longer than
/// `timeout` seconds, it stops with an error naming the members missing.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub struct StartSpec {
    /// Members verified before step 0, the starter included; `None`: all.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub quorum: Option<usize>,
    /// Seconds the starter waits for the quorum; `None`: [`DEFAULT_START_TIMEOUT`].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timeout: Option<u64>,
}

/// A run file as written: unchecked until `Run::from_file`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub struct RunFile {
    /// The run id.
    pub run_id: String,
    /// The run seed.
    pub seed: u64,
    /// `K`.
    pub steps: u64,
    /// The model dimension.
    pub dimension: usize,
    /// Loss and regularizer.
    pub problem: ProblemSpec,
    /// Step parameters.
    pub algorithm: AlgorithmSpec,
    /// Privacy budget calibrating σ.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub budget: Option<BudgetSpec>,
    /// The privacy unit (user level when absent; normalized to absent at user level).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub privacy: Option<UnitSpec>,
    /// The communication graph.
    pub topology: TopologySpec,
    /// When the walk starts (all members verified when absent).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub start: Option<StartSpec>,
    /// The members.
    pub members: Vec<MemberSpec>,
}

/// A validated member.
#[derive(Debug, Clone, PartialEq)]
pub struct Member {
    /// Its node index.
    pub index: usize,
    /// Its identity.
    pub peer: PeerId,
    /// Dial hints.
    pub addrs: Vec<String>,
}

/// The SHA-256 of a run's canonical form.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct RunHash(pub [u8; 32]);

impl std::fmt::Display for RunHash {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.0.iter().try_for_each(|b| write!(f, "{b:02x}"))
    }
}

/// A validated run. Built only by [`Run::parse`], [`Run::load`] or `Run::from_file`.
#[derive(Debug, Clone)]
pub struct Run {
    /// Normalized: members sorted by index, PeerIds canonical.
    file: RunFile,
    members: Vec<Member>,
    topology: Topology,
    loss: Loss,
    regularizer: Regularizer,
    /// The step without σ; σ joins it once known ([`Run::algorithm_with`]).
    step: WalkStep,
    noise: Noise,
    /// The record-level inputs, when `[privacy] unit = "record"`.
    record_unit: Option<RecordUnit>,
    /// The clip every figure is accounted with ([`Run::accounted_clip`]).
    accounted_clip: f64,
    /// [`Run::canonical_toml`] and [`Run::hash`], computed once: every hello and every final
    /// model is checked against them.
    canonical: String,
    hash: RunHash,
}

impl Run {
    /// Reads and validates the run file at `path`.
    pub fn load(path: &Path) -> Result<Run, RunError> {
        let text = std::fs::read_to_string(path).map_err(|source| RunError::Read {
            path: path.display().to_string(),
            source,
        })?;
        Run::parse(&text, &path.display().to_string())
    }

    /// Parses and validates run-file text; `origin` names it in errors.
    pub fn parse(text: &str, origin: &str) -> Result<Run, RunError> {
        let file: RunFile = toml::from_str(text).map_err(|e| {
            let (line, key) = toml_error_location(text, &e);
            RunError::Invalid {
                origin: origin.into(),
                line,
                key,
                message: e.message().to_string(),
            }
        })?;
        Run::from_file(file).map_err(|e| RunError::Invalid {
            origin: origin.into(),
            line: e.line_in(text).unwrap_or(1),
            key: Some(e.key()),
            message: e.message().to_string(),
        })
    }

    /// Validates a deserialized run file (see the module docs for the rules).
    fn from_file(mut file: RunFile) -> Result<Run, SpecError> {
        let id = &file.run_id;
        if id.is_empty()
            || id.len() > MAX_RUN_ID
            || !id
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b"._-".contains(&b))
        {
            return Err(SpecError::new(
                &["run-id"],
                format!("{id:?} must be 1 to {MAX_RUN_ID} characters of A-Z a-z 0-9 . _ -"),
            ));
        }
        if file.steps == 0 {
            return Err(SpecError::new(&["steps"], "must be at least 1"));
        }
        if file.dimension == 0 || file.dimension > MAX_DIM {
            return Err(SpecError::new(
                &["dimension"],
                format!("{} is not in 1..={MAX_DIM}", file.dimension),
            ));
        }
        let loss = file.problem.loss_for_dimension(file.dimension)?;
        let regularizer = file.problem.regularizer()?;
        let noise = Noise::check(
            file.algorithm.sigma,
            &["algorithm", "sigma"],
            file.budget.as_ref(),
            "budget",
        )?;
        let step = file.algorithm.check()?;
        let record_unit = match &file.privacy {
            Some(spec) => spec.check("privacy", loss)?,
            None => None,
        };
        if record_unit.is_none() {
            // `unit = "user"` written out is the same run as no table.
            file.privacy = None;
        }
        let accounted_clip = match record_unit {
            Some(r) => {
                let clip = match step {
                    WalkStep::Admm(step) => {
                        admm_record_level_clip(&step, r.min_records, r.grad_bound)
                    }
                    WalkStep::Sgd(step) => {
                        // The record-level clip does not read σ: 0 stands for it here only.
                        let params = step
                            .with_sigma(0.0)
                            .map_err(|e| SpecError::new(&["algorithm", param_key(&e)], e))?;
                        record_level_clip(&Algorithm::Sgd(params), r.min_records, r.grad_bound)
                    }
                };
                clip.map_err(|e| SpecError::new(&["privacy", "feature-norm"], e))?
            }
            None => file.algorithm.clip,
        };
        let members = check_members(&mut file.members)?;
        let topology = build_topology(
            &file.topology,
            members.len(),
            file.seed,
            Source::SelfContained,
            true,
            &["topology"],
        )?;
        if let Some(BudgetSpec {
            view: BudgetViewName::Network,
            ..
        }) = &file.budget
        {
            if !matches!(step, WalkStep::Sgd(_)) {
                return Err(SpecError::new(
                    &["budget", "view"],
                    format!(
                        "\"network\" is for the DP-SGD walk (algorithm.kind = \"dp-sgd\"): {ADMM_NETWORK_WITHDRAWN}; use view = \"local\""
                    ),
                ));
            }
            if !matches!(topology, Topology::Complete { .. }) {
                return Err(SpecError::new(
                    &["budget", "view"],
                    "\"network\" calibrates on the complete graph's path-hidden figure (topology.kind = \"complete\"); on other graphs it is not offered yet: use view = \"local\"",
                ));
            }
        }
        file.start = check_start(file.start, members.len(), file.budget.as_ref())?;
        // A validated run file holds finite numbers, strings and tables of them, which TOML can
        // always write; if it ever could not, the run is refused rather than hashed as "".
        let canonical = toml::to_string(&file).map_err(|e| {
            SpecError::new(&[], format!("cannot be written in canonical form: {e}"))
        })?;
        let hash = RunHash(Sha256::digest(canonical.as_bytes()).into());
        Ok(Run {
            file,
            members,
            topology,
            loss,
            regularizer,
            step,
            noise,
            record_unit,
            accounted_clip,
            canonical,
            hash,
        })
    }

    /// Members, the starter included, that must have verified before step 0 (`[start] quorum`).
    pub fn start_quorum(&self) -> usize {
        self.file
            .start
            .and_then(|s| s.quorum)
            .unwrap_or(self.members.len())
    }

    /// How long the starter waits for [`Run::start_quorum`] (`[start] timeout`).
    pub fn start_timeout(&self) -> std::time::Duration {
        let secs = self.file.start.and_then(|s| s.timeout);
        std::time::Duration::from_secs(secs.unwrap_or(DEFAULT_START_TIMEOUT))
    }

    /// The run id.
    pub fn run_id(&self) -> &str {
        &self.file.run_id
    }
    /// The run seed.
    pub fn seed(&self) -> u64 {
        self.file.seed
    }
    /// `K`.
    pub fn steps(&self) -> u64 {
        self.file.steps
    }
    /// The model dimension.
    pub fn dimension(&self) -> usize {
        self.file.dimension
    }
    /// The loss.
    pub fn loss(&self) -> Loss {
        self.loss
    }
    /// The regularizer.
    pub fn regularizer(&self) -> Regularizer {
        self.regularizer
    }
    /// How σ is set.
    pub fn noise(&self) -> Noise {
        self.noise
    }
    /// The record-level inputs (`m`, `R`, `G₂`), `None` at user level.
    pub fn record_unit(&self) -> Option<RecordUnit> {
        self.record_unit
    }
    /// The clip every privacy figure of the run is accounted with, the one place the daemon
    /// takes it from (calibration, each contribution's charge, the budget policy): `C` at user
    /// level, `min(C, γG₂/m)` at record level (`dpwalk_privacy::unit`). The step itself still
    /// clips at `C`.
    pub fn accounted_clip(&self) -> f64 {
        self.accounted_clip
    }
    /// `"record-level"` or `"user-level"`: the unit of every figure the members report.
    pub fn unit_label(&self) -> &'static str {
        if self.record_unit.is_some() {
            RECORD_LEVEL
        } else {
            "user-level"
        }
    }
    /// `"record-level "` at record level, `""` at user level (the default, unlabelled): the
    /// prefix of a figure's name in a log line.
    pub fn unit_prefix(&self) -> &'static str {
        if self.record_unit.is_some() {
            "record-level "
        } else {
            ""
        }
    }
    /// The walk's update (`[algorithm] kind`).
    pub fn kind(&self) -> StepKind {
        self.file.algorithm.kind
    }
    /// The step with σ from the file, or `None` when σ is to be calibrated.
    pub fn algorithm(&self) -> Option<Algorithm> {
        match self.noise {
            Noise::Sigma(sigma) => self.algorithm_with(sigma).ok(),
            Noise::Budget { .. } => None,
        }
    }
    /// The step with a calibrated σ.
    pub fn algorithm_with(&self, sigma: f64) -> Result<Algorithm, ParamError> {
        match self.step {
            WalkStep::Admm(step) => step.with_sigma(sigma).map(Algorithm::Admm),
            WalkStep::Sgd(step) => step.with_sigma(sigma).map(Algorithm::Sgd),
        }
    }
    /// The contributions per member a `[budget]` run is calibrated for: the [`PLAN_QUANTILE`]
    /// of a member's visit count in `K` steps among `n` members ([`planned_contributions`]).
    pub fn planned_contributions(&self) -> u64 {
        planned_contributions(
            self.file.steps,
            1.0 / self.members.len().max(1) as f64,
            PLAN_QUANTILE,
        )
    }
    /// σ of a `[budget]` run: the smallest σ such that [`Run::planned_contributions`]
    /// contributions, each accounted with [`Run::accounted_clip`], are within `(epsilon, delta)`
    /// on the budget's view: the local view (an eavesdropper on every token, which bounds what
    /// any member learns; the ADMM and DP-SGD steps are charged alike, so one calibration serves
    /// both kinds), or with `view = "network"` the path-hidden network view of the DP-SGD walk
    /// on the complete graph (N1, `dpwalk_privacy::network::mixture`) at the planned cap,
    /// under the tight conversion on the default order grid, to [`REL_TOL`]. Every member
    /// computes it alike from the same run file, and `dpwalk sim` calibrates the same scenario
    /// to the same σ; a member visited more often than planned stops contributing at the
    /// budget (`dpwalk_privacy::budget::Policy`). `None` when the file gives σ.
    pub fn calibrate(&self) -> Result<Option<Calibration>, PrivacyError> {
        let Noise::Budget { epsilon, delta } = self.noise else {
            return Ok(None);
        };
        let view = match self.budget_view() {
            Some(BudgetViewName::Network) => View::Network {
                users: self.members.len() as u64,
                steps: self.file.steps,
                cap: self.planned_contributions(),
            },
            _ => View::Local {
                contributions: self.planned_contributions(),
            },
        };
        calibrate(
            &view,
            &Orders::default_grid(),
            self.accounted_clip,
            epsilon,
            delta,
            Conversion::Tight,
            REL_TOL,
        )
        .map(Some)
    }
    /// The view of the run's `[budget]` (`None` without one).
    pub fn budget_view(&self) -> Option<BudgetViewName> {
        self.file.budget.map(|b| b.view)
    }
    /// The members, by index.
    pub fn members(&self) -> &[Member] {
        &self.members
    }
    /// The index of `peer`, if it is a member.
    pub fn index_of(&self, peer: &PeerId) -> Option<usize> {
        self.members.iter().position(|m| m.peer == *peer)
    }
    /// The communication graph (built and checked walkable).
    pub fn topology(&self) -> &Topology {
        &self.topology
    }
    /// The file as validated and normalized.
    pub fn file(&self) -> &RunFile {
        &self.file
    }

    /// What [`crate::codec::validate`] needs, for a node that has handled tokens up to `last_seen`.
    pub fn context(&self, last_seen: Option<u64>) -> RunContext {
        RunContext {
            run_id: self.file.run_id.clone(),
            dim: self.file.dimension,
            steps: self.file.steps,
            members: self.members.iter().map(|m| m.peer).collect(),
            run_hash: self.hash.0,
            last_seen,
        }
    }

    /// The canonical serialization (see the module docs).
    pub fn canonical_toml(&self) -> String {
        self.canonical.clone()
    }

    /// The run's identity: SHA-256 of [`Run::canonical_toml`].
    pub fn hash(&self) -> RunHash {
        self.hash
    }
}

#[cfg(test)]
mod tests;
