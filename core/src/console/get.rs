//! `kubectl get` printed as kubectl prints it: the table of each kind
//! (`-o wide` with its extra columns), `-o yaml`, `-o json` and `-o name`,
//! one `NotFound` line per missing name, and `No resources found in default
//! namespace.` when there is nothing.

use super::command::Output;
use super::selector::Selector;
use super::{jsonpath, yaml};
use crate::api::{Node, Object, Pod, Resource};
use crate::controlplane::{ApiError, ControlPlane};
use crate::kubectl::{
    age, deployments_table, endpoint_slices_table, endpoints_table, services_table, services_table_wide, table,
};
use crate::time::Time;
use serde::Serialize;
use serde_json::{json, Value};

/// The warning kube-apiserver attaches to every `v1/Endpoints` request
/// (1.33 and later), as kubectl prints it.
pub const ENDPOINTS_DEPRECATED: &str =
    "Warning: v1 Endpoints is deprecated in v1.33+; use discovery.k8s.io/v1 EndpointSlice";

/// What `kubectl get` asked for.
pub struct Get<'a> {
    /// The kind.
    pub resource: Resource,
    /// The names asked for; every object when empty.
    pub names: &'a [String],
    /// How to print.
    pub output: Output,
    /// `-A`.
    pub all_namespaces: bool,
    /// `-n`.
    pub namespace: &'a str,
    /// `-l`.
    pub selector: Option<&'a Selector>,
}

/// The text kubectl prints, and whether every name was found.
pub fn get(cp: &ControlPlane, request: &Get) -> (bool, String) {
    let namespace = (!request.all_namespaces).then_some(request.namespace);
    let mut objects = cp.list(request.resource, namespace);
    if let Some(selector) = request.selector {
        objects.retain(|o| selector.matches(&o.meta().labels));
    }
    let mut errors = Vec::new();
    if !request.names.is_empty() {
        for name in request.names {
            if !objects.iter().any(|o| o.name() == name) {
                let missing = ApiError::NotFound {
                    resource: request.resource.qualified_plural().to_string(),
                    name: name.clone(),
                };
                errors.push(format!("Error from server (NotFound): {missing}"));
            }
        }
        objects.retain(|o| request.names.iter().any(|n| n == o.name()));
    }
    let text = match (objects.is_empty(), request.names.is_empty()) {
        (true, true) if request.all_namespaces || !request.resource.namespaced() => "No resources found".to_string(),
        (true, true) => format!("No resources found in {} namespace.", request.namespace),
        (true, false) => String::new(),
        (false, _) => match print(&objects, request, cp.now()) {
            Ok(text) => text,
            Err(error) => return (false, error),
        },
    };
    // kube-apiserver sends this warning with every v1 Endpoints request
    // since 1.33, and kubectl prints it first.
    let warning = (request.resource == Resource::Endpoints).then_some(ENDPOINTS_DEPRECATED);
    let lines: Vec<&str> = (warning.into_iter())
        .chain([text.trim_end()])
        .chain(errors.iter().map(String::as_str))
        .filter(|l| !l.is_empty())
        .collect();
    (errors.is_empty(), lines.join("\n"))
}

fn print(objects: &[Object], request: &Get, now: Time) -> Result<String, String> {
    let data = || match objects {
        [one] if request.names.len() == 1 => to_value(one),
        _ => json!({
            "apiVersion": "v1",
            "items": objects.iter().map(to_value).collect::<Vec<_>>(),
            "kind": "List",
            "metadata": {"resourceVersion": ""},
        }),
    };
    Ok(match &request.output {
        Output::Yaml => yaml::to_text(&data()),
        Output::Json => json_text(&data()),
        Output::JsonPath(template) => {
            return jsonpath::render(template, &data())
                .map_err(|e| format!("error: error parsing jsonpath {template}, {e}"))
        }
        Output::Name => (objects.iter())
            .map(|o| format!("{}/{}", o.kubectl_resource(), o.name()))
            .collect::<Vec<_>>()
            .join("\n"),
        Output::Table | Output::Wide => tables(objects, request, now),
    })
}

/// An object as JSON data, with `apiVersion` and `kind` always set.
fn to_value(object: &Object) -> Value {
    let mut value = crate::api::value::to_value(object);
    if let Some(map) = value.as_object_mut() {
        let resource = object.resource();
        map.insert("apiVersion".into(), resource.api_version().into());
        map.insert("kind".into(), resource.kind().into());
    }
    value
}

/// JSON indented by four spaces, as kubectl writes it.
fn json_text(value: &Value) -> String {
    let mut out = Vec::new();
    let formatter = serde_json::ser::PrettyFormatter::with_indent(b"    ");
    let mut serializer = serde_json::Serializer::with_formatter(&mut out, formatter);
    match value.serialize(&mut serializer) {
        Ok(()) => String::from_utf8(out).unwrap_or_default(),
        Err(_) => String::new(),
    }
}

fn tables(objects: &[Object], request: &Get, now: Time) -> String {
    let all = request.all_namespaces;
    let now = Some(now);
    let wide = matches!(request.output, Output::Wide);
    macro_rules! of {
        ($variant:ident) => {
            objects
                .iter()
                .filter_map(|o| match o {
                    Object::$variant(x) => Some(x.as_ref()),
                    _ => None,
                })
                .collect::<Vec<_>>()
        };
    }
    match request.resource {
        Resource::Service if wide => services_table_wide(&of!(Service), all, now),
        Resource::Service => services_table(&of!(Service), all, now),
        Resource::Endpoints => endpoints_table(&of!(Endpoints), all, now),
        Resource::EndpointSlice => endpoint_slices_table(&of!(EndpointSlice), all, now),
        Resource::Pod => pods_table(&of!(Pod), all, wide, now),
        Resource::Node => nodes_table(&of!(Node), wide, now),
        Resource::ServiceCidr => {
            let mut rows = vec![cells(&["NAME", "CIDRS", "AGE"])];
            rows.extend((of!(ServiceCidr).into_iter()).map(|c| {
                let age = now.map(|now| age(&c.metadata, now)).unwrap_or_default();
                cells(&[&c.metadata.name, &c.spec.cidrs.join(","), &age])
            }));
            table(&rows)
        }
        Resource::Deployment => deployments_table(&of!(Deployment), all, wide, now),
    }
}

/// `kubectl get nodes`: NAME STATUS ROLES AGE VERSION, and with `-o wide`
/// the addresses, OS image, kernel and container runtime from the Node's
/// status.
fn nodes_table(nodes: &[&Node], wide: bool, now: Option<Time>) -> String {
    let mut header = vec!["NAME", "STATUS", "ROLES", "AGE", "VERSION"];
    if wide {
        header.extend([
            "INTERNAL-IP",
            "EXTERNAL-IP",
            "OS-IMAGE",
            "KERNEL-VERSION",
            "CONTAINER-RUNTIME",
        ]);
    }
    let mut rows = vec![cells(&header)];
    for node in nodes {
        let text = |value: Option<&Value>| value.and_then(Value::as_str).unwrap_or("<unknown>").to_string();
        let ready = (node
            .status
            .extra
            .get("conditions")
            .and_then(Value::as_array)
            .into_iter()
            .flatten())
        .find(|c| c["type"] == "Ready")
        .map_or("Unknown", |c| if c["status"] == "True" { "Ready" } else { "NotReady" });
        let mut status = ready.to_string();
        if node.spec.get("unschedulable") == Some(&Value::Bool(true)) {
            status.push_str(",SchedulingDisabled");
        }
        let roles: Vec<&str> = (node.metadata.labels.keys())
            .filter_map(|k| k.strip_prefix("node-role.kubernetes.io/"))
            .filter(|r| !r.is_empty())
            .collect();
        let info = node.status.extra.get("nodeInfo");
        let mut row = vec![
            node.metadata.name.clone(),
            status,
            if roles.is_empty() {
                "<none>".into()
            } else {
                roles.join(",")
            },
            now.map(|now| age(&node.metadata, now)).unwrap_or_default(),
            text(info.and_then(|i| i.get("kubeletVersion"))),
        ];
        if wide {
            let address = |kind: &str| {
                (node.status.addresses.iter())
                    .find(|a| a.address_type == kind)
                    .map_or("<none>".to_string(), |a| a.address.clone())
            };
            row.extend([
                address("InternalIP"),
                address("ExternalIP"),
                text(info.and_then(|i| i.get("osImage"))),
                text(info.and_then(|i| i.get("kernelVersion"))),
                text(info.and_then(|i| i.get("containerRuntimeVersion"))),
            ]);
        }
        rows.push(row);
    }
    table(&rows)
}

fn cells(texts: &[&str]) -> Vec<String> {
    texts.iter().map(|t| t.to_string()).collect()
}

/// `kubectl get pods`: NAME READY STATUS RESTARTS AGE, and with `-o wide` IP
/// NODE NOMINATED NODE READINESS GATES.
fn pods_table(pods: &[&Pod], all_namespaces: bool, wide: bool, now: Option<Time>) -> String {
    let mut header = vec!["NAME", "READY", "STATUS", "RESTARTS"];
    if now.is_some() {
        header.push("AGE");
    }
    if wide {
        header.extend(["IP", "NODE", "NOMINATED NODE", "READINESS GATES"]);
    }
    if all_namespaces {
        header.insert(0, "NAMESPACE");
    }
    let mut rows = vec![cells(&header)];
    for pod in pods {
        let containers = pod.spec.containers.len().max(1);
        let ready = if pod.is_ready() { containers } else { 0 };
        let mut row = vec![
            pod.metadata.name.clone(),
            format!("{ready}/{containers}"),
            pod.status.phase.clone().unwrap_or_else(|| "Pending".into()),
            "0".into(),
        ];
        row.extend(now.map(|now| age(&pod.metadata, now)));
        if wide {
            let ip = pod.ips().into_iter().next().unwrap_or_else(|| "<none>".into());
            let node = pod.spec.node_name.clone().unwrap_or_else(|| "<none>".into());
            row.extend([ip, node, "<none>".into(), "<none>".into()]);
        }
        if all_namespaces {
            row.insert(0, pod.metadata.namespace_or_default().to_string());
        }
        rows.push(row);
    }
    table(&rows)
}
