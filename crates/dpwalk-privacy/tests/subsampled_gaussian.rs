//! The subsampled Gaussian against Google's `dp-accounting` (integer orders, ε) and against an
//! independent adaptive quadrature of the defining integral (fractional orders).
//!
//! Fixture: `fixtures/dp_accounting_reference.json`, made by `fixtures/gen_dp_accounting.py`.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use dpwalk_privacy::mechanism::{gaussian, subsampled_gaussian};
use dpwalk_privacy::rdp::{Conversion, DpBound, Orders};
use serde_json::Value;

fn fixture() -> Value {
    serde_json::from_str(include_str!("fixtures/dp_accounting_reference.json")).unwrap()
}

fn floats(v: &Value) -> Vec<Option<f64>> {
    v.as_array().unwrap().iter().map(Value::as_f64).collect()
}

fn close(a: f64, b: f64, rel: f64, abs: f64) -> bool {
    (a - b).abs() <= rel * a.abs().max(b.abs()) + abs
}

#[test]
fn integer_orders_match_dp_accounting() {
    let fx = fixture();
    let orders: Vec<f64> = floats(&fx["integer_orders"])
        .into_iter()
        .map(Option::unwrap)
        .collect();
    let grid = Orders::new(&orders).unwrap();
    let mut checked = 0;
    for c in fx["curves"].as_array().unwrap() {
        let (q, z) = (c["q"].as_f64().unwrap(), c["z"].as_f64().unwrap());
        let ours = subsampled_gaussian(&grid, q, z).unwrap();
        for ((a, want), got) in orders.iter().zip(floats(&c["rdp"])).zip(ours.values()) {
            let want = want.expect("dp-accounting is finite at integer orders");
            assert!(
                close(*got, want, 1e-9, 1e-15),
                "q={q} z={z} α={a}: {got} vs {want}"
            );
            checked += 1;
        }
    }
    assert_eq!(checked, 25 * orders.len());
}

#[test]
fn epsilons_match_dp_accounting() {
    let fx = fixture();
    let orders: Vec<f64> = floats(&fx["integer_orders"])
        .into_iter()
        .map(Option::unwrap)
        .collect();
    let grid = Orders::new(&orders).unwrap();
    for e in fx["epsilons"].as_array().unwrap() {
        let (q, z) = (e["q"].as_f64().unwrap(), e["z"].as_f64().unwrap());
        let steps = e["steps"].as_u64().unwrap();
        let delta = e["delta"].as_f64().unwrap();
        let want = e["epsilon"].as_f64().unwrap();
        let curve = subsampled_gaussian(&grid, q, z).unwrap().repeat(steps);
        match curve.to_dp(delta, Conversion::Tight).unwrap() {
            DpBound::Finite(g) => {
                assert!(
                    close(g.rdp_epsilon, want, 1e-9, 1e-12),
                    "q={q} z={z} steps={steps} δ={delta}: {} vs {want}",
                    g.rdp_epsilon
                );
                if want > 0.0 {
                    assert_eq!(
                        g.order,
                        e["order"].as_f64().unwrap(),
                        "q={q} z={z} T={steps}"
                    );
                }
            }
            DpBound::NoFiniteGuarantee { .. } => panic!("finite curve"),
        }
    }
}

/// Adaptive Gauss–Kronrod (7, 15) quadrature of `exp(log_f)` on `[a, b]`, scaled by `exp(-shift)`.
mod quad {
    const XGK: [f64; 8] = [
        0.991_455_371_120_812_6,
        0.949_107_912_342_758_5,
        0.864_864_423_359_769_1,
        0.741_531_185_599_394_4,
        0.586_087_235_467_691_1,
        0.405_845_151_377_397_2,
        0.207_784_955_007_898_5,
        0.0,
    ];
    const WGK: [f64; 8] = [
        0.022_935_322_010_529_22,
        0.063_092_092_629_978_55,
        0.104_790_010_322_250_2,
        0.140_653_259_715_525_9,
        0.169_004_726_639_267_9,
        0.190_350_578_064_785_4,
        0.204_432_940_075_298_9,
        0.209_482_141_084_727_8,
    ];
    const WG: [f64; 4] = [
        0.129_484_966_168_869_7,
        0.279_705_391_489_276_7,
        0.381_830_050_505_118_9,
        0.417_959_183_673_469_4,
    ];

    fn gk15(f: &dyn Fn(f64) -> f64, a: f64, b: f64) -> (f64, f64) {
        let (c, h) = (0.5 * (a + b), 0.5 * (b - a));
        let fc = f(c);
        let (mut k, mut g) = (WGK[7] * fc, WG[3] * fc);
        for i in 0..7 {
            let s = f(c - h * XGK[i]) + f(c + h * XGK[i]);
            k += WGK[i] * s;
            if i % 2 == 1 {
                g += WG[i / 2] * s;
            }
        }
        (k * h, ((k - g) * h).abs())
    }

    /// ∫ f over [a, b] split at `breaks`, to absolute error `tol` per piece (bisection).
    pub fn integrate(f: &dyn Fn(f64) -> f64, breaks: &[f64], tol: f64) -> f64 {
        let mut total = 0.0;
        for w in breaks.windows(2) {
            let mut stack = vec![(w[0], w[1], 0u32)];
            while let Some((a, b, depth)) = stack.pop() {
                let (v, err) = gk15(f, a, b);
                if err <= tol || depth > 60 {
                    total += v;
                } else {
                    let m = 0.5 * (a + b);
                    stack.push((a, m, depth + 1));
                    stack.push((m, b, depth + 1));
                }
            }
        }
        total
    }
}

/// `ln A_α` by quadrature of `∫ μ0(x) ((1−q) + q μ1(x)/μ0(x))^α dx`, in log space.
fn log_a_quadrature(q: f64, z: f64, alpha: f64) -> f64 {
    let ln_norm = -(z * (2.0 * std::f64::consts::PI).sqrt()).ln();
    let log_f = |x: f64| {
        let a = (1.0 - q).ln();
        let b = q.ln() + (2.0 * x - 1.0) / (2.0 * z * z);
        let (lo, hi) = if a < b { (a, b) } else { (b, a) };
        ln_norm - x * x / (2.0 * z * z) + alpha * (hi + (lo - hi).exp().ln_1p())
    };
    // The integrand has one bump near 0 (the (1−q)^α μ0 part) and one near α (the tilted part);
    // put breakpoints there and at the switch point z₀, and scale by the largest log value.
    let (lo, hi) = (-40.0 * z - 1.0, alpha + 40.0 * z + 1.0);
    let n = 20_000;
    let shift = (0..=n)
        .map(|k| log_f(lo + (hi - lo) * k as f64 / n as f64))
        .fold(f64::NEG_INFINITY, f64::max);
    let z0 = z * z * (1.0 / q - 1.0).ln() + 0.5;
    let mut breaks = vec![lo, hi, 0.0, alpha];
    if z0 > lo && z0 < hi {
        breaks.push(z0);
    }
    breaks.sort_by(f64::total_cmp);
    breaks.dedup();
    let f = |x: f64| (log_f(x) - shift).exp();
    shift + quad::integrate(&f, &breaks, 1e-17).ln()
}

#[test]
fn quadrature_is_accurate_where_a_closed_form_exists() {
    // A_2 = 1 + q²(e^{1/z²} − 1) and A_3 = 1 + 3q²(e^{1/z²} − 1) + q³(e^{3/z²} − 3e^{1/z²} + 2).
    for (q, z) in [(0.01_f64, 1.0_f64), (0.3, 0.7), (0.5, 5.0), (0.001, 0.5)] {
        let e1 = (1.0 / (z * z)).exp_m1();
        let a2 = (q * q * e1).ln_1p();
        let e3 = (3.0 / (z * z)).exp() - 3.0 * (1.0 / (z * z)).exp() + 2.0;
        let a3 = (3.0 * q * q * e1 + q.powi(3) * e3).ln_1p();
        assert!(
            close(log_a_quadrature(q, z, 2.0), a2, 1e-10, 1e-15),
            "q={q} z={z}"
        );
        assert!(
            close(log_a_quadrature(q, z, 3.0), a3, 1e-10, 1e-15),
            "q={q} z={z}"
        );
    }
}

#[test]
fn fractional_orders_match_quadrature() {
    let alphas = [1.1, 1.25, 1.5, 1.75, 2.25, 2.5, 2.75, 3.5, 4.5, 10.5, 32.5];
    let grid = Orders::new(&alphas).unwrap();
    let mut worst = 0.0_f64;
    for q in [0.001, 0.01, 0.1, 0.5, 0.9] {
        for z in [0.5, 0.8, 1.0, 2.0, 5.0] {
            let ours = subsampled_gaussian(&grid, q, z).unwrap();
            for (&a, &got) in alphas.iter().zip(ours.values()) {
                let want = log_a_quadrature(q, z, a) / (a - 1.0);
                // The series stops at terms below e^{-30} A (~1e-13 A) and is an upper bound;
                // ln A can be ~1e-6 for small q, so the absolute slack matters there.
                assert!(
                    close(got, want, 1e-9, 2e-13 / (a - 1.0)),
                    "q={q} z={z} α={a}: series {got} vs quadrature {want}"
                );
                assert!(
                    got >= want * (1.0 - 1e-13) - 1e-14 / (a - 1.0),
                    "q={q} z={z} α={a}: {got} below {want}"
                );
                worst = worst.max((got - want).abs() / want);
            }
        }
    }
    eprintln!("largest relative gap series vs quadrature: {worst:e}");
}

#[test]
fn dp_accounting_overestimates_fractional_orders() {
    // dp-accounting 0.6.0 drops the signs of C(α, i): its fractional values are never below the
    // true ones, are strictly above for most (q, z), and are +∞ (null) where its 1000-term cap hits.
    let fx = fixture();
    let alphas: Vec<f64> = floats(&fx["fractional_orders"])
        .into_iter()
        .map(Option::unwrap)
        .collect();
    let grid = Orders::new(&alphas).unwrap();
    let (mut above, mut infinite) = (0, 0);
    for c in fx["fractional_dp_accounting"].as_array().unwrap() {
        let (q, z) = (c["q"].as_f64().unwrap(), c["z"].as_f64().unwrap());
        let ours = subsampled_gaussian(&grid, q, z).unwrap();
        for (theirs, &got) in floats(&c["rdp"]).into_iter().zip(ours.values()) {
            match theirs {
                None => infinite += 1,
                Some(t) => {
                    assert!(
                        t >= got * (1.0 - 1e-9),
                        "q={q} z={z}: theirs {t} < ours {got}"
                    );
                    if t > got * (1.0 + 1e-6) {
                        above += 1;
                    }
                }
            }
        }
    }
    assert!(
        above > 0 && infinite > 0,
        "above={above} infinite={infinite}"
    );
}

#[test]
fn default_grid_contains_dp_accountings_default_orders() {
    let fx = fixture();
    let grid = Orders::default_grid();
    let theirs = floats(&fx["default_orders"]);
    assert_eq!(theirs.len(), 156);
    for a in theirs {
        let a = a.unwrap();
        // Bitwise: 1 + x/10 in Python is the double nearest the decimal, as ours are.
        assert!(
            grid.as_slice().contains(&a),
            "dp-accounting's order {a} missing"
        );
    }
}

#[test]
fn default_grid_is_never_above_dp_accounting_defaults() {
    // dp-accounting's RdpAccountant over its default orders and its compute_epsilon (the tight
    // conversion with the KL shortcut, as Conversion::Tight) against ours over the default grid.
    let fx = fixture();
    let grid = Orders::default_grid();
    let (mut gaps, mut gaussian_gaps) = (Vec::new(), Vec::new());
    let mut at_edge = 0;
    for e in fx["default_grid_epsilons"].as_array().unwrap() {
        let (q, z) = (e["q"].as_f64().unwrap(), e["z"].as_f64().unwrap());
        let steps = e["steps"].as_u64().unwrap();
        let delta = e["delta"].as_f64().unwrap();
        let theirs = e["epsilon"].as_f64().expect("dp-accounting is finite here");
        let mechanism = e["mechanism"].as_str().unwrap();
        let curve = match mechanism {
            "gaussian" => gaussian(&grid, z).unwrap(),
            "poisson_subsampled_gaussian" => subsampled_gaussian(&grid, q, z).unwrap(),
            m => panic!("unknown mechanism {m}"),
        };
        let DpBound::Finite(g) = curve.repeat(steps).to_dp(delta, Conversion::Tight).unwrap()
        else {
            panic!("finite curve");
        };
        // The figure printed is never above the RDP one (the Gaussian's is exact, lower).
        assert!(g.epsilon <= g.rdp_epsilon);
        assert!(
            g.rdp_epsilon <= theirs * (1.0 + 1e-9),
            "{e}: ours {} (order {}) above dp-accounting's {theirs}",
            g.rdp_epsilon,
            g.order
        );
        if g.order == grid.as_slice()[0] || g.order == *grid.as_slice().last().unwrap() {
            at_edge += 1;
        }
        let gap = (theirs - g.rdp_epsilon) / theirs;
        if gap > 0.05 {
            eprintln!(
                "{mechanism} q={q} z={z} T={steps} δ={delta}: ours {:.6} at order {}, \
                 dp-accounting's {theirs:.6} at order {}",
                g.rdp_epsilon, g.order, e["order"]
            );
        }
        if mechanism == "gaussian" {
            gaussian_gaps.push(gap);
        } else {
            gaps.push(gap);
        }
    }
    assert_eq!(gaussian_gaps.len() + gaps.len(), 210);
    for (name, mut v) in [("Gaussian", gaussian_gaps), ("subsampled Gaussian", gaps)] {
        v.sort_by(f64::total_cmp);
        eprintln!(
            "{name}, {} settings: ε below dp-accounting's by a median {:.3e}, at most {:.3e}, \
             at least {:.3e} (relative)",
            v.len(),
            v[v.len() / 2],
            v[v.len() - 1],
            v[0]
        );
    }
    eprintln!("{at_edge} optima at the grid's first or last order");
}
