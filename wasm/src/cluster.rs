//! The `Cluster` class: one control plane, driven from JavaScript.
//!
//! Every method converts its JS arguments, calls [`crate::ops`] (one call
//! into the core) and converts the result back ([`crate::js`]). Failures
//! throw a JS `Error` whose message is the core's own text.

use crate::js::{from_js, millis, to_js};
use crate::ops;
use js_sys::{Error, Reflect};
use serde_json::Value;
use svcnet_core::console::kube_proxy::KubeProxyView;
use svcnet_core::controlplane::ControlPlane;
use wasm_bindgen::prelude::*;

/// TypeScript types of the data the methods take and return, for the
/// generated `svcnet_wasm.d.ts`.
#[wasm_bindgen(typescript_custom_section)]
const TS_TYPES: &str = r#"
/** The options of `new Cluster(...)`: the core's ClusterConfig, as JSON. */
export interface ClusterOptions {
  /** `--service-cluster-ip-range`: one CIDR, or an IPv4 and an IPv6 one joined by a comma; default `10.96.0.0/12`. */
  serviceClusterIpRange?: string;
  /** `--service-node-port-range`, default `30000-32767` (also accepted as `serviceNodePortRange`). */
  nodePortRange?: string;
  serviceNodePortRange?: string;
  podCidrs?: string[];
  nodeIps?: string[];
  /** Seed of the allocation generator: same seed, same ClusterIPs. */
  seed?: number | bigint;
  /** Apiserver `ip:port`s holding a lease from time 0. */
  apiservers?: string[];
  clusterDomain?: string;
  dnsTtl?: number;
  /** kube-controller-manager's `--max-endpoints-per-slice`, default 100. */
  maxEndpointsPerSlice?: number;
}
/** One service CIDR's usage; counts are decimal strings, band bounds null when there is no split. */
export interface CidrUsage {
  cidr: string;
  family: "IPv4" | "IPv6";
  size: string;
  used: string;
  free: string;
  staticFirst: string | null;
  staticLast: string | null;
  dynamicFirst: string | null;
  dynamicLast: string | null;
}
/** The NodePort range's usage. */
export interface NodePortUsage {
  range: string;
  size: number;
  used: number;
  free: number;
  staticFirst: number | null;
  staticLast: number | null;
  dynamicFirst: number | null;
  dynamicLast: number | null;
}
/** `cluster.usage()`. */
export interface Usage {
  clusterIPs: CidrUsage[];
  nodePorts: NodePortUsage;
}
/** One DNS record. */
export interface DnsRecord {
  name: string;
  ttl: number;
  type: "A" | "AAAA" | "SRV" | "PTR" | "CNAME" | "TXT";
  data: string | { priority: number; weight: number; port: number; target: string };
}
"#;

/// A JS `Error` carrying the core's message.
pub fn error(message: &str) -> JsValue {
    Error::new(message).into()
}

/// A simulated cluster: Services, ServiceCIDRs, the ClusterIP and NodePort
/// allocators, apiserver leases and DNS, all in the core's control plane.
#[wasm_bindgen]
pub struct Cluster {
    pub(crate) cp: ControlPlane,
    /// kube-proxy following the playground's cluster (see
    /// `Cluster.kubeProxy()`); none for other clusters.
    pub(crate) kube_proxy: Option<KubeProxyView>,
}

#[wasm_bindgen]
impl Cluster {
    /// `new Cluster({ serviceClusterIpRange, nodePortRange?, podCidrs?,
    /// nodeIps?, seed?, apiservers?, clusterDomain?, dnsTtl? })`. Throws the
    /// core's message for a bad configuration (e.g. a range below 8
    /// addresses) and names an unknown or mistyped option.
    #[wasm_bindgen(constructor)]
    pub fn new(#[wasm_bindgen(unchecked_param_type = "ClusterOptions")] options: JsValue) -> Result<Cluster, JsValue> {
        let options = from_js(&options).map_err(|e| error(&format!("invalid Cluster options: {e}")))?;
        ops::start(options)
            .map(|cp| Cluster { cp, kube_proxy: None })
            .map_err(|e| error(&e))
    }

    /// `kubectl apply -f -` with YAML or JSON text (one or more objects, or
    /// a `kind: List`). Returns the stored objects with defaults and
    /// allocations filled in. If any object is refused, throws an `Error`
    /// whose message is the core's (one line per refused object) and whose
    /// `applied` property lists the objects accepted all the same.
    #[wasm_bindgen(unchecked_return_type = "any[]")]
    pub fn apply(&mut self, manifest: &str) -> Result<JsValue, JsValue> {
        match ops::apply(&mut self.cp, manifest) {
            Ok(applied) => Ok(to_js(&Value::Array(applied))),
            Err(refused) => {
                let err = error(&refused.message);
                // Setting a property on a fresh Error object cannot fail.
                let _ = Reflect::set(&err, &"applied".into(), &to_js(&Value::Array(refused.applied)));
                Err(err)
            }
        }
    }

    /// `kubectl delete <kind> <name> -n <namespace>`: returns the deleted
    /// object. `kind` is `Service`/`svc`/`services` or `ServiceCIDR`; an
    /// empty or missing namespace is `default`. Deleting
    /// `default/kubernetes` brings it back at once with the same ClusterIP.
    #[wasm_bindgen(js_name = delete)]
    pub fn delete(&mut self, kind: &str, namespace: Option<String>, name: &str) -> Result<JsValue, JsValue> {
        let namespace = namespace.unwrap_or_default();
        ops::delete(&mut self.cp, kind, &namespace, name)
            .map(|o| to_js(&o))
            .map_err(|e| error(&e))
    }

    /// `kubectl get <kind>` as an array of objects: Services of `namespace`,
    /// or of every namespace when it is left out; ServiceCIDR objects.
    #[wasm_bindgen(unchecked_return_type = "any[]")]
    pub fn get(&self, kind: &str, namespace: Option<String>) -> Result<JsValue, JsValue> {
        ops::list(&self.cp, kind, namespace.as_deref())
            .map(|list| to_js(&list))
            .map_err(|e| error(&e))
    }

    /// Moves time forward by `ms` milliseconds (expired apiserver leases
    /// drop out) and returns the `kubernetes` endpoints (`ip:port` strings).
    #[wasm_bindgen(unchecked_return_type = "string[]")]
    pub fn advance(&mut self, ms: f64) -> Result<JsValue, JsValue> {
        let ms = millis(ms, "advance(ms)").map_err(|e| error(&e))?;
        Ok(to_js(&ops::advance(&mut self.cp, ms)))
    }

    /// An apiserver lease heartbeat from `address` (`ip:port`) at time
    /// `nowMs`; returns the `kubernetes` endpoints.
    #[wasm_bindgen(unchecked_return_type = "string[]")]
    pub fn heartbeat(
        &mut self,
        address: &str,
        #[wasm_bindgen(js_name = nowMs)] now_ms: f64,
    ) -> Result<JsValue, JsValue> {
        let now_ms = millis(now_ms, "heartbeat(address, nowMs)").map_err(|e| error(&e))?;
        ops::heartbeat(&mut self.cp, address, now_ms)
            .map(|e| to_js(&e))
            .map_err(|e| error(&e))
    }

    /// The current time in milliseconds, as last given to the cluster (a
    /// `BigInt` above 2^53, which only a snapshot can bring).
    #[wasm_bindgen(getter, unchecked_return_type = "number | bigint")]
    pub fn now(&self) -> JsValue {
        to_js(&Value::from(self.cp.now().as_millis()))
    }

    /// The `kubernetes` Service's ClusterIP: the first address of the
    /// primary service CIDR.
    #[wasm_bindgen(getter, js_name = kubernetesIp)]
    pub fn kubernetes_ip(&self) -> String {
        self.cp.kubernetes_ip().to_string()
    }

    /// What kube-apiserver would have warned about at start (such as the
    /// fallback to 10.0.0.0/24 when no service CIDR is given).
    #[wasm_bindgen(getter, unchecked_return_type = "string[]")]
    pub fn warnings(&self) -> JsValue {
        to_js(&ops::json(&self.cp.config().warnings))
    }

    /// The `kubernetes` Service's endpoints (`ip:port` strings).
    #[wasm_bindgen(js_name = kubernetesEndpoints, unchecked_return_type = "string[]")]
    pub fn kubernetes_endpoints(&self) -> JsValue {
        to_js(&ops::kubernetes_endpoints(&self.cp))
    }

    /// The DNS records of every Service, as objects
    /// `{ name, ttl, type, data }` (SRV data is `{ priority, weight, port, target }`).
    #[wasm_bindgen(js_name = dnsRecords, unchecked_return_type = "DnsRecord[]")]
    pub fn dns_records(&self) -> JsValue {
        to_js(&ops::json(&self.cp.dns_records()))
    }

    /// The DNS records as zone-file text.
    #[wasm_bindgen(js_name = dnsZone)]
    pub fn dns_zone(&self) -> String {
        self.cp.dns_zone()
    }

    /// The whole state as an object; `Cluster.restore` takes it back. The
    /// allocation generator's state is a `BigInt` when it exceeds 2^53, so
    /// use `snapshotJson()` for text (`JSON.stringify` refuses BigInts).
    pub fn snapshot(&self) -> JsValue {
        to_js(&ops::json(&self.cp.snapshot()))
    }

    /// The whole state as JSON text: the core's `Snapshot` through
    /// `serde_json`, the same text a native caller gets.
    #[wasm_bindgen(js_name = snapshotJson)]
    pub fn snapshot_json(&self) -> Result<String, JsValue> {
        serde_json::to_string(&self.cp.snapshot()).map_err(|e| error(&e.to_string()))
    }

    /// A cluster rebuilt from `cluster.snapshot()` (an object) or
    /// `cluster.snapshotJson()` (a string); throws the core's message when
    /// the snapshot does not fit its own configuration.
    pub fn restore(
        #[wasm_bindgen(unchecked_param_type = "object | string")] snapshot: JsValue,
    ) -> Result<Cluster, JsValue> {
        let cp = match snapshot.as_string() {
            Some(text) => ops::restore_json(&text),
            None => from_js(&snapshot)
                .map_err(|e| format!("invalid snapshot: {e}"))
                .and_then(ops::restore),
        };
        cp.map(|cp| Cluster { cp, kube_proxy: None }).map_err(|e| error(&e))
    }

    /// One pass of the ClusterIP repair loop; returns its events.
    #[wasm_bindgen(unchecked_return_type = "any[]")]
    pub fn repair(&mut self) -> JsValue {
        to_js(&ops::json(&self.cp.repair()))
    }

    /// Range usage for drawing the range map: `{ clusterIPs: [per CIDR:
    /// { cidr, family, size, used, free, staticFirst, staticLast,
    /// dynamicFirst, dynamicLast }], nodePorts: { range, size, used, free,
    /// staticFirst, ... } }`. ClusterIP counts are decimal strings (a /64
    /// has more addresses than a JS number holds exactly). Which addresses
    /// are taken is in `snapshot().clusterIPs.ranges[].allocated` as runs.
    #[wasm_bindgen(unchecked_return_type = "Usage")]
    pub fn usage(&self) -> JsValue {
        to_js(&ops::usage(&self.cp))
    }

    /// `ipvsadm-save -n` on node `nodeName` once kube-proxy (or
    /// `ipvs-agent`) has programmed it: the same text as `ipvs-agent plan
    /// --format ipvsadm-save`. The node's addresses come from its Node
    /// object, if there is one (NodePort virtual servers live on them).
    #[wasm_bindgen(js_name = ipvsadmSave)]
    pub fn ipvsadm_save(&self, #[wasm_bindgen(js_name = nodeName)] node_name: &str) -> Result<String, JsValue> {
        ops::ipvsadm_save_text(&self.cp, node_name).map_err(|e| error(&e))
    }

    /// `ipvsadm -Ln` on node `nodeName`, as for `ipvsadmSave`.
    #[wasm_bindgen(js_name = ipvsadmList)]
    pub fn ipvsadm_list(&self, #[wasm_bindgen(js_name = nodeName)] node_name: &str) -> Result<String, JsValue> {
        ops::ipvsadm_list_text(&self.cp, node_name).map_err(|e| error(&e))
    }
}
