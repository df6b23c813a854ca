//! The Laplace and pure-DP curves against Google's `dp-accounting` 0.6.0 (numpy 2.4.6, scipy
//! 1.17.1, Python 3.11), whose tables below were printed by `tests/vectors/laplace_dp_accounting.py`
//! (not run by CI): its `LaplaceDpEvent` (Mironov 2017, Prop. 6) and its binary
//! `RandomizedResponseDpEvent` under replace-one with `p = 2/(1 + e^ε)`, randomized response
//! that is exactly ε-DP (the tight curve of any ε-DP mechanism, Prop. 5).
//!
//! Where the two differ beyond rounding of a few ulps, dp-accounting is the one that loses digits:
//! its randomized-response curve is a log-sum-exp near `ln 1 = 0` divided by `α − 1` (about 3e-11
//! relative at ε = 0.01, α = 1.05), and its Laplace curve `s + ln_1p(…)/(α − 1)` cancels for small
//! `s`. `HIGH_PRECISION` (60-digit arithmetic, from the same script) pins our values there.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use dpwalk_privacy::mechanism::{laplace, pure_dp};
use dpwalk_privacy::rdp::{Conversion, DpBound, Orders};

const ORDERS: [f64; 11] = [
    1.01, 1.05, 1.5, 1.75, 2.0, 3.0, 8.0, 16.0, 64.0, 256.0, 1024.0,
];
/// (b / Δ₁, RDP at each of ORDERS) from LaplaceDpEvent.
const LAPLACE: [(f64, [f64; 11]); 6] = [
    (
        0.2,
        [
            4.02080655625472,
            4.073491471902624,
            4.424666121487265,
            4.524435537596088,
            4.594535044842984,
            4.744587188121634,
            4.910198762939661,
            4.955906767850309,
            4.98912215868097,
            4.997289442565788,
            4.999322914193488,
        ],
    ),
    (
        1.0,
        [
            0.37115922868905715,
            0.3841334629368067,
            0.5128835112945086,
            0.5705329201598419,
            0.6191236299985929,
            0.7468281410689699,
            0.9101988011774458,
            0.9559067678503111,
            0.9891221586809695,
            0.9972894425657877,
            0.999322914193488,
        ],
    ),
    (
        2.0,
        [
            0.10755995924294964,
            0.11166306251793501,
            0.15597787848573952,
            0.17885297222610153,
            0.200303896173616,
            0.27122643230725674,
            0.41026788176229156,
            0.45590677944650404,
            0.48912215868096953,
            0.49728944256578766,
            0.49932291419348795,
        ],
    ),
    (
        20.0,
        [
            0.001241713640465665,
            0.0012908681383154708,
            0.0018435739985094152,
            0.0021503443447077747,
            0.0024568497342059986,
            0.0036793001915597506,
            0.009619058034603022,
            0.018004985182136002,
            0.03914942816736979,
            0.04728944256581898,
            0.04932291419348794,
        ],
    ),
    (
        100.0,
        [
            5.0332078226598964e-05,
            5.232539105484192e-05,
            7.474969373634337e-05,
            8.720716229032935e-05,
            9.96641917232529e-05,
            0.00014948636932663253,
            0.0003983001828900337,
            0.0007941855570177785,
            0.002996409396860522,
            0.007312950414790049,
            0.009322914194745974,
        ],
    ),
    (
        1000.0,
        [
            5.048317078921397e-07,
            5.248250391511576e-07,
            7.497499688125051e-07,
            8.747082149822023e-07,
            9.996664169166676e-07,
            1.4994986261768813e-06,
            3.998629697009879e-06,
            7.997014276203088e-06,
            3.1967872259610936e-05,
            0.00012658956153542274,
            0.00044151476193040793,
        ],
    ),
];
/// (ε, RDP at each of ORDERS) from binary RandomizedResponseDpEvent, REPLACE_ONE.
const RANDOMIZED_RESPONSE: [(f64, [f64; 11]); 5] = [
    (
        0.01,
        [
            5.049957067012468e-05,
            5.249951656606517e-05,
            7.49984375437579e-05,
            8.749735688320474e-05,
            9.999583358609801e-05,
            0.00014998375271196157,
            0.00039962389738137726,
            0.0007968137287234537,
            0.0030055538249430668,
            0.007324934346053814,
            0.009327312141525174,
        ],
    ),
    (
        0.05,
        [
            0.001262231734574375,
            0.001312197935256636,
            0.0018740241205690844,
            0.0021858497385103073,
            0.0024973997762456762,
            0.0037398859327786027,
            0.00977305115737348,
            0.018267787838219682,
            0.039417231354514366,
            0.047378589615665885,
            0.04934656925902933,
        ],
    ),
    (
        0.5,
        [
            0.12363338647681787,
            0.12830994566461518,
            0.17836940667623224,
            0.20380279622035488,
            0.22733629380264564,
            0.3024063750562214,
            0.4323537067564649,
            0.46839488009060076,
            0.49247496850507766,
            0.49814087457184275,
            0.49953658163814263,
        ],
    ),
    (
        1.0,
        [
            0.4660372583370039,
            0.4814727519441626,
            0.6273326470494993,
            0.6875040623657691,
            0.7353256640555192,
            0.8467268304854476,
            0.9552483740548644,
            0.9791158874987874,
            0.9950275922616155,
            0.9987715227940461,
            0.9996937813416245,
        ],
    ),
    (
        5.0,
        [
            4.936288811266105,
            4.947261895629054,
            4.986660100820197,
            4.991051170876147,
            4.993284957413155,
            4.996642325762385,
            4.999040664501555,
            4.999552310100725,
            4.999893407166839,
            4.999973665300043,
            4.999993435631976,
        ],
    ),
];
/// (α, ε, Laplace at b/Δ₁ = 1/ε, randomized response at ε), 60-digit arithmetic.
const HIGH_PRECISION: [(f64, f64, f64, f64); 6] = [
    (1.01, 0.01, 5.033207822659906e-05, 5.049957067021393e-05),
    (1.05, 0.01, 5.232539105484109e-05, 5.249951656785801e-05),
    (1.5, 0.0001, 7.499749996875625e-09, 7.499999984375001e-09),
    (2.0, 1e-06, 9.999996666664166e-13, 9.999999999995832e-13),
    (64.0, 0.001, 3.196787225961084e-05, 3.1978516430464904e-05),
    (1.001, 2.0, 1.136148967498484, 1.524027408076008),
];
/// (b / Δ₁, steps, δ, ε, optimal order) over dpwalk's default grid.
const LAPLACE_COMPOSED: [(f64, u64, f64, f64, f64); 5] = [
    (20.0, 20000, 1e-05, 56.563519352459764, 1.65),
    (20.0, 20000, 1e-06, 59.834115393806755, 1.75),
    (10.0, 20000, 1e-06, 167.77203379110958, 1.4),
    (100.0, 1000000, 1e-06, 100.47117234738747, 1.5),
    (1.0, 100, 1e-05, 70.77786270181159, 1.7),
];

/// Agreement with dp-accounting: `1e-12` relative, plus the rounding of its log-sum-exp near
/// `ln 1 = 0` (a few ulps of 1), which the division by `α − 1` magnifies near order 1.
fn agrees(alpha: f64, ours: f64, theirs: f64) -> bool {
    (ours - theirs).abs() <= 1e-12 * theirs + 4.0 * f64::EPSILON / (alpha - 1.0)
}

/// Checks one table against a curve function and prints the largest relative gap.
fn check_table(name: &str, table: &[(f64, [f64; 11])], curve: impl Fn(&Orders, f64) -> Vec<f64>) {
    let orders = Orders::new(&ORDERS).unwrap();
    let mut worst = 0.0_f64;
    for (param, want) in table {
        let got = curve(&orders, *param);
        for ((&a, &g), &w) in ORDERS.iter().zip(&got).zip(want) {
            assert!(agrees(a, g, w), "{name}({param}) at α = {a}: {g} vs {w}");
            worst = worst.max((g - w).abs() / w);
        }
    }
    println!("largest relative gap to dp-accounting ({name}): {worst:e}");
}

#[test]
fn laplace_matches_dp_accounting() {
    check_table("Laplace", &LAPLACE, |o, scale| {
        laplace(o, scale).unwrap().values().to_vec()
    });
}

#[test]
fn pure_dp_matches_binary_randomized_response_in_dp_accounting() {
    check_table("pure DP", &RANDOMIZED_RESPONSE, |o, eps| {
        pure_dp(o, eps).unwrap().values().to_vec()
    });
}

#[test]
fn both_curves_match_high_precision_arithmetic() {
    for (alpha, eps, lap, rr) in HIGH_PRECISION {
        let orders = Orders::new(&[alpha]).unwrap();
        let got_lap = laplace(&orders, 1.0 / eps).unwrap().values()[0];
        let got_rr = pure_dp(&orders, eps).unwrap().values()[0];
        assert!(
            (got_lap - lap).abs() <= 4.0 * f64::EPSILON * lap,
            "Lap({alpha}; {eps}): {got_lap} vs {lap}"
        );
        assert!(
            (got_rr - rr).abs() <= 4.0 * f64::EPSILON * rr,
            "RR({alpha}; {eps}): {got_rr} vs {rr}"
        );
    }
}

#[test]
fn composed_laplace_epsilon_matches_dp_accounting_on_the_default_grid() {
    // The script passes Orders::default_grid() to RdpAccountant; its conversion is ours (tight).
    let orders = Orders::default_grid();
    for (scale, steps, delta, eps, order) in LAPLACE_COMPOSED {
        let got = laplace(&orders, scale)
            .unwrap()
            .repeat(steps)
            .to_dp(delta, Conversion::Tight)
            .unwrap();
        let DpBound::Finite(g) = got else {
            panic!("finite curve")
        };
        assert!(
            (g.epsilon - eps).abs() <= 1e-9 * eps,
            "{steps} × Lap({scale}), δ = {delta}: {} vs {eps}",
            g.epsilon
        );
        assert_eq!(g.order, order, "{steps} × Lap({scale}), δ = {delta}");
    }
}
