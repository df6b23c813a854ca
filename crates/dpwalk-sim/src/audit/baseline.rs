//! The two-world audit of a seed baseline (`fed-sgd`, `dp-iadmm`, `ipadmm`, `pp-admm`) in the
//! view its accountant proves: the **local** view, an eavesdropper on every message, server
//! included (and the released model, post-processing of the messages).
//!
//! A trial runs `R` rounds of the baseline from its zero state, through the simulator's own
//! round driver (`crate::rounds`, the same `dpwalk_core::baselines` code and per-user streams as
//! `dpwalk sim`), and reads the canary user's message of each round on the canary direction:
//! its gradient message (fed-sgd), its iterate `z_p` sent to the server (dp-iadmm), its broadcast
//! (ipadmm, pp-admm). The statistics are the walk's: the first message (round 1), a linear score
//! over all of them and the released model, and the released model alone (central).
//!
//! # Canaries: what is forced
//! - fed-sgd, dp-iadmm, ipadmm (clipped per record, ℓ₂ `C`, ℓ₁ `G₁`, ℓ₂ `G₂`): white box, the
//!   user's data replaced by one record whose gradient at the zero state exceeds the clip, so its
//!   round-1 contribution is exactly `±clip·d` (every baseline starts at 0); in later rounds the
//!   record's gradient is taken at the state and clipped when still above the clip. Black box:
//!   the record planted among the user's data.
//! - pp-admm (no clip: the proof bounds `‖x‖ ≤ 1` and replaces one record, with one record per
//!   user): white box only, the user's one record replaced by `(±e_f, y)`, the largest record
//!   the proof admits; nothing else is forced.
//!
//! At record level (`[privacy] unit = "record"`) the worlds differ in one record within the
//! data's norm bound and the bound is the record-level figure of the audited data, for every
//! baseline and both canaries: [`super::record::baseline`].
//!
//! The bound is the accountant's for the same `R` rounds: [`crate::baseline_privacy`]
//! (`dpwalk_privacy::calibrate_baseline`'s curves) for the three papers, the walk's DP-SGD local
//! view of `R` contributions for fed-sgd. The accountant's worst user bounds the canary's. The
//! released model alone (central) is held to the local bound, except fed-sgd's, held to its own
//! central figure ([`crate::privacy::FED_SGD_CENTRAL`]).

use super::AuditError;
use super::bound::Bound;
use super::canary::{self, CanaryKind, Pick, Worlds};
use super::driver::{Activity, Config, PointAudit, trial_seed, view_audits};
use super::estimate::Options;
use super::setting::{Setting, algorithm_name};
use super::statistic::View;
use super::trial::{Transcript, record};
use crate::method::Method;
use crate::privacy::PrivacyContext;
use crate::rounds::Runner;
use crate::run::RunError;
use crate::scenario::{LoadedScenario, Point, UnitName};
use crate::simulate::Prepared;
use dpwalk_core::data::UserData;
use dpwalk_core::params::SgdParams;
use dpwalk_core::problem::{Loss, Problem, Regularizer};
use dpwalk_core::rng::{NodeRng, node_rng};
use dpwalk_core::step::Algorithm;
use dpwalk_core::topology::Topology;
use indicatif::ProgressBar;
use rayon::prelude::*;
use std::time::Instant;

/// The scenario name of a baseline's kind.
fn kind_name(method: &Method) -> &'static str {
    match method {
        Method::Walk(a) => algorithm_name(a),
        Method::FedSgd(_) => "fed-sgd",
        Method::DpIadmm(_) => "dp-iadmm",
        Method::Ipadmm(_) => "ipadmm",
        Method::PpAdmm(_) => "pp-admm",
    }
}

/// The two worlds of `method`'s canary for user `user` of `base` (module docs).
///
/// # Errors
/// A canary the method cannot take (black box for pp-admm), no clip, a user out of range, a
/// record that cannot reach the clip.
pub fn worlds(
    base: &Problem,
    method: &Method,
    user: usize,
    kind: CanaryKind,
) -> Result<Worlds, AuditError> {
    let (data, loss, reg) = (base.data(), base.loss(), *base.regularizer());
    if let Method::PpAdmm(_) = method {
        if kind == CanaryKind::BlackBox {
            return Err(AuditError::Invalid(
                "kind = \"pp-admm\": its proof replaces one record of a user holding one; a planted \
                 record would make two (audit it with --canary white-box)"
                    .into(),
            ));
        }
        return unit_record(data, loss, reg, user);
    }
    let clip = method.clip().ok_or_else(|| {
        AuditError::Invalid(format!(
            "kind = \"{}\" without a clip has no guarantee: nothing to audit",
            kind_name(method)
        ))
    })?;
    // The record is chosen by its gradient at the zero state, as for DP-SGD: every one of these
    // baselines clips per-record gradients (ℓ₁ for dp-iadmm: an ℓ₂ norm above G₁ is an ℓ₁ one).
    let probe = SgdParams::new(1.0, 0.0, Some(clip))
        .map_err(|e| AuditError::Invalid(format!("the canary's probe: {e}")))?;
    canary::build(
        data,
        loss,
        reg,
        &Algorithm::Sgd(probe),
        user,
        kind,
        Pick::Strongest,
    )
}

/// A unit step of plain gradient descent: what a record's direction is read with where the
/// method has no clip or its clip should not decide the direction.
pub(crate) fn unclipped_probe() -> Result<Algorithm, AuditError> {
    SgdParams::new(1.0, 0.0, None)
        .map(Algorithm::Sgd)
        .map_err(|e| AuditError::Invalid(format!("the canary's probe: {e}")))
}

/// The white-box canary of a method without a clip whose privacy proof bounds the features
/// instead (penalty perturbation: `‖x‖ ≤ 1`): user `user`'s data replaced by the record
/// `(±e_f, y)`, the largest the proof admits (`s = 1`). Only the record is forced: its update is
/// whatever the method makes of it; the direction is its gradient step from the zero state.
///
/// # Errors
/// A user out of range, a record that does not move the model.
fn unit_record(
    base: &UserData,
    loss: Loss,
    reg: Regularizer,
    user: usize,
) -> Result<Worlds, AuditError> {
    canary::check_user(base, user)?;
    let record = (1.0, canary::labels(loss)[0]);
    let update = canary::probe(loss, reg, &unclipped_probe()?, base, record)?;
    let canary = canary::finish(base, CanaryKind::WhiteBox, user, record, &update)?;
    canary::worlds(base, loss, reg, canary)
}

/// The accountant's local figure for `rounds` rounds of `point`'s method: the one the
/// privacy-spent plot draws (`PrivacyContext::local_after`), by `privacy` (the scenario's, or
/// the audited data's at record level).
fn local_bound(privacy: &PrivacyContext, point: &Point, rounds: u64) -> Result<Bound, AuditError> {
    let method = &point.method;
    let figure = privacy
        .local_after(point, rounds)
        .map(dpwalk_privacy::walk::Figure::from)
        .ok_or_else(|| {
            AuditError::Invalid(format!(
                "kind = \"{}\" has no local figure here (no noise or no clip): nothing to audit",
                kind_name(method)
            ))
        })?;
    let epsilon_order = (figure.epsilon, figure.order);
    Ok(Bound {
        epsilon: epsilon_order.0,
        order: epsilon_order.1,
        figure: if matches!(method, Method::FedSgd(_)) {
            "local view, the rounds' contributions composed (the walk's DP-SGD accountant, proved)"
        } else {
            "local view, the rounds composed (dpwalk_privacy::baseline, worst user; proved by the paper's argument as the accountant states it)"
        }
        .into(),
        assumptions: Vec::new(),
        note: None,
    })
}

/// One trial: `rounds` rounds from the zero state with run seed `seed` (user `l` draws from
/// `node_rng(seed, l)`); the canary user's message of each round and the released model, on the
/// canary direction, larger in world 1 (fed-sgd's message is a gradient: it is read negated).
///
/// # Errors
/// A method that is not round-based, a round the baseline refuses.
pub fn run_trial(
    problem: &Problem,
    topology: &Topology,
    method: &Method,
    canary: &canary::Canary,
    rounds: u64,
    seed: u64,
) -> Result<Transcript, AuditError> {
    let n = problem.n_users();
    let mut rngs: Vec<NodeRng> = (0..n as u64).map(|i| node_rng(seed, i)).collect();
    let mut runner = Runner::new(problem, topology, method)?.ok_or(RunError::NotRoundBased)?;
    runner.watch(canary.user);
    let sign = if matches!(method, Method::FedSgd(_)) {
        -1.0
    } else {
        1.0
    };
    let mut out = Transcript::default();
    for r in 0..rounds {
        runner.round(problem, &mut rngs)?;
        let message = runner.message(canary.user).ok_or_else(|| {
            AuditError::Invalid(format!("no message of user {} was kept", canary.user))
        })?;
        record(&mut out.tokens, r, sign * canary.project(message));
    }
    let mut z = vec![0.0; problem.dim()];
    runner.model(&mut z)?;
    out.final_model = canary.project(&z);
    out.sent_sum = out.tokens[0];
    out.arrival_sum = out.final_model;
    out.contributions = rounds;
    Ok(out)
}

/// Audits baseline point `index` (`point`, resolved) over trials of `rounds` rounds.
///
/// # Errors
/// [`AuditError`]: a view the baseline's accountant does not prove (network), a canary the
/// baseline cannot take, no noise or no clip, a failed round.
pub(crate) fn audit_point(
    loaded: &LoadedScenario,
    prepared: &Prepared,
    config: &Config,
    index: usize,
    point: &Point,
    rounds: u64,
    bar: &ProgressBar,
) -> Result<PointAudit, AuditError> {
    let s = loaded.scenario();
    let method = &point.method;
    let name = kind_name(method);
    let views: Vec<View> = config
        .views
        .iter()
        .copied()
        .filter(|&v| v != View::Network)
        .collect();
    if views.is_empty() {
        return Err(AuditError::Invalid(format!(
            "kind = \"{name}\": its accountant proves the local view only (an eavesdropper on every \
             message); audit it with --view local or central"
        )));
    }
    if views.len() < config.views.len() {
        tracing::warn!(
            kind = name,
            "no network view for a baseline: auditing local and central"
        );
    }
    if config.contributions > 1 {
        tracing::warn!(
            kind = name,
            "--contributions is for the walk: a baseline's users contribute every round ({rounds} here)"
        );
    }
    if !method.is_noisy() {
        return Err(AuditError::Invalid(format!(
            "kind = \"{name}\" adds no noise: no guarantee to audit"
        )));
    }
    let named = &prepared.topologies[point.topology];
    let record_level = s.privacy.unit == UnitName::Record;
    let (worlds, privacy) = if record_level {
        let pair = super::record::baseline(s, prepared, method, config.user, config.canary)?;
        (pair.worlds, Some(pair.privacy))
    } else {
        (
            worlds(&prepared.problem, method, config.user, config.canary)?,
            None,
        )
    };
    let start = Instant::now();
    let mut transcripts = Vec::with_capacity(2);
    for (w, problem) in worlds.problems.iter().enumerate() {
        let runs: Result<Vec<Transcript>, AuditError> = (0..config.runs)
            .into_par_iter()
            .map(|r| {
                let t = run_trial(
                    problem,
                    &named.topology,
                    method,
                    &worlds.canary,
                    rounds,
                    trial_seed(s.seed, w, r),
                );
                if r % 64 == 63 {
                    bar.inc(64);
                }
                t
            })
            .collect();
        transcripts.push(runs?);
    }
    let trials_per_second = (2 * config.runs) as f64 / start.elapsed().as_secs_f64().max(1e-9);
    let opts = Options {
        delta: s.privacy.delta,
        confidence: config.confidence,
        ..Options::default()
    };
    let local = local_bound(privacy.as_ref().unwrap_or(&prepared.privacy), point, rounds)?;
    let pair = [transcripts[0].as_slice(), transcripts[1].as_slice()];
    // dp-iadmm's noise is Laplace, pp-admm's radial (Gamma radius): not Gaussian.
    let gaussian = !matches!(method, Method::DpIadmm(_) | Method::PpAdmm(_));
    let central = privacy
        .as_ref()
        .unwrap_or(&prepared.privacy)
        .fed_sgd_central_after(point, rounds);
    let views = view_audits(&views, pair, rounds, 1, gaussian, &opts, |view| {
        let bound = match (view, central) {
            (View::Central, Some(figure)) => Bound {
                epsilon: figure.epsilon,
                order: figure.order,
                figure: "central view: the server's models, each round the sum of every user's message (federated DP-SGD, proved; the server trusted with the messages)".into(),
                assumptions: Vec::new(),
                note: None,
            },
            (View::Central, None) => Bound {
                figure: "local view (the released model is computed from the messages): no central bound is printed for the baselines".into(),
                ..local.clone()
            },
            _ => local.clone(),
        };
        Ok(super::record::label(bound, method.kind(), s.privacy.unit))
    })?;
    Ok(PointAudit {
        setting: Setting {
            point: index,
            algorithm: name,
            sigma: method.knob(),
            knob: method.knob_name(),
            clip: method.clip().unwrap_or(f64::INFINITY),
            lambda: point.lambda,
            budget: point.budget,
            topology: named.label.clone(),
            users: named.topology.n(),
            steps: rounds,
            seed: s.seed,
            observer: config.user,
        },
        runs: config.runs,
        canary: worlds.canary,
        contributions: Activity {
            bound_for: rounds,
            mean: rounds as f64,
            mean_clipped: None,
        },
        arrival_rate: 1.0,
        trials_per_second,
        views,
        given_walks: None,
    })
}
