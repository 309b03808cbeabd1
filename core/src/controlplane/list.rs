//! Reading objects by kind, as `kubectl get` does: every object of a
//! [`Resource`] (in one namespace or all of them), or one by name with
//! kube-apiserver's `NotFound`.

use super::{ApiError, ControlPlane};
use crate::api::{Object, Resource};

impl ControlPlane {
    /// Every stored object of `resource`, in namespace and name order; only
    /// those of `namespace` when one is given (cluster-scoped kinds ignore
    /// it). Endpoints include those the Endpoints controller derives.
    pub fn list(&self, resource: Resource, namespace: Option<&str>) -> Vec<Object> {
        let in_ns = |ns: &str| namespace.is_none_or(|want| ns == want);
        match resource {
            Resource::Service => (self.services())
                .filter(|s| in_ns(s.metadata.namespace_or_default()))
                .map(|s| Object::Service(Box::new(s.clone())))
                .collect(),
            Resource::Pod => (self.pods())
                .filter(|p| in_ns(p.metadata.namespace_or_default()))
                .map(|p| Object::Pod(Box::new(p.clone())))
                .collect(),
            Resource::EndpointSlice => (self.endpoint_slices())
                .filter(|s| in_ns(s.metadata.namespace_or_default()))
                .map(|s| Object::EndpointSlice(Box::new(s.clone())))
                .collect(),
            Resource::Endpoints => (self.all_endpoints().into_iter())
                .filter(|e| in_ns(e.metadata.namespace_or_default()))
                .map(|e| Object::Endpoints(Box::new(e)))
                .collect(),
            Resource::Node => self.nodes().map(|n| Object::Node(Box::new(n.clone()))).collect(),
            // By name, as the apiserver lists them (`kubernetes` among the
            // others, not first).
            Resource::ServiceCidr => {
                let mut cidrs: Vec<_> = self.service_cidrs().collect();
                crate::sort::sort_by(&mut cidrs, |a, b| a.metadata.name.cmp(&b.metadata.name));
                (cidrs.into_iter())
                    .map(|c| Object::ServiceCidr(Box::new(c.clone())))
                    .collect()
            }
            Resource::Deployment => (self.deployments())
                .filter(|d| in_ns(d.metadata.namespace_or_default()))
                .map(|d| Object::Deployment(Box::new(d.clone())))
                .collect(),
        }
    }

    /// One object of `resource` by namespace (empty: `default`) and name,
    /// or kube-apiserver's `NotFound` (`services "web" not found`).
    pub fn get(&self, resource: Resource, namespace: &str, name: &str) -> Result<Object, ApiError> {
        let namespace = if namespace.is_empty() { "default" } else { namespace };
        self.list(resource, resource.namespaced().then_some(namespace))
            .into_iter()
            .find(|o| o.name() == name)
            .ok_or_else(|| ApiError::NotFound {
                resource: resource.qualified_plural().to_string(),
                name: name.to_string(),
            })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::controlplane::ClusterConfig;

    #[test]
    fn lists_by_kind_and_namespace_and_names_what_is_missing() {
        let mut cp = ControlPlane::new(ClusterConfig::default()).unwrap();
        let web =
            "apiVersion: v1\nkind: Service\nmetadata: {name: web, namespace: shop}\nspec: {ports: [{port: 80}]}\n";
        cp.apply_manifest(web).unwrap().remove(0).unwrap();
        let names = |objects: Vec<Object>| objects.iter().map(|o| o.name().to_string()).collect::<Vec<_>>();
        assert_eq!(names(cp.list(Resource::Service, None)), ["kubernetes", "web"]);
        assert_eq!(names(cp.list(Resource::Service, Some("shop"))), ["web"]);
        assert_eq!(names(cp.list(Resource::ServiceCidr, Some("shop"))), ["kubernetes"]);
        assert_eq!(cp.get(Resource::Service, "shop", "web").unwrap().name(), "web");
        let missing = cp.get(Resource::EndpointSlice, "", "web").unwrap_err();
        assert_eq!(missing.to_string(), "endpointslices.discovery.k8s.io \"web\" not found");
        assert_eq!(missing.reason(), "NotFound");
    }
}
