//! The console's view of the node's dataplane in each of kube-proxy's
//! modes, on the first node: `ip addr show kube-ipvs0` (IPVS mode binds
//! every ClusterIP on that dummy interface), `iptables-save` (iptables
//! mode: the ClusterIP exists only in NAT rules), `nft list ruleset`
//! (nftables mode: kube-proxy's `ip`/`ip6 kube-proxy` tables, the ClusterIP
//! only a map key) and `nft list table inet svcnet` (svcnet's own table,
//! which adds masquerading and filtering beside IPVS). Each answer says in
//! its note whether an interface holds the ClusterIPs.

use super::{Effect, Outcome};
use crate::collections::SortedSet;
use crate::controlplane::ControlPlane;
use crate::family::IpFamily;
use crate::proxy::iptables::{iptables_save as render_iptables, IptablesConfig};
use crate::proxy::kube_proxy_nft::{kube_proxy_ruleset, KubeProxyNftConfig};
use crate::proxy::nftables::elements::service_elements;
use crate::proxy::nftables::model::Element;
use crate::proxy::nftables::render::{nft_lines, NftLine};
use crate::proxy::nftables::{desired_ruleset, nft_text};
use crate::proxy::{service_fragment, slices_by_service, NodeInfo, ProxyConfig, DUMMY_INTERFACE};
use std::fmt::Write as _;

/// The first node and what kube-proxy knows of it, or the console's error.
fn node(cp: &ControlPlane, tool: &str) -> Result<NodeInfo, Outcome> {
    let no_node = || Outcome::new(false, format!("{tool}: this cluster has no node"), Effect::Read);
    let name = cp.nodes().next().map(|n| n.metadata.name.clone()).ok_or_else(no_node)?;
    cp.node_info(&name)
        .map_err(|e| Outcome::new(false, format!("{tool}: {e}"), Effect::Read))
}

/// `ip addr show kube-ipvs0` on the first node in IPVS mode.
pub fn ip_addr_show(cp: &ControlPlane) -> Outcome {
    let info = match node(cp, "ip") {
        Ok(info) => info,
        Err(outcome) => return outcome,
    };
    let table = match cp.node_ipvs_table(&info.name) {
        Ok(table) => table,
        Err(e) => return Outcome::new(false, format!("ip: {e}"), Effect::Read),
    };
    let mut text = format!(
        "5: {DUMMY_INTERFACE}: <BROADCAST,NOARP> mtu 1500 qdisc noop state DOWN group default\n    link/ether 96:4c:2a:1d:0f:7e brd ff:ff:ff:ff:ff:ff"
    );
    for address in &table.addresses {
        let (family, prefix) = if address.is_ipv4() {
            ("inet", 32)
        } else {
            ("inet6", 128)
        };
        let _ = write!(
            text,
            "\n    {family} {address}/{prefix} scope global {DUMMY_INTERFACE}\n       valid_lft forever preferred_lft forever"
        );
    }
    Outcome::new(true, text, Effect::Read).with_note(format!(
        "IPVS mode binds every ClusterIP (and external IP) to the dummy interface {DUMMY_INTERFACE} so the node accepts packets for them, then IPVS forwards them; the interface stays DOWN and answers nothing itself."
    ))
}

/// `iptables-save` for the first node, as kube-proxy's iptables mode would
/// write it (this node runs IPVS mode; the rules are what the other mode
/// would do).
pub fn iptables_save(cp: &ControlPlane) -> Outcome {
    let info = match node(cp, "iptables-save") {
        Ok(info) => info,
        Err(outcome) => return outcome,
    };
    let config = IptablesConfig {
        cluster_cidr: (cp.config().constraints.pod_cidrs.iter())
            .find(|c| c.is_ipv4())
            .copied(),
    };
    let services: Vec<_> = cp.services().collect();
    let slices: Vec<_> = cp.endpoint_slices().collect();
    let text = render_iptables(&services, &slices, &info, &config);
    Outcome::new(true, text.trim_end(), Effect::Read).with_note(
        "What kube-proxy in iptables mode writes (IPv4): no interface holds a ClusterIP; KUBE-SERVICES matches it in the nat table and a KUBE-SVC chain DNATs to a random endpoint. This node runs IPVS mode, so these rules are what the other mode would program.".to_string(),
    )
}

/// `nft list ruleset` on the first node as kube-proxy's nftables mode
/// would leave it: the `ip kube-proxy` table, then `ip6 kube-proxy`, for
/// the families of the cluster's service CIDRs (`only`: `nft list table
/// ip|ip6 kube-proxy`, that table alone).
pub fn nft_list_ruleset(cp: &ControlPlane, only: Option<IpFamily>) -> Outcome {
    let info = match node(cp, "nft") {
        Ok(info) => info,
        Err(outcome) => return outcome,
    };
    let config = KubeProxyNftConfig {
        cluster_cidrs: cp.config().constraints.pod_cidrs.clone(),
        service_cidrs: cp.config().service_cidrs.clone(),
    };
    let families: Vec<IpFamily> = match only {
        Some(family) => vec![family],
        None => {
            let of = |f: IpFamily| (cp.config().service_cidrs.iter()).any(|c| IpFamily::of(c.ip()) == f);
            [IpFamily::IPv4, IpFamily::IPv6]
                .into_iter()
                .filter(|f| of(*f))
                .collect()
        }
    };
    let services: Vec<_> = cp.services().collect();
    let slices: Vec<_> = cp.endpoint_slices().collect();
    let text = kube_proxy_ruleset(&families, &services, &slices, &info, &config);
    Outcome::new(true, text.trim_end(), Effect::Read).with_note(
        "What kube-proxy in nftables mode (--proxy-mode=nftables) writes: no interface holds a ClusterIP; it is only a key of the service-ips map, whose verdict jumps to a service- chain that DNATs to an endpoint. This node runs IPVS mode, so these tables are what the other mode would program; svcnet's own table is nft list table inet svcnet.".to_string(),
    )
}

/// `nft list table inet svcnet` on the first node: svcnet's own table.
pub fn nft_list_svcnet(cp: &ControlPlane) -> Outcome {
    let info = match node(cp, "nft") {
        Ok(info) => info,
        Err(outcome) => return outcome,
    };
    let config = svcnet_config(cp);
    let table = desired_ruleset(cp.services(), cp.endpoint_slices(), &info, &config);
    Outcome::new(true, nft_text(&table).trim_end(), Effect::Read).with_note(
        "svcnet's own table beside IPVS mode: the ClusterIPs stay on kube-ipvs0; sets of the ClusterIPs, NodePorts and endpoints, masquerading (hairpin, NodePort, traffic from outside the cluster CIDR) and the filter that drops kube-ipvs0 addresses on ports no Service has. kube-proxy's own nftables mode is nft list ruleset.".to_string(),
    )
}

/// What svcnet's table is computed with in the playground: the cluster's
/// NodePort range, and its pod network as the cluster CIDR.
pub(super) fn svcnet_config(cp: &ControlPlane) -> ProxyConfig {
    ProxyConfig {
        node_port_range: cp.config().node_ports,
        cluster_cidrs: cp.config().constraints.pod_cidrs.clone(),
        ..ProxyConfig::default()
    }
}

/// svcnet's table on the first node, line by line, with the set elements
/// of `service` (`namespace/name`) highlighted and each rule's purpose:
/// the playground's nftables view. The error is the console's (no node).
pub fn svcnet_lines(cp: &ControlPlane, service: Option<&str>) -> Result<Vec<NftLine>, String> {
    let info = node(cp, "nft").map_err(|outcome| outcome.text)?;
    let config = svcnet_config(cp);
    let table = desired_ruleset(cp.services(), cp.endpoint_slices(), &info, &config);
    let picked = service.and_then(|key| cp.services().find(|svc| svc.key() == key));
    let highlight: SortedSet<(String, Element)> = match picked {
        Some(svc) => {
            let groups = slices_by_service(cp.endpoint_slices());
            let slices = groups.get(&svc.key()).map(Vec::as_slice).unwrap_or_default();
            let fragment = service_fragment(svc, slices, &info, &config);
            crate::sort::set_from(
                (service_elements(svc, slices, &info, &fragment).into_iter())
                    .map(|e| (e.kind.name(e.family), e.element)),
            )
        }
        None => SortedSet::new(),
    };
    Ok(nft_lines(&table, &highlight))
}
