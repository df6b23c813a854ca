//! Test fixtures: files written to a unique temporary path, plain or gzipped, and the vendored
//! samples of the repository's `data/` folder.

use std::io::Write;
use std::path::PathBuf;
use std::sync::atomic::{AtomicUsize, Ordering};

static COUNTER: AtomicUsize = AtomicUsize::new(0);

/// A temporary file, removed when dropped.
#[derive(Debug)]
pub struct TempFile(PathBuf);

impl std::ops::Deref for TempFile {
    type Target = std::path::Path;
    fn deref(&self) -> &std::path::Path {
        &self.0
    }
}

impl Drop for TempFile {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

/// Writes `contents` to a fresh file whose name ends in `name`; gzipped if `name` ends in `.gz`.
pub fn temp_file(name: &str, contents: &str) -> TempFile {
    let n = COUNTER.fetch_add(1, Ordering::Relaxed);
    let path = std::env::temp_dir().join(format!("dpwalk-data-{}-{n}-{name}", std::process::id()));
    let mut file = std::fs::File::create(&path).unwrap();
    if name.ends_with(".gz") {
        let mut gz = flate2::write::GzEncoder::new(file, flate2::Compression::fast());
        gz.write_all(contents.as_bytes()).unwrap();
        gz.finish().unwrap();
    } else {
        file.write_all(contents.as_bytes()).unwrap();
    }
    TempFile(path)
}

/// The repository root, where the vendored `data/` folder lives.
pub fn repo_root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// A vendored sample, e.g. `vendored("adult/adult-sample.data.gz")`.
pub fn vendored(rel: &str) -> PathBuf {
    repo_root().join("data").join(rel)
}
