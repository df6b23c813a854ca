//! The `[[members]]` of a run file, checked and canonicalized.

use std::collections::HashSet;

use dpwalk_core::spec::SpecError;
use libp2p_identity::PeerId;

use super::{Member, MemberSpec};

fn member_error(i: usize, key: &str, message: impl std::fmt::Display) -> SpecError {
    SpecError::new(&["members", &i.to_string(), key], message)
}

/// Sorts `members` by index and checks indices `0..n` each once, PeerIds valid and distinct,
/// addresses plausible; canonicalizes the PeerId strings.
pub(super) fn check_members(members: &mut [MemberSpec]) -> Result<Vec<Member>, SpecError> {
    let n = members.len();
    if n < 2 {
        return Err(SpecError::new(
            &["members"],
            format!("{n} members: a walk needs at least 2"),
        ));
    }
    // Problems are reported at the entry's position in the file, so check before sorting.
    let mut seen = vec![None; n];
    let mut peers = HashSet::with_capacity(n);
    let mut checked = Vec::with_capacity(n);
    for (i, m) in members.iter_mut().enumerate() {
        if m.index >= n {
            return Err(member_error(
                i,
                "index",
                format!("{} is not in 0..{n} ({n} members)", m.index),
            ));
        }
        if let Some(first) = seen[m.index].replace(i) {
            return Err(member_error(
                i,
                "index",
                format!("{} is already used by members[{first}]", m.index),
            ));
        }
        let peer: PeerId = m.peer_id.parse().map_err(|e| {
            member_error(
                i,
                "peer-id",
                format!("{:?} is not a PeerId: {e}", m.peer_id),
            )
        })?;
        if !peers.insert(peer) {
            return Err(member_error(i, "peer-id", format!("{peer} appears twice")));
        }
        for addr in &m.addrs {
            if let Err(e) = addr.parse::<libp2p::Multiaddr>() {
                return Err(member_error(
                    i,
                    "addrs",
                    format!("{addr:?} is not a multiaddr (e.g. /ip4/10.0.0.1/tcp/4001): {e}"),
                ));
            }
        }
        m.peer_id = peer.to_base58();
        checked.push(Member {
            index: m.index,
            peer,
            addrs: m.addrs.clone(),
        });
    }
    members.sort_by_key(|m| m.index);
    checked.sort_by_key(|m| m.index);
    Ok(checked)
}
