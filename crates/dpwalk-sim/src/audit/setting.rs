//! What was audited at one sweep point (the walk's or a baseline's parameters), shared by the
//! two-world and the one-run results and their CSV rows.

use crate::scenario::Point;
use crate::simulate::NamedTopology;
use dpwalk_core::step::Algorithm;
use serde::Serialize;

/// What was audited at one sweep point: the walk's parameters (shared by both modes' results).
#[derive(Debug, Clone, Serialize)]
pub struct Setting {
    /// Index among the scenario's points.
    pub point: usize,
    /// `admm`, `dp-sgd` or a baseline's kind.
    pub algorithm: &'static str,
    /// σ (after calibration to the point's budget, if any); a baseline's noise knob (σ,
    /// `laplace-scale` b, ν: `crate::method`).
    pub sigma: f64,
    /// The name of the knob `sigma` holds: `sigma`, `laplace-scale` (dp-iadmm's b) or `nu`
    /// (pp-admm's ν).
    pub knob: &'static str,
    /// C (a baseline's clip, `G₁` for dp-iadmm; `+∞` for pp-admm, which has none).
    pub clip: f64,
    /// λ (ADMM).
    pub lambda: f64,
    /// The point's budget, if σ was calibrated to one.
    pub budget: Option<f64>,
    /// The graph.
    pub topology: String,
    /// Users.
    pub users: usize,
    /// Hops of each trial (of the one run); rounds for a baseline.
    pub steps: u64,
    /// The scenario seed the trials' seeds derive from.
    pub seed: u64,
    /// The network observer (for a baseline: the canary user, whose every message is read).
    pub observer: usize,
}

/// The CSV columns of [`Setting::csv`].
pub const SETTING_CSV_HEADER: &str =
    "point,algorithm,sigma,knob,clip,lambda,budget,topology,users,steps";

impl Setting {
    /// The setting of sweep point `index` (`point`, run with `algorithm` on `named`; σ and C
    /// as the accountant's `setup` has them).
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn new(
        index: usize,
        point: &Point,
        algorithm: &Algorithm,
        setup: &dpwalk_privacy::walk::Setup,
        named: &NamedTopology,
        steps: u64,
        seed: u64,
        observer: usize,
    ) -> Self {
        Self {
            point: index,
            algorithm: algorithm_name(algorithm),
            sigma: setup.noise.sigma(),
            knob: "sigma",
            clip: setup.noise.clip(),
            lambda: point.lambda,
            budget: point.budget,
            topology: named.label.clone(),
            users: named.topology.n(),
            steps,
            seed,
            observer,
        }
    }

    /// Its CSV fields (without the seed and observer), [`SETTING_CSV_HEADER`].
    pub fn csv(&self) -> String {
        format!(
            "{},{},{:e},{},{:e},{:e},{},\"{}\",{},{}",
            self.point,
            self.algorithm,
            self.sigma,
            self.knob,
            self.clip,
            self.lambda,
            crate::output::csv_opt(self.budget),
            self.topology,
            self.users,
            self.steps
        )
    }
}

/// The name of a walk's algorithm in the results.
pub(crate) fn algorithm_name(a: &Algorithm) -> &'static str {
    match a {
        Algorithm::Admm(_) => "admm",
        Algorithm::Sgd(_) => "dp-sgd",
    }
}
