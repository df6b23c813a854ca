//! The node's problem (module doc of [`super`], "The node's problem"): its own records, in the
//! label convention of the run's loss.

use dpwalk_core::data::{Dataset, LabelKind, UserData};
use dpwalk_core::problem::{Loss, Problem, ProblemError};

use crate::run::Run;

/// The labels of a node's file as the run's loss reads them. A node's file may hold a single
/// class, so labels are not fitted per file: they are read as numbers and must already be in the
/// loss's convention (`±1` for logistic, `0..classes` for multinomial).
pub fn labels_for_loss(mut data: Dataset, loss: Loss) -> Dataset {
    data.label_kind = match (loss, data.label_kind) {
        (Loss::Squared, kind) => kind,
        (Loss::Logistic, _) => LabelKind::Binary,
        (Loss::Multinomial { classes }, _) => LabelKind::Classes(classes),
    };
    data
}

/// The problem as node `index` of `run` sees it: its own records, and `n − 1` users without any
/// (see the module docs). [`Problem::new`] checks the labels against the loss.
pub fn node_problem(run: &Run, index: usize, data: Dataset) -> Result<Problem, ProblemError> {
    let n = run.members().len();
    let rows = data.rows();
    let offsets = (0..=n).map(|i| if i <= index { 0 } else { rows }).collect();
    let data = labels_for_loss(data, run.loss());
    Problem::new(run.loss(), run.regularizer(), UserData { data, offsets })
}
