//! The health server (`--healthz-bind-address`, reachable from the network
//! by default) through the public API, on 127.0.0.1:0: it answers
//! `/healthz` and `/livez` and nothing else, 200 idle connections do not
//! keep `/healthz` from answering (slowloris), and oversized requests are
//! refused and their connections closed.

use ipvs_agent::http::{serve, Endpoints, Paths, MAX_HEAD};
use ipvs_agent::kube_proxy_metrics::wall_now;
use ipvs_agent::metrics::Metrics;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

/// Generous: the tests check that answers come, not how fast.
const ANSWER_WITHIN: Duration = Duration::from_secs(5);

/// A health server on an ephemeral port of 127.0.0.1, healthy, and its
/// address.
async fn health_server() -> (SocketAddr, tokio::task::JoinHandle<()>) {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let metrics = Arc::new(Metrics::new(Duration::from_secs(60)));
    metrics.kube_proxy.start(Vec::new(), wall_now());
    let endpoints = Endpoints {
        metrics,
        paths: Paths::Health,
    };
    (addr, tokio::spawn(serve(listener, endpoints)))
}

/// Sends `request` and reads until the server closes the connection:
/// a timeout here means the connection was left open.
async fn exchange(addr: SocketAddr, request: &[u8]) -> String {
    let work = async {
        let mut stream = TcpStream::connect(addr).await.unwrap();
        stream.write_all(request).await.unwrap();
        let mut out = Vec::new();
        stream.read_to_end(&mut out).await.unwrap();
        String::from_utf8_lossy(&out).into_owned()
    };
    tokio::time::timeout(ANSWER_WITHIN, work)
        .await
        .unwrap_or_else(|_| panic!("no answer, or the connection left open, after {ANSWER_WITHIN:?}"))
}

fn get(path: &str) -> Vec<u8> {
    format!("GET {path} HTTP/1.1\r\nHost: localhost\r\n\r\n").into_bytes()
}

#[tokio::test]
async fn the_health_port_answers_health_and_nothing_else() {
    let (addr, server) = health_server().await;
    for path in ["/healthz", "/livez", "/healthz?verbose"] {
        let answer = exchange(addr, &get(path)).await;
        assert!(answer.starts_with("HTTP/1.1 200 OK\r\n"), "{path}: {answer}");
        let body = answer.split("\r\n\r\n").nth(1).unwrap();
        let json: serde_json::Value = serde_json::from_str(body).unwrap();
        // kube-proxy's fields (`status`: per IP family), and no object data.
        let fields: Vec<&str> = json.as_object().unwrap().keys().map(String::as_str).collect();
        let known = ["currentTime", "healthy", "lastUpdated", "nodeEligible", "status"];
        assert!(fields.iter().all(|f| known.contains(f)), "{path}: {body}");
    }
    for path in [
        "/metrics",
        "/metrics?name[]=x",
        "/debug/pprof/",
        "/configz",
        "/proxyMode",
        "/",
        "/healthz/../metrics",
    ] {
        let answer = exchange(addr, &get(path)).await;
        assert!(answer.starts_with("HTTP/1.1 404 Not Found\r\n"), "{path}: {answer}");
        assert!(
            !answer.contains("ipvs_agent_") && !answer.contains("kubeproxy_"),
            "{path}: {answer}"
        );
    }
    server.abort();
}

/// Slowloris: 200 connections hold the server open, 100 having sent
/// nothing and 100 half a request line; `/healthz` still answers.
#[tokio::test]
async fn idle_connections_do_not_block_healthz() {
    let (addr, server) = health_server().await;
    let mut idle = Vec::new();
    for i in 0..200 {
        let mut stream = TcpStream::connect(addr).await.unwrap();
        if i % 2 == 1 {
            stream.write_all(b"GET /hea").await.unwrap();
        }
        idle.push(stream);
    }
    // Let the server accept them all before asking.
    tokio::time::sleep(Duration::from_millis(100)).await;
    let answer = exchange(addr, &get("/healthz")).await;
    assert!(answer.starts_with("HTTP/1.1 200 OK\r\n"), "{answer}");
    drop(idle);
    server.abort();
}

#[tokio::test]
async fn oversized_requests_are_refused_and_closed() {
    let (addr, server) = health_server().await;
    let refused = [
        // Headers larger than the limit.
        (
            format!("GET /healthz HTTP/1.1\r\nX-Padding: {}\r\n\r\n", "x".repeat(MAX_HEAD)).into_bytes(),
            "HTTP/1.1 431 Request Header Fields Too Large\r\n",
        ),
        // A head that never ends.
        (
            vec![b'x'; 4 * MAX_HEAD],
            "HTTP/1.1 431 Request Header Fields Too Large\r\n",
        ),
        // A body (none is accepted), by length or chunked.
        (
            b"GET /healthz HTTP/1.1\r\nContent-Length: 5\r\n\r\nhello".to_vec(),
            "HTTP/1.1 413 Payload Too Large\r\n",
        ),
        (
            b"GET /healthz HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n".to_vec(),
            "HTTP/1.1 413 Payload Too Large\r\n",
        ),
    ];
    for (request, status) in refused {
        // `exchange` returns only once the server has closed the connection.
        let answer = exchange(addr, &request).await;
        assert!(answer.starts_with(status), "{answer}");
        assert!(answer.contains("\r\nConnection: close\r\n"), "{answer}");
    }
    server.abort();
}
