//! Durable node state: round trip, fresh directory, torn and damaged records detected at every
//! byte, a crash mid-commit leaving the previous state, states of other runs refused, and a
//! directory already open refused.

#![allow(clippy::expect_used, clippy::unwrap_used)]

use dpwalk_net::codec::Token;
use dpwalk_net::run::RunHash;
use dpwalk_net::state::{Custody, LOCK_FILE, NodeState, SLOT_FILES, StateDir, StateError};
use dpwalk_privacy::ledger::LedgerVisit;
use libp2p_identity::PeerId;

fn state(seq: u64) -> NodeState {
    NodeState {
        run_hash: [3; 32],
        u: vec![0.1, -0.0, f64::MIN_POSITIVE, 1e308],
        rng_word_pos: (1u128 << 70) + seq as u128,
        last_seq: Some(seq),
        outgoing: Some(Custody {
            to: PeerId::random(),
            token: Token {
                run_id: "demo".into(),
                seq,
                w: vec![0.5, 2.0_f64.powi(-1074), -1.0, 3.25],
            },
        }),
        contributions: seq / 2,
        clipped: seq / 4,
        skipped: 1,
        unflushed_visits: vec![
            LedgerVisit {
                seq: seq.saturating_sub(3),
                contribution: true,
            },
            LedgerVisit {
                seq: seq.saturating_sub(1),
                contribution: false,
            },
        ],
        predecessor: Some(PeerId::random()),
        backup: None,
        final_model: None,
    }
}

fn bits(v: &[f64]) -> Vec<u64> {
    v.iter().map(|x| x.to_bits()).collect()
}

#[test]
fn fresh_directory_loads_none() {
    let dir = tempfile::tempdir().unwrap();
    let states = StateDir::open(&dir.path().join("a/b")).unwrap();
    assert!(states.load().unwrap().is_none());
    let fresh = NodeState::fresh(RunHash([1; 32]), 5);
    assert_eq!(fresh.u, vec![0.0; 5]);
    assert_eq!((fresh.rng_word_pos, fresh.last_seq), (0, None));
    assert!(fresh.outgoing.is_none());
}

#[test]
fn round_trip_is_exact() {
    let dir = tempfile::tempdir().unwrap();
    let mut states = StateDir::open(dir.path()).unwrap();
    // Custody copies are written before validation would ever see them again: keep even a NaN's
    // payload bit for bit.
    let mut a = state(7);
    if let Some(c) = a.outgoing.as_mut() {
        c.token.w[1] = f64::from_bits(0x7ff8_0000_0000_0001);
    }
    states.commit(&a).unwrap();
    let got = states.load().unwrap().unwrap();
    assert_eq!(bits(&got.u), bits(&a.u));
    let (got_out, a_out) = (got.outgoing.as_ref().unwrap(), a.outgoing.as_ref().unwrap());
    assert_eq!(bits(&got_out.token.w), bits(&a_out.token.w));
    assert_eq!(got_out.to, a_out.to);
    assert_eq!(
        (got.rng_word_pos, got.last_seq, got.run_hash),
        (a.rng_word_pos, a.last_seq, a.run_hash)
    );
    // Later commits replace it, alternating slots; shorter records over longer ones leave a stale
    // tail that is ignored.
    for seq in 8..12 {
        let mut b = state(seq);
        b.outgoing = None;
        states.commit(&b).unwrap();
        assert_eq!(states.load().unwrap().unwrap(), b);
        // A reopened directory continues from the newest slot.
        drop(states);
        states = StateDir::open(dir.path()).unwrap();
        assert_eq!(states.load().unwrap().unwrap(), b);
    }
}

/// The bytes of slot `i`.
fn slot(dir: &std::path::Path, i: usize) -> Vec<u8> {
    std::fs::read(dir.join(SLOT_FILES[i])).unwrap()
}

#[test]
fn a_lone_torn_or_damaged_record_is_refused_at_every_byte() {
    let dir = tempfile::tempdir().unwrap();
    let mut states = StateDir::open(dir.path()).unwrap();
    states.commit(&state(1)).unwrap();
    let path = dir.path().join(SLOT_FILES[0]);
    let full = std::fs::read(&path).unwrap();
    // Cut to nothing, the first commit never happened; cut anywhere else, the record is torn.
    std::fs::write(&path, []).unwrap();
    assert!(states.load().unwrap().is_none());
    for cut in 1..full.len() {
        std::fs::write(&path, &full[..cut]).unwrap();
        match states.load() {
            Err(StateError::Torn { len, .. }) => assert_eq!(len, cut as u64),
            other => panic!("cut at {cut}: {other:?}"),
        }
    }
    for i in 0..full.len() {
        let mut bad = full.clone();
        bad[i] ^= 0x10;
        std::fs::write(&path, &bad).unwrap();
        let result = states.load();
        assert!(
            matches!(
                result,
                Err(StateError::BadMagic { .. }
                    | StateError::OtherVersion { .. }
                    | StateError::Torn { .. }
                    | StateError::Checksum { .. })
            ),
            "byte {i}: {result:?}"
        );
    }
}

#[test]
fn a_crash_mid_commit_keeps_the_previous_state() {
    let dir = tempfile::tempdir().unwrap();
    let mut states = StateDir::open(dir.path()).unwrap();
    for seq in 1..=3 {
        states.commit(&state(seq)).unwrap();
    }
    // Slot 0 holds seq 3 (generation 3) over seq 1; slot 1 holds seq 2. The commit of seq 4
    // writes slot 1: tear it at every length, or flip any byte, and the state is seq 3's.
    let before = states.load().unwrap().unwrap();
    assert_eq!(before.last_seq, Some(3));
    let old = slot(dir.path(), 1);
    drop(states);
    let next = {
        let mut s = StateDir::open(dir.path()).unwrap();
        s.commit(&state(4)).unwrap();
        slot(dir.path(), 1)
    };
    let states = StateDir::open(dir.path()).unwrap();
    let path = dir.path().join(SLOT_FILES[1]);
    for written in 0..next.len() {
        let mut torn = old.clone();
        torn.resize(torn.len().max(written), 0);
        torn[..written].copy_from_slice(&next[..written]);
        if torn == next {
            continue; // the bytes left unwritten were already the new ones
        }
        std::fs::write(&path, &torn).unwrap();
        assert_eq!(states.load().unwrap().unwrap(), before, "{written} bytes");
    }
    for i in 0..next.len() {
        let mut bad = next.clone();
        bad[i] ^= 0x01;
        std::fs::write(&path, &bad).unwrap();
        assert_eq!(states.load().unwrap().unwrap(), before, "byte {i}");
    }
    // The next commit goes through despite the wreck, and wins.
    drop(states);
    let mut states = StateDir::open(dir.path()).unwrap();
    let after = state(4);
    states.commit(&after).unwrap();
    assert_eq!(states.load().unwrap().unwrap(), after);
}

#[test]
fn states_of_other_runs_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let mut states = StateDir::open(dir.path()).unwrap();
    assert!(states.load_for(RunHash([9; 32])).unwrap().is_none());
    states.commit(&state(1)).unwrap();
    assert!(states.load_for(RunHash([3; 32])).unwrap().is_some());
    assert!(matches!(
        states.load_for(RunHash([9; 32])),
        Err(StateError::OtherRun { found, .. }) if found == RunHash([3; 32])
    ));
}

#[test]
fn a_file_of_something_else_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let states = StateDir::open(dir.path()).unwrap();
    std::fs::write(
        dir.path().join(SLOT_FILES[1]),
        b"just some text, long enough",
    )
    .unwrap();
    assert!(matches!(states.load(), Err(StateError::BadMagic { .. })));
}

#[test]
fn a_state_of_another_format_version_says_so() {
    let dir = tempfile::tempdir().unwrap();
    let states = StateDir::open(dir.path()).unwrap();
    // Format 4 (the last one before noise-only visits were listed among the unflushed records)
    // and an older one.
    for magic in [b"DPWSTAT4", b"DPWSTAT3"] {
        let mut old = magic.to_vec();
        old.extend_from_slice(&[0; 40]);
        std::fs::write(dir.path().join(SLOT_FILES[0]), &old).unwrap();
        let e = states.load().unwrap_err();
        assert!(matches!(e, StateError::OtherVersion { .. }), "{e:?}");
        assert!(e.to_string().contains("another version of dpwalk"), "{e}");
    }
}

#[test]
fn a_directory_held_by_another_state_dir_is_refused_until_it_is_closed() {
    let dir = tempfile::tempdir().unwrap();
    let mut first = StateDir::open(dir.path()).unwrap();
    first.commit(&state(1)).unwrap();
    let pid = std::process::id();
    assert_eq!(
        std::fs::read_to_string(dir.path().join(LOCK_FILE)).unwrap(),
        format!("{pid}\n")
    );
    // The lock is per open file: a second opening, even in this process, is refused, names the
    // directory and the holder's PID, and leaves the holder's state and lock file alone.
    let err = StateDir::open(dir.path()).unwrap_err();
    match &err {
        StateError::Locked { dir: d, pid: p } => {
            assert_eq!(d, dir.path());
            assert_eq!(*p, Some(pid));
        }
        other => panic!("expected Locked, got {other:?}"),
    }
    let message = err.to_string();
    assert!(
        message.contains(&format!(
            "{} is in use by another process (pid {pid})",
            dir.path().display()
        )) && message.contains("Stop that node first")
            && message.contains("`state-dir`"),
        "{message}"
    );
    first.commit(&state(2)).unwrap();
    assert_eq!(first.load().unwrap().unwrap().last_seq, Some(2));
    // Closed, the directory opens again, with the state the holder left.
    drop(first);
    let again = StateDir::open(dir.path()).unwrap();
    assert_eq!(again.load().unwrap().unwrap().last_seq, Some(2));
}
