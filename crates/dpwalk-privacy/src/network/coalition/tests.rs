//! The coalition's mixture against brute force over every path.

use super::*;
use crate::network::tests::random_regular;

/// A directed walk: user `x` moves to `x + 1` or `x + 3` (mod n), or back to 0 from 4.
fn directed(n: usize) -> Vec<Vec<(usize, f64)>> {
    (0..n)
        .map(|x| {
            if x == 4 {
                vec![(0, 0.5), (5 % n, 0.5)]
            } else {
                vec![((x + 1) % n, 0.6), ((x + 3) % n, 0.4)]
            }
        })
        .collect()
}

/// `Σ_π P(π)·exp(θ·Ψ_UNI(π))` over the paths of `k` steps from `start` whose excursions (runs
/// of holders outside `coalition`) hold at most `q` visits of `i`, and the probability of the
/// others; every visit of `i` a contribution, observations at the coalition's holders and the
/// final model.
fn brute_force(
    rows: &[Vec<(usize, f64)>],
    coalition: &[usize],
    i: usize,
    k: usize,
    theta: f64,
    start: usize,
    q: usize,
) -> (f64, f64) {
    let mut kept = 0.0;
    let mut dropped = 0.0;
    let mut path = vec![start];
    walk(rows, &mut path, 1.0, k, &mut |path, prob| {
        let mut psi = 0.0;
        let mut times: Vec<usize> = Vec::new();
        let mut over = false;
        let mut observe = |t_obs: usize, times: &mut Vec<usize>| {
            over |= times.len() > q;
            let mut d: Vec<u64> = times.iter().map(|&s| (t_obs - s) as u64).collect();
            psi += crate::network::excursion::phi_uni(&mut d);
            times.clear();
        };
        for (t, &x) in path.iter().enumerate() {
            if coalition.contains(&x) {
                observe(t, &mut times);
            } else if x == i {
                times.push(t);
            }
        }
        observe(path.len(), &mut times);
        if over {
            dropped += prob;
        } else {
            kept += prob * (theta * psi).exp();
        }
    });
    (kept, dropped)
}

fn walk(
    rows: &[Vec<(usize, f64)>],
    path: &mut Vec<usize>,
    prob: f64,
    k: usize,
    visit: &mut dyn FnMut(&[usize], f64),
) {
    if path.len() == k {
        visit(path, prob);
        return;
    }
    let last = path[path.len() - 1];
    for &(y, p) in &rows[last] {
        path.push(y);
        walk(rows, path, prob * p, k, visit);
        path.pop();
    }
}

fn check(rows: &[Vec<(usize, f64)>], i: usize, horizon: Option<usize>, exact: bool) {
    let c = Coalition::new(rows, i).unwrap();
    assert!(!c.observers().is_empty());
    for theta in [0.3, 1.7] {
        for q in [1, 2, 40] {
            for k in [1, 2, 5, 7] {
                let opts = MixtureOptions { visits: q, horizon };
                let got = mixture(&c, k, theta, &opts);
                let drop = dropped(&c, k, q);
                for (start, &g) in got.iter().enumerate() {
                    let (want, want_dropped) =
                        brute_force(rows, c.observers(), i, k, theta, start, q);
                    let setting = format!("i {i} θ {theta} Q {q} K {k} from {start}");
                    if exact {
                        assert!(
                            (g / want - 1.0).abs() < 1e-12,
                            "{setting}: {g} against {want}"
                        );
                    } else {
                        assert!(g >= want * (1.0 - 1e-12), "{setting}: {g} below {want}");
                    }
                    assert!(
                        drop >= want_dropped,
                        "{setting}: dropped {drop} below {want_dropped}"
                    );
                }
            }
        }
    }
}

#[test]
fn the_coalition_mixture_equals_brute_force_over_every_path() {
    let rows = random_regular(10, 4, 3);
    for i in [0, 4] {
        check(&rows, i, None, true);
    }
    check(&directed(8), 2, None, true);
}

#[test]
fn the_coalition_tail_only_over_charges() {
    let rows = random_regular(10, 4, 3);
    check(&rows, 1, Some(2), false);
    check(&directed(8), 0, Some(1), false);
}

#[test]
fn the_coalition_is_everyone_outside_the_closed_neighbourhood() {
    let rows = directed(8);
    // 2 moves to 3 and 5; 1 and 7 (7 + 3 = 10 ≡ 2) move to 2.
    let c = Coalition::new(rows.as_slice(), 2).unwrap();
    assert_eq!(c.neighbours().collect::<Vec<_>>(), vec![1, 3, 5, 7]);
    assert_eq!(c.observers(), &[0, 4, 6]);
    assert!(Coalition::new(rows.as_slice(), 8).is_err());
}
