//! The flags every accounting command shares (orders, conversion) and the walk scenario flags
//! (graph, clip, contributions) that `account walk` and `dpwalk calibrate` share.

use crate::cli::documents::ScenarioDoc;
use crate::cli::eval::LossArg;
use anyhow::{Context, bail};
use clap::{Args, ValueEnum};
use dpwalk_core::rng::{Purpose, derive_seed};
use dpwalk_core::topology::Topology;
use dpwalk_privacy::budget::PLAN_QUANTILE;
use dpwalk_privacy::rdp::{Conversion, Orders};
use dpwalk_privacy::walk::planned_contributions;
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
    /// √2·R; the squared loss has no bound).
    #[arg(long, value_enum, requires = "min_records", default_value_t = LossArg::Logistic)]
    loss: LossArg,
    /// Record level: γ of the ADMM step (1 for a DP-SGD walk, whose clip is min(C, G₂/m)).
    #[arg(long, requires = "min_records", default_value_t = 1.0)]
    gamma: f64,
}

/// The clip a scenario's figures are accounted with.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Accounted {
    /// `C` at user level, `min(C, γ·G₂/m)` at record level.
    pub clip: f64,
    /// The record-level inputs, when given.
    pub record: Option<dpwalk_core::spec::unit::RecordUnit>,
}

impl Accounted {
    /// `user-level` or `record-level`, as the JSON documents say it.
    pub fn unit(&self) -> &'static str {
        if self.record.is_some() {
            "record-level"
        } else {
            "user-level"
        }
    }

    /// What the figures protect, for people.
    pub fn unit_note(&self, clip: f64, gamma: f64) -> String {
        match self.record {
            None => "user level: one user's whole data".into(),
            Some(r) => format!(
                "record level: one record of a user holding at least m = {} records of feature norm at most R = {} (G2 = {}), accounted with the clip min(C, gamma*G2/m) = min({clip}, {gamma}*{}/{}) = {}",
                r.min_records, r.feature_norm, r.grad_bound, r.grad_bound, r.min_records, self.clip
            ),
        }
    }
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
    /// The clip the figures are accounted with: `--clip`, or at record level `min(C, γ·G₂/m)`.
    pub fn accounted(&self) -> anyhow::Result<Accounted> {
        let (Some(m), Some(r)) = (self.record.min_records, self.record.feature_norm) else {
            return Ok(Accounted {
                clip: self.clip,
                record: None,
            });
        };
        use dpwalk_core::problem::Loss;
        use dpwalk_core::spec::unit::{UnitName, UnitSpec};
        // The gradient bound does not depend on the number of classes.
        let loss = match self.record.loss {
            LossArg::Squared => Loss::Squared,
            LossArg::Logistic => Loss::Logistic,
            LossArg::Multinomial => Loss::Multinomial { classes: 2 },
        };
        let unit = UnitSpec {
            unit: UnitName::Record,
            min_records: Some(m),
            feature_norm: Some(r),
        }
        .check("record level", loss)
        .map_err(|e| anyhow::anyhow!("--min-records/--feature-norm/--loss: {}", e.message()))?
        .context("record level")?;
        let gamma = self.record.gamma;
        if !(gamma > 0.0 && gamma.is_finite()) {
            bail!("--gamma must be > 0, got {gamma}");
        }
        let clip =
            dpwalk_privacy::unit::clip_at(self.clip, gamma, unit.min_records, unit.grad_bound)
                .context("invalid --clip")?;
        Ok(Accounted {
            clip,
            record: Some(unit),
        })
    }

    /// `--gamma` (record level).
    pub fn gamma(&self) -> f64 {
        self.record.gamma
    }

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

    /// The steps of the walk: `--total-steps`, or `n·K` for `--steps-per-user K` (the walk in
    /// which the mean user makes its K contributions).
    pub fn walk_steps(&self) -> u64 {
        self.total_steps
            .unwrap_or_else(|| self.contributions.saturating_mul(self.topology.n() as u64))
    }
}
