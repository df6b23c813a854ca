//! `account walk`: per-user figures of the private walk on a topology (module doc of
//! [`super`]).

use super::flags::{ConversionArgs, ScenarioArgs};
use super::{emit, fmt_eps};
use clap::{Args, ValueEnum};
use dpwalk_privacy::report::{Step, WalkQuery, WalkReport, WalkView as View};
use dpwalk_privacy::walk::{ASSUMPTIONS, Figure, PATH_HIDDEN};
use std::fmt::Write as _;

/// The observer column of a user whose figure is the coalition's (every observer beyond its
/// neighbours, `dpwalk_privacy::network::coalition`).
const FAR: &str = "far";

/// Which views `account walk` reports.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum WalkView {
    /// An eavesdropper who sees every token (needs no assumption).
    Local,
    /// Every other user, who sees the token when it visits them, and the final model.
    Network,
    /// Both.
    Both,
}

impl From<WalkView> for View {
    fn from(view: WalkView) -> Self {
        match view {
            WalkView::Local => View::Local,
            WalkView::Network => View::Network,
            WalkView::Both => View::Both,
        }
    }
}

/// The step the walk runs: decides which network figure, if any, is proved.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum StepArg {
    /// The private ADMM step: local figures only.
    Admm,
    /// DP-SGD on the walk (memoryless): the path-hidden network figure.
    DpSgd,
}

impl From<StepArg> for Step {
    fn from(step: StepArg) -> Self {
        match step {
            StepArg::Admm => Step::Admm,
            StepArg::DpSgd => Step::DpSgd,
        }
    }
}

#[derive(Debug, Args)]
pub struct WalkArgs {
    #[command(flatten)]
    scenario: ScenarioArgs,
    /// Noise σ > 0 of each step.
    #[arg(long, value_name = "S", allow_negative_numbers = true)]
    sigma: f64,
    /// The step the walk runs.
    #[arg(long, value_enum, default_value_t = StepArg::Admm)]
    step: StepArg,
    /// Which views to report.
    #[arg(long, value_enum, default_value_t = WalkView::Both)]
    view: WalkView,
    /// Also print the n × n matrix of network ε (row = user, column = observer).
    #[arg(long)]
    pairs: bool,
    #[command(flatten)]
    conv: ConversionArgs,
    /// Print JSON.
    #[arg(long)]
    json: bool,
}

pub(super) fn walk(args: WalkArgs) -> anyhow::Result<()> {
    let mut out = String::new();
    let query = WalkQuery {
        scenario: args.scenario.query()?,
        sigma: args.sigma,
        step: args.step.into(),
        view: args.view.into(),
        pairs: args.pairs,
        conversions: args.conv.conversions(),
    };
    let report = WalkReport::new(&query)?;
    if args.json {
        writeln!(out, "{}", serde_json::to_string_pretty(&report)?)?;
        return emit(&out);
    }

    writeln!(out, "Scenario: {}", report.describe)?;
    for note in &report.notes {
        writeln!(out, "  {note}")?;
    }
    writeln!(
        out,
        "Noise sigma = {}, clip C = {}; delta = {:e}, {} conversion, {} orders",
        report.sigma, report.clip, report.delta, report.conversion, report.order_count
    )?;
    if let Some(charges) = &report.network_charges {
        writeln!(out, "Network view: {charges}")?;
    }
    let cell = |f: Option<Figure>| match f.map(|f| (f.epsilon, f.exact_gaussian_mu, f.order)) {
        Some((Some(e), Some(_), _)) => format!("{e:.6} (exact)"),
        Some((Some(e), None, Some(a))) => format!("{e:.6} ({a})"),
        Some((Some(e), None, None)) => format!("{e:.6}"),
        Some(_) => "no finite guarantee".to_string(),
        None => "-".to_string(),
    };
    let users = &report.users;
    let all = report.all_alike();
    if let (true, Some(u)) = (all, users.first()) {
        writeln!(
            out,
            "All {} users are alike (one figure for every user):",
            report.scenario.users
        )?;
        if let Some(local) = u.local {
            writeln!(
                out,
                "  local                 (eavesdropper on every token, bounds every observer): {}",
                fmt_eps(&local)
            )?;
        }
        if let Some(nw) = u.network {
            writeln!(
                out,
                "  {PATH_HIDDEN} (any other user, DP-SGD):                       {}",
                fmt_eps(&nw)
            )?;
        }
    } else {
        writeln!(
            out,
            "{:>6} {:>30} {:>30} {:>9}",
            "user",
            "local eps (order)",
            format!("{PATH_HIDDEN} eps (order)"),
            "observer"
        )?;
        for u in users {
            writeln!(
                out,
                "{:>6} {:>30} {:>30} {:>9}",
                u.user.map_or("-".to_string(), |i| i.to_string()),
                cell(u.local),
                cell(u.network),
                u.worst_observer.map_or(FAR.to_string(), |j| j.to_string()),
            )?;
        }
        if users.iter().any(|u| u.worst_observer.is_none()) {
            writeln!(
                out,
                "  ({FAR}: the figure bounds every observer beyond the user's neighbours at once, the coalition of them all; its own pair figure may be smaller)"
            )?;
        }
    }
    if let Some(f) = &report.paper_closed_form {
        writeln!(
            out,
            "  paper's Theorem 4 closed form 8*alpha*K*C^2*ln(n)/(sigma^2*n), for comparison only: {}",
            fmt_eps(&f.figure)
        )?;
    }
    if let (Some(reason), true) = (&report.network_withheld, args.view != WalkView::Local) {
        writeln!(out, "No network figure: {reason}.")?;
    }
    if report.network_label.is_some() {
        if let Some(w) = report.worst.as_ref().filter(|_| !all) {
            writeln!(
                out,
                "Worst case: user {} against observer {}: {}",
                w.user.map_or("-".to_string(), |i| i.to_string()),
                w.observer.map_or(FAR.to_string(), |j| j.to_string()),
                cell(Some(w.figure))
            )?;
        }
        writeln!(out, "Assumptions of the network figures:")?;
        for a in ASSUMPTIONS {
            writeln!(out, "  - {a}")?;
        }
        if let Some(pairs) = &report.pairs {
            writeln!(
                out,
                "Network eps of every pair (row = user, column = observer; inf = no finite guarantee; beyond a user's neighbours, the coalition's figure where it is the smaller or the pairs were not computed):"
            )?;
            for row in pairs {
                let cells: Vec<String> = row.iter().map(|e| format!("{e:.4}")).collect();
                writeln!(out, "  {}", cells.join(" "))?;
            }
        }
    }
    emit(&out)
}
