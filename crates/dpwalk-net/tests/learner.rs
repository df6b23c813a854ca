//! The learner's durability: a node reopened after a crash at any point of a step finds its state
//! and ledger consistent, and re-handling the re-sent token gives the same result.

#![allow(clippy::expect_used, clippy::unwrap_used)]

use dpwalk_core::data::{Dataset, LabelKind};
use dpwalk_core::params::AdmmParams;
use dpwalk_core::problem::Problem;
use dpwalk_core::step::Algorithm;
use dpwalk_net::codec::Token;
use dpwalk_net::learner::{
    LEDGER_FILE, Learner, LearnerError, MAX_UNFLUSHED, NodeStep, Outcome, node_problem,
};
use dpwalk_net::run::Run;
use dpwalk_net::state::SLOT_FILES;
use dpwalk_privacy::ledger::{Budget, Ledger, LedgerVisit};
use libp2p_identity::Keypair;
use std::path::{Path, PathBuf};

const RUN_TEMPLATE: &str = r#"
run-id = "durable"
seed = 3
steps = 50
dimension = 3
[problem]
loss = "squared"
l1 = 0.01
[algorithm]
gamma = 1.0
lambda = 0.5
clip = 1.0
sigma = 0.5
[topology]
kind = "complete"
[[members]]
index = 0
peer-id = "MEMBER0"
[[members]]
index = 1
peer-id = "MEMBER1"
"#;

/// Member `i`'s key: fixed, so that the run file can name its PeerId.
fn key(i: u8) -> Keypair {
    Keypair::ed25519_from_bytes([i + 1; 32]).unwrap()
}

/// The run file, with the members' PeerIds.
fn run_text() -> String {
    RUN_TEMPLATE
        .replace("MEMBER0", &key(0).public().to_peer_id().to_base58())
        .replace("MEMBER1", &key(1).public().to_peer_id().to_base58())
}

fn data() -> Dataset {
    Dataset {
        features: vec![1.0, 0.5, -0.2, 0.3, -1.0, 0.8],
        labels: vec![0.7, -0.4],
        n_features: 3,
        label_kind: LabelKind::Real,
    }
}

/// The run, node 0's problem on its records, and the run's ADMM parameters.
fn node_zero() -> (Run, Problem, AdmmParams) {
    node_zero_of(&run_text())
}

fn node_zero_of(run: &str) -> (Run, Problem, AdmmParams) {
    let run = Run::parse(run, "test").unwrap();
    let problem = node_problem(&run, 0, data()).unwrap();
    let params = admm(&run);
    (run, problem, params)
}

/// The ADMM step of a run that gives σ.
fn admm(run: &Run) -> AdmmParams {
    let Some(Algorithm::Admm(params)) = run.algorithm() else {
        panic!("an ADMM run with sigma given")
    };
    params
}

fn token(seq: u64) -> Token {
    Token {
        run_id: "durable".into(),
        seq,
        w: vec![0.1, -0.2, 0.05],
    }
}

fn forwarded(outcome: Outcome) -> Token {
    match outcome {
        Outcome::Forward(c) => c.token,
        Outcome::Final(_) => panic!("not the end of the run"),
    }
}

/// Cuts the ledger's last record, a contribution's.
fn remove_last_record(ledger: &Path) {
    // A contribution's record (format 3) is len (4) + seq (8) + its Gaussian bound μ² (8) + one
    // f64 per order + crc (4).
    let orders = dpwalk_privacy::rdp::Orders::default_grid().as_slice().len() as u64;
    cut(ledger, 4 + 8 + 8 + 8 * orders + 4);
}

/// Cuts the ledger's last record, a noise-only visit's: len (4) + seq (8) + crc (4).
fn remove_last_noise_only_record(ledger: &Path) {
    cut(ledger, 4 + 8 + 4);
}

fn cut(ledger: &Path, record: u64) {
    let len = std::fs::metadata(ledger).unwrap().len();
    let f = std::fs::OpenOptions::new()
        .write(true)
        .open(ledger)
        .unwrap();
    f.set_len(len - record).unwrap();
}

#[test]
fn a_crash_between_commit_and_ledger_append_is_repaired() {
    let (run, problem, params) = node_zero();
    let prox = problem.local_prox(params.gamma()).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let open = || {
        Learner::open(
            &run,
            0,
            &key(0),
            &problem,
            NodeStep::Admm {
                prox: &prox,
                params,
            },
            dir.path(),
            &[],
        )
        .unwrap()
    };

    let mut a = open();
    let first = forwarded(a.receive(token(0), None).unwrap());
    let second = forwarded(a.receive(token(4), None).unwrap());
    let state = a.state().clone();
    drop(a);
    // The crash came after the state commit of step 4 and before its ledger append.
    remove_last_record(&dir.path().join(LEDGER_FILE));
    assert_eq!(
        Ledger::seqs(&dir.path().join(LEDGER_FILE)).unwrap(),
        vec![0]
    );

    let b = open();
    assert_eq!(b.state(), &state, "the state is intact");
    assert_eq!(
        Ledger::seqs(&dir.path().join(LEDGER_FILE)).unwrap(),
        vec![0, 4]
    );
    assert_eq!(b.state().outgoing.as_ref().unwrap().token, second);
    assert_ne!(first, second);
}

#[test]
fn a_machine_crash_that_loses_unflushed_records_is_repaired() {
    let (run, problem, params) = node_zero();
    let prox = problem.local_prox(params.gamma()).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let ledger = dir.path().join(LEDGER_FILE);
    let open = || {
        Learner::open(
            &run,
            0,
            &key(0),
            &problem,
            NodeStep::Admm {
                prox: &prox,
                params,
            },
            dir.path(),
            &[],
        )
        .unwrap()
    };

    let mut a = open();
    for seq in [0, 4, 8] {
        a.receive(token(seq), None).unwrap();
    }
    let state = a.state().clone();
    assert_eq!(
        state.unflushed_visits,
        [0, 4, 8].map(|seq| LedgerVisit {
            seq,
            contribution: true
        })
    );
    drop(a);
    // The machine went down before the ledger's file was flushed: its records are gone, the
    // committed state is not.
    for _ in 0..3 {
        remove_last_record(&ledger);
    }
    assert!(Ledger::seqs(&ledger).unwrap().is_empty());

    let b = open();
    assert_eq!(b.state(), &state, "the state is intact");
    assert_eq!(Ledger::seqs(&ledger).unwrap(), vec![0, 4, 8]);
    assert_eq!(b.state().contributions, 3);
}

#[test]
fn flushing_the_ledger_empties_the_list_and_the_list_stays_bounded() {
    let (run, problem, params) = node_zero_of(&run_text().replace("steps = 50", "steps = 500"));
    let prox = problem.local_prox(params.gamma()).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let ledger = dir.path().join(LEDGER_FILE);
    let mut a = Learner::open(
        &run,
        0,
        &key(0),
        &problem,
        NodeStep::Admm {
            prox: &prox,
            params,
        },
        dir.path(),
        &[],
    )
    .unwrap();
    a.receive(token(0), None).unwrap();
    a.flush_ledger().unwrap();
    assert!(a.state().unflushed_visits.is_empty());
    let mut seqs = vec![0];
    // More contributions than the list may hold: the learner flushes before it overflows.
    for seq in 1..=(2 * MAX_UNFLUSHED as u64 + 5) {
        a.receive(token(seq), None).unwrap();
        seqs.push(seq);
        assert!(a.state().unflushed_visits.len() <= MAX_UNFLUSHED);
        assert_eq!(
            a.state().unflushed_visits.last(),
            Some(&LedgerVisit {
                seq,
                contribution: true
            })
        );
    }
    assert_eq!(Ledger::seqs(&ledger).unwrap(), seqs);
    assert_eq!(a.state().contributions, seqs.len() as u64);
}

/// The state files of `dir`, read.
fn state_files(dir: &Path) -> Vec<(PathBuf, Vec<u8>)> {
    SLOT_FILES
        .iter()
        .map(|name| {
            let path = dir.join(name);
            let bytes = std::fs::read(&path).unwrap();
            (path, bytes)
        })
        .collect()
}

fn put_back(files: &[(PathBuf, Vec<u8>)]) {
    for (path, bytes) in files {
        std::fs::write(path, bytes).unwrap();
    }
}

/// A state put back from an older copy beside a newer ledger: a record is appended only after
/// its step's commit, so no crash does this. The node refuses to start, says what happened and
/// what to do, and changes nothing; with the matching state files back it opens again.
#[test]
fn a_state_restored_from_an_older_copy_is_refused() {
    let (run, problem, params) = node_zero();
    let prox = problem.local_prox(params.gamma()).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let ledger = dir.path().join(LEDGER_FILE);
    let open = || {
        Learner::open(
            &run,
            0,
            &key(0),
            &problem,
            NodeStep::Admm {
                prox: &prox,
                params,
            },
            dir.path(),
            &[],
        )
    };

    let mut a = open().unwrap();
    a.receive(token(0), None).unwrap();
    a.receive(token(4), None).unwrap();
    a.flush_ledger().unwrap();
    let copy = state_files(dir.path());
    for seq in [8, 12, 16] {
        a.receive(token(seq), None).unwrap();
    }
    a.flush_ledger().unwrap();
    a.receive(token(20), None).unwrap();
    let newest = a.state().clone();
    drop(a);
    let current = state_files(dir.path());
    let ledger_bytes = std::fs::read(&ledger).unwrap();

    put_back(&copy);
    let err = open().unwrap_err();
    match &err {
        LearnerError::RolledBack {
            records,
            ledger_last,
            contributions,
            state_last,
            ..
        } => assert_eq!(
            (*records, *ledger_last, *contributions, *state_last),
            (6, 20, 2, Some(4))
        ),
        other => panic!("expected a rolled-back state, got {other:?}"),
    }
    let message = err.to_string();
    for needle in [
        &format!(
            "the state in {} is older than its ledger",
            dir.path().display()
        ),
        "holds 6 contributions up to seq 20, the state knows of 2 up to seq 4",
        "restored from an older copy",
        "draw again the noise",
        "lose those steps from its privacy accounting",
        "Put back the state files (`state.0` and `state.1`) that go with this ledger",
        "start a new run (another `seed`)",
    ] {
        assert!(
            message.contains(needle),
            "{needle:?} missing from: {message}"
        );
    }
    assert_eq!(state_files(dir.path()), copy, "the refusal wrote the state");
    assert_eq!(
        std::fs::read(&ledger).unwrap(),
        ledger_bytes,
        "the refusal wrote the ledger"
    );

    // The state files removed altogether: the same refusal, for a state that handled nothing.
    for (path, _) in &copy {
        std::fs::remove_file(path).unwrap();
    }
    let message = open().unwrap_err().to_string();
    assert!(
        message.contains("the state knows of 0, and no seq handled"),
        "{message}"
    );

    // The state files that go with the ledger: the node resumes where it was.
    put_back(&current);
    let b = open().unwrap();
    assert_eq!(b.state(), &newest);
    assert_eq!(Ledger::seqs(&ledger).unwrap(), vec![0, 4, 8, 12, 16, 20]);
}

/// A ledger put back from an older copy under a newer state loses contributions from the
/// accounting: refused, with what happened.
#[test]
fn a_ledger_restored_from_an_older_copy_is_refused() {
    let (run, problem, params) = node_zero();
    let prox = problem.local_prox(params.gamma()).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let ledger = dir.path().join(LEDGER_FILE);
    let open = || {
        Learner::open(
            &run,
            0,
            &key(0),
            &problem,
            NodeStep::Admm {
                prox: &prox,
                params,
            },
            dir.path(),
            &[],
        )
    };

    let mut a = open().unwrap();
    a.receive(token(0), None).unwrap();
    a.flush_ledger().unwrap();
    let old_ledger = std::fs::read(&ledger).unwrap();
    a.receive(token(4), None).unwrap();
    a.receive(token(8), None).unwrap();
    a.flush_ledger().unwrap();
    // One more commit, so that the state no longer lists the flushed records' seqs.
    a.receive(token(12), None).unwrap();
    drop(a);
    std::fs::write(&ledger, &old_ledger).unwrap();
    match open() {
        Err(LearnerError::Inconsistent { message, .. }) => assert!(
            message.contains("the ledger holds 2 records for the state's 4 contributions")
                && message.contains("restored from an older copy")
                && message.contains("Put back the ledger that matches the state"),
            "{message}"
        ),
        other => panic!("expected an inconsistency, got {other:?}"),
    }
}

#[test]
fn a_crash_before_the_commit_replays_the_same_step() {
    let (run, problem, params) = node_zero();
    let prox = problem.local_prox(params.gamma()).unwrap();
    let (d1, d2) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let open = |d: &Path| {
        Learner::open(
            &run,
            0,
            &key(0),
            &problem,
            NodeStep::Admm {
                prox: &prox,
                params,
            },
            d,
            &[],
        )
        .unwrap()
    };

    // Node 1 takes steps 0 and 2 without trouble.
    let mut smooth = open(d1.path());
    smooth.receive(token(0), None).unwrap();
    let expected = forwarded(smooth.receive(token(2), None).unwrap());
    // Node 2 crashes while handling step 2 (before its commit): on restart it has only step 0,
    // and the sender re-sends step 2.
    let mut crashed = open(d2.path());
    crashed.receive(token(0), None).unwrap();
    drop(crashed);
    let mut restarted = open(d2.path());
    assert_eq!(restarted.state().last_seq, Some(0));
    let replayed = forwarded(restarted.receive(token(2), None).unwrap());
    let bits = |t: &Token| t.w.iter().map(|v| v.to_bits()).collect::<Vec<_>>();
    assert_eq!(bits(&replayed), bits(&expected));
    assert_eq!(restarted.state(), smooth.state());
    assert_eq!(
        Ledger::seqs(&d2.path().join(LEDGER_FILE)).unwrap(),
        vec![0, 2]
    );
}

#[test]
fn a_spent_budget_makes_a_noise_only_step() {
    let (run, problem, params) = node_zero();
    let prox = problem.local_prox(params.gamma()).unwrap();
    let dir = tempfile::tempdir().unwrap();
    // σ = 0.5, C = 1: one contribution already costs more than ε = 1 locally.
    let budget = Budget::new(1.0, 1e-6).unwrap();
    let mut l = Learner::open(
        &run,
        0,
        &key(0),
        &problem,
        NodeStep::Admm {
            prox: &prox,
            params,
        },
        dir.path(),
        &[budget],
    )
    .unwrap();
    let t = token(0);
    let out = forwarded(l.receive(t.clone(), None).unwrap());
    assert_eq!(out.seq, 1);
    assert_eq!(l.state().contributions, 0);
    assert_eq!(l.state().skipped, 1);
    // Noise without data: u_i moves by λση and w by the same over n, so w stays the average.
    let du = l.state().u.clone();
    assert!(
        du.iter().all(|d| *d != 0.0),
        "a noise-only step adds noise: {du:?}"
    );
    let n = run.members().len() as f64;
    for ((after, before), d) in out.w.iter().zip(&t.w).zip(&du) {
        assert!(((after - before) * n - d).abs() <= 1e-12 * d.abs().max(1.0));
    }
    assert!(
        Ledger::seqs(&dir.path().join(LEDGER_FILE))
            .unwrap()
            .is_empty()
    );
    // The visit is recorded, without a charge.
    assert_eq!(
        Ledger::visits(&dir.path().join(LEDGER_FILE)).unwrap(),
        [LedgerVisit {
            seq: 0,
            contribution: false
        }]
    );
}

/// The ledger's visits as `(seq, contribution)`.
fn visits(ledger: &Path) -> Vec<(u64, bool)> {
    Ledger::visits(ledger)
        .unwrap()
        .iter()
        .map(|v| (v.seq, v.contribution))
        .collect()
}

/// A noise-only visit is as durable as a contribution: a crash after its commit and before its
/// ledger record (or before the ledger's flush) is repaired when the node reopens, and a ledger
/// that lacks one the state knows of is refused.
#[test]
fn a_crash_after_a_noise_only_visits_commit_is_repaired() {
    let (run, problem, params) = node_zero();
    let prox = problem.local_prox(params.gamma()).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let ledger = dir.path().join(LEDGER_FILE);
    // σ = 0.5, C = 1: with ε = 1 the budget is spent from the start.
    let spent = [Budget::new(1.0, 1e-6).unwrap()];
    let open = |budgets: &[Budget]| {
        Learner::open(
            &run,
            0,
            &key(0),
            &problem,
            NodeStep::Admm {
                prox: &prox,
                params,
            },
            dir.path(),
            budgets,
        )
    };
    // A contribution without a budget, then noise-only visits under one.
    let mut a = open(&[]).unwrap();
    a.receive(token(0), None).unwrap();
    a.flush_ledger().unwrap();
    drop(a);
    let mut a = open(&spent).unwrap();
    a.receive(token(4), None).unwrap();
    a.receive(token(8), None).unwrap();
    let state = a.state().clone();
    assert_eq!((state.contributions, state.skipped), (1, 2));
    // The reopened state still listed contribution 0 (its flush came after its last commit).
    assert_eq!(
        state.unflushed_visits,
        [(0, true), (4, false), (8, false)]
            .map(|(seq, contribution)| LedgerVisit { seq, contribution })
    );
    assert_eq!(a.ledger_noise_only(), 2);
    drop(a);
    let all = vec![(0, true), (4, false), (8, false)];
    assert_eq!(visits(&ledger), all);

    // A process crash after the commit of visit 8 and before its ledger append.
    remove_last_noise_only_record(&ledger);
    assert_eq!(visits(&ledger), all[..2]);
    let b = open(&spent).unwrap();
    assert_eq!(b.state(), &state, "the state is intact");
    assert_eq!(
        visits(&ledger),
        all,
        "the noise-only record is written again"
    );
    drop(b);

    // A machine crash before the ledger's flush: both noise-only records are lost.
    remove_last_noise_only_record(&ledger);
    remove_last_noise_only_record(&ledger);
    assert_eq!(visits(&ledger), all[..1]);
    let b = open(&spent).unwrap();
    assert_eq!(visits(&ledger), all);
    assert_eq!(b.ledger_records(), 1);
    drop(b);

    // Once flushed (and the list dropped by a later commit), a ledger without the state's
    // noise-only visits was not left by a crash: refused.
    let mut c = open(&spent).unwrap();
    c.flush_ledger().unwrap();
    c.receive(token(12), None).unwrap();
    c.flush_ledger().unwrap();
    c.receive(token(16), None).unwrap();
    drop(c);
    remove_last_noise_only_record(&ledger);
    remove_last_noise_only_record(&ledger);
    assert_eq!(visits(&ledger), all);
    match open(&spent) {
        Err(LearnerError::Inconsistent { message, .. }) => assert!(
            message.contains("the ledger holds 3 noise-only visits for the state's 4"),
            "{message}"
        ),
        other => panic!("expected an inconsistency, got {other:?}"),
    }
}

#[test]
fn the_last_step_publishes_the_final_model() {
    let (run, problem, params) = node_zero();
    let prox = problem.local_prox(params.gamma()).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let mut l = Learner::open(
        &run,
        0,
        &key(0),
        &problem,
        NodeStep::Admm {
            prox: &prox,
            params,
        },
        dir.path(),
        &[],
    )
    .unwrap();
    match l.receive(token(49), None).unwrap() {
        Outcome::Final(model) => {
            assert_eq!(model.seq, 50);
            assert_eq!(model.z.len(), 3);
            // Sealed by this member for this run: any member can check who made it.
            assert_eq!(
                dpwalk_net::seal::maker(&model, &run.hash().0),
                Ok(key(0).public().to_peer_id())
            );
        }
        Outcome::Forward(_) => panic!("step 49 of 50 is the last"),
    }
    assert!(l.state().outgoing.is_none());
    assert!(l.state().final_model.is_some());
}

/// A node whose key is not the one the run file names for its index is refused at open: the
/// model it sealed would name another member.
#[test]
fn another_members_key_is_refused_at_open() {
    let (run, problem, params) = node_zero();
    let prox = problem.local_prox(params.gamma()).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let e = Learner::open(
        &run,
        0,
        &key(1),
        &problem,
        NodeStep::Admm {
            prox: &prox,
            params,
        },
        dir.path(),
        &[],
    )
    .unwrap_err();
    assert!(
        matches!(e, LearnerError::NotThisMember { index: 0, .. }),
        "{e}"
    );
}

/// A run whose `dimension` is not the data's is refused when the learner opens, with both
/// numbers, before any state is written (it used to panic in the prox at the first step).
#[test]
fn a_run_dimension_that_is_not_the_datas_is_refused_at_open() {
    let run = Run::parse(
        &run_text().replace("dimension = 3", "dimension = 5"),
        "test",
    )
    .unwrap();
    let problem = node_problem(&run, 0, data()).unwrap();
    let params = admm(&run);
    let prox = problem.local_prox(params.gamma()).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let state = dir.path().join("state");
    let err = Learner::open(
        &run,
        0,
        &key(0),
        &problem,
        NodeStep::Admm {
            prox: &prox,
            params,
        },
        &state,
        &[],
    )
    .unwrap_err();
    assert!(
        matches!(err, LearnerError::Dimension { run: 5, data: 3 }),
        "{err}"
    );
    assert_eq!(
        err.to_string(),
        "the run's dimension is 5, but the node's data make a model of dimension 3"
    );
    assert!(!state.exists(), "state written before the refusal");
}

/// The models recorded every `eval-every` hops: `z = prox(w)` of the forwarded tokens whose seq is
/// a multiple, written after the hop; the walk itself (tokens, state) is the same with or without
/// them; a crash before the write is repaired from the durable outgoing token, once.
#[test]
fn evaluation_points_record_the_forwarded_model_without_changing_the_walk() {
    use dpwalk_core::step::Algorithm;
    use dpwalk_net::learner::EVALS_FILE;
    let (run, problem, params) = node_zero();
    let prox = problem.local_prox(params.gamma()).unwrap();
    let (plain_dir, eval_dir) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let mut plain = Learner::open(
        &run,
        0,
        &key(0),
        &problem,
        NodeStep::Admm {
            prox: &prox,
            params,
        },
        plain_dir.path(),
        &[],
    )
    .unwrap();
    let open = || {
        Learner::open(
            &run,
            0,
            &key(0),
            &problem,
            NodeStep::Admm {
                prox: &prox,
                params,
            },
            eval_dir.path(),
            &[],
        )
        .unwrap()
        .with_evals(2, eval_dir.path())
        .unwrap()
    };
    let mut evals = open();
    let mut expected = String::new();
    for seq in 0..6 {
        let a = forwarded(plain.receive(token(seq), None).unwrap());
        let b = forwarded(evals.receive(token(seq), None).unwrap());
        assert_eq!(a, b, "the same walk at seq {seq}");
        assert_eq!(plain.state(), evals.state());
        if b.seq.is_multiple_of(2) {
            let mut z = vec![0.0; b.w.len()];
            Algorithm::Admm(params).model(problem.regularizer(), &b.w, &mut z);
            expected.push_str(&b.seq.to_string());
            for v in &z {
                expected.push_str(&format!(",{v:?}"));
            }
            expected.push('\n');
        }
    }
    let file = eval_dir.path().join(EVALS_FILE);
    assert!(!file.exists(), "nothing written on the hop itself");
    evals.write_evals().unwrap();
    assert_eq!(std::fs::read_to_string(&file).unwrap(), expected);
    // Seq 6 → 7 is no evaluation point; 7 → 8 is, and the process dies before writing it.
    evals.receive(token(6), None).unwrap();
    let last = forwarded(evals.receive(token(7), None).unwrap());
    assert_eq!(last.seq, 8);
    drop(evals);
    let mut again = open();
    again.write_evals().unwrap();
    let text = std::fs::read_to_string(&file).unwrap();
    let seqs: Vec<&str> = text.lines().map(|l| l.split(',').next().unwrap()).collect();
    assert_eq!(seqs, ["2", "4", "6", "8"]);
    // Reopened once more: seq 8 is there already, nothing is added.
    drop(again);
    open().write_evals().unwrap();
    assert_eq!(std::fs::read_to_string(&file).unwrap(), text);
}

/// A learner given another step than the run file's (another kind, or other parameters) is
/// refused at open, naming both: it would leave the walk the other members make.
#[test]
fn a_step_that_is_not_the_runs_is_refused_at_open() {
    let (run, problem, params) = node_zero();
    let dir = tempfile::tempdir().unwrap();
    let sgd = dpwalk_core::params::SgdParams::new(0.1, params.sigma(), params.clip()).unwrap();
    let open = |step| Learner::open(&run, 0, &key(0), &problem, step, dir.path(), &[]);
    let err = open(NodeStep::Sgd(sgd)).unwrap_err();
    assert!(matches!(err, LearnerError::Step { .. }), "{err}");
    assert!(err.to_string().contains("Sgd"), "{err}");
    let other = AdmmParams::new(0.5, params.relaxation(), params.sigma(), params.clip()).unwrap();
    let prox = problem.local_prox(other.gamma()).unwrap();
    let err = open(NodeStep::Admm {
        prox: &prox,
        params: other,
    })
    .unwrap_err();
    assert!(matches!(err, LearnerError::Step { .. }), "{err}");
    // No state was written.
    assert!(!dir.path().join(LEDGER_FILE).exists());
}

/// A DP-SGD learner: its step is the walk's DP-SGD step (the token's `w` is the model, no
/// private state: `u_i` stays zero), charged and recorded like an ADMM contribution.
#[test]
fn a_dp_sgd_learner_steps_without_private_state() {
    let text = run_text().replace(
        "gamma = 1.0\nlambda = 0.5\n",
        "kind = \"dp-sgd\"\nlr = 0.1\n",
    );
    let run = Run::parse(&text, "test").unwrap();
    let problem = node_problem(&run, 0, data()).unwrap();
    let Some(Algorithm::Sgd(params)) = run.algorithm() else {
        panic!("a DP-SGD run: {:?}", run.algorithm())
    };
    let dir = tempfile::tempdir().unwrap();
    let mut l = Learner::open(
        &run,
        0,
        &key(0),
        &problem,
        NodeStep::Sgd(params),
        dir.path(),
        &[],
    )
    .unwrap();
    let sent = forwarded(l.receive(token(0), None).unwrap());
    assert_ne!(sent.w, token(0).w);
    assert!(l.state().u.iter().all(|&u| u == 0.0), "{:?}", l.state().u);
    assert_eq!(l.state().contributions, 1);
    l.flush_ledger().unwrap();
    assert_eq!(
        Ledger::seqs(&dir.path().join(LEDGER_FILE)).unwrap(),
        vec![0]
    );
    // The same step as the shared code's, from the node's own stream.
    let mut w = token(0).w;
    let mut rng = dpwalk_core::rng::node_rng(run.seed(), 0);
    let mut scratch = dpwalk_core::step::StepScratch::new(3, Default::default());
    dpwalk_core::step::sgd_step(&problem, &params, 0, &mut w, &mut rng, &mut scratch).unwrap();
    let bits = |v: &[f64]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
    assert_eq!(bits(&sent.w), bits(&w));
}
