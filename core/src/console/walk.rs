//! The packet walk: one connection to a Service port, hop by hop, on the
//! playground's node in IPVS mode with svcnet's nftables table beside it.
//!
//! The client is one of three: a pod on the node that is not behind the
//! Service, an endpoint pod itself (hairpin), or a host outside the
//! cluster reaching a NodePort on the node's address. IPVS picks a real
//! server from the node's table in turn (round robin over the real servers
//! with weight, as `rr` does; the caller counts the turns) and rewrites the
//! destination. Where svcnet's table masquerades, the source is rewritten
//! too, and the hop names the rule: a pod that IPVS sends back to itself,
//! and NodePort traffic of an `externalTrafficPolicy: Cluster` Service. The
//! source then becomes the node's address on the pod network (its bridge,
//! the first address of its pod CIDR), so that the reply comes back
//! through the node. The reply's rewrites are undone by conntrack on the
//! way back.

use crate::api::{EndpointSlice, Service};
use crate::controlplane::ControlPlane;
use crate::proxy::nftables::desired_ruleset;
use crate::proxy::nftables::render::rule_text;
use crate::proxy::{IpvsTable, NodeInfo, Protocol, ProxyError, VirtualServerKey};
use crate::scheduler::pod_cidrs;
use ipnetwork::IpNetwork;
use serde::Serialize;
use std::net::{IpAddr, SocketAddr};

/// The client's source port in every walk.
const CLIENT_PORT: u16 = 43120;

/// Who opens the connection.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub enum ClientKind {
    /// A pod on the node that no Service selects: the last address of the
    /// node's pod range, which the playground's IPAM never hands out.
    Pod,
    /// The first ready endpoint of the Service, reaching its own Service.
    Endpoint,
    /// A host outside the cluster (the node network's first address),
    /// through a NodePort.
    Outside,
}

impl ClientKind {
    /// `pod`, `endpoint` or `outside`.
    pub fn from_word(word: &str) -> Option<Self> {
        match word {
            "pod" => Some(Self::Pod),
            "endpoint" => Some(Self::Endpoint),
            "outside" => Some(Self::Outside),
            _ => None,
        }
    }
}

/// One port of the Service, to choose from.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct WalkPort {
    /// The Service port.
    pub port: u16,
    /// `TCP`, `UDP` or `SCTP`.
    pub protocol: &'static str,
    /// Its NodePort, when it has one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub node_port: Option<u16>,
}

/// One endpoint of the Service, as the walk draws it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct WalkEndpoint {
    /// Its address.
    pub ip: String,
    /// The pod behind it, when the slice names one that exists.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pod: Option<String>,
    /// Its `ready` condition.
    pub ready: bool,
    /// Its real server in IPVS (`ip:port`), when it has one with weight.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub real_server: Option<String>,
}

/// Where a hop happens.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub enum Place {
    /// At the client.
    Client,
    /// On the node (IPVS, nftables, conntrack).
    Node,
    /// At the endpoint pod.
    Pod,
}

/// What happens at a hop.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub enum HopKind {
    /// The client sends to the frontend.
    Send,
    /// IPVS picks a real server and rewrites the destination.
    Dnat,
    /// svcnet's table masquerades: the source becomes the node's.
    Masquerade,
    /// The pod receives the packet.
    Deliver,
    /// The pod answers.
    Reply,
    /// conntrack undoes the rewrites on the reply.
    Reverse,
    /// The client receives the reply from the frontend.
    Receive,
    /// The virtual server has no real server: the packet goes nowhere.
    Dropped,
}

/// One hop: the packet's addresses after it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Hop {
    /// What happens.
    pub kind: HopKind,
    /// Where.
    pub place: Place,
    /// The source, `ip:port`.
    pub src: String,
    /// The destination, `ip:port`.
    pub dst: String,
    /// Which address this hop rewrote: `src`, `dst` or `both`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rewritten: Option<&'static str>,
    /// The rule of svcnet's table that did it, as `nft` prints it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rule: Option<String>,
}

/// The client of a walk.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct WalkClient {
    /// Which kind.
    pub kind: ClientKind,
    /// Its name: a pod's, `client` or `outside host`.
    pub name: String,
    /// Its address and source port.
    pub address: String,
}

/// A walk to one port of one Service.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Walk {
    /// The Service, `namespace/name`.
    pub service: String,
    /// Its ports.
    pub ports: Vec<WalkPort>,
    /// The port walked.
    pub port: WalkPort,
    /// The node.
    pub node: String,
    /// The client; none when this kind cannot reach the Service (see
    /// `unreachable`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub client: Option<WalkClient>,
    /// Why the client cannot reach it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub unreachable: Option<String>,
    /// The address and port the client connects to.
    pub frontend: String,
    /// The IPVS virtual server (`TCP/10.96.0.10:53`).
    pub virtual_server: String,
    /// Its scheduler.
    pub scheduler: String,
    /// Every endpoint of the Service, ready or not.
    pub endpoints: Vec<WalkEndpoint>,
    /// How many real servers take new connections.
    pub real_servers: usize,
    /// The real server IPVS picked this turn.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub chosen: Option<String>,
    /// The hops, empty before a turn is given.
    pub hops: Vec<Hop>,
}

/// Why a walk cannot be drawn at all.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum WalkError {
    /// The cluster has no Node to walk on.
    #[error("this cluster has no node")]
    NoNode,
    /// The node cannot be read as kube-proxy reads it.
    #[error("{0}")]
    Proxy(#[from] ProxyError),
    /// No Service of that `namespace/name`.
    #[error("service {0:?} not found")]
    NoService(String),
    /// A headless or ExternalName Service: nothing to connect to.
    #[error("service {0:?} has no ClusterIP to walk to")]
    NoClusterIp(String),
    /// A Service without ports.
    #[error("service {0:?} has no port")]
    NoPort(String),
}

/// What to walk.
pub struct WalkRequest<'a> {
    /// The Service, `namespace/name`.
    pub service: &'a str,
    /// The Service port; the first when none or another is given.
    pub port: Option<u16>,
    /// Who connects.
    pub client: ClientKind,
    /// How many connections came before on this port (IPVS's turn); none
    /// to show the stage without a packet.
    pub turn: Option<u64>,
}

/// The walk of `request` on the cluster's first node.
pub fn walk(cp: &ControlPlane, request: &WalkRequest) -> Result<Walk, WalkError> {
    let node = cp.nodes().next().ok_or(WalkError::NoNode)?;
    let info = cp.node_info(&node.metadata.name)?;
    let svc = (cp.services())
        .find(|s| s.key() == request.service)
        .ok_or_else(|| WalkError::NoService(request.service.to_string()))?;
    let cluster_ip: IpAddr =
        (svc.spec.cluster_ip.parse()).map_err(|_| WalkError::NoClusterIp(request.service.to_string()))?;
    let ports = walk_ports(svc);
    let port = (ports.iter())
        .find(|p| Some(p.port) == request.port)
        .or(ports.first())
        .cloned()
        .ok_or_else(|| WalkError::NoPort(request.service.to_string()))?;
    let protocol = Protocol::parse(port.protocol).unwrap_or(Protocol::Tcp);
    let table = cp.node_ipvs_table(&node.metadata.name)?;
    let family_net = pod_cidrs(node)
        .into_iter()
        .find(|n| n.is_ipv4() == cluster_ip.is_ipv4());
    let slices = cp.endpoint_slices_for(&svc.metadata.namespace, &svc.metadata.name);
    let endpoints = walk_endpoints(cp, &slices, &table, protocol, cluster_ip, port.port);
    let node_ip = info.ips.iter().copied().find(|ip| ip.is_ipv4() == cluster_ip.is_ipv4());
    let (frontend, unreachable) = match (request.client, port.node_port, node_ip) {
        (ClientKind::Outside, Some(node_port), Some(ip)) => (SocketAddr::new(ip, node_port), None),
        (ClientKind::Outside, _, _) => (
            SocketAddr::new(cluster_ip, port.port),
            Some("only a NodePort (or LoadBalancer) Service can be reached from outside the cluster: a ClusterIP answers inside it only".to_string()),
        ),
        _ => (SocketAddr::new(cluster_ip, port.port), None),
    };
    let key = VirtualServerKey::new(protocol, frontend.ip(), frontend.port());
    let virtual_server = table.virtual_servers.get(&key);
    let reals: Vec<SocketAddr> = (virtual_server.into_iter())
        .flat_map(|vs| vs.real_servers.iter())
        .filter(|(_, rs)| rs.weight > 0)
        .map(|(addr, _)| *addr)
        .collect();
    let client = match request.client {
        ClientKind::Pod => family_net.and_then(last_address).map(|ip| WalkClient {
            kind: ClientKind::Pod,
            name: "client".into(),
            address: SocketAddr::new(ip, CLIENT_PORT).to_string(),
        }),
        ClientKind::Endpoint => (endpoints.iter().find(|e| e.ready && e.pod.is_some())).map(|e| WalkClient {
            kind: ClientKind::Endpoint,
            name: e.pod.clone().unwrap_or_default(),
            address: join(&e.ip, CLIENT_PORT),
        }),
        ClientKind::Outside => node_ip.map(|ip| WalkClient {
            kind: ClientKind::Outside,
            name: "outside host".into(),
            address: SocketAddr::new(first_of_network(ip), CLIENT_PORT).to_string(),
        }),
    };
    let unreachable = unreachable.or_else(|| match (&client, request.client) {
        (Some(_), _) => None,
        (None, ClientKind::Endpoint) => Some("no ready endpoint with a pod to start from".into()),
        (None, _) => Some("the node has no address of this family".into()),
    });
    let mut walk = Walk {
        service: request.service.to_string(),
        ports,
        port,
        node: node.metadata.name.clone(),
        client: if unreachable.is_none() { client } else { None },
        unreachable,
        frontend: frontend.to_string(),
        virtual_server: key.to_string(),
        scheduler: virtual_server
            .map(|vs| vs.settings.scheduler.name().to_string())
            .unwrap_or_else(|| "rr".into()),
        endpoints,
        real_servers: reals.len(),
        chosen: None,
        hops: Vec::new(),
    };
    if let (Some(turn), Some(client)) = (request.turn, walk.client.clone()) {
        let chosen = (!reals.is_empty()).then(|| reals[(turn % reals.len() as u64) as usize]);
        walk.chosen = chosen.map(|c| c.to_string());
        let rules = Rules::of(cp, &info, frontend.ip());
        let bridge = family_net.map(|n| n.network()).and_then(next_address);
        walk.hops = hops(svc, &client, frontend, chosen, bridge, &rules);
    }
    Ok(walk)
}

/// The rules of svcnet's table the walk can name, as `nft` prints them.
struct Rules {
    hairpin: Option<String>,
    node_port: Option<String>,
    masquerade: Option<String>,
}

impl Rules {
    fn of(cp: &ControlPlane, info: &NodeInfo, frontend: IpAddr) -> Self {
        let config = super::modes::svcnet_config(cp);
        let table = desired_ruleset(cp.services(), cp.endpoint_slices(), info, &config);
        let suffix = if frontend.is_ipv4() { "-v4" } else { "-v6" };
        let find = |chain: &str, needle: &str| {
            (table.chains.iter())
                .filter(|c| c.name == chain)
                .flat_map(|c| c.rules.iter())
                .map(rule_text)
                .find(|text| text.contains(needle))
        };
        Rules {
            hairpin: find("nat-postrouting", &format!("@hairpin{suffix}")),
            node_port: find("services", &format!("@node-ports{suffix}")),
            masquerade: find("nat-postrouting", "fully-random"),
        }
    }
}

/// The hops of one connection from `client` to `frontend`, IPVS having
/// picked `chosen` (none: no real server).
fn hops(
    svc: &Service,
    client: &WalkClient,
    frontend: SocketAddr,
    chosen: Option<SocketAddr>,
    bridge: Option<IpAddr>,
    rules: &Rules,
) -> Vec<Hop> {
    let hop = |kind, place, src: &str, dst: &str, rewritten, rule: Option<String>| Hop {
        kind,
        place,
        src: src.to_string(),
        dst: dst.to_string(),
        rewritten,
        rule,
    };
    let front = frontend.to_string();
    let mut out = vec![hop(HopKind::Send, Place::Client, &client.address, &front, None, None)];
    let Some(chosen) = chosen else {
        out.push(hop(HopKind::Dropped, Place::Node, &client.address, &front, None, None));
        return out;
    };
    let pod = chosen.to_string();
    out.push(hop(
        HopKind::Dnat,
        Place::Node,
        &client.address,
        &pod,
        Some("dst"),
        None,
    ));
    let client_ip = client.address.parse::<SocketAddr>().ok().map(|a| a.ip());
    let masquerade = match client.kind {
        ClientKind::Endpoint if client_ip == Some(chosen.ip()) => rules.hairpin.clone(),
        ClientKind::Outside if svc.spec.external_traffic_policy.as_deref() != Some("Local") => {
            match (&rules.node_port, &rules.masquerade) {
                (Some(mark), Some(masq)) => Some(format!("{mark}, then {masq}")),
                _ => None,
            }
        }
        _ => None,
    };
    let source = match (&masquerade, bridge) {
        (Some(rule), Some(bridge)) => {
            let masked = SocketAddr::new(bridge, CLIENT_PORT).to_string();
            out.push(hop(
                HopKind::Masquerade,
                Place::Node,
                &masked,
                &pod,
                Some("src"),
                Some(rule.clone()),
            ));
            masked
        }
        _ => client.address.clone(),
    };
    out.push(hop(HopKind::Deliver, Place::Pod, &source, &pod, None, None));
    out.push(hop(HopKind::Reply, Place::Pod, &pod, &source, None, None));
    let undone = if source == client.address { "src" } else { "both" };
    out.push(hop(
        HopKind::Reverse,
        Place::Node,
        &front,
        &client.address,
        Some(undone),
        None,
    ));
    out.push(hop(
        HopKind::Receive,
        Place::Client,
        &front,
        &client.address,
        None,
        None,
    ));
    out
}

/// The Service's ports with their protocols and NodePorts.
fn walk_ports(svc: &Service) -> Vec<WalkPort> {
    (svc.spec.ports.iter())
        .filter_map(|p| {
            let protocol = Protocol::parse(if p.protocol.is_empty() { "TCP" } else { &p.protocol })?;
            Some(WalkPort {
                port: u16::try_from(p.port).ok()?,
                protocol: protocol.as_str(),
                node_port: p.node_port.and_then(|n| u16::try_from(n).ok()),
            })
        })
        .collect()
}

/// Every endpoint in the Service's slices, with its pod when that exists
/// and its real server for this port in the table.
fn walk_endpoints(
    cp: &ControlPlane,
    slices: &[&EndpointSlice],
    table: &IpvsTable,
    protocol: Protocol,
    cluster_ip: IpAddr,
    port: u16,
) -> Vec<WalkEndpoint> {
    let key = VirtualServerKey::new(protocol, cluster_ip, port);
    let reals = table.virtual_servers.get(&key);
    let mut out = Vec::new();
    for slice in slices {
        for endpoint in &slice.endpoints {
            for ip in &endpoint.addresses {
                let pod = (endpoint.target_ref.as_ref())
                    .filter(|r| r.kind == "Pod")
                    .map(|r| r.name.clone())
                    .filter(|name| cp.pods().any(|p| &p.metadata.name == name));
                let real_server = (reals.into_iter())
                    .flat_map(|vs| vs.real_servers.iter())
                    .find(|(addr, rs)| addr.ip().to_string() == *ip && rs.weight > 0)
                    .map(|(addr, _)| addr.to_string());
                out.push(WalkEndpoint {
                    ip: ip.clone(),
                    pod,
                    ready: endpoint.conditions.ready != Some(false),
                    real_server,
                });
            }
        }
    }
    out
}

/// `ip:port`, with brackets for IPv6.
fn join(ip: &str, port: u16) -> String {
    match ip.parse::<IpAddr>() {
        Ok(addr) => SocketAddr::new(addr, port).to_string(),
        Err(_) => format!("{ip}:{port}"),
    }
}

/// The last address of a range that is not its broadcast (IPv4), or its
/// last (IPv6).
fn last_address(net: IpNetwork) -> Option<IpAddr> {
    match net {
        IpNetwork::V4(v4) => {
            let last = u32::from(v4.broadcast()).checked_sub(1)?;
            Some(IpAddr::V4(last.into()))
        }
        IpNetwork::V6(v6) => Some(IpAddr::V6(v6.broadcast())),
    }
}

/// The address after `ip`.
fn next_address(ip: IpAddr) -> Option<IpAddr> {
    match ip {
        IpAddr::V4(v4) => Some(IpAddr::V4(u32::from(v4).checked_add(1)?.into())),
        IpAddr::V6(v6) => Some(IpAddr::V6(u128::from(v6).checked_add(1)?.into())),
    }
}

/// The first host of the /24 (IPv4) or /64 (IPv6) around `ip`: where the
/// playground puts a host outside the cluster.
fn first_of_network(ip: IpAddr) -> IpAddr {
    match ip {
        IpAddr::V4(v4) => IpAddr::V4((u32::from(v4) & 0xffff_ff00 | 1).into()),
        IpAddr::V6(v6) => IpAddr::V6((u128::from(v6) & !0xffff_ffff_ffff_ffff | 1).into()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::console::{preset, run};

    fn cluster() -> ControlPlane {
        let mut cp = preset::cluster("10.96.0.0/12", 0, preset::ControlPlaneShape::Single).unwrap();
        run(
            &mut cp,
            "kubectl create deployment web --image=nginx --replicas=2 --port=8080",
            None,
        );
        run(
            &mut cp,
            "kubectl expose deployment web --port=80 --target-port=8080 --type=NodePort",
            None,
        );
        cp
    }

    fn request(client: ClientKind, turn: Option<u64>) -> WalkRequest<'static> {
        WalkRequest {
            service: "default/web",
            port: None,
            client,
            turn,
        }
    }

    #[test]
    fn a_pod_reaches_the_real_servers_in_turn_without_masquerading() {
        let cp = cluster();
        let stage = walk(&cp, &request(ClientKind::Pod, None)).unwrap();
        assert!(stage.hops.is_empty() && stage.chosen.is_none());
        assert_eq!(stage.client.as_ref().unwrap().address, "10.244.0.254:43120");
        assert_eq!(stage.real_servers, 2);
        let first = walk(&cp, &request(ClientKind::Pod, Some(0))).unwrap();
        let second = walk(&cp, &request(ClientKind::Pod, Some(1))).unwrap();
        assert_eq!(first.chosen.as_deref(), Some("10.244.0.4:8080"));
        assert_eq!(second.chosen.as_deref(), Some("10.244.0.5:8080"));
        let kinds: Vec<HopKind> = first.hops.iter().map(|h| h.kind).collect();
        use HopKind::*;
        assert_eq!(kinds, [Send, Dnat, Deliver, Reply, Reverse, Receive]);
        assert_eq!(first.hops[1].dst, "10.244.0.4:8080");
        assert_eq!(first.hops[4].src, first.frontend);
    }

    #[test]
    fn a_pod_sent_back_to_itself_is_masqueraded_by_the_hairpin_rule() {
        let cp = cluster();
        let to_itself = walk(&cp, &request(ClientKind::Endpoint, Some(0))).unwrap();
        assert_eq!(to_itself.client.as_ref().unwrap().address, "10.244.0.4:43120");
        let masquerade = to_itself
            .hops
            .iter()
            .find(|h| h.kind == HopKind::Masquerade)
            .expect("hairpin");
        assert_eq!(masquerade.src, "10.244.0.1:43120", "the node's bridge address");
        assert!(masquerade.rule.as_deref().unwrap().contains("@hairpin-v4 masquerade"));
        let to_the_other = walk(&cp, &request(ClientKind::Endpoint, Some(1))).unwrap();
        assert!(to_the_other.hops.iter().all(|h| h.kind != HopKind::Masquerade));
    }

    #[test]
    fn outside_traffic_to_a_node_port_is_masqueraded_unless_the_policy_is_local() {
        let mut cp = cluster();
        let outside = walk(&cp, &request(ClientKind::Outside, Some(0))).unwrap();
        assert!(outside.frontend.starts_with("192.168.49.2:3"), "{}", outside.frontend);
        assert_eq!(outside.client.as_ref().unwrap().address, "192.168.49.1:43120");
        let masquerade = outside
            .hops
            .iter()
            .find(|h| h.kind == HopKind::Masquerade)
            .expect("masquerade");
        assert!(masquerade
            .rule
            .as_deref()
            .unwrap()
            .contains("@node-ports-v4 jump mark-for-masquerade"));
        assert_eq!(outside.hops.last().unwrap().src, outside.frontend);
        let patched = "apiVersion: v1\nkind: Service\nmetadata: {name: web}\nspec: {type: NodePort, externalTrafficPolicy: Local, selector: {app: web}, ports: [{port: 80, targetPort: 8080}]}\n";
        assert!(run(&mut cp, "kubectl apply -f -", Some(patched)).ok);
        let local = walk(&cp, &request(ClientKind::Outside, Some(0))).unwrap();
        assert!(
            local.hops.iter().all(|h| h.kind != HopKind::Masquerade),
            "the client's address is kept"
        );
        run(&mut cp, "kubectl create svc clusterip inner --tcp=80", None);
        let inner = WalkRequest {
            service: "default/inner",
            ..request(ClientKind::Outside, Some(0))
        };
        assert!(walk(&cp, &inner)
            .unwrap()
            .unreachable
            .unwrap()
            .contains("only a NodePort"));
    }

    #[test]
    fn no_real_server_drops_the_packet() {
        let mut cp = cluster();
        run(&mut cp, "kubectl scale deployment web --replicas=0", None);
        let dropped = walk(&cp, &request(ClientKind::Pod, Some(3))).unwrap();
        let kinds: Vec<HopKind> = dropped.hops.iter().map(|h| h.kind).collect();
        assert_eq!(kinds, [HopKind::Send, HopKind::Dropped]);
        assert!(walk(&cp, &request(ClientKind::Endpoint, Some(0)))
            .unwrap()
            .unreachable
            .is_some());
        let missing = WalkRequest {
            service: "default/nope",
            ..request(ClientKind::Pod, None)
        };
        assert_eq!(
            walk(&cp, &missing).unwrap_err().to_string(),
            "service \"default/nope\" not found"
        );
    }
}
