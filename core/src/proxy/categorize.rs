//! Which endpoints a node sends a Service port's traffic to, as kube-proxy's
//! `CategorizeEndpoints` decides.
//!
//! - [`port_endpoints`] collects the endpoints of one Service port and one IP
//!   family from the Service's EndpointSlices: slice ports match the Service
//!   port by name and protocol; an address present in several slices counts
//!   once (a ready copy wins).
//! - [`categorize`] splits them for one node:
//!   - cluster traffic uses the ready endpoints, narrowed by topology hints
//!     only when every ready endpoint carries them (PreferSameNode when one is
//!     for this node, else PreferSameZone when one is for this node's zone);
//!     with no ready endpoint at all, the serving+terminating ones, ignoring
//!     topology;
//!   - local traffic (`internalTrafficPolicy: Local` for ClusterIPs,
//!     `externalTrafficPolicy: Local` for NodePorts, external and load
//!     balancer IPs) uses this node's ready endpoints, else this node's
//!     serving+terminating ones, else none (and IPVS then the cluster's:
//!     [`Categorized::for_ipvs`]).

use super::error::ProxyWarning;
use super::node::NodeInfo;
use super::table::Protocol;
use crate::api::endpoint_slice::{Endpoint, EndpointSlice};
use crate::family::IpFamily;
use serde::Serialize;
use std::net::{IpAddr, SocketAddr};

/// One endpoint of one Service port, as the proxy sees it.
#[derive(Clone, Debug, PartialEq)]
pub struct EndpointInfo<'a> {
    /// Address and port to forward to.
    pub address: SocketAddr,
    /// The endpoint in its slice (conditions, node, hints).
    pub endpoint: &'a Endpoint,
}

impl EndpointInfo<'_> {
    fn is_ready(&self) -> bool {
        self.endpoint.conditions.is_ready()
    }

    fn is_serving_terminating(&self) -> bool {
        self.endpoint.conditions.is_serving() && self.endpoint.conditions.is_terminating()
    }

    fn is_local(&self, node: &NodeInfo) -> bool {
        self.endpoint.node_name.as_deref() == Some(node.name.as_str())
    }

    fn node_hints(&self) -> impl Iterator<Item = &str> {
        self.endpoint
            .hints
            .iter()
            .flat_map(|h| h.for_nodes.iter().map(|n| n.name.as_str()))
    }

    fn zone_hints(&self) -> impl Iterator<Item = &str> {
        self.endpoint
            .hints
            .iter()
            .flat_map(|h| h.for_zones.iter().map(|z| z.name.as_str()))
    }
}

/// The endpoints of the Service port `(name, protocol)` with addresses of
/// `family`, from the Service's slices (in the order given; pass them sorted
/// by name for a deterministic result). Slice ports without a name match
/// the unnamed Service port; without a protocol they are TCP. Endpoints with
/// an address that does not parse are reported and skipped.
pub fn port_endpoints<'a>(
    port_name: &str,
    protocol: Protocol,
    family: IpFamily,
    slices: &[&'a EndpointSlice],
    warnings: &mut Vec<ProxyWarning>,
) -> Vec<EndpointInfo<'a>> {
    let mut found: Vec<EndpointInfo<'a>> = Vec::new();
    for slice in slices.iter().filter(|s| s.address_type == family.as_str()) {
        let matching = slice.ports.iter().find(|p| {
            p.name.as_deref().unwrap_or_default() == port_name
                && p.protocol.as_deref().map_or(Some(Protocol::Tcp), Protocol::parse) == Some(protocol)
        });
        let Some(port) = matching.and_then(|p| p.port).and_then(|p| u16::try_from(p).ok()) else {
            continue;
        };
        if port == 0 {
            continue;
        }
        for endpoint in &slice.endpoints {
            let Some(text) = endpoint.addresses.first() else {
                continue;
            };
            let Ok(ip) = text.parse::<IpAddr>() else {
                warnings.push(ProxyWarning::InvalidEndpointAddress {
                    slice: format!("{}/{}", slice.metadata.namespace_or_default(), slice.metadata.name),
                    address: text.clone(),
                });
                continue;
            };
            if IpFamily::of(ip) != family {
                continue;
            }
            found.push(EndpointInfo {
                address: SocketAddr::new(ip, port),
                endpoint,
            });
        }
    }
    // By address, ready copies first; the sort is stable, so among equal
    // copies the first seen stays first and is the one kept.
    crate::sort::sort_by_key(&mut found, |e| (e.address, !e.is_ready()));
    found.dedup_by_key(|e| e.address);
    found
}

/// Which endpoints cluster-wide traffic uses, and why.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub enum ClusterRule {
    /// Every ready endpoint.
    Ready,
    /// Ready endpoints whose hints name this node.
    PreferSameNode,
    /// Ready endpoints whose hints name this node's zone.
    PreferSameZone,
    /// No endpoint is ready: the serving and terminating ones.
    ServingTerminating,
}

/// Which endpoints node-local traffic uses, and why.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub enum LocalRule {
    /// This node's ready endpoints.
    Ready,
    /// None of this node's endpoints is ready: its serving and terminating
    /// ones.
    ServingTerminating,
}

/// The endpoints one node uses for one Service port.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Categorized {
    /// For `Cluster` traffic policies.
    pub cluster: Vec<SocketAddr>,
    /// How `cluster` was chosen.
    pub cluster_rule: ClusterRule,
    /// For `Local` traffic policies.
    pub local: Vec<SocketAddr>,
    /// How `local` was chosen.
    pub local_rule: LocalRule,
}

impl Categorized {
    /// The endpoints for a traffic policy: `local` when it is `Local`.
    pub fn for_policy(&self, local: bool) -> &[SocketAddr] {
        if local {
            &self.local
        } else {
            &self.cluster
        }
    }

    /// The real servers of an IPVS virtual server for a traffic policy:
    /// as [`Categorized::for_policy`], except that a `Local` policy with no
    /// endpoint on this node takes the cluster's, as kube-proxy's IPVS mode
    /// does (kubernetes#97081): this node's pods still reach the Service,
    /// and an outside client, not masqueraded under `Local`, gets its reply
    /// from a pod on another node, which it drops.
    pub fn for_ipvs(&self, local: bool) -> &[SocketAddr] {
        if local && !self.local.is_empty() {
            &self.local
        } else {
            &self.cluster
        }
    }
}

/// Splits one Service port's endpoints for `node`.
pub fn categorize(endpoints: &[EndpointInfo<'_>], node: &NodeInfo) -> Categorized {
    let addresses = |keep: &dyn Fn(&EndpointInfo<'_>) -> bool| -> Vec<SocketAddr> {
        endpoints.iter().filter(|e| keep(e)).map(|e| e.address).collect()
    };
    let topology = topology_rule(endpoints, node);
    let mut cluster_rule = topology;
    let mut cluster = addresses(&|e| e.is_ready() && available_for_topology(e, topology, node));
    if cluster.is_empty() {
        cluster_rule = ClusterRule::ServingTerminating;
        cluster = addresses(&|e| e.is_serving_terminating());
    }
    let mut local_rule = LocalRule::Ready;
    let mut local = addresses(&|e| e.is_local(node) && e.is_ready());
    if local.is_empty() {
        local_rule = LocalRule::ServingTerminating;
        local = addresses(&|e| e.is_local(node) && e.is_serving_terminating());
    }
    Categorized {
        cluster,
        cluster_rule,
        local,
        local_rule,
    }
}

/// kube-proxy's `topologyModeFromHints`: hints count only when every ready
/// endpoint has them and at least one is for this node (or zone).
fn topology_rule(endpoints: &[EndpointInfo<'_>], node: &NodeInfo) -> ClusterRule {
    let ready: Vec<&EndpointInfo<'_>> = endpoints.iter().filter(|e| e.is_ready()).collect();
    if ready.is_empty() {
        return ClusterRule::Ready;
    }
    let all_node_hints = ready.iter().all(|e| e.node_hints().next().is_some());
    let for_node = ready.iter().any(|e| e.node_hints().any(|n| n == node.name));
    if all_node_hints && for_node {
        return ClusterRule::PreferSameNode;
    }
    let all_zone_hints = ready.iter().all(|e| e.zone_hints().next().is_some());
    let for_zone = node
        .zone
        .as_deref()
        .is_some_and(|zone| ready.iter().any(|e| e.zone_hints().any(|z| z == zone)));
    if all_zone_hints && for_zone {
        return ClusterRule::PreferSameZone;
    }
    ClusterRule::Ready
}

fn available_for_topology(e: &EndpointInfo<'_>, rule: ClusterRule, node: &NodeInfo) -> bool {
    match rule {
        ClusterRule::PreferSameNode => e.node_hints().any(|n| n == node.name),
        ClusterRule::PreferSameZone => node
            .zone
            .as_deref()
            .is_some_and(|zone| e.zone_hints().any(|z| z == zone)),
        ClusterRule::Ready | ClusterRule::ServingTerminating => true,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::api::endpoint_slice::{EndpointConditions, EndpointHints, EndpointPort, ForNode, ForZone};

    fn endpoint(ip: &str, node: &str, ready: bool, serving: bool, terminating: bool) -> Endpoint {
        Endpoint {
            addresses: vec![ip.to_string()],
            conditions: EndpointConditions {
                ready: Some(ready),
                serving: Some(serving),
                terminating: Some(terminating),
            },
            node_name: Some(node.to_string()),
            ..Default::default()
        }
    }

    fn hinted(mut e: Endpoint, zones: &[&str], nodes: &[&str]) -> Endpoint {
        e.hints = Some(Box::new(EndpointHints {
            for_zones: zones.iter().map(|z| ForZone { name: z.to_string() }).collect(),
            for_nodes: nodes.iter().map(|n| ForNode { name: n.to_string() }).collect(),
        }));
        e
    }

    fn slice(endpoints: Vec<Endpoint>) -> EndpointSlice {
        let mut s = EndpointSlice {
            address_type: "IPv4".into(),
            endpoints,
            ports: vec![EndpointPort {
                name: Some("http".into()),
                protocol: Some("TCP".into()),
                port: Some(8080),
                app_protocol: None,
            }],
            ..Default::default()
        };
        s.metadata.name = "web-abc".into();
        s
    }

    fn node(name: &str, zone: &str) -> NodeInfo {
        NodeInfo {
            name: name.into(),
            ips: vec![],
            zone: Some(zone.into()),
        }
    }

    fn run(endpoints: Vec<Endpoint>, node: &NodeInfo) -> Categorized {
        let s = slice(endpoints);
        let mut warnings = Vec::new();
        let eps = port_endpoints("http", Protocol::Tcp, IpFamily::IPv4, &[&s], &mut warnings);
        assert!(warnings.is_empty());
        categorize(&eps, node)
    }

    fn strs(addrs: &[SocketAddr]) -> Vec<String> {
        addrs.iter().map(ToString::to_string).collect()
    }

    #[test]
    fn ready_endpoints_then_serving_terminating() {
        let n = node("a", "z1");
        let c = run(
            vec![
                endpoint("10.0.0.1", "a", true, true, false),
                endpoint("10.0.0.2", "b", false, true, true),
                endpoint("10.0.0.3", "b", false, false, false),
            ],
            &n,
        );
        assert_eq!(strs(&c.cluster), ["10.0.0.1:8080"]);
        assert_eq!(c.cluster_rule, ClusterRule::Ready);
        let c = run(
            vec![
                endpoint("10.0.0.2", "b", false, true, true),
                endpoint("10.0.0.3", "b", false, false, true),
            ],
            &n,
        );
        assert_eq!(strs(&c.cluster), ["10.0.0.2:8080"]);
        assert_eq!(c.cluster_rule, ClusterRule::ServingTerminating);
    }

    #[test]
    fn local_fallbacks() {
        let n = node("a", "z1");
        let c = run(
            vec![
                endpoint("10.0.0.1", "a", true, true, false),
                endpoint("10.0.0.2", "a", false, true, true),
                endpoint("10.0.0.3", "b", true, true, false),
            ],
            &n,
        );
        assert_eq!(strs(&c.local), ["10.0.0.1:8080"]);
        assert_eq!(c.local_rule, LocalRule::Ready);
        let c = run(
            vec![
                endpoint("10.0.0.2", "a", false, true, true),
                endpoint("10.0.0.3", "b", true, true, false),
            ],
            &n,
        );
        assert_eq!(strs(&c.local), ["10.0.0.2:8080"]);
        assert_eq!(c.local_rule, LocalRule::ServingTerminating);
        let c = run(vec![endpoint("10.0.0.3", "b", true, true, false)], &n);
        assert!(c.local.is_empty());
        assert_eq!(strs(c.for_policy(false)), ["10.0.0.3:8080"]);
    }

    #[test]
    fn topology_hints_only_when_every_ready_endpoint_has_them() {
        let n = node("a", "z1");
        let all = vec![
            hinted(endpoint("10.0.0.1", "a", true, true, false), &["z1"], &[]),
            hinted(endpoint("10.0.0.2", "b", true, true, false), &["z2"], &[]),
            endpoint("10.0.0.9", "b", false, false, false),
        ];
        let c = run(all.clone(), &n);
        assert_eq!(strs(&c.cluster), ["10.0.0.1:8080"]);
        assert_eq!(c.cluster_rule, ClusterRule::PreferSameZone);

        let mut partial = all.clone();
        partial.push(endpoint("10.0.0.3", "c", true, true, false));
        let c = run(partial, &n);
        assert_eq!(c.cluster.len(), 3);
        assert_eq!(c.cluster_rule, ClusterRule::Ready);

        let c = run(all.clone(), &node("x", "z9"));
        assert_eq!(c.cluster.len(), 2, "no hint for this zone: hints ignored");

        let by_node = vec![
            hinted(endpoint("10.0.0.1", "a", true, true, false), &["z1"], &["a"]),
            hinted(endpoint("10.0.0.2", "b", true, true, false), &["z1"], &["b"]),
        ];
        let c = run(by_node.clone(), &n);
        assert_eq!(strs(&c.cluster), ["10.0.0.1:8080"]);
        assert_eq!(c.cluster_rule, ClusterRule::PreferSameNode);
        let c = run(by_node, &node("c", "z1"));
        assert_eq!(c.cluster_rule, ClusterRule::PreferSameZone);
        assert_eq!(c.cluster.len(), 2);
    }

    #[test]
    fn ports_match_by_name_protocol_and_family() {
        let mut s = slice(vec![endpoint("10.0.0.1", "a", true, true, false)]);
        let mut warnings = Vec::new();
        assert!(port_endpoints("web", Protocol::Tcp, IpFamily::IPv4, &[&s], &mut warnings).is_empty());
        assert!(port_endpoints("http", Protocol::Udp, IpFamily::IPv4, &[&s], &mut warnings).is_empty());
        assert!(port_endpoints("http", Protocol::Tcp, IpFamily::IPv6, &[&s], &mut warnings).is_empty());
        s.ports[0].protocol = None;
        assert_eq!(
            port_endpoints("http", Protocol::Tcp, IpFamily::IPv4, &[&s], &mut warnings).len(),
            1
        );
        s.endpoints.push(endpoint("bad", "a", true, true, false));
        port_endpoints("http", Protocol::Tcp, IpFamily::IPv4, &[&s], &mut warnings);
        assert_eq!(
            warnings.iter().map(ToString::to_string).collect::<Vec<_>>(),
            ["EndpointSlice default/web-abc: endpoint address \"bad\" is not an IP address; ignored"]
        );
    }

    #[test]
    fn duplicates_across_slices_prefer_ready() {
        let a = slice(vec![endpoint("10.0.0.1", "a", false, true, true)]);
        let b = slice(vec![endpoint("10.0.0.1", "a", true, true, false)]);
        let mut warnings = Vec::new();
        let eps = port_endpoints("http", Protocol::Tcp, IpFamily::IPv4, &[&a, &b], &mut warnings);
        assert_eq!(eps.len(), 1);
        assert!(eps[0].is_ready());
    }
}
