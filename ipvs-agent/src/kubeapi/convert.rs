//! The objects API mode received ([`objects`], already
//! decoded into the core's types) as the core's [`Watched`], once their
//! metadata is held to Kubernetes' limits: objects from the apiserver
//! passed its admission, but the agent does not take that on trust. An
//! object the core cannot read, or over the limits, is named in the error.

use super::objects::{self, describe, Kind, Received};
use svcnet_core::api::limits::check_object_meta;
use svcnet_core::api::{EndpointSlice, Service};
use svcnet_core::proxy::watch_cache::Watched;

/// The core's object, once its metadata is within the limits.
fn checked<T: Kind>(object: Received<T>) -> Result<Box<T>, String> {
    let object = object.into_core()?;
    let meta = object.metadata();
    check_object_meta(meta).map_err(|e| format!("{} {}: {e}", T::KIND, describe(&meta.namespace, &meta.name)))?;
    Ok(object)
}

/// A Service as the core's [`Watched`].
pub fn service(svc: objects::Service) -> Result<Watched, String> {
    checked(svc).map(Watched::Service)
}

/// A Service as the core's.
pub fn core_service(svc: objects::Service) -> Result<Box<Service>, String> {
    checked(svc)
}

/// An EndpointSlice as the core's [`Watched`].
pub fn endpoint_slice(slice: objects::EndpointSlice) -> Result<Watched, String> {
    checked(slice).map(Watched::EndpointSlice)
}

/// An EndpointSlice as the core's.
pub fn core_endpoint_slice(slice: objects::EndpointSlice) -> Result<EndpointSlice, String> {
    checked(slice).map(|s| *s)
}

/// A Node as the core's [`Watched`].
pub fn node(node: objects::Node) -> Result<Watched, String> {
    checked(node).map(Watched::Node)
}

#[cfg(test)]
mod tests {
    use super::*;
    use svcnet_core::api::meta::Skipped;

    fn received<T: Kind>(object: serde_json::Value) -> Received<T> {
        serde_json::from_str(&object.to_string()).unwrap()
    }

    #[test]
    fn a_service_crosses_over_whole() {
        let svc = received(serde_json::json!({
            "metadata": {"name": "web", "namespace": "shop", "labels": {"app": "web"}},
            "spec": {"clusterIP": "10.96.0.20", "clusterIPs": ["10.96.0.20"], "selector": {"app": "web"},
                     "ports": [{"name": "http", "port": 80, "targetPort": 8080, "protocol": "TCP"}],
                     "type": "ClusterIP", "ipFamilies": ["IPv4"]}
        }));
        let Watched::Service(core) = service(svc).unwrap() else {
            panic!("not a Service");
        };
        assert_eq!(core.metadata.namespace, "shop");
        assert_eq!(core.spec.cluster_ip, "10.96.0.20");
        assert_eq!(core.spec.ports[0].port, 80);
    }

    #[test]
    fn managed_fields_are_not_kept() {
        let slice = received(serde_json::json!({
            "metadata": {"name": "web-1", "namespace": "shop", "labels": {"kubernetes.io/service-name": "web"},
                         "managedFields": [{"manager": "kubectl-create", "operation": "Update",
                                            "fieldsType": "FieldsV1", "fieldsV1": {"f:endpoints": {}}}]},
            "addressType": "IPv4",
            "endpoints": [{"addresses": ["10.244.1.11"], "conditions": {"ready": true}}]
        }));
        let core = core_endpoint_slice(slice).unwrap();
        // Read past, nothing of them held.
        assert_eq!(core.metadata.managed_fields, Some(Skipped));
        assert_eq!(core.endpoints[0].addresses, vec!["10.244.1.11".to_string()]);
    }

    #[test]
    fn objects_over_the_metadata_limits_are_refused() {
        let mut svc = serde_json::json!({"metadata": {"name": "web", "namespace": "shop",
                                                      "annotations": {"big": "x".repeat(300 * 1024)}}});
        assert_eq!(
            service(received(svc.clone())).unwrap_err(),
            "Service shop/web: metadata.annotations: Too long: may not be more than 262144 bytes"
        );
        svc["metadata"].as_object_mut().unwrap().remove("annotations");
        svc["metadata"]["labels"] = serde_json::json!({"app": "v".repeat(64)});
        assert!(service(received(svc))
            .unwrap_err()
            .contains("must be no more than 63 characters"));
    }

    #[test]
    fn an_object_the_core_cannot_read_is_named() {
        let node = received(serde_json::json!({"metadata": {"name": "node-a"}, "status": {"addresses": 5}}));
        let error = super::node(node).unwrap_err();
        assert!(
            error.starts_with("Node node-a: invalid type: integer `5`, expected a sequence"),
            "{error}"
        );
    }
}
