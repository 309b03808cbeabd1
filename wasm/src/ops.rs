//! What each JS method asks of the core, as plain Rust over JSON data.
//!
//! Nothing here knows about JavaScript, so it runs and is tested natively;
//! [`crate::cluster`] only converts its inputs and outputs. Each function is
//! one call into `svcnet-core` plus serialisation, worded like the core's
//! behaviour-vector runner ([`svcnet_core::scenario`]) so that a result seen
//! in the browser is the one a vector records.

use serde::de::DeserializeOwned;
use serde::Serialize;
use serde_json::Value;
use std::net::SocketAddr;
use svcnet_core::api::decode::from_value;
use svcnet_core::api::Resource;
use svcnet_core::controlplane::{ClusterConfig, ControlPlane, Snapshot};
use svcnet_core::proxy::{ipvsadm_list, ipvsadm_save, IpvsTable};
use svcnet_core::time::Time;

/// A manifest some of whose objects were refused: the message is the
/// core's, one line per refused object (as the vector runner joins them),
/// and `applied` holds the objects that were accepted all the same.
#[derive(Clone, Debug, PartialEq)]
pub struct Refused {
    /// The refusal messages joined by `\n`.
    pub message: String,
    /// The objects stored, in manifest order.
    pub applied: Vec<Value>,
}

/// Serialises the core's plain data. The core's types have string keys and
/// no serialiser that can fail, so the `Null` fallback is never taken.
pub fn json<T: Serialize + ?Sized>(data: &T) -> Value {
    svcnet_core::api::value::to_value(data)
}

/// Decodes the core's data from JSON with [`from_value`], as the core
/// decodes manifests and vectors (one copy of each type's decoding code in
/// the module); the error is `serde_json::from_value`'s message.
fn decode<T: DeserializeOwned>(value: Value) -> Result<T, String> {
    from_value(value).map(|d| d.value).map_err(|e| e.message)
}

/// Starts a cluster; the error is the core's configuration message.
pub fn start(options: Value) -> Result<ControlPlane, String> {
    let config: ClusterConfig = decode(options).map_err(|e| format!("invalid Cluster options: {e}"))?;
    ControlPlane::new(config).map_err(|e| e.to_string())
}

/// `kubectl apply -f -`: every accepted object as stored, with defaults and
/// allocations filled in.
pub fn apply(cp: &mut ControlPlane, manifest: &str) -> Result<Vec<Value>, Refused> {
    let results = cp.apply_manifest(manifest).map_err(|e| Refused {
        message: e.to_string(),
        applied: Vec::new(),
    })?;
    let mut applied = Vec::new();
    let mut errors = Vec::new();
    for result in results {
        match result {
            Ok(a) => applied.push(json(&a.object)),
            Err(e) => errors.push(e.to_string()),
        }
    }
    if errors.is_empty() {
        Ok(applied)
    } else {
        Err(Refused {
            message: errors.join("\n"),
            applied,
        })
    }
}

/// `kubectl delete`: the deleted object. An empty namespace is `default`.
pub fn delete(cp: &mut ControlPlane, kind: &str, namespace: &str, name: &str) -> Result<Value, String> {
    cp.delete(kind, namespace, name)
        .map(|o| json(&o))
        .map_err(|e| e.to_string())
}

/// `kubectl get <kind>` as a list: objects of one namespace, or of every
/// namespace when none is given; Nodes and ServiceCIDRs are cluster-scoped.
/// Kinds are named as `kubectl` and the core's `delete` accept them.
pub fn list(cp: &ControlPlane, kind: &str, namespace: Option<&str>) -> Result<Value, String> {
    Ok(json(&cp.list(resource(kind)?, namespace)))
}

/// The kind a kubectl word names (`svc`, `endpointslices`, ...), or the
/// apiserver's words for an unknown one.
fn resource(kind: &str) -> Result<Resource, String> {
    Resource::from_word(kind).ok_or_else(|| format!("the server doesn't have a resource type {kind:?}"))
}

/// The `kubernetes` Service's endpoints (`ip:port`), from the apiserver leases.
pub fn kubernetes_endpoints(cp: &ControlPlane) -> Value {
    json(
        &cp.apiserver_leases()
            .endpoints()
            .iter()
            .map(ToString::to_string)
            .collect::<Vec<_>>(),
    )
}

/// Moves time forward by `ms` milliseconds; the `kubernetes` endpoints after.
pub fn advance(cp: &mut ControlPlane, ms: u64) -> Value {
    cp.advance_to(Time(cp.now().as_millis().saturating_add(ms)));
    kubernetes_endpoints(cp)
}

/// An apiserver lease heartbeat at `now_ms`; the `kubernetes` endpoints after.
pub fn heartbeat(cp: &mut ControlPlane, address: &str, now_ms: u64) -> Result<Value, String> {
    let addr = address
        .parse::<SocketAddr>()
        .map_err(|_| format!("invalid apiserver address {address:?}"))?;
    cp.heartbeat(addr, Time(now_ms));
    Ok(kubernetes_endpoints(cp))
}

/// ClusterIP usage per CIDR and NodePort usage, with the static and dynamic
/// band boundaries: the same data as a vector's `usage` step.
pub fn usage(cp: &ControlPlane) -> Value {
    serde_json::json!({
        "clusterIPs": json(&cp.cluster_ip_allocator().usage()),
        "nodePorts": json(&cp.node_port_allocator().usage()),
    })
}

/// The IPVS table kube-proxy would program on `node`: the cluster's
/// NodePort range, the default scheduler (`rr`).
pub fn node_table(cp: &ControlPlane, node: &str) -> Result<IpvsTable, String> {
    cp.node_ipvs_table(node).map_err(|e| e.to_string())
}

/// `ipvsadm-save -n` on `node` once the table is programmed: the text
/// `ipvs-agent plan --format ipvsadm-save` prints.
pub fn ipvsadm_save_text(cp: &ControlPlane, node: &str) -> Result<String, String> {
    node_table(cp, node).map(|t| ipvsadm_save(&t))
}

/// `ipvsadm -Ln` on `node` once the table is programmed.
pub fn ipvsadm_list_text(cp: &ControlPlane, node: &str) -> Result<String, String> {
    node_table(cp, node).map(|t| ipvsadm_list(&t))
}

/// Restores a snapshot given as JSON data.
pub fn restore(snapshot: Value) -> Result<ControlPlane, String> {
    let snapshot: Snapshot = decode(snapshot).map_err(|e| format!("invalid snapshot: {e}"))?;
    ControlPlane::restore(snapshot).map_err(|e| e.to_string())
}

/// Restores a snapshot given as JSON text: read as a JSON value, then as
/// [`restore`] does (a syntax error names its line and column).
pub fn restore_json(text: &str) -> Result<ControlPlane, String> {
    let snapshot: Value = serde_json::from_str(text).map_err(|e| format!("invalid snapshot: {e}"))?;
    restore(snapshot)
}

/// Runs one behaviour vector and returns its report as pretty JSON, exactly
/// as `core/tests/vectors.rs` writes `target/vector-reports/native/*.json`.
pub fn run_vector(text: &str) -> Result<String, String> {
    let report = svcnet_core::scenario::run_vector_text(text)?;
    serde_json::to_string_pretty(&report).map_err(|e| format!("report does not serialise: {e}"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn cluster(options: Value) -> ControlPlane {
        start(options).unwrap()
    }

    #[test]
    fn options_are_the_core_config() {
        let options = json!({
            "serviceClusterIpRange": "10.0.0.0/24",
            "nodePortRange": "30000-30100",
            "podCidrs": ["10.244.0.0/16"],
            "seed": 7,
            "apiservers": ["192.168.0.10:6443"],
            "clusterDomain": "example.internal",
        });
        let config = ClusterConfig {
            service_cluster_ip_range: "10.0.0.0/24".into(),
            service_node_port_range: "30000-30100".into(),
            pod_cidrs: vec!["10.244.0.0/16".into()],
            seed: 7,
            apiservers: vec!["192.168.0.10:6443".into()],
            cluster_domain: "example.internal".into(),
            ..ClusterConfig::default()
        };
        assert_eq!(start(options).unwrap(), ControlPlane::new(config).unwrap());
        let core_name = json!({"serviceClusterIpRange": "10.0.0.0/24", "serviceNodePortRange": "31000-31100"});
        assert_eq!(
            start(core_name).unwrap().config().raw.service_node_port_range,
            "31000-31100"
        );
        assert_eq!(
            start(json!({})).unwrap(),
            ControlPlane::new(ClusterConfig::default()).unwrap()
        );
    }

    #[test]
    fn bad_options_and_configs_are_named() {
        let err = start(json!({"serviceClusterIpRange": "10.0.0.0/24", "nodePortRnage": "1-2"})).unwrap_err();
        assert!(
            err.starts_with("invalid Cluster options: unknown field `nodePortRnage`"),
            "{err}"
        );
        let err = start(json!({"seed": "seven"})).unwrap_err();
        assert!(
            err.starts_with("invalid Cluster options: invalid type: string \"seven\""),
            "{err}"
        );
        let config = ClusterConfig {
            service_cluster_ip_range: "10.0.0.0/30".into(),
            ..ClusterConfig::default()
        };
        let native = ControlPlane::new(config).unwrap_err().to_string();
        assert_eq!(
            start(json!({"serviceClusterIpRange": "10.0.0.0/30"})).unwrap_err(),
            native
        );
    }

    #[test]
    fn apply_reports_refusals_like_the_vector_runner() {
        let mut cp = cluster(json!({"serviceClusterIpRange": "10.0.0.0/29"}));
        let svc = |name: &str| {
            format!("apiVersion: v1\nkind: Service\nmetadata: {{name: {name}}}\nspec: {{ports: [{{port: 80}}]}}\n")
        };
        let manifest: String = (0..7).map(|i| svc(&format!("s{i}"))).collect::<Vec<_>>().join("---\n");
        let refused = apply(&mut cp, &manifest).unwrap_err();
        assert_eq!(refused.applied.len(), 5);
        assert_eq!(
            refused.message,
            "Internal error occurred: failed to allocate a serviceIP for Service \"s5\": range is full\n\
             Internal error occurred: failed to allocate a serviceIP for Service \"s6\": range is full"
        );
        let broken = apply(&mut cp, "kind: [\n").unwrap_err();
        assert!(broken.message.starts_with("document 1: "), "{}", broken.message);
        assert!(broken.applied.is_empty());
    }

    #[test]
    fn list_filters_by_namespace_only_when_given() {
        let mut cp = cluster(json!({"serviceClusterIpRange": "10.0.0.0/24"}));
        let manifest =
            "apiVersion: v1\nkind: Service\nmetadata: {name: a, namespace: team}\nspec: {ports: [{port: 80}]}\n";
        apply(&mut cp, manifest).unwrap();
        assert_eq!(list(&cp, "svc", None).unwrap().as_array().map(Vec::len), Some(2));
        assert_eq!(list(&cp, "Service", Some("team")).unwrap()[0]["metadata"]["name"], "a");
        assert_eq!(
            list(&cp, "servicecidrs", None).unwrap()[0]["metadata"]["name"],
            "kubernetes"
        );
        assert_eq!(
            list(&cp, "frobs", None).unwrap_err(),
            "the server doesn't have a resource type \"frobs\""
        );
    }

    #[test]
    fn time_moves_by_the_amount_given() {
        let mut cp = cluster(json!({"serviceClusterIpRange": "10.0.0.0/24", "apiservers": ["192.168.0.10:6443"]}));
        assert_eq!(advance(&mut cp, 10_000), json!(["192.168.0.10:6443"]));
        assert_eq!(cp.now(), Time(10_000));
        advance(&mut cp, 10_000);
        assert_eq!(cp.now(), Time(20_000));
        assert_eq!(
            heartbeat(&mut cp, "192.168.0.11", 21_000).unwrap_err(),
            "invalid apiserver address \"192.168.0.11\""
        );
        assert_eq!(
            heartbeat(&mut cp, "192.168.0.11:6443", 21_000).unwrap(),
            json!(["192.168.0.11:6443"])
        );
    }

    #[test]
    fn snapshots_restore_from_data_and_text() {
        let mut cp = cluster(json!({"serviceClusterIpRange": "10.0.0.0/24", "seed": 3}));
        let manifest = "apiVersion: v1\nkind: Service\nmetadata: {name: a}\nspec: {ports: [{port: 80}]}\n";
        apply(&mut cp, manifest).unwrap();
        let snapshot = json(&cp.snapshot());
        assert_eq!(restore(snapshot.clone()).unwrap(), cp);
        assert_eq!(restore_json(&snapshot.to_string()).unwrap(), cp);
        assert!(restore(json!({}))
            .unwrap_err()
            .starts_with("invalid snapshot: missing field"));
    }

    #[test]
    fn vector_reports_are_the_native_ones() {
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/vectors");
        let text = std::fs::read_to_string(root.join("clusterip-29-and-30.yaml")).unwrap();
        let native = serde_json::to_string_pretty(&svcnet_core::scenario::run_vector_text(&text).unwrap()).unwrap();
        assert_eq!(run_vector(&text).unwrap(), native);
        assert!(run_vector("description: [")
            .unwrap_err()
            .starts_with("invalid vector: "));
    }
    #[test]
    fn ipvs_tables_come_from_the_core() {
        let mut cp = cluster(json!({"serviceClusterIpRange": "10.96.0.0/24", "seed": 1}));
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples");
        for file in ["services.yaml", "pods.yaml"] {
            apply(&mut cp, &std::fs::read_to_string(root.join(file)).unwrap()).unwrap();
        }
        let table = cp.node_ipvs_table("node-a").unwrap();
        assert!(!table.virtual_servers.is_empty());
        assert_eq!(ipvsadm_save_text(&cp, "node-a").unwrap(), ipvsadm_save(&table));
        assert_eq!(ipvsadm_list_text(&cp, "node-a").unwrap(), ipvsadm_list(&table));
        assert_eq!(
            list(&cp, "pods", Some("default")).unwrap().as_array().map(Vec::len),
            Some(2)
        );
    }
}
