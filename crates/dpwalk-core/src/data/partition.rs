//! Partition of a training set among `n` users, each user's rows made contiguous ([`UserData`]).
//!
//! - [`iid`]: a uniform shuffle cut into `n` near-equal contiguous chunks (sizes differ by ≤ 1).
//! - [`label_skew`]: every user holds records of at most `k` classes ("#C = k" in Li et al.,
//!   *Federated Learning on Non-IID Data Silos*, ICDE 2022). Classes are dealt to users so that
//!   every class has a holder: a shuffled list of all classes is dealt round-robin (user
//!   `t mod n` gets the `t`-th), then each user is topped up to `k` distinct classes at random.
//!   Each class's records are shuffled and cut into near-equal chunks, one per holder.
//! - [`dirichlet`]: for each class, user shares `p ~ Dir(α·1_n)` (Hsu, Qi & Brown 2019; Yurochkin
//!   et al. 2019), drawn as normalized `Gamma(α, 1)` variables; the class's shuffled records are
//!   cut at `round(cumsum(p) · count)`. Small `α` concentrates each class on few users, large `α`
//!   approaches iid. If every Gamma draw underflows to 0 (tiny `α`), the class goes to one user
//!   drawn uniformly, the `α → 0` limit.
//!
//! Every user must get at least one record: more users than rows is an error. When the skewed
//! schemes leave a user empty (a class with fewer records than holders, or a Dirichlet draw that
//! gives a user nothing), it is repaired by moving one record to it from the user holding the most
//! records (the record last dealt to that user). Each move shrinks the largest user by one, so the
//! repair changes the distribution as little as possible, is deterministic given the seed, and
//! keeps the label-skew bound (a repaired user holds one record, so one class).
//!
//! The class of a record is its label for `k`-class labels, and `(label + 1) / 2` for `±1` labels;
//! real-valued labels have no classes and only the iid partition applies.

use super::{DataError, Dataset, LabelKind, UserData};
use crate::rng::NodeRng;
use rand::RngExt;
use rand::seq::SliceRandom;
use rand_distr::{Distribution, Gamma};

/// Gathers the rows of each user, in user order, into a [`UserData`].
fn assemble(data: &Dataset, users: &[Vec<usize>]) -> UserData {
    let mut offsets = Vec::with_capacity(users.len() + 1);
    offsets.push(0);
    let mut order = Vec::with_capacity(data.rows());
    for rows in users {
        order.extend_from_slice(rows);
        offsets.push(order.len());
    }
    UserData {
        data: data.select(&order),
        offsets,
    }
}

fn check_users(data: &Dataset, n_users: usize) -> Result<(), DataError> {
    if n_users == 0 || n_users > data.rows() {
        return Err(DataError::Param(format!(
            "cannot give each of {n_users} users at least one of {} records",
            data.rows()
        )));
    }
    Ok(())
}

/// The number of classes and the class of each record.
pub fn classes(data: &Dataset) -> Result<(usize, Vec<usize>), DataError> {
    let k = match data.label_kind {
        LabelKind::Real => {
            return Err(DataError::Param(
                "label-skew and dirichlet partitions need class labels, not real ones".into(),
            ));
        }
        LabelKind::Binary => 2,
        LabelKind::Classes(k) => k,
    };
    let class_of = |y: f64| match data.label_kind {
        LabelKind::Binary if y == 1.0 => Some(1),
        LabelKind::Binary if y == -1.0 => Some(0),
        LabelKind::Classes(_) if y >= 0.0 && y.fract() == 0.0 && (y as usize) < k => {
            Some(y as usize)
        }
        _ => None,
    };
    let ids = data
        .labels
        .iter()
        .enumerate()
        .map(|(r, &y)| {
            class_of(y).ok_or_else(|| {
                DataError::Param(format!("record {r} has label {y}, not one of {k} classes"))
            })
        })
        .collect::<Result<_, _>>()?;
    Ok((k, ids))
}

/// The records of each class, each list shuffled.
fn shuffled_by_class(k: usize, class: &[usize], rng: &mut NodeRng) -> Vec<Vec<usize>> {
    let mut by_class = vec![Vec::new(); k];
    for (r, &c) in class.iter().enumerate() {
        by_class[c].push(r);
    }
    by_class.iter_mut().for_each(|rows| rows.shuffle(rng));
    by_class
}

/// Shuffle, then near-equal contiguous chunks.
pub fn iid(data: &Dataset, n_users: usize, rng: &mut NodeRng) -> Result<UserData, DataError> {
    check_users(data, n_users)?;
    let n = data.rows();
    let mut order: Vec<usize> = (0..n).collect();
    order.shuffle(rng);
    let users: Vec<Vec<usize>> = (0..n_users)
        .map(|i| order[i * n / n_users..(i + 1) * n / n_users].to_vec())
        .collect();
    Ok(assemble(data, &users))
}

/// Every user holds records of at most `k` classes (see the module docs).
pub fn label_skew(
    data: &Dataset,
    n_users: usize,
    k: usize,
    rng: &mut NodeRng,
) -> Result<UserData, DataError> {
    check_users(data, n_users)?;
    let (n_classes, class) = classes(data)?;
    let k = k.min(n_classes);
    if k == 0 || n_users * k < n_classes {
        return Err(DataError::Param(format!(
            "{n_users} users holding {k} classes each cannot cover {n_classes} classes"
        )));
    }
    // Deal classes: round-robin over a shuffled list covers every class, then top up to k.
    let mut held: Vec<Vec<usize>> = vec![Vec::with_capacity(k); n_users];
    let mut all: Vec<usize> = (0..n_classes).collect();
    all.shuffle(rng);
    for (t, &c) in all.iter().enumerate() {
        held[t % n_users].push(c);
    }
    for classes in &mut held {
        let mut others: Vec<usize> = (0..n_classes).filter(|c| !classes.contains(c)).collect();
        let missing = k - classes.len();
        let (extra, _) = others.partial_shuffle(rng, missing);
        classes.extend_from_slice(extra);
    }
    let mut holders: Vec<Vec<usize>> = vec![Vec::new(); n_classes];
    for (u, classes) in held.iter().enumerate() {
        for &c in classes {
            holders[c].push(u);
        }
    }
    let mut users: Vec<Vec<usize>> = vec![Vec::new(); n_users];
    for (c, rows) in shuffled_by_class(n_classes, &class, rng)
        .into_iter()
        .enumerate()
    {
        let h = holders[c].len();
        for (i, &u) in holders[c].iter().enumerate() {
            users[u].extend_from_slice(&rows[i * rows.len() / h..(i + 1) * rows.len() / h]);
        }
    }
    fill_empty_users(&mut users);
    Ok(assemble(data, &users))
}

/// Gives every empty user one record, taken from the user holding the most (its last record).
///
/// The caller has checked `n_users ≤ rows`, so while a user is empty the largest one holds at
/// least two records and keeps one. A repaired user holds one record, hence one class.
fn fill_empty_users(users: &mut [Vec<usize>]) {
    for empty in 0..users.len() {
        if users[empty].is_empty() {
            let donor = (0..users.len())
                .max_by_key(|&u| users[u].len())
                .unwrap_or(empty);
            if let Some(r) = users[donor].pop() {
                users[empty].push(r);
            }
        }
    }
}

/// Per-class `Dirichlet(α)` shares among users (see the module docs).
pub fn dirichlet(
    data: &Dataset,
    n_users: usize,
    alpha: f64,
    rng: &mut NodeRng,
) -> Result<UserData, DataError> {
    check_users(data, n_users)?;
    let (n_classes, class) = classes(data)?;
    let invalid = || {
        DataError::Param(format!(
            "dirichlet alpha must be positive and finite, got {alpha}"
        ))
    };
    if !(alpha > 0.0 && alpha.is_finite()) {
        return Err(invalid());
    }
    let gamma = Gamma::new(alpha, 1.0).map_err(|_| invalid())?;
    let mut users: Vec<Vec<usize>> = vec![Vec::new(); n_users];
    let mut shares = vec![0.0; n_users];
    for rows in shuffled_by_class(n_classes, &class, rng) {
        shares.iter_mut().for_each(|s| *s = gamma.sample(rng));
        let sum: f64 = shares.iter().sum();
        if !(sum > 0.0 && sum.is_finite()) {
            shares.iter_mut().for_each(|s| *s = 0.0);
            shares[rng.random_range(0..n_users)] = 1.0;
        }
        let sum: f64 = shares.iter().sum();
        let n = rows.len() as f64;
        let (mut cum, mut start) = (0.0, 0);
        for (u, s) in shares.iter().enumerate() {
            cum += s / sum;
            let end = if u + 1 == n_users {
                rows.len()
            } else {
                ((cum * n).round() as usize).clamp(start, rows.len())
            };
            users[u].extend_from_slice(&rows[start..end]);
            start = end;
        }
    }
    fill_empty_users(&mut users);
    Ok(assemble(data, &users))
}

#[cfg(test)]
#[allow(clippy::unwrap_used)] // a failed unwrap is a failed test
mod tests {
    use super::*;
    use crate::rng::node_rng;

    /// `n` records with `k` classes assigned round-robin; feature 0 is the record's id.
    fn classified(n: usize, k: usize) -> Dataset {
        Dataset {
            features: (0..n).map(|r| r as f64).collect(),
            labels: (0..n).map(|r| (r % k) as f64).collect(),
            n_features: 1,
            label_kind: LabelKind::Classes(k),
        }
    }

    /// Every record exactly once, every user non-empty, rows kept with their labels.
    fn assert_valid(u: &UserData, data: &Dataset, n_users: usize) {
        assert_eq!(u.n_users(), n_users);
        assert_eq!(u.offsets[0], 0);
        assert_eq!(*u.offsets.last().unwrap(), data.rows());
        assert!((0..n_users).all(|i| u.records(i) >= 1), "{:?}", u.offsets);
        let mut ids: Vec<usize> = u.data.features.iter().map(|&v| v as usize).collect();
        assert!((0..u.data.rows()).all(|r| u.data.labels[r] == data.labels[ids[r]]));
        ids.sort_unstable();
        assert_eq!(ids, (0..data.rows()).collect::<Vec<_>>());
    }

    fn distinct_labels(u: &UserData, i: usize) -> usize {
        let mut l: Vec<u64> = u.labels(i).iter().map(|y| y.to_bits()).collect();
        l.sort_unstable();
        l.dedup();
        l.len()
    }

    /// Mean over users of the share of their largest class: 1/K-ish when iid, 1 when one class each.
    fn mean_top_share(u: &UserData, k: usize) -> f64 {
        (0..u.n_users())
            .map(|i| {
                let mut counts = vec![0usize; k];
                u.labels(i).iter().for_each(|&y| counts[y as usize] += 1);
                *counts.iter().max().unwrap() as f64 / u.records(i) as f64
            })
            .sum::<f64>()
            / u.n_users() as f64
    }

    #[test]
    fn iid_chunks_are_near_equal() {
        let d = classified(103, 3);
        let u = iid(&d, 10, &mut node_rng(1, 0)).unwrap();
        assert_valid(&u, &d, 10);
        assert!((0..10).all(|i| u.records(i) == 10 || u.records(i) == 11));
        assert_eq!(u, iid(&d, 10, &mut node_rng(1, 0)).unwrap());
        assert_ne!(u, iid(&d, 10, &mut node_rng(2, 0)).unwrap());
        let one_each = iid(&d, 103, &mut node_rng(1, 0)).unwrap();
        assert_valid(&one_each, &d, 103);
    }

    #[test]
    fn too_many_users_or_real_labels_are_errors() {
        let d = classified(5, 2);
        let mut rng = node_rng(1, 0);
        assert!(matches!(iid(&d, 6, &mut rng), Err(DataError::Param(_))));
        assert!(matches!(iid(&d, 0, &mut rng), Err(DataError::Param(_))));
        assert!(matches!(
            dirichlet(&d, 6, 1.0, &mut rng),
            Err(DataError::Param(_))
        ));
        assert!(matches!(
            dirichlet(&d, 2, 0.0, &mut rng),
            Err(DataError::Param(_))
        ));
        assert!(matches!(
            label_skew(&d, 6, 1, &mut rng),
            Err(DataError::Param(_))
        ));
        let real = Dataset {
            label_kind: LabelKind::Real,
            ..d.clone()
        };
        assert!(matches!(
            dirichlet(&real, 2, 1.0, &mut rng),
            Err(DataError::Param(_))
        ));
        assert!(iid(&real, 2, &mut rng).is_ok());
        // 10 classes cannot be covered by 3 users holding 2 classes each.
        assert!(matches!(
            label_skew(&classified(100, 10), 3, 2, &mut rng),
            Err(DataError::Param(_))
        ));
    }

    #[test]
    fn label_skew_users_hold_at_most_k_classes() {
        for (n, users, k, seed) in [
            (1000, 20, 2, 1),
            (1000, 50, 1, 2),
            (60, 30, 3, 3),
            (200, 7, 2, 4),
        ] {
            let d = classified(n, 10);
            let u = label_skew(&d, users, k, &mut node_rng(seed, 0)).unwrap();
            assert_valid(&u, &d, users);
            assert!((0..users).all(|i| distinct_labels(&u, i) <= k));
        }
    }

    #[test]
    fn label_skew_repairs_users_left_empty() {
        // 12 records of 3 classes among 12 users holding one class each: classes of 4 records
        // are shared by 4 holders, and every user must end with exactly one record.
        let d = classified(12, 3);
        for seed in 0..20 {
            let u = label_skew(&d, 12, 1, &mut node_rng(seed, 0)).unwrap();
            assert_valid(&u, &d, 12);
            assert!((0..12).all(|i| u.records(i) == 1));
        }
    }

    #[test]
    fn binary_labels_have_two_classes() {
        let d = Dataset {
            labels: (0..40)
                .map(|r| if r % 2 == 0 { 1.0 } else { -1.0 })
                .collect(),
            label_kind: LabelKind::Binary,
            ..classified(40, 2)
        };
        let u = label_skew(&d, 4, 1, &mut node_rng(1, 0)).unwrap();
        assert_valid(&u, &d, 4);
        assert!((0..4).all(|i| distinct_labels(&u, i) == 1));
    }

    #[test]
    fn dirichlet_small_alpha_is_more_skewed_than_large_alpha() {
        let d = classified(2000, 10);
        let skewed = dirichlet(&d, 20, 0.05, &mut node_rng(1, 0)).unwrap();
        let mild = dirichlet(&d, 20, 100.0, &mut node_rng(1, 0)).unwrap();
        assert_valid(&skewed, &d, 20);
        assert_valid(&mild, &d, 20);
        let (s, m) = (mean_top_share(&skewed, 10), mean_top_share(&mild, 10));
        // Iid users of 100 records have a top class share near 0.15; α = 0.05 gives most users
        // one dominant class.
        assert!(s > 0.6 && m < 0.25, "skewed {s}, mild {m}");
    }

    #[test]
    fn dirichlet_with_tiny_alpha_still_gives_everyone_a_record() {
        // α = 1e-6 underflows every Gamma draw: each class goes to one user, the rest are repaired.
        let d = classified(50, 2);
        let u = dirichlet(&d, 10, 1e-6, &mut node_rng(9, 0)).unwrap();
        assert_valid(&u, &d, 10);
        let u = dirichlet(&d, 50, 1e-6, &mut node_rng(9, 0)).unwrap();
        assert!((0..50).all(|i| u.records(i) == 1));
    }
}
