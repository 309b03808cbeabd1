//! The per-Service health check servers, kube-proxy's `ServiceHealthServer`:
//! one listener per node address on each `healthCheckNodePort` the core asks
//! for ([`svcnet_core::proxy::service_health`]), each answering every
//! request with the Service's verdict through the hardened HTTP server
//! ([`crate::http`]). After each sync [`ServiceHealthServers::sync`] opens
//! the ports of new checks, closes those of checks that are gone, and
//! updates the counts of the rest in place (an open port keeps serving
//! through the change). A port that cannot be bound (taken, or an address
//! that is not this host's) is logged, once until it works, and tried again
//! at the next sync, as kube-proxy does.

use crate::http::{self, Endpoints, Paths};
use crate::metrics::Metrics;
use std::collections::BTreeSet;
use std::net::{IpAddr, SocketAddr};
use std::sync::{Arc, RwLock};
use svcnet_core::collections::SortedMap;
use svcnet_core::proxy::service_health::ServiceHealthCheck;
use tokio::task::JoinHandle;

/// One open health check: its current verdict inputs and its listeners.
struct Open {
    check: Arc<RwLock<ServiceHealthCheck>>,
    servers: Vec<JoinHandle<()>>,
}

impl Drop for Open {
    fn drop(&mut self) {
        for server in &self.servers {
            server.abort();
        }
    }
}

/// The open health checks of this node.
pub struct ServiceHealthServers {
    metrics: Arc<Metrics>,
    open: SortedMap<u16, Open>,
    /// Addresses and ports whose bind failure was logged (cleared when the
    /// port opens or is no longer wanted).
    failed: BTreeSet<SocketAddr>,
}

impl ServiceHealthServers {
    /// None open yet.
    pub fn new(metrics: Arc<Metrics>) -> Self {
        ServiceHealthServers {
            metrics,
            open: SortedMap::new(),
            failed: BTreeSet::new(),
        }
    }

    /// The ports open now.
    pub fn ports(&self) -> Vec<u16> {
        self.open.keys().copied().collect()
    }

    /// Follows `checks` (by port), listening on `addresses` (the node's,
    /// as for NodePorts). Must run inside the tokio runtime.
    pub fn sync(&mut self, checks: SortedMap<u16, ServiceHealthCheck>, addresses: &[IpAddr]) {
        let gone: Vec<u16> = (self.open.keys())
            .filter(|port| !checks.get(port).is_some_and(|c| self.same_service(**port, c)))
            .copied()
            .collect();
        for port in gone {
            if let Some(open) = self.open.remove(&port) {
                let check = open.check.read().map(|c| c.clone()).ok();
                if let Some(c) = check {
                    tracing::info!(service = %format!("{}/{}", c.namespace, c.name), port, "health check closed");
                }
            }
        }
        self.failed.retain(|addr| checks.contains_key(&addr.port()));
        for (port, check) in checks {
            if let Some(open) = self.open.get(&port) {
                if let Ok(mut current) = open.check.write() {
                    *current = check;
                }
                continue;
            }
            self.listen(port, check, addresses);
        }
    }

    fn same_service(&self, port: u16, check: &ServiceHealthCheck) -> bool {
        (self.open.get(&port).and_then(|open| open.check.read().ok()))
            .is_some_and(|c| c.namespace == check.namespace && c.name == check.name)
    }

    fn listen(&mut self, port: u16, check: ServiceHealthCheck, addresses: &[IpAddr]) {
        let service = format!("{}/{}", check.namespace, check.name);
        let shared = Arc::new(RwLock::new(check));
        let mut servers = Vec::new();
        for &ip in addresses {
            let addr = SocketAddr::new(ip, port);
            match std::net::TcpListener::bind(addr)
                .and_then(|l| l.set_nonblocking(true).map(|()| l))
                .and_then(tokio::net::TcpListener::from_std)
            {
                Ok(listener) => {
                    self.failed.remove(&addr);
                    let endpoints = Endpoints {
                        metrics: self.metrics.clone(),
                        paths: Paths::Service(shared.clone()),
                    };
                    servers.push(tokio::spawn(http::serve(listener, endpoints)));
                }
                Err(e) => {
                    if self.failed.insert(addr) {
                        tracing::warn!(%service, %addr, error = %e, "cannot open the health check; trying again at the next sync");
                    }
                    // As kube-proxy: all of a check's addresses, or none.
                    return;
                }
            }
        }
        tracing::info!(%service, port, addresses = addresses.len(), "health check open");
        self.open.insert(port, Open { check: shared, servers });
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    fn check(name: &str, port: u16, local_endpoints: usize) -> ServiceHealthCheck {
        ServiceHealthCheck {
            namespace: "default".into(),
            name: name.into(),
            port,
            local_endpoints,
        }
    }

    async fn probe(port: u16) -> std::io::Result<String> {
        let mut stream = tokio::net::TcpStream::connect(("127.0.0.1", port)).await?;
        stream.write_all(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n").await?;
        let mut out = String::new();
        stream.read_to_string(&mut out).await?;
        Ok(out)
    }

    fn free_port() -> u16 {
        std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port()
    }

    #[tokio::test]
    async fn checks_open_follow_their_counts_and_close() {
        let metrics = Arc::new(Metrics::default());
        let mut servers = ServiceHealthServers::new(metrics);
        let port = free_port();
        let localhost = ["127.0.0.1".parse().unwrap()];
        servers.sync([(port, check("shop", port, 0))].into_iter().collect(), &localhost);
        assert_eq!(servers.ports(), [port]);
        let answer = probe(port).await.unwrap();
        assert!(answer.starts_with("HTTP/1.1 503 "), "{answer}");
        assert!(answer.contains("X-Load-Balancing-Endpoint-Weight: 0\r\n"), "{answer}");
        assert!(answer.contains("\"localEndpoints\": 0,"), "{answer}");

        servers.sync([(port, check("shop", port, 2))].into_iter().collect(), &localhost);
        let answer = probe(port).await.unwrap();
        assert!(answer.contains("\"localEndpoints\": 2,"), "{answer}");
        assert!(answer.contains("\"name\": \"shop\""), "{answer}");

        servers.sync(SortedMap::new(), &localhost);
        assert!(servers.ports().is_empty());
        tokio::task::yield_now().await;
        assert!(probe(port).await.is_err(), "the port is closed");
    }

    #[tokio::test]
    async fn a_port_taken_is_tried_again_at_the_next_sync() {
        let metrics = Arc::new(Metrics::default());
        let mut servers = ServiceHealthServers::new(metrics);
        let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let port = taken.local_addr().unwrap().port();
        let localhost = ["127.0.0.1".parse().unwrap()];
        servers.sync([(port, check("shop", port, 1))].into_iter().collect(), &localhost);
        assert!(servers.ports().is_empty());
        drop(taken);
        servers.sync([(port, check("shop", port, 1))].into_iter().collect(), &localhost);
        assert_eq!(servers.ports(), [port]);
    }
}
