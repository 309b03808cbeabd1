//! `networking.k8s.io/v1/ServiceCIDR`: extra ranges ClusterIPs come from.
//!
//! The ranges given by `--service-cluster-ip-range` form the default
//! ServiceCIDR (`kubernetes`); users add more with objects of this kind.

use super::meta::ObjectMeta;
use serde::{Deserialize, Serialize};

/// A ServiceCIDR object.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ServiceCidr {
    /// `networking.k8s.io/v1`.
    #[serde(default)]
    pub api_version: String,
    /// `ServiceCIDR`.
    #[serde(default)]
    pub kind: String,
    /// Name (cluster-scoped: no namespace).
    #[serde(default)]
    pub metadata: ObjectMeta,
    /// The ranges.
    #[serde(default)]
    pub spec: ServiceCidrSpec,
}

/// `spec` of a ServiceCIDR.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ServiceCidrSpec {
    /// One CIDR, or two of different families.
    #[serde(default)]
    pub cidrs: Vec<String>,
}
