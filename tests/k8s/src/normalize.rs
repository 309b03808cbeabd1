//! What is compared: both sides' outputs brought to one form. Fields only a
//! server invents (uid, resourceVersion, timestamps, generated names) go;
//! addresses and ports chosen at random are replaced by the band they came
//! from, unless the case asked for them; lists whose order carries no
//! meaning are sorted.

use ipnetwork::IpNetwork;
use serde_json::{json, Map, Value};
use std::net::IpAddr;

/// The ranges allocated values are described against.
#[derive(Clone, Debug, Default)]
pub struct Ranges {
    /// Service CIDRs: the flag's, then those of ServiceCIDR objects.
    pub cidrs: Vec<IpNetwork>,
    /// The NodePort range, first and last.
    pub node_ports: (u32, u32),
}

impl Ranges {
    /// From the flags' values.
    pub fn new(service_range: &str, node_ports: &str) -> Ranges {
        let cidrs = match service_range {
            "none" => vec!["10.0.0.0/24".parse().ok()].into_iter().flatten().collect(),
            r => r.split(',').filter_map(|c| c.trim().parse().ok()).collect(),
        };
        let node_ports = node_ports
            .split_once('-')
            .and_then(|(a, b)| Some((a.parse().ok()?, b.parse().ok()?)))
            .unwrap_or((30000, 32767));
        Ranges { cidrs, node_ports }
    }

    /// `<10.96.0.0/12 dynamic band>` for an allocated ClusterIP: the range
    /// it is in and whether it lies in the static band (the first
    /// clamp(size/16, 16, 256) addresses) or above it.
    pub fn describe_ip(&self, ip: &str) -> String {
        let Ok(addr) = ip.parse::<IpAddr>() else {
            return ip.to_string();
        };
        for cidr in &self.cidrs {
            if cidr.contains(addr) {
                let host_bits = u32::from(max_prefix(cidr) - cidr.prefix());
                let size: u128 = if host_bits >= 127 {
                    u128::MAX
                } else {
                    1u128 << host_bits
                };
                let offset = ip_u128(addr) - ip_u128(cidr.network());
                let band = if size <= 16 {
                    "no bands"
                } else if offset <= (size / 16).clamp(16, 256) {
                    "static band"
                } else {
                    "dynamic band"
                };
                return format!("<allocated in {cidr}, {band}>");
            }
        }
        format!("<allocated outside every service range: {ip}>")
    }

    /// `<nodePort, dynamic band>` for an allocated port.
    pub fn describe_port(&self, port: u64) -> String {
        let (first, last) = self.node_ports;
        let size = u64::from(last - first + 1);
        let offset = port.saturating_sub(u64::from(first));
        if port < u64::from(first) || port > u64::from(last) {
            return format!("<allocated outside the range: {port}>");
        }
        let band = if size <= 16 {
            "no bands"
        } else if offset < (size / 32).clamp(16, 128) {
            "static band"
        } else {
            "dynamic band"
        };
        format!("<allocated port, {band}>")
    }
}

fn max_prefix(cidr: &IpNetwork) -> u8 {
    match cidr {
        IpNetwork::V4(_) => 32,
        IpNetwork::V6(_) => 128,
    }
}

fn ip_u128(ip: IpAddr) -> u128 {
    match ip {
        IpAddr::V4(v4) => u128::from(u32::from(v4)),
        IpAddr::V6(v6) => u128::from(v6),
    }
}

/// Removes what only a server invents from an object's metadata.
fn strip_server_metadata(meta: &mut Map<String, Value>) {
    for key in [
        "uid",
        "resourceVersion",
        "generation",
        "creationTimestamp",
        "deletionTimestamp",
        "deletionGracePeriodSeconds",
        "managedFields",
        "selfLink",
    ] {
        meta.remove(key);
    }
    if let Some(Value::Object(annotations)) = meta.get_mut("annotations") {
        annotations.remove("kubectl.kubernetes.io/last-applied-configuration");
        annotations.remove("endpoints.kubernetes.io/last-change-trigger-time");
        if annotations.is_empty() {
            meta.remove("annotations");
        }
    }
    if let Some(Value::Array(owners)) = meta.get_mut("ownerReferences") {
        for owner in owners.iter_mut().filter_map(Value::as_object_mut) {
            owner.remove("uid");
        }
    }
    if meta
        .get("labels")
        .is_some_and(|l| l.as_object().is_some_and(Map::is_empty))
    {
        meta.remove("labels");
    }
}

/// A stored Service: metadata less server fields, the spec with allocated
/// addresses and ports described unless `asked` (the object the case
/// sent) names them, and a non-empty status.
pub fn service(stored: &Value, asked: Option<&Value>, ranges: &Ranges) -> Value {
    let mut out = stored.clone();
    if let Some(Value::Object(meta)) = out.get_mut("metadata") {
        strip_server_metadata(meta);
    }
    let asked_spec = asked.and_then(|a| a.get("spec"));
    let asked_ips: Vec<&str> = asked_spec
        .map(|s| {
            let mut ips: Vec<&str> = s
                .get("clusterIPs")
                .and_then(Value::as_array)
                .map(|a| a.iter().filter_map(Value::as_str).collect())
                .unwrap_or_default();
            ips.extend(s.get("clusterIP").and_then(Value::as_str));
            ips
        })
        .unwrap_or_default();
    let asked_ports: Vec<u64> = asked_spec
        .and_then(|s| s.get("ports"))
        .and_then(Value::as_array)
        .map(|ports| ports.iter().filter_map(|p| p.get("nodePort")?.as_u64()).collect())
        .unwrap_or_default();
    let asked_health = asked_spec
        .and_then(|s| s.get("healthCheckNodePort"))
        .and_then(Value::as_u64);
    if let Some(Value::Object(spec)) = out.get_mut("spec") {
        let describe_ip = |v: &mut Value| {
            if let Some(ip) = v.as_str() {
                if ip != "None" && !asked_ips.contains(&ip) {
                    *v = Value::String(ranges.describe_ip(ip));
                }
            }
        };
        if let Some(v) = spec.get_mut("clusterIP") {
            describe_ip(v);
        }
        if let Some(Value::Array(ips)) = spec.get_mut("clusterIPs") {
            ips.iter_mut().for_each(describe_ip);
        }
        if let Some(Value::Array(ports)) = spec.get_mut("ports") {
            for port in ports.iter_mut().filter_map(Value::as_object_mut) {
                if let Some(n) = port.get("nodePort").and_then(Value::as_u64) {
                    if !asked_ports.contains(&n) {
                        port.insert("nodePort".into(), Value::String(ranges.describe_port(n)));
                    }
                }
            }
        }
        if let Some(n) = spec.get("healthCheckNodePort").and_then(Value::as_u64) {
            if asked_health != Some(n) {
                spec.insert("healthCheckNodePort".into(), Value::String(ranges.describe_port(n)));
            }
        }
    }
    drop_empty_status(&mut out);
    out
}

/// `status: {loadBalancer: {}}` is what the apiserver writes for "no
/// status"; svcnet leaves it out.
fn drop_empty_status(object: &mut Value) {
    let empty = match object.get("status") {
        Some(Value::Object(status)) => status.values().all(|v| v.as_object().is_some_and(Map::is_empty)),
        Some(Value::Null) => true,
        _ => false,
    };
    if empty {
        if let Some(o) = object.as_object_mut() {
            o.remove("status");
        }
    }
}

/// Any other object: server metadata and the times of status conditions
/// stripped.
pub fn object(stored: &Value) -> Value {
    let mut out = stored.clone();
    if let Some(Value::Object(meta)) = out.get_mut("metadata") {
        strip_server_metadata(meta);
    }
    if let Some(Value::Array(conditions)) = out.pointer_mut("/status/conditions") {
        for condition in conditions.iter_mut().filter_map(Value::as_object_mut) {
            condition.remove("lastTransitionTime");
        }
    }
    drop_empty_status(&mut out);
    out
}

/// The most endpoints kube-controller-manager puts in one slice (its
/// `--max-endpoints-per-slice` default), which svcnet keeps too.
const MAX_ENDPOINTS_PER_SLICE: usize = 100;

/// EndpointSlices: generated names go, endpoints are sorted by address and
/// the slices by their content. Slices that differ only in their endpoints
/// (a Service past 100 endpoints) are merged into one entry: which Pods
/// share a slice, and how many slices there are, depend on the order and
/// batches in which kube-controller-manager saw the Pods, so only the
/// endpoints and the per-slice limit are compared.
pub fn slices(items: &[Value]) -> Value {
    let mut out: Vec<Value> = Vec::new();
    let mut sizes: Vec<Vec<usize>> = Vec::new();
    for mut slice in slice_list(items) {
        let endpoints = match slice.as_object_mut().and_then(|o| o.remove("endpoints")) {
            Some(Value::Array(endpoints)) => endpoints,
            _ => Vec::new(),
        };
        match out.iter().position(|kept| without_endpoints(kept) == slice) {
            Some(i) => {
                sizes[i].push(endpoints.len());
                if let Some(Value::Array(merged)) = out[i].get_mut("endpoints") {
                    merged.extend(endpoints);
                }
            }
            None => {
                sizes.push(vec![endpoints.len()]);
                slice["endpoints"] = Value::Array(endpoints);
                out.push(slice);
            }
        }
    }
    for (slice, sizes) in out.iter_mut().zip(sizes) {
        if let Some(Value::Array(endpoints)) = slice.get_mut("endpoints") {
            endpoints.sort_by_key(|e| e.get("addresses").map(Value::to_string));
        }
        if sizes.len() > 1 {
            let over: Vec<usize> = sizes.into_iter().filter(|&n| n > MAX_ENDPOINTS_PER_SLICE).collect();
            slice["<merged slices>"] = if over.is_empty() {
                json!(format!("each holds at most {MAX_ENDPOINTS_PER_SLICE} endpoints"))
            } else {
                json!(format!("slices over {MAX_ENDPOINTS_PER_SLICE} endpoints: {over:?}"))
            };
        }
    }
    out.sort_by_key(Value::to_string);
    Value::Array(out)
}

/// The characters kube-apiserver draws generated name suffixes from.
const GENERATED_SUFFIX_CHARS: &str = "bcdfghjklmnpqrstvwxz2456789";

/// `text` with every name generated from `prefix` (the prefix cut to 58
/// characters, then 5 suffix characters) written `<prefix><generated>`.
pub fn mask_generated_names(text: &str, prefix: &str) -> String {
    let stem: String = prefix.chars().take(58).collect();
    let mut out = String::new();
    let mut rest = text;
    while let Some(at) = rest.find(&stem) {
        let after = &rest[at + stem.len()..];
        let suffix_len = after
            .chars()
            .take(5)
            .take_while(|c| GENERATED_SUFFIX_CHARS.contains(*c))
            .count();
        out.push_str(&rest[..at]);
        if suffix_len == 5 {
            out.push_str(&format!("{prefix}<generated>"));
            rest = &after[5..];
        } else {
            out.push_str(&stem);
            rest = after;
        }
    }
    out.push_str(rest);
    out
}

/// A normalised slice less its endpoints.
fn without_endpoints(slice: &Value) -> Value {
    let mut slice = slice.clone();
    if let Some(o) = slice.as_object_mut() {
        o.remove("endpoints");
    }
    slice
}

/// Each slice normalised on its own: server fields and names gone, null
/// lists empty, targetRefs without uid and resourceVersion.
fn slice_list(items: &[Value]) -> Vec<Value> {
    items
        .iter()
        .map(|slice| {
            let mut slice = object(slice);
            // Items of a list carry no apiVersion and kind of their own.
            if let Some(o) = slice.as_object_mut() {
                o.remove("apiVersion");
                o.remove("kind");
            }
            if let Some(Value::Object(meta)) = slice.get_mut("metadata") {
                meta.remove("name");
                meta.remove("generateName");
            }
            // Go's nil list, which the API prints as null, means what an
            // empty one means.
            for key in ["endpoints", "ports"] {
                if let Some(v @ Value::Null) = slice.get_mut(key) {
                    *v = json!([]);
                }
            }
            // kube-controller-manager orders a mirrored slice's ports by a
            // hash; consumers match ports by name.
            if let Some(Value::Array(ports)) = slice.get_mut("ports") {
                ports.sort_by_key(Value::to_string);
            }
            if let Some(Value::Array(endpoints)) = slice.get_mut("endpoints") {
                for ep in endpoints.iter_mut() {
                    if let Some(Value::Object(target)) = ep.get_mut("targetRef") {
                        target.remove("uid");
                        target.remove("resourceVersion");
                    }
                }
            }
            slice
        })
        .collect()
}

/// A `v1/Endpoints`: addresses sorted within each subset, subsets sorted.
pub fn endpoints(stored: &Value) -> Value {
    let mut out = object(stored);
    if let Some(Value::Array(subsets)) = out.get_mut("subsets") {
        for subset in subsets.iter_mut() {
            for key in ["addresses", "notReadyAddresses"] {
                if let Some(Value::Array(addresses)) = subset.get_mut(key) {
                    for a in addresses.iter_mut() {
                        if let Some(Value::Object(target)) = a.get_mut("targetRef") {
                            target.remove("uid");
                            target.remove("resourceVersion");
                        }
                    }
                    addresses.sort_by_key(|a| a.get("ip").map(Value::to_string));
                }
            }
        }
        // kube-controller-manager orders subsets by a hash of their
        // contents, svcnet by their first address: the order means nothing.
        subsets.sort_by_key(Value::to_string);
    }
    out
}

/// The part of `value` at dotted `path` (`spec.clusterIPs`), or null.
pub fn at_path(value: &Value, path: &str) -> Value {
    path.split('.')
        .try_fold(value, |v, key| v.get(key))
        .cloned()
        .unwrap_or(Value::Null)
}

/// A kubectl table as rows of cells, cut at the header's column starts,
/// AGE left out; rows after the header sorted, with the NAME cells of
/// generated names (`mask_names`) replaced, and allocated ClusterIPs and
/// NodePorts described by their band.
pub fn table(text: &str, mask_names: bool, ranges: &Ranges) -> Value {
    let mut lines = text.lines().filter(|l| !l.trim().is_empty());
    let Some(header) = lines.next() else {
        return json!([]);
    };
    let starts: Vec<usize> = header
        .char_indices()
        .filter(|&(i, c)| c != ' ' && (i == 0 || header.as_bytes()[i - 1] == b' '))
        .map(|(i, _)| i)
        .collect();
    let cells = |line: &str| -> Vec<String> {
        starts
            .iter()
            .enumerate()
            .map(|(n, &start)| {
                let end = starts.get(n + 1).copied().unwrap_or(line.len()).min(line.len());
                line.get(start.min(line.len())..end).unwrap_or("").trim().to_string()
            })
            .collect()
    };
    let head = cells(header);
    let keep: Vec<usize> = (0..head.len()).filter(|&i| head[i] != "AGE").collect();
    let name_column = head.iter().position(|h| h == "NAME");
    let mut rows: Vec<Vec<String>> = lines
        .map(|l| {
            let row = cells(l);
            keep.iter()
                .map(|&i| {
                    let cell = row.get(i).cloned().unwrap_or_default();
                    match head[i].as_str() {
                        _ if mask_names && Some(i) == name_column => "<generated>".to_string(),
                        "CLUSTER-IP" if cell.parse::<IpAddr>().is_ok() => ranges.describe_ip(&cell),
                        "PORT(S)" => describe_node_ports(&cell, ranges),
                        _ => cell,
                    }
                })
                .collect()
        })
        .collect();
    rows.sort();
    let head: Vec<String> = keep.iter().map(|&i| head[i].clone()).collect();
    json!({"columns": head, "rows": rows})
}

/// `80:31234/TCP,443:30999/TCP` with each NodePort described.
fn describe_node_ports(cell: &str, ranges: &Ranges) -> String {
    cell.split(',')
        .map(|p| match p.split_once(':') {
            Some((port, rest)) => match rest.split_once('/') {
                Some((node_port, proto)) if node_port.parse::<u64>().is_ok() => {
                    let n = node_port.parse::<u64>().unwrap_or_default();
                    format!("{port}:{}/{proto}", ranges.describe_port(n))
                }
                _ => p.to_string(),
            },
            None => p.to_string(),
        })
        .collect::<Vec<_>>()
        .join(",")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bands_follow_kep_3070() {
        let r = Ranges::new("10.96.0.0/24", "30000-32767");
        assert_eq!(r.describe_ip("10.96.0.16"), "<allocated in 10.96.0.0/24, static band>");
        assert_eq!(r.describe_ip("10.96.0.17"), "<allocated in 10.96.0.0/24, dynamic band>");
        assert_eq!(
            r.describe_ip("10.97.0.1"),
            "<allocated outside every service range: 10.97.0.1>"
        );
        let small = Ranges::new("10.96.0.0/28", "30000-30010");
        assert_eq!(small.describe_ip("10.96.0.3"), "<allocated in 10.96.0.0/28, no bands>");
        assert_eq!(small.describe_port(30001), "<allocated port, no bands>");
        assert_eq!(r.describe_port(30085), "<allocated port, static band>");
        assert_eq!(r.describe_port(30086), "<allocated port, dynamic band>");
    }

    #[test]
    fn tables_lose_age_and_generated_names() {
        let text =
            "NAME          ADDRESSTYPE   PORTS   ENDPOINTS   AGE\nweb-x7k2p     IPv4          80      10.0.0.1    5s\n";
        assert_eq!(
            table(text, true, &Ranges::default()),
            json!({"columns": ["NAME", "ADDRESSTYPE", "PORTS", "ENDPOINTS"], "rows": [["<generated>", "IPv4", "80", "10.0.0.1"]]})
        );
    }

    #[test]
    fn slices_differing_only_in_endpoints_are_merged() {
        let ep = |ip: &str| json!({"addresses": [ip]});
        let slice = |name: &str, eps: Vec<Value>| json!({"metadata": {"name": name, "labels": {"kubernetes.io/service-name": "big"}}, "addressType": "IPv4", "ports": [{"port": 80}], "endpoints": eps});
        let one = [
            slice("big-a", vec![ep("10.0.0.2"), ep("10.0.0.3")]),
            slice("big-b", vec![ep("10.0.0.1")]),
        ];
        let other = [
            slice("big-c", vec![ep("10.0.0.3")]),
            slice("big-d", vec![ep("10.0.0.1"), ep("10.0.0.2")]),
        ];
        assert_eq!(slices(&one), slices(&other));
        assert_eq!(
            slices(&one)[0]["<merged slices>"],
            json!("each holds at most 100 endpoints")
        );
        let crowded: Vec<Value> = (0..101).map(|i| ep(&format!("10.0.1.{i}"))).collect();
        let too_big = [slice("big-a", crowded), slice("big-b", vec![ep("10.0.0.1")])];
        assert_eq!(
            slices(&too_big)[0]["<merged slices>"],
            json!("slices over 100 endpoints: [101]")
        );
        let single = [slice("big-a", vec![ep("10.0.0.1")])];
        assert!(slices(&single)[0].get("<merged slices>").is_none());
    }

    #[test]
    fn generated_names_are_masked() {
        let text = r#"The Service "Web_4cdvv" is invalid: metadata.generateName: Invalid value: "Web_": bad"#;
        assert_eq!(
            mask_generated_names(text, "Web_"),
            r#"The Service "Web_<generated>" is invalid: metadata.generateName: Invalid value: "Web_": bad"#
        );
        let long = "a".repeat(60);
        let named = format!("{}x7k2p", &long[..58]);
        assert_eq!(mask_generated_names(&named, &long), format!("{long}<generated>"));
    }

    #[test]
    fn asked_addresses_stay_and_allocated_ones_are_described() {
        let r = Ranges::new("10.96.0.0/24", "30000-32767");
        let stored = json!({"metadata": {"name": "a", "uid": "x"}, "spec": {"clusterIP": "10.96.0.5", "clusterIPs": ["10.96.0.5"], "ports": [{"port": 80, "nodePort": 31000}]}, "status": {"loadBalancer": {}}});
        let asked = json!({"spec": {"clusterIP": "10.96.0.5"}});
        assert_eq!(
            service(&stored, Some(&asked), &r),
            json!({"metadata": {"name": "a"}, "spec": {"clusterIP": "10.96.0.5", "clusterIPs": ["10.96.0.5"], "ports": [{"port": 80, "nodePort": "<allocated port, dynamic band>"}]}})
        );
        assert_eq!(
            service(&stored, None, &r)["spec"]["clusterIP"],
            json!("<allocated in 10.96.0.0/24, static band>")
        );
    }
}
