//! The stored EndpointSlices, by `(namespace, name)` and by the Service
//! they belong to (their `kubernetes.io/service-name` label), so that
//! finding a Service's slices does not scan its namespace: with thousands
//! of Services, applying each one's slice would otherwise cost time
//! proportional to all of them. Slices are shared (`Arc`), so copying the
//! store (as the control plane does before a change it may have to undo)
//! copies no endpoint.

use super::ObjectKey;
use crate::api::EndpointSlice;
use crate::collections::{SortedMap, SortedSet};
use std::sync::Arc;

/// EndpointSlices with an index by Service.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct SliceStore {
    by_name: SortedMap<ObjectKey, Arc<EndpointSlice>>,
    /// `(namespace, service)` → names of the slices labelled with it.
    by_service: SortedMap<ObjectKey, SortedSet<String>>,
}

impl SliceStore {
    /// The slice `namespace/name`.
    pub fn get(&self, key: &ObjectKey) -> Option<&EndpointSlice> {
        self.by_name.get(key).map(|s| &**s)
    }

    /// Whether slice `namespace/name` exists.
    pub fn contains_key(&self, key: &ObjectKey) -> bool {
        self.by_name.contains_key(key)
    }

    /// Stores `slice` under `key`, replacing the one there.
    pub fn insert(&mut self, key: ObjectKey, slice: EndpointSlice) {
        if let Some(service) = slice.service_name() {
            self.by_service
                .entry((key.0.clone(), service.to_string()))
                .or_default()
                .insert(key.1.clone());
        }
        let old = self.by_name.insert(key.clone(), Arc::new(slice));
        if let Some(old) = &old {
            let new_service = self.by_name.get(&key).and_then(|s| s.service_name());
            if old.service_name() != new_service {
                self.unindex(&key, old);
            }
        }
    }

    /// Removes slice `namespace/name`.
    pub fn remove(&mut self, key: &ObjectKey) -> Option<EndpointSlice> {
        let old = self.by_name.remove(key)?;
        self.unindex(key, &old);
        Some(Arc::unwrap_or_clone(old))
    }

    /// Every slice, sorted by namespace and name.
    pub fn values(&self) -> impl Iterator<Item = &EndpointSlice> {
        self.by_name.values().map(|s| &**s)
    }

    /// Every slice with its key, sorted by namespace and name.
    pub fn iter(&self) -> impl Iterator<Item = (&ObjectKey, &EndpointSlice)> {
        self.by_name.iter().map(|(k, s)| (k, &**s))
    }

    /// The slices of Service `namespace/service`, sorted by name.
    pub fn for_service<'a>(&'a self, namespace: &str, service: &str) -> impl Iterator<Item = &'a EndpointSlice> + 'a {
        self.shared_for_service(namespace, service).map(|s| &**s)
    }

    /// [`Self::for_service`], as the shared slices themselves.
    pub fn shared_for_service<'a>(
        &'a self,
        namespace: &str,
        service: &str,
    ) -> impl Iterator<Item = &'a Arc<EndpointSlice>> + 'a {
        let namespace = namespace.to_string();
        self.by_service
            .get(&(namespace.clone(), service.to_string()))
            .into_iter()
            .flatten()
            .filter_map(move |name| self.by_name.get(&(namespace.clone(), name.clone())))
    }

    /// Drops `slice` (stored under `key`) from its Service's index entry.
    fn unindex(&mut self, key: &ObjectKey, slice: &EndpointSlice) {
        let Some(service) = slice.service_name() else {
            return;
        };
        let service_key = (key.0.clone(), service.to_string());
        if let Some(names) = self.by_service.get_mut(&service_key) {
            names.remove(&key.1);
            if names.is_empty() {
                self.by_service.remove(&service_key);
            }
        }
    }
}

impl FromIterator<(ObjectKey, EndpointSlice)> for SliceStore {
    fn from_iter<I: IntoIterator<Item = (ObjectKey, EndpointSlice)>>(iter: I) -> SliceStore {
        let mut store = SliceStore::default();
        for (key, slice) in iter {
            store.insert(key, slice);
        }
        store
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::api::endpoint_slice::SERVICE_NAME_LABEL;

    fn slice(name: &str, service: Option<&str>) -> (ObjectKey, EndpointSlice) {
        let mut s = EndpointSlice::default();
        s.metadata.name = name.into();
        s.metadata.namespace = "shop".into();
        if let Some(service) = service {
            s.metadata.labels.insert(SERVICE_NAME_LABEL.into(), service.into());
        }
        (("shop".into(), name.into()), s)
    }

    fn names(store: &SliceStore, service: &str) -> Vec<String> {
        store
            .for_service("shop", service)
            .map(|s| s.metadata.name.clone())
            .collect()
    }

    #[test]
    fn the_index_follows_inserts_relabels_and_removals() {
        let mut store: SliceStore = [
            slice("web-b", Some("web")),
            slice("web-a", Some("web")),
            slice("loose", None),
        ]
        .into_iter()
        .collect();
        assert_eq!(names(&store, "web"), ["web-a", "web-b"]);
        assert!(names(&store, "db").is_empty());

        // Relabelled to another Service: it moves.
        let (key, moved) = slice("web-b", Some("db"));
        store.insert(key.clone(), moved);
        assert_eq!(names(&store, "web"), ["web-a"]);
        assert_eq!(names(&store, "db"), ["web-b"]);

        // Label dropped, then the slice removed.
        let (key, unlabelled) = slice("web-b", None);
        store.insert(key.clone(), unlabelled);
        assert!(names(&store, "db").is_empty());
        assert!(store.remove(&key).is_some());
        assert!(store.remove(&key).is_none());
        assert!(store.by_service.keys().all(|(_, s)| s == "web"));
        assert_eq!(store.values().count(), 2);
    }

    #[test]
    fn namespaces_are_kept_apart() {
        let mut store = SliceStore::default();
        let (_, mut other) = slice("web-a", Some("web"));
        other.metadata.namespace = "dev".into();
        store.insert(("dev".into(), "web-a".into()), other);
        assert!(names(&store, "web").is_empty());
        assert_eq!(store.for_service("dev", "web").count(), 1);
    }
}
