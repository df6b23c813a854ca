//! The realised walk of a DP-SGD run and its ex-post certificate (N2, `specs/network-dp-2.md`
//! §4): [`crate::run::run`] records who held the token at each step and whether the step was a
//! contribution (a spent user's noise-only step is not), and certifies the walk once it ends with
//! [`dpwalk_privacy::network::excursion::certify`]. Only each user's charge against its worst
//! observer is kept ([`GivenWalk::Certified`]); the walk itself is dropped with the run.
//!
//! Only DP-SGD walks are recorded: no network figure is proved for the ADMM walk
//! ([`dpwalk_privacy::walk::ADMM_NETWORK_WITHDRAWN`]). The record takes 16 bytes a step and the
//! certificate `users × steps` scans, so longer or larger runs are not certified and say why
//! ([`MAX_RECORDED_STEPS`], [`MAX_CERTIFIED_WORK`]).

use dpwalk_privacy::network::excursion::{Certified, Visit, certify};

/// Longest walk recorded for its certificate: 16 bytes a step, 160 MB per run at the limit.
pub const MAX_RECORDED_STEPS: u64 = 10_000_000;

/// Largest `users × steps` certified: one scan of the walk per observer (seconds per 10⁹).
pub const MAX_CERTIFIED_WORK: u128 = 10_000_000_000;

/// A run's ex-post certificate.
#[derive(Debug, Clone, PartialEq)]
pub enum GivenWalk {
    /// Not a DP-SGD walk: no network figure is proved, none is computed.
    NotOffered,
    /// A DP-SGD walk whose certificate was not computed, and why.
    NotComputed(String),
    /// Each user's `max_j Ψ_ij` and the observer `j` attaining it, indexed by user.
    Certified(Vec<Certified>),
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
            Ok(path) => GivenWalk::Certified(certify(self.users, &path)),
            Err(why) => why,
        }
    }
}
