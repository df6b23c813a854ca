//! Figures for simulation reports: line plots (convergence, privacy–utility sweeps) and heatmaps
//! (the pairwise network-ε matrix), each written twice, as `<stem>.png` and `<stem>.svg`.
//!
//! Text is drawn with DejaVu Sans, embedded in the binary and registered in plotters' `ab_glyph`
//! font table, because plotters' default `ttf` feature needs system font libraries that a clean
//! machine may lack. A heatmap is drawn as one raster image (inside the SVG as an embedded PNG), so
//! a 2000×2000 matrix costs one image rather than millions of `<rect>` elements.
//!
//! # Layout
//! - this module: what callers describe (a [`LinePlot`] of [`Series`], a [`Heatmap`]) and the
//!   functions that write them;
//! - `figure`: what every figure shares: the font, the PNG + SVG rendering, the title frame and
//!   the chart with its axes;
//! - `axis`: axis ranges, tick values and tick labels;
//! - `lines`: line plots (bands, markers, the legend placed away from the data);
//! - `heatmap`: heatmaps (block averaging, the colour bar).

mod axis;
mod figure;
mod heatmap;
mod lines;
#[cfg(test)]
mod tests;

use std::path::{Path, PathBuf};

pub(crate) use axis::significant;
use figure::write_figure;
use heatmap::Cells;
use lines::Lines;

/// Why a figure could not be written.
#[derive(Debug, thiserror::Error)]
pub enum PlotError {
    /// Nothing drawable is left once non-finite values (and, on log axes, values ≤ 0) are dropped.
    #[error("nothing to plot in {title:?}: no finite values (log axes also drop values <= 0)")]
    NoData { title: String },
    /// A series' `spread` must give one value per point.
    #[error("series {label:?} has {points} points but {spread} spread values")]
    SpreadLength {
        label: String,
        points: usize,
        spread: usize,
    },
    /// [`PointNotes`] must give one value per point of every series.
    #[error("the notes {column:?} do not give one value per point of every series")]
    NotesShape { column: String },
    /// A heatmap's `values` must hold `n × n` numbers.
    #[error("heatmap {title:?} has {len} values, expected n × n with n = {n}")]
    HeatmapShape { title: String, n: usize, len: usize },
    /// The embedded font was rejected by the font parser (a build problem, not an input problem).
    #[error("the embedded DejaVu Sans font could not be loaded")]
    Font,
    /// Drawing or encoding failed; for the PNG this includes writing the file.
    #[error("drawing {}", path.display())]
    Draw {
        path: PathBuf,
        #[source]
        source: Box<dyn std::error::Error + Send + Sync>,
    },
    /// Writing the SVG (or CSV) file failed.
    #[error("writing {}", path.display())]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
}

/// One curve of a [`LinePlot`].
#[derive(Debug, Clone, PartialEq)]
pub struct Series {
    /// Legend entry.
    pub label: String,
    /// `(x, y)` points, joined in the given order.
    pub points: Vec<(f64, f64)>,
    /// Optional half-width of a band around each point (e.g. ± one standard deviation over
    /// repetitions), drawn shaded; must have one entry per point. Non-finite entries draw no band
    /// at that point.
    pub spread: Option<Vec<f64>>,
}

/// Flat reference lines (`label: value` in the legend) across the finite x range of `series`,
/// one per finite value of `lines`; nothing when `series` has no finite x. The references that
/// make a figure readable (the zero model, the majority class, the non-private optimum).
pub(crate) fn flat_references<'a>(
    series: &[Series],
    lines: impl IntoIterator<Item = (&'a str, Option<f64>)>,
) -> Vec<Series> {
    let xs = series
        .iter()
        .flat_map(|s| s.points.iter().map(|p| p.0))
        .filter(|x| x.is_finite());
    let (lo, hi) = xs.fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), x| {
        (lo.min(x), hi.max(x))
    });
    if lo > hi {
        return Vec::new();
    }
    lines
        .into_iter()
        .filter_map(|(label, y)| {
            let y = y.filter(|y| y.is_finite())?;
            Some(Series {
                label: format!("{label}: {}", significant(y)),
                points: vec![(lo, y), (hi, y)],
                spread: None,
            })
        })
        .collect()
}

/// A line plot of one or more series sharing axes.
#[derive(Debug, Clone, PartialEq)]
pub struct LinePlot {
    pub title: String,
    pub x_label: String,
    pub y_label: String,
    /// Logarithmic x axis; points with x ≤ 0 are dropped.
    pub log_x: bool,
    /// Logarithmic y axis; points with y ≤ 0 are dropped, bands are cut at the axis bottom.
    pub log_y: bool,
    pub series: Vec<Series>,
}

/// A second figure for every point of a [`LinePlot`], written beside the point's marker and as
/// the last column of the figure's CSV: what the x axis does not show, e.g. the common
/// accountant's total ε beside a point whose x is a paper's own ε (`crate::reproduce`).
#[derive(Debug, Clone, PartialEq)]
pub struct PointNotes {
    /// The CSV column's name.
    pub column: String,
    /// What precedes each value in the figure (e.g. `"local ε = "`).
    pub prefix: String,
    /// One value per point of each series, parallel to the first series of [`LinePlot::series`]
    /// (series after them, such as reference lines, carry none); a non-finite value is written
    /// `n/a` beside its point (empty in the CSV).
    pub values: Vec<Vec<f64>>,
}

/// An `n × n` matrix drawn as coloured cells, row 0 at the top as in a printed matrix.
#[derive(Debug, Clone, PartialEq)]
pub struct Heatmap {
    pub title: String,
    pub n: usize,
    /// Row-major `n × n` values; non-finite entries are drawn grey.
    pub values: Vec<f64>,
    pub x_label: String,
    pub y_label: String,
    pub colorbar_label: String,
}

/// Writes `plot` to `<stem>.png` and `<stem>.svg`.
///
/// Non-finite points (and non-positive ones on a log axis) are dropped with a warning; if no
/// point is left in any series the result is [`PlotError::NoData`].
pub fn write_line_plot(plot: &LinePlot, stem: &Path) -> Result<(), PlotError> {
    write_figure(&Lines::new(plot)?, stem)
}

/// Writes `plot` like [`write_line_plot`], with `caption` (what the figure assumes or leaves out)
/// in grey under the title, and the data it draws to `<stem>.csv`, so that a reader can check a
/// figure's numbers without reading pixels: the caption on a first line `# …` (what the numbers
/// assume travels with them), then one row per point, `series,x,y,spread` (the series' label
/// quoted; `spread` empty for a series without a band).
pub fn write_line_plot_with_data(
    plot: &LinePlot,
    caption: Option<&str>,
    stem: &Path,
) -> Result<(), PlotError> {
    write_with_data(plot, caption, None, stem)
}

/// Writes `plot` like [`write_line_plot_with_data`], with `notes` beside every point and as the
/// CSV's last column (named `notes.column`).
pub fn write_line_plot_with_notes(
    plot: &LinePlot,
    caption: Option<&str>,
    notes: &PointNotes,
    stem: &Path,
) -> Result<(), PlotError> {
    write_with_data(plot, caption, Some(notes), stem)
}

fn write_with_data(
    plot: &LinePlot,
    caption: Option<&str>,
    notes: Option<&PointNotes>,
    stem: &Path,
) -> Result<(), PlotError> {
    let mut lines = Lines::new(plot)?;
    lines.caption = caption;
    if let Some(notes) = notes {
        lines.set_notes(notes)?;
    }
    let path = figure::with_extension(stem, "csv");
    std::fs::write(&path, series_csv(plot, caption, notes))
        .map_err(|source| PlotError::Io { path, source })?;
    write_figure(&lines, stem)
}

/// The rows of [`write_line_plot_with_data`]'s CSV (with a last column for `notes`).
fn series_csv(plot: &LinePlot, caption: Option<&str>, notes: Option<&PointNotes>) -> String {
    let mut csv = caption.map_or_else(String::new, |c| format!("# {}\n", c.replace('\n', " ")));
    csv.push_str("series,x,y,spread");
    if let Some(notes) = notes {
        csv.push_str(&format!(",{}", notes.column));
    }
    csv.push('\n');
    for (s, series) in plot.series.iter().enumerate() {
        let label = series.label.replace('"', "\"\"");
        for (i, (x, y)) in series.points.iter().enumerate() {
            let spread = series
                .spread
                .as_ref()
                .and_then(|s| s.get(i))
                .map_or_else(String::new, f64::to_string);
            csv.push_str(&format!("\"{label}\",{x},{y},{spread}"));
            if let Some(notes) = notes {
                let note = notes
                    .values
                    .get(s)
                    .and_then(|v| v.get(i))
                    .filter(|v| v.is_finite())
                    .map_or_else(String::new, f64::to_string);
                csv.push_str(&format!(",{note}"));
            }
            csv.push('\n');
        }
    }
    csv
}

/// Writes `map` to `<stem>.png` and `<stem>.svg`.
///
/// Matrices larger than 500 × 500 are block-averaged (over the finite entries of each block).
/// The colour scale spans the finite drawn values; if there are none the result is
/// [`PlotError::NoData`].
pub fn write_heatmap(map: &Heatmap, stem: &Path) -> Result<(), PlotError> {
    write_figure(&Cells::new(map)?, stem)
}
