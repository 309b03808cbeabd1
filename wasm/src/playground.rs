//! What the browser playground needs beyond the general API, each one call
//! into the core: the console ([`svcnet_core::console`]: a `kubectl` or
//! `ipvsadm` command line in, what the tool prints out, with a note for
//! learners and what the page does next), the words Tab completes, and the
//! node's IPVS table as data for the packet walk.

use crate::cluster::{error, Cluster};
use crate::js::{millis, to_js};
use crate::ops::{json, node_table};
use svcnet_core::console;
use svcnet_core::console::kube_proxy::KubeProxyView;
use svcnet_core::time::Time;
use wasm_bindgen::prelude::*;

#[wasm_bindgen]
impl Cluster {
    /// The playground's cluster on `serviceClusterIpRange` with `seed`: one
    /// node with its apiservers as `controlPlane` says: `single` (kubeadm:
    /// `node-1`, 192.168.49.2, one apiserver on it, port 6443; the
    /// default), `ha` (three), `managed` (one load-balancer address on
    /// 443), `minikube` (the node `minikube`, apiserver on 8443) or `kind`
    /// (`kind-control-plane` on 172.18.0.2, port 6443). Throws the core's
    /// message for a refused range.
    pub fn playground(
        #[wasm_bindgen(js_name = serviceClusterIpRange)] service_cluster_ip_range: &str,
        seed: u64,
        #[wasm_bindgen(js_name = controlPlane)] control_plane: Option<String>,
    ) -> Result<Cluster, JsValue> {
        let word = control_plane.unwrap_or_default();
        let shape = console::preset::ControlPlaneShape::from_word(&word).ok_or_else(|| {
            error(&format!(
                "controlPlane {word:?}: must be single, ha, managed, minikube or kind"
            ))
        })?;
        let cp = console::preset::cluster(service_cluster_ip_range, seed, shape).map_err(|e| error(&e.to_string()))?;
        let mut kube_proxy = KubeProxyView::new(&cp, shape.node_name());
        kube_proxy.follow(&cp);
        Ok(Cluster {
            cp,
            kube_proxy: Some(kube_proxy),
        })
    }

    /// Runs one console line (`kubectl ...`, `ipvsadm -Ln`, `help`, ...)
    /// and returns `{ ok, text, note?, effect }`: `text` is what the tool
    /// prints, `note` a line of plain words on what happened, `effect` one
    /// of `nothing`, `clear`, `readStdin` (ask for the text of `kubectl
    /// apply -f -`, then run the line again with it as `stdin`), `read` or
    /// `change`.
    #[wasm_bindgen(unchecked_return_type = "{ok: boolean, text: string, note?: string, effect: string}")]
    pub fn kubectl(&mut self, line: &str, stdin: Option<String>) -> JsValue {
        let outcome = console::run(&mut self.cp, line, stdin.as_deref());
        self.follow();
        to_js(&json(&outcome))
    }

    /// kube-proxy on the playground's node as it follows the cluster: the
    /// watch events it received (`{ at, type, kind, object,
    /// resourceVersion }`), its cache, its syncs (`{ at, full, events,
    /// operations, count }`: changes within `minSyncPeriodMs` coalesce into
    /// one sync), the events waiting and when the next sync is due. `null`
    /// for a cluster not made by `Cluster.playground`.
    #[wasm_bindgen(js_name = kubeProxy)]
    pub fn kube_proxy(&mut self) -> JsValue {
        self.follow();
        match &self.kube_proxy {
            Some(view) => to_js(&json(&view.report())),
            None => JsValue::NULL,
        }
    }

    /// Lets kube-proxy catch up with the cluster.
    fn follow(&mut self) {
        if let Some(view) = &mut self.kube_proxy {
            view.follow(&self.cp);
        }
    }

    /// Moves the cluster's clock to `ms` milliseconds after its start, as
    /// time passes on a live cluster: the apiservers renew their leases on
    /// the way, and every AGE grows. Time never goes back.
    pub fn tick(&mut self, ms: f64) -> Result<(), JsValue> {
        let ms = millis(ms, "ms").map_err(|e| error(&e))?;
        console::preset::advance(&mut self.cp, Time(ms));
        self.follow();
        Ok(())
    }

    /// svcnet's nftables table on the node, line by line (`[{ text,
    /// highlight, purpose? }]`): the set elements of Service `service`
    /// (`namespace/name`) highlighted, and each rule with what it is for.
    /// Throws when the cluster has no node.
    #[wasm_bindgen(js_name = nftView, unchecked_return_type = "{text: string, highlight: boolean, purpose?: string}[]")]
    pub fn nft_view(&self, service: Option<String>) -> Result<JsValue, JsValue> {
        console::modes::svcnet_lines(&self.cp, service.as_deref())
            .map(|lines| to_js(&json(&lines)))
            .map_err(|e| error(&e))
    }

    /// One connection to Service `service` (`namespace/name`) on `port`
    /// (the first when none), from `client` (`pod`, `endpoint` or
    /// `outside`), after `turn` earlier connections (none: the stage
    /// without a packet): the endpoints, the real server IPVS picks and
    /// each hop's addresses, with the masquerade rule where svcnet's table
    /// rewrites the source. Throws for an unknown Service or client.
    #[wasm_bindgen(unchecked_return_type = "object")]
    pub fn walk(&self, service: &str, port: Option<u16>, client: &str, turn: Option<u32>) -> Result<JsValue, JsValue> {
        let kind = console::walk::ClientKind::from_word(client)
            .ok_or_else(|| error(&format!("client {client:?}: must be pod, endpoint or outside")))?;
        let request = console::walk::WalkRequest {
            service,
            port,
            client: kind,
            turn: turn.map(u64::from),
        };
        console::walk::walk(&self.cp, &request)
            .map(|w| to_js(&json(&w)))
            .map_err(|e| error(&e.to_string()))
    }

    /// The words Tab completes in the console: commands, kinds, flags and
    /// the names of the objects in the default namespace.
    #[wasm_bindgen(unchecked_return_type = "string[]")]
    pub fn vocabulary(&self) -> JsValue {
        to_js(&json(&console::vocabulary(&self.cp)))
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
    use crate::ops::start;
    use serde_json::json;
    use svcnet_core::console::{run, Effect};

    #[test]
    fn the_console_answers_as_kubectl_does() {
        let mut cp = start(json!({"serviceClusterIpRange": "10.0.0.0/29", "seed": 1})).unwrap();
        let created = run(&mut cp, "kubectl create svc clusterip web --tcp=80", None);
        assert_eq!(
            (created.text.as_str(), created.effect),
            ("service/web created", Effect::Change)
        );
        let value = crate::ops::json(&created);
        assert_eq!(value["effect"], "change");
        assert!(value["note"].as_str().unwrap().contains("app=web"));
        assert_eq!(
            run(&mut cp, "kubectl delete svc web", None).text,
            "service \"web\" deleted"
        );
    }
}
