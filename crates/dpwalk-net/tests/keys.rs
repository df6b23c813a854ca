//! The identity file: mode 0600, round trip to the same PeerId, never overwritten, refused when
//! open to others or not a key.

#![allow(clippy::expect_used, clippy::unwrap_used)]

use std::os::unix::fs::PermissionsExt;

use dpwalk_net::keys::{self, KeyError};

#[test]
fn generate_then_load_gives_the_same_peer() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("node.key");
    let generated = keys::generate(&path).unwrap();
    let mode = std::fs::metadata(&path).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o600);
    let loaded = keys::load(&path).unwrap();
    assert_eq!(keys::peer_id(&loaded), keys::peer_id(&generated));
    // And it is the same secret: signatures verify across the two.
    let sig = loaded.sign(b"dpwalk").unwrap();
    assert!(generated.public().verify(b"dpwalk", &sig));
    // Two generations give two identities.
    let other = keys::generate(&dir.path().join("other.key")).unwrap();
    assert_ne!(keys::peer_id(&other), keys::peer_id(&generated));
}

#[test]
fn never_overwrites() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("node.key");
    keys::generate(&path).unwrap();
    let before = std::fs::read(&path).unwrap();
    assert!(matches!(keys::generate(&path), Err(KeyError::Exists(p)) if p == path));
    assert_eq!(std::fs::read(&path).unwrap(), before);
}

#[test]
fn refuses_loose_permissions() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("node.key");
    keys::generate(&path).unwrap();
    for mode in [0o644, 0o640, 0o604, 0o660] {
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(mode)).unwrap();
        assert!(
            matches!(keys::load(&path), Err(KeyError::Permissions { mode: m, .. }) if m == mode),
            "{mode:o}"
        );
    }
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o400)).unwrap();
    assert!(keys::load(&path).is_ok());
}

#[test]
fn refuses_what_is_not_a_key() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("junk.key");
    for junk in [&b""[..], b"not a key", &[0xffu8; 5000]] {
        std::fs::write(&path, junk).unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600)).unwrap();
        assert!(
            matches!(keys::load(&path), Err(KeyError::Decode { .. })),
            "{} bytes",
            junk.len()
        );
    }
    assert!(matches!(
        keys::load(&dir.path().join("missing.key")),
        Err(KeyError::Io { .. })
    ));
}
