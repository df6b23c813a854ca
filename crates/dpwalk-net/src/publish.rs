//! Publication of the final model, and the rule that makes it one model per run.
//!
//! The member that makes step `K` seals the model ([`crate::seal`]) and sends it to every other
//! member, retrying those that have not acknowledged it for [`PUBLISH_FOR`]; any member that holds
//! the final model also gives it to every member that connects later, so a member that was away
//! at the end catches up. A receiver writes a model only when it comes from a verified member of
//! its run (same run file) and its seal verifies over its own run hash.
//!
//! # One final model
//! Two final models can exist only if step `K` was made twice, by two members. The node avoids
//! this where it can decide alone: the holder of step `K − 1` never hands the last step to a
//! second member once the first may have it (it waits for that member instead, see
//! `crate::node`), and never resumes the walk from its backup of that step. A fork earlier in the
//! walk (a holder that was presumed gone and came back, while the walk went on from its
//! predecessor's backup) can still reach step `K` on two branches; ruling it out needs agreement
//! among members, which the protocol does not have. For that case every member applies the same
//! rule, [`prevails`]: of two sealed models for the run, the one made by the member of lower index
//! wins. A member that holds the losing model replaces it (and rewrites `final_model.json`) when
//! it learns of the winner, and passes the winner on; a member that holds the winner sends it to
//! whoever sends it the loser. Members that are up when both models circulate therefore end with
//! the same model; a member that exits holding the loser before it hears of the winner keeps the
//! loser (its log says which model it wrote, and `final_model.json` names the maker).

use std::collections::{HashMap, HashSet};
use std::hash::Hash;
use std::time::{Duration, Instant};

use libp2p::PeerId;

use crate::codec::FinalModel;

/// How long the publisher retries members that have not acknowledged the final model.
pub const PUBLISH_FOR: Duration = Duration::from_secs(60);
/// Pause between two sends of the model to a member that has not acknowledged it.
const RESEND_EVERY: Duration = Duration::from_secs(1);

/// Whether a sealed final model made by member `challenger` prevails over one made by member
/// `holder` (both of the same run, both seals verified): the lower index wins, so that every
/// member, whatever the order in which the two models reach it, keeps the same one.
pub fn prevails(challenger: usize, holder: usize) -> bool {
    challenger < holder
}

/// The final model on its way to the members that lack it; `Id` names a send in flight (the
/// node's request ids).
#[derive(Debug)]
pub struct Publish<Id> {
    model: FinalModel,
    pending: HashSet<PeerId>,
    inflight: HashMap<Id, PeerId>,
    since: Instant,
    next_try: Instant,
}

impl<Id: Eq + Hash> Publish<Id> {
    /// Starts publishing `model` to `to`.
    pub fn new(model: FinalModel, to: impl IntoIterator<Item = PeerId>, now: Instant) -> Self {
        Publish {
            model,
            pending: to.into_iter().collect(),
            inflight: HashMap::new(),
            since: now,
            next_try: now,
        }
    }

    /// The model published.
    pub fn model(&self) -> &FinalModel {
        &self.model
    }

    /// Adds `peer` to the members to give the model to (one that connected after the end), at
    /// once, and for [`PUBLISH_FOR`] from now.
    pub fn add(&mut self, peer: PeerId, now: Instant) {
        if self.pending.insert(peer) {
            self.next_try = now;
            self.since = now;
        }
    }

    /// The members to send the model to now: those that have not acknowledged it and have no
    /// send in flight, at most every `RESEND_EVERY`, for [`PUBLISH_FOR`].
    pub fn due(&mut self, now: Instant) -> Vec<PeerId> {
        if self.pending.is_empty()
            || now < self.next_try
            || now.duration_since(self.since) > PUBLISH_FOR
        {
            return Vec::new();
        }
        self.next_try = now + RESEND_EVERY;
        let busy: HashSet<&PeerId> = self.inflight.values().collect();
        self.pending
            .iter()
            .filter(|p| !busy.contains(p))
            .copied()
            .collect()
    }

    /// A send of the model to `peer` left as request `id`.
    pub fn sent(&mut self, id: Id, peer: PeerId) {
        self.inflight.insert(id, peer);
    }

    /// The answer (or failure) of request `id`, if it is one of ours: its member, which is
    /// done with when `acknowledged`.
    pub fn answered(&mut self, id: &Id, acknowledged: bool) -> Option<PeerId> {
        let peer = self.inflight.remove(id)?;
        if acknowledged {
            self.pending.remove(&peer);
        }
        Some(peer)
    }

    /// When [`Publish::due`] or [`Publish::settled`] may say something new: the next send, or the
    /// end of the publication; `None` once nothing is pending or the publisher gave up.
    pub fn next_deadline(&self, now: Instant) -> Option<Instant> {
        let end = self.since + PUBLISH_FOR;
        (!self.pending.is_empty() && now <= end).then(|| self.next_try.min(end))
    }

    /// Gives up on `peer` (it refuses the model for good: another run, a bad seal).
    pub fn drop_member(&mut self, peer: &PeerId) {
        self.pending.remove(peer);
    }

    /// Whether every member acknowledged, or the publisher gave up; members for which `down`
    /// holds are not waited for (they get the model from whichever member is up when they
    /// connect again).
    pub fn settled(&self, now: Instant, down: impl Fn(&PeerId) -> bool) -> bool {
        self.pending.iter().all(down) || now.duration_since(self.since) > PUBLISH_FOR
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::codec::Seal;

    fn model() -> FinalModel {
        FinalModel {
            run_id: "r".into(),
            seq: 3,
            z: vec![1.0],
            seal: Seal {
                key: Vec::new(),
                signature: Vec::new(),
            },
        }
    }

    #[test]
    fn the_lower_index_prevails_whatever_the_order() {
        assert!(prevails(0, 3));
        assert!(!prevails(3, 0));
        assert!(!prevails(2, 2));
    }

    #[test]
    fn members_are_retried_until_they_acknowledge_then_given_up_on() {
        let (a, b) = (PeerId::random(), PeerId::random());
        let t0 = Instant::now();
        let mut p: Publish<u64> = Publish::new(model(), [a, b], t0);
        assert_eq!(p.next_deadline(t0), Some(t0));
        let mut due = p.due(t0);
        due.sort();
        let mut both = vec![a, b];
        both.sort();
        assert_eq!(due, both);
        // Nothing again before the resend pause.
        assert_eq!(p.next_deadline(t0), Some(t0 + RESEND_EVERY));
        assert!(p.due(t0 + Duration::from_millis(10)).is_empty());
        // `a` acknowledges; `b`'s send fails: only `b` is due next time.
        assert!(!p.settled(t0, |_| false));
        assert!(p.settled(t0, |_| true));
        p.sent(1, a);
        p.sent(2, b);
        assert_eq!(p.answered(&1, true), Some(a));
        assert_eq!(p.answered(&2, false), Some(b));
        assert_eq!(p.answered(&2, true), None);
        assert_eq!(p.due(t0 + RESEND_EVERY), vec![b]);
        assert!(!p.settled(t0 + RESEND_EVERY, |_| false));
        assert!(p.settled(t0 + RESEND_EVERY, |peer| *peer == b));
        assert!(p.settled(t0 + PUBLISH_FOR + RESEND_EVERY, |_| false));
        assert!(p.due(t0 + PUBLISH_FOR + RESEND_EVERY).is_empty());
        assert_eq!(p.next_deadline(t0 + PUBLISH_FOR + RESEND_EVERY), None);
        // Every member acknowledged: nothing to wait for.
        let mut done: Publish<u64> = Publish::new(model(), [a], t0);
        done.due(t0);
        done.sent(1, a);
        done.answered(&1, true);
        assert_eq!(done.next_deadline(t0), None);
    }
}
