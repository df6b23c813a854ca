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
    Ok(Dataset {
        features,
        labels,
        n_features: PIXELS,
        label_kind: LabelKind::Classes(CLASSES),
    })
}

#[cfg(test)]
#[allow(clippy::unwrap_used)] // a failed unwrap is a failed test
mod tests {
    use super::*;
    use crate::data::testutil::{temp_file, vendored};

    fn row(pixel: &str, label: &str) -> String {
        let mut fields = vec!["0"; PIXELS];
        fields[0] = pixel;
        fields[PIXELS - 1] = "255";
        format!("{},{label}\n", fields.join(","))
    }

    #[test]
    fn scales_pixels_and_reads_digits() {
        let f = temp_file("m.csv.gz", &(row("51", "7") + &row("0", "0")));
        let d = read(&f).unwrap();
        assert_eq!((d.rows(), d.n_features), (2, PIXELS));
        assert_eq!(d.row(0)[0], 0.2);
        assert_eq!(d.row(0)[PIXELS - 1], 1.0);
        assert_eq!(d.labels, vec![7.0, 0.0]);
        assert_eq!(d.label_kind, LabelKind::Classes(10));
    }

    #[test]
    fn rejects_bad_pixels_labels_and_widths_at_their_line() {
        let good = row("3", "1");
        for bad in [
            row("256", "1"),
            row("-1", "1"),
            row("x", "1"),
            row("1", "10"),
            row("1", "a"),
            "1,2,3\n".into(),
        ] {
            let f = temp_file("n.csv", &(good.clone() + &good + &bad));
            assert_eq!(
                read(&f).unwrap_err().line(),
                Some(3),
                "{}",
                &bad[bad.len() - 8..]
            );
        }
        let f = temp_file("o.csv", "");
        assert!(matches!(read(&f), Err(DataError::File { .. })));
    }

    #[test]
    fn vendored_sample_has_50_images_per_digit() {
        let d = read(&vendored("mnist/mnist-500.csv.gz")).unwrap();
        assert_eq!((d.rows(), d.n_features), (500, 784));
        for digit in 0..10 {
            assert_eq!(d.labels.iter().filter(|&&y| y == digit as f64).count(), 50);
        }
        assert!(d.features.iter().all(|v| (0.0..=1.0).contains(v)));
        assert!(d.features.contains(&1.0));
    }
}
