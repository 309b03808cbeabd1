//! `metadata`: the part every Kubernetes object shares.

use crate::collections::SortedMap;
use serde::{Deserialize, Serialize};

/// Object metadata: name, namespace, labels, annotations and the fields the
/// API server fills in. Fields Kubernetes writes that svcnet does not use
/// (`managedFields`, `ownerReferences`, ...) are accepted and kept opaque so
/// that `kubectl get -o yaml` output can be applied as it is.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ObjectMeta {
    /// The object's name, unique per kind and namespace.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub name: String,
    /// The namespace; empty means `default` for namespaced kinds.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub namespace: String,
    /// Labels, matched by selectors.
    #[serde(default, skip_serializing_if = "SortedMap::is_empty")]
    pub labels: SortedMap<String, String>,
    /// Annotations, such as `svcnet.io/ipvs-scheduler`.
    #[serde(default, skip_serializing_if = "SortedMap::is_empty")]
    pub annotations: SortedMap<String, String>,
    /// Unique id assigned on creation.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub uid: String,
    /// Version of the stored object, bumped on every change.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub resource_version: String,
    /// Set when the object is being deleted (RFC 3339 text).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub deletion_timestamp: Option<String>,
    /// Opaque; written beside `deletionTimestamp`; accepted and kept, unused.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub deletion_grace_period_seconds: Option<serde_json::Value>,
    /// Opaque fields written by the API server; accepted and kept, unused.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub creation_timestamp: Option<serde_json::Value>,
    /// Opaque; accepted and kept, unused.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub generation: Option<serde_json::Value>,
    /// Opaque; accepted and kept, unused.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub owner_references: Option<serde_json::Value>,
    /// Opaque; accepted and kept, unused.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub finalizers: Option<serde_json::Value>,
    /// Opaque; accepted and dropped on output.
    #[serde(default, skip_serializing)]
    pub managed_fields: Option<serde_json::Value>,
    /// The prefix a name is generated from when `name` is empty.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub generate_name: Option<serde_json::Value>,
}

impl ObjectMeta {
    /// `generateName`, when it is a non-empty string.
    pub fn generate_name_prefix(&self) -> Option<&str> {
        match &self.generate_name {
            Some(serde_json::Value::String(prefix)) if !prefix.is_empty() => Some(prefix),
            _ => None,
        }
    }

    /// Carries over what the API server set when `old` was created and
    /// last written (uid, resourceVersion, creationTimestamp), so that an
    /// update compares equal to what it replaces when nothing else changed.
    pub fn keep_identity_of(&mut self, old: &ObjectMeta) {
        self.uid = old.uid.clone();
        self.resource_version = old.resource_version.clone();
        self.creation_timestamp = old.creation_timestamp.clone();
    }

    /// The namespace, with `default` for an empty one.
    pub fn namespace_or_default(&self) -> &str {
        if self.namespace.is_empty() {
            "default"
        } else {
            &self.namespace
        }
    }
}
