//! Bad peers and bad bytes over the wire, against real `dpwalk node` processes on loopback: each
//! is refused with its reason (or its stream dropped before decoding), the node stays up, keeps
//! training, and the run ends with every member holding the same final model.
//!
//! Three daemons (members 0–2) start; the test itself plays member 3 with that member's real key
//! (a member gone bad) and an outsider. It refuses every token routed to it (`Leaving`, so the
//! walk re-routes at once), then sends node 0 one token per defect, an outsider's hello to node 1
//! (its connection is refused: only members get in), and raw frames (random bytes, an oversized
//! prefix, trailing bytes) to node 2 under member 3's key. Last, it goes away and the real member
//! 3 joins: the walk still completes. On the way, final models that must not end the run
//! are refused: sealed for another run file, sealed by an outsider's key, with a broken seal,
//! and a well-sealed one from member 3's key that never showed its run file.

#![allow(clippy::expect_used, clippy::unwrap_used)]

mod common;

use std::collections::HashSet;
use std::io;
use std::time::{Duration, Instant};

use common::{Cluster, DIM, Reaper, tcp_swarm, temp_dir, write_cluster};
use dpwalk_core::spec::Noise;
use dpwalk_net::behaviour::{self, Behaviour, BehaviourEvent};
use dpwalk_net::codec::{self, Avoided, Hello, Message, Rejection, Token};
use dpwalk_net::limits::Limits;
use dpwalk_net::run::Run;
use dpwalk_net::seal::seal;
use futures::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt, StreamExt};
use libp2p::identity::Keypair;
use libp2p::request_response::{self, OutboundRequestId, ProtocolSupport};
use libp2p::swarm::SwarmEvent;
use libp2p::{Multiaddr, PeerId, StreamProtocol, Swarm};

const STEPS: u64 = 6000;

/// A peer speaking `/dpwalk/token/1` through the daemon's own behaviour, with any identity.
struct Speaker {
    swarm: Swarm<Behaviour>,
    hello: Hello,
    welcomed: HashSet<PeerId>,
    tokens_refused: u64,
    /// Whether it shows its run file (a hello on connection, a welcome to a hello).
    greets: bool,
}

impl Speaker {
    fn new(keypair: Keypair, run: &Run) -> Self {
        let members: Vec<PeerId> = run.members().iter().map(|m| m.peer).collect();
        let limits = Limits::for_peers(members.len(), None);
        Self {
            swarm: behaviour::build(
                keypair,
                false,
                false,
                Duration::from_secs(5),
                members,
                &limits,
                None,
            )
            .unwrap(),
            hello: Hello {
                run_hash: run.hash().0,
                run: run.canonical_toml(),
                your_last: None,
            },
            welcomed: HashSet::new(),
            tokens_refused: 0,
            greets: true,
        }
    }

    /// A speaker that never shows its run file: the daemons never verify it.
    fn silent(keypair: Keypair, run: &Run) -> Self {
        Self {
            greets: false,
            ..Self::new(keypair, run)
        }
    }

    /// Handles one event: answers the daemons' requests as a member that is leaving (a hello gets
    /// our run, a token is refused, anything else acknowledged); returns responses and failures
    /// of our own requests.
    fn handle(
        &mut self,
        event: SwarmEvent<BehaviourEvent>,
    ) -> Option<(OutboundRequestId, Result<Message, String>)> {
        use request_response::{Event, Message as Rr};
        match event {
            SwarmEvent::ConnectionEstablished { peer_id, .. } if self.greets => {
                let hello = Message::Hello(self.hello.clone());
                self.swarm
                    .behaviour_mut()
                    .token
                    .send_request(&peer_id, hello);
                None
            }
            SwarmEvent::Behaviour(BehaviourEvent::Token(event)) => match event {
                Event::Message {
                    message:
                        Rr::Request {
                            request, channel, ..
                        },
                    ..
                } => {
                    let answer = match request {
                        Message::Hello(_) if self.greets => Message::Welcome(self.hello.clone()),
                        Message::Hello(_) => Message::Refused(Rejection::NotVerified),
                        Message::Token { .. } => {
                            self.tokens_refused += 1;
                            Message::Refused(Rejection::Leaving)
                        }
                        Message::Released { run_id, seq } => Message::Ack { run_id, seq },
                        Message::FinalModel(m) => Message::Ack {
                            run_id: m.run_id,
                            seq: m.seq,
                        },
                        other => panic!("unexpected request {other:?}"),
                    };
                    let _ = self
                        .swarm
                        .behaviour_mut()
                        .token
                        .send_response(channel, answer);
                    None
                }
                Event::Message {
                    peer,
                    message:
                        Rr::Response {
                            request_id,
                            response,
                        },
                    ..
                } => {
                    if matches!(response, Message::Welcome(_)) {
                        self.welcomed.insert(peer);
                    }
                    Some((request_id, Ok(response)))
                }
                Event::OutboundFailure {
                    request_id, error, ..
                } => Some((request_id, Err(error.to_string()))),
                _ => None,
            },
            _ => None,
        }
    }

    /// Drives the swarm (answering the daemons) until `until` holds or `limit` passes.
    async fn drive(&mut self, limit: Duration, mut until: impl FnMut(&Self) -> bool) {
        let end = tokio::time::Instant::now() + limit;
        while !until(self) {
            tokio::select! {
                event = self.swarm.select_next_some() => { self.handle(event); }
                () = tokio::time::sleep_until(end) => panic!("timed out after {limit:?}"),
                () = tokio::time::sleep(Duration::from_millis(50)) => {}
            }
        }
    }

    /// Sends `message` to `peer` and returns its answer (or the failure), serving the daemons'
    /// requests meanwhile.
    async fn ask(&mut self, peer: PeerId, message: Message) -> Result<Message, String> {
        let id = self
            .swarm
            .behaviour_mut()
            .token
            .send_request(&peer, message);
        let end = tokio::time::Instant::now() + Duration::from_secs(15);
        loop {
            tokio::select! {
                event = self.swarm.select_next_some() => {
                    if let Some((got, answer)) = self.handle(event)
                        && got == id
                    {
                        return answer;
                    }
                }
                () = tokio::time::sleep_until(end) => panic!("no answer to a request"),
            }
        }
    }
}

/// A codec that writes a request's bytes as they are, for frames the real codec would not make.
#[derive(Debug, Clone, Copy, Default)]
struct RawCodec;

impl request_response::Codec for RawCodec {
    type Protocol = StreamProtocol;
    type Request = Vec<u8>;
    type Response = Vec<u8>;

    async fn read_request<T: AsyncRead + Unpin + Send>(
        &mut self,
        _: &StreamProtocol,
        io: &mut T,
    ) -> io::Result<Vec<u8>> {
        let mut v = Vec::new();
        io.read_to_end(&mut v).await?;
        Ok(v)
    }

    async fn read_response<T: AsyncRead + Unpin + Send>(
        &mut self,
        _: &StreamProtocol,
        io: &mut T,
    ) -> io::Result<Vec<u8>> {
        let mut v = Vec::new();
        io.take(codec::MAX_FRAME as u64).read_to_end(&mut v).await?;
        if v.is_empty() {
            return Err(io::Error::new(io::ErrorKind::UnexpectedEof, "no answer"));
        }
        Ok(v)
    }

    async fn write_request<T: AsyncWrite + Unpin + Send>(
        &mut self,
        _: &StreamProtocol,
        io: &mut T,
        request: Vec<u8>,
    ) -> io::Result<()> {
        io.write_all(&request).await?;
        io.close().await
    }

    async fn write_response<T: AsyncWrite + Unpin + Send>(
        &mut self,
        _: &StreamProtocol,
        io: &mut T,
        response: Vec<u8>,
    ) -> io::Result<()> {
        io.write_all(&response).await
    }
}

/// Sends raw `bytes` on `/dpwalk/token/1` to `addr` as `keypair`; returns what came back: a
/// well-formed answer would be `Ok` with its bytes.
async fn send_raw(keypair: &Keypair, addr: &Multiaddr, bytes: Vec<u8>) -> Result<Vec<u8>, String> {
    let mut swarm = tcp_swarm(
        keypair.clone(),
        request_response::Behaviour::with_codec(
            RawCodec,
            [(
                StreamProtocol::new(codec::PROTOCOL),
                ProtocolSupport::Outbound,
            )],
            request_response::Config::default().with_request_timeout(Duration::from_secs(10)),
        ),
    );
    let Some(libp2p::multiaddr::Protocol::P2p(peer)) = addr.iter().last() else {
        panic!("address without /p2p");
    };
    swarm.dial(addr.clone()).unwrap();
    let id = swarm.behaviour_mut().send_request(&peer, bytes);
    loop {
        match swarm.select_next_some().await {
            SwarmEvent::Behaviour(request_response::Event::Message {
                message:
                    request_response::Message::Response {
                        request_id,
                        response,
                    },
                ..
            }) if request_id == id => return Ok(response),
            SwarmEvent::Behaviour(request_response::Event::OutboundFailure {
                request_id,
                error,
                ..
            }) if request_id == id => return Err(error.to_string()),
            SwarmEvent::OutgoingConnectionError { error, .. } => return Err(error.to_string()),
            _ => {}
        }
    }
}

/// The node is up: its process runs and its status endpoint answers.
fn assert_up(cluster: &Cluster, reaper: &mut Reaper, i: usize) {
    let (_, child) = reaper.0.iter_mut().find(|(j, _)| *j == i).unwrap();
    assert!(
        child.try_wait().unwrap().is_none(),
        "node {i} died:\n{}",
        cluster.log(i)
    );
    assert!(cluster.status(i).is_some(), "node {i} does not answer");
}

fn token(run_id: &str, seq: u64, w: Vec<f64>) -> Message {
    Message::Token {
        token: Token {
            run_id: run_id.into(),
            seq,
            w,
        },
        avoid: Vec::new(),
    }
}

/// `message`, a token, with advice to avoid `member` for a second.
fn with_advice(message: Message, member: u32) -> Message {
    let Message::Token { token, .. } = message else {
        panic!("not a token");
    };
    Message::Token {
        token,
        avoid: vec![Avoided {
            member,
            for_ms: 1000,
        }],
    }
}

fn refusal(answer: Result<Message, String>) -> Rejection {
    match answer {
        Ok(Message::Refused(why)) => why,
        other => panic!("expected a refusal, got {other:?}"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_peers_and_bytes_are_refused_and_the_walk_completes() {
    let dir = temp_dir("hostile");
    let cluster = write_cluster(&dir, &["127.0.0.1"; 4], STEPS, Noise::Sigma(0.5));
    let run = Run::load(&dir.join("run.toml")).unwrap();
    let run_id = run.run_id().to_string();
    let peer = |i: usize| cluster.members[i].peer;

    // The bad member listens where the run file says member 3 is, with member 3's key.
    let mut bad = Speaker::new(cluster.members[3].keypair.clone(), &run);
    bad.swarm
        .listen_on(cluster.members[3].multiaddr().parse().unwrap())
        .unwrap();
    let mut reaper = Reaper::default();
    for i in 0..3 {
        reaper.0.push((i, cluster.spawn(i, &[])));
    }
    // Wait until the daemons have verified us and the walk is under way at node 0.
    let walking = |c: &Cluster| c.status(0).and_then(|s| s.last_seq).is_some_and(|s| s >= 2);
    bad.drive(Duration::from_secs(60), |s| {
        s.welcomed.contains(&peer(0)) && walking(&cluster)
    })
    .await;

    // A member's tokens, one defect each; seq K − 1 is newer than anything node 0 has seen.
    let last = STEPS - 1;
    let zeros = vec![0.0; DIM];
    let mut nan = zeros.clone();
    nan[2] = f64::NAN;
    let mut inf = zeros.clone();
    inf[1] = f64::NEG_INFINITY;
    let cases = [
        (token("another-run", last, zeros.clone()), "wrong run"),
        (token(&run_id, last, vec![0.0; DIM + 3]), "wrong dimension"),
        (token(&run_id, last, nan), "NaN"),
        (token(&run_id, last, inf), "infinity"),
        (token(&run_id, STEPS, zeros.clone()), "seq K"),
        (token(&run_id, u64::MAX, zeros.clone()), "seq u64::MAX"),
        (token(&run_id, 0, zeros.clone()), "old seq"),
        (
            with_advice(token(&run_id, last, zeros.clone()), 99),
            "advice naming member 99",
        ),
    ];
    let mut reasons = Vec::new();
    for (message, what) in cases {
        let why = refusal(bad.ask(peer(0), message).await);
        eprintln!("{what}: refused with {why}");
        reasons.push(why);
    }
    assert_eq!(
        reasons[0],
        Rejection::WrongRun {
            got: "another-run".into()
        }
    );
    assert_eq!(
        reasons[1],
        Rejection::WrongDimension {
            expected: DIM as u64,
            got: DIM as u64 + 3
        }
    );
    assert_eq!(reasons[2], Rejection::NonFinite { index: 2 });
    assert_eq!(reasons[3], Rejection::NonFinite { index: 1 });
    assert_eq!(
        reasons[4],
        Rejection::SeqOutOfRange {
            seq: STEPS,
            steps: STEPS
        }
    );
    assert_eq!(
        reasons[5],
        Rejection::SeqOutOfRange {
            seq: u64::MAX,
            steps: STEPS
        }
    );
    assert!(
        matches!(reasons[6], Rejection::Replay { seq: 0, last_seen } if last_seen >= 2),
        "{:?}",
        reasons[6]
    );
    assert_eq!(
        reasons[7],
        Rejection::BadAdvice {
            reason: "member 99 of a run of 4 members".into()
        }
    );
    // Final models that must not end the run, from the verified bad member: sealed by member 3
    // for another run file, sealed by a key outside the run, a broken seal.
    let member3 = cluster.members[3].keypair.clone();
    let sealed = |key: &Keypair, hash: [u8; 32]| {
        seal(key, &hash, run_id.clone(), STEPS, vec![0.25; DIM]).unwrap()
    };
    let other_run = Message::FinalModel(sealed(&member3, [0; 32]));
    let outsider_key = Keypair::generate_ed25519();
    let by_outsider = Message::FinalModel(sealed(&outsider_key, run.hash().0));
    let mut broken = sealed(&member3, run.hash().0);
    broken.seal.signature[0] ^= 1;
    let finals = [
        (other_run, Rejection::BadSeal),
        (
            by_outsider,
            Rejection::NotMember {
                peer: outsider_key.public().to_peer_id().to_base58(),
            },
        ),
        (Message::FinalModel(broken), Rejection::BadSeal),
    ];
    for (message, expected) in finals {
        assert_eq!(refusal(bad.ask(peer(0), message).await), expected);
        reasons.push(expected);
    }
    let log0 = cluster.log(0);
    for why in &reasons {
        assert!(
            log0.contains(&why.to_string()),
            "node 0 did not log {why}:\n{log0}"
        );
    }
    assert_up(&cluster, &mut reaper, 0);

    // A second process with member 3's key, on a connection of its own, while the first is
    // verified on its connection: a well-sealed final model without a hello on that connection
    // is refused (issue 27, item 4; it used to end the run with its `z`).
    let mut twin = Speaker::silent(member3.clone(), &run);
    twin.swarm
        .add_peer_address(peer(0), cluster.members[0].multiaddr().parse().unwrap());
    let by_twin = Message::FinalModel(sealed(&member3, run.hash().0));
    assert_eq!(
        refusal(twin.ask(peer(0), by_twin).await),
        Rejection::NotVerified
    );
    assert!(
        cluster.final_model(0).is_none(),
        "node 0 took the twin's model"
    );
    assert_up(&cluster, &mut reaper, 0);
    drop(twin);

    // An outsider: its connection is refused once Noise has proven who it is, before any
    // message; node 1 says so.
    let mut outsider = Speaker::new(Keypair::generate_ed25519(), &run);
    outsider
        .swarm
        .add_peer_address(peer(1), cluster.members[1].multiaddr().parse().unwrap());
    let hello = Message::Hello(outsider.hello.clone());
    let answer = outsider.ask(peer(1), hello).await;
    assert!(answer.is_err(), "an outsider got an answer: {answer:?}");
    let t0 = Instant::now();
    while !cluster.log(1).contains("not members of the run") {
        assert!(
            t0.elapsed() < Duration::from_secs(30),
            "node 1 did not log the outsider:\n{}",
            cluster.log(1)
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    assert_up(&cluster, &mut reaper, 1);

    // Raw frames to node 2, under member 3's key (an outsider would not get in): none gets an
    // answer, each costs the node a dropped stream.
    let addr2: Multiaddr = format!("{}/p2p/{}", cluster.members[2].multiaddr(), peer(2))
        .parse()
        .unwrap();
    let mut random = vec![0u8; 512];
    let mut x = 0x2545_F491_4F6C_DD1Du64;
    for b in &mut random {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        *b = x as u8;
    }
    let mut oversized = ((codec::MAX_PAYLOAD + 1) as u32).to_le_bytes().to_vec();
    oversized.resize(4 + codec::MAX_PAYLOAD + 1, 0xAB);
    // Trailing bytes inside the frame: the prefix counts 5 bytes past the message.
    let mut trailing = codec::encode(&token(&run_id, last, zeros.clone())).unwrap();
    let len = u32::from_le_bytes(trailing[..4].try_into().unwrap()) + 5;
    trailing[..4].copy_from_slice(&len.to_le_bytes());
    trailing.extend_from_slice(b"extra");
    let mut lying_prefix = codec::encode(&token(&run_id, last, zeros.clone())).unwrap();
    lying_prefix[..4].copy_from_slice(&8u32.to_le_bytes());
    for (bytes, what) in [
        (random, "random bytes"),
        (oversized, "a frame over the limit"),
        (trailing, "a token with trailing bytes"),
        (lying_prefix, "a prefix shorter than the frame"),
        (Vec::new(), "an empty stream"),
    ] {
        let answer = send_raw(&cluster.members[3].keypair, &addr2, bytes).await;
        eprintln!("{what}: {answer:?}");
        assert!(answer.is_err(), "{what} got an answer: {answer:?}");
        assert_up(&cluster, &mut reaper, 2);
    }
    // Four frames refused with a reason (the empty stream is only cut short).
    let log2 = cluster.log(2);
    assert_eq!(
        log2.matches("refused an inbound frame").count(),
        4,
        "node 2 did not log each refused frame:\n{log2}"
    );

    // The nodes kept training meanwhile.
    let before: Vec<u64> = (0..3)
        .map(|i| cluster.status(i).unwrap().steps_done)
        .collect();
    let t0 = Instant::now();
    bad.drive(Duration::from_secs(60), |_| {
        (0..3).all(|i| cluster.status(i).is_some_and(|s| s.steps_done > before[i]))
    })
    .await;
    eprintln!(
        "every node stepped again within {:?}; {} tokens refused by the bad member",
        t0.elapsed(),
        bad.tokens_refused
    );

    // The bad member leaves. Member 3's key comes back without showing its run file and offers a
    // well-sealed final model: refused, it is not verified.
    drop(bad);
    drop(outsider);
    let mut unverified = Speaker::silent(member3.clone(), &run);
    unverified
        .swarm
        .add_peer_address(peer(1), cluster.members[1].multiaddr().parse().unwrap());
    let valid = Message::FinalModel(sealed(&member3, run.hash().0));
    assert_eq!(
        refusal(unverified.ask(peer(1), valid).await),
        Rejection::NotVerified
    );
    assert!(cluster.final_model(1).is_none(), "node 1 took the model");
    assert_up(&cluster, &mut reaper, 1);
    drop(unverified);
    // The real member 3 joins, and the walk ends with one model everywhere.
    reaper.0.push((3, cluster.spawn(3, &[])));
    cluster.wait_all(&mut reaper.0, Duration::from_secs(240));
    cluster.agreed_model();
    let _ = std::fs::remove_dir_all(&dir);
}
