//! Pods, Nodes and user-supplied EndpointSlices: stored as given (with
//! defaults and a few of kube-apiserver's checks), replaced on apply, and
//! followed by the EndpointSlice controller (and, for Pods and Nodes, the
//! Deployment controller).
//!
//! An apply replaces the whole object (what kubectl's last-applied merge
//! gives for these kinds in practice); the uid and resourceVersion are the
//! control plane's, and an apply that changes nothing is `unchanged`.

use super::{ApiError, Applied, ApplyAction, ControlPlane};
use crate::api::endpoint_slice::address_types;
use crate::api::manifest::Object;
use crate::api::{EndpointSlice, Endpoints, Node, ObjectMeta, Pod};
use crate::apiserver::admission::names::{dns1123_label, qualified_name, special_ip, IP_MSG};
use crate::apiserver::kubernetes_service::is_kubernetes_service;
use crate::controllers::endpointslice_mirroring::is_mirrored;
use crate::family::IpFamily;
use crate::field::{FieldError, FieldPath};
use std::net::IpAddr;

/// At most this many endpoints in one EndpointSlice (kube-apiserver's limit).
const MAX_ENDPOINTS: usize = 1000;
/// At most this many addresses per endpoint.
const MAX_ADDRESSES: usize = 100;

impl ControlPlane {
    /// All Pods, sorted by namespace and name.
    pub fn pods(&self) -> impl Iterator<Item = &Pod> {
        self.pods.values()
    }

    /// One Pod.
    pub fn pod(&self, namespace: &str, name: &str) -> Option<&Pod> {
        self.pods.get(&(namespace.to_string(), name.to_string()))
    }

    /// All Nodes, sorted by name.
    pub fn nodes(&self) -> impl Iterator<Item = &Node> {
        self.nodes.values()
    }

    /// One Node.
    pub fn node(&self, name: &str) -> Option<&Node> {
        self.nodes.get(name)
    }

    /// All EndpointSlices (the controller's, `kubernetes` and the users'),
    /// sorted by namespace and name.
    pub fn endpoint_slices(&self) -> impl Iterator<Item = &EndpointSlice> {
        self.endpoint_slices.values()
    }

    /// One EndpointSlice.
    pub fn endpoint_slice(&self, namespace: &str, name: &str) -> Option<&EndpointSlice> {
        self.endpoint_slices.get(&(namespace.to_string(), name.to_string()))
    }

    /// The EndpointSlices of Service `namespace/service` (labelled
    /// `kubernetes.io/service-name: <service>`), sorted by name.
    pub fn endpoint_slices_for(&self, namespace: &str, service: &str) -> Vec<&EndpointSlice> {
        self.endpoint_slices.for_service(namespace, service).collect()
    }

    /// Creates or replaces a Pod; the slices of the Services selecting it
    /// (before or after) follow.
    pub fn apply_pod(&mut self, mut pod: Pod) -> Result<Applied, ApiError> {
        default_meta(
            &mut pod.api_version,
            &mut pod.kind,
            &mut pod.metadata,
            "v1",
            "Pod",
            true,
        );
        let errors = validate_pod(&pod);
        if !errors.is_empty() {
            return Err(ApiError::invalid("Pod", &pod.metadata.name, errors));
        }
        let key = (pod.metadata.namespace.clone(), pod.metadata.name.clone());
        // A new Pod that says nothing of its state is scheduled and started,
        // as kube-scheduler and the kubelet would (a Pod whose status the
        // manifest gives, as the agent's manifests do, is taken as given).
        let untouched = pod.status.phase.is_none() && pod.status.pod_ip.is_none() && pod.status.pod_ips.is_empty();
        if untouched && !self.pods.contains_key(&key) {
            self.place(&mut pod);
        }
        let action = compare(&mut pod, self.pods.get(&key));
        self.version(&mut pod.metadata, action);
        let old = self.pods.insert(key, pod.clone());
        if action != ApplyAction::Unchanged {
            self.follow_containers(old.as_ref(), Some(&pod));
            self.sync_pod_services(old.as_ref(), Some(&pod));
            self.run_deployment_controller();
        }
        Ok(Applied {
            action,
            object: Object::Pod(Box::new(pod)),
        })
    }

    /// Creates or replaces a Node; every Service's slices follow (zones).
    pub fn apply_node(&mut self, mut node: Node) -> Result<Applied, ApiError> {
        default_meta(
            &mut node.api_version,
            &mut node.kind,
            &mut node.metadata,
            "v1",
            "Node",
            false,
        );
        let errors = required_name(&node.metadata);
        if !errors.is_empty() {
            return Err(ApiError::invalid("Node", &node.metadata.name, errors));
        }
        let key = node.metadata.name.clone();
        let action = compare(&mut node, self.nodes.get(&key));
        self.version(&mut node.metadata, action);
        self.nodes.insert(key, node.clone());
        if action != ApplyAction::Unchanged {
            self.sync_all_slices();
            self.run_deployment_controller();
        }
        Ok(Applied {
            action,
            object: Object::Node(Box::new(node)),
        })
    }

    /// Creates or replaces an EndpointSlice. Slices of Services without a
    /// selector are the users' to manage; a slice the controller manages is
    /// put back the way the controller wants it at once.
    pub fn apply_endpoint_slice(&mut self, mut slice: EndpointSlice) -> Result<Applied, ApiError> {
        default_meta(
            &mut slice.api_version,
            &mut slice.kind,
            &mut slice.metadata,
            "discovery.k8s.io/v1",
            "EndpointSlice",
            true,
        );
        let errors = validate_endpoint_slice(&slice);
        if !errors.is_empty() {
            return Err(ApiError::invalid("EndpointSlice", &slice.metadata.name, errors));
        }
        let key = (slice.metadata.namespace.clone(), slice.metadata.name.clone());
        let old = self.endpoint_slices.get(&key);
        // The controllers read only the slices they manage: a slice someone
        // else manages, put where no managed slice was, changes nothing
        // they would write, so they need not run (with thousands of
        // selector-less Services, that was a third of applying a slice).
        // A managed slice replaced by one labelled for another Service is
        // gone from its own Service, whose controller runs too.
        let old_owner = old
            .filter(|o| is_controller_owned(&key.0, o))
            .and_then(EndpointSlice::service_name)
            .map(str::to_string);
        let controllers_follow = is_controller_owned(&key.0, &slice) || old_owner.is_some();
        let action = compare(&mut slice, old);
        self.version(&mut slice.metadata, action);
        let service = slice.service_name().map(str::to_string);
        self.endpoint_slices.insert(key.clone(), slice.clone());
        if let Some(service) = service.as_ref().filter(|_| controllers_follow) {
            self.sync_service_slices(&key.0, service);
        }
        if let Some(owner) = old_owner.filter(|o| Some(o) != service.as_ref()) {
            self.sync_service_slices(&key.0, &owner);
        }
        Ok(Applied {
            action,
            object: Object::EndpointSlice(Box::new(slice)),
        })
    }

    /// Deletes a Pod; the slices of the Services selecting it follow.
    pub fn delete_pod(&mut self, namespace: &str, name: &str) -> Result<Pod, ApiError> {
        let pod = self
            .pods
            .remove(&(namespace.to_string(), name.to_string()))
            .ok_or_else(|| not_found("pods", name))?;
        self.follow_containers(Some(&pod), None);
        self.sync_pod_services(Some(&pod), None);
        self.run_deployment_controller();
        Ok(pod)
    }

    /// Deletes a Node; every Service's slices follow.
    pub fn delete_node(&mut self, name: &str) -> Result<Node, ApiError> {
        let node = self.nodes.remove(name).ok_or_else(|| not_found("nodes", name))?;
        self.pod_ipam
            .retain_nodes(&crate::sort::set_from(self.nodes.keys().map(String::as_str)));
        self.sync_all_slices();
        self.run_deployment_controller();
        Ok(node)
    }

    /// Deletes an EndpointSlice. The controller recreates the slices it
    /// manages (under a new name), as it does in Kubernetes.
    pub fn delete_endpoint_slice(&mut self, namespace: &str, name: &str) -> Result<EndpointSlice, ApiError> {
        let slice = self
            .endpoint_slices
            .remove(&(namespace.to_string(), name.to_string()))
            .ok_or_else(|| not_found("endpointslices.discovery.k8s.io", name))?;
        if let Some(service) = slice.service_name() {
            self.sync_service_slices(namespace, service);
        }
        Ok(slice)
    }

    /// A new uid and resourceVersion for a created object, a new
    /// resourceVersion for a configured one.
    pub(super) fn version(&mut self, meta: &mut ObjectMeta, action: ApplyAction) {
        match action {
            ApplyAction::Created => self.stamp(meta),
            ApplyAction::Configured => self.bump(meta),
            ApplyAction::Unchanged => {}
        }
    }
}

/// Objects stored whole, with metadata.
pub(super) trait Stored: PartialEq {
    fn meta(&self) -> &ObjectMeta;
    fn meta_mut(&mut self) -> &mut ObjectMeta;
}

impl Stored for Pod {
    fn meta(&self) -> &ObjectMeta {
        &self.metadata
    }
    fn meta_mut(&mut self) -> &mut ObjectMeta {
        &mut self.metadata
    }
}

impl Stored for Node {
    fn meta(&self) -> &ObjectMeta {
        &self.metadata
    }
    fn meta_mut(&mut self) -> &mut ObjectMeta {
        &mut self.metadata
    }
}

impl Stored for Endpoints {
    fn meta(&self) -> &ObjectMeta {
        &self.metadata
    }
    fn meta_mut(&mut self) -> &mut ObjectMeta {
        &mut self.metadata
    }
}

impl Stored for EndpointSlice {
    fn meta(&self) -> &ObjectMeta {
        &self.metadata
    }
    fn meta_mut(&mut self) -> &mut ObjectMeta {
        &mut self.metadata
    }
}

/// Whether applying `new` over `old` creates, configures or leaves the
/// object unchanged; `new` takes the old uid and resourceVersion.
pub(super) fn compare<T: Stored>(new: &mut T, old: Option<&T>) -> ApplyAction {
    let Some(old) = old else {
        return ApplyAction::Created;
    };
    new.meta_mut().keep_identity_of(old.meta());
    if new == old {
        ApplyAction::Unchanged
    } else {
        ApplyAction::Configured
    }
}

/// Whether the EndpointSlice controller or its mirroring controller
/// manages `slice` of `namespace` (its
/// `endpointslice.kubernetes.io/managed-by` label), or the apiserver
/// does, which rewrites any slice of `default/kubernetes`.
fn is_controller_owned(namespace: &str, slice: &EndpointSlice) -> bool {
    slice.is_managed_by_controller()
        || is_mirrored(slice)
        || slice
            .service_name()
            .is_some_and(|s| is_kubernetes_service(namespace, s))
}

/// `<resource> "<name>" not found`.
pub(super) fn not_found(resource: &str, name: &str) -> ApiError {
    ApiError::NotFound {
        resource: resource.into(),
        name: name.into(),
    }
}

/// Fills in `apiVersion`, `kind` and (for namespaced kinds) the namespace;
/// clears the namespace of cluster-scoped kinds.
pub(super) fn default_meta(
    api_version: &mut String,
    kind: &mut String,
    meta: &mut ObjectMeta,
    version: &str,
    kind_name: &str,
    namespaced: bool,
) {
    *api_version = version.into();
    *kind = kind_name.into();
    if !namespaced {
        meta.namespace.clear();
    } else if meta.namespace.is_empty() {
        meta.namespace = "default".into();
    }
}

/// `metadata.name: Required value` when the name is missing.
fn required_name(meta: &ObjectMeta) -> Vec<FieldError> {
    if meta.name.is_empty() {
        vec![FieldError::required(
            &FieldPath::new("metadata").child("name"),
            "name or generateName is required",
        )]
    } else {
        Vec::new()
    }
}

/// The checks kube-apiserver makes that matter for endpoints: a name,
/// container ports in range, and pod IPs that are IPs, at most one per
/// family.
fn validate_pod(pod: &Pod) -> Vec<FieldError> {
    let mut errors = required_name(&pod.metadata);
    let containers = FieldPath::new("spec").child("containers");
    for (c, container) in pod.spec.containers.iter().enumerate() {
        for (p, port) in container.ports.iter().enumerate() {
            if !(1..=65535).contains(&port.container_port) {
                let path = containers.index(c).child("ports").index(p).child("containerPort");
                errors.push(FieldError::invalid(
                    &path,
                    port.container_port,
                    "must be between 1 and 65535, inclusive",
                ));
            }
        }
    }
    let ips = FieldPath::new("status").child("podIPs");
    let mut families: Vec<IpFamily> = Vec::new();
    for (i, pod_ip) in pod.status.pod_ips.iter().enumerate() {
        match pod_ip.ip.parse::<IpAddr>() {
            Err(_) => errors.push(FieldError::invalid(
                &ips.index(i),
                pod_ip.ip.as_str(),
                "must be a valid IP address, (e.g. 10.9.8.7 or 2001:db8::ffff)",
            )),
            Ok(ip) if families.contains(&IpFamily::of(ip)) => errors.push(FieldError::invalid(
                &ips,
                pod_ip.ip.as_str(),
                "may specify no more than one IP for each IP family",
            )),
            Ok(ip) => families.push(IpFamily::of(ip)),
        }
    }
    if let Some(ip) = &pod.status.pod_ip {
        if ip.parse::<IpAddr>().is_err() {
            errors.push(FieldError::invalid(
                &FieldPath::new("status").child("podIP"),
                ip.as_str(),
                "must be a valid IP address, (e.g. 10.9.8.7 or 2001:db8::ffff)",
            ));
        }
    }
    errors
}

/// kube-apiserver's EndpointSlice checks: a name, a known `addressType`,
/// 1 to 1000 endpoints of one address each, of that type, and ports in
/// range.
/// kube-apiserver's EndpointSlice checks, in its order: the address type,
/// at most 1000 endpoints with 1 to 100 addresses each, of the slice's
/// family and not special (loopback, link-local, ...), then the ports'
/// names (RFC 1123 labels, unique), protocols and app protocols.
fn validate_endpoint_slice(slice: &EndpointSlice) -> Vec<FieldError> {
    let mut errors = required_name(&slice.metadata);
    if !address_types::ALL.contains(&slice.address_type.as_str()) {
        errors.push(FieldError::unsupported(
            &FieldPath::new("addressType"),
            slice.address_type.as_str(),
            &address_types::ALL,
        ));
    }
    let endpoints = FieldPath::new("endpoints");
    if slice.endpoints.len() > MAX_ENDPOINTS {
        errors.push(FieldError::too_many(&endpoints, slice.endpoints.len(), MAX_ENDPOINTS));
    } else {
        let family = slice.family();
        for (i, endpoint) in slice.endpoints.iter().enumerate() {
            // Written only for an error: most slices have none.
            let path = || endpoints.index(i).child("addresses");
            if endpoint.addresses.is_empty() {
                errors.push(FieldError::required(&path(), ""));
            } else if endpoint.addresses.len() > MAX_ADDRESSES {
                errors.push(FieldError::too_many(&path(), endpoint.addresses.len(), MAX_ADDRESSES));
            }
            let Some(family) = family else { continue };
            for (a, address) in endpoint.addresses.iter().enumerate() {
                match address.parse::<IpAddr>() {
                    Err(_) => errors.push(FieldError::invalid(&path().index(a), address.as_str(), IP_MSG)),
                    Ok(ip) => {
                        if IpFamily::of(ip) != family {
                            let detail = format!("must be an {family} address");
                            errors.push(FieldError::invalid(&path(), address.as_str(), &detail));
                        }
                        for msg in special_ip(ip) {
                            errors.push(FieldError::invalid(&path().index(a), address.as_str(), &msg));
                        }
                    }
                }
            }
        }
    }
    let ports = FieldPath::new("ports");
    let mut names = Vec::new();
    for (i, port) in slice.ports.iter().enumerate() {
        let path = ports.index(i);
        let name = port.name.clone().unwrap_or_default();
        for msg in dns1123_label(&name).into_iter().filter(|_| !name.is_empty()) {
            errors.push(FieldError::invalid(&path.child("name"), name.as_str(), &msg));
        }
        if names.contains(&name) {
            errors.push(FieldError::duplicate(&path.child("name"), name.as_str()));
        } else {
            names.push(name);
        }
        // An unset protocol is defaulted to TCP before validation.
        match port.protocol.as_deref() {
            Some(p) if !["SCTP", "TCP", "UDP"].contains(&p) => errors.push(FieldError::unsupported(
                &path.child("protocol"),
                p,
                &["SCTP", "TCP", "UDP"],
            )),
            _ => {}
        }
        if let Some(app) = &port.app_protocol {
            for msg in qualified_name(app) {
                errors.push(FieldError::invalid(&path.child("appProtocol"), app.as_str(), &msg));
            }
        }
    }
    errors
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::controlplane::ClusterConfig;

    fn lines(cp: &mut ControlPlane, text: &str) -> Vec<String> {
        cp.apply_manifest(text)
            .unwrap()
            .into_iter()
            .map(|r| r.map(|a| a.kubectl_line()).unwrap_or_else(|e| e.to_string()))
            .collect()
    }

    const POD: &str = "apiVersion: v1\nkind: Pod\nmetadata: {name: web-1, labels: {app: web}}\nspec: {containers: [{name: c, image: nginx}]}\nstatus: {phase: Running, podIPs: [{ip: 10.244.0.5}], conditions: [{type: Ready, status: \"True\"}]}\n";

    /// After each slice applied, the store is what running the
    /// controllers for every Service would leave: skipping them for slices
    /// they do not manage loses nothing, and a managed slice overwritten
    /// (for its own Service or another) is made again.
    #[test]
    fn applying_a_slice_leaves_what_the_controllers_would() {
        let mut cp = ControlPlane::new(ClusterConfig::default()).unwrap();
        let setup = format!(
            "{POD}---\napiVersion: v1\nkind: Service\nmetadata: {{name: web}}\nspec: {{selector: {{app: web}}, ports: [{{port: 80}}]}}\n---\napiVersion: v1\nkind: Service\nmetadata: {{name: other}}\nspec: {{ports: [{{port: 80}}]}}\n"
        );
        assert!(cp.apply_manifest(&setup).unwrap().iter().all(Result::is_ok));
        let managed = cp.endpoint_slices_for("default", "web")[0].metadata.name.clone();
        let slice = |name: &str, service: &str| {
            format!("apiVersion: discovery.k8s.io/v1\nkind: EndpointSlice\nmetadata: {{name: {name}, labels: {{kubernetes.io/service-name: {service}, endpointslice.kubernetes.io/managed-by: someone}}}}\naddressType: IPv4\nendpoints: [{{addresses: [192.0.2.1]}}]\n")
        };
        for (text, managed_left) in [
            (slice("by-hand", "web"), true),
            (slice("by-hand-2", "other"), true),
            (slice(&managed, "web"), false),
        ] {
            assert!(cp.apply_manifest(&text).unwrap().iter().all(Result::is_ok), "{text}");
            let mut reconciled = cp.clone();
            reconciled.sync_all_slices();
            assert_eq!(cp, reconciled, "after {text}");
            let web = cp.endpoint_slices_for("default", "web");
            assert!(web.iter().any(|s| s.is_managed_by_controller()), "{text}");
            assert_eq!(
                web.iter()
                    .any(|s| s.metadata.name == managed && s.is_managed_by_controller()),
                managed_left
            );
        }
        // A managed slice of `web` taken over for `other`: `web` gets a new one.
        let mut cp2 = ControlPlane::new(ClusterConfig::default()).unwrap();
        assert!(cp2.apply_manifest(&setup).unwrap().iter().all(Result::is_ok));
        assert!(cp2
            .apply_manifest(&slice(&managed, "other"))
            .unwrap()
            .iter()
            .all(Result::is_ok));
        let mut reconciled = cp2.clone();
        reconciled.sync_all_slices();
        assert_eq!(cp2, reconciled);
        assert!(cp2
            .endpoint_slices_for("default", "web")
            .iter()
            .any(|s| s.is_managed_by_controller()));
    }

    #[test]
    fn pods_nodes_and_slices_report_like_kubectl() {
        let mut cp = ControlPlane::new(ClusterConfig::default()).unwrap();
        assert_eq!(lines(&mut cp, POD), ["pod/web-1 created"]);
        assert_eq!(lines(&mut cp, POD), ["pod/web-1 unchanged"]);
        assert_eq!(
            lines(&mut cp, &POD.replace("\"True\"", "\"False\"")),
            ["pod/web-1 configured"]
        );
        let node = "apiVersion: v1\nkind: Node\nmetadata: {name: n1, namespace: ignored}\n";
        assert_eq!(lines(&mut cp, node), ["node/n1 created"]);
        assert_eq!(cp.node("n1").unwrap().metadata.namespace, "");
        let slice = "apiVersion: discovery.k8s.io/v1\nkind: EndpointSlice\nmetadata: {name: s1}\naddressType: IPv4\nendpoints: [{addresses: [192.0.2.1]}]\n";
        assert_eq!(lines(&mut cp, slice), ["endpointslice.discovery.k8s.io/s1 created"]);
        assert_eq!(lines(&mut cp, slice), ["endpointslice.discovery.k8s.io/s1 unchanged"]);
    }

    #[test]
    fn kubectl_get_pod_output_becomes_an_endpoint() {
        let mut cp = ControlPlane::new(ClusterConfig::default()).unwrap();
        let svc = "apiVersion: v1\nkind: Service\nmetadata: {name: web, namespace: shop}\nspec: {selector: {app: web}, ports: [{name: http, port: 80, targetPort: http}]}\n";
        // What `kubectl get -o yaml` prints, less the resourceVersion
        // kube-apiserver refuses on objects to be created.
        let fresh = |text: &str| -> String {
            text.lines()
                .filter(|l| !l.trim_start().starts_with("resourceVersion:"))
                .map(|l| format!("{l}\n"))
                .collect()
        };
        let text = format!(
            "{svc}---\n{}---\n{}",
            fresh(include_str!("../api/testdata/kubectl-get-pod.yaml")),
            fresh(include_str!("../api/testdata/kubectl-get-node.yaml"))
        );
        let applied = lines(&mut cp, &text);
        assert_eq!(
            applied,
            [
                "service/web created",
                "pod/web-7d9c5b8f6d-x2x4k created",
                "node/worker-1 created"
            ]
        );
        let slices = cp.endpoint_slices_for("shop", "web");
        assert_eq!(slices.len(), 1);
        let endpoint = &slices[0].endpoints[0];
        assert_eq!(endpoint.addresses, ["10.244.1.17"]);
        assert_eq!(endpoint.zone.as_deref(), Some("eu-west-1a"));
        assert_eq!(slices[0].ports[0].port, Some(8080));
        // The stored Pod keeps every field it came with.
        let pod = cp.pod("shop", "web-7d9c5b8f6d-x2x4k").unwrap();
        assert_eq!(pod.status.extra["hostIP"], "192.168.0.21");
    }

    #[test]
    fn refused_objects_change_nothing() {
        let mut cp = ControlPlane::new(ClusterConfig::default()).unwrap();
        let before = cp.clone();
        let bad = "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec: {containers: [{name: c, ports: [{containerPort: 0}]}]}\nstatus: {podIPs: [{ip: 10.0.0.1}, {ip: 10.0.0.2}, {ip: nope}]}\n";
        assert_eq!(
            lines(&mut cp, bad),
            ["The Pod \"p\" is invalid: [spec.containers[0].ports[0].containerPort: Invalid value: 0: must be between 1 and 65535, inclusive, status.podIPs: Invalid value: \"10.0.0.2\": may specify no more than one IP for each IP family, status.podIPs[2]: Invalid value: \"nope\": must be a valid IP address, (e.g. 10.9.8.7 or 2001:db8::ffff)]"]
        );
        let nameless = "apiVersion: v1\nkind: Node\nmetadata: {labels: {a: b}}\n";
        assert_eq!(
            lines(&mut cp, nameless),
            ["The Node \"\" is invalid: metadata.name: Required value: name or generateName is required"]
        );
        assert_eq!(cp, before);
        assert_eq!(
            cp.delete("po", "default", "p").unwrap_err().to_string(),
            "pods \"p\" not found"
        );
        assert_eq!(
            cp.delete("nodes", "", "n").unwrap_err().to_string(),
            "nodes \"n\" not found"
        );
    }
}
