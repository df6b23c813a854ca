//! The start of the walk (issue 26): the member that starts it makes step 0 only once the run
//! file's `[start] quorum` of members, itself included, have verified (shown with a hello that
//! they run the same run file), or stops after `[start] timeout` naming those missing.
//!
//! Why: hosts never start at the same moment, and a member the walk reaches before it is up is
//! avoided (after the hand-off timeout) and advised down to the others. A run started by the
//! first member up lost the late one for thousands of hops (issue 26: 0 of 2,085 contributions
//! for a member started 5 s late). While it waits, the starter dials every member not connected
//! (not only its eager neighbours), every `REDIAL_EVERY`: a member started later is verified
//! within a redial of its start.
//!
//! Every node, the starter included, also makes no step in a process before the roll call of its
//! neighbours ([`Node::roll_called`], module [`crate::witness`]): each says the last step it saw
//! this node make, so that a node restarted from a lost state stops instead of stepping.

use std::time::Instant;

use libp2p::PeerId;

use super::connections::REDIAL_EVERY;
use super::{Node, NodeError, member_name};

impl Node<'_> {
    /// This node starts the walk: it waits for the quorum from `now` on ([`Node::open_gate`]).
    pub(super) fn wait_for_quorum(&mut self, now: Instant) {
        self.gate = Some(now);
        tracing::info!(
            "this node starts the walk once {} of the {} members (itself included) run our run file; it waits up to {} s (`[start]` in the run file)",
            self.run.start_quorum(),
            self.run.members().len(),
            self.run.start_timeout().as_secs()
        );
    }

    /// Members other than this one that have not verified, by index.
    fn missing(&self) -> Vec<usize> {
        self.run
            .members()
            .iter()
            .filter(|m| m.peer != self.me && !self.custody.is_verified(&m.peer))
            .map(|m| m.index)
            .collect()
    }

    /// Makes step 0 once the quorum has verified; after the start timeout, stops with the members
    /// missing. Meanwhile dials every member not connected, every [`REDIAL_EVERY`].
    pub(super) fn open_gate(&mut self) -> Result<(), NodeError> {
        let Some(since) = self.gate else {
            return Ok(());
        };
        if self.leaving.is_some() {
            // Told to stop before the walk started: it does not start here.
            return Ok(());
        }
        let missing = self.missing();
        let members = self.run.members().len();
        let verified = members - missing.len();
        if verified >= self.run.start_quorum() && self.roll_called() {
            self.gate = None;
            tracing::info!(
                "{verified} of the {members} members run our run file: this node starts the walk"
            );
            let token = self.learner.initial_token();
            let outcome = self.learner.receive(token, None)?;
            // The token handed on after step 0 and its first receiver (none for a one-step walk).
            self.fresh_start = self
                .learner
                .state()
                .outgoing
                .as_ref()
                .map(|c| (c.token.seq, c.to));
            return self.after_step(outcome);
        }
        let now = Instant::now();
        if now.duration_since(since) >= self.run.start_timeout() {
            let named: Vec<String> = missing
                .iter()
                .map(|&i| {
                    let addrs = &self.run.members()[i].addrs;
                    if addrs.is_empty() {
                        format!("{} (no address in the run file)", member_name(Some(i)))
                    } else {
                        format!("{} at {}", member_name(Some(i)), addrs.join(", "))
                    }
                })
                .collect();
            return Err(NodeError::StartTimeout {
                waited: self.run.start_timeout().as_secs(),
                verified,
                members,
                quorum: self.run.start_quorum(),
                missing: named.join("; "),
            });
        }
        if self
            .gate_dialled
            .is_none_or(|t| now.duration_since(t) >= REDIAL_EVERY)
        {
            self.gate_dialled = Some(now);
            let missing: Vec<PeerId> = missing
                .into_iter()
                .map(|i| self.run.members()[i].peer)
                .collect();
            for &peer in &missing {
                if !self.swarm.is_connected(&peer) {
                    self.dial(peer);
                }
            }
            self.greet_again(missing);
        }
        Ok(())
    }

    /// When the gate has something to do: its next roll call, or its timeout.
    pub(super) fn gate_deadline(&self) -> Option<Instant> {
        let since = self.gate?;
        let timeout = since + self.run.start_timeout();
        let dial = self.gate_dialled.map_or(since, |t| t + REDIAL_EVERY);
        Some(timeout.min(dial))
    }

    /// Whether this node may step: every neighbour of the roll call ([`crate::witness`]) has
    /// said what it saw of this node, or was excused, or the hand-off timeout has passed since
    /// the node started (then those not heard from are named and given up on).
    pub(super) fn roll_called(&mut self) -> bool {
        if self.witness.ready() {
            return true;
        }
        if self.started.elapsed() < self.config.timeouts.handoff() {
            tracing::debug!("a step waits for the roll call of the neighbours");
            return false;
        }
        let silent: Vec<String> = self
            .witness
            .give_up()
            .into_iter()
            .map(|i| member_name(Some(i)))
            .collect();
        tracing::warn!(
            "{} neither answered nor failed a dial within the hand-off timeout of this node's start: this node steps without their word on its last step, so a loss of its state seen only by them would go unnoticed",
            silent.join(", ")
        );
        true
    }
}
