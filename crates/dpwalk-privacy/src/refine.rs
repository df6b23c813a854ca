//! The best order between the orders of a grid: what [`crate::rdp::RdpCurve::to_dp_refined`]
//! searches for a curve that can be computed at any order.
//!
//! An RDP figure is a minimum over orders of a conversion ([`crate::rdp`]); on a grid it sits
//! above the minimum over every order by what the grid misses near the best one. On the default
//! grid that is up to 0.7 % for ε ≥ 0.1 at δ = 1e-6 (Gaussian-shaped curves, worst near
//! ε = 0.12, best order about 143), but the network view is computed on every sixth order
//! ([`crate::network::mixture::network_orders`]: each order costs a whole mixture), and where its
//! curve has a kink (the dropped paths' term taking over) the grid missed up to 7 % in the figure
//! (100 users, σ = 20, K = 100) and 18 % in a calibrated σ (1,000 users, 10⁵ steps).
//!
//! # The search
//! On `t = ln(α − 1)` (the grid's spacing is roughly geometric in `α − 1`), from the bracket of
//! the best grid order and its two neighbours (one at either end of the grid, which the search
//! never leaves), a golden-section search ([`search`]): each probe goes into the larger side of
//! the bracket at the golden ratio and the bracket shrinks around the best point seen, until it is
//! [`WIDTH`] wide in `t` or [`MAX_PROBES`] orders have been computed. For the classic conversion
//! `(f(α) + ln 1/δ)/(α − 1)` with `f(α) = (α−1)ε(α)` convex (true of every Rényi divergence) the
//! objective decreases then increases, so the search converges to the best order in the bracket;
//! elsewhere it is a heuristic. Either way every order gives a valid bound, so the figure is the
//! smallest ε seen, never less than what the grid gave. With a bracket of `WIDTH` the best order
//! is missed by at most `WIDTH/2` in `t`, which costs a Gaussian-shaped figure at most
//! `(WIDTH/2)²/2 ≈ 1.3e-5` of itself.
//!
//! # The orders probed
//! Each probe is rounded to three significant digits of `α − 1` (so `11.8`, `1.0123`, `124`):
//! the printed order reads as what was computed, and the rounding moves `t` by at most
//! `0.5 %`, within the bracket's precision.

/// The bracket's width in `t = ln(α − 1)` at which the search stops (module docs).
pub const WIDTH: f64 = 0.01;

/// The most orders one search computes: the widest bracket of the network view's orders (3.2 in
/// `t`, between 1.01 and 1.25) reaches [`WIDTH`] in 12 probes (each shrinks it by about 0.618).
/// What cost estimates add per figure.
pub const MAX_PROBES: usize = 16;

/// `1 − 1/φ`, the golden section.
const GOLDEN: f64 = 0.381_966_011_250_105_1;

/// `α` rounded to three significant digits of `α − 1` (module docs).
pub fn round_order(alpha: f64) -> f64 {
    let excess = alpha - 1.0;
    if !(excess > 0.0 && excess.is_finite()) {
        return alpha;
    }
    // Decimal places that keep three significant digits of α − 1.
    let places = 2 - excess.log10().floor() as i32;
    let rounded = if places >= 0 {
        let scale = 10f64.powi(places);
        (alpha * scale).round() / scale
    } else {
        let scale = 10f64.powi(-places);
        (alpha / scale).round() * scale
    };
    if rounded > 1.0 { rounded } else { alpha }
}

/// The order, within `[lo, hi]`, with the smallest `objective` found by the search of the module
/// docs, starting from `mid` (`lo ≤ mid ≤ hi`, `objective(mid) = at_mid` no larger than at either
/// end), and that smallest value. `objective` returns `+∞` where it has no value; it is called at
/// most [`MAX_PROBES`] times, never at `lo`, `mid` or `hi`. Errors from `objective` stop the
/// search.
pub fn search<E>(
    lo: f64,
    mid: f64,
    hi: f64,
    at_mid: f64,
    mut objective: impl FnMut(f64) -> Result<f64, E>,
) -> Result<(f64, f64), E> {
    let t = |alpha: f64| (alpha - 1.0).ln();
    let (mut a, mut b, mut c) = (t(lo), t(mid), t(hi));
    let (mut best_order, mut best) = (mid, at_mid);
    for _ in 0..MAX_PROBES {
        if c - a <= WIDTH {
            break;
        }
        let right = c - b > b - a;
        let x = if right {
            b + GOLDEN * (c - b)
        } else {
            b - GOLDEN * (b - a)
        };
        let order = round_order(1.0 + x.exp());
        let x = t(order);
        // Rounded onto a point already known: the bracket is as fine as the rounding.
        if !(x > a && x < c) || x == b {
            break;
        }
        let value = objective(order)?;
        if value < best {
            if x > b {
                a = b;
            } else {
                c = b;
            }
            (b, best, best_order) = (x, value, order);
        } else if x > b {
            c = x;
        } else {
            a = x;
        }
    }
    Ok((best_order, best))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn orders_keep_three_significant_digits_of_their_excess() {
        for (a, want) in [
            (11.801962799434143, 11.8),
            (1.012345, 1.0123),
            (124.4, 124.0),
            (1024.0, 1020.0),
            (2.0, 2.0),
            (3.26159, 3.26),
        ] {
            assert_eq!(round_order(a), want, "{a}");
            assert_eq!(format!("{}", round_order(a)), format!("{want}"));
        }
    }

    /// The classic conversion of a Gaussian curve `αρ`: `ρα + L/(α − 1)`, best at
    /// `α* = 1 + √(L/ρ)`.
    #[test]
    fn finds_the_continuous_optimum_of_a_gaussian_conversion() {
        let (rho, l) = (0.01_f64, 1e6_f64.ln());
        let f = |a: f64| rho * a + l / (a - 1.0);
        let star = 1.0 + (l / rho).sqrt();
        let exact = f(star);
        // A coarse bracket around the optimum, as the network orders give.
        let (lo, mid, hi) = (20.0, 40.0, 64.0);
        let mut probes = 0;
        let (order, value) = search(lo, mid, hi, f(mid), |a| {
            probes += 1;
            Ok::<_, ()>(f(a))
        })
        .unwrap();
        assert!(probes <= MAX_PROBES);
        assert!(value <= exact * (1.0 + 1e-4), "{value} vs {exact}");
        assert!(value < f(mid));
        assert_eq!(value, f(order));
        assert_eq!(order, round_order(order));
        // The optimum below the bracket's middle, and one at its end.
        let (_, v) = search(30.0, 64.0, 128.0, f(64.0), |a| Ok::<_, ()>(f(a))).unwrap();
        assert!(v <= f(64.0) && v <= f(31.0).min(f(64.0)));
        let (o, v) = search(40.0, 40.0, 64.0, f(40.0), |a| Ok::<_, ()>(f(a))).unwrap();
        assert!(v <= f(40.0) && (40.0..=64.0).contains(&o));
    }

    #[test]
    fn an_error_stops_the_search_and_infinity_is_never_chosen() {
        let r: Result<(f64, f64), &str> = search(2.0, 3.0, 4.0, 1.0, |_| Err("stop"));
        assert_eq!(r, Err("stop"));
        let (o, v) = search(2.0, 3.0, 4.0, 1.0, |_| Ok::<_, ()>(f64::INFINITY)).unwrap();
        assert_eq!((o, v), (3.0, 1.0));
    }
}
