//! svcnet's side: the core's control plane, started with the same flags as
//! the real apiserver and driven with the same objects.

use crate::case::ClusterFlags;
use crate::objects::{identity, plural};
use serde_json::{json, Value};
use svcnet_core::api::manifest::{parse_manifests, Object};
use svcnet_core::controlplane::{ClusterConfig, ControlPlane};
use svcnet_core::kubectl;
use svcnet_core::proxy::kube_proxy_config;

/// svcnet's control plane for one case.
pub struct Ours {
    /// The control plane.
    pub cp: ControlPlane,
}

impl Ours {
    /// Starts the control plane with the case's flags; `apiserver` is the
    /// real apiserver's advertised `ip:port`, so both `kubernetes`
    /// Services have the same endpoint.
    pub fn start(flags: &ClusterFlags, apiserver: &str) -> Result<Ours, String> {
        let cp = ControlPlane::new(config(flags.service_range(), flags.node_port_range(), apiserver))
            .map_err(|e| e.to_string())?;
        Ok(Ours { cp })
    }

    /// Applies one object (create and server-side apply both land here:
    /// svcnet's apply creates or updates).
    pub fn apply(&mut self, object: &Value) -> Result<(), String> {
        let text = object.to_string();
        let objects = parse_manifests(&text).map_err(|e| strip_document(&e.to_string()))?;
        for object in objects {
            self.cp.apply_object(object).map_err(|e| api_message(&e.to_string()))?;
        }
        Ok(())
    }

    /// Creates one object: an error if it exists, as `POST` gives.
    pub fn create(&mut self, object: &Value) -> Result<(), String> {
        let (kind, namespace, name) = identity(object);
        let namespace = if namespace.is_empty() { "default" } else { namespace };
        if !name.is_empty() && self.get(kind, namespace, name).is_some() {
            return Err(format!("{} {name:?} already exists", plural(kind)));
        }
        self.apply(object)
    }

    /// Deletes an object.
    pub fn delete(&mut self, kind: &str, namespace: &str, name: &str) -> Result<(), String> {
        self.cp
            .delete(kind, namespace, name)
            .map(|_| ())
            .map_err(|e| api_message(&e.to_string()))
    }

    /// Reads an object as JSON.
    pub fn get(&self, kind: &str, namespace: &str, name: &str) -> Option<Value> {
        let cp = &self.cp;
        let value = match kind {
            "Service" => serde_json::to_value(cp.service(namespace, name)?),
            "Pod" => serde_json::to_value(cp.pod(namespace, name)?),
            "Node" => serde_json::to_value(cp.node(name)?),
            "EndpointSlice" => serde_json::to_value(cp.endpoint_slice(namespace, name)?),
            "ServiceCIDR" => serde_json::to_value(cp.service_cidrs().find(|c| c.metadata.name == name)?),
            "Endpoints" => serde_json::to_value(cp.endpoints(namespace, name)?),
            _ => return None,
        };
        value.ok()
    }

    /// A Pod made terminating: `deletionTimestamp` set while a finalizer
    /// holds it.
    pub fn terminate(&mut self, namespace: &str, name: &str) -> Result<(), String> {
        let mut pod = self
            .cp
            .pod(namespace, name)
            .cloned()
            .ok_or_else(|| format!("pods {name:?} not found"))?;
        pod.metadata.deletion_timestamp = Some("2026-01-01T00:00:00Z".to_string());
        self.cp
            .apply_object(Object::Pod(Box::new(pod)))
            .map(|_| ())
            .map_err(|e| api_message(&e.to_string()))
    }

    /// The EndpointSlices of a Service, as JSON.
    pub fn slices(&self, namespace: &str, service: &str) -> Vec<Value> {
        self.cp
            .endpoint_slices_for(namespace, service)
            .into_iter()
            .filter_map(|s| serde_json::to_value(s).ok())
            .collect()
    }

    /// The `kubectl get ...` table svcnet prints for these words, in the
    /// case's namespace.
    pub fn kubectl(&self, words: &[&str], namespace: &str) -> Result<String, String> {
        let wide = words.windows(2).any(|w| w == ["-o", "wide"]);
        match words.get(..2) {
            Some(["get", "svc" | "service" | "services"]) => {
                let services: Vec<_> = self
                    .cp
                    .services()
                    .filter(|s| s.metadata.namespace_or_default() == namespace)
                    .collect();
                Ok(if wide {
                    kubectl::services_table_wide(&services, false, None)
                } else {
                    kubectl::services_table(&services, false, None)
                })
            }
            Some(["get", "endpointslices" | "endpointslice"]) => {
                let slices: Vec<_> = self
                    .cp
                    .endpoint_slices()
                    .filter(|s| s.metadata.namespace_or_default() == namespace)
                    .collect();
                Ok(kubectl::endpoint_slices_table(&slices, false, None))
            }
            Some(["get", "endpoints" | "ep"]) => {
                let all = self.cp.all_endpoints();
                let endpoints: Vec<_> = all
                    .iter()
                    .filter(|e| e.metadata.namespace_or_default() == namespace)
                    .collect();
                Ok(kubectl::endpoints_table(&endpoints, false, None))
            }
            _ => Err(format!(
                "the suite has no svcnet table for `kubectl {}`",
                words.join(" ")
            )),
        }
    }

    /// How svcnet reads a kube-proxy configuration file: the error, or
    /// the unknown fields it ignores (see `Real::kube_proxy_reads`).
    pub fn kube_proxy_reads(text: &str) -> Value {
        match kube_proxy_config::read(text) {
            Ok(read) => json!({"accepted": true, "unknownFields": read.unknown_fields}),
            Err(e) => json!({"error": e.to_string()}),
        }
    }

    /// The error svcnet gives when started with this
    /// `--service-cluster-ip-range` (`none`: the flag left out), or `None`
    /// if it starts.
    pub fn start_error(range: &str) -> Option<String> {
        let range = if range == "none" { "" } else { range };
        ControlPlane::new(config(range, "30000-32767", "10.0.2.2:6443"))
            .err()
            .map(|e| e.to_string())
    }
}

fn config(range: &str, node_ports: &str, apiserver: &str) -> ClusterConfig {
    ClusterConfig {
        service_cluster_ip_range: if range == "none" {
            String::new()
        } else {
            range.to_string()
        },
        service_node_port_range: node_ports.to_string(),
        apiservers: vec![apiserver.to_string()],
        ..ClusterConfig::default()
    }
}

/// svcnet's errors carry kubectl's `The ` in front of `Service "x" is
/// invalid`; the API's Status message does not.
fn api_message(message: &str) -> String {
    message.strip_prefix("The ").unwrap_or(message).to_string()
}

/// Manifest errors name the document (`document 1: ...`); the suite sends
/// one object at a time, as the API takes them.
fn strip_document(message: &str) -> String {
    match message.split_once(": ") {
        Some((head, rest)) if head.starts_with("document ") => rest.to_string(),
        _ => message.to_string(),
    }
}
