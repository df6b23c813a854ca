//! What a node says about itself: the status snapshot and the log of members it waits for.

use std::collections::HashSet;
use std::time::{Duration, Instant};

use libp2p::PeerId;

use super::{Node, STATUS_EVERY};
use crate::status::{ClippedRecent, MemberLink, Status};

/// Window of the hop rate.
const RATE_WINDOW: Duration = Duration::from_secs(5);

/// How often a node still waiting for members says whom it waits for (and at once on a change).
const WAITING_EVERY: Duration = Duration::from_secs(30);

/// How long after its start, and between two changes, a node waits before saying whom it waits for.
const WAITING_GRACE: Duration = Duration::from_secs(1);

impl Node<'_> {
    /// Says whom the node waits for: at once when the set of neighbours (the members a token may
    /// go to) not (yet) verified changes, then every [`WAITING_EVERY`] while it is not empty.
    /// Quiet once the run is over.
    pub(super) fn report_waiting(&mut self) {
        if self.learner.state().final_model.is_some() || self.leaving.is_some() {
            return;
        }
        let now = Instant::now();
        let awaited: Vec<usize> = self
            .neighbours
            .iter()
            .filter(|p| !self.custody.is_verified(p))
            .filter_map(|p| self.member_index(p))
            .collect();
        let others = self.neighbours.len();
        let degree = self.run.topology().degree(self.learner.index());
        let whom = if others + 1 == self.run.members().len() {
            "other members".to_string()
        } else if others == degree {
            "neighbours in the topology".to_string()
        } else {
            format!(
                "neighbours kept connected (of {degree}; the others are dialled when the token goes to them)"
            )
        };
        if awaited.is_empty() {
            if self
                .waiting
                .as_ref()
                .is_none_or(|(last, _)| !last.is_empty())
            {
                self.waiting = Some((awaited, now));
                tracing::info!(
                    "{} connected and run{} our run file",
                    if others == 1 && whom == "other members" {
                        "the other member is".to_string()
                    } else {
                        format!("all {others} {whom} are")
                    },
                    if others == 1 { "s" } else { "" }
                );
            }
            return;
        }
        // Members started together connect within milliseconds: give them a moment, and then
        // report a change at most once a second.
        if self.started.elapsed() < WAITING_GRACE {
            return;
        }
        let due = self.waiting.as_ref().is_none_or(|(last, at)| {
            let gap = now.duration_since(*at);
            (*last != awaited && gap >= WAITING_GRACE) || gap >= WAITING_EVERY
        });
        if !due {
            return;
        }
        self.waiting = Some((awaited.clone(), now));
        let (mut absent, mut other, mut checking) = (Vec::new(), Vec::new(), Vec::new());
        for &i in &awaited {
            let peer = self.run.members()[i].peer;
            if self.custody.mismatched_peers().contains(&peer) {
                other.push(i);
            } else if self.swarm.is_connected(&peer) {
                checking.push(i);
            } else {
                absent.push(i);
            }
        }
        let list = |v: &[usize]| {
            v.iter()
                .map(usize::to_string)
                .collect::<Vec<_>>()
                .join(", ")
        };
        let mut parts = Vec::new();
        if !absent.is_empty() {
            parts.push(format!(
                "not connected (not started yet, or unreachable at the run file's addrs): {}",
                list(&absent)
            ));
        }
        if !other.is_empty() {
            parts.push(format!("running another run file: {}", list(&other)));
        }
        if !checking.is_empty() {
            parts.push(format!("comparing run files: {}", list(&checking)));
        }
        tracing::info!(
            "waiting for {} of {others} {whom}: {}{}",
            awaited.len(),
            parts.join("; "),
            self.who_starts()
        );
    }

    /// Before the walk has reached this node: who starts it and when (`node::start`), so that a
    /// member waiting for a starter that is down can tell why nothing happens.
    fn who_starts(&self) -> String {
        let s = self.learner.state();
        if s.last_seq.is_some() || s.final_model.is_some() || self.gate.is_some() {
            return String::new();
        }
        let starter = dpwalk_core::walk::start_holder(self.run.seed(), self.run.members().len());
        format!(
            "; member {starter} (the run's seed designates it) starts the walk once {} of the {} members run our run file",
            self.run.start_quorum(),
            self.run.members().len()
        )
    }

    /// Updates the status snapshot, at most every [`STATUS_EVERY`] (the privacy figure costs a
    /// conversion over the order grid).
    pub(super) fn refresh_status(&mut self) {
        let now = Instant::now();
        if self
            .last_status
            .is_some_and(|t| now.duration_since(t) < STATUS_EVERY)
        {
            return;
        }
        self.last_status = Some(now);
        let state = self.learner.state();
        let indices = |set: &HashSet<PeerId>| {
            let mut v: Vec<usize> = set.iter().filter_map(|p| self.run.index_of(p)).collect();
            v.sort_unstable();
            v
        };
        let window = self
            .hops
            .front()
            .map_or(0.0, |t| t.elapsed().as_secs_f64())
            .max(1.0);
        self.status.set(Status {
            run_id: self.run.run_id().to_string(),
            run_hash: self.run.hash().to_string(),
            index: self.learner.index(),
            peer_id: self.me.to_base58(),
            listen: self.listen.clone(),
            peers: indices(self.custody.verified_peers()),
            mismatched: indices(self.custody.mismatched_peers()),
            connections: self
                .run
                .members()
                .iter()
                .filter_map(|m| {
                    let via = self.links.via(&m.peer)?;
                    Some(MemberLink {
                        member: m.index,
                        via,
                    })
                })
                .collect(),
            external: self
                .swarm
                .external_addresses()
                .map(ToString::to_string)
                .collect(),
            steps_done: state.contributions,
            skipped: state.skipped,
            last_seq: state.last_seq,
            total_steps: self.run.steps(),
            holding: state.outgoing.is_some(),
            hop_rate: self.hops.len() as f64 / window,
            delta: self.learner.delta(),
            epsilon_local: self.learner.local_epsilon().ok().flatten(),
            epsilon_network: self.learner.network_epsilon(),
            unit: self.run.unit_label().into(),
            budget_epsilon: self.learner.budget_epsilon(),
            finished: state.final_model.is_some(),
            clipped_recent: self
                .learner
                .quality()
                .clipped_recent()
                .map(|(clipped, of)| ClippedRecent { clipped, of }),
            warnings: self
                .learner
                .quality()
                .warnings()
                .iter()
                .map(ToString::to_string)
                .collect(),
        });
    }

    pub(super) fn record_hop(&mut self) {
        let now = Instant::now();
        self.hops.push_back(now);
        while self
            .hops
            .front()
            .is_some_and(|t| now.duration_since(*t) > RATE_WINDOW)
        {
            self.hops.pop_front();
        }
    }
}
