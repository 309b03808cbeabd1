//! Records of headless Services (`clusterIP: None`), from the ready
//! endpoints of their EndpointSlices (specification 1.1.0, section 2.4):
//!
//! - `A`/`AAAA` per ready endpoint address at `<svc>.<ns>.svc.<zone>.`;
//! - `A`/`AAAA` at `<hostname>.<svc>.<ns>.svc.<zone>.` for each ready
//!   endpoint with a hostname;
//! - `SRV` per named port and ready endpoint at
//!   `_<port>._<proto>.<svc>.<ns>.svc.<zone>.`, targeting the endpoint's
//!   name, with the endpoint's port (the resolved `targetPort`);
//! - `PTR` from each ready address back to the endpoint's name.
//!
//! An endpoint without a hostname is named as CoreDNS names it, by its
//! address with dashes (`10-244-1-5`, `fd00-10-244--5`): its SRV target
//! then resolves, and the specification allows records beyond its own.
//! SRV weights share 100 equally among the targets of one name (CoreDNS's
//! `100 / n`), priority 0. No ready endpoint: no record at all, so the name
//! is NXDOMAIN.

use super::{absolute, fqdn, normalize_zone, reverse_name, DnsConfig, DnsRecord, RecordData, SRV_PRIORITY, SRV_WEIGHT};
use crate::api::{EndpointSlice, Service};
use crate::collections::{SortedMap, SortedSet};
use std::net::IpAddr;

/// The records of headless `service` from `slices` (its own). Nothing for a
/// Service that is not headless. Unsorted; see [`super::sort_records`].
pub fn headless_records(service: &Service, slices: &[&EndpointSlice], config: &DnsConfig) -> Vec<DnsRecord> {
    if !service.is_headless() {
        return Vec::new();
    }
    let ttl = config.ttl;
    let service_name = fqdn(service, &normalize_zone(&config.zone));
    let mut records = Vec::new();
    // SRV owner name -> (port, target).
    let mut srv: SortedMap<String, SortedSet<(u16, String)>> = SortedMap::new();
    for slice in slices.iter().filter(|s| s.family().is_some()) {
        for endpoint in slice.endpoints.iter().filter(|e| e.conditions.is_ready()) {
            for ip in endpoint.addresses.iter().filter_map(|a| a.parse::<IpAddr>().ok()) {
                let label = match endpoint.hostname.as_deref().filter(|h| !h.is_empty()) {
                    Some(hostname) => hostname.to_ascii_lowercase(),
                    None => dashed(ip),
                };
                let target = absolute(&format!("{label}.{service_name}"));
                let data = match ip {
                    IpAddr::V4(v4) => RecordData::A(v4),
                    IpAddr::V6(v6) => RecordData::Aaaa(v6),
                };
                for name in [&service_name, &target] {
                    records.push(DnsRecord {
                        name: name.clone(),
                        ttl,
                        data: data.clone(),
                    });
                }
                records.push(DnsRecord {
                    name: reverse_name(ip),
                    ttl,
                    data: RecordData::Ptr(target.clone()),
                });
                for port in &slice.ports {
                    let (Some(name), Some(number)) = (port.name.as_deref().filter(|n| !n.is_empty()), port.port) else {
                        continue;
                    };
                    let Ok(number) = u16::try_from(number) else {
                        continue;
                    };
                    let protocol = port.protocol.as_deref().unwrap_or("TCP").to_ascii_lowercase();
                    let owner = format!("_{}._{protocol}.{service_name}", name.to_ascii_lowercase());
                    srv.entry(owner).or_default().insert((number, target.clone()));
                }
            }
        }
    }
    for (owner, targets) in srv {
        // `targets` is never empty: an entry is created with its first target.
        let share = u16::try_from(targets.len()).unwrap_or(u16::MAX).max(1);
        for (port, target) in targets {
            records.push(DnsRecord {
                name: owner.clone(),
                ttl,
                data: RecordData::Srv {
                    priority: SRV_PRIORITY,
                    weight: SRV_WEIGHT / share,
                    port,
                    target,
                },
            });
        }
    }
    records
}

/// An address as a DNS label, the way CoreDNS names endpoints without a
/// hostname: `10.244.1.5` -> `10-244-1-5`, `fd00::5` -> `fd00--5`.
fn dashed(ip: IpAddr) -> String {
    ip.to_string().replace(['.', ':'], "-")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::api::endpoint_slice::{Endpoint, EndpointConditions, EndpointPort};
    use crate::dns::{sort_records, zone_text};

    fn endpoint(ip: &str, hostname: Option<&str>, ready: bool) -> Endpoint {
        Endpoint {
            addresses: vec![ip.into()],
            hostname: hostname.map(str::to_string),
            conditions: EndpointConditions {
                ready: Some(ready),
                ..EndpointConditions::default()
            },
            ..Endpoint::default()
        }
    }

    fn slice(family: &str, endpoints: Vec<Endpoint>) -> EndpointSlice {
        EndpointSlice {
            address_type: family.into(),
            endpoints,
            ports: vec![
                EndpointPort {
                    name: Some("peer".into()),
                    protocol: Some("TCP".into()),
                    port: Some(2380),
                    app_protocol: None,
                },
                EndpointPort {
                    name: Some(String::new()),
                    protocol: Some("TCP".into()),
                    port: Some(9000),
                    app_protocol: None,
                },
            ],
            ..EndpointSlice::default()
        }
    }

    fn headless() -> Service {
        let mut s = Service::default();
        s.metadata.name = "etcd".into();
        s.metadata.namespace = "db".into();
        s.spec.cluster_ip = "None".into();
        s
    }

    fn text(service: &Service, slices: &[&EndpointSlice]) -> String {
        let mut records = headless_records(service, slices, &DnsConfig::default());
        sort_records(&mut records);
        zone_text(&records)
    }

    #[test]
    fn ready_endpoints_hostnames_srv_and_ptr() {
        let v4 = slice(
            "IPv4",
            vec![
                endpoint("10.244.1.5", Some("etcd-0"), true),
                endpoint("10.244.2.7", None, true),
                endpoint("10.244.3.9", Some("etcd-2"), false),
            ],
        );
        let v6 = slice("IPv6", vec![endpoint("fd00::5", Some("etcd-0"), true)]);
        assert_eq!(
            text(&headless(), &[&v4, &v6]),
            "10-244-2-7.etcd.db.svc.cluster.local. 5 IN A 10.244.2.7\n\
             5.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.d.f.ip6.arpa. 5 IN PTR etcd-0.etcd.db.svc.cluster.local.\n\
             5.1.244.10.in-addr.arpa. 5 IN PTR etcd-0.etcd.db.svc.cluster.local.\n\
             7.2.244.10.in-addr.arpa. 5 IN PTR 10-244-2-7.etcd.db.svc.cluster.local.\n\
             _peer._tcp.etcd.db.svc.cluster.local. 5 IN SRV 0 50 2380 10-244-2-7.etcd.db.svc.cluster.local.\n\
             _peer._tcp.etcd.db.svc.cluster.local. 5 IN SRV 0 50 2380 etcd-0.etcd.db.svc.cluster.local.\n\
             etcd-0.etcd.db.svc.cluster.local. 5 IN A 10.244.1.5\n\
             etcd-0.etcd.db.svc.cluster.local. 5 IN AAAA fd00::5\n\
             etcd.db.svc.cluster.local. 5 IN A 10.244.1.5\n\
             etcd.db.svc.cluster.local. 5 IN A 10.244.2.7\n\
             etcd.db.svc.cluster.local. 5 IN AAAA fd00::5\n"
        );
    }

    #[test]
    fn no_ready_endpoint_means_no_record() {
        let v4 = slice("IPv4", vec![endpoint("10.244.3.9", Some("etcd-2"), false)]);
        assert_eq!(text(&headless(), &[&v4]), "");
        let mut cluster_ip = headless();
        cluster_ip.spec.cluster_ip = "10.96.0.50".into();
        let ready = slice("IPv4", vec![endpoint("10.244.1.5", None, true)]);
        assert_eq!(text(&cluster_ip, &[&ready]), "");
    }

    #[test]
    fn ipv6_endpoints_without_hostname_get_dashed_names() {
        assert_eq!(dashed("fd00:10:244::5".parse().unwrap()), "fd00-10-244--5");
        assert_eq!(dashed("10.244.1.5".parse().unwrap()), "10-244-1-5");
    }
}
