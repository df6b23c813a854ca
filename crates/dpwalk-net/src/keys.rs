//! The node's libp2p identity on disk: generated once, never overwritten, readable only by its
//! owner.
//!
//! The file holds the keypair in libp2p's protobuf encoding
//! ([`Keypair::to_protobuf_encoding`]), so other libp2p tools can read it. [`generate`] creates it
//! with mode `0600` and `O_EXCL` (an existing file is never replaced: losing a key changes the
//! node's PeerId and so its membership in every run file that names it), and makes it durable.
//!
//! Decision on loose permissions: [`load`] *refuses* a key file that group or others can read or
//! write (mode `& 0o077 != 0`), like OpenSSH does with private keys, instead of warning. A warning
//! in a daemon's log is easy to miss and the fix (`chmod 600`) is immediate; a leaked key lets
//! anyone impersonate the node to the run. On non-Unix systems no mode is checked or set.

use std::fs::{File, OpenOptions};
use std::io::{ErrorKind, Read, Write};
use std::path::{Path, PathBuf};

use libp2p_identity::{Keypair, PeerId};
use thiserror::Error;

/// A key file is a few dozen bytes; anything much larger is not one (and is not read whole).
const MAX_KEY_FILE: u64 = 4096;

/// Errors of generating and loading identities.
#[derive(Debug, Error)]
pub enum KeyError {
    /// The file already exists; it is left untouched.
    #[error("key file {0} already exists; refusing to overwrite it")]
    Exists(PathBuf),
    /// The file system failed.
    #[error("key file {path}")]
    Io {
        /// The file.
        path: PathBuf,
        /// The reason.
        source: std::io::Error,
    },
    /// Group or others have access to the file.
    #[error("key file {path} has mode {mode:o}, open to other users; run `chmod 600` on it")]
    Permissions {
        /// The file.
        path: PathBuf,
        /// Its permission bits.
        mode: u32,
    },
    /// The file is not a libp2p keypair.
    #[error("key file {path} is not a libp2p keypair: {message}")]
    Decode {
        /// The file.
        path: PathBuf,
        /// The decoder's reason.
        message: String,
    },
}

fn io(path: &Path) -> impl FnOnce(std::io::Error) -> KeyError + '_ {
    move |source| KeyError::Io {
        path: path.to_path_buf(),
        source,
    }
}

/// Generates an ed25519 identity, writes it to `path` (mode `0600`, never replacing a file), and
/// returns it.
pub fn generate(path: &Path) -> Result<Keypair, KeyError> {
    let keypair = Keypair::generate_ed25519();
    let bytes = keypair
        .to_protobuf_encoding()
        .map_err(|e| KeyError::Decode {
            path: path.to_path_buf(),
            message: e.to_string(),
        })?;
    let mut options = OpenOptions::new();
    options.write(true).create_new(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
    let mut file = options.open(path).map_err(|e| match e.kind() {
        ErrorKind::AlreadyExists => KeyError::Exists(path.to_path_buf()),
        _ => io(path)(e),
    })?;
    file.write_all(&bytes).map_err(io(path))?;
    file.sync_all().map_err(io(path))?;
    dpwalk_core::durable::sync_parent(path).map_err(io(path))?;
    Ok(keypair)
}

/// Reads the identity at `path`, refusing a file open to other users.
pub fn load(path: &Path) -> Result<Keypair, KeyError> {
    let file = File::open(path).map_err(io(path))?;
    let meta = file.metadata().map_err(io(path))?;
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = meta.permissions().mode() & 0o777;
        if mode & 0o077 != 0 {
            return Err(KeyError::Permissions {
                path: path.to_path_buf(),
                mode,
            });
        }
    }
    if meta.len() > MAX_KEY_FILE {
        return Err(KeyError::Decode {
            path: path.to_path_buf(),
            message: format!("{} bytes is too large for a key", meta.len()),
        });
    }
    let mut bytes = Vec::new();
    file.take(MAX_KEY_FILE)
        .read_to_end(&mut bytes)
        .map_err(io(path))?;
    Keypair::from_protobuf_encoding(&bytes).map_err(|e| KeyError::Decode {
        path: path.to_path_buf(),
        message: e.to_string(),
    })
}

/// The PeerId of a keypair.
pub fn peer_id(keypair: &Keypair) -> PeerId {
    keypair.public().to_peer_id()
}
