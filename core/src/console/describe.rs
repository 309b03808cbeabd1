//! `kubectl describe service` and `kubectl describe endpointslice`, laid
//! out as kubectl lays them out: `Label:` cells padded to the widest label
//! plus two spaces (Go's tabwriter with padding 2), multi-line labels and
//! annotations, one Port/TargetPort/NodePort/Endpoints group per port with
//! the Service's ready endpoints from its EndpointSlices (three, then
//! `+ N more...`), and `Events: <none>` (the core keeps no events).

use crate::api::endpoint_slice::SERVICE_NAME_LABEL;
use crate::api::service::IntOrString;
use crate::api::{EndpointSlice, ObjectMeta, Service};
use crate::collections::SortedMap;

/// kubectl lists at most this many endpoints per port.
const MAX_LISTED: usize = 3;

/// Lines of cells; every cell but a line's last ends a column.
#[derive(Default)]
struct Writer {
    lines: Vec<Vec<String>>,
}

impl Writer {
    fn line(&mut self, cells: &[&str]) {
        self.lines.push(cells.iter().map(|c| c.to_string()).collect());
    }

    /// `Label:` and a map, one `k=v` (or `k: v`) per line, `<none>` when empty.
    fn map(&mut self, label: &str, map: &SortedMap<String, String>, separator: &str) {
        if map.is_empty() {
            self.line(&[label, "<none>"]);
        }
        for (i, (k, v)) in map.iter().enumerate() {
            let cell = format!("{k}{separator}{v}");
            self.line(&[if i == 0 { label } else { "" }, &cell]);
        }
    }

    /// The text, aligned as Go's tabwriter aligns it with padding 2: a
    /// column is as wide as its widest cell in each run of consecutive
    /// lines that have a cell ending there.
    fn finish(self) -> String {
        let mut widths = vec![Vec::new(); self.lines.len()];
        let columns = self.lines.iter().map(|l| l.len().saturating_sub(1)).max().unwrap_or(0);
        for column in 0..columns {
            let mut start = 0;
            while start < self.lines.len() {
                let has = |i: usize| self.lines[i].len() > column + 1;
                if !has(start) {
                    start += 1;
                    continue;
                }
                let mut end = start;
                while end < self.lines.len() && has(end) {
                    end += 1;
                }
                let width = (start..end)
                    .map(|i| self.lines[i][column].chars().count())
                    .max()
                    .unwrap_or(0)
                    + 2;
                for row in &mut widths[start..end] {
                    row.push(width);
                }
                start = end;
            }
        }
        let mut out = String::new();
        for (cells, widths) in self.lines.iter().zip(widths) {
            for (i, cell) in cells.iter().enumerate() {
                match widths.get(i) {
                    Some(&width) if i + 1 < cells.len() => out.push_str(&format!("{cell:<width$}")),
                    _ => out.push_str(cell),
                }
            }
            out.push('\n');
        }
        out
    }
}

fn header(w: &mut Writer, meta: &ObjectMeta) {
    w.line(&["Name:", &meta.name]);
    w.line(&["Namespace:", meta.namespace_or_default()]);
    w.map("Labels:", &meta.labels, "=");
    w.map("Annotations:", &meta.annotations, ": ");
}

/// `kubectl describe service`, given the Service's EndpointSlices.
pub fn service(svc: &Service, slices: &[&EndpointSlice]) -> String {
    let mut w = Writer::default();
    header(&mut w, &svc.metadata);
    let selector = match &svc.spec.selector {
        Some(s) if !s.is_empty() => s.iter().map(|(k, v)| format!("{k}={v}")).collect::<Vec<_>>().join(","),
        _ => "<none>".to_string(),
    };
    w.line(&["Selector:", &selector]);
    w.line(&["Type:", svc.service_type()]);
    if let Some(policy) = &svc.spec.ip_family_policy {
        w.line(&["IP Family Policy:", policy]);
    }
    let or_none = |items: &[String]| match items {
        [] => "<none>".to_string(),
        items => items.join(","),
    };
    w.line(&["IP Families:", &or_none(&svc.spec.ip_families)]);
    w.line(&["IP:", &svc.spec.cluster_ip]);
    w.line(&["IPs:", &or_none(&svc.spec.cluster_ips)]);
    if !svc.spec.external_ips.is_empty() {
        w.line(&["External IPs:", &svc.spec.external_ips.join(",")]);
    }
    if let Some(ip) = &svc.spec.load_balancer_ip {
        w.line(&["IP:", ip]);
    }
    let ingress: Vec<String> = (svc.status.load_balancer.iter())
        .flat_map(|lb| &lb.ingress)
        .filter_map(|i| i.ip.clone().or_else(|| i.hostname.clone()))
        .collect();
    if !ingress.is_empty() {
        w.line(&["LoadBalancer Ingress:", &ingress.join(", ")]);
    }
    for port in &svc.spec.ports {
        let name = if port.name.is_empty() { "<unset>" } else { &port.name };
        let protocol = if port.protocol.is_empty() {
            "TCP"
        } else {
            &port.protocol
        };
        w.line(&["Port:", name, &format!("{}/{protocol}", port.port)]);
        let target = match &port.target_port {
            Some(IntOrString::Int(n)) => n.to_string(),
            Some(IntOrString::Str(s)) => s.clone(),
            None => port.port.to_string(),
        };
        w.line(&["TargetPort:", &format!("{target}/{protocol}")]);
        if let Some(node_port) = port.node_port.filter(|p| *p != 0) {
            w.line(&["NodePort:", name, &format!("{node_port}/{protocol}")]);
        }
        w.line(&["Endpoints:", &endpoints(slices, &port.name)]);
    }
    let affinity = if svc.spec.session_affinity.is_empty() {
        "None"
    } else {
        &svc.spec.session_affinity
    };
    w.line(&["Session Affinity:", affinity]);
    if let Some(policy) = &svc.spec.external_traffic_policy {
        w.line(&["External Traffic Policy:", policy]);
    }
    if let Some(port) = svc.spec.health_check_node_port.filter(|p| *p != 0) {
        w.line(&["HealthCheck NodePort:", &port.to_string()]);
    }
    if !svc.spec.load_balancer_source_ranges.is_empty() {
        w.line(&[
            "LoadBalancer Source Ranges:",
            &svc.spec.load_balancer_source_ranges.join(","),
        ]);
    }
    if let Some(policy) = &svc.spec.internal_traffic_policy {
        w.line(&["Internal Traffic Policy:", policy]);
    }
    w.line(&["Events:", "<none>"]);
    w.finish()
}

/// The ready endpoints of the slices' port named `port` as `ip:port`,
/// three at most and then `+ N more...`; `<none>` without slices. Like
/// kubectl, the list counts as full once it holds three entries, even
/// when the endpoint that follows is not ready.
fn endpoints(slices: &[&EndpointSlice], port: &str) -> String {
    if slices.is_empty() {
        return "<none>".into();
    }
    let mut list = Vec::new();
    let (mut more, mut count) = (false, 0);
    for slice in slices {
        let numbers: Vec<Option<i64>> = if slice.ports.is_empty() {
            vec![None]
        } else {
            (slice.ports.iter())
                .filter(|p| p.name.as_deref().unwrap_or("") == port)
                .map(|p| Some(p.port.unwrap_or(0)))
                .collect()
        };
        for number in numbers {
            for endpoint in &slice.endpoints {
                if list.len() == MAX_LISTED {
                    more = true;
                }
                let Some(address) = endpoint.addresses.first() else {
                    continue;
                };
                if endpoint.conditions.ready == Some(false) {
                    continue;
                }
                if !more {
                    list.push(match number {
                        None => address.clone(),
                        Some(n) if address.contains(':') => format!("[{address}]:{n}"),
                        Some(n) => format!("{address}:{n}"),
                    });
                }
                count += 1;
            }
        }
    }
    let text = list.join(",");
    if more {
        format!("{text} + {} more...", count - MAX_LISTED)
    } else {
        text
    }
}

/// `kubectl describe endpointslice`: one aligned text, where the lines
/// without a value (`Ports:`, `Endpoints:`, `Conditions:`) end a run of
/// aligned lines, as in kubectl.
pub fn endpoint_slice(slice: &EndpointSlice) -> String {
    let mut w = Writer::default();
    header(&mut w, &slice.metadata);
    w.line(&["AddressType:", &slice.address_type]);
    w.line(&["Ports:"]);
    w.line(&["  Name", "Port", "Protocol"]);
    w.line(&["  ----", "----", "--------"]);
    for port in &slice.ports {
        let number = port.port.map_or("<unset>".to_string(), |p| p.to_string());
        let name = port.name.as_deref().filter(|n| !n.is_empty()).unwrap_or("<unset>");
        w.line(&[&format!("  {name}"), &number, port.protocol.as_deref().unwrap_or("TCP")]);
    }
    w.line(&["Endpoints:"]);
    let flag = |b: Option<bool>| b.map_or("<unset>".to_string(), |b| b.to_string());
    for endpoint in &slice.endpoints {
        w.line(&["  - Addresses:", &endpoint.addresses.join(",")]);
        w.line(&["    Conditions:"]);
        w.line(&["      Ready:", &flag(endpoint.conditions.ready)]);
        w.line(&["    Hostname:", endpoint.hostname.as_deref().unwrap_or("<unset>")]);
        if let Some(target) = &endpoint.target_ref {
            w.line(&["    TargetRef:", &format!("{}/{}", target.kind, target.name)]);
        }
        w.line(&["    NodeName:", endpoint.node_name.as_deref().unwrap_or("<unset>")]);
        w.line(&["    Zone:", endpoint.zone.as_deref().unwrap_or("<unset>")]);
    }
    w.line(&["Events:", "<none>"]);
    w.finish()
}

/// The slices of `svc`, by the `kubernetes.io/service-name` label.
pub fn slices_of<'a>(svc: &Service, slices: impl Iterator<Item = &'a EndpointSlice>) -> Vec<&'a EndpointSlice> {
    slices
        .filter(|s| {
            s.metadata.namespace_or_default() == svc.metadata.namespace_or_default()
                && s.metadata.labels.get(SERVICE_NAME_LABEL) == Some(&svc.metadata.name)
        })
        .collect()
}
