//! `v1/Pod` and `v1/Node`: the parts svcnet reads.
//!
//! Only the fields Services and kube-proxy depend on are typed: labels,
//! `deletionTimestamp`, containers and their ports, `hostname`, `subdomain`,
//! `nodeName`, `enableServiceLinks`, `podIPs`, `phase`, the Ready condition,
//! node addresses and the zone label. Everything else a real manifest
//! carries (images, resources, probes, volumes, ...) is accepted and kept
//! as it is, so `kubectl get pod -o yaml` output applies unchanged.

use super::meta::ObjectMeta;
use crate::collections::SortedMap;
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// Fields svcnet does not interpret, kept as given.
pub type Extra = SortedMap<String, Value>;

/// A Kubernetes Pod.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Pod {
    /// `v1`.
    #[serde(default)]
    pub api_version: String,
    /// `Pod`.
    #[serde(default)]
    pub kind: String,
    /// Name, namespace, labels, `deletionTimestamp`.
    #[serde(default)]
    pub metadata: ObjectMeta,
    /// Containers, hostname, node.
    #[serde(default)]
    pub spec: PodSpec,
    /// Phase, addresses, conditions.
    #[serde(default)]
    pub status: PodStatus,
}

/// `spec` of a Pod.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PodSpec {
    /// The containers and the ports they declare.
    #[serde(default)]
    pub containers: Vec<Container>,
    /// The pod's hostname (for headless Service DNS records).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hostname: Option<String>,
    /// The headless Service the hostname is published under.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub subdomain: Option<String>,
    /// The node the pod runs on.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub node_name: Option<String>,
    /// Whether the kubelet injects Service environment variables (default true).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub enable_service_links: Option<bool>,
    /// Everything else in the spec, kept as given.
    #[serde(flatten)]
    pub extra: Extra,
}

/// One container of a Pod.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Container {
    /// Container name.
    #[serde(default)]
    pub name: String,
    /// Declared ports (named `targetPort`s resolve against these).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub ports: Vec<ContainerPort>,
    /// Everything else (image, resources, probes, ...), kept as given.
    #[serde(flatten)]
    pub extra: Extra,
}

/// One entry of `containers[].ports`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ContainerPort {
    /// Port name, for named `targetPort`s.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// The port number in the pod.
    pub container_port: i64,
    /// `TCP` (default), `UDP` or `SCTP`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub protocol: Option<String>,
    /// Everything else (hostPort, hostIP), kept as given.
    #[serde(flatten)]
    pub extra: Extra,
}

/// `status` of a Pod.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PodStatus {
    /// `Pending`, `Running`, `Succeeded`, `Failed` or `Unknown`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub phase: Option<String>,
    /// The primary pod IP.
    #[serde(default, rename = "podIP", skip_serializing_if = "Option::is_none")]
    pub pod_ip: Option<String>,
    /// All pod IPs (one per family).
    #[serde(default, rename = "podIPs", skip_serializing_if = "Vec::is_empty")]
    pub pod_ips: Vec<PodIp>,
    /// Conditions; `Ready` decides whether an endpoint is serving.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub conditions: Vec<PodCondition>,
    /// Everything else, kept as given.
    #[serde(flatten)]
    pub extra: Extra,
}

/// One entry of `status.podIPs`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct PodIp {
    /// The address.
    pub ip: String,
}

/// One entry of `status.conditions`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PodCondition {
    /// `Ready`, `ContainersReady`, ...
    #[serde(rename = "type")]
    pub condition_type: String,
    /// `True`, `False` or `Unknown`.
    pub status: String,
    /// Everything else (timestamps, reasons), kept as given.
    #[serde(flatten)]
    pub extra: Extra,
}

impl Pod {
    /// The pod's addresses: `status.podIPs`, else `status.podIP`.
    pub fn ips(&self) -> Vec<String> {
        if !self.status.pod_ips.is_empty() {
            self.status.pod_ips.iter().map(|p| p.ip.clone()).collect()
        } else {
            self.status.pod_ip.iter().cloned().collect()
        }
    }

    /// True when the `Ready` condition is `True`.
    pub fn is_ready(&self) -> bool {
        self.status
            .conditions
            .iter()
            .any(|c| c.condition_type == "Ready" && c.status == "True")
    }

    /// True for pods that finished (`Succeeded` or `Failed`).
    pub fn is_terminal(&self) -> bool {
        matches!(self.status.phase.as_deref(), Some("Succeeded") | Some("Failed"))
    }

    /// True when the pod is being deleted.
    pub fn is_terminating(&self) -> bool {
        self.metadata.deletion_timestamp.is_some()
    }
}

/// A Kubernetes Node.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Node {
    /// `v1`.
    #[serde(default)]
    pub api_version: String,
    /// `Node`.
    #[serde(default)]
    pub kind: String,
    /// Name and labels (`topology.kubernetes.io/zone`).
    #[serde(default)]
    pub metadata: ObjectMeta,
    /// Pod CIDRs and the rest, kept as given.
    #[serde(default)]
    pub spec: Extra,
    /// Addresses.
    #[serde(default)]
    pub status: NodeStatus,
}

/// `status` of a Node.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct NodeStatus {
    /// `InternalIP`, `ExternalIP`, `Hostname` addresses.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub addresses: Vec<NodeAddress>,
    /// Everything else, kept as given.
    #[serde(flatten)]
    pub extra: Extra,
}

/// One entry of `status.addresses`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct NodeAddress {
    /// `InternalIP`, `ExternalIP` or `Hostname`.
    #[serde(rename = "type")]
    pub address_type: String,
    /// The address.
    pub address: String,
}

/// The node label holding the zone.
pub const ZONE_LABEL: &str = "topology.kubernetes.io/zone";

impl Node {
    /// The node's zone label, if any.
    pub fn zone(&self) -> Option<&str> {
        self.metadata.labels.get(ZONE_LABEL).map(String::as_str)
    }

    /// The node's IP addresses (`InternalIP` and `ExternalIP`).
    pub fn ips(&self) -> Vec<String> {
        self.status
            .addresses
            .iter()
            .filter(|a| a.address_type == "InternalIP" || a.address_type == "ExternalIP")
            .map(|a| a.address.clone())
            .collect()
    }
}
