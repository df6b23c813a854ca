//! The shared checks: each refusal names its key; the run file's and the scenario's readings of
//! `[problem]` differ only where the classes come from.

use super::*;
use crate::problem::{Loss, Regularizer};
use crate::topology::{TopologyKind, TopologySpec};

fn problem(loss: LossName, classes: Option<usize>) -> ProblemSpec {
    ProblemSpec {
        loss,
        classes,
        l1: 0.0,
        l2: 0.0,
    }
}

#[test]
fn keys_are_dotted_with_indices_and_located() {
    let e = SpecError::new(&["members", "2", "peer-id"], "bad");
    assert_eq!(e.key(), "members[2].peer-id");
    assert_eq!(e.to_string(), "`members[2].peer-id`: bad");
    let text = "a = 1\n[[members]]\nx = 1\n[[members]]\nx = 2\n[[members]]\npeer-id = \"p\"\n";
    assert_eq!(e.line_in(text), Some(7));
    let e = SpecError::new(&["gamma"], "bad").under(&["algorithm"]);
    assert_eq!(e.key(), "algorithm.gamma");
    // An absent key is located at its table.
    assert_eq!(e.line_in("x = 1\n[algorithm]\nlambda = 1\n"), Some(2));
    assert_eq!(e.line_in("x = 1\n"), None);
}

#[test]
fn the_step_names_the_key_out_of_range() {
    for (g, l, c, key) in [
        (0.0, 0.5, Some(1.0), "algorithm.gamma"),
        (1.0, 1.5, Some(1.0), "algorithm.lambda"),
        (1.0, 0.5, Some(0.0), "algorithm.clip"),
    ] {
        assert_eq!(check_step("algorithm", g, l, c).unwrap_err().key(), key);
    }
    let step = check_step("algorithm", 1.0, 0.5, Some(1.0)).unwrap();
    assert_eq!(step.with_sigma(2.0).unwrap().sigma(), 2.0);
}

#[test]
fn noise_is_sigma_or_a_checked_budget() {
    let sigma = ["algorithm", "sigma"];
    let budget = BudgetSpec {
        epsilon: 1.0,
        delta: DEFAULT_DELTA,
        view: BudgetViewName::Local,
    };
    assert_eq!(
        Noise::check(Some(2.0), &sigma, None, "budget"),
        Ok(Noise::Sigma(2.0))
    );
    assert_eq!(
        Noise::check(None, &sigma, Some(&budget), "budget"),
        Ok(Noise::Budget {
            epsilon: 1.0,
            delta: DEFAULT_DELTA
        })
    );
    let key = |r: Result<Noise, SpecError>| r.unwrap_err().key();
    assert_eq!(
        key(Noise::check(Some(-1.0), &sigma, None, "budget")),
        "algorithm.sigma"
    );
    assert_eq!(
        key(Noise::check(Some(1.0), &sigma, Some(&budget), "budget")),
        "algorithm.sigma"
    );
    assert_eq!(key(Noise::check(None, &sigma, None, "budget")), "algorithm");
    let bad = BudgetSpec {
        epsilon: 0.0,
        ..budget
    };
    assert_eq!(key(bad.check("budget")), "budget.epsilon");
    let bad = BudgetSpec {
        delta: 1.0,
        ..budget
    };
    assert_eq!(key(bad.check("budget")), "budget.delta");
    // δ omitted is the default, and so is the local view, which is not written.
    let read: BudgetSpec = toml::from_str("epsilon = 1.0").unwrap();
    assert_eq!(read, budget);
    assert!(!toml::to_string(&budget).unwrap().contains("view"));
    let network: BudgetSpec = toml::from_str("epsilon = 1.0\nview = \"network\"").unwrap();
    assert_eq!(network.view, BudgetViewName::Network);
    assert!(
        toml::to_string(&network)
            .unwrap()
            .contains("view = \"network\"")
    );
    assert!(toml::from_str::<BudgetSpec>("epsilon = 1.0\nview = \"central\"").is_err());
}

#[test]
fn classes_come_from_the_file_or_the_data() {
    let multi = problem(LossName::Multinomial, Some(4));
    assert_eq!(
        multi.loss_for_dimension(64),
        Ok(Loss::Multinomial { classes: 4 })
    );
    assert_eq!(
        multi.loss_for_dimension(65).unwrap_err().key(),
        "problem.classes"
    );
    assert_eq!(
        multi.loss_for_data(Some(4)),
        Ok(Loss::Multinomial { classes: 4 })
    );
    assert_eq!(
        multi.loss_for_data(Some(3)).unwrap_err().key(),
        "problem.classes"
    );
    let unwritten = problem(LossName::Multinomial, None);
    assert_eq!(
        unwritten.loss_for_dimension(64).unwrap_err().key(),
        "problem.loss"
    );
    assert_eq!(
        unwritten.loss_for_data(Some(10)),
        Ok(Loss::Multinomial { classes: 10 })
    );
    assert_eq!(
        unwritten.loss_for_data(None).unwrap_err().key(),
        "problem.loss"
    );
    let stray = problem(LossName::Squared, Some(2));
    assert_eq!(
        stray.loss_for_dimension(64).unwrap_err().key(),
        "problem.classes"
    );
    assert_eq!(
        stray.loss_for_data(Some(2)).unwrap_err().key(),
        "problem.classes"
    );
}

#[test]
fn a_problem_table_round_trips_through_its_loss_and_regularizer() {
    let mut p = problem(LossName::Multinomial, Some(3));
    p.l1 = 0.5;
    p.l2 = 0.25;
    let again = ProblemSpec::of(p.loss_for_dimension(6).unwrap(), p.regularizer().unwrap());
    assert_eq!(again, p);
    p.l2 = -1.0;
    assert_eq!(p.regularizer().unwrap_err().key(), "problem.l2");
    p.l2 = 0.0;
    assert_eq!(p.regularizer(), Ok(Regularizer::L1 { l1: 0.5 }));
}

#[test]
fn a_run_topology_is_self_contained_and_sized() {
    use topology::Source;
    let at = ["topology"];
    let file = TopologySpec::new(TopologyKind::File);
    let key = |r: Result<crate::topology::Topology, SpecError>| r.unwrap_err().key();
    assert_eq!(
        key(build_topology(
            &file,
            3,
            1,
            Source::SelfContained,
            true,
            &at
        )),
        "topology.kind"
    );
    let mut sized = TopologySpec::new(TopologyKind::Complete);
    sized.nodes = Some(4);
    assert_eq!(
        key(build_topology(
            &sized,
            3,
            1,
            Source::SelfContained,
            true,
            &at
        )),
        "topology.nodes"
    );
    let complete = TopologySpec::new(TopologyKind::Complete);
    let g = build_topology(&complete, 3, 1, Source::SelfContained, true, &at).unwrap();
    assert_eq!(g.n(), 3);
}

fn unit(unit: UnitName, m: Option<u64>, r: Option<f64>) -> UnitSpec {
    UnitSpec {
        unit,
        min_records: m,
        feature_norm: r,
    }
}

#[test]
fn the_record_unit_derives_the_gradient_bound_from_the_loss() {
    let rec = |loss| unit(UnitName::Record, Some(10), Some(2.0)).check("privacy", loss);
    let r = rec(Loss::Logistic).unwrap().unwrap();
    assert_eq!(
        (r.min_records, r.feature_norm, r.grad_bound),
        (10, 2.0, 2.0)
    );
    let r = rec(Loss::Multinomial { classes: 3 }).unwrap().unwrap();
    assert_eq!(r.grad_bound, std::f64::consts::SQRT_2 * 2.0);
    let e = rec(Loss::Squared).unwrap_err();
    assert_eq!(e.key(), "privacy.unit");
    assert!(e.message().contains("Squared loss has none"), "{e}");
    // User level: nothing to check, and no record-level key.
    let user = unit(UnitName::User, None, None);
    assert_eq!(user.check("privacy", Loss::Squared), Ok(None));
    let key = |s: UnitSpec| s.check("privacy", Loss::Logistic).unwrap_err().key();
    assert_eq!(
        key(unit(UnitName::User, Some(3), None)),
        "privacy.min-records"
    );
    assert_eq!(
        key(unit(UnitName::User, None, Some(1.0))),
        "privacy.feature-norm"
    );
    assert_eq!(
        key(unit(UnitName::Record, None, Some(1.0))),
        "privacy.min-records"
    );
    assert_eq!(
        key(unit(UnitName::Record, Some(0), Some(1.0))),
        "privacy.min-records"
    );
    for r in [
        None,
        Some(0.0),
        Some(-1.0),
        Some(f64::NAN),
        Some(f64::INFINITY),
    ] {
        assert_eq!(
            key(unit(UnitName::Record, Some(1), r)),
            "privacy.feature-norm"
        );
    }
}

#[test]
fn a_members_rows_are_checked_against_the_record_unit() {
    use super::unit::OutsideUnit;
    let r = unit(UnitName::Record, Some(2), Some(5.0))
        .check("privacy", Loss::Logistic)
        .unwrap()
        .unwrap();
    // Rows of norm 5 (3-4-5) and 1: nothing to scale.
    assert_eq!(r.fit_rows(&mut [3.0, 4.0, 1.0, 0.0], 2), Ok(0));
    assert_eq!(
        r.fit_rows(&mut [3.0, 4.0], 2),
        Err(OutsideUnit::TooFew { records: 1, min: 2 })
    );
    let long = r.fit_rows(&mut [1.0, 0.0, 3.0, 4.5], 2);
    assert!(matches!(
        long,
        Err(OutsideUnit::TooLong { row: 1, norm, bound: 5.0, .. }) if (norm - 3f64.hypot(4.5)).abs() < 1e-12
    ));
    // Said counted from 1, with by how much.
    let text = long.unwrap_err().to_string();
    assert!(
        text.contains("record 2 of this node") && text.contains("4.083e-1 (8.17e-2 of it) above"),
        "{text}"
    );
    assert!(matches!(
        r.fit_rows(&mut [1.0, 0.0, f64::NAN, 0.0], 2),
        Err(OutsideUnit::TooLong { row: 1, .. })
    ));
    // A row above the bound by what six decimals can add (a unit row written as 3.0000006,
    // 4.0000006 reads back 8.4e-7 above 5; at most 5e-7·√2 = 7.1e-7 is decimal rounding of two
    // features, plus 5e-12 of slack): scaled to the bound, exactly within it. A row further
    // above is refused.
    let mut rows = [3.000_000_5, 4.000_000_5, 1.0, 0.0];
    assert_eq!(r.fit_rows(&mut rows, 2), Ok(1));
    assert!(super::unit::row_norm(&rows[..2]) <= 5.0);
    assert_eq!(&rows[2..], &[1.0, 0.0]);
    assert!(
        r.fit_rows(&mut [3.000_000_6, 4.000_000_6, 1.0, 0.0], 2)
            .is_err()
    );
    let text = OutsideUnit::TooFew { records: 1, min: 2 }.to_string();
    assert!(text.contains("min-records = 2"), "{text}");
    // Scaling ends within the bound, even one so small that the squares underflow.
    for bound in [1.0, 0.3, 1e-160, 1e-300] {
        let mut row = [1.0, 1.0, 1e-3];
        assert!(super::unit::scale_to_norm(&mut row, bound));
        assert!(super::unit::row_norm(&row) <= bound, "{bound}: {row:?}");
    }
}
