//! A very small HTTP/1.1 server for `/healthz` (kube-proxy's semantics: 200
//! with `{"lastUpdated", "currentTime"}` while the last successful sync is
//! recent, 503 otherwise) and `/metrics` (Prometheus text). One request per
//! connection, `GET` only; anything else gets 404 or 405.

use crate::metrics::Metrics;
use std::sync::Arc;
use std::time::{Duration, SystemTime};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

/// The longest request head read.
const MAX_REQUEST: usize = 8 * 1024;

/// What the server answers from.
#[derive(Debug, Clone)]
pub struct Endpoints {
    /// The agent's counters and last sync.
    pub metrics: Arc<Metrics>,
    /// `/healthz` is 200 while the last successful sync is at most this old
    /// (kube-proxy: twice the sync period).
    pub health_timeout: Duration,
}

/// Serves connections on `listener` until the task is dropped.
pub async fn serve(listener: TcpListener, endpoints: Endpoints) {
    loop {
        let Ok((stream, _)) = listener.accept().await else {
            continue;
        };
        let endpoints = endpoints.clone();
        tokio::spawn(async move {
            // A client that goes away mid-request is not the agent's problem.
            let _ = tokio::time::timeout(Duration::from_secs(10), answer(stream, &endpoints)).await;
        });
    }
}

async fn answer(mut stream: TcpStream, endpoints: &Endpoints) -> std::io::Result<()> {
    let mut buf = Vec::with_capacity(1024);
    let mut chunk = [0u8; 1024];
    while !buf.windows(4).any(|w| w == b"\r\n\r\n") && buf.len() < MAX_REQUEST {
        let n = stream.read(&mut chunk).await?;
        if n == 0 {
            break;
        }
        buf.extend_from_slice(&chunk[..n]);
    }
    let head = String::from_utf8_lossy(&buf);
    let mut parts = head.lines().next().unwrap_or_default().split_whitespace();
    let (method, target) = (parts.next().unwrap_or_default(), parts.next().unwrap_or_default());
    let path = target.split('?').next().unwrap_or_default();
    let (status, content_type, body) = route(method, path, endpoints);
    let response = format!(
        "HTTP/1.1 {status}\r\nContent-Type: {content_type}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    );
    stream.write_all(response.as_bytes()).await?;
    stream.shutdown().await
}

fn route(method: &str, path: &str, endpoints: &Endpoints) -> (&'static str, &'static str, String) {
    const TEXT: &str = "text/plain; charset=utf-8";
    match (method, path) {
        ("GET", "/healthz") => {
            let now = SystemTime::now();
            let last = endpoints.metrics.last_success();
            let body = format!(
                "{{\"lastUpdated\": \"{}\",\"currentTime\": \"{}\"}}",
                last.map(rfc3339).unwrap_or_default(),
                rfc3339(now)
            );
            let status = if endpoints.metrics.healthy(now, endpoints.health_timeout) {
                "200 OK"
            } else {
                "503 Service Unavailable"
            };
            (status, "application/json", body)
        }
        ("GET", "/metrics") => (
            "200 OK",
            "text/plain; version=0.0.4; charset=utf-8",
            endpoints.metrics.render(),
        ),
        ("GET", _) => ("404 Not Found", TEXT, "404 page not found\n".into()),
        _ => ("405 Method Not Allowed", TEXT, "only GET is supported\n".into()),
    }
}

fn rfc3339(t: SystemTime) -> String {
    humantime::format_rfc3339_millis(t).to_string()
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

    #[tokio::test]
    async fn healthz_and_metrics_on_an_ephemeral_port() {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let metrics = Arc::new(Metrics::default());
        let server = tokio::spawn(serve(
            listener,
            Endpoints {
                metrics: metrics.clone(),
                health_timeout: Duration::from_secs(60),
            },
        ));
        let req = |path: &str| format!("GET {path} HTTP/1.1\r\nHost: localhost\r\n\r\n");

        let before = get(addr, &req("/healthz")).await;
        assert!(before.starts_with("HTTP/1.1 503 Service Unavailable\r\n"), "{before}");
        assert!(before.contains("\"lastUpdated\": \"\""), "{before}");

        metrics.record_sync(true, Duration::from_millis(2), &[], &[], Some(SystemTime::now()));
        let after = get(addr, &req("/healthz")).await;
        assert!(after.starts_with("HTTP/1.1 200 OK\r\n"), "{after}");
        let body = after.split("\r\n\r\n").nth(1).unwrap();
        let json: serde_json::Value = serde_json::from_str(body).unwrap();
        assert!(json["lastUpdated"].as_str().unwrap().ends_with('Z'), "{body}");
        assert!(json["currentTime"].is_string());

        let m = get(addr, &req("/metrics?x=1")).await;
        assert!(m.starts_with("HTTP/1.1 200 OK\r\n"), "{m}");
        assert!(m.contains("\nipvs_agent_syncs_total{full=\"true\"} 1\n"), "{m}");

        assert!(get(addr, &req("/nope")).await.starts_with("HTTP/1.1 404"));
        assert!(get(addr, "POST /metrics HTTP/1.1\r\n\r\n")
            .await
            .starts_with("HTTP/1.1 405"));
        server.abort();
    }
}
