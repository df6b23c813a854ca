//! Line-by-line reading shared by the text loaders: transparent gunzip, 1-based line numbers,
//! blank lines skipped, and the field parsers whose failures become [`DataError::Malformed`].

use super::DataError;
use flate2::read::MultiGzDecoder;
use std::fs::File;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};

/// Where in which file a value came from, to build errors that name both.
#[derive(Debug, Clone, Copy)]
pub(crate) struct At<'a> {
    pub path: &'a Path,
    pub line: usize,
}

impl At<'_> {
    /// A [`DataError::Malformed`] at this line.
    pub fn err(&self, reason: impl Into<String>) -> DataError {
        DataError::Malformed {
            path: self.path.to_path_buf(),
            line: self.line,
            reason: reason.into(),
        }
    }

    /// Parses a finite `f64`; `what` names the field in the error.
    pub fn f64(&self, field: &str, what: &str) -> Result<f64, DataError> {
        match field.parse::<f64>() {
            Ok(v) if v.is_finite() => Ok(v),
            Ok(_) => Err(self.err(format!("non-finite {what} `{field}`"))),
            Err(_) => Err(self.err(format!("cannot parse {what} `{field}` as a number"))),
        }
    }
}

/// A file-level error for `path`.
pub(crate) fn file_err(path: &Path, reason: impl Into<String>) -> DataError {
    DataError::File {
        path: path.to_path_buf(),
        reason: reason.into(),
    }
}

fn io_err(path: &Path, source: std::io::Error) -> DataError {
    DataError::Io {
        path: PathBuf::from(path),
        source,
    }
}

/// Calls `f` on every non-blank line of `path` (gunzipped when the name ends in `.gz`), with its
/// 1-based line number and without its line terminator. Stops at the first error.
pub(crate) fn for_each_line(
    path: &Path,
    mut f: impl FnMut(At<'_>, &str) -> Result<(), DataError>,
) -> Result<(), DataError> {
    let file = File::open(path).map_err(|e| io_err(path, e))?;
    let gz = path
        .extension()
        .is_some_and(|e| e.eq_ignore_ascii_case("gz"));
    let mut reader: Box<dyn BufRead> = if gz {
        Box::new(BufReader::new(MultiGzDecoder::new(file)))
    } else {
        Box::new(BufReader::new(file))
    };
    let mut buf = Vec::new();
    let mut line = 0;
    loop {
        buf.clear();
        line += 1;
        let at = At { path, line };
        // Bytes first and UTF-8 checked here, so that a decoding error of the gzip stream (an
        // I/O error) is never mistaken for bad text.
        if reader
            .read_until(b'\n', &mut buf)
            .map_err(|e| io_err(path, e))?
            == 0
        {
            return Ok(());
        }
        let Ok(text) = std::str::from_utf8(&buf) else {
            return Err(at.err("not valid UTF-8 text"));
        };
        let text = text.trim_end_matches(['\n', '\r']);
        if !text.trim().is_empty() {
            f(at, text)?;
        }
    }
}
