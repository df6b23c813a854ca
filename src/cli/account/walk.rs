//! `account walk`: per-user figures of the private walk on a topology (module doc of
//! [`super`]).

use super::flags::{ConversionArgs, ScenarioArgs};
use super::{emit, fmt_eps};
use crate::cli::documents::{ClosedFormDoc, PassageDoc, UnreachedDoc, UserDoc, WalkDoc, WorstDoc};
use anyhow::{Context, bail};
use clap::{Args, ValueEnum};
use dpwalk_core::topology::Topology;
use dpwalk_privacy::Noise;
use dpwalk_privacy::network::{Charges, Horizon, InverseHitting, paper_closed_form};
use dpwalk_privacy::walk::{
    ADMM_NETWORK_WITHDRAWN, ASSUMPTIONS, Figure, MAX_PAIRWISE_USERS, NETWORK_ONE_CONTRIBUTION,
    Passage, Setup, UserFigures, all_users, pair_epsilons, user_figures,
};
use std::fmt::Write as _;

/// What observers the walk never brings the token to learn.
pub const UNREACHED: &str = "an observer the walk never reaches from a user sees nothing that depends on that user: 0 leakage (not an error)";

/// How the laws were obtained, in words.
fn passage_words(p: &Passage) -> String {
    match PassageDoc::of(p) {
        PassageDoc::Exact {
            inverse_hitting, ..
        } => format!(
            "exact geometric law on the complete graph, E[1/M] = ln(n-1)/(n-2) = {inverse_hitting:.6e}"
        ),
        PassageDoc::Certified {
            steps,
            converged,
            max_gap_over_worst,
            ..
        } => format!(
            "certified laws for every pair (truncation T = {steps}, E[1/M] converged: {converged}, \
             worst-observer E[1/M] within {max_gap_over_worst:.2e} relative)"
        ),
    }
}

/// Which views `account walk` reports.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum WalkView {
    /// An eavesdropper who sees every token (needs no assumption).
    Local,
    /// Every other user, who sees the token when it visits them.
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
    /// The private ADMM step (the daemon's): local figures only.
    Admm,
    /// DP-SGD on the walk: a network figure for one contribution per user.
    DpSgd,
}

#[derive(Debug, Args)]
pub struct WalkArgs {
    #[command(flatten)]
    scenario: ScenarioArgs,
    /// Noise σ > 0 of each step.
    #[arg(long, value_name = "S", allow_negative_numbers = true)]
    sigma: f64,
    /// δ of the (ε, δ) figures, in (0, 1).
    #[arg(
        long,
        value_name = "D",
        default_value_t = dpwalk_core::spec::DEFAULT_DELTA,
        allow_negative_numbers = true
    )]
    delta: f64,
    /// The step the walk runs.
    #[arg(long, value_enum, default_value_t = StepArg::Admm)]
    step: StepArg,
    /// DP-SGD, one contribution: the final model reaches every user H hops after the
    /// contribution (1 = the contribution was the walk's last step). Omitted: the observer's
    /// visits only, no final model.
    #[arg(long, value_name = "H")]
    horizon: Option<u64>,
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

/// One row of the per-user report (see [`UserDoc`]).
fn user_doc(f: &UserFigures, all: bool, unreached: usize, view: WalkView) -> UserDoc {
    let local = view != WalkView::Network;
    let network = view != WalkView::Local && f.network.is_some();
    UserDoc {
        user: (!all).then_some(f.user),
        all,
        contributions: f.contributions,
        local: local.then_some(f.local),
        network: f.network.filter(|_| network),
        worst_observer: f.worst_observer.filter(|_| network),
        inverse_hitting: network.then_some(f.inverse_hitting),
        unreached_observers: network.then_some(unreached),
    }
}

/// Number of observers never reached from each user.
fn unreached_counts(p: &InverseHitting) -> Vec<usize> {
    (0..p.users())
        .map(|i| {
            (0..p.users())
                .filter(|&j| p.get(i, j).is_some_and(|h| !h.reached))
                .count()
        })
        .collect()
}

/// Why no network figure is printed, when none is.
fn no_network_reason(step: StepArg, contributions: u64) -> Option<&'static str> {
    match step {
        StepArg::Admm => Some(ADMM_NETWORK_WITHDRAWN),
        StepArg::DpSgd if contributions > 1 => Some(NETWORK_ONE_CONTRIBUTION),
        StepArg::DpSgd => None,
    }
}

pub(super) fn walk(args: WalkArgs) -> anyhow::Result<()> {
    let mut out = String::new();
    let scenario = args.scenario.load()?;
    let noise = Noise::new(args.sigma, args.scenario.clip).context("invalid --sigma or --clip")?;
    let setup = Setup {
        orders: args.conv.orders()?,
        noise,
        delta: args.delta,
        conversion: args.conv.conversion.conversion(),
    };
    // δ is checked first, so that the message names the flag.
    dpwalk_privacy::rdp::RdpCurve::zero(&setup.orders)
        .to_dp(setup.delta, setup.conversion)
        .context("invalid --delta")?;
    let n = scenario.topology.n();
    let k = scenario.contributions;
    let withheld = no_network_reason(args.step, k);
    if args.pairs && args.view == WalkView::Local {
        bail!("--pairs lists network figures: use it with --view network or both");
    }
    if let (true, Some(reason)) = (args.pairs, withheld) {
        bail!("--pairs lists network figures, and there are none here: {reason}");
    }
    if args.pairs && n > MAX_PAIRWISE_USERS {
        bail!("--pairs prints an n x n matrix: limited to {MAX_PAIRWISE_USERS} users, got {n}");
    }
    if args.horizon == Some(0) {
        bail!("--horizon 0: the final model comes at least one hop after a contribution");
    }
    if args.horizon.is_some() && withheld.is_some() {
        bail!(
            "--horizon is for the network view of one DP-SGD contribution (--step dp-sgd --steps-per-user 1)"
        );
    }
    let passage = if args.view == WalkView::Local || withheld.is_some() {
        None
    } else {
        Some(scenario.passage()?)
    };
    let charges = match args.horizon {
        Some(h) => Charges::from_pairs([(Horizon::Final(h), k)]),
        None => Charges::from_pairs([(Horizon::Open, k)]),
    };
    let (users, unreached): (Vec<UserFigures>, Vec<usize>) = match &passage {
        Some(p @ Passage::Pairs(pairs)) => (
            all_users(&setup, Some(p), &vec![charges.clone(); n])?,
            unreached_counts(&pairs.hitting),
        ),
        // All users alike: no network view, or the complete graph.
        other => (
            vec![user_figures(&setup, other.as_ref(), 0, &charges)?],
            vec![0],
        ),
    };
    let all = !matches!(passage, Some(Passage::Pairs(_)));
    let network = passage.is_some();
    // The first user among equals (`max_by` keeps the last, so scan backwards).
    let worst = users.iter().rev().max_by(|a, b| {
        let e = |f: &UserFigures| f.network.map_or(f64::NEG_INFINITY, |x| x.epsilon_or_inf());
        e(a).total_cmp(&e(b))
    });
    let closed_form = match (&passage, &scenario.topology) {
        (Some(_), Topology::Complete { n }) => {
            let curve = paper_closed_form(&setup.orders, noise, k, *n as u64)?;
            Some(Figure::from(curve.to_dp(setup.delta, setup.conversion)?))
        }
        _ => None,
    };
    let pairs = match (&passage, args.pairs) {
        (Some(p), true) => Some(pair_epsilons(&setup, p, &vec![charges.clone(); n])?),
        _ => None,
    };
    let unreached_pairs: usize = unreached.iter().sum();
    let horizon_note = match args.horizon {
        Some(h) => format!("the final model reaches every user {h} hops after the contribution"),
        None => "the observer's visits only (no final model; give --horizon H to charge it)".into(),
    };
    if args.json {
        let worst = worst.filter(|_| network).map(|w| WorstDoc {
            user: (!all).then_some(w.user),
            observer: w.worst_observer,
            epsilon: w.network.and_then(|f| f.epsilon),
            order: w.network.and_then(|f| f.order),
            inverse_hitting: w.inverse_hitting,
        });
        let v = WalkDoc {
            scenario: scenario.doc(),
            step: match args.step {
                StepArg::Admm => "admm",
                StepArg::DpSgd => "dp-sgd",
            },
            sigma: noise.sigma(),
            clip: noise.clip(),
            delta: setup.delta,
            conversion: args.conv.conversion.name(),
            view: args.view.name(),
            network_withheld: withheld,
            horizon: network.then_some(horizon_note),
            passage: passage.as_ref().map(PassageDoc::of),
            users: users
                .iter()
                .zip(&unreached)
                .map(|(f, &u)| user_doc(f, all, u, args.view))
                .collect(),
            worst,
            paper_closed_form: closed_form.map(|f| ClosedFormDoc {
                label: "paper (Cyffers, Bellet & Basu 2023, Theorem 4): 8 alpha K C^2 ln n / (sigma^2 n); for comparison only, not a bound used here",
                epsilon: f.epsilon,
                order: f.order,
            }),
            unreached: network.then_some(UnreachedDoc {
                pairs: unreached_pairs,
                note: UNREACHED,
            }),
            assumptions: if network { &ASSUMPTIONS } else { &[] },
            pairs: pairs.as_ref().map(|p| p.chunks(n.max(1)).collect()),
        };
        writeln!(out, "{}", serde_json::to_string_pretty(&v)?)?;
        return emit(&out);
    }

    writeln!(out, "Scenario: {}", scenario.describe())?;
    if let Some(note) = scenario.contributions_note() {
        writeln!(out, "  {note}")?;
    }
    writeln!(
        out,
        "Noise sigma = {}, clip C = {}; delta = {:e}, {} conversion, {} orders",
        noise.sigma(),
        noise.clip(),
        setup.delta,
        args.conv.conversion.name(),
        setup.orders.len()
    )?;
    if let Some(p) = &passage {
        writeln!(out, "First passage: {}", passage_words(p))?;
        writeln!(out, "Charged: {horizon_note}")?;
    }
    let show_local = args.view != WalkView::Network;
    let cell = |f: Option<Figure>| match f.map(|f| (f.epsilon, f.order)) {
        Some((Some(e), Some(a))) => format!("{e:.6} ({a})"),
        Some(_) => "no finite guarantee".to_string(),
        None => "-".to_string(),
    };
    if all {
        writeln!(out, "All {n} users are alike (one figure for every user):")?;
        let f = &users[0];
        if show_local {
            writeln!(
                out,
                "  local   (eavesdropper on every token, bounds every observer): {}",
                fmt_eps(f.local.epsilon, f.local.order)
            )?;
        }
        if let Some(nw) = f.network {
            writeln!(
                out,
                "  network (any other user, DP-SGD, one contribution):          {}, E[1/M] = {:.6e}",
                fmt_eps(nw.epsilon, nw.order),
                f.inverse_hitting
            )?;
        }
    } else {
        writeln!(
            out,
            "{:>6} {:>30} {:>30} {:>9} {:>12} {:>9}",
            "user", "local eps (order)", "network eps (order)", "observer", "E[1/M]", "unreached"
        )?;
        for (f, u) in users.iter().zip(&unreached) {
            writeln!(
                out,
                "{:>6} {:>30} {:>30} {:>9} {:>12.6e} {:>9}",
                f.user,
                if show_local {
                    cell(Some(f.local))
                } else {
                    "-".to_string()
                },
                cell(f.network),
                f.worst_observer.map_or("-".to_string(), |j| j.to_string()),
                f.inverse_hitting,
                u
            )?;
        }
    }
    if let Some(f) = closed_form {
        writeln!(
            out,
            "  paper's Theorem 4 closed form 8*alpha*K*C^2*ln(n)/(sigma^2*n), for comparison only: {}",
            fmt_eps(f.epsilon, f.order)
        )?;
    }
    if let (Some(reason), true) = (withheld, args.view != WalkView::Local) {
        writeln!(out, "No network figure: {reason}.")?;
    }
    if network {
        if let Some(w) = worst.filter(|_| !all) {
            writeln!(
                out,
                "Worst case: user {} against observer {}: {}",
                w.user,
                w.worst_observer.map_or("-".to_string(), |j| j.to_string()),
                cell(w.network)
            )?;
        }
        if unreached_pairs == 0 {
            writeln!(
                out,
                "Unreached observers: none (every user's token reaches every other user)."
            )?;
        } else {
            writeln!(
                out,
                "Unreached observers: {unreached_pairs} (user, observer) pairs; {UNREACHED}."
            )?;
        }
        writeln!(out, "Assumptions of the network figures:")?;
        for a in ASSUMPTIONS {
            writeln!(out, "  - {a}")?;
        }
    }
    if let Some(p) = pairs {
        writeln!(
            out,
            "Network eps of every pair (row = user, column = observer; inf = no finite guarantee):"
        )?;
        for row in p.chunks(n.max(1)) {
            let cells: Vec<String> = row.iter().map(|e| format!("{e:.4}")).collect();
            writeln!(out, "  {}", cells.join(" "))?;
        }
    }
    emit(&out)
}
