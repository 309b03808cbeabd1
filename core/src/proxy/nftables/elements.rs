//! The set elements one Service needs on a node, and the node's own.
//!
//! A Service's elements follow its IPVS virtual servers: a frontend gets
//! elements only when [`service_fragment`](crate::proxy::service_fragment)
//! gave it a virtual server, so a Service the IPVS table skips (an unknown
//! scheduler, a bad port) gets no rules either. Per family, as kube-proxy
//! runs one proxier per family:
//!
//! - every ClusterIP port, in `cluster-ips`;
//! - every externalIP and LoadBalancer IP port, in `external-ips` with
//!   `externalTrafficPolicy: Cluster` (masqueraded) or
//!   `external-ips-local` with `Local` (source kept);
//! - every NodePort of a `Cluster` Service, in `node-ports` (a `Local` one
//!   needs no rule: its traffic is neither masqueraded nor filtered);
//! - `healthCheckNodePort`, in `health-check-node-ports`;
//! - each endpoint on this node, in `hairpin`, whatever its conditions
//!   (kube-proxy's `KUBE-LOOP-BACK` holds them all);
//! - for a LoadBalancer IP with `loadBalancerSourceRanges` of the family
//!   (trimmed, masked to their network; a `/0` among them allows every
//!   source, as no ranges do): `firewall`, one `firewall-allow` per range,
//!   and, when no range holds the node's first address of the family, a
//!   `no-node-access` element, else a `firewall-allow` for the LoadBalancer
//!   IP itself as a source (kube-proxy's `KUBE-LOAD-BALANCER-SOURCE-IP`);
//! - the `kube-ipvs0` addresses the Service needs, in `ipvs-addresses`.

use super::model::{Element, Value};
use super::sets::SetKind;
use crate::api::endpoint_slice::EndpointSlice;
use crate::api::service::types;
use crate::api::Service;
use crate::collections::SortedSet;
use crate::family::IpFamily;
use crate::proxy::categorize::port_endpoints;
use crate::proxy::desired::ServiceFragment;
use crate::proxy::node::NodeInfo;
use crate::proxy::table::{Protocol, VirtualServerKey};
use ipnetwork::IpNetwork;
use std::net::IpAddr;

/// One element of one set.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct SetElement {
    /// Which set.
    pub kind: SetKind,
    /// Which family's variant of it.
    pub family: IpFamily,
    /// The element.
    pub element: Element,
}

/// Collects elements for one Service.
struct Collector<'a> {
    fragment: &'a ServiceFragment,
    out: SortedSet<SetElement>,
}

impl Collector<'_> {
    fn add(&mut self, kind: SetKind, family: IpFamily, element: Element) {
        self.out.insert(SetElement { kind, family, element });
    }

    fn served(&self, protocol: Protocol, address: IpAddr, port: u16) -> bool {
        self.fragment
            .virtual_servers
            .contains_key(&VirtualServerKey::new(protocol, address, port))
    }
}

/// The elements `svc` needs on `node`, given its slices and the IPVS
/// fragment built from the same inputs.
pub fn service_elements(
    svc: &Service,
    slices: &[&EndpointSlice],
    node: &NodeInfo,
    fragment: &ServiceFragment,
) -> SortedSet<SetElement> {
    let mut c = Collector {
        fragment,
        out: SortedSet::new(),
    };
    for ip in &fragment.addresses {
        c.add(SetKind::IpvsAddresses, IpFamily::of(*ip), vec![Value::Addr(*ip)]);
    }
    let cluster_ips: Vec<IpAddr> = (svc.spec.cluster_ips.iter())
        .filter_map(|text| text.parse().ok())
        .collect();
    for &cluster_ip in &cluster_ips {
        add_family(&mut c, svc, slices, node, IpFamily::of(cluster_ip), cluster_ip);
    }
    let health_check = svc.spec.health_check_node_port.and_then(|p| u16::try_from(p).ok());
    if let Some(port) = health_check.filter(|p| *p != 0 && svc.needs_health_check_node_port()) {
        for ip in &cluster_ips {
            c.add(
                SetKind::HealthCheckNodePorts,
                IpFamily::of(*ip),
                vec![Value::Port(port)],
            );
        }
    }
    c.out
}

fn add_family(
    c: &mut Collector<'_>,
    svc: &Service,
    slices: &[&EndpointSlice],
    node: &NodeInfo,
    family: IpFamily,
    cluster_ip: IpAddr,
) {
    let external_local = svc.spec.external_traffic_policy.as_deref() == Some("Local");
    let externals = external_addresses(svc, family);
    let ranges = source_ranges(svc, family);
    let node_ip = node.ips_of(family).next();
    for port in &svc.spec.ports {
        let protocol = Protocol::parse(if port.protocol.is_empty() {
            "TCP"
        } else {
            &port.protocol
        });
        let (Some(protocol), Ok(number)) = (protocol, u16::try_from(port.port)) else {
            continue;
        };
        let frontend = |ip: IpAddr| vec![Value::Addr(ip), Value::Proto(protocol), Value::Port(number)];
        if c.served(protocol, cluster_ip, number) {
            c.add(SetKind::ClusterIps, family, frontend(cluster_ip));
        }
        for &(ip, load_balancer) in &externals {
            if !c.served(protocol, ip, number) {
                continue;
            }
            let kind = if external_local {
                SetKind::ExternalIpsLocal
            } else {
                SetKind::ExternalIps
            };
            c.add(kind, family, frontend(ip));
            if load_balancer && !ranges.is_empty() {
                c.add(SetKind::Firewall, family, frontend(ip));
                for range in &ranges {
                    let prefix = Value::Prefix(range.network(), range.prefix());
                    c.add(SetKind::FirewallAllow, family, [frontend(ip), vec![prefix]].concat());
                }
                if node_ip.is_some_and(|n| ranges.iter().any(|r| r.contains(n))) {
                    let itself = Value::Prefix(ip, full_prefix(family));
                    c.add(SetKind::FirewallAllow, family, [frontend(ip), vec![itself]].concat());
                } else {
                    c.add(
                        SetKind::NoNodeAccess,
                        family,
                        [vec![Value::Addr(ip)], frontend(ip)].concat(),
                    );
                }
            }
        }
        let node_port = port.node_port.and_then(|p| u16::try_from(p).ok()).filter(|p| *p != 0);
        if let Some(node_port) = node_port {
            let served = node.ips_of(family).any(|ip| c.served(protocol, ip, node_port));
            if served && !external_local {
                c.add(
                    SetKind::NodePorts,
                    family,
                    vec![Value::Proto(protocol), Value::Port(node_port)],
                );
            }
        }
        let mut ignored = Vec::new();
        for endpoint in port_endpoints(&port.name, protocol, family, slices, &mut ignored) {
            if endpoint.endpoint.node_name.as_deref() == Some(node.name.as_str()) {
                let ip = Value::Addr(endpoint.address.ip());
                let element = vec![ip, Value::Proto(protocol), Value::Port(endpoint.address.port()), ip];
                c.add(SetKind::Hairpin, family, element);
            }
        }
    }
}

/// The externalIPs and LoadBalancer ingress IPs of `family`, each with
/// whether it is a LoadBalancer's.
fn external_addresses(svc: &Service, family: IpFamily) -> Vec<(IpAddr, bool)> {
    let external = svc.spec.external_ips.iter().map(|text| (text, false));
    let load_balancer = (svc.service_type() == types::LOAD_BALANCER)
        .then(|| svc.load_balancer_ingress().iter().filter_map(|i| i.ip.as_ref()))
        .into_iter()
        .flatten()
        .map(|text| (text, true));
    external
        .chain(load_balancer)
        .filter_map(|(text, lb)| Some((text.parse::<IpAddr>().ok()?, lb)))
        .filter(|(ip, _)| IpFamily::of(*ip) == family)
        .collect()
}

/// `loadBalancerSourceRanges` of `family`, trimmed and parsed; none when
/// one of them is a `/0`, which allows every source.
fn source_ranges(svc: &Service, family: IpFamily) -> Vec<IpNetwork> {
    let ranges: Vec<IpNetwork> = (svc.spec.load_balancer_source_ranges.iter())
        .filter_map(|text| text.trim().parse::<IpNetwork>().ok())
        .filter(|net| IpFamily::of(net.ip()) == family)
        .collect();
    if ranges.iter().any(|r| r.prefix() == 0) {
        Vec::new()
    } else {
        ranges
    }
}

fn full_prefix(family: IpFamily) -> u8 {
    match family {
        IpFamily::IPv4 => 32,
        IpFamily::IPv6 => 128,
    }
}

/// The node's own elements: the addresses NodePorts listen on.
pub fn node_elements(node: &NodeInfo) -> SortedSet<SetElement> {
    crate::sort::set_from(node.ips.iter().map(|ip| SetElement {
        kind: SetKind::NodePortIps,
        family: IpFamily::of(*ip),
        element: vec![Value::Addr(*ip)],
    }))
}
