//! Network namespaces for the tests of separate hosts (`tests/hosts.rs`) and of hosts behind NAT
//! (`tests/nat.rs`): each namespace is a host with its own addresses, wired to the others by veth
//! pairs on bridges. Every name starts with `dpw<pid>-`, so that two test processes never share
//! one, and every namespace a [`Namespaces`] made is deleted when it drops, a failed test's too.
//!
//! Only private addresses of these namespaces are used: nothing here reaches the machine's own
//! network.

use std::process::Command;

/// `cmd` with `args`; whether it succeeded (its stderr is shown when not).
pub fn run(cmd: &str, args: &[&str]) -> bool {
    match Command::new(cmd).args(args).output() {
        Ok(out) if out.status.success() => true,
        Ok(out) => {
            eprintln!(
                "{cmd} {}: {}",
                args.join(" "),
                String::from_utf8_lossy(&out.stderr).trim()
            );
            false
        }
        Err(e) => {
            eprintln!("{cmd} {}: {e}", args.join(" "));
            false
        }
    }
}

/// `ip` with `args`.
pub fn ip(args: &[&str]) -> bool {
    run("ip", args)
}

/// Namespaces `dpw<pid>-<name>`, all deleted on drop.
#[derive(Debug, Default)]
pub struct Namespaces {
    names: Vec<String>,
}

impl Namespaces {
    /// Adds namespace `dpw<pid>-<name>` with its loopback up; its full name, or `None` where
    /// namespaces cannot be made (not root, no iproute2).
    pub fn add(&mut self, name: &str) -> Option<String> {
        let ns = format!("dpw{}-{name}", std::process::id());
        if !ip(&["netns", "add", &ns]) {
            return None;
        }
        self.names.push(ns.clone());
        ip(&["-n", &ns, "link", "set", "lo", "up"]).then_some(ns)
    }

    /// A bridge `bridge`, up, in namespace `ns`.
    pub fn bridge(&self, ns: &str, bridge: &str) -> bool {
        ip(&["-n", ns, "link", "add", bridge, "type", "bridge"])
            && ip(&["-n", ns, "link", "set", bridge, "up"])
    }

    /// A veth pair from port `port` on `bridge` in namespace `hub` to interface `dev` of namespace
    /// `host`, which gets address `cidr` (`10.213.0.1/24`); both ends up.
    pub fn wire(
        &self,
        hub: &str,
        bridge: &str,
        port: &str,
        host: &str,
        dev: &str,
        cidr: &str,
    ) -> bool {
        ip(&[
            "-n", hub, "link", "add", port, "type", "veth", "peer", "name", dev, "netns", host,
        ]) && ip(&["-n", hub, "link", "set", port, "master", bridge, "up"])
            && ip(&["-n", host, "addr", "add", cidr, "dev", dev])
            && ip(&["-n", host, "link", "set", dev, "up"])
    }

    /// `cmd` with `args` inside namespace `ns`.
    pub fn exec(&self, ns: &str, cmd: &str, args: &[&str]) -> bool {
        let mut all = vec!["netns", "exec", ns, cmd];
        all.extend_from_slice(args);
        ip(&all)
    }
}

impl Drop for Namespaces {
    fn drop(&mut self) {
        for ns in &self.names {
            let _ = Command::new("ip").args(["netns", "del", ns]).output();
        }
    }
}

/// `dpwalk status --json` of the node whose endpoint is `addr` inside namespace `ns` (a node's
/// status endpoint is on its own namespace's loopback).
pub fn status_in(ns: &str, addr: &str) -> Option<dpwalk_net::status::Status> {
    let out = Command::new("ip")
        .args(["netns", "exec", ns, env!("CARGO_BIN_EXE_dpwalk")])
        .args(["status", "--json", "--addr", addr])
        .output()
        .ok()?;
    serde_json::from_slice(&out.stdout).ok()
}
