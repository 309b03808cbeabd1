//! `v1/Endpoints`: the legacy, one-object-per-Service view of endpoints that
//! `kubectl get endpoints` prints. For a Service with a selector svcnet
//! derives it from EndpointSlices (see [`crate::controllers::endpoints`]);
//! for one without, users write it and it is mirrored into EndpointSlices
//! (see [`crate::controllers::endpointslice_mirroring`]).

use super::endpoint_slice::ObjectReference;
use super::meta::ObjectMeta;
use serde::{Deserialize, Serialize};

/// The endpoints of one Service, grouped into subsets.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Endpoints {
    /// `v1`.
    #[serde(default)]
    pub api_version: String,
    /// `Endpoints`.
    #[serde(default)]
    pub kind: String,
    /// Name and namespace (the Service's), labels.
    #[serde(default)]
    pub metadata: ObjectMeta,
    /// Groups of addresses that serve the same ports.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub subsets: Vec<EndpointSubset>,
}

/// Addresses sharing one set of ports.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct EndpointSubset {
    /// Ready addresses: these receive traffic.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub addresses: Vec<EndpointAddress>,
    /// Addresses that are not ready (yet).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub not_ready_addresses: Vec<EndpointAddress>,
    /// The ports every address of the subset serves.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub ports: Vec<EndpointPort>,
}

/// One address of a subset.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct EndpointAddress {
    /// The IP address.
    #[serde(default)]
    pub ip: String,
    /// The hostname, for headless Services.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hostname: Option<String>,
    /// The node hosting the address.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub node_name: Option<String>,
    /// The object behind the address (a Pod).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub target_ref: Option<ObjectReference>,
}

/// One port of a subset.
#[derive(Clone, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct EndpointPort {
    /// The Service port's name; absent for a single unnamed port.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// The port number on the addresses.
    #[serde(default)]
    pub port: i64,
    /// `TCP`, `UDP` or `SCTP`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub protocol: Option<String>,
    /// Application protocol.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub app_protocol: Option<String>,
}
