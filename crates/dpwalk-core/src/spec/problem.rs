//! The `[problem]` table: the loss, its classes, the regularizer's weights.

use super::SpecError;
use crate::problem::{Loss, Regularizer};
use serde::{Deserialize, Serialize};

/// Loss names.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum LossName {
    /// Least squares.
    Squared,
    /// Binary logistic regression.
    Logistic,
    /// Multinomial logistic regression.
    Multinomial,
}

impl LossName {
    /// The name as written in scenario and run files.
    pub fn as_str(self) -> &'static str {
        match self {
            LossName::Squared => "squared",
            LossName::Logistic => "logistic",
            LossName::Multinomial => "multinomial",
        }
    }
}

/// The `[problem]` table of scenario and run files.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub struct ProblemSpec {
    /// `squared`, `logistic` or `multinomial`.
    pub loss: LossName,
    /// Classes of a multinomial loss: required in a run file (it has no data to count them
    /// in); optional in a scenario, where the data's labels give them (and must agree).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub classes: Option<usize>,
    /// L1 weight of `r`.
    #[serde(default)]
    pub l1: f64,
    /// L2 weight of `r` (`r = l1‖x‖₁ + (l2/2)‖x‖²`).
    #[serde(default)]
    pub l2: f64,
}

impl ProblemSpec {
    /// The table that writes `loss` and `regularizer`.
    pub fn of(loss: Loss, regularizer: Regularizer) -> Self {
        let (loss, classes) = match loss {
            Loss::Squared => (LossName::Squared, None),
            Loss::Logistic => (LossName::Logistic, None),
            Loss::Multinomial { classes } => (LossName::Multinomial, Some(classes)),
        };
        let (l1, l2) = match regularizer {
            Regularizer::None => (0.0, 0.0),
            Regularizer::L1 { l1 } => (l1, 0.0),
            Regularizer::L2 { l2 } => (0.0, l2),
            Regularizer::ElasticNet { l1, l2 } => (l1, l2),
        };
        Self {
            loss,
            classes,
            l1,
            l2,
        }
    }

    /// The regularizer these weights describe (each `>= 0` and finite).
    pub fn regularizer(&self) -> Result<Regularizer, SpecError> {
        for (name, v) in [("l1", self.l1), ("l2", self.l2)] {
            if !(v >= 0.0 && v.is_finite()) {
                return Err(SpecError::new(
                    &["problem", name],
                    format!("must be >= 0 and finite, got {v}"),
                ));
            }
        }
        Ok(match (self.l1 > 0.0, self.l2 > 0.0) {
            (false, false) => Regularizer::None,
            (true, false) => Regularizer::L1 { l1: self.l1 },
            (false, true) => Regularizer::L2 { l2: self.l2 },
            (true, true) => Regularizer::ElasticNet {
                l1: self.l1,
                l2: self.l2,
            },
        })
    }

    /// The loss of a model of `dimension` coordinates (a run file): a multinomial loss needs
    /// `classes`, at least 2 and dividing the dimension; the others refuse it.
    pub fn loss_for_dimension(&self, dimension: usize) -> Result<Loss, SpecError> {
        match (self.loss, self.classes) {
            (LossName::Squared, None) => Ok(Loss::Squared),
            (LossName::Logistic, None) => Ok(Loss::Logistic),
            (LossName::Multinomial, Some(classes))
                if classes >= 2 && dimension.is_multiple_of(classes) =>
            {
                Ok(Loss::Multinomial { classes })
            }
            (LossName::Multinomial, Some(classes)) => Err(SpecError::new(
                &["problem", "classes"],
                format!("{classes} must be at least 2 and divide the dimension {dimension}"),
            )),
            (LossName::Multinomial, None) => Err(SpecError::new(
                &["problem", "loss"],
                "loss = \"multinomial\" needs `classes`",
            )),
            (_, Some(_)) => Err(stray_classes()),
        }
    }

    /// The loss on data with `data_classes` class labels (`None`: not class labels), as a
    /// scenario reads it: the classes come from the data; written ones must agree.
    pub fn loss_for_data(&self, data_classes: Option<usize>) -> Result<Loss, SpecError> {
        match (self.loss, self.classes, data_classes) {
            (LossName::Squared, None, _) => Ok(Loss::Squared),
            (LossName::Logistic, None, _) => Ok(Loss::Logistic),
            (LossName::Multinomial, _, None) => Err(SpecError::new(
                &["problem", "loss"],
                "loss = \"multinomial\" needs class labels in the data",
            )),
            (LossName::Multinomial, Some(written), Some(classes)) if written != classes => {
                Err(SpecError::new(
                    &["problem", "classes"],
                    format!("{written}, but the data has {classes} classes"),
                ))
            }
            (LossName::Multinomial, _, Some(classes)) => Ok(Loss::Multinomial { classes }),
            (_, Some(_), _) => Err(stray_classes()),
        }
    }
}

fn stray_classes() -> SpecError {
    SpecError::new(
        &["problem", "classes"],
        "only applies to loss = \"multinomial\"",
    )
}
