//! Requests that came before their sender's hello on the same connection.
//!
//! A member that dials another for a hop sends its hello and then the token, on two streams of
//! the new connection, and the token is often read first. Refused as not verified, it cost its
//! sender a pause ([`crate::custody::VERIFY_PAUSE`]) and a retry: about 22 ms for every hop over
//! a pair of members that had not spoken before (issue 28). Instead such a request waits here,
//! its answer owed, until a hello or a welcome on that connection is accepted (then it is handled
//! as if it came then) or [`PARK_FOR`] passes (then it is refused as not verified, and its sender
//! says hello again and retries, as before). Nothing is taken from a connection that has not
//! carried a hello: a parked request is handled by the same code, with the same checks, once it
//! has.

use std::time::{Duration, Instant};

use libp2p::PeerId;
use libp2p::request_response::ResponseChannel;
use libp2p::swarm::ConnectionId;

use super::{Node, NodeError};
use crate::codec::{Message, Rejection};

/// How long a request waits for the hello on its connection: well within a request's timeout
/// (5 s by default), far longer than a hello takes to follow on a working connection.
pub(super) const PARK_FOR: Duration = Duration::from_millis(500);
/// At most this many requests wait at once; more are refused as not verified at once (a member
/// sending requests without its hello cannot make this node hold their answers without bound).
pub(super) const PARK_MAX: usize = 64;

/// A request waiting for the hello on its connection.
pub(super) struct Parked {
    peer: PeerId,
    connection: ConnectionId,
    request: Message,
    channel: ResponseChannel<Message>,
    since: Instant,
}

impl Node<'_> {
    /// Keeps `request` until `connection` carries a hello (see the module's doc).
    pub(super) fn park(
        &mut self,
        peer: PeerId,
        connection: ConnectionId,
        request: Message,
        channel: ResponseChannel<Message>,
    ) {
        if self.parked.len() >= PARK_MAX {
            self.respond(channel, Message::Refused(Rejection::NotVerified));
            return;
        }
        tracing::debug!(%peer, "a request before the hello on its connection: it waits for it");
        self.parked.push(Parked {
            peer,
            connection,
            request,
            channel,
            since: Instant::now(),
        });
    }

    /// `connection` carried an accepted hello or welcome: the requests waiting for it are
    /// handled now.
    pub(super) fn unpark(&mut self, connection: ConnectionId) -> Result<(), NodeError> {
        let (ready, waiting): (Vec<Parked>, Vec<Parked>) = std::mem::take(&mut self.parked)
            .into_iter()
            .partition(|p| p.connection == connection);
        self.parked = waiting;
        for p in ready {
            self.on_request(p.peer, p.connection, p.request, p.channel)?;
        }
        Ok(())
    }

    /// Refuses, as not verified, the requests that waited [`PARK_FOR`]; drops those of closed
    /// connections (their answer cannot be sent).
    pub(super) fn expire_parked(&mut self) {
        if self.parked.is_empty() {
            return;
        }
        let now = Instant::now();
        let (expired, waiting): (Vec<Parked>, Vec<Parked>) = std::mem::take(&mut self.parked)
            .into_iter()
            .partition(|p| now.duration_since(p.since) >= PARK_FOR);
        self.parked = waiting;
        for p in expired {
            tracing::debug!(peer = %p.peer, "no hello on the connection of a request: refused as not verified");
            self.respond(p.channel, Message::Refused(Rejection::NotVerified));
        }
    }

    /// `connection` closed: its waiting requests cannot be answered.
    pub(super) fn forget_parked(&mut self, connection: ConnectionId) {
        self.parked.retain(|p| p.connection != connection);
    }

    /// When the oldest waiting request is due to be refused.
    pub(super) fn parked_deadline(&self) -> Option<Instant> {
        self.parked.iter().map(|p| p.since + PARK_FOR).min()
    }
}
