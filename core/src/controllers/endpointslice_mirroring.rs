//! The EndpointSlice mirroring controller: a hand-written `v1/Endpoints`
//! of a Service without a selector becomes EndpointSlices, so that
//! everything reading slices (kube-proxy, svcnet's agent, DNS) sees it.
//!
//! What kube-controller-manager's mirroring controller does:
//!
//! - only when the Service exists, has no selector, and the Endpoints is
//!   not labelled `endpointslice.kubernetes.io/skip-mirror: "true"`;
//! - the subsets first brought to their canonical form
//!   ([`repack_subsets`]), then one group of endpoints per address type and
//!   set of ports, split into slices of at most 1000;
//! - each address becomes an endpoint with only a `ready` condition (true
//!   for `addresses`, false for `notReadyAddresses`), its hostname, node
//!   name and target; an address that is not an IP is skipped, and an
//!   address already in its group is not repeated;
//! - at most 1000 addresses of each canonical subset are mirrored;
//! - the slices carry the Endpoints' labels and annotations (less
//!   kubectl's last-applied configuration and the last-change trigger
//!   time), `kubernetes.io/service-name`, the mirroring controller's
//!   `managed-by` label, and the Endpoints as their controlling owner.

use crate::api::endpoint_slice::{
    self, Endpoint, EndpointConditions, EndpointPort, EndpointSlice, MANAGED_BY_LABEL, SERVICE_NAME_LABEL,
    SKIP_MIRROR_LABEL,
};
use crate::api::endpoints::{EndpointAddress, EndpointSubset};
use crate::api::{Endpoints, ObjectMeta};
use crate::controllers::endpoints::repack_subsets;
use crate::family::IpFamily;
use std::net::IpAddr;

/// The `managed-by` label value of mirrored slices.
pub const MANAGED_BY_MIRRORING: &str = "endpointslicemirroring-controller.k8s.io";

/// At most this many addresses of a subset are mirrored, and at most this
/// many endpoints go in one mirrored slice (kube-controller-manager's
/// `--mirroring-max-endpoints-per-subset` default).
pub const MAX_ENDPOINTS_PER_SUBSET: usize = 1000;

/// Annotations of the Endpoints that its slices do not copy.
const NOT_MIRRORED_ANNOTATIONS: [&str; 2] = [
    "kubectl.kubernetes.io/last-applied-configuration",
    "endpoints.kubernetes.io/last-change-trigger-time",
];

/// Whether an Endpoints asks not to be mirrored.
pub fn skips_mirroring(endpoints: &Endpoints) -> bool {
    endpoints.metadata.labels.get(SKIP_MIRROR_LABEL).map(String::as_str) == Some("true")
}

/// Whether a slice was written by the mirroring controller.
pub fn is_mirrored(slice: &EndpointSlice) -> bool {
    slice.metadata.labels.get(MANAGED_BY_LABEL).map(String::as_str) == Some(MANAGED_BY_MIRRORING)
}

/// The slices that mirror `endpoints`, without names: the caller gives
/// each the name of the `existing` mirrored slice with the same address
/// type and ports, or a new one. The caller has checked that the Service
/// exists without a selector and that the Endpoints is not skipped.
pub fn mirrored_slices(endpoints: &Endpoints, existing: &[&EndpointSlice]) -> Vec<EndpointSlice> {
    let mut groups: Vec<(String, Vec<EndpointPort>, Vec<Endpoint>)> = Vec::new();
    for subset in repack_subsets(&endpoints.subsets) {
        let ports = slice_ports(&subset);
        let ready = subset.addresses.iter().map(|a| (a, true));
        let not_ready = subset.not_ready_addresses.iter().map(|a| (a, false));
        let mut mirrored = 0;
        for (address, is_ready) in ready.chain(not_ready) {
            if mirrored == MAX_ENDPOINTS_PER_SUBSET {
                break;
            }
            let Ok(ip) = address.ip.parse::<IpAddr>() else {
                continue;
            };
            mirrored += 1;
            let address_type = match IpFamily::of(ip) {
                IpFamily::IPv4 => endpoint_slice::address_types::IPV4,
                IpFamily::IPv6 => endpoint_slice::address_types::IPV6,
            };
            let group = match groups.iter().position(|(t, p, _)| t == address_type && *p == ports) {
                Some(i) => &mut groups[i].2,
                None => {
                    groups.push((address_type.to_string(), ports.clone(), Vec::new()));
                    &mut groups.last_mut().expect("just pushed").2
                }
            };
            if !group.iter().any(|e| e.addresses == [address.ip.clone()]) {
                group.push(endpoint(address, is_ready));
            }
        }
    }
    let mut unused: Vec<&EndpointSlice> = existing.to_vec();
    let mut slices = Vec::new();
    for (address_type, ports, group) in groups {
        for chunk in group.chunks(MAX_ENDPOINTS_PER_SUBSET) {
            let mut slice = EndpointSlice {
                api_version: "discovery.k8s.io/v1".into(),
                kind: "EndpointSlice".into(),
                metadata: slice_meta(endpoints),
                address_type: address_type.clone(),
                endpoints: chunk.to_vec(),
                ports: ports.clone(),
            };
            if let Some(i) = unused
                .iter()
                .position(|s| s.address_type == address_type && s.ports == ports)
            {
                slice.metadata.name = unused.remove(i).metadata.name.clone();
            }
            slices.push(slice);
        }
    }
    slices
}

/// The subset's ports as slice ports, in their order.
fn slice_ports(subset: &EndpointSubset) -> Vec<EndpointPort> {
    subset
        .ports
        .iter()
        .map(|p| EndpointPort {
            name: Some(p.name.clone().unwrap_or_default()),
            protocol: p.protocol.clone(),
            port: Some(p.port),
            app_protocol: p.app_protocol.clone(),
        })
        .collect()
}

fn endpoint(address: &EndpointAddress, ready: bool) -> Endpoint {
    Endpoint {
        addresses: vec![address.ip.clone()],
        conditions: EndpointConditions {
            ready: Some(ready),
            serving: None,
            terminating: None,
        },
        hostname: address.hostname.clone().filter(|h| !h.is_empty()),
        target_ref: address.target_ref.clone().map(Box::new),
        node_name: address.node_name.clone().filter(|n| !n.is_empty()),
        zone: None,
        hints: None,
    }
}

/// Labels, annotations, owner and name prefix of a mirrored slice.
fn slice_meta(endpoints: &Endpoints) -> ObjectMeta {
    let source = &endpoints.metadata;
    let mut meta = ObjectMeta {
        namespace: source.namespace_or_default().to_string(),
        labels: source.labels.clone(),
        annotations: source.annotations.clone(),
        generate_name: Some(serde_json::Value::String(format!("{}-", source.name))),
        owner_references: Some(serde_json::json!([{
            "apiVersion": "v1",
            "kind": "Endpoints",
            "name": source.name,
            "uid": source.uid,
            "controller": true,
            "blockOwnerDeletion": true,
        }])),
        ..ObjectMeta::default()
    };
    for key in NOT_MIRRORED_ANNOTATIONS {
        meta.annotations.remove(key);
    }
    meta.labels.insert(SERVICE_NAME_LABEL.into(), source.name.clone());
    meta.labels.insert(MANAGED_BY_LABEL.into(), MANAGED_BY_MIRRORING.into());
    meta
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::api::manifest::{parse_manifests, Object};

    fn endpoints(yaml: &str) -> Endpoints {
        match parse_manifests(yaml).unwrap().remove(0) {
            Object::Endpoints(e) => *e,
            other => panic!("not an Endpoints: {other:?}"),
        }
    }

    const EXT: &str = "apiVersion: v1\nkind: Endpoints\nmetadata: {name: ext, labels: {team: a}, annotations: {note: x, kubectl.kubernetes.io/last-applied-configuration: '{}'}}\nsubsets:\n- addresses: [{ip: 192.0.2.10, hostname: h1, nodeName: n1}, {ip: 192.0.2.11}, {ip: '2001:db8::1'}, {ip: not-an-ip}]\n  notReadyAddresses: [{ip: 192.0.2.12}]\n  ports: [{name: http, port: 8080, protocol: TCP}]\n- addresses: [{ip: 192.0.2.11}, {ip: 192.0.2.13}]\n  ports: [{name: http, port: 8080, protocol: TCP}]\n- addresses: [{ip: 192.0.2.20}]\n  ports: [{name: http, port: 9090, protocol: TCP}]\n";

    #[test]
    fn one_slice_per_address_type_and_ports() {
        let slices = mirrored_slices(&endpoints(EXT), &[]);
        let summary: Vec<(String, i64, Vec<String>)> = slices
            .iter()
            .map(|s| {
                let ips = s.endpoints.iter().map(|e| e.addresses[0].clone()).collect();
                (s.address_type.clone(), s.ports[0].port.unwrap(), ips)
            })
            .collect();
        let ips = |v: &[&str]| v.iter().map(ToString::to_string).collect::<Vec<_>>();
        assert_eq!(
            summary,
            vec![
                (
                    "IPv4".into(),
                    8080,
                    ips(&["192.0.2.10", "192.0.2.11", "192.0.2.13", "192.0.2.12"])
                ),
                ("IPv6".into(), 8080, ips(&["2001:db8::1"])),
                ("IPv4".into(), 9090, ips(&["192.0.2.20"])),
            ]
        );
        let first = &slices[0];
        assert_eq!(first.endpoints[0].hostname.as_deref(), Some("h1"));
        assert_eq!(first.endpoints[3].conditions.ready, Some(false));
        assert_eq!(first.endpoints[3].conditions.serving, None);
        assert_eq!(
            first.metadata.labels.get(MANAGED_BY_LABEL).unwrap(),
            MANAGED_BY_MIRRORING
        );
        assert_eq!(first.metadata.labels.get("team").unwrap(), "a");
        assert_eq!(first.metadata.labels.get(SERVICE_NAME_LABEL).unwrap(), "ext");
        assert_eq!(first.metadata.annotations.keys().collect::<Vec<_>>(), vec!["note"]);
        assert!(is_mirrored(first));
    }

    #[test]
    fn ports_with_an_app_protocol_from_different_subsets_stay_apart() {
        // Kubernetes compares appProtocol by pointer when it repacks the
        // subsets, so these two subsets give one slice per port.
        let yaml = "apiVersion: v1\nkind: Endpoints\nmetadata: {name: e}\nsubsets:\n- addresses: [{ip: 192.0.2.10}]\n  ports: [{name: http, port: 8080, protocol: TCP}, {name: dns, port: 53, protocol: UDP, appProtocol: dns}]\n- addresses: [{ip: 192.0.2.20}]\n  ports: [{name: http, port: 8080, protocol: TCP}, {name: dns, port: 53, protocol: UDP, appProtocol: dns}]\n";
        let slices = mirrored_slices(&endpoints(yaml), &[]);
        let ports: Vec<Vec<String>> = slices
            .iter()
            .map(|s| s.ports.iter().map(|p| p.name.clone().unwrap_or_default()).collect())
            .collect();
        assert_eq!(ports, vec![vec!["dns".to_string()], vec!["http".to_string()]]);
        assert!(slices.iter().all(|s| s.endpoints.len() == 2));
        let without = yaml.replace(", appProtocol: dns", "");
        assert_eq!(mirrored_slices(&endpoints(&without), &[]).len(), 1);
    }

    #[test]
    fn existing_slices_keep_their_names() {
        let mut old = mirrored_slices(&endpoints(EXT), &[]);
        old[1].metadata.name = "ext-v6abc".into();
        let again = mirrored_slices(&endpoints(EXT), &[&old[1]]);
        assert_eq!(again[1].metadata.name, "ext-v6abc");
        assert!(again[0].metadata.name.is_empty());
    }

    #[test]
    fn a_subset_is_mirrored_up_to_1000_addresses() {
        let addresses: Vec<String> = (0..1100)
            .map(|i| format!("{{ip: 10.1.{}.{}}}", i / 250, i % 250 + 1))
            .collect();
        let yaml = format!(
            "apiVersion: v1\nkind: Endpoints\nmetadata: {{name: big}}\nsubsets:\n- addresses: [{}]\n  ports: [{{port: 80, protocol: TCP}}]\n",
            addresses.join(", ")
        );
        let slices = mirrored_slices(&endpoints(&yaml), &[]);
        assert_eq!(slices.len(), 1);
        assert_eq!(slices[0].endpoints.len(), MAX_ENDPOINTS_PER_SUBSET);
    }

    #[test]
    fn skip_mirror_is_read_from_the_label() {
        let mut e = endpoints(EXT);
        assert!(!skips_mirroring(&e));
        e.metadata.labels.insert(SKIP_MIRROR_LABEL.into(), "true".into());
        assert!(skips_mirroring(&e));
    }
}
