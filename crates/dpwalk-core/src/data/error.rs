//! The one error type of the data layer: every failure names the file, and the line where a
//! line is to blame, so that a user can fix a dataset without reading code.

use std::path::PathBuf;

/// Why a dataset could not be loaded, generated, split or partitioned.
#[derive(Debug, thiserror::Error)]
pub enum DataError {
    /// The file could not be opened or read (including a corrupt gzip stream).
    #[error("{}", path.display())]
    Io {
        /// The file.
        path: PathBuf,
        /// The underlying error.
        #[source]
        source: std::io::Error,
    },
    /// One line of the file is malformed.
    #[error("{}:{line}: {reason}", path.display())]
    Malformed {
        /// The file.
        path: PathBuf,
        /// 1-based line number.
        line: usize,
        /// What is wrong with the line.
        reason: String,
    },
    /// The file as a whole is unusable (no data rows, labels that do not fit the requested kind).
    #[error("{}: {reason}", path.display())]
    File {
        /// The file.
        path: PathBuf,
        /// What is wrong with it.
        reason: String,
    },
    /// A parameter is out of range or parameters contradict each other.
    #[error("invalid data parameters: {0}")]
    Param(String),
}

impl DataError {
    /// The 1-based line number of a [`DataError::Malformed`] error.
    pub fn line(&self) -> Option<usize> {
        match self {
            DataError::Malformed { line, .. } => Some(*line),
            _ => None,
        }
    }
}
