//! `dpwalk data`: a CSV checked for a loss and made ready for a run's members (issue 26, item 4).
//!
//! `check` reads a CSV the way a node reads its data for that loss (the same reader: a ragged
//! row, a NaN or infinite feature, a label the loss cannot take are refused with their line,
//! counted from 1) and reports what a run file needs of it: the model `dimension` (features, or
//! classes × features for the multinomial loss), the rows, and the largest feature norm (what a
//! record-level run's `feature-norm` must bound). `prepare` also writes, into a directory:
//! - `node-<i>.csv` for each of `--nodes` members: the rows shuffled (ChaCha12 from `--seed`) and
//!   dealt into near-equal parts, as a node's `[data] source = "csv"` reads them (features, then
//!   the label as the loss takes it: `±1` logistic, `0..k−1` multinomial; no header), every
//!   number in its shortest exact decimal form, so what a node reads back is what was written;
//! - `test.csv`, the held-out `--test-fraction` in the same form, for `dpwalk eval`;
//! - `data.json` ([`DataSummary`]): the figures, which `dpwalk runfile new --data` reads; its
//!   `--record-level` takes `feature-norm` from the `--feature-norm` given here only: a
//!   record-level bound must be chosen in public, and the data's own largest norm is not.
//!
//! `--format adult` reads UCI Adult as distributed instead, with the seed papers' preprocessing.
//!
//! With `--feature-norm R`, every row longer than `R` is scaled to norm `R` before it is written
//! (a map of each record alone, so it needs no look at the other records, unlike a rescaling by
//! the largest norm), and the summary's `feature-norm` is then at most `R`.

use anyhow::{Context, bail, ensure};
use clap::{Args, Subcommand};
use dpwalk_core::data::csv::CsvOptions;
use dpwalk_core::data::labels::LabelRule;
use dpwalk_core::data::{Dataset, partition, split};
use dpwalk_core::rng::node_rng;
use dpwalk_core::spec::LossName;
use dpwalk_core::spec::unit::{row_norm as norm, scale_to_norm};
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};

use super::eval::LossArg;

#[derive(Debug, Subcommand)]
pub enum DataCommand {
    /// Check a CSV for a loss and print the dimension, rows and largest feature norm.
    Check(CheckArgs),
    /// Also write per-node files, a test file and data.json for `runfile new --data`.
    Prepare(PrepareArgs),
}

/// What the file is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
enum Format {
    /// Numbers separated by --delimiter, the label in the last column (or --label-column).
    Csv,
    /// UCI Adult as distributed (adult.data, adult.test): rows with a missing value dropped,
    /// one-hot encoded, columns scaled to max-abs 1 and rows to norm at most 1, labels ±1 (the
    /// seed papers' preprocessing); for --loss logistic.
    Adult,
}

/// The file and how to read it.
#[derive(Debug, Args)]
pub struct Source {
    /// The CSV (one record per line; `.gz` is read too).
    file: PathBuf,
    /// What the file is.
    #[arg(long, value_enum, default_value_t = Format::Csv)]
    format: Format,
    /// The loss the data are for: it decides what a label may be.
    #[arg(long, value_enum)]
    loss: LossArg,
    /// The first line names the columns.
    #[arg(long)]
    header: bool,
    /// The label column, by header name (default: the last column).
    #[arg(long, requires = "header")]
    label_column: Option<String>,
    /// The field separator.
    #[arg(long, default_value_t = ',')]
    delimiter: char,
    /// Logistic loss: the label value that becomes +1 (default: the larger of the two values).
    #[arg(long)]
    positive_label: Option<String>,
}

#[derive(Debug, Args)]
pub struct CheckArgs {
    #[command(flatten)]
    source: Source,
    /// Print JSON (the fields of data.json that do not depend on a split).
    #[arg(long)]
    json: bool,
}

#[derive(Debug, Args)]
pub struct PrepareArgs {
    #[command(flatten)]
    source: Source,
    /// Members of the run: one file each.
    #[arg(long)]
    nodes: usize,
    /// The directory to write into (created; existing files in it need --force).
    #[arg(long)]
    out: PathBuf,
    /// Scale every row longer than this to this norm.
    #[arg(long, value_name = "R")]
    feature_norm: Option<f64>,
    /// Share of the rows held out as test.csv.
    #[arg(long, default_value_t = 0.2)]
    test_fraction: f64,
    /// Seed of the shuffle.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Replace the files of an earlier `prepare` in --out.
    #[arg(long)]
    force: bool,
    /// Print data.json.
    #[arg(long)]
    json: bool,
}

/// What a run file needs of the data (`data.json`; `check --json` prints the same fields,
/// without the split).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub struct DataSummary {
    /// The file it came from.
    pub source: String,
    /// The loss the labels were read for.
    pub loss: LossName,
    /// Classes (multinomial only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub classes: Option<usize>,
    /// Features per record.
    pub features: usize,
    /// The run file's `dimension`: features, or classes × features.
    pub dimension: usize,
    /// Rows read.
    pub rows: usize,
    /// The largest ℓ₂ norm of a row's features (after scaling, with `--feature-norm`): the
    /// smallest `feature-norm` a record-level run may state.
    pub feature_norm: f64,
    /// Rows scaled down to `--feature-norm`.
    #[serde(default)]
    pub scaled_rows: usize,
    /// The `--feature-norm` given to `prepare`: a bound chosen in public, which a record-level
    /// run may state (`feature-norm` above is the data's own largest norm, which it may not).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bound: Option<f64>,
    /// Per-node files, in member order (prepare only).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub nodes: Vec<NodeFile>,
    /// The fewest records of a node: the largest `min-records` a record-level run may state
    /// (prepare only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub min_records: Option<usize>,
    /// The held-out test file and its rows (prepare only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub test: Option<NodeFile>,
}

/// One written file.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub struct NodeFile {
    /// Its name, in the directory of `data.json`.
    pub path: String,
    /// Its rows.
    pub rows: usize,
}

impl DataSummary {
    /// Reads a `data.json` written by `dpwalk data prepare`.
    pub fn read(path: &Path) -> anyhow::Result<DataSummary> {
        let text =
            std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
        serde_json::from_str(&text).with_context(|| {
            format!(
                "{} is not a data.json written by `dpwalk data prepare`",
                path.display()
            )
        })
    }
}

pub fn run(cmd: DataCommand) -> anyhow::Result<()> {
    match cmd {
        DataCommand::Check(args) => {
            let (_, summary) = read(&args.source)?;
            if args.json {
                println!("{}", serde_json::to_string_pretty(&summary)?);
            } else {
                print_summary(&summary);
            }
            Ok(())
        }
        DataCommand::Prepare(args) => prepare(&args),
    }
}

/// Reads the file for its loss, as a node would, and its figures.
fn read(source: &Source) -> anyhow::Result<(Dataset, DataSummary)> {
    let labels = match source.loss {
        LossArg::Squared => LabelRule::Real,
        LossArg::Logistic => LabelRule::Binary {
            positive: source.positive_label.clone(),
        },
        LossArg::Multinomial => LabelRule::Classes,
    };
    ensure!(
        source.positive_label.is_none() || source.loss == LossArg::Logistic,
        "--positive-label is for --loss logistic"
    );
    if source.format == Format::Adult {
        ensure!(
            source.loss == LossArg::Logistic,
            "--format adult has the binary labels of --loss logistic"
        );
        ensure!(
            !source.header && source.label_column.is_none() && source.positive_label.is_none(),
            "--format adult reads Adult's own layout: no --header, --label-column or --positive-label"
        );
    }
    let opts = CsvOptions {
        delimiter: source.delimiter,
        header: source.header,
        label_column: source.label_column.clone(),
        labels,
    };
    let read = match source.format {
        Format::Csv => dpwalk_core::data::csv::read(&source.file, &opts).map(|(data, _)| data),
        Format::Adult => dpwalk_core::data::adult::read(&source.file).and_then(|mut data| {
            dpwalk_core::data::adult::preprocess(&mut data, None)?;
            Ok(data)
        }),
    };
    let data = read.with_context(|| {
        format!(
            "reading {} for the {} loss",
            source.file.display(),
            LossName::from(source.loss).as_str()
        )
    })?;
    let classes = match source.loss {
        LossArg::Multinomial => Some(partition::classes(&data)?.0),
        _ => None,
    };
    let summary = DataSummary {
        source: source.file.display().to_string(),
        loss: source.loss.into(),
        classes,
        features: data.n_features,
        dimension: data.n_features * classes.unwrap_or(1),
        rows: data.rows(),
        feature_norm: largest_norm(&data),
        scaled_rows: 0,
        bound: None,
        nodes: Vec::new(),
        min_records: None,
        test: None,
    };
    Ok((data, summary))
}

fn largest_norm(data: &Dataset) -> f64 {
    (0..data.rows())
        .map(|r| norm(data.row(r)))
        .fold(0.0, f64::max)
}

/// Scales every row longer than `bound` to norm `bound`; returns how many.
fn scale_rows(data: &mut Dataset, bound: f64) -> usize {
    data.features
        .chunks_exact_mut(data.n_features.max(1))
        .filter_map(|row| scale_to_norm(row, bound).then_some(()))
        .count()
}

fn prepare(args: &PrepareArgs) -> anyhow::Result<()> {
    ensure!(args.nodes >= 1, "--nodes must be at least 1");
    if let Some(r) = args.feature_norm {
        ensure!(
            r > 0.0 && r.is_finite(),
            "--feature-norm must be positive, got {r}"
        );
    }
    let (mut data, mut summary) = read(&args.source)?;
    if let Some(bound) = args.feature_norm {
        summary.scaled_rows = scale_rows(&mut data, bound);
        summary.bound = Some(bound);
    }
    let mut rng = node_rng(args.seed, 0);
    let (train, test) = split::train_test(&data, args.test_fraction, &mut rng)
        .context("holding out --test-fraction")?;
    let parts = partition::iid(&train, args.nodes, &mut rng).with_context(|| {
        format!(
            "dealing {} training rows to {} nodes",
            train.rows(),
            args.nodes
        )
    })?;
    std::fs::create_dir_all(&args.out)
        .with_context(|| format!("creating {}", args.out.display()))?;
    let mut files: Vec<(String, String)> = (0..args.nodes)
        .map(|i| {
            let csv = dpwalk_net::workspace::records_csv(
                parts.features(i),
                parts.labels(i),
                train.n_features,
            );
            (format!("node-{i}.csv"), csv)
        })
        .collect();
    files.push((
        "test.csv".into(),
        dpwalk_net::workspace::records_csv(&test.features, &test.labels, test.n_features),
    ));
    files.push(("data.json".into(), String::new()));
    if !args.force {
        for (name, _) in &files {
            let path = args.out.join(name);
            if path.exists() {
                bail!(
                    "{} exists (from an earlier prepare?): give --force to replace it, or another --out",
                    path.display()
                );
            }
        }
    }
    files.pop();
    summary.rows = data.rows();
    summary.feature_norm = largest_norm(&data);
    summary.nodes = (0..args.nodes)
        .map(|i| NodeFile {
            path: format!("node-{i}.csv"),
            rows: parts.records(i),
        })
        .collect();
    summary.min_records = summary.nodes.iter().map(|n| n.rows).min();
    summary.test = Some(NodeFile {
        path: "test.csv".into(),
        rows: test.rows(),
    });
    for (name, csv) in &files {
        let path = args.out.join(name);
        std::fs::write(&path, csv).with_context(|| format!("writing {}", path.display()))?;
    }
    let json = serde_json::to_string_pretty(&summary)?;
    let path = args.out.join("data.json");
    std::fs::write(&path, format!("{json}\n"))
        .with_context(|| format!("writing {}", path.display()))?;
    if args.json {
        println!("{json}");
    } else {
        print_summary(&summary);
        println!(
            "wrote {} node files, test.csv ({} rows) and data.json in {}",
            args.nodes,
            test.rows(),
            args.out.display()
        );
        match summary.bound {
            Some(bound) => println!(
                "next: dpwalk runfile new --data {} --record-level … (dimension {}, min-records {}, feature-norm {bound})",
                path.display(),
                summary.dimension,
                summary.min_records.unwrap_or(0),
            ),
            None => println!(
                "next: dpwalk runfile new --data {} … (dimension {}); for a record-level run, prepare again with --feature-norm R, a bound chosen in public",
                path.display(),
                summary.dimension,
            ),
        }
    }
    Ok(())
}

fn print_summary(s: &DataSummary) {
    let classes = s.classes.map_or_else(String::new, |k| {
        format!(" ({k} classes × {} features)", s.features)
    });
    println!(
        "{}: {} rows for the {} loss",
        s.source,
        s.rows,
        s.loss.as_str()
    );
    println!("  dimension      {}{classes}", s.dimension);
    println!(
        "  feature-norm   {} (the largest row norm{})",
        s.feature_norm,
        if s.scaled_rows > 0 {
            format!(", after scaling {} rows to it", s.scaled_rows)
        } else {
            String::new()
        }
    );
    if let Some(m) = s.min_records {
        println!("  min-records    {m} (the fewest rows of a node)");
    }
}
