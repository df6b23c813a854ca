//! Line plots: each series a line with an optional shaded band, markers on short series, a lone
//! point marked with its value, and the legend in the emptiest corner (or a column of its own).

use plotters::coord::Shift;
use plotters::coord::ranged1d::{AsRangedCoord, ValueFormatter};
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

use super::axis::{Axis, Span, significant};
use super::figure::{DrawResult, FONT, Figure, LABEL_SIZE, MARGIN, chart_on, frame, widest};
use super::{LinePlot, PlotError, PointNotes};

/// Series with at most this many points also get a marker per point, so that a short sweep (or a
/// single point, which draws no line) stays visible.
const MARKER_LIMIT: usize = 40;
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
/// Most series whose legend goes inside the plot area.
const LEGEND_INSIDE: usize = 5;
/// A legend entry's width beside its text: the line and marker, margins, the box.
const LEGEND_GLYPH: u32 = 2 * LEGEND_PAD + 40;
/// A legend's inner margin and line height.
const LEGEND_PAD: u32 = 8;
const LEGEND_LINE: u32 = 22;

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

/// A [`LinePlot`] with its points cleaned and its axes chosen.
pub(super) struct Lines<'a> {
    plot: &'a LinePlot,
    /// What the figure assumes or leaves out, in grey under the title.
    pub(super) caption: Option<&'a str>,
    /// Kept points `(x, y, band half-width)` per series, parallel to `plot.series`.
    curves: Vec<Vec<(f64, f64, f64)>>,
    /// Each kept point's index in its series' `points`, parallel to `curves`.
    kept: Vec<Vec<usize>>,
    /// A second figure written beside every kept point.
    notes: Option<&'a PointNotes>,
    x: Axis,
    y: Axis,
}

impl<'a> Lines<'a> {
    pub(super) fn new(plot: &'a LinePlot) -> Result<Self, PlotError> {
        let (mut x_span, mut y_span) = (Span::EMPTY, Span::EMPTY);
        let mut curves = Vec::with_capacity(plot.series.len());
        let mut kept_index = Vec::with_capacity(plot.series.len());
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
            let mut index = Vec::with_capacity(series.points.len());
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
                index.push(i);
            }
            let dropped = series.points.len() - kept.len();
            if dropped > 0 {
                let (plot, series) = (&plot.title, &series.label);
                tracing::warn!(plot, series, dropped, "dropped points that cannot be drawn");
            }
            curves.push(kept);
            kept_index.push(index);
        }
        match (x_span.padded(plot.log_x), y_span.padded(plot.log_y)) {
            (Some(x), Some(y)) => Ok(Self {
                plot,
                caption: None,
                curves,
                kept: kept_index,
                notes: None,
                x: Axis::new(x, plot.log_x),
                y: Axis::new(y, plot.log_y),
            }),
            _ => Err(PlotError::NoData {
                title: plot.title.clone(),
            }),
        }
    }

    /// Writes `notes` beside the points, after checking they give one value per point of each
    /// of the first series (those after them, reference lines, carry none).
    pub(super) fn set_notes(&mut self, notes: &'a PointNotes) -> Result<(), PlotError> {
        let series = &self.plot.series;
        let fits = notes.values.len() <= series.len()
            && notes
                .values
                .iter()
                .zip(series)
                .all(|(v, s)| v.len() == s.points.len());
        if !fits {
            return Err(PlotError::NotesShape {
                column: notes.column.clone(),
            });
        }
        self.notes = Some(notes);
        Ok(())
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
            if let Some((notes, values)) = self
                .notes
                .and_then(|notes| Some((notes, notes.values.get(i)?)))
            {
                // In the series' colour, right of each marker (a last point near the right edge:
                // left of it, inside the figure), above or below it, away from the segment that
                // leaves the marker on that side, so that the text does not sit on the line.
                let font = (FONT, LABEL_SIZE - 2).into_font();
                let kept = &self.kept[i];
                let gap = radius as i32 + 2;
                let last = points.len().saturating_sub(1);
                let placed = points.iter().zip(kept).enumerate();
                chart.draw_series(placed.map(|(j, (&(x, y, _), &k))| {
                    let v = values[k];
                    let text = if v.is_finite() {
                        format!("{}{}", notes.prefix, significant(v))
                    } else {
                        format!("{}n/a", notes.prefix)
                    };
                    let left = j == last && self.x.fraction(x) > 0.8;
                    let (side, dx, beside) = if left {
                        (
                            HPos::Right,
                            -gap,
                            j.checked_sub(1).and_then(|p| points.get(p)),
                        )
                    } else {
                        (HPos::Left, gap, points.get(j + 1))
                    };
                    let (level, dy) = match beside {
                        Some(&(_, other, _)) if other > y => (VPos::Top, gap),
                        _ => (VPos::Bottom, -gap),
                    };
                    let style = TextStyle::from(font.clone())
                        .pos(Pos::new(side, level))
                        .color(&colour);
                    EmptyElement::at((x, y)) + Text::new(text, (dx, dy), style)
                }))?;
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
    pub(super) fn legend_corner(&self) -> SeriesLabelPosition {
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
        let lone = match (self.lone_points(), self.plot.series.len()) {
            (false, _) => None,
            (true, 1) => Some("a single point: no curve to draw"),
            (true, _) => Some("one point per series: no curve to draw"),
        };
        let note = match (lone, self.caption) {
            (Some(lone), Some(caption)) => Some(format!("{caption} ({lone})")),
            (lone, caption) => lone.or(caption).map(str::to_string),
        };
        let body = frame(root, &self.plot.title, note.as_deref())?;
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
