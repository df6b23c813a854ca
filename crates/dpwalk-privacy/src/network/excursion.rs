//! The per-excursion charge of a memoryless walk (`specs/network-dp-2.md` §3–§4): what observer
//! `j` learns about contributor `i` on one realised path.
//!
//! # Why per excursion
//! A DP-SGD token is the whole state of the walk. When `j` holds it, `j` knows the value it
//! sends on, so what `j` sees next depends on `i`'s data only through the holders of the
//! *excursion* between two observations of `j` (a visit of `j`, or the final model; time 0
//! counts as an observation: the initial model is public). The RDP chain rule adds the
//! excursions. Inside one excursion, all of `i`'s contributions are shifts of one noisy,
//! non-expansive iteration observed once at the end, and amplification by iteration with several
//! shifts (Feldman, Mironov, Talwar & Thakurta 2018) charges them together: the best shift
//! schedule costs `ε_loc(α)·Φ`, with `Φ` the squared norm of the nondecreasing (isotonic)
//! regression of the 0/1 pattern of `i`'s contributions over the hops before the observation
//! ([`phi`]). Per path, `D_α(view_j | π) ≤ ε_loc(α)·Ψ_ij(π)` with `Ψ_ij = Σ_excursions Φ`.
//!
//! # Distances
//! A contribution at step `s` observed at `t_obs` (the observer's next step, or `K` for the final
//! model) has distance `r = t_obs − s ≥ 1`: the noisy hops from `s` to the observation, `s`
//! itself included.
//!
//! # The ex-post certificate (N2)
//! [`certify`] computes `max_j Ψ_ij` for every user from the realised holder sequence and which
//! visits were contributions (a spent user's noise-only visits are not): one scan of the path per
//! observer, O(n·K) in all. It holds for the realised path even if the observer knows the whole
//! path, which is why it is the figure that applies once ledgers are brought together
//! (`dpwalk_net::certify`, `dpwalk ledger certify`: every ledger records its member's visits).

use rayon::prelude::*;

/// `Φ(r_1..r_c)`: the charge of `c` contributions at distances `dists` (each ≥ 1, distinct)
/// observed together: the squared norm of the nondecreasing regression of their 0/1 pattern over
/// the `max r` hops before the observation, by pool-adjacent-violators on run-length blocks,
/// O(c log c). `Φ([r]) = 1/r`, `Φ ≤ c`, and `Φ ≤` [`phi_uni`]. `dists` is sorted in place.
/// Empty: 0.
pub fn phi(dists: &mut [u64]) -> f64 {
    phi_in(dists, &mut Vec::new())
}

/// [`phi`] with the block stack given (reused across calls by [`certify`]).
fn phi_in(dists: &mut [u64], stack: &mut Vec<(f64, f64)>) -> f64 {
    if let [r] = dists {
        return 1.0 / *r as f64;
    }
    dists.sort_unstable_by(|a, b| b.cmp(a));
    let Some(&m) = dists.first() else {
        return 0.0;
    };
    // Blocks of the pattern from the earliest hop (position 1) to the last one (position m):
    // (mass = number of ones, length).
    stack.clear();
    let mut pos = 1;
    for &r in dists.iter() {
        let p = m - r + 1;
        if p > pos {
            push_merge(stack, (0.0, (p - pos) as f64));
        }
        push_merge(stack, (1.0, 1.0));
        pos = p + 1;
    }
    if pos <= m {
        push_merge(stack, (0.0, (m - pos + 1) as f64));
    }
    stack.iter().map(|&(mass, len)| mass * mass / len).sum()
}

/// Pushes block `b`, pooling it with the blocks before it while their mean is not below its own
/// (the violators of a nondecreasing fit; pooling equal means changes nothing).
fn push_merge(stack: &mut Vec<(f64, f64)>, mut b: (f64, f64)) {
    while let Some(&top) = stack.last() {
        if top.0 * b.1 >= b.0 * top.1 {
            b = (top.0 + b.0, top.1 + b.1);
            stack.pop();
        } else {
            break;
        }
    }
    stack.push(b);
}

/// `Φ_UNI(r_1..r_c) = Σ_q (2q−1)/r_(q)` with `r_(1) ≤ r_(2) ≤ …`: the relaxation of [`phi`] the
/// path-hidden mixture takes inside its expectation (it adds one term per contribution, closest
/// to the observation first). Never below `Φ`; `dists` is sorted in place.
pub fn phi_uni(dists: &mut [u64]) -> f64 {
    dists.sort_unstable();
    dists
        .iter()
        .enumerate()
        .map(|(q, &r)| (2 * q + 1) as f64 / r as f64)
        .sum()
}

/// One step of a realised walk: who held the token, and whether the step was a contribution
/// (a spent user's noise-only step is not).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Visit {
    /// The holder.
    pub holder: usize,
    /// A contribution (a step on the holder's data).
    pub contribution: bool,
}

/// `Ψ_ij(π) = Σ_excursions Φ`: the charge of contributor `i` against observer `j` on the walk
/// `path` (steps `0..K`), whose final model `j` sees after step `K − 1`. `i == j`: 0.
pub fn psi(path: &[Visit], i: usize, j: usize) -> f64 {
    psi_with(path, i, j, phi)
}

/// [`psi`] with the excursion charge `charge` (e.g. [`phi_uni`]).
pub fn psi_with(path: &[Visit], i: usize, j: usize, charge: fn(&mut [u64]) -> f64) -> f64 {
    if i == j {
        return 0.0;
    }
    let mut times: Vec<u64> = Vec::new();
    let mut total = 0.0;
    let mut observe = |t_obs: u64, times: &mut Vec<u64>| {
        let mut d: Vec<u64> = times.iter().map(|&s| t_obs - s).collect();
        total += charge(&mut d);
        times.clear();
    };
    for (t, v) in path.iter().enumerate() {
        if v.holder == j {
            observe(t as u64, &mut times);
        } else if v.holder == i && v.contribution {
            times.push(t as u64);
        }
    }
    observe(path.len() as u64, &mut times);
    total
}

/// A user's ex-post charge against its worst observer.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Certified {
    /// `max_j Ψ_ij` over the observers `j ≠ i` (0 for a user without contributions).
    pub psi: f64,
    /// The observer attaining it (the smallest index among equals); `None` without contributions.
    pub observer: Option<usize>,
}

/// The ex-post charge of every user `0..users` against its worst observer on the realised walk
/// `path` (N2, `specs/network-dp-2.md` §4): one scan of the path per observer, O(users·K) time,
/// the observers in parallel (rayon), O(users + K) memory per thread. Holders `≥ users` are
/// ignored.
pub fn certify(users: usize, path: &[Visit]) -> Vec<Certified> {
    let none = Certified {
        psi: 0.0,
        observer: None,
    };
    (0..users)
        .into_par_iter()
        .fold(
            || Scan::new(users),
            |mut scan, j| {
                scan.observer(j, path);
                scan
            },
        )
        .map(|scan| scan.best)
        .reduce(
            || vec![none; users],
            |a, b| a.into_iter().zip(b).map(|(x, y)| worse(x, y)).collect(),
        )
}

/// `Ψ_ij` of every pair on the realised walk `path`, `users × users` row-major (row = contributor
/// `i`, column = observer `j`, 0 on the diagonal): the matrix [`certify`] takes each row's
/// maximum of, by the same scan per observer (observers in parallel). For the pairwise picture
/// of N2 on small swarms: `users²` numbers.
pub fn psi_pairs(users: usize, path: &[Visit]) -> Vec<f64> {
    let columns: Vec<Vec<f64>> = (0..users)
        .into_par_iter()
        .map_init(
            || Scan::new(users),
            |scan, j| {
                scan.charge(j, path);
                let mut column = scan.psi.clone();
                column[j] = 0.0;
                column
            },
        )
        .collect();
    (0..users * users)
        .map(|k| columns[k % users][k / users])
        .collect()
}

/// The larger charge of two, the smaller observer among equals (so that the result does not
/// depend on how the observers were split between threads).
fn worse(a: Certified, b: Certified) -> Certified {
    match (a.observer, b.observer) {
        (None, _) => b,
        (_, None) => a,
        (Some(x), Some(y)) => {
            if b.psi > a.psi || (b.psi == a.psi && y < x) {
                b
            } else {
                a
            }
        }
    }
}

/// One thread's buffers and its best charges so far.
struct Scan {
    best: Vec<Certified>,
    /// The contribution times of each user since the observer's last observation.
    pending: Vec<Vec<u64>>,
    /// The users with pending times (to clear them without scanning all users).
    touched: Vec<usize>,
    psi: Vec<f64>,
    dists: Vec<u64>,
    stack: Vec<(f64, f64)>,
}

impl Scan {
    fn new(users: usize) -> Self {
        Self {
            best: vec![
                Certified {
                    psi: 0.0,
                    observer: None,
                };
                users
            ],
            pending: vec![Vec::new(); users],
            touched: Vec::new(),
            psi: vec![0.0; users],
            dists: Vec::new(),
            stack: Vec::new(),
        }
    }

    /// Charges every user against observer `j` and keeps the worse.
    fn observer(&mut self, j: usize, path: &[Visit]) {
        self.charge(j, path);
        for (i, (&p, b)) in self.psi.iter().zip(self.best.iter_mut()).enumerate() {
            if i != j && p > 0.0 {
                *b = worse(
                    *b,
                    Certified {
                        psi: p,
                        observer: Some(j),
                    },
                );
            }
        }
    }

    /// Every user's `Ψ_ij` against observer `j`, into `psi` (`j`'s own entry is not a charge).
    fn charge(&mut self, j: usize, path: &[Visit]) {
        let users = self.psi.len();
        self.psi.iter_mut().for_each(|p| *p = 0.0);
        for (t, v) in path.iter().enumerate() {
            if v.holder == j {
                self.observe(t as u64);
            } else if v.contribution && v.holder < users {
                let list = &mut self.pending[v.holder];
                if list.is_empty() {
                    self.touched.push(v.holder);
                }
                list.push(t as u64);
            }
        }
        self.observe(path.len() as u64);
    }

    /// An observation at `t_obs`: every pending user's excursion is charged.
    fn observe(&mut self, t_obs: u64) {
        for &i in &self.touched {
            self.dists.clear();
            self.dists
                .extend(self.pending[i].iter().map(|&s| t_obs - s));
            self.psi[i] += phi_in(&mut self.dists, &mut self.stack);
            self.pending[i].clear();
        }
        self.touched.clear();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A path of holders; every visit a contribution.
    fn path(holders: &[usize]) -> Vec<Visit> {
        holders
            .iter()
            .map(|&holder| Visit {
                holder,
                contribution: true,
            })
            .collect()
    }

    const EPS: f64 = 1e-12;

    #[test]
    fn one_contribution_is_charged_one_over_its_distance() {
        for r in 1..50 {
            assert!((phi(&mut [r]) - 1.0 / r as f64).abs() < EPS);
            assert!((phi_uni(&mut [r]) - 1.0 / r as f64).abs() < EPS);
        }
        assert_eq!(phi(&mut []), 0.0);
    }

    /// §7 of the spec: users i = 0, l = 1, m = 3, observer j = 2; the last column of the table
    /// (the withdrawn additive rule) is in `tests/excursion.rs`.
    #[test]
    fn the_pinned_paths_of_the_spec() {
        let (i, l, m, j) = (0, 1, 3, 2);
        let cases: [(&[usize], f64, f64); 4] = [
            (&[i, l, i, l, j], 1.0, 1.25),
            (&[i, l, i, j], 1.5, 2.0),
            (&[i, l, m, i, l], 5.0 / 6.0, 1.1),
            (&[i, l, j, i, j, i, l], 2.0, 2.0),
        ];
        for (holders, want, uni) in cases {
            let p = path(holders);
            assert!((psi(&p, i, j) - want).abs() < EPS, "{holders:?}");
            assert!(
                (psi_with(&p, i, j, phi_uni) - uni).abs() < EPS,
                "{holders:?}"
            );
        }
        for c in 1..=6 {
            let holders: Vec<usize> = (0..c).flat_map(|_| [i, l]).chain([j]).collect();
            let got = psi(&path(&holders), i, j);
            assert!((got - c as f64 / 2.0).abs() < EPS, "c = {c}: {got}");
        }
    }

    #[test]
    fn phi_is_bounded_monotone_and_below_uni() {
        // Every subset of distances 1..=9 (as patterns over 9 hops).
        for mask in 1u32..(1 << 9) {
            let dists: Vec<u64> = (1..=9).filter(|r| mask & (1 << (r - 1)) != 0).collect();
            let p = phi(&mut dists.clone());
            let c = dists.len() as f64;
            assert!(p <= c + EPS && p > 0.0);
            assert!(p <= phi_uni(&mut dists.clone()) + EPS);
            for extra in (1..=9).filter(|r| !dists.contains(r)) {
                let mut more = dists.clone();
                more.push(extra);
                assert!(phi(&mut more) >= p - EPS, "adding {extra} to {dists:?}");
            }
            // A dense reference: the isotonic regression by brute-force PAVA on the 0/1 vector.
            assert!((p - dense_phi(&dists)).abs() < 1e-12, "{dists:?}");
        }
    }

    /// PAVA on the full 0/1 vector, one element at a time.
    fn dense_phi(dists: &[u64]) -> f64 {
        let m = *dists.iter().max().unwrap();
        let b: Vec<f64> = (1..=m)
            .map(|p| f64::from(u8::from(dists.contains(&(m - p + 1)))))
            .collect();
        let mut blocks: Vec<(f64, usize)> = Vec::new();
        for x in b {
            let mut cur = (x, 1);
            while let Some(&(s, n)) = blocks.last() {
                if s / n as f64 >= cur.0 / cur.1 as f64 {
                    cur = (s + cur.0, n + cur.1);
                    blocks.pop();
                } else {
                    break;
                }
            }
            blocks.push(cur);
        }
        blocks.iter().map(|&(s, n)| s * s / n as f64).sum()
    }

    /// Every user's certificate equals the worst `psi` over its observers, by brute force, with
    /// the smallest observer among equals, on random walks (spent visits, holders outside the
    /// users, repeated holders and walks that end anywhere included).
    #[test]
    fn certify_is_the_brute_force_maximum_on_random_walks() {
        let mut x: u64 = 7;
        let mut draw = |m: u64| {
            x = x
                .wrapping_mul(6_364_136_223_846_793_005)
                .wrapping_add(1_442_695_040_888_963_407);
            (x >> 33) % m
        };
        for _ in 0..400 {
            let n = 1 + draw(7) as usize;
            let k = draw(60) as usize;
            let p: Vec<Visit> = (0..k)
                .map(|_| Visit {
                    holder: draw(n as u64 + 1) as usize,
                    contribution: draw(4) != 0,
                })
                .collect();
            for (i, c) in certify(n, &p).iter().enumerate() {
                let per_j: Vec<f64> = (0..n)
                    .map(|j| {
                        if j == i {
                            f64::NEG_INFINITY
                        } else {
                            psi(&p, i, j)
                        }
                    })
                    .collect();
                let max = per_j.iter().cloned().fold(0.0, f64::max);
                assert!((c.psi - max).abs() < EPS, "{p:?} user {i}");
                let contributes = p.iter().any(|v| v.holder == i && v.contribution);
                let first = per_j.iter().position(|&v| v == max);
                match c.observer {
                    Some(j) => {
                        assert!(contributes && n > 1);
                        assert_eq!(Some(j), first, "{p:?} user {i}");
                    }
                    None => assert!(!contributes || n == 1, "{p:?} user {i}"),
                }
            }
        }
    }

    #[test]
    fn the_pair_matrix_is_psi_of_every_pair_and_certify_its_row_maxima() {
        let (n, holders) = (4, [0, 1, 0, 1, 2, 3, 0, 2, 1, 3, 3, 0]);
        let mut p = path(&holders);
        p[5].contribution = false;
        let pairs = psi_pairs(n, &p);
        assert_eq!(pairs.len(), n * n);
        for i in 0..n {
            for j in 0..n {
                let want = if i == j { 0.0 } else { psi(&p, i, j) };
                assert!((pairs[i * n + j] - want).abs() < EPS, "{i} {j}");
            }
        }
        for (i, c) in certify(n, &p).iter().enumerate() {
            let row = &pairs[i * n..(i + 1) * n];
            assert_eq!(c.psi, row.iter().cloned().fold(0.0, f64::max));
        }
    }

    #[test]
    fn certify_takes_the_worst_observer_and_skips_spent_visits() {
        let (n, holders) = (4, [0, 1, 0, 1, 2, 3, 0, 2, 1, 3]);
        let p = path(&holders);
        let got = certify(n, &p);
        for (i, c) in got.iter().enumerate() {
            let per_j: Vec<f64> = (0..n).map(|j| psi(&p, i, j)).collect();
            let max = per_j.iter().cloned().fold(0.0, f64::max);
            assert!((c.psi - max).abs() < EPS);
            let j = c.observer.unwrap();
            assert!((per_j[j] - max).abs() < EPS && j != i);
        }
        let mut spent = p.clone();
        spent
            .iter_mut()
            .for_each(|v| v.contribution = v.holder != 0);
        let got = certify(n, &spent);
        assert_eq!(got[0].psi, 0.0);
        assert_eq!(got[0].observer, None);
        // n = 2: the token alternates, and each contribution is seen at the next hop.
        let alternating = path(&[0, 1, 0, 1, 0, 1]);
        assert!((psi(&alternating, 0, 1) - 3.0).abs() < EPS);
    }
}
