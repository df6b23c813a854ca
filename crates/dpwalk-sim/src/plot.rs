//! Figures for simulation reports: line plots (convergence, privacy–utility sweeps) and heatmaps
//! (the pairwise network-ε matrix), each written twice, as `<stem>.png` and `<stem>.svg`.
//!
//! Text is drawn with DejaVu Sans, embedded in the binary and registered in plotters' `ab_glyph`
//! font table, because plotters' default `ttf` feature needs system font libraries that a clean
//! machine may lack. A heatmap is drawn as one raster image (inside the SVG as an embedded PNG), so
//! a 2000×2000 matrix costs one image rather than millions of `<rect>` elements.

use std::ops::Range;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use plotters::coord::Shift;
use plotters::coord::combinators::LogCoord;
use plotters::coord::ranged1d::{
    AsRangedCoord, DefaultFormatting, KeyPointHint, Ranged, ValueFormatter,
};
use plotters::coord::types::RangedCoordf64;
use plotters::prelude::*;
use plotters::style::colors::colormaps::ViridisRGB;
use plotters::style::text_anchor::{HPos, Pos, VPos};

/// The family name every text style here asks for; it is also plotters' default label font.
const FONT: &str = "sans-serif";
const FONT_BYTES: &[u8] = include_bytes!("../assets/DejaVuSans.ttf");

/// Heatmaps larger than this many cells per side are block-averaged down before drawing: finer
/// detail would not survive the ~700-pixel plot area anyway.
const MAX_CELLS: usize = 500;
/// Series with at most this many points also get a marker per point, so that a short sweep (or a
/// single point, which draws no line) stays visible.
const MARKER_LIMIT: usize = 40;
/// Missing (non-finite) heatmap cells: a grey that the viridis scale never produces.
const MISSING: RGBColor = RGBColor(190, 190, 190);
/// Matplotlib's `tab10` cycle: distinct hues that stay apart in print.
const PALETTE: [RGBColor; 10] = [
    RGBColor(31, 119, 180),
    RGBColor(255, 127, 14),
    RGBColor(44, 160, 44),
    RGBColor(214, 39, 40),
    RGBColor(148, 103, 189),
    RGBColor(140, 86, 75),
    RGBColor(227, 119, 194),
    RGBColor(127, 127, 127),
    RGBColor(188, 189, 34),
    RGBColor(23, 190, 207),
];

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
    /// Writing the SVG file failed.
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

/// Writes `map` to `<stem>.png` and `<stem>.svg`.
///
/// Matrices larger than 500 × 500 are block-averaged (over the finite entries of each block).
/// The colour scale spans the finite drawn values; if there are none the result is
/// [`PlotError::NoData`].
pub fn write_heatmap(map: &Heatmap, stem: &Path) -> Result<(), PlotError> {
    write_figure(&Cells::new(map)?, stem)
}

/// A validated figure that can draw itself on any plotters backend, so the PNG and the SVG come
/// from the same code.
trait Figure {
    const SIZE: (u32, u32);
    fn draw<DB: DrawingBackend>(&self, root: &DrawingArea<DB, Shift>) -> DrawResult<DB>;
}

/// A chart on the coordinates `X`, `Y` build into.
type Chart<'a, DB, X, Y> = ChartContext<
    'a,
    DB,
    Cartesian2d<<X as AsRangedCoord>::CoordDescType, <Y as AsRangedCoord>::CoordDescType>,
>;

type DrawResult<DB> = Result<(), DrawingAreaErrorKind<<DB as DrawingBackend>::ErrorType>>;

fn write_figure<F: Figure>(figure: &F, stem: &Path) -> Result<(), PlotError> {
    ensure_font()?;
    let png = with_extension(stem, "png");
    render(figure, BitMapBackend::new(&png, F::SIZE)).map_err(|e| draw_error(&png, e))?;

    let path = with_extension(stem, "svg");
    let mut svg = String::new();
    render(figure, SVGBackend::with_string(&mut svg, F::SIZE)).map_err(|e| draw_error(&path, e))?;
    std::fs::write(&path, svg).map_err(|source| PlotError::Io { path, source })
}

fn render<F: Figure, DB: DrawingBackend>(figure: &F, backend: DB) -> DrawResult<DB> {
    let root = backend.into_drawing_area();
    root.fill(&WHITE)?;
    figure.draw(&root)?;
    root.present()
}

fn draw_error<E>(path: &Path, error: DrawingAreaErrorKind<E>) -> PlotError
where
    E: std::error::Error + Send + Sync + 'static,
{
    PlotError::Draw {
        path: path.to_path_buf(),
        source: Box::new(error),
    }
}

/// Appends rather than replaces, so a stem like `eps-0.5` keeps its `.5`.
fn with_extension(stem: &Path, extension: &str) -> PathBuf {
    let mut name = stem.as_os_str().to_owned();
    name.push(".");
    name.push(extension);
    name.into()
}

/// Registers the embedded font once per process; plotters keeps it in a global table.
fn ensure_font() -> Result<(), PlotError> {
    static REGISTERED: OnceLock<bool> = OnceLock::new();
    let ok = REGISTERED.get_or_init(|| {
        plotters::style::register_font(FONT, FontStyle::Normal, FONT_BYTES).is_ok()
    });
    if *ok { Ok(()) } else { Err(PlotError::Font) }
}

/// Pixel sizes shared by both figures.
const TITLE_SIZE: u32 = 28;
/// The smallest title font before the title is wrapped onto more lines.
const TITLE_MIN_SIZE: u32 = 22;
const LABEL_SIZE: u32 = 16;
const DESC_SIZE: u32 = 20;
const MARGIN: u32 = 20;
/// Room under the x axis for tick labels and the axis description.
const X_LABEL_AREA: u32 = 60;
/// Room beside a y axis for the rotated axis description, plus the gap to the tick labels.
const Y_DESC_ROOM: u32 = 40;
/// Most series whose legend goes inside the plot area.
const LEGEND_INSIDE: usize = 5;
/// A legend entry's width beside its text: the line and marker, margins, the box.
const LEGEND_GLYPH: u32 = 2 * LEGEND_PAD + 40;
/// A legend's inner margin and line height.
const LEGEND_PAD: u32 = 8;
const LEGEND_LINE: u32 = 22;
/// Tick labels an axis gets at least (when its range allows it) and at most.
const MIN_TICKS: usize = 4;
const MAX_TICKS: usize = 11;
/// The largest share of a log axis (in decades) left without a tick label, where avoidable.
const MAX_GAP: f64 = 0.4;

/// Draws `title` centred across the top of `root`, shrunk and then wrapped to fit its width, with
/// `note` in grey under it, and returns the area below them: the one place where a figure's title
/// and margins are laid out.
fn frame<DB: DrawingBackend>(
    root: &DrawingArea<DB, Shift>,
    title: &str,
    note: Option<&str>,
) -> Result<DrawingArea<DB, Shift>, DrawingAreaErrorKind<DB::ErrorType>> {
    let (width, _) = root.dim_in_pixel();
    let room = width.saturating_sub(2 * MARGIN);
    let measure =
        |text: &str, size: u32| root.estimate_text_size(text, &(FONT, size).into_font().into());
    let mut size = TITLE_SIZE;
    let mut lines = vec![title.to_string()];
    while measure(title, size)?.0 > room {
        if size > TITLE_MIN_SIZE {
            size -= 2;
            continue;
        }
        lines = wrap(
            title,
            |text| measure(text, size).map_or(u32::MAX, |(w, _)| w),
            room,
        );
        break;
    }
    let line_height = measure("Ag", size)?.1 + 6;
    let style = TextStyle::from((FONT, size).into_font())
        .pos(Pos::new(HPos::Center, VPos::Top))
        .color(&BLACK);
    let centre = (width / 2) as i32;
    for (i, line) in lines.iter().enumerate() {
        let top = (MARGIN / 2 + line_height * i as u32) as i32;
        root.draw(&Text::new(line.clone(), (centre, top), style.clone()))?;
    }
    let mut used = MARGIN / 2 + line_height * lines.len() as u32;
    if let Some(note) = note {
        let grey = BLACK.mix(0.65);
        let style = TextStyle::from((FONT, LABEL_SIZE + 2).into_font())
            .pos(Pos::new(HPos::Center, VPos::Top))
            .color(&grey);
        root.draw(&Text::new(note, (centre, used as i32), style))?;
        used += measure(note, LABEL_SIZE + 2)?.1 + 6;
    }
    Ok(root.split_vertically(used + MARGIN / 2).1)
}

/// Greedy word wrap of `text` into lines no wider than `room` as `width` measures them; a single
/// word wider than `room` gets a line of its own.
fn wrap(text: &str, width: impl Fn(&str) -> u32, room: u32) -> Vec<String> {
    let mut lines: Vec<String> = Vec::new();
    for word in text.split_whitespace() {
        match lines.last_mut() {
            Some(line) if width(&format!("{line} {word}")) <= room => {
                line.push(' ');
                line.push_str(word);
            }
            _ => lines.push(word.to_string()),
        }
    }
    lines
}

/// Width of the widest of `labels` at the tick-label font, in pixels.
fn widest<DB: DrawingBackend>(
    area: &DrawingArea<DB, Shift>,
    labels: impl Iterator<Item = String>,
) -> Result<u32, DrawingAreaErrorKind<DB::ErrorType>> {
    let font: TextStyle = (FONT, LABEL_SIZE).into_font().into();
    let mut widest = 0;
    for label in labels {
        widest = widest.max(area.estimate_text_size(&label, &font)?.0);
    }
    Ok(widest)
}

/// One axis: its range (start to end as drawn; a reversed range draws from the top down), the
/// values that get a tick label, the lighter grid lines between them, and how labels are written.
#[derive(Debug, Clone)]
struct Axis {
    range: Range<f64>,
    log: bool,
    ticks: Vec<f64>,
    minor: Vec<f64>,
    notation: Notation,
}

/// How an axis writes its tick labels; one choice per axis, so labels never mix notations.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Notation {
    /// Fixed point with this many decimals on every label (linear axes).
    Fixed(usize),
    /// Fixed point with trailing zeros trimmed label by label (log axes: 0.03, 0.1, 0.3, 1).
    Trimmed,
    /// `2×10⁵`, `10⁻³`: for axes whose labels would be too long in fixed point.
    Scientific,
}

impl Axis {
    fn new(range: Range<f64>, log: bool) -> Self {
        let (lo, hi) = if range.start <= range.end {
            (range.start, range.end)
        } else {
            (range.end, range.start)
        };
        let (ticks, minor, linear) = if log {
            log_ticks(lo, hi)
        } else {
            let (ticks, minor) = linear_ticks(lo, hi);
            (ticks, minor, true)
        };
        let fixed = ticks
            .iter()
            .all(|v| *v == 0.0 || (1e-3..1e6).contains(&v.abs()));
        let notation = if !fixed {
            Notation::Scientific
        } else if linear {
            Notation::Fixed(decimals(&ticks))
        } else {
            Notation::Trimmed
        };
        Self {
            range,
            log,
            ticks,
            minor,
            notation,
        }
    }

    fn label(&self, v: f64) -> String {
        match self.notation {
            Notation::Fixed(d) => {
                let text = format!("{v:.d$}");
                // No "-0" for a tick that is zero up to rounding.
                if text.trim_start_matches(['-', '0', '.']).is_empty() {
                    text.trim_start_matches('-').into()
                } else {
                    text
                }
            }
            Notation::Trimmed => trimmed(v),
            Notation::Scientific => scientific(v),
        }
    }

    fn labels(&self) -> impl Iterator<Item = String> + '_ {
        self.ticks.iter().map(|&v| self.label(v))
    }

    fn linear(&self) -> Ticked<RangedCoordf64> {
        self.ticked(self.range.clone().into())
    }

    fn logarithmic(&self) -> Ticked<LogCoord<f64>> {
        self.ticked(self.range.clone().log_scale().into())
    }

    fn ticked<R>(&self, inner: R) -> Ticked<R> {
        Ticked {
            inner,
            ticks: self.ticks.clone(),
            minor: self.minor.clone(),
        }
    }

    /// Where `v` falls along the axis, 0 at the low end and 1 at the high end.
    fn fraction(&self, v: f64) -> f64 {
        let (lo, hi) = (
            self.range.start.min(self.range.end),
            self.range.start.max(self.range.end),
        );
        if self.log {
            (v / lo).ln() / (hi / lo).ln()
        } else {
            (v - lo) / (hi - lo)
        }
    }
}

/// A coordinate (linear or log) whose tick labels and grid lines are the given values, and whose
/// labels [`Axis::label`] writes (plotters' own choice gives a log axis spanning less than a
/// decade one label or none).
struct Ticked<R> {
    inner: R,
    ticks: Vec<f64>,
    minor: Vec<f64>,
}

impl<R: Ranged<ValueType = f64>> Ranged for Ticked<R> {
    type FormatOption = DefaultFormatting;
    type ValueType = f64;

    fn map(&self, value: &f64, limit: (i32, i32)) -> i32 {
        self.inner.map(value, limit)
    }

    fn key_points<Hint: KeyPointHint>(&self, hint: Hint) -> Vec<f64> {
        if hint.weight().allow_light_points() {
            self.minor.clone()
        } else {
            self.ticks.clone()
        }
    }

    fn range(&self) -> Range<f64> {
        self.inner.range()
    }

    fn axis_pixel_range(&self, limit: (i32, i32)) -> Range<i32> {
        self.inner.axis_pixel_range(limit)
    }
}

/// Nice ticks over `[lo, hi]`: the widest step of 1, 2 or 5 × 10ᵏ that gives at least
/// [`MIN_TICKS`] + 1 of them (so at most about eleven), and the lighter grid lines between them.
fn linear_ticks(lo: f64, hi: f64) -> (Vec<f64>, Vec<f64>) {
    let span = hi - lo;
    if !(span > 0.0 && span.is_finite()) {
        return (vec![lo], Vec::new());
    }
    let top = span.log10().floor() as i32;
    let step = (top - 20..=top)
        .rev()
        .flat_map(|k| [5.0, 2.0, 1.0].map(|m| m * 10f64.powi(k)))
        .find(|&step| multiples(lo, hi, step).len() > MIN_TICKS)
        .unwrap_or(span);
    let minor_step = step / if mantissa(step) == 2.0 { 4.0 } else { 5.0 };
    (multiples(lo, hi, step), multiples(lo, hi, minor_step))
}

fn mantissa(v: f64) -> f64 {
    let m = v / 10f64.powf(v.abs().log10().floor());
    (m * 1e6).round() / 1e6
}

/// The multiples of `step` in `[lo, hi]` (computed as `k × step`, so they carry no accumulated
/// rounding).
fn multiples(lo: f64, hi: f64, step: f64) -> Vec<f64> {
    let first = (lo / step - 1e-9).ceil() as i64;
    let last = (hi / step + 1e-9).floor() as i64;
    (first..=last).map(|k| k as f64 * step).collect()
}

/// Per decade, the mantissas that get a label, from sparse to dense (see [`log_ticks`]).
const LOG_MANTISSAS: [&[f64]; 5] = [
    &[1.0],
    &[1.0, 3.0],
    &[1.0, 2.0, 5.0],
    &[1.0, 2.0, 3.0, 5.0],
    &[1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0],
];

/// Ticks of a log axis over `[lo, hi]` (both > 0): powers of ten (every second, third, … one
/// when there are many decades), with intermediate values (3, or 2 and 5, …) when that gives too
/// few labels or leaves more than [`MAX_GAP`] of the axis unlabelled, and plain linear ticks when
/// even 1…9 per decade does (a range under a decade). Returns the ticks, the lighter grid lines
/// and whether the ticks are linear.
fn log_ticks(lo: f64, hi: f64) -> (Vec<f64>, Vec<f64>, bool) {
    let within = |mantissas: &[f64]| -> Vec<f64> {
        let first = lo.log10().floor() as i32;
        let last = hi.log10().ceil() as i32;
        (first..=last)
            .flat_map(|e| mantissas.iter().map(move |m| m * 10f64.powi(e)))
            .filter(|v| *v >= lo * (1.0 - 1e-9) && *v <= hi * (1.0 + 1e-9))
            .collect()
    };
    let others = |ticks: &[f64], all: Vec<f64>| -> Vec<f64> {
        all.into_iter()
            .filter(|v| !ticks.iter().any(|t| (t / v - 1.0).abs() < 1e-9))
            .collect()
    };
    let powers = within(&[1.0]);
    if powers.len() > MAX_TICKS {
        let stride = powers.len().div_ceil(MAX_TICKS - 2) as i32;
        let ticks: Vec<f64> = (powers.iter().copied())
            .filter(|v| (v.log10().round() as i32).rem_euclid(stride) == 0)
            .collect();
        return (ticks.clone(), others(&ticks, powers), false);
    }
    // The sparsest candidate with enough labels and no wide unlabelled stretch; failing that,
    // the one with the narrowest such stretch.
    let widest_gap = |ticks: &[f64]| {
        let mut edges = vec![lo.log10()];
        edges.extend(ticks.iter().map(|t| t.log10()));
        edges.push(hi.log10());
        let gap = edges.windows(2).fold(0f64, |g, w| g.max(w[1] - w[0]));
        gap / (hi / lo).log10()
    };
    let all = within(LOG_MANTISSAS[LOG_MANTISSAS.len() - 1]);
    let mut candidates: Vec<(Vec<f64>, Vec<f64>, bool)> = LOG_MANTISSAS
        .iter()
        .map(|mantissas| {
            let ticks = within(mantissas);
            let minor = others(&ticks, all.clone());
            (ticks, minor, false)
        })
        .collect();
    let (ticks, minor) = linear_ticks(lo, hi);
    candidates.push((ticks, minor, true));
    let fits = |t: &[f64]| (MIN_TICKS..=MAX_TICKS).contains(&t.len());
    if let Some(i) = candidates
        .iter()
        .position(|(t, _, _)| fits(t) && widest_gap(t) <= MAX_GAP)
    {
        return candidates.swap_remove(i);
    }
    candidates
        .into_iter()
        .filter(|(t, _, _)| t.len() >= 3 && t.len() <= MAX_TICKS)
        .min_by(|a, b| widest_gap(&a.0).total_cmp(&widest_gap(&b.0)))
        .unwrap_or_else(|| {
            let (ticks, minor) = linear_ticks(lo, hi);
            (ticks, minor, true)
        })
}

/// The fewest decimals (at most 8) that write every tick exactly.
fn decimals(ticks: &[f64]) -> usize {
    let scale = ticks
        .iter()
        .fold(0f64, |m, v| m.max(v.abs()))
        .max(f64::MIN_POSITIVE);
    (0..=8)
        .find(|&d| {
            let p = 10f64.powi(d as i32);
            ticks
                .iter()
                .all(|v| ((v * p).round() / p - v).abs() <= 1e-9 * scale)
        })
        .unwrap_or(8)
}

/// Fixed point without trailing zeros (`0.30000000000000004` → `0.3`).
fn trimmed(v: f64) -> String {
    let fixed = format!("{v:.6}");
    let text = fixed.trim_end_matches('0').trim_end_matches('.');
    if text == "-0" {
        "0".into()
    } else {
        text.into()
    }
}

/// `m×10ᵉ` with at most three significant digits, or `10ᵉ` for a power of ten.
fn scientific(v: f64) -> String {
    if v == 0.0 || !v.is_finite() {
        return trimmed(v);
    }
    let mut exponent = v.abs().log10().floor() as i32;
    let mut m = v / 10f64.powi(exponent);
    m = (m * 100.0).round() / 100.0;
    if m.abs() >= 10.0 {
        m /= 10.0;
        exponent += 1;
    }
    let power: String = exponent
        .to_string()
        .chars()
        .map(|c| match c {
            '-' => '⁻',
            d => ['⁰', '¹', '²', '³', '⁴', '⁵', '⁶', '⁷', '⁸', '⁹']
                [d.to_digit(10).unwrap_or(0) as usize],
        })
        .collect();
    match m {
        1.0 => format!("10{power}"),
        -1.0 => format!("-10{power}"),
        _ => format!("{}×10{power}", trimmed(m)),
    }
}

/// `x` to four significant digits, without trailing zeros (a calibrated σ has sixteen).
pub(crate) fn significant(x: f64) -> String {
    if x == 0.0 || !x.is_finite() {
        return x.to_string();
    }
    let decimals = (3 - x.abs().log10().floor() as i32).clamp(0, 15) as usize;
    let text = format!("{x:.decimals$}");
    if text.contains('.') {
        text.trim_end_matches('0').trim_end_matches('.').to_string()
    } else {
        text
    }
}

/// Draws a legend box of size `(w, h)` with its top left corner at `corner` of `area`: one line
/// per `(label, colour, marker)` entry, a line sample with a marker of `radius` where `marker`.
fn draw_legend<DB: DrawingBackend>(
    area: &DrawingArea<DB, Shift>,
    corner: (i32, i32),
    (w, h): (i32, i32),
    entries: &[(&str, RGBColor, bool)],
    radius: u32,
) -> DrawResult<DB> {
    let (x, y) = corner;
    let frame = [(x, y), (x + w, y + h)];
    area.draw(&Rectangle::new(frame, WHITE.mix(0.85).filled()))?;
    area.draw(&Rectangle::new(frame, BLACK.mix(0.5)))?;
    let pad = LEGEND_PAD as i32;
    for (i, &(label, colour, marker)) in entries.iter().enumerate() {
        let centre = y + pad + (LEGEND_LINE as i32) * i as i32 + LEGEND_LINE as i32 / 2;
        let sample = [(x + pad, centre), (x + pad + 30, centre)];
        area.draw(&PathElement::new(sample, colour.stroke_width(2)))?;
        if marker {
            area.draw(&Circle::new(
                (x + pad + 15, centre),
                radius,
                colour.filled(),
            ))?;
        }
        let style = TextStyle::from((FONT, LABEL_SIZE).into_font())
            .pos(Pos::new(HPos::Left, VPos::Center))
            .color(&BLACK);
        area.draw(&Text::new(label, (x + pad + 40, centre), style))?;
    }
    Ok(())
}

/// Builds a chart on `area` with label areas sized to `y`'s widest tick label and `right` pixels
/// kept free on the right (for a legend), and draws its axes, tick labels and (if `grid`) grid
/// lines: shared by line plots and heatmaps.
fn chart_on<'a, DB, X, Y>(
    area: &'a DrawingArea<DB, Shift>,
    axes: (&Axis, &Axis),
    coords: (X, Y),
    descriptions: (&str, &str),
    (grid, right): (bool, u32),
) -> Result<Chart<'a, DB, X, Y>, DrawingAreaErrorKind<DB::ErrorType>>
where
    DB: DrawingBackend,
    X: AsRangedCoord<Value = f64>,
    Y: AsRangedCoord<Value = f64>,
    X::CoordDescType: ValueFormatter<f64>,
    Y::CoordDescType: ValueFormatter<f64>,
{
    let (x, y) = axes;
    let y_area = widest(area, y.labels())? + Y_DESC_ROOM;
    let mut chart = ChartBuilder::on(area)
        .margin(MARGIN / 2)
        .margin_right(MARGIN + right)
        .x_label_area_size(X_LABEL_AREA)
        .y_label_area_size(y_area)
        .build_cartesian_2d(coords.0, coords.1)?;
    let (x_label, y_label) = (|v: &f64| x.label(*v), |v: &f64| y.label(*v));
    let mut mesh = chart.configure_mesh();
    mesh.x_desc(descriptions.0)
        .y_desc(descriptions.1)
        .x_label_formatter(&x_label)
        .y_label_formatter(&y_label)
        .label_style((FONT, LABEL_SIZE))
        .axis_desc_style((FONT, DESC_SIZE))
        .set_all_tick_mark_size(5);
    if !grid {
        mesh.disable_mesh();
    }
    mesh.draw()?;
    Ok(chart)
}

/// A [`LinePlot`] with its points cleaned and its axes chosen.
struct Lines<'a> {
    plot: &'a LinePlot,
    /// Kept points `(x, y, band half-width)` per series, parallel to `plot.series`.
    curves: Vec<Vec<(f64, f64, f64)>>,
    x: Axis,
    y: Axis,
}

impl<'a> Lines<'a> {
    fn new(plot: &'a LinePlot) -> Result<Self, PlotError> {
        let (mut x_span, mut y_span) = (Span::EMPTY, Span::EMPTY);
        let mut curves = Vec::with_capacity(plot.series.len());
        for series in &plot.series {
            if let Some(spread) = &series.spread
                && spread.len() != series.points.len()
            {
                return Err(PlotError::SpreadLength {
                    label: series.label.clone(),
                    points: series.points.len(),
                    spread: spread.len(),
                });
            }
            let mut kept = Vec::with_capacity(series.points.len());
            for (i, &(x, y)) in series.points.iter().enumerate() {
                if !(drawable(x, plot.log_x) && drawable(y, plot.log_y)) {
                    continue;
                }
                let half = series.spread.as_ref().map_or(0.0, |s| s[i].abs());
                let half = if half.is_finite() { half } else { 0.0 };
                x_span.include(x);
                y_span.include(y + half);
                if drawable(y - half, plot.log_y) {
                    y_span.include(y - half);
                }
                kept.push((x, y, half));
            }
            let dropped = series.points.len() - kept.len();
            if dropped > 0 {
                let (plot, series) = (&plot.title, &series.label);
                tracing::warn!(plot, series, dropped, "dropped points that cannot be drawn");
            }
            curves.push(kept);
        }
        match (x_span.padded(plot.log_x), y_span.padded(plot.log_y)) {
            (Some(x), Some(y)) => Ok(Self {
                plot,
                curves,
                x: Axis::new(x, plot.log_x),
                y: Axis::new(y, plot.log_y),
            }),
            _ => Err(PlotError::NoData {
                title: plot.title.clone(),
            }),
        }
    }

    /// Whether no series has two points to join: each is then drawn as a large marker with its
    /// value, and the plot says so.
    fn lone_points(&self) -> bool {
        self.curves.iter().all(|c| c.len() <= 1)
    }

    /// Draws on axes of any kind; [`Figure::draw`] picks linear or log for each.
    fn draw_on<DB, X, Y>(&self, area: &DrawingArea<DB, Shift>, x: X, y: Y) -> DrawResult<DB>
    where
        DB: DrawingBackend,
        X: AsRangedCoord<Value = f64>,
        Y: AsRangedCoord<Value = f64>,
        X::CoordDescType: ValueFormatter<f64>,
        Y::CoordDescType: ValueFormatter<f64>,
    {
        // Many series get their legend in a column right of the plot rather than over the data.
        let labels = self.plot.series.iter().map(|s| s.label.clone());
        let legend_width = widest(area, labels)? + LEGEND_GLYPH;
        let (width, _) = area.dim_in_pixel();
        let legend_column =
            if self.plot.series.len() > LEGEND_INSIDE && legend_width < width * 3 / 10 {
                legend_width + MARGIN
            } else {
                0
            };
        let mut chart = chart_on(
            area,
            (&self.x, &self.y),
            (x, y),
            (&self.plot.x_label, &self.plot.y_label),
            (true, legend_column),
        )?;

        // On a log axis a band reaching zero or below is cut at the axis bottom.
        let floor = if self.plot.log_y {
            self.y.range.start
        } else {
            f64::NEG_INFINITY
        };
        let lone = self.lone_points();
        let radius = if lone { 7 } else { 3 };
        let mut legend = Vec::new();
        // Colours follow the series index, so a series keeps its colour when another is empty.
        let named = self.plot.series.iter().zip(&self.curves).enumerate();
        for (i, (series, points)) in named.filter(|(_, (_, p))| !p.is_empty()) {
            let colour = PALETTE[i % PALETTE.len()];
            if series.spread.is_some() && points.len() > 1 {
                let upper = points.iter().map(|&(x, y, h)| (x, y + h));
                let lower = points
                    .iter()
                    .rev()
                    .map(|&(x, y, h)| (x, (y - h).max(floor)));
                let band = Polygon::new(upper.chain(lower).collect::<Vec<_>>(), colour.mix(0.2));
                chart.draw_series(std::iter::once(band))?;
            }
            let line = points.iter().map(|&(x, y, _)| (x, y));
            let markers = points.len() <= MARKER_LIMIT;
            chart.draw_series(LineSeries::new(line.clone(), colour.stroke_width(2)))?;
            legend.push((series.label.as_str(), colour, markers));
            if markers {
                chart.draw_series(
                    line.clone()
                        .map(|p| Circle::new(p, radius, colour.filled())),
                )?;
            }
            if lone {
                // A lone point's error bar and value, since there is no curve to read it from.
                for &(x, y, h) in points.iter().filter(|p| p.2 > 0.0) {
                    let bar = [(x, (y - h).max(floor)), (x, y + h)];
                    chart.draw_series(std::iter::once(PathElement::new(
                        bar,
                        colour.stroke_width(2),
                    )))?;
                }
                let style = TextStyle::from((FONT, LABEL_SIZE).into_font())
                    .pos(Pos::new(HPos::Left, VPos::Center))
                    .color(&colour);
                chart.draw_series(line.map(|(x, y)| {
                    EmptyElement::at((x, y))
                        + Text::new(
                            format!("  {}", significant(y)),
                            (radius as i32, 0),
                            style.clone(),
                        )
                }))?;
            }
        }
        // The legend, in pixels: in the column kept free right of the plot, or in its emptiest
        // corner.
        let text_width = widest(area, legend.iter().map(|e| e.0.to_string()))?;
        let (w, h) = (
            (text_width + LEGEND_GLYPH) as i32,
            (2 * LEGEND_PAD + LEGEND_LINE * legend.len() as u32) as i32,
        );
        let (columns, rows) = chart.plotting_area().get_pixel_range();
        let inset = 8;
        let (left, right) = (columns.start + inset, columns.end - w - inset);
        let (top, bottom) = (rows.start + inset, rows.end - h - inset);
        let (x, y) = match (legend_column, self.legend_corner()) {
            (1.., _) => (columns.end + MARGIN as i32, rows.start),
            (_, SeriesLabelPosition::UpperLeft) => (left, top),
            (_, SeriesLabelPosition::LowerLeft) => (left, bottom),
            (_, SeriesLabelPosition::LowerRight) => (right, bottom),
            _ => (right, top),
        };
        let (base_x, base_y) = area.get_base_pixel();
        draw_legend(
            area,
            (x - base_x, y - base_y),
            (w, h),
            &legend,
            radius.min(5),
        )
    }

    /// The corner of the plot area (a 40% × 40% box) holding the fewest points of the curves
    /// (points in between joined ones and a lone point's value label included), so the legend
    /// hides as little as possible; ties prefer the upper right.
    fn legend_corner(&self) -> SeriesLabelPosition {
        let mut points: Vec<(f64, f64)> = Vec::new();
        for curve in &self.curves {
            let at = |&(x, y, _): &(f64, f64, f64)| (self.x.fraction(x), self.y.fraction(y));
            let fractions: Vec<(f64, f64)> = curve.iter().map(at).collect();
            points.extend(fractions.first());
            if let [(x, y)] = fractions[..] {
                // A lone point's value is written to its right.
                points.extend((1..=4).map(|k| (x + 0.05 * f64::from(k), y)));
            }
            for pair in fractions.windows(2) {
                let ((x0, y0), (x1, y1)) = (pair[0], pair[1]);
                points.extend((1..=8).map(|k| {
                    let t = f64::from(k) / 8.0;
                    (x0 + t * (x1 - x0), y0 + t * (y1 - y0))
                }));
            }
        }
        let count = |right: bool, upper: bool| {
            let side = |f: f64, high: bool| if high { f > 0.6 } else { f < 0.4 };
            points
                .iter()
                .filter(|&&(fx, fy)| side(fx, right) && side(fy, upper))
                .count()
        };
        [
            (SeriesLabelPosition::UpperRight, count(true, true)),
            (SeriesLabelPosition::UpperLeft, count(false, true)),
            (SeriesLabelPosition::LowerRight, count(true, false)),
            (SeriesLabelPosition::LowerLeft, count(false, false)),
        ]
        .into_iter()
        .min_by_key(|&(_, n)| n)
        .map_or(SeriesLabelPosition::UpperRight, |(corner, _)| corner)
    }
}

impl Figure for Lines<'_> {
    const SIZE: (u32, u32) = (1024, 640);

    fn draw<DB: DrawingBackend>(&self, root: &DrawingArea<DB, Shift>) -> DrawResult<DB> {
        let note = match (self.lone_points(), self.plot.series.len()) {
            (false, _) => None,
            (true, 1) => Some("a single point: no curve to draw"),
            (true, _) => Some("one point per series: no curve to draw"),
        };
        let body = frame(root, &self.plot.title, note)?;
        let (x, y) = (&self.x, &self.y);
        match (x.log, y.log) {
            (false, false) => self.draw_on(&body, x.linear(), y.linear()),
            (true, false) => self.draw_on(&body, x.logarithmic(), y.linear()),
            (false, true) => self.draw_on(&body, x.linear(), y.logarithmic()),
            (true, true) => self.draw_on(&body, x.logarithmic(), y.logarithmic()),
        }
    }
}

fn drawable(v: f64, log: bool) -> bool {
    v.is_finite() && (!log || v > 0.0)
}

/// The extent of the values seen so far on one axis.
#[derive(Clone, Copy)]
struct Span {
    lo: f64,
    hi: f64,
}

impl Span {
    const EMPTY: Self = Self {
        lo: f64::INFINITY,
        hi: f64::NEG_INFINITY,
    };

    fn include(&mut self, v: f64) {
        self.lo = self.lo.min(v);
        self.hi = self.hi.max(v);
    }

    /// The axis range: the span plus 5% each side (in decades on a log axis), or a unit-sized
    /// window around a single value. `None` if nothing was included.
    fn padded(self, log: bool) -> Option<Range<f64>> {
        if self.lo > self.hi {
            return None;
        }
        let pad = |lo: f64, hi: f64| {
            let width = hi - lo;
            let pad = if width > 0.0 {
                0.05 * width
            } else {
                (0.1 * lo.abs()).max(0.5)
            };
            (lo - pad)..(hi + pad)
        };
        Some(if log {
            let r = pad(self.lo.log10(), self.hi.log10());
            10f64.powf(r.start)..10f64.powf(r.end)
        } else {
            pad(self.lo, self.hi)
        })
    }
}

/// A [`Heatmap`] block-averaged to at most [`MAX_CELLS`] per side, with its colour range.
struct Cells<'a> {
    map: &'a Heatmap,
    /// Cells per side.
    m: usize,
    /// Row-major `m × m` block means; NaN where a block has no finite value.
    cells: Vec<f64>,
    colour_range: Range<f64>,
}

impl<'a> Cells<'a> {
    fn new(map: &'a Heatmap) -> Result<Self, PlotError> {
        let n = map.n;
        if n.checked_mul(n) != Some(map.values.len()) {
            return Err(PlotError::HeatmapShape {
                title: map.title.clone(),
                n,
                len: map.values.len(),
            });
        }
        let block = n.div_ceil(MAX_CELLS).max(1);
        let m = n.div_ceil(block);
        let mut sums = vec![(0.0, 0u32); m * m];
        for (i, row) in map.values.chunks_exact(n.max(1)).enumerate() {
            for (j, &v) in row.iter().enumerate() {
                if v.is_finite() {
                    let cell = &mut sums[(i / block) * m + j / block];
                    cell.0 += v;
                    cell.1 += 1;
                }
            }
        }
        let cells: Vec<f64> = sums
            .into_iter()
            .map(|(sum, count)| {
                if count > 0 {
                    sum / f64::from(count)
                } else {
                    f64::NAN
                }
            })
            .collect();
        let mut span = Span::EMPTY;
        cells
            .iter()
            .filter(|v| v.is_finite())
            .for_each(|&v| span.include(v));
        if span.lo > span.hi {
            return Err(PlotError::NoData {
                title: map.title.clone(),
            });
        }
        // A constant matrix still needs a non-empty scale.
        let colour_range = if span.hi > span.lo {
            span.lo..span.hi
        } else {
            (span.lo - 0.5)..(span.hi + 0.5)
        };
        Ok(Self {
            map,
            m,
            cells,
            colour_range,
        })
    }

    fn colour(&self, v: f64) -> RGBColor {
        if v.is_finite() {
            ViridisRGB::get_color_normalized(v, self.colour_range.start, self.colour_range.end)
        } else {
            MISSING
        }
    }
}

impl Figure for Cells<'_> {
    const SIZE: (u32, u32) = (960, 800);

    fn draw<DB: DrawingBackend>(&self, root: &DrawingArea<DB, Shift>) -> DrawResult<DB> {
        let body = frame(root, &self.map.title, None)?;
        let (width, _) = body.dim_in_pixel();
        let (lo, hi) = (self.colour_range.start, self.colour_range.end);
        let scale = Axis::new(lo..hi, false);
        // The colour bar's column: its margin, the bar, tick labels, the rotated description.
        let bar_width = 30;
        let bar_labels = widest(&body, scale.labels())? + 10 + Y_DESC_ROOM;
        let (main, bar) = body.split_horizontally(width - (2 * MARGIN + bar_width + bar_labels));
        let n = self.map.n as f64;
        // The y range runs from n down to 0 so that row 0 is at the top.
        let (x, y) = (Axis::new(0.0..n, false), Axis::new(n..0.0, false));
        let chart = chart_on(
            &main,
            (&x, &y),
            (x.linear(), y.linear()),
            (&self.map.x_label, &self.map.y_label),
            (false, 0),
        )?;
        let m = self.m as f64;
        let cell = |f: f64| ((f * m) as usize).min(self.m - 1);
        blit(&chart.plotting_area().strip_coord_spec(), |fx, fy| {
            self.colour(self.cells[cell(fy) * self.m + cell(fx)])
        })?;

        // The colour bar spans exactly the rows of the plot area next to it.
        let (_, rows) = chart.plotting_area().get_pixel_range();
        let (_, bar_top) = bar.get_base_pixel();
        let (_, bar_height) = bar.dim_in_pixel();
        let mut bar_chart = ChartBuilder::on(&bar)
            .margin_top(rows.start - bar_top)
            .margin_bottom(bar_top + bar_height as i32 - rows.end)
            .margin_left(MARGIN)
            .margin_right(MARGIN)
            .set_label_area_size(LabelAreaPosition::Right, bar_labels)
            .build_cartesian_2d(0.0..1.0, scale.linear())?;
        blit(&bar_chart.plotting_area().strip_coord_spec(), |_, fy| {
            self.colour(hi - fy * (hi - lo))
        })?;
        let label = |v: &f64| scale.label(*v);
        bar_chart
            .configure_mesh()
            .disable_mesh()
            .disable_x_axis()
            .set_all_tick_mark_size(5)
            .y_desc(&self.map.colorbar_label)
            .y_label_formatter(&label)
            .label_style((FONT, LABEL_SIZE))
            .axis_desc_style((FONT, DESC_SIZE))
            .draw()
    }
}

/// Fills `area` with one image whose pixel colours come from `colour(fx, fy)`, with `fx, fy` the
/// pixel centre as a fraction of the width and height (origin top left).
fn blit<DB: DrawingBackend>(
    area: &DrawingArea<DB, Shift>,
    colour: impl Fn(f64, f64) -> RGBColor,
) -> DrawResult<DB> {
    let (w, h) = area.dim_in_pixel();
    let mut pixels = Vec::with_capacity(w as usize * h as usize * 3);
    for py in 0..h {
        for px in 0..w {
            let fx = (f64::from(px) + 0.5) / f64::from(w);
            let fy = (f64::from(py) + 0.5) / f64::from(h);
            let RGBColor(r, g, b) = colour(fx, fy);
            pixels.extend([r, g, b]);
        }
    }
    let image = BitMapElement::with_owned_buffer((0, 0), (w, h), pixels)
        .ok_or(DrawingAreaErrorKind::LayoutError)?;
    area.draw(&image)
}

#[cfg(test)]
#[allow(clippy::unwrap_used, reason = "a failed unwrap is a failed test")]
mod tests {
    use super::*;

    const PNG_SIGNATURE: &[u8] = b"\x89PNG\r\n\x1a\n";

    /// A fresh stem under the temp dir, unique per test and per process.
    fn stem(name: &str) -> PathBuf {
        std::env::temp_dir().join(format!("dpwalk-plot-{}-{name}", std::process::id()))
    }

    /// Checks both files exist, the PNG is one, and the SVG carries `title` as text; then removes them.
    fn assert_written(stem: &Path, title: &str) {
        let png = std::fs::read(with_extension(stem, "png")).unwrap();
        assert!(png.len() > 1000, "PNG too small: {} bytes", png.len());
        assert!(png.starts_with(PNG_SIGNATURE));
        let svg = std::fs::read_to_string(with_extension(stem, "svg")).unwrap();
        assert!(svg.contains("<svg"));
        assert!(svg.contains(title), "title missing from SVG");
        for extension in ["png", "svg"] {
            std::fs::remove_file(with_extension(stem, extension)).unwrap();
        }
    }

    fn series(label: &str, points: Vec<(f64, f64)>, spread: Option<Vec<f64>>) -> Series {
        Series {
            label: label.into(),
            points,
            spread,
        }
    }

    fn convergence(log: bool) -> LinePlot {
        let decay =
            |rate: f64| (1..=200).map(move |k| (f64::from(k), (-rate * f64::from(k)).exp()));
        let band = |pts: &[(f64, f64)]| pts.iter().map(|&(_, y)| 0.3 * y).collect();
        let a: Vec<_> = decay(0.02).collect();
        let b: Vec<_> = decay(0.05).collect();
        LinePlot {
            title: format!("Convergence (log = {log})"),
            x_label: "step k".into(),
            y_label: "objective gap".into(),
            log_x: log,
            log_y: log,
            series: vec![
                series("sigma = 1", a.clone(), Some(band(&a))),
                series("sigma = 4", b.clone(), Some(band(&b))),
                series(
                    "non-private",
                    vec![(1.0, 0.5), (100.0, 0.01), (200.0, f64::NAN)],
                    None,
                ),
            ],
        }
    }

    #[test]
    fn line_plots_are_written_linear_and_log() {
        for log in [false, true] {
            let plot = convergence(log);
            let stem = stem(&format!("lines-{log}"));
            write_line_plot(&plot, &stem).unwrap();
            assert_written(&stem, &plot.title);
        }
    }

    #[test]
    fn heatmap_is_written_and_large_ones_are_downsampled() {
        let n = 1200;
        let mut values: Vec<f64> = (0..n * n)
            .map(|k| ((k / n) as f64 - (k % n) as f64).abs())
            .collect();
        values[0] = f64::NAN;
        let map = Heatmap {
            title: "Pairwise network epsilon".into(),
            n,
            values,
            x_label: "user j".into(),
            y_label: "observer i".into(),
            colorbar_label: "epsilon".into(),
        };
        let cells = Cells::new(&map).unwrap();
        assert_eq!(cells.m, 400, "1200 = 400 blocks of 3");
        // The first block holds one NaN and eight finite values: it shows their mean.
        assert!((cells.cells[0] - 8.0 / 8.0).abs() < 1e-12);
        let stem = stem("heatmap");
        write_heatmap(&map, &stem).unwrap();
        assert_written(&stem, &map.title);
    }

    #[test]
    fn nothing_finite_is_no_data() {
        let mut plot = convergence(false);
        for s in &mut plot.series {
            s.points.iter_mut().for_each(|p| p.1 = f64::INFINITY);
        }
        let err = write_line_plot(&plot, &stem("nan-lines")).unwrap_err();
        assert!(matches!(err, PlotError::NoData { .. }), "{err}");

        // On a log axis, non-positive values are not drawable either.
        let plot = LinePlot {
            log_y: true,
            series: vec![series("zero", vec![(1.0, 0.0), (2.0, -1.0)], None)],
            ..convergence(false)
        };
        let err = write_line_plot(&plot, &stem("log-zero")).unwrap_err();
        assert!(matches!(err, PlotError::NoData { .. }), "{err}");

        let map = Heatmap {
            title: "all missing".into(),
            n: 3,
            values: vec![f64::NAN; 9],
            x_label: "j".into(),
            y_label: "i".into(),
            colorbar_label: "eps".into(),
        };
        let err = write_heatmap(&map, &stem("nan-map")).unwrap_err();
        assert!(matches!(err, PlotError::NoData { .. }), "{err}");
    }

    #[test]
    fn malformed_input_is_rejected() {
        let plot = LinePlot {
            series: vec![series(
                "short",
                vec![(1.0, 1.0), (2.0, 2.0)],
                Some(vec![0.1]),
            )],
            ..convergence(false)
        };
        let err = write_line_plot(&plot, &stem("spread")).unwrap_err();
        assert!(
            matches!(
                err,
                PlotError::SpreadLength {
                    points: 2,
                    spread: 1,
                    ..
                }
            ),
            "{err}"
        );

        let map = Heatmap {
            title: "ragged".into(),
            n: 3,
            values: vec![1.0; 8],
            x_label: "j".into(),
            y_label: "i".into(),
            colorbar_label: "eps".into(),
        };
        let err = write_heatmap(&map, &stem("ragged")).unwrap_err();
        assert!(
            matches!(err, PlotError::HeatmapShape { n: 3, len: 8, .. }),
            "{err}"
        );
    }

    #[test]
    fn legend_avoids_the_data() {
        let rising = LinePlot {
            series: vec![series(
                "up",
                (0..50).map(|k| (f64::from(k), f64::from(k))).collect(),
                None,
            )],
            ..convergence(false)
        };
        // A diagonal from lower left to upper right leaves the other two corners free.
        let corner = Lines::new(&rising).unwrap().legend_corner();
        assert!(
            matches!(corner, SeriesLabelPosition::UpperLeft),
            "{corner:?}"
        );
        let falling = convergence(true);
        let corner = Lines::new(&falling).unwrap().legend_corner();
        assert!(
            matches!(corner, SeriesLabelPosition::LowerLeft),
            "{corner:?}"
        );
    }

    #[test]
    fn every_axis_gets_enough_readable_tick_labels() {
        let labels = |lo: f64, hi: f64, log: bool| {
            let axis = Axis::new(lo..hi, log);
            axis.labels().collect::<Vec<_>>()
        };
        // Under a decade: intermediate labels (the only power of ten in this range is 1).
        assert_eq!(labels(0.3, 2.0, true), ["0.3", "0.5", "1", "2"]);
        assert_eq!(
            labels(0.55, 3.6, true),
            ["0.6", "0.7", "0.8", "0.9", "1", "2", "3"]
        );
        // 1 … 9 per decade would leave 1 to 1.9 unlabelled: linear steps instead.
        assert_eq!(
            labels(0.55, 1.9, true),
            ["0.6", "0.8", "1.0", "1.2", "1.4", "1.6", "1.8"]
        );
        // Well under a decade, with no power of ten inside: linear steps.
        assert_eq!(
            labels(0.0296, 0.0345, true),
            ["0.030", "0.031", "0.032", "0.033", "0.034"]
        );
        // Two decades: 1 and 3 per decade; five: powers of ten; many: every other power.
        assert_eq!(labels(0.02, 1.8, true), ["0.03", "0.1", "0.3", "1"]);
        assert_eq!(labels(0.8, 1.2e3, true), ["1", "10", "100", "1000"]);
        assert_eq!(
            labels(1e-9, 2e5, true),
            ["10⁻⁸", "10⁻⁶", "10⁻⁴", "10⁻²", "10⁰", "10²", "10⁴"]
        );
        // Linear: one notation per axis, the same decimals on every label.
        assert_eq!(labels(-0.3, 10.7, false), ["0", "2", "4", "6", "8", "10"]);
        assert_eq!(
            labels(0.0, 0.7, false),
            ["0.0", "0.1", "0.2", "0.3", "0.4", "0.5", "0.6", "0.7"]
        );
        assert_eq!(labels(1e4, 2.05e5, false).len(), 10);
        assert_eq!(
            labels(0.0, 4e6, false),
            ["0", "10⁶", "2×10⁶", "3×10⁶", "4×10⁶"]
        );
        for (lo, hi, log) in [
            (0.3, 2.0, true),
            (3.6e3, 4.4e3, false),
            (0.99, 1.01, true),
            (1.0, 1e30, true),
        ] {
            let n = Axis::new(lo..hi, log).ticks.len();
            assert!((3..=MAX_TICKS).contains(&n), "{lo}..{hi}: {n} ticks");
        }
    }

    #[test]
    fn a_single_point_is_marked_and_said() {
        let plot = LinePlot {
            title: "one evaluation".into(),
            log_y: true,
            series: vec![series("swarm", vec![(4000.0, 0.4248)], Some(vec![0.0]))],
            ..convergence(false)
        };
        let stem = stem("single");
        write_line_plot(&plot, &stem).unwrap();
        let svg = std::fs::read_to_string(with_extension(&stem, "svg")).unwrap();
        assert!(svg.contains("a single point: no curve to draw"));
        assert!(
            svg.contains("0.4248"),
            "the point's value is written beside it"
        );
        assert_written(&stem, &plot.title);
    }

    #[test]
    fn titles_wrap_at_words() {
        let width = |s: &str| 10 * s.chars().count() as u32;
        assert_eq!(wrap("a bb ccc dddd", width, 60), ["a bb", "ccc", "dddd"]);
        assert_eq!(wrap("unbreakable", width, 30), ["unbreakable"]);
    }

    #[test]
    fn ranges_have_margins_and_survive_single_values() {
        let span = |lo, hi| Span { lo, hi };
        assert_eq!(span(0.0, 10.0).padded(false), Some(-0.5..10.5));
        assert_eq!(span(3.0, 3.0).padded(false), Some(2.5..3.5));
        let log = span(1.0, 100.0).padded(true).unwrap();
        assert!(
            (log.start - 10f64.powf(-0.1)).abs() < 1e-12
                && (log.end - 10f64.powf(2.1)).abs() < 1e-9
        );
        assert_eq!(Span::EMPTY.padded(false), None);
        let ticks = [20.0, 0.1 + 0.2, 0.0, -0.5].map(trimmed);
        assert_eq!(ticks, ["20", "0.3", "0", "-0.5"]);
        let ticks = [1e-5, 2.5e7, 1.0, -3e-4, 9.996e3].map(scientific);
        assert_eq!(ticks, ["10⁻⁵", "2.5×10⁷", "10⁰", "-3×10⁻⁴", "10⁴"]);
        assert_eq!(
            with_extension(Path::new("/x/eps-0.5"), "png"),
            Path::new("/x/eps-0.5.png")
        );
    }
}
