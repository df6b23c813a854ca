//! The models a node records on the way ([`EVALS_FILE`]), for `dpwalk swarm` to evaluate at the
//! simulator's evaluation points.

use std::path::{Path, PathBuf};

use super::{Learner, LearnerError};

/// The file of the models a node evaluated on the way ([`Learner::with_evals`]), in the state
/// directory: one line `seq,z_0,…,z_{p−1}` per point (shortest round-trip decimals), `#` comments.
pub const EVALS_FILE: &str = "evals.csv";

/// Where and how often a node records the model of the token it forwards.
#[derive(Debug)]
pub(super) struct Evals {
    pub(super) every: u64,
    pub(super) path: PathBuf,
    /// `(seq, w)` of forwarded tokens whose model is not written yet.
    pub(super) pending: Vec<(u64, Vec<f64>)>,
}

impl Learner<'_> {
    /// Records the model `z` (ADMM: `prox(w)`; DP-SGD: `w`) of every token this node forwards whose seq (the updates
    /// of `w` so far) is a multiple of `every`, in [`EVALS_FILE`] of `state_dir`: the simulator's
    /// evaluation points (`eval-every`), for `dpwalk swarm` to evaluate. The hop only keeps a
    /// copy of `w`; [`Learner::write_evals`] computes and appends the models later. The model of
    /// the outgoing token of the durable state is queued again when the file lacks it (a crash
    /// between the step and the write).
    pub fn with_evals(mut self, every: u64, state_dir: &Path) -> Result<Self, LearnerError> {
        let path = state_dir.join(EVALS_FILE);
        let every = every.max(1);
        let mut pending = Vec::new();
        if let Some(c) = &self.state.outgoing
            && c.token.seq % every == 0
        {
            let written = match std::fs::read_to_string(&path) {
                Ok(text) => text
                    .lines()
                    .filter(|l| !l.starts_with('#'))
                    .filter_map(|l| l.split(',').next()?.parse::<u64>().ok())
                    .any(|seq| seq == c.token.seq),
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => false,
                Err(source) => return Err(LearnerError::Evals { path, source }),
            };
            if !written {
                pending.push((c.token.seq, c.token.w.clone()));
            }
        }
        self.evals = Some(Evals {
            every,
            path,
            pending,
        });
        Ok(self)
    }

    /// Appends the models of the forwarded tokens not written yet (see [`Learner::with_evals`]);
    /// the node calls it once the token is handed on. Cheap when there is nothing to write.
    pub fn write_evals(&mut self) -> Result<(), LearnerError> {
        use std::fmt::Write as _;
        use std::io::Write as _;
        let Some(evals) = self.evals.as_mut() else {
            return Ok(());
        };
        if evals.pending.is_empty() {
            return Ok(());
        }
        // Taken first: a failed write loses these points rather than failing again and again.
        let pending = std::mem::take(&mut evals.pending);
        let mut text = String::new();
        let mut z = vec![0.0; self.run.dimension()];
        let algorithm = self.step.algorithm();
        for (seq, w) in &pending {
            algorithm.model(self.problem.regularizer(), w, &mut z);
            let _ = write!(text, "{seq}");
            for v in &z {
                let _ = write!(text, ",{v:?}");
            }
            text.push('\n');
        }
        let io = |source| LearnerError::Evals {
            path: evals.path.clone(),
            source,
        };
        let mut file = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&evals.path)
            .map_err(io)?;
        file.write_all(text.as_bytes()).map_err(io)
    }
}
