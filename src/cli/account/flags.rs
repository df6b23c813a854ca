//! The flags every accounting command shares (orders, conversion) and the walk scenario flags
//! (graph, clip, contributions) that `account walk` and `dpwalk calibrate` share.

use crate::cli::eval::LossArg;
use anyhow::Context;
use clap::{Args, ValueEnum};
use dpwalk_privacy::rdp::{Conversion, Orders};
use dpwalk_privacy::report::{Conversions, QueryError, ScenarioFlags, ScenarioQuery};
use std::path::PathBuf;

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
        self.conversion().name()
    }
}

/// The order grid, the conversion and δ, shared by every accounting command.
#[derive(Debug, Args)]
pub struct ConversionArgs {
    /// δ of the (ε, δ) figures, in (0, 1).
    #[arg(
        long,
        value_name = "D",
        default_value_t = dpwalk_core::spec::DEFAULT_DELTA,
        allow_negative_numbers = true
    )]
    pub delta: f64,
    /// Rényi orders, comma-separated, each > 1 and at most 1048576, increasing
    /// [default: 198 orders, 1.01 … 1.09 by 0.01, 1.1 … 3 by 0.05, 3.1 … 10.9 by 0.1, every integer
    /// 11 … 64, then 72, 80, 96, 112, 128, 160, …, 1024].
    #[arg(
        long,
        value_delimiter = ',',
        allow_negative_numbers = true,
        value_name = "A,B,..."
    )]
    orders: Option<Vec<f64>>,
    /// How RDP is converted to (ε, δ). Gaussian views (the local view, the centralized view,
    /// `account gaussian` without subsampling) are converted exactly whatever this says; it then
    /// applies to the RDP figure printed beside them.
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

    /// The grid, δ and conversion, as the library's queries take them.
    /// (The library checks the orders, after the options it checks first.)
    pub fn conversions(&self) -> Conversions {
        Conversions {
            orders: self.orders.clone(),
            delta: self.delta,
            conversion: self.conversion.conversion(),
        }
    }
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
    /// Run seed, for random topologies that do not fix their own seed [default: 1].
    #[arg(long)]
    seed: Option<u64>,
    #[command(flatten)]
    record: RecordArgs,
}

/// Record level, as a run file's `[privacy] unit = "record"` table: every figure is for one record
/// of a user, accounted with the clip `min(C, γ·G₂/m)` (`dpwalk_privacy::unit::clip_at`).
#[derive(Debug, Args)]
pub struct RecordArgs {
    /// Record level: every user holds at least M records (with --feature-norm).
    #[arg(long, value_name = "M", requires = "feature_norm")]
    min_records: Option<u64>,
    /// Record level: every record's features have ℓ₂ norm at most R (with --min-records).
    #[arg(long, value_name = "R", requires = "min_records")]
    feature_norm: Option<f64>,
    /// Record level: the loss, which bounds a record's gradient by G₂ (logistic: R, multinomial:
    /// √2·R; the squared loss has no bound) [default: logistic].
    #[arg(long, value_enum, requires = "min_records")]
    loss: Option<LossArg>,
    /// Record level: γ of the ADMM step (1 for a DP-SGD walk, whose clip is min(C, G₂/m))
    /// [default: 1].
    #[arg(long, requires = "min_records", allow_negative_numbers = true)]
    gamma: Option<f64>,
}

impl ScenarioArgs {
    /// The scenario query these flags ask for (checked by the library, which says why flags do
    /// not go together, for the CLI and Python alike).
    pub fn query(&self) -> Result<ScenarioQuery, QueryError> {
        ScenarioFlags {
            topology: self.graph.topology.clone(),
            complete: self.graph.complete,
            nodes: self.nodes,
            seed: self.seed,
            clip: self.clip,
            steps_per_user: self.steps.steps_per_user,
            total_steps: self.steps.total_steps,
            min_records: self.record.min_records,
            feature_norm: self.record.feature_norm,
            loss: self.record.loss.map(Into::into),
            gamma: self.record.gamma,
        }
        .query()
    }
}
