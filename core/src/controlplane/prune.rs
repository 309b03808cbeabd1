//! Declarative apply, as `kubectl apply --prune` does it: the control plane
//! made to hold exactly a given set of objects, beside the ones it makes
//! itself (the `kubernetes` Service and its EndpointSlice, the EndpointSlice
//! controller's slices, the Deployment controller's Pods). The agent runs its manifest files through this.

use super::{ApiError, Applied, ControlPlane, ObjectKey};
use crate::api::manifest::Object;
use crate::apiserver::kubernetes_service::is_kubernetes_service;
use crate::collections::SortedSet;
use crate::controllers::deployment::owns;
use crate::controllers::endpointslice_mirroring::is_mirrored;
use std::borrow::Borrow;

/// An object by kind, namespace (empty for cluster-scoped kinds) and name.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct ObjectRef {
    /// The kind, as in `kind:`.
    pub kind: &'static str,
    /// The namespace, `default` when none was given; empty for Nodes and
    /// ServiceCIDRs.
    pub namespace: String,
    /// The name.
    pub name: String,
}

impl ObjectRef {
    /// The reference of an object.
    pub fn of(object: &Object) -> ObjectRef {
        ObjectRef {
            kind: object.kind(),
            namespace: object.namespace().to_string(),
            name: object.name().to_string(),
        }
    }

    fn new(kind: &'static str, namespace: &str, name: &str) -> ObjectRef {
        ObjectRef {
            kind,
            namespace: namespace.to_string(),
            name: name.to_string(),
        }
    }
}

/// What [`ControlPlane::apply_set`] or [`ControlPlane::apply_changes`] did.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct SetOutcome {
    /// Each object given, as applied, in the order it was applied.
    pub applied: Vec<Applied>,
    /// The objects deleted.
    pub deleted: Vec<Object>,
    /// The Services, as `(namespace, name)`, whose object or EndpointSlices
    /// are not what they were before (deleted ones included): what a proxy
    /// has to look at again.
    pub services: SortedSet<ObjectKey>,
}

/// The order kinds are applied in: what others refer to first.
fn apply_rank(object: &Object) -> u8 {
    match object {
        Object::ServiceCidr(_) => 0,
        Object::Node(_) => 1,
        Object::Service(_) => 2,
        Object::EndpointSlice(_) | Object::Endpoints(_) => 3,
        Object::Pod(_) => 4,
        Object::Deployment(_) => 5,
    }
}

/// The order kinds are deleted in: what refers to others first.
fn delete_rank(object: &ObjectRef) -> u8 {
    match object.kind {
        "Service" => 0,
        "EndpointSlice" | "Endpoints" => 1,
        "Deployment" | "Pod" => 2,
        "Node" => 3,
        _ => 4,
    }
}

impl ControlPlane {
    /// Every object a user created, in the order they can be deleted:
    /// Services (all but `default/kubernetes`), user-supplied
    /// EndpointSlices (not the controllers', not `kubernetes`'), written
    /// Endpoints, Deployments, Pods (not those a Deployment owns), Nodes,
    /// then ServiceCIDRs (which cannot go while Services use them).
    pub fn user_objects(&self) -> Vec<ObjectRef> {
        let mut out: Vec<ObjectRef> = self
            .services
            .keys()
            .filter(|(ns, name)| !is_kubernetes_service(ns, name))
            .map(|(ns, name)| ObjectRef::new("Service", ns, name))
            .collect();
        out.extend(
            self.endpoint_slices
                .iter()
                .filter(|((ns, name), slice)| {
                    !slice.is_managed_by_controller() && !is_mirrored(slice) && !is_kubernetes_service(ns, name)
                })
                .map(|((ns, name), _)| ObjectRef::new("EndpointSlice", ns, name)),
        );
        out.extend(
            self.written_endpoints
                .keys()
                .map(|(ns, name)| ObjectRef::new("Endpoints", ns, name)),
        );
        out.extend(
            self.deployments
                .keys()
                .map(|(ns, name)| ObjectRef::new("Deployment", ns, name)),
        );
        out.extend(
            self.pods
                .iter()
                .filter(|(_, pod)| !self.deployments().any(|d| owns(d, pod)))
                .map(|((ns, name), _)| ObjectRef::new("Pod", ns, name)),
        );
        out.extend(self.nodes.keys().map(|name| ObjectRef::new("Node", "", name)));
        out.extend(
            self.service_cidrs
                .keys()
                .map(|name| ObjectRef::new("ServiceCIDR", "", name)),
        );
        out
    }

    /// Makes the user objects exactly `objects`: deletes the user objects
    /// the set does not name, then applies the set, ServiceCIDRs first,
    /// then Nodes, Services, EndpointSlices and Endpoints, Pods, and
    /// Deployments (each kind in the order given). All or nothing: when an object is refused, the
    /// control plane is left as it was and the error comes back with the
    /// index of that object in `objects`.
    pub fn apply_set<O: Borrow<Object>>(&mut self, objects: &[O]) -> Result<SetOutcome, (usize, ApiError)> {
        let keep: SortedSet<ObjectRef> = objects.iter().map(|o| ObjectRef::of(o.borrow())).collect();
        let gone: Vec<ObjectRef> = self.user_objects().into_iter().filter(|r| !keep.contains(r)).collect();
        self.apply_changes(objects, &gone)
    }

    /// Deletes the user objects `removed` (Services first, ServiceCIDRs
    /// last), then applies `objects` in the order [`Self::apply_set`] does.
    /// All or nothing, like `apply_set`; a failed deletion comes back with
    /// index `objects.len()`.
    ///
    /// `apply_set(set)` is `apply_changes(set, <user objects not in set>)`.
    /// A caller that applied a set before and knows what differs in the
    /// next one passes only the new and changed objects and the ones gone:
    /// the result is the same, since applying an object again unchanged
    /// changes nothing, and the cost follows the change, not the set.
    pub fn apply_changes<O: Borrow<Object>>(
        &mut self,
        objects: &[O],
        removed: &[ObjectRef],
    ) -> Result<SetOutcome, (usize, ApiError)> {
        let watch = self.services_affected(objects, removed);
        let services_before = self.service_states(&watch);
        let before = self.clone();
        match self.apply_changes_inner(objects, removed) {
            Ok(mut outcome) => {
                outcome.services = self.changed_services(services_before, &watch);
                Ok(outcome)
            }
            Err(e) => {
                *self = before;
                Err(e)
            }
        }
    }

    fn apply_changes_inner<O: Borrow<Object>>(
        &mut self,
        objects: &[O],
        removed: &[ObjectRef],
    ) -> Result<SetOutcome, (usize, ApiError)> {
        let mut outcome = SetOutcome::default();
        let mut gone: Vec<&ObjectRef> = removed.iter().collect();
        crate::sort::sort_by_key(&mut gone, |r| delete_rank(r));
        for gone in gone {
            // The index of a deleted object is not in the set; point past it.
            let deleted = self
                .delete(gone.kind, &gone.namespace, &gone.name)
                .map_err(|e| (objects.len(), e))?;
            outcome.deleted.push(deleted);
        }
        let mut order: Vec<usize> = (0..objects.len()).collect();
        crate::sort::sort_by_key(&mut order, |&i| apply_rank(objects[i].borrow()));
        for i in order {
            let applied = self.apply_object(objects[i].borrow().clone()).map_err(|e| (i, e))?;
            outcome.applied.push(applied);
        }
        Ok(outcome)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::api::manifest::parse_manifests;
    use crate::controlplane::{ApplyAction, ClusterConfig};

    const SET: &str = "apiVersion: v1\nkind: Service\nmetadata: {name: web}\nspec: {selector: {app: web}, ports: [{port: 80}]}\n---\napiVersion: v1\nkind: Pod\nmetadata: {name: web-1, labels: {app: web}}\nstatus: {phase: Running, podIPs: [{ip: 10.244.0.5}], conditions: [{type: Ready, status: \"True\"}]}\n---\napiVersion: v1\nkind: Service\nmetadata: {name: db}\nspec: {ports: [{port: 5432, targetPort: 5432}]}\n";

    fn objects(text: &str) -> Vec<Object> {
        parse_manifests(text).unwrap()
    }

    fn names(cp: &ControlPlane) -> Vec<String> {
        cp.user_objects()
            .into_iter()
            .map(|r| format!("{} {}/{}", r.kind, r.namespace, r.name))
            .collect()
    }

    #[test]
    fn holds_exactly_the_set_and_keeps_what_the_control_plane_made() {
        let mut cp = ControlPlane::new(ClusterConfig {
            apiservers: vec!["192.168.0.10:6443".into()],
            ..ClusterConfig::default()
        })
        .unwrap();
        let outcome = cp.apply_set(&objects(SET)).unwrap();
        assert_eq!(outcome.applied.len(), 3);
        assert_eq!(
            names(&cp),
            vec!["Service default/db", "Service default/web", "Pod default/web-1"]
        );
        let web_ip = cp.service("default", "web").unwrap().spec.cluster_ip.clone();
        assert_eq!(cp.endpoint_slices_for("default", "web").len(), 1);

        // db and the pod leave the set: they are deleted, web keeps its IP.
        let smaller = objects(SET)[..1].to_vec();
        let outcome = cp.apply_set(&smaller).unwrap();
        assert_eq!(outcome.deleted.len(), 2);
        assert_eq!(outcome.applied[0].action, ApplyAction::Unchanged);
        assert_eq!(names(&cp), vec!["Service default/web"]);
        assert_eq!(cp.service("default", "web").unwrap().spec.cluster_ip, web_ip);
        assert!(cp.service("default", "kubernetes").is_some());
        assert!(cp.endpoint_slice("default", "kubernetes").is_some());
        // The controller's slice for web stays (now without endpoints).
        assert_eq!(cp.endpoint_slices_for("default", "web").len(), 1);

        // An empty set leaves only what the control plane made itself.
        cp.apply_set::<Object>(&[]).unwrap();
        assert!(cp.user_objects().is_empty());
        assert_eq!(cp.services().count(), 1);
    }

    #[test]
    fn a_refused_object_changes_nothing_and_is_named_by_index() {
        let mut cp = ControlPlane::new(ClusterConfig::default()).unwrap();
        cp.apply_set(&objects(SET)).unwrap();
        let before = cp.clone();
        let bad = SET.replace("{port: 5432,", "{port: 0,");
        let (index, err) = cp.apply_set(&objects(&bad)[1..]).unwrap_err();
        assert_eq!(index, 1, "db is the second object of the set");
        assert_eq!(
            err.to_string(),
            "The Service \"db\" is invalid: spec.ports[0].port: Invalid value: 0: must be between 1 and 65535, inclusive"
        );
        assert_eq!(cp, before, "web was not deleted, the pod not re-applied");
    }

    #[test]
    fn service_cidrs_are_applied_before_the_services_that_use_them() {
        let mut cp = ControlPlane::new(ClusterConfig::default()).unwrap();
        let text = "apiVersion: v1\nkind: Service\nmetadata: {name: extra}\nspec: {clusterIP: 10.200.0.10, ports: [{port: 80}]}\n---\napiVersion: networking.k8s.io/v1\nkind: ServiceCIDR\nmetadata: {name: more}\nspec: {cidrs: [10.200.0.0/24]}\n";
        cp.apply_set(&objects(text)).unwrap();
        assert_eq!(cp.service("default", "extra").unwrap().spec.cluster_ip, "10.200.0.10");
        // Both leave together: the Service goes first, so the CIDR can go;
        // only the default one stays.
        cp.apply_set::<Object>(&[]).unwrap();
        let names: Vec<&str> = cp.service_cidrs().map(|c| c.metadata.name.as_str()).collect();
        assert_eq!(names, ["kubernetes"]);
    }

    fn keys(outcome: &SetOutcome) -> Vec<String> {
        outcome
            .services
            .iter()
            .map(|(ns, name)| format!("{ns}/{name}"))
            .collect()
    }

    const SLICE: &str = "apiVersion: discovery.k8s.io/v1\nkind: EndpointSlice\nmetadata: {name: db-1, labels: {kubernetes.io/service-name: db}}\naddressType: IPv4\nports: [{port: 5432}]\nendpoints: [{addresses: [10.244.1.1]}]\n";

    #[test]
    fn apply_changes_reports_the_services_that_changed() {
        let mut cp = ControlPlane::new(ClusterConfig::default()).unwrap();
        let first = cp.apply_set(&objects(&format!("{SET}---\n{SLICE}"))).unwrap();
        assert_eq!(keys(&first), ["default/db", "default/web"]);

        // The slice moves to another address: only db changed.
        let moved = objects(&SLICE.replace("10.244.1.1", "10.244.1.2"));
        let outcome = cp.apply_changes(&moved, &[]).unwrap();
        assert_eq!(keys(&outcome), ["default/db"]);
        // Applied again unchanged: nothing changed.
        assert!(cp.apply_changes(&moved, &[]).unwrap().services.is_empty());

        // The pod goes: web's managed slice loses its endpoint.
        let pod = ObjectRef::new("Pod", "default", "web-1");
        let outcome = cp.apply_changes::<Object>(&[], &[pod]).unwrap();
        assert_eq!(keys(&outcome), ["default/web"]);
        assert_eq!(outcome.deleted.len(), 1);

        // Relabelled to web: both Services see it change.
        let relabelled = objects(&SLICE.replace("service-name: db", "service-name: web"));
        assert_eq!(
            keys(&cp.apply_changes(&relabelled, &[]).unwrap()),
            ["default/db", "default/web"]
        );

        // db deleted with its (now web's) slice gone too.
        let gone = [
            ObjectRef::new("EndpointSlice", "default", "db-1"),
            ObjectRef::new("Service", "default", "db"),
        ];
        assert_eq!(
            keys(&cp.apply_changes::<Object>(&[], &gone).unwrap()),
            ["default/db", "default/web"]
        );
        assert!(cp.service("default", "db").is_none());
    }

    #[test]
    fn apply_changes_ends_where_apply_set_does() {
        let config = ClusterConfig::default();
        let old = objects(&format!("{SET}---\n{SLICE}"));
        let new = objects(&format!("{}---\n{}", SET.replace("10.244.0.5", "10.244.0.6"), SLICE))[1..].to_vec();
        let mut whole = ControlPlane::new(config.clone()).unwrap();
        whole.apply_set(&old).unwrap();
        let mut delta = whole.clone();
        let set_outcome = whole.apply_set(&new).unwrap();

        // What differs: the pod changed, web's Service left the set.
        let changed: Vec<Object> = new.iter().filter(|o| !old.contains(o)).cloned().collect();
        assert_eq!(changed.len(), 1);
        let removed = [ObjectRef::new("Service", "default", "web")];
        let delta_outcome = delta.apply_changes(&changed, &removed).unwrap();
        assert_eq!(delta, whole);
        assert_eq!(delta_outcome.services, set_outcome.services);
        assert_eq!(delta_outcome.deleted, set_outcome.deleted);
    }

    #[test]
    fn a_refused_change_changes_nothing() {
        let mut cp = ControlPlane::new(ClusterConfig::default()).unwrap();
        cp.apply_set(&objects(SET)).unwrap();
        let before = cp.clone();
        let bad = objects(&SLICE.replace("10.244.1.1", "127.0.0.1"));
        let gone = [ObjectRef::new("Service", "default", "web")];
        let (index, _) = cp.apply_changes(&bad, &gone).unwrap_err();
        assert_eq!(index, 0);
        assert_eq!(cp, before);
        let missing = [ObjectRef::new("Pod", "default", "nope")];
        let (index, err) = cp.apply_changes::<Object>(&[], &missing).unwrap_err();
        assert_eq!((index, err.to_string()), (0, "pods \"nope\" not found".to_string()));
        assert_eq!(cp, before);
    }
}
