//! `kubectl apply` and `kubectl delete` over manifests: each object is
//! created, configured or left unchanged, and reported the way kubectl
//! reports it (`service/web created`).

use super::{ApiError, ControlPlane};
use crate::api::manifest::{parse_manifests, Object};
use crate::api::ServiceCidr;
use crate::apiserver::service_cidr::validate_service_cidr;
use crate::family::IpFamily;
use crate::field::{FieldError, FieldPath};
use ipnetwork::IpNetwork;
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

    /// Applies one object.
    pub fn apply_object(&mut self, object: Object) -> Result<Applied, ApiError> {
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
        }
    }

    /// Deletes an object by kind (`Service`/`svc`/`services`, `ServiceCIDR`,
    /// `Pod`/`po`, `Node`/`no`, `EndpointSlice`), namespace and name.
    pub fn delete(&mut self, kind: &str, namespace: &str, name: &str) -> Result<Object, ApiError> {
        let namespace = if namespace.is_empty() { "default" } else { namespace };
        match kind.to_ascii_lowercase().as_str() {
            "service" | "services" | "svc" => self
                .delete_service(namespace, name)
                .map(|s| Object::Service(Box::new(s))),
            "servicecidr" | "servicecidrs" => self.delete_service_cidr(name).map(|c| Object::ServiceCidr(Box::new(c))),
            "pod" | "pods" | "po" => self.delete_pod(namespace, name).map(|p| Object::Pod(Box::new(p))),
            "node" | "nodes" | "no" => self.delete_node(name).map(|n| Object::Node(Box::new(n))),
            "endpointslice" | "endpointslices" => self
                .delete_endpoint_slice(namespace, name)
                .map(|e| Object::EndpointSlice(Box::new(e))),
            other => Err(ApiError::BadRequest(format!(
                "the server doesn't have a resource type {other:?}"
            ))),
        }
    }

    fn apply_service_cidr(&mut self, mut obj: ServiceCidr) -> Result<Applied, ApiError> {
        let name = obj.metadata.name.clone();
        obj.api_version = "networking.k8s.io/v1".into();
        obj.kind = "ServiceCIDR".into();
        obj.metadata.namespace.clear();
        if let Some(old) = self.service_cidrs.get(&name) {
            if old.spec.cidrs == obj.spec.cidrs {
                return Ok(Applied {
                    action: ApplyAction::Unchanged,
                    object: Object::ServiceCidr(Box::new(old.clone())),
                });
            }
            let path = FieldPath::new("spec").child("cidrs");
            let err = FieldError::invalid(
                &path,
                crate::field::BadValue::StrList(obj.spec.cidrs.clone()),
                "field is immutable",
            );
            return Err(ApiError::invalid("ServiceCIDR", &name, vec![err]));
        }
        let cidrs = self.validate_service_cidr_object(&obj)?;
        let mut added = Vec::new();
        for (i, cidr) in cidrs.iter().enumerate() {
            if let Err(e) = self.cluster_ips.add_cidr(*cidr) {
                for c in &added {
                    let _ = self.cluster_ips.remove_cidr(*c);
                }
                let path = FieldPath::new("spec").child("cidrs").index(i);
                return Err(ApiError::invalid(
                    "ServiceCIDR",
                    &name,
                    vec![FieldError::invalid(&path, cidr.to_string(), &e.to_string())],
                ));
            }
            added.push(*cidr);
        }
        self.service_cidrs.insert(name, obj.clone());
        Ok(Applied {
            action: ApplyAction::Created,
            object: Object::ServiceCidr(Box::new(obj)),
        })
    }

    fn validate_service_cidr_object(&self, obj: &ServiceCidr) -> Result<Vec<IpNetwork>, ApiError> {
        let name = &obj.metadata.name;
        let path = FieldPath::new("spec").child("cidrs");
        let mut errs = Vec::new();
        if name.is_empty() {
            errs.push(FieldError::required(
                &FieldPath::new("metadata").child("name"),
                "name or generateName is required",
            ));
        }
        if obj.spec.cidrs.is_empty() || obj.spec.cidrs.len() > 2 {
            errs.push(FieldError::invalid(
                &path,
                crate::field::BadValue::StrList(obj.spec.cidrs.clone()),
                "must have 1 or 2 CIDRs",
            ));
        }
        let mut parsed = Vec::new();
        for (i, text) in obj.spec.cidrs.iter().enumerate() {
            match text.parse::<IpNetwork>() {
                Err(_) => errs.push(FieldError::invalid(
                    &path.index(i),
                    text.as_str(),
                    "must be a valid CIDR value, (e.g. 10.9.8.0/24 or 2001:db8::/64)",
                )),
                Ok(net) => match validate_service_cidr(net, &self.config.constraints) {
                    Err(e) => errs.push(FieldError::invalid(&path.index(i), text.as_str(), &e.to_string())),
                    Ok(()) if !self.families().contains(&IpFamily::of(net.ip())) => {
                        let family = IpFamily::of(net.ip());
                        let detail = format!(
                            "{family} is not configured on this cluster: --service-cluster-ip-range has no {family} CIDR \
                             (Kubernetes accepts such a ServiceCIDR but never allocates from it)"
                        );
                        errs.push(FieldError::invalid(&path.index(i), text.as_str(), &detail));
                    }
                    Ok(()) => parsed.push(net),
                },
            }
        }
        if let [a, b] = parsed.as_slice() {
            if a.is_ipv4() == b.is_ipv4() {
                errs.push(FieldError::invalid(
                    &path.index(1),
                    obj.spec.cidrs[1].as_str(),
                    "must be a different IP family than cidrs[0]",
                ));
            }
        }
        if errs.is_empty() {
            Ok(parsed)
        } else {
            Err(ApiError::invalid("ServiceCIDR", name, errs))
        }
    }

    fn delete_service_cidr(&mut self, name: &str) -> Result<ServiceCidr, ApiError> {
        let not_found = || ApiError::NotFound {
            resource: "servicecidrs".into(),
            name: name.into(),
        };
        let obj = self.service_cidrs.get(name).cloned().ok_or_else(not_found)?;
        let cidrs: Vec<IpNetwork> = obj.spec.cidrs.iter().filter_map(|c| c.parse().ok()).collect();
        let in_use: Vec<String> = self
            .services
            .values()
            .flat_map(|s| super::services::parsed_ips(s))
            .filter(|ip| cidrs.iter().any(|c| c.contains(*ip)))
            .map(|ip| ip.to_string())
            .collect();
        if !in_use.is_empty() {
            return Err(ApiError::BadRequest(format!(
                "ServiceCIDR {name:?} is still in use by ClusterIPs {}: delete those Services first",
                in_use.join(", ")
            )));
        }
        for c in cidrs {
            let _ = self.cluster_ips.remove_cidr(c);
        }
        self.service_cidrs.remove(name);
        Ok(obj)
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
    fn unknown_kinds_are_named() {
        let mut cp = ControlPlane::new(ClusterConfig::default()).unwrap();
        let err = cp.delete("frobs", "default", "x").unwrap_err();
        assert_eq!(err.to_string(), "the server doesn't have a resource type \"frobs\"");
    }
}
