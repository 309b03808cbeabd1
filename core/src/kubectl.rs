//! Text the way `kubectl` prints it: `kubectl get svc`, `kubectl get
//! endpoints` and `kubectl get endpointslices` tables.
//!
//! Columns follow kubectl's (NAMESPACE first with `-A`):
//! - services: NAME, TYPE, CLUSTER-IP, EXTERNAL-IP, PORT(S);
//! - endpoints: NAME, ENDPOINTS (the first three `ip:port`, then
//!   ` + N more...`);
//! - endpointslices: NAME, ADDRESSTYPE, PORTS, ENDPOINTS (three of each,
//!   then ` + N more...`; `<unset>` when empty);
//! - deployments: NAME, READY, UP-TO-DATE, AVAILABLE (and with `-o wide`
//!   CONTAINERS, IMAGES, SELECTOR).
//!
//! Given the control plane's clock (`now`), each table also has kubectl's
//! AGE column, after the standard columns and before the `-o wide` ones,
//! from the objects' `creationTimestamp` ([`age`]); without it (the
//! behaviour vectors) AGE is left out.

use crate::api::endpoint_slice::{EndpointPort, EndpointSlice};
use crate::api::service::{types, Service};
use crate::api::Deployment;
use crate::api::Endpoints;
use crate::api::ObjectMeta;
use crate::time::Time;
use std::net::IpAddr;

/// kubectl shows at most this many items in a list cell.
const MAX_LISTED: usize = 3;

/// `kubectl get svc` for these Services, one row each, columns padded to
/// the widest cell plus three spaces as kubectl does.
pub fn services_table(services: &[&Service], all_namespaces: bool, now: Option<Time>) -> String {
    services_rows(services, all_namespaces, false, now)
}

/// `kubectl get svc -o wide`: the columns of [`services_table`] and the
/// SELECTOR (`key=value` pairs sorted by key, `<none>` without one).
pub fn services_table_wide(services: &[&Service], all_namespaces: bool, now: Option<Time>) -> String {
    services_rows(services, all_namespaces, true, now)
}

fn services_rows(services: &[&Service], all_namespaces: bool, wide: bool, now: Option<Time>) -> String {
    let mut rows: Vec<Vec<String>> = Vec::new();
    let mut header = vec!["NAME", "TYPE", "CLUSTER-IP", "EXTERNAL-IP", "PORT(S)"];
    if all_namespaces {
        header.insert(0, "NAMESPACE");
    }
    if now.is_some() {
        header.push("AGE");
    }
    if wide {
        header.push("SELECTOR");
    }
    rows.push(header.iter().map(|s| s.to_string()).collect());
    for svc in services {
        let mut row = vec![
            svc.metadata.name.clone(),
            svc.service_type().to_string(),
            cluster_ip(svc),
            external_ip(svc),
            ports(svc),
        ];
        if all_namespaces {
            row.insert(0, svc.metadata.namespace_or_default().to_string());
        }
        row.extend(now.map(|now| age(&svc.metadata, now)));
        if wide {
            row.push(selector(svc));
        }
        rows.push(row);
    }
    table(&rows)
}

/// kubectl's selector cell: `k=v` pairs joined by commas, `<none>` when
/// there is no selector.
fn selector(svc: &Service) -> String {
    match &svc.spec.selector {
        Some(sel) if !sel.is_empty() => sel
            .iter()
            .map(|(k, v)| format!("{k}={v}"))
            .collect::<Vec<_>>()
            .join(","),
        _ => "<none>".into(),
    }
}

/// `kubectl get endpoints` for these Endpoints objects.
pub fn endpoints_table(endpoints: &[&Endpoints], all_namespaces: bool, now: Option<Time>) -> String {
    let mut header = vec!["NAME", "ENDPOINTS"];
    if all_namespaces {
        header.insert(0, "NAMESPACE");
    }
    if now.is_some() {
        header.push("AGE");
    }
    let mut rows: Vec<Vec<String>> = vec![header.iter().map(|s| s.to_string()).collect()];
    for ep in endpoints {
        let mut row = vec![ep.metadata.name.clone(), format_endpoints(ep)];
        if all_namespaces {
            row.insert(0, ep.metadata.namespace_or_default().to_string());
        }
        row.extend(now.map(|now| age(&ep.metadata, now)));
        rows.push(row);
    }
    table(&rows)
}

/// `kubectl get endpointslices` for these slices.
pub fn endpoint_slices_table(slices: &[&EndpointSlice], all_namespaces: bool, now: Option<Time>) -> String {
    let mut header = vec!["NAME", "ADDRESSTYPE", "PORTS", "ENDPOINTS"];
    if all_namespaces {
        header.insert(0, "NAMESPACE");
    }
    if now.is_some() {
        header.push("AGE");
    }
    let mut rows: Vec<Vec<String>> = vec![header.iter().map(|s| s.to_string()).collect()];
    for slice in slices {
        let ports = slice.ports.iter().map(slice_port).collect::<Vec<_>>();
        let addresses = slice
            .endpoints
            .iter()
            .flat_map(|e| e.addresses.iter().cloned())
            .collect::<Vec<_>>();
        let mut row = vec![
            slice.metadata.name.clone(),
            slice.address_type.clone(),
            list_with_more(&ports),
            list_with_more(&addresses),
        ];
        if all_namespaces {
            row.insert(0, slice.metadata.namespace_or_default().to_string());
        }
        row.extend(now.map(|now| age(&slice.metadata, now)));
        rows.push(row);
    }
    table(&rows)
}

/// `kubectl get deployments` (with `wide`, `-o wide`) for these
/// Deployments: READY is ready Pods over `spec.replicas`.
pub fn deployments_table(deployments: &[&Deployment], all_namespaces: bool, wide: bool, now: Option<Time>) -> String {
    let mut header = vec!["NAME", "READY", "UP-TO-DATE", "AVAILABLE"];
    if all_namespaces {
        header.insert(0, "NAMESPACE");
    }
    if now.is_some() {
        header.push("AGE");
    }
    if wide {
        header.extend(["CONTAINERS", "IMAGES", "SELECTOR"]);
    }
    let mut rows: Vec<Vec<String>> = vec![header.iter().map(|s| s.to_string()).collect()];
    for d in deployments {
        let mut row = vec![
            d.metadata.name.clone(),
            format!("{}/{}", d.status.ready_replicas, d.replicas()),
            d.status.updated_replicas.to_string(),
            d.status.available_replicas.to_string(),
        ];
        if all_namespaces {
            row.insert(0, d.metadata.namespace_or_default().to_string());
        }
        row.extend(now.map(|now| age(&d.metadata, now)));
        if wide {
            let containers = &d.spec.template.spec.containers;
            let names: Vec<&str> = containers.iter().map(|c| c.name.as_str()).collect();
            let images: Vec<&str> = containers
                .iter()
                .map(|c| c.extra.get("image").and_then(|i| i.as_str()).unwrap_or_default())
                .collect();
            let selector = d.spec.selector.as_ref().map_or("<none>".into(), |s| s.to_text());
            row.extend([names.join(","), images.join(","), selector]);
        }
        rows.push(row);
    }
    table(&rows)
}

/// The AGE cell of an object at `now`: the time since its
/// `creationTimestamp` as kubectl writes it (`<unknown>` without one).
pub fn age(meta: &ObjectMeta, now: Time) -> String {
    let created = (meta.creation_timestamp.as_ref())
        .and_then(|t| t.as_str())
        .and_then(Time::parse_rfc3339);
    match created {
        Some(created) => human_duration(now.as_millis() as i128 - created.as_millis() as i128),
        None => "<unknown>".into(),
    }
}

/// A duration in milliseconds the way kubectl's AGE column shows it:
/// seconds up to two minutes, then minutes (with seconds under ten
/// minutes), hours (with minutes under eight hours), days (with hours under
/// eight days), years (with days under eight years).
pub fn human_duration(millis: i128) -> String {
    // Whole seconds, truncated toward zero as Go truncates.
    let seconds = millis / 1000;
    if seconds < -1 {
        return "<invalid>".into();
    }
    if seconds < 0 {
        return "0s".into();
    }
    if seconds < 120 {
        return format!("{seconds}s");
    }
    let minutes = seconds / 60;
    let with = |big: i128, unit: &str, small: i128, small_unit: &str| match small {
        0 => format!("{big}{unit}"),
        small => format!("{big}{unit}{small}{small_unit}"),
    };
    if minutes < 10 {
        return with(minutes, "m", seconds % 60, "s");
    }
    if minutes < 180 {
        return format!("{minutes}m");
    }
    let hours = minutes / 60;
    if hours < 8 {
        return with(hours, "h", minutes % 60, "m");
    }
    if hours < 48 {
        return format!("{hours}h");
    }
    let days = hours / 24;
    if hours < 24 * 8 {
        return with(days, "d", hours % 24, "h");
    }
    if hours < 24 * 365 * 2 {
        return format!("{days}d");
    }
    let years = days / 365;
    if hours < 24 * 365 * 8 {
        return with(years, "y", days % 365, "d");
    }
    format!("{years}y")
}

/// kubectl's `formatEndpoints`: ready `ip:port` pairs, subset by subset and
/// port by port; `<none>` without subsets.
fn format_endpoints(ep: &Endpoints) -> String {
    if ep.subsets.is_empty() {
        return "<none>".into();
    }
    let mut pairs: Vec<String> = Vec::new();
    for subset in &ep.subsets {
        if subset.ports.is_empty() {
            pairs.extend(subset.addresses.iter().map(|a| a.ip.clone()));
            continue;
        }
        for port in &subset.ports {
            pairs.extend(subset.addresses.iter().map(|a| host_port(&a.ip, port.port)));
        }
    }
    if pairs.len() > MAX_LISTED {
        format!(
            "{} + {} more...",
            pairs[..MAX_LISTED].join(","),
            pairs.len() - MAX_LISTED
        )
    } else {
        pairs.join(",")
    }
}

/// A slice port as kubectl lists it: the number, else the name, else `*`.
fn slice_port(port: &EndpointPort) -> String {
    match (port.port, &port.name) {
        (Some(number), _) => number.to_string(),
        (None, Some(name)) => name.clone(),
        (None, None) => "*".into(),
    }
}

/// kubectl's `listWithMoreString`: three items, ` + N more...`, or
/// `<unset>` for none.
fn list_with_more(items: &[String]) -> String {
    match items.len() {
        0 => "<unset>".into(),
        n if n > MAX_LISTED => format!("{} + {} more...", items[..MAX_LISTED].join(","), n - MAX_LISTED),
        _ => items.join(","),
    }
}

/// `ip:port`, IPv6 in brackets (Go's `net.JoinHostPort`).
fn host_port(ip: &str, port: i64) -> String {
    match ip.parse::<IpAddr>() {
        Ok(IpAddr::V6(_)) => format!("[{ip}]:{port}"),
        _ => format!("{ip}:{port}"),
    }
}

fn cluster_ip(svc: &Service) -> String {
    if svc.service_type() == types::EXTERNAL_NAME || svc.spec.cluster_ip.is_empty() {
        "<none>".into()
    } else {
        svc.spec.cluster_ip.clone()
    }
}

fn external_ip(svc: &Service) -> String {
    if svc.service_type() == types::EXTERNAL_NAME {
        return svc.spec.external_name.clone().unwrap_or_else(|| "<none>".into());
    }
    let mut ips = svc.spec.external_ips.clone();
    if svc.service_type() == types::LOAD_BALANCER {
        let ingress = svc.load_balancer_ingress();
        ips.extend(
            ingress
                .iter()
                .filter_map(|i| i.ip.clone().or_else(|| i.hostname.clone())),
        );
        if ips.is_empty() {
            return "<pending>".into();
        }
    }
    if ips.is_empty() {
        "<none>".into()
    } else {
        ips.join(",")
    }
}

fn ports(svc: &Service) -> String {
    if svc.spec.ports.is_empty() {
        return "<none>".into();
    }
    let parts: Vec<String> = svc
        .spec
        .ports
        .iter()
        .map(|p| match p.node_port {
            Some(np) => format!("{}:{}/{}", p.port, np, p.protocol),
            None => format!("{}/{}", p.port, p.protocol),
        })
        .collect();
    parts.join(",")
}

/// Rows (the first is the header) as kubectl prints them: each column
/// padded to its widest cell plus three spaces, the last one not padded.
pub fn table(rows: &[Vec<String>]) -> String {
    let columns = rows.first().map_or(0, Vec::len);
    let widths: Vec<usize> = (0..columns)
        .map(|c| {
            rows.iter()
                .map(|r| r.get(c).map_or(0, |s| s.chars().count()))
                .max()
                .unwrap_or(0)
        })
        .collect();
    let mut out = String::new();
    for row in rows {
        let mut line = String::new();
        for (c, cell) in row.iter().enumerate() {
            if c + 1 == row.len() {
                line.push_str(cell);
            } else {
                line.push_str(&format!("{cell:<width$}", width = widths[c] + 3));
            }
        }
        out.push_str(line.trim_end());
        out.push('\n');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::controlplane::{ClusterConfig, ControlPlane};

    #[test]
    fn table_like_kubectl() {
        let mut cp = ControlPlane::new(ClusterConfig {
            seed: 1,
            ..Default::default()
        })
        .unwrap();
        let text = "apiVersion: v1\nkind: Service\nmetadata: {name: web}\nspec:\n  type: NodePort\n  clusterIP: 10.96.0.20\n  ports: [{port: 80, nodePort: 30080}]\n---\napiVersion: v1\nkind: Service\nmetadata: {name: ext}\nspec: {type: ExternalName, externalName: db.example.com}\n";
        for r in cp.apply_manifest(text).unwrap() {
            r.unwrap();
        }
        let services: Vec<&Service> = cp.services().collect();
        assert_eq!(
            services_table(&services, false, None),
            "NAME         TYPE           CLUSTER-IP   EXTERNAL-IP      PORT(S)\n\
             ext          ExternalName   <none>       db.example.com   <none>\n\
             kubernetes   ClusterIP      10.96.0.1    <none>           443/TCP\n\
             web          NodePort       10.96.0.20   <none>           80:30080/TCP\n"
        );
    }

    #[test]
    fn endpoints_table_brackets_ipv6_and_lists_portless_subsets() {
        use crate::api::endpoints::{EndpointAddress, EndpointPort, EndpointSubset};
        let address = |ip: &str| EndpointAddress {
            ip: ip.into(),
            ..EndpointAddress::default()
        };
        let mut v6 = Endpoints::default();
        v6.metadata.name = "v6".into();
        v6.subsets.push(EndpointSubset {
            addresses: vec![address("fd00::1"), address("fd00::2")],
            not_ready_addresses: vec![address("fd00::3")],
            ports: vec![
                EndpointPort {
                    name: Some("a".into()),
                    port: 80,
                    ..EndpointPort::default()
                },
                EndpointPort {
                    name: Some("b".into()),
                    port: 443,
                    ..EndpointPort::default()
                },
            ],
        });
        let mut headless = Endpoints::default();
        headless.metadata.name = "peers".into();
        headless.subsets.push(EndpointSubset {
            addresses: vec![address("10.0.0.1")],
            ..EndpointSubset::default()
        });
        let mut empty = Endpoints::default();
        empty.metadata.name = "empty".into();
        assert_eq!(
            endpoints_table(&[&v6, &headless, &empty], false, None),
            "NAME    ENDPOINTS\n\
             v6      [fd00::1]:80,[fd00::2]:80,[fd00::1]:443 + 1 more...\n\
             peers   10.0.0.1\n\
             empty   <none>\n"
        );
    }

    #[test]
    fn endpoint_slices_table_like_kubectl() {
        use crate::api::endpoint_slice::Endpoint;
        let port = |name: Option<&str>, port: Option<i64>| EndpointPort {
            name: name.map(str::to_string),
            port,
            ..EndpointPort::default()
        };
        let mut slice = EndpointSlice::default();
        slice.metadata.name = "web-abcde".into();
        slice.metadata.namespace = "shop".into();
        slice.address_type = "IPv4".into();
        slice.ports = vec![
            port(Some("http"), Some(80)),
            port(Some("named"), None),
            port(None, None),
            port(None, Some(9)),
        ];
        slice.endpoints = (1..=5)
            .map(|i| Endpoint {
                addresses: vec![format!("10.0.0.{i}")],
                ..Endpoint::default()
            })
            .collect();
        let mut empty = EndpointSlice::default();
        empty.metadata.name = "web-fghij".into();
        empty.address_type = "IPv6".into();
        assert_eq!(
            endpoint_slices_table(&[&slice, &empty], true, None),
            "NAMESPACE   NAME        ADDRESSTYPE   PORTS                    ENDPOINTS\n\
             shop        web-abcde   IPv4          80,named,* + 1 more...   10.0.0.1,10.0.0.2,10.0.0.3 + 2 more...\n\
             default     web-fghij   IPv6          <unset>                  <unset>\n"
        );
    }

    #[test]
    fn ages_read_as_kubectl_writes_them() {
        let s = 1000;
        for (millis, text) in [
            (-5 * s, "<invalid>"),
            (-1500, "0s"),
            (0, "0s"),
            (119 * s, "119s"),
            (120 * s, "2m"),
            (136 * s, "2m16s"),
            (10 * 60 * s, "10m"),
            (179 * 60 * s, "179m"),
            (3 * 3600 * s, "3h"),
            ((3 * 3600 + 5 * 60) * s, "3h5m"),
            (8 * 3600 * s, "8h"),
            (47 * 3600 * s, "47h"),
            (50 * 3600 * s, "2d2h"),
            (8 * 86_400 * s, "8d"),
            (729 * 86_400 * s, "729d"),
            ((2 * 365 + 3) * 86_400 * s, "2y3d"),
            (9 * 365 * 86_400 * s, "9y"),
        ] {
            assert_eq!(human_duration(millis), text, "{millis} ms");
        }
        let mut meta = ObjectMeta::default();
        assert_eq!(age(&meta, Time(5000)), "<unknown>");
        meta.creation_timestamp = Some(serde_json::Value::String(Time(1000).rfc3339()));
        assert_eq!(age(&meta, Time(43_000)), "42s");
    }
}
