//! Custody's transitions, one by one, with explicit time.

use super::*;

const HANDOFF: Duration = Duration::from_secs(3);
const RESUME: Duration = Duration::from_secs(5);
const STEPS: u64 = 10;

/// A node (member 0) of a run of `n` members, started at `t0`, none verified yet; the members
/// at indices `relayed` are listed at a relayed address.
fn fresh(n: usize, relayed: &[usize]) -> (Machine<u64>, Vec<PeerId>, Instant) {
    let members: Vec<PeerId> = (0..n).map(|_| PeerId::random()).collect();
    let t0 = Instant::now();
    let m = Machine::new(
        Config {
            handoff: HANDOFF,
            resume: RESUME,
            steps: STEPS,
            members: members.clone(),
            me: members[0],
            relayed: relayed.iter().map(|&i| members[i]).collect(),
            keep_path: false,
        },
        t0,
    );
    (m, members, t0)
}

/// A node of a run of `n` members, started at `t0`, with every other member verified.
fn machine(n: usize) -> (Machine<u64>, Vec<PeerId>, Instant) {
    let (mut m, members, t0) = fresh(n, &[]);
    for p in &members[1..] {
        m.verified(*p, t0);
    }
    (m, members, t0)
}

fn ms(n: u64) -> Duration {
    Duration::from_millis(n)
}

fn all(_: &PeerId) -> bool {
    true
}

fn none(_: &PeerId) -> bool {
    false
}

fn reroute_avoiding(peers: &[PeerId]) -> Vec<Action> {
    vec![Action::Reroute {
        avoid: peers.iter().copied().collect(),
    }]
}

fn rerouted(actions: &[Action]) -> bool {
    actions.iter().any(|a| matches!(a, Action::Reroute { .. }))
}

/// `m` holds token `seq` for `to` and sent it as request `id` at `t`.
fn sent(m: &mut Machine<u64>, seq: u64, to: PeerId, id: u64, t: Instant) {
    assert_eq!(m.stepped(Some((seq, to)), t), None);
    assert_eq!(m.poll(t, all), vec![Action::Send { to, seq }]);
    m.sent(id);
}

#[test]
fn a_stepped_token_is_sent_once_and_its_ack_makes_it_the_backup() {
    let (mut m, p, t0) = machine(3);
    assert_eq!(m.next_deadline(t0), None);
    sent(&mut m, 1, p[1], 7, t0);
    // In flight: nothing more to do until the answer or the hand-off timeout.
    assert!(m.poll(t0 + ms(1), all).is_empty());
    assert_eq!(m.next_deadline(t0), Some(t0 + HANDOFF));
    assert!(!m.answered(8), "another request");
    assert!(m.answered(7));
    m.acknowledged(1, t0 + ms(5));
    assert!(m.poll(t0 + ms(5), all).is_empty());
    // The backup waits for its release until the resume timeout.
    assert_eq!(m.next_deadline(t0 + ms(5)), Some(t0 + ms(5) + RESUME));
    m.released(1);
    assert_eq!(m.next_deadline(t0 + ms(5)), None);
    assert!(m.poll(t0 + ms(5) + RESUME, all).is_empty());
    assert_eq!(m.handoff_timeouts(), 0);
}

#[test]
fn a_release_of_another_token_keeps_the_backup() {
    let (mut m, p, t0) = machine(3);
    sent(&mut m, 1, p[1], 7, t0);
    m.answered(7);
    m.acknowledged(1, t0);
    m.released(0);
    assert_eq!(m.next_deadline(t0), Some(t0 + RESUME));
}

#[test]
fn an_unreleased_backup_resumes_the_walk_elsewhere_and_its_receiver_is_down() {
    let (mut m, p, t0) = machine(3);
    sent(&mut m, 1, p[1], 7, t0);
    m.answered(7);
    m.acknowledged(1, t0);
    assert!(m.poll(t0 + RESUME - ms(1), all).is_empty());
    let t = t0 + RESUME;
    assert_eq!(m.poll(t, all), vec![Action::Resume { gone: p[1] }]);
    // The receiver is connected and verified: avoided for a while, then given another chance.
    assert!(m.is_down(&p[1], t));
    assert!(!m.is_down(&p[1], t + AVOID_FOR));
    // The resumed token is handed on like any other; the backup is gone.
    m.handing(Some((1, p[2])), t);
    assert_eq!(m.poll(t, all), vec![Action::Send { to: p[2], seq: 1 }]);
    m.sent(8);
    m.answered(8);
    m.acknowledged(1, t + ms(1));
    assert_eq!(m.next_deadline(t + ms(1)), Some(t + ms(1) + RESUME));
}

#[test]
fn the_backup_of_the_last_hop_is_never_resumed() {
    let (mut m, p, t0) = machine(3);
    sent(&mut m, STEPS - 1, p[1], 7, t0);
    m.answered(7);
    m.acknowledged(STEPS - 1, t0);
    assert!(m.poll(t0 + RESUME, all).is_empty());
    assert!(m.poll(t0 + RESUME * 5, all).is_empty());
    assert!(!m.is_down(&p[1], t0 + RESUME));
    assert_eq!(m.next_deadline(t0 + RESUME), None, "the wait is over");
}

#[test]
fn a_new_token_drops_the_backup() {
    let (mut m, p, t0) = machine(3);
    sent(&mut m, 1, p[1], 7, t0);
    m.answered(7);
    m.acknowledged(1, t0);
    // The walk came back and ended here.
    assert_eq!(m.stepped(None, t0 + ms(1)), None);
    assert!(m.poll(t0 + RESUME * 2, all).is_empty());
    assert_eq!(m.next_deadline(t0 + ms(1)), None);
}

#[test]
fn a_failed_request_retries_the_same_receiver_after_a_pause() {
    let (mut m, p, t0) = machine(3);
    sent(&mut m, 1, p[1], 7, t0);
    assert!(!m.failed(9, t0 + ms(10)), "not the token's request");
    assert!(m.failed(7, t0 + ms(10)));
    assert_eq!(
        m.next_deadline(t0 + ms(10)),
        Some(t0 + ms(10) + RETRY_PAUSE)
    );
    assert!(m.poll(t0 + ms(10) + RETRY_PAUSE - ms(1), all).is_empty());
    assert_eq!(
        m.poll(t0 + ms(10) + RETRY_PAUSE, all),
        vec![Action::Send { to: p[1], seq: 1 }]
    );
}

/// Issue 26: a member started late. Node 0's dials to it failed before it started; it verifies,
/// and then a token arrives whose sender still advises it down from its own failed dial before
/// that: the member is neither avoided here nor advised on.
#[test]
fn a_member_that_started_late_is_not_avoided_for_what_came_before_it_verified() {
    let (mut m, p, t0) = fresh(3, &[]);
    m.verified(p[1], t0);
    m.reached();
    let t = t0 + HANDOFF + ms(1);
    m.dial_failed(p[2], t);
    assert!(m.is_down(&p[2], t));
    // Member 2 starts and verifies here 2 s later; member 1's advice comes with a token after
    // that, from its own failed dial 3 s before.
    m.verified(p[2], t + ms(2000));
    let stale = [Avoided {
        member: 2,
        for_ms: 7000,
    }];
    m.heard(&p[1], &stale, t + ms(2500));
    assert!(!m.is_down(&p[2], t + ms(2500)));
    assert!(m.avoid(t + ms(2500)).is_empty());
    assert!(m.advice(&p[1], t + ms(2500)).is_empty());
    assert_eq!(m.stepped(Some((1, p[2])), t + ms(2500)), None);
    assert_eq!(
        m.poll(t + ms(2500), all),
        vec![Action::Send { to: p[2], seq: 1 }]
    );
    // A failure seen after it verified is news again.
    let fresh_news = [Avoided {
        member: 2,
        for_ms: 9900,
    }];
    m.heard(&p[1], &fresh_news, t + ms(2600));
    assert!(m.is_down(&p[2], t + ms(2600)));
}

#[test]
fn a_timeout_here_is_advised_to_the_next_receiver_and_ages() {
    let (mut m, p, t0) = machine(4);
    sent(&mut m, 1, p[1], 7, t0);
    assert_eq!(m.poll(t0 + HANDOFF, all), reroute_avoiding(&[p[1]]));
    let t = t0 + HANDOFF;
    let full = AVOID_FOR.as_millis() as u32;
    let advised = |member, for_ms| vec![Avoided { member, for_ms }];
    assert_eq!(m.advice(&p[2], t), advised(1, full));
    assert_eq!(m.advice(&p[2], t + ms(4000)), advised(1, full - 4000));
    assert!(m.advice(&p[2], t + AVOID_FOR).is_empty());
    // Never to the member itself.
    assert!(m.advice(&p[1], t).is_empty());
}

#[test]
fn a_member_advised_down_is_not_waited_for_until_the_advice_runs_out() {
    let (mut m, p, t0) = machine(4);
    // Advice heard 6 s after every member verified, of a failure seen 5 s ago (after it).
    let t0 = t0 + ms(6000);
    m.heard(
        &p[1],
        &[Avoided {
            member: 2,
            for_ms: 5000,
        }],
        t0,
    );
    // Drawn while advised down: re-routed at once, around it, with no timeout.
    assert_eq!(
        m.stepped(Some((1, p[2])), t0 + ms(10)),
        Some(Action::Reroute {
            avoid: [p[2]].into_iter().collect()
        })
    );
    assert_eq!(m.handoff_timeouts(), 0);
    // Passed on for what remains.
    assert_eq!(m.advice(&p[3], t0 + ms(1000))[0].for_ms, 4000);
    // After the advice: an ordinary receiver again.
    let t = t0 + ms(5000);
    assert_eq!(m.stepped(Some((2, p[2])), t), None);
    assert_eq!(m.poll(t, all), vec![Action::Send { to: p[2], seq: 2 }]);
}

#[test]
fn advice_about_this_node_is_ignored_and_a_hello_clears_advice() {
    let (mut m, p, t0) = machine(3);
    let t0 = t0 + ms(6000);
    let both = [0, 2].map(|member| Avoided {
        member,
        for_ms: 5000,
    });
    m.heard(&p[1], &both, t0);
    assert_eq!(
        m.advice(&p[1], t0),
        vec![Avoided {
            member: 2,
            for_ms: 5000
        }]
    );
    assert!(m.is_down(&p[2], t0));
    m.verified(p[2], t0);
    assert!(!m.is_down(&p[2], t0));
    assert!(m.advice(&p[1], t0).is_empty());
}

#[test]
fn a_receiver_that_does_not_answer_in_time_is_down_and_the_token_rerouted() {
    let (mut m, p, t0) = machine(3);
    sent(&mut m, 1, p[1], 7, t0);
    assert!(m.poll(t0 + HANDOFF - ms(1), all).is_empty());
    assert_eq!(m.poll(t0 + HANDOFF, all), reroute_avoiding(&[p[1]]));
    assert_eq!(m.handoff_timeouts(), 1);
    // A late answer to the abandoned request is not the token's.
    assert!(!m.answered(7));
    // The next hand-off waits twice as long (a failure in a row), then four times.
    let t = t0 + HANDOFF;
    m.handing(Some((1, p[2])), t);
    assert_eq!(m.poll(t, all), vec![Action::Send { to: p[2], seq: 1 }]);
    m.sent(8);
    assert_eq!(m.next_deadline(t), Some(t + HANDOFF * 2));
    assert_eq!(
        m.poll(t + HANDOFF * 2, all),
        reroute_avoiding(&[p[1], p[2]])
    );
    m.handing(Some((1, p[1])), t + HANDOFF * 2);
    assert_eq!(
        m.poll(t + HANDOFF * 2, all),
        vec![Action::Send { to: p[1], seq: 1 }]
    );
    m.sent(9);
    assert!(m.poll(t + HANDOFF * 6 - ms(1), all).is_empty());
    // An acknowledgement ends the series.
    assert!(m.answered(9));
    m.acknowledged(1, t + HANDOFF * 6 - ms(1));
    m.released(1);
    let t = t + HANDOFF * 6;
    sent(&mut m, 4, p[2], 10, t);
    assert!(m.poll(t + HANDOFF - ms(1), all).is_empty());
    assert!(rerouted(&m.poll(t + HANDOFF, all)));
}

#[test]
fn the_patience_doubles_up_to_eight_times_the_timeout() {
    let (mut m, p, t0) = machine(3);
    let mut t = t0;
    for k in 0..5u32 {
        sent(&mut m, 1, p[1], u64::from(k), t);
        let patience = HANDOFF * (1 << k.min(3));
        assert_eq!(m.next_deadline(t), Some(t + patience), "failure {k}");
        t += patience;
        assert!(matches!(m.poll(t, all)[..], [Action::Reroute { .. }]));
        // Given another chance at once, for the test.
        m.verified(p[1], t);
    }
    assert_eq!(m.handoff_timeouts(), 5);
}

#[test]
fn each_reason_a_receiver_is_unreachable_reroutes_after_the_timeout() {
    // Not connected: dialled (not more often than every DIAL_RECEIVER_EVERY), then given up.
    let (mut m, p, t0) = machine(3);
    m.closed(p[1], t0);
    assert_eq!(m.stepped(Some((1, p[1])), t0), None);
    assert_eq!(m.poll(t0, none), vec![Action::Dial(p[1])]);
    assert_eq!(m.next_deadline(t0), Some(t0 + VERIFY_PAUSE));
    assert!(m.poll(t0 + VERIFY_PAUSE, none).is_empty());
    assert_eq!(
        m.poll(t0 + DIAL_RECEIVER_EVERY, none),
        vec![Action::Dial(p[1])]
    );
    // Closed at t0: down from t0 + HANDOFF, when the hand-off is overdue anyway.
    assert_eq!(m.poll(t0 + HANDOFF, none), reroute_avoiding(&[p[1]]));
    assert_eq!(m.unreachable.get(&p[1]), Some(&Unreachable::NotConnected));
    // Connected but not verified: retried every VERIFY_PAUSE without a dial.
    let (mut m, p, t0) = machine(3);
    m.closed(p[1], t0);
    m.stepped(Some((1, p[1])), t0);
    assert!(m.poll(t0, all).is_empty());
    assert_eq!(m.poll(t0 + HANDOFF, all), reroute_avoiding(&[p[1]]));
    assert_eq!(m.unreachable.get(&p[1]), Some(&Unreachable::NotVerified));
    // Verified again: no longer down, no longer unreachable.
    assert!(m.verified(p[1], t0 + HANDOFF));
    assert!(!m.is_down(&p[1], t0 + HANDOFF));
    assert!(!m.verified(p[1], t0 + HANDOFF), "said once");
}

#[test]
fn a_refusal_makes_the_receiver_down_and_reroutes_at_once() {
    let (mut m, p, t0) = machine(4);
    sent(&mut m, 1, p[1], 7, t0);
    assert!(m.answered(7));
    assert_eq!(m.refused(p[1], t0 + ms(2)), reroute_avoiding(&[p[1]]).pop());
    assert!(m.is_down(&p[1], t0 + ms(2)));
    // No hand-off timeout was spent.
    assert_eq!(m.handoff_timeouts(), 0);
    m.handing(Some((1, p[2])), t0 + ms(2));
    assert_eq!(
        m.poll(t0 + ms(2), all),
        vec![Action::Send { to: p[2], seq: 1 }]
    );
}

#[test]
fn a_receiver_that_has_not_verified_us_is_retried_shortly() {
    let (mut m, p, t0) = machine(3);
    sent(&mut m, 1, p[1], 7, t0);
    assert!(m.answered(7));
    m.not_verified(t0 + ms(1));
    assert_eq!(m.next_deadline(t0 + ms(1)), Some(t0 + ms(1) + VERIFY_PAUSE));
    assert_eq!(
        m.poll(t0 + ms(1) + VERIFY_PAUSE, all),
        vec![Action::Send { to: p[1], seq: 1 }]
    );
}

#[test]
fn a_hand_off_waiting_for_its_receiver_to_verify_goes_as_soon_as_it_does() {
    // The receiver dialled for this hop: not connected, not verified.
    let (mut m, p, t0) = fresh(3, &[]);
    m.verified(p[2], t0);
    assert_eq!(m.stepped(Some((1, p[1])), t0), None);
    assert_eq!(m.poll(t0, none), vec![Action::Dial(p[1])]);
    assert_eq!(m.next_deadline(t0), Some(t0 + VERIFY_PAUSE));
    // Its hello arrives 1 ms later: the token goes at once, not at t0 + VERIFY_PAUSE.
    m.verified(p[1], t0 + ms(1));
    assert_eq!(m.next_deadline(t0 + ms(1)), Some(t0 + ms(1)));
    assert_eq!(
        m.poll(t0 + ms(1), all),
        vec![Action::Send { to: p[1], seq: 1 }]
    );
}

#[test]
fn a_token_the_walk_has_passed_is_dropped() {
    let (mut m, p, t0) = machine(3);
    sent(&mut m, 1, p[1], 7, t0);
    assert!(m.answered(7));
    m.superseded(1, t0);
    assert!(m.poll(t0 + HANDOFF * 10, all).is_empty());
    assert_eq!(m.next_deadline(t0), None);
    // A refusal naming another token than the one held hands the held one over anew.
    sent(&mut m, 3, p[1], 8, t0);
    m.answered(8);
    m.superseded(2, t0 + ms(1));
    assert_eq!(
        m.poll(t0 + ms(1), all),
        vec![Action::Send { to: p[1], seq: 3 }]
    );
}

#[test]
fn a_member_with_another_run_file_is_rerouted_at_once_and_avoided() {
    let (mut m, p, t0) = machine(3);
    assert!(m.mismatched(p[1]));
    assert!(!m.mismatched(p[1]), "said once");
    assert!(!m.is_verified(&p[1]));
    m.stepped(Some((1, p[1])), t0);
    assert_eq!(m.poll(t0, all), reroute_avoiding(&[p[1]]));
    assert_eq!(m.unreachable.get(&p[1]), Some(&Unreachable::OtherRun));
    assert_eq!(m.handoff_timeouts(), 0, "no time was spent on it");
    // Same run file after all (a restart with the right file).
    m.matched(&p[1]);
    assert!(m.mismatched_peers().is_empty());
}

#[test]
fn a_closed_connection_is_down_only_after_the_handoff_timeout() {
    let (mut m, p, t0) = machine(3);
    m.closed(p[1], t0);
    assert!(!m.is_verified(&p[1]));
    assert!(!m.is_down(&p[1], t0 + HANDOFF - ms(1)));
    assert!(m.is_down(&p[1], t0 + HANDOFF));
    // The change is a deadline.
    assert_eq!(m.next_deadline(t0), Some(t0 + HANDOFF));
    // Back within the timeout: never down.
    let (mut m, p, t0) = machine(3);
    m.closed(p[1], t0);
    m.verified(p[1], t0);
    assert!(!m.is_down(&p[1], t0 + HANDOFF));
    // A token drawn for it meanwhile waits for it (the walk's path is kept).
    m.closed(p[1], t0);
    assert_eq!(m.stepped(Some((1, p[1])), t0 + ms(1)), None);
    m.verified(p[1], t0 + ms(1));
    assert_eq!(
        m.poll(t0 + ms(2), all),
        vec![Action::Send { to: p[1], seq: 1 }]
    );
}

#[test]
fn a_member_down_is_avoided_by_every_draw() {
    let (mut m, p, t0) = machine(4);
    m.closed(p[1], t0);
    let t = t0 + HANDOFF;
    // Drawn while down: redrawn at once, avoiding it.
    assert_eq!(
        m.stepped(Some((1, p[1])), t),
        reroute_avoiding(&[p[1]]).pop()
    );
    // Drawn again anyway (every neighbour down): never sent, so not waited for.
    m.handing(Some((1, p[1])), t);
    assert_eq!(m.poll(t, none), reroute_avoiding(&[p[1]]));
    assert_eq!(m.handoff_timeouts(), 0);
    // Drawn once more: after a failure in a row, it is given the hand-off timeout (twice).
    m.handing(Some((1, p[1])), t);
    assert_eq!(m.poll(t, none), vec![Action::Dial(p[1])]);
    assert!(!rerouted(&m.poll(t + HANDOFF * 2 - ms(1), none)));
    assert!(rerouted(&m.poll(t + HANDOFF * 2, none)));
}

#[test]
fn a_dial_failure_counts_only_once_the_walk_reached_the_node_and_after_the_startup_grace() {
    let (mut m, p, t0) = fresh(3, &[]);
    // Before the walk reached this node: no token needs member 2 (it may start later).
    let t = t0 + HANDOFF * 3;
    m.dial_failed(p[2], t);
    assert!(!m.is_down(&p[2], t));
    assert!(m.advice(&p[1], t).is_empty());
    let (mut m, p, t0) = fresh(3, &[]);
    m.reached();
    m.dial_failed(p[2], t0 + ms(10));
    assert!(!m.is_down(&p[2], t0 + ms(10)));
    let t = t0 + HANDOFF + ms(1);
    m.dial_failed(p[2], t);
    assert!(m.is_down(&p[2], t));
    // Down and not connected: until it verifies, not only for AVOID_FOR.
    assert!(m.is_down(&p[2], t + AVOID_FOR * 2));
    // And said to the others with the next token.
    assert_eq!(m.advice(&p[1], t).len(), 1);
}

#[test]
fn a_dial_failure_of_a_member_behind_a_relay_is_waited_for() {
    // Member 2 is listed at a relayed address, member 1 at a direct one; both dials fail
    // after the start-up grace.
    let (mut m, p, t0) = fresh(3, &[2]);
    m.reached();
    let t = t0 + HANDOFF + ms(1);
    m.dial_failed(p[1], t);
    m.dial_failed(p[2], t);
    assert!(m.is_down(&p[1], t));
    // Member 2's reservation may be on its way: not down, not advised to others, and a token
    // drawn for it is handed to it (dialled), not re-routed.
    assert!(!m.is_down(&p[2], t));
    assert!(m.advice(&p[1], t).iter().all(|a| a.member != 2));
    assert_eq!(m.stepped(Some((1, p[2])), t), None);
    assert_eq!(m.poll(t, none), vec![Action::Dial(p[2])]);
    // Its next dial fails too: still waited for, until the hand-off timeout after the first
    // failure (a state change custody wakes up for).
    m.dial_failed(p[2], t + DIAL_RECEIVER_EVERY);
    assert!(!m.is_down(&p[2], t + HANDOFF - ms(1)));
    assert!(!rerouted(&m.poll(t + HANDOFF - ms(1), none)));
    assert_eq!(m.next_deadline(t + HANDOFF - ms(1)), Some(t + HANDOFF));
    // It never came: down, the token goes elsewhere, and the others are told.
    assert!(m.is_down(&p[2], t + HANDOFF));
    assert_eq!(m.poll(t + HANDOFF, none), reroute_avoiding(&[p[1], p[2]]));
    assert!(m.advice(&p[1], t + HANDOFF).iter().any(|a| a.member == 2));

    // Another run: the relayed connection comes up within the hand-off timeout. The member
    // was never down, and takes the token.
    let (mut m, p, t0) = fresh(3, &[2]);
    m.reached();
    let t = t0 + HANDOFF + ms(1);
    m.dial_failed(p[2], t);
    assert_eq!(m.stepped(Some((1, p[2])), t), None);
    assert_eq!(m.poll(t, none), vec![Action::Dial(p[2])]);
    assert!(!m.verified(p[2], t));
    assert!(!m.is_down(&p[2], t + HANDOFF * 2));
    assert_eq!(
        m.poll(t + ms(600), all),
        vec![Action::Send { to: p[2], seq: 1 }]
    );
}

#[test]
fn a_failed_dial_beside_a_connection_is_no_news() {
    // Member 1 is connected and verified; a dial to it fails (a hole punch over its relayed
    // connection, or an address of it that does not answer).
    let (mut m, p, t0) = machine(3);
    let t = t0 + HANDOFF + ms(1);
    m.dial_failed(p[1], t);
    assert!(!m.is_down(&p[1], t));
    assert!(m.advice(&p[2], t).is_empty());
    assert_eq!(m.stepped(Some((1, p[1])), t), None);
    assert_eq!(m.poll(t, all), vec![Action::Send { to: p[1], seq: 1 }]);
}

#[test]
fn the_last_hop_is_waited_for_once_it_may_have_been_delivered() {
    let (mut m, p, t0) = machine(3);
    sent(&mut m, STEPS - 1, p[1], 7, t0);
    // The hand-off timeout passes: the receiver may have made the last step.
    assert!(m.poll(t0 + HANDOFF, all).is_empty());
    assert!(!m.is_down(&p[1], t0 + HANDOFF));
    assert_eq!(m.handoff_timeouts(), 0);
    // The request failed: the same receiver is retried, and waited for again.
    assert!(m.failed(7, t0 + HANDOFF + ms(1)));
    assert_eq!(
        m.poll(t0 + HANDOFF + RETRY_PAUSE * 2, all),
        vec![Action::Send {
            to: p[1],
            seq: STEPS - 1
        }]
    );
    m.sent(8);
    assert!(m.poll(t0 + HANDOFF * 2, all).is_empty());
    // And again one hand-off timeout later, never replaced.
    assert!(m.poll(t0 + HANDOFF * 3, all).is_empty());
    assert!(m.poll(t0 + HANDOFF * 9, all).is_empty());
    assert_eq!(m.handoff_timeouts(), 0);
}

#[test]
fn a_holder_still_handing_on_tells_its_predecessor_every_quarter_hand_off() {
    let (mut m, p, t0) = machine(3);
    sent(&mut m, 5, p[1], 7, t0);
    let every = HANDOFF / 4;
    assert_eq!(m.next_deadline(t0), Some(t0 + every));
    assert_eq!(m.hold_due(t0 + every - ms(1)), None);
    assert_eq!(m.hold_due(t0 + every), Some(4), "the token it took");
    assert_eq!(m.hold_due(t0 + every), None, "once per period");
    assert_eq!(m.hold_due(t0 + every * 2), Some(4));
    // Acknowledged: nothing pending, nothing to say.
    assert!(m.answered(7));
    m.acknowledged(5, t0 + every * 2);
    assert_eq!(m.hold_due(t0 + every * 9), None);
    // The walk's first hand-off (seq 1) has no predecessor to tell.
    sent(&mut m, 1, p[2], 8, t0);
    assert_eq!(m.hold_due(t0 + every * 9), None);
}

#[test]
fn a_backup_waits_while_its_receiver_says_it_holds_the_walk() {
    let (mut m, p, t0) = machine(3);
    sent(&mut m, 5, p[1], 7, t0);
    assert!(m.answered(7));
    m.acknowledged(5, t0);
    // Word from the receiver just before the resume timeout: the wait starts again.
    let t = t0 + RESUME - ms(1);
    m.holding(&p[1], 5, t);
    assert!(m.poll(t0 + RESUME, all).is_empty());
    assert_eq!(m.next_deadline(t0 + RESUME), Some(t + RESUME));
    // Word from another member, or of another seq, does not count.
    m.holding(&p[2], 5, t + RESUME - ms(1));
    m.holding(&p[1], 4, t + RESUME - ms(1));
    assert_eq!(m.poll(t + RESUME, all), vec![Action::Resume { gone: p[1] }]);
}

#[test]
fn the_last_hop_never_sent_is_rerouted() {
    let (mut m, p, t0) = machine(3);
    m.closed(p[1], t0);
    m.stepped(Some((STEPS - 1, p[1])), t0);
    assert_eq!(m.poll(t0, none), vec![Action::Dial(p[1])]);
    assert_eq!(m.poll(t0 + HANDOFF, none), reroute_avoiding(&[p[1]]));
}

#[test]
fn a_token_from_before_a_restart_may_be_held_by_its_receiver() {
    // The last hop, resumed after a crash: its receiver may have it, so it is waited for.
    let (mut m, p, t0) = machine(3);
    m.closed(p[1], t0);
    m.restarted(STEPS - 1, p[1], t0);
    assert_eq!(m.poll(t0, none), vec![Action::Dial(p[1])]);
    assert!(!rerouted(&m.poll(t0 + HANDOFF * 3, none)));
    assert!(!rerouted(&m.poll(t0 + HANDOFF * 9, none)));
    // Another hop resumed after a crash: the receiver gets the hand-off timeout, then the
    // token goes elsewhere.
    let (mut m, p, t0) = machine(3);
    m.restarted(4, p[1], t0);
    assert_eq!(m.poll(t0, all), vec![Action::Send { to: p[1], seq: 4 }]);
    m.sent(1);
    assert_eq!(m.poll(t0 + HANDOFF, all), reroute_avoiding(&[p[1]]));
}

#[test]
fn nothing_held_means_nothing_to_do() {
    let (mut m, p, t0) = machine(3);
    assert!(m.poll(t0 + HANDOFF * 100, all).is_empty());
    m.acknowledged(1, t0);
    m.superseded(1, t0);
    m.not_verified(t0);
    assert!(!m.failed(1, t0));
    assert!(m.poll(t0 + RESUME * 2, all).is_empty());
    sent(&mut m, 1, p[1], 7, t0);
    m.finished();
    assert!(m.poll(t0 + HANDOFF * 100, all).is_empty());
    assert_eq!(m.next_deadline(t0), None);
}

/// A run with a network budget keeps its walk's path: no draw avoids a member down, an overdue or
/// refused hand-off keeps its receiver, and a backup is never resumed.
#[test]
fn a_run_that_keeps_its_path_waits_for_its_receivers_and_never_routes_around() {
    let (mut m, p, t0) = machine(4);
    m.config.keep_path = true;
    // A member down: avoided by no draw, and a token drawn for it is not re-routed.
    m.closed(p[1], t0);
    let t = t0 + HANDOFF;
    assert!(m.is_down(&p[1], t));
    assert!(m.avoid(t).is_empty());
    m.heard(
        &p[2],
        &[Avoided {
            member: 3,
            for_ms: 9_000,
        }],
        t,
    );
    assert!(m.avoid(t).is_empty());
    assert_eq!(m.stepped(Some((1, p[1])), t), None);
    // Overdue: still waited for (dialled), never re-routed, however long.
    for k in 1..5 {
        let actions = m.poll(t + HANDOFF * k, none);
        assert!(!rerouted(&actions), "{actions:?}");
    }
    assert_eq!(m.handoff_timeouts(), 0);
    // It verifies again: the token goes to it.
    m.verified(p[1], t + HANDOFF * 5);
    assert_eq!(
        m.poll(t + HANDOFF * 5 + DIAL_RECEIVER_EVERY, all),
        vec![Action::Send { to: p[1], seq: 1 }]
    );
    // A refusal: tried again after a pause, not re-routed.
    m.sent(9);
    assert!(m.answered(9));
    let u = t + HANDOFF * 6;
    assert_eq!(m.refused(p[1], u), None);
    assert!(m.poll(u, all).is_empty());
    m.verified(p[1], u);
    assert_eq!(
        m.poll(u + RETRY_PAUSE, all),
        vec![Action::Send { to: p[1], seq: 1 }]
    );
    // Acknowledged, never released: the backup is not resumed.
    m.sent(10);
    m.answered(10);
    m.acknowledged(1, u + RETRY_PAUSE);
    assert!(m.poll(u + RETRY_PAUSE + RESUME * 3, all).is_empty());
    assert!(m.poll(u + RETRY_PAUSE + RESUME * 9, all).is_empty());
}

/// Issue 27, item 6: a member killed and restarted within the hand-off timeout. Its connection
/// closed, and the redials made while it restarts fail: neither is news before the timeout, so no
/// token advises it down and no draw goes around it (the walk keeps the simulator's path).
#[test]
fn dials_failing_while_a_closed_member_restarts_are_no_news_within_the_timeout() {
    let (mut m, p, t0) = machine(3);
    m.reached();
    let t = t0 + HANDOFF * 2;
    m.closed(p[1], t);
    m.dial_failed(p[1], t + ms(100));
    m.dial_failed(p[1], t + HANDOFF - ms(1));
    assert!(!m.is_down(&p[1], t + HANDOFF - ms(1)));
    assert!(m.advice(&p[2], t + HANDOFF - ms(1)).is_empty());
    assert!(m.avoid(t + HANDOFF - ms(1)).is_empty());
    // Back within the timeout: never avoided, never advised.
    m.verified(p[1], t + HANDOFF - ms(1));
    assert!(m.advice(&p[2], t + HANDOFF).is_empty());
    // Not back: down from the timeout on, and a failed dial after it is advised.
    m.closed(p[1], t + HANDOFF * 2);
    let late = t + HANDOFF * 3 + ms(1);
    m.dial_failed(p[1], late);
    assert!(m.is_down(&p[1], late));
    assert_eq!(m.advice(&p[2], late).len(), 1);
}

#[test]
fn a_parting_close_is_not_a_failure_and_is_dialled_again_when_drawn() {
    let (mut m, p, t0) = machine(3);
    m.parting(p[1], t0);
    m.closed(p[1], t0 + ms(100));
    let later = t0 + HANDOFF * 4;
    assert!(
        !m.is_down(&p[1], later),
        "an idle connection closed on purpose"
    );
    assert!(m.avoid(later).is_empty());
    assert!(
        !m.is_verified(&p[1]),
        "verified again on its next connection"
    );
    // Drawn later: dialled, not avoided.
    assert_eq!(m.stepped(Some((1, p[1])), later), None);
    assert_eq!(m.poll(later, none), vec![Action::Dial(p[1])]);
    // The mark is used once: the next close of a verified member is a failure again.
    m.verified(p[1], later);
    m.closed(p[1], later);
    assert!(m.is_down(&p[1], later + HANDOFF));
    // A mark older than the resume timeout has expired: the close is a failure.
    m.verified(p[2], t0);
    m.parting(p[2], t0);
    m.closed(p[2], t0 + RESUME);
    assert!(m.is_down(&p[2], t0 + RESUME + HANDOFF));
}
