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
        to_js(&kubectl_delete(
            &mut self.cp,
            kind,
            namespace.as_deref().unwrap_or(""),
            name,
        ))
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ops::start;

    fn cluster() -> ControlPlane {
        start(json!({"serviceClusterIpRange": "10.0.0.0/29", "seed": 1})).unwrap()
    }

    const SVC: &str = "apiVersion: v1\nkind: Service\nmetadata: {name: web}\nspec: {ports: [{port: 80}]}\n";

    #[test]
    fn apply_reports_each_object_as_kubectl_does() {
        let mut cp = cluster();
        let manifest = format!(
            "{SVC}---\napiVersion: v1\nkind: Service\nmetadata: {{name: Bad}}\nspec: {{ports: [{{port: 80}}]}}\n"
        );
        let out = kubectl_apply(&mut cp, &manifest);
        assert_eq!(out[0], json!({"ok": true, "text": "service/web created"}));
        assert_eq!(out[1]["ok"], false);
        assert_eq!(out[1]["reason"], "Invalid");
        assert!(out[1]["text"]
            .as_str()
            .unwrap()
            .starts_with("The Service \"Bad\" is invalid: metadata.name"));
        assert_eq!(kubectl_apply(&mut cp, SVC)[0]["text"], "service/web unchanged");
        let broken = kubectl_apply(&mut cp, "kind: [\n");
        assert_eq!(broken[0]["reason"], "BadRequest");
        for i in 0..4 {
            kubectl_apply(&mut cp, &SVC.replace("web", &format!("s{i}")));
        }
        let full = kubectl_apply(&mut cp, &SVC.replace("web", "full"));
        assert_eq!(
            full[0],
            json!({"ok": false, "reason": "InternalError", "text": "Internal error occurred: failed to allocate a serviceIP for Service \"full\": range is full"})
        );
    }

    #[test]
    fn delete_reports_the_line_or_not_found() {
        let mut cp = cluster();
        kubectl_apply(&mut cp, SVC);
        assert_eq!(
            kubectl_delete(&mut cp, "svc", "", "web"),
            json!({"ok": true, "text": "service \"web\" deleted"})
        );
        assert_eq!(
            kubectl_delete(&mut cp, "svc", "default", "web"),
            json!({"ok": false, "reason": "NotFound", "text": "services \"web\" not found"})
        );
    }
}
