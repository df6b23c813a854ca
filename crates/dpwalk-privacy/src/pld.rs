//! Privacy loss distributions (PLD): the (ε, δ) of a composition of Poisson-subsampled Gaussian
//! mechanisms, tighter than any RDP conversion.
//!
//! # What a PLD is
//! A mechanism whose outputs on two neighbouring inputs are distributed as `P` and `Q` has the
//! privacy loss `L = ln(dP/dQ)`; its privacy profile is
//! `δ(ε) = E_P[(1 − e^{ε − L})₊] + P(L = ∞)`, the smallest δ for which it is `(ε, δ)`-DP against
//! that pair. Composing mechanisms adds their losses (independent under `P`), so the loss of `K`
//! runs is the `K`-fold convolution of one run's (Dwork & Rothblum 2016; Koskela, Jälkö & Honkela
//! 2020; Google's `dp-accounting`). Add-or-remove neighbours give two pairs, `(P, Q)` and
//! `(Q, P)`; each is composed on its own and the larger ε is the answer.
//!
//! # The Poisson-subsampled Gaussian
//! With sensitivity 1, noise multiplier `z` and sampling rate `q`, on the output coordinate `x`
//! along the difference and `c(x) = (2x − 1)/(2z²)`:
//! - [`Direction::Remove`]: `P = (1 − q)N(0, z²) + qN(1, z²)`, `Q = N(0, z²)`,
//!   `L = ln((1 − q) + q e^{c(x)})`, increasing in `x`, at least `ln(1 − q)`;
//! - [`Direction::Add`]: `P = N(0, z²)`, `Q` the mixture, `L = −ln((1 − q) + q e^{c(x)})`,
//!   decreasing in `x`, at most `−ln(1 − q)`.
//!
//! Every event `{L ∈ (ε_j, ε_{j+1}]}` is an interval of `x` with closed-form ends, so the masses
//! of `P` and `Q` on it are Gaussian probabilities; `q = 1` is the plain Gaussian mechanism.
//!
//! # Discretisation: connect the dots
//! The losses are put on the grid `ε_j = j·h` by the rule of Doroshenko, Ghazi, Kamath, Kumar &
//! Manurangsi 2022 ("Connect the dots: tighter discrete approximations of privacy loss
//! distributions"): the `Q`-mass of each interval `I_j = (ε_j, ε_{j+1}]` is split between its two
//! ends, a share `θ_j` to `ε_{j+1}`, so that the mean of `e^L` under `Q` is kept
//! (`θ_j = (P(I_j) − e^{ε_j}Q(I_j)) / ((e^{ε_{j+1}} − e^{ε_j}) Q(I_j))`, in `[0, 1]` because
//! `e^L ∈ (e^{ε_j}, e^{ε_{j+1}}]` on `I_j`). The discrete pair's profile is then the chord of the
//! true profile (a convex function of `e^ε`) between grid points, so it lies above it: the
//! discrete pair dominates the true one, and dominance survives composition (Zhu, Dong & Wang
//! 2022, Thm. 10). Its error is second order in `h`, where rounding every loss up to the grid
//! (the "privacy buckets" rule) biases each of `K` runs by up to `h`. Beyond the grid: the
//! `P`-mass above the top grid point goes to `L = ∞` (it then counts fully in δ), the mass below
//! the bottom one is rounded up to it; both ends are chosen where that mass is below the tail
//! budget. In `P`-mass terms the interval gives `b(P − aQ)/(b − a)` to its upper end and the rest
//! of `P(I_j)` to its lower end (`a = e^{ε_j}`, `b = e^{ε_{j+1}}`). The difference `P − aQ`
//! cancels where `a` is near the interval's conditional mean; it is computed instead as an
//! integral of a positive function (`(a − 1 + q)·expm1((x − x_j)/z²)` against `N(0, z²)` for
//! Remove, `(1 − a(1 − q))·(−expm1((x − x_j)/z²))` for Add, `x_j` the interval's end where
//! `L = ε_j`), by Gauss–Legendre quadrature on pieces at most `z/4` wide, so every mass has a
//! relative error of a few hundred ulps.
//!
//! # Composition, and what floating point costs
//! `K` runs are composed by repeated squaring; each product is a linear convolution computed by
//! FFT (`rustfft`, power-of-two lengths). After each product the tails are cut: the mass above
//! the highest kept loss goes to `∞`, the mass below the lowest kept loss is rounded up to it,
//! each at most the tail budget. Both moves only raise the profile, so they keep dominance; the
//! mass sent to `∞` is counted in δ like any other.
//!
//! Rounding is not pessimistic, so it is bounded and added to δ: every PLD carries `slack`, a
//! bound on how far `δ(ε)` of its computed masses, or of any later composition with them, can be
//! from that of a dominating pair, for every ε. Two kinds of error count: mass errors by their
//! `ℓ₁` norm (every weight `(1 − e^{ε − l})₊` is in `[0, 1]`), and mass moved by one grid step
//! (the split of an interval between its ends) by `h` per unit moved (the weight is 1-Lipschitz
//! in the loss, and a sum of losses moves by at most the moves summed). Neither grows under
//! convolution with a (sub)probability vector, so a product's slack is the sum of its factors'
//! (plus their product) plus the FFT's own error. For that, the FFT bound of Higham
//! (2002, Thm. 24.2: `‖ŷ − y‖₂ ≤ log₂N·η‖y‖₂` with `η ≈ 7u`, taken here as `8u(log₂N + 2)` to
//! include the pointwise products and the scaling; the theorem is proved for radix-2 FFTs, and
//! `rustfft` also uses radix-4 and split butterflies, whose error is of the same order) gives `‖e‖₂ ≤ 2η(‖x‖₂‖y‖₁ + ‖y‖₂‖x‖₁)` for the
//! convolution of `x` and `y`, and `‖e‖₁ ≤ √n‖e‖₂` over its `n` entries. Negative entries (FFT
//! noise) are set to zero, which only moves them towards their true, nonnegative values. The
//! construction's own slack is `SINGLE_SLACK_ULPS` ulps of the total mass (the split of each
//! interval between its two ends carries up to `u/h` relative error, but moving mass by one
//! grid step changes every `(1 − e^{ε − l})₊` by at most `h`, so its effect on δ is a few ulps).
//! Losses are kept within ±`MAX_LOSS`, where `e^{±L}` is a normal double; distributions beyond
//! it, or beyond `MAX_POINTS` grid points, are not computed. The printed δ is
//! `δ(ε)` of the computed PLD plus its slack plus the rounding of that sum.

use crate::error::PrivacyError;
use rustfft::FftPlanner;
use rustfft::num_complex::Complex;
use std::f64::consts::FRAC_1_SQRT_2;

/// The default grid step of the losses: `dp-accounting`'s default.
pub const DEFAULT_INTERVAL: f64 = 1e-4;

/// The share of δ that one run's tails beyond its grid may take, over all the runs composed
/// (they are counted in δ, so they cost only tightness): each run's tails hold at most
/// `δ · RUN_TAIL_SHARE / runs`. Smaller tails make a longer grid, whose FFT error bound
/// (module docs) grows with its length: 2 % balances the two on the reference settings.
pub const RUN_TAIL_SHARE: f64 = 0.02;

/// The share of δ that the cuts after the products may take in all ([`Pld::self_compose`]).
pub const CUT_SHARE: f64 = 1e-2;

/// The most grid points one distribution may hold (16 MiB per FFT buffer): beyond, the figure
/// is not computed ([`PrivacyError::PldTooLarge`]) and callers keep the RDP one.
pub const MAX_POINTS: usize = 1 << 20;

/// The largest loss a distribution may hold, in absolute value: `e^{±L}` stays a normal double
/// (the threshold map and the conversion use both).
pub const MAX_LOSS: f64 = 700.0;

/// The unit roundoff of `f64`.
const U: f64 = f64::EPSILON / 2.0;

/// A bound, in ulps of the total mass, on the `ℓ₁` error of one run's discretised masses: each
/// interval's two masses carry a relative error of at most a few hundred ulps (module docs).
const SINGLE_SLACK_ULPS: f64 = 1024.0;

/// Gauss–Legendre nodes and weights on `[−1, 1]`, 8 points (exact for degree 15).
const GL_NODES: [f64; 4] = [
    0.183_434_642_495_649_8,
    0.525_532_409_916_329,
    0.796_666_477_413_626_7,
    0.960_289_856_497_536_3,
];
const GL_WEIGHTS: [f64; 4] = [
    0.362_683_783_378_362,
    0.313_706_645_877_887_3,
    0.222_381_034_453_374_5,
    0.101_228_536_290_376_3,
];

/// The widest piece, in standard deviations, that one Gauss–Legendre rule integrates.
const PIECE: f64 = 0.25;

/// More pieces than this in one interval (only the first intervals above `ln(1 − q)` are wide):
/// the interval's split is taken from the plain difference `P − aQ` instead.
const MAX_PIECES: usize = 4096;

/// Which of the two neighbouring inputs is the first of the pair (module docs).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Direction {
    /// `P` has the user's record (sampled with probability `q`), `Q` does not.
    Remove,
    /// `P` does not have the user's record, `Q` does.
    Add,
}

/// A discretised privacy loss distribution under `P`, with the mass at `L = ∞` and the bound on
/// its rounding error.
#[derive(Debug, Clone)]
pub struct Pld {
    /// The grid step `h`.
    interval: f64,
    /// `masses[k]` is the `P`-mass at loss `(offset + k)·h`.
    offset: i64,
    masses: Vec<f64>,
    /// The `P`-mass at `L = ∞`.
    infinity: f64,
    /// Bound on the change of δ against a dominating pair's masses (module docs).
    slack: f64,
}

/// Checks `q ∈ (0, 1]`, `z > 0` finite, `h` in `(0, 1]`.
fn check(q: f64, z: f64, interval: f64) -> Result<(), PrivacyError> {
    if !(q > 0.0 && q <= 1.0) {
        return Err(PrivacyError::SamplingRate(q));
    }
    if !(z > 0.0 && z.is_finite()) {
        return Err(PrivacyError::NoiseMultiplier(z));
    }
    if !(interval > 0.0 && interval <= 1.0) {
        return Err(PrivacyError::Option {
            name: "PLD interval",
            value: interval,
        });
    }
    Ok(())
}

/// `P(lo < X ≤ hi)` for `X ~ N(mean, z²)`, to a relative error of a few ulps where the interval
/// is narrow (Gauss–Legendre) and of at most about a hundred where it is wide (the difference of
/// the two tails on the side away from the mean).
fn gauss_mass(lo: f64, hi: f64, mean: f64, z: f64) -> f64 {
    if hi <= lo {
        return 0.0;
    }
    let u = (lo - mean) / z;
    let v = (hi - mean) / z;
    if v - u <= PIECE {
        return legendre(u, v, |t| (-0.5 * t * t).exp()) / (2.0 * std::f64::consts::PI).sqrt();
    }
    // Φ̄(t) = ½ erfc(t/√2).
    let upper = |t: f64| 0.5 * libm::erfc(t * FRAC_1_SQRT_2);
    if u >= 0.0 {
        upper(u) - upper(v)
    } else if v <= 0.0 {
        upper(-v) - upper(-u)
    } else {
        1.0 - upper(v) - upper(-u)
    }
}

/// `∫_u^v f` by the 8-point Gauss–Legendre rule.
fn legendre(u: f64, v: f64, f: impl Fn(f64) -> f64) -> f64 {
    let mid = 0.5 * (u + v);
    let half = 0.5 * (v - u);
    let mut sum = 0.0;
    for (&t, &w) in GL_NODES.iter().zip(&GL_WEIGHTS) {
        sum += w * (f(mid - half * t) + f(mid + half * t));
    }
    sum * half
}

/// `∫_lo^hi |expm1((x − reference)/z²)| φ(x) dx` with `φ` the density of `N(0, z²)`, `reference`
/// one end of `[lo, hi]`, by Gauss–Legendre on pieces at most `PIECE·z` wide; `None` where that
/// takes more than `MAX_PIECES` pieces.
fn tilted_excess(lo: f64, hi: f64, reference: f64, z: f64) -> Option<f64> {
    // Beyond 40 standard deviations the density is below 1e-300: nothing to integrate.
    let lo = lo.max(-40.0 * z);
    let hi = hi.min(40.0 * z);
    if hi <= lo {
        return Some(0.0);
    }
    let width = PIECE * z * z.min(1.0);
    let pieces = ((hi - lo) / width).ceil();
    if pieces.is_nan() || pieces > MAX_PIECES as f64 {
        return None;
    }
    let pieces = (pieces as usize).max(1);
    let step = (hi - lo) / pieces as f64;
    let norm = 1.0 / (z * (2.0 * std::f64::consts::PI).sqrt());
    let f = |x: f64| ((x - reference) / (z * z)).exp_m1().abs() * (-0.5 * (x / z).powi(2)).exp();
    let mut sum = 0.0;
    for k in 0..pieces {
        let a = lo + step * k as f64;
        let b = if k + 1 == pieces { hi } else { a + step };
        sum += legendre(a, b, f);
    }
    Some(sum * norm)
}

/// The loss and its threshold map for one direction of the subsampled Gaussian (module docs).
#[derive(Debug, Clone, Copy)]
struct Subsampled {
    q: f64,
    z: f64,
    direction: Direction,
}

impl Subsampled {
    /// `ln((1 − q) + q e^{c(x)})`.
    fn log_mixture(&self, x: f64) -> f64 {
        let c = (2.0 * x - 1.0) / (2.0 * self.z * self.z);
        let v = self.q * c.exp_m1();
        if v.is_finite() {
            v.ln_1p()
        } else {
            self.q.ln() + c
        }
    }

    /// The loss at output `x`.
    fn loss(&self, x: f64) -> f64 {
        match self.direction {
            Direction::Remove => self.log_mixture(x),
            Direction::Add => -self.log_mixture(x),
        }
    }

    /// `c` at the output where `L = ε`, or `None` where no output has that loss (below
    /// `ln(1 − q)` for Remove, above `−ln(1 − q)` for Add).
    fn threshold_c(&self, epsilon: f64) -> Option<f64> {
        let e = match self.direction {
            Direction::Remove => epsilon,
            Direction::Add => -epsilon,
        };
        let inner = e.exp_m1() + self.q;
        if inner > 0.0 {
            Some((inner / self.q).ln())
        } else {
            None
        }
    }

    /// The output `x` at `c`.
    fn x_of(&self, c: f64) -> f64 {
        self.z * self.z * c + 0.5
    }

    /// The outputs `(x_lo, x_hi)` whose loss is in `(lower, upper]` (empty where `x_hi ≤ x_lo`).
    fn outputs(&self, lower: f64, upper: f64) -> (f64, f64) {
        let x = |e: f64| {
            self.threshold_c(e)
                .map_or(f64::NEG_INFINITY, |c| self.x_of(c))
        };
        match self.direction {
            Direction::Remove => (x(lower), x(upper)),
            Direction::Add => (x(upper), x(lower)),
        }
    }

    /// `P((x_lo, x_hi])`.
    fn p_mass(&self, x_lo: f64, x_hi: f64) -> f64 {
        let n0 = gauss_mass(x_lo, x_hi, 0.0, self.z);
        match self.direction {
            Direction::Remove => (1.0 - self.q) * n0 + self.q * gauss_mass(x_lo, x_hi, 1.0, self.z),
            Direction::Add => n0,
        }
    }

    /// The `P`-mass of `I = (lower, upper]` split between its two ends, `(to lower, to upper)`
    /// (module docs); a tail beyond the grid (an infinite end) comes back whole as the first.
    fn interval(&self, lower: f64, upper: f64) -> (f64, f64) {
        let (q, z) = (self.q, self.z);
        if lower == f64::NEG_INFINITY || upper == f64::INFINITY {
            // The tails beyond the grid: only their mass matters (the caller puts it at one end).
            let (x_lo, x_hi) = self.outputs(lower, upper);
            let p = self.p_mass(x_lo, x_hi);
            return (p, 0.0);
        }
        let a = lower.exp();
        let b = upper.exp();
        let c_lo = self.threshold_c(lower);
        let (x_lo, x_hi) = self.outputs(lower, upper);
        if x_hi <= x_lo {
            return (0.0, 0.0);
        }
        let n0 = gauss_mass(x_lo, x_hi, 0.0, z);
        let n1 = gauss_mass(x_lo, x_hi, 1.0, z);
        let (p, qm) = match self.direction {
            Direction::Remove => ((1.0 - q) * n0 + q * n1, n0),
            Direction::Add => (n0, (1.0 - q) * n0 + q * n1),
        };
        // The excess P(I) − a Q(I) ≥ 0, as a positive integral where it would cancel.
        let excess = match (self.direction, c_lo) {
            (Direction::Remove, Some(c)) => {
                tilted_excess(x_lo, x_hi, x_lo, z).map(|j| q * c.exp() * j)
            }
            (Direction::Remove, None) => Some(q * n1 + (1.0 - q - a) * n0),
            (Direction::Add, Some(c)) => {
                tilted_excess(x_lo, x_hi, x_hi, z).map(|j| a * q * c.exp() * j)
            }
            (Direction::Add, None) => None,
        }
        .unwrap_or(p - a * qm)
        .clamp(0.0, p);
        let up = (b / (b - a) * excess).min(p);
        (p - up, up)
    }
}

impl Pld {
    /// One run of the Poisson-subsampled Gaussian with noise multiplier `z` and sampling rate `q`
    /// (`q = 1`: the Gaussian), in `direction`, on the grid of step `interval`; the tails beyond
    /// the grid hold at most `tail` of `P`'s mass each (module docs).
    pub fn subsampled_gaussian(
        q: f64,
        z: f64,
        direction: Direction,
        interval: f64,
        tail: f64,
    ) -> Result<Self, PrivacyError> {
        check(q, z, interval)?;
        if !(tail > 0.0 && tail < 1.0) {
            return Err(PrivacyError::Option {
                name: "PLD tail",
                value: tail,
            });
        }
        let m = Subsampled { q, z, direction };
        // Standard deviations beyond which a Gaussian has less than `tail`: Φ̄(t) ≤ e^{−t²/2}/2.
        let t = (2.0 * (1.0 / tail).ln()).sqrt();
        // The losses at the two extreme outputs that keep all but `tail` of P.
        let (p_lo_x, p_hi_x) = match direction {
            Direction::Remove => (-z * t, 1.0 + z * t),
            Direction::Add => (-z * t, z * t),
        };
        let (l_a, l_b) = (m.loss(p_lo_x), m.loss(p_hi_x));
        let (low, high) = (l_a.min(l_b), l_a.max(l_b));
        // Losses beyond ±MAX_LOSS: e^L overflows or underflows (module docs); not computed.
        let range = |v: f64| {
            if v.is_finite() && v.abs() <= MAX_LOSS {
                Ok(v / interval)
            } else {
                Err(PrivacyError::PldTooLarge {
                    points: usize::MAX,
                    limit: MAX_POINTS,
                })
            }
        };
        let j_lo = range(low)?.floor() as i64;
        let j_hi = range(high)?.ceil() as i64;
        let len = usize::try_from(j_hi - j_lo + 1).map_err(|_| PrivacyError::Option {
            name: "PLD grid",
            value: (j_hi - j_lo) as f64,
        })?;
        if len > MAX_POINTS {
            return Err(PrivacyError::PldTooLarge {
                points: len,
                limit: MAX_POINTS,
            });
        }
        let mut masses = vec![0.0; len];
        let eps = |j: i64| j as f64 * interval;
        // Everything at or below the bottom grid point is rounded up to it.
        let bottom = m.interval(f64::NEG_INFINITY, eps(j_lo));
        masses[0] += bottom.0 + bottom.1;
        for k in 0..len - 1 {
            let j = j_lo + k as i64;
            let (down, up) = m.interval(eps(j), eps(j + 1));
            masses[k] += down;
            masses[k + 1] += up;
        }
        let top = m.interval(eps(j_hi), f64::INFINITY);
        let infinity = top.0 + top.1;
        let total: f64 = masses.iter().sum::<f64>() + infinity;
        let mut pld = Self {
            interval,
            offset: j_lo,
            masses,
            infinity,
            slack: SINGLE_SLACK_ULPS * U * total,
        };
        pld.trim();
        Ok(pld)
    }

    /// Drops zero masses at both ends.
    fn trim(&mut self) {
        let first = self.masses.iter().position(|&m| m > 0.0);
        let Some(first) = first else {
            self.masses.clear();
            return;
        };
        let last = self.masses.iter().rposition(|&m| m > 0.0).unwrap_or(first);
        self.masses.truncate(last + 1);
        self.masses.drain(..first);
        self.offset += first as i64;
    }

    /// Cuts each tail holding at most `tail`: the upper one to `∞`, the lower one rounded up to
    /// the lowest loss kept (module docs).
    fn cut_tails(&mut self, tail: f64) {
        let mut top = 0.0;
        while let Some(&m) = self.masses.last() {
            if top + m > tail || self.masses.len() == 1 {
                break;
            }
            top += m;
            self.masses.pop();
        }
        self.infinity += top;
        let mut bottom = 0.0;
        let mut cut = 0;
        while cut + 1 < self.masses.len() && bottom + self.masses[cut] <= tail {
            bottom += self.masses[cut];
            cut += 1;
        }
        if cut > 0 {
            self.masses.drain(..cut);
            self.masses[0] += bottom;
            self.offset += cut as i64;
        }
        self.trim();
    }

    /// The composition of `self` and `other` (on the same grid), its tails cut at `tail` each.
    pub fn compose(&self, other: &Self, tail: f64) -> Result<Self, PrivacyError> {
        if self.interval != other.interval {
            return Err(PrivacyError::Option {
                name: "PLD interval of the second distribution",
                value: other.interval,
            });
        }
        let infinity =
            (self.infinity + other.infinity - self.infinity * other.infinity) * (1.0 + 4.0 * U);
        if self.masses.is_empty() || other.masses.is_empty() {
            return Ok(Self {
                interval: self.interval,
                offset: self.offset + other.offset,
                masses: Vec::new(),
                infinity,
                slack: self.slack + other.slack,
            });
        }
        let n = self.masses.len() + other.masses.len() - 1;
        let size = n.next_power_of_two();
        let offset = self.offset + other.offset;
        let highest = (offset + n as i64) as f64 * self.interval;
        let lowest = offset as f64 * self.interval;
        if size > MAX_POINTS || highest > MAX_LOSS || lowest < -MAX_LOSS {
            return Err(PrivacyError::PldTooLarge {
                points: size,
                limit: MAX_POINTS,
            });
        }
        let mut planner = FftPlanner::<f64>::new();
        let forward = planner.plan_fft_forward(size);
        let inverse = planner.plan_fft_inverse(size);
        let spectrum = |masses: &[f64]| {
            let mut buffer = vec![Complex::new(0.0, 0.0); size];
            for (b, &m) in buffer.iter_mut().zip(masses) {
                b.re = m;
            }
            forward.process(&mut buffer);
            buffer
        };
        let mut product = spectrum(&self.masses);
        let other_spectrum = spectrum(&other.masses);
        for (p, o) in product.iter_mut().zip(&other_spectrum) {
            *p *= o;
        }
        inverse.process(&mut product);
        let scale = 1.0 / size as f64;
        let masses: Vec<f64> = product[..n]
            .iter()
            .map(|c| (c.re * scale).max(0.0))
            .collect();
        let norms = |m: &[f64]| {
            (
                m.iter().sum::<f64>(),
                m.iter().map(|v| v * v).sum::<f64>().sqrt(),
            )
        };
        let (a1, a2) = norms(&self.masses);
        let (b1, b2) = norms(&other.masses);
        let eta = 8.0 * U * (f64::from(size.trailing_zeros()) + 2.0);
        let fft = (n as f64).sqrt() * 2.0 * eta * (a2 * b1 + b2 * a1);
        let mut pld = Self {
            interval: self.interval,
            offset: self.offset + other.offset,
            masses,
            infinity,
            slack: self.slack * (b1 + other.slack) + other.slack * a1 + fft,
        };
        pld.cut_tails(tail);
        Ok(pld)
    }

    /// `count` runs of `self`, by repeated squaring. Each product's tails are cut at
    /// `tail_per_run` times the runs it holds: a cut in a product of `r` runs is repeated
    /// `count / r` times by the later products, so each cut costs δ at most
    /// `tail_per_run · count` in the end.
    pub fn self_compose(&self, count: u64, tail_per_run: f64) -> Result<Self, PrivacyError> {
        let mut result: Option<(Self, u64)> = None;
        let (mut base, mut base_runs) = (self.clone(), 1_u64);
        let mut k = count;
        while k > 0 {
            if k & 1 == 1 {
                result = Some(match result {
                    None => (base.clone(), base_runs),
                    Some((r, runs)) => {
                        let runs = runs + base_runs;
                        (r.compose(&base, tail_per_run * runs as f64)?, runs)
                    }
                });
            }
            k >>= 1;
            if k > 0 {
                base_runs *= 2;
                base = base.compose(&base, tail_per_run * base_runs as f64)?;
            }
        }
        let result = result.map(|(r, _)| r);
        Ok(result.unwrap_or_else(|| Self {
            interval: self.interval,
            offset: 0,
            masses: vec![1.0],
            infinity: 0.0,
            slack: 0.0,
        }))
    }

    /// The loss at grid index `k`.
    fn loss(&self, k: usize) -> f64 {
        (self.offset + k as i64) as f64 * self.interval
    }

    /// A bound on the rounding of the sums in [`Pld::delta`] and [`Pld::epsilon`], relative to
    /// the tail sum: `n` additions each lose at most `u`.
    fn sum_margin(&self) -> f64 {
        4.0 * (self.masses.len() as f64 + 2.0) * U
    }

    /// `δ(ε)` of the discretised pair, plus the slack: an upper bound on the true profile.
    pub fn delta(&self, epsilon: f64) -> f64 {
        let mut sum = 0.0;
        for (k, &m) in self.masses.iter().enumerate() {
            let l = self.loss(k);
            if l > epsilon {
                sum += m * -(epsilon - l).exp_m1();
            }
        }
        let tailsum = sum + self.infinity;
        (tailsum * (1.0 + self.sum_margin()) + self.slack).min(1.0)
    }

    /// The smallest `ε ≥ 0` with `δ(ε) ≤ delta` ([`Pld::delta`], slack included), from above;
    /// `None` where even `ε = ∞` does not meet it (the mass at `∞` and the slack exceed δ).
    pub fn epsilon(&self, delta: f64) -> Option<f64> {
        let margin = 1.0 + self.sum_margin();
        // Walking down from the top atom: with S1, S2 the sums of m and m·e^{−l} over the atoms
        // above ε, δ(ε) = (∞ + S1 − e^ε S2)·margin + slack on the segment below the next atom.
        let budget = delta - self.slack;
        if self.infinity * margin >= budget {
            return None;
        }
        let (mut s1, mut s2) = (0.0_f64, 0.0_f64);
        for k in (0..self.masses.len()).rev() {
            let l = self.loss(k);
            s1 += self.masses[k];
            s2 += self.masses[k] * (-l).exp();
            // On the segment just below l (down to the next atom, or to −∞).
            let next_below = if k == 0 {
                f64::NEG_INFINITY
            } else {
                self.loss(k - 1)
            };
            let at = |e: f64| (self.infinity + s1 - e.exp() * s2).max(0.0) * margin;
            if at(next_below) > budget || k == 0 {
                // The answer lies in [next_below, l]: solve ∞ + S1 − e^ε S2 = budget/margin.
                let target = budget / margin;
                // Against δ(1 − 1e-9): the difference S1 − e^ε S2 cancels, and its rounding
                // must not let the answer miss δ.
                let target = target * (1.0 - 1e-9);
                let e = if s2 > 0.0 {
                    ((self.infinity + s1 - target) / s2).ln()
                } else {
                    f64::INFINITY
                };
                let e = if e.is_nan() { l } else { e.min(l) };
                // Round up by a relative 1e-12 so that rounding in the solve cannot print less.
                let e = e + 1e-12 * e.abs().max(1e-12);
                return Some(e.max(0.0));
            }
        }
        Some(0.0)
    }
}

/// The ε of `steps` runs of the Poisson-subsampled Gaussian at `delta` under add-or-remove
/// neighbours: the larger of the two directions' PLD figures (module docs), on the grid of step
/// `interval`. `None` where δ is below what the composition can certify, or where the
/// distribution would exceed [`MAX_POINTS`] (huge ε: the RDP figure is the one to print there).
pub fn subsampled_gaussian_epsilon(
    q: f64,
    z: f64,
    steps: u64,
    delta: f64,
    interval: f64,
) -> Result<Option<f64>, PrivacyError> {
    if !(delta > 0.0 && delta < 1.0) {
        return Err(PrivacyError::Delta(delta));
    }
    check(q, z, interval)?;
    if steps == 0 {
        return Ok(Some(0.0));
    }
    // One cut per product, at most 2·log₂(steps) of them, each costing at most `tail · steps`.
    let cuts = 2.0 * f64::from(64 - steps.leading_zeros());
    let tail = delta * CUT_SHARE / (cuts.max(1.0) * steps as f64);
    let one_tail = delta * RUN_TAIL_SHARE / steps as f64;
    let mut worst = Some(0.0_f64);
    for direction in [Direction::Remove, Direction::Add] {
        let all = match Pld::subsampled_gaussian(q, z, direction, interval, one_tail)
            .and_then(|one| one.self_compose(steps, tail))
        {
            Ok(all) => all,
            Err(PrivacyError::PldTooLarge { .. }) => return Ok(None),
            Err(e) => return Err(e),
        };
        worst = match (worst, all.epsilon(delta)) {
            (Some(a), Some(b)) => Some(a.max(b)),
            _ => None,
        };
    }
    Ok(worst)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_run_keeps_all_the_mass_and_the_mean_of_e_to_the_minus_loss() {
        for (q, z) in [(0.01, 1.0), (0.1, 0.5), (1.0, 2.0), (0.001, 5.0)] {
            for d in [Direction::Remove, Direction::Add] {
                let p = Pld::subsampled_gaussian(q, z, d, 1e-3, 1e-15).unwrap();
                let total: f64 = p.masses.iter().sum::<f64>() + p.infinity;
                assert!((total - 1.0).abs() < 1e-12, "q {q} z {z} {d:?}: {total}");
                // E_P[e^{−L}] over finite losses is Q's mass there: at most 1.
                let q_mass: f64 = p
                    .masses
                    .iter()
                    .enumerate()
                    .map(|(k, m)| m * (-p.loss(k)).exp())
                    .sum();
                assert!(q_mass <= 1.0 + 1e-12, "q {q} z {z} {d:?}: {q_mass}");
                assert!(q_mass > 1.0 - 1e-6, "q {q} z {z} {d:?}: {q_mass}");
            }
        }
    }

    #[test]
    fn the_gaussian_is_never_below_its_exact_profile_and_close_to_it() {
        // q = 1: K runs of noise multiplier z are (√K/z)-GDP exactly.
        for (z, k) in [(1.0, 1_u64), (2.0, 10), (5.0, 100), (0.8, 3)] {
            let mu = (k as f64).sqrt() / z;
            for delta in [1e-3, 1e-6] {
                let exact = crate::gdp::epsilon(mu, delta).unwrap();
                let pld = subsampled_gaussian_epsilon(1.0, z, k, delta, 1e-4)
                    .unwrap()
                    .unwrap();
                assert!(
                    pld >= exact * (1.0 - 1e-9),
                    "z {z} K {k} δ {delta}: {pld} < {exact}"
                );
                assert!(
                    pld <= exact * 1.002 + 1e-4,
                    "z {z} K {k} δ {delta}: {pld} vs {exact}"
                );
            }
        }
    }

    #[test]
    fn the_profile_decreases_and_epsilon_meets_delta() {
        let one = Pld::subsampled_gaussian(0.05, 1.0, Direction::Remove, 1e-4, 1e-14).unwrap();
        let all = one.self_compose(200, 1e-12).unwrap();
        let mut last = all.delta(0.0);
        for i in 1..100 {
            let d = all.delta(f64::from(i) * 0.05);
            assert!(d <= last);
            last = d;
        }
        for delta in [1e-3, 1e-5, 1e-8] {
            let e = all.epsilon(delta).unwrap();
            assert!(
                all.delta(e) <= delta * (1.0 + 1e-9),
                "δ {delta}: {}",
                all.delta(e)
            );
            assert!(all.delta(e * 0.999) > delta, "δ {delta}: not the smallest");
        }
    }

    /// Cases a review found: losses past `e^L`'s range were folded at ~709 (ε 709 for a true
    /// 962.65), an underflowed `e^{−l}` gave ε = 0, and a cancelling solve missed δ by 1e-12.
    #[test]
    fn huge_losses_are_not_computed_and_epsilon_meets_delta() {
        assert_eq!(
            subsampled_gaussian_epsilon(0.5, 0.025, 1, 1e-5, 0.002).unwrap(),
            None
        );
        assert_eq!(
            subsampled_gaussian_epsilon(0.5, 0.1, 100, 1e-5, 0.01).unwrap(),
            None
        );
        let one = Pld::subsampled_gaussian(1e-4, 3.0, Direction::Add, 1e-4, 1e-16).unwrap();
        let two = one.self_compose(2, 1e-16).unwrap();
        let e = two.epsilon(1e-5).unwrap();
        assert!(two.delta(e) <= 1e-5, "{}", two.delta(e));
    }

    #[test]
    fn bad_input_is_refused() {
        assert!(subsampled_gaussian_epsilon(0.0, 1.0, 1, 1e-5, 1e-4).is_err());
        assert!(subsampled_gaussian_epsilon(1.5, 1.0, 1, 1e-5, 1e-4).is_err());
        assert!(subsampled_gaussian_epsilon(0.1, 0.0, 1, 1e-5, 1e-4).is_err());
        assert!(subsampled_gaussian_epsilon(0.1, f64::NAN, 1, 1e-5, 1e-4).is_err());
        assert!(subsampled_gaussian_epsilon(0.1, 1.0, 1, 0.0, 1e-4).is_err());
        assert!(subsampled_gaussian_epsilon(0.1, 1.0, 1, 1e-5, 0.0).is_err());
        assert_eq!(
            subsampled_gaussian_epsilon(0.1, 1.0, 0, 1e-5, 1e-4).unwrap(),
            Some(0.0)
        );
        // Too fine a grid for the losses (ε in the thousands): not computed, the RDP one stays.
        assert_eq!(
            subsampled_gaussian_epsilon(0.5, 0.01, 1000, 1e-6, 1e-4).unwrap(),
            None
        );
    }
}
