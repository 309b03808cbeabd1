//! What the browser playground needs beyond the general API, each one call
//! into the core: kubectl's own result lines (`service/web created`,
//! `service "web" deleted`) with the reason kubectl shows for a refusal, and
//! the node's IPVS table as data for the packet walk.
//!
//! Outcomes come back as data, `{ ok, text, reason? }`: `text` is the
//! core's line or error message, `reason` the one kubectl prints in
//! `Error from server (<reason>): ...` ([`ApiError::reason`]).

use crate::cluster::{error, Cluster};
use crate::js::to_js;
use crate::ops::{json, node_table};
use serde_json::{json, Value};
use svcnet_core::controlplane::{ApiError, ControlPlane};
use wasm_bindgen::prelude::*;

/// One outcome as data: kubectl's line, or the error's text and reason.
fn outcome(result: Result<String, ApiError>) -> Value {
    match result {
        Ok(line) => json!({ "ok": true, "text": line }),
        Err(e) => json!({ "ok": false, "text": e.to_string(), "reason": e.reason() }),
    }
}

/// `kubectl apply -f -`: one outcome per object, in manifest order; a
/// manifest that does not parse is one outcome.
pub fn kubectl_apply(cp: &mut ControlPlane, manifest: &str) -> Value {
    match cp.apply_manifest(manifest) {
        Ok(results) => Value::Array(
            results
                .into_iter()
                .map(|r| outcome(r.map(|a| a.kubectl_line())))
                .collect(),
        ),
        Err(e) => Value::Array(vec![outcome(Err(e))]),
    }
}

/// `kubectl delete <kind> <name>`: `service "web" deleted`, or the error.
pub fn kubectl_delete(cp: &mut ControlPlane, kind: &str, namespace: &str, name: &str) -> Value {
    outcome(
        cp.delete(kind, namespace, name)
            .map(|o| format!("{} {:?} deleted", o.kubectl_resource(), o.name())),
    )
}

#[wasm_bindgen]
impl Cluster {
    /// `kubectl apply -f -` as kubectl reports it: one `{ ok, text, reason? }`
    /// per object (`service/web created`, or the refusal and its reason).
    #[wasm_bindgen(js_name = kubectlApply, unchecked_return_type = "{ok: boolean, text: string, reason?: string}[]")]
    pub fn kubectl_apply(&mut self, manifest: &str) -> JsValue {
        to_js(&kubectl_apply(&mut self.cp, manifest))
    }

    /// `kubectl delete <kind> <name>` as kubectl reports it:
    /// `{ ok, text, reason? }`. Kinds and namespaces as for `delete`.
    #[wasm_bindgen(js_name = kubectlDelete, unchecked_return_type = "{ok: boolean, text: string, reason?: string}")]
    pub fn kubectl_delete(&mut self, kind: &str, namespace: Option<String>, name: &str) -> JsValue {
        to_js(&kubectl_delete(&mut self.cp, kind, namespace.as_deref().unwrap_or(""), name))
    }

    /// The IPVS table of node `nodeName` (as for `ipvsadmSave`) as data:
    /// `{ virtualServers: { "TCP/10.96.0.1:443": { scheduler, flags,
    /// timeout, netmask, realServers: { "ip:port": { forward, weight, ... } } } },
    /// addresses: [...] }`.
    #[wasm_bindgen(js_name = ipvsTable)]
    pub fn ipvs_table(&self, #[wasm_bindgen(js_name = nodeName)] node_name: &str) -> Result<JsValue, JsValue> {
        node_table(&self.cp, node_name)
            .map(|t| to_js(&json(&t)))
            .map_err(|e| error(&e))
    }
}
