//! Which Services a batch of object changes touched: the ones whose
//! Service object or EndpointSlices differ afterwards. A proxy recomputes
//! only those. The Services a change can reach are found first (a Service
//! itself; the Service an EndpointSlice is labelled with, before and after;
//! every Service of a Pod's namespace; every Service for a Node or
//! ServiceCIDR, or for a Pod or Deployment once there are Deployments),
//! their state is taken (the shared objects, not copies of them), and
//! compared after the change, so the cost follows the change rather than
//! the cluster.

use super::{ControlPlane, ObjectKey, ObjectRef};
use crate::api::manifest::Object;
use crate::api::{EndpointSlice, Service};
use crate::collections::{SortedMap, SortedSet};
use std::borrow::Borrow;
use std::sync::Arc;

/// The Services to watch: some, or all of them.
pub(super) enum Watch {
    /// These Services (`(namespace, name)`).
    Some(SortedSet<ObjectKey>),
    /// Every Service.
    All,
}

/// A Service and its EndpointSlices at one moment: the stored objects
/// themselves, shared.
pub(super) type ServiceState = (Option<Arc<Service>>, Vec<Arc<EndpointSlice>>);

/// Whether two states hold equal objects. An object the change did not
/// touch is still the same shared one, and is not compared field by field.
fn same_state((service, slices): &ServiceState, (other_service, other_slices): &ServiceState) -> bool {
    fn same<T: PartialEq>(a: &Arc<T>, b: &Arc<T>) -> bool {
        Arc::ptr_eq(a, b) || a == b
    }
    let same_service = match (service, other_service) {
        (Some(a), Some(b)) => same(a, b),
        (a, b) => a.is_none() && b.is_none(),
    };
    same_service && slices.len() == other_slices.len() && slices.iter().zip(other_slices).all(|(a, b)| same(a, b))
}

impl ControlPlane {
    /// The Services that applying `objects` and deleting `removed` can
    /// change.
    pub(super) fn services_affected<O: Borrow<Object>>(&self, objects: &[O], removed: &[ObjectRef]) -> Watch {
        let mut keys = SortedSet::new();
        let mut namespaces = SortedSet::new();
        let slice = |keys: &mut SortedSet<ObjectKey>, namespace: &str, name: &str| {
            if let Some(service) = self
                .endpoint_slice(namespace, name)
                .and_then(EndpointSlice::service_name)
            {
                keys.insert((namespace.to_string(), service.to_string()));
            }
        };
        for object in objects.iter().map(Borrow::borrow) {
            let namespace = object.namespace().to_string();
            match object {
                Object::Service(s) => {
                    keys.insert((namespace, s.metadata.name.clone()));
                }
                Object::EndpointSlice(s) => {
                    slice(&mut keys, &namespace, &s.metadata.name);
                    if let Some(service) = s.service_name() {
                        keys.insert((namespace, service.to_string()));
                    }
                }
                Object::Endpoints(e) => {
                    keys.insert((namespace, e.metadata.name.clone()));
                }
                // With Deployments, a Pod's change can let a Pending Pod
                // of any namespace get an address (or a Node's worth of
                // Pods move), so every Service may change.
                Object::Pod(_) | Object::Deployment(_) if self.deployments.is_empty() => {
                    namespaces.insert(namespace);
                }
                Object::Pod(_) | Object::Deployment(_) => return Watch::All,
                Object::Node(_) | Object::ServiceCidr(_) => return Watch::All,
            }
        }
        for gone in removed {
            match gone.kind {
                "Service" | "Endpoints" => {
                    keys.insert((gone.namespace.clone(), gone.name.clone()));
                }
                "EndpointSlice" => slice(&mut keys, &gone.namespace, &gone.name),
                "Pod" if self.deployments.is_empty() => {
                    namespaces.insert(gone.namespace.clone());
                }
                _ => return Watch::All,
            }
        }
        for namespace in namespaces {
            keys.extend(
                self.services
                    .range((namespace.clone(), String::new())..)
                    .take_while(|((ns, _), _)| *ns == namespace)
                    .map(|(key, _)| key.clone()),
            );
        }
        Watch::Some(keys)
    }

    /// The watched Services' state now.
    pub(super) fn service_states(&self, watch: &Watch) -> SortedMap<ObjectKey, ServiceState> {
        match watch {
            Watch::Some(keys) => keys.iter().map(|key| (key.clone(), self.service_state(key))).collect(),
            Watch::All => self
                .services
                .keys()
                .map(|key| (key.clone(), self.service_state(key)))
                .collect(),
        }
    }

    /// The watched Services whose state differs from `before`.
    pub(super) fn changed_services(
        &self,
        mut before: SortedMap<ObjectKey, ServiceState>,
        watch: &Watch,
    ) -> SortedSet<ObjectKey> {
        let mut keys: SortedSet<ObjectKey> = before.keys().cloned().collect();
        if let Watch::All = watch {
            keys.extend(self.services.keys().cloned());
        }
        keys.into_iter()
            .filter(|key| match before.remove(key).unwrap_or_default() {
                // Nothing before (a Service created): changed if anything
                // is there now, which is cheaper to ask than its state.
                (None, slices) if slices.is_empty() => {
                    self.services.contains_key(key)
                        || self.endpoint_slices.shared_for_service(&key.0, &key.1).next().is_some()
                }
                was => !same_state(&was, &self.service_state(key)),
            })
            .collect()
    }

    fn service_state(&self, key: &ObjectKey) -> ServiceState {
        (
            self.services.get(key).cloned(),
            self.endpoint_slices
                .shared_for_service(&key.0, &key.1)
                .cloned()
                .collect(),
        )
    }
}
