//! The realised walk of a DP-SGD run and its ex-post certificate (N2, `specs/network-dp-2.md`
//! §4): [`crate::run::run`] records who held the token at each step and whether the step was a
//! contribution (a spent user's noise-only step is not), and certifies the walk once it ends with
//! [`dpwalk_privacy::network::excursion::certify`]. Only each user's charge against its worst
//! observer is kept, with every pair's on walks of at most [`MAX_PAIR_USERS`] users (the N2
//! heatmap) ([`Certificate`]); the walk itself is dropped with the run.
//!
//! Only DP-SGD walks are recorded: no network figure is proved for the ADMM walk
//! ([`dpwalk_privacy::walk::ADMM_NETWORK_WITHDRAWN`]). The record takes 16 bytes a step and the
//! certificate `users × steps` scans, so longer or larger runs are not certified and say why
//! ([`MAX_RECORDED_STEPS`], [`MAX_CERTIFIED_WORK`]).

use dpwalk_privacy::network::excursion::{Certified, Visit, certify, psi_pairs};
pub use dpwalk_privacy::network::mixture::MAX_PAIR_USERS;

/// Longest walk recorded for its certificate: 16 bytes a step, 160 MB per run at the limit.
pub use dpwalk_privacy::report::MAX_CERTIFIED_STEPS as MAX_RECORDED_STEPS;

pub use dpwalk_privacy::report::MAX_CERTIFIED_WORK;

/// A run's ex-post certificate.
#[derive(Debug, Clone, PartialEq)]
pub enum GivenWalk {
    /// Not a DP-SGD walk: no network figure is proved, none is computed.
    NotOffered,
    /// A DP-SGD walk whose certificate was not computed, and why.
    NotComputed(String),
    /// The walk's certificate.
    Certified(Certificate),
}

/// The ex-post charges of a realised walk.
#[derive(Debug, Clone, PartialEq)]
pub struct Certificate {
    /// Each user's `max_j Ψ_ij` and the observer `j` attaining it, indexed by user.
    pub users: Vec<Certified>,
    /// Every pair's `Ψ_ij` (row = user `i`, column = observer `j`, 0 on the diagonal) on walks of
    /// at most [`MAX_PAIR_USERS`] users, `None` above.
    pub pairs: Option<Vec<f64>>,
}

impl Certificate {
    /// The certificate of the walk `path` over `users` users (the simulator's and the swarm's).
    pub fn of(users: usize, path: &[Visit]) -> Self {
        Self {
            users: certify(users, path),
            pairs: (users <= MAX_PAIR_USERS).then(|| psi_pairs(users, path)),
        }
    }
}

/// Records a walk's visits while it runs, when its certificate is wanted and affordable.
pub(crate) struct Recorder {
    users: usize,
    path: Result<Vec<Visit>, GivenWalk>,
}

impl Recorder {
    /// A recorder for a walk of `steps` steps over `users` users; `wanted` when the walk is a
    /// DP-SGD walk.
    pub(crate) fn new(wanted: bool, users: usize, steps: u64) -> Self {
        let work = users as u128 * u128::from(steps);
        let path = if !wanted {
            Err(GivenWalk::NotOffered)
        } else if steps > MAX_RECORDED_STEPS {
            Err(GivenWalk::NotComputed(format!(
                "network given the walk not computed: the walk is recorded up to {MAX_RECORDED_STEPS} steps, this one has {steps}"
            )))
        } else if work > MAX_CERTIFIED_WORK {
            Err(GivenWalk::NotComputed(format!(
                "network given the walk not computed: cost (users x steps = {work}, above {MAX_CERTIFIED_WORK})"
            )))
        } else {
            Ok(Vec::with_capacity(usize::try_from(steps).unwrap_or(0)))
        };
        Self { users, path }
    }

    /// Step `holder`'s visit; `contribution` when it stepped on its data.
    pub(crate) fn push(&mut self, holder: usize, contribution: bool) {
        if let Ok(path) = self.path.as_mut() {
            path.push(Visit {
                holder,
                contribution,
            });
        }
    }

    /// The certificate of the recorded walk.
    pub(crate) fn certify(self) -> GivenWalk {
        match self.path {
            Ok(path) => GivenWalk::Certified(Certificate::of(self.users, &path)),
            Err(why) => why,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_affordable_dp_sgd_walks_are_certified() {
        assert_eq!(
            Recorder::new(false, 10, 100).certify(),
            GivenWalk::NotOffered
        );
        for (users, steps) in [(1, MAX_RECORDED_STEPS + 1), (100_000, 100_000)] {
            let mut r = Recorder::new(true, users, steps);
            r.push(0, true);
            assert!(
                matches!(r.certify(), GivenWalk::NotComputed(ref why) if why.contains("not computed")),
                "{users} x {steps}"
            );
        }
        let mut r = Recorder::new(true, 3, 4);
        for (holder, contribution) in [(0, true), (1, true), (0, false), (2, true)] {
            r.push(holder, contribution);
        }
        let GivenWalk::Certified(c) = r.certify() else {
            panic!("a small walk is certified");
        };
        // User 0's one contribution is seen by 1 at the next hop; 2's by every other user in
        // the final model; 1's by 0 at the next hop.
        let psi: Vec<f64> = c.users.iter().map(|c| c.psi).collect();
        assert_eq!(psi, [1.0, 1.0, 1.0]);
        assert_eq!(c.users[0].observer, Some(1));
        assert_eq!(c.users[1].observer, Some(0));
        // Every pair: 0 seen by 1 at the next hop (1) and by 2 three hops later (1/3); 1 seen by
        // 0 at the next hop (a noise-only visit observes too: 1) and by 2 two hops later (1/2);
        // 2 seen by both in the final model (1).
        let pairs = c.pairs.expect("3 users: every pair");
        assert_eq!(pairs, [0.0, 1.0, 1.0 / 3.0, 1.0, 0.0, 0.5, 1.0, 1.0, 0.0]);
    }
}
