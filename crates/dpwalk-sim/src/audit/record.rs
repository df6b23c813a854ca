//! The record-level audit (`[privacy] unit = "record"`): two worlds that differ in **one record**
//! of user `i`, both records within the data's feature-norm bound `R` (the largest row norm of the
//! scenario's data, the accountant's assumption), and the record-level figure of the same
//! accountant code the simulator reports, computed on the audited data.
//!
//! # Canaries
//! - **black box**: the user keeps its records and gains `(±s·e_f, y)` with `s = min(1, R)` on
//!   the dedicated feature `f`: the worlds are a replace-one-record pair of a user holding
//!   `m_i + 1` records.
//! - **white box** (the walk): the largest difference the proof allows,
//!   `2·min(C, γG₂/m)` (ADMM) or `2·min(C, G₂/m)` (DP-SGD), needs both records' gradients at
//!   full norm `G₂` and opposite, which no record reaches near the zero state (the logistic
//!   gradient there is half its bound). So the user holds the canary record
//!   `a± = ±R·sin φ·e_f + R·cos φ·e_g` (norm `R`; `g` a second dedicated feature, `sin φ =`
//!   [`SIN_PHI`]) and `m − 1` zero records (whose gradient is zero everywhere: the step is the
//!   canary's alone, divided by `m`, the fewest records of any user), and the trials start from
//!   a public state ([`Start`]) whose weight on `g` puts the canary's margin at `−`[`MARGIN`] in
//!   both worlds, with every `u_i` at the model (`v = z`): there the loss is linear to 13 digits,
//!   so the two messages differ by `2·sin φ` times the bound. The difference is measured on the
//!   real step, noise-free, and reported ([`RecordCanary::realized_difference`]); nothing forces
//!   it.
//! - **the baselines' white box**: the user holds the canary record `(±s·e_f, y)` (`s = R`;
//!   pp-admm, whose proof assumes `‖x‖ ≤ 1`: `min(1, R)`) and `m − 1` zero records; their
//!   per-record clipping or the record's norm bounds it, nothing else is forced.
//!
//! The accountant divides by the fewest records of any user of the audited data and bounds every
//! record's gradient by the audited data's largest row norm: the planted records are within `R`,
//! so `G₂` is the scenario's, and the canary user holds the fewest (white box) or one more than it
//! held (black box, whose bound may then be for a user with fewer).

use super::AuditError;
use super::bound::Bound;
use super::canary::{self, Canary, CanaryKind, Worlds};
use super::trial::Start;
use crate::algorithm::AlgorithmName;
use crate::method::Method;
use crate::privacy::PrivacyContext;
use crate::scenario::{Scenario, UnitName};
use crate::simulate::Prepared;
use dpwalk_core::data::UserData;
use dpwalk_core::problem::{Loss, Problem, ProxScratch};
use dpwalk_core::step::{Algorithm, clip_in_place};
use dpwalk_core::topology::Topology;
use serde::Serialize;

/// `sin φ` of the white-box record: its share of `R` on the canary's feature; the rest (`cos φ`)
/// sets its margin. The messages differ by `2·sin φ` times the sensitivity.
pub const SIN_PHI: f64 = 0.9999;

/// The white-box record's margin `−L` at the start state: the logistic gradient's factor is then
/// `1 − e^{−L}/(1 + e^{−L})`, 1 to 13 digits.
pub const MARGIN: f64 = 30.0;

/// What a record-level canary is audited against, in `audit.json`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RecordCanary {
    /// The canary user's records in the audited data.
    pub records: u64,
    /// `R`: the scenario data's largest row norm, which every canary record respects.
    pub feature_norm: f64,
    /// The canary record's norm.
    pub record_norm: f64,
    /// `m` the accountant divides by (the fewest records of a user of the audited data), for
    /// dpwalk's own kinds.
    pub fewest_records: Option<u64>,
    /// `G₂` of the audited data, for dpwalk's own kinds.
    pub grad_bound: Option<f64>,
    /// The accountant's clip `min(C, γG₂/m)` (DP-SGD, fed-sgd: `min(C, G₂/m)`), for dpwalk's own
    /// kinds.
    pub accounted_clip: Option<f64>,
    /// The proof's sensitivity, twice the accounted clip.
    pub sensitivity: Option<f64>,
    /// `‖m₁ − m₀‖`: the two worlds' first messages of the canary, from the trials' start state,
    /// without noise, by the real step (for dpwalk's own kinds).
    pub realized_difference: Option<f64>,
}

impl RecordCanary {
    /// The realized difference over the sensitivity, where both are known.
    pub fn ratio(&self) -> Option<f64> {
        Some(self.realized_difference? / self.sensitivity?)
    }
}

/// A record-level pair ready to audit.
#[derive(Debug)]
pub struct RecordPair {
    /// The two worlds; the canary carries its [`RecordCanary`].
    pub worlds: Worlds,
    /// The trials' start state (`None`: zero).
    pub start: Option<Start>,
    /// The accountant of the audited data (world 1's; world 0's records have the same counts
    /// and norms).
    pub privacy: PrivacyContext,
}

/// `bound` as the figure of a `kind` point at `unit` it is: named record-level at record level
/// ([`crate::record_level::prefix`]), with the assumptions of that kind at that unit
/// ([`crate::record_level::assumptions`]: only what its sensitivity rests on).
pub fn label(bound: Bound, kind: AlgorithmName, unit: UnitName) -> Bound {
    let extra = crate::record_level::assumptions(kind, unit);
    Bound {
        figure: format!("{}{}", crate::record_level::prefix(unit), bound.figure),
        assumptions: bound
            .assumptions
            .into_iter()
            .chain(extra.iter().copied())
            .collect(),
        ..bound
    }
}

/// The scenario data's records per user, the fewest of them and `R`.
fn shape(base: &Problem, user: usize) -> Result<(usize, f64), AuditError> {
    canary::check_user(base.data(), user)?;
    let data = base.data();
    let fewest = (0..base.n_users())
        .map(|i| data.records(i))
        .min()
        .unwrap_or(0);
    if fewest == 0 {
        return Err(AuditError::Invalid(
            "a user holds no records: the record-level unit needs records".into(),
        ));
    }
    Ok((fewest, base.max_feature_norm()))
}

/// `base` with two zero columns appended (`f = p`, `g = p + 1`), user `user`'s rows replaced by
/// the record `(record[0]·e_f + record[1]·e_g, label)` and `records − 1` zero records.
fn white_data(
    base: &UserData,
    user: usize,
    record: [f64; 2],
    label: f64,
    records: usize,
) -> UserData {
    let p = base.data.n_features;
    let q = p + 2;
    let mut features = Vec::with_capacity((base.data.rows() + records) * q);
    let mut labels = Vec::with_capacity(base.data.rows() + records);
    let mut offsets = vec![0];
    for i in 0..base.n_users() {
        if i == user {
            let start = features.len();
            features.extend(std::iter::repeat_n(0.0, q * records));
            features[start + p] = record[0];
            features[start + p + 1] = record[1];
            labels.extend(std::iter::repeat_n(label, records));
        } else {
            for r in base.range(i) {
                features.extend_from_slice(base.data.row(r));
                features.extend([0.0, 0.0]);
                labels.push(base.data.labels[r]);
            }
        }
        offsets.push(labels.len());
    }
    canary::with_rows(base, (features, labels, q), offsets)
}

/// The problems of the white-box worlds: the record `(±s, c)` on `(f, g)`.
fn white_problems(
    base: &Problem,
    user: usize,
    (s, c): (f64, f64),
    records: usize,
) -> Result<[Problem; 2], AuditError> {
    let label = canary::labels(base.loss())[0];
    let make = |sign: f64| {
        Problem::new(
            base.loss(),
            *base.regularizer(),
            white_data(base.data(), user, [sign * s, c], label, records),
        )
        .map_err(|e| AuditError::Invalid(format!("the record-level canary's world: {e}")))
    };
    Ok([make(-1.0)?, make(1.0)?])
}

/// The noise-free update of `user`'s contribution from `start` (zero when `None`):
/// `clip(prox_{γf_i}(2z − u) − z, C)` for ADMM, `−clip(∇f_i(w), C)` for DP-SGD (the way the
/// token moves), with its norm before the clip.
fn update(
    problem: &Problem,
    algorithm: &Algorithm,
    user: usize,
    start: Option<&Start>,
) -> Result<(Vec<f64>, f64), AuditError> {
    let dim = problem.dim();
    let w = start.map_or_else(|| vec![0.0; dim], |s| s.w.clone());
    let mut out = vec![0.0; dim];
    match algorithm {
        Algorithm::Admm(p) => {
            let mut z = vec![0.0; dim];
            algorithm.model(problem.regularizer(), &w, &mut z);
            let u = start
                .filter(|s| !s.u.is_empty())
                .map_or_else(|| vec![0.0; dim], |s| s.u.clone());
            let v: Vec<f64> = z.iter().zip(&u).map(|(zk, uk)| 2.0 * zk - uk).collect();
            out.copy_from_slice(&z);
            let prox = problem.local_prox(p.gamma())?;
            prox.prox(user, &v, &mut out, &mut ProxScratch::default())?;
            out.iter_mut().zip(&z).for_each(|(x, zk)| *x -= zk);
        }
        Algorithm::Sgd(_) => {
            problem.user_grad(user, &w, &mut out);
            out.iter_mut().for_each(|g| *g = -*g);
        }
    }
    let unclipped = canary::norm(&out);
    clip_in_place(&mut out, algorithm.clip());
    Ok((out, unclipped))
}

/// The trials' start state of the white box: the model's weight on `g` (the canary's margin
/// feature) such that the record's margin is `−MARGIN` (logistic, label 1: `c·x_g`; multinomial,
/// label 0: class 1's logit `MARGIN` above class 0's), every `u_i` at the model (ADMM).
fn start_state(
    problem: &Problem,
    algorithm: &Algorithm,
    g: usize,
    c: f64,
) -> Result<Start, AuditError> {
    let dim = problem.dim();
    let q = problem.data().data.n_features;
    let (index, target) = match problem.loss() {
        Loss::Multinomial { .. } => (q + g, MARGIN / c),
        _ => (g, -MARGIN / c),
    };
    let mut w = vec![0.0; dim];
    let mut z = vec![0.0; dim];
    // The regularizer's prox shrinks w towards 0: grow w until the model reaches the target.
    let mut t = target;
    for _ in 0..64 {
        w[index] = t;
        algorithm.model(problem.regularizer(), &w, &mut z);
        if z[index].abs() >= target.abs() {
            let u = match algorithm {
                Algorithm::Admm(_) => z,
                Algorithm::Sgd(_) => Vec::new(),
            };
            return Ok(Start { w, u });
        }
        t *= 2.0;
    }
    Err(AuditError::Invalid(
        "the record-level white box found no start state: the regularizer's prox holds the margin \
         feature at zero (audit with --canary black-box)"
            .into(),
    ))
}

/// The canary of `worlds`' two updates: the direction of their difference on the canary
/// feature `f` (every class's column), and the difference's whole norm.
fn direction(upd: [&[f64]; 2], f: usize, q: usize) -> Result<(Vec<(usize, f64)>, f64), AuditError> {
    let diff: Vec<f64> = upd[1].iter().zip(upd[0]).map(|(a, b)| a - b).collect();
    let on_f: Vec<(usize, f64)> = diff
        .iter()
        .enumerate()
        .filter(|&(k, v)| k % q == f && *v != 0.0)
        .map(|(k, &v)| (k, v))
        .collect();
    let n = on_f.iter().map(|(_, v)| v * v).sum::<f64>().sqrt();
    if !(n > 0.0 && n.is_finite()) {
        return Err(AuditError::Invalid(
            "the record-level canary does not move the canary feature: nothing to audit".into(),
        ));
    }
    Ok((
        on_f.into_iter().map(|(k, v)| (k, v / n)).collect(),
        canary::norm(&diff),
    ))
}

/// The accountant of `problem` (the audited data) for `scenario` on `prepared`'s graphs.
fn accountant(
    scenario: &Scenario,
    prepared: &Prepared,
    problem: &Problem,
) -> Result<PrivacyContext, AuditError> {
    let topologies: Vec<&Topology> = prepared.topologies.iter().map(|t| &t.topology).collect();
    Ok(PrivacyContext::new(scenario, problem, &topologies)?)
}

/// The [`RecordCanary`] of `worlds` under `privacy` (the audited data's) for `method`: its
/// accounted clip for dpwalk's own kinds.
fn describe(
    privacy: &PrivacyContext,
    method: &Method,
    worlds: &Worlds,
    feature_norm: f64,
    record_norm: f64,
    realized: Option<f64>,
) -> RecordCanary {
    let unit = privacy.unit_report(method);
    let clip = unit.accounted_clip;
    RecordCanary {
        records: worlds.problems[1].data().records(worlds.canary.user) as u64,
        feature_norm,
        record_norm,
        fewest_records: unit.record_level.map(|r| r.fewest_records),
        grad_bound: unit.record_level.map(|r| r.grad_bound),
        accounted_clip: clip,
        sensitivity: clip.map(|c| 2.0 * c),
        realized_difference: realized.filter(|_| clip.is_some()),
    }
}

/// The worlds of `kind` for `user` of `base`: black box, `(±black·e_f, y)` planted among its
/// records; white box, the record `(±white.0·e_f + white.1·e_g, y)` and zero records up to
/// `records`, its direction read from `algorithm`'s updates from the state `start` makes of
/// world 1's problem.
fn pair_worlds(
    base: &Problem,
    algorithm: &Algorithm,
    (user, kind): (usize, CanaryKind),
    (black, white): (f64, (f64, f64)),
    records: usize,
    start: impl FnOnce(&Problem) -> Result<Option<Start>, AuditError>,
) -> Result<(Worlds, Option<Start>), AuditError> {
    let (data, loss, reg) = (base.data(), base.loss(), *base.regularizer());
    if kind == CanaryKind::BlackBox {
        let c = canary::black_box(data, loss, reg, algorithm, user, black)?;
        return Ok((canary::worlds(data, loss, reg, c)?, None));
    }
    let p = data.data.n_features;
    let problems = white_problems(base, user, white, records)?;
    let start = start(&problems[1])?;
    let (u0, _) = update(&problems[0], algorithm, user, start.as_ref())?;
    let (u1, unclipped_norm) = update(&problems[1], algorithm, user, start.as_ref())?;
    let (direction, _) = direction([&u0, &u1], p, p + 2)?;
    let canary = Canary {
        kind,
        user,
        scale: white.0,
        label: canary::labels(loss)[0],
        feature: p,
        direction,
        unclipped_norm,
        record_level: None,
    };
    Ok((Worlds { problems, canary }, start))
}

/// `‖m₁ − m₀‖` of `algorithm`'s noise-free first messages of `user` in the two worlds.
fn realized(
    worlds: &Worlds,
    algorithm: &Algorithm,
    user: usize,
    start: Option<&Start>,
) -> Result<f64, AuditError> {
    let p = worlds.canary.feature;
    let q = worlds.problems[1].data().data.n_features;
    let (u0, _) = update(&worlds.problems[0], algorithm, user, start)?;
    let (u1, _) = update(&worlds.problems[1], algorithm, user, start)?;
    Ok(direction([&u0, &u1], p, q)?.1)
}

/// The record-level pair of `user` for the walk's `algorithm` (module docs).
///
/// # Errors
/// A user out of range, no clip, a loss or data the accountant refuses at record level, a
/// canary that does not move the model.
pub fn walk(
    scenario: &Scenario,
    prepared: &Prepared,
    algorithm: &Algorithm,
    user: usize,
    kind: CanaryKind,
) -> Result<RecordPair, AuditError> {
    let base = &prepared.problem;
    let (fewest, r) = shape(base, user)?;
    if algorithm.clip().is_none() {
        return Err(AuditError::Invalid(
            "the scenario has no clip: there is no bound to audit (set algorithm.clip)".into(),
        ));
    }
    let (s, c) = (r * SIN_PHI, r * (1.0 - SIN_PHI * SIN_PHI).sqrt());
    let g = base.data().data.n_features + 1;
    let (mut worlds, start) = pair_worlds(
        base,
        algorithm,
        (user, kind),
        (r.min(1.0), (s, c)),
        fewest,
        |problem| start_state(problem, algorithm, g, c).map(Some),
    )?;
    let realized = realized(&worlds, algorithm, user, start.as_ref())?;
    let record_norm = if kind == CanaryKind::BlackBox {
        r.min(1.0)
    } else {
        r
    };
    let privacy = accountant(scenario, prepared, &worlds.problems[1])?;
    let method = Method::Walk(*algorithm);
    let record = describe(&privacy, &method, &worlds, r, record_norm, Some(realized));
    worlds.canary.record_level = Some(record);
    Ok(RecordPair {
        worlds,
        start,
        privacy,
    })
}

/// The record-level pair of `user` for a baseline's `method` (module docs): trials from zero.
///
/// # Errors
/// A user out of range, data the accountant refuses, a canary that does not move the model.
pub fn baseline(
    scenario: &Scenario,
    prepared: &Prepared,
    method: &Method,
    user: usize,
    kind: CanaryKind,
) -> Result<RecordPair, AuditError> {
    let base = &prepared.problem;
    let (fewest, r) = shape(base, user)?;
    // pp-admm's proof bounds every record by 1.
    let cap = if matches!(method, Method::PpAdmm(_)) {
        r.min(1.0)
    } else {
        r
    };
    let probe = super::baseline::unclipped_probe()?;
    let (mut worlds, _) = pair_worlds(
        base,
        &probe,
        (user, kind),
        (cap.min(1.0), (cap, 0.0)),
        fewest,
        |_| Ok(None),
    )?;
    let privacy = accountant(scenario, prepared, &worlds.problems[1])?;
    // fed-sgd's round-1 message is DP-SGD's from zero: measure it as the walk's.
    let realized = match method {
        Method::FedSgd(params) => Some(realized(&worlds, &Algorithm::Sgd(*params), user, None)?),
        _ => None,
    };
    let record = describe(&privacy, method, &worlds, r, worlds.canary.scale, realized);
    worlds.canary.record_level = Some(record);
    Ok(RecordPair {
        worlds,
        start: None,
        privacy,
    })
}
