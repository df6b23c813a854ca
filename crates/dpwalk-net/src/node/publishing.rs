//! The node's side of the final model: publishing it ([`crate::publish`]), taking one from a
//! member, and writing `final_model.json` ([`crate::final_model`]).

use dpwalk_core::spec::ProblemSpec;
use std::time::Instant;

use libp2p::PeerId;

use super::{Node, NodeError, member_name};
use crate::codec::{FinalModel, Message, Rejection};
use crate::final_model::{FinalModelFile, FinalPrivacy};
use crate::publish::{Publish, prevails};

impl Node<'_> {
    /// Publishes `model` to every other member.
    pub(super) fn begin_publish(&mut self, model: FinalModel) {
        let others: Vec<PeerId> = self
            .run
            .members()
            .iter()
            .map(|m| m.peer)
            .filter(|p| *p != self.me)
            .collect();
        self.publish = Some(Publish::new(model, others, Instant::now()));
    }

    /// Gives the final model this node holds, if any, to member `peer`.
    pub(super) fn publish_to(&mut self, peer: PeerId) {
        let Some(model) = self.learner.state().final_model.clone() else {
            return;
        };
        let now = Instant::now();
        match self.publish.as_mut() {
            Some(p) if p.model() == &model => p.add(peer, now),
            _ => self.publish = Some(Publish::new(model, [peer], now)),
        }
    }

    /// Sends the final model to members that have not acknowledged it (see [`Publish::due`]).
    pub(super) fn publish_step(&mut self) {
        let Some(p) = self.publish.as_mut() else {
            return;
        };
        let targets = p.due(Instant::now());
        if targets.is_empty() {
            return;
        }
        let message = Message::FinalModel(p.model().clone());
        for peer in targets {
            let id = self.send(&peer, message.clone());
            if let Some(p) = self.publish.as_mut() {
                p.sent(id, peer);
            }
        }
    }

    /// A member answered our final model (anything but an acknowledgement).
    pub(super) fn on_publish_answer(
        &mut self,
        peer: PeerId,
        answer: Message,
    ) -> Result<(), NodeError> {
        match answer {
            Message::Ack { .. } => {}
            Message::Refused(Rejection::NotVerified) => {
                // It has not compared run files with us yet (or lost our hello): say it again;
                // the model is sent again at the next round.
                self.greet(&peer);
            }
            Message::Refused(why) => {
                tracing::warn!(
                    "{} refused the final model: {why}",
                    member_name(self.member_index(&peer))
                );
                if let Some(p) = self.publish.as_mut() {
                    p.drop_member(&peer);
                }
            }
            _ => {}
        }
        Ok(())
    }

    /// A valid final model made by `maker`, from the verified member `from`: written if it is
    /// the first, else kept or replaced by the rule of [`crate::publish`].
    pub(super) fn on_final(
        &mut self,
        from: PeerId,
        maker: PeerId,
        model: FinalModel,
    ) -> Result<(), NodeError> {
        let maker_index = self.member_index(&maker).unwrap_or(usize::MAX);
        let Some(held) = self.learner.state().final_model.clone() else {
            tracing::info!(
                from = %member_name(self.member_index(&from)),
                maker = %member_name(Some(maker_index)),
                "received the final model"
            );
            self.learner.final_received(model.clone())?;
            self.custody.finished();
            return self.write_final(&model);
        };
        if held == model {
            return Ok(());
        }
        let held_maker = crate::seal::maker(&held, &self.run.hash().0)
            .ok()
            .and_then(|p| self.member_index(&p))
            .unwrap_or(usize::MAX);
        if prevails(maker_index, held_maker) {
            tracing::warn!(
                "a second final model, made by {}, prevails over the one made by {} that this node held (the walk forked before its last step; of two final models the one of the lower member index is kept): replacing it and passing it on",
                member_name(Some(maker_index)),
                member_name(Some(held_maker))
            );
            self.learner.final_received(model.clone())?;
            self.custody.finished();
            self.write_final(&model)?;
            self.begin_publish(model);
        } else {
            tracing::warn!(
                "{} sent a second final model, made by {}, which does not prevail over the one made by {} that this node holds (the walk forked before its last step): sending it ours",
                member_name(self.member_index(&from)),
                member_name(Some(maker_index)),
                member_name(Some(held_maker))
            );
            self.publish_to(from);
        }
        Ok(())
    }

    pub(super) fn write_final(&mut self, model: &FinalModel) -> Result<(), NodeError> {
        // Every model this node holds was sealed by it or verified on receipt.
        let maker = crate::seal::maker(model, &self.run.hash().0).map_err(|why| {
            NodeError::Unsupported(format!("the final model held in the state: {why}"))
        })?;
        let state = self.learner.state();
        let file = FinalModelFile {
            z: model.z.clone(),
            steps: model.seq,
            seed: self.run.seed(),
            run_id: self.run.run_id().to_string(),
            run_hash: self.run.hash().to_string(),
            index: self.learner.index(),
            peer_id: self.me.to_base58(),
            maker_index: self.member_index(&maker).unwrap_or(usize::MAX),
            maker_peer_id: maker.to_base58(),
            privacy: FinalPrivacy {
                contributions: state.contributions,
                clipped: state.clipped,
                skipped: state.skipped,
                delta: self.learner.delta(),
                epsilon_local: self.learner.local_epsilon()?,
                epsilon_network: self.learner.network_epsilon(),
                network_label: self
                    .learner
                    .network_epsilon()
                    .map(|_| dpwalk_privacy::walk::PATH_HIDDEN.into()),
                budget_view: self.run.budget_view().map(|v| v.name().into()),
                unit: self.run.unit_label().into(),
                budget_epsilon: self.learner.budget_epsilon(),
                conversion: "tight".into(),
            },
            problem: Some(ProblemSpec::of(self.run.loss(), self.run.regularizer())),
        };
        let path = file.write(&self.state_dir)?;
        tracing::info!(path = %path.display(), "final model written");
        self.finished_at.get_or_insert_with(Instant::now);
        Ok(())
    }
}
