//! The two worlds of an audit: the scenario's data with one **dedicated feature** that no user's
//! data touch (a zero column appended to every row), and user `i`'s data changed by a canary on
//! that feature.
//!
//! Both canaries are a record `(±s·e_f, y)` on the dedicated feature `f`; the worlds differ only
//! in its sign. Every loss here depends on a record through `⟨a, x⟩`, so flipping `a` gives the
//! loss `x ↦ ℓ(−x)`, whose prox at 0 and gradient at 0 are the negatives of the other world's:
//! - **white box**: user `i`'s data are replaced by the canary record alone, with `s` (and `y`
//!   for the squared loss) chosen, by the real prox or gradient, to push the unclipped update
//!   beyond `C`. A walk that starts at user `i` from the zero state then makes the real step's
//!   clipped `Δ` exactly `±C·d` (`d` a unit vector on the dedicated feature: `e_f`, or the `f`
//!   column over the classes for the multinomial loss): the worst pair for the local view, at
//!   distance `2C`;
//! - **black box**: user `i` keeps its data and gains the canary record with `s = 1` (a
//!   unit-norm row, like the paper's data) and a plain label: a planted record the step treats
//!   like any other. Its loss is separable from the user's other records (they do not touch `f`),
//!   so the worlds still differ only along `d`, by less than `2C`.
//!
//! The statistic reads `⟨w, d⟩`, with `d` pointing towards world 1.

use super::AuditError;
use dpwalk_core::data::UserData;
use dpwalk_core::problem::{Loss, Problem, ProxScratch, Regularizer};
use dpwalk_core::step::Algorithm;
use serde::Serialize;

/// Which canary the worlds plant.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum CanaryKind {
    /// User `i`'s contribution forced to `±C·d`.
    WhiteBox,
    /// A record planted among user `i`'s data.
    BlackBox,
}

impl CanaryKind {
    /// The CLI name.
    pub fn as_str(&self) -> &'static str {
        match self {
            CanaryKind::WhiteBox => "white-box",
            CanaryKind::BlackBox => "black-box",
        }
    }
}

/// The canary and the direction the statistic reads.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Canary {
    /// White or black box.
    pub kind: CanaryKind,
    /// The user whose data differ.
    pub user: usize,
    /// `s`: the canary record's value on the dedicated feature (world 1; world 0 has `−s`).
    pub scale: f64,
    /// `y`: its label.
    pub label: f64,
    /// The dedicated feature's index.
    pub feature: usize,
    /// Unit direction `d` (sparse: model coordinate, weight) pointing towards world 1.
    pub direction: Vec<(usize, f64)>,
    /// The norm of the canary's unclipped update from the zero state (`‖prox_{γ f}(0)‖` for
    /// ADMM, `‖∇f(0)‖` for DP-SGD): above `C` means the clip is active. From the trials' start
    /// state for the record-level white box.
    pub unclipped_norm: f64,
    /// At record level: the records, norms and sensitivity the pair is audited against
    /// ([`super::record`]); absent at user level.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub record_level: Option<super::record::RecordCanary>,
}

impl Canary {
    /// `⟨v, d⟩`.
    pub fn project(&self, v: &[f64]) -> f64 {
        self.direction.iter().map(|&(k, c)| c * v[k]).sum()
    }

    /// The direction of the same record planted on appended column `column` of `columns`
    /// ([`plant`]) instead of the one column of [`build`]: the model's coordinates are laid out
    /// class by class, `p + 1` features each here, `p + columns` there.
    pub fn on_column(&self, columns: usize, column: usize) -> Vec<(usize, f64)> {
        let (one, many) = (self.feature + 1, self.feature + columns);
        self.direction
            .iter()
            .map(|&(k, w)| ((k / one) * many + k % one + column, w))
            .collect()
    }
}

/// The problems of worlds 0 and 1, and the canary.
#[derive(Debug)]
pub struct Worlds {
    /// `[world 0, world 1]`.
    pub problems: [Problem; 2],
    /// What differs between them.
    pub canary: Canary,
}

/// `data` with one zero column appended to every row per canary, and each canary user's rows
/// replaced (white box) or extended (black box) by its record: canary `c = (user, value)` of
/// `canaries` gets the record `(value·e_{p+c}, label)` on the `c`-th appended column.
pub fn plant(base: &UserData, kind: CanaryKind, canaries: &[(usize, f64)], label: f64) -> UserData {
    let p = base.data.n_features;
    let q = p + canaries.len();
    let mut column: Vec<Option<(usize, f64)>> = vec![None; base.n_users()];
    for (c, &(user, value)) in canaries.iter().enumerate() {
        column[user] = Some((c, value));
    }
    let mut features = Vec::with_capacity((base.data.rows() + canaries.len()) * q);
    let mut labels = Vec::with_capacity(base.data.rows() + canaries.len());
    let mut offsets = Vec::with_capacity(base.offsets.len());
    offsets.push(0);
    for (i, canary) in column.iter().enumerate() {
        if canary.is_none() || kind == CanaryKind::BlackBox {
            for r in base.range(i) {
                features.extend_from_slice(base.data.row(r));
                features.extend(std::iter::repeat_n(0.0, canaries.len()));
                labels.push(base.data.labels[r]);
            }
        }
        if let Some((c, value)) = *canary {
            let start = features.len();
            features.extend(std::iter::repeat_n(0.0, q));
            features[start + p + c] = value;
            labels.push(label);
        }
        offsets.push(labels.len());
    }
    with_rows(base, (features, labels, q), offsets)
}

/// `base`'s dataset (its label kind) with the rows `features` of `q` columns and `labels`,
/// split among the users at `offsets`.
pub(crate) fn with_rows(
    base: &UserData,
    (features, labels, q): (Vec<f64>, Vec<f64>, usize),
    offsets: Vec<usize>,
) -> UserData {
    let mut data = base.data.clone();
    data.features = features;
    data.labels = labels;
    data.n_features = q;
    UserData { data, offsets }
}

/// `data` with a zero column appended to every row, user `user`'s rows replaced (white box) or
/// extended (black box) by the record `(s·e_f, y)` (`record = (s, y)`).
fn world_data(base: &UserData, kind: CanaryKind, user: usize, record: (f64, f64)) -> UserData {
    plant(base, kind, &[(user, record.0)], record.1)
}

/// The canary record's unclipped update from the zero state, by the real prox (ADMM) or
/// gradient (DP-SGD) of a one-user problem holding only that record.
pub(crate) fn probe(
    loss: Loss,
    reg: Regularizer,
    algorithm: &Algorithm,
    template: &UserData,
    record: (f64, f64),
) -> Result<Vec<f64>, AuditError> {
    let one = world_data(template, CanaryKind::WhiteBox, 0, record);
    // Keep only user 0 (the canary record).
    let rows = one.offsets[1];
    let q = one.data.n_features;
    let mut data = one.data;
    data.features.truncate(rows * q);
    data.labels.truncate(rows);
    let problem = Problem::new(
        loss,
        reg,
        UserData {
            data,
            offsets: vec![0, rows],
        },
    )
    .map_err(|e| AuditError::Invalid(format!("the canary record: {e}")))?;
    let zero = vec![0.0; problem.dim()];
    let mut out = vec![0.0; problem.dim()];
    match algorithm {
        Algorithm::Admm(p) => {
            let prox = problem
                .local_prox(p.gamma())
                .map_err(|e| AuditError::Invalid(format!("the canary's prox: {e}")))?;
            prox.prox(0, &zero, &mut out, &mut ProxScratch::default())
                .map_err(|e| AuditError::Invalid(format!("the canary's prox: {e}")))?;
        }
        Algorithm::Sgd(_) => {
            problem.user_grad(0, &zero, &mut out);
            out.iter_mut().for_each(|g| *g = -*g);
        }
    }
    Ok(out)
}

/// Labels to try for the white-box canary: any real for the squared loss (a larger one pushes
/// harder), the positive class for the logistic loss, class 0 for the multinomial.
pub(crate) fn labels(loss: Loss) -> &'static [f64] {
    match loss {
        Loss::Squared => &[1.0, 1e2, 1e4, 1e6],
        Loss::Logistic => &[1.0],
        Loss::Multinomial { .. } => &[0.0],
    }
}

pub(crate) fn norm(v: &[f64]) -> f64 {
    v.iter().map(|x| x * x).sum::<f64>().sqrt()
}

/// How a white-box canary record is chosen.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Pick {
    /// The largest update from the zero state: the two-world trials start there, so the
    /// contribution is exactly `±C·d` whatever the record.
    Strongest,
    /// A record whose push keeps its sign away from the zero state (one-run canaries contribute
    /// at the walk's state): of those pushing beyond `STEADY·C` from zero, the largest `y/s`.
    /// For the squared loss the push along `d` is about `γ·s·y − z_f` (ADMM) or
    /// `s·(y − s·w_f)` (DP-SGD), which the state flips when `s` is large and `y/s` small; the
    /// logistic and multinomial pushes never change sign.
    Steadiest,
}

/// The factor above `C` a [`Pick::Steadiest`] record must push by from the zero state.
const STEADY: f64 = 16.0;

/// The canary of `user` of `base` (the scenario's users' data): its record, chosen by the real
/// prox or gradient (white box: by `pick`), and the direction the statistic reads.
///
/// # Errors
/// [`AuditError::Invalid`] for a user out of range, an algorithm without a clip, or a white-box
/// canary that cannot reach the clip with this loss and γ (or learning rate).
pub fn design(
    base: &UserData,
    loss: Loss,
    reg: Regularizer,
    algorithm: &Algorithm,
    user: usize,
    kind: CanaryKind,
    pick: Pick,
) -> Result<Canary, AuditError> {
    check_user(base, user)?;
    let clip = algorithm.clip().ok_or_else(|| {
        AuditError::Invalid(
            "the scenario has no clip: there is no bound to audit (set algorithm.clip)".into(),
        )
    })?;
    let (scale, label, update) = match kind {
        CanaryKind::BlackBox => return black_box(base, loss, reg, algorithm, user, 1.0),
        CanaryKind::WhiteBox => {
            // The strongest record of a grid of scales and labels (the logistic loss saturates:
            // too large an `s` pushes less, so the grid spans both sides); with
            // `Pick::Steadiest`, among the records pushing beyond `STEADY·C`, the one with the
            // largest `y/s`.
            let mut best: Option<(f64, f64, Vec<f64>)> = None;
            for &label in labels(loss) {
                for k in -8..=24 {
                    let s = 2f64.powi(k);
                    let update = probe(loss, reg, algorithm, base, (s, label))?;
                    let better = best.as_ref().is_none_or(|b| match pick {
                        Pick::Strongest => norm(&update) > norm(&b.2),
                        Pick::Steadiest => {
                            let steady = |u: &[f64]| norm(u) >= STEADY * clip;
                            match (steady(&update), steady(&b.2)) {
                                (true, true) => label / s > b.1 / b.0,
                                (true, false) => true,
                                (false, true) => false,
                                (false, false) => norm(&update) > norm(&b.2),
                            }
                        }
                    });
                    if norm(&update).is_finite() && better {
                        best = Some((s, label, update));
                    }
                }
            }
            let Some(best) = best else {
                return Err(AuditError::Invalid(
                    "no white-box canary record could be built".into(),
                ));
            };
            if norm(&best.2) <= clip {
                return Err(AuditError::Invalid(format!(
                    "the white-box canary cannot reach the clip C = {clip}: its largest update is {:.3e} \
                     (raise gamma or the learning rate, or audit with --canary black-box)",
                    norm(&best.2)
                )));
            }
            best
        }
    };
    finish(base, kind, user, (scale, label), &update)
}

/// The black-box canary of `user`: the record `(±scale·e_f, y)` planted among its data.
///
/// # Errors
/// As [`design`].
pub(crate) fn black_box(
    base: &UserData,
    loss: Loss,
    reg: Regularizer,
    algorithm: &Algorithm,
    user: usize,
    scale: f64,
) -> Result<Canary, AuditError> {
    check_user(base, user)?;
    let label = labels(loss)[0];
    let update = probe(loss, reg, algorithm, base, (scale, label))?;
    finish(base, CanaryKind::BlackBox, user, (scale, label), &update)
}

/// Refuses a canary user the scenario does not have.
pub(crate) fn check_user(base: &UserData, user: usize) -> Result<(), AuditError> {
    let n = base.n_users();
    if user >= n {
        return Err(AuditError::Invalid(format!(
            "--user {user} is not a user of the scenario (it has {n}: 0 to {})",
            n.saturating_sub(1)
        )));
    }
    Ok(())
}

/// The canary of record `(s, y)` whose update from the zero state is `update`: its direction.
pub(crate) fn finish(
    base: &UserData,
    kind: CanaryKind,
    user: usize,
    (scale, label): (f64, f64),
    update: &[f64],
) -> Result<Canary, AuditError> {
    let unclipped_norm = norm(update);
    if !(unclipped_norm > 0.0 && unclipped_norm.is_finite()) {
        return Err(AuditError::Invalid(format!(
            "the canary record moves the model by {unclipped_norm}: nothing to audit"
        )));
    }
    let direction: Vec<(usize, f64)> = update
        .iter()
        .enumerate()
        .filter(|(_, v)| **v != 0.0)
        .map(|(k, &v)| (k, v / unclipped_norm))
        .collect();
    Ok(Canary {
        kind,
        user,
        scale,
        label,
        feature: base.data.n_features,
        direction,
        unclipped_norm,
        record_level: None,
    })
}

/// Builds the two worlds for `user` of `base` (the scenario's users' data), the white-box record
/// chosen by `pick`.
///
/// # Errors
/// As [`design`].
pub fn build(
    base: &UserData,
    loss: Loss,
    reg: Regularizer,
    algorithm: &Algorithm,
    user: usize,
    kind: CanaryKind,
    pick: Pick,
) -> Result<Worlds, AuditError> {
    let canary = design(base, loss, reg, algorithm, user, kind, pick)?;
    worlds(base, loss, reg, canary)
}

/// Worlds 0 and 1 of `canary` on `base`.
pub(crate) fn worlds(
    base: &UserData,
    loss: Loss,
    reg: Regularizer,
    canary: Canary,
) -> Result<Worlds, AuditError> {
    let (kind, user) = (canary.kind, canary.user);
    let make = |sign: f64| {
        Problem::new(
            loss,
            reg,
            world_data(base, kind, user, (sign * canary.scale, canary.label)),
        )
        .map_err(|e| AuditError::Invalid(format!("the canary's world: {e}")))
    };
    Ok(Worlds {
        problems: [make(-1.0)?, make(1.0)?],
        canary,
    })
}

/// [`build`] for the users of `problem`, with its loss and regularizer: [`Pick::Strongest`]
/// for one contribution from the zero state, [`Pick::Steadiest`] when the canary also
/// contributes from the walk's state (composition).
///
/// # Errors
/// As [`build`].
pub fn for_problem(
    problem: &Problem,
    algorithm: &Algorithm,
    user: usize,
    kind: CanaryKind,
    pick: Pick,
) -> Result<Worlds, AuditError> {
    build(
        problem.data(),
        problem.loss(),
        *problem.regularizer(),
        algorithm,
        user,
        kind,
        pick,
    )
}

#[cfg(test)]
#[allow(clippy::unwrap_used)] // a failed unwrap is a failed test
mod tests {
    use super::*;
    use dpwalk_core::data::{Dataset, LabelKind};
    use dpwalk_core::params::{AdmmParams, SgdParams};

    fn users(kind: LabelKind, labels: [f64; 3]) -> UserData {
        UserData {
            data: Dataset {
                features: vec![1.0, 0.5, -0.3, 0.2, 0.7, -1.0],
                labels: labels.to_vec(),
                n_features: 2,
                label_kind: kind,
            },
            offsets: vec![0, 1, 3],
        }
    }

    #[test]
    fn worlds_add_a_dedicated_feature_and_flip_only_the_canary() {
        let base = users(LabelKind::Real, [1.0, 2.0, 3.0]);
        let alg = Algorithm::Admm(AdmmParams::new(2.0, 0.5, 1.0, Some(0.1)).unwrap());
        let w = build(
            &base,
            Loss::Squared,
            Regularizer::L1 { l1: 0.01 },
            &alg,
            1,
            CanaryKind::BlackBox,
            Pick::Strongest,
        )
        .unwrap();
        let [a, b] = &w.problems;
        assert_eq!(a.dim(), 3);
        assert_eq!(a.data().records(1), 3);
        assert_eq!(a.data().features(1)[6..], [0.0, 0.0, -1.0]);
        assert_eq!(b.data().features(1)[6..], [0.0, 0.0, 1.0]);
        assert_eq!(a.data().features(0), [1.0, 0.5, 0.0]);
        assert_eq!(w.canary.direction, vec![(2, 1.0)]);
        let white = build(
            &base,
            Loss::Squared,
            Regularizer::None,
            &alg,
            0,
            CanaryKind::WhiteBox,
            Pick::Strongest,
        )
        .unwrap();
        assert_eq!(white.problems[1].data().records(0), 1);
        assert!(white.canary.unclipped_norm > 0.1);
    }

    #[test]
    fn white_box_reaches_the_clip_for_every_loss_or_says_why() {
        let logistic = users(LabelKind::Binary, [1.0, -1.0, 1.0]);
        let multi = users(LabelKind::Classes(3), [0.0, 2.0, 1.0]);
        let admm = Algorithm::Admm(AdmmParams::new(5.0, 0.5, 1.0, Some(0.1)).unwrap());
        let sgd = Algorithm::Sgd(SgdParams::new(0.01, 1.0, Some(0.1)).unwrap());
        for alg in [admm, sgd] {
            let w = build(
                &logistic,
                Loss::Logistic,
                Regularizer::None,
                &alg,
                0,
                CanaryKind::WhiteBox,
                Pick::Strongest,
            )
            .unwrap();
            assert_eq!(w.canary.direction, vec![(2, 1.0)]);
            let w = build(
                &multi,
                Loss::Multinomial { classes: 3 },
                Regularizer::None,
                &alg,
                0,
                CanaryKind::WhiteBox,
                Pick::Strongest,
            )
            .unwrap();
            // The dedicated feature's column over the three classes.
            let idx: Vec<usize> = w.canary.direction.iter().map(|d| d.0).collect();
            assert_eq!(idx, vec![2, 5, 8]);
        }
        // A clip no record can reach with a tiny γ on the logistic loss: a clear refusal.
        let weak = Algorithm::Admm(AdmmParams::new(1e-6, 0.5, 1.0, Some(10.0)).unwrap());
        let refuse = |user| {
            build(
                &logistic,
                Loss::Logistic,
                Regularizer::None,
                &weak,
                user,
                CanaryKind::WhiteBox,
                Pick::Strongest,
            )
            .unwrap_err()
        };
        let err = refuse(0);
        assert!(err.to_string().contains("cannot reach the clip"), "{err}");
        let err = refuse(7);
        assert!(err.to_string().contains("--user 7"), "{err}");
    }
}
