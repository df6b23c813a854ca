//! Axes: the range a set of values needs ([`Span`]), the values that get a tick label and the
//! lighter grid lines between them, and how those labels are written (one notation per axis).

use std::ops::Range;

use plotters::coord::combinators::LogCoord;
use plotters::coord::ranged1d::{DefaultFormatting, KeyPointHint, Ranged};
use plotters::coord::types::RangedCoordf64;
use plotters::prelude::*;

/// Tick labels an axis gets at least (when its range allows it) and at most.
const MIN_TICKS: usize = 4;
pub(super) const MAX_TICKS: usize = 11;
/// The largest share of a log axis (in decades) left without a tick label, where avoidable.
const MAX_GAP: f64 = 0.4;

/// One axis: its range (start to end as drawn; a reversed range draws from the top down), the
/// values that get a tick label, the lighter grid lines between them, and how labels are written.
#[derive(Debug, Clone)]
pub(super) struct Axis {
    pub(super) range: Range<f64>,
    pub(super) log: bool,
    pub(super) ticks: Vec<f64>,
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
    pub(super) fn new(range: Range<f64>, log: bool) -> Self {
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

    pub(super) fn label(&self, v: f64) -> String {
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

    pub(super) fn labels(&self) -> impl Iterator<Item = String> + '_ {
        self.ticks.iter().map(|&v| self.label(v))
    }

    pub(super) fn linear(&self) -> Ticked<RangedCoordf64> {
        self.ticked(self.range.clone().into())
    }

    pub(super) fn logarithmic(&self) -> Ticked<LogCoord<f64>> {
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
    pub(super) fn fraction(&self, v: f64) -> f64 {
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
pub(super) struct Ticked<R> {
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
pub(super) fn trimmed(v: f64) -> String {
    let fixed = format!("{v:.6}");
    let text = fixed.trim_end_matches('0').trim_end_matches('.');
    if text == "-0" {
        "0".into()
    } else {
        text.into()
    }
}

/// `m×10ᵉ` with at most three significant digits, or `10ᵉ` for a power of ten.
pub(super) fn scientific(v: f64) -> String {
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

/// The extent of the values seen so far on one axis.
#[derive(Clone, Copy)]
pub(super) struct Span {
    pub(super) lo: f64,
    pub(super) hi: f64,
}

impl Span {
    pub(super) const EMPTY: Self = Self {
        lo: f64::INFINITY,
        hi: f64::NEG_INFINITY,
    };

    pub(super) fn include(&mut self, v: f64) {
        self.lo = self.lo.min(v);
        self.hi = self.hi.max(v);
    }

    /// The axis range: the span plus 5% each side (in decades on a log axis), or a unit-sized
    /// window around a single value. `None` if nothing was included.
    pub(super) fn padded(self, log: bool) -> Option<Range<f64>> {
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
