//! `kubectl apply` and `kubectl delete` over manifests: each object is
//! created, configured or left unchanged, and reported the way kubectl
//! reports it (`service/web created`).

use super::{ApiError, ControlPlane};
use crate::api::manifest::{parse_manifests, Object};
use crate::api::Resource;
use crate::apiserver::generate_name::generated_name;
use serde::Serialize;

/// What applying one object did.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub enum ApplyAction {
    /// The object did not exist and was created.
    Created,
    /// The object existed and changed.
    Configured,
    /// The object existed and nothing changed.
    Unchanged,
}

/// The result of applying one object: what happened and the stored object.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Applied {
    /// Created, configured or unchanged.
    pub action: ApplyAction,
    /// The object as stored, with defaults and allocations filled in.
    pub object: Object,
}

impl Applied {
    /// kubectl's line for it: `service/web created`,
    /// `endpointslice.discovery.k8s.io/web-abcde configured`.
    pub fn kubectl_line(&self) -> String {
        let verb = match self.action {
            ApplyAction::Created => "created",
            ApplyAction::Configured => "configured",
            ApplyAction::Unchanged => "unchanged",
        };
        format!("{}/{} {verb}", self.object.kubectl_resource(), self.object.name())
    }
}

impl ControlPlane {
    /// Parses a manifest (YAML or JSON, one or more documents) and applies
    /// every object in order. A manifest that does not parse changes
    /// nothing; otherwise each object succeeds or fails on its own, as with
    /// `kubectl apply`.
    pub fn apply_manifest(&mut self, text: &str) -> Result<Vec<Result<Applied, ApiError>>, ApiError> {
        let objects = parse_manifests(text)?;
        Ok(objects.into_iter().map(|o| self.apply_object(o)).collect())
    }

    /// Applies one object. One without a name but with `generateName` is
    /// created under a generated name.
    pub fn apply_object(&mut self, mut object: Object) -> Result<Applied, ApiError> {
        self.generate_name(&mut object);
        if !object.meta().resource_version.is_empty() && !self.exists(&object) {
            return Err(ApiError::BadRequest(
                "resourceVersion should not be set on objects to be created".into(),
            ));
        }
        match object {
            Object::Service(svc) => {
                let old = self
                    .service(svc.metadata.namespace_or_default(), &svc.metadata.name)
                    .cloned();
                let stored = self.apply_service(*svc)?;
                let action = match old {
                    None => ApplyAction::Created,
                    Some(o) if o == stored => ApplyAction::Unchanged,
                    Some(_) => ApplyAction::Configured,
                };
                Ok(Applied {
                    action,
                    object: Object::Service(Box::new(stored)),
                })
            }
            Object::ServiceCidr(cidr) => self.apply_service_cidr(*cidr),
            Object::Pod(pod) => self.apply_pod(*pod),
            Object::Node(node) => self.apply_node(*node),
            Object::EndpointSlice(slice) => self.apply_endpoint_slice(*slice),
            Object::Endpoints(endpoints) => self.apply_endpoints(*endpoints),
            Object::Deployment(d) => self.apply_deployment(*d),
        }
    }

    /// Names an object that has `generateName` and no name: the prefix and
    /// a suffix no object of its kind in its namespace has.
    fn generate_name(&mut self, object: &mut Object) {
        let Some(prefix) = object
            .meta()
            .name
            .is_empty()
            .then(|| object.meta().generate_name_prefix().map(str::to_string))
            .flatten()
        else {
            return;
        };
        loop {
            object.meta_mut().name = generated_name(&prefix, self.next_generated_name);
            self.next_generated_name += 1;
            if !self.exists(object) {
                return;
            }
        }
    }

    /// True when an object of that kind, namespace and name is stored.
    fn exists(&self, object: &Object) -> bool {
        let (namespace, name) = (object.namespace(), object.name());
        match object {
            Object::Service(_) => self.service(namespace, name).is_some(),
            Object::ServiceCidr(_) => self.service_cidrs().any(|c| c.metadata.name == name),
            Object::Pod(_) => self.pod(namespace, name).is_some(),
            Object::Node(_) => self.node(name).is_some(),
            Object::EndpointSlice(_) => self.endpoint_slice(namespace, name).is_some(),
            Object::Endpoints(_) => self.written_endpoints.contains_key(&(namespace.into(), name.into())),
            Object::Deployment(_) => self.deployment(namespace, name).is_some(),
        }
    }

    /// Deletes an object by kind (any word [`Resource::from_word`] takes:
    /// `svc`, `pods`, `endpointslices.discovery.k8s.io`, ...), namespace
    /// and name.
    pub fn delete(&mut self, kind: &str, namespace: &str, name: &str) -> Result<Object, ApiError> {
        let resource = Resource::from_word(kind)
            .ok_or_else(|| ApiError::BadRequest(format!("the server doesn't have a resource type {kind:?}")))?;
        self.delete_resource(resource, namespace, name)
    }

    /// Deletes an object of `resource` by namespace (empty: `default`) and
    /// name.
    pub fn delete_resource(&mut self, resource: Resource, namespace: &str, name: &str) -> Result<Object, ApiError> {
        let namespace = if namespace.is_empty() { "default" } else { namespace };
        match resource {
            Resource::Service => self
                .delete_service(namespace, name)
                .map(|s| Object::Service(Box::new(s))),
            Resource::ServiceCidr => self.delete_service_cidr(name).map(|c| Object::ServiceCidr(Box::new(c))),
            Resource::Pod => self.delete_pod(namespace, name).map(|p| Object::Pod(Box::new(p))),
            Resource::Node => self.delete_node(name).map(|n| Object::Node(Box::new(n))),
            Resource::EndpointSlice => self
                .delete_endpoint_slice(namespace, name)
                .map(|e| Object::EndpointSlice(Box::new(e))),
            Resource::Endpoints => self
                .delete_endpoints(namespace, name)
                .map(|e| Object::Endpoints(Box::new(e))),
            Resource::Deployment => self
                .delete_deployment(namespace, name)
                .map(|d| Object::Deployment(Box::new(d))),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::controlplane::ClusterConfig;

    const WEB: &str = "apiVersion: v1\nkind: Service\nmetadata: {name: web}\nspec: {ports: [{port: 80}]}\n";

    #[test]
    fn reports_like_kubectl_apply() {
        let mut cp = ControlPlane::new(ClusterConfig::default()).unwrap();
        let lines = |r: Vec<Result<Applied, ApiError>>| -> Vec<String> {
            r.into_iter()
                .map(|a| a.map(|a| a.kubectl_line()).unwrap_or_else(|e| e.to_string()))
                .collect()
        };
        assert_eq!(lines(cp.apply_manifest(WEB).unwrap()), vec!["service/web created"]);
        assert_eq!(lines(cp.apply_manifest(WEB).unwrap()), vec!["service/web unchanged"]);
        let changed = WEB.replace("port: 80", "port: 81");
        assert_eq!(
            lines(cp.apply_manifest(&changed).unwrap()),
            vec!["service/web configured"]
        );
    }

    #[test]
    fn one_bad_object_does_not_stop_the_others() {
        let mut cp = ControlPlane::new(ClusterConfig::default()).unwrap();
        let text = format!(
            "{WEB}---\napiVersion: v1\nkind: Service\nmetadata: {{name: bad}}\nspec: {{ports: [{{port: 0}}]}}\n"
        );
        let results = cp.apply_manifest(&text).unwrap();
        assert!(results[0].is_ok());
        let err = results[1].as_ref().unwrap_err();
        assert_eq!(err.reason(), "Invalid");
        assert!(cp.service("default", "web").is_some());
        assert!(cp.service("default", "bad").is_none());
    }

    #[test]
    fn unparsable_manifest_changes_nothing() {
        let mut cp = ControlPlane::new(ClusterConfig::default()).unwrap();
        let before = cp.clone();
        let err = cp.apply_manifest(&format!("{WEB}---\nkind: [\n")).unwrap_err();
        assert_eq!(err.reason(), "BadRequest");
        assert_eq!(cp, before);
    }

    #[test]
    fn generate_name_gives_a_fresh_name() {
        let mut cp = ControlPlane::new(ClusterConfig::default()).unwrap();
        let text = "apiVersion: v1\nkind: Service\nmetadata: {generateName: web-}\nspec: {ports: [{port: 80}]}\n";
        let first = cp.apply_manifest(text).unwrap().remove(0).unwrap();
        let second = cp.apply_manifest(text).unwrap().remove(0).unwrap();
        for applied in [&first, &second] {
            assert_eq!(applied.action, ApplyAction::Created);
            let name = applied.object.name();
            assert!(name.starts_with("web-") && name.len() == 9, "{name}");
            assert!(cp.service("default", name).is_some());
        }
        assert_ne!(first.object.name(), second.object.name());
        let bad = text.replace("web-", "Web_");
        let err = cp.apply_manifest(&bad).unwrap().remove(0).unwrap_err().to_string();
        assert!(err.starts_with("The Service \"Web_"), "{err}");
        assert!(err.contains("[metadata.generateName: Invalid value: \"Web_\""), "{err}");
    }

    #[test]
    fn unknown_kinds_are_named() {
        let mut cp = ControlPlane::new(ClusterConfig::default()).unwrap();
        let err = cp.delete("frobs", "default", "x").unwrap_err();
        assert_eq!(err.to_string(), "the server doesn't have a resource type \"frobs\"");
    }
}
