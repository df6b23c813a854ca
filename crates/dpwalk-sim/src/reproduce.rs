//! The reproduction panels (plot 7 of seed-baselines spec §6.4): a paper's headline figure re-run
//! under **that paper's own accounting**, with the common accountant's total beside every point.
//!
//! A scenario with a `[reproduce]` table is one panel:
//!
//! ```toml
//! [reproduce]
//! paper = "rk"                      # rk (Ryu & Kim) | hg (Huang & Gong) | cbb (Cyffers, Bellet & Basu)
//! figure = "Ryu & Kim, Fig. 2a"     # the figure re-run, for the title
//! epsilon = [0.05, 0.1, 1.0]        # the paper's own ε (rk: per iteration; hg: total at [privacy] delta)
//! inner-steps = [1, 5, 10]          # hg only: l; with several, x is l at the one ε given
//! metric = "test-error"             # test-error | train-objective | test-objective
//! rho-per-epsilon = true            # rk only: ρ's constant part is rho / ε̄, the paper's (21)
//! note = "the paper: T = 2·10⁴"     # appended to the caption
//! ```
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
use crate::output::{PointSummary, Summary};
use crate::plot::{LinePlot, PlotError, PointNotes, Series, write_line_plot_with_notes};
use crate::privacy::{PrivacyContext, Resolved};
use crate::scenario::{BudgetView, LoadedScenario, Point, Scenario, ScenarioError};
use dpwalk_core::baselines::dp_iadmm::{DpIadmmParams, RhoSchedule};
use dpwalk_core::baselines::ipadmm::{IpadmmParams, IpadmmSettings};
use dpwalk_core::spec::SpecError;
use serde::{Deserialize, Serialize};
use std::path::Path;

/// Whose figure a panel re-runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Paper {
    /// Ryu & Kim, DP-IADMM (`dp-iadmm`): ε̄ per iteration.
    Rk,
    /// Huang & Gong, IPADMM (`ipadmm`): total ε at δ through Theorem 6.
    Hg,
    /// Cyffers, Bellet & Basu, dpwalk's own (`admm`, federated or centralized): central ε.
    Cbb,
}

impl Paper {
    /// The one kind whose figure the paper's panel re-runs.
    fn kind(self) -> AlgorithmName {
        match self {
            Paper::Rk => AlgorithmName::DpIadmm,
            Paper::Hg => AlgorithmName::Ipadmm,
            Paper::Cbb => AlgorithmName::Admm,
        }
    }
}

/// What the panel's y axis shows (the paper's metric), from the final evaluation.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Metric {
    /// Misclassified share of the test set.
    TestError,
    /// `F(z)`, the training objective ("empirical risk").
    TrainObjective,
    /// Test loss `+ r(z)`.
    TestObjective,
}

impl Metric {
    fn axis(self) -> &'static str {
        match self {
            Metric::TestError => "test error (misclassified share of the test set)",
            Metric::TrainObjective => "empirical risk F(z) (training objective)",
            Metric::TestObjective => "test objective (test loss + r(z))",
        }
    }

    /// The mean and standard deviation over repetitions; NaN where the run has no such figure.
    fn of(self, p: &PointSummary) -> (f64, f64) {
        let nan = f64::NAN;
        match self {
            Metric::TestError => (
                p.final_mean.test_error.unwrap_or(nan),
                p.final_std.test_error.unwrap_or(nan),
            ),
            Metric::TrainObjective => (p.final_mean.train_objective, p.final_std.train_objective),
            Metric::TestObjective => (
                p.final_mean.test_objective.unwrap_or(nan),
                p.final_std.test_objective.unwrap_or(nan),
            ),
        }
    }
}

/// The `[reproduce]` table (module docs).
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub struct ReproduceSpec {
    /// Whose figure.
    pub paper: Paper,
    /// The figure re-run, for the title (e.g. `"Ryu & Kim, Fig. 2a"`).
    pub figure: String,
    /// The paper's own ε per point (`rk`, `hg`); empty for `cbb`, whose ε are `[sweep] epsilon`.
    #[serde(default)]
    pub epsilon: Vec<f64>,
    /// `hg`: the inner steps `l` to run (default: `[algorithm] inner-steps`).
    #[serde(default)]
    pub inner_steps: Vec<usize>,
    /// The y axis.
    pub metric: Metric,
    /// `rk`: ρ's constant part is `[algorithm] rho / ε̄` at each point, the paper's (21).
    #[serde(default)]
    pub rho_per_epsilon: bool,
    /// Appended to the caption (what the re-run does differently from the paper).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub note: String,
}

impl ReproduceSpec {
    /// Whether the x axis is `l` (several inner-step counts at one ε) rather than the paper's ε.
    fn x_is_inner_steps(&self) -> bool {
        self.inner_steps.len() > 1
    }
}

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

/// Checks the `[reproduce]` table against the rest of the scenario (every refusal names its key).
pub(crate) fn check(s: &Scenario) -> Result<(), ScenarioError> {
    let Some(r) = &s.reproduce else {
        return Ok(());
    };
    let at = |key: &str, message: String| -> Result<(), ScenarioError> {
        Err(SpecError::new(&["reproduce", key], message).into())
    };
    let kind = r.paper.kind();
    if let Some(other) = s.kinds().into_iter().find(|&k| k != kind) {
        return at(
            "paper",
            format!(
                "the panel re-runs kind = \"{}\" only, not \"{}\"",
                kind.as_str(),
                other.as_str()
            ),
        );
    }
    let budget = s.privacy.epsilon.is_some() || !s.sweep.epsilon.is_empty();
    if r.paper != Paper::Hg && !r.inner_steps.is_empty() {
        return at("inner-steps", "is for paper = \"hg\" only".into());
    }
    if r.paper != Paper::Rk && r.rho_per_epsilon {
        return at("rho-per-epsilon", "is for paper = \"rk\" only".into());
    }
    if r.inner_steps.contains(&0) {
        return at("inner-steps", "every l must be >= 1".into());
    }
    match r.paper {
        Paper::Cbb => {
            if !r.epsilon.is_empty() {
                return at(
                    "epsilon",
                    "paper = \"cbb\" takes its ε from [sweep] epsilon (central-view budgets that dpwalk's accountant calibrates)".into(),
                );
            }
            if !budget
                || s.algorithm.mode == Mode::Decentralized
                || s.privacy.view != Some(BudgetView::Central)
            {
                return at(
                    "paper",
                    "paper = \"cbb\" needs mode = \"federated\" or \"centralized\", [privacy] view = \"central\" and budgets in [sweep] epsilon".into(),
                );
            }
        }
        Paper::Rk | Paper::Hg => {
            if budget {
                return at(
                    "epsilon",
                    "the paper's ε sets the noise: remove [privacy] epsilon and [sweep] epsilon (they calibrate to the common total)".into(),
                );
            }
            if r.epsilon.is_empty() {
                return at("epsilon", "give the paper's ε of each point".into());
            }
            if let Some(bad) = r.epsilon.iter().find(|e| !(**e > 0.0 && e.is_finite())) {
                return at("epsilon", format!("must be > 0 and finite, got {bad}"));
            }
            if r.x_is_inner_steps() && r.epsilon.len() != 1 {
                return at(
                    "epsilon",
                    "with several inner-steps the x axis is l: give one ε".into(),
                );
            }
        }
    }
    Ok(())
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
    for point in loaded.points() {
        if r.paper == Paper::Cbb {
            let resolved = privacy.resolve(s, point)?;
            let paper = point.budget.map(|epsilon| PaperPoint {
                paper: r.paper,
                epsilon,
                inner_steps: None,
                series: series_label(point, &resolved.point.method, loaded),
            });
            out.push((resolved, paper));
            continue;
        }
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
                    point: base.with_knob(knob)?,
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

/// Writes the panel (`reproduce.png`, `.svg`, `.csv`) into `dir` when the scenario has a
/// `[reproduce]` table.
pub fn write_panel(
    dir: &Path,
    loaded: &LoadedScenario,
    summary: &Summary,
) -> Result<(), PlotError> {
    let s = loaded.scenario();
    let Some(r) = &s.reproduce else {
        return Ok(());
    };
    let by_l = r.x_is_inner_steps();
    // Per curve: (x, y, sd, common total).
    let mut groups: Vec<(String, Vec<[f64; 4]>)> = Vec::new();
    for p in &summary.points {
        let Some(paper) = &p.reproduce else { continue };
        let x = match (by_l, paper.inner_steps) {
            (true, Some(l)) => l as f64,
            _ => paper.epsilon,
        };
        let (y, sd) = r.metric.of(p);
        let total = p
            .privacy
            .accounting
            .local
            .as_ref()
            .and_then(|l| l.figure.epsilon)
            .unwrap_or(f64::NAN);
        let row = [x, y, sd, total];
        match groups.iter_mut().find(|(k, _)| *k == paper.series) {
            Some((_, rows)) => rows.push(row),
            None => groups.push((paper.series.clone(), vec![row])),
        }
    }
    let mut series = Vec::new();
    let mut totals = Vec::new();
    for (label, mut rows) in groups {
        rows.sort_by(|a, b| a[0].total_cmp(&b[0]));
        series.push(Series {
            label,
            points: rows.iter().map(|r| (r[0], r[1])).collect(),
            spread: Some(rows.iter().map(|r| r[2]).collect()),
        });
        totals.push(rows.iter().map(|r| r[3]).collect());
    }
    let delta = s.privacy.delta;
    let x_label = match (r.paper, by_l) {
        (_, true) => format!(
            "inner steps l (at the paper's ε = {}, δ = {delta:e})",
            r.epsilon.first().copied().unwrap_or(f64::NAN)
        ),
        // ε̄'s combining macron is drawn off its letter by the plot's font: spelled out.
        (Paper::Rk, false) => {
            "the paper's per-iteration ε-bar (Laplace scale b = Δ₁/ε-bar)".to_string()
        }
        (Paper::Hg, false) => {
            format!("the paper's ε (δ = {delta:e}; σ = √(2·t·l·ln(1.25/δ))/ε, c₀ = 1)")
        }
        (Paper::Cbb, false) => format!(
            "the paper's central ε (final model only, δ = {delta:e}; σ calibrated by dpwalk's central accountant)"
        ),
    };
    let plot = LinePlot {
        title: format!(
            "{}: {} re-run under the paper's own accounting",
            loaded.name(),
            r.figure
        ),
        x_label,
        y_label: r.metric.axis().into(),
        log_x: !by_l,
        // Objectives span decades at small ε (the Lasso's); an error rate is read linearly.
        log_y: r.metric != Metric::TestError,
        series,
    };
    let rounds = match (r.paper, s.algorithm.mode) {
        (Paper::Cbb, Mode::Federated) => format!(
            "T = {} rounds of {} sampled users of {}",
            s.steps,
            s.algorithm.blocks_per_round.unwrap_or(s.users),
            s.users
        ),
        (Paper::Cbb, _) => format!("T = {} rounds of all {} users", s.steps, s.users),
        _ => format!(
            "T = {} rounds of all {} users (the noise is planned for T)",
            s.rounds(),
            s.users
        ),
    };
    let mut caption = format!(
        "beside each point: the common accountant's total for the noise run, local view (an eavesdropper on every message), ε at δ = {delta:e}; {rounds}; mean ± sd over {} repetitions",
        s.repetitions
    );
    if !r.note.is_empty() {
        caption.push_str("; ");
        caption.push_str(&r.note);
    }
    let notes = PointNotes {
        column: "common_local_epsilon".into(),
        prefix: "local ε = ".into(),
        values: totals,
    };
    write_line_plot_with_notes(&plot, Some(&caption), &notes, &dir.join("reproduce"))
}
