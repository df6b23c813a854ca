//! Opening a node's learning state: checks of the key and the data, recovery and repair of the
//! ledger, refusal of restored copies (module doc of [`super`], "Durability" and "Restored
//! copies"), and the budget policy.

use std::path::Path;

use dpwalk_core::problem::Problem;
use dpwalk_core::rng::node_rng;
use dpwalk_core::spec::{BudgetViewName, Noise as SpecNoise};
use dpwalk_core::step::StepScratch;
use dpwalk_core::topology::Topology;
use dpwalk_privacy::Noise;
use dpwalk_privacy::budget::Policy;
use dpwalk_privacy::ledger::{Budget, Ledger, LedgerOwner, LedgerVisit};
use dpwalk_privacy::local::local_view;
use dpwalk_privacy::rdp::{Conversion, Orders};
use dpwalk_privacy::walk::{Setup, path_hidden};
use libp2p_identity::Keypair;

use super::{LEDGER_FILE, Learner, LearnerError, NodeStep};
use crate::quality::Quality;
use crate::run::{Run, RunHash};
use crate::state::{NodeState, StateDir};

impl<'p> Learner<'p> {
    /// Opens the node's state in `state_dir` (fresh, or as a crash left it), recovers and repairs
    /// its ledger, and positions its RNG. `signer` is the key of member `index`. The run's own
    /// `[budget]` is read from `run`, on its view (local, or network: `Policy::network`);
    /// `budgets` are further budgets on the local view (the node's own); the node contributes
    /// only while every one allows it.
    /// `step` is the run's step with its σ (`Run::algorithm_with`).
    pub fn open(
        run: &'p Run,
        index: usize,
        signer: &Keypair,
        problem: &'p Problem,
        step: NodeStep<'p>,
        state_dir: &Path,
        budgets: &[Budget],
    ) -> Result<Self, LearnerError> {
        let key = signer.public().to_peer_id();
        let member = run.members().get(index).map(|m| m.peer);
        if member != Some(key) {
            return Err(LearnerError::NotThisMember {
                index,
                key: key.to_base58(),
                member: member.map_or_else(|| "none".into(), |m| m.to_base58()),
            });
        }
        if problem.dim() != run.dimension() {
            return Err(LearnerError::Dimension {
                run: run.dimension(),
                data: problem.dim(),
            });
        }
        let states = StateDir::open(state_dir)?;
        let state = states
            .load_for(run.hash())?
            .unwrap_or_else(|| NodeState::fresh(run.hash(), run.dimension()));
        let mut rng = node_rng(run.seed(), index as u64);
        rng.set_word_pos(state.rng_word_pos);
        // Charged with the run's accounted clip (`C`, or the record-level clip), as the run was
        // calibrated; the step itself clips at `params`' `C`.
        let algorithm = step.algorithm();
        let runs = run.algorithm_with(algorithm.sigma());
        if runs.as_ref() != Ok(&algorithm) {
            return Err(LearnerError::Step {
                run: runs.map_or_else(|e| e.to_string(), |a| format!("{a:?}")),
                given: format!("{algorithm:?}"),
            });
        }
        let noise = Noise::new(algorithm.sigma(), run.accounted_clip())?;
        let ledger_path = state_dir.join(LEDGER_FILE);
        let owner = LedgerOwner {
            run: run.hash().0,
            member: index as u64,
        };
        let mut ledger = if ledger_path.exists() {
            let (ledger, recovery) = Ledger::recover(&ledger_path)?;
            if recovery.discarded_bytes > 0 {
                tracing::warn!(
                    ledger = %ledger_path.display(),
                    discarded_bytes = recovery.discarded_bytes,
                    records = recovery.records,
                    "the ledger's last record was torn by a crash and was discarded"
                );
            }
            if ledger.owner() != owner {
                return Err(LearnerError::Inconsistent {
                    ledger: ledger_path.clone(),
                    message: format!(
                        "the ledger is member {}'s of run hash {}, but this node is member {index} of run hash {}: it belongs to another node or another run. Give this node its own state-dir",
                        ledger.owner().member,
                        RunHash(ledger.owner().run),
                        run.hash()
                    ),
                });
            }
            ledger
        } else {
            Ledger::create(&ledger_path, &Orders::default_grid(), owner)?
        };
        // Charged on the ledger's own orders, so that a ledger written with an earlier grid
        // keeps being appended to consistently.
        let orders = ledger.orders().clone();
        let step_charge = local_view(&orders, noise, 1);
        let inconsistent = |message: String| LearnerError::Inconsistent {
            ledger: ledger_path.clone(),
            message,
        };
        let lost: Vec<LedgerVisit> = state
            .unflushed_visits
            .iter()
            .copied()
            .filter(|v| ledger.last_seq().is_none_or(|last| v.seq > last))
            .collect();
        if !lost.is_empty() {
            for v in &lost {
                if v.contribution {
                    ledger.append_unflushed(v.seq, &step_charge)?;
                } else {
                    ledger.append_noise_only_unflushed(v.seq)?;
                }
            }
            ledger.flush()?;
            tracing::warn!(
                contributions = ?lost.iter().filter(|v| v.contribution).map(|v| v.seq).collect::<Vec<_>>(),
                noise_only = ?lost.iter().filter(|v| !v.contribution).map(|v| v.seq).collect::<Vec<_>>(),
                "repaired the ledger: a crash came before these visits' records reached it"
            );
        }
        let records = ledger.records();
        // No crash leaves a ledger record without its step's commit: a ledger ahead of its state
        // means the state was put back (see the module docs, "Restored copies").
        if let Some(ledger_last) = ledger.last_seq()
            && (records > state.contributions
                || state.last_seq.is_none_or(|last| ledger_last > last))
        {
            return Err(LearnerError::RolledBack {
                state_dir: state_dir.to_path_buf(),
                ledger: ledger_path.clone(),
                records,
                ledger_last,
                contributions: state.contributions,
                state_last: state.last_seq,
            });
        }
        if records != state.contributions {
            return Err(inconsistent(format!(
                "the ledger holds {records} records for the state's {} contributions: it lacks records of contributions this node made (it was restored from an older copy, truncated or replaced), and the node would under-count its privacy spending. Put back the ledger that matches the state",
                state.contributions
            )));
        }
        if ledger.noise_only() != state.skipped {
            return Err(inconsistent(format!(
                "the ledger holds {} noise-only visits for the state's {}: it lacks records of visits this node made (it was restored from an older copy, truncated or replaced), and the walk could not be certified from the members' ledgers. Put back the ledger that matches the state",
                ledger.noise_only(),
                state.skipped
            )));
        }
        let prox_scratch = match step {
            NodeStep::Admm { prox, .. } => prox.scratch(),
            NodeStep::Sgd(_) => Default::default(),
        };
        let scratch = StepScratch::new(run.dimension(), prox_scratch);
        let mut policies: Vec<Policy> = Vec::with_capacity(budgets.len() + 1);
        if let (SpecNoise::Budget { epsilon, delta }, Some(view)) = (run.noise(), run.budget_view())
        {
            let budget = Budget::new(epsilon, delta)?;
            policies.push(match view {
                BudgetViewName::Local => {
                    Policy::new(budget, Conversion::Tight, &orders, noise, run.steps())?
                }
                BudgetViewName::Network => Policy::network(
                    budget,
                    Conversion::Tight,
                    &orders,
                    noise,
                    run.members().len() as u64,
                    run.steps(),
                )?,
            });
        }
        for &budget in budgets {
            policies.push(Policy::new(
                budget,
                Conversion::Tight,
                &orders,
                noise,
                run.steps(),
            )?);
        }
        let policy = policies.into_iter().min_by_key(|p| p.cap());
        let delta = policy.map_or(dpwalk_core::spec::DEFAULT_DELTA, |p| p.budget().delta());
        let quality = Quality::new(algorithm.sigma(), algorithm.clip(), run.dimension());
        // Only a run with a network budget keeps its walk's path (custody never routes around a
        // member there, `crate::custody`): elsewhere the walk may follow another law than the
        // complete graph's, for which the path-hidden figure is not proved.
        let keeps_path = run.budget_view() == Some(BudgetViewName::Network);
        let network_epsilon = match (&step, run.topology()) {
            (NodeStep::Sgd(_), Topology::Complete { .. }) if keeps_path => {
                let setup = Setup {
                    orders: Orders::default_grid(),
                    noise,
                    delta,
                    conversion: Conversion::Tight,
                };
                let cap = policy.map_or(run.steps(), |p| p.cap());
                match path_hidden(&setup, run.topology(), run.steps(), cap, false) {
                    Ok(p) => p.users.first().and_then(|u| u.figure.epsilon),
                    Err(e) => {
                        tracing::warn!(error = %e, "no network figure for this run");
                        None
                    }
                }
            }
            _ => None,
        };
        Ok(Learner {
            run,
            index,
            signer: signer.clone(),
            problem,
            step,
            rng,
            scratch,
            state,
            states,
            ledger,
            step_charge,
            policy,
            delta,
            spent_said: false,
            quality,
            evals: None,
            network_epsilon,
        })
    }
}
