//! `v1/Service`: the object users create to get a ClusterIP.
//!
//! Enum-like fields (`type`, `protocol`, `ipFamilyPolicy`, ...) are kept as
//! strings so that a bad value reaches admission and is rejected with
//! Kubernetes' own "Unsupported value" message instead of a parse error.

use super::meta::ObjectMeta;
use crate::collections::SortedMap;
use serde::{Deserialize, Serialize};
use std::fmt;

/// A Kubernetes Service.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Service {
    /// `v1`.
    #[serde(default)]
    pub api_version: String,
    /// `Service`.
    #[serde(default)]
    pub kind: String,
    /// Name, namespace, labels, annotations.
    #[serde(default)]
    pub metadata: ObjectMeta,
    /// What the user asked for, filled in by admission.
    #[serde(default)]
    pub spec: ServiceSpec,
    /// Load balancer status (ingress IPs), set by a cloud controller.
    #[serde(default, skip_serializing_if = "ServiceStatus::is_empty")]
    pub status: ServiceStatus,
}

/// `spec` of a Service.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ServiceSpec {
    /// `ClusterIP` (default), `NodePort`, `LoadBalancer` or `ExternalName`.
    #[serde(default, rename = "type", skip_serializing_if = "String::is_empty")]
    pub service_type: String,
    /// Pods whose labels match get to be endpoints; none means the user
    /// manages the EndpointSlices.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub selector: Option<SortedMap<String, String>>,
    /// The ports the Service exposes.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub ports: Vec<ServicePort>,
    /// The primary ClusterIP, `None` for headless.
    #[serde(default, rename = "clusterIP", skip_serializing_if = "String::is_empty")]
    pub cluster_ip: String,
    /// All ClusterIPs, primary first (two for dual-stack).
    #[serde(
        default,
        rename = "clusterIPs",
        skip_serializing_if = "Vec::is_empty",
        deserialize_with = "null_as_empty"
    )]
    pub cluster_ips: Vec<String>,
    /// `IPv4` and/or `IPv6`, in the order of `clusterIPs`.
    #[serde(default, skip_serializing_if = "Vec::is_empty", deserialize_with = "null_as_empty")]
    pub ip_families: Vec<String>,
    /// `SingleStack`, `PreferDualStack` or `RequireDualStack`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ip_family_policy: Option<String>,
    /// Extra addresses traffic may arrive on.
    #[serde(
        default,
        rename = "externalIPs",
        skip_serializing_if = "Vec::is_empty",
        deserialize_with = "null_as_empty"
    )]
    pub external_ips: Vec<String>,
    /// DNS name an ExternalName Service aliases.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub external_name: Option<String>,
    /// `None` (default) or `ClientIP`.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub session_affinity: String,
    /// Timeout for ClientIP affinity.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session_affinity_config: Option<SessionAffinityConfig>,
    /// `Cluster` or `Local`, for NodePort/LoadBalancer/externalIPs traffic.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub external_traffic_policy: Option<String>,
    /// `Cluster` or `Local`, for ClusterIP traffic.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub internal_traffic_policy: Option<String>,
    /// Health check port for LoadBalancer + externalTrafficPolicy Local.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub health_check_node_port: Option<i64>,
    /// For LoadBalancer: whether NodePorts are allocated (default true).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub allocate_load_balancer_node_ports: Option<bool>,
    /// Publish endpoints of pods that are not ready.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub publish_not_ready_addresses: Option<bool>,
    /// Requested load balancer address (deprecated in Kubernetes; kept).
    #[serde(default, rename = "loadBalancerIP", skip_serializing_if = "Option::is_none")]
    pub load_balancer_ip: Option<String>,
    /// Load balancer implementation class.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub load_balancer_class: Option<String>,
    /// For LoadBalancer: the client CIDRs the load balancer lets in.
    #[serde(default, skip_serializing_if = "Vec::is_empty", deserialize_with = "null_as_empty")]
    pub load_balancer_source_ranges: Vec<String>,
    /// How traffic is spread over endpoints: `PreferClose`,
    /// `PreferSameZone` or `PreferSameNode`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub traffic_distribution: Option<String>,
}

/// A list that may be written as `null`, which the API server reads as
/// empty (an apply that unsets `clusterIPs: null`; an EndpointSlice's
/// `endpoints` and `ports` as the API server writes them when empty).
pub(crate) fn null_as_empty<'de, D, T>(deserializer: D) -> Result<Vec<T>, D::Error>
where
    D: serde::Deserializer<'de>,
    T: Deserialize<'de>,
{
    Ok(Option::<Vec<T>>::deserialize(deserializer)?.unwrap_or_default())
}

/// One entry of `spec.ports`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ServicePort {
    /// Port name; required when there is more than one port.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub name: String,
    /// `TCP` (default), `UDP` or `SCTP`.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub protocol: String,
    /// The port the Service listens on.
    #[serde(default)]
    pub port: i64,
    /// The pod port, by number or by container port name; defaults to `port`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub target_port: Option<IntOrString>,
    /// The node port, for NodePort and LoadBalancer Services.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub node_port: Option<i64>,
    /// Application protocol hint.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub app_protocol: Option<String>,
}

/// A port given by number or by name (`targetPort: 8080` or `targetPort: http`).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum IntOrString {
    /// A port number.
    Int(i64),
    /// A port name.
    Str(String),
}

impl fmt::Display for IntOrString {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            IntOrString::Int(i) => write!(f, "{i}"),
            IntOrString::Str(s) => f.write_str(s),
        }
    }
}

/// `spec.sessionAffinityConfig`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SessionAffinityConfig {
    /// ClientIP affinity settings.
    #[serde(default, rename = "clientIP", skip_serializing_if = "Option::is_none")]
    pub client_ip: Option<ClientIpConfig>,
}

/// `spec.sessionAffinityConfig.clientIP`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ClientIpConfig {
    /// Seconds a client sticks to its endpoint (default 10800).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timeout_seconds: Option<i64>,
}

/// `status` of a Service.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ServiceStatus {
    /// Load balancer state.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub load_balancer: Option<LoadBalancerStatus>,
}

impl ServiceStatus {
    /// True when no load balancer status is set.
    pub fn is_empty(&self) -> bool {
        self.load_balancer.as_ref().is_none_or(|lb| lb.ingress.is_empty())
    }
}

/// `status.loadBalancer`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct LoadBalancerStatus {
    /// Addresses the load balancer receives traffic on.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub ingress: Vec<LoadBalancerIngress>,
}

/// One load balancer ingress point.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct LoadBalancerIngress {
    /// Ingress IP address.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ip: Option<String>,
    /// Ingress host name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hostname: Option<String>,
}

/// The Service types, as written in `spec.type`.
pub mod types {
    /// Reachable inside the cluster on its ClusterIP.
    pub const CLUSTER_IP: &str = "ClusterIP";
    /// Also reachable on every node's IP at a NodePort.
    pub const NODE_PORT: &str = "NodePort";
    /// Also reachable through an external load balancer.
    pub const LOAD_BALANCER: &str = "LoadBalancer";
    /// A DNS alias (CNAME) for another name; no ClusterIP.
    pub const EXTERNAL_NAME: &str = "ExternalName";
    /// All types, in the order Kubernetes lists them in errors.
    pub const ALL: [&str; 4] = [CLUSTER_IP, EXTERNAL_NAME, LOAD_BALANCER, NODE_PORT];
}

impl Service {
    /// `namespace/name`.
    pub fn key(&self) -> String {
        format!("{}/{}", self.metadata.namespace_or_default(), self.metadata.name)
    }

    /// The Service type, `ClusterIP` when unset.
    pub fn service_type(&self) -> &str {
        if self.spec.service_type.is_empty() {
            types::CLUSTER_IP
        } else {
            &self.spec.service_type
        }
    }

    /// True for `clusterIP: None`.
    pub fn is_headless(&self) -> bool {
        self.spec.cluster_ip == "None"
    }

    /// True when the Service gets NodePorts: NodePort, and LoadBalancer
    /// unless `allocateLoadBalancerNodePorts: false`.
    pub fn needs_node_ports(&self) -> bool {
        match self.service_type() {
            types::NODE_PORT => true,
            types::LOAD_BALANCER => self.spec.allocate_load_balancer_node_ports != Some(false),
            _ => false,
        }
    }

    /// The load balancer ingress points from `status.loadBalancer`.
    pub fn load_balancer_ingress(&self) -> &[LoadBalancerIngress] {
        self.status
            .load_balancer
            .as_ref()
            .map(|lb| lb.ingress.as_slice())
            .unwrap_or_default()
    }

    /// True when a `healthCheckNodePort` is allocated: LoadBalancer with
    /// `externalTrafficPolicy: Local`.
    pub fn needs_health_check_node_port(&self) -> bool {
        self.service_type() == types::LOAD_BALANCER && self.spec.external_traffic_policy.as_deref() == Some("Local")
    }
}
