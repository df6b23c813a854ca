//! What a node passes on with the token about members down, so that a member down costs the run
//! one hand-off timeout rather than one per node that draws it (issue 10, item 4).
//!
//! Custody ([`crate::custody`]) learns that a member is down from its own evidence: a hand-off
//! that timed out, a refusal, a failed dial. Without sharing, every node pays its own hand-off
//! timeout the first time it draws that member. So each token carries the sender's *advice*: the
//! members it avoids, each with how much longer ([`crate::codec::Avoided`]), and the receiver
//! avoids them too until then.
//!
//! Advice ages, it is never refreshed by hearsay alone: an observation is advised for
//! [`AVOID_FOR`] from the instant it was made (a new observation starts it again), and a member
//! heard of is advised on for what remains of the time heard. So one observation keeps a member
//! out of the walk's draws for at most [`AVOID_FOR`] (plus the transit of the tokens), even if
//! the member came back at once: a wrong or stale observation biases the path for a bounded time
//! and never shuts a member out of the run. Times travel as durations, not instants: members need
//! no common clock.
//!
//! A member that verifies (a hello: it is up and runs our run file) is never again avoided or
//! advised on the strength of an observation made before it verified, this node's own included
//! (issue 26: a member started 5 s after the others was kept out of the walk by the failed dials
//! made before it started, re-advised in every token). Its observations and what was heard of it
//! are forgotten, and advice that arrives later is dated: `remaining` of [`AVOID_FOR`] left means
//! observed `AVOID_FOR − remaining` ago (or longer: the token's transit is not counted), and
//! advice observed before the member's last verification here is ignored.
//!
//! Privacy: every figure the daemon prints is a local-view bound, which does not depend on the
//! path the token takes; advice only changes which neighbour is drawn while a member is avoided
//! (uniform over the others, see [`crate::learner::Learner::reroute`]). The advice reveals which
//! members were unreachable, nothing about anyone's data.

use std::collections::HashMap;
use std::time::{Duration, Instant};

use libp2p::PeerId;

use crate::codec::{AVOID_FOR, Avoided, MAX_AVOIDED};

/// Members down as this node knows them from its own evidence and from the tokens it received.
#[derive(Debug, Default)]
pub struct Hearsay {
    /// The last instant this node itself saw each member fail to take a token.
    observed: HashMap<PeerId, Instant>,
    /// Until when each member is avoided because a token's sender said so.
    heard: HashMap<PeerId, Instant>,
    /// When each member last verified here: what was observed of it before is stale.
    verified: HashMap<PeerId, Instant>,
}

impl Hearsay {
    /// This node saw `peer` fail to take a token (or refuse it, or fail a dial) at `now`.
    pub fn observe(&mut self, peer: PeerId, now: Instant) {
        self.observed.insert(peer, now);
    }

    /// A token's sender advised avoiding `peer` for `remaining` more: avoided until `now +
    /// remaining`, or longer if already so, unless the observation it rests on was made before
    /// `peer` last verified here (see the module docs). Returns whether `peer` was not avoided on
    /// hearsay before and now is (custody logs that once).
    pub fn hear(&mut self, peer: PeerId, remaining: Duration, now: Instant) -> bool {
        let remaining = remaining.min(AVOID_FOR);
        if let Some(&verified) = self.verified.get(&peer) {
            // Observed `AVOID_FOR − remaining` before now at the latest; before this process's
            // clock could say, it is older than any verification.
            let observed = now.checked_sub(AVOID_FOR - remaining);
            if observed.is_none_or(|at| at <= verified) {
                return false;
            }
        }
        let news = !self.avoids(&peer, now);
        let until = now + remaining;
        let entry = self.heard.entry(peer).or_insert(until);
        *entry = (*entry).max(until);
        news && now < until
    }

    /// `peer` verified at `now` (it is up and runs our run file): what this node saw of it and
    /// heard of it so far is forgotten, and advice about it observed before `now` is ignored.
    pub fn verified(&mut self, peer: PeerId, now: Instant) {
        self.heard.remove(&peer);
        self.observed.remove(&peer);
        self.verified.insert(peer, now);
    }

    /// Whether a token's sender's advice still has `peer` avoided at `now`.
    pub fn avoids(&self, peer: &PeerId, now: Instant) -> bool {
        self.heard.get(peer).is_some_and(|&until| now < until)
    }

    /// Members avoided on hearsay at `now`.
    pub fn avoided(&self, now: Instant) -> impl Iterator<Item = &PeerId> {
        self.heard
            .iter()
            .filter(move |&(_, &until)| now < until)
            .map(|(p, _)| p)
    }

    /// How much longer each member is to be avoided, as far as this node would advise at `now`:
    /// its own observations aged from when they were made, and what it heard, as heard.
    fn remaining(&self, now: Instant) -> HashMap<PeerId, Duration> {
        let own = self.observed.iter().map(|(p, &at)| {
            (
                *p,
                AVOID_FOR.saturating_sub(now.saturating_duration_since(at)),
            )
        });
        let heard = self
            .heard
            .iter()
            .map(|(p, &until)| (*p, until.saturating_duration_since(now)));
        let mut remaining: HashMap<PeerId, Duration> = HashMap::new();
        for (p, left) in own.chain(heard).filter(|(_, left)| !left.is_zero()) {
            let entry = remaining.entry(p).or_default();
            *entry = (*entry).max(left);
        }
        remaining
    }

    /// The advice to send with a token at `now`: members by their index in `members` (the run's
    /// members in index order), at most [`MAX_AVOIDED`] of them, the longest-avoided first;
    /// never `receiver` (it knows whether it is up).
    pub fn advice(&self, members: &[PeerId], receiver: &PeerId, now: Instant) -> Vec<Avoided> {
        if self.observed.is_empty() && self.heard.is_empty() {
            // Every hop of a run with no member down: no pass over the members.
            return Vec::new();
        }
        let remaining = self.remaining(now);
        let mut advice: Vec<Avoided> = members
            .iter()
            .enumerate()
            .filter(|(_, p)| *p != receiver)
            .filter_map(|(i, p)| {
                let left = remaining.get(p)?;
                Some(Avoided {
                    member: u32::try_from(i).ok()?,
                    // At most AVOID_FOR (10 s): always fits.
                    for_ms: u32::try_from(left.as_millis()).unwrap_or(u32::MAX),
                })
            })
            .collect();
        advice.sort_by(|a, b| b.for_ms.cmp(&a.for_ms).then(a.member.cmp(&b.member)));
        advice.truncate(MAX_AVOIDED);
        advice
    }

    /// Forgets what no longer matters at `now` (an observation or hearsay that has run out), so
    /// that the maps stay as small as the set of members recently down.
    pub fn prune(&mut self, now: Instant) {
        self.observed
            .retain(|_, at| now.saturating_duration_since(*at) < AVOID_FOR);
        self.heard.retain(|_, until| now < *until);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn members(n: usize) -> Vec<PeerId> {
        (0..n).map(|_| PeerId::random()).collect()
    }

    fn secs(s: u64) -> Duration {
        Duration::from_secs(s)
    }

    #[test]
    fn an_observation_is_advised_for_avoid_for_from_when_it_was_made() {
        let (p, t0) = (members(4), Instant::now());
        let mut h = Hearsay::default();
        h.observe(p[2], t0);
        let advice = h.advice(&p, &p[1], t0 + secs(3));
        assert_eq!(
            advice,
            vec![Avoided {
                member: 2,
                for_ms: 7_000
            }]
        );
        assert!(h.advice(&p, &p[1], t0 + AVOID_FOR).is_empty());
        // A new observation starts it again.
        h.observe(p[2], t0 + secs(9));
        assert_eq!(h.advice(&p, &p[1], t0 + secs(10))[0].for_ms, 9_000);
        // The node's own observation does not make it avoid on hearsay: custody keeps its own
        // evidence.
        assert!(!h.avoids(&p[2], t0 + secs(10)));
    }

    #[test]
    fn hearsay_is_avoided_and_passed_on_for_what_remains_never_refreshed() {
        let (p, t0) = (members(5), Instant::now());
        let mut h = Hearsay::default();
        h.hear(p[3], secs(4), t0);
        assert!(h.avoids(&p[3], t0 + secs(3)));
        assert!(!h.avoids(&p[3], t0 + secs(4)));
        assert_eq!(h.advice(&p, &p[1], t0 + secs(1))[0].for_ms, 3_000);
        assert!(h.advice(&p, &p[1], t0 + secs(4)).is_empty());
        // Heard again for less: the longer stands; for more: extended, but never past AVOID_FOR.
        h.hear(p[3], secs(1), t0 + secs(1));
        assert!(h.avoids(&p[3], t0 + secs(3)));
        h.hear(p[3], secs(3600), t0 + secs(2));
        assert!(h.avoids(&p[3], t0 + secs(11)));
        assert!(!h.avoids(&p[3], t0 + secs(2) + AVOID_FOR));
        assert_eq!(h.avoided(t0 + secs(2)).collect::<Vec<_>>(), vec![&p[3]]);
    }

    #[test]
    fn a_member_that_verifies_is_neither_avoided_nor_advised_on_what_came_before() {
        let (p, t0) = (members(3), Instant::now() + AVOID_FOR);
        let mut h = Hearsay::default();
        assert!(h.hear(p[1], secs(5), t0));
        assert!(!h.hear(p[1], secs(5), t0), "said once per change");
        // Its own observation too: a dial that failed before the member started.
        h.observe(p[2], t0);
        h.verified(p[1], t0 + secs(1));
        h.verified(p[2], t0 + secs(1));
        assert!(!h.avoids(&p[1], t0 + secs(1)));
        assert!(h.advice(&p, &p[0], t0 + secs(1)).is_empty());
        // Advice that arrives later but rests on an observation from before the verification
        // (made 10 − 8 = 2 s before t0 + 2 s) is stale.
        assert!(!h.hear(p[1], secs(8), t0 + secs(2)));
        assert!(!h.avoids(&p[1], t0 + secs(2)));
        // One made after it (9.5 s of 10 left, 0.5 s ago) stands.
        assert!(h.hear(p[1], Duration::from_millis(9_500), t0 + secs(2)));
        assert!(h.avoids(&p[1], t0 + secs(2)));
        // So does a new observation of this node's own.
        h.observe(p[2], t0 + secs(3));
        assert_eq!(h.advice(&p, &p[0], t0 + secs(3))[0].member, 2);
    }

    #[test]
    fn advice_never_names_the_receiver_and_keeps_the_longest_within_the_cap() {
        let (p, t0) = (members(MAX_AVOIDED + 10), Instant::now());
        let mut h = Hearsay::default();
        for (i, peer) in p.iter().enumerate() {
            h.hear(*peer, Duration::from_millis(100 * i as u64 + 1), t0);
        }
        let receiver = p[p.len() - 1];
        let advice = h.advice(&p, &receiver, t0);
        assert_eq!(advice.len(), MAX_AVOIDED);
        assert!(advice.iter().all(|a| a.member as usize != p.len() - 1));
        assert_eq!(advice[0].member as usize, p.len() - 2);
        assert!(advice.windows(2).all(|w| w[0].for_ms >= w[1].for_ms));
    }

    #[test]
    fn prune_forgets_only_what_ran_out() {
        let (p, t0) = (members(3), Instant::now());
        let mut h = Hearsay::default();
        h.observe(p[1], t0);
        h.hear(p[2], secs(2), t0);
        h.prune(t0 + secs(3));
        assert!(!h.avoids(&p[2], t0 + secs(1)));
        assert_eq!(h.advice(&p, &p[0], t0 + secs(3))[0].member, 1);
        h.prune(t0 + AVOID_FOR);
        assert!(h.advice(&p, &p[0], t0).is_empty());
    }
}
