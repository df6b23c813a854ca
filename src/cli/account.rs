//! `dpwalk account`: privacy figures from the accountant (`dpwalk_privacy`), printed for people or
//! as JSON whose key names are part of the product.
//!
//! - `account gaussian`: the RDP curve and (ε, δ) of K runs of the (Poisson-subsampled) Gaussian
//!   mechanism, the building block every other figure reduces to.
//! - `account walk`: per-user figures of the private walk on a topology ([`dpwalk_privacy::walk`]):
//!   local ε for every step; for a DP-SGD walk with one contribution per user, the network ε
//!   against the worst observer, its observer, `E[1/M]` and the assumptions. No network figure
//!   is printed where none is proved (ADMM; several contributions), and the output says why.
//!
//! This module only parses, loads and prints; every number comes from `dpwalk_privacy`. The
//! scenario flags (graph, clip, contributions) are shared with `dpwalk calibrate`.

use crate::cli::documents::{
    ClosedFormDoc, GaussianDoc, PassageDoc, ScenarioDoc, UnreachedDoc, UserDoc, WalkDoc, WorstDoc,
};
use anyhow::{Context, bail};
use clap::{Args, Subcommand, ValueEnum};
use dpwalk_core::rng::{Purpose, derive_seed};
use dpwalk_core::topology::Topology;
use dpwalk_privacy::Noise;
use dpwalk_privacy::budget::PLAN_QUANTILE;
use dpwalk_privacy::mechanism::subsampled_gaussian;
use dpwalk_privacy::network::{
    Charges, HittingOptions, Horizon, InverseHitting, paper_closed_form,
};
use dpwalk_privacy::rdp::{Conversion, Orders};
use dpwalk_privacy::walk::{
    ADMM_NETWORK_WITHDRAWN, ASSUMPTIONS, Figure, MAX_PAIRWISE_USERS, NETWORK_ONE_CONTRIBUTION,
    Passage, Setup, UserFigures, all_users, pair_epsilons, planned_contributions, user_figures,
};
use std::fmt::Write as _;
use std::io::Write as _;
use std::path::PathBuf;

/// What observers the walk never brings the token to learn.
pub const UNREACHED: &str = "an observer the walk never reaches from a user sees nothing that depends on that user: 0 leakage (not an error)";

#[derive(Debug, Subcommand)]
pub enum AccountCommand {
    /// RDP and (ε, δ) of K runs of the Gaussian mechanism, optionally Poisson-subsampled.
    Gaussian(GaussianArgs),
    /// Per-user privacy of the random walk on a topology: local and network views.
    Walk(WalkArgs),
}

/// RDP → (ε, δ) statement (see `dpwalk_privacy::rdp`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ConversionArg {
    /// Balle et al. 2020 / Canonne, Kamath & Steinke 2020: smaller at every order.
    Tight,
    /// Mironov 2017, Prop. 3: ε(α) + ln(1/δ)/(α − 1).
    Classic,
}

impl ConversionArg {
    pub fn conversion(self) -> Conversion {
        match self {
            ConversionArg::Tight => Conversion::Tight,
            ConversionArg::Classic => Conversion::Classic,
        }
    }

    /// The name printed in the output (the flag's value).
    pub fn name(self) -> &'static str {
        match self {
            ConversionArg::Tight => "tight",
            ConversionArg::Classic => "classic",
        }
    }
}

/// The order grid and the conversion, shared by every accounting command.
#[derive(Debug, Args)]
pub struct ConversionArgs {
    /// Rényi orders, comma-separated, each > 1, increasing
    /// [default: 198 orders, 1.01 … 1.09 by 0.01, 1.1 … 3 by 0.05, 3.1 … 10.9 by 0.1, every integer
    /// 11 … 64, then 72, 80, 96, 112, 128, 160, …, 1024].
    #[arg(
        long,
        value_delimiter = ',',
        allow_negative_numbers = true,
        value_name = "A,B,..."
    )]
    orders: Option<Vec<f64>>,
    /// How RDP is converted to (ε, δ).
    #[arg(long, value_enum, default_value_t = ConversionArg::Tight)]
    pub conversion: ConversionArg,
}

impl ConversionArgs {
    /// The validated grid.
    pub fn orders(&self) -> anyhow::Result<Orders> {
        match &self.orders {
            None => Ok(Orders::default_grid()),
            Some(v) => Orders::new(v).context("invalid --orders"),
        }
    }
}

#[derive(Debug, Args)]
pub struct GaussianArgs {
    /// Noise standard deviation divided by the L2 sensitivity (z > 0).
    #[arg(long, value_name = "Z", allow_negative_numbers = true)]
    noise_multiplier: f64,
    /// Poisson sampling rate q ∈ (0, 1]; 1 is no subsampling.
    #[arg(
        long,
        value_name = "Q",
        default_value_t = 1.0,
        allow_negative_numbers = true
    )]
    sample_rate: f64,
    /// Number of composed runs.
    #[arg(long, value_name = "K", default_value_t = 1)]
    steps: u64,
    /// δ of the (ε, δ) guarantee, in (0, 1).
    #[arg(
        long,
        value_name = "D",
        default_value_t = dpwalk_core::spec::DEFAULT_DELTA,
        allow_negative_numbers = true
    )]
    delta: f64,
    #[command(flatten)]
    conv: ConversionArgs,
    /// Print JSON.
    #[arg(long)]
    json: bool,
}

/// Which graph the walk runs on: a file or the complete graph.
#[derive(Debug, Args)]
#[group(required = true, multiple = false)]
pub struct GraphArgs {
    /// Topology file (TOML), e.g. topologies/ring-100.toml.
    #[arg(long, value_name = "FILE")]
    topology: Option<PathBuf>,
    /// The complete graph on N users (exact E[1/M], instant for any N).
    #[arg(long, value_name = "N")]
    complete: Option<usize>,
}

/// How many contributions each user makes.
#[derive(Debug, Args)]
#[group(required = true, multiple = false)]
pub struct StepsArgs {
    /// Contributions (steps) of each user.
    #[arg(long, value_name = "K")]
    steps_per_user: Option<u64>,
    /// Steps of the whole walk: each user is charged the 0.99 quantile of its visit count.
    #[arg(long, value_name = "T")]
    total_steps: Option<u64>,
}

/// The scenario flags shared by `account walk` and `calibrate`.
#[derive(Debug, Args)]
pub struct ScenarioArgs {
    #[command(flatten)]
    graph: GraphArgs,
    /// Number of nodes, for topology files that leave it to the caller.
    #[arg(long, value_name = "N")]
    nodes: Option<usize>,
    /// Clipping bound C > 0 of each contribution.
    #[arg(long, value_name = "C", allow_negative_numbers = true)]
    pub clip: f64,
    #[command(flatten)]
    steps: StepsArgs,
    /// Run seed, for random topologies that do not fix their own seed.
    #[arg(long, default_value_t = 1)]
    seed: u64,
}

/// A loaded scenario: the topology and each user's number of contributions.
#[derive(Debug)]
pub struct Scenario {
    /// The walk's graph.
    pub topology: Topology,
    /// The file, or "complete".
    pub source: String,
    /// Contributions charged to every user.
    pub contributions: u64,
    /// `--total-steps`, when K was derived from it.
    pub total_steps: Option<u64>,
}

impl ScenarioArgs {
    /// Loads the topology and derives K.
    pub fn load(&self) -> anyhow::Result<Scenario> {
        let (topology, source) = match (&self.graph.topology, self.graph.complete) {
            (Some(path), _) => {
                let seed = derive_seed(self.seed, Purpose::Topology, 0);
                let t = Topology::load(path, self.nodes, seed)
                    .with_context(|| format!("loading topology {}", path.display()))?;
                (t, path.display().to_string())
            }
            (None, Some(n)) => {
                if n < 2 {
                    bail!("--complete {n}: a walk needs at least 2 users");
                }
                (Topology::Complete { n }, "complete".to_string())
            }
            (None, None) => bail!("give --topology FILE or --complete N"),
        };
        let n = topology.n() as u64;
        let (contributions, total_steps) = match (self.steps.steps_per_user, self.steps.total_steps)
        {
            (Some(k), _) => (k, None),
            (None, Some(t)) => (
                planned_contributions(t, 1.0 / n as f64, PLAN_QUANTILE),
                Some(t),
            ),
            (None, None) => bail!("give --steps-per-user K or --total-steps T"),
        };
        Ok(Scenario {
            topology,
            source,
            contributions,
            total_steps,
        })
    }
}

impl Scenario {
    /// Whether the walk is on the complete graph (all users alike, exact `E[1/M]`).
    pub fn is_complete(&self) -> bool {
        matches!(self.topology, Topology::Complete { .. })
    }

    /// How K was obtained, in words (None when given directly).
    pub fn contributions_note(&self) -> Option<String> {
        self.total_steps.map(|t| {
            format!(
                "--total-steps {t} over {} users: K = {} is the {PLAN_QUANTILE} quantile of a \
                 user's visit count (Binomial(T, 1/n)), charged to every user; a run's budget \
                 policy stops a user visited more often at its budget",
                self.topology.n(),
                self.contributions
            )
        })
    }

    /// The scenario as its JSON document.
    pub fn doc(&self) -> ScenarioDoc {
        ScenarioDoc {
            topology: self.source.clone(),
            complete: self.is_complete(),
            users: self.topology.n(),
            contributions_per_user: self.contributions,
            total_steps: self.total_steps,
            contributions_note: self.contributions_note(),
        }
    }

    /// One line for people.
    pub fn describe(&self) -> String {
        let graph = if self.is_complete() {
            format!("complete graph of {} users", self.topology.n())
        } else {
            format!("{} ({} users)", self.source, self.topology.n())
        };
        format!("{graph}, K = {} contributions per user", self.contributions)
    }

    /// The walk's first-passage laws (exact on the complete graph, certified elsewhere).
    pub fn passage(&self) -> anyhow::Result<Passage> {
        Passage::for_topology(&self.topology, &HittingOptions::default())
            .context("computing the walk's first-passage laws for the network view")
    }
}

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

pub fn run(cmd: AccountCommand) -> anyhow::Result<()> {
    match cmd {
        AccountCommand::Gaussian(args) => gaussian(args),
        AccountCommand::Walk(args) => walk(args),
    }
}

/// Writes a command's output to stdout at once. A closed pipe (`dpwalk ... | head`) is not an
/// error: the reader has what it wanted.
pub fn emit(text: &str) -> anyhow::Result<()> {
    let mut stdout = std::io::stdout().lock();
    match stdout
        .write_all(text.as_bytes())
        .and_then(|()| stdout.flush())
    {
        Err(e) if e.kind() != std::io::ErrorKind::BrokenPipe => Err(e).context("writing to stdout"),
        _ => Ok(()),
    }
}

/// ε for people: a number, or "no finite guarantee".
pub fn fmt_eps(epsilon: Option<f64>, order: Option<f64>) -> String {
    match (epsilon, order) {
        (Some(e), Some(a)) => format!("eps = {e:.6} (order {a})"),
        _ => "no finite guarantee".to_string(),
    }
}

fn gaussian(args: GaussianArgs) -> anyhow::Result<()> {
    let mut out = String::new();
    let orders = args.conv.orders()?;
    let conversion = args.conv.conversion;
    let curve = subsampled_gaussian(&orders, args.sample_rate, args.noise_multiplier)
        .context("invalid --noise-multiplier or --sample-rate")?
        .repeat(args.steps);
    let bound = curve
        .to_dp(args.delta, conversion.conversion())
        .context("invalid --delta")?;
    let figure = Figure::from(bound);
    if args.json {
        let v = GaussianDoc {
            orders: orders.as_slice(),
            rdp: curve.values(),
            epsilon: figure.epsilon,
            delta: args.delta,
            best_order: figure.order,
            conversion: conversion.name(),
            noise_multiplier: args.noise_multiplier,
            sample_rate: args.sample_rate,
            steps: args.steps,
        };
        writeln!(out, "{}", serde_json::to_string_pretty(&v)?)?;
        return emit(&out);
    }
    let sampling = if args.sample_rate < 1.0 {
        format!("Poisson-subsampled at q = {:?}", args.sample_rate)
    } else {
        "no subsampling".to_string()
    };
    writeln!(
        out,
        // `{:?}`: the shortest exact form, with an exponent for huge or tiny values.
        "Gaussian mechanism, noise multiplier z = {:?}, {sampling}, composed {} times",
        args.noise_multiplier, args.steps
    )?;
    writeln!(
        out,
        "({}, {:e})-DP: {}, {} conversion",
        figure
            .epsilon
            .map_or("inf".to_string(), |e| format!("{e:.6}")),
        args.delta,
        fmt_eps(figure.epsilon, figure.order),
        conversion.name()
    )?;
    writeln!(out, "{:>8}  {:>14}", "order", "RDP")?;
    for (a, r) in curve.iter() {
        writeln!(out, "{a:>8}  {r:>14.6e}")?;
    }
    emit(&out)
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

fn walk(args: WalkArgs) -> anyhow::Result<()> {
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
