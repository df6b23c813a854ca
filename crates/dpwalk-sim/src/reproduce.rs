//! The points of a reproduction panel (a scenario with a `[reproduce]` table, plot 7 of
//! seed-baselines spec §6.4): a paper's headline figure re-run under **that paper's own
//! accounting**, with the common accountant's total beside every point.
//!
//!
//! How each paper's ε becomes the noise actually run, in one place each:
//! - `rk`, `hg`: [`PrivacyContext::paper_knob`] → `dpwalk_privacy::baseline::Baseline::paper_knob`
//!   (\[RK\] `b = Δ₁/ε̄` with the per-record ℓ₁ clip's Δ₁; \[HG\] Theorem 6 with `c₀ = 1`). The
//!   scenario then has no budget: `[privacy] epsilon` would calibrate to the common total instead.
//! - `cbb`: the paper's ε is a central-view budget (the final model only, Theorem 3 with
//!   subsampling for Alg. 3), which dpwalk's own accountant calibrates: the points are the
//!   ordinary `[sweep] epsilon` budgets with `[privacy] view = "central"`, and the paper's ε is
//!   each point's budget.
//!
//! The common total beside each point is `summary.json`'s local figure of that point (the
//! accountant's local view, an eavesdropper on every message, at the scenario's δ, for the knob
//! actually run and the rounds actually planned), never re-derived here. The panel is
//! `reproduce.png` (and `.svg`, and `reproduce.csv` with its caption on a first `#` line and the
//! total in a last column `common_local_epsilon`).

use crate::algorithm::{AlgorithmName, Mode};
use crate::method::{Family, Method};
use crate::privacy::{PrivacyContext, Resolved};
use crate::scenario::{LoadedScenario, Paper, Point, Scenario, ScenarioError};
use dpwalk_core::baselines::dp_iadmm::{DpIadmmParams, RhoSchedule};
use dpwalk_core::baselines::ipadmm::{IpadmmParams, IpadmmSettings};
use dpwalk_core::spec::SpecError;
use serde::Serialize;

/// What a reproduction point is, in `summary.json` (`reproduce`).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PaperPoint {
    /// Whose figure.
    pub paper: Paper,
    /// The paper's own ε the point's noise comes from (`rk`: per iteration; `hg`: the total
    /// at the scenario's δ through Theorem 6; `cbb`: the central-view budget).
    pub epsilon: f64,
    /// `hg`: the inner steps `l` of the point.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub inner_steps: Option<usize>,
    /// The panel's curve the point belongs to.
    pub series: String,
}

/// The points to run, each with its noise and, in a panel, what it reproduces: the scenario's
/// resolved points when it has no `[reproduce]` table or is a `cbb` panel; for `rk` and `hg`,
/// each sweep point × inner-step count × paper ε with the knob of the paper's accounting.
pub fn resolve(
    loaded: &LoadedScenario,
    privacy: &PrivacyContext,
) -> Result<Vec<(Resolved, Option<PaperPoint>)>, ScenarioError> {
    let s = loaded.scenario();
    let Some(r) = &s.reproduce else {
        return loaded
            .points()
            .iter()
            .map(|p| Ok((privacy.resolve(s, p)?, None)))
            .collect();
    };
    let mut out = Vec::new();
    for pending in loaded.points() {
        if r.paper == Paper::Cbb {
            let resolved = privacy.resolve(s, pending)?;
            let point = &resolved.point;
            let paper = point.budget.map(|epsilon| PaperPoint {
                paper: r.paper,
                epsilon,
                inner_steps: None,
                series: series_label(point, &point.method, loaded),
            });
            out.push((resolved, paper));
            continue;
        }
        // `rk` and `hg` panels have no budget (checked above): the paper's accounting sets the
        // knob of the point as given.
        let point = &pending.given().ok_or_else(|| {
            ScenarioError::Invalid(
                "a [reproduce] panel of paper = \"rk\" or \"hg\" takes no budget".into(),
            )
        })?;
        let steps: Vec<Option<usize>> = if r.inner_steps.is_empty() {
            vec![None]
        } else {
            r.inner_steps.iter().copied().map(Some).collect()
        };
        for &l in &steps {
            for &epsilon in &r.epsilon {
                let base = with_inner_steps(point, l)?;
                let series = if r.x_is_inner_steps() {
                    format!("{} (the paper's ε = {epsilon})", point.name.as_str())
                } else {
                    series_label(point, &base.method, loaded)
                };
                let (base, series) = if r.rho_per_epsilon {
                    with_rho_over(s, &base, &series, epsilon)?
                } else {
                    (base, series)
                };
                let knob = privacy.paper_knob(&base, epsilon)?;
                let resolved = Resolved {
                    point: Point {
                        method: base.method.with_knob(knob)?,
                        ..base
                    },
                    policy: None,
                    calibrated_for: None,
                };
                let inner_steps = match resolved.point.method {
                    Method::Ipadmm(p) => Some(p.settings().inner_steps),
                    _ => None,
                };
                out.push((
                    resolved,
                    Some(PaperPoint {
                        paper: r.paper,
                        epsilon,
                        inner_steps,
                        series,
                    }),
                ));
            }
        }
    }
    Ok(out)
}

/// The curve of a point: its kind and the parameters that tell it from others of its kind.
fn series_label(point: &Point, method: &Method, loaded: &LoadedScenario) -> String {
    let s = loaded.scenario();
    let topologies = s.topologies();
    let graph = match (method.family(), s.algorithm.mode) {
        (Family::Federated, _) | (Family::Walk, Mode::Federated | Mode::Centralized) => {
            "server".to_string()
        }
        _ => topologies
            .get(point.topology)
            .map_or_else(String::new, |t| t.kind.name().to_string()),
    };
    format!("{} {} {graph}", point.name.as_str(), method.describe())
}

/// `point` with IPADMM's `l` set to `l` (unchanged for `None`).
fn with_inner_steps(point: &Point, l: Option<usize>) -> Result<Point, ScenarioError> {
    let (Some(l), Method::Ipadmm(p)) = (l, point.method) else {
        return Ok(*point);
    };
    let params = IpadmmParams::new(IpadmmSettings {
        inner_steps: l,
        ..*p.settings()
    })
    .map_err(|e| SpecError::new(&["reproduce", "inner-steps"], e.to_string()))?;
    Ok(Point {
        method: Method::Ipadmm(params),
        ..*point
    })
}

/// `point` (DP-IADMM) with ρ's constant part `rho / ε̄`, the paper's (21) (`c2/ε̄`), and its
/// curve's `label` with the schedule in place of one point's ρ.
fn with_rho_over(
    s: &Scenario,
    point: &Point,
    label: &str,
    epsilon: f64,
) -> Result<(Point, String), ScenarioError> {
    let Method::DpIadmm(p) = point.method else {
        return Ok((*point, label.to_string()));
    };
    let a = s.algorithm_for(AlgorithmName::DpIadmm)?;
    let schedule = format!(
        "ρ=({}·1.2^⌊t/{}⌋ + {}/ε-bar)",
        a.rho_c1,
        a.rho_period,
        a.rho.unwrap_or(f64::NAN)
    );
    let label = label
        .split(' ')
        .map(|w| if w.starts_with("ρ=") { &schedule } else { w })
        .collect::<Vec<_>>()
        .join(" ");
    let bad = |e: &dyn std::fmt::Display| SpecError::new(&["algorithm", "rho"], e.to_string());
    let c2 = a.rho.ok_or_else(|| bad(&"kind = \"dp-iadmm\" needs it"))? / epsilon;
    let rho = RhoSchedule::new(a.rho_c1, c2, a.rho_period).map_err(|e| bad(&e))?;
    let params = DpIadmmParams::new(p.variant(), rho, p.noise(), p.clip()).map_err(|e| bad(&e))?;
    let point = Point {
        method: Method::DpIadmm(params),
        ..*point
    };
    Ok((point, label))
}
