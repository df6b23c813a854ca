//! Which points of a scenario an audit takes, and the walk's algorithm and accountant at one:
//! what the two-world audit ([`super::driver`]) and the one-run mode ([`super::one_run`]) share.

use super::AuditError;
use super::statistic::View;
use crate::algorithm::Mode;
use crate::scenario::{LoadedScenario, Point};
use crate::simulate::Prepared;
use dpwalk_core::step::Algorithm;
use dpwalk_privacy::Noise;

/// The scenario's sweep points and the indices of those to audit (`point`, or all), after
/// checking that the scenario runs walks and that there is a view to audit.
///
/// # Errors
/// [`AuditError`]: not a walk, no view, a point out of range, an invalid sweep.
pub(crate) fn walk_points(
    loaded: &LoadedScenario,
    point: Option<usize>,
    views: &[View],
) -> Result<(Vec<Point>, Vec<usize>), AuditError> {
    let s = loaded.scenario();
    let walks = loaded.points().iter().any(|p| p.method.walk().is_some());
    if walks && s.algorithm.mode != Mode::Decentralized {
        return Err(AuditError::Invalid(format!(
            "the audit runs walks: the scenario's mode is {} (set algorithm.mode = \"decentralized\")",
            s.algorithm.mode.as_str()
        )));
    }
    if views.is_empty() {
        return Err(AuditError::Invalid("no view to audit".into()));
    }
    let points = loaded.points().to_vec();
    let chosen: Vec<usize> = match point {
        Some(p) if p >= points.len() => {
            return Err(AuditError::Invalid(format!(
                "--point {p}: the scenario has {} point(s), 0 to {}",
                points.len(),
                points.len() - 1
            )));
        }
        Some(p) => vec![p],
        None => (0..points.len()).collect(),
    };
    Ok((points, chosen))
}

/// The walk's algorithm at `point` (a baseline is refused: the one-run mode audits walks only).
///
/// # Errors
/// [`AuditError::Invalid`] for a baseline.
pub(crate) fn walk_algorithm(point: &Point) -> Result<Algorithm, AuditError> {
    point.method.walk().copied().ok_or_else(|| {
        AuditError::Invalid(format!(
            "the one-run audit runs dpwalk's walk (algorithm.kind = \"admm\" or \"dp-sgd\"); {} \
             is a baseline: audit it in two worlds (without --one-run)",
            point.method.describe()
        ))
    })
}

/// The accountant's setup for `algorithm`'s noise.
///
/// # Errors
/// [`AuditError`]: no clip, or a noise the accountant refuses.
pub(crate) fn accountant(
    prepared: &Prepared,
    algorithm: &Algorithm,
) -> Result<dpwalk_privacy::walk::Setup, AuditError> {
    let clip = algorithm
        .clip()
        .ok_or_else(|| AuditError::Invalid("no clip: nothing to audit".into()))?;
    let noise = Noise::new(algorithm.sigma(), clip)?;
    Ok(prepared.privacy.setup(noise))
}
