//! First passages against the (state × count) recursion.

use super::super::mixture::{MixtureOptions, PairChain, mixture as recursion};
use super::*;
use crate::network::tests::random_regular;

/// A directed walk: `x` moves to `x + 1` or `x + 3` (mod n).
fn directed(n: usize) -> Vec<Vec<(usize, f64)>> {
    (0..n)
        .map(|x| vec![((x + 1) % n, 0.7), ((x + 3) % n, 0.3)])
        .collect()
}

/// `(largest, smallest)` ratio of first passages to the recursion over every initial holder.
fn ratios(
    rows: &[Vec<(usize, f64)>],
    i: usize,
    j: usize,
    k: usize,
    theta: f64,
    q: usize,
) -> (f64, f64) {
    let chain = PairChain::pair(rows, i, j).unwrap();
    let opts = MixtureOptions {
        visits: q,
        horizon: Some(k),
    };
    let want = recursion(&chain, k, theta, &opts);
    let got = mixture(&Passages::new(&chain, k), theta, q);
    assert_eq!(got.len(), want.len());
    got.iter()
        .zip(&want)
        .fold((0.0, f64::INFINITY), |(hi, lo), (g, w)| {
            assert!(
                g.is_finite() && *w > 0.0,
                "pair ({i}, {j}) K {k}: {g} against {w}"
            );
            (hi.max(g / w), lo.min(g / w))
        })
}

#[test]
fn first_passages_equal_the_recursion_where_every_return_is_exact() {
    let graphs = [
        random_regular(11, 4, 7),
        random_regular(12, 3, 2),
        directed(9),
    ];
    for rows in &graphs {
        for (i, j) in [(0, 1), (3, 8), (8, 2)] {
            for theta in [0.3, 2.0] {
                for q in [1, 3, 40] {
                    for k in [1, 2, 7, 60, EXACT_RETURNS + 1] {
                        let (hi, lo) = ratios(rows, i, j, k, theta, q);
                        assert!(
                            hi < 1.0 + 1e-11 && lo > 1.0 - 1e-11,
                            "pair ({i}, {j}), θ {theta}, Q {q}, K {k}: ratios {lo}..{hi}"
                        );
                    }
                }
            }
        }
    }
}

#[test]
fn the_return_envelope_only_over_charges_and_stays_close() {
    let graphs = [
        random_regular(30, 4, 1),
        random_regular(16, 3, 9),
        directed(13),
    ];
    let mut largest: f64 = 1.0;
    for rows in &graphs {
        for (i, j) in [(0, 1), (5, 11)] {
            for theta in [0.3, 1.5] {
                // At most 1,024 steps, where the recursion sums its renewal term by term (above,
                // its FFT's rounding margin may raise it by more than the envelope does).
                for k in [EXACT_RETURNS + 2, 400, 1000] {
                    let (hi, lo) = ratios(rows, i, j, k, theta, 40);
                    assert!(
                        lo >= 1.0 - 1e-12,
                        "pair ({i}, {j}), θ {theta}, K {k}: below, {lo}"
                    );
                    assert!(
                        hi <= 1.0 + 1e-3,
                        "pair ({i}, {j}), θ {theta}, K {k}: {hi} above"
                    );
                    largest = largest.max(hi);
                }
            }
        }
    }
    // The envelope is in use: some mixture is above the recursion's by more than rounding.
    assert!(largest > 1.0 + 1e-12, "largest ratio {largest}");
}

/// First passages' dropped probability against the recursion's, per initial holder:
/// `(largest ratio, smallest ratio, holders compared)` over the holders where the recursion's
/// is positive; where it is 0, so must the passages' be.
fn dropped_ratios(
    rows: &[Vec<(usize, f64)>],
    i: usize,
    j: usize,
    k: usize,
    q: usize,
) -> (f64, f64, usize) {
    use super::super::mixture::dropped as recursion_dropped;
    let chain = PairChain::pair(rows, i, j).unwrap();
    let opts = MixtureOptions {
        visits: q,
        horizon: Some(k),
    };
    let want = recursion_dropped(&chain, k, &opts);
    let got = dropped(&Passages::new(&chain, k), q);
    assert_eq!(got.len(), want.len());
    got.iter()
        .zip(&want)
        .fold((1.0, 1.0, 0), |(hi, lo, n), (&g, &w)| {
            if w == 0.0 {
                assert!(
                    g == 0.0,
                    "pair ({i}, {j}) K {k} Q {q}: {g} where the recursion has 0"
                );
                (hi, lo, n)
            } else {
                (f64::max(hi, g / w), f64::min(lo, g / w), n + 1)
            }
        })
}

#[test]
fn the_dropped_probability_by_first_passages_is_the_recursions() {
    let exact = [random_regular(11, 4, 7), directed(9)];
    let mut compared = 0;
    for rows in &exact {
        for (i, j) in [(0, 1), (3, 8)] {
            for q in [1, 2, 3] {
                for k in [1, 2, 7, 30, EXACT_RETURNS + 1] {
                    let (hi, lo, n) = dropped_ratios(rows, i, j, k, q);
                    compared += n;
                    assert!(
                        hi < 1.0 + 1e-11 && lo > 1.0 - 1e-11,
                        "pair ({i}, {j}), Q {q}, K {k}: ratios {lo}..{hi}"
                    );
                }
            }
        }
    }
    assert!(compared > 0, "some dropped probability is positive");
    for rows in [random_regular(30, 4, 1), directed(13)] {
        for k in [200, 1000] {
            let (hi, lo, n) = dropped_ratios(&rows, 0, 1, k, 2);
            assert!(
                n > 0 && lo >= 1.0 - 1e-12 && hi <= 1.0 + 1e-3,
                "K {k}: ratios {lo}..{hi} over {n}"
            );
        }
    }
}

#[test]
fn the_long_renewal_by_fft_only_over_charges() {
    // Long walks solve the renewal by FFT: against the sum term by term on the same inputs.
    let k = FAST_RENEWAL + 500;
    // An excursion kernel of total mass about 0.9, and a final-segment term.
    let w: Vec<f64> = (0..k)
        .map(|l| 0.02 * 0.97_f64.powi(l as i32) * (1.0 + (l % 3) as f64))
        .collect();
    let extra: Vec<f64> = (0..k).map(|s| 1.0 + (s % 5) as f64 * 0.01).collect();
    let got = renew(&w, &extra);
    let mut want = vec![0.0; k];
    want[k - 1] = extra[0];
    for t in (0..k - 1).rev() {
        want[t] = extra[k - 1 - t] + (1..k - 1 - t).map(|l| w[l] * want[t + l + 1]).sum::<f64>();
    }
    for (t, (g, w)) in got.iter().zip(&want).enumerate() {
        assert!(
            *g >= *w * (1.0 - 1e-12) && *g <= *w * (1.0 + 1e-6),
            "t {t}: {g} against {w}"
        );
    }
}
