//! What the runner needs to know of an object given as JSON: its kind,
//! namespace and name, the resource names the API uses for its kind, and
//! whether the kind is cluster-scoped.

use serde_json::Value;

/// `(kind, namespace, name)` of an object; empty where missing.
pub fn identity(object: &Value) -> (&str, &str, &str) {
    let get = |p: &str| object.pointer(p).and_then(Value::as_str).unwrap_or_default();
    (get("/kind"), get("/metadata/namespace"), get("/metadata/name"))
}

/// `Kind/namespace/name`, or `Kind/name` for a cluster-scoped object.
pub fn id(kind: &str, namespace: &str, name: &str) -> String {
    if namespace.is_empty() {
        format!("{kind}/{name}")
    } else {
        format!("{kind}/{namespace}/{name}")
    }
}

/// The lower-case plural resource name of a kind, as in `services "x"`.
pub fn plural(kind: &str) -> String {
    match kind {
        "Endpoints" => "endpoints".to_string(),
        other => format!("{}s", other.to_ascii_lowercase()),
    }
}

/// The resource as kube-apiserver's messages name it: the plural,
/// qualified by the API group outside the core group.
pub fn resource(kind: &str) -> String {
    match kind {
        "ServiceCIDR" | "IPAddress" => format!("{}.networking.k8s.io", plural(kind)),
        "EndpointSlice" => format!("{}.discovery.k8s.io", plural(kind)),
        _ => plural(kind),
    }
}

/// Kinds that live outside namespaces.
pub fn cluster_scoped(kind: &str) -> bool {
    matches!(kind, "Node" | "ServiceCIDR" | "Namespace" | "IPAddress")
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn names_follow_the_api() {
        let svc = json!({"kind": "Service", "metadata": {"name": "web", "namespace": "ns"}});
        assert_eq!(identity(&svc), ("Service", "ns", "web"));
        assert_eq!(id("Service", "ns", "web"), "Service/ns/web");
        assert_eq!(id("Node", "", "a"), "Node/a");
        assert_eq!(plural("ServiceCIDR"), "servicecidrs");
        assert_eq!(plural("Endpoints"), "endpoints");
        assert_eq!(resource("ServiceCIDR"), "servicecidrs.networking.k8s.io");
        assert_eq!(resource("Service"), "services");
        assert!(cluster_scoped("ServiceCIDR") && !cluster_scoped("Pod"));
    }
}
