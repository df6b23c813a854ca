//! Heatmaps: an `n × n` matrix block-averaged to at most [`MAX_CELLS`] per side, drawn as one
//! raster image with a viridis colour bar beside it.

use std::ops::Range;

use plotters::coord::Shift;
use plotters::prelude::*;
use plotters::style::colors::colormaps::ViridisRGB;

use super::axis::{Axis, Span};
use super::figure::{
    DESC_SIZE, DrawResult, FONT, Figure, LABEL_SIZE, MARGIN, Y_DESC_ROOM, chart_on, frame, widest,
};
use super::{Heatmap, PlotError};

/// Heatmaps larger than this many cells per side are block-averaged down before drawing: finer
/// detail would not survive the ~700-pixel plot area anyway.
const MAX_CELLS: usize = 500;
/// Missing (non-finite) heatmap cells: a grey that the viridis scale never produces.
const MISSING: RGBColor = RGBColor(190, 190, 190);

/// A [`Heatmap`] block-averaged to at most [`MAX_CELLS`] per side, with its colour range.
pub(super) struct Cells<'a> {
    map: &'a Heatmap,
    /// Cells per side.
    pub(super) m: usize,
    /// Row-major `m × m` block means; NaN where a block has no finite value.
    pub(super) cells: Vec<f64>,
    colour_range: Range<f64>,
}

impl<'a> Cells<'a> {
    pub(super) fn new(map: &'a Heatmap) -> Result<Self, PlotError> {
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
