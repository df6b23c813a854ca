//! MNIST in CSV form: no header, 784 pixel values 0–255 (28×28, row-major), then the digit 0–9.
//! Pixels are scaled to `[0, 1]`; labels are classes `0..9` (row normalization, if wanted, is
//! [`super::preprocess::clip_row_norms`]).

use super::read::{At, file_err, for_each_line};
use super::{DataError, Dataset, LabelKind};
use std::path::Path;

/// Pixels per image.
pub const PIXELS: usize = 784;
/// Number of digit classes.
pub const CLASSES: usize = 10;

/// Reads an MNIST CSV file.
pub fn read(path: &Path) -> Result<Dataset, DataError> {
    let mut features = Vec::new();
    let mut labels = Vec::new();
    for_each_line(path, |at: At<'_>, line| {
        let n_fields = line.split(',').count();
        if n_fields != PIXELS + 1 {
            return Err(at.err(format!("expected {} fields, found {n_fields}", PIXELS + 1)));
        }
        let mut fields = line.split(',').map(str::trim);
        for field in fields.by_ref().take(PIXELS) {
            let v = at.f64(field, "pixel")?;
            if !(0.0..=255.0).contains(&v) {
                return Err(at.err(format!("pixel `{field}` outside 0..=255")));
            }
            features.push(v / 255.0);
        }
        let label = fields.next().unwrap_or_default();
        match label.parse::<usize>() {
            Ok(d) if d < CLASSES => labels.push(d as f64),
            _ => return Err(at.err(format!("label `{label}` is not a digit 0-9"))),
        }
        Ok(())
    })?;
    if labels.is_empty() {
        return Err(file_err(path, "no data rows"));
    }
    Ok(Dataset { features, labels, n_features: PIXELS, label_kind: LabelKind::Classes(CLASSES) })
}
