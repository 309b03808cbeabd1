//! What the kubelet computes for a Pod: the Service environment variables
//! it injects into every container (`getServiceEnvVarMap` and
//! `envvars.FromServices` in Kubernetes).
//!
//! A Pod sees every Service with a ClusterIP (not headless, not
//! ExternalName) in its own namespace, plus `kubernetes` from `default`; a
//! Service named `kubernetes` in the Pod's own namespace wins over the
//! `default` one. With `enableServiceLinks: false`, only `default/kubernetes`
//! is seen. For a Service `redis-primary` on 10.0.0.11 with a first port
//! 6379/TCP the variables are:
//!
//! ```text
//! REDIS_PRIMARY_SERVICE_HOST=10.0.0.11
//! REDIS_PRIMARY_SERVICE_PORT=6379
//! REDIS_PRIMARY_PORT=tcp://10.0.0.11:6379
//! REDIS_PRIMARY_PORT_6379_TCP=tcp://10.0.0.11:6379
//! REDIS_PRIMARY_PORT_6379_TCP_PROTO=tcp
//! REDIS_PRIMARY_PORT_6379_TCP_PORT=6379
//! REDIS_PRIMARY_PORT_6379_TCP_ADDR=10.0.0.11
//! ```
//!
//! plus `<SVC>_SERVICE_PORT_<NAME>=<port>` per named port. IPv6 ClusterIPs
//! are bracketed inside the `tcp://[...]:port` forms only.

use crate::api::{Pod, Service};
use crate::collections::SortedMap;
use std::net::IpAddr;

/// The namespace whose `kubernetes` Service every Pod sees.
const MASTER_NAMESPACE: &str = "default";

/// The Service every Pod sees, even with `enableServiceLinks: false`.
const MASTER_SERVICE: &str = "kubernetes";

/// The Service environment variables of `pod`, given every Service in the
/// cluster, sorted by name.
pub fn service_env(pod: &Pod, services: &[&Service]) -> Vec<(String, String)> {
    let namespace = pod.metadata.namespace_or_default();
    let links = pod.spec.enable_service_links.unwrap_or(true);
    let mut visible: SortedMap<&str, &Service> = SortedMap::new();
    for service in services.iter().copied().filter(|s| has_cluster_ip(s)) {
        let name = service.metadata.name.as_str();
        let service_namespace = service.metadata.namespace_or_default();
        if service_namespace == MASTER_NAMESPACE && name == MASTER_SERVICE {
            visible.entry(name).or_insert(service);
        } else if service_namespace == namespace && links {
            visible.insert(name, service);
        }
    }
    let mut env: SortedMap<String, String> = SortedMap::new();
    for service in visible.values() {
        add_service(&mut env, service);
    }
    env.into_iter().collect()
}

/// True for Services with a ClusterIP: not headless, not ExternalName.
fn has_cluster_ip(service: &Service) -> bool {
    !service.spec.cluster_ip.is_empty() && !service.is_headless()
}

/// Adds the variables of one Service.
fn add_service(env: &mut SortedMap<String, String>, service: &Service) {
    let prefix = env_name(&service.metadata.name);
    let ip = service.spec.cluster_ip.as_str();
    env.insert(format!("{prefix}_SERVICE_HOST"), ip.to_string());
    let Some(first) = service.spec.ports.first() else {
        return;
    };
    env.insert(format!("{prefix}_SERVICE_PORT"), first.port.to_string());
    for port in service.spec.ports.iter().filter(|p| !p.name.is_empty()) {
        env.insert(
            format!("{prefix}_SERVICE_PORT_{}", env_name(&port.name)),
            port.port.to_string(),
        );
    }
    for (i, port) in service.spec.ports.iter().enumerate() {
        let protocol = if port.protocol.is_empty() {
            "TCP"
        } else {
            &port.protocol
        };
        let lower = protocol.to_ascii_lowercase();
        let url = format!("{lower}://{}", host_port(ip, port.port));
        if i == 0 {
            env.insert(format!("{prefix}_PORT"), url.clone());
        }
        let port_prefix = format!("{prefix}_PORT_{}_{}", port.port, protocol.to_ascii_uppercase());
        env.insert(format!("{port_prefix}_PROTO"), lower);
        env.insert(format!("{port_prefix}_PORT"), port.port.to_string());
        env.insert(format!("{port_prefix}_ADDR"), ip.to_string());
        env.insert(port_prefix, url);
    }
}

/// A Service or port name as a variable name: upper case, `-` -> `_`.
fn env_name(name: &str) -> String {
    name.replace('-', "_").to_ascii_uppercase()
}

/// `ip:port`, with IPv6 addresses in brackets (Go's `net.JoinHostPort`).
fn host_port(ip: &str, port: i64) -> String {
    match ip.parse::<IpAddr>() {
        Ok(IpAddr::V6(_)) => format!("[{ip}]:{port}"),
        _ => format!("{ip}:{port}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::api::service::ServicePort;

    fn service(namespace: &str, name: &str, ip: &str, ports: &[(&str, i64, &str)]) -> Service {
        let mut s = Service::default();
        s.metadata.namespace = namespace.into();
        s.metadata.name = name.into();
        s.spec.cluster_ip = ip.into();
        s.spec.ports = ports
            .iter()
            .map(|(n, p, proto)| ServicePort {
                name: n.to_string(),
                port: *p,
                protocol: proto.to_string(),
                ..ServicePort::default()
            })
            .collect();
        s
    }

    fn pod(namespace: &str, links: Option<bool>) -> Pod {
        let mut p = Pod::default();
        p.metadata.namespace = namespace.into();
        p.metadata.name = "p".into();
        p.spec.enable_service_links = links;
        p
    }

    fn names(env: &[(String, String)]) -> Vec<&str> {
        env.iter().map(|(k, _)| k.as_str()).collect()
    }

    #[test]
    fn redis_primary_like_the_reference() {
        let redis = service("default", "redis-primary", "10.0.0.11", &[("", 6379, "TCP")]);
        let env = service_env(&pod("default", None), &[&redis]);
        let want = [
            ("REDIS_PRIMARY_PORT", "tcp://10.0.0.11:6379"),
            ("REDIS_PRIMARY_PORT_6379_TCP", "tcp://10.0.0.11:6379"),
            ("REDIS_PRIMARY_PORT_6379_TCP_ADDR", "10.0.0.11"),
            ("REDIS_PRIMARY_PORT_6379_TCP_PORT", "6379"),
            ("REDIS_PRIMARY_PORT_6379_TCP_PROTO", "tcp"),
            ("REDIS_PRIMARY_SERVICE_HOST", "10.0.0.11"),
            ("REDIS_PRIMARY_SERVICE_PORT", "6379"),
        ];
        let want: Vec<(String, String)> = want.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
        assert_eq!(env, want);
    }

    #[test]
    fn ipv6_is_bracketed_in_urls_only_and_named_ports_get_their_own() {
        let dns = service(
            "kube-system",
            "kube-dns",
            "fd00::a",
            &[("dns", 53, "UDP"), ("dns-tcp", 53, "TCP")],
        );
        let env: SortedMap<String, String> = service_env(&pod("kube-system", None), &[&dns]).into_iter().collect();
        assert_eq!(env["KUBE_DNS_SERVICE_HOST"], "fd00::a");
        assert_eq!(env["KUBE_DNS_PORT"], "udp://[fd00::a]:53");
        assert_eq!(env["KUBE_DNS_PORT_53_TCP"], "tcp://[fd00::a]:53");
        assert_eq!(env["KUBE_DNS_PORT_53_UDP_ADDR"], "fd00::a");
        assert_eq!(env["KUBE_DNS_SERVICE_PORT_DNS_TCP"], "53");
        assert_eq!(env["KUBE_DNS_SERVICE_PORT_DNS"], "53");
    }

    #[test]
    fn visibility_by_namespace_links_and_type() {
        let kubernetes = service("default", "kubernetes", "10.96.0.1", &[("https", 443, "TCP")]);
        let web = service("shop", "web", "10.96.0.20", &[("", 80, "TCP")]);
        let other = service("other", "db", "10.96.0.30", &[("", 5432, "TCP")]);
        let headless = service("shop", "peers", "None", &[("", 80, "TCP")]);
        let external = service("shop", "ext", "", &[]);
        let all = [&kubernetes, &web, &other, &headless, &external];
        let env = service_env(&pod("shop", None), &all);
        assert!(names(&env).contains(&"KUBERNETES_SERVICE_PORT_HTTPS"));
        assert!(names(&env).contains(&"WEB_SERVICE_HOST"));
        assert!(!names(&env)
            .iter()
            .any(|n| n.starts_with("DB_") || n.starts_with("PEERS_") || n.starts_with("EXT_")));
        let env = service_env(&pod("shop", Some(false)), &all);
        assert!(names(&env).iter().all(|n| n.starts_with("KUBERNETES_")));
        assert_eq!(env.len(), 8);
        let own = service("shop", "kubernetes", "10.96.0.99", &[("", 8443, "TCP")]);
        let env: SortedMap<String, String> = service_env(&pod("shop", None), &[&kubernetes, &own])
            .into_iter()
            .collect();
        assert_eq!(env["KUBERNETES_SERVICE_HOST"], "10.96.0.99");
    }
}
