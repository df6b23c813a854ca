//! Probes, once per build, whether this machine can run the tests that need network namespaces
//! (`tests/hosts.rs`: root and iproute2) and NAT in them (`tests/nat.rs`: iptables as well), so
//! that those tests are marked ignored, with the reason, where they cannot run, rather than
//! reporting `ok` without running (issue 26). It sets the cfgs `dpwalk_no_netns` and
//! `dpwalk_no_iptables`; nothing else is built differently.
//!
//! The probe runs again only when this file or `PATH` changes: after installing iptables (or
//! gaining root), `touch build.rs` to run it again. `.ci/run` installs iptables before the first
//! build for that reason.

use std::process::{Command, Stdio};

/// Whether `cmd args` runs and succeeds, printing nothing.
fn succeeds(cmd: &str, args: &[&str]) -> bool {
    Command::new(cmd)
        .args(args)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

/// Whether this process runs as root (network namespaces need it).
fn is_root() -> bool {
    Command::new("id")
        .arg("-u")
        .output()
        .is_ok_and(|o| o.status.success() && o.stdout.trim_ascii() == b"0")
}

/// Whether a network namespace can be made here, and whether iptables works inside one: a
/// namespace is made and deleted (root in a container without the capability to make one can
/// list namespaces, but not add them).
fn probe() -> (bool, bool) {
    if !is_root() {
        return (false, false);
    }
    let ns = format!("dpwalk-build-probe-{}", std::process::id());
    if !succeeds("ip", &["netns", "add", &ns]) {
        return (false, false);
    }
    let iptables = succeeds("ip", &["netns", "exec", &ns, "iptables", "-S"]);
    let deleted = succeeds("ip", &["netns", "del", &ns]);
    (deleted, deleted && iptables)
}

fn main() {
    println!("cargo::rustc-check-cfg=cfg(dpwalk_no_netns)");
    println!("cargo::rustc-check-cfg=cfg(dpwalk_no_iptables)");
    println!("cargo::rerun-if-changed=build.rs");
    println!("cargo::rerun-if-env-changed=PATH");
    let (netns, iptables) = probe();
    if !netns {
        println!("cargo::rustc-cfg=dpwalk_no_netns");
    }
    if !iptables {
        println!("cargo::rustc-cfg=dpwalk_no_iptables");
    }
}
