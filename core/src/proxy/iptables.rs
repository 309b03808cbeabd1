//! The rules kube-proxy's iptables mode would write on a node, printed as
//! `iptables-save` prints them (IPv4: the `nat` and `filter` tables).
//!
//! Each Service port gets a `KUBE-SVC-<hash>` chain (sha256 of
//! `namespace/name:port` and the protocol, in base32, 16 characters, as
//! kube-proxy names it: `default/kubernetes:https` is always
//! `KUBE-SVC-NPX46M4PTMTKRN6Y`) that picks an endpoint at random
//! (`-m statistic --probability 1/n`, then `1/(n-1)`, ...) and jumps to its
//! `KUBE-SEP-<hash>` chain, which DNATs to it. `KUBE-SERVICES` captures the
//! ClusterIPs, external and load-balancer IPs; `KUBE-NODEPORTS` the
//! NodePorts, through the port's `KUBE-EXT-<hash>` chain. Traffic that
//! needs SNAT is marked (`KUBE-MARK-MASQ`) and masqueraded in
//! `KUBE-POSTROUTING`: ClusterIP traffic from outside the cluster CIDR,
//! external traffic of `externalTrafficPolicy: Cluster`, and a pod reaching
//! itself. A port with no endpoints is rejected in the `filter` table.
//!
//! No address is bound to any interface: the ClusterIP exists only in these
//! rules. Left out: session affinity (`-m recent`), the
//! loadBalancerSourceRanges firewall chains, `internalTrafficPolicy:
//! Local` with no local endpoint, and the chains kube-proxy sets up once
//! (`KUBE-FORWARD`, the canaries); IPv6 (`ip6tables-save`) likewise.

use super::categorize::{categorize, port_endpoints};
use super::desired::slices_by_service;
use super::node::NodeInfo;
use super::table::Protocol;
use crate::api::service::types;
use crate::api::{EndpointSlice, Service};
use crate::collections::SortedSet;
use crate::family::IpFamily;
use sha2::{Digest, Sha256};
use std::fmt::Write as _;
use std::net::{IpAddr, SocketAddr};

/// The cluster's pod range (`--cluster-cidr`): traffic from outside it to
/// a ClusterIP is masqueraded.
#[derive(Clone, Debug, Default)]
pub struct IptablesConfig {
    /// `--cluster-cidr` (IPv4); none: no ClusterIP traffic is masqueraded.
    pub cluster_cidr: Option<ipnetwork::IpNetwork>,
}

/// base32 (RFC 4648, upper case) of the sha256 of `text`, cut to `len`
/// characters: how kube-proxy names its per-Service chains (16 characters
/// in iptables mode, 8 in nftables mode).
pub(crate) fn sha256_base32(text: &str, len: usize) -> String {
    const ALPHABET: &[u8; 32] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZ234567";
    let digest = Sha256::digest(text.as_bytes());
    let mut out = String::with_capacity(len);
    let (mut buffer, mut bits) = (0u32, 0u32);
    for byte in digest.iter() {
        buffer = (buffer << 8) | u32::from(*byte);
        bits += 8;
        while bits >= 5 && out.len() < len {
            bits -= 5;
            out.push(char::from(ALPHABET[((buffer >> bits) & 31) as usize]));
        }
        if out.len() == len {
            break;
        }
    }
    out
}

/// The 16-character hash of iptables mode's chain names.
fn hash16(text: &str) -> String {
    sha256_base32(text, 16)
}

/// One Service port's chains and rules.
struct Port {
    /// `namespace/name:port` (`namespace/name` for an unnamed port).
    name: String,
    protocol: &'static str,
    cluster_ip: IpAddr,
    port: i64,
    node_port: Option<i64>,
    /// `spec.externalIPs`.
    external: Vec<IpAddr>,
    /// `status.loadBalancer.ingress[].ip`.
    load_balancer: Vec<IpAddr>,
    endpoints: Vec<SocketAddr>,
    external_local: bool,
}

impl Port {
    fn svc_chain(&self) -> String {
        format!("KUBE-SVC-{}", hash16(&format!("{}{}", self.name, self.protocol)))
    }
    fn ext_chain(&self) -> String {
        format!("KUBE-EXT-{}", hash16(&format!("{}{}", self.name, self.protocol)))
    }
    fn sep_chain(&self, endpoint: SocketAddr) -> String {
        format!(
            "KUBE-SEP-{}",
            hash16(&format!("{}{}{endpoint}", self.name, self.protocol))
        )
    }
    fn externally_reachable(&self) -> bool {
        self.node_port.is_some() || !self.external.is_empty() || !self.load_balancer.is_empty()
    }
}

/// The IPv4 Service ports of `services` on `node`, sorted by name.
fn ports(services: &[&Service], slices: &[&EndpointSlice], node: &NodeInfo) -> Vec<Port> {
    let groups = slices_by_service(slices.iter().copied());
    let mut out = Vec::new();
    for svc in services {
        if svc.service_type() == types::EXTERNAL_NAME || svc.is_headless() {
            continue;
        }
        let Some(cluster_ip) = (svc.spec.cluster_ips.iter())
            .filter_map(|ip| ip.parse::<IpAddr>().ok())
            .find(IpAddr::is_ipv4)
        else {
            continue;
        };
        let own = groups.get(&svc.key()).map(Vec::as_slice).unwrap_or_default();
        let v4 = |ip: &str| ip.parse::<IpAddr>().ok().filter(IpAddr::is_ipv4);
        let external: Vec<IpAddr> = svc.spec.external_ips.iter().filter_map(|ip| v4(ip)).collect();
        let load_balancer: Vec<IpAddr> = (svc.status.load_balancer.iter())
            .flat_map(|lb| &lb.ingress)
            .filter_map(|i| i.ip.as_deref())
            .filter_map(v4)
            .collect();
        for p in &svc.spec.ports {
            let Some(protocol) = Protocol::parse(if p.protocol.is_empty() { "TCP" } else { &p.protocol }) else {
                continue;
            };
            let mut warnings = Vec::new();
            let found = port_endpoints(&p.name, protocol, IpFamily::IPv4, own, &mut warnings);
            let categorized = categorize(&found, node);
            let local_internal = svc.spec.internal_traffic_policy.as_deref() == Some("Local");
            let name = match p.name.as_str() {
                "" => svc.key(),
                port => format!("{}:{port}", svc.key()),
            };
            out.push(Port {
                name,
                protocol: match protocol {
                    Protocol::Tcp => "tcp",
                    Protocol::Udp => "udp",
                    Protocol::Sctp => "sctp",
                },
                cluster_ip,
                port: p.port,
                node_port: p.node_port.filter(|_| svc.needs_node_ports()),
                external: external.clone(),
                load_balancer: load_balancer.clone(),
                endpoints: categorized.for_policy(local_internal).to_vec(),
                external_local: svc.spec.external_traffic_policy.as_deref() == Some("Local"),
            });
        }
    }
    crate::sort::sort_by(&mut out, |a, b| (&a.name, a.protocol).cmp(&(&b.name, b.protocol)));
    out
}

/// `iptables-save` of the rules kube-proxy's iptables mode writes for
/// `services` and their `slices` on `node`.
pub fn iptables_save(
    services: &[&Service],
    slices: &[&EndpointSlice],
    node: &NodeInfo,
    config: &IptablesConfig,
) -> String {
    let ports = ports(services, slices, node);
    let mut filter = Vec::new();
    let mut nat = vec![
        "-A PREROUTING -m comment --comment \"kubernetes service portals\" -j KUBE-SERVICES".to_string(),
        "-A OUTPUT -m comment --comment \"kubernetes service portals\" -j KUBE-SERVICES".to_string(),
        "-A POSTROUTING -m comment --comment \"kubernetes postrouting rules\" -j KUBE-POSTROUTING".to_string(),
        "-A KUBE-MARK-MASQ -j MARK --or-mark 0x4000".to_string(),
        "-A KUBE-POSTROUTING -m mark ! --mark 0x4000/0x4000 -j RETURN".to_string(),
        "-A KUBE-POSTROUTING -j MARK --xor-mark 0x4000".to_string(),
        "-A KUBE-POSTROUTING -m comment --comment \"kubernetes service traffic requiring SNAT\" -j MASQUERADE --random-fully".to_string(),
    ];
    let mut chains: SortedSet<String> = ["KUBE-MARK-MASQ", "KUBE-NODEPORTS", "KUBE-POSTROUTING", "KUBE-SERVICES"]
        .map(String::from)
        .into();
    let (mut services_rules, mut nodeport_rules, mut chain_rules) = (Vec::new(), Vec::new(), Vec::new());
    for p in &ports {
        let proto = p.protocol;
        let capture = |dst: IpAddr, what: &str, target: &str| {
            format!(
                "-A KUBE-SERVICES -d {dst}/32 -p {proto} -m comment --comment \"{} {what}\" -m {proto} --dport {} -j {target}",
                p.name, p.port
            )
        };
        if p.endpoints.is_empty() {
            let reject = |dst: String, chain: &str, port: i64| {
                format!(
                    "-A {chain} {dst}-p {proto} -m comment --comment \"{} has no endpoints\" -m {proto} --dport {port} -j REJECT --reject-with icmp-port-unreachable",
                    p.name
                )
            };
            filter.push(reject(format!("-d {}/32 ", p.cluster_ip), "KUBE-SERVICES", p.port));
            for ip in p.external.iter().chain(&p.load_balancer) {
                filter.push(reject(format!("-d {ip}/32 "), "KUBE-EXTERNAL-SERVICES", p.port));
            }
            if let Some(node_port) = p.node_port {
                filter.push(reject(
                    "-m addrtype --dst-type LOCAL ".into(),
                    "KUBE-EXTERNAL-SERVICES",
                    node_port,
                ));
            }
            continue;
        }
        let svc = p.svc_chain();
        chains.insert(svc.clone());
        services_rules.push(capture(p.cluster_ip, "cluster IP", &svc));
        if let Some(cidr) = config.cluster_cidr {
            chain_rules.push(format!(
                "-A {svc} ! -s {cidr} -d {}/32 -p {proto} -m comment --comment \"{} cluster IP\" -m {proto} --dport {} -j KUBE-MARK-MASQ",
                p.cluster_ip, p.name, p.port
            ));
        }
        if p.externally_reachable() {
            let ext = p.ext_chain();
            chains.insert(ext.clone());
            for ip in &p.external {
                services_rules.push(capture(*ip, "external IP", &ext));
            }
            for ip in &p.load_balancer {
                services_rules.push(capture(*ip, "loadbalancer IP", &ext));
            }
            if let Some(node_port) = p.node_port {
                nodeport_rules.push(format!(
                    "-A KUBE-NODEPORTS -p {proto} -m comment --comment \"{}\" -m {proto} --dport {node_port} -j {ext}",
                    p.name
                ));
            }
            if p.external_local {
                chain_rules.push(format!(
                    "-A {ext} -m comment --comment \"masquerade LOCAL traffic for {} external destinations\" -m addrtype --src-type LOCAL -j KUBE-MARK-MASQ",
                    p.name
                ));
                chain_rules.push(format!(
                    "-A {ext} -m comment --comment \"route LOCAL traffic for {} external destinations\" -m addrtype --src-type LOCAL -j {svc}",
                    p.name
                ));
            } else {
                chain_rules.push(format!(
                    "-A {ext} -m comment --comment \"masquerade traffic for {} external destinations\" -j KUBE-MARK-MASQ",
                    p.name
                ));
            }
            chain_rules.push(format!("-A {ext} -j {svc}"));
        }
        let n = p.endpoints.len();
        for (i, endpoint) in p.endpoints.iter().enumerate() {
            let sep = p.sep_chain(*endpoint);
            chains.insert(sep.clone());
            let mut jump = format!("-A {svc} -m comment --comment \"{} -> {endpoint}\"", p.name);
            if i + 1 < n {
                let _ = write!(
                    jump,
                    " -m statistic --mode random --probability {:.11}",
                    1.0 / (n - i) as f64
                );
            }
            let _ = write!(jump, " -j {sep}");
            chain_rules.push(jump);
            chain_rules.push(format!(
                "-A {sep} -s {}/32 -m comment --comment \"{}\" -j KUBE-MARK-MASQ",
                endpoint.ip(),
                p.name
            ));
            chain_rules.push(format!(
                "-A {sep} -p {proto} -m comment --comment \"{}\" -m {proto} -j DNAT --to-destination {endpoint}",
                p.name
            ));
        }
    }
    services_rules.push("-A KUBE-SERVICES -m comment --comment \"kubernetes service nodeports; NOTE: this must be the last rule in this chain\" -m addrtype --dst-type LOCAL -j KUBE-NODEPORTS".into());
    nat.extend(nodeport_rules);
    nat.extend(services_rules);
    nat.extend(chain_rules);
    let mut out = String::from("*filter\n:INPUT ACCEPT [0:0]\n:FORWARD ACCEPT [0:0]\n:OUTPUT ACCEPT [0:0]\n");
    for chain in ["KUBE-EXTERNAL-SERVICES", "KUBE-NODEPORTS", "KUBE-SERVICES"] {
        let _ = writeln!(out, ":{chain} - [0:0]");
    }
    out.push_str("-A INPUT -m conntrack --ctstate NEW -m comment --comment \"kubernetes externally-visible service portals\" -j KUBE-EXTERNAL-SERVICES\n");
    out.push_str(
        "-A FORWARD -m conntrack --ctstate NEW -m comment --comment \"kubernetes service portals\" -j KUBE-SERVICES\n",
    );
    out.push_str(
        "-A OUTPUT -m conntrack --ctstate NEW -m comment --comment \"kubernetes service portals\" -j KUBE-SERVICES\n",
    );
    for rule in filter {
        let _ = writeln!(out, "{rule}");
    }
    out.push_str("COMMIT\n*nat\n:PREROUTING ACCEPT [0:0]\n:INPUT ACCEPT [0:0]\n:OUTPUT ACCEPT [0:0]\n:POSTROUTING ACCEPT [0:0]\n");
    for chain in &chains {
        let _ = writeln!(out, ":{chain} - [0:0]");
    }
    for rule in nat {
        let _ = writeln!(out, "{rule}");
    }
    out.push_str("COMMIT\n");
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn load_balancer_and_external_ips_are_captured_apart() {
        let text = "apiVersion: v1\nkind: Service\nmetadata: {name: lb}\nspec:\n  type: LoadBalancer\n  clusterIP: 10.96.0.50\n  externalIPs: [203.0.113.7]\n  ports: [{port: 80, nodePort: 30080}]\nstatus: {loadBalancer: {ingress: [{ip: 198.51.100.9}]}}\n";
        let mut svc = match crate::api::parse_manifests(text).unwrap().remove(0) {
            crate::api::Object::Service(svc) => *svc,
            other => panic!("{other:?}"),
        };
        svc.metadata.namespace = "default".into();
        svc.spec.cluster_ips = vec!["10.96.0.50".into()];
        let slice: EndpointSlice = serde_json::from_value(serde_json::json!({
            "metadata": {"name": "lb-1", "namespace": "default", "labels": {"kubernetes.io/service-name": "lb"}},
            "addressType": "IPv4", "ports": [{"port": 8080}],
            "endpoints": [{"addresses": ["10.244.0.9"], "conditions": {"ready": true}}],
        }))
        .unwrap();
        let node = NodeInfo {
            name: "node-1".into(),
            ..NodeInfo::default()
        };
        let out = iptables_save(&[&svc], &[&slice], &node, &IptablesConfig::default());
        assert!(
            out.contains("-d 203.0.113.7/32 -p tcp -m comment --comment \"default/lb external IP\""),
            "{out}"
        );
        assert!(
            out.contains("-d 198.51.100.9/32 -p tcp -m comment --comment \"default/lb loadbalancer IP\""),
            "{out}"
        );
        assert!(
            out.contains(
                "-A KUBE-NODEPORTS -p tcp -m comment --comment \"default/lb\" -m tcp --dport 30080 -j KUBE-EXT-"
            ),
            "{out}"
        );
        assert!(
            out.contains("masquerade traffic for default/lb external destinations"),
            "{out}"
        );
    }

    #[test]
    fn chain_names_are_kube_proxys() {
        // The name every kube-proxy in iptables mode gives default/kubernetes.
        assert_eq!(hash16("default/kubernetes:httpstcp"), "NPX46M4PTMTKRN6Y");
    }
}
