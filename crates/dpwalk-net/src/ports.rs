//! Listen ports for members started together on one host (`dpwalk swarm`, the tests).
//!
//! The ports are chosen before the nodes start (every member's address is in the run file), so
//! each is free when chosen and bound by its node a moment later. A port the kernel hands out for
//! `bind(0)` lies in its *ephemeral* range, the range it also draws from for the local port of
//! every outgoing connection: while a few hundred nodes start and dial each other, one of those
//! connections can take a chosen port before its node binds it, and the node fails with "address
//! in use" (seen with 256 nodes on a busy machine). Ports below the ephemeral range are never
//! given to an outgoing connection, so only another program that binds that very port can take
//! one, and each is checked free when chosen.

use std::io;
use std::net::{Ipv4Addr, TcpListener};

/// The kernel's ephemeral range when it cannot be read (IANA's, which BSDs and macOS use).
const IANA_EPHEMERAL: (u16, u16) = (49152, 65535);
/// How far below the ephemeral range ports are looked for.
const SPAN: u16 = 16384;
/// The lowest port looked at (below are the well-known and commonly registered ones).
const LOWEST: u16 = 10000;

/// `count` distinct ports on 127.0.0.1 that are free now and outside the kernel's ephemeral
/// range, from a starting point that differs between processes (so two swarms started together
/// rarely look at the same ports first).
pub fn free_loopback_ports(count: usize) -> io::Result<Vec<u16>> {
    let (low, _) = ephemeral_range();
    let first = low.saturating_sub(SPAN).max(LOWEST);
    let span = low.saturating_sub(first);
    if usize::from(span) < count {
        // No room below the ephemeral range (an unusual kernel setting): the kernel's choice,
        // with the race described above.
        return kernel_ports(count);
    }
    let start = process_offset() % u32::from(span);
    // Held until all are chosen, so that no port is chosen twice.
    let mut held = Vec::with_capacity(count);
    for k in 0..u32::from(span) {
        if held.len() == count {
            break;
        }
        let port = first + ((start + k) % u32::from(span)) as u16;
        if let Ok(listener) = TcpListener::bind((Ipv4Addr::LOCALHOST, port)) {
            held.push((port, listener));
        }
    }
    if held.len() < count {
        return Err(io::Error::new(
            io::ErrorKind::AddrInUse,
            format!(
                "found {} free ports of the {count} needed between {first} and {low}",
                held.len()
            ),
        ));
    }
    Ok(held.into_iter().map(|(port, _)| port).collect())
}

/// `count` ports the kernel chooses (`bind(0)`), in its ephemeral range.
fn kernel_ports(count: usize) -> io::Result<Vec<u16>> {
    let held = (0..count)
        .map(|_| TcpListener::bind((Ipv4Addr::LOCALHOST, 0)))
        .collect::<io::Result<Vec<_>>>()?;
    held.iter().map(|l| Ok(l.local_addr()?.port())).collect()
}

/// The kernel's ephemeral port range (Linux's `ip_local_port_range`; IANA's elsewhere).
fn ephemeral_range() -> (u16, u16) {
    std::fs::read_to_string("/proc/sys/net/ipv4/ip_local_port_range")
        .ok()
        .and_then(|text| {
            let mut fields = text.split_whitespace().map(str::parse::<u16>);
            match (fields.next(), fields.next()) {
                (Some(Ok(low)), Some(Ok(high))) if low <= high => Some((low, high)),
                _ => None,
            }
        })
        .unwrap_or(IANA_EPHEMERAL)
}

/// A number that differs between processes and between calls: where the search starts.
fn process_offset() -> u32 {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.subsec_nanos());
    std::process::id().wrapping_mul(2_654_435_761) ^ nanos
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ports_are_distinct_free_and_below_the_ephemeral_range() {
        let ports = free_loopback_ports(64).unwrap();
        let (low, _) = ephemeral_range();
        let mut sorted = ports.clone();
        sorted.sort_unstable();
        sorted.dedup();
        assert_eq!(sorted.len(), 64);
        for &p in &ports {
            assert!((LOWEST..low).contains(&p), "{p} not below {low}");
            // Released: a node can bind it.
            TcpListener::bind((Ipv4Addr::LOCALHOST, p)).unwrap();
        }
    }
}
