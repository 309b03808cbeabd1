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

use super::node::NodeInfo;
use crate::api::endpoint_slice::SERVICE_NAME_LABEL;
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
/// `namespace/name`; a Service given twice counts once, its last copy.
///
/// The agent asks after every sync, so the work follows the Services that
/// need a check (few in most clusters), not the cluster: the others and
/// their slices are passed over without building a key.
pub fn service_health_checks<'s, 'e>(
    services: impl IntoIterator<Item = &'s Service>,
    slices: impl IntoIterator<Item = &'e EndpointSlice>,
    node: &NodeInfo,
) -> SortedMap<u16, ServiceHealthCheck> {
    let last_copies: SortedMap<(&str, &str), &Service> = crate::sort::map_from(
        services
            .into_iter()
            .map(|svc| ((svc.metadata.namespace_or_default(), svc.metadata.name.as_str()), svc)),
    );
    let mut wanted: SortedMap<(&str, &str), (u16, SortedSet<&str>)> = SortedMap::new();
    for (key, svc) in last_copies {
        let port = svc.spec.health_check_node_port.and_then(|p| u16::try_from(p).ok());
        if let Some(port) = port.filter(|p| *p != 0 && svc.needs_health_check_node_port()) {
            wanted.insert(key, (port, SortedSet::new()));
        }
    }
    if wanted.is_empty() {
        return SortedMap::new();
    }
    for slice in slices {
        let Some(service) = slice.metadata.labels.get(SERVICE_NAME_LABEL) else {
            continue;
        };
        let Some((_, local)) = wanted.get_mut(&(slice.metadata.namespace_or_default(), service.as_str())) else {
            continue;
        };
        local.extend(
            (slice.endpoints.iter())
                .filter(|e| e.node_name.as_deref() == Some(node.name.as_str()) && e.conditions.is_ready())
                .flat_map(|e| e.addresses.iter().map(String::as_str)),
        );
    }
    // The first by `namespace/name` (as text) keeps a port two claim.
    let by_key: SortedMap<String, _> = crate::sort::map_from(
        wanted
            .into_iter()
            .map(|((ns, name), found)| (format!("{ns}/{name}"), (ns, name, found))),
    );
    let mut checks = SortedMap::new();
    for (namespace, name, (port, local)) in by_key.into_values() {
        checks.entry(port).or_insert_with(|| ServiceHealthCheck {
            namespace: namespace.to_string(),
            name: name.to_string(),
            port,
            local_endpoints: local.len(),
        });
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
    fn a_port_two_claim_goes_to_the_first_by_namespace_slash_name_and_a_repeated_service_counts_its_last_copy() {
        let lb = |namespace: &str, port: u16| {
            format!(
                "apiVersion: v1\nkind: Service\nmetadata: {{name: x, namespace: {namespace}}}\nspec:\n  type: LoadBalancer\n  \
                 externalTrafficPolicy: Local\n  healthCheckNodePort: {port}\n  ports: [{{port: 80, nodePort: 30080}}]\n---\n"
            )
        };
        // "a-b/x" sorts before "a/x" as text ('-' before '/'), though the
        // namespace "a" sorts before "a-b".
        let (services, slices) = objects(&(lb("a", 32000) + &lb("a-b", 32000)));
        let checks = service_health_checks(&services, &slices, &node("node-a"));
        assert_eq!(checks[&32000].namespace, "a-b");
        // The second copy of a/x moved it to another port: only that one.
        let (services, slices) = objects(&(lb("a", 32000) + &lb("a", 32001)));
        let checks = service_health_checks(&services, &slices, &node("node-a"));
        assert_eq!(checks.keys().copied().collect::<Vec<_>>(), [32001]);
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
