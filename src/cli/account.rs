//! `dpwalk account`: privacy figures from the accountant (`dpwalk_privacy`), printed for people or
//! as JSON whose key names are part of the product.
//!
//! - `account gaussian`: the RDP curve and (ε, δ) of K runs of the (Poisson-subsampled) Gaussian
//!   mechanism, the building block every other figure reduces to.
//! - `account walk`: per-user figures of the private walk on a topology ([`dpwalk_privacy::walk`]):
//!   local ε, worst network ε and its observer, `E[1/M]`, validity, the assumptions.
//!
//! This module only parses, loads and prints; every number comes from `dpwalk_privacy`. The
//! scenario flags (graph, clip, contributions) are shared with `dpwalk calibrate`.

use anyhow::{Context, bail};
use clap::{Args, Subcommand, ValueEnum};
use dpwalk_core::rng::{Purpose, derive_seed};
use dpwalk_core::topology::Topology;
use dpwalk_privacy::Noise;
use dpwalk_privacy::mechanism::subsampled_gaussian;
use dpwalk_privacy::network::{HittingOptions, InverseHitting, paper_closed_form};
use dpwalk_privacy::rdp::{Conversion, Orders};
use dpwalk_privacy::walk::{
    ASSUMPTIONS, Figure, Hitting, MAX_PAIRWISE_USERS, Setup, UserFigures, all_users,
    expected_contributions, pair_epsilons, user_figures,
};
use serde_json::{Value, json};
use std::fmt::Write as _;
use std::io::Write as _;
use std::path::PathBuf;

/// What is printed beside every network figure about its validity condition.
pub const VALIDITY: &str = "the network bound (1 + c) * eps_loc(alpha) * E[1/M] holds only at orders where c = (alpha - 1) * 8 alpha C^2 / sigma^2 <= 1; at the other orders (fallback_orders) the local bound is used";

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
        default_value_t = 1e-5,
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
    /// Steps of the whole walk: each user is charged K = ceil(T / n).
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
            (None, Some(t)) => (expected_contributions(t, n), Some(t)),
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
                "--total-steps {t} over {} users: each user contributes T/n times in expectation; \
                 K = ceil(T/n) = {} is charged to every user (conservative for the average user, \
                 not a bound for a user the walk happens to visit more often)",
                self.topology.n(),
                self.contributions
            )
        })
    }

    /// The scenario as JSON.
    pub fn to_json(&self) -> Value {
        json!({
            "topology": self.source,
            "complete": self.is_complete(),
            "users": self.topology.n(),
            "contributions_per_user": self.contributions,
            "total_steps": self.total_steps,
            "contributions_note": self.contributions_note(),
        })
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

    /// `E[1/M]` for the walk (exact on the complete graph, certified bounds elsewhere).
    pub fn hitting(&self) -> anyhow::Result<Hitting> {
        Hitting::for_topology(&self.topology, &HittingOptions::default())
            .context("computing E[1/M] (first-hitting times) for the network view")
    }
}

/// How `E[1/M]` was obtained, as JSON and in words.
pub fn hitting_json(h: &Hitting) -> (Value, String) {
    match h {
        Hitting::Complete { value, .. } => (
            json!({"method": "exact", "formula": "ln(n-1)/(n-2)", "value": value}),
            format!("exact on the complete graph, ln(n-1)/(n-2) = {value:.6e}"),
        ),
        Hitting::Pairs(p) => (
            json!({
                "method": "certified upper bound",
                "steps": p.steps,
                "converged": p.converged,
                "max_rel_gap": p.max_rel_gap,
                "max_gap_over_worst": p.max_gap_over_worst,
            }),
            format!(
                "certified upper bounds for every pair (truncation T = {}, converged: {}, \
                 worst-observer figures within {:.2e} relative)",
                p.steps, p.converged, p.max_gap_over_worst
            ),
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
        let v = json!({
            "orders": orders.as_slice(),
            "rdp": curve.values(),
            "epsilon": figure.epsilon,
            "delta": args.delta,
            "best_order": figure.order,
            "conversion": conversion.name(),
            "noise_multiplier": args.noise_multiplier,
            "sample_rate": args.sample_rate,
            "steps": args.steps,
        });
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
        default_value_t = 1e-5,
        allow_negative_numbers = true
    )]
    delta: f64,
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

/// One row of the per-user report. On the complete graph (or for the local view alone) every
/// user is alike and the report has one row with `user = null`, `all = true`.
fn user_json(f: &UserFigures, all: bool, unreached: usize, view: WalkView) -> Value {
    let local = view != WalkView::Network;
    let network = view != WalkView::Local;
    json!({
        "user": if all { Value::Null } else { json!(f.user) },
        "all": all,
        "contributions": f.contributions,
        "local": if local { json!(f.local) } else { Value::Null },
        "network": if network { json!(f.network) } else { Value::Null },
        "worst_observer": if network { json!(f.worst_observer) } else { Value::Null },
        "inverse_hitting": if network { json!(f.inverse_hitting) } else { Value::Null },
        "fallback_orders": if network { json!(f.fallback_orders) } else { Value::Null },
        "order_is_fallback": network && f.network.order.is_some_and(|a| f.fallback_orders.contains(&a)),
        "unreached_observers": if network { json!(unreached) } else { Value::Null },
    })
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
    if args.pairs && args.view == WalkView::Local {
        bail!("--pairs lists network figures: use it with --view network or both");
    }
    if args.pairs && n > MAX_PAIRWISE_USERS {
        bail!("--pairs prints an n x n matrix: limited to {MAX_PAIRWISE_USERS} users, got {n}");
    }
    let hitting = if args.view == WalkView::Local {
        None
    } else {
        Some(scenario.hitting()?)
    };

    let (users, unreached): (Vec<UserFigures>, Vec<usize>) = match &hitting {
        // All users alike for the local view, and on the complete graph for both views.
        None => {
            let local = dpwalk_privacy::local::local_view(&setup.orders, noise, k)
                .to_dp(setup.delta, setup.conversion)?;
            let f = UserFigures {
                user: 0,
                contributions: k,
                local: local.into(),
                network: Figure {
                    epsilon: None,
                    order: None,
                },
                worst_observer: None,
                inverse_hitting: 0.0,
                fallback_orders: Vec::new(),
            };
            (vec![f], vec![0])
        }
        Some(h @ Hitting::Complete { .. }) => (vec![user_figures(&setup, h, 0, k)?], vec![0]),
        Some(h @ Hitting::Pairs(p)) => (all_users(&setup, h, &vec![k; n])?, unreached_counts(p)),
    };
    let all = !matches!(hitting, Some(Hitting::Pairs(_)));
    // The first user among equals (`max_by` keeps the last, so scan backwards).
    let worst = users.iter().rev().max_by(|a, b| {
        a.network
            .epsilon_or_inf()
            .total_cmp(&b.network.epsilon_or_inf())
    });
    let closed_form = match (&hitting, &scenario.topology) {
        (Some(_), Topology::Complete { n }) => {
            let curve = paper_closed_form(&setup.orders, noise, k, *n as u64)?;
            Some(Figure::from(curve.to_dp(setup.delta, setup.conversion)?))
        }
        _ => None,
    };
    let pairs = if args.pairs {
        match &hitting {
            Some(h) => Some(pair_epsilons(&setup, h, &vec![k; n])?),
            None => None,
        }
    } else {
        None
    };

    let network = hitting.is_some();
    let unreached_pairs: usize = unreached.iter().sum();
    if args.json {
        let hitting_info = hitting.as_ref().map(|h| hitting_json(h).0);
        let worst_json = match (network, worst) {
            (true, Some(w)) => json!({
                "user": if all { Value::Null } else { json!(w.user) },
                "observer": w.worst_observer,
                "epsilon": w.network.epsilon,
                "order": w.network.order,
                "inverse_hitting": w.inverse_hitting,
            }),
            _ => Value::Null,
        };
        let v = json!({
            "scenario": scenario.to_json(),
            "sigma": noise.sigma(),
            "clip": noise.clip(),
            "delta": setup.delta,
            "conversion": args.conv.conversion.name(),
            "view": format!("{:?}", args.view).to_lowercase(),
            "inverse_hitting": hitting_info,
            "users": users
                .iter()
                .zip(&unreached)
                .map(|(f, &u)| user_json(f, all, u, args.view))
                .collect::<Vec<_>>(),
            "worst": worst_json,
            "paper_closed_form": closed_form.map(|f| json!({
                "label": "paper (Cyffers, Bellet & Basu 2023, Theorem 4): 8 alpha K C^2 ln n / (sigma^2 n), without the (1 + c) factor; for comparison only, not used",
                "epsilon": f.epsilon,
                "order": f.order,
            })),
            "validity": if network { json!(VALIDITY) } else { Value::Null },
            "unreached": if network { json!({"pairs": unreached_pairs, "note": UNREACHED}) } else { Value::Null },
            "assumptions": if network { json!(ASSUMPTIONS) } else { json!([]) },
            "pairs": pairs.as_ref().map(|p| p.chunks(n.max(1)).collect::<Vec<_>>()),
        });
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
    if let Some(h) = &hitting {
        writeln!(out, "E[1/M]: {}", hitting_json(h).1)?;
    }
    let show_local = args.view != WalkView::Network;
    if all {
        writeln!(out, "All {n} users are alike (one figure for every user):")?;
        let f = &users[0];
        if show_local {
            writeln!(
                out,
                "  local   (eavesdropper on every token): {}",
                fmt_eps(f.local.epsilon, f.local.order)
            )?;
        }
        if network {
            writeln!(
                out,
                "  network (any other user):              {}, E[1/M] = {:.6e}",
                fmt_eps(f.network.epsilon, f.network.order),
                f.inverse_hitting
            )?;
            if !f.fallback_orders.is_empty() {
                writeln!(
                    out,
                    "  local bound used at {} orders ({} ... {}) where c > 1",
                    f.fallback_orders.len(),
                    f.fallback_orders[0],
                    f.fallback_orders[f.fallback_orders.len() - 1]
                )?;
            }
        }
    } else {
        writeln!(
            out,
            "{:>6} {:>30} {:>30} {:>9} {:>12} {:>9} {:>9}",
            "user",
            "local eps (order)",
            "network eps (order)",
            "observer",
            "E[1/M]",
            "fallback",
            "unreached"
        )?;
        let cell = |f: &Figure| match (f.epsilon, f.order) {
            (Some(e), Some(a)) => format!("{e:.6} ({a})"),
            _ => "no finite guarantee".to_string(),
        };
        for (f, u) in users.iter().zip(&unreached) {
            writeln!(
                out,
                "{:>6} {:>30} {:>30} {:>9} {:>12.6e} {:>9} {:>9}",
                f.user,
                if show_local {
                    cell(&f.local)
                } else {
                    "-".to_string()
                },
                cell(&f.network),
                f.worst_observer.map_or("-".to_string(), |j| j.to_string()),
                f.inverse_hitting,
                f.fallback_orders.len(),
                u
            )?;
        }
    }
    if let Some(f) = closed_form {
        writeln!(
            out,
            "  paper's Theorem 4 closed form 8*alpha*K*C^2*ln(n)/(sigma^2*n), without (1 + c), for comparison only: {}",
            fmt_eps(f.epsilon, f.order)
        )?;
    }
    if network {
        if let Some(w) = worst.filter(|_| !all) {
            writeln!(
                out,
                "Worst case: user {} against observer {}: {}",
                w.user,
                w.worst_observer.map_or("-".to_string(), |j| j.to_string()),
                fmt_eps(w.network.epsilon, w.network.order)
            )?;
        }
        writeln!(out, "Validity: {VALIDITY}.")?;
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
