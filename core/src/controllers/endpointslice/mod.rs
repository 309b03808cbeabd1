//! The EndpointSlice controller: the Pods a Service selects, turned into the
//! Service's EndpointSlices, as kube-controller-manager does it.
//!
//! [`desired_slices`] is a pure function from a Service, the Pods of its
//! namespace, the Nodes and the slices the controller already manages for
//! the Service to the slices it should manage:
//!
//! - Only Services with a (non-empty) selector get slices; selector-less
//!   Services keep the EndpointSlices users apply, untouched.
//! - Terminal Pods and Pods without an IP are skipped. Per endpoint:
//!   `serving` = Pod Ready, `terminating` = `deletionTimestamp` set,
//!   `ready` = `publishNotReadyAddresses` || (serving && !terminating);
//!   `nodeName`, `zone` (the node's `topology.kubernetes.io/zone`),
//!   `hostname` (when `spec.hostname` is set and `spec.subdomain` is the
//!   Service's name), `targetRef`.
//! - Named `targetPort`s resolve per Pod; Pods resolving different ports go
//!   to different slices; a port that does not resolve on a Pod is left out
//!   of that Pod's port set.
//! - One set of slices per IP family of the Service, at most
//!   `max_endpoints_per_slice` endpoints each; a placeholder slice (no
//!   ports, no endpoints) when there are none.
//! - Labels: the Service's own (except the reserved ones), plus
//!   `kubernetes.io/service-name`, `endpointslice.kubernetes.io/managed-by`
//!   and, for headless Services, `service.kubernetes.io/headless`.
//! - Slices change only where their content changes (see [`reconcile`]);
//!   new slices come back without a name for the caller to generate one
//!   ([`crate::apiserver::generate_name::generated_name`]).
//!
//! Differences from Kubernetes, on purpose: Pods whose Node is unknown are
//! kept (Kubernetes skips them, unless `publishNotReadyAddresses`), since
//! Nodes are optional input here; and a Service that loses its selector or
//! becomes ExternalName loses its managed slices at once (Kubernetes leaves
//! them until the Service is deleted).

pub mod desired;
pub mod reconcile;

use crate::api::endpoint_slice::{
    EndpointPort, EndpointSlice, HEADLESS_LABEL, MANAGED_BY_CONTROLLER, MANAGED_BY_LABEL, SERVICE_NAME_LABEL,
};
use crate::api::pod::{Node, Pod};
use crate::api::service::{types, Service};
use crate::api::ObjectMeta;
use crate::collections::SortedMap;
use crate::family::IpFamily;

/// The `apiVersion` of EndpointSlices.
pub const API_VERSION: &str = "discovery.k8s.io/v1";

/// True when the controller manages slices for `service`: it has a
/// selector and is not ExternalName.
pub fn manages(service: &Service) -> bool {
    service.service_type() != types::EXTERNAL_NAME && desired::selector(service).is_some()
}

/// The slices `service` should have, given `pods` (the Pods of its
/// namespace; the selector picks among them), `nodes` by name, and
/// `existing`, the slices the controller manages for it now (labelled with
/// its name and [`MANAGED_BY_CONTROLLER`]). `max_endpoints_per_slice` below
/// 1 counts as 1.
///
/// Slices returned unchanged are equal to the existing ones; changed ones
/// keep their name; new ones have an empty name and `generateName` set.
/// Existing slices missing from the result are to be deleted.
pub fn desired_slices(
    service: &Service,
    pods: &[&Pod],
    nodes: &SortedMap<String, Node>,
    existing: &[&EndpointSlice],
    max_endpoints_per_slice: usize,
) -> Vec<EndpointSlice> {
    if !manages(service) {
        return Vec::new();
    }
    let families = desired::address_families(service);
    let mut groups = desired::desired_groups(service, pods, nodes, &families);
    let labels = slice_labels(service);
    let mut slices = Vec::new();
    for family in families {
        let template = SliceTemplate {
            service,
            family,
            labels: labels.clone(),
        };
        let of_family: Vec<&EndpointSlice> = existing
            .iter()
            .filter(|s| s.family() == Some(family))
            .copied()
            .collect();
        let wanted = groups.remove(&family).unwrap_or_default();
        slices.extend(reconcile::reconcile_family(
            &template,
            of_family,
            wanted,
            max_endpoints_per_slice.max(1),
        ));
    }
    slices
}

/// The labels of `service`'s managed slices: its own labels minus the
/// reserved ones, then the reserved ones set by the controller.
pub fn slice_labels(service: &Service) -> SortedMap<String, String> {
    let mut labels: SortedMap<String, String> = crate::sort::map_from(
        service
            .metadata
            .labels
            .iter()
            .filter(|(k, _)| ![SERVICE_NAME_LABEL, MANAGED_BY_LABEL, HEADLESS_LABEL].contains(&k.as_str()))
            .map(|(k, v)| (k.clone(), v.clone())),
    );
    if service.is_headless() || service.spec.cluster_ip.is_empty() {
        labels.insert(HEADLESS_LABEL.into(), String::new());
    }
    labels.insert(SERVICE_NAME_LABEL.into(), service.metadata.name.clone());
    labels.insert(MANAGED_BY_LABEL.into(), MANAGED_BY_CONTROLLER.into());
    labels
}

/// What every slice of one Service and family shares.
pub struct SliceTemplate<'a> {
    service: &'a Service,
    family: IpFamily,
    labels: SortedMap<String, String>,
}

impl SliceTemplate<'_> {
    /// A new, unnamed slice with `ports` and no endpoints, owned by the
    /// Service.
    pub fn new_slice(&self, ports: Vec<EndpointPort>) -> EndpointSlice {
        let service = self.service;
        let owner = serde_json::json!([{
            "apiVersion": "v1",
            "kind": "Service",
            "name": service.metadata.name,
            "uid": service.metadata.uid,
            "controller": true,
            "blockOwnerDeletion": true,
        }]);
        EndpointSlice {
            api_version: API_VERSION.into(),
            kind: "EndpointSlice".into(),
            metadata: ObjectMeta {
                namespace: service.metadata.namespace_or_default().to_string(),
                generate_name: Some(serde_json::Value::String(format!("{}-", service.metadata.name))),
                labels: self.labels.clone(),
                owner_references: Some(owner),
                ..ObjectMeta::default()
            },
            address_type: self.family.as_str().into(),
            endpoints: Vec::new(),
            ports,
        }
    }

    /// True when `slice` is owned by this Service object (its owner
    /// reference carries the Service's uid), not by an earlier Service of
    /// the same name or by nobody.
    pub fn owns(&self, slice: &EndpointSlice) -> bool {
        let uid = &self.service.metadata.uid;
        let Some(owners) = slice.metadata.owner_references.as_ref().and_then(|o| o.as_array()) else {
            return false;
        };
        owners.iter().any(|o| {
            o.get("kind").and_then(|k| k.as_str()) == Some("Service")
                && o.get("uid").and_then(|u| u.as_str()) == Some(uid.as_str())
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::api::pod::{PodCondition, PodIp};
    use crate::api::service::ServicePort;

    fn service() -> Service {
        let mut s = Service::default();
        s.metadata.name = "web".into();
        s.metadata.namespace = "default".into();
        s.metadata.uid = "uid-web".into();
        s.metadata.labels = SortedMap::from([
            ("team".to_string(), "shop".to_string()),
            (MANAGED_BY_LABEL.to_string(), "someone-else".to_string()),
        ]);
        s.spec.cluster_ip = "10.96.0.10".into();
        s.spec.ip_families = vec!["IPv4".into()];
        s.spec.selector = Some(SortedMap::from([("app".to_string(), "web".to_string())]));
        s.spec.ports.push(ServicePort {
            port: 80,
            ..ServicePort::default()
        });
        s
    }

    fn pods(n: u8) -> Vec<Pod> {
        (1..=n)
            .map(|i| {
                let mut p = Pod::default();
                p.metadata.name = format!("web-{i}");
                p.metadata.namespace = "default".into();
                p.metadata.labels.insert("app".into(), "web".into());
                p.status.pod_ips.push(PodIp {
                    ip: format!("10.244.0.{i}"),
                });
                p.status.conditions.push(PodCondition {
                    condition_type: "Ready".into(),
                    status: "True".into(),
                    ..PodCondition::default()
                });
                p
            })
            .collect()
    }

    /// Runs the controller and names new slices `web-<n>`, as a caller would.
    fn run(svc: &Service, pods: &[Pod], existing: &[EndpointSlice], max: usize) -> Vec<EndpointSlice> {
        let pods: Vec<&Pod> = pods.iter().collect();
        let existing: Vec<&EndpointSlice> = existing.iter().collect();
        let mut out = desired_slices(svc, &pods, &SortedMap::new(), &existing, max);
        for (i, slice) in out.iter_mut().enumerate() {
            if slice.metadata.name.is_empty() {
                slice.metadata.name = format!("web-new{i}");
            }
        }
        out
    }

    #[test]
    fn only_services_with_a_selector_are_managed() {
        let mut svc = service();
        svc.spec.selector = Some(SortedMap::new());
        assert!(run(&svc, &pods(2), &[], 100).is_empty());
        svc.spec.selector = None;
        assert!(run(&svc, &pods(2), &[], 100).is_empty());
        let mut external = service();
        external.spec.service_type = "ExternalName".into();
        assert!(run(&external, &pods(2), &[], 100).is_empty());
    }

    #[test]
    fn unchanged_inputs_give_byte_identical_slices() {
        let svc = service();
        let first = run(&svc, &pods(7), &[], 3);
        assert_eq!(first.iter().map(|s| s.endpoints.len()).collect::<Vec<_>>(), [3, 3, 1]);
        let second = run(&svc, &pods(7), &first, 3);
        let mut a = first.clone();
        let mut b = second;
        crate::sort::sort_by(&mut a, |x, y| x.metadata.name.cmp(&y.metadata.name));
        crate::sort::sort_by(&mut b, |x, y| x.metadata.name.cmp(&y.metadata.name));
        assert_eq!(a, b);
    }

    #[test]
    fn labels_are_the_services_plus_the_controllers() {
        let slices = run(&service(), &pods(1), &[], 100);
        let labels = &slices[0].metadata.labels;
        assert_eq!(labels.get("team").map(String::as_str), Some("shop"));
        assert_eq!(
            labels.get(MANAGED_BY_LABEL).map(String::as_str),
            Some(MANAGED_BY_CONTROLLER)
        );
        assert_eq!(labels.get(SERVICE_NAME_LABEL).map(String::as_str), Some("web"));
        assert!(!labels.contains_key(HEADLESS_LABEL));
        let mut headless = service();
        headless.spec.cluster_ip = "None".into();
        let slices = run(&headless, &pods(1), &[], 100);
        assert_eq!(
            slices[0].metadata.labels.get(HEADLESS_LABEL).map(String::as_str),
            Some("")
        );
    }

    #[test]
    fn slices_of_an_earlier_service_of_that_name_are_replaced() {
        let svc = service();
        let mut old = run(&svc, &pods(2), &[], 100);
        old[0].metadata.owner_references = Some(serde_json::json!([{"kind": "Service", "uid": "uid-old"}]));
        old[0].metadata.name = "web-old".into();
        let now = run(&svc, &pods(2), &old, 100);
        assert_eq!(now.len(), 1);
        assert_ne!(now[0].metadata.name, "web-old");
        assert_eq!(now[0].endpoints.len(), 2);
    }

    #[test]
    fn a_zero_maximum_counts_as_one() {
        assert_eq!(run(&service(), &pods(3), &[], 0).len(), 3);
    }
}
