//! Runs one step on both sides and returns both outputs, normalized.

use crate::case::{CreateServices, GetStep, ObjectName, Step};
use crate::normalize::{self, Ranges};
use crate::objects::{self, cluster_scoped, identity};
use crate::ours::Ours;
use crate::real::{resource_path, RealCluster};
use serde::Deserialize;
use serde_json::{json, Value};
use std::collections::BTreeMap;
use std::time::{Duration, Instant};

/// How long a read waits for kube-controller-manager to catch up.
const SETTLE: Duration = Duration::from_secs(20);

/// How long a read of EndpointSlices waits: a Service's slices are written
/// once per Pod event, and on a loaded machine 130 Pods took the controller
/// longer than [`SETTLE`] (a CI run failed `endpointslices-past-100` so).
const SLICE_SETTLE: Duration = Duration::from_secs(60);

/// A case in progress: both sides, its namespace, what it sent, and what
/// must be cleaned up after it.
pub struct CaseRun<'a> {
    /// The real control plane.
    pub real: &'a RealCluster,
    /// svcnet's.
    pub ours: Ours,
    /// The case's namespace (objects without one go there).
    pub namespace: String,
    /// Ranges allocated values are described against.
    pub ranges: Ranges,
    /// The last object the case sent, by `kind/namespace/name`.
    sent: BTreeMap<String, Value>,
    /// Pods held by the suite's finalizer.
    held_pods: Vec<(String, String)>,
    /// Cluster-scoped objects the case created: `(kind, name)`.
    cluster_objects: Vec<(String, String)>,
    /// Namespaces the case's objects named, created on the real side.
    namespaces: Vec<String>,
    /// The step under way has a difference listed in
    /// KNOWN_DIFFERENCES.md: the real side is read until it stops
    /// changing, not until it equals svcnet's (which it never will).
    listed_difference: bool,
}

/// How long the real side must stay the same for a step with a listed
/// difference to take its reading.
const LISTED_STABLE: Duration = Duration::from_secs(5);

/// Both sides' output of a step.
pub struct Outputs {
    /// Real Kubernetes'.
    pub real: Value,
    /// svcnet's.
    pub ours: Value,
}

impl<'a> CaseRun<'a> {
    /// Starts a case: creates its namespace on the real side.
    pub fn new(real: &'a RealCluster, ours: Ours, namespace: String, ranges: Ranges) -> Result<Self, String> {
        let ns = json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": namespace}});
        let answer = real.request("POST", "/api/v1/namespaces", "application/json", Some(&ns.to_string()))?;
        if !answer.ok() {
            return Err(format!("creating namespace {namespace}: {}", answer.message()));
        }
        Ok(CaseRun {
            real,
            ours,
            namespace,
            ranges,
            sent: BTreeMap::new(),
            held_pods: Vec::new(),
            cluster_objects: Vec::new(),
            namespaces: Vec::new(),
            listed_difference: false,
        })
    }

    /// Removes what the case left on the real side: the suite's finalizers,
    /// cluster-scoped objects, and the namespace.
    pub fn cleanup(&self) {
        for (ns, name) in &self.held_pods {
            if let Ok(path) = resource_path("Pod", ns, name) {
                let _ = self.real.request(
                    "PATCH",
                    &path,
                    "application/merge-patch+json",
                    Some(r#"{"metadata":{"finalizers":null}}"#),
                );
            }
        }
        for (kind, name) in &self.cluster_objects {
            if let Ok(path) = resource_path(kind, "", name) {
                let _ = self.real.request("DELETE", &path, "", None);
            }
        }
        for ns in self.namespaces.iter().chain([&self.namespace]) {
            let _ = self
                .real
                .request("DELETE", &format!("/api/v1/namespaces/{ns}"), "", None);
        }
    }

    /// Creates a namespace an object names (other than the case's own and
    /// `default`), once.
    fn ensure_namespace(&mut self, namespace: &str) -> Result<(), String> {
        if namespace.is_empty() || namespace == "default" || namespace == self.namespace {
            return Ok(());
        }
        if self.namespaces.iter().any(|n| n == namespace) {
            return Ok(());
        }
        let ns = json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": namespace}});
        let answer = self
            .real
            .request("POST", "/api/v1/namespaces", "application/json", Some(&ns.to_string()))?;
        if !answer.ok() && answer.code != 409 {
            return Err(format!("creating namespace {namespace}: {}", answer.message()));
        }
        self.namespaces.push(namespace.to_string());
        Ok(())
    }

    /// Runs one step on both sides.
    /// `listed_difference`: KNOWN_DIFFERENCES.md lists this step.
    pub fn run(&mut self, step: &Step, listed_difference: bool) -> Result<Outputs, String> {
        self.listed_difference = listed_difference;
        match step {
            Step::Create(text) => self.write(text, Write::Create),
            Step::Apply(text) => self.write(text, Write::Apply),
            Step::Pods(text) => self.write(text, Write::Pods),
            Step::Delete(name) => self.delete(name),
            Step::Get(get) => self.get(get),
            Step::Terminate(name) => self.terminate(name),
            Step::Slices(name) => self.slices(name),
            Step::Endpoints(name) => self.endpoints(name),
            Step::Kubectl(words) => self.kubectl(words),
            Step::CreateServices(c) => self.create_services(c),
            Step::StartApiserver(range) => Ok(Outputs {
                real: start_outcome(self.real.start_error(range)?),
                ours: start_outcome(Ours::start_error(range)),
            }),
            Step::KubeProxyConfig(text) => Ok(Outputs {
                real: self.real.kube_proxy_reads(text)?,
                ours: Ours::kube_proxy_reads(text),
            }),
        }
    }

    fn namespace_of(&self, name: &ObjectName) -> String {
        match (&name.namespace, cluster_scoped(&name.kind)) {
            (_, true) => String::new(),
            (Some(ns), false) => ns.clone(),
            (None, false) => self.namespace.clone(),
        }
    }

    /// The manifest's objects, each given the case's namespace unless it
    /// names one (or is cluster-scoped).
    fn objects(&self, text: &str) -> Result<Vec<Value>, String> {
        let mut out = Vec::new();
        for doc in serde_yaml_ng::Deserializer::from_str(text) {
            let value = Value::deserialize(doc).map_err(|e| format!("the case's manifest: {e}"))?;
            if value.is_null() {
                continue;
            }
            // The items of a `kind: List` are objects of their own.
            let items = match value.get("kind").and_then(Value::as_str) {
                Some("List") => value
                    .get("items")
                    .and_then(Value::as_array)
                    .cloned()
                    .unwrap_or_default(),
                _ => vec![value],
            };
            for value in items {
                out.push(self.in_namespace(value));
            }
        }
        Ok(out)
    }

    /// The object, given the case's namespace unless it names one (or is
    /// cluster-scoped).
    fn in_namespace(&self, mut value: Value) -> Value {
        let kind = value
            .get("kind")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_string();
        if !cluster_scoped(&kind) {
            if let Some(meta) = value.get_mut("metadata").and_then(Value::as_object_mut) {
                meta.entry("namespace").or_insert_with(|| json!(self.namespace));
            }
        }
        value
    }

    fn write(&mut self, text: &str, how: Write) -> Result<Outputs, String> {
        let (mut real, mut ours) = (Vec::new(), Vec::new());
        for object in self.objects(text)? {
            let (kind, namespace, name) = identity(&object);
            let id = objects::id(kind, namespace, name);
            let real_result = self.real_write(&object, how)?;
            let ours_result = match how {
                Write::Create | Write::Pods => self.ours.create(&object),
                Write::Apply => self.ours.apply(&object),
            };
            // A name made from `generateName` is random on both sides.
            let generated = |result: Result<(), String>| match object.pointer("/metadata/generateName") {
                Some(Value::String(prefix)) if name.is_empty() => {
                    result.map_err(|e| normalize::mask_generated_names(&e, prefix))
                }
                _ => result,
            };
            real.push(outcome(&id, generated(real_result)));
            ours.push(outcome(&id, generated(ours_result)));
            self.sent.insert(id, object);
        }
        Ok(Outputs {
            real: Value::Array(real),
            ours: Value::Array(ours),
        })
    }

    fn real_write(&mut self, object: &Value, how: Write) -> Result<Result<(), String>, String> {
        let (kind, namespace, name) = identity(object);
        self.ensure_namespace(namespace)?;
        // A kubelet, not a user, writes a Pod's status: create, then patch.
        let how = match (how, kind) {
            (Write::Apply, "Pod" | "Node") if object.get("status").is_some() => Write::Pods,
            _ => how,
        };
        let answer = match how {
            Write::Create | Write::Pods => {
                let path = resource_path(kind, namespace, "")?;
                self.real.request(
                    "POST",
                    &format!("{path}?fieldValidation=Strict"),
                    "application/json",
                    Some(&object.to_string()),
                )?
            }
            Write::Apply => {
                let result = self.real.kubectl_apply(&object.to_string())?;
                if result.is_ok() {
                    self.note_created(object, kind, name);
                }
                return Ok(result);
            }
        };
        if !answer.ok() {
            return Ok(Err(answer.message()));
        }
        if cluster_scoped(kind) && !self.cluster_objects.iter().any(|(k, n)| k == kind && n == name) {
            self.cluster_objects.push((kind.to_string(), name.to_string()));
        }
        if kind == "ServiceCIDR" {
            if let Some(cidrs) = object.pointer("/spec/cidrs").and_then(Value::as_array) {
                self.ranges.cidrs.extend(
                    cidrs
                        .iter()
                        .filter_map(|c| c.as_str()?.parse::<ipnetwork::IpNetwork>().ok()),
                );
            }
        }
        // A kubelet sets a Pod's (and a Node's) status; here the suite does.
        if matches!(how, Write::Pods) {
            if let Some(status) = object.get("status") {
                let path = format!("{}/status", resource_path(kind, namespace, name)?);
                let patch = json!({ "status": status }).to_string();
                let answer = self
                    .real
                    .request("PATCH", &path, "application/merge-patch+json", Some(&patch))?;
                if !answer.ok() {
                    return Ok(Err(format!("setting the status: {}", answer.message())));
                }
            }
        }
        Ok(Ok(()))
    }

    /// Remembers what a successful write made that outlives the namespace
    /// (cluster-scoped objects) or that allocated values are described
    /// against (ServiceCIDR ranges).
    fn note_created(&mut self, object: &Value, kind: &str, name: &str) {
        if cluster_scoped(kind) && !self.cluster_objects.iter().any(|(k, n)| k == kind && n == name) {
            self.cluster_objects.push((kind.to_string(), name.to_string()));
        }
        if kind == "ServiceCIDR" {
            if let Some(cidrs) = object.pointer("/spec/cidrs").and_then(Value::as_array) {
                let parsed = cidrs
                    .iter()
                    .filter_map(|c| c.as_str()?.parse::<ipnetwork::IpNetwork>().ok());
                self.ranges.cidrs.extend(parsed);
            }
        }
    }

    fn delete(&mut self, name: &ObjectName) -> Result<Outputs, String> {
        let ns = self.namespace_of(name);
        // A kubelet finishes a Pod's deletion at once when it has no
        // containers to stop; with no kubelet here, the suite does.
        let mut path = resource_path(&name.kind, &ns, &name.name)?;
        if name.kind == "Pod" {
            path.push_str("?gracePeriodSeconds=0");
        }
        let answer = self.real.request("DELETE", &path, "", None)?;
        let real = if answer.ok() { Ok(()) } else { Err(answer.message()) };
        let id = format!("{}/{}", name.kind, name.name);
        Ok(Outputs {
            real: outcome(&id, real),
            ours: outcome(&id, self.ours.delete(&name.kind, &ns, &name.name)),
        })
    }

    fn get(&mut self, get: &GetStep) -> Result<Outputs, String> {
        let name = &get.object;
        let ns = self.namespace_of(name);
        let id = objects::id(&name.kind, &ns, &name.name);
        let asked = self.sent.get(&id);
        let normalize = |v: &Value| -> Value {
            let v = match name.kind.as_str() {
                "Service" => normalize::service(v, asked, &self.ranges),
                "Endpoints" => normalize::endpoints(v),
                _ => normalize::object(v),
            };
            match &get.path {
                Some(path) => normalize::at_path(&v, path),
                None => v,
            }
        };
        let ours = match self.ours.get(&name.kind, &ns, &name.name) {
            Some(v) => normalize(&v),
            None => json!({"error": format!("{} {:?} not found", objects::resource(&name.kind), name.name)}),
        };
        let path = resource_path(&name.kind, &ns, &name.name)?;
        // Controllers write parts of some objects (a ServiceCIDR's status,
        // its removal once released), so the real side may need a moment.
        self.settle(SETTLE, ours, || {
            let answer = self.real.get(&path)?;
            Ok(if answer.ok() {
                normalize(&answer.body)
            } else {
                json!({"error": answer.message()})
            })
        })
    }

    fn terminate(&mut self, name: &ObjectName) -> Result<Outputs, String> {
        let ns = self.namespace_of(name);
        let path = resource_path("Pod", &ns, &name.name)?;
        let hold = r#"{"metadata":{"finalizers":["svcnet.io/conformance-hold"]}}"#;
        let answer = self
            .real
            .request("PATCH", &path, "application/merge-patch+json", Some(hold))?;
        let real = if !answer.ok() {
            Err(answer.message())
        } else {
            self.held_pods.push((ns.clone(), name.name.clone()));
            let answer = self.real.request("DELETE", &path, "", None)?;
            if answer.ok() {
                Ok(())
            } else {
                Err(answer.message())
            }
        };
        let id = format!("Pod/{}", name.name);
        Ok(Outputs {
            real: outcome(&id, real),
            ours: outcome(&id, self.ours.terminate(&ns, &name.name)),
        })
    }

    /// Reads the real side until it equals svcnet's or `patience` passes:
    /// the controllers work asynchronously. For a step with a listed
    /// difference, until it has not changed for [`LISTED_STABLE`] (or
    /// `patience` passes).
    fn settle(
        &self,
        patience: Duration,
        ours: Value,
        read: impl Fn() -> Result<Value, String>,
    ) -> Result<Outputs, String> {
        let deadline = Instant::now() + patience;
        let mut last: Option<(Value, Instant)> = None;
        loop {
            let real = read()?;
            let now = Instant::now();
            let stable = match &last {
                Some((previous, since)) if *previous == real => now >= *since + LISTED_STABLE,
                _ => {
                    last = Some((real.clone(), now));
                    false
                }
            };
            if real == ours || now > deadline || (self.listed_difference && stable) {
                return Ok(Outputs { real, ours });
            }
            std::thread::sleep(Duration::from_millis(250));
        }
    }

    fn slices(&mut self, name: &ObjectName) -> Result<Outputs, String> {
        let ns = self.namespace_of(name);
        let ours = normalize::slices(&self.ours.slices(&ns, &name.name));
        let path = format!(
            "{}?labelSelector=kubernetes.io/service-name%3D{}",
            resource_path("EndpointSlice", &ns, "")?,
            name.name
        );
        self.settle(SLICE_SETTLE, ours, || {
            let answer = self.real.get(&path)?;
            let items = answer
                .body
                .get("items")
                .and_then(Value::as_array)
                .cloned()
                .unwrap_or_default();
            Ok(normalize::slices(&items))
        })
    }

    fn endpoints(&mut self, name: &ObjectName) -> Result<Outputs, String> {
        let ns = self.namespace_of(name);
        let ours = match self.ours.get("Endpoints", &ns, &name.name) {
            Some(v) => normalize::endpoints(&v),
            None => json!({"error": format!("endpoints {:?} not found", name.name)}),
        };
        let path = resource_path("Endpoints", &ns, &name.name)?;
        self.settle(SETTLE, ours, || {
            let answer = self.real.get(&path)?;
            Ok(if answer.ok() {
                normalize::endpoints(&answer.body)
            } else {
                json!({"error": answer.message()})
            })
        })
    }

    fn kubectl(&mut self, words: &str) -> Result<Outputs, String> {
        let words: Vec<&str> = words.split_whitespace().collect();
        let mask = words.get(1).is_some_and(|w| w.starts_with("endpointslice"));
        let ours = normalize::table(&self.ours.kubectl(&words, &self.namespace)?, mask, &self.ranges);
        let mut args = vec!["-n", self.namespace.as_str()];
        args.extend(&words);
        self.settle(SETTLE, ours, || {
            Ok(match self.real.kubectl(&args) {
                Ok(text) => normalize::table(&text, mask, &self.ranges),
                Err(e) => json!({"error": e}),
            })
        })
    }

    fn create_services(&mut self, c: &CreateServices) -> Result<Outputs, String> {
        let mut sides = [(0usize, Value::Null, Vec::new()), (0, Value::Null, Vec::new())];
        for i in 0..c.count {
            let mut spec = c.spec.clone().unwrap_or_else(|| json!({}));
            if let Some(s) = spec.as_object_mut() {
                s.insert("ports".into(), json!([{"port": 80}]));
            }
            let name = format!("{}-{i}", c.prefix);
            let object = json!({"apiVersion": "v1", "kind": "Service",
                "metadata": {"name": name, "namespace": self.namespace}, "spec": spec});
            if sides[0].1.is_null() {
                let path = resource_path("Service", &self.namespace, "")?;
                let answer = self
                    .real
                    .request("POST", &path, "application/json", Some(&object.to_string()))?;
                record(&mut sides[0], &self.ranges, answer.ok().then_some(&answer.body), || {
                    answer.message()
                });
            }
            if sides[1].1.is_null() {
                let result = self.ours.create(&object);
                let stored = self.ours.get("Service", &self.namespace, &name);
                match result {
                    Ok(()) => record(&mut sides[1], &self.ranges, stored.as_ref(), String::new),
                    Err(e) => record(&mut sides[1], &self.ranges, None, || e.clone()),
                }
            }
            if !sides[0].1.is_null() && !sides[1].1.is_null() {
                break;
            }
        }
        let [real, ours] =
            sides.map(|(created, error, bands)| json!({"created": created, "error": error, "bands": bands}));
        Ok(Outputs { real, ours })
    }
}

/// Counts a created Service's band, or keeps the first error.
fn record(side: &mut (usize, Value, Vec<String>), ranges: &Ranges, stored: Option<&Value>, error: impl Fn() -> String) {
    match stored {
        Some(svc) => {
            side.0 += 1;
            let ip = svc
                .pointer("/spec/clusterIP")
                .and_then(Value::as_str)
                .unwrap_or_default();
            side.2.push(ranges.describe_ip(ip));
        }
        None => side.1 = Value::String(error()),
    }
}

#[derive(Clone, Copy)]
enum Write {
    Create,
    Apply,
    Pods,
}

fn outcome(id: &str, result: Result<(), String>) -> Value {
    let id = id
        .rsplit_once('/')
        .map(|(k, n)| format!("{}/{n}", k.split('/').next().unwrap_or(k)))
        .unwrap_or_default();
    match result {
        Ok(()) => json!({"object": id, "result": "ok"}),
        Err(e) => json!({"object": id, "error": e}),
    }
}

fn start_outcome(error: Option<String>) -> Value {
    match error {
        Some(e) => json!({"startupError": e}),
        None => json!({"started": true}),
    }
}
