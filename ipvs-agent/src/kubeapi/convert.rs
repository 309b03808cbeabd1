//! kube-rs objects (typed by k8s-openapi) into the core's types. Both are
//! the Kubernetes JSON shape, so the conversion is a JSON round trip; an
//! object the core cannot read is named in the error. `managedFields` are
//! dropped first: the proxy never reads them, and in the watch cache of a
//! large cluster they would be a third of its memory (16 of 44 MB for
//! 5,000 EndpointSlices of 10 endpoints).

use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use serde::de::DeserializeOwned;
use serde::Serialize;
use svcnet_core::api::limits::check_meta_parts;
use svcnet_core::api::{EndpointSlice, Service};
use svcnet_core::proxy::watch_cache::Watched;

/// The core's object for a k8s-openapi one.
fn to_core<T: DeserializeOwned>(object: &impl Serialize, kind: &str, name: &str) -> Result<T, String> {
    let value = serde_json::to_value(object).map_err(|e| format!("{kind} {name}: {e}"))?;
    serde_json::from_value(value).map_err(|e| format!("{kind} {name}: {e}"))
}

/// The pairs of an optional string map.
fn pairs(map: &Option<std::collections::BTreeMap<String, String>>) -> impl Iterator<Item = (&str, &str)> {
    map.iter().flatten().map(|(k, v)| (k.as_str(), v.as_str()))
}

/// Holds an object's metadata to Kubernetes' limits (names, labels,
/// annotations) before it is converted: objects from the apiserver passed
/// its admission, but the agent does not take that on trust.
fn check_limits(meta: &ObjectMeta, kind: &str, name: &str) -> Result<(), String> {
    check_meta_parts(
        meta.name.as_deref().unwrap_or_default(),
        meta.namespace.as_deref().unwrap_or_default(),
        pairs(&meta.labels),
        pairs(&meta.annotations),
    )
    .map_err(|e| format!("{kind} {name}: {e}"))
}

/// A Service as the core's [`Watched`].
pub fn service(svc: k8s_openapi::api::core::v1::Service) -> Result<Watched, String> {
    core_service(svc).map(|s| Watched::Service(Box::new(s)))
}

/// A Service as the core's.
pub fn core_service(mut svc: k8s_openapi::api::core::v1::Service) -> Result<Service, String> {
    let name = describe(&svc.metadata);
    check_limits(&svc.metadata, "Service", &name)?;
    svc.metadata.managed_fields = None;
    to_core(&svc, "Service", &name)
}

/// An EndpointSlice as the core's [`Watched`].
pub fn endpoint_slice(slice: k8s_openapi::api::discovery::v1::EndpointSlice) -> Result<Watched, String> {
    core_endpoint_slice(slice).map(|s| Watched::EndpointSlice(Box::new(s)))
}

/// An EndpointSlice as the core's.
pub fn core_endpoint_slice(mut slice: k8s_openapi::api::discovery::v1::EndpointSlice) -> Result<EndpointSlice, String> {
    let name = describe(&slice.metadata);
    check_limits(&slice.metadata, "EndpointSlice", &name)?;
    slice.metadata.managed_fields = None;
    to_core(&slice, "EndpointSlice", &name)
}

/// A Node as the core's [`Watched`].
pub fn node(mut node: k8s_openapi::api::core::v1::Node) -> Result<Watched, String> {
    let name = describe(&node.metadata);
    check_limits(&node.metadata, "Node", &name)?;
    node.metadata.managed_fields = None;
    to_core(&node, "Node", &name).map(|n| Watched::Node(Box::new(n)))
}

fn describe(meta: &ObjectMeta) -> String {
    match (&meta.namespace, &meta.name) {
        (Some(ns), Some(name)) => format!("{ns}/{name}"),
        (None, Some(name)) => name.clone(),
        _ => "(unnamed)".into(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_service_crosses_over_whole() {
        let svc: k8s_openapi::api::core::v1::Service = serde_json::from_value(serde_json::json!({
            "metadata": {"name": "web", "namespace": "shop", "labels": {"app": "web"}},
            "spec": {"clusterIP": "10.96.0.20", "clusterIPs": ["10.96.0.20"], "selector": {"app": "web"},
                     "ports": [{"name": "http", "port": 80, "targetPort": 8080, "protocol": "TCP"}],
                     "type": "ClusterIP", "ipFamilies": ["IPv4"]}
        }))
        .unwrap();
        let Watched::Service(core) = service(svc).unwrap() else {
            panic!("not a Service");
        };
        assert_eq!(core.metadata.namespace, "shop");
        assert_eq!(core.spec.cluster_ip, "10.96.0.20");
        assert_eq!(core.spec.ports[0].port, 80);
    }

    #[test]
    fn managed_fields_are_not_kept() {
        let slice: k8s_openapi::api::discovery::v1::EndpointSlice = serde_json::from_value(serde_json::json!({
            "metadata": {"name": "web-1", "namespace": "shop", "labels": {"kubernetes.io/service-name": "web"},
                         "managedFields": [{"manager": "kubectl-create", "operation": "Update",
                                            "fieldsType": "FieldsV1", "fieldsV1": {"f:endpoints": {}}}]},
            "addressType": "IPv4",
            "endpoints": [{"addresses": ["10.244.1.11"], "conditions": {"ready": true}}]
        }))
        .unwrap();
        let core = core_endpoint_slice(slice).unwrap();
        assert_eq!(core.metadata.managed_fields, None);
        assert_eq!(core.endpoints[0].addresses, vec!["10.244.1.11".to_string()]);
    }

    #[test]
    fn objects_over_the_metadata_limits_are_refused() {
        let mut svc = k8s_openapi::api::core::v1::Service::default();
        svc.metadata.name = Some("web".into());
        svc.metadata.namespace = Some("shop".into());
        svc.metadata.annotations = Some([("big".to_string(), "x".repeat(300 * 1024))].into());
        assert_eq!(
            service(svc.clone()).unwrap_err(),
            "Service shop/web: metadata.annotations: Too long: may not be more than 262144 bytes"
        );
        svc.metadata.annotations = None;
        svc.metadata.labels = Some([("app".to_string(), "v".repeat(64))].into());
        assert!(service(svc).unwrap_err().contains("must be no more than 63 characters"));
    }
}
