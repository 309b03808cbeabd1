//! The legacy `v1/Endpoints` view of a Service, derived from its
//! EndpointSlices the way the Endpoints controller would write it:
//!
//! - only the Service's primary IP family (`ipFamilies[0]`);
//! - ready endpoints in `addresses`; not-ready ones in `notReadyAddresses`;
//!   terminating, not-ready ones nowhere (the Endpoints controller drops
//!   terminating Pods unless `publishNotReadyAddresses`);
//! - addresses that serve exactly the same ports share a subset
//!   (`RepackSubsets`); addresses sorted by IP text then uid;
//! - at most 1,000 addresses, then truncated and annotated
//!   ([`super::endpoints_capacity`]);
//! - labels: the Service's, plus `service.kubernetes.io/headless` for a
//!   headless Service and `endpoints.kubernetes.io/managed-by:
//!   endpoint-controller`; `kubernetes` carries only
//!   `endpointslice.kubernetes.io/skip-mirror: "true"`.
//!
//! Kubernetes orders ports and subsets by a hash of their contents; here
//! ports are sorted by name, number and protocol, and subsets by their
//! first address, which is just as deterministic and easier to read.

use super::endpoints_capacity as capacity;
use crate::api::endpoint_slice::{Endpoint, EndpointSlice, HEADLESS_LABEL, SKIP_MIRROR_LABEL};
use crate::api::endpoints::{EndpointAddress, EndpointPort, EndpointSubset, Endpoints};
use crate::api::{ObjectMeta, Service};
use crate::apiserver::kubernetes_service::is_kubernetes_service;
use crate::collections::SortedMap;
use crate::family::IpFamily;
use std::net::IpAddr;

/// The Endpoints object of `service`, from `slices` (those labelled with its
/// name, in its namespace).
pub fn endpoints_from_slices(service: &Service, slices: &[&EndpointSlice]) -> Endpoints {
    let primary = primary_family(service);
    // Port (None for a headless Service without ports) -> address -> ready.
    let mut by_port: SortedMap<PortKey, AddressSet> = SortedMap::new();
    let wanted = slices
        .iter()
        .filter(|s| s.family().is_some_and(|f| primary.is_none_or(|p| p == f)));
    for slice in wanted {
        let ports: Vec<PortKey> = if slice.ports.is_empty() {
            // A slice without ports for a Service with ports holds Pods
            // none of whose ports resolved: the Endpoints controller
            // leaves those Pods out.
            if !service.spec.ports.is_empty() {
                continue;
            }
            vec![(None, None)]
        } else {
            slice
                .ports
                .iter()
                .filter_map(legacy_port)
                .map(|p| (Some(p), None))
                .collect()
        };
        for endpoint in &slice.endpoints {
            let Some(ready) = listed_as(endpoint) else {
                continue;
            };
            for address in endpoint_addresses(endpoint) {
                let key = AddressKey::of(&address);
                for port in &ports {
                    let entry = by_port
                        .entry(port.clone())
                        .or_default()
                        .entry(key.clone())
                        .or_insert_with(|| (address.clone(), ready));
                    // Not ready anywhere means not ready (mapAddressByPort).
                    entry.1 &= ready;
                }
            }
        }
    }
    let mut subsets = repack(by_port);
    let mut annotations = SortedMap::new();
    if capacity::truncate(&mut subsets) {
        annotations.insert(capacity::OVER_CAPACITY_ANNOTATION.to_string(), "truncated".to_string());
    }
    Endpoints {
        api_version: "v1".into(),
        kind: "Endpoints".into(),
        metadata: ObjectMeta {
            name: service.metadata.name.clone(),
            namespace: service.metadata.namespace_or_default().to_string(),
            labels: endpoints_labels(service),
            annotations,
            // Written when the Service was: the controller follows at once.
            creation_timestamp: service.metadata.creation_timestamp.clone(),
            ..ObjectMeta::default()
        },
        subsets,
    }
}

/// The Service's primary family, if it has one.
fn primary_family(service: &Service) -> Option<IpFamily> {
    service
        .spec
        .ip_families
        .first()
        .and_then(|f| IpFamily::parse(f))
        .or_else(|| service.spec.cluster_ip.parse::<IpAddr>().ok().map(IpFamily::of))
}

/// Whether `endpoint` is listed as ready (`Some(true)`), not ready
/// (`Some(false)`) or not at all (`None`: terminating and not ready).
fn listed_as(endpoint: &Endpoint) -> Option<bool> {
    let ready = endpoint.conditions.is_ready();
    (ready || !endpoint.conditions.is_terminating()).then_some(ready)
}

/// The legacy addresses of one endpoint (one per address).
fn endpoint_addresses(endpoint: &Endpoint) -> Vec<EndpointAddress> {
    endpoint
        .addresses
        .iter()
        .map(|ip| EndpointAddress {
            ip: ip.clone(),
            hostname: endpoint.hostname.clone(),
            node_name: endpoint.node_name.clone(),
            target_ref: endpoint.target_ref.as_deref().cloned(),
        })
        .collect()
}

/// A slice port as a legacy port; ports without a number are skipped.
fn legacy_port(port: &crate::api::endpoint_slice::EndpointPort) -> Option<EndpointPort> {
    Some(EndpointPort {
        name: port.name.clone().filter(|n| !n.is_empty()),
        port: port.port?,
        protocol: port.protocol.clone(),
        app_protocol: port.app_protocol.clone(),
    })
}

/// The label the Endpoints controller marks its objects with, and its value.
const MANAGED_BY_LABEL: &str = "endpoints.kubernetes.io/managed-by";
const MANAGED_BY: &str = "endpoint-controller";

/// The Endpoints labels of `service`.
fn endpoints_labels(service: &Service) -> SortedMap<String, String> {
    if is_kubernetes_service(service.metadata.namespace_or_default(), &service.metadata.name) {
        return SortedMap::from([(SKIP_MIRROR_LABEL.to_string(), "true".to_string())]);
    }
    let mut labels = service.metadata.labels.clone();
    if service.is_headless() || service.spec.cluster_ip.is_empty() {
        labels.insert(HEADLESS_LABEL.into(), String::new());
    } else {
        labels.remove(HEADLESS_LABEL);
    }
    labels.insert(MANAGED_BY_LABEL.into(), MANAGED_BY.into());
    labels
}

/// Identity and order of a legacy address: IP text, then target uid.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
struct AddressKey {
    ip: String,
    uid: String,
}

impl AddressKey {
    fn of(address: &EndpointAddress) -> AddressKey {
        AddressKey {
            ip: address.ip.clone(),
            uid: address.target_ref.as_ref().map(|t| t.uid.clone()).unwrap_or_default(),
        }
    }
}

/// Addresses, each with whether it is ready, by identity.
type AddressSet = SortedMap<AddressKey, (EndpointAddress, bool)>;

/// The ports a set of addresses serves, and those addresses.
type Subset = (Vec<EndpointPort>, Vec<(EndpointAddress, bool)>);

/// A port as `RepackSubsets` tells ports apart: by value (`None` for a
/// subset without ports), except that Go compares the `appProtocol`
/// pointer, so equal ports with an `appProtocol` that come from different
/// written subsets stay apart; the subset's index stands in for the
/// pointer. Ports the Endpoints controller builds share one pointer per
/// Service port, so theirs is `None`.
type PortKey = (Option<EndpointPort>, Option<usize>);

/// Written subsets in kube-apiserver's canonical form (`RepackSubsets`):
/// each address once (the first written, by IP and target uid), not
/// ready if it is not ready for a port anywhere, and ports that serve the
/// same addresses in one subset.
pub fn repack_subsets(subsets: &[EndpointSubset]) -> Vec<EndpointSubset> {
    let mut by_port: SortedMap<PortKey, AddressSet> = SortedMap::new();
    let mut first_written: SortedMap<AddressKey, EndpointAddress> = SortedMap::new();
    for (i, subset) in subsets.iter().enumerate() {
        let ports: Vec<PortKey> = if subset.ports.is_empty() {
            vec![(None, None)]
        } else {
            subset
                .ports
                .iter()
                .map(|p| (Some(p.clone()), p.app_protocol.is_some().then_some(i)))
                .collect()
        };
        let ready = subset.addresses.iter().map(|a| (a, true));
        let not_ready = subset.not_ready_addresses.iter().map(|a| (a, false));
        let addresses: Vec<(&EndpointAddress, bool)> = ready.chain(not_ready).collect();
        for port in ports {
            for (address, ready) in &addresses {
                let key = AddressKey::of(address);
                let address = first_written.entry(key.clone()).or_insert_with(|| (*address).clone());
                let entry = by_port
                    .entry(port.clone())
                    .or_default()
                    .entry(key)
                    .or_insert_with(|| (address.clone(), *ready));
                entry.1 &= *ready;
            }
        }
    }
    repack(by_port)
}

/// Groups ports whose addresses (with readiness) are identical into subsets.
fn repack(by_port: SortedMap<PortKey, AddressSet>) -> Vec<EndpointSubset> {
    let mut grouped: SortedMap<Vec<(AddressKey, bool)>, Subset> = SortedMap::new();
    for (port, addresses) in by_port {
        let key: Vec<(AddressKey, bool)> = addresses.iter().map(|(k, (_, ready))| (k.clone(), *ready)).collect();
        let entry = grouped
            .entry(key)
            .or_insert_with(|| (Vec::new(), addresses.into_values().collect()));
        entry.0.extend(port.0);
    }
    let mut subsets: Vec<EndpointSubset> = grouped
        .into_values()
        .map(|(mut ports, addresses)| {
            crate::sort::sort(&mut ports);
            let (ready, not_ready): (Vec<_>, Vec<_>) = addresses.into_iter().partition(|(_, ready)| *ready);
            EndpointSubset {
                addresses: ready.into_iter().map(|(a, _)| a).collect(),
                not_ready_addresses: not_ready.into_iter().map(|(a, _)| a).collect(),
                ports,
            }
        })
        .collect();
    crate::sort::sort_by(&mut subsets, |a, b| {
        first_ip(a).cmp(&first_ip(b)).then_with(|| a.ports.cmp(&b.ports))
    });
    subsets
}

/// The first address of a subset, ready or not, for ordering subsets.
fn first_ip(subset: &EndpointSubset) -> Option<&str> {
    subset
        .addresses
        .first()
        .or(subset.not_ready_addresses.first())
        .map(|a| a.ip.as_str())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::api::endpoint_slice::{EndpointConditions, EndpointPort as SlicePort};

    fn endpoint(ip: &str, ready: bool, terminating: bool) -> Endpoint {
        Endpoint {
            addresses: vec![ip.into()],
            conditions: EndpointConditions {
                ready: Some(ready),
                serving: Some(ready),
                terminating: Some(terminating),
            },
            ..Endpoint::default()
        }
    }

    fn slice(family: &str, ports: &[(&str, i64)], endpoints: Vec<Endpoint>) -> EndpointSlice {
        EndpointSlice {
            address_type: family.into(),
            endpoints,
            ports: ports
                .iter()
                .map(|(n, p)| SlicePort {
                    name: Some(n.to_string()),
                    protocol: Some("TCP".into()),
                    port: Some(*p),
                    app_protocol: None,
                })
                .collect(),
            ..EndpointSlice::default()
        }
    }

    fn service() -> Service {
        let mut s = Service::default();
        s.metadata.name = "web".into();
        s.spec.cluster_ip = "10.96.0.10".into();
        s.spec.ip_families = vec!["IPv4".into(), "IPv6".into()];
        s
    }

    #[test]
    fn subsets_group_by_ports_and_split_readiness() {
        let a = slice(
            "IPv4",
            &[("", 8080)],
            vec![
                endpoint("10.0.0.9", true, false),
                endpoint("10.0.0.10", false, false),
                endpoint("10.0.0.11", false, true),
            ],
        );
        let b = slice("IPv4", &[("", 9090)], vec![endpoint("10.0.0.2", true, false)]);
        let v6 = slice("IPv6", &[("", 8080)], vec![endpoint("fd00::1", true, false)]);
        let ep = endpoints_from_slices(&service(), &[&a, &b, &v6]);
        let text = serde_json::to_string(&ep.subsets).unwrap();
        assert_eq!(
            text,
            r#"[{"addresses":[{"ip":"10.0.0.2"}],"ports":[{"port":9090,"protocol":"TCP"}]},{"addresses":[{"ip":"10.0.0.9"}],"notReadyAddresses":[{"ip":"10.0.0.10"}],"ports":[{"port":8080,"protocol":"TCP"}]}]"#
        );
    }

    #[test]
    fn ports_served_by_the_same_addresses_share_a_subset() {
        let a = slice(
            "IPv4",
            &[("http", 80), ("https", 443)],
            vec![endpoint("10.0.0.1", true, false)],
        );
        let ep = endpoints_from_slices(&service(), &[&a]);
        assert_eq!(ep.subsets.len(), 1);
        assert_eq!(ep.subsets[0].ports.len(), 2);
        let mut headless = service();
        headless.spec.cluster_ip = "None".into();
        let none = slice("IPv4", &[], vec![endpoint("10.0.0.1", true, false)]);
        let ep = endpoints_from_slices(&headless, &[&none]);
        assert!(ep.subsets[0].ports.is_empty());
        assert_eq!(ep.metadata.labels.get(HEADLESS_LABEL).map(String::as_str), Some(""));
    }

    #[test]
    fn past_a_thousand_addresses_the_object_is_truncated_and_says_so() {
        let ips = |from: usize, n: usize| -> Vec<Endpoint> {
            (from..from + n)
                .map(|i| endpoint(&format!("10.1.{}.{}", i / 200, i % 200), true, false))
                .collect()
        };
        let slices: Vec<EndpointSlice> = (0..11).map(|k| slice("IPv4", &[("", 80)], ips(k * 100, 100))).collect();
        let refs: Vec<&EndpointSlice> = slices.iter().collect();
        let ep = endpoints_from_slices(&service(), &refs);
        assert_eq!(ep.subsets.iter().map(|s| s.addresses.len()).sum::<usize>(), 1000);
        assert_eq!(
            ep.metadata
                .annotations
                .get(capacity::OVER_CAPACITY_ANNOTATION)
                .map(String::as_str),
            Some("truncated")
        );
        let fits = endpoints_from_slices(&service(), &refs[..10]);
        assert!(fits.metadata.annotations.is_empty());
    }
}
