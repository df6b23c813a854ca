//! What a node has seen of each member's steps, and the roll call a node makes before its first
//! step in a process: how a node tells that its own state is older than what the run has seen of
//! it (issue 27, item 2).
//!
//! **Why.** A node restarted from a wiped state directory, or from an older copy of it, would step
//! again from a position of its noise stream it has already used (repeating noise it has
//! published, which the privacy analysis assumes fresh) and with a ledger missing contributions it
//! made (spending its budget again). Its own state cannot tell. The members it handed tokens to
//! can: a member that took a token of seq `s + 1` from it, or whose token of seq `s` it
//! acknowledged, saw it make step `s` ([`Witness::saw`]). Each hello a node sends to member `i`
//! says the last step it saw `i` make ([`crate::codec::Hello::your_last`]); a node whose state
//! ends before that step stops (`NodeError::StateLost`) instead of stepping.
//!
//! **What it reveals.** A member hears only about its own steps, from members that took part in
//! them: nothing it did not know before its state was lost, and nothing about the path.
//!
//! **When it is complete.** The witnesses of a node's steps are its topology neighbours (tokens go
//! only to neighbours). A node makes no step in a process until each neighbour it dials at start
//! (all of them up to 16, `node::connections`) has greeted it, refused our run file, or failed a
//! dial ([`Witness::ready`]); a token offered meanwhile is answered "not verified yet" and
//! retried by its sender. The node does not wait longer than the hand-off timeout for the roll
//! call: a neighbour that neither answers nor fails by then is given up on, and said so. Loss is
//! therefore detected whenever the member that took the node's last token is one of those
//! neighbours and is up: always on graphs of degree up to 16. It is not detected when that member
//! is down or restarted too (this memory is not persisted), or on denser graphs when it is not
//! among the 16 dialled at start.

use std::collections::BTreeSet;

/// What this node saw of each member's steps, and whom it waits to hear from before its first
/// step in this process.
#[derive(Debug, Clone)]
pub struct Witness {
    /// Per member: the last step this node saw it make.
    seen: Vec<Option<u64>>,
    /// Members to hear from before this process's first step, by index.
    roll: BTreeSet<usize>,
}

impl Witness {
    /// A witness of `members` members that waits to hear from `roll` (indices below `members`)
    /// before the first step.
    pub fn new(members: usize, roll: impl IntoIterator<Item = usize>) -> Self {
        Self {
            seen: vec![None; members],
            roll: roll.into_iter().filter(|&i| i < members).collect(),
        }
    }

    /// `member` made step `seq`: it handed on a token of seq `seq + 1`, or acknowledged ours of
    /// seq `seq`.
    pub fn saw(&mut self, member: usize, seq: u64) {
        if let Some(last) = self.seen.get_mut(member) {
            *last = Some(last.map_or(seq, |l| l.max(seq)));
        }
    }

    /// The last step this node saw `member` make: what its hellos to `member` say.
    pub fn told(&self, member: usize) -> Option<u64> {
        self.seen.get(member).copied().flatten()
    }

    /// `member` greeted this node, saying it saw this node make step `told`; `held` is the last
    /// step in this node's state. `Err(told)` when the state ends before that step: it was lost.
    pub fn greeted(
        &mut self,
        member: usize,
        told: Option<u64>,
        held: Option<u64>,
    ) -> Result<(), u64> {
        self.roll.remove(&member);
        match told {
            Some(seen) if held.is_none_or(|h| h < seen) => Err(seen),
            _ => Ok(()),
        }
    }

    /// The roll call does not wait for `member` (a dial to it failed, or it runs another run
    /// file).
    pub fn excuse(&mut self, member: usize) {
        self.roll.remove(&member);
    }

    /// Whether the roll call is over: every member of the roll greeted or was excused.
    pub fn ready(&self) -> bool {
        self.roll.is_empty()
    }

    /// Ends the roll call without the members not heard from, which it returns.
    pub fn give_up(&mut self) -> Vec<usize> {
        std::mem::take(&mut self.roll).into_iter().collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_state_ending_before_a_step_seen_is_lost() {
        let mut w = Witness::new(3, [1, 2]);
        assert_eq!(w.greeted(1, Some(7), Some(7)), Ok(()));
        assert_eq!(w.greeted(1, Some(7), Some(9)), Ok(()));
        assert_eq!(w.greeted(1, None, None), Ok(()));
        assert_eq!(w.greeted(2, Some(7), Some(6)), Err(7));
        assert_eq!(w.greeted(2, Some(0), None), Err(0));
    }

    #[test]
    fn the_last_step_seen_is_the_highest() {
        let mut w = Witness::new(2, []);
        assert_eq!(w.told(1), None);
        w.saw(1, 12);
        w.saw(1, 4);
        assert_eq!((w.told(0), w.told(1)), (None, Some(12)));
        // Out of range is ignored, not a panic.
        w.saw(5, 1);
        assert_eq!(w.told(5), None);
    }

    #[test]
    fn the_roll_call_ends_when_each_is_heard_or_excused() {
        let mut w = Witness::new(4, [1, 2, 3, 9]);
        assert!(!w.ready());
        let _ = w.greeted(1, None, None);
        w.excuse(2);
        assert!(!w.ready());
        // A lost state still answers the roll.
        assert_eq!(w.greeted(3, Some(1), None), Err(1));
        assert!(w.ready());
        let mut v = Witness::new(4, [0, 2]);
        let _ = v.greeted(2, None, Some(3));
        assert_eq!(v.give_up(), vec![0]);
        assert!(v.ready());
    }
}
