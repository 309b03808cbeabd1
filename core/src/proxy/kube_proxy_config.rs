//! kube-proxy's configuration file (`--config`): a `KubeProxyConfiguration`
//! of `kubeproxy.config.k8s.io/v1alpha1`, read as kube-proxy v1.37 reads it
//! for IPVS mode: decoded leniently (unknown fields are reported, not
//! fatal), defaulted, then validated with kube-proxy's field paths and
//! messages, in its order (`failed validate: [...]`). Fields svcnet does
//! not act on are reported too, so nothing is silently ignored.
//!
//! What svcnet takes from it ([`ProxySettings`]): the IPVS scheduler, sync
//! periods, exclude CIDRs, strict ARP and timeouts; `hostnameOverride`;
//! `clientConnection.kubeconfig`; the healthz and metrics addresses (and
//! the bind address their defaults follow); `nodePortAddresses`; and for
//! the nftables ruleset (`proxy::nftables`) `clusterCIDR` and
//! `iptables.masqueradeAll` (what kube-proxy's IPVS mode reads; its
//! `nftables.masqueradeAll` is for nftables mode). `clusterCIDR` is used
//! as kube-proxy uses it: with `detectLocalMode` `ClusterCIDR` or unset
//! (which kube-proxy takes for `ClusterCIDR`). The rest is validated as
//! kube-proxy validates it and reported as not used: the other
//! `detectLocalMode`s among them (svcnet tells local traffic by the
//! cluster CIDRs only).

use super::go_duration;
use crate::field::{BadValue, FieldError, FieldPath};
use ipnetwork::IpNetwork;
use serde_json::{Map, Value};
use std::net::{IpAddr, SocketAddr};
use thiserror::Error;

/// The `apiVersion` kube-proxy reads.
pub const API_VERSION: &str = "kubeproxy.config.k8s.io/v1alpha1";
/// The `kind`.
pub const KIND: &str = "KubeProxyConfiguration";

/// Why a configuration was refused, in kube-proxy's words.
#[derive(Debug, Clone, PartialEq, Error)]
pub enum KubeProxyConfigError {
    /// The file does not decode (`failed complete: failed to decode: ...`).
    #[error("failed complete: failed to decode: {0}")]
    Decode(String),
    /// Values kube-proxy refuses (`failed validate: [...]`; one error
    /// without the brackets, as Go's error lists print).
    #[error("failed validate: {}", error_list(.0))]
    Invalid(Vec<FieldError>),
    /// The file breaks an input limit (size, nesting, aliases).
    #[error("failed complete: {0}")]
    Limit(crate::api::limits::LimitError),
    /// What svcnet cannot do (another proxy mode); kube-proxy accepts it.
    #[error("{0}")]
    Unsupported(FieldError),
}

/// Go's aggregate of errors: one alone, several in brackets.
fn error_list(errors: &[FieldError]) -> String {
    match errors {
        [one] => one.to_string(),
        many => format!(
            "[{}]",
            many.iter().map(ToString::to_string).collect::<Vec<_>>().join(", ")
        ),
    }
}

/// What svcnet takes from a configuration, defaults filled in.
#[derive(Debug, Clone, PartialEq)]
pub struct ProxySettings {
    /// `hostnameOverride`: the node's name, when set.
    pub hostname_override: Option<String>,
    /// `clientConnection.kubeconfig`, when set.
    pub kubeconfig: Option<String>,
    /// `healthzBindAddress` (`0.0.0.0:10256` by default).
    pub healthz_bind_address: SocketAddr,
    /// `metricsBindAddress` (`127.0.0.1:10249` by default).
    pub metrics_bind_address: SocketAddr,
    /// `ipvs.scheduler` (`rr` when empty).
    pub scheduler: String,
    /// `ipvs.syncPeriod` (30 s by default), in nanoseconds.
    pub sync_period_nanos: i128,
    /// `ipvs.minSyncPeriod` (0 by default), in nanoseconds.
    pub min_sync_period_nanos: i128,
    /// `ipvs.excludeCIDRs`: virtual servers there are never deleted.
    pub exclude_cidrs: Vec<IpNetwork>,
    /// `ipvs.strictARP`.
    pub strict_arp: bool,
    /// `ipvs.tcpTimeout`, `tcpFinTimeout`, `udpTimeout` in nanoseconds (0:
    /// leave the kernel's).
    pub ipvs_timeouts_nanos: [i128; 3],
    /// `nodePortAddresses`: CIDRs or `primary`, `localhost`, `all`.
    pub node_port_addresses: Vec<String>,
    /// `clusterCIDR`, split at commas (one CIDR, or a dual-stack pair),
    /// when `detectLocalMode` is `ClusterCIDR` or unset; else empty.
    pub cluster_cidrs: Vec<IpNetwork>,
    /// `iptables.masqueradeAll`.
    pub masquerade_all: bool,
}

/// A configuration read: what svcnet uses, and what it says about the rest
/// (unknown fields, fields svcnet does not act on), one line each.
#[derive(Debug, Clone, PartialEq)]
pub struct ReadConfig {
    /// The settings.
    pub settings: ProxySettings,
    /// Fields kube-proxy does not know (its lenient decoding ignores them),
    /// sorted.
    pub unknown_fields: Vec<String>,
    /// Warnings, to log.
    pub warnings: Vec<String>,
}

/// The fields of a `KubeProxyConfiguration` and their JSON kinds; what is
/// not listed is unknown.
const KNOWN: &[(&str, Kind)] = &[
    ("apiVersion", Kind::Str),
    ("kind", Kind::Str),
    ("featureGates", Kind::Any),
    ("clientConnection", Kind::Object),
    ("clientConnection.kubeconfig", Kind::Str),
    ("clientConnection.acceptContentTypes", Kind::Str),
    ("clientConnection.contentType", Kind::Str),
    ("clientConnection.qps", Kind::Number),
    ("clientConnection.burst", Kind::Int),
    ("logging", Kind::Any),
    ("hostnameOverride", Kind::Str),
    ("bindAddress", Kind::Str),
    ("healthzBindAddress", Kind::Str),
    ("metricsBindAddress", Kind::Str),
    ("bindAddressHardFail", Kind::Bool),
    ("enableProfiling", Kind::Bool),
    ("showHiddenMetricsForVersion", Kind::Str),
    ("mode", Kind::Str),
    ("iptables", Kind::Object),
    ("iptables.masqueradeBit", Kind::Int),
    ("iptables.masqueradeAll", Kind::Bool),
    ("iptables.localhostNodePorts", Kind::Bool),
    ("iptables.syncPeriod", Kind::Duration),
    ("iptables.minSyncPeriod", Kind::Duration),
    ("ipvs", Kind::Object),
    ("ipvs.syncPeriod", Kind::Duration),
    ("ipvs.minSyncPeriod", Kind::Duration),
    ("ipvs.scheduler", Kind::Str),
    ("ipvs.excludeCIDRs", Kind::StrList),
    ("ipvs.strictARP", Kind::Bool),
    ("ipvs.tcpTimeout", Kind::Duration),
    ("ipvs.tcpFinTimeout", Kind::Duration),
    ("ipvs.udpTimeout", Kind::Duration),
    ("nftables", Kind::Object),
    ("nftables.masqueradeBit", Kind::Int),
    ("nftables.masqueradeAll", Kind::Bool),
    ("nftables.syncPeriod", Kind::Duration),
    ("nftables.minSyncPeriod", Kind::Duration),
    ("winkernel", Kind::Any),
    ("detectLocalMode", Kind::Str),
    ("detectLocal", Kind::Object),
    ("detectLocal.bridgeInterface", Kind::Str),
    ("detectLocal.interfaceNamePrefix", Kind::Str),
    ("clusterCIDR", Kind::Str),
    ("nodePortAddresses", Kind::StrList),
    ("oomScoreAdj", Kind::Int),
    ("conntrack", Kind::Object),
    ("conntrack.maxPerCore", Kind::Int),
    ("conntrack.min", Kind::Int),
    ("conntrack.tcpEstablishedTimeout", Kind::Duration),
    ("conntrack.tcpCloseWaitTimeout", Kind::Duration),
    ("conntrack.tcpBeLiberal", Kind::Bool),
    ("conntrack.udpTimeout", Kind::Duration),
    ("conntrack.udpStreamTimeout", Kind::Duration),
    ("configSyncPeriod", Kind::Duration),
    ("portRange", Kind::Str),
    ("windowsRunAsService", Kind::Bool),
];

/// Fields svcnet reads or that only choose defaults; any other field set
/// is reported as not used.
const USED: &[&str] = &[
    "apiVersion",
    "kind",
    "clientConnection",
    "clientConnection.kubeconfig",
    "hostnameOverride",
    "bindAddress",
    "healthzBindAddress",
    "metricsBindAddress",
    "mode",
    "ipvs",
    "ipvs.syncPeriod",
    "ipvs.minSyncPeriod",
    "ipvs.scheduler",
    "ipvs.excludeCIDRs",
    "ipvs.strictARP",
    "ipvs.tcpTimeout",
    "ipvs.tcpFinTimeout",
    "ipvs.udpTimeout",
    "nodePortAddresses",
    "iptables.masqueradeAll",
    // Unless detectLocalMode is one svcnet does not do (see `read`).
    "clusterCIDR",
    "detectLocalMode",
];

/// The JSON kind of a field, as its Go type decodes it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Str,
    Bool,
    Int,
    Number,
    Duration,
    StrList,
    Object,
    Any,
}

/// Reads a configuration file's text (YAML or JSON).
pub fn read(text: &str) -> Result<ReadConfig, KubeProxyConfigError> {
    crate::api::limits::check_text(text).map_err(KubeProxyConfigError::Limit)?;
    let value: Value = serde_yaml_ng::from_str(text).map_err(|e| KubeProxyConfigError::Decode(format!("yaml: {e}")))?;
    let Value::Object(root) = value else {
        return Err(KubeProxyConfigError::Decode(
            "couldn't get version/kind; json parse error: the file holds no object".into(),
        ));
    };
    let version = str_at(&root, "apiVersion").unwrap_or_default();
    let kind = str_at(&root, "kind").unwrap_or_default();
    if version != API_VERSION || kind != KIND {
        return Err(KubeProxyConfigError::Decode(format!(
            "no kind {kind:?} is registered for version {version:?} in scheme \"pkg/runtime/scheme.go:111\""
        )));
    }
    let mut unknown = Vec::new();
    let mut unused = Vec::new();
    walk(&root, "", &mut unknown, &mut unused)?;
    let config = Config::from(&root)?;
    if !config.detects_local_by_cluster_cidr() {
        unused.push("detectLocalMode".to_string());
        if !config.cluster_cidrs.is_empty() {
            unused.push("clusterCIDR".to_string());
        }
        crate::sort::sort(&mut unused);
    }
    let mut errors = config.validate();
    if !errors.is_empty() {
        return Err(KubeProxyConfigError::Invalid(std::mem::take(&mut errors)));
    }
    if !matches!(config.mode.as_str(), "" | "ipvs") {
        return Err(KubeProxyConfigError::Unsupported(FieldError::invalid(
            &FieldPath::new("mode"),
            config.mode.as_str(),
            "svcnet programs kube-proxy's IPVS mode only: use \"ipvs\" or leave it blank",
        )));
    }
    let mut warnings = Vec::new();
    if !unknown.is_empty() {
        crate::sort::sort(&mut unknown);
        let fields: Vec<String> = unknown.iter().map(|f| format!("unknown field {f:?}")).collect();
        warnings.push(format!(
            "strict decoding error: {} (ignored, as kube-proxy ignores them)",
            fields.join(", ")
        ));
    }
    for field in unused {
        warnings.push(format!("{field}: accepted but not used by svcnet"));
    }
    Ok(ReadConfig {
        settings: config.settings()?,
        unknown_fields: unknown,
        warnings,
    })
}

/// Checks every field's JSON kind, collecting unknown fields and set fields
/// svcnet does not use.
fn walk(
    object: &Map<String, Value>,
    prefix: &str,
    unknown: &mut Vec<String>,
    unused: &mut Vec<String>,
) -> Result<(), KubeProxyConfigError> {
    for (key, value) in object {
        let path = if prefix.is_empty() {
            key.clone()
        } else {
            format!("{prefix}.{key}")
        };
        let Some((_, kind)) = KNOWN.iter().find(|(p, _)| *p == path) else {
            unknown.push(path);
            continue;
        };
        check_kind(&path, value, *kind)?;
        match (kind, value) {
            (Kind::Object, Value::Object(inner)) => walk(inner, &path, unknown, unused)?,
            (_, Value::Null) => {}
            _ if !USED.contains(&path.as_str()) && !is_zero(value) => unused.push(path),
            _ => {}
        }
    }
    Ok(())
}

/// Whether a value is its Go zero value (an unset field).
fn is_zero(value: &Value) -> bool {
    match value {
        Value::Null => true,
        Value::Bool(b) => !b,
        Value::String(s) => s.is_empty(),
        Value::Array(a) => a.is_empty(),
        Value::Object(o) => o.is_empty(),
        Value::Number(n) => n.as_f64() == Some(0.0),
    }
}

/// Go's decoding error for a value of the wrong JSON kind.
fn check_kind(path: &str, value: &Value, kind: Kind) -> Result<(), KubeProxyConfigError> {
    let ok = match (kind, value) {
        (_, Value::Null) | (Kind::Any, _) => true,
        (Kind::Str | Kind::Duration, Value::String(_)) => true,
        (Kind::Bool, Value::Bool(_)) => true,
        (Kind::Int, Value::Number(n)) => n.is_i64(),
        (Kind::Number, Value::Number(_)) => true,
        (Kind::StrList, Value::Array(items)) => items.iter().all(Value::is_string),
        (Kind::Object, Value::Object(_)) => true,
        _ => false,
    };
    if ok {
        if kind == Kind::Duration {
            if let Some(text) = value.as_str() {
                go_duration::parse(text).map_err(|e| KubeProxyConfigError::Decode(e.to_string()))?;
            }
        }
        return Ok(());
    }
    let found = match value {
        Value::Bool(_) => "bool",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
        Value::Null => "null",
    };
    let go_type = match kind {
        Kind::Str | Kind::Duration => "string",
        Kind::Bool => "bool",
        Kind::Int => "int32",
        Kind::Number => "float32",
        Kind::StrList => "[]string",
        Kind::Object | Kind::Any => "object",
    };
    let parent = match path.split_once('.').map(|(p, _)| p) {
        Some("ipvs") => "KubeProxyIPVSConfiguration",
        Some("iptables") => "KubeProxyIPTablesConfiguration",
        Some("nftables") => "KubeProxyNFTablesConfiguration",
        Some("conntrack") => "KubeProxyConntrackConfiguration",
        Some("detectLocal") => "DetectLocalConfiguration",
        Some("clientConnection") => "ClientConnectionConfiguration",
        _ => "KubeProxyConfiguration",
    };
    Err(KubeProxyConfigError::Decode(format!(
        "json: cannot unmarshal {found} into Go struct field {parent}.{path} of type {go_type}"
    )))
}

fn at<'a>(root: &'a Map<String, Value>, path: &str) -> Option<&'a Value> {
    let mut parts = path.split('.');
    let first = root.get(parts.next()?)?;
    parts.try_fold(first, |v, key| v.get(key))
}

fn str_at(root: &Map<String, Value>, path: &str) -> Option<String> {
    at(root, path).and_then(Value::as_str).map(str::to_string)
}

fn int_at(root: &Map<String, Value>, path: &str) -> Option<i64> {
    at(root, path).and_then(Value::as_i64)
}

/// A duration field in nanoseconds, `None` when unset.
fn duration_at(root: &Map<String, Value>, path: &str) -> Result<Option<i128>, KubeProxyConfigError> {
    match at(root, path).and_then(Value::as_str) {
        Some(text) => go_duration::parse(text)
            .map(Some)
            .map_err(|e| KubeProxyConfigError::Decode(e.to_string())),
        None => Ok(None),
    }
}

fn list_at(root: &Map<String, Value>, path: &str) -> Vec<String> {
    at(root, path)
        .and_then(Value::as_array)
        .map(|items| items.iter().filter_map(Value::as_str).map(str::to_string).collect())
        .unwrap_or_default()
}

/// The defaulted configuration, as kube-proxy validates it in IPVS mode.
struct Config {
    mode: String,
    masquerade_bit: Option<i64>,
    ipvs_timeouts: [i128; 3],
    exclude_cidrs: Vec<String>,
    conntrack_counts: [Option<i64>; 2],
    conntrack_timeouts: [i128; 4],
    oom_score_adj: i64,
    burst: Option<i64>,
    config_sync_period: i128,
    sync_period: i128,
    min_sync_period: i128,
    bind_address: String,
    healthz_bind_address: String,
    metrics_bind_address: String,
    node_port_addresses: Vec<String>,
    detect_local_mode: String,
    bridge_interface: String,
    interface_name_prefix: String,
    cluster_cidrs: Vec<String>,
    hostname_override: String,
    kubeconfig: String,
    scheduler: String,
    strict_arp: bool,
    masquerade_all: bool,
}

const SECOND: i128 = 1_000_000_000;

impl Config {
    fn from(root: &Map<String, Value>) -> Result<Config, KubeProxyConfigError> {
        let nonzero_or = |v: Option<i128>, default: i128| v.filter(|d| *d != 0).unwrap_or(default);
        let bind_address = str_at(root, "bindAddress")
            .filter(|s| !s.is_empty())
            .unwrap_or_else(|| "0.0.0.0".into());
        let (healthz_host, metrics_host) = match bind_address.parse::<IpAddr>() {
            Ok(IpAddr::V6(_)) => ("[::]", "[::1]"),
            _ => ("0.0.0.0", "127.0.0.1"),
        };
        let with_port = |value: Option<String>, host: &str, port: u16| match value.filter(|s| !s.is_empty()) {
            None => format!("{host}:{port}"),
            Some(v) => append_port_if_needed(&v, port),
        };
        let conntrack = |key: &str, default: i128| -> Result<i128, KubeProxyConfigError> {
            Ok(duration_at(root, &format!("conntrack.{key}"))?.unwrap_or(default))
        };
        Ok(Config {
            mode: str_at(root, "mode").unwrap_or_default(),
            masquerade_bit: int_at(root, "iptables.masqueradeBit"),
            ipvs_timeouts: [
                duration_at(root, "ipvs.tcpTimeout")?.unwrap_or(0),
                duration_at(root, "ipvs.tcpFinTimeout")?.unwrap_or(0),
                duration_at(root, "ipvs.udpTimeout")?.unwrap_or(0),
            ],
            exclude_cidrs: list_at(root, "ipvs.excludeCIDRs"),
            conntrack_counts: [int_at(root, "conntrack.maxPerCore"), int_at(root, "conntrack.min")],
            conntrack_timeouts: [
                nonzero_or(
                    duration_at(root, "conntrack.tcpEstablishedTimeout")?,
                    24 * 3600 * SECOND,
                ),
                nonzero_or(duration_at(root, "conntrack.tcpCloseWaitTimeout")?, 3600 * SECOND),
                conntrack("udpTimeout", 0)?,
                conntrack("udpStreamTimeout", 0)?,
            ],
            oom_score_adj: int_at(root, "oomScoreAdj").unwrap_or(-999),
            burst: int_at(root, "clientConnection.burst"),
            config_sync_period: nonzero_or(duration_at(root, "configSyncPeriod")?, 15 * 60 * SECOND),
            sync_period: nonzero_or(duration_at(root, "ipvs.syncPeriod")?, 30 * SECOND),
            min_sync_period: duration_at(root, "ipvs.minSyncPeriod")?.unwrap_or(0),
            healthz_bind_address: with_port(str_at(root, "healthzBindAddress"), healthz_host, 10256),
            metrics_bind_address: with_port(str_at(root, "metricsBindAddress"), metrics_host, 10249),
            bind_address,
            node_port_addresses: list_at(root, "nodePortAddresses"),
            detect_local_mode: str_at(root, "detectLocalMode").unwrap_or_default(),
            bridge_interface: str_at(root, "detectLocal.bridgeInterface").unwrap_or_default(),
            interface_name_prefix: str_at(root, "detectLocal.interfaceNamePrefix").unwrap_or_default(),
            cluster_cidrs: str_at(root, "clusterCIDR")
                .filter(|s| !s.is_empty())
                .map(|s| s.split(',').map(str::to_string).collect())
                .unwrap_or_default(),
            hostname_override: str_at(root, "hostnameOverride").unwrap_or_default(),
            kubeconfig: str_at(root, "clientConnection.kubeconfig").unwrap_or_default(),
            scheduler: str_at(root, "ipvs.scheduler").unwrap_or_default(),
            strict_arp: at(root, "ipvs.strictARP").and_then(Value::as_bool).unwrap_or(false),
            masquerade_all: at(root, "iptables.masqueradeAll")
                .and_then(Value::as_bool)
                .unwrap_or(false),
        })
    }

    /// Whether local traffic is told by the cluster CIDRs: kube-proxy's
    /// `ClusterCIDR` mode, which it takes when `detectLocalMode` is unset.
    fn detects_local_by_cluster_cidr(&self) -> bool {
        matches!(self.detect_local_mode.as_str(), "" | "ClusterCIDR")
    }

    /// `clusterCIDR` as CIDRs, for the nftables ruleset, when local traffic
    /// is told by it. Checked as kube-proxy checks it in `ClusterCIDR` mode
    /// (already done by [`Config::validate`] when the mode is set; here
    /// when it is left to its default), so a bad value is an error naming
    /// the field, never dropped.
    fn cluster_cidrs(&self) -> Result<Vec<IpNetwork>, KubeProxyConfigError> {
        if !self.detects_local_by_cluster_cidr() {
            return Ok(Vec::new());
        }
        let path = FieldPath::new("KubeProxyConfiguration")
            .child("DetectLocalConfiguration")
            .child("ClusterCIDRs");
        let errors = validate_cluster_cidrs(&self.cluster_cidrs, &path);
        if !errors.is_empty() {
            return Err(KubeProxyConfigError::Invalid(errors));
        }
        Ok(self.cluster_cidrs.iter().filter_map(|c| parse_cidr(c)).collect())
    }

    /// kube-proxy's checks, in its order (IPVS mode).
    fn validate(&self) -> Vec<FieldError> {
        let root = FieldPath::new("KubeProxyConfiguration");
        let duration = |nanos: i128| BadValue::from(go_duration::format(nanos).as_str());
        let mut errs = Vec::new();
        if let Some(bit) = self.masquerade_bit.filter(|b| !(0..=31).contains(b)) {
            let path = root.child("KubeProxyIPTablesConfiguration").child("MasqueradeBit");
            errs.push(FieldError::invalid(&path, bit, "must be within the range [0, 31]"));
        }
        if self.mode == "ipvs" {
            let ipvs = root.child("KubeProxyIPVSConfiguration");
            for (name, nanos) in ["TCPTimeout", "TCPFinTimeout", "UDPTimeout"]
                .iter()
                .zip(self.ipvs_timeouts)
            {
                if nanos < 0 {
                    let msg = "must be greater than or equal to 0";
                    errs.push(FieldError::invalid(&ipvs.child(name), duration(nanos), msg));
                }
            }
            for (i, cidr) in self.exclude_cidrs.iter().enumerate() {
                if parse_cidr(cidr).is_none() {
                    let path = ipvs.child("ExcludeCidrs").index(i);
                    errs.push(FieldError::invalid(&path, cidr.as_str(), "must be a valid CIDR"));
                }
            }
        }
        let conntrack = root
            .child("KubeProxyLinuxConfiguration")
            .child("KubeProxyConntrackConfiguration");
        let at_least_zero = "must be greater than or equal to 0";
        for (name, count) in ["MaxPerCore", "Min"].iter().zip(self.conntrack_counts) {
            if let Some(n) = count.filter(|n| *n < 0) {
                errs.push(FieldError::invalid(&conntrack.child(name), n, at_least_zero));
            }
        }
        let names = [
            "TCPEstablishedTimeout",
            "TCPCloseWaitTimeout",
            "UDPTimeout",
            "UDPStreamTimeout",
        ];
        for (name, nanos) in names.iter().zip(self.conntrack_timeouts) {
            if nanos < 0 {
                errs.push(FieldError::invalid(
                    &conntrack.child(name),
                    duration(nanos),
                    at_least_zero,
                ));
            }
        }
        if !(-1000..=1000).contains(&self.oom_score_adj) {
            let path = root.child("KubeProxyLinuxConfiguration").child("OOMScoreAdj");
            errs.push(FieldError::invalid(
                &path,
                self.oom_score_adj,
                "must be within the range [-1000, 1000]",
            ));
        }
        if !matches!(self.mode.as_str(), "" | "iptables" | "ipvs" | "nftables") {
            errs.push(FieldError::invalid(
                &root.child("Mode").child("ProxyMode"),
                self.mode.as_str(),
                "must be iptables, ipvs, nftables or blank (blank means the best-available proxy [currently iptables])",
            ));
        }
        if let Some(burst) = self.burst.filter(|b| *b < 0) {
            let path = root.child("ClientConnection").child("Burst");
            errs.push(FieldError::invalid(&path, burst, at_least_zero));
        }
        if self.config_sync_period <= 0 {
            let path = root.child("ConfigSyncPeriod");
            errs.push(FieldError::invalid(
                &path,
                duration(self.config_sync_period),
                "must be greater than 0",
            ));
        }
        if self.sync_period <= 0 {
            let path = root.child("SyncPeriod");
            errs.push(FieldError::invalid(
                &path,
                duration(self.sync_period),
                "must be greater than 0",
            ));
        }
        if self.min_sync_period < 0 {
            let path = root.child("MinSyncPeriod");
            errs.push(FieldError::invalid(
                &path,
                duration(self.min_sync_period),
                at_least_zero,
            ));
        }
        if self.min_sync_period > self.sync_period {
            let detail = format!(
                "must be greater than or equal to {}",
                root.child("MinSyncPeriod").as_str()
            );
            errs.push(FieldError::invalid(
                &root.child("SyncPeriod"),
                duration(self.min_sync_period),
                &detail,
            ));
        }
        if self.bind_address.parse::<IpAddr>().is_err() {
            errs.push(FieldError::invalid(
                &root.child("BindAddress"),
                self.bind_address.as_str(),
                "not a valid textual representation of an IP address",
            ));
        }
        errs.extend(validate_host_port(
            &self.healthz_bind_address,
            &root.child("HealthzBindAddress"),
        ));
        errs.extend(validate_host_port(
            &self.metrics_bind_address,
            &root.child("MetricsBindAddress"),
        ));
        let mut seen = Vec::new();
        for (i, address) in self.node_port_addresses.iter().enumerate() {
            let path = root.child("NodePortAddresses").index(i);
            if matches!(address.as_str(), "primary" | "localhost" | "all") {
                if seen.contains(address) {
                    errs.push(FieldError::duplicate(&path, address.as_str()));
                }
                seen.push(address.clone());
            } else if parse_cidr(address).is_none() {
                errs.push(FieldError::invalid(
                    &path,
                    address.as_str(),
                    "must be a valid CIDR or one of the keywords 'primary', 'localhost', 'all'",
                ));
            }
        }
        let modes = ["ClusterCIDR", "NodeCIDR", "BridgeInterface", "InterfaceNamePrefix", ""];
        if !modes.contains(&self.detect_local_mode.as_str()) {
            errs.push(FieldError::unsupported(
                &root.child("DetectLocalMode"),
                self.detect_local_mode.as_str(),
                &modes,
            ));
        }
        let detect = root.child("DetectLocalConfiguration");
        match self.detect_local_mode.as_str() {
            "BridgeInterface" if self.bridge_interface.is_empty() => {
                errs.push(FieldError::invalid(
                    &detect.child("InterfaceName"),
                    "",
                    "must not be empty",
                ));
            }
            "InterfaceNamePrefix" if self.interface_name_prefix.is_empty() => {
                errs.push(FieldError::invalid(
                    &detect.child("InterfacePrefix"),
                    "",
                    "must not be empty",
                ));
            }
            "ClusterCIDR" if !self.cluster_cidrs.is_empty() => {
                errs.extend(validate_cluster_cidrs(
                    &self.cluster_cidrs,
                    &detect.child("ClusterCIDRs"),
                ));
            }
            _ => {}
        }
        errs
    }

    /// What svcnet uses, from a valid configuration.
    fn settings(&self) -> Result<ProxySettings, KubeProxyConfigError> {
        let address = |text: &str, name: &str| {
            text.parse::<SocketAddr>().map_err(|_| {
                KubeProxyConfigError::Unsupported(FieldError::invalid(
                    &FieldPath::new(name),
                    text,
                    "svcnet needs an IP address and a port here",
                ))
            })
        };
        Ok(ProxySettings {
            hostname_override: Some(self.hostname_override.clone()).filter(|s| !s.is_empty()),
            kubeconfig: Some(self.kubeconfig.clone()).filter(|s| !s.is_empty()),
            healthz_bind_address: address(&self.healthz_bind_address, "healthzBindAddress")?,
            metrics_bind_address: address(&self.metrics_bind_address, "metricsBindAddress")?,
            scheduler: Some(self.scheduler.clone())
                .filter(|s| !s.is_empty())
                .unwrap_or_else(|| "rr".into()),
            sync_period_nanos: self.sync_period,
            min_sync_period_nanos: self.min_sync_period,
            exclude_cidrs: self.exclude_cidrs.iter().filter_map(|c| parse_cidr(c)).collect(),
            strict_arp: self.strict_arp,
            ipvs_timeouts_nanos: self.ipvs_timeouts,
            node_port_addresses: self.node_port_addresses.clone(),
            cluster_cidrs: self.cluster_cidrs()?,
            masquerade_all: self.masquerade_all,
        })
    }
}

/// A CIDR as Go's `ParseCIDR` reads it (host bits allowed).
fn parse_cidr(text: &str) -> Option<IpNetwork> {
    text.contains('/').then(|| text.parse().ok()).flatten()
}

/// `host:port`, with the default port appended to a bare IP address.
fn append_port_if_needed(address: &str, port: u16) -> String {
    if split_host_port(address).is_some() {
        return address.to_string();
    }
    match address.parse::<IpAddr>() {
        Ok(ip) => SocketAddr::new(ip, port).to_string(),
        Err(_) => address.to_string(),
    }
}

/// Go's `net.SplitHostPort`: `host:port` or `[v6]:port`.
fn split_host_port(address: &str) -> Option<(&str, &str)> {
    if let Some(rest) = address.strip_prefix('[') {
        let (host, port) = rest.split_once("]:")?;
        return Some((host, port));
    }
    let (host, port) = address.rsplit_once(':')?;
    (!host.contains(':')).then_some((host, port))
}

/// kube-proxy's `validateHostPort`.
fn validate_host_port(address: &str, path: &FieldPath) -> Vec<FieldError> {
    let Some((host, port)) = split_host_port(address) else {
        return vec![FieldError::invalid(path, address, "must be IP:port")];
    };
    let mut errs = Vec::new();
    if host.parse::<IpAddr>().is_err() {
        errs.push(FieldError::invalid(path, host, "must be a valid IP"));
    }
    if !port.parse::<i64>().is_ok_and(|p| (1..=65535).contains(&p)) {
        errs.push(FieldError::invalid(path, port, "must be a valid port"));
    }
    errs
}

/// kube-proxy's `validateDualStackCIDRStrings`.
fn validate_cluster_cidrs(cidrs: &[String], path: &FieldPath) -> Vec<FieldError> {
    let pair_msg =
        "must be a either a single CIDR or dual-stack pair of CIDRs (e.g. [10.100.0.0/16, fde4:8dba:82e1::/48]";
    if cidrs.len() > 2 {
        return vec![FieldError::invalid(path, BadValue::StrList(cidrs.to_vec()), pair_msg)];
    }
    let mut errs = Vec::new();
    let parsed: Vec<Option<IpNetwork>> = cidrs.iter().map(|c| parse_cidr(c)).collect();
    for (i, (text, net)) in cidrs.iter().zip(&parsed).enumerate() {
        if net.is_none() {
            errs.push(FieldError::invalid(
                &path.index(i),
                text.as_str(),
                "must be a valid CIDR block (e.g. 10.100.0.0/16 or fde4:8dba:82e1::/48)",
            ));
        }
    }
    if let [Some(a), Some(b)] = parsed.as_slice() {
        if a.is_ipv4() == b.is_ipv4() {
            errs.push(FieldError::invalid(path, BadValue::StrList(cidrs.to_vec()), pair_msg));
        }
    }
    errs
}

#[cfg(test)]
mod tests;
