//! A very small HTTP/1.1 server for `/healthz` and `/livez` (kube-proxy's
//! semantics and JSON bodies: 503 once a change has waited for a sync
//! longer than twice the sync period, and for `/healthz` also when the
//! node is not eligible) and `/metrics` (Prometheus text). One request per
//! connection, `GET` only; anything else gets 404 or 405.
//!
//! The agent runs two, as kube-proxy does ([`Paths`]): the health server
//! (`--healthz-bind-address`, on every address by default, because load
//! balancers and the kubelet probe it) answers `/healthz` and `/livez` and
//! nothing else, so what it exposes to the network is one bit of health
//! and a timestamp; the metrics server (`--metrics-bind-address`, local by
//! default) answers `/metrics` as well. And one per Service health check
//! (`crate::service_health`), on its `healthCheckNodePort`, which answers
//! every request with the Service's verdict, as kube-proxy's does.
//!
//! It is hardened against clients that misbehave: every connection is
//! served in its own task, so idle or slow ones (slowloris) cannot hold
//! up `/healthz`; the request head must arrive within [`HEAD_TIMEOUT`] and
//! fit in [`MAX_HEAD`] bytes (431 otherwise), a request with a body is
//! refused (413), a whole exchange is cut after [`CONNECTION_TIMEOUT`], at
//! most [`MAX_CONNECTIONS`] are served at once (more are closed at once),
//! and when `accept` fails (out of file descriptors, for example) the
//! server backs off from [`ACCEPT_BACKOFF_MIN`] to [`ACCEPT_BACKOFF_MAX`]
//! and logs once per burst of failures instead of spinning.

use crate::kube_proxy_metrics::wall_now;
use crate::metrics::Metrics;
use std::future::Future;
use std::io;
use std::sync::{Arc, RwLock};
use std::time::Duration;
use svcnet_core::proxy::service_health::ServiceHealthCheck;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::Semaphore;

/// The largest request head read (request line and headers).
pub const MAX_HEAD: usize = 8 * 1024;

/// How long a client has to send its request head.
pub const HEAD_TIMEOUT: Duration = Duration::from_secs(5);

/// How long one connection may last, answer included.
pub const CONNECTION_TIMEOUT: Duration = Duration::from_secs(10);

/// The most connections served at once.
pub const MAX_CONNECTIONS: usize = 512;

/// The first wait after `accept` fails.
pub const ACCEPT_BACKOFF_MIN: Duration = Duration::from_millis(100);

/// The longest wait between failing `accept`s.
pub const ACCEPT_BACKOFF_MAX: Duration = Duration::from_secs(1);

/// Which paths a server answers.
#[derive(Debug, Clone)]
pub enum Paths {
    /// `/healthz` and `/livez` only: the health port, which the network
    /// can reach.
    Health,
    /// `/metrics`, `/healthz` and `/livez`: the metrics port.
    Metrics,
    /// Every request, with this Service's health check (kept up to date
    /// by the agent's syncs) and the proxy's `/healthz` verdict.
    Service(Arc<RwLock<ServiceHealthCheck>>),
}

/// What the server answers from.
#[derive(Debug, Clone)]
pub struct Endpoints {
    /// The agent's counters and health.
    pub metrics: Arc<Metrics>,
    /// The paths served; every other one is 404.
    pub paths: Paths,
}

/// Serves connections on `listener` until the task is dropped.
pub async fn serve(listener: TcpListener, endpoints: Endpoints) {
    serve_from(|| listener.accept(), endpoints).await;
}

/// Serves the connections `accept` yields, backing off while it fails.
async fn serve_from<A, F>(mut accept: A, endpoints: Endpoints)
where
    A: FnMut() -> F,
    F: Future<Output = io::Result<(TcpStream, std::net::SocketAddr)>>,
{
    let slots = Arc::new(Semaphore::new(MAX_CONNECTIONS));
    let mut backoff: Option<Duration> = None;
    loop {
        let stream = match accept().await {
            Ok((stream, _)) => {
                if backoff.take().is_some() {
                    tracing::info!("accepting HTTP connections again");
                }
                stream
            }
            Err(e) => {
                let wait = match backoff {
                    None => {
                        tracing::warn!(error = %e, "cannot accept HTTP connections; backing off");
                        ACCEPT_BACKOFF_MIN
                    }
                    Some(wait) => (wait * 2).min(ACCEPT_BACKOFF_MAX),
                };
                backoff = Some(wait);
                tokio::time::sleep(wait).await;
                continue;
            }
        };
        let Ok(slot) = slots.clone().try_acquire_owned() else {
            // Too many at once: this one is closed unanswered.
            drop(stream);
            continue;
        };
        let endpoints = endpoints.clone();
        tokio::spawn(async move {
            // A client that goes away or stalls is not the agent's problem.
            let _ = tokio::time::timeout(CONNECTION_TIMEOUT, answer(stream, &endpoints)).await;
            drop(slot);
        });
    }
}

/// What a client sent before its request is routed.
enum Head {
    /// The client closed the connection before the head was complete.
    Closed,
    /// The head is larger than [`MAX_HEAD`].
    TooLarge,
    /// The head, up to and with its blank line.
    Complete(Vec<u8>),
}

/// Reads the request head.
async fn read_head(stream: &mut TcpStream) -> io::Result<Head> {
    let mut buf = Vec::with_capacity(1024);
    let mut chunk = [0u8; 1024];
    // Where the search for the blank line resumes: only new bytes (and the
    // 3 before them) are searched, so a client sending one byte at a time
    // costs linear time, not quadratic.
    let mut searched = 0;
    loop {
        let end = (buf[searched..].windows(4))
            .position(|w| w == b"\r\n\r\n")
            .map(|at| searched + at + 4);
        if end.unwrap_or(buf.len()) > MAX_HEAD {
            return Ok(Head::TooLarge);
        }
        if let Some(end) = end {
            buf.truncate(end);
            return Ok(Head::Complete(buf));
        }
        searched = buf.len().saturating_sub(3);
        let n = stream.read(&mut chunk).await?;
        if n == 0 {
            return Ok(Head::Closed);
        }
        buf.extend_from_slice(&chunk[..n]);
    }
}

async fn answer(mut stream: TcpStream, endpoints: &Endpoints) -> io::Result<()> {
    const TEXT: &str = "text/plain; charset=utf-8";
    let Ok(head) = tokio::time::timeout(HEAD_TIMEOUT, read_head(&mut stream)).await else {
        return Ok(());
    };
    let mut refused = true;
    let Reply {
        status,
        content_type,
        body,
        headers,
    } = match head? {
        Head::Closed => return Ok(()),
        Head::TooLarge => Reply::new(
            "431 Request Header Fields Too Large",
            TEXT,
            format!("request head larger than {MAX_HEAD} bytes\n"),
        ),
        Head::Complete(head) => {
            let head = String::from_utf8_lossy(&head);
            let mut lines = head.lines();
            let mut parts = lines.next().unwrap_or_default().split_whitespace();
            let (method, target) = (parts.next().unwrap_or_default(), parts.next().unwrap_or_default());
            let path = target.split('?').next().unwrap_or_default();
            if has_body(lines) {
                Reply::new("413 Payload Too Large", TEXT, "no request body is accepted\n".into())
            } else {
                refused = false;
                route(method, path, endpoints)
            }
        }
    };
    let response = format!(
        "HTTP/1.1 {status}\r\nContent-Type: {content_type}\r\n{headers}Content-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    );
    stream.write_all(response.as_bytes()).await?;
    stream.shutdown().await?;
    if refused {
        // Read (a bounded part of) what the client still sends, so that
        // closing does not reset the connection before it reads the answer.
        let mut sink = [0u8; 1024];
        let drain = async {
            for _ in 0..64 {
                if stream.read(&mut sink).await? == 0 {
                    break;
                }
            }
            io::Result::Ok(())
        };
        let _ = tokio::time::timeout(Duration::from_secs(1), drain).await;
    }
    Ok(())
}

/// Whether the headers announce a body (`Content-Length` above 0, or any
/// `Transfer-Encoding`): none is accepted.
fn has_body<'a>(headers: impl Iterator<Item = &'a str>) -> bool {
    headers
        .filter_map(|header| header.split_once(':'))
        .any(|(name, value)| {
            let name = name.trim();
            (name.eq_ignore_ascii_case("content-length") && value.trim() != "0")
                || name.eq_ignore_ascii_case("transfer-encoding")
        })
}

/// One answer: status line, content type, more header lines (each ending
/// in CRLF) and the body.
struct Reply {
    status: &'static str,
    content_type: &'static str,
    body: String,
    headers: String,
}

impl Reply {
    fn new(status: &'static str, content_type: &'static str, body: String) -> Reply {
        Reply {
            status,
            content_type,
            body,
            headers: String::new(),
        }
    }
}

fn health_status(healthy: bool) -> &'static str {
    if healthy {
        "200 OK"
    } else {
        "503 Service Unavailable"
    }
}

fn route(method: &str, path: &str, endpoints: &Endpoints) -> Reply {
    const TEXT: &str = "text/plain; charset=utf-8";
    if let Paths::Service(check) = &endpoints.paths {
        // kube-proxy's service health server answers whatever is asked.
        let proxy_healthy = endpoints.metrics.kube_proxy.healthy(wall_now());
        let answer = match check.read() {
            Ok(check) => check.answer(proxy_healthy),
            Err(poisoned) => poisoned.into_inner().answer(proxy_healthy),
        };
        return Reply {
            headers: format!(
                "X-Content-Type-Options: nosniff\r\nX-Load-Balancing-Endpoint-Weight: {}\r\n",
                answer.weight
            ),
            ..Reply::new(health_status(answer.healthy), "application/json", answer.body)
        };
    }
    match (method, path) {
        ("GET", "/healthz" | "/livez") => {
            let health = &endpoints.metrics.kube_proxy;
            let answer = if path == "/healthz" {
                health.healthz(wall_now())
            } else {
                health.livez(wall_now())
            };
            Reply::new(health_status(answer.healthy), "application/json", answer.body)
        }
        ("GET", "/metrics") if matches!(endpoints.paths, Paths::Metrics) => Reply::new(
            "200 OK",
            "text/plain; version=0.0.4; charset=utf-8",
            endpoints.metrics.render(),
        ),
        ("GET", _) => Reply::new("404 Not Found", TEXT, "404 page not found\n".into()),
        _ => Reply::new("405 Method Not Allowed", TEXT, "only GET is supported\n".into()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    async fn get(addr: std::net::SocketAddr, request: &str) -> String {
        let mut stream = TcpStream::connect(addr).await.unwrap();
        stream.write_all(request.as_bytes()).await.unwrap();
        let mut out = String::new();
        stream.read_to_string(&mut out).await.unwrap();
        out
    }

    /// The metrics port: /metrics, /healthz and /livez. The health port
    /// and the bounds are tested through the public API in
    /// `tests/health_server.rs`.
    #[tokio::test]
    async fn healthz_livez_and_metrics_on_an_ephemeral_port() {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let metrics = Arc::new(Metrics::new(Duration::from_secs(60)));
        let server = tokio::spawn(serve(
            listener,
            Endpoints {
                metrics: metrics.clone(),
                paths: Paths::Metrics,
            },
        ));
        let req = |path: &str| format!("GET {path} HTTP/1.1\r\nHost: localhost\r\n\r\n");

        metrics.kube_proxy.start(Vec::new(), wall_now());
        let ok = get(addr, &req("/healthz")).await;
        assert!(ok.starts_with("HTTP/1.1 200 OK\r\n"), "{ok}");
        let body = ok.split("\r\n\r\n").nth(1).unwrap();
        let json: serde_json::Value = serde_json::from_str(body).unwrap();
        assert!(json["lastUpdated"].as_str().unwrap().ends_with('Z'), "{body}");
        assert_eq!(
            (json["healthy"].clone(), json["nodeEligible"].clone()),
            (true.into(), true.into())
        );

        // A change queued long ago and never synced: unhealthy.
        metrics.kube_proxy.queued(svcnet_core::time::Time(0));
        assert!(get(addr, &req("/livez"))
            .await
            .starts_with("HTTP/1.1 503 Service Unavailable\r\n"));

        metrics.record_sync(true, Duration::from_millis(2), &[], &[], None);
        let m = get(addr, &req("/metrics?x=1")).await;
        assert!(m.starts_with("HTTP/1.1 200 OK\r\n"), "{m}");
        assert!(m.contains("\nipvs_agent_syncs_total{full=\"true\"} 1\n"), "{m}");
        assert!(m.contains("\nkubeproxy_proxy_livez_total{code=\"503\"} 1\n"), "{m}");

        assert!(get(addr, &req("/nope")).await.starts_with("HTTP/1.1 404"));
        assert!(get(addr, "POST /metrics HTTP/1.1\r\n\r\n")
            .await
            .starts_with("HTTP/1.1 405"));
        server.abort();
    }

    /// The blank line is found when it arrives split over several reads
    /// (only new bytes are searched).
    #[tokio::test]
    async fn a_head_sent_a_byte_at_a_time_is_read() {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let metrics = Arc::new(Metrics::new(Duration::from_secs(60)));
        metrics.kube_proxy.start(Vec::new(), wall_now());
        let paths = Paths::Health;
        let server = tokio::spawn(serve(listener, Endpoints { metrics, paths }));
        let mut stream = TcpStream::connect(addr).await.unwrap();
        stream.set_nodelay(true).unwrap();
        for byte in b"GET /livez HTTP/1.1\r\nHost: x\r\n\r\n" {
            stream.write_all(&[*byte]).await.unwrap();
            tokio::time::sleep(Duration::from_millis(2)).await;
        }
        let mut out = String::new();
        stream.read_to_string(&mut out).await.unwrap();
        assert!(out.starts_with("HTTP/1.1 200 OK\r\n"), "{out}");
        server.abort();
    }

    /// A failing `accept` (as when file descriptors run out) is retried
    /// after a growing wait, not in a tight loop.
    #[tokio::test]
    async fn accept_errors_back_off() {
        let calls = Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let counted = calls.clone();
        let metrics = Arc::new(Metrics::new(Duration::from_secs(60)));
        let accept = move || {
            counted.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            std::future::ready(Err(io::Error::from_raw_os_error(libc::EMFILE)))
        };
        let paths = Paths::Health;
        let server = tokio::spawn(serve_from(accept, Endpoints { metrics, paths }));
        tokio::time::sleep(Duration::from_millis(1_000)).await;
        server.abort();
        let calls = calls.load(std::sync::atomic::Ordering::Relaxed);
        // 100 + 200 + 400 ms of waits fit in the second: four calls, and
        // never the thousands a loop without a wait makes.
        assert!((1..=6).contains(&calls), "{calls} accept calls in one second");
    }
}
