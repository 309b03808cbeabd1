//! `discovery.k8s.io/v1/EndpointSlice`: the endpoints behind a Service.

use super::meta::ObjectMeta;
use super::service::null_as_empty;
use crate::family::IpFamily;
use serde::{Deserialize, Serialize};

/// The label naming the Service a slice belongs to.
pub const SERVICE_NAME_LABEL: &str = "kubernetes.io/service-name";
/// The label naming the controller managing a slice.
pub const MANAGED_BY_LABEL: &str = "endpointslice.kubernetes.io/managed-by";
/// The value of [`MANAGED_BY_LABEL`] for the EndpointSlice controller.
pub const MANAGED_BY_CONTROLLER: &str = "endpointslice-controller.k8s.io";
/// The label telling the mirroring controller to leave an object alone
/// (set, to `"true"`, on the `kubernetes` Service's endpoints).
pub const SKIP_MIRROR_LABEL: &str = "endpointslice.kubernetes.io/skip-mirror";
/// The label, with an empty value, on the slices of a headless Service.
pub const HEADLESS_LABEL: &str = "service.kubernetes.io/headless";

/// The values of `addressType`.
pub mod address_types {
    /// IPv4 addresses.
    pub const IPV4: &str = "IPv4";
    /// IPv6 addresses.
    pub const IPV6: &str = "IPv6";
    /// Fully qualified domain names.
    pub const FQDN: &str = "FQDN";
    /// All of them, in the order Kubernetes lists them in errors.
    pub const ALL: [&str; 3] = [FQDN, IPV4, IPV6];
}

/// An EndpointSlice.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct EndpointSlice {
    /// `discovery.k8s.io/v1`.
    #[serde(default)]
    pub api_version: String,
    /// `EndpointSlice`.
    #[serde(default)]
    pub kind: String,
    /// Name, namespace and the Service/controller labels.
    #[serde(default)]
    pub metadata: ObjectMeta,
    /// `IPv4`, `IPv6` or `FQDN`.
    #[serde(default)]
    pub address_type: String,
    /// The endpoints (`null` from the API server when there are none).
    #[serde(default, deserialize_with = "null_as_empty")]
    pub endpoints: Vec<Endpoint>,
    /// The ports every endpoint of this slice serves (`null` when none).
    #[serde(default, deserialize_with = "null_as_empty")]
    pub ports: Vec<EndpointPort>,
}

/// One endpoint: a pod (or any backend) and its state.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Endpoint {
    /// Its addresses (one for IP slices).
    #[serde(default)]
    pub addresses: Vec<String>,
    /// ready / serving / terminating.
    #[serde(default)]
    pub conditions: EndpointConditions,
    /// Hostname, for headless DNS.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hostname: Option<String>,
    /// The object behind the endpoint (a Pod). Boxed, as are the hints:
    /// an endpoint is held for every address of the cluster (50,000 in a
    /// proxy's cache of 5,000 Services), and inline these two would more
    /// than double its size.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub target_ref: Option<Box<ObjectReference>>,
    /// The node it runs on.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub node_name: Option<String>,
    /// The zone of that node.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub zone: Option<String>,
    /// Topology hints.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hints: Option<Box<EndpointHints>>,
}

/// `endpoints[].conditions`. Absent values mean "unknown", read as true
/// for `ready` and `serving` and false for `terminating`, as kube-proxy does.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct EndpointConditions {
    /// Ready to receive new traffic.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ready: Option<bool>,
    /// Serving, whether or not terminating.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub serving: Option<bool>,
    /// Being deleted.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub terminating: Option<bool>,
}

/// A reference to another object.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ObjectReference {
    /// Kind, such as `Pod`.
    #[serde(default)]
    pub kind: String,
    /// Namespace.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub namespace: String,
    /// Name.
    #[serde(default)]
    pub name: String,
    /// UID.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub uid: String,
    /// API version of the referent; accepted and kept.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub api_version: Option<String>,
    /// Resource version of the referent; accepted and kept.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resource_version: Option<String>,
    /// A field inside the referent; accepted and kept.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub field_path: Option<String>,
}

/// Topology hints on an endpoint.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct EndpointHints {
    /// Zones that should use this endpoint.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub for_zones: Vec<ForZone>,
    /// Nodes that should use this endpoint.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub for_nodes: Vec<ForNode>,
}

/// `hints.forZones[]`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ForZone {
    /// Zone name.
    pub name: String,
}

/// `hints.forNodes[]`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ForNode {
    /// Node name.
    pub name: String,
}

/// One entry of `ports`.
#[derive(Clone, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct EndpointPort {
    /// Matches the Service port's name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// `TCP`, `UDP` or `SCTP`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub protocol: Option<String>,
    /// The port on the endpoints.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub port: Option<i64>,
    /// Application protocol.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub app_protocol: Option<String>,
}

impl EndpointConditions {
    /// `ready`, reading "unknown" as true.
    pub fn is_ready(&self) -> bool {
        self.ready.unwrap_or(true)
    }

    /// `serving`, reading "unknown" as `ready`.
    pub fn is_serving(&self) -> bool {
        self.serving.unwrap_or_else(|| self.is_ready())
    }

    /// `terminating`, reading "unknown" as false.
    pub fn is_terminating(&self) -> bool {
        self.terminating.unwrap_or(false)
    }
}

impl EndpointSlice {
    /// The Service this slice belongs to (its [`SERVICE_NAME_LABEL`]).
    pub fn service_name(&self) -> Option<&str> {
        self.metadata.labels.get(SERVICE_NAME_LABEL).map(String::as_str)
    }

    /// True when the EndpointSlice controller manages this slice.
    pub fn is_managed_by_controller(&self) -> bool {
        self.metadata.labels.get(MANAGED_BY_LABEL).map(String::as_str) == Some(MANAGED_BY_CONTROLLER)
    }

    /// The IP family of an `IPv4` or `IPv6` slice; `None` for `FQDN`.
    pub fn family(&self) -> Option<IpFamily> {
        IpFamily::parse(&self.address_type)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn null_endpoints_and_ports_read_as_none() {
        // What the API server writes for a slice with no endpoints.
        let slice: EndpointSlice = serde_json::from_str(
            r#"{"metadata": {"name": "web-1"}, "addressType": "IPv4", "endpoints": null, "ports": null}"#,
        )
        .unwrap();
        assert!(slice.endpoints.is_empty());
        assert!(slice.ports.is_empty());
    }
}
