//! `account walk`: per-user figures of the private walk on a topology (module doc of
//! [`super`]).

use super::flags::{ConversionArgs, ScenarioArgs};
use super::{emit, fmt_eps};
use crate::cli::documents::{ClosedFormDoc, UserDoc, WalkDoc, WorstDoc};
use anyhow::{Context, bail};
use clap::{Args, ValueEnum};
use dpwalk_core::topology::Topology;
use dpwalk_privacy::local::local_view;
use dpwalk_privacy::network::mixture::MAX_PAIR_USERS;
use dpwalk_privacy::network::paper_closed_form;
use dpwalk_privacy::walk::{
    ADMM_NETWORK_WITHDRAWN, ASSUMPTIONS, Figure, NOT_OFFERED_COST, PATH_HIDDEN, PathHidden, Setup,
    path_hidden,
};
use dpwalk_privacy::{Noise, PrivacyError};
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

impl WalkView {
    fn name(self) -> &'static str {
        match self {
            WalkView::Local => "local",
            WalkView::Network => "network",
            WalkView::Both => "both",
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

/// Why no network figure is printed, when none is.
fn no_network_reason(step: StepArg, topology: &Topology) -> Option<&'static str> {
    match step {
        StepArg::Admm => Some(ADMM_NETWORK_WITHDRAWN),
        StepArg::DpSgd
            if !matches!(topology, Topology::Complete { .. }) && topology.n() > MAX_PAIR_USERS =>
        {
            Some(NOT_OFFERED_COST)
        }
        StepArg::DpSgd => None,
    }
}

pub(super) fn walk(args: WalkArgs) -> anyhow::Result<()> {
    let mut out = String::new();
    let scenario = args.scenario.load()?;
    let accounted = args.scenario.accounted()?;
    let noise = Noise::new(args.sigma, accounted.clip).context("invalid --sigma or --clip")?;
    let setup = Setup {
        orders: args.conv.orders()?,
        noise,
        delta: args.conv.delta,
        conversion: args.conv.conversion.conversion(),
    };
    // δ is checked first, so that the message names the flag.
    dpwalk_privacy::rdp::RdpCurve::zero(&setup.orders)
        .to_dp(setup.delta, setup.conversion)
        .context("invalid --delta")?;
    let n = scenario.topology.n();
    let k = scenario.contributions;
    let steps = scenario.walk_steps();
    let reason = no_network_reason(args.step, &scenario.topology);
    if args.pairs && args.view == WalkView::Local {
        bail!("--pairs lists network figures: use it with --view network or both");
    }
    if let (true, Some(reason)) = (args.pairs, reason) {
        bail!("--pairs lists network figures, and there are none here: {reason}");
    }
    let (network, withheld): (Option<PathHidden>, Option<String>) = match (args.view, reason) {
        (WalkView::Local, _) => (None, reason.map(String::from)),
        (_, Some(r)) => (None, Some(r.to_string())),
        _ => match path_hidden(&setup, &scenario.topology, steps, k, args.pairs) {
            Ok(p) => (Some(p), None),
            Err(e @ PrivacyError::NetworkCost { .. }) if !args.pairs => (None, Some(e.to_string())),
            Err(e) => return Err(e).context("computing the path-hidden network view"),
        },
    };
    let local: Figure = local_view(&setup.orders, noise, k)
        .to_dp(setup.delta, setup.conversion)?
        .into();
    let show_local = args.view != WalkView::Network;
    let all = network.as_ref().is_none_or(|p| p.users.len() == 1);
    let users: Vec<UserDoc> = match &network {
        Some(p) if !all => p
            .users
            .iter()
            .enumerate()
            .map(|(i, f)| UserDoc {
                user: Some(i),
                all: false,
                contributions: k,
                local: show_local.then_some(local),
                network: Some(f.figure),
                network_label: Some(PATH_HIDDEN),
                worst_observer: f.observer,
            })
            .collect(),
        other => vec![UserDoc {
            user: None,
            all: true,
            contributions: k,
            local: show_local.then_some(local),
            network: other.as_ref().map(|p| p.users[0].figure),
            network_label: other.as_ref().map(|_| PATH_HIDDEN),
            worst_observer: None,
        }],
    };
    // The first user among equals (`max_by` keeps the last, so scan backwards).
    let worst = network.as_ref().and_then(|p| {
        p.users
            .iter()
            .enumerate()
            .rev()
            .max_by(|a, b| {
                a.1.figure
                    .epsilon_or_inf()
                    .total_cmp(&b.1.figure.epsilon_or_inf())
            })
            .map(|(i, f)| WorstDoc {
                user: (!all).then_some(i),
                observer: f.observer,
                figure: f.figure,
            })
    });
    let closed_form = match (&network, &scenario.topology) {
        (Some(_), Topology::Complete { n }) => {
            let curve = paper_closed_form(&setup.orders, noise, k, *n as u64)?;
            Some(Figure::from(curve.to_dp(setup.delta, setup.conversion)?))
        }
        _ => None,
    };
    let walk_note = format!(
        "a walk of {steps} steps, each user's contributions capped at K = {k} by the budget \
         policy (spent users take noise-only steps); the observer sees the token at its visits \
         and the final model; the path is hidden from it and does not depend on the data"
    );
    if args.json {
        let v = WalkDoc {
            scenario: scenario.doc(),
            step: match args.step {
                StepArg::Admm => "admm",
                StepArg::DpSgd => "dp-sgd",
            },
            sigma: noise.sigma(),
            clip: args.scenario.clip,
            unit: accounted.unit(),
            accounted_clip: noise.clip(),
            delta: setup.delta,
            conversion: args.conv.conversion.name(),
            view: args.view.name(),
            walk_steps: steps,
            network_withheld: withheld.clone(),
            network_label: network.as_ref().map(|_| PATH_HIDDEN),
            network_charges: network.as_ref().map(|_| walk_note.clone()),
            users,
            worst,
            paper_closed_form: closed_form.map(|f| ClosedFormDoc {
                label: "paper (Cyffers, Bellet & Basu 2023, Theorem 4): 8 alpha K C^2 ln n / (sigma^2 n); for comparison only, not a bound used here",
                epsilon: f.epsilon,
                order: f.order,
            }),
            assumptions: if network.is_some() { &ASSUMPTIONS } else { &[] },
            pairs: network
                .as_ref()
                .and_then(|p| p.pairs.as_ref())
                .map(|p| p.chunks(n.max(1)).collect()),
        };
        writeln!(out, "{}", serde_json::to_string_pretty(&v)?)?;
        return emit(&out);
    }

    writeln!(out, "Scenario: {}", scenario.describe())?;
    if let Some(note) = scenario.contributions_note() {
        writeln!(out, "  {note}")?;
    }
    if accounted.record.is_some() {
        writeln!(
            out,
            "  {}",
            accounted.unit_note(args.scenario.clip, args.scenario.gamma())
        )?;
    }
    writeln!(
        out,
        "Noise sigma = {}, clip C = {}; delta = {:e}, {} conversion, {} orders",
        noise.sigma(),
        args.scenario.clip,
        setup.delta,
        args.conv.conversion.name(),
        setup.orders.len()
    )?;
    if network.is_some() {
        writeln!(out, "Network view: {walk_note}")?;
    }
    let cell = |f: Option<Figure>| match f.map(|f| (f.epsilon, f.exact_gaussian_mu, f.order)) {
        Some((Some(e), Some(_), _)) => format!("{e:.6} (exact)"),
        Some((Some(e), None, Some(a))) => format!("{e:.6} ({a})"),
        Some((Some(e), None, None)) => format!("{e:.6}"),
        Some(_) => "no finite guarantee".to_string(),
        None => "-".to_string(),
    };
    if all {
        writeln!(out, "All {n} users are alike (one figure for every user):")?;
        let u = &users[0];
        if show_local {
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
        for u in &users {
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
    if let Some(f) = closed_form {
        writeln!(
            out,
            "  paper's Theorem 4 closed form 8*alpha*K*C^2*ln(n)/(sigma^2*n), for comparison only: {}",
            fmt_eps(&f)
        )?;
    }
    if let (Some(reason), true) = (withheld, args.view != WalkView::Local) {
        writeln!(out, "No network figure: {reason}.")?;
    }
    if let Some(p) = &network {
        if let Some(w) = worst.as_ref().filter(|_| !all) {
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
        if let Some(pairs) = &p.pairs {
            writeln!(
                out,
                "Network eps of every pair (row = user, column = observer; inf = no finite guarantee; beyond a user's neighbours, the coalition's figure where it is the smaller or the pairs were not computed):"
            )?;
            for row in pairs.chunks(n.max(1)) {
                let cells: Vec<String> = row.iter().map(|e| format!("{e:.4}")).collect();
                writeln!(out, "  {}", cells.join(" "))?;
            }
        }
    }
    emit(&out)
}
