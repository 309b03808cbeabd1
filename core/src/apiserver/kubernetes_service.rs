//! The `kubernetes` Service and the apiserver leases behind its endpoints.
//!
//! `default/kubernetes` always exists, holds the first address of the
//! primary service CIDR, and exposes `https` 443/TCP to the apiservers'
//! secure port. Its endpoints are not pods: each apiserver renews a lease on
//! its advertise address (TTL 15 s); the endpoints are the live lease
//! holders, and an empty list is never written (the last one stays). They
//! are published as the EndpointSlice `default/kubernetes`
//! ([`kubernetes_endpoint_slice`]).

use crate::api::endpoint_slice::{Endpoint, EndpointConditions, EndpointPort, EndpointSlice, SERVICE_NAME_LABEL};
use crate::api::meta::ObjectMeta;
use crate::api::service::{IntOrString, Service, ServicePort, ServiceSpec};
use crate::collections::SortedMap;
use crate::family::IpFamily;
use crate::time::Time;
use serde::{Deserialize, Serialize};
use std::net::{IpAddr, SocketAddr};
use std::time::Duration;

/// How long an apiserver lease lives without a heartbeat.
pub const LEASE_TTL: Duration = Duration::from_secs(15);

/// The apiserver secure port used when no apiserver endpoint is known.
pub const DEFAULT_SECURE_PORT: u16 = 6443;

/// Builds the `default/kubernetes` Service for `ip` (the first address of the
/// primary range) targeting the apiserver secure port `target_port`.
pub fn kubernetes_service(ip: IpAddr, target_port: u16) -> Service {
    let mut labels = SortedMap::new();
    labels.insert("component".to_string(), "apiserver".to_string());
    labels.insert("provider".to_string(), "kubernetes".to_string());
    Service {
        api_version: "v1".into(),
        kind: "Service".into(),
        metadata: ObjectMeta {
            name: "kubernetes".into(),
            namespace: "default".into(),
            labels,
            ..Default::default()
        },
        spec: ServiceSpec {
            service_type: "ClusterIP".into(),
            ports: vec![ServicePort {
                name: "https".into(),
                protocol: "TCP".into(),
                port: 443,
                target_port: Some(IntOrString::Int(i64::from(target_port))),
                ..Default::default()
            }],
            cluster_ip: ip.to_string(),
            cluster_ips: vec![ip.to_string()],
            ip_families: vec![IpFamily::of(ip).as_str().to_string()],
            ip_family_policy: Some("SingleStack".into()),
            session_affinity: "None".into(),
            internal_traffic_policy: Some("Cluster".into()),
            ..Default::default()
        },
        status: Default::default(),
    }
}

/// The EndpointSlice `default/kubernetes` for `service` (the `kubernetes`
/// Service) and the apiserver `endpoints`: one ready endpoint per apiserver
/// address of the Service's family, port `https` on the apiservers' secure
/// port (the Service's `targetPort`), labels `kubernetes.io/service-name`
/// and `endpointslice.kubernetes.io/skip-mirror: "true"`.
pub fn kubernetes_endpoint_slice(service: &Service, endpoints: &[SocketAddr]) -> EndpointSlice {
    let family = service
        .spec
        .cluster_ip
        .parse::<IpAddr>()
        .map(IpFamily::of)
        .unwrap_or(IpFamily::IPv4);
    let mut addresses: Vec<IpAddr> = endpoints
        .iter()
        .map(SocketAddr::ip)
        .filter(|ip| IpFamily::of(*ip) == family)
        .collect();
    addresses.dedup();
    let port = service
        .spec
        .ports
        .first()
        .and_then(|p| match &p.target_port {
            Some(IntOrString::Int(n)) => Some(*n),
            _ => None,
        })
        .unwrap_or(i64::from(DEFAULT_SECURE_PORT));
    // The skip-mirror label belongs on the Endpoints object only.
    let labels = SortedMap::from([(SERVICE_NAME_LABEL.to_string(), "kubernetes".to_string())]);
    EndpointSlice {
        api_version: "discovery.k8s.io/v1".into(),
        kind: "EndpointSlice".into(),
        metadata: ObjectMeta {
            name: "kubernetes".into(),
            namespace: "default".into(),
            labels,
            ..Default::default()
        },
        address_type: family.as_str().into(),
        endpoints: addresses
            .into_iter()
            .map(|ip| Endpoint {
                addresses: vec![ip.to_string()],
                conditions: EndpointConditions {
                    ready: Some(true),
                    ..Default::default()
                },
                ..Default::default()
            })
            .collect(),
        ports: vec![EndpointPort {
            name: Some("https".into()),
            protocol: Some("TCP".into()),
            port: Some(port),
            app_protocol: None,
        }],
    }
}

/// True for the `default/kubernetes` Service.
pub fn is_kubernetes_service(namespace: &str, name: &str) -> bool {
    (namespace == "default" || namespace.is_empty()) && name == "kubernetes"
}

/// The apiserver leases and the endpoint list last written from them.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ApiserverLeases {
    /// Lease holder address -> time of its last heartbeat.
    renewed: SortedMap<SocketAddr, Time>,
    /// The endpoints last written; kept when every lease has expired.
    endpoints: Vec<SocketAddr>,
}

impl ApiserverLeases {
    /// Records a heartbeat from the apiserver at `ip:port` at `now`, then
    /// recomputes the endpoints.
    pub fn heartbeat(&mut self, addr: SocketAddr, now: Time) {
        self.renewed.insert(addr, now);
        self.reconcile(now);
    }

    /// Drops leases not renewed within [`LEASE_TTL`] of `now` and rewrites
    /// the endpoints from the live holders, unless none is left: an empty
    /// list is never written.
    pub fn reconcile(&mut self, now: Time) {
        self.renewed.retain(|_, renewed| now < renewed.plus(LEASE_TTL));
        if !self.renewed.is_empty() {
            self.endpoints = self.renewed.keys().copied().collect();
        }
    }

    /// The current endpoints of the `kubernetes` Service, sorted.
    pub fn endpoints(&self) -> &[SocketAddr] {
        &self.endpoints
    }

    /// The live lease holders with their last heartbeat.
    pub fn leases(&self) -> impl Iterator<Item = (SocketAddr, Time)> + '_ {
        self.renewed.iter().map(|(a, t)| (*a, *t))
    }

    /// The secure port the `kubernetes` Service targets: the port of the
    /// first endpoint, or 6443.
    pub fn target_port(&self) -> u16 {
        self.endpoints.first().map_or(DEFAULT_SECURE_PORT, SocketAddr::port)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn addr(s: &str) -> SocketAddr {
        s.parse().unwrap()
    }

    #[test]
    fn leases_expire_after_fifteen_seconds_but_never_empty() {
        let mut l = ApiserverLeases::default();
        l.heartbeat(addr("192.168.0.10:6443"), Time::from_secs(0));
        l.heartbeat(addr("192.168.0.11:6443"), Time::from_secs(10));
        assert_eq!(l.endpoints().len(), 2);
        l.reconcile(Time::from_secs(15));
        assert_eq!(l.endpoints(), &[addr("192.168.0.11:6443")]);
        l.reconcile(Time::from_secs(60));
        assert_eq!(l.leases().count(), 0);
        assert_eq!(l.endpoints(), &[addr("192.168.0.11:6443")], "last list is kept");
        l.heartbeat(addr("192.168.0.12:6443"), Time::from_secs(61));
        assert_eq!(l.endpoints(), &[addr("192.168.0.12:6443")]);
    }

    #[test]
    fn endpoint_slice_from_leases() {
        let svc = kubernetes_service("10.96.0.1".parse().unwrap(), 8443);
        let slice = kubernetes_endpoint_slice(
            &svc,
            &[
                addr("192.168.0.10:8443"),
                addr("[fd00::12]:8443"),
                addr("192.168.0.11:8443"),
            ],
        );
        assert_eq!(slice.metadata.name, "kubernetes");
        assert_eq!(slice.address_type, "IPv4");
        assert_eq!(slice.metadata.labels.len(), 1, "{:?}", slice.metadata.labels);
        let ips: Vec<&str> = slice.endpoints.iter().map(|e| e.addresses[0].as_str()).collect();
        assert_eq!(ips, ["192.168.0.10", "192.168.0.11"]);
        assert_eq!(slice.ports[0].port, Some(8443));
        assert_eq!(slice.ports[0].name.as_deref(), Some("https"));
    }

    #[test]
    fn service_shape() {
        let s = kubernetes_service("10.96.0.1".parse().unwrap(), 6443);
        assert_eq!(s.key(), "default/kubernetes");
        assert_eq!(
            s.metadata.labels.get("provider").map(String::as_str),
            Some("kubernetes")
        );
        assert_eq!(s.spec.ports[0].target_port, Some(IntOrString::Int(6443)));
        assert_eq!(s.spec.ip_families, vec!["IPv4"]);
    }
}
