//! kube-proxy's per-Service health checks (its `ServiceHealthServer`): a
//! LoadBalancer Service with `externalTrafficPolicy: Local` has a
//! `healthCheckNodePort`, on which every node answers the cloud load
//! balancer's probes, so that only nodes with an endpoint of the Service get
//! its traffic. The answer is 200 when the node has a ready endpoint of the
//! Service and its proxy is healthy (`/healthz`'s verdict), else 503, with
//! kube-proxy's JSON body counting the node's ready endpoints (by address,
//! across the Service's ports) and the same count in the
//! `X-Load-Balancing-Endpoint-Weight` header.
//!
//! This module says which ports to listen on and what to answer; the agent
//! listens.

use super::desired::slices_by_service;
use super::node::NodeInfo;
use crate::api::{EndpointSlice, Service};
use crate::collections::{SortedMap, SortedSet};

/// One Service's health check on this node.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ServiceHealthCheck {
    /// The Service's namespace.
    pub namespace: String,
    /// The Service's name.
    pub name: String,
    /// Its `healthCheckNodePort`.
    pub port: u16,
    /// This node's ready endpoints of the Service, counted by address.
    pub local_endpoints: usize,
}

/// What a probe of a health check gets.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ServiceHealthAnswer {
    /// 200 when true, else 503.
    pub healthy: bool,
    /// kube-proxy's JSON body.
    pub body: String,
    /// The `X-Load-Balancing-Endpoint-Weight` header: the local endpoints.
    pub weight: usize,
}

impl ServiceHealthCheck {
    /// The answer, given whether the proxy itself is healthy.
    pub fn answer(&self, proxy_healthy: bool) -> ServiceHealthAnswer {
        let quoted = |text: &str| serde_json::Value::from(text).to_string();
        let body = format!(
            "{{\n\t\"service\": {{\n\t\t\"namespace\": {},\n\t\t\"name\": {}\n\t}},\n\t\"localEndpoints\": {},\n\t\"serviceProxyHealthy\": {}\n}}",
            quoted(&self.namespace),
            quoted(&self.name),
            self.local_endpoints,
            proxy_healthy
        );
        ServiceHealthAnswer {
            healthy: self.local_endpoints > 0 && proxy_healthy,
            body,
            weight: self.local_endpoints,
        }
    }
}

/// The health checks `node` serves, by port: one per Service that needs
/// one (LoadBalancer, `externalTrafficPolicy: Local`, a
/// `healthCheckNodePort` allocated). Two Services claiming one port (the
/// apiserver allocates them apart) leave it to the first by
/// `namespace/name`.
pub fn service_health_checks<'s, 'e>(
    services: impl IntoIterator<Item = &'s Service>,
    slices: impl IntoIterator<Item = &'e EndpointSlice>,
    node: &NodeInfo,
) -> SortedMap<u16, ServiceHealthCheck> {
    let groups = slices_by_service(slices);
    let by_key: SortedMap<String, &Service> = crate::sort::map_from(services.into_iter().map(|svc| (svc.key(), svc)));
    let mut checks = SortedMap::new();
    for (key, svc) in by_key {
        let port = svc.spec.health_check_node_port.and_then(|p| u16::try_from(p).ok());
        let Some(port) = port.filter(|p| *p != 0 && svc.needs_health_check_node_port()) else {
            continue;
        };
        if checks.contains_key(&port) {
            continue;
        }
        let local: SortedSet<&str> = (groups.get(&key).into_iter().flatten())
            .flat_map(|slice| &slice.endpoints)
            .filter(|e| e.node_name.as_deref() == Some(node.name.as_str()) && e.conditions.is_ready())
            .flat_map(|e| e.addresses.iter().map(String::as_str))
            .collect();
        checks.insert(
            port,
            ServiceHealthCheck {
                namespace: svc.metadata.namespace_or_default().to_string(),
                name: svc.metadata.name.clone(),
                port,
                local_endpoints: local.len(),
            },
        );
    }
    checks
}

#[cfg(test)]
mod tests {
    use super::*;

    fn objects(yaml: &str) -> (Vec<Service>, Vec<EndpointSlice>) {
        let (mut services, mut slices) = (Vec::new(), Vec::new());
        for object in crate::api::parse_manifests(yaml).unwrap() {
            match object {
                crate::api::Object::Service(svc) => services.push(*svc),
                crate::api::Object::EndpointSlice(slice) => slices.push(*slice),
                other => panic!("unexpected {other:?}"),
            }
        }
        (services, slices)
    }

    const CLUSTER: &str = "apiVersion: v1
kind: Service
metadata: {name: shop, namespace: web}
spec:
  type: LoadBalancer
  externalTrafficPolicy: Local
  healthCheckNodePort: 32000
  clusterIP: 10.96.0.20
  ports: [{name: http, port: 80, nodePort: 30080}, {name: https, port: 443, nodePort: 30443}]
---
apiVersion: v1
kind: Service
metadata: {name: open, namespace: web}
spec:
  type: LoadBalancer
  clusterIP: 10.96.0.21
  ports: [{port: 80, nodePort: 30081}]
---
apiVersion: discovery.k8s.io/v1
kind: EndpointSlice
metadata: {name: shop-1, namespace: web, labels: {kubernetes.io/service-name: shop}}
addressType: IPv4
ports: [{name: http, port: 8080}, {name: https, port: 8443}]
endpoints:
- {addresses: [10.244.1.1], nodeName: node-a, conditions: {ready: true}}
- {addresses: [10.244.1.2], nodeName: node-a, conditions: {ready: false}}
- {addresses: [10.244.2.1], nodeName: node-b, conditions: {ready: true}}
";

    fn node(name: &str) -> NodeInfo {
        NodeInfo {
            name: name.into(),
            ips: vec![],
            zone: None,
        }
    }

    #[test]
    fn only_local_policy_load_balancers_get_one_counting_ready_local_addresses() {
        let (services, slices) = objects(CLUSTER);
        let checks = service_health_checks(&services, &slices, &node("node-a"));
        assert_eq!(checks.len(), 1, "{checks:?}");
        let check = &checks[&32000];
        assert_eq!((check.namespace.as_str(), check.name.as_str()), ("web", "shop"));
        // One address, though it serves two ports; the not-ready one and
        // node-b's do not count.
        assert_eq!(check.local_endpoints, 1);
        let none = service_health_checks(&services, &slices, &node("node-c"));
        assert_eq!(none[&32000].local_endpoints, 0);
    }

    #[test]
    fn the_answer_is_kube_proxys() {
        let check = ServiceHealthCheck {
            namespace: "web".into(),
            name: "shop".into(),
            port: 32000,
            local_endpoints: 2,
        };
        let answer = check.answer(true);
        assert!(answer.healthy);
        assert_eq!(answer.weight, 2);
        assert_eq!(
            answer.body,
            "{\n\t\"service\": {\n\t\t\"namespace\": \"web\",\n\t\t\"name\": \"shop\"\n\t},\n\t\"localEndpoints\": 2,\n\t\"serviceProxyHealthy\": true\n}"
        );
        assert!(!check.answer(false).healthy, "an unhealthy proxy answers 503");
        let empty = ServiceHealthCheck {
            local_endpoints: 0,
            ..check
        };
        assert!(!empty.answer(true).healthy, "no local endpoint answers 503");
        assert!(empty.answer(true).body.contains("\"localEndpoints\": 0,"));
    }
}
