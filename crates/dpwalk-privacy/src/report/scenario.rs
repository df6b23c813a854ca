//! The scenario every walk query reads: the graph, the clip, the contributions and the record
//! level (`--topology`/`--complete`, `--clip`, `--steps-per-user`/`--total-steps`,
//! `--min-records`/`--feature-norm`/`--loss`/`--gamma`), loaded and checked once for `account
//! walk` and `calibrate`.

use super::QueryError;
use crate::budget::PLAN_QUANTILE;
use crate::walk::planned_contributions;
use dpwalk_core::problem::Loss;
use dpwalk_core::rng::{Purpose, derive_seed};
use dpwalk_core::spec::problem::LossName;
use dpwalk_core::spec::unit::{RecordUnit, UnitName, UnitSpec};
use dpwalk_core::topology::Topology;
use serde::Serialize;
use std::path::PathBuf;

/// Which graph the walk runs on.
#[derive(Debug, Clone, PartialEq)]
pub enum Graph {
    /// The complete graph on `users` users (`--complete N`; exact `E[1/M]`, instant for any N).
    Complete {
        /// N, at least 2.
        users: usize,
    },
    /// A topology file (`--topology FILE`).
    File {
        /// The TOML file.
        path: PathBuf,
        /// The number of nodes, for files that leave it to the caller (`--nodes`).
        nodes: Option<usize>,
        /// The run seed, for random topologies that do not fix their own (`--seed`).
        seed: u64,
    },
}

/// How many contributions each user makes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Contributions {
    /// K contributions of each user (`--steps-per-user K`).
    PerUser(u64),
    /// A walk of T steps (`--total-steps T`): each user is charged the [`PLAN_QUANTILE`]
    /// quantile of its visit count.
    TotalSteps(u64),
}

/// Record level, as a run file's `[privacy] unit = "record"` table: every figure is for one
/// record of a user, accounted with the clip `min(C, γ·G₂/m)` ([`crate::unit::clip_at`]).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RecordLevel {
    /// Every user holds at least m records (`--min-records`).
    pub min_records: u64,
    /// Every record's features have ℓ₂ norm at most R (`--feature-norm`).
    pub feature_norm: f64,
    /// The loss, which bounds a record's gradient by G₂ (logistic: R, multinomial: √2·R; the
    /// squared loss has no bound) (`--loss`).
    pub loss: LossName,
    /// γ of the ADMM step (1 for a DP-SGD walk, whose clip is min(C, G₂/m)) (`--gamma`).
    pub gamma: f64,
}

/// The scenario options shared by `account walk` and `calibrate`.
#[derive(Debug, Clone, PartialEq)]
pub struct ScenarioQuery {
    /// The graph.
    pub graph: Graph,
    /// The clipping bound C > 0 of each contribution (`--clip`).
    pub clip: f64,
    /// The contributions of each user.
    pub contributions: Contributions,
    /// Record level, when asked for.
    pub record: Option<RecordLevel>,
}

/// The run seed of a random topology file when `--seed` is not given.
pub const DEFAULT_TOPOLOGY_SEED: u64 = 1;

/// The scenario options as a front end was given them, each optional as a flag is: the CLI's
/// flags, Python's keyword arguments. [`ScenarioFlags::query`] says what they mean, or why they
/// do not go together, in one place for both.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ScenarioFlags {
    /// `--topology FILE`.
    pub topology: Option<PathBuf>,
    /// `--complete N`.
    pub complete: Option<usize>,
    /// `--nodes N` (with `--topology`).
    pub nodes: Option<usize>,
    /// `--seed` ([`DEFAULT_TOPOLOGY_SEED`] when not given).
    pub seed: Option<u64>,
    /// `--clip C`.
    pub clip: f64,
    /// `--steps-per-user K`.
    pub steps_per_user: Option<u64>,
    /// `--total-steps T`.
    pub total_steps: Option<u64>,
    /// `--min-records M`.
    pub min_records: Option<u64>,
    /// `--feature-norm R`.
    pub feature_norm: Option<f64>,
    /// `--loss` (record level; default logistic).
    pub loss: Option<LossName>,
    /// `--gamma` (record level; default 1).
    pub gamma: Option<f64>,
}

impl ScenarioFlags {
    /// What the flags ask for.
    ///
    /// # Errors
    /// [`QueryError::OneOf`] unless exactly one of `--topology`/`--complete` and one of
    /// `--steps-per-user`/`--total-steps` is given; [`QueryError::RecordLevelHalf`] for one of
    /// `--min-records`/`--feature-norm` without the other; [`QueryError::Refused`] for `--nodes`
    /// without a topology file, or `--loss`/`--gamma` at user level.
    pub fn query(&self) -> Result<ScenarioQuery, QueryError> {
        let graph = match (&self.topology, self.complete) {
            (Some(path), None) => Graph::File {
                path: path.clone(),
                nodes: self.nodes,
                seed: self.seed.unwrap_or(DEFAULT_TOPOLOGY_SEED),
            },
            (None, Some(users)) if self.nodes.is_none() => Graph::Complete { users },
            (None, Some(_)) => {
                return Err(QueryError::Refused(
                    "--nodes applies to topology files (--topology FILE)".into(),
                ));
            }
            _ => return Err(QueryError::OneOf("--topology FILE or --complete N")),
        };
        let contributions = match (self.steps_per_user, self.total_steps) {
            (Some(k), None) => Contributions::PerUser(k),
            (None, Some(t)) => Contributions::TotalSteps(t),
            _ => return Err(QueryError::OneOf("--steps-per-user K or --total-steps T")),
        };
        let record = match (self.min_records, self.feature_norm) {
            (Some(min_records), Some(feature_norm)) => Some(RecordLevel {
                min_records,
                feature_norm,
                loss: self.loss.unwrap_or(LossName::Logistic),
                gamma: self.gamma.unwrap_or(1.0),
            }),
            (None, None) if self.loss.is_none() && self.gamma.is_none() => None,
            (None, None) => {
                return Err(QueryError::Refused(
                    "--loss and --gamma apply at record level (with --min-records and --feature-norm)"
                        .into(),
                ));
            }
            _ => return Err(QueryError::RecordLevelHalf),
        };
        Ok(ScenarioQuery {
            graph,
            clip: self.clip,
            contributions,
            record,
        })
    }
}

/// The clip a scenario's figures are accounted with ([`ScenarioQuery::accounted`]).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Accounted {
    /// `C` at user level, `min(C, γ·G₂/m)` at record level.
    pub clip: f64,
    /// The record-level inputs, when given.
    pub record: Option<RecordUnit>,
    /// C as given.
    pub given_clip: f64,
    /// γ (1 at user level).
    pub gamma: f64,
}

impl Accounted {
    /// `user-level` or `record-level`, as the JSON documents say it.
    pub fn unit(&self) -> &'static str {
        if self.record.is_some() {
            "record-level"
        } else {
            "user-level"
        }
    }

    /// What the figures protect, for people (record level only).
    pub fn unit_note(&self) -> Option<String> {
        let r = self.record?;
        Some(format!(
            "record level: one record of a user holding at least m = {} records of feature norm at most R = {} (G2 = {}), accounted with the clip min(C, gamma*G2/m) = min({}, {}*{}/{}) = {}",
            r.min_records,
            r.feature_norm,
            r.grad_bound,
            self.given_clip,
            self.gamma,
            r.grad_bound,
            r.min_records,
            self.clip
        ))
    }
}

/// A loaded scenario: the topology and each user's number of contributions.
#[derive(Debug)]
pub struct Scenario {
    /// The walk's graph.
    pub topology: Topology,
    /// The file, or "complete".
    pub source: String,
    /// Contributions charged to every user.
    pub contributions: u64,
    /// `--total-steps`, when K was derived from it.
    pub total_steps: Option<u64>,
}

/// The scenario as the accountant read it, in the documents (`scenario`).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ScenarioDoc {
    /// `complete` or the topology file.
    pub topology: String,
    /// Whether the graph is complete.
    pub complete: bool,
    /// n.
    pub users: usize,
    /// K, the contributions charged to every user.
    pub contributions_per_user: u64,
    /// `--total-steps`, when K was derived from it.
    pub total_steps: Option<u64>,
    /// How K was derived, in words (`null` when given directly).
    pub contributions_note: Option<String>,
}

impl ScenarioQuery {
    /// The clip the figures are accounted with: `--clip`, or at record level `min(C, γ·G₂/m)`.
    ///
    /// # Errors
    /// Inconsistent record-level inputs, γ not positive, or a clip the accountant refuses.
    pub fn accounted(&self) -> Result<Accounted, QueryError> {
        let Some(record) = self.record else {
            return Ok(Accounted {
                clip: self.clip,
                record: None,
                given_clip: self.clip,
                gamma: 1.0,
            });
        };
        // The gradient bound does not depend on the number of classes.
        let loss = match record.loss {
            LossName::Squared => Loss::Squared,
            LossName::Logistic => Loss::Logistic,
            LossName::Multinomial => Loss::Multinomial { classes: 2 },
        };
        let unit = UnitSpec {
            unit: UnitName::Record,
            min_records: Some(record.min_records),
            feature_norm: Some(record.feature_norm),
        }
        .check("record level", loss)
        .map_err(|e| QueryError::RecordLevel(e.message().to_string()))?
        .ok_or(QueryError::RecordLevelHalf)?;
        let gamma = record.gamma;
        if !(gamma > 0.0 && gamma.is_finite()) {
            return Err(QueryError::Gamma(gamma));
        }
        let clip = crate::unit::clip_at(self.clip, gamma, unit.min_records, unit.grad_bound)
            .map_err(|source| QueryError::Invalid {
                flags: "--clip",
                source,
            })?;
        Ok(Accounted {
            clip,
            record: Some(unit),
            given_clip: self.clip,
            gamma,
        })
    }

    /// Loads the topology and derives K (the clip is [`ScenarioQuery::accounted`]'s).
    ///
    /// # Errors
    /// An unreadable topology, or the complete graph of fewer than 2 users.
    pub fn load(&self) -> Result<Scenario, QueryError> {
        let (topology, source) = match &self.graph {
            Graph::File { path, nodes, seed } => {
                let seed = derive_seed(*seed, Purpose::Topology, 0);
                let t =
                    Topology::load(path, *nodes, seed).map_err(|source| QueryError::Topology {
                        path: path.display().to_string(),
                        source,
                    })?;
                (t, path.display().to_string())
            }
            Graph::Complete { users } if *users < 2 => {
                return Err(QueryError::TooFewUsers(*users));
            }
            Graph::Complete { users } => (Topology::Complete { n: *users }, "complete".into()),
        };
        let n = topology.n() as u64;
        let (contributions, total_steps) = match self.contributions {
            Contributions::PerUser(k) => (k, None),
            Contributions::TotalSteps(t) => (
                planned_contributions(t, 1.0 / n as f64, PLAN_QUANTILE),
                Some(t),
            ),
        };
        Ok(Scenario {
            topology,
            source,
            contributions,
            total_steps,
        })
    }
}

impl Scenario {
    /// Whether the walk is on the complete graph (all users alike, exact `E[1/M]`).
    pub fn is_complete(&self) -> bool {
        matches!(self.topology, Topology::Complete { .. })
    }

    /// How K was obtained, in words (None when given directly).
    pub fn contributions_note(&self) -> Option<String> {
        self.total_steps.map(|t| {
            format!(
                "--total-steps {t} over {} users: K = {} is the {PLAN_QUANTILE} quantile of a \
                 user's visit count (Binomial(T, 1/n)), charged to every user; a run's budget \
                 policy stops a user visited more often at its budget",
                self.topology.n(),
                self.contributions
            )
        })
    }

    /// The scenario as its JSON document.
    pub fn doc(&self) -> ScenarioDoc {
        ScenarioDoc {
            topology: self.source.clone(),
            complete: self.is_complete(),
            users: self.topology.n(),
            contributions_per_user: self.contributions,
            total_steps: self.total_steps,
            contributions_note: self.contributions_note(),
        }
    }

    /// One line for people.
    pub fn describe(&self) -> String {
        let graph = if self.is_complete() {
            format!("complete graph of {} users", self.topology.n())
        } else {
            format!("{} ({} users)", self.source, self.topology.n())
        };
        format!("{graph}, K = {} contributions per user", self.contributions)
    }

    /// The steps of the walk: `--total-steps`, or `n·K` for `--steps-per-user K` (the walk in
    /// which the mean user makes its K contributions).
    pub fn walk_steps(&self) -> u64 {
        self.total_steps
            .unwrap_or_else(|| self.contributions.saturating_mul(self.topology.n() as u64))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn flags() -> ScenarioFlags {
        ScenarioFlags {
            complete: Some(10),
            clip: 1.0,
            steps_per_user: Some(3),
            ..ScenarioFlags::default()
        }
    }

    #[test]
    fn exclusive_options_are_refused_by_name() {
        let cases = [
            ScenarioFlags {
                complete: None,
                ..flags()
            },
            ScenarioFlags {
                topology: Some("ring.toml".into()),
                ..flags()
            },
        ];
        for f in cases {
            assert!(matches!(f.query(), Err(QueryError::OneOf(s)) if s.contains("--complete")));
        }
        let f = ScenarioFlags {
            total_steps: Some(30),
            ..flags()
        };
        assert!(matches!(f.query(), Err(QueryError::OneOf(s)) if s.contains("--total-steps")));
        let f = ScenarioFlags {
            min_records: Some(5),
            ..flags()
        };
        assert!(matches!(f.query(), Err(QueryError::RecordLevelHalf)));
        let f = ScenarioFlags {
            gamma: Some(0.5),
            ..flags()
        };
        assert!(matches!(f.query(), Err(QueryError::Refused(_))));
        let f = ScenarioFlags {
            nodes: Some(5),
            ..flags()
        };
        assert!(matches!(f.query(), Err(QueryError::Refused(_))));
    }

    #[test]
    fn record_level_defaults_to_the_logistic_loss_and_gamma_one() {
        let f = ScenarioFlags {
            min_records: Some(100),
            feature_norm: Some(2.0),
            ..flags()
        };
        let q = f.query().unwrap();
        assert_eq!(
            q.record,
            Some(RecordLevel {
                min_records: 100,
                feature_norm: 2.0,
                loss: LossName::Logistic,
                gamma: 1.0
            })
        );
        let a = q.accounted().unwrap();
        // min(C, γ·G₂/m) = min(1, 2/100).
        assert_eq!(a.clip, 0.02);
        assert_eq!(a.unit(), "record-level");
        assert!(a.unit_note().is_some_and(|n| n.contains("= 0.02")));
    }

    #[test]
    fn total_steps_charge_the_visit_quantile_and_errors_chain_their_causes() {
        let f = ScenarioFlags {
            steps_per_user: None,
            total_steps: Some(1000),
            ..flags()
        };
        let s = f.query().unwrap().load().unwrap();
        assert!(s.contributions > 100 && s.total_steps == Some(1000));
        assert_eq!(s.walk_steps(), 1000);
        let e = ScenarioFlags {
            complete: None,
            topology: Some("no/such.toml".into()),
            ..flags()
        }
        .query()
        .unwrap()
        .load()
        .unwrap_err();
        assert_eq!(e.to_string(), "loading topology no/such.toml");
        let cause = std::error::Error::source(&e).map(ToString::to_string);
        assert!(
            cause.as_ref().is_some_and(|c| c.starts_with("cannot read")),
            "{cause:?}"
        );
    }
}
