//! Running the EndpointSlice controller and the `kubernetes` endpoint
//! reconciler over the stored state, and the Pod environment variables
//! derived from Services.
//!
//! Every change to a Service, Pod, Node, EndpointSlice or apiserver lease
//! re-runs the controller for the Services it can affect (the Service; the
//! Services selecting the Pod; all of them for a Node); the controller
//! keeps unchanged slices
//! byte-identical, so only slices whose content changes get a new
//! resourceVersion. New slices get a generated name
//! ([`generated_name`]) from a counter kept in the state.

use super::{ControlPlane, ObjectKey};
use crate::api::{EndpointSlice, Pod, Service};
use crate::apiserver::generate_name::generated_name;
use crate::apiserver::kubernetes_service::{is_kubernetes_service, kubernetes_endpoint_slice};
use crate::collections::SortedSet;
use crate::controllers::endpointslice::{desired, desired_slices};
use crate::kubelet::service_env;

impl ControlPlane {
    /// The Service environment variables the kubelet gives Pod
    /// `namespace/name`, sorted by name; `None` when there is no such Pod.
    pub fn pod_env(&self, namespace: &str, name: &str) -> Option<Vec<(String, String)>> {
        let pod = self.pod(namespace, name)?;
        let services: Vec<&Service> = self.services().collect();
        Some(service_env(pod, &services))
    }

    /// Re-runs the controller for Service `namespace/name` (which may no
    /// longer exist: its managed slices are then deleted).
    pub(super) fn sync_service_slices(&mut self, namespace: &str, name: &str) {
        if is_kubernetes_service(namespace, name) {
            self.sync_kubernetes_slice();
            return;
        }
        let existing: Vec<&EndpointSlice> = self
            .endpoint_slices
            .for_service(namespace, name)
            .filter(|s| s.is_managed_by_controller())
            .collect();
        let existing_names: Vec<String> = existing.iter().map(|s| s.metadata.name.clone()).collect();
        let wanted = match self.services.get(&(namespace.to_string(), name.to_string())) {
            Some(service) => {
                let pods: Vec<&Pod> = self.pods_in(namespace).collect();
                desired_slices(
                    service,
                    &pods,
                    &self.nodes,
                    &existing,
                    self.config.max_endpoints_per_slice,
                )
            }
            None => Vec::new(),
        };
        self.write_slices(namespace, name, existing_names, wanted);
        self.sync_mirrored_slices(namespace, name);
    }

    /// Re-runs the controller for the Services of the Pod's namespace whose
    /// selector matches the Pod as it was (`old`) or as it is (`new`): no
    /// other Service's slices can change.
    pub(super) fn sync_pod_services(&mut self, old: Option<&Pod>, new: Option<&Pod>) {
        let Some(namespace) = new.or(old).map(|p| p.metadata.namespace_or_default().to_string()) else {
            return;
        };
        let names: Vec<String> = self
            .services
            .range((namespace.clone(), String::new())..)
            .take_while(|((ns, _), _)| *ns == namespace)
            .filter(|(_, svc)| {
                desired::selector(svc).is_some_and(|sel| old.into_iter().chain(new).any(|p| desired::selects(sel, p)))
            })
            .map(|((_, name), _)| name.clone())
            .collect();
        for name in names {
            self.sync_service_slices(&namespace, &name);
        }
    }

    /// Re-runs the controller for every Service.
    pub(super) fn sync_all_slices(&mut self) {
        let keys: Vec<ObjectKey> = self.services.keys().cloned().collect();
        for (namespace, name) in keys {
            self.sync_service_slices(&namespace, &name);
        }
    }

    /// Writes the `kubernetes` EndpointSlice from the apiserver leases.
    /// Until some apiserver has held a lease there is nothing to write (an
    /// empty endpoint list is never written), so there is no slice.
    pub(super) fn sync_kubernetes_slice(&mut self) {
        let key = ("default".to_string(), "kubernetes".to_string());
        let Some(service) = self.services.get(&key) else {
            return;
        };
        if self.leases.endpoints().is_empty() {
            return;
        }
        let mut slice = kubernetes_endpoint_slice(service, self.leases.endpoints());
        match self.endpoint_slices.get(&key) {
            Some(old) => {
                slice.metadata.keep_identity_of(&old.metadata);
                if slice == *old {
                    return;
                }
                self.bump(&mut slice.metadata);
            }
            None => self.stamp(&mut slice.metadata),
        }
        self.endpoint_slices.insert(key, slice);
    }

    /// The Pods of `namespace`.
    fn pods_in(&self, namespace: &str) -> impl Iterator<Item = &Pod> + '_ {
        let namespace = namespace.to_string();
        self.pods
            .range((namespace.clone(), String::new())..)
            .take_while(move |((ns, _), _)| *ns == namespace)
            .map(|(_, pod)| pod)
    }

    /// Stores what the controller wants for Service `service`: new slices
    /// get a name, uid and resourceVersion; changed ones a new
    /// resourceVersion; unchanged ones stay as they are; slices in
    /// `existing` that are no longer wanted are deleted.
    pub(super) fn write_slices(
        &mut self,
        namespace: &str,
        service: &str,
        existing: Vec<String>,
        wanted: Vec<EndpointSlice>,
    ) {
        let mut kept: SortedSet<String> = SortedSet::new();
        for mut slice in wanted {
            if slice.metadata.name.is_empty() {
                slice.metadata.name = self.generate_slice_name(namespace, service);
            }
            let key = (namespace.to_string(), slice.metadata.name.clone());
            match self.endpoint_slices.get(&key) {
                Some(old) => {
                    slice.metadata.keep_identity_of(&old.metadata);
                    if slice != *old {
                        self.bump(&mut slice.metadata);
                    }
                }
                None => self.stamp(&mut slice.metadata),
            }
            kept.insert(slice.metadata.name.clone());
            self.endpoint_slices.insert(key, slice);
        }
        for name in existing.into_iter().filter(|n| !kept.contains(n)) {
            self.endpoint_slices.remove(&(namespace.to_string(), name));
        }
    }

    /// The next generated name for a slice of `service` that no slice of
    /// `namespace` has.
    fn generate_slice_name(&mut self, namespace: &str, service: &str) -> String {
        loop {
            let name = generated_name(&format!("{service}-"), self.next_generated_name);
            self.next_generated_name += 1;
            if !self
                .endpoint_slices
                .contains_key(&(namespace.to_string(), name.clone()))
            {
                return name;
            }
        }
    }
}
