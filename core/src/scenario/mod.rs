//! Behaviour vectors: a configuration, an ordered list of actions and the
//! expected results, as data (YAML), run against the control plane.
//!
//! The runner is part of the core so that the native test and the
//! WebAssembly build execute the very same code on the very same files and
//! produce byte-identical reports.
//!
//! Expectations match partially: an expected object names only the keys it
//! cares about (a `null` asks for the key to be absent), an expected list
//! must have the same length and match element by element, and scalars must
//! be equal. A step with neither `expect` nor `expectError` must succeed.
//!
//! Rules that do not fix a single value are written with matchers, objects
//! with one `$` key:
//! - `{$set: [a, b]}`: a list with these items in any order;
//! - `{$inRange: [lo, hi]}`: an IP address or a number (or a number in a
//!   string) between lo and hi;
//! - `{$each: m}`: a list whose every item matches `m`;
//! - `{$len: n}`: a list of n items;
//! - `{$contains: "text"}`: a string containing the text.

use crate::api::pod::ContainerPort;
use crate::api::Resource;
use crate::collections::SortedMap;
use crate::controlplane::snapshot::Snapshot;
use crate::controlplane::{ClusterConfig, ControlPlane};
use crate::proxy::scenario::{ProxySim, ProxyStep};
use crate::time::Time;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::net::SocketAddr;

mod pods;
mod views;

/// One vector file.
#[derive(Clone, Debug, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Vector {
    /// What the vector shows.
    pub description: String,
    /// The cluster configuration; defaults as in [`ClusterConfig`].
    #[serde(default)]
    pub config: ClusterConfig,
    /// The exact error starting the cluster must give, if it must fail.
    #[serde(default)]
    pub expect_config_error: Option<String>,
    /// The actions, in order.
    #[serde(default)]
    pub steps: Vec<Step>,
}

/// One action with its expectations: a mapping with the action's key
/// (`apply: ...`) beside `expect` and `expectError`.
#[derive(Clone, Debug)]
pub struct Step {
    /// What to do.
    pub action: Action,
    /// The expected output (partial match).
    pub expect: Option<Value>,
    /// The expected error message: exact text, or a matcher such as
    /// `{$contains: "..."}`.
    pub expect_error: Option<Value>,
}

impl<'de> Deserialize<'de> for Step {
    /// Takes `expect` and `expectError` out (`null` is none) and decodes
    /// what is left, the one action key, as an [`Action`] through
    /// [`crate::api::decode::from_value`]. (A derived `#[serde(flatten)]`
    /// would buffer the step and decode every action's types a second
    /// time, from that buffer: in the wasm build, a copy of the snapshot
    /// and configuration decoders.)
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Step, D::Error> {
        let mut step = serde_json::Map::deserialize(deserializer)?;
        let mut take = |key: &str| step.remove(key).filter(|v| !v.is_null());
        let (expect, expect_error) = (take("expect"), take("expectError"));
        let action = crate::api::decode::from_value::<Action>(Value::Object(step))
            .map_err(serde::de::Error::custom)?
            .value;
        Ok(Step {
            action,
            expect,
            expect_error,
        })
    }
}

/// The actions a vector can take.
#[derive(Clone, Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum Action {
    /// Starts a new cluster with this configuration, replacing the current
    /// one; output: the `kubernetes` ClusterIP and the families.
    Start(Box<ClusterConfig>),
    /// `kubectl apply -f -` with this manifest text; output: the stored objects.
    Apply(String),
    /// `kubectl delete`; output: the deleted object.
    Delete(ObjectRef),
    /// `kubectl scale deployment`; output: the Deployment.
    Scale(Scale),
    /// `kubectl get` (Service, ServiceCIDR, Pod, Node, Deployment, EndpointSlice;
    /// `endpoints` gives the `kubernetes` apiserver addresses); output: the
    /// object, or the list when no name is given.
    Get(ObjectRef),
    /// Creates `count` ClusterIP Services `<prefix>-<i>` with port 80;
    /// output: their ClusterIPs. Stops at the first error.
    CreateServices(CreateServices),
    /// An apiserver lease heartbeat; output: the `kubernetes` endpoints.
    Heartbeat(Heartbeat),
    /// Moves time to `now` (milliseconds); output: the `kubernetes` endpoints.
    Advance(At),
    /// Takes a snapshot and keeps it; output: the snapshot.
    Snapshot(Empty),
    /// Restores the kept snapshot (or the one given), optionally under
    /// another configuration; output: whether the state equals the one
    /// snapshotted.
    Restore(Restore),
    /// Runs one repair pass; output: the events.
    Repair(Empty),
    /// Output: the DNS zone text.
    Dns(Empty),
    /// Output: ClusterIP and NodePort range usage.
    Usage(Empty),
    /// Creates `count` Pods `<prefix>-<i>`; output: their first IPs. Stops
    /// at the first error.
    CreatePods(CreatePods),
    /// The EndpointSlices of a Service, of a namespace, or of the cluster;
    /// output: the slices (sorted by namespace and name), or the
    /// `kubectl get endpointslices` table.
    EndpointSlices(SliceQuery),
    /// The legacy `v1/Endpoints` view of one Service, of a namespace, or of
    /// the cluster; output: the object(s), or the `kubectl get endpoints`
    /// table.
    Endpoints(EndpointsQuery),
    /// The Service environment variables of a Pod; output: a map from name
    /// to value.
    Env(PodRef),
    // --- proxy (kube-proxy IPVS mode on one simulated node), see crate::proxy::scenario ---
    /// The node's desired IPVS table; output: `save`, `list`, `table`, `warnings`.
    IpvsTable(Box<ProxyStep>),
    /// Plans from the simulated kernel table to the desired one and applies
    /// the plan; output: `operations`, `draining`, `claimed`, `save`, `list`, `table`, `warnings`.
    Plan(Box<ProxyStep>),
}

/// Names an object.
#[derive(Clone, Debug, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ObjectRef {
    /// `Service`, `ServiceCIDR`.
    pub kind: String,
    /// Namespace (default `default`).
    #[serde(default)]
    pub namespace: Option<String>,
    /// Name; `get` without it lists.
    #[serde(default)]
    pub name: Option<String>,
}

/// See [`Action::Scale`].
#[derive(Clone, Debug, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Scale {
    /// Namespace (default `default`).
    #[serde(default)]
    pub namespace: Option<String>,
    /// The Deployment's name.
    pub name: String,
    /// The new `spec.replicas`.
    pub replicas: i32,
}

/// See [`Action::CreateServices`].
#[derive(Clone, Debug, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct CreateServices {
    /// How many.
    pub count: usize,
    /// Name prefix.
    pub prefix: String,
}

/// See [`Action::CreatePods`]. Pod `i` (from 0) gets, from each CIDR of
/// `podCidrs`, the address at offset `firstOffset + i`, runs on
/// `nodes[i % nodes.len()]` (if any), and is Running and Ready unless
/// `ready: false`.
#[derive(Clone, Debug, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct CreatePods {
    /// How many.
    pub count: usize,
    /// Name prefix.
    pub prefix: String,
    /// Namespace (default `default`).
    #[serde(default)]
    pub namespace: Option<String>,
    /// Labels of every Pod.
    #[serde(default)]
    pub labels: SortedMap<String, String>,
    /// Nodes to spread the Pods over, round-robin.
    #[serde(default)]
    pub nodes: Vec<String>,
    /// One CIDR per family the Pods get an address from; default
    /// `[10.244.0.0/16]`.
    #[serde(default)]
    pub pod_cidrs: Vec<String>,
    /// Offset of the first Pod's address in each CIDR (default 1).
    #[serde(default)]
    pub first_offset: Option<u64>,
    /// Whether the Pods are Ready (default true).
    #[serde(default)]
    pub ready: Option<bool>,
    /// Container ports of the Pods' single container.
    #[serde(default)]
    pub container_ports: Vec<ContainerPort>,
}

/// See [`Action::EndpointSlices`].
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct SliceQuery {
    /// Namespace; without it (and without `service`), every namespace.
    #[serde(default)]
    pub namespace: Option<String>,
    /// Only the slices of this Service (namespace default `default`).
    #[serde(default)]
    pub service: Option<String>,
    /// Output the kubectl table instead of the objects.
    #[serde(default)]
    pub table: bool,
}

/// See [`Action::Endpoints`].
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct EndpointsQuery {
    /// Namespace; without it (and without `name`), every namespace.
    #[serde(default)]
    pub namespace: Option<String>,
    /// The Service's name (namespace default `default`).
    #[serde(default)]
    pub name: Option<String>,
    /// Output the kubectl table instead of the object(s).
    #[serde(default)]
    pub table: bool,
}

/// Names a Pod.
#[derive(Clone, Debug, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct PodRef {
    /// Namespace (default `default`).
    #[serde(default)]
    pub namespace: Option<String>,
    /// Name.
    pub name: String,
}

/// See [`Action::Heartbeat`].
#[derive(Clone, Debug, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Heartbeat {
    /// The apiserver's `ip:port`.
    pub address: String,
    /// When, in milliseconds.
    pub now: u64,
}

/// A point in time, in milliseconds.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct At {
    /// When, in milliseconds.
    pub now: u64,
}

/// No parameters.
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Empty {}

/// See [`Action::Restore`].
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Restore {
    /// Restore under this configuration instead of the snapshot's.
    #[serde(default)]
    pub config: Option<ClusterConfig>,
    /// Restore this snapshot instead of the kept one.
    #[serde(default)]
    pub snapshot: Option<Box<Snapshot>>,
}

/// What one step produced and how it compared.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct StepReport {
    /// 1-based step number.
    pub step: usize,
    /// The action's name.
    pub action: String,
    /// The output, if the step produced one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub output: Option<Value>,
    /// The error, if the step failed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// Every way the result differs from the expectation.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub failures: Vec<String>,
}

/// The report of one vector.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct VectorReport {
    /// The vector's description.
    pub description: String,
    /// Failures outside any step (configuration).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub failures: Vec<String>,
    /// Per-step results.
    pub steps: Vec<StepReport>,
}

impl VectorReport {
    /// True when nothing differed from the expectations.
    pub fn passed(&self) -> bool {
        self.failures.is_empty() && self.steps.iter().all(|s| s.failures.is_empty())
    }

    /// Every failure, prefixed with its step.
    pub fn all_failures(&self) -> Vec<String> {
        let mut out = self.failures.clone();
        for s in &self.steps {
            out.extend(
                s.failures
                    .iter()
                    .map(|f| format!("step {} ({}): {f}", s.step, s.action)),
            );
        }
        out
    }
}

/// Parses a vector file (YAML or JSON) and runs it. The text is read into
/// a JSON value first and decoded from there
/// ([`crate::api::decode::from_value`]), as manifests and snapshots are, so
/// the types a vector holds (configurations, snapshots) are decoded by the
/// same code as everywhere else.
pub fn run_vector_text(text: &str) -> Result<VectorReport, String> {
    crate::api::limits::check_text(text).map_err(|e| format!("invalid vector: {e}"))?;
    let value = crate::api::value::decode_text(text).map_err(|e| format!("invalid vector: {e}"))?;
    let vector = crate::api::decode::from_value::<Vector>(value).map_err(|e| format!("invalid vector: {e}"))?;
    Ok(run_vector(&vector.value))
}

/// Runs a vector against a fresh control plane.
pub fn run_vector(vector: &Vector) -> VectorReport {
    let mut report = VectorReport {
        description: vector.description.clone(),
        failures: Vec::new(),
        steps: Vec::new(),
    };
    let mut cp = match (ControlPlane::new(vector.config.clone()), &vector.expect_config_error) {
        (Ok(cp), None) => cp,
        (Ok(_), Some(want)) => {
            report.failures.push(format!(
                "expected configuration error {want:?}, but the cluster started"
            ));
            return report;
        }
        (Err(e), Some(want)) => {
            if &e.to_string() != want {
                report.failures.push(format!(
                    "configuration error: expected {want:?}, got {:?}",
                    e.to_string()
                ));
            }
            return report;
        }
        (Err(e), None) => {
            report.failures.push(format!("configuration error: {e}"));
            return report;
        }
    };
    let mut kept: Option<Snapshot> = None;
    let mut proxy = ProxySim::new();
    for (i, step) in vector.steps.iter().enumerate() {
        let (name, result) = perform(&mut cp, &mut kept, &mut proxy, &step.action);
        let (output, error) = match result {
            Ok(v) => (Some(v), None),
            Err((partial, e)) => (partial, Some(e)),
        };
        let mut failures = Vec::new();
        match (&step.expect_error, &error) {
            (Some(want), Some(got)) => compare(want, &Value::String(got.clone()), "error", &mut failures),
            (Some(want), None) => failures.push(format!("expected error {want}, but the step succeeded")),
            (None, Some(got)) => failures.push(format!("unexpected error {got:?}")),
            _ => {}
        }
        if let Some(want) = &step.expect {
            match &output {
                Some(got) => compare(want, got, "output", &mut failures),
                None => failures.push("expected output, got none".to_string()),
            }
        }
        report.steps.push(StepReport {
            step: i + 1,
            action: name.to_string(),
            output,
            error,
            failures,
        });
    }
    report
}

type StepResult = Result<Value, (Option<Value>, String)>;

fn to_value<T: Serialize>(t: &T) -> Value {
    // Serialising the core's own plain data types to a JSON value cannot
    // fail: they have string keys and no custom serialisers that error.
    crate::api::value::to_value(t)
}

fn endpoints(cp: &ControlPlane) -> Value {
    to_value(
        &cp.apiserver_leases()
            .endpoints()
            .iter()
            .map(ToString::to_string)
            .collect::<Vec<_>>(),
    )
}

fn perform(
    cp: &mut ControlPlane,
    kept: &mut Option<Snapshot>,
    proxy: &mut ProxySim,
    action: &Action,
) -> (&'static str, StepResult) {
    match action {
        Action::Start(config) => {
            let res = match ControlPlane::new((**config).clone()) {
                Ok(new) => {
                    *cp = new;
                    let families: Vec<&str> = cp.families().iter().map(|f| f.as_str()).collect();
                    Ok(serde_json::json!({ "kubernetesIP": cp.kubernetes_ip().to_string(), "families": families }))
                }
                Err(e) => Err((None, e.to_string())),
            };
            ("start", res)
        }
        Action::Apply(text) => ("apply", apply(cp, text)),
        Action::Delete(r) => {
            let res = cp.delete(
                &r.kind,
                r.namespace.as_deref().unwrap_or("default"),
                r.name.as_deref().unwrap_or_default(),
            );
            ("delete", res.map(|o| to_value(&o)).map_err(|e| (None, e.to_string())))
        }
        Action::Scale(r) => {
            let res = cp.scale(r.namespace.as_deref().unwrap_or("default"), &r.name, r.replicas);
            ("scale", res.map(|d| to_value(&d)).map_err(|e| (None, e.to_string())))
        }
        Action::Get(r) => ("get", get(cp, r)),
        Action::CreateServices(c) => ("createServices", create_services(cp, c)),
        Action::Heartbeat(h) => {
            let res = match h.address.parse::<SocketAddr>() {
                Ok(addr) => {
                    cp.heartbeat(addr, Time(h.now));
                    Ok(endpoints(cp))
                }
                Err(_) => Err((None, format!("invalid apiserver address {:?}", h.address))),
            };
            ("heartbeat", res)
        }
        Action::Advance(at) => {
            cp.advance_to(Time(at.now));
            ("advance", Ok(endpoints(cp)))
        }
        Action::Snapshot(_) => {
            let snap = cp.snapshot();
            let value = to_value(&snap);
            *kept = Some(snap);
            ("snapshot", Ok(value))
        }
        Action::Restore(r) => ("restore", restore(cp, kept, r)),
        Action::Repair(_) => ("repair", Ok(to_value(&cp.repair()))),
        Action::Dns(_) => ("dns", Ok(Value::String(cp.dns_zone()))),
        Action::Usage(_) => {
            let usage = serde_json::json!({
                "clusterIPs": to_value(&cp.cluster_ip_allocator().usage()),
                "nodePorts": to_value(&cp.node_port_allocator().usage()),
            });
            ("usage", Ok(usage))
        }
        Action::CreatePods(c) => ("createPods", pods::create_pods(cp, c)),
        Action::EndpointSlices(q) => ("endpointSlices", Ok(views::endpoint_slices(cp, q))),
        Action::Endpoints(q) => ("endpoints", views::endpoints(cp, q)),
        Action::Env(r) => ("env", views::env(cp, r)),
        Action::IpvsTable(p) => ("ipvsTable", proxy.table(cp, p).map_err(|e| (None, e))),
        Action::Plan(p) => ("plan", proxy.plan(cp, p).map_err(|e| (None, e))),
    }
}

fn apply(cp: &mut ControlPlane, text: &str) -> StepResult {
    let results = cp.apply_manifest(text).map_err(|e| (None, e.to_string()))?;
    let mut objects = Vec::new();
    let mut errors = Vec::new();
    for r in results {
        match r {
            Ok(applied) => objects.push(to_value(&applied.object)),
            Err(e) => errors.push(e.to_string()),
        }
    }
    if errors.is_empty() {
        Ok(Value::Array(objects))
    } else {
        Err((Some(Value::Array(objects)), errors.join("\n")))
    }
}

fn get(cp: &ControlPlane, r: &ObjectRef) -> StepResult {
    let ns = r.namespace.as_deref().unwrap_or("default");
    // A vector's `endpoints` are the `kubernetes` Service's, from the
    // apiserver leases.
    if r.kind.eq_ignore_ascii_case("endpoints") {
        return Ok(endpoints(cp));
    }
    let resource = Resource::from_word(&r.kind)
        .ok_or_else(|| (None, format!("the server doesn't have a resource type {:?}", r.kind)))?;
    match &r.name {
        Some(name) if resource != Resource::ServiceCidr => cp
            .get(resource, ns, name)
            .map(|o| to_value(&o))
            .map_err(|e| (None, e.to_string())),
        _ => Ok(to_value(&cp.list(resource, resource.namespaced().then_some(ns)))),
    }
}

fn create_services(cp: &mut ControlPlane, c: &CreateServices) -> StepResult {
    let mut ips = Vec::new();
    for i in 0..c.count {
        let mut svc = crate::api::Service::default();
        svc.metadata.name = format!("{}-{i}", c.prefix);
        svc.spec.ports.push(crate::api::service::ServicePort {
            port: 80,
            ..Default::default()
        });
        match cp.apply_service(svc) {
            Ok(s) => ips.push(Value::String(s.spec.cluster_ip)),
            Err(e) => return Err((Some(Value::Array(ips)), e.to_string())),
        }
    }
    Ok(Value::Array(ips))
}

fn restore(cp: &mut ControlPlane, kept: &Option<Snapshot>, r: &Restore) -> StepResult {
    let snap = match (&r.snapshot, kept) {
        (Some(s), _) => (**s).clone(),
        (None, Some(s)) => s.clone(),
        (None, None) => {
            return Err((
                None,
                "no snapshot to restore: take one with a snapshot step first".into(),
            ))
        }
    };
    let restored = match &r.config {
        Some(config) => ControlPlane::restore_with_config(config.clone(), snap.clone()),
        None => ControlPlane::restore(snap.clone()),
    };
    match restored {
        Ok(new) => {
            let identical = new.snapshot() == snap;
            *cp = new;
            Ok(serde_json::json!({ "identical": identical }))
        }
        Err(e) => Err((None, e.to_string())),
    }
}

/// Partial comparison of `want` against `got`, recording differences.
pub fn compare(want: &Value, got: &Value, path: &str, failures: &mut Vec<String>) {
    if let Some((name, arg)) = matcher(want) {
        if let Err(why) = apply_matcher(name, arg, got, path, failures) {
            failures.push(format!("{path}: {why}"));
        }
        return;
    }
    match (want, got) {
        (Value::Object(w), Value::Object(g)) => {
            for (k, wv) in w {
                let p = format!("{path}.{k}");
                match (wv, g.get(k)) {
                    (Value::Null, None | Some(Value::Null)) => {}
                    (Value::Null, Some(gv)) => failures.push(format!("{p}: expected absent, got {gv}")),
                    (_, None) => failures.push(format!("{p}: missing, expected {wv}")),
                    (_, Some(gv)) => compare(wv, gv, &p, failures),
                }
            }
        }
        (Value::Array(w), Value::Array(g)) => {
            if w.len() != g.len() {
                failures.push(format!("{path}: expected {} items, got {}: {got}", w.len(), g.len()));
                return;
            }
            for (i, (wv, gv)) in w.iter().zip(g).enumerate() {
                compare(wv, gv, &format!("{path}[{i}]"), failures);
            }
        }
        _ if want == got => {}
        _ => failures.push(format!("{path}: expected {want}, got {got}")),
    }
}

fn matcher(want: &Value) -> Option<(&str, &Value)> {
    let obj = want.as_object()?;
    let (k, v) = obj.iter().next()?;
    (obj.len() == 1 && k.starts_with('$')).then_some((k.as_str(), v))
}

fn apply_matcher(name: &str, arg: &Value, got: &Value, path: &str, failures: &mut Vec<String>) -> Result<(), String> {
    match name {
        "$set" => {
            let (Some(w), Some(g)) = (arg.as_array(), got.as_array()) else {
                return Err(format!("$set needs lists, got {got}"));
            };
            let mut w: Vec<String> = w.iter().map(ToString::to_string).collect();
            let mut g: Vec<String> = g.iter().map(ToString::to_string).collect();
            crate::sort::sort(&mut w);
            crate::sort::sort(&mut g);
            if w != g {
                return Err(format!("expected the set {}, got {got}", arg));
            }
        }
        "$inRange" => {
            let bounds = arg
                .as_array()
                .filter(|a| a.len() == 2)
                .ok_or("$inRange needs [lo, hi]")?;
            let key = |v: &Value| -> Option<u128> {
                match v {
                    Value::Number(n) => n.as_u64().map(u128::from),
                    Value::String(s) => s.parse::<u128>().ok().or_else(|| {
                        s.parse::<std::net::IpAddr>().ok().map(|ip| match ip {
                            std::net::IpAddr::V4(a) => u128::from(u32::from(a)),
                            std::net::IpAddr::V6(a) => u128::from(a),
                        })
                    }),
                    _ => None,
                }
            };
            let (lo, hi, v) = (key(&bounds[0]), key(&bounds[1]), key(got));
            match (lo, hi, v) {
                (Some(lo), Some(hi), Some(v)) if lo <= v && v <= hi => {}
                _ => return Err(format!("expected a value in [{}, {}], got {got}", bounds[0], bounds[1])),
            }
        }
        "$each" => {
            let items = got.as_array().ok_or_else(|| format!("$each needs a list, got {got}"))?;
            for (i, item) in items.iter().enumerate() {
                compare(arg, item, &format!("{path}[{i}]"), failures);
            }
        }
        "$len" => {
            let n = got
                .as_array()
                .map(Vec::len)
                .ok_or_else(|| format!("$len needs a list, got {got}"))?;
            if Some(n as u64) != arg.as_u64() {
                return Err(format!("expected {arg} items, got {n}: {got}"));
            }
        }
        "$contains" => {
            let (Some(w), Some(g)) = (arg.as_str(), got.as_str()) else {
                return Err(format!("$contains needs strings, got {got}"));
            };
            if !g.contains(w) {
                return Err(format!("expected text containing {w:?}, got {g:?}"));
            }
        }
        other => return Err(format!("unknown matcher {other}")),
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn steps_hold_one_action_beside_their_expectations() {
        let step = |value: Value| crate::api::decode::from_value::<Step>(value).map(|d| d.value);
        let apply = step(json!({"apply": "kind: List\n", "expect": null, "expectError": "x"})).unwrap();
        assert!(matches!(apply.action, Action::Apply(ref text) if text == "kind: List\n"));
        assert_eq!((apply.expect, apply.expect_error), (None, Some(json!("x"))));
        assert!(matches!(step(json!({"usage": {}})).unwrap().action, Action::Usage(_)));
        let unknown = step(json!({"frob": {}, "expect": 1})).unwrap_err().to_string();
        assert!(unknown.starts_with("unknown variant `frob`"), "{unknown}");
    }

    fn check(want: Value, got: Value) -> Vec<String> {
        let mut f = Vec::new();
        compare(&want, &got, "output", &mut f);
        f
    }

    #[test]
    fn partial_objects_and_absent_keys() {
        assert!(check(json!({"a": 1}), json!({"a": 1, "b": 2})).is_empty());
        assert_eq!(
            check(json!({"a": 2}), json!({"a": 1})),
            vec!["output.a: expected 2, got 1"]
        );
        assert_eq!(
            check(json!({"b": null}), json!({"b": 2})),
            vec!["output.b: expected absent, got 2"]
        );
        assert_eq!(check(json!([1]), json!([1, 2])).len(), 1);
    }

    #[test]
    fn matchers() {
        assert!(check(json!({"$set": ["b", "a"]}), json!(["a", "b"])).is_empty());
        assert_eq!(check(json!({"$set": ["a"]}), json!(["a", "a"])).len(), 1);
        assert!(check(json!({"$inRange": ["10.96.0.17", "10.96.0.254"]}), json!("10.96.0.17")).is_empty());
        assert_eq!(
            check(json!({"$inRange": ["10.96.0.17", "10.96.0.254"]}), json!("10.96.0.16")).len(),
            1
        );
        assert!(check(json!({"$each": {"$inRange": [1, 3]}}), json!([1, 2, 3])).is_empty());
        assert_eq!(check(json!({"$each": {"$inRange": [1, 3]}}), json!([1, 4])).len(), 1);
        assert_eq!(check(json!({"$len": 2}), json!([1])).len(), 1);
        assert!(check(json!({"$contains": "IN A"}), json!("x IN A 1")).is_empty());
        assert_eq!(
            check(json!({"$nope": 1}), json!(1)),
            vec!["output: unknown matcher $nope"]
        );
    }
}
