//! When the swarm disrupts the token holder: the pace (`100hops`, `0.5s`) and the schedule it
//! makes with `--disruptions`, apart from the processes it is applied to (`super::supervise`).

use anyhow::ensure;
use std::time::Duration;

/// How often the swarm disrupts the token holder. Either way, a disruption also waits for the
/// previous victim to be back and for the walk to have moved since the previous disruption, so
/// that a node restarted with the token is not disrupted again before it could hand it on.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(super) enum Pace {
    /// This long after the previous disruption (machine-dependent: the walk's speed decides how
    /// many a run sees).
    Every(Duration),
    /// Disruption `t` once the walk has made `t` times this many hops (an absolute schedule).
    Hops(u64),
}

impl Pace {
    /// Parses `0.5`, `0.5s` (seconds) or `100hops`.
    pub(super) fn parse(text: &str) -> Result<Self, String> {
        let text = text.trim();
        if let Some(hops) = text.strip_suffix("hops") {
            return match hops.trim().parse::<u64>() {
                Ok(h) if h > 0 => Ok(Self::Hops(h)),
                _ => Err(format!(
                    "`{text}`: give a whole number of hops above 0, e.g. `100hops`"
                )),
            };
        }
        let seconds = text.strip_suffix('s').unwrap_or(text).trim();
        match seconds.parse::<f64>() {
            Ok(s) if s.is_finite() && s > 0.0 && s < 1e6 => {
                Ok(Self::Every(Duration::from_secs_f64(s)))
            }
            _ => Err(format!(
                "`{text}`: give seconds above 0 (`0.5`, `0.5s`) or hops of the walk (`100hops`)"
            )),
        }
    }
}

/// When the swarm disrupts the holder: a pace, at most `count` times, in a walk of `steps` hops.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(super) struct Schedule {
    pace: Pace,
    count: Option<u32>,
    steps: u64,
}

impl Schedule {
    /// Checks that a count fits the walk: with `Nhops`, disruption `COUNT` is due at hop
    /// `COUNT·N`, which must come before the walk's last hop.
    pub(super) fn new(pace: Pace, count: Option<u32>, steps: u64) -> anyhow::Result<Self> {
        let schedule = Self { pace, count, steps };
        if let (Pace::Hops(n), Some(c)) = (pace, count) {
            let last = u64::from(c).saturating_mul(n);
            ensure!(
                last < steps,
                "--disruptions {c} at {n}hops: the last would be due at hop {last}, but the walk \
                 has {steps} hops; give fewer disruptions, a shorter pace or more steps"
            );
        }
        Ok(schedule)
    }

    /// How many disruptions are scheduled: with `Nhops`, one per `N` hops before the walk's end
    /// (at most `count`); with seconds, `count` (`None`: no limit).
    pub(super) fn planned(self) -> Option<u32> {
        match self.pace {
            Pace::Every(_) => self.count,
            Pace::Hops(n) => {
                let fit = u32::try_from(self.steps.saturating_sub(1) / n).unwrap_or(u32::MAX);
                Some(self.count.map_or(fit, |c| c.min(fit)))
            }
        }
    }

    /// The hop at which disruption `t` (from 1) is due, for a pace in hops.
    pub(super) fn due_at(self, t: u32) -> Option<u64> {
        match self.pace {
            Pace::Every(_) => None,
            Pace::Hops(n) => Some(u64::from(t).saturating_mul(n)),
        }
    }

    /// Whether disruption `t` (from 1) is due: the walk has made `done` hops, and the previous
    /// disruption came `since` ago, when the walk had made `done_then` (`0` and the swarm's start
    /// for the first).
    pub(super) fn due(self, t: u32, since: Duration, done_then: u64, done: u64) -> bool {
        let scheduled = self.planned().is_none_or(|p| t <= p);
        let moved = done > done_then;
        scheduled
            && moved
            && match self.pace {
                Pace::Every(every) => since >= every,
                Pace::Hops(n) => done >= u64::from(t).saturating_mul(n),
            }
    }
}

#[cfg(test)]
mod tests {
    use super::{Pace, Schedule};
    use std::time::Duration;

    #[test]
    fn paces_parse_seconds_and_hops_and_refuse_the_rest() {
        assert_eq!(
            Pace::parse("0.5"),
            Ok(Pace::Every(Duration::from_millis(500)))
        );
        assert_eq!(Pace::parse("2s"), Ok(Pace::Every(Duration::from_secs(2))));
        assert_eq!(Pace::parse("100hops"), Ok(Pace::Hops(100)));
        for bad in [
            "0", "-1", "nan", "inf", "0hops", "1.5hops", "hops", "", "fast",
        ] {
            assert!(Pace::parse(bad).is_err(), "{bad:?} accepted");
        }
    }

    #[test]
    fn a_disruption_in_seconds_waits_for_its_pace_and_for_the_walk_to_move() {
        let every = Schedule::new(Pace::Every(Duration::from_secs(1)), None, 1000).unwrap();
        assert_eq!(every.planned(), None, "no limit without a count");
        assert!(!every.due(1, Duration::from_millis(999), 10, 50));
        assert!(every.due(1, Duration::from_secs(1), 10, 11));
        assert!(every.due(500, Duration::from_secs(1), 10, 11));
        assert!(
            !every.due(1, Duration::from_secs(5), 10, 10),
            "the walk has not moved"
        );
        let capped = Schedule::new(Pace::Every(Duration::from_secs(1)), Some(3), 1000).unwrap();
        assert_eq!(capped.planned(), Some(3));
        assert!(capped.due(3, Duration::from_secs(1), 10, 11));
        assert!(
            !capped.due(4, Duration::from_secs(9), 10, 900),
            "past the count"
        );
    }

    #[test]
    fn a_disruption_in_hops_is_due_on_an_absolute_schedule() {
        let hops = Schedule::new(Pace::Hops(100), None, 1000).unwrap();
        // One per 100 hops before the walk's last: hops 100, 200, ..., 900.
        assert_eq!(hops.planned(), Some(9));
        assert_eq!(hops.due_at(3), Some(300));
        assert!(!hops.due(1, Duration::from_secs(60), 0, 99));
        assert!(hops.due(1, Duration::ZERO, 0, 100));
        // Due at t·100, not 100 hops after the previous one: the second, made late at hop 150,
        // leaves the third due at 300, and a late one is due at once (once the walk has moved).
        assert!(!hops.due(2, Duration::ZERO, 110, 199));
        assert!(hops.due(2, Duration::ZERO, 110, 200));
        assert!(!hops.due(3, Duration::ZERO, 250, 299));
        assert!(hops.due(3, Duration::ZERO, 250, 300));
        assert!(
            hops.due(4, Duration::ZERO, 700, 701),
            "three behind: due at once"
        );
        assert!(
            !hops.due(4, Duration::ZERO, 701, 701),
            "but the walk must move"
        );
        assert!(hops.due(9, Duration::ZERO, 900, 999));
        assert!(
            !hops.due(10, Duration::ZERO, 900, 1000),
            "none at the walk's end"
        );
    }

    #[test]
    fn a_count_caps_the_hops_schedule_and_must_fit_the_walk() {
        let capped = Schedule::new(Pace::Hops(50), Some(20), 3000).unwrap();
        assert_eq!(capped.planned(), Some(20));
        assert_eq!(capped.due_at(20), Some(1000));
        assert!(capped.due(20, Duration::ZERO, 990, 2500));
        assert!(
            !capped.due(21, Duration::ZERO, 1000, 2500),
            "past the count"
        );
        assert!(Schedule::new(Pace::Hops(100), Some(9), 1000).is_ok());
        let late = Schedule::new(Pace::Hops(100), Some(10), 1000).unwrap_err();
        assert!(late.to_string().contains("due at hop 1000"), "{late}");
        assert!(Schedule::new(Pace::Hops(u64::MAX), Some(u32::MAX), 1000).is_err());
    }
}
