//! A very small HTTP/1.1 server for `/healthz` and `/livez` (kube-proxy's
//! semantics and JSON bodies: 503 once a change has waited for a sync
//! longer than twice the sync period, and for `/healthz` also when the
//! node is not eligible) and `/metrics` (Prometheus text). One request per
//! connection, `GET` only; anything else gets 404 or 405.

use crate::kube_proxy_metrics::wall_now;
use crate::metrics::Metrics;
use std::sync::Arc;
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

/// The longest request head read.
const MAX_REQUEST: usize = 8 * 1024;

/// What the server answers from.
#[derive(Debug, Clone)]
pub struct Endpoints {
    /// The agent's counters and health.
    pub metrics: Arc<Metrics>,
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
        ("GET", "/healthz" | "/livez") => {
            let health = &endpoints.metrics.kube_proxy;
            let answer = if path == "/healthz" {
                health.healthz(wall_now())
            } else {
                health.livez(wall_now())
            };
            let status = if answer.healthy {
                "200 OK"
            } else {
                "503 Service Unavailable"
            };
            (status, "application/json", answer.body)
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
    async fn healthz_livez_and_metrics_on_an_ephemeral_port() {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let metrics = Arc::new(Metrics::new(Duration::from_secs(60)));
        let server = tokio::spawn(serve(
            listener,
            Endpoints {
                metrics: metrics.clone(),
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
}
