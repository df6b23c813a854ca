//! Durability of file-system changes: the one helper the ledger (`dpwalk-privacy`) and the node's
//! state, keys and final model (`dpwalk-net`) share.

use std::fs::File;
use std::path::Path;

/// Fsyncs the directory containing `path`, so that a file created, truncated or renamed there
/// survives a crash (its data needs its own `sync_all`). A no-op where directories cannot be
/// opened (not Unix).
pub fn sync_parent(path: &Path) -> std::io::Result<()> {
    #[cfg(unix)]
    {
        let parent = match path.parent() {
            Some(p) if !p.as_os_str().is_empty() => p,
            _ => Path::new("."),
        };
        File::open(parent)?.sync_all()?;
    }
    #[cfg(not(unix))]
    let _ = path;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_parent_of_a_file_and_of_a_bare_name_sync() {
        let dir = std::env::temp_dir();
        assert!(sync_parent(&dir.join("any-file")).is_ok());
        assert!(sync_parent(Path::new("bare-name")).is_ok());
        assert!(sync_parent(&dir.join("no-such-dir").join("f")).is_err());
    }
}
