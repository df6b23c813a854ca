//! What every figure shares: the embedded font, rendering one figure to both PNG and SVG, the
//! title frame, and a chart with its axes, tick labels and grid.

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use plotters::coord::Shift;
use plotters::coord::ranged1d::{AsRangedCoord, ValueFormatter};
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

use super::PlotError;
use super::axis::Axis;

/// The family name every text style here asks for; it is also plotters' default label font.
pub(super) const FONT: &str = "sans-serif";
const FONT_BYTES: &[u8] = include_bytes!("../../assets/DejaVuSans.ttf");

/// A validated figure that can draw itself on any plotters backend, so the PNG and the SVG come
/// from the same code.
pub(super) trait Figure {
    const SIZE: (u32, u32);
    fn draw<DB: DrawingBackend>(&self, root: &DrawingArea<DB, Shift>) -> DrawResult<DB>;
}

/// A chart on the coordinates `X`, `Y` build into.
pub(super) type Chart<'a, DB, X, Y> = ChartContext<
    'a,
    DB,
    Cartesian2d<<X as AsRangedCoord>::CoordDescType, <Y as AsRangedCoord>::CoordDescType>,
>;

pub(super) type DrawResult<DB> =
    Result<(), DrawingAreaErrorKind<<DB as DrawingBackend>::ErrorType>>;

pub(super) fn write_figure<F: Figure>(figure: &F, stem: &Path) -> Result<(), PlotError> {
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
pub(super) fn with_extension(stem: &Path, extension: &str) -> PathBuf {
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
pub(super) const TITLE_SIZE: u32 = 28;
/// The smallest title font before the title is wrapped onto more lines.
pub(super) const TITLE_MIN_SIZE: u32 = 22;
pub(super) const LABEL_SIZE: u32 = 16;
pub(super) const DESC_SIZE: u32 = 20;
pub(super) const MARGIN: u32 = 20;
/// Room under the x axis for tick labels and the axis description.
pub(super) const X_LABEL_AREA: u32 = 60;
/// Room beside a y axis for the rotated axis description, plus the gap to the tick labels.
pub(super) const Y_DESC_ROOM: u32 = 40;

/// Draws `title` centred across the top of `root`, shrunk and then wrapped to fit its width, with
/// `note` in grey under it (wrapped too), and returns the area below them: the one place where a figure's title
/// and margins are laid out.
pub(super) fn frame<DB: DrawingBackend>(
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
        let size = LABEL_SIZE + 2;
        let style = TextStyle::from((FONT, size).into_font())
            .pos(Pos::new(HPos::Center, VPos::Top))
            .color(&grey);
        let height = measure(note, size)?.1 + 6;
        let width = |text: &str| measure(text, size).map_or(u32::MAX, |(w, _)| w);
        for line in wrap(note, width, room) {
            root.draw(&Text::new(line, (centre, used as i32), style.clone()))?;
            used += height;
        }
    }
    Ok(root.split_vertically(used + MARGIN / 2).1)
}

/// Greedy word wrap of `text` into lines no wider than `room` as `width` measures them; a single
/// word wider than `room` gets a line of its own.
pub(super) fn wrap(text: &str, width: impl Fn(&str) -> u32, room: u32) -> Vec<String> {
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
pub(super) fn widest<DB: DrawingBackend>(
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

/// Builds a chart on `area` with label areas sized to `y`'s widest tick label and `right` pixels
/// kept free on the right (for a legend), and draws its axes, tick labels and (if `grid`) grid
/// lines: shared by line plots and heatmaps.
pub(super) fn chart_on<'a, DB, X, Y>(
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
