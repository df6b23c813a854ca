//! The figures end to end (both files written, titles in the SVG, refusals) and the layout
//! decisions behind them (ticks, ranges, legend corner, wrapping).

#![allow(clippy::unwrap_used, reason = "a failed unwrap is a failed test")]

use super::axis::{Axis, MAX_TICKS, Span, scientific, trimmed};
use super::figure::{with_extension, wrap};
use super::heatmap::Cells;
use super::lines::Lines;
use super::*;
use plotters::prelude::SeriesLabelPosition;

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
    let decay = |rate: f64| (1..=200).map(move |k| (f64::from(k), (-rate * f64::from(k)).exp()));
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
        (log.start - 10f64.powf(-0.1)).abs() < 1e-12 && (log.end - 10f64.powf(2.1)).abs() < 1e-9
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

#[test]
fn a_plot_with_data_writes_its_points_and_caption() {
    let plot = LinePlot {
        series: vec![
            series("a \"quoted\", label", vec![(1.0, 0.5), (2.0, 0.25)], None),
            series("banded", vec![(1.0, 2.0)], Some(vec![0.1])),
        ],
        ..convergence(false)
    };
    let stem = stem("with-data");
    let caption = "what the figure leaves out";
    write_line_plot_with_data(&plot, Some(caption), &stem).unwrap();
    let csv = std::fs::read_to_string(with_extension(&stem, "csv")).unwrap();
    assert_eq!(
        csv,
        "# what the figure leaves out\nseries,x,y,spread\n\"a \"\"quoted\"\", label\",1,0.5,\n\"a \"\"quoted\"\", label\",2,0.25,\n\"banded\",1,2,0.1\n"
    );
    let svg = std::fs::read_to_string(with_extension(&stem, "svg")).unwrap();
    assert!(svg.contains(caption), "the caption is drawn");
    std::fs::remove_file(with_extension(&stem, "csv")).unwrap();
    assert_written(&stem, &plot.title);
}

#[test]
fn point_notes_are_drawn_beside_their_points_and_written_last() {
    let plot = LinePlot {
        series: vec![
            series("a", vec![(1.0, 0.5), (2.0, 0.25), (3.0, f64::NAN)], None),
            series("b", vec![(1.0, 2.0)], Some(vec![0.1])),
        ],
        ..convergence(false)
    };
    let notes = PointNotes {
        column: "total".into(),
        prefix: "ε = ".into(),
        values: vec![vec![0.125, f64::NAN, 7.0], vec![3.5]],
    };
    let stem = stem("with-notes");
    write_line_plot_with_notes(&plot, Some("c"), &notes, &stem).unwrap();
    let csv = std::fs::read_to_string(with_extension(&stem, "csv")).unwrap();
    // A non-finite note is an empty field; a point that cannot be drawn keeps its row.
    assert_eq!(
        csv,
        "# c\nseries,x,y,spread,total\n\"a\",1,0.5,,0.125\n\"a\",2,0.25,,\n\"a\",3,NaN,,7\n\"b\",1,2,0.1,3.5\n"
    );
    let svg = std::fs::read_to_string(with_extension(&stem, "svg")).unwrap();
    assert!(svg.contains("ε = 0.125") && svg.contains("ε = 3.5"));
    assert!(
        svg.contains("ε = n/a"),
        "a non-finite note beside a drawn point"
    );
    assert!(
        !svg.contains("ε = 7"),
        "no note for a point that is not drawn"
    );
    std::fs::remove_file(with_extension(&stem, "csv")).unwrap();
    assert_written(&stem, &plot.title);
    // One value per point of every series noted, or nothing is written.
    let short = PointNotes {
        values: vec![vec![0.125], vec![3.5]],
        ..notes.clone()
    };
    assert!(matches!(
        write_line_plot_with_notes(&plot, None, &short, &stem),
        Err(PlotError::NotesShape { .. })
    ));
    let more = PointNotes {
        values: vec![vec![0.125, 1.0, 7.0], vec![3.5], vec![1.0]],
        ..notes.clone()
    };
    assert!(matches!(
        write_line_plot_with_notes(&plot, None, &more, &stem),
        Err(PlotError::NotesShape { .. })
    ));
    // Series after the noted ones (reference lines) carry no note: an empty field.
    let first = PointNotes {
        values: vec![vec![0.125, f64::NAN, 7.0]],
        ..notes
    };
    write_line_plot_with_notes(&plot, None, &first, &stem).unwrap();
    let csv = std::fs::read_to_string(with_extension(&stem, "csv")).unwrap();
    assert!(csv.ends_with("\"b\",1,2,0.1,\n"), "{csv}");
    let svg = std::fs::read_to_string(with_extension(&stem, "svg")).unwrap();
    assert!(!svg.contains("ε = 3.5"));
    std::fs::remove_file(with_extension(&stem, "csv")).unwrap();
    assert_written(&stem, &plot.title);
}
