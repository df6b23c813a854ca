//! `dpwalk runfile new`: write a run file (`run.toml`) from the members' PeerIds and addresses.
//!
//! The file is built as a [`RunFile`], serialized, and parsed back by [`Run::parse`] (the
//! validation every node applies) before it is written: what this command writes, a node accepts.

use super::eval::ProblemArgs;
use anyhow::{Context, bail, ensure};
use clap::Args;
use dpwalk_core::spec::{BudgetSpec, BudgetViewName, DEFAULT_DELTA, UnitName, UnitSpec};
use dpwalk_core::topology::TopologySpec;
use dpwalk_net::run::{AlgorithmSpec, MemberSpec, Run, RunError, RunFile, StartSpec};
use serde::{Deserialize, Serialize};
use std::collections::HashMap;
use std::path::PathBuf;

#[derive(Debug, clap::Subcommand)]
pub enum RunfileCommand {
    /// Write a run file from a list of members (PeerId=multiaddr) and the run's parameters.
    New(NewArgs),
}

/// `--budget-view`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum BudgetViewArg {
    /// An eavesdropper on every token.
    Local,
    /// Every other member, path hidden (DP-SGD walk, complete graph).
    Network,
}

#[derive(Debug, Args)]
pub struct NewArgs {
    /// A member, in index order: PEERID=MULTIADDR, e.g.
    /// 12D3KooW…=/ip4/10.0.0.1/tcp/4001 (repeat once per member; at least 2).
    #[arg(long = "peer", value_name = "PEERID=ADDR", required = true)]
    peers: Vec<String>,
    /// The run's id (1-64 characters of A-Z a-z 0-9 . _ -).
    #[arg(long, default_value = "dpwalk-run")]
    run_id: String,
    /// The run seed.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// K: total token hops.
    #[arg(long)]
    steps: u64,
    /// Model dimension p (features; classes × features for multinomial) [default: --data's].
    #[arg(long, required_unless_present = "data")]
    dimension: Option<usize>,
    /// The data.json of `dpwalk data prepare`: the dimension, loss and classes of the members'
    /// data (flags given must agree), and with --record-level the record-level inputs.
    #[arg(long, value_name = "DATA_JSON")]
    data: Option<PathBuf>,
    /// Record level from --data: min-records = the fewest records of a node, feature-norm = the
    /// --feature-norm its rows were scaled to (instead of --min-records and --feature-norm).
    #[arg(long, requires = "data", conflicts_with_all = ["min_records", "feature_norm"])]
    record_level: bool,
    #[command(flatten)]
    problem: ProblemArgs,
    /// The walk's step: the private ADMM step, or DP-SGD (with --lr).
    #[arg(long, value_enum, default_value_t = KindArg::Admm)]
    algorithm: KindArg,
    /// γ, the prox step (ADMM) [default: 1.0].
    #[arg(long)]
    gamma: Option<f64>,
    /// λ, the relaxation, in (0, 1] (ADMM) [default: 0.5].
    #[arg(long)]
    lambda: Option<f64>,
    /// The step size (DP-SGD; required there).
    #[arg(long)]
    lr: Option<f64>,
    /// C, the clip bound (bounds every member's privacy loss).
    #[arg(long)]
    clip: f64,
    /// Noise σ; or give --epsilon (and --delta) for a budget every member calibrates σ to.
    #[arg(long, conflicts_with_all = ["epsilon", "delta"])]
    sigma: Option<f64>,
    /// Budget ε (σ is then calibrated to it; instead of --sigma).
    #[arg(long)]
    epsilon: Option<f64>,
    /// Budget δ, with --epsilon [default: 1e-6, as everywhere].
    #[arg(long, requires = "epsilon")]
    delta: Option<f64>,
    /// The view the budget is on: local (an eavesdropper on every token), or network (every
    /// other member, path hidden: the DP-SGD walk on the complete graph only).
    #[arg(long, value_enum, requires = "epsilon", default_value_t = BudgetViewArg::Local)]
    budget_view: BudgetViewArg,
    /// Record level (`[privacy] unit = "record"`): every member holds at least this many records;
    /// with --feature-norm. The budget then protects one record of a member, not its whole data.
    #[arg(long, value_name = "M", requires = "feature_norm")]
    min_records: Option<u64>,
    /// Record level: every record's feature vector has ℓ₂ norm at most this (members check their
    /// data against it at start); with --min-records.
    #[arg(long, value_name = "R", requires = "min_records")]
    feature_norm: Option<f64>,
    /// Topology kind (complete, ring, star, torus, random-regular, erdos-renyi, small-world).
    #[arg(long, default_value = "complete")]
    topology: String,
    /// A parameter of the topology, e.g. --topology-param degree=4 (repeatable).
    #[arg(long = "topology-param", value_name = "KEY=VALUE")]
    topology_params: Vec<String>,
    /// Members (the starter included) that must be up before the walk starts (`[start]`
    /// quorum; default all).
    #[arg(long, value_name = "N")]
    quorum: Option<usize>,
    /// Seconds the starter waits for them before it stops, naming those missing (`[start]`
    /// timeout; default 600).
    #[arg(long, value_name = "SECONDS")]
    start_timeout: Option<u64>,
    /// Where to write the run file.
    #[arg(long)]
    out: PathBuf,
    /// Replace an existing file.
    #[arg(long)]
    force: bool,
    /// Print JSON.
    #[arg(long)]
    json: bool,
}

/// `--algorithm`: the run file's `[algorithm] kind`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
enum KindArg {
    /// The private ADMM step (γ, λ).
    Admm,
    /// DP-SGD on the walk (lr).
    DpSgd,
}

/// The `[algorithm]` table of `args`: each kind's keys, the other kind's refused by name.
fn algorithm(args: &NewArgs) -> anyhow::Result<AlgorithmSpec> {
    match args.algorithm {
        KindArg::Admm => {
            ensure!(
                args.lr.is_none(),
                "--lr is the DP-SGD step size: give --algorithm dp-sgd, or leave --lr out"
            );
            Ok(AlgorithmSpec::admm(
                args.gamma.unwrap_or(1.0),
                args.lambda.unwrap_or(0.5),
                args.clip,
                args.sigma,
            ))
        }
        KindArg::DpSgd => {
            ensure!(
                args.gamma.is_none() && args.lambda.is_none(),
                "--gamma and --lambda are the ADMM step's: --algorithm dp-sgd takes --lr"
            );
            let lr = args
                .lr
                .context("--algorithm dp-sgd needs --lr, the step size")?;
            Ok(AlgorithmSpec::dp_sgd(lr, args.clip, args.sigma))
        }
    }
}

#[derive(Debug, Serialize)]
struct Written {
    path: String,
    run_id: String,
    hash: String,
    members: usize,
}

pub fn run(cmd: RunfileCommand) -> anyhow::Result<()> {
    match cmd {
        RunfileCommand::New(args) => new(args),
    }
}

/// The members from `--peer PEERID=ADDR`, refusing a repeated PeerId or address.
fn members(peers: &[String]) -> anyhow::Result<Vec<MemberSpec>> {
    let mut seen: HashMap<&str, usize> = HashMap::new();
    let mut out = Vec::with_capacity(peers.len());
    for (index, p) in peers.iter().enumerate() {
        let Some((peer, addr)) = p.split_once('=') else {
            bail!("--peer {p:?}: expected PEERID=MULTIADDR, e.g. 12D3KooW…=/ip4/10.0.0.1/tcp/4001");
        };
        let (peer, addr) = (peer.trim(), addr.trim());
        ensure!(
            !peer.is_empty() && !addr.is_empty(),
            "--peer {p:?}: expected PEERID=MULTIADDR"
        );
        for key in [peer, addr] {
            if let Some(first) = seen.insert(key, index) {
                bail!("--peer {p:?}: {key} is already given by member {first}; each member once");
            }
        }
        out.push(MemberSpec {
            index,
            peer_id: peer.to_string(),
            addrs: vec![addr.to_string()],
        });
    }
    Ok(out)
}

fn topology(kind: &str, params: &[String]) -> anyhow::Result<TopologySpec> {
    let mut table = toml::Table::new();
    table.insert("kind".into(), toml::Value::String(kind.to_string()));
    for param in params {
        let (key, raw) = param
            .split_once('=')
            .with_context(|| format!("--topology-param {param:?}: expected KEY=VALUE"))?;
        let value = toml::from_str::<toml::Table>(&format!("v = {}", raw.trim()))
            .ok()
            .and_then(|mut t| t.remove("v"))
            .with_context(|| {
                format!("--topology-param {param:?}: the value is not a number or a TOML value")
            })?;
        table.insert(key.trim().to_string(), value);
    }
    TopologySpec::deserialize(toml::Value::Table(table))
        .with_context(|| format!("--topology {kind}"))
}

/// The run file's figures about the members' data: from the flags, or from `--data` (a
/// `dpwalk data prepare` summary), which the flags given must agree with.
struct Figures {
    dimension: usize,
    problem: dpwalk_core::spec::ProblemSpec,
    /// `(min-records, feature-norm)` at record level.
    record: Option<(u64, f64)>,
}

impl Figures {
    fn of(args: &NewArgs) -> anyhow::Result<Figures> {
        let mut problem = args.problem.spec();
        let flags = args.min_records.zip(args.feature_norm);
        let Some(path) = &args.data else {
            let dimension = args.dimension.context(
                "give --dimension, or --data with the data.json of `dpwalk data prepare`",
            )?;
            return Ok(Figures {
                dimension,
                problem,
                record: flags,
            });
        };
        let data = super::data::DataSummary::read(path)?;
        let from = || format!("{} says", path.display());
        if let Some(d) = args.dimension {
            ensure!(
                d == data.dimension,
                "--dimension {d}, but {} dimension {} (its features{})",
                from(),
                data.dimension,
                data.classes
                    .map_or_else(String::new, |k| format!(" × {k} classes"))
            );
        }
        let loss = data.loss;
        if args.problem.loss.is_some() {
            ensure!(
                problem.loss == loss,
                "--loss {}, but {} the data are for the {} loss (`dpwalk data prepare --loss`)",
                problem.loss.as_str(),
                from(),
                loss.as_str()
            );
        }
        problem.loss = loss;
        if let Some(k) = args.problem.classes {
            ensure!(
                Some(k) == data.classes,
                "--classes {k}, but {} {}",
                from(),
                data.classes
                    .map_or_else(|| "no classes".into(), |c| format!("{c} classes"))
            );
        }
        problem.classes = data.classes;
        let record = if args.record_level {
            let min = data.min_records.with_context(|| {
                format!(
                    "{} has no per-node files: --record-level needs the data.json of `dpwalk data prepare`",
                    path.display()
                )
            })?;
            // The data's own largest norm is not a public bound: only the one chosen for prepare.
            let bound = data.bound.with_context(|| {
                format!(
                    "{} was prepared without --feature-norm: a record-level run states a bound chosen in public, not the data's largest norm; prepare again with --feature-norm R",
                    path.display()
                )
            })?;
            Some((min as u64, bound))
        } else {
            flags
        };
        Ok(Figures {
            dimension: data.dimension,
            problem,
            record,
        })
    }
}

fn new(args: NewArgs) -> anyhow::Result<()> {
    ensure!(
        args.force || !args.out.exists(),
        "{} exists: give another --out, or --force to replace it",
        args.out.display()
    );
    ensure!(
        args.sigma.is_some() || args.epsilon.is_some(),
        "give the noise: --sigma S, or a budget --epsilon E (δ = 1e-6 unless --delta) that every member calibrates σ to"
    );
    let budget = match (args.epsilon, args.delta) {
        (Some(epsilon), delta) => Some(BudgetSpec {
            epsilon,
            delta: delta.unwrap_or(DEFAULT_DELTA),
            view: match args.budget_view {
                BudgetViewArg::Local => BudgetViewName::Local,
                BudgetViewArg::Network => BudgetViewName::Network,
            },
        }),
        _ => None,
    };
    let figures = Figures::of(&args)?;
    let file = RunFile {
        run_id: args.run_id.clone(),
        seed: args.seed,
        steps: args.steps,
        dimension: figures.dimension,
        problem: figures.problem,
        algorithm: algorithm(&args)?,
        budget,
        privacy: figures.record.map(|(min_records, feature_norm)| UnitSpec {
            unit: UnitName::Record,
            min_records: Some(min_records),
            feature_norm: Some(feature_norm),
        }),
        topology: topology(&args.topology, &args.topology_params)?,
        start: (args.quorum.is_some() || args.start_timeout.is_some()).then_some(StartSpec {
            quorum: args.quorum,
            timeout: args.start_timeout,
        }),
        members: members(&args.peers)?,
    };
    let text = toml::to_string(&file).context("serializing the run file")?;
    // The check every node makes; a member's problem names its --peer.
    let run = Run::parse(&text, "the run file").map_err(|e| match &e {
        RunError::Invalid {
            key: Some(key),
            message,
            ..
        } => match key.strip_prefix("members[").and_then(|k| k.split_once(']')) {
            Some((i, field)) => {
                let given = i
                    .parse::<usize>()
                    .ok()
                    .and_then(|i| args.peers.get(i))
                    .map_or("?", String::as_str);
                let field = field.trim_start_matches('.');
                anyhow::anyhow!("--peer {given:?} ({field}): {message}")
            }
            None => anyhow::anyhow!("`{key}`: {message}"),
        },
        _ => anyhow::Error::new(e),
    })?;
    let header = format!(
        "# Written by `dpwalk runfile new`; identical on every member (checked by hash).\n\
         # Members: {} (index order as given by --peer).\n",
        run.members().len()
    );
    std::fs::write(&args.out, format!("{header}{text}"))
        .with_context(|| format!("writing {}", args.out.display()))?;
    let written = Written {
        path: args.out.display().to_string(),
        run_id: run.run_id().to_string(),
        hash: run.hash().to_string(),
        members: run.members().len(),
    };
    if args.json {
        println!("{}", serde_json::to_string_pretty(&written)?);
    } else {
        println!(
            "wrote {} (run {}, {} members, hash {})",
            written.path, written.run_id, written.members, written.hash
        );
    }
    Ok(())
}
