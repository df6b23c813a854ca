//! The node's status: a snapshot the event loop updates, served over a minimal local HTTP endpoint
//! as JSON (`GET /status`) and as Prometheus metrics (`GET /metrics`), and fetched by
//! `dpwalk status` and `dpwalk swarm` with [`fetch`].
//!
//! The endpoint is meant for the operator's own machine (bind it to 127.0.0.1): it reveals the
//! node's step count and privacy spent, never `u_i` or the token.
//!
//! It is bounded, so that no client can take the node's descriptors or CPU: at most
//! [`MAX_CONNECTIONS`] connections are open at once, and a connection beyond that closes the
//! oldest one (a client that connected and sent nothing; a real request is answered within a
//! moment), so a flood of idle connections cannot lock out the operator's next request. A
//! request head must arrive within [`HEAD_TIMEOUT`]. An error accepting a connection (`EMFILE`:
//! the process is out of descriptors) pauses the accept loop, from [`ACCEPT_PAUSE`] doubling up to
//! [`ACCEPT_PAUSE_MAX`], instead of retrying at once (the listening socket stays readable, so
//! retrying at once spins a core), and is logged at WARN at most once per [`ACCEPT_PAUSE_MAX`].

use std::sync::{Arc, Mutex};
use std::time::Duration;

use prometheus_client::encoding::text::encode;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::registry::Registry;
use serde::{Deserialize, Serialize};
use thiserror::Error;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

/// Largest request head the endpoint reads.
const MAX_REQUEST: usize = 8 * 1024;
/// Largest response [`fetch`] reads.
const MAX_RESPONSE: u64 = 16 * 1024 * 1024;
/// Connections the endpoint keeps open at once.
pub const MAX_CONNECTIONS: usize = 32;
/// How long a connection may take to send its request head.
pub const HEAD_TIMEOUT: Duration = Duration::from_secs(5);
/// The first pause after an error accepting a connection.
pub const ACCEPT_PAUSE: Duration = Duration::from_millis(10);
/// The longest pause after errors accepting connections in a row.
pub const ACCEPT_PAUSE_MAX: Duration = Duration::from_secs(1);

/// What a node reports about itself.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Status {
    /// The run.
    pub run_id: String,
    /// The run's hash (hex).
    pub run_hash: String,
    /// This node's index.
    pub index: usize,
    /// This node's PeerId.
    pub peer_id: String,
    /// Addresses the node listens on.
    pub listen: Vec<String>,
    /// Members connected and verified (same run file), by index.
    pub peers: Vec<usize>,
    /// Members connected whose run file differs, by index.
    pub mismatched: Vec<usize>,
    /// How each connected member is connected (direct, relayed or hole-punched), by index.
    #[serde(default)]
    pub connections: Vec<MemberLink>,
    /// This node's addresses that members confirmed they can dial (AutoNAT), and a relay's own.
    #[serde(default)]
    pub external: Vec<String>,
    /// Contributions made.
    pub steps_done: u64,
    /// Visits forwarded without a step (budget spent).
    pub skipped: u64,
    /// The highest seq handled.
    pub last_seq: Option<u64>,
    /// The run's `K`.
    pub total_steps: u64,
    /// Whether this node holds the token (an outgoing token not yet acknowledged).
    pub holding: bool,
    /// Tokens handled per second over the last few seconds.
    pub hop_rate: f64,
    /// δ of the figures.
    pub delta: f64,
    /// Local ε spent (against an eavesdropper on every token this node sent, which bounds what
    /// any member learns); `null` if unbounded.
    pub epsilon_local: Option<f64>,
    /// Network ε, "network (path hidden)" (see `final_model.json`'s `epsilon_network`); `null`
    /// where none is proved or computed.
    #[serde(default)]
    pub epsilon_network: Option<f64>,
    /// The unit of the ε figures: `user-level` (all of a member's records) or `record-level`
    /// (one record; the run file's `[privacy] unit = "record"`).
    #[serde(default = "crate::final_model::user_level")]
    pub unit: String,
    /// The ε of the budget the node enforces (the run's or its own, the stricter), if any.
    pub budget_epsilon: Option<f64>,
    /// Whether the final model is written.
    pub finished: bool,
    /// Of this node's latest contributions (up to [`crate::quality::CLIP_WINDOW`]), how many
    /// the clip cut; `null` before the first.
    #[serde(default)]
    pub clipped_recent: Option<ClippedRecent>,
    /// Active warnings on the model's quality ([`crate::quality`]), each with what to change.
    #[serde(default)]
    pub warnings: Vec<String>,
}

/// How one member is connected.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct MemberLink {
    /// The member's index.
    pub member: usize,
    /// Direct, relayed or hole-punched (the best of its open connections).
    pub via: crate::reach::Via,
}

/// How many of the latest contributions the clip cut.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ClippedRecent {
    /// Updates cut to `C`.
    pub clipped: usize,
    /// Contributions counted.
    pub of: usize,
}

/// Errors of the status endpoint and client.
#[derive(Debug, Error)]
pub enum StatusError {
    /// Binding or connecting failed.
    #[error("status endpoint {addr}")]
    Io {
        /// The address.
        addr: String,
        /// The reason.
        source: std::io::Error,
    },
    /// The address is not `host:port`, or its host name does not resolve.
    #[error("status address {addr}: {message}")]
    Address {
        /// The address.
        addr: String,
        /// Why.
        message: String,
    },
    /// The endpoint's port is taken.
    #[error(
        "status address {addr} is already in use (another dpwalk node, or another program): stop it, or choose another port in node.toml's `status`"
    )]
    InUse {
        /// The address.
        addr: String,
    },
    /// Nothing listens at the address.
    #[error(
        "nothing is listening at {addr}: is the node running (`dpwalk node --config node.toml`), and is this its node.toml's `status` address?"
    )]
    NotListening {
        /// The address.
        addr: String,
    },
    /// No answer within the timeout: the connection was not accepted (a host that is down, a
    /// firewall that drops), or accepted and never answered (not a node's status port, or a
    /// node that is stuck).
    #[error(
        "no answer from {addr} within {seconds} s ({what}): is the node running, is this its node.toml's `status` address, and can this host reach it (a firewall)?"
    )]
    NoAnswer {
        /// The address.
        addr: String,
        /// The timeout.
        seconds: f64,
        /// What did not come back: the connection or the answer.
        what: &'static str,
    },
    /// The answer was not a status.
    #[error("status endpoint {addr} answered something that is not a dpwalk status: {message}")]
    Malformed {
        /// The address.
        addr: String,
        /// Why.
        message: String,
    },
}

/// The metrics registry and its gauges, updated from each snapshot.
struct Metrics {
    registry: Registry,
    steps: Gauge<i64>,
    skipped: Gauge<i64>,
    last_seq: Gauge<i64>,
    peers: Gauge<i64>,
    holding: Gauge<i64>,
    hop_rate: Gauge<f64, std::sync::atomic::AtomicU64>,
    /// Labelled with the figure's `unit` (user-level or record-level): a dashboard must not read
    /// a record-level ε as a user-level one.
    epsilon_local: Family<Vec<(String, String)>, Gauge<f64, std::sync::atomic::AtomicU64>>,
    /// The path-hidden network ε, labelled with its unit and `view = "network (path hidden)"`;
    /// absent where none is proved.
    epsilon_network: Family<Vec<(String, String)>, Gauge<f64, std::sync::atomic::AtomicU64>>,
}

impl Metrics {
    fn new() -> Self {
        let mut registry = Registry::with_prefix("dpwalk");
        let m = Metrics {
            registry: Registry::default(), // replaced below, once the gauges are registered
            steps: Gauge::default(),
            skipped: Gauge::default(),
            last_seq: Gauge::default(),
            peers: Gauge::default(),
            holding: Gauge::default(),
            hop_rate: Gauge::default(),
            epsilon_local: Family::default(),
            epsilon_network: Family::default(),
        };
        registry.register("steps_done", "Contributions made", m.steps.clone());
        registry.register(
            "skipped",
            "Visits forwarded without a step",
            m.skipped.clone(),
        );
        registry.register(
            "last_seq",
            "Highest seq handled (-1: none)",
            m.last_seq.clone(),
        );
        registry.register("peers", "Verified member connections", m.peers.clone());
        registry.register("holding", "1 while holding the token", m.holding.clone());
        registry.register("hop_rate", "Tokens handled per second", m.hop_rate.clone());
        registry.register(
            "epsilon_local",
            "Local epsilon spent (+Inf: unbounded), labelled with its unit",
            m.epsilon_local.clone(),
        );
        registry.register(
            "epsilon_network",
            "Network epsilon (path hidden, a priori) of a DP-SGD walk on the complete graph, labelled with its unit",
            m.epsilon_network.clone(),
        );
        Metrics { registry, ..m }
    }

    fn update(&self, s: &Status) {
        let int = |v: u64| i64::try_from(v).unwrap_or(i64::MAX);
        self.steps.set(int(s.steps_done));
        self.skipped.set(int(s.skipped));
        self.last_seq.set(s.last_seq.map_or(-1, int));
        self.peers.set(s.peers.len() as i64);
        self.holding.set(i64::from(s.holding));
        self.hop_rate.set(s.hop_rate);
        self.epsilon_local
            .get_or_create(&vec![("unit".to_string(), s.unit.clone())])
            .set(s.epsilon_local.unwrap_or(f64::INFINITY));
        if let Some(e) = s.epsilon_network {
            self.epsilon_network
                .get_or_create(&vec![
                    ("unit".to_string(), s.unit.clone()),
                    ("view".to_string(), "network (path hidden)".to_string()),
                ])
                .set(e);
        }
    }
}

/// The snapshot shared by the event loop (writer) and the endpoint (reader).
#[derive(Clone)]
pub struct SharedStatus(Arc<Mutex<(Status, Arc<Metrics>)>>);

impl std::fmt::Debug for SharedStatus {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("SharedStatus")
    }
}

impl Default for SharedStatus {
    fn default() -> Self {
        SharedStatus(Arc::new(Mutex::new((
            Status::default(),
            Arc::new(Metrics::new()),
        ))))
    }
}

impl SharedStatus {
    /// Replaces the snapshot.
    pub fn set(&self, status: Status) {
        if let Ok(mut guard) = self.0.lock() {
            guard.1.update(&status);
            guard.0 = status;
        }
    }

    /// The status as JSON, or why there is none (an error answer, never an empty 200).
    fn json(&self) -> Result<String, String> {
        let guard = self
            .0
            .lock()
            .map_err(|_| "the status was poisoned by a panicking writer".to_string())?;
        serde_json::to_string_pretty(&guard.0).map_err(|e| format!("status not serializable: {e}"))
    }

    fn metrics(&self) -> String {
        let mut out = String::new();
        if let Ok(g) = self.0.lock() {
            // Writing to a String cannot fail.
            let _ = encode(&mut out, &g.1.registry);
        }
        out
    }
}

/// Binds the endpoint at `addr`; returns the bound address and the serving future.
pub async fn bind(
    addr: &str,
    status: SharedStatus,
) -> Result<(std::net::SocketAddr, impl Future<Output = ()>), StatusError> {
    let io = |source| StatusError::Io {
        addr: addr.to_string(),
        source,
    };
    let listener = TcpListener::bind(addr).await.map_err(|source| {
        if source.kind() == std::io::ErrorKind::AddrInUse {
            StatusError::InUse {
                addr: addr.to_string(),
            }
        } else {
            io(source)
        }
    })?;
    let local = listener.local_addr().map_err(io)?;
    Ok((local, serve(listener, status)))
}

/// The accept loop: see the module's documentation for its bounds.
async fn serve(listener: TcpListener, status: SharedStatus) {
    // The open connections, oldest first.
    let mut open: std::collections::VecDeque<tokio::task::AbortHandle> =
        std::collections::VecDeque::new();
    let mut pause = ACCEPT_PAUSE;
    let mut failed = 0u64;
    let mut last_warning: Option<std::time::Instant> = None;
    loop {
        let stream = match listener.accept().await {
            Ok((stream, _)) => stream,
            Err(e) => {
                failed += 1;
                if last_warning.is_none_or(|t| t.elapsed() >= ACCEPT_PAUSE_MAX) {
                    last_warning = Some(std::time::Instant::now());
                    tracing::warn!(error = %e, failed, "the status endpoint cannot accept connections; pausing");
                    failed = 0;
                }
                // Out of descriptors: the oldest connection gives one back.
                if let Some(oldest) = open.pop_front() {
                    oldest.abort();
                }
                tokio::time::sleep(pause).await;
                pause = (pause * 2).min(ACCEPT_PAUSE_MAX);
                continue;
            }
        };
        pause = ACCEPT_PAUSE;
        open.retain(|task| !task.is_finished());
        while open.len() >= MAX_CONNECTIONS {
            if let Some(oldest) = open.pop_front() {
                oldest.abort();
            }
        }
        let status = status.clone();
        let task = tokio::spawn(async move {
            if let Err(e) = answer(stream, &status).await {
                tracing::debug!(error = %e, "status request failed");
            }
        });
        open.push_back(task.abort_handle());
    }
}

async fn answer(mut stream: TcpStream, status: &SharedStatus) -> std::io::Result<()> {
    let mut head = Vec::new();
    let mut buf = [0u8; 1024];
    while !head.windows(4).any(|w| w == b"\r\n\r\n") && head.len() < MAX_REQUEST {
        let n = tokio::time::timeout(HEAD_TIMEOUT, stream.read(&mut buf))
            .await
            .map_err(|_| std::io::Error::from(std::io::ErrorKind::TimedOut))??;
        if n == 0 {
            break;
        }
        head.extend_from_slice(&buf[..n]);
    }
    let line = String::from_utf8_lossy(&head);
    let path = line.split_whitespace().nth(1).unwrap_or("");
    let (code, kind, body) = match path {
        "/status" | "/" => match status.json() {
            Ok(json) => ("200 OK", "application/json", json),
            Err(why) => ("500 Internal Server Error", "text/plain", why + "\n"),
        },
        "/metrics" => (
            "200 OK",
            "application/openmetrics-text; version=1.0.0; charset=utf-8",
            status.metrics(),
        ),
        _ => (
            "404 Not Found",
            "text/plain",
            "try /status or /metrics\n".into(),
        ),
    };
    let response = format!(
        "HTTP/1.1 {code}\r\nContent-Type: {kind}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    );
    stream.write_all(response.as_bytes()).await?;
    stream.shutdown().await
}

/// Fetches `path` from the endpoint at `addr` (blocking, with a timeout): the body of a 200.
pub fn fetch(addr: &str, path: &str, timeout: Duration) -> Result<String, StatusError> {
    use std::io::{Read, Write};
    let io = |source| StatusError::Io {
        addr: addr.to_string(),
        source,
    };
    let silent = |source: std::io::Error| {
        if is_timeout(&source) {
            no_answer(addr, timeout, "the connection was accepted, no answer came")
        } else {
            io(source)
        }
    };
    let mut stream = connect(addr, timeout)?;
    stream.set_read_timeout(Some(timeout)).map_err(io)?;
    stream.set_write_timeout(Some(timeout)).map_err(io)?;
    stream
        .write_all(format!("GET {path} HTTP/1.0\r\nHost: {addr}\r\n\r\n").as_bytes())
        .map_err(silent)?;
    let mut response = String::new();
    stream
        .take(MAX_RESPONSE)
        .read_to_string(&mut response)
        .map_err(silent)?;
    let malformed = |message: &str| StatusError::Malformed {
        addr: addr.to_string(),
        message: message.to_string(),
    };
    let (head, body) = response
        .split_once("\r\n\r\n")
        .ok_or_else(|| malformed("no HTTP header"))?;
    if !head.starts_with("HTTP/1.1 200") {
        let status_line = head.lines().next().unwrap_or("");
        // The reason the node gave, cut short: the body comes from whatever answered.
        let reason: String = body.trim().chars().take(200).collect();
        return Err(malformed(&format!("{status_line}: {reason}")));
    }
    Ok(body.to_string())
}

/// Connects to `addr` (`host:port`; a host name such as `localhost` is resolved, and each of its
/// addresses tried in turn), within `timeout` per address.
/// Whether an I/O error is a timeout (a socket timeout reads as `WouldBlock` on Unix).
fn is_timeout(e: &std::io::Error) -> bool {
    matches!(
        e.kind(),
        std::io::ErrorKind::TimedOut | std::io::ErrorKind::WouldBlock
    )
}

fn no_answer(addr: &str, timeout: Duration, what: &'static str) -> StatusError {
    StatusError::NoAnswer {
        addr: addr.to_string(),
        seconds: timeout.as_secs_f64(),
        what,
    }
}

fn connect(addr: &str, timeout: Duration) -> Result<std::net::TcpStream, StatusError> {
    use std::net::ToSocketAddrs;
    let bad = |message: String| StatusError::Address {
        addr: addr.to_string(),
        message,
    };
    if addr
        .rsplit_once(':')
        .is_none_or(|(host, port)| host.is_empty() || port.parse::<u16>().is_err())
    {
        return Err(bad(
            "not a host:port address (e.g. 127.0.0.1:9101 or localhost:9101)".into(),
        ));
    }
    let targets: Vec<std::net::SocketAddr> = addr
        .to_socket_addrs()
        .map_err(|e| bad(format!("the host does not resolve: {e}")))?
        .collect();
    let mut refused = 0;
    let mut last = None;
    for target in &targets {
        match std::net::TcpStream::connect_timeout(target, timeout) {
            Ok(stream) => return Ok(stream),
            Err(e) => {
                refused += usize::from(e.kind() == std::io::ErrorKind::ConnectionRefused);
                last = Some(e);
            }
        }
    }
    match last {
        _ if refused == targets.len() && refused > 0 => Err(StatusError::NotListening {
            addr: addr.to_string(),
        }),
        Some(source) if is_timeout(&source) => {
            Err(no_answer(addr, timeout, "the connection was not accepted"))
        }
        Some(source) => Err(StatusError::Io {
            addr: addr.to_string(),
            source,
        }),
        None => Err(bad("the host resolves to no address".into())),
    }
}

/// Fetches and decodes the status at `addr`.
pub fn fetch_status(addr: &str, timeout: Duration) -> Result<Status, StatusError> {
    let body = fetch(addr, "/status", timeout)?;
    serde_json::from_str(&body).map_err(|e| StatusError::Malformed {
        addr: addr.to_string(),
        message: e.to_string(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_port_that_accepts_and_never_answers_is_named_with_the_fix() {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap().to_string();
        // Accepted by the kernel's backlog, never read nor answered.
        let err = fetch_status(&addr, Duration::from_millis(200)).unwrap_err();
        assert!(matches!(err, StatusError::NoAnswer { .. }), "{err:?}");
        let text = err.to_string();
        assert!(
            text.contains(&format!("no answer from {addr}")) && text.contains("`status` address"),
            "{text}"
        );
        assert!(!text.contains("os error"), "{text}");
        drop(listener);
    }

    #[tokio::test]
    async fn a_status_port_in_use_is_named_with_the_key_to_change() {
        let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = taken.local_addr().unwrap().to_string();
        let Err(err) = bind(&addr, SharedStatus::default()).await else {
            panic!("the port is taken");
        };
        assert!(matches!(err, StatusError::InUse { .. }), "{err:?}");
        assert!(err.to_string().contains("node.toml's `status`"), "{err}");
    }

    #[test]
    fn the_metrics_label_epsilon_with_its_unit() {
        let shared = SharedStatus::default();
        shared.set(Status {
            unit: "record-level".into(),
            epsilon_local: Some(0.5),
            epsilon_network: Some(0.25),
            steps_done: 3,
            ..Status::default()
        });
        let text = shared.metrics();
        assert!(
            text.contains("dpwalk_epsilon_local{unit=\"record-level\"} 0.5"),
            "{text}"
        );
        assert!(text.contains("dpwalk_steps_done 3"), "{text}");
        assert!(
            text.contains(
                "dpwalk_epsilon_network{unit=\"record-level\",view=\"network (path hidden)\"} 0.25"
            ),
            "{text}"
        );
    }
}
