//! The node's side of the walk without the network: what it does with a token, durably.
//!
//! Every number comes from `dpwalk_core` and `dpwalk_privacy`, through the same calls the
//! simulator makes: [`visit`] (the step, then the next hop from the node's own RNG, seeded by
//! [`node_rng`](dpwalk_core::rng::node_rng)`(run seed, index)`), [`start_holder`],
//! [`Algorithm::model`] for the final `z`, and [`local_view`](dpwalk_privacy::local::local_view)
//! for the charge of one contribution. A daemon swarm and `dpwalk sim` given the same run
//! therefore produce the same `z`, bit for bit (tested end to end).
//!
//! # Durability
//! For one received token the order is
//! ```text
//! budget policy → visit (step + next hop), or a noise-only step when the budget is spent
//!   → StateDir::commit(u_i, RNG position, seq, outgoing token, and this visit (seq and kind)
//!     among the unflushed ledger records)                          (one fdatasync)
//!   → ledger append (a contribution, or a noise-only visit), without a flush
//!                                                                   (a write to the page cache)
//!   → (the caller) acknowledge and send
//! ```
//! Every visit is recorded, a noise-only one too (without a charge): the ledgers of all members
//! together then give the walk's holder at every step, which the certificate given the walk
//! (`dpwalk ledger certify`) reads, and an observer's noise-only visits are observations it must
//! count. One flush per step: the flush is most of a hop on loopback, and the state must be
//! flushed anyway. The ledger's file is flushed later, off the token's path
//! ([`Learner::flush_ledger`], which the node calls while it does not hold the token, before it
//! exits, and which [`Learner::receive`] calls itself before the list of unflushed records would
//! pass [`MAX_UNFLUSHED`]). Until its file is flushed, the state carries the seq and kind of each
//! unflushed record ([`NodeState::unflushed_visits`]); the charge of a contribution is a pure
//! function of σ and the run's accounted clip ([`Run::accounted_clip`]), and a noise-only visit
//! has none, so a seq and a kind are all a record needs to be written again. The state is the
//! truth and the ledger follows it:
//! - a process crash loses nothing the operating system was given: the ledger lacks at most the
//!   record of the step whose commit the crash followed;
//! - a machine crash may lose the records appended since the last flush;
//!
//! and in both cases [`Learner::open`] appends again, and flushes, the records of the state's
//! unflushed visits that the ledger lacks. A ledger record never precedes its step's commit, so a
//! ledger with a visit the state does not know is an error, never guessed away. So every ledger
//! holds exactly the visits its node made (as many contributions as the state's `contributions`
//! and as many noise-only visits as its `skipped`), none lost and none counted twice, once the
//! node has opened it. A crash before the commit leaves the previous state: the sender still
//! has custody, re-sends, and the node steps again from the same `u_i` and RNG position, to the
//! same result.
//!
//! # Restored copies
//! A state directory is not a backup to restore. The state carries the node's RNG position: a
//! state put back from an older copy would draw again the noise it already drew (and published,
//! in the tokens it sent) for the steps after the copy, and its ledger would lose those steps.
//! [`Learner::open`] refuses a state older than its ledger ([`LearnerError::RolledBack`]: more
//! records than the state's contributions, or a record past the state's last seq), and a ledger
//! older than its state ([`LearnerError::Inconsistent`]). A state and a ledger restored
//! *together*, from one older copy of the whole directory, agree with each other and are not
//! detected: nothing on the host records the node's progress outside the directory a restore
//! puts back (only the other members saw the later steps, and they keep no per-member record of
//! them). Restoring a state directory from a backup in the middle of a run therefore reuses noise
//! without a word; see README.md, "What a node guarantees".
//!
//! What happens after the commit (acknowledgements, releases) is kept in memory only: after a
//! restart the node re-sends its outgoing token, and the receiver's answer (an acknowledgement for
//! a token it already took, a refusal for one the walk has passed) settles it.
//!
//! # The step
//! The run's `[algorithm] kind` picks the update ([`NodeStep`]): the ADMM step, with the node's
//! private `u_i` in its durable state, or the DP-SGD step, which has no private state (`u_i`
//! stays zero in the state). Both go through [`visit`] with the matching [`Update`], so the
//! simulator's `kind = "dp-sgd"` walk and a daemon run of it make the same steps.
//!
//! # The node's problem
//! The node knows only its own records and `n`. [`node_problem`] builds a [`Problem`] of `n` users
//! in which every user but this node has no records: the step touches only the holder's block and
//! divides by `n`, so it computes exactly what the simulator computes for that user.

use std::collections::HashSet;

use dpwalk_core::params::{AdmmParams, SgdParams};
use dpwalk_core::problem::{LocalProx, Problem};
use dpwalk_core::rng::NodeRng;
use dpwalk_core::step::{Algorithm, StepScratch};
use dpwalk_core::walk::{Turn, Update, start_holder, visit};
use dpwalk_privacy::budget::Policy;
use dpwalk_privacy::ledger::{Ledger, LedgerVisit};
use dpwalk_privacy::rdp::{Conversion, RdpCurve};
use libp2p_identity::{Keypair, PeerId};

use crate::codec::{FinalModel, Token};
use crate::quality::{Change, Quality};
use crate::run::Run;
use crate::seal::seal;
use crate::state::{Custody, NodeState, StateDir};

mod error;
mod evals;
mod open;
mod problem;

pub use error::LearnerError;
pub use evals::EVALS_FILE;
use evals::Evals;
pub use problem::{labels_for_loss, node_problem};

/// The ledger's file name in the state directory.
pub const LEDGER_FILE: &str = "ledger.bin";

/// How many visits may wait for the ledger's flush (their seqs and kinds ride in every state
/// commit: 9 bytes each). [`Learner::receive`] flushes the ledger first rather than let the list
/// grow past it.
pub const MAX_UNFLUSHED: usize = 64;

/// How many times a re-route redraws the next hop to avoid unreachable neighbours before it
/// takes what it drew.
const REROUTE_DRAWS: usize = 64;

/// The run's step at this node, with what it borrows: the ADMM step needs the local prox (built
/// once by the caller: it may factor the node's data), DP-SGD needs nothing but its parameters.
#[derive(Debug, Clone, Copy)]
pub enum NodeStep<'p> {
    /// The private ADMM step.
    Admm {
        /// `prox_{γ f_i}` of the node's problem.
        prox: &'p LocalProx<'p>,
        /// γ, λ, σ, C.
        params: AdmmParams,
    },
    /// The DP-SGD step.
    Sgd(SgdParams),
}

impl NodeStep<'_> {
    /// The step's algorithm (its σ and C, and the model of a token).
    pub fn algorithm(&self) -> Algorithm {
        match *self {
            NodeStep::Admm { params, .. } => Algorithm::Admm(params),
            NodeStep::Sgd(params) => Algorithm::Sgd(params),
        }
    }
}

/// What the caller does after a token was handled.
#[derive(Debug, Clone, PartialEq)]
pub enum Outcome {
    /// Send this token (it is in custody until acknowledged).
    Forward(Custody),
    /// The walk is over: publish the final model to every member.
    Final(FinalModel),
}

/// A node's learning state: its block of the problem, its RNG, its durable state and ledger.
pub struct Learner<'p> {
    run: &'p Run,
    index: usize,
    /// The node's key, which seals the final model when this node makes the last step.
    signer: Keypair,
    problem: &'p Problem,
    step: NodeStep<'p>,
    rng: NodeRng,
    scratch: StepScratch,
    state: NodeState,
    states: StateDir,
    ledger: Ledger,
    step_charge: RdpCurve,
    /// The strictest of the budgets the node was given (the run's and its own), as the one
    /// policy of `dpwalk_privacy::budget` that the simulator applies too.
    policy: Option<Policy>,
    delta: f64,
    /// Whether this process has said that the budget is spent (one line, not one per visit).
    spent_said: bool,
    /// The clip share of the latest contributions and the noise check.
    quality: Quality,
    /// Models to record on the way, if asked for.
    evals: Option<Evals>,
    /// The path-hidden network ε of the run (`None` where none is proved or computed: see
    /// [`Learner::network_epsilon`]).
    network_epsilon: Option<f64>,
}

impl std::fmt::Debug for Learner<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Learner")
            .field("index", &self.index)
            .field("last_seq", &self.state.last_seq)
            .field("contributions", &self.state.contributions)
            .finish_non_exhaustive()
    }
}

impl<'p> Learner<'p> {
    /// The node's view of its updates' quality (clip share, noise check).
    pub fn quality(&self) -> &Quality {
        &self.quality
    }

    /// The durable state (read-only).
    pub fn state(&self) -> &NodeState {
        &self.state
    }

    /// The node's index in the run.
    pub fn index(&self) -> usize {
        self.index
    }

    /// Whether this node starts the walk: it is the run's first holder and has handled nothing.
    pub fn starts_walk(&self) -> bool {
        start_holder(self.run.seed(), self.run.members().len()) == self.index
            && self.state.last_seq.is_none()
            && self.state.final_model.is_none()
    }

    /// The token the walk starts from: `seq = 0`, `w = (1/n) Σ u_j = 0`.
    pub fn initial_token(&self) -> Token {
        Token {
            run_id: self.run.run_id().to_string(),
            seq: 0,
            w: vec![0.0; self.run.dimension()],
        }
    }

    /// Handles a validated token from `from` (`None` for the initial token): steps (or, with the
    /// budget spent, only forwards), commits, charges the ledger. See the module docs for the order.
    pub fn receive(&mut self, token: Token, from: Option<PeerId>) -> Result<Outcome, LearnerError> {
        self.receive_avoiding(token, from, &HashSet::new())
    }

    /// [`Learner::receive`], with the next hop drawn again (as [`Learner::reroute`] does) while
    /// it falls on a member of `avoid` (members known down): the step and the final receiver are
    /// committed together, one durable write per hop. With `avoid` empty the draws are exactly
    /// the simulator's.
    pub fn receive_avoiding(
        &mut self,
        token: Token,
        from: Option<PeerId>,
        avoid: &HashSet<PeerId>,
    ) -> Result<Outcome, LearnerError> {
        let spent = self
            .policy
            .is_some_and(|p| !p.allows(self.state.contributions));
        if spent {
            tracing::debug!(
                seq = token.seq,
                contributions = self.state.contributions,
                "budget spent: a noise-only step"
            );
            if !self.spent_said {
                self.spent_said = true;
                let spent = self
                    .local_epsilon()
                    .ok()
                    .flatten()
                    .map_or_else(|| "unbounded".into(), |e| format!("{e:.4}"));
                let budget = self
                    .budget_epsilon()
                    .map_or_else(|| "?".into(), |e| e.to_string());
                tracing::info!(
                    "privacy budget spent: {} contributions made, {}local epsilon {spent} of the budget's {budget} at delta {:e}; from now on this node forwards the token with a noise-only step (no data), logged at debug level",
                    self.state.contributions,
                    self.run.unit_prefix(),
                    self.delta
                );
            }
        }
        let mut w = token.w;
        let update = match &self.step {
            NodeStep::Admm { prox, params } => Update::Admm {
                prox,
                params,
                u: &mut self.state.u,
            },
            NodeStep::Sgd(params) => Update::Sgd { params },
        };
        let turn = if spent {
            Turn::NoiseOnly
        } else {
            Turn::Contribute
        };
        let (contribution, next) = visit(
            self.problem,
            self.run.topology(),
            self.index,
            update,
            turn,
            &mut w,
            &mut self.rng,
            &mut self.scratch,
        )?;
        let next = self.avoiding(next, avoid);
        let clipped = contribution.is_some_and(|c| c.clipped);
        if contribution.is_some() {
            match self.quality.record(clipped) {
                Some(Change::Raised(warning)) => tracing::warn!("{warning}"),
                Some(Change::ClipCleared { clipped, of }) => tracing::info!(
                    "the clip now cuts {clipped} of the last {of} updates of this node: no longer nearly all"
                ),
                None => {}
            }
        }
        if self.state.unflushed_visits.len() >= MAX_UNFLUSHED {
            self.flush_ledger()?;
        }
        let seq = token.seq + 1;
        let state = &mut self.state;
        state.rng_word_pos = self.rng.get_word_pos();
        state.last_seq = Some(token.seq);
        state.predecessor = from;
        state.backup = None;
        if spent {
            state.skipped += 1;
        } else {
            state.contributions += 1;
            state.clipped += u64::from(clipped);
        }
        state.unflushed_visits.push(LedgerVisit {
            seq: token.seq,
            contribution: !spent,
        });
        let outcome = if seq >= self.run.steps() {
            let mut z = vec![0.0; w.len()];
            self.step
                .algorithm()
                .model(self.problem.regularizer(), &w, &mut z);
            let model = seal(&self.signer, &self.run.hash().0, token.run_id, seq, z)?;
            state.outgoing = None;
            state.final_model = Some(model.clone());
            Outcome::Final(model)
        } else {
            let custody = Custody {
                to: self.run.members()[next].peer,
                token: Token {
                    run_id: token.run_id,
                    seq,
                    w,
                },
            };
            state.outgoing = Some(custody.clone());
            Outcome::Forward(custody)
        };
        self.states.commit(&self.state)?;
        if spent {
            self.ledger.append_noise_only_unflushed(token.seq)?;
        } else {
            self.ledger.append_unflushed(token.seq, &self.step_charge)?;
        }
        if let (Some(evals), Outcome::Forward(c)) = (self.evals.as_mut(), &outcome)
            && c.token.seq % evals.every == 0
        {
            evals.pending.push((c.token.seq, c.token.w.clone()));
        }
        Ok(outcome)
    }

    /// Flushes the ledger's file, so that the state need not carry its records' seqs any more
    /// (the next commit drops them). Cheap when there is nothing to flush.
    pub fn flush_ledger(&mut self) -> Result<(), LearnerError> {
        if self.state.unflushed_visits.is_empty() {
            return Ok(());
        }
        self.ledger.flush()?;
        self.state.unflushed_visits.clear();
        Ok(())
    }

    /// Redraws the receiver of the outgoing token, avoiding `avoid` (members that failed) when the
    /// walk's own draws allow it within a bounded number of tries; commits the new custody.
    pub fn reroute(&mut self, avoid: &HashSet<PeerId>) -> Result<Option<Custody>, LearnerError> {
        let Some(mut custody) = self.state.outgoing.take() else {
            return Ok(None);
        };
        let first = self.run.topology().next_hop(self.index, &mut self.rng);
        let next = self.avoiding(first, avoid);
        custody.to = self.run.members()[next].peer;
        self.state.outgoing = Some(custody.clone());
        self.state.rng_word_pos = self.rng.get_word_pos();
        self.states.commit(&self.state)?;
        Ok(Some(custody))
    }

    /// The walk's draw `next`, or the first of at most [`REROUTE_DRAWS`] `- 1` further draws of the
    /// walk's own law that is not in `avoid` (the last one if all are): while members are
    /// avoided (rejection sampling), the next hop of a uniform walk is uniform over the others.
    fn avoiding(&mut self, mut next: usize, avoid: &HashSet<PeerId>) -> usize {
        let topology = self.run.topology();
        for _ in 1..REROUTE_DRAWS {
            if !avoid.contains(&self.run.members()[next].peer) {
                break;
            }
            next = topology.next_hop(self.index, &mut self.rng);
        }
        next
    }

    /// The receiver acknowledged `seq`: the outgoing token becomes the backup (in memory). Returns
    /// the predecessor to tell, with the seq of the token it gave this node.
    pub fn acknowledged(&mut self, seq: u64) -> Option<(PeerId, u64)> {
        if self
            .state
            .outgoing
            .as_ref()
            .is_some_and(|c| c.token.seq == seq)
        {
            self.state.backup = self.state.outgoing.take();
            let given = self.state.last_seq?;
            return self.state.predecessor.map(|p| (p, given));
        }
        None
    }

    /// The receiver refused `seq` as already passed by the walk: drop it.
    pub fn superseded(&mut self, seq: u64) {
        if self
            .state
            .outgoing
            .as_ref()
            .is_some_and(|c| c.token.seq == seq)
        {
            self.state.outgoing = None;
        }
    }

    /// The token this node gave (seq `seq`) has been acknowledged downstream: drop the backup.
    pub fn released(&mut self, seq: u64) {
        if self
            .state
            .backup
            .as_ref()
            .is_some_and(|c| c.token.seq == seq)
        {
            self.state.backup = None;
        }
    }

    /// The receiver of the backup vanished: resume the walk from the backup, towards another
    /// neighbour than `gone`.
    pub fn resume(&mut self, gone: PeerId) -> Result<Option<Custody>, LearnerError> {
        let Some(backup) = self.state.backup.take() else {
            return Ok(None);
        };
        self.state.outgoing = Some(backup);
        self.reroute(&HashSet::from([gone]))
    }

    /// Records a final model received from the publisher (durably).
    pub fn final_received(&mut self, model: FinalModel) -> Result<(), LearnerError> {
        self.state.outgoing = None;
        self.state.backup = None;
        self.state.final_model = Some(model);
        self.states.commit(&self.state)?;
        Ok(())
    }

    /// Local ε spent so far (from the ledger), at the node's δ; `None` when unbounded.
    pub fn local_epsilon(&self) -> Result<Option<f64>, LearnerError> {
        let bound = self.ledger.total().to_dp(self.delta, Conversion::Tight)?;
        Ok(dpwalk_privacy::walk::Figure::from(bound).epsilon)
    }

    /// The path-hidden network ε (N1, `dpwalk_privacy::walk::path_hidden`) of a DP-SGD run on
    /// the complete graph with a network budget: the run's `K` steps, each member's contributions
    /// capped by the policy. The same for every member, and a priori: it does not depend on the
    /// walk. `None` for the ADMM walk (no network bound is proved), on other graphs (not computed
    /// by the daemon), without a network budget (only such a run keeps its walk's path:
    /// `crate::custody`, "Keeping the path"), or where the accountant refuses the cost.
    pub fn network_epsilon(&self) -> Option<f64> {
        self.network_epsilon
    }

    /// δ of the reported figures.
    pub fn delta(&self) -> f64 {
        self.delta
    }

    /// The ε of the strictest budget the node enforces, if any.
    pub fn budget_epsilon(&self) -> Option<f64> {
        self.policy.map(|p| p.budget().epsilon())
    }

    /// Contributions recorded in the ledger.
    pub fn ledger_records(&self) -> u64 {
        self.ledger.records()
    }

    /// Noise-only visits recorded in the ledger.
    pub fn ledger_noise_only(&self) -> u64 {
        self.ledger.noise_only()
    }
}
