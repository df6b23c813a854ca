//! The node's answers to its peers' messages (hello, token, final model, release) and its
//! handling of their answers to its own: each feeds custody ([`crate::custody`]) or the
//! publication.

use std::time::Instant;

use libp2p::PeerId;
use libp2p::request_response::{self, OutboundRequestId, ResponseChannel};
use libp2p::swarm::ConnectionId;

use super::{Node, NodeError, member_name};
use crate::codec::{self, Hello, Message, Rejection};
use crate::learner::Outcome;

impl Node<'_> {
    pub(super) fn on_token_event(
        &mut self,
        event: request_response::Event<Message, Message>,
    ) -> Result<(), NodeError> {
        match event {
            request_response::Event::Message {
                peer,
                connection_id,
                message,
            } => match message {
                request_response::Message::Request {
                    request, channel, ..
                } => self.on_request(peer, connection_id, request, channel)?,
                request_response::Message::Response {
                    request_id,
                    response,
                } => self.on_response(peer, connection_id, request_id, response)?,
            },
            request_response::Event::OutboundFailure {
                peer,
                request_id,
                error,
                ..
            } => {
                if self.parting_answered(&request_id, false) {
                    return Ok(());
                }
                if let Some(p) = self.publish.as_mut() {
                    p.answered(&request_id, false);
                }
                self.resend_note(request_id, &error);
                if self.custody.failed(request_id, Instant::now()) {
                    tracing::debug!(peer = %peer, error = %error, "token hand-over failed; retrying");
                }
            }
            request_response::Event::InboundFailure { peer, error, .. } => {
                tracing::warn!(peer = %peer, error = %error, "inbound message rejected");
            }
            request_response::Event::ResponseSent { .. } => {}
        }
        Ok(())
    }

    pub(super) fn respond(&mut self, channel: ResponseChannel<Message>, message: Message) {
        if self
            .swarm
            .behaviour_mut()
            .token
            .send_response(channel, message)
            .is_err()
        {
            tracing::debug!("the requester went away before our answer");
        }
    }

    pub(super) fn refuse(
        &mut self,
        peer: PeerId,
        channel: ResponseChannel<Message>,
        why: Rejection,
    ) {
        tracing::warn!(peer = %peer, reason = %why, "refused a message");
        self.respond(channel, Message::Refused(why));
    }

    pub(super) fn on_request(
        &mut self,
        peer: PeerId,
        connection: ConnectionId,
        request: Message,
        channel: ResponseChannel<Message>,
    ) -> Result<(), NodeError> {
        let run_id = self.run.run_id().to_string();
        self.idle.touch(peer, Instant::now());
        match request {
            Message::Hello(hello) => self.on_hello(peer, connection, hello, channel)?,
            Message::Token { token, avoid } => {
                let ctx = self.run.context(self.learner.state().last_seq);
                let valid = codec::validate(&peer, &token, &ctx)
                    .and_then(|()| codec::validate_advice(&avoid, self.run.members().len()));
                if let Err(why) = valid {
                    if matches!(why, Rejection::Replay { .. })
                        && Some(token.seq) == self.learner.state().last_seq
                    {
                        // This node already took this very step: acknowledge again.
                        self.respond(
                            channel,
                            Message::Ack {
                                run_id,
                                seq: token.seq,
                            },
                        );
                    } else {
                        self.refuse(peer, channel, why);
                    }
                    return Ok(());
                }
                if !self.is_greeted(&peer, connection) {
                    // Not verified on this connection yet: the hello usually follows at once.
                    self.park(peer, connection, Message::Token { token, avoid }, channel);
                    return Ok(());
                }
                if let (Some(i), Some(made)) = (self.member_index(&peer), token.seq.checked_sub(1))
                {
                    self.witness.saw(i, made);
                }
                if self.gate.is_some() {
                    // This node starts the walk and has not made step 0, yet the walk reached
                    // it: it started before, from this node, whose state was lost (issue 27).
                    // Stepping would repeat its noise from the start of its stream.
                    self.respond(channel, Message::Refused(Rejection::Leaving));
                    return Err(self.state_lost(
                        &peer,
                        format!("sent it the token at seq {} before this node, the walk's starter, had made step 0", token.seq),
                    ));
                }
                if self.leaving.is_some() || self.learner.state().final_model.is_some() {
                    self.respond(channel, Message::Refused(Rejection::Leaving));
                    // A token after the end is a branch of the walk that has not heard of it.
                    self.publish_to(peer);
                    return Ok(());
                }
                if !self.roll_called() {
                    // This node has not yet heard what its neighbours saw of it
                    // (`crate::witness`): its sender retries shortly.
                    self.respond(channel, Message::Refused(Rejection::NotVerified));
                    return Ok(());
                }
                // Before the step: its draw of the next hop avoids members down, those the
                // sender advised included.
                let now = Instant::now();
                self.custody.heard(&peer, &avoid, now);
                let seq = token.seq;
                // One line per hop at debug level: `scripts/hop-latency` measures hops from them.
                tracing::debug!(seq, "took the token");
                let down = self.custody.avoid(now);
                let outcome = self.learner.receive_avoiding(token, Some(peer), &down)?;
                if matches!(outcome, Outcome::Final(_)) {
                    crate::fault::after_last_step();
                }
                self.record_hop();
                self.respond(channel, Message::Ack { run_id, seq });
                self.after_step(outcome)?;
            }
            Message::FinalModel(model) => {
                let ctx = self.run.context(self.learner.state().last_seq);
                let maker = match crate::seal::validate_final(&peer, &model, &ctx) {
                    Ok(maker) => maker,
                    Err(why) => {
                        self.refuse(peer, channel, why);
                        return Ok(());
                    }
                };
                if !self.is_greeted(&peer, connection) {
                    // Only a member that showed, on this connection, that it runs our run file
                    // may hand us the result: it waits for the hello.
                    self.park(peer, connection, Message::FinalModel(model), channel);
                    return Ok(());
                }
                let seq = model.seq;
                self.respond(channel, Message::Ack { run_id, seq });
                self.on_final(peer, maker, model)?;
            }
            Message::Released { run_id: rid, seq } => {
                if rid == run_id && self.member_index(&peer).is_some() {
                    self.learner.released(seq);
                    self.custody.released(seq);
                }
                self.respond(channel, Message::Ack { run_id, seq });
            }
            Message::Parting { run_id: rid } => {
                if rid == run_id && self.member_index(&peer).is_some() {
                    self.custody.parting(peer, Instant::now());
                }
                self.respond(channel, Message::Ack { run_id, seq: 0 });
            }
            Message::Holding { run_id: rid, seq } => {
                if rid == run_id && self.member_index(&peer).is_some() {
                    tracing::debug!(seq, "the token's receiver still hands it on");
                    self.custody.holding(&peer, seq, Instant::now());
                }
                self.respond(channel, Message::Ack { run_id, seq });
            }
            other => {
                tracing::warn!(peer = %peer, message = ?std::mem::discriminant(&other), "a response sent as a request; ignored");
            }
        }
        Ok(())
    }

    pub(super) fn on_hello(
        &mut self,
        peer: PeerId,
        connection: ConnectionId,
        hello: Hello,
        channel: ResponseChannel<Message>,
    ) -> Result<(), NodeError> {
        if self.member_index(&peer).is_none() {
            self.refuse(
                peer,
                channel,
                Rejection::NotMember {
                    peer: peer.to_base58(),
                },
            );
            return Ok(());
        }
        match self.compare(&peer, &hello) {
            Ok(()) => {
                self.accept(peer, connection, &hello)?;
                let mine = Message::Welcome(self.hello(&peer));
                self.respond(channel, mine);
            }
            Err(differences) => self.respond(
                channel,
                Message::Refused(Rejection::RunMismatch { differences }),
            ),
        }
        Ok(())
    }

    /// `peer` showed on `connection`, by a hello or a welcome, that it runs our run file: its
    /// claim of our last step is checked, the connection may carry its tokens and final model
    /// from now on, and the requests that came on it before are handled.
    fn accept(
        &mut self,
        peer: PeerId,
        connection: ConnectionId,
        hello: &Hello,
    ) -> Result<(), NodeError> {
        self.greeted(&peer, hello)?;
        self.greeted_on.insert(connection);
        self.on_verified(peer);
        self.unpark(connection)
    }

    /// `peer`, verified, says in its hello the last step it saw this node make: a state that
    /// ends before it was lost ([`crate::witness`]). A step past the walk's end is a claim no
    /// member running our code makes: it is logged and not heeded.
    fn greeted(&mut self, peer: &PeerId, hello: &Hello) -> Result<(), NodeError> {
        let Some(i) = self.member_index(peer) else {
            return Ok(());
        };
        let told = match hello.your_last {
            Some(seq) if seq >= self.run.steps() => {
                tracing::warn!(
                    "{} ({peer}) says it saw this node make step {seq}, past the walk's {} steps: not heeded",
                    member_name(Some(i)),
                    self.run.steps()
                );
                None
            }
            told => told,
        };
        match self.witness.greeted(i, told, self.learner.state().last_seq) {
            Ok(()) => Ok(()),
            Err(seen) => Err(self.state_lost(peer, format!("has seen this node make step {seen}"))),
        }
    }

    /// Checks a peer's run against ours; on a mismatch, logs (once per connection) each key that
    /// differs with both values, and returns them as the peer should read them (its values
    /// "here", ours "in member <our index>'s").
    pub(super) fn compare(&mut self, peer: &PeerId, hello: &Hello) -> Result<(), Vec<String>> {
        if hello.run_hash == self.run.hash().0 {
            self.custody.matched(peer);
            return Ok(());
        }
        let differences = self.run.diff_text(&hello.run);
        let theirs = member_name(self.member_index(peer));
        if let Some(i) = self.member_index(peer) {
            // It takes no token from us and gives none: no witness of our steps.
            self.witness.excuse(i);
        }
        if self.custody.mismatched(*peer) {
            let described: Vec<String> = differences
                .iter()
                .map(|d| d.describe(&format!("{theirs}'s")))
                .collect();
            tracing::error!(
                "{theirs} ({peer}) runs another run file, so no token will go to or come from it: {}. Every member must use the same run file",
                described.join("; ")
            );
        }
        let me = member_name(Some(self.learner.index()));
        Err(differences
            .iter()
            .map(|d| d.swapped().describe(&format!("{me}'s")))
            .collect())
    }

    pub(super) fn on_response(
        &mut self,
        peer: PeerId,
        connection: ConnectionId,
        request_id: OutboundRequestId,
        response: Message,
    ) -> Result<(), NodeError> {
        if self.parting_answered(&request_id, true) {
            return Ok(());
        }
        self.notes.remove(&request_id);
        let is_token = self.custody.answered(request_id);
        let acknowledged = matches!(response, Message::Ack { .. });
        if let Some(p) = self.publish.as_mut()
            && p.answered(&request_id, acknowledged).is_some()
        {
            return self.on_publish_answer(peer, response);
        }
        match response {
            Message::Welcome(hello) if self.compare(&peer, &hello).is_ok() => {
                self.accept(peer, connection, &hello)?;
            }
            Message::Ack { seq, .. } if is_token => {
                self.fresh_start = None;
                if let Some(i) = self.member_index(&peer) {
                    self.witness.saw(i, seq);
                }
                self.custody.acknowledged(seq, Instant::now());
                if let Some((predecessor, given)) = self.learner.acknowledged(seq) {
                    let released = Message::Released {
                        run_id: self.run.run_id().to_string(),
                        seq: given,
                    };
                    self.send(&predecessor, released);
                }
            }
            Message::Refused(why) => self.on_refused(peer, is_token, why)?,
            _ => {}
        }
        Ok(())
    }

    pub(super) fn on_refused(
        &mut self,
        peer: PeerId,
        is_token: bool,
        why: Rejection,
    ) -> Result<(), NodeError> {
        match why {
            Rejection::RunMismatch { differences } => {
                // Our own comparison of its hello usually said it already, with the same keys.
                if self.custody.mismatched(peer) {
                    tracing::error!(
                        "{} ({peer}) refused our run file: {}. Every member must use the same run file",
                        member_name(self.member_index(&peer)),
                        differences.join("; ")
                    );
                }
            }
            Rejection::NotVerified if is_token => {
                self.custody.not_verified(Instant::now());
                // Say hello again, on every connection, in case the first one was lost or went
                // on another connection.
                self.greet(&peer);
            }
            Rejection::Replay { seq, last_seen } if is_token => {
                if self.fresh_start == Some((seq, peer)) {
                    // Our first token since a start from an empty state, refused by its first
                    // receiver as already seen: the walk went on before this node's step 0, so
                    // the state it ran with is gone, and stepping on would repeat its noise
                    // (issue 27).
                    return Err(self.state_lost(
                        &peer,
                        format!("had taken the walk to seq {last_seen} before this node, its starter, made step 0 again"),
                    ));
                }
                tracing::info!(peer = %peer, seq, "the walk has passed our token: dropping it");
                self.learner.superseded(seq);
                self.custody.superseded(seq, Instant::now());
            }
            other if is_token => {
                let now = Instant::now();
                match self.custody.refused(peer, now) {
                    Some(reroute) => {
                        tracing::warn!(peer = %peer, reason = %other, "token refused: re-routing");
                        self.perform(reroute, now)?;
                    }
                    None => tracing::debug!(
                        peer = %peer,
                        reason = %other,
                        "token refused: tried again (this run keeps its path)"
                    ),
                }
            }
            other => tracing::warn!(peer = %peer, reason = %other, "message refused"),
        }
        Ok(())
    }

    /// `peer` runs our run file: tokens may go to it.
    pub(super) fn on_verified(&mut self, peer: PeerId) {
        if self.custody.verified(peer, Instant::now()) {
            tracing::info!(
                "{} is reachable again and runs our run file: no longer avoided",
                member_name(self.member_index(&peer))
            );
        }
    }

    /// [`NodeError::StateLost`], on `peer`'s word that it `seen` more of this node than its
    /// state holds.
    pub(super) fn state_lost(&self, peer: &PeerId, seen: String) -> NodeError {
        NodeError::StateLost {
            member: member_name(self.member_index(peer)),
            seen,
            held: self.learner.state().last_seq,
            state_dir: self.state_dir.clone(),
        }
    }

    /// Whether `peer` runs our run file and showed it on `connection` (issue 27, item 4): a
    /// second process with a member's key, on a connection of its own, is not taken for the
    /// member until it shows its run file there too.
    fn is_greeted(&self, peer: &PeerId, connection: ConnectionId) -> bool {
        self.custody.is_verified(peer) && self.greeted_on.contains(&connection)
    }
}
