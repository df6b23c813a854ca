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
//! schemes leave a user empty, it is repaired by moving one record to it from the user holding
//! the most records (the record last dealt to it; for label skew, the largest among the users that
//! hold records of a class the empty user holds, and a record of that class, so that nobody
//! exceeds `k` classes).
//! Each move shrinks the largest user by one, so the repair changes the distribution as little as
//! possible and is deterministic given the seed.
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
    UserData { data: data.select(&order), offsets }
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
        LabelKind::Classes(_) if y >= 0.0 && y.fract() == 0.0 && (y as usize) < k => Some(y as usize),
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
    let users: Vec<Vec<usize>> =
        (0..n_users).map(|i| order[i * n / n_users..(i + 1) * n / n_users].to_vec()).collect();
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
    // users[u][c]: u's records of class c, so that a repair can move a record of the right class.
    let mut users: Vec<Vec<Vec<usize>>> = vec![vec![Vec::new(); n_classes]; n_users];
    for (c, rows) in shuffled_by_class(n_classes, &class, rng).into_iter().enumerate() {
        let h = holders[c].len();
        for (i, &u) in holders[c].iter().enumerate() {
            users[u][c] = rows[i * rows.len() / h..(i + 1) * rows.len() / h].to_vec();
        }
    }
    let total = |u: &Vec<Vec<usize>>| u.iter().map(Vec::len).sum::<usize>();
    for empty in 0..n_users {
        if total(&users[empty]) > 0 {
            continue;
        }
        // Among the holders of the empty user's classes that would keep a record, the largest.
        let donor = held[empty]
            .iter()
            .flat_map(|&c| holders[c].iter().map(move |&u| (u, c)))
            .filter(|&(u, c)| u != empty && !users[u][c].is_empty() && total(&users[u]) >= 2)
            .max_by_key(|&(u, c)| (total(&users[u]), users[u][c].len()));
        let Some((u, c)) = donor else {
            return Err(DataError::Param(format!(
                "user {empty} cannot get a record of its classes {:?}: too few records",
                held[empty]
            )));
        };
        if let Some(r) = users[u][c].pop() {
            users[empty][c].push(r);
        }
    }
    let flat: Vec<Vec<usize>> = users.into_iter().map(|u| u.concat()).collect();
    Ok(assemble(data, &flat))
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
    let invalid = || DataError::Param(format!("dirichlet alpha must be positive and finite, got {alpha}"));
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
            let end = if u + 1 == n_users { rows.len() } else { ((cum * n).round() as usize).clamp(start, rows.len()) };
            users[u].extend_from_slice(&rows[start..end]);
            start = end;
        }
    }
    for empty in 0..n_users {
        if users[empty].is_empty() {
            // n_users ≤ rows, so while someone is empty the largest user has ≥ 2 records.
            let donor = (0..n_users).max_by_key(|&u| users[u].len()).unwrap_or(empty);
            if let Some(r) = users[donor].pop() {
                users[empty].push(r);
            }
        }
    }
    Ok(assemble(data, &users))
}
