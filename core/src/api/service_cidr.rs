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
    /// Whether ClusterIPs may come from it: written by the control plane.
    #[serde(default, skip_serializing_if = "ServiceCidrStatus::is_empty")]
    pub status: ServiceCidrStatus,
}

/// `spec` of a ServiceCIDR.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ServiceCidrSpec {
    /// One CIDR, or two of different families.
    #[serde(default)]
    pub cidrs: Vec<String>,
}

/// `status` of a ServiceCIDR: its `Ready` condition.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ServiceCidrStatus {
    /// One condition, `Ready`: `True` while ClusterIPs are allocated from
    /// the ranges, `False` (reason `Terminating`) while its deletion is held.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub conditions: Vec<Condition>,
}

impl ServiceCidrStatus {
    /// No condition written yet.
    pub fn is_empty(&self) -> bool {
        self.conditions.is_empty()
    }
}

/// A `metav1.Condition`, as the ServiceCIDR controller writes it.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Condition {
    /// The condition's name, such as `Ready`.
    #[serde(default, rename = "type")]
    pub type_: String,
    /// `True`, `False` or `Unknown`.
    #[serde(default)]
    pub status: String,
    /// When `status` last changed (RFC 3339).
    #[serde(default)]
    pub last_transition_time: String,
    /// A CamelCase word, empty when there is nothing to add.
    #[serde(default)]
    pub reason: String,
    /// A sentence for humans.
    #[serde(default)]
    pub message: String,
}
