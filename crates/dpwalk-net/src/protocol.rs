//! `/dpwalk/token/1` as a libp2p request-response codec: the stream carries exactly one frame of
//! [`crate::codec`] each way. The size limit is checked on the 4-byte prefix before the payload is
//! read, so an oversized or hostile frame costs the reader nothing; a frame that fails to decode
//! fails the stream with `InvalidData`. request-response does not report a request that failed to
//! read to the behaviour (only at debug level, and without the reason), so `read_frame` logs the
//! refusal itself, with its reason; the node keeps running.

use std::io;

use futures::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use libp2p::StreamProtocol;
use libp2p::request_response;

use crate::codec::{self, CodecError, Message};

/// The protocol name as libp2p wants it.
pub const TOKEN_PROTOCOL: StreamProtocol = StreamProtocol::new(codec::PROTOCOL);

/// The codec: requests and responses are both [`Message`]s.
#[derive(Debug, Clone, Copy, Default)]
pub struct TokenCodec;

fn invalid(e: CodecError) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, e)
}

/// Reads one frame: the prefix, its limit check, then exactly that many payload bytes. A refusal
/// is logged here (see the module docs); a stream cut short is logged at debug level only, since
/// a peer that goes away mid-frame is not hostile.
async fn read_frame<T: AsyncRead + Unpin + Send>(io: &mut T) -> io::Result<Message> {
    let refused = |e: CodecError| {
        tracing::warn!(reason = %e, "refused an inbound frame");
        invalid(e)
    };
    let cut = |e: io::Error| {
        tracing::debug!(error = %e, "an inbound frame was cut short");
        e
    };
    let mut prefix = [0u8; 4];
    io.read_exact(&mut prefix).await.map_err(cut)?;
    let len = codec::payload_len(prefix).map_err(refused)?;
    let mut payload = vec![0u8; len];
    io.read_exact(&mut payload).await.map_err(cut)?;
    codec::decode_payload(&payload).map_err(refused)
}

async fn write_frame<T: AsyncWrite + Unpin + Send>(
    io: &mut T,
    message: &Message,
) -> io::Result<()> {
    let frame = codec::encode(message).map_err(invalid)?;
    io.write_all(&frame).await?;
    io.flush().await
}

impl request_response::Codec for TokenCodec {
    type Protocol = StreamProtocol;
    type Request = Message;
    type Response = Message;

    async fn read_request<T>(&mut self, _: &StreamProtocol, io: &mut T) -> io::Result<Message>
    where
        T: AsyncRead + Unpin + Send,
    {
        read_frame(io).await
    }

    async fn read_response<T>(&mut self, _: &StreamProtocol, io: &mut T) -> io::Result<Message>
    where
        T: AsyncRead + Unpin + Send,
    {
        read_frame(io).await
    }

    async fn write_request<T>(
        &mut self,
        _: &StreamProtocol,
        io: &mut T,
        request: Message,
    ) -> io::Result<()>
    where
        T: AsyncWrite + Unpin + Send,
    {
        write_frame(io, &request).await
    }

    async fn write_response<T>(
        &mut self,
        _: &StreamProtocol,
        io: &mut T,
        response: Message,
    ) -> io::Result<()>
    where
        T: AsyncWrite + Unpin + Send,
    {
        write_frame(io, &response).await
    }
}
