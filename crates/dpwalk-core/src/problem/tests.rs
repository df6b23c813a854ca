//! Tests of the problems module: validation, gradients, prox optimality, the reference solver.

use super::prox::LocalProx;
use super::reference::{ReferenceOptions, solve};
use super::test_util::{normals, user_data};
use super::*;
use crate::rng::NodeRng;
use nalgebra::{DMatrix, DVector};
use proptest::prelude::*;
use rand::SeedableRng;

fn norm(x: &[f64]) -> f64 {
    x.iter().map(|v| v * v).sum::<f64>().sqrt()
}

/// `(‖∇f_i(x) + (x − v)/γ‖, scale)` with the solver's scale `mean‖a_j‖ + (‖x‖ + ‖v‖)/γ`.
fn prox_residual(problem: &Problem, user: usize, gamma: f64, v: &[f64], x: &[f64]) -> (f64, f64) {
    let mut g = vec![0.0; problem.dim()];
    problem.user_grad(user, x, &mut g);
    for ((gk, &xk), &vk) in g.iter_mut().zip(x).zip(v) {
        *gk += (xk - vk) / gamma;
    }
    let data = problem.data();
    let p = data.data.n_features;
    let m = data.records(user).max(1);
    let mean_a = data.features(user).chunks_exact(p).map(norm).sum::<f64>() / m as f64;
    (norm(&g), mean_a + (norm(x) + norm(v)) / gamma)
}

/// Checks `prox_{γ f_i}` of every user of `problem` against its optimality condition, from a
/// random (or non-finite) starting point.
fn check_prox_optimality(
    problem: &Problem,
    prox: &LocalProx<'_>,
    seed: u64,
    rel_tol: f64,
) -> Result<(), TestCaseError> {
    let gamma = prox.gamma();
    let mut rng = NodeRng::seed_from_u64(seed ^ 0x5eed);
    let mut scratch = prox.scratch();
    for user in 0..problem.n_users() {
        let v: Vec<f64> = normals(&mut rng, problem.dim())
            .iter()
            .map(|x| 3.0 * x)
            .collect();
        let mut x = if user % 3 == 2 {
            vec![f64::NAN; problem.dim()]
        } else {
            normals(&mut rng, problem.dim())
        };
        prox.prox(user, &v, &mut x, &mut scratch).unwrap();
        let (res, scale) = prox_residual(problem, user, gamma, &v, &x);
        prop_assert!(
            res <= rel_tol * scale,
            "user {user}: residual {res:e}, scale {scale:e}"
        );
        prop_assert!(scratch.last_certificate() <= gamma * rel_tol * scale);
        if problem.data().records(user) == 0 {
            prop_assert_eq!(&x, &v);
        }
    }
    Ok(())
}

fn log_gamma() -> impl Strategy<Value = f64> {
    (-3.0f64..3.0).prop_map(|e| 10f64.powf(e))
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]

    /// Squared prox: optimality, and agreement with a dense solve of
    /// `(AᵀA/m + I/γ) x = Aᵀb/m + v/γ`, for users with 0, 1, `2 ≤ m < p` and `m ≥ p` records.
    #[test]
    fn squared_prox_is_exact(
        seed in any::<u64>(),
        p in 1usize..14,
        ms in proptest::collection::vec(0usize..12, 1..6),
        gamma in log_gamma(),
    ) {
        let problem = Problem::new(Loss::Squared, Regularizer::None, user_data(seed, Loss::Squared, &ms, p)).unwrap();
        let prox = problem.local_prox(gamma).unwrap();
        check_prox_optimality(&problem, &prox, seed, 1e-11)?;
        let mut rng = NodeRng::seed_from_u64(seed);
        let mut scratch = ProxScratch::default();
        for (user, &m) in ms.iter().enumerate() {
            let v = normals(&mut rng, p);
            let mut x = vec![0.0; p];
            prox.prox(user, &v, &mut x, &mut scratch).unwrap();
            let a = DMatrix::from_row_slice(m, p, problem.data().features(user));
            let b = DVector::from_column_slice(problem.data().labels(user));
            let mf = m.max(1) as f64;
            let lhs = a.transpose() * &a / mf + DMatrix::identity(p, p) / gamma;
            let rhs = a.transpose() * b / mf + DVector::from_column_slice(&v) / gamma;
            let dense = lhs.lu().solve(&rhs).unwrap();
            let err = (DVector::from_column_slice(&x) - &dense).norm();
            prop_assert!(err <= 1e-9 * (1.0 + dense.norm()), "user {user} (m = {m}): error {err:e}");
        }
    }

    /// Logistic prox, through each direction solver: direct primal (m ≥ p), direct dual (m < p),
    /// and conjugate gradients (direct limit 0).
    #[test]
    fn logistic_prox_is_optimal(
        seed in any::<u64>(),
        p in 1usize..12,
        ms in proptest::collection::vec(0usize..10, 1..5),
        gamma in log_gamma(),
        cg in any::<bool>(),
    ) {
        let problem = Problem::new(Loss::Logistic, Regularizer::None, user_data(seed, Loss::Logistic, &ms, p)).unwrap();
        let prox = LocalProx::with_direct_max(&problem, gamma, if cg { 0 } else { 128 }).unwrap();
        check_prox_optimality(&problem, &prox, seed, 1e-11)?;
    }

    /// Multinomial prox (Newton–CG).
    #[test]
    fn multinomial_prox_is_optimal(
        seed in any::<u64>(),
        p in 1usize..8,
        classes in 2usize..5,
        ms in proptest::collection::vec(0usize..8, 1..4),
        gamma in log_gamma(),
    ) {
        let loss = Loss::Multinomial { classes };
        let problem = Problem::new(loss, Regularizer::None, user_data(seed, loss, &ms, p)).unwrap();
        let prox = problem.local_prox(gamma).unwrap();
        check_prox_optimality(&problem, &prox, seed, 1e-11)?;
    }
}

#[test]
fn prox_of_a_large_logistic_user_uses_conjugate_gradients() {
    // min(m, p) = 130 > 128: the CG path under the default limit.
    let problem = Problem::new(
        Loss::Logistic,
        Regularizer::None,
        user_data(4, Loss::Logistic, &[131], 130),
    )
    .unwrap();
    let prox = problem.local_prox(5.0).unwrap();
    check_prox_optimality(&problem, &prox, 4, 1e-11).unwrap();
}

#[test]
fn user_grad_matches_finite_differences() {
    for loss in [
        Loss::Squared,
        Loss::Logistic,
        Loss::Multinomial { classes: 3 },
    ] {
        let problem =
            Problem::new(loss, Regularizer::None, user_data(7, loss, &[2, 3], 4)).unwrap();
        let mut rng = NodeRng::seed_from_u64(8);
        let x = normals(&mut rng, problem.dim());
        let mut g = vec![0.0; problem.dim()];
        problem.user_grad(1, &x, &mut g);
        let h = 1e-6;
        for k in 0..problem.dim() {
            let (mut xp, mut xm) = (x.clone(), x.clone());
            xp[k] += h;
            xm[k] -= h;
            let fd = (problem.user_loss(1, &xp) - problem.user_loss(1, &xm)) / (2.0 * h);
            assert!(
                (fd - g[k]).abs() <= 1e-7 * (1.0 + g[k].abs()),
                "{loss:?} coordinate {k}: {fd} vs {}",
                g[k]
            );
        }
    }
}

#[test]
fn loss_values_by_hand() {
    // One user, two records in 2D; x = (1, -1).
    let data = |labels: Vec<f64>, kind| UserData {
        data: Dataset {
            features: vec![1.0, 0.0, 1.0, 2.0],
            labels,
            n_features: 2,
            label_kind: kind,
        },
        offsets: vec![0, 2],
    };
    let x = [1.0, -1.0];
    let sq = Problem::new(
        Loss::Squared,
        Regularizer::L1 { l1: 0.5 },
        data(vec![2.0, 0.0], LabelKind::Real),
    )
    .unwrap();
    // residuals 1 − 2 = −1 and −1 − 0 = −1: f = (½ + ½)/2 = ½; r = 0.5 · 2 = 1.
    assert!((sq.user_loss(0, &x) - 0.5).abs() < 1e-15);
    assert!((sq.objective(&x) - 1.5).abs() < 1e-15);
    let lg = Problem::new(
        Loss::Logistic,
        Regularizer::None,
        data(vec![1.0, -1.0], LabelKind::Binary),
    )
    .unwrap();
    // margins 1 and +1 (b = −1, aᵀx = −1): both log(1 + e⁻¹).
    assert!((lg.user_loss(0, &x) - (1.0 + (-1f64).exp()).ln()).abs() < 1e-15);
    let mn = Problem::new(
        Loss::Multinomial { classes: 2 },
        Regularizer::None,
        data(vec![0.0, 1.0], LabelKind::Classes(2)),
    )
    .unwrap();
    // x = [class 0: (1, −1), class 1: (0, 0)]; logits (1, 0) and (−1, 0).
    let xm = [1.0, -1.0, 0.0, 0.0];
    let expected = ((1f64.exp() + 1.0).ln() - 1.0 + ((-1f64).exp() + 1.0).ln()) / 2.0;
    assert!((mn.user_loss(0, &xm) - expected).abs() < 1e-15);
    assert_eq!(mn.dim(), 4);
}

#[test]
fn user_without_records_has_zero_loss_and_identity_prox() {
    for loss in [
        Loss::Squared,
        Loss::Logistic,
        Loss::Multinomial { classes: 2 },
    ] {
        let problem =
            Problem::new(loss, Regularizer::None, user_data(3, loss, &[2, 0], 3)).unwrap();
        let x = vec![0.7; problem.dim()];
        assert_eq!(problem.user_loss(1, &x), 0.0);
        let mut g = vec![1.0; problem.dim()];
        problem.user_grad(1, &x, &mut g);
        assert!(g.iter().all(|&v| v == 0.0));
        let prox = problem.local_prox(1.0).unwrap();
        let mut out = vec![0.0; problem.dim()];
        prox.prox(1, &x, &mut out, &mut prox.scratch()).unwrap();
        assert_eq!(out, x);
    }
}

#[test]
fn dataset_loss_and_error_rate() {
    let test = Dataset {
        features: vec![1.0, 0.0, 0.0, 1.0, -1.0, 0.0],
        labels: vec![1.0, -1.0, -1.0],
        n_features: 2,
        label_kind: LabelKind::Binary,
    };
    let problem = Problem::new(
        Loss::Logistic,
        Regularizer::L2 { l2: 1.0 },
        user_data(1, Loss::Logistic, &[3], 2),
    )
    .unwrap();
    let x = [2.0, 1.0];
    // margins b·aᵀx: 2, −1, 2 → one error; the loss excludes the regularizer.
    assert_eq!(problem.error_rate(&test, &x), Some(1.0 / 3.0));
    let expected = (2.0 * (1.0 + (-2f64).exp()).ln() + (1.0 + 1f64.exp()).ln()) / 3.0;
    assert!((problem.dataset_loss(&test, &x) - expected).abs() < 1e-15);
    let wrong = Dataset {
        n_features: 3,
        features: vec![0.0; 9],
        ..test.clone()
    };
    assert!(problem.dataset_loss(&wrong, &x).is_nan());

    let sq = Problem::new(
        Loss::Squared,
        Regularizer::None,
        user_data(1, Loss::Squared, &[3], 2),
    )
    .unwrap();
    assert_eq!(sq.error_rate(&test, &x), None);

    let mn = Problem::new(
        Loss::Multinomial { classes: 3 },
        Regularizer::None,
        user_data(1, Loss::Multinomial { classes: 3 }, &[3], 2),
    )
    .unwrap();
    let test3 = Dataset {
        labels: vec![0.0, 2.0, 1.0],
        label_kind: LabelKind::Classes(3),
        ..test
    };
    // class k scores x_kᵀa: class 0 (1,0), class 1 (−1,0), class 2 (0,1).
    let xm = [1.0, 0.0, -1.0, 0.0, 0.0, 1.0];
    // rows: (1,0) → 0 ✓; (0,1) → 2 ✓; (−1,0) → 1 ✓.
    assert_eq!(mn.error_rate(&test3, &xm), Some(0.0));
    let bad = Dataset {
        labels: vec![0.0, 7.0, 1.0],
        ..test3
    };
    assert!(mn.dataset_loss(&bad, &xm).is_nan());
}

fn tiny(
    features: Vec<f64>,
    labels: Vec<f64>,
    n_features: usize,
    kind: LabelKind,
    offsets: Vec<usize>,
) -> UserData {
    UserData {
        data: Dataset {
            features,
            labels,
            n_features,
            label_kind: kind,
        },
        offsets,
    }
}

#[test]
fn the_majority_class_is_the_most_frequent_training_label_and_not_the_zero_model() {
    // Majority +1 over two users: the zero model predicts −1 everywhere and errs on the +1s.
    let data = tiny(
        vec![1.0, 0.0, 0.0, 1.0, 1.0, 1.0, -1.0, 0.0],
        vec![1.0, -1.0, 1.0, 1.0],
        2,
        LabelKind::Binary,
        vec![0, 2, 4],
    );
    let problem = Problem::new(Loss::Logistic, Regularizer::None, data.clone()).unwrap();
    assert_eq!(problem.majority_class(), Some(1.0));
    assert_eq!(data.data.share_not_labelled(1.0), 0.25);
    assert_eq!(problem.error_rate(&data.data, &[0.0, 0.0]), Some(0.75));
    // A tie goes to the smaller label; classes count over every user's rows.
    let tie = tiny(
        vec![0.0; 8],
        vec![2.0, 1.0, 2.0, 1.0],
        2,
        LabelKind::Classes(3),
        vec![0, 1, 4],
    );
    let mn = Problem::new(Loss::Multinomial { classes: 3 }, Regularizer::None, tie).unwrap();
    assert_eq!(mn.majority_class(), Some(1.0));
    // Regression has none.
    let sq = Problem::new(
        Loss::Squared,
        Regularizer::None,
        user_data(1, Loss::Squared, &[3], 2),
    )
    .unwrap();
    assert_eq!(sq.majority_class(), None);
}

#[test]
fn new_rejects_each_bad_input() {
    use LabelKind::*;
    let ok = || {
        tiny(
            vec![1.0, 2.0, 3.0, 4.0],
            vec![1.0, -1.0],
            2,
            Binary,
            vec![0, 1, 2],
        )
    };
    assert!(Problem::new(Loss::Logistic, Regularizer::None, ok()).is_ok());
    let err = |loss, reg, data| Problem::new(loss, reg, data).unwrap_err();
    let none = Regularizer::None;

    assert_eq!(
        err(Loss::Squared, none, tiny(vec![], vec![], 2, Real, vec![0])),
        ProblemError::NoUsers
    );
    assert_eq!(
        err(
            Loss::Squared,
            none,
            tiny(vec![], vec![1.0], 0, Real, vec![0, 1])
        ),
        ProblemError::NoFeatures
    );
    assert!(matches!(
        err(
            Loss::Logistic,
            none,
            UserData {
                offsets: vec![1, 2],
                ..ok()
            }
        ),
        ProblemError::Offsets(_)
    ));
    assert!(matches!(
        err(
            Loss::Logistic,
            none,
            UserData {
                offsets: vec![0, 2, 1, 2],
                ..ok()
            }
        ),
        ProblemError::Offsets(_)
    ));
    assert!(matches!(
        err(
            Loss::Logistic,
            none,
            UserData {
                offsets: vec![0, 1],
                ..ok()
            }
        ),
        ProblemError::Offsets(_)
    ));
    assert_eq!(
        err(
            Loss::Logistic,
            none,
            tiny(vec![1.0; 3], vec![1.0, -1.0], 2, Binary, vec![0, 2])
        ),
        ProblemError::Shape {
            values: 3,
            rows: 2,
            n_features: 2
        }
    );
    assert_eq!(
        err(
            Loss::Logistic,
            none,
            tiny(
                vec![1.0, 2.0, f64::INFINITY, 4.0],
                vec![1.0, -1.0],
                2,
                Binary,
                vec![0, 2]
            )
        ),
        ProblemError::NonFiniteFeature { row: 1, col: 0 }
    );
    assert_eq!(
        err(
            Loss::Squared,
            none,
            tiny(vec![1.0; 4], vec![1.0, f64::NAN], 2, Real, vec![0, 2])
        ),
        ProblemError::NonFiniteLabel { row: 1 }
    );
    assert_eq!(
        err(
            Loss::Logistic,
            none,
            tiny(vec![1.0; 4], vec![1.0, 0.5], 2, Binary, vec![0, 2])
        ),
        ProblemError::BinaryLabel { row: 1, label: 0.5 }
    );
    // Messages count records from 1, as the data loaders' do.
    assert_eq!(
        ProblemError::BinaryLabel { row: 1, label: 0.5 }.to_string(),
        "logistic loss needs labels +1 or -1; record 2 has 0.5 (counted from 1)"
    );
    assert_eq!(
        ProblemError::NonFiniteFeature { row: 1, col: 0 }.to_string(),
        "feature 1 of record 2 is not finite (counted from 1)"
    );
    let three = Loss::Multinomial { classes: 3 };
    assert_eq!(
        err(
            three,
            none,
            tiny(vec![1.0; 4], vec![0.0, 3.0], 2, Classes(3), vec![0, 2])
        ),
        ProblemError::ClassLabel {
            row: 1,
            label: 3.0,
            classes: 3
        }
    );
    assert_eq!(
        err(
            three,
            none,
            tiny(vec![1.0; 4], vec![1.5, 0.0], 2, Classes(3), vec![0, 2])
        ),
        ProblemError::ClassLabel {
            row: 0,
            label: 1.5,
            classes: 3
        }
    );
    assert_eq!(
        err(
            Loss::Multinomial { classes: 1 },
            none,
            tiny(vec![1.0; 2], vec![0.0], 2, Classes(1), vec![0, 1])
        ),
        ProblemError::TooFewClasses(1)
    );
    let huge = usize::MAX / 2 + 1;
    assert_eq!(
        err(
            Loss::Multinomial { classes: huge },
            none,
            tiny(vec![1.0; 2], vec![0.0], 2, Classes(huge), vec![0, 1])
        ),
        ProblemError::Dimension {
            classes: huge,
            n_features: 2
        }
    );
    assert_eq!(
        err(
            Loss::Logistic,
            none,
            UserData {
                data: Dataset {
                    label_kind: Real,
                    ..ok().data
                },
                ..ok()
            }
        ),
        ProblemError::LabelKind {
            loss: Loss::Logistic,
            kind: Real
        }
    );
    assert_eq!(
        err(
            three,
            none,
            tiny(vec![1.0; 2], vec![0.0], 2, Classes(4), vec![0, 1])
        ),
        ProblemError::LabelKind {
            loss: three,
            kind: Classes(4)
        }
    );
    assert_eq!(
        err(Loss::Logistic, Regularizer::L1 { l1: -0.1 }, ok()),
        ProblemError::RegularizerWeight {
            name: "l1",
            value: -0.1
        }
    );
    let problem = Problem::new(Loss::Logistic, none, ok()).unwrap();
    for gamma in [0.0, -1.0, f64::NAN, f64::INFINITY] {
        assert!(matches!(
            problem.local_prox(gamma),
            Err(ProblemError::Gamma(_))
        ));
    }
}

/// `∇((1/n) Σ f_i)(x)`.
fn smooth_grad(problem: &Problem, x: &[f64]) -> Vec<f64> {
    let mut g = vec![0.0; problem.dim()];
    problem.smooth_grad(x, &mut g);
    g
}

#[test]
fn reference_ridge_matches_normal_equations() {
    let ms = [1, 2, 3, 4, 1, 2, 5, 1, 3, 2, 1, 1];
    let p = 5;
    let l2 = 0.1;
    let problem = Problem::new(
        Loss::Squared,
        Regularizer::L2 { l2 },
        user_data(11, Loss::Squared, &ms, p),
    )
    .unwrap();
    // (1/n) Σ_i A_iᵀ(A_i x − b_i)/m_i + l2 x = 0, assembled independently.
    let n = ms.len() as f64;
    let mut lhs = DMatrix::identity(p, p) * l2;
    let mut rhs = DVector::zeros(p);
    for (user, &m) in ms.iter().enumerate() {
        let a = DMatrix::from_row_slice(m, p, problem.data().features(user));
        let b = DVector::from_column_slice(problem.data().labels(user));
        lhs += a.transpose() * &a / (n * m as f64);
        rhs += a.transpose() * b / (n * m as f64);
    }
    let exact = lhs.lu().solve(&rhs).unwrap();
    let sol = solve(&problem, &ReferenceOptions::default()).unwrap();
    let err = (DVector::from_column_slice(&sol.x) - &exact).norm();
    assert!(err <= 1e-9 * exact.norm(), "error {err:e}");
    let f_exact = problem.objective(exact.as_slice());
    assert!(
        (sol.objective - f_exact).abs() <= 1e-12 * f_exact.abs(),
        "{} vs {f_exact}",
        sol.objective
    );
}

#[test]
fn reference_lasso_satisfies_kkt() {
    let p = 64;
    let problem0 = Problem::new(
        Loss::Squared,
        Regularizer::None,
        user_data(12, Loss::Squared, &[1; 1000], p),
    )
    .unwrap();
    let g0 = smooth_grad(&problem0, &vec![0.0; p]);
    let l1 = 0.3 * g0.iter().fold(0.0f64, |a, &b| a.max(b.abs()));
    let problem = Problem::new(
        Loss::Squared,
        Regularizer::L1 { l1 },
        problem0.data().clone(),
    )
    .unwrap();
    let start = std::time::Instant::now();
    let sol = solve(&problem, &ReferenceOptions::default()).unwrap();
    eprintln!(
        "lasso p = 64, n = 1000: {} iterations in {:?}",
        sol.iterations,
        start.elapsed()
    );
    let g = smooth_grad(&problem, &sol.x);
    let tol = 1e-8 * norm(&g0);
    let zeros = sol.x.iter().filter(|&&v| v == 0.0).count();
    assert!(
        zeros > 0 && zeros < p,
        "{zeros} zero coordinates: the test needs both kinds"
    );
    for (k, (&xk, &gk)) in sol.x.iter().zip(&g).enumerate() {
        if xk == 0.0 {
            assert!(gk.abs() <= l1 + tol, "coordinate {k}: |{gk}| > {l1}");
        } else {
            assert!(
                (gk + l1 * xk.signum()).abs() <= tol,
                "coordinate {k}: {gk} vs {}",
                -l1 * xk.signum()
            );
        }
    }
    // No coordinate can move alone to lower the objective.
    for k in 0..p {
        for step in [1e-6, -1e-6] {
            let mut y = sol.x.clone();
            y[k] += step;
            assert!(problem.objective(&y) >= sol.objective - 1e-15 * sol.objective.abs());
        }
    }
}

#[test]
fn reference_logistic_and_multinomial_l2_have_zero_gradient() {
    for loss in [Loss::Logistic, Loss::Multinomial { classes: 3 }] {
        let l2 = 0.05;
        let ms: Vec<usize> = (0..40).map(|i| 1 + i % 3).collect();
        let problem =
            Problem::new(loss, Regularizer::L2 { l2 }, user_data(13, loss, &ms, 6)).unwrap();
        let sol = solve(&problem, &ReferenceOptions::default()).unwrap();
        let g0 = smooth_grad(&problem, &vec![0.0; problem.dim()]);
        let mut g = smooth_grad(&problem, &sol.x);
        g.iter_mut()
            .zip(&sol.x)
            .for_each(|(gk, &xk)| *gk += l2 * xk);
        assert!(
            norm(&g) <= 1e-9 * norm(&g0),
            "{loss:?}: gradient {:e}",
            norm(&g)
        );
        assert!(sol.certificate <= 1e-10 * norm(&g0));
    }
}

#[test]
fn reference_reports_non_convergence_and_bad_options() {
    let problem = Problem::new(
        Loss::Logistic,
        Regularizer::L2 { l2: 0.01 },
        user_data(14, Loss::Logistic, &[2; 30], 5),
    )
    .unwrap();
    let err = solve(
        &problem,
        &ReferenceOptions {
            tol: 1e-10,
            max_iter: 2,
        },
    )
    .unwrap_err();
    assert!(
        matches!(err, ProblemError::NotConverged { iterations: 2, certificate, target, .. } if certificate > target)
    );
    assert!(matches!(
        solve(
            &problem,
            &ReferenceOptions {
                tol: 0.0,
                max_iter: 10
            }
        ),
        Err(ProblemError::ReferenceOptions(_))
    ));
    assert!(matches!(
        solve(
            &problem,
            &ReferenceOptions {
                tol: 1e-8,
                max_iter: 0
            }
        ),
        Err(ProblemError::ReferenceOptions(_))
    ));
}

#[test]
fn reference_returns_zero_when_zero_is_optimal() {
    let problem = Problem::new(
        Loss::Squared,
        Regularizer::L1 { l1: 1.0 },
        tiny(vec![1.0, 0.0], vec![0.0], 2, LabelKind::Real, vec![0, 1]),
    )
    .unwrap();
    let sol = solve(&problem, &ReferenceOptions::default()).unwrap();
    assert_eq!(sol.x, vec![0.0, 0.0]);
    assert_eq!(sol.iterations, 0);
}

/// Throughput of the walk's hot path (run with `--release -- --ignored --nocapture`).
#[test]
#[ignore = "timing; run in release"]
fn throughput() {
    use crate::params::AdmmParams;
    use crate::step::{StepScratch, admm_walk_step};
    use std::time::Instant;
    let (n, p) = (1000, 64);
    let data = user_data(21, Loss::Squared, &vec![1; n], p);
    let problem = Problem::new(Loss::Squared, Regularizer::L1 { l1: 0.01 }, data).unwrap();
    let params = AdmmParams::new(1.0, 0.5, 0.5, Some(1.0)).unwrap();
    let prox = problem.local_prox(params.gamma()).unwrap();
    let mut scratch = StepScratch::new(p, prox.scratch());
    let mut u = vec![vec![0.0; p]; n];
    let mut w = vec![0.0; p];
    let mut rng = NodeRng::seed_from_u64(1);
    let steps = 2_000_000;
    let start = Instant::now();
    for k in 0..steps {
        let user = (k * 7919) % n;
        admm_walk_step(
            &problem,
            &prox,
            &params,
            user,
            &mut u[user],
            &mut w,
            &mut rng,
            &mut scratch,
        )
        .unwrap();
    }
    let rate = steps as f64 / start.elapsed().as_secs_f64();
    eprintln!("squared p = 64, one record: {rate:.3e} walk steps/s");

    let mut ps = prox.scratch();
    let v = normals(&mut rng, p);
    let mut x = vec![0.0; p];
    let start = Instant::now();
    for k in 0..steps {
        prox.prox(k % n, &v, &mut x, &mut ps).unwrap();
    }
    eprintln!(
        "squared p = 64, one record: {:.3e} prox/s",
        steps as f64 / start.elapsed().as_secs_f64()
    );

    for (loss, p, ms, label) in [
        (
            Loss::Logistic,
            64,
            vec![1; 100],
            "logistic p = 64, one record",
        ),
        (
            Loss::Logistic,
            64,
            vec![20; 100],
            "logistic p = 64, 20 records",
        ),
        (
            Loss::Logistic,
            64,
            vec![200; 20],
            "logistic p = 64, 200 records",
        ),
        (
            Loss::Multinomial { classes: 10 },
            784,
            vec![1; 20],
            "multinomial 10 × 784, one record",
        ),
        (
            Loss::Multinomial { classes: 10 },
            784,
            vec![10; 20],
            "multinomial 10 × 784, 10 records",
        ),
    ] {
        let problem = Problem::new(loss, Regularizer::None, user_data(22, loss, &ms, p)).unwrap();
        let prox = problem.local_prox(1.0).unwrap();
        let mut ps = prox.scratch();
        let dim = problem.dim();
        let z: Vec<f64> = normals(&mut rng, dim).iter().map(|v| 0.1 * v).collect();
        let v: Vec<f64> = z.iter().map(|zk| zk + 0.01).collect();
        let calls = if dim > 1000 { 200 } else { 20_000 };
        let start = Instant::now();
        let mut worst: f64 = 0.0;
        for k in 0..calls {
            x.resize(dim, 0.0);
            x.copy_from_slice(&z);
            prox.prox(k % ms.len(), &v, &mut x, &mut ps).unwrap();
            worst = worst.max(ps.last_certificate());
        }
        let rate = calls as f64 / start.elapsed().as_secs_f64();
        eprintln!("{label}: {rate:.3e} prox/s (warm start at z, worst certificate {worst:.1e})");
    }
}
