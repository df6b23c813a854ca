//! `dpwalk eval`: apply a final model to a dataset: objective, error rate, predictions.
//!
//! The data are read by the loaders a node uses for its `[data]` table, and the loss and
//! regularizer are `dpwalk_core::problem`'s: the objective printed is the one the runs minimize,
//! `F(z) = mean loss + r(z)`, on these records.

use anyhow::{Context, bail, ensure};
use clap::{Args, ValueEnum};
use dpwalk_core::data::spec::{CsvSpec, LabelType};
use dpwalk_core::data::{DataSpec, Dataset, UserData};
use dpwalk_core::problem::{Loss, Problem, Regularizer};
use dpwalk_core::spec::{LossName, ProblemSpec};
use dpwalk_net::learner::labels_for_loss;
use dpwalk_net::run::Run;
use serde::{Deserialize, Serialize};
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum LossArg {
    Squared,
    Logistic,
    Multinomial,
}

impl From<LossArg> for LossName {
    fn from(loss: LossArg) -> Self {
        match loss {
            LossArg::Squared => LossName::Squared,
            LossArg::Logistic => LossName::Logistic,
            LossArg::Multinomial => LossName::Multinomial,
        }
    }
}

/// The loss and regularizer flags, shared by `eval` and `runfile new`. Each is optional so that
/// `eval` can tell a flag given (checked against the model file's problem) from its default.
#[derive(Debug, Args)]
pub struct ProblemArgs {
    /// The loss [default: squared; `eval`: the model file's].
    #[arg(long, value_enum)]
    pub loss: Option<LossArg>,
    /// Number of classes (multinomial loss).
    #[arg(long)]
    pub classes: Option<usize>,
    /// L1 weight of the regularizer r(x) = l1‖x‖₁ + (l2/2)‖x‖² [default: 0; `eval`: the model
    /// file's].
    #[arg(long)]
    pub l1: Option<f64>,
    /// L2 weight of the regularizer [default: 0; `eval`: the model file's].
    #[arg(long)]
    pub l2: Option<f64>,
}

impl ProblemArgs {
    /// The problem the flags describe, the defaults for those not given: squared loss, no
    /// regularizer.
    pub fn spec(&self) -> ProblemSpec {
        ProblemSpec {
            loss: self.loss.unwrap_or(LossArg::Squared).into(),
            classes: self.classes,
            l1: self.l1.unwrap_or(0.0),
            l2: self.l2.unwrap_or(0.0),
        }
    }

    /// The loss and regularizer of [`ProblemArgs::spec`], checked.
    fn resolve(&self) -> anyhow::Result<(Loss, Regularizer)> {
        let spec = self.spec();
        let loss = match (spec.loss, spec.classes) {
            (LossName::Squared, None) => Loss::Squared,
            (LossName::Logistic, None) => Loss::Logistic,
            (LossName::Multinomial, Some(classes)) => Loss::Multinomial { classes },
            (LossName::Multinomial, None) => {
                bail!("--loss multinomial needs --classes (the number of classes)")
            }
            (_, Some(_)) => bail!("--classes applies to --loss multinomial only"),
        };
        for (name, v) in [("--l1", spec.l1), ("--l2", spec.l2)] {
            ensure!(
                v >= 0.0 && v.is_finite(),
                "{name} must be >= 0 and finite, got {v}"
            );
        }
        Ok((loss, spec.regularizer()?))
    }
}

#[derive(Debug, Args)]
pub struct EvalArgs {
    /// A final model: `dpwalk sim`'s or a node's `final_model.json` (its `z` is read).
    #[arg(long)]
    model: PathBuf,
    /// The records: a CSV file as a node reads it (features…, label last, no header), or a TOML
    /// file with a `[data]` table (a node.toml, or any dataset table of a scenario; its test split
    /// is evaluated when it has one).
    #[arg(long)]
    data: PathBuf,
    /// Take the loss and regularizer from this run file instead of --loss/--classes/--l1/--l2
    /// [default: the model file's `problem`, which both a node's and the simulator's
    /// final_model.json carry; the flags, for a file written before it did].
    #[arg(long, conflicts_with_all = ["loss", "classes", "l1", "l2"])]
    run: Option<PathBuf>,
    #[command(flatten)]
    problem: ProblemArgs,
    /// Run seed, for a `[data]` table whose data or test split depends on it [default: the TOML
    /// file's `seed` (a scenario's), else 1].
    #[arg(long)]
    seed: Option<u64>,
    /// Write one prediction per record to this CSV file.
    #[arg(long, value_name = "CSV")]
    predictions: Option<PathBuf>,
    /// Print JSON.
    #[arg(long)]
    json: bool,
}

/// The part of either `final_model.json` that `eval` reads.
#[derive(Debug, Deserialize)]
struct ModelFile {
    z: Vec<f64>,
    /// The problem the model was trained on (absent from files written before it was added).
    #[serde(default)]
    problem: Option<ProblemSpec>,
}

/// What `eval --json` prints.
#[derive(Debug, Serialize)]
struct EvalReport {
    model: String,
    data: String,
    split: &'static str,
    rows: usize,
    features: usize,
    dimension: usize,
    loss: &'static str,
    classes: Option<usize>,
    l1: f64,
    l2: f64,
    mean_loss: f64,
    regularizer: f64,
    objective: f64,
    error_rate: Option<f64>,
    predictions: Option<String>,
}

/// The problem to evaluate on: the run file's (`--run`), else the model file's, else the flags'
/// (their defaults for a model file that does not say). A run file or flags that contradict
/// the model file are refused: the objective of another problem is not the model's.
fn loss_and_regularizer(
    args: &EvalArgs,
    trained: Option<&ProblemSpec>,
) -> anyhow::Result<(Loss, Regularizer)> {
    let model = args.model.display();
    if let Some(path) = &args.run {
        let run = Run::load(path)?;
        let spec = ProblemSpec::of(run.loss(), run.regularizer());
        if let Some(trained) = trained.filter(|t| **t != spec) {
            bail!(
                "{} describes {}, but {model} was trained on {}: is this the model's run file?",
                path.display(),
                describe(&spec),
                describe(trained)
            );
        }
        return Ok((run.loss(), run.regularizer()));
    }
    let Some(trained) = trained else {
        return args.problem.resolve();
    };
    let flags = &args.problem;
    let contradicts = flags.loss.is_some() && flags.spec().loss != trained.loss
        || flags.classes.is_some_and(|c| Some(c) != trained.classes)
        || flags.l1.is_some_and(|v| v != trained.l1)
        || flags.l2.is_some_and(|v| v != trained.l2);
    if contradicts {
        bail!(
            "{model} was trained on {}, which the flags contradict: leave out --loss, --classes, --l1 and --l2 (eval takes the model file's), or give the model of that problem",
            describe(trained)
        );
    }
    let loss = match (trained.loss, trained.classes) {
        (LossName::Squared, _) => Loss::Squared,
        (LossName::Logistic, _) => Loss::Logistic,
        (LossName::Multinomial, Some(classes)) => Loss::Multinomial { classes },
        (LossName::Multinomial, None) => bail!("{model}: a multinomial problem without classes"),
    };
    Ok((loss, trained.regularizer()?))
}

/// A problem as a message names it.
fn describe(spec: &ProblemSpec) -> String {
    let classes = spec
        .classes
        .map_or(String::new(), |k| format!(" ({k} classes)"));
    let loss = match spec.loss {
        LossName::Squared => "squared",
        LossName::Logistic => "logistic",
        LossName::Multinomial => "multinomial",
    };
    format!(
        "the {loss} loss{classes} with l1 = {}, l2 = {}",
        spec.l1, spec.l2
    )
}

/// The data spec of `path`: the `[data]` table of a TOML file (or the file itself when it is
/// one), else the CSV file a node reads; with the directory its paths start from.
fn data_spec(path: &Path) -> anyhow::Result<(DataSpec, PathBuf, Option<u64>)> {
    if path.extension().is_some_and(|e| e == "toml") {
        let text =
            std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
        let mut table: toml::Table =
            toml::from_str(&text).with_context(|| format!("parsing {}", path.display()))?;
        let seed = table
            .get("seed")
            .and_then(toml::Value::as_integer)
            .and_then(|s| u64::try_from(s).ok());
        let value = match table.remove("data") {
            Some(data) => data,
            None => toml::Value::Table(table),
        };
        let spec = DataSpec::deserialize(value).with_context(|| {
            format!(
                "{}: expected a [data] table (source = \"csv\", path = …) as in node.toml",
                path.display()
            )
        })?;
        let base = path.parent().map(Path::to_path_buf).unwrap_or_default();
        return Ok((spec, base, seed));
    }
    let csv = CsvSpec {
        path: path.to_path_buf(),
        test: None,
        test_fraction: None,
        delimiter: ',',
        header: false,
        label_column: None,
        labels: LabelType::Real,
        positive_label: None,
        max_abs_scale: false,
        max_row_norm: None,
    };
    Ok((DataSpec::Csv(csv), PathBuf::new(), None))
}

fn loss_name(loss: Loss) -> (&'static str, Option<usize>) {
    match loss {
        Loss::Squared => ("squared", None),
        Loss::Logistic => ("logistic", None),
        Loss::Multinomial { classes } => ("multinomial", Some(classes)),
    }
}

fn read_model(path: &Path) -> anyhow::Result<ModelFile> {
    let text =
        std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
    let model: ModelFile = serde_json::from_str(&text).with_context(|| {
        format!(
            "{}: expected a final_model.json with a \"z\" array",
            path.display()
        )
    })?;
    if let Some(i) = model.z.iter().position(|v| !v.is_finite()) {
        bail!("{}: z[{i}] is not finite", path.display());
    }
    ensure!(!model.z.is_empty(), "{}: z is empty", path.display());
    Ok(model)
}

pub fn run(args: EvalArgs) -> anyhow::Result<()> {
    let model = read_model(&args.model)?;
    let (loss, reg) = loss_and_regularizer(&args, model.problem.as_ref())?;
    let z = model.z;
    let (spec, base, file_seed) = data_spec(&args.data)?;
    let loaded = spec
        .load(&base, args.seed.or(file_seed).unwrap_or(1))
        .with_context(|| format!("loading the data {}", args.data.display()))?;
    let (data, split): (Dataset, _) = match loaded.test {
        Some(test) => (test, "test"),
        None => (loaded.train, "train"),
    };
    ensure!(
        data.rows() > 0,
        "{} holds no records ({split} split)",
        args.data.display()
    );
    let p = data.n_features;
    let (name, classes) = loss_name(loss);
    let expected = classes.map_or(Some(p), |k| k.checked_mul(p));
    ensure!(
        expected == Some(z.len()),
        "the model has dimension {} but the data have {p} features, so a {name} model needs \
         dimension {}: is this the model of these data (and of this loss)?",
        z.len(),
        expected.map_or_else(|| "too large".to_string(), |d| d.to_string())
    );
    let rows = data.rows();
    let data = labels_for_loss(data, loss);
    let problem = Problem::new(
        loss,
        reg,
        UserData {
            data,
            offsets: vec![0, rows],
        },
    )
    .with_context(|| format!("the records of {} for a {name} loss", args.data.display()))?;
    let records = &problem.data().data;
    let regularizer = reg.value(&z);
    let report = EvalReport {
        model: args.model.display().to_string(),
        data: args.data.display().to_string(),
        split,
        rows,
        features: p,
        dimension: z.len(),
        loss: name,
        classes,
        l1: reg_weights(reg).0,
        l2: reg_weights(reg).1,
        mean_loss: problem.dataset_loss(records, &z),
        regularizer,
        objective: problem.objective(&z),
        error_rate: problem.error_rate(records, &z),
        predictions: args.predictions.as_ref().map(|p| p.display().to_string()),
    };
    if let Some(path) = &args.predictions {
        write_predictions(path, &problem, records, &z)?;
    }
    if args.json {
        println!("{}", serde_json::to_string_pretty(&report)?);
        return Ok(());
    }
    println!(
        "model      {} (dimension {})",
        report.model, report.dimension
    );
    println!(
        "data       {} ({split} split: {rows} records, {p} features)",
        report.data
    );
    println!(
        "problem    {name}{} loss, l1 = {}, l2 = {}",
        classes.map_or_else(String::new, |k| format!(" ({k} classes)")),
        report.l1,
        report.l2
    );
    println!(
        "objective  {:.6e} (mean loss {:.6e} + regularizer {:.6e})",
        report.objective, report.mean_loss, report.regularizer
    );
    if let Some(e) = report.error_rate {
        println!(
            "error      {e:.4} ({} of {rows} misclassified)",
            (e * rows as f64).round()
        );
    }
    if let Some(path) = &report.predictions {
        println!("predictions written to {path}");
    }
    Ok(())
}

fn reg_weights(reg: Regularizer) -> (f64, f64) {
    match reg {
        Regularizer::None => (0.0, 0.0),
        Regularizer::L1 { l1 } => (l1, 0.0),
        Regularizer::L2 { l2 } => (0.0, l2),
        Regularizer::ElasticNet { l1, l2 } => (l1, l2),
    }
}

/// `row,prediction,label` (and `probability` for classifiers), one line per record.
fn write_predictions(
    path: &Path,
    problem: &Problem,
    records: &Dataset,
    z: &[f64],
) -> anyhow::Result<()> {
    let predictions = problem
        .predictions(records, z)
        .context("the records' features do not match the model")?;
    let classifier = problem.loss() != Loss::Squared;
    let mut csv = String::from(if classifier {
        "row,prediction,probability,label\n"
    } else {
        "row,prediction,label\n"
    });
    for (r, (pr, label)) in predictions.iter().zip(&records.labels).enumerate() {
        match pr.probability {
            Some(prob) if classifier => {
                let _ = writeln!(csv, "{r},{:?},{prob:?},{label:?}", pr.label);
            }
            _ => {
                let _ = writeln!(csv, "{r},{:?},{label:?}", pr.label);
            }
        }
    }
    std::fs::write(path, csv).with_context(|| format!("writing {}", path.display()))
}
