//! The ruleset kube-proxy v1.37's nftables mode (`--proxy-mode=nftables`)
//! writes on a node, printed as `nft list table ip kube-proxy` (and `ip6
//! kube-proxy`) prints it: one table per IP family.
//!
//! No address is bound to any interface: a ClusterIP exists only as a key
//! of the `service-ips` map (`10.96.0.1 . tcp . 443 : goto service-...`)
//! and in the `cluster-ips` set. The `services` chain, run from the
//! `nat-prerouting` and `nat-output` base chains, looks the packet up in
//! `service-ips` (ClusterIPs, externalIPs, load-balancer IPs) and
//! `service-nodeports` (for the node's primary address in `nodeport-ips`).
//! Each Service port has a `service-<hash>-ns/name/proto/port` chain that
//! DNATs to its one endpoint, or to one of several with `numgen random mod
//! N map`; externally reachable ports also get an `external-` chain
//! (masquerade, or for `externalTrafficPolicy: Local` the short-circuits
//! for pods and the node itself) and, with local endpoints, a `local-`
//! chain. Traffic to a ClusterIP from outside the cluster CIDR is marked
//! in `services`, a pod reaching itself through a Service is found in the
//! `hairpin-connections` set, and both are masqueraded in `masquerading`.
//! Ports without endpoints are rejected (or, for a Local policy with no
//! local endpoint, dropped) by the `no-endpoint-services` and
//! `no-endpoint-nodeports` maps in the filter chains; `cluster-ips-check`
//! rejects ports a ClusterIP does not have and drops unallocated
//! addresses of the service CIDRs.
//!
//! The structure is what kube-proxy v1.37.2 printed through nft 1.0.6
//! (`testdata/real-v1.37.2-*.nft`, checked in the tests). Left out:
//! session affinity (the `affinity-` sets and their rules), the
//! loadBalancerSourceRanges `firewall-` chains (the `firewall-ips` map
//! stays empty), `masqueradeAll`, `--nodeport-addresses` other than the
//! default (the node's primary address; without one, every local address
//! but loopback), localhost NodePorts, and the order kube-proxy creates
//! per-Service chains in (a Go map's: here sorted by Service port). A
//! cluster of one family shows that family's table only, though
//! kube-proxy also creates an empty one for the other.

mod print;
#[cfg(test)]
mod tests;

use super::categorize::{categorize, port_endpoints};
use super::desired::slices_by_service;
use super::iptables::sha256_base32;
use super::node::NodeInfo;
use super::table::Protocol;
use crate::api::service::types;
use crate::api::{EndpointSlice, Service};
use crate::collections::SortedSet;
use crate::family::IpFamily;
use ipnetwork::IpNetwork;
use print::{chain_block, set_block, Atom, Element};
use std::net::{IpAddr, SocketAddr};

/// What kube-proxy is configured with, beyond Services and slices.
#[derive(Clone, Debug, Default)]
pub struct KubeProxyNftConfig {
    /// `--cluster-cidr`: traffic from outside it to a ClusterIP is
    /// masqueraded; pods in it skip `externalTrafficPolicy: Local`.
    pub cluster_cidrs: Vec<IpNetwork>,
    /// The service CIDRs: unallocated addresses in them are dropped.
    pub service_cidrs: Vec<IpNetwork>,
}

/// The masquerade mark (`--iptables-masquerade-bit` 14), as nft prints it.
const MARK: &str = "0x00004000";

/// One Service port on this node, for one family.
struct Port {
    /// `namespace/name:port` (`namespace/name` for an unnamed port), the
    /// comment on its map elements.
    name: String,
    /// `namespace/name/protocol/port`, hashed into its chain names.
    chain_base: String,
    protocol: &'static str,
    cluster_ip: IpAddr,
    port: u16,
    node_port: Option<u16>,
    /// `spec.externalIPs` and `status.loadBalancer.ingress[].ip`.
    external: Vec<IpAddr>,
    /// Endpoints for `Cluster` policies, sorted as kube-proxy sorts them
    /// (by `ip:port` text).
    cluster: Vec<SocketAddr>,
    /// This node's endpoints, for `Local` policies.
    local: Vec<SocketAddr>,
    /// Endpoints on this node (for the hairpin set).
    on_node: SortedSet<SocketAddr>,
    internal_local: bool,
    external_local: bool,
}

impl Port {
    fn chain(&self, prefix: &str) -> String {
        format!("{prefix}-{}-{}", sha256_base32(&self.chain_base, 8), self.chain_base)
    }
    fn externally_reachable(&self) -> bool {
        self.node_port.is_some() || !self.external.is_empty()
    }
    fn has_endpoints(&self) -> bool {
        !self.cluster.is_empty() || !self.local.is_empty()
    }
}

/// The Service ports of `family` on `node`, sorted by name and protocol.
fn ports(services: &[&Service], slices: &[&EndpointSlice], node: &NodeInfo, family: IpFamily) -> Vec<Port> {
    let groups = slices_by_service(slices.iter().copied());
    let of_family = |ip: &str| ip.parse::<IpAddr>().ok().filter(|ip| IpFamily::of(*ip) == family);
    let mut out = Vec::new();
    for svc in services {
        if svc.service_type() == types::EXTERNAL_NAME || svc.is_headless() {
            continue;
        }
        let Some(cluster_ip) = svc.spec.cluster_ips.iter().find_map(|ip| of_family(ip)) else {
            continue;
        };
        let own = groups.get(&svc.key()).map(Vec::as_slice).unwrap_or_default();
        let mut external: Vec<IpAddr> = svc.spec.external_ips.iter().filter_map(|ip| of_family(ip)).collect();
        external.extend(
            (svc.status.load_balancer.iter())
                .flat_map(|lb| &lb.ingress)
                .filter_map(|i| i.ip.as_deref())
                .filter_map(of_family),
        );
        for p in &svc.spec.ports {
            let Some(protocol) = Protocol::parse(if p.protocol.is_empty() { "TCP" } else { &p.protocol }) else {
                continue;
            };
            let Ok(port) = u16::try_from(p.port) else {
                continue;
            };
            let mut warnings = Vec::new();
            let found = port_endpoints(&p.name, protocol, family, own, &mut warnings);
            let on_node = (found.iter())
                .filter(|e| e.endpoint.node_name.as_deref() == Some(node.name.as_str()))
                .map(|e| e.address)
                .collect();
            let categorized = categorize(&found, node);
            let by_text = |mut addresses: Vec<SocketAddr>| {
                crate::sort::sort_by_key(&mut addresses, SocketAddr::to_string);
                addresses
            };
            let protocol = match protocol {
                Protocol::Tcp => "tcp",
                Protocol::Udp => "udp",
                Protocol::Sctp => "sctp",
            };
            let node_port = (p.node_port.filter(|_| svc.needs_node_ports())).and_then(|n| u16::try_from(n).ok());
            let externally_reachable = node_port.is_some() || !external.is_empty();
            out.push(Port {
                name: match p.name.as_str() {
                    "" => svc.key(),
                    port => format!("{}:{port}", svc.key()),
                },
                chain_base: format!("{}/{protocol}/{}", svc.key(), p.name),
                protocol,
                cluster_ip,
                port,
                node_port,
                external: external.clone(),
                cluster: by_text(categorized.cluster),
                local: by_text(categorized.local),
                on_node,
                internal_local: svc.spec.internal_traffic_policy.as_deref() == Some("Local"),
                external_local: externally_reachable && svc.spec.external_traffic_policy.as_deref() == Some("Local"),
            });
        }
    }
    crate::sort::sort_by(&mut out, |a, b| (&a.name, a.protocol).cmp(&(&b.name, b.protocol)));
    out
}

/// The words that differ between the `ip` and `ip6` tables.
struct Family {
    table: &'static str,
    addr_type: &'static str,
    loopback: &'static str,
}

impl Family {
    fn of(family: IpFamily) -> Family {
        match family {
            IpFamily::IPv4 => Family {
                table: "ip",
                addr_type: "ipv4_addr",
                loopback: "127.0.0.0/8",
            },
            IpFamily::IPv6 => Family {
                table: "ip6",
                addr_type: "ipv6_addr",
                loopback: "::1",
            },
        }
    }
}

/// `a` for one address or CIDR, `{ a, b }` for several, as nft prints them.
fn one_or_set(items: &[String]) -> String {
    match items {
        [one] => one.clone(),
        many => format!("{{ {} }}", many.join(", ")),
    }
}

/// The DNAT rule of a `service-`/`local-` chain.
fn dnat_rule(ipx: &str, protocol: &str, endpoints: &[SocketAddr]) -> String {
    match endpoints {
        [one] => format!("meta l4proto {protocol} dnat to {one}"),
        many => {
            let entries: Vec<String> = (many.iter().enumerate())
                .map(|(i, e)| format!("{i} : {} . {}", e.ip(), e.port()))
                .collect();
            format!(
                "meta l4proto {protocol} dnat {ipx} to numgen random mod {} map {{ {} }}",
                many.len(),
                entries.join(", ")
            )
        }
    }
}

/// The per-Service chains, map elements and hairpin entries of all ports.
#[derive(Default)]
struct ServiceRules {
    chains: Vec<(String, Vec<String>)>,
    cluster_ips: Vec<Element>,
    service_ips: Vec<Element>,
    service_nodeports: Vec<Element>,
    no_endpoint_services: Vec<Element>,
    no_endpoint_nodeports: Vec<Element>,
    hairpin: Vec<Element>,
}

fn service_rules(ports: &[Port], f: &Family, pod_cidrs: &[String]) -> ServiceRules {
    let mut out = ServiceRules::default();
    let mut cluster_ips = SortedSet::new();
    let mut hairpin = SortedSet::new();
    let element = |key: Vec<Atom>, comment: Option<&str>, value: &str| Element {
        key,
        comment: comment.map(str::to_string),
        value: Some(value.to_string()),
    };
    for p in ports {
        let proto = Atom::Proto(p.protocol);
        let has_endpoints = p.has_endpoints();
        let (service, local, external) = (p.chain("service"), p.chain("local"), p.chain("external"));
        let uses_cluster =
            !p.cluster.is_empty() && (!p.internal_local || (p.externally_reachable() && !p.external_local));
        let uses_local = !p.local.is_empty() && (p.internal_local || p.external_local);
        let internal_chain = if p.internal_local { &local } else { &service };
        let has_internal = has_endpoints && (!p.internal_local || !p.local.is_empty());
        let external_policy_chain = if p.external_local { &local } else { &service };
        let has_external = has_endpoints && (!p.external_local || !p.local.is_empty());
        let uses_external = has_endpoints && p.externally_reachable();
        let (internal_verdict, external_verdict) = if has_endpoints {
            ("drop", "drop")
        } else {
            ("goto reject-chain", "goto reject-chain")
        };

        cluster_ips.insert(p.cluster_ip);
        let cluster_key = vec![Atom::Ip(p.cluster_ip), proto, Atom::Port(p.port)];
        if has_internal {
            out.service_ips
                .push(element(cluster_key, None, &format!("goto {internal_chain}")));
        } else {
            out.no_endpoint_services
                .push(element(cluster_key, Some(&p.name), internal_verdict));
        }
        for ip in &p.external {
            let key = vec![Atom::Ip(*ip), proto, Atom::Port(p.port)];
            if has_endpoints {
                out.service_ips
                    .push(element(key.clone(), None, &format!("goto {external}")));
            }
            if !has_external {
                out.no_endpoint_services
                    .push(element(key, Some(&p.name), external_verdict));
            }
        }
        if let Some(node_port) = p.node_port {
            let key = vec![proto, Atom::Port(node_port)];
            if has_endpoints {
                out.service_nodeports
                    .push(element(key.clone(), None, &format!("goto {external}")));
            }
            if !has_external {
                out.no_endpoint_nodeports
                    .push(element(key, Some(&p.name), external_verdict));
            }
        }

        let mut reachable: Vec<SocketAddr> = Vec::new();
        if uses_cluster {
            out.chains
                .push((service.clone(), vec![dnat_rule(f.table, p.protocol, &p.cluster)]));
            reachable.extend(&p.cluster);
        }
        if uses_local {
            out.chains
                .push((local.clone(), vec![dnat_rule(f.table, p.protocol, &p.local)]));
            reachable.extend(&p.local);
        }
        for endpoint in reachable.into_iter().filter(|e| p.on_node.contains(e)) {
            hairpin.insert((endpoint, p.protocol));
        }
        if uses_external {
            let mut rules = Vec::new();
            if p.external_local {
                if !pod_cidrs.is_empty() {
                    rules.push(format!(
                        "{} saddr {} goto {service} comment \"short-circuit pod traffic\"",
                        f.table,
                        one_or_set(pod_cidrs)
                    ));
                }
                rules.push(format!(
                    "fib saddr type local meta mark set meta mark | {MARK} comment \"masquerade local traffic\""
                ));
                rules.push(format!(
                    "fib saddr type local goto {service} comment \"short-circuit local traffic\""
                ));
            } else {
                rules.push(format!("meta mark set meta mark | {MARK} comment \"masquerade\""));
            }
            if has_external {
                rules.push(format!("goto {external_policy_chain}"));
            }
            out.chains.push((external, rules));
        }
    }
    out.cluster_ips = (cluster_ips.into_iter())
        .map(|ip| Element {
            key: vec![Atom::Ip(ip)],
            comment: None,
            value: None,
        })
        .collect();
    out.hairpin = (hairpin.into_iter())
        .map(|(e, protocol)| Element {
            key: vec![
                Atom::Ip(e.ip()),
                Atom::Ip(e.ip()),
                Atom::Proto(protocol),
                Atom::Port(e.port()),
            ],
            comment: None,
            value: None,
        })
        .collect();
    out
}

/// `nft list table ip kube-proxy` (IPv4) or `ip6 kube-proxy` (IPv6): what
/// kube-proxy's nftables mode writes for `services` and their `slices` on
/// `node`.
pub fn kube_proxy_table(
    family: IpFamily,
    services: &[&Service],
    slices: &[&EndpointSlice],
    node: &NodeInfo,
    config: &KubeProxyNftConfig,
) -> String {
    let f = Family::of(family);
    let ipx = f.table;
    let cidrs_of = |cidrs: &[IpNetwork]| -> Vec<String> {
        (cidrs.iter())
            .filter(|c| IpFamily::of(c.ip()) == family)
            .map(IpNetwork::to_string)
            .collect()
    };
    let pod_cidrs = cidrs_of(&config.cluster_cidrs);
    let service_cidrs = cidrs_of(&config.service_cidrs);
    // `--nodeport-addresses` defaults to the node's primary address in
    // nftables mode; without one, kube-proxy accepts NodePorts on every
    // local address but loopback.
    let node_ip = node.ips_of(family).next();
    let ports = ports(services, slices, node, family);
    let rules = service_rules(&ports, &f, &pod_cidrs);

    let mut out = format!("table {ipx} kube-proxy {{\n\tcomment \"rules for kube-proxy\"\n");
    let mut blocks: Vec<String> = Vec::new();
    let mut block = |fill: &dyn Fn(&mut String)| {
        let mut text = String::new();
        fill(&mut text);
        blocks.push(text);
    };
    let addr = f.addr_type;
    let service_key = format!("{addr} . inet_proto . inet_service : verdict");
    let port_key = "inet_proto . inet_service : verdict";
    block(&|o| {
        set_block(
            o,
            "set",
            "hairpin-connections",
            &format!("{addr} . {addr} . inet_proto . inet_service"),
            "service hairpin connections",
            rules.hairpin.clone(),
        )
    });
    block(&|o| {
        set_block(
            o,
            "set",
            "cluster-ips",
            addr,
            "Active ClusterIPs",
            rules.cluster_ips.clone(),
        )
    });
    if let Some(ip) = node_ip {
        let element = Element {
            key: vec![Atom::Ip(ip)],
            comment: None,
            value: None,
        };
        block(&|o| {
            set_block(
                o,
                "set",
                "nodeport-ips",
                addr,
                "IPs that accept NodePort traffic",
                vec![element.clone()],
            )
        });
    }
    let maps: [(&str, &str, &str, &Vec<Element>); 5] = [
        (
            "no-endpoint-services",
            &service_key,
            "vmap to drop or reject packets to services with no endpoints",
            &rules.no_endpoint_services,
        ),
        (
            "no-endpoint-nodeports",
            port_key,
            "vmap to drop or reject packets to service nodeports with no endpoints",
            &rules.no_endpoint_nodeports,
        ),
        (
            "firewall-ips",
            &service_key,
            "destinations that are subject to LoadBalancerSourceRanges",
            &Vec::new(),
        ),
        (
            "service-ips",
            &service_key,
            "ClusterIP, ExternalIP and LoadBalancer IP traffic",
            &rules.service_ips,
        ),
        (
            "service-nodeports",
            port_key,
            "NodePort traffic",
            &rules.service_nodeports,
        ),
    ];
    for (name, key, comment, elements) in maps {
        block(&|o| set_block(o, "map", name, key, comment, elements.clone()));
    }

    let to_strings = |rules: &[&str]| rules.iter().map(|r| r.to_string()).collect::<Vec<_>>();
    let base: [(&str, &str, Vec<String>); 8] = [
        (
            "filter-prerouting-pre-dnat",
            "type filter hook prerouting priority dstnat - 10; policy accept;",
            to_strings(&["ct state new jump firewall-check"]),
        ),
        (
            "filter-output-pre-dnat",
            "type filter hook output priority -110; policy accept;",
            to_strings(&["ct state new jump firewall-check"]),
        ),
        (
            "filter-input",
            "type filter hook input priority filter; policy accept;",
            to_strings(&[
                "ct state new jump nodeport-endpoints-check",
                "ct state new jump service-endpoints-check",
            ]),
        ),
        (
            "filter-forward",
            "type filter hook forward priority filter; policy accept;",
            to_strings(&[
                "ct state new jump service-endpoints-check",
                "ct state new jump cluster-ips-check",
            ]),
        ),
        (
            "filter-output",
            "type filter hook output priority filter; policy accept;",
            to_strings(&[
                "ct state new jump service-endpoints-check",
                "ct state new jump cluster-ips-check",
            ]),
        ),
        (
            "nat-prerouting",
            "type nat hook prerouting priority dstnat; policy accept;",
            to_strings(&["jump services"]),
        ),
        (
            "nat-output",
            "type nat hook output priority -100; policy accept;",
            to_strings(&["jump services"]),
        ),
        (
            "nat-postrouting",
            "type nat hook postrouting priority srcnat; policy accept;",
            to_strings(&["jump masquerading"]),
        ),
    ];
    for (name, header, chain_rules) in &base {
        block(&|o| chain_block(o, name, Some(header), chain_rules));
    }

    let nodeport_match = match node_ip {
        Some(_) => format!("{ipx} daddr @nodeport-ips"),
        None => format!("{ipx} daddr != {}", f.loopback),
    };
    let mut services_chain = Vec::new();
    if !pod_cidrs.is_empty() {
        services_chain.push(format!(
            "{ipx} daddr @cluster-ips {ipx} saddr != {} meta mark set meta mark | {MARK} comment \"masquerade clusterIP traffic from outside cluster\"",
            one_or_set(&pod_cidrs)
        ));
    }
    services_chain.push(format!("{ipx} daddr . meta l4proto . th dport vmap @service-ips"));
    services_chain.push(match node_ip {
        Some(_) => format!("{nodeport_match} meta l4proto . th dport vmap @service-nodeports"),
        None => format!("fib daddr type local {nodeport_match} meta l4proto . th dport vmap @service-nodeports"),
    });
    let mut cluster_ips_check = vec![format!(
        "{ipx} daddr @cluster-ips reject comment \"Reject traffic to invalid ports of ClusterIPs\""
    )];
    if !service_cidrs.is_empty() {
        cluster_ips_check.push(format!(
            "{ipx} daddr {} drop comment \"Drop traffic to unallocated ClusterIPs\"",
            one_or_set(&service_cidrs)
        ));
    }
    let regular: [(&str, Option<&str>, Vec<String>); 7] = [
        (
            "nodeport-endpoints-check",
            None,
            vec![format!("{nodeport_match} meta l4proto . th dport vmap @no-endpoint-nodeports")],
        ),
        (
            "service-endpoints-check",
            None,
            vec![format!("{ipx} daddr . meta l4proto . th dport vmap @no-endpoint-services")],
        ),
        (
            "firewall-check",
            None,
            vec![format!("{ipx} daddr . meta l4proto . th dport vmap @firewall-ips")],
        ),
        ("services", None, services_chain),
        (
            "masquerading",
            None,
            vec![
                format!("meta mark & {MARK} != 0x00000000 meta mark set meta mark ^ {MARK} masquerade fully-random"),
                format!("ct status dnat {ipx} saddr . {ipx} daddr . meta l4proto . th dport @hairpin-connections masquerade fully-random"),
            ],
        ),
        ("cluster-ips-check", None, cluster_ips_check),
        (
            "reject-chain",
            Some("comment \"helper for @no-endpoint-services / @no-endpoint-nodeports\""),
            vec!["reject".to_string()],
        ),
    ];
    for (name, header, chain_rules) in &regular {
        block(&|o| chain_block(o, name, *header, chain_rules));
    }
    for (name, chain_rules) in &rules.chains {
        block(&|o| chain_block(o, name, None, chain_rules));
    }
    out.push_str(&blocks.join("\n"));
    out.push_str("}\n");
    out
}

/// `nft list ruleset` on a node running kube-proxy in nftables mode: the
/// `ip` table, then the `ip6` one, for each of `families`.
pub fn kube_proxy_ruleset(
    families: &[IpFamily],
    services: &[&Service],
    slices: &[&EndpointSlice],
    node: &NodeInfo,
    config: &KubeProxyNftConfig,
) -> String {
    let mut out = String::new();
    for family in [IpFamily::IPv4, IpFamily::IPv6] {
        if families.contains(&family) {
            out.push_str(&kube_proxy_table(family, services, slices, node, config));
        }
    }
    out
}
