//! `v1/Endpoints` in the control plane: the objects users write for
//! Services without a selector, the view `kubectl get endpoints` prints,
//! and the EndpointSlices mirrored from what users wrote.
//!
//! - A Service with a selector (and the `kubernetes` Service) has the
//!   Endpoints the Endpoints controller derives from its slices; one a
//!   user writes for it is stored but not shown, as the controller would
//!   overwrite it.
//! - Any other Endpoints is what a user wrote, whether or not a Service of
//!   that name exists. Deleting a Service deletes its Endpoints, as the
//!   Endpoints controller does.
//! - While a Service without a selector exists, its written Endpoints is
//!   mirrored into EndpointSlices
//!   ([`crate::controllers::endpointslice_mirroring`]).

use super::objects::{compare, default_meta, not_found};
use super::{ApiError, Applied, ControlPlane, ObjectKey};
use crate::api::manifest::Object;
use crate::api::service::types::EXTERNAL_NAME;
use crate::api::Endpoints;
use crate::apiserver::admission::endpoints::{default_endpoints, validate_endpoints};
use crate::apiserver::kubernetes_service::is_kubernetes_service;
use crate::collections::SortedSet;
use crate::controllers::endpoints::endpoints_from_slices;
use crate::controllers::endpointslice::desired;
use crate::controllers::endpointslice_mirroring::{is_mirrored, mirrored_slices, skips_mirroring};

impl ControlPlane {
    /// The `v1/Endpoints` named `namespace/name`: derived from the slices
    /// for a Service with a selector, otherwise the one a user wrote.
    pub fn endpoints(&self, namespace: &str, name: &str) -> Option<Endpoints> {
        let key = (namespace.to_string(), name.to_string());
        match self.service(namespace, name) {
            Some(service) if is_kubernetes_service(namespace, name) => {
                let slices = self.endpoint_slices_for(namespace, name);
                (!slices.is_empty()).then(|| endpoints_from_slices(service, &slices))
            }
            Some(service) if service.service_type() != EXTERNAL_NAME && desired::selector(service).is_some() => Some(
                endpoints_from_slices(service, &self.endpoint_slices_for(namespace, name)),
            ),
            _ => self.written_endpoints.get(&key).cloned(),
        }
    }

    /// Every Endpoints object, sorted by namespace and name (what
    /// `kubectl get endpoints -A` lists).
    pub fn all_endpoints(&self) -> Vec<Endpoints> {
        let keys: SortedSet<&ObjectKey> =
            crate::sort::set_from(self.services.keys().chain(self.written_endpoints.keys()));
        keys.into_iter()
            .filter_map(|(namespace, name)| self.endpoints(namespace, name))
            .collect()
    }

    /// Creates or replaces a hand-written Endpoints; the slices mirrored
    /// from it follow.
    pub fn apply_endpoints(&mut self, mut endpoints: Endpoints) -> Result<Applied, ApiError> {
        default_meta(
            &mut endpoints.api_version,
            &mut endpoints.kind,
            &mut endpoints.metadata,
            "v1",
            "Endpoints",
            true,
        );
        default_endpoints(&mut endpoints);
        let errors = validate_endpoints(&endpoints);
        if !errors.is_empty() {
            return Err(ApiError::invalid("Endpoints", &endpoints.metadata.name, errors));
        }
        let key = (endpoints.metadata.namespace.clone(), endpoints.metadata.name.clone());
        let action = compare(&mut endpoints, self.written_endpoints.get(&key));
        self.version(&mut endpoints.metadata, action);
        self.written_endpoints.insert(key.clone(), endpoints.clone());
        self.sync_mirrored_slices(&key.0, &key.1);
        Ok(Applied {
            action,
            object: Object::Endpoints(Box::new(endpoints)),
        })
    }

    /// Deletes a hand-written Endpoints and the slices mirrored from it.
    pub fn delete_endpoints(&mut self, namespace: &str, name: &str) -> Result<Endpoints, ApiError> {
        let key = (namespace.to_string(), name.to_string());
        let endpoints = self
            .written_endpoints
            .remove(&key)
            .ok_or_else(|| not_found("endpoints", name))?;
        self.sync_mirrored_slices(namespace, name);
        Ok(endpoints)
    }

    /// Brings the slices mirrored for Service `namespace/name` in line with
    /// its written Endpoints: none unless the Service exists without a
    /// selector and the Endpoints does not skip mirroring.
    pub(super) fn sync_mirrored_slices(&mut self, namespace: &str, name: &str) {
        let key = (namespace.to_string(), name.to_string());
        let existing: Vec<_> = self
            .endpoint_slices
            .for_service(namespace, name)
            .filter(|s| is_mirrored(s))
            .collect();
        let existing_names = existing.iter().map(|s| s.metadata.name.clone()).collect();
        let mirrors = self
            .services
            .get(&key)
            .is_some_and(|service| desired::selector(service).is_none());
        let wanted = match self.written_endpoints.get(&key) {
            Some(endpoints) if mirrors && !skips_mirroring(endpoints) => mirrored_slices(endpoints, &existing),
            _ => Vec::new(),
        };
        self.write_slices(namespace, name, existing_names, wanted);
    }
}

#[cfg(test)]
mod tests {
    use crate::controllers::endpointslice_mirroring::is_mirrored;
    use crate::controlplane::{ClusterConfig, ControlPlane};

    const LEGACY: &str = "apiVersion: v1\nkind: Service\nmetadata: {name: legacy}\nspec: {ports: [{port: 80}]}\n---\napiVersion: v1\nkind: Endpoints\nmetadata: {name: legacy}\nsubsets:\n- addresses: [{ip: 192.0.2.7}]\n  ports: [{port: 8080}]\n";

    #[test]
    fn written_endpoints_are_mirrored_kept_in_snapshots_and_go_with_their_service() {
        let mut cp = ControlPlane::new(ClusterConfig::default()).unwrap();
        assert!(cp.apply_manifest(LEGACY).unwrap().iter().all(Result::is_ok));
        let slices = cp.endpoint_slices_for("default", "legacy");
        assert_eq!(slices.len(), 1);
        assert!(is_mirrored(slices[0]));
        assert_eq!(slices[0].endpoints[0].addresses, ["192.0.2.7"]);
        let restored = ControlPlane::restore(cp.snapshot()).unwrap();
        assert_eq!(restored, cp);
        cp.delete("Service", "default", "legacy").unwrap();
        assert!(cp.endpoints("default", "legacy").is_none());
        assert!(cp.endpoint_slices_for("default", "legacy").is_empty());
    }

    #[test]
    fn a_selector_takes_over_from_mirroring() {
        let mut cp = ControlPlane::new(ClusterConfig::default()).unwrap();
        assert!(cp.apply_manifest(LEGACY).unwrap().iter().all(Result::is_ok));
        let selected = "apiVersion: v1\nkind: Service\nmetadata: {name: legacy}\nspec: {selector: {app: legacy}, ports: [{port: 80}]}\n";
        assert!(cp.apply_manifest(selected).unwrap()[0].is_ok());
        assert!(cp
            .endpoint_slices_for("default", "legacy")
            .iter()
            .all(|s| !is_mirrored(s)));
        // The Endpoints controller's view replaces the written one.
        let derived = cp.endpoints("default", "legacy").unwrap();
        assert!(derived.subsets.is_empty());
    }
}
