//! Feedback on the model's quality that a node can give from what it sees: how often its clip cut
//! its update, and how the noise of one step compares with the largest update the clip allows.
//!
//! Neither needs the other members' data, so a node on its own host can say when the run's
//! parameters leave the model mostly noise (the objective far above the all-zero model's) instead
//! of letting the run end there silently.
//!
//! - **Clip.** Of the last [`CLIP_WINDOW`] contributions, the share whose update was cut to `C`.
//!   From [`CLIP_WARN`] on (once the window is full), every update is the clip's, whatever the
//!   data say; the warning clears below [`CLIP_CLEAR`] (a margin, so that a share hovering at the
//!   threshold is not reported again and again).
//! - **Noise.** One step adds `2λ(Δ + (σ/2)·η)` to `u_i`, with `‖Δ‖₂ ≤ C` and `η ~ N(0, I_p)`:
//!   the noise's norm is about `(σ/2)·√p`, so [`noise_ratio`] `= σ√p / (2C)` is how many times
//!   the largest possible update it is. From [`NOISE_WARN`] on it dwarfs the signal. The ratio
//!   depends only on `σ/C` and `p`, and the local privacy loss of a step is `8αC²/σ²`: lowering
//!   it means spending more privacy per step (a larger ε budget, or a larger `C` at the same σ),
//!   or fewer features.
//!
//! [`Quality`] keeps both and says what changed; the node logs each change once and lists the
//! active warnings in its status.

use std::collections::VecDeque;

/// How many of the latest contributions the clip share is taken over.
pub const CLIP_WINDOW: usize = 50;
/// The clip share (of a full window) from which the node warns.
pub const CLIP_WARN: f64 = 0.9;
/// The clip share below which an active clip warning clears.
pub const CLIP_CLEAR: f64 = 0.75;
/// The [`noise_ratio`] from which the node warns that the noise dwarfs the update.
pub const NOISE_WARN: f64 = 10.0;

/// `σ√p / (2C)`: the norm of one step's noise, `(σ/2)·√p` in expectation (about), over the largest
/// update the clip lets through; `None` without a clip (nothing bounds the update).
pub fn noise_ratio(sigma: f64, clip: Option<f64>, dim: usize) -> Option<f64> {
    let c = clip.filter(|c| *c > 0.0 && c.is_finite())?;
    Some(0.5 * sigma * (dim as f64).sqrt() / c)
}

/// A quality warning.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Warning {
    /// The clip cut `clipped` of the last `of` updates.
    Clipped {
        /// Updates cut to `C`.
        clipped: usize,
        /// Contributions in the window.
        of: usize,
        /// `C`.
        clip: f64,
    },
    /// One step's noise is `ratio` times the largest update.
    Noise {
        /// [`noise_ratio`].
        ratio: f64,
        /// σ.
        sigma: f64,
        /// `C`.
        clip: f64,
        /// `p`.
        dim: usize,
    },
}

impl std::fmt::Display for Warning {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match *self {
            Warning::Clipped { clipped, of, clip } => write!(
                f,
                "the clip C = {clip} cut {clipped} of the last {of} updates of this node: \
                 those have norm C, whatever the data say; raise clip C (and sigma in proportion, \
                 to keep the same privacy: it depends on sigma/C); when the noise warning shows \
                 too, it is the noise carried in u_i that makes the updates large"
            ),
            Warning::Noise {
                ratio,
                sigma,
                clip,
                dim,
            } => write!(
                f,
                "the noise of one step (sigma/2 * sqrt(p) = {:.3} for sigma = {sigma}, p = {dim}) is \
                 {ratio:.1} times the largest update (C = {clip}): the model will be mostly noise; \
                 lower sigma/C, which spends more privacy per step (a larger epsilon budget, or a \
                 larger C at the same sigma), or use fewer features",
                0.5 * sigma * (dim as f64).sqrt()
            ),
        }
    }
}

/// A change of the warnings, for the log: one line per change.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Change {
    /// The warning became active.
    Raised(Warning),
    /// The clip share fell below [`CLIP_CLEAR`]: `clipped` of `of`.
    ClipCleared {
        /// Updates cut to `C`.
        clipped: usize,
        /// Contributions in the window.
        of: usize,
    },
}

/// The node's view of its updates: the clip flags of its latest contributions, and the static
/// noise check.
#[derive(Debug, Clone)]
pub struct Quality {
    recent: VecDeque<bool>,
    clipped: usize,
    clip: Option<f64>,
    clip_warned: bool,
    noise: Option<Warning>,
}

impl Quality {
    /// For a run with noise `sigma`, clip `clip` and dimension `dim`.
    pub fn new(sigma: f64, clip: Option<f64>, dim: usize) -> Self {
        let noise = noise_ratio(sigma, clip, dim)
            .filter(|r| *r >= NOISE_WARN)
            .zip(clip)
            .map(|(ratio, clip)| Warning::Noise {
                ratio,
                sigma,
                clip,
                dim,
            });
        Quality {
            recent: VecDeque::with_capacity(CLIP_WINDOW),
            clipped: 0,
            clip,
            clip_warned: false,
            noise,
        }
    }

    /// The noise warning, if the run's parameters call for it (it does not change during a run).
    pub fn noise_warning(&self) -> Option<Warning> {
        self.noise
    }

    /// Records one contribution; returns the change of the clip warning it causes, if any.
    pub fn record(&mut self, clipped: bool) -> Option<Change> {
        if self.recent.len() == CLIP_WINDOW
            && let Some(old) = self.recent.pop_front()
        {
            self.clipped -= usize::from(old);
        }
        self.recent.push_back(clipped);
        self.clipped += usize::from(clipped);
        let (clipped, of) = (self.clipped, self.recent.len());
        let share = clipped as f64 / of as f64;
        if !self.clip_warned && of == CLIP_WINDOW && share >= CLIP_WARN {
            self.clip_warned = true;
            return self.clip_warning().map(Change::Raised);
        }
        if self.clip_warned && share < CLIP_CLEAR {
            self.clip_warned = false;
            return Some(Change::ClipCleared { clipped, of });
        }
        None
    }

    /// `(clipped, of)` over the latest contributions; `None` before the first.
    pub fn clipped_recent(&self) -> Option<(usize, usize)> {
        (!self.recent.is_empty()).then_some((self.clipped, self.recent.len()))
    }

    fn clip_warning(&self) -> Option<Warning> {
        let clip = self.clip?;
        self.clip_warned.then_some(Warning::Clipped {
            clipped: self.clipped,
            of: self.recent.len(),
            clip,
        })
    }

    /// The active warnings: the noise's, then the clip's.
    pub fn warnings(&self) -> Vec<Warning> {
        self.noise.into_iter().chain(self.clip_warning()).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_readme_example_of_three_hosts_is_warned_about_and_the_quickstart_is_not() {
        // σ = 4, C = 0.5, p = 104: the noise is 2·√104 ≈ 20.4 against an update of at most 0.5.
        let ratio = noise_ratio(4.0, Some(0.5), 104).unwrap();
        assert!((ratio - 2.0 * 104f64.sqrt() / 0.5).abs() < 1e-12);
        let q = Quality::new(4.0, Some(0.5), 104);
        let Some(Warning::Noise { ratio: r, .. }) = q.noise_warning() else {
            panic!("no noise warning at ratio {ratio}");
        };
        assert_eq!(r, ratio);
        let text = q.warnings()[0].to_string();
        assert!(text.contains("40.8 times"), "{text}");
        assert!(text.contains("larger epsilon budget"), "{text}");
        // The built-in swarm (σ = 0.05, C = 0.5, p = 64): 0.4.
        assert!(Quality::new(0.05, Some(0.5), 64).warnings().is_empty());
        assert_eq!(noise_ratio(1.0, None, 64), None, "no clip, no bound");
    }

    #[test]
    fn the_clip_warning_waits_for_a_full_window_is_said_once_and_clears_with_a_margin() {
        let mut q = Quality::new(0.05, Some(0.5), 64);
        assert_eq!(q.clipped_recent(), None);
        for k in 1..CLIP_WINDOW {
            assert_eq!(q.record(true), None, "window not full at {k}");
        }
        let Some(Change::Raised(Warning::Clipped { clipped, of, clip })) = q.record(true) else {
            panic!("no warning with a full window of clipped updates");
        };
        assert_eq!((clipped, of, clip), (CLIP_WINDOW, CLIP_WINDOW, 0.5));
        assert_eq!(q.warnings().len(), 1);
        // Said once: more clipped updates, and a share dipping under the threshold, change nothing.
        for k in 0..CLIP_WINDOW {
            assert_eq!(q.record(k % 8 != 0), None, "step {k}");
        }
        assert!(q.clipped_recent().unwrap().0 < (CLIP_WARN * CLIP_WINDOW as f64) as usize);
        assert_eq!(q.warnings().len(), 1, "still above the clearing share");
        // Unclipped updates bring the share below CLIP_CLEAR: one change, then nothing.
        let mut changes = Vec::new();
        for _ in 0..CLIP_WINDOW {
            changes.extend(q.record(false));
        }
        assert_eq!(changes.len(), 1, "{changes:?}");
        let Change::ClipCleared { clipped, of } = changes[0] else {
            panic!("{changes:?}");
        };
        assert!((clipped as f64) < CLIP_CLEAR * of as f64);
        assert!(q.warnings().is_empty());
        assert_eq!(q.clipped_recent(), Some((0, CLIP_WINDOW)));
        // And raised again when the clip is back on nearly every step.
        let raised = (0..CLIP_WINDOW)
            .filter_map(|_| q.record(true))
            .collect::<Vec<_>>();
        assert_eq!(raised.len(), 1, "{raised:?}");
        assert!(matches!(raised[0], Change::Raised(Warning::Clipped { .. })));
    }

    #[test]
    fn a_share_below_the_threshold_is_not_warned_about() {
        let mut q = Quality::new(0.05, Some(0.5), 64);
        // 44 of 50 = 0.88 < 0.9.
        for k in 0..10 * CLIP_WINDOW {
            assert_eq!(q.record(k % 25 >= 3), None, "step {k}");
        }
        assert_eq!(q.clipped_recent(), Some((44, CLIP_WINDOW)));
    }
}
