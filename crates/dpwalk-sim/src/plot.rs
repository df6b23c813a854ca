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
use plotters::coord::ranged1d::{AsRangedCoord, ValueFormatter};
use plotters::prelude::*;
use plotters::style::colors::colormaps::ViridisRGB;

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

/// A [`LinePlot`] with its points cleaned and its axis ranges chosen.
struct Lines<'a> {
    plot: &'a LinePlot,
    /// Kept points `(x, y, band half-width)` per series, parallel to `plot.series`.
    curves: Vec<Vec<(f64, f64, f64)>>,
    x: Range<f64>,
    y: Range<f64>,
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
            (Some(x), Some(y)) => Ok(Self { plot, curves, x, y }),
            _ => Err(PlotError::NoData {
                title: plot.title.clone(),
            }),
        }
    }

    /// Draws on axes of any kind; [`Figure::draw`] picks linear or log for each.
    fn draw_on<DB, X, Y>(&self, root: &DrawingArea<DB, Shift>, x: X, y: Y) -> DrawResult<DB>
    where
        DB: DrawingBackend,
        X: AsRangedCoord<Value = f64>,
        Y: AsRangedCoord<Value = f64>,
        X::CoordDescType: ValueFormatter<f64>,
        Y::CoordDescType: ValueFormatter<f64>,
    {
        let mut chart = ChartBuilder::on(root)
            .caption(&self.plot.title, (FONT, 28))
            .margin(20)
            .x_label_area_size(55)
            .y_label_area_size(85)
            .build_cartesian_2d(x, y)?;
        chart
            .configure_mesh()
            .x_desc(&self.plot.x_label)
            .y_desc(&self.plot.y_label)
            .x_label_formatter(&tick_label)
            .y_label_formatter(&tick_label)
            .label_style((FONT, 16))
            .axis_desc_style((FONT, 20))
            .draw()?;

        // On a log axis a band reaching zero or below is cut at the axis bottom.
        let floor = if self.plot.log_y {
            self.y.start
        } else {
            f64::NEG_INFINITY
        };
        // Colours follow the series index, so a series keeps its colour when another is empty.
        let named = self.plot.series.iter().zip(&self.curves).enumerate();
        for (i, (series, points)) in named.filter(|(_, (_, p))| !p.is_empty()) {
            let colour = PALETTE[i % PALETTE.len()];
            if series.spread.is_some() {
                let upper = points.iter().map(|&(x, y, h)| (x, y + h));
                let lower = points
                    .iter()
                    .rev()
                    .map(|&(x, y, h)| (x, (y - h).max(floor)));
                let band = Polygon::new(upper.chain(lower).collect::<Vec<_>>(), colour.mix(0.2));
                chart.draw_series(std::iter::once(band))?;
            }
            let line = points.iter().map(|&(x, y, _)| (x, y));
            chart
                .draw_series(LineSeries::new(line.clone(), colour.stroke_width(2)))?
                .label(&series.label)
                .legend(move |(x, y)| {
                    PathElement::new([(x, y), (x + 24, y)], colour.stroke_width(2))
                });
            if points.len() <= MARKER_LIMIT {
                chart.draw_series(line.map(|p| Circle::new(p, 3, colour.filled())))?;
            }
        }
        chart
            .configure_series_labels()
            .position(self.legend_corner())
            .label_font((FONT, 16))
            .background_style(WHITE.mix(0.85))
            .border_style(BLACK.mix(0.5))
            .draw()
    }

    /// The corner of the plot area (a 40% × 40% box) holding the fewest points, so the legend
    /// hides as little as possible; ties prefer the upper right.
    fn legend_corner(&self) -> SeriesLabelPosition {
        let fraction = |v: f64, r: &Range<f64>, log: bool| {
            if log {
                (v / r.start).ln() / (r.end / r.start).ln()
            } else {
                (v - r.start) / (r.end - r.start)
            }
        };
        let points: Vec<(f64, f64)> = (self.curves.iter().flatten())
            .map(|&(x, y, _)| {
                let fx = fraction(x, &self.x, self.plot.log_x);
                (fx, fraction(y, &self.y, self.plot.log_y))
            })
            .collect();
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
        let (x, y) = (self.x.clone(), self.y.clone());
        match (self.plot.log_x, self.plot.log_y) {
            (false, false) => self.draw_on(root, x, y),
            (true, false) => self.draw_on(root, x.log_scale(), y),
            (false, true) => self.draw_on(root, x, y.log_scale()),
            (true, true) => self.draw_on(root, x.log_scale(), y.log_scale()),
        }
    }
}

/// Tick labels without plotters' trailing `.0` on whole numbers, and in exponent form outside
/// [1e-3, 1e5), where fixed notation gets long.
fn tick_label(v: &f64) -> String {
    let magnitude = v.abs();
    if magnitude == 0.0 {
        "0".into()
    } else if (1e-3..1e5).contains(&magnitude) {
        let fixed = format!("{v:.6}");
        fixed.trim_end_matches('0').trim_end_matches('.').into()
    } else {
        let exp = format!("{v:.3e}");
        match exp.split_once('e') {
            Some((mantissa, power)) => {
                let mantissa = mantissa.trim_end_matches('0').trim_end_matches('.');
                format!("{mantissa}e{power}")
            }
            None => exp,
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
        let (width, height) = Self::SIZE;
        let (main, bar) = root.split_horizontally(width - 170);
        let n = self.map.n as f64;
        // The y range runs from n down to 0 so that row 0 is at the top.
        let mut chart = ChartBuilder::on(&main)
            .caption(&self.map.title, (FONT, 28))
            .margin(20)
            .x_label_area_size(55)
            .y_label_area_size(75)
            .build_cartesian_2d(0.0..n, n..0.0)?;
        let m = self.m as f64;
        let cell = |f: f64| ((f * m) as usize).min(self.m - 1);
        blit(&chart.plotting_area().strip_coord_spec(), |fx, fy| {
            self.colour(self.cells[cell(fy) * self.m + cell(fx)])
        })?;
        chart
            .configure_mesh()
            .disable_mesh()
            .set_all_tick_mark_size(5)
            .x_desc(&self.map.x_label)
            .y_desc(&self.map.y_label)
            .x_label_formatter(&tick_label)
            .y_label_formatter(&tick_label)
            .label_style((FONT, 16))
            .axis_desc_style((FONT, 20))
            .draw()?;

        // The colour bar spans exactly the rows of the plot area next to it.
        let (_, rows) = chart.plotting_area().get_pixel_range();
        let (lo, hi) = (self.colour_range.start, self.colour_range.end);
        let mut bar_chart = ChartBuilder::on(&bar)
            .margin_top(rows.start)
            .margin_bottom(height as i32 - rows.end)
            .margin_left(10)
            .margin_right(10)
            .set_label_area_size(LabelAreaPosition::Right, 110)
            .build_cartesian_2d(0.0..1.0, lo..hi)?;
        blit(&bar_chart.plotting_area().strip_coord_spec(), |_, fy| {
            self.colour(hi - fy * (hi - lo))
        })?;
        bar_chart
            .configure_mesh()
            .disable_mesh()
            .disable_x_axis()
            .set_all_tick_mark_size(5)
            .y_desc(&self.map.colorbar_label)
            .y_label_formatter(&tick_label)
            .label_style((FONT, 16))
            .axis_desc_style((FONT, 20))
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
        let ticks = [20.0, 0.1 + 0.2, 1e-5, 2.5e7, 0.0, -0.5].map(|v| tick_label(&v));
        assert_eq!(ticks, ["20", "0.3", "1e-5", "2.5e7", "0", "-0.5"]);
        assert_eq!(
            with_extension(Path::new("/x/eps-0.5"), "png"),
            Path::new("/x/eps-0.5.png")
        );
    }
}
