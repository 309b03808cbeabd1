//! `metadata`: the part every Kubernetes object shares.

use crate::collections::SortedMap;
use serde::de::{Deserializer, MapAccess, SeqAccess, Visitor};
use serde::{Deserialize, Serialize};
use std::fmt;

/// Object metadata: name, namespace, labels, annotations and the fields the
/// API server fills in. Fields Kubernetes writes that svcnet does not use
/// (`ownerReferences`, ...) are accepted and kept opaque, and `managedFields`
/// accepted and read past, so that `kubectl get -o yaml` output can be
/// applied as it is.
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
    /// Accepted and not kept: read past without being built (they are a
    /// large part of every object the API server sends), never written.
    #[serde(default, skip_serializing)]
    pub managed_fields: Option<Skipped>,
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

/// A value that is read past and not kept: any JSON is accepted and
/// nothing is built. It is read as `serde_json::Value` is, through
/// `deserialize_any` all the way down, so a decoder that reports the fields
/// a type ignores ([`decode`](super::decode)) does not report it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Skipped;

impl<'de> Deserialize<'de> for Skipped {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_any(Skipped)
    }
}

impl<'de> Visitor<'de> for Skipped {
    type Value = Skipped;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any value")
    }

    fn visit_bool<E>(self, _: bool) -> Result<Skipped, E> {
        Ok(Skipped)
    }

    fn visit_i64<E>(self, _: i64) -> Result<Skipped, E> {
        Ok(Skipped)
    }

    fn visit_u64<E>(self, _: u64) -> Result<Skipped, E> {
        Ok(Skipped)
    }

    fn visit_f64<E>(self, _: f64) -> Result<Skipped, E> {
        Ok(Skipped)
    }

    fn visit_str<E>(self, _: &str) -> Result<Skipped, E> {
        Ok(Skipped)
    }

    fn visit_unit<E>(self) -> Result<Skipped, E> {
        Ok(Skipped)
    }

    fn visit_none<E>(self) -> Result<Skipped, E> {
        Ok(Skipped)
    }

    fn visit_some<D: Deserializer<'de>>(self, deserializer: D) -> Result<Skipped, D::Error> {
        Skipped::deserialize(deserializer)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut items: A) -> Result<Skipped, A::Error> {
        while items.next_element::<Skipped>()?.is_some() {}
        Ok(Skipped)
    }

    fn visit_map<A: MapAccess<'de>>(self, mut entries: A) -> Result<Skipped, A::Error> {
        while entries.next_entry::<Skipped, Skipped>()?.is_some() {}
        Ok(Skipped)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MANAGED: &str = r#"{"name": "web", "managedFields": [{"manager": "kubectl-create", "operation": "Update",
        "apiVersion": "v1", "time": "2026-01-01T00:00:00Z", "fieldsType": "FieldsV1",
        "fieldsV1": {"f:spec": {"f:ports": {".": {}, "k:{\"port\":80,\"protocol\":\"TCP\"}": {}}}}}],
        "unknownField": 1}"#;

    #[test]
    fn managed_fields_are_read_past_and_not_reported_as_ignored() {
        let value: serde_json::Value = serde_json::from_str(MANAGED).unwrap();
        let decoded = crate::api::decode::from_value::<ObjectMeta>(value).unwrap();
        assert_eq!(decoded.value.managed_fields, Some(Skipped));
        assert_eq!(decoded.value.name, "web");
        assert_eq!(decoded.ignored, vec!["unknownField".to_string()]);
        let meta: ObjectMeta = serde_json::from_str(MANAGED).unwrap();
        assert_eq!(meta.managed_fields, Some(Skipped));
        assert!(!serde_json::to_string(&meta).unwrap().contains("managedFields"));
    }

    #[test]
    fn managed_fields_of_any_shape_are_accepted() {
        for managed in [
            "null",
            "1",
            "-1",
            "1.5",
            "true",
            "\"x\"",
            "[]",
            "{}",
            "[[{\"a\": [null]}]]",
        ] {
            let text = format!(r#"{{"name": "web", "managedFields": {managed}}}"#);
            let meta: ObjectMeta = serde_json::from_str(&text).unwrap_or_else(|e| panic!("{managed}: {e}"));
            assert_eq!(meta.managed_fields, (managed != "null").then_some(Skipped), "{managed}");
        }
    }
}
