//! Case files (`tests/k8s/cases/*.yaml`): the cluster to start, the steps
//! to run on both sides, and what each step outputs for comparison.

use serde::Deserialize;
use std::path::{Path, PathBuf};

/// One case: a small scenario run against real Kubernetes and svcnet.
#[derive(Clone, Debug, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Case {
    /// What the case checks, in a sentence.
    pub description: String,
    /// The area of the suite the case belongs to (the README's tables).
    pub area: Area,
    /// The flags of the apiserver the case runs on.
    #[serde(default)]
    pub cluster: ClusterFlags,
    /// The steps, run in order on both sides.
    pub steps: Vec<Step>,
    /// The case's file name without `.yaml`; set when loading.
    #[serde(skip)]
    pub name: String,
}

/// The suite's areas, in the order the report lists them.
#[derive(Clone, Copy, Debug, Deserialize, PartialEq, Eq, PartialOrd, Ord, Hash)]
#[serde(rename_all = "kebab-case")]
pub enum Area {
    /// Accept or reject, with the error text.
    Admission,
    /// The spec as stored after create.
    Defaulting,
    /// ClusterIP and NodePort allocation, compared by property.
    Allocation,
    /// `--service-cluster-ip-range` at apiserver start.
    Flags,
    /// `networking.k8s.io/v1` ServiceCIDR objects.
    ServiceCidr,
    /// EndpointSlices built by the controller.
    EndpointSlices,
    /// kubectl tables.
    Kubectl,
    /// Dual-stack Services.
    DualStack,
    /// kube-proxy's `--config` file, as kube-proxy reads it.
    KubeProxyConfig,
    /// The behaviour vectors of `tests/vectors/`, replayed.
    Vectors,
}

impl Area {
    /// Every area, in report order.
    pub const ALL: [Area; 10] = [
        Area::Admission,
        Area::Defaulting,
        Area::Allocation,
        Area::Flags,
        Area::ServiceCidr,
        Area::EndpointSlices,
        Area::Kubectl,
        Area::DualStack,
        Area::KubeProxyConfig,
        Area::Vectors,
    ];

    /// The heading the report and README use.
    pub fn title(self) -> &'static str {
        match self {
            Area::Admission => "Accept or reject, and the error text",
            Area::Defaulting => "Defaulting",
            Area::Allocation => "Allocation",
            Area::Flags => "Service CIDR flags",
            Area::ServiceCidr => "ServiceCIDR objects",
            Area::EndpointSlices => "EndpointSlices",
            Area::Kubectl => "kubectl tables",
            Area::DualStack => "Dual-stack",
            Area::KubeProxyConfig => "kube-proxy configuration file",
            Area::Vectors => "Behaviour vectors replayed",
        }
    }
}

/// The flags `scripts/k8s.sh up` starts kube-apiserver with (and svcnet's
/// control plane with the same values).
#[derive(Clone, Debug, Default, Deserialize, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ClusterFlags {
    /// `--service-cluster-ip-range`; default `10.96.0.0/12`, `none` to
    /// leave the flag out.
    #[serde(default)]
    pub service_cluster_ip_range: Option<String>,
    /// `--service-node-port-range`; default `30000-32767`.
    #[serde(default)]
    pub service_node_port_range: Option<String>,
    /// Start a control plane of its own instead of sharing one with the
    /// other cases of the same flags (for cases that count what is left
    /// of a range).
    #[serde(default)]
    pub fresh: bool,
}

impl ClusterFlags {
    /// The service range as given to `scripts/k8s.sh up`.
    pub fn service_range(&self) -> &str {
        self.service_cluster_ip_range.as_deref().unwrap_or("10.96.0.0/12")
    }

    /// The NodePort range as given to `scripts/k8s.sh up`.
    pub fn node_port_range(&self) -> &str {
        self.service_node_port_range.as_deref().unwrap_or("30000-32767")
    }
}

/// One step; its output on both sides must be equal.
#[derive(Clone, Debug, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub enum Step {
    /// `POST` each object of the manifest (`kubectl create`); output:
    /// each object's outcome (created, or the error text).
    Create(String),
    /// Each object applied with the real `kubectl apply -f -` (svcnet's
    /// apply on the other side); output: each object's outcome.
    Apply(String),
    /// Deletes an object; output: its outcome.
    Delete(ObjectName),
    /// Reads an object; output: the object, allocated values masked (see
    /// `normalize`), or the part at `path`.
    Get(GetStep),
    /// Creates Nodes and Pods and sets their `status` as a kubelet would;
    /// output: each object's outcome.
    Pods(String),
    /// Makes a Pod terminating (a finalizer holds it, then a delete).
    Terminate(ObjectName),
    /// The EndpointSlices of a Service, names and server-set fields left
    /// out; the real side is read until kube-controller-manager has
    /// caught up (or 20 s).
    Slices(ObjectName),
    /// The `v1/Endpoints` of a Service, read like `slices`.
    Endpoints(ObjectName),
    /// A `kubectl get` table (the words after `kubectl`), compared cell
    /// by cell without AGE.
    Kubectl(String),
    /// Creates `count` ClusterIP Services `<prefix>-<i>` one by one until
    /// one fails; output: how many were created, the error, and which band
    /// each address came from.
    CreateServices(CreateServices),
    /// Starts kube-apiserver with this `--service-cluster-ip-range` (`none`
    /// leaves it out) and compares its startup error with the one svcnet
    /// gives for the same flag.
    StartApiserver(String),
    /// Starts kube-proxy with this `KubeProxyConfiguration` (`--config`)
    /// and compares how it reads the file with how svcnet reads it: the
    /// decoding or validation error, or the unknown fields it ignores.
    KubeProxyConfig(String),
}

/// Names an object of the case's namespace (or a cluster-scoped one).
#[derive(Clone, Debug, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ObjectName {
    /// `Service`, `Pod`, `Node`, `EndpointSlice`, `ServiceCIDR`.
    #[serde(default = "service_kind")]
    pub kind: String,
    /// The object's name.
    pub name: String,
    /// The namespace, when not the case's own (`default` for `kubernetes`).
    #[serde(default)]
    pub namespace: Option<String>,
}

fn service_kind() -> String {
    "Service".to_string()
}

/// See [`Step::Get`].
#[derive(Clone, Debug, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct GetStep {
    /// The object.
    #[serde(flatten)]
    pub object: ObjectName,
    /// Only this part of it, as dotted keys (`spec`, `spec.clusterIPs`).
    #[serde(default)]
    pub path: Option<String>,
}

/// See [`Step::CreateServices`].
#[derive(Clone, Debug, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct CreateServices {
    /// At most this many.
    pub count: usize,
    /// Name prefix.
    pub prefix: String,
    /// `spec` fields every Service gets besides one TCP port 80.
    #[serde(default)]
    pub spec: Option<serde_json::Value>,
}

impl Step {
    /// The step's verb, for the report.
    pub fn verb(&self) -> &'static str {
        match self {
            Step::Create(_) => "create",
            Step::Apply(_) => "apply",
            Step::Delete(_) => "delete",
            Step::Get(_) => "get",
            Step::Pods(_) => "pods",
            Step::Terminate(_) => "terminate",
            Step::Slices(_) => "slices",
            Step::Endpoints(_) => "endpoints",
            Step::Kubectl(_) => "kubectl",
            Step::CreateServices(_) => "createServices",
            Step::StartApiserver(_) => "startApiserver",
            Step::KubeProxyConfig(_) => "kubeProxyConfig",
        }
    }
}

/// The `*.yaml` files in `dir`, sorted by name.
pub fn yaml_files(dir: &Path) -> Result<Vec<PathBuf>, String> {
    let mut paths: Vec<_> = std::fs::read_dir(dir)
        .map_err(|e| format!("{}: {e}", dir.display()))?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "yaml"))
        .collect();
    paths.sort();
    Ok(paths)
}

/// Reads every `*.yaml` case in `dir`, sorted by file name.
pub fn load_cases(dir: &Path) -> Result<Vec<Case>, String> {
    yaml_files(dir)?
        .iter()
        .map(|path| {
            let text = std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))?;
            // Through JSON's data model, where a step is a map of one key.
            let value: serde_json::Value =
                serde_yaml_ng::from_str(&text).map_err(|e| format!("{}: {e}", path.display()))?;
            let mut case: Case = serde_json::from_value(value).map_err(|e| format!("{}: {e}", path.display()))?;
            case.name = path
                .file_stem()
                .map(|s| s.to_string_lossy().into_owned())
                .unwrap_or_default();
            if case.steps.is_empty() {
                return Err(format!("{}: a case needs at least one step", path.display()));
            }
            Ok(case)
        })
        .collect()
}
