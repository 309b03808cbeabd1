//! Service defaulting, as kube-apiserver applies it before validation.
//!
//! Defaults: namespace `default`, type `ClusterIP`, protocol `TCP`,
//! `targetPort` = `port`, `sessionAffinity: None` (and a 10800 s timeout for
//! `ClientIP`), traffic policies `Cluster`, `allocateLoadBalancerNodePorts:
//! true` for LoadBalancers, and `clusterIP`/`clusterIPs` kept in step.

use crate::api::service::{types, ClientIpConfig, IntOrString, Service, SessionAffinityConfig};

/// The default ClientIP affinity timeout: three hours.
pub const DEFAULT_CLIENT_IP_TIMEOUT_SECONDS: i64 = 10800;

/// Fills in every default Kubernetes applies to a Service.
pub fn default_service(svc: &mut Service) {
    if svc.api_version.is_empty() {
        svc.api_version = "v1".into();
    }
    if svc.kind.is_empty() {
        svc.kind = "Service".into();
    }
    if svc.metadata.namespace.is_empty() {
        svc.metadata.namespace = "default".into();
    }
    let spec = &mut svc.spec;
    if spec.service_type.is_empty() {
        spec.service_type = types::CLUSTER_IP.into();
    }
    for port in &mut spec.ports {
        if port.protocol.is_empty() {
            port.protocol = "TCP".into();
        }
        if port.target_port.is_none() || port.target_port == Some(IntOrString::Int(0)) {
            port.target_port = Some(IntOrString::Int(port.port));
        }
    }
    if spec.session_affinity.is_empty() {
        spec.session_affinity = "None".into();
    }
    if spec.session_affinity == "ClientIP" {
        let cfg = spec
            .session_affinity_config
            .get_or_insert_with(SessionAffinityConfig::default);
        let client = cfg.client_ip.get_or_insert_with(ClientIpConfig::default);
        client.timeout_seconds.get_or_insert(DEFAULT_CLIENT_IP_TIMEOUT_SECONDS);
    }
    // Externally accessible: NodePort, LoadBalancer, or a ClusterIP
    // Service with externalIPs.
    let external = spec.service_type == types::NODE_PORT
        || spec.service_type == types::LOAD_BALANCER
        || (spec.service_type == types::CLUSTER_IP && !spec.external_ips.is_empty());
    if external && spec.external_traffic_policy.is_none() {
        spec.external_traffic_policy = Some("Cluster".into());
    }
    if spec.service_type != types::EXTERNAL_NAME && spec.internal_traffic_policy.is_none() {
        spec.internal_traffic_policy = Some("Cluster".into());
    }
    if spec.service_type == types::LOAD_BALANCER && spec.allocate_load_balancer_node_ports.is_none() {
        spec.allocate_load_balancer_node_ports = Some(true);
    }
    // `clusterIP` fills `clusterIPs`, not the other way round: a Service
    // that gives only `clusterIPs` is refused, as kube-apiserver does.
    if spec.cluster_ips.is_empty() && !spec.cluster_ip.is_empty() {
        spec.cluster_ips = vec![spec.cluster_ip.clone()];
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::api::service::ServicePort;

    #[test]
    fn fills_kubernetes_defaults() {
        let mut svc = Service::default();
        svc.metadata.name = "web".into();
        svc.spec.ports.push(ServicePort {
            port: 80,
            ..Default::default()
        });
        default_service(&mut svc);
        assert_eq!(svc.metadata.namespace, "default");
        assert_eq!(svc.spec.service_type, "ClusterIP");
        assert_eq!(svc.spec.ports[0].protocol, "TCP");
        assert_eq!(svc.spec.ports[0].target_port, Some(IntOrString::Int(80)));
        assert_eq!(svc.spec.session_affinity, "None");
        assert_eq!(svc.spec.internal_traffic_policy.as_deref(), Some("Cluster"));
        assert_eq!(svc.spec.external_traffic_policy, None);
    }

    #[test]
    fn client_ip_affinity_gets_three_hours() {
        let mut svc = Service::default();
        svc.spec.session_affinity = "ClientIP".into();
        svc.spec.service_type = "LoadBalancer".into();
        default_service(&mut svc);
        let timeout = svc
            .spec
            .session_affinity_config
            .and_then(|c| c.client_ip)
            .and_then(|c| c.timeout_seconds);
        assert_eq!(timeout, Some(10800));
        assert_eq!(svc.spec.allocate_load_balancer_node_ports, Some(true));
        assert_eq!(svc.spec.external_traffic_policy.as_deref(), Some("Cluster"));
    }
}
