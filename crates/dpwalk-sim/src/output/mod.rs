//! The run directory: `summary.json`, `metrics.csv`, `final_model.json` files and plots.
//!
//! Every file is written to a temporary name and renamed into place, so an interrupted run never
//! leaves a half-written file that looks complete.
//!
//! `summary.json` holds one entry per sweep point, averaged over repetitions (`final`) with the
//! standard deviation beside it (`final_std`, sample std, 0 for one repetition).
//! A single run (one point, one repetition) writes `final_model.json` at the top of the
//! directory; otherwise `point-<p>/rep-<r>/final_model.json`.

use crate::compare::{Progress, convergence_series, point_label, write_convergence, zero_gap_line};
use crate::plot::{LinePlot, PlotError, Series, write_line_plot};
use crate::scenario::LoadedScenario;
use crate::simulate::{PointResult, Prepared};
use dpwalk_core::spec::ProblemSpec;
use figures::{Utility, write_privacy_details, write_privacy_utility};
use serde::Serialize;
use std::path::{Path, PathBuf};
use thiserror::Error;

/// Errors writing the run directory.
#[derive(Debug, Error)]
pub enum OutputError {
    /// A file could not be written.
    #[error("cannot write {path}")]
    Io {
        /// The file.
        path: PathBuf,
        /// The I/O error.
        source: std::io::Error,
    },
    /// JSON encoding failed.
    #[error("cannot encode {path}")]
    Json {
        /// The file.
        path: PathBuf,
        /// The encoder's error.
        source: serde_json::Error,
    },
    /// TOML encoding failed.
    #[error("cannot encode {path}")]
    Toml {
        /// The file.
        path: PathBuf,
        /// The encoder's error.
        source: toml::ser::Error,
    },
    /// A plot could not be drawn.
    #[error(transparent)]
    Plot(#[from] PlotError),
}

/// Writes `bytes` to `path` atomically (temporary file, then rename).
pub fn write_atomic(path: &Path, bytes: &[u8]) -> Result<(), OutputError> {
    let io = |source| OutputError::Io {
        path: path.to_path_buf(),
        source,
    };
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir).map_err(io)?;
    }
    let tmp = path.with_extension("tmp");
    std::fs::write(&tmp, bytes).map_err(io)?;
    std::fs::rename(&tmp, path).map_err(io)
}

pub(crate) fn write_json<T: Serialize>(path: &Path, value: &T) -> Result<(), OutputError> {
    let bytes = serde_json::to_vec_pretty(value).map_err(|source| OutputError::Json {
        path: path.to_path_buf(),
        source,
    })?;
    write_atomic(path, &bytes)
}

mod csv;
mod figures;
mod panel;
mod summary;
mod views;

pub(crate) use csv::csv_opt;
pub use csv::{METRICS_COLUMNS, MetricsRow, metrics_csv, metrics_rows};
pub use summary::{
    Figures, FixedModel, MajorityClass, Optimum, PointSummary, Privacy, Summary, Throughput,
    summarize,
};

/// `final_model.json`.
#[derive(Debug, Serialize)]
struct FinalModel<'a> {
    z: &'a [f64],
    /// The token's final value; a daemon swarm publishes only `z`, and leaves this out.
    #[serde(skip_serializing_if = "<[f64]>::is_empty")]
    w: &'a [f64],
    steps: u64,
    seed: u64,
    algorithm: &'static str,
    /// The problem the model was trained on (what `dpwalk eval` scores it with).
    problem: ProblemSpec,
}

/// Writes every output file of a simulation into `dir`.
pub fn write_all(
    dir: &Path,
    loaded: &LoadedScenario,
    prepared: &Prepared,
    results: &[PointResult],
) -> Result<Summary, OutputError> {
    let s = loaded.scenario();
    let summary = summarize(loaded, prepared, results);
    write_json(&dir.join("summary.json"), &summary)?;
    write_atomic(
        &dir.join("metrics.csv"),
        metrics_csv(&metrics_rows(s, results)).as_bytes(),
    )?;
    let single = results.len() == 1 && s.repetitions == 1;
    let problem = ProblemSpec::of(prepared.problem.loss(), *prepared.problem.regularizer());
    for (p, pr) in results.iter().enumerate() {
        for (r, run) in pr.runs.iter().enumerate() {
            let path = if single {
                dir.join("final_model.json")
            } else {
                dir.join(format!("point-{p:03}"))
                    .join(format!("rep-{r:03}"))
                    .join("final_model.json")
            };
            let model = FinalModel {
                z: &run.z,
                w: &run.w,
                steps: pr.point.steps,
                seed: pr.seeds[r],
                algorithm: pr.point.name.as_str(),
                problem: problem.clone(),
            };
            write_json(&path, &model)?;
        }
    }
    let mut series: Vec<Series> = results
        .iter()
        .map(|pr| {
            let label = point_label(pr, results, prepared);
            convergence_series(s, pr, label, Progress::Steps)
        })
        .collect();
    series.extend(zero_gap_line(&series, summary.zero_model.relative_gap));
    write_line_plot(
        &LinePlot {
            title: format!("{}: convergence", loaded.name()),
            x_label: "steps".into(),
            y_label: "relative gap (F(z) − F*) / |F*|".into(),
            log_x: false,
            log_y: true,
            series,
        },
        &dir.join("convergence"),
    )?;
    if results.len() > 1 {
        write_privacy_utility(dir, loaded, &summary, Utility::Gap)?;
        if summary
            .points
            .iter()
            .all(|p| p.final_mean.test_error.is_some())
        {
            write_privacy_utility(dir, loaded, &summary, Utility::TestError)?;
        }
    }
    write_convergence(
        dir,
        loaded,
        prepared,
        results,
        summary.zero_model.relative_gap,
    )?;
    crate::spent::write_privacy_rounds(dir, loaded, prepared, results)?;
    views::write_privacy_views(dir, &summary)?;
    panel::write_panel(dir, loaded, &summary)?;
    write_privacy_details(dir, loaded.scenario(), prepared, results, &summary)?;
    Ok(summary)
}
