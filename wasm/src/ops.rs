//! What each JS method asks of the core, as plain Rust over JSON data.
//!
//! Nothing here knows about JavaScript, so it runs and is tested natively;
//! [`crate::cluster`] only converts its inputs and outputs. Each function is
//! one call into `svcnet-core` plus serialisation, worded like the core's
//! behaviour-vector runner ([`svcnet_core::scenario`]) so that a result seen
//! in the browser is the one a vector records.

use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::net::SocketAddr;
use svcnet_core::api::{Resource, Service};
use svcnet_core::controlplane::{ClusterConfig, ControlPlane, Snapshot};
use svcnet_core::kubectl::{deployments_table, endpoint_slices_table, endpoints_table, services_table};
use svcnet_core::proxy::{ipvsadm_list, ipvsadm_save, IpvsTable, ProxyConfig};
use svcnet_core::time::Time;

/// The options of `new Cluster({...})`: the flags of [`ClusterConfig`] under
/// the names the playground uses. Left-out options keep the core's defaults.
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ClusterOptions {
    /// `--service-cluster-ip-range`, e.g. `10.96.0.0/12` or
    /// `10.96.0.0/16,fd00:10:96::/112`.
    pub service_cluster_ip_range: String,
    /// `--service-node-port-range` (the core's `serviceNodePortRange`, also
    /// accepted under that name), e.g. `30000-32767`.
    #[serde(default, alias = "serviceNodePortRange")]
    pub node_port_range: Option<String>,
    /// Pod CIDRs the service CIDRs must not overlap.
    #[serde(default)]
    pub pod_cidrs: Option<Vec<String>>,
    /// Node IPs the service CIDRs must not contain.
    #[serde(default)]
    pub node_ips: Option<Vec<String>>,
    /// Seed of the allocation generator (a number, or a BigInt above 2^53).
    #[serde(default)]
    pub seed: Option<u64>,
    /// Apiserver `ip:port`s holding a lease from time 0.
    #[serde(default)]
    pub apiservers: Option<Vec<String>>,
    /// The cluster DNS zone, `cluster.local` by default.
    #[serde(default)]
    pub cluster_domain: Option<String>,
    /// TTL of DNS records in seconds, 5 by default.
    #[serde(default)]
    pub dns_ttl: Option<u32>,
}

impl ClusterOptions {
    /// Reads the options from JSON data; the message names a wrong or
    /// unknown option.
    pub fn from_value(value: Value) -> Result<ClusterOptions, String> {
        serde_json::from_value(value).map_err(|e| format!("invalid Cluster options: {e}"))
    }

    /// The core's configuration: the core's defaults, overridden by every
    /// option given.
    pub fn into_config(self) -> ClusterConfig {
        let defaults = ClusterConfig::default();
        ClusterConfig {
            service_cluster_ip_range: self.service_cluster_ip_range,
            service_node_port_range: self.node_port_range.unwrap_or(defaults.service_node_port_range),
            pod_cidrs: self.pod_cidrs.unwrap_or(defaults.pod_cidrs),
            node_ips: self.node_ips.unwrap_or(defaults.node_ips),
            seed: self.seed.unwrap_or(defaults.seed),
            cluster_domain: self.cluster_domain.unwrap_or(defaults.cluster_domain),
            dns_ttl: self.dns_ttl.unwrap_or(defaults.dns_ttl),
            apiservers: self.apiservers.unwrap_or(defaults.apiservers),
            max_endpoints_per_slice: defaults.max_endpoints_per_slice,
        }
    }
}

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
    serde_json::to_value(data).unwrap_or(Value::Null)
}

/// Starts a cluster; the error is the core's configuration message.
pub fn start(options: Value) -> Result<ControlPlane, String> {
    let config = ClusterOptions::from_value(options)?.into_config();
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

/// `kubectl get svc` (`-A` when `all_namespaces`, else `-n namespace`).
pub fn kubectl_get_services(cp: &ControlPlane, all_namespaces: bool, namespace: &str) -> String {
    let services: Vec<&Service> = cp
        .services()
        .filter(|s| all_namespaces || s.metadata.namespace_or_default() == namespace)
        .collect();
    services_table(&services, all_namespaces)
}

/// `kubectl get endpoints` / `endpointslices` / `deployments` tables, like
/// [`kubectl_get_services`].
pub fn kubectl_get(cp: &ControlPlane, kind: &str, all_namespaces: bool, namespace: &str) -> Result<String, String> {
    let in_ns = |ns: &str| all_namespaces || ns == namespace;
    match resource(kind)? {
        Resource::Service => Ok(kubectl_get_services(cp, all_namespaces, namespace)),
        Resource::Endpoints => {
            let all = cp.all_endpoints();
            let endpoints: Vec<_> = all
                .iter()
                .filter(|e| in_ns(e.metadata.namespace_or_default()))
                .collect();
            Ok(endpoints_table(&endpoints, all_namespaces))
        }
        Resource::EndpointSlice => {
            let slices: Vec<_> = cp
                .endpoint_slices()
                .filter(|s| in_ns(s.metadata.namespace_or_default()))
                .collect();
            Ok(endpoint_slices_table(&slices, all_namespaces))
        }
        Resource::Deployment => {
            let deployments: Vec<_> = cp
                .deployments()
                .filter(|d| in_ns(d.metadata.namespace_or_default()))
                .collect();
            Ok(deployments_table(&deployments, all_namespaces, false))
        }
        other => Err(format!("no table for {} here", other.plural())),
    }
}

/// The IPVS table kube-proxy would program on `node`: the cluster's
/// NodePort range, the default scheduler (`rr`).
pub fn node_table(cp: &ControlPlane, node: &str) -> Result<IpvsTable, String> {
    let info = cp.node_info(node).map_err(|e| e.to_string())?;
    let config = ProxyConfig {
        node_port_range: cp.config().node_ports,
        ..ProxyConfig::default()
    };
    Ok(cp.desired_ipvs_table(&info, &config).table)
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
    let snapshot: Snapshot = serde_json::from_value(snapshot).map_err(|e| format!("invalid snapshot: {e}"))?;
    ControlPlane::restore(snapshot).map_err(|e| e.to_string())
}

/// Restores a snapshot given as JSON text.
pub fn restore_json(text: &str) -> Result<ControlPlane, String> {
    let snapshot: Snapshot = serde_json::from_str(text).map_err(|e| format!("invalid snapshot: {e}"))?;
    ControlPlane::restore(snapshot).map_err(|e| e.to_string())
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
    fn options_map_onto_the_core_config() {
        let config = ClusterOptions::from_value(json!({
            "serviceClusterIpRange": "10.0.0.0/24",
            "nodePortRange": "30000-30100",
            "podCidrs": ["10.244.0.0/16"],
            "seed": 7,
            "apiservers": ["192.168.0.10:6443"],
            "clusterDomain": "example.internal",
        }))
        .unwrap()
        .into_config();
        assert_eq!(
            config,
            ClusterConfig {
                service_cluster_ip_range: "10.0.0.0/24".into(),
                service_node_port_range: "30000-30100".into(),
                pod_cidrs: vec!["10.244.0.0/16".into()],
                seed: 7,
                apiservers: vec!["192.168.0.10:6443".into()],
                cluster_domain: "example.internal".into(),
                ..ClusterConfig::default()
            }
        );
        let core_name = json!({"serviceClusterIpRange": "10.0.0.0/24", "serviceNodePortRange": "31000-31100"});
        assert_eq!(
            ClusterOptions::from_value(core_name)
                .unwrap()
                .into_config()
                .service_node_port_range,
            "31000-31100"
        );
        let defaults = ClusterOptions::from_value(json!({"serviceClusterIpRange": "10.0.0.0/24", "seed": null}));
        assert_eq!(
            defaults.unwrap().into_config(),
            ClusterConfig {
                service_cluster_ip_range: "10.0.0.0/24".into(),
                ..ClusterConfig::default()
            }
        );
    }

    #[test]
    fn bad_options_and_configs_are_named() {
        let err = start(json!({"serviceClusterIpRange": "10.0.0.0/24", "nodePortRnage": "1-2"})).unwrap_err();
        assert!(
            err.starts_with("invalid Cluster options: unknown field `nodePortRnage`"),
            "{err}"
        );
        let err = start(json!({})).unwrap_err();
        assert!(err.contains("missing field `serviceClusterIpRange`"), "{err}");
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
        let table = kubectl_get_services(&cp, false, "default");
        assert!(table.contains("kubernetes") && !table.contains("team"), "{table}");
        assert!(kubectl_get_services(&cp, true, "default").starts_with("NAMESPACE"));
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
    fn ipvs_tables_and_kubectl_views_come_from_the_core() {
        let mut cp = cluster(json!({"serviceClusterIpRange": "10.96.0.0/24", "seed": 1}));
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples");
        for file in ["services.yaml", "pods.yaml"] {
            apply(&mut cp, &std::fs::read_to_string(root.join(file)).unwrap()).unwrap();
        }
        let info = cp.node_info("node-a").unwrap();
        let config = ProxyConfig {
            node_port_range: cp.config().node_ports,
            ..ProxyConfig::default()
        };
        let table = cp.desired_ipvs_table(&info, &config).table;
        assert!(!table.virtual_servers.is_empty());
        assert_eq!(ipvsadm_save_text(&cp, "node-a").unwrap(), ipvsadm_save(&table));
        assert_eq!(ipvsadm_list_text(&cp, "node-a").unwrap(), ipvsadm_list(&table));
        let slices = kubectl_get(&cp, "endpointslices", false, "default").unwrap();
        assert!(slices.starts_with("NAME") && slices.contains("web-"), "{slices}");
        let endpoints = kubectl_get(&cp, "ep", true, "default").unwrap();
        assert!(
            endpoints.starts_with("NAMESPACE") && endpoints.contains("10.244.1.11:"),
            "{endpoints}"
        );
        assert_eq!(
            list(&cp, "pods", Some("default")).unwrap().as_array().map(Vec::len),
            Some(2)
        );
        assert_eq!(
            kubectl_get(&cp, "frobs", false, "default").unwrap_err(),
            "the server doesn't have a resource type \"frobs\""
        );
    }
}
