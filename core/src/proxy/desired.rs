//! The desired IPVS table of one node, built per Service.
//!
//! [`service_fragment`] turns one admitted Service and its EndpointSlices
//! into the virtual servers and `kube-ipvs0` addresses it needs on a node,
//! as kube-proxy's IPVS mode programs them:
//!
//! - one virtual server per ClusterIP (each family) × port × protocol, with
//!   the endpoints `internalTrafficPolicy` picks;
//! - one per node IP of the Service's families × NodePort, and one per
//!   `externalIPs` and LoadBalancer ingress IP × port, with the endpoints
//!   `externalTrafficPolicy` picks;
//! - real servers forward by NAT (masq) with weight 1;
//! - the scheduler is the node's default (`rr`) unless the
//!   `svcnet.io/ipvs-scheduler` annotation names another known one (an
//!   unknown name skips the Service with a warning); `mh` gets the `mh-port`
//!   flag, `sh` the `sh-port` flag when configured; ClientIP session
//!   affinity makes the virtual servers persistent for `timeoutSeconds`;
//! - `kube-ipvs0` gets the ClusterIPs, and the external and LoadBalancer IPs
//!   that are not the node's own addresses.
//!
//! Headless and ExternalName Services get nothing. [`desired_table`] builds a
//! whole table in one pass; [`DesiredIndex`](super::index::DesiredIndex) keeps one up to date a Service
//! at a time, with the same result.

use super::categorize::{categorize, port_endpoints, Categorized};
use super::error::{ProxyError, ProxyWarning};
use super::node::NodeInfo;
use super::scheduler::{Scheduler, SCHEDULER_ANNOTATION};
use super::table::VirtualServerSettings;
use super::table::{full_netmask, Flags, IpvsTable, Protocol, RealServer, VirtualServer, VirtualServerKey};
use crate::api::endpoint_slice::{EndpointSlice, SERVICE_NAME_LABEL};
use crate::api::service::types;
use crate::api::Service;
use crate::apiserver::node_port::PortRange;
use crate::collections::{SortedMap, SortedSet};
use crate::family::IpFamily;
use serde::{Deserialize, Serialize};
use std::net::{IpAddr, SocketAddr};
use std::time::Duration;

/// The proxy's settings on a node (kube-proxy's `--ipvs-*` flags and the
/// parts of the cluster configuration it needs).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default, deny_unknown_fields)]
pub struct ProxyConfig {
    /// The default scheduler (`--ipvs-scheduler`), `rr`.
    pub scheduler: Scheduler,
    /// Also hash on the source port with `sh` (sets `sh-port`); `mh` always
    /// gets `mh-port`, as in kube-proxy.
    pub sh_port: bool,
    /// `--service-node-port-range`: virtual servers on node IPs with ports
    /// in this range belong to the proxy.
    pub node_port_range: PortRange,
    /// How long a removed TCP real server with connections may drain (at
    /// weight 0) before it is deleted anyway. Default 600 s.
    pub drain_timeout_seconds: u64,
    /// `--ipvs-exclude-cidrs`: virtual servers on these addresses are never
    /// deleted, even on an address bound on `kube-ipvs0` (kube-proxy's
    /// protection for IPVS rules other software keeps there).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub exclude_cidrs: Vec<ipnetwork::IpNetwork>,
    /// `--masquerade-all` (or a configuration file's
    /// `iptables.masqueradeAll`): masquerade all ClusterIP traffic
    /// (nftables ruleset).
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub masquerade_all: bool,
    /// `--cluster-cidr` (or a configuration file's `clusterCIDR`): the pod
    /// CIDRs, at most one per family in kube-proxy; ClusterIP traffic from
    /// outside them is masqueraded (nftables ruleset). With none of a
    /// family, only traffic a node process sends from a ClusterIP is.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub cluster_cidrs: Vec<ipnetwork::IpNetwork>,
}

impl Default for ProxyConfig {
    fn default() -> ProxyConfig {
        ProxyConfig {
            scheduler: Scheduler::Rr,
            sh_port: false,
            node_port_range: PortRange::DEFAULT,
            drain_timeout_seconds: 600,
            exclude_cidrs: Vec::new(),
            masquerade_all: false,
            cluster_cidrs: Vec::new(),
        }
    }
}

impl ProxyConfig {
    /// Checks the default scheduler is one the kernel knows.
    pub fn validate(&self) -> Result<(), ProxyError> {
        match Scheduler::known(self.scheduler.name()) {
            Some(_) => Ok(()),
            None => Err(ProxyError::UnknownScheduler {
                scheduler: self.scheduler.name().to_string(),
            }),
        }
    }

    /// The drain timeout as a duration.
    pub fn drain_timeout(&self) -> Duration {
        Duration::from_secs(self.drain_timeout_seconds)
    }
}

/// What one Service contributes to a node's table.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ServiceFragment {
    /// Its virtual servers with their real servers.
    pub virtual_servers: SortedMap<VirtualServerKey, VirtualServer>,
    /// The addresses it needs on `kube-ipvs0`.
    pub addresses: SortedSet<IpAddr>,
    /// What was skipped, and why.
    pub warnings: Vec<ProxyWarning>,
}

/// A node's desired table, with what had to be skipped.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Desired {
    /// The table.
    pub table: IpvsTable,
    /// Warnings, by Service then conflicts.
    pub warnings: Vec<ProxyWarning>,
}

/// Groups EndpointSlices by the Service named in their
/// `kubernetes.io/service-name` label, keyed `namespace/name`, each group
/// sorted by slice name. Slices without the label belong to no Service.
pub fn slices_by_service<'a>(
    slices: impl IntoIterator<Item = &'a EndpointSlice>,
) -> SortedMap<String, Vec<&'a EndpointSlice>> {
    let mut groups: SortedMap<String, Vec<&'a EndpointSlice>> = SortedMap::new();
    for slice in slices {
        if let Some(service) = slice.metadata.labels.get(SERVICE_NAME_LABEL) {
            let key = format!("{}/{}", slice.metadata.namespace_or_default(), service);
            groups.entry(key).or_default().push(slice);
        }
    }
    for group in groups.values_mut() {
        crate::sort::sort_by(group, |a, b| a.metadata.name.cmp(&b.metadata.name));
    }
    groups
}

/// The desired table of `node`: every Service with the slices that name it.
///
/// The same table as [`DesiredIndex::build`](super::index::DesiredIndex::build) (a Service that appears twice
/// counts once, its last copy; a virtual server two Services want goes to
/// the first by `namespace/name`), built in one pass without keeping the
/// per-Service fragments.
pub fn desired_table<'s, 'e>(
    services: impl IntoIterator<Item = &'s Service>,
    slices: impl IntoIterator<Item = &'e EndpointSlice>,
    node: &NodeInfo,
    config: &ProxyConfig,
) -> Desired {
    let groups = slices_by_service(slices);
    let by_key: SortedMap<String, &Service> = crate::sort::map_from(services.into_iter().map(|svc| (svc.key(), svc)));
    let mut desired = Desired::default();
    let mut owners: SortedMap<VirtualServerKey, &str> = SortedMap::new();
    let mut conflicts: SortedMap<VirtualServerKey, Vec<String>> = SortedMap::new();
    for (key, svc) in &by_key {
        let slices = groups.get(key).map(Vec::as_slice).unwrap_or_default();
        let fragment = service_fragment(svc, slices, node, config);
        desired.warnings.extend(fragment.warnings);
        desired.table.addresses.extend(fragment.addresses);
        for (vs_key, vs) in fragment.virtual_servers {
            match owners.get(&vs_key) {
                Some(owner) => conflicts
                    .entry(vs_key)
                    .or_insert_with(|| vec![owner.to_string()])
                    .push(key.clone()),
                None => {
                    owners.insert(vs_key, key);
                    desired.table.virtual_servers.insert(vs_key, vs);
                }
            }
        }
    }
    desired.warnings.extend(
        conflicts
            .into_iter()
            .map(|(vs_key, services)| ProxyWarning::VirtualServerConflict {
                virtual_server: vs_key.to_string(),
                services,
            }),
    );
    desired
}

/// What one Service needs on `node`, given its slices (sorted by name).
pub fn service_fragment(
    svc: &Service,
    slices: &[&EndpointSlice],
    node: &NodeInfo,
    config: &ProxyConfig,
) -> ServiceFragment {
    let mut fragment = ServiceFragment::default();
    if svc.service_type() == types::EXTERNAL_NAME || svc.is_headless() {
        return fragment;
    }
    let key = svc.key();
    let scheduler = match svc.metadata.annotations.get(SCHEDULER_ANNOTATION) {
        None => config.scheduler.clone(),
        Some(name) => match Scheduler::known(name.trim()) {
            Some(s) => s,
            None => {
                fragment.warnings.push(ProxyWarning::UnknownScheduler {
                    service: key,
                    scheduler: name.clone(),
                });
                return fragment;
            }
        },
    };
    let mut builder = Builder {
        svc,
        key,
        slices,
        node,
        scheduler,
        sh_port: config.sh_port,
        fragment,
    };
    for (i, text) in svc.spec.cluster_ips.iter().enumerate() {
        if let Some(ip) = builder.parse_ip(text, || format!("spec.clusterIPs[{i}]")) {
            builder.add_family(ip);
        }
    }
    // Each family and port reads the same fields and slices: report each
    // problem once.
    let mut fragment = builder.fragment;
    let mut seen: Vec<ProxyWarning> = Vec::new();
    fragment.warnings.retain(|w| {
        let new = !seen.contains(w);
        if new {
            seen.push(w.clone());
        }
        new
    });
    fragment
}

/// Builds one Service's fragment, family by family.
struct Builder<'s, 'a> {
    svc: &'s Service,
    key: String,
    slices: &'s [&'a EndpointSlice],
    node: &'s NodeInfo,
    scheduler: Scheduler,
    sh_port: bool,
    fragment: ServiceFragment,
}

impl Builder<'_, '_> {
    fn parse_ip(&mut self, text: &str, field: impl FnOnce() -> String) -> Option<IpAddr> {
        match text.parse() {
            Ok(ip) => Some(ip),
            Err(_) => {
                self.fragment.warnings.push(ProxyWarning::InvalidServiceAddress {
                    service: self.key.clone(),
                    field: field(),
                    value: text.to_string(),
                });
                None
            }
        }
    }

    fn settings(&self, family: IpFamily) -> VirtualServerSettings {
        let mut flags = Flags::NONE;
        match self.scheduler {
            Scheduler::Mh => flags = flags.with(Flags::SCHED2),
            Scheduler::Sh if self.sh_port => flags = flags.with(Flags::SCHED2),
            _ => {}
        }
        let mut timeout = 0;
        if self.svc.spec.session_affinity == "ClientIP" {
            flags = flags.with(Flags::PERSISTENT);
            let seconds = self
                .svc
                .spec
                .session_affinity_config
                .as_ref()
                .and_then(|c| c.client_ip.as_ref())
                .and_then(|c| c.timeout_seconds)
                .unwrap_or(crate::apiserver::admission::defaults::DEFAULT_CLIENT_IP_TIMEOUT_SECONDS);
            timeout = u32::try_from(seconds).unwrap_or(u32::MAX);
        }
        VirtualServerSettings {
            scheduler: self.scheduler.clone(),
            flags,
            timeout,
            netmask: full_netmask(family),
        }
    }

    /// The external addresses of one family: externalIPs, then LoadBalancer
    /// ingress IPs.
    fn external_ips(&mut self, family: IpFamily) -> Vec<IpAddr> {
        let svc = self.svc;
        let mut fields: Vec<(String, &str)> = svc
            .spec
            .external_ips
            .iter()
            .enumerate()
            .map(|(i, ip)| (format!("spec.externalIPs[{i}]"), ip.as_str()))
            .collect();
        if svc.service_type() == types::LOAD_BALANCER {
            let ingress = svc.status.load_balancer.iter().flat_map(|lb| lb.ingress.iter());
            fields.extend(
                ingress
                    .enumerate()
                    .filter_map(|(i, ing)| Some((format!("status.loadBalancer.ingress[{i}].ip"), ing.ip.as_deref()?))),
            );
        }
        let mut ips = Vec::new();
        for (field, text) in fields {
            if let Some(ip) = self.parse_ip(text, || field) {
                if IpFamily::of(ip) == family && !ips.contains(&ip) {
                    ips.push(ip);
                }
            }
        }
        ips
    }

    fn add_family(&mut self, cluster_ip: IpAddr) {
        let family = IpFamily::of(cluster_ip);
        let settings = self.settings(family);
        let internal_local = self.svc.spec.internal_traffic_policy.as_deref() == Some("Local");
        let external_local = self.svc.spec.external_traffic_policy.as_deref() == Some("Local");
        let external_ips = self.external_ips(family);
        let node_ips: Vec<IpAddr> = if self.svc.needs_node_ports() {
            self.node.ips_of(family).collect()
        } else {
            Vec::new()
        };
        self.fragment.addresses.insert(cluster_ip);
        for ip in &external_ips {
            if !self.node.has_ip(*ip) {
                self.fragment.addresses.insert(*ip);
            }
        }
        let svc = self.svc;
        for (i, port) in svc.spec.ports.iter().enumerate() {
            let Some((protocol, number)) = self.port(i) else {
                continue;
            };
            let endpoints = port_endpoints(&port.name, protocol, family, self.slices, &mut self.fragment.warnings);
            let chosen = categorize(&endpoints, self.node);
            self.add(protocol, cluster_ip, number, &settings, &chosen, internal_local);
            if let Some(node_port) = port.node_port.and_then(|p| u16::try_from(p).ok()).filter(|p| *p != 0) {
                for ip in &node_ips {
                    self.add(protocol, *ip, node_port, &settings, &chosen, external_local);
                }
            }
            for ip in &external_ips {
                self.add(protocol, *ip, number, &settings, &chosen, external_local);
            }
        }
    }

    /// Protocol and number of `spec.ports[i]`, or a warning.
    fn port(&mut self, i: usize) -> Option<(Protocol, u16)> {
        let port = &self.svc.spec.ports[i];
        let protocol_text = if port.protocol.is_empty() {
            "TCP"
        } else {
            &port.protocol
        };
        let Some(protocol) = Protocol::parse(protocol_text) else {
            self.fragment.warnings.push(ProxyWarning::InvalidServicePort {
                service: self.key.clone(),
                field: format!("spec.ports[{i}].protocol"),
                value: protocol_text.to_string(),
            });
            return None;
        };
        match u16::try_from(port.port).ok().filter(|p| *p != 0) {
            Some(number) => Some((protocol, number)),
            None => {
                self.fragment.warnings.push(ProxyWarning::InvalidServicePort {
                    service: self.key.clone(),
                    field: format!("spec.ports[{i}].port"),
                    value: port.port.to_string(),
                });
                None
            }
        }
    }

    fn add(
        &mut self,
        protocol: Protocol,
        address: IpAddr,
        port: u16,
        settings: &VirtualServerSettings,
        chosen: &Categorized,
        local: bool,
    ) {
        let real_servers: SortedMap<SocketAddr, RealServer> =
            crate::sort::map_from(chosen.for_ipvs(local).iter().map(|addr| (*addr, RealServer::masq(1))));
        self.fragment.virtual_servers.insert(
            VirtualServerKey::new(protocol, address, port),
            VirtualServer {
                settings: settings.clone(),
                real_servers,
            },
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::api::endpoint_slice::{Endpoint, EndpointConditions, EndpointPort};
    use crate::api::service::{LoadBalancerIngress, LoadBalancerStatus, ServicePort};

    fn service(name: &str, cluster_ips: &[&str]) -> Service {
        let mut svc = Service::default();
        svc.metadata.name = name.into();
        svc.metadata.namespace = "default".into();
        svc.spec.service_type = "ClusterIP".into();
        svc.spec.cluster_ips = cluster_ips.iter().map(|s| s.to_string()).collect();
        svc.spec.cluster_ip = svc.spec.cluster_ips.first().cloned().unwrap_or_default();
        svc.spec.ports = vec![ServicePort {
            name: "http".into(),
            protocol: "TCP".into(),
            port: 80,
            ..Default::default()
        }];
        svc.spec.session_affinity = "None".into();
        svc.spec.internal_traffic_policy = Some("Cluster".into());
        svc
    }

    fn slice(service: &str, family: &str, endpoints: &[(&str, &str)]) -> EndpointSlice {
        let mut s = EndpointSlice {
            address_type: family.into(),
            endpoints: endpoints
                .iter()
                .map(|(ip, node)| Endpoint {
                    addresses: vec![ip.to_string()],
                    conditions: EndpointConditions::default(),
                    node_name: Some(node.to_string()),
                    ..Default::default()
                })
                .collect(),
            ports: vec![EndpointPort {
                name: Some("http".into()),
                protocol: Some("TCP".into()),
                port: Some(8080),
                app_protocol: None,
            }],
            ..Default::default()
        };
        s.metadata.name = format!("{service}-{}", family.to_lowercase());
        s.metadata.namespace = "default".into();
        s.metadata.labels.insert(SERVICE_NAME_LABEL.into(), service.into());
        s
    }

    fn node() -> NodeInfo {
        NodeInfo {
            name: "node-a".into(),
            ips: vec!["192.168.0.10".parse().expect("ip"), "fd00::10".parse().expect("ip")],
            zone: None,
        }
    }

    fn keys(table: &IpvsTable) -> Vec<String> {
        table.virtual_servers.keys().map(ToString::to_string).collect()
    }

    #[test]
    fn cluster_ip_service_with_endpoints() {
        let svc = service("web", &["10.96.0.10"]);
        let s = slice("web", "IPv4", &[("10.244.1.5", "node-b"), ("10.244.0.5", "node-a")]);
        let d = desired_table([&svc], [&s], &node(), &ProxyConfig::default());
        assert!(d.warnings.is_empty());
        assert_eq!(keys(&d.table), ["TCP/10.96.0.10:80"]);
        let vs = &d.table.virtual_servers[&"TCP/10.96.0.10:80".parse().expect("key")];
        assert_eq!(vs.settings.scheduler, Scheduler::Rr);
        assert_eq!(vs.settings.netmask, u32::MAX);
        let rs: Vec<String> = vs.real_servers.keys().map(ToString::to_string).collect();
        assert_eq!(rs, ["10.244.0.5:8080", "10.244.1.5:8080"]);
        assert!(vs.real_servers.values().all(|r| r.weight == 1));
        assert_eq!(
            d.table.addresses.iter().map(ToString::to_string).collect::<Vec<_>>(),
            ["10.96.0.10"]
        );
    }

    #[test]
    fn node_ports_external_and_load_balancer_ips_dual_stack() {
        let mut svc = service("lb", &["10.96.0.20", "fd00:10:96::20"]);
        svc.spec.service_type = "LoadBalancer".into();
        svc.spec.ports[0].node_port = Some(30080);
        svc.spec.external_ips = vec!["203.0.113.7".into(), "192.168.0.10".into()];
        svc.status.load_balancer = Some(LoadBalancerStatus {
            ingress: vec![
                LoadBalancerIngress {
                    ip: Some("198.51.100.1".into()),
                    hostname: None,
                },
                LoadBalancerIngress {
                    ip: None,
                    hostname: Some("lb.example.com".into()),
                },
            ],
        });
        let d = desired_table([&svc], [], &node(), &ProxyConfig::default());
        assert_eq!(
            keys(&d.table),
            [
                "TCP/10.96.0.20:80",
                "TCP/192.168.0.10:80",
                "TCP/192.168.0.10:30080",
                "TCP/198.51.100.1:80",
                "TCP/203.0.113.7:80",
                "TCP/[fd00::10]:30080",
                "TCP/[fd00:10:96::20]:80",
            ]
        );
        let bound: Vec<String> = d.table.addresses.iter().map(ToString::to_string).collect();
        assert_eq!(bound, ["10.96.0.20", "198.51.100.1", "203.0.113.7", "fd00:10:96::20"]);
    }

    #[test]
    fn scheduler_annotation_affinity_and_flags() {
        let mut svc = service("sticky", &["10.96.0.30"]);
        svc.spec.session_affinity = "ClientIP".into();
        svc.metadata
            .annotations
            .insert(SCHEDULER_ANNOTATION.into(), "mh".into());
        let d = desired_table([&svc], [], &node(), &ProxyConfig::default());
        let vs = d.table.virtual_servers.values().next().expect("one virtual server");
        assert_eq!(vs.settings.scheduler, Scheduler::Mh);
        assert_eq!(vs.settings.flags, Flags::PERSISTENT.with(Flags::SCHED2));
        assert_eq!(vs.settings.timeout, 10800);

        svc.metadata
            .annotations
            .insert(SCHEDULER_ANNOTATION.into(), "sh".into());
        let config = ProxyConfig {
            sh_port: true,
            ..Default::default()
        };
        let d = desired_table([&svc], [], &node(), &config);
        let vs = d.table.virtual_servers.values().next().expect("one virtual server");
        assert_eq!(vs.settings.flags, Flags::PERSISTENT.with(Flags::SCHED2));

        svc.metadata
            .annotations
            .insert(SCHEDULER_ANNOTATION.into(), "fastest".into());
        let d = desired_table([&svc], [], &node(), &ProxyConfig::default());
        assert!(d.table.virtual_servers.is_empty() && d.table.addresses.is_empty());
        assert_eq!(
            d.warnings.iter().map(ToString::to_string).collect::<Vec<_>>(),
            [
                "Service default/sticky: unknown IPVS scheduler \"fastest\" in annotation svcnet.io/ipvs-scheduler; \
              must be one of rr, wrr, lc, wlc, lblc, lblcr, dh, sh, sed, nq, mh, fo, ovf, twos; the Service is skipped"
            ]
        );
    }

    #[test]
    fn problems_are_reported_once() {
        let mut svc = service("dual", &["10.96.0.60", "fd00::60"]);
        svc.spec.external_ips = vec!["not-an-ip".into()];
        svc.spec.ports.push(ServicePort {
            name: "bad".into(),
            protocol: "ICMP".into(),
            port: 1,
            ..Default::default()
        });
        let d = desired_table([&svc], [], &node(), &ProxyConfig::default());
        assert_eq!(
            d.warnings.iter().map(ToString::to_string).collect::<Vec<_>>(),
            [
                "Service default/dual: spec.externalIPs[0] \"not-an-ip\" is not an IP address; ignored",
                "Service default/dual: spec.ports[1].protocol \"ICMP\" cannot be programmed in IPVS; ignored",
            ]
        );
        assert_eq!(d.table.virtual_servers.len(), 2, "the valid port, once per family");
    }

    #[test]
    fn headless_and_external_name_get_nothing() {
        let mut headless = service("h", &["None"]);
        headless.spec.cluster_ip = "None".into();
        let mut alias = service("alias", &[]);
        alias.spec.service_type = "ExternalName".into();
        let d = desired_table([&headless, &alias], [], &node(), &ProxyConfig::default());
        assert_eq!(d, Desired::default());
    }

    #[test]
    fn traffic_policies_pick_local_endpoints() {
        let mut svc = service("local", &["10.96.0.40"]);
        svc.spec.service_type = "NodePort".into();
        svc.spec.ports[0].node_port = Some(30040);
        svc.spec.internal_traffic_policy = Some("Local".into());
        svc.spec.external_traffic_policy = Some("Cluster".into());
        let s = slice("local", "IPv4", &[("10.244.1.5", "node-b"), ("10.244.0.5", "node-a")]);
        let d = desired_table([&svc], [&s], &node(), &ProxyConfig::default());
        let count = |k: &str| d.table.virtual_servers[&k.parse().expect("key")].real_servers.len();
        assert_eq!(count("TCP/10.96.0.40:80"), 1);
        assert_eq!(count("TCP/192.168.0.10:30040"), 2);
    }

    #[test]
    fn config_validation() {
        assert!(ProxyConfig::default().validate().is_ok());
        let bad = ProxyConfig {
            scheduler: Scheduler::from_name("nope"),
            ..Default::default()
        };
        assert_eq!(
            bad.validate().unwrap_err().to_string(),
            "unknown IPVS scheduler \"nope\": must be one of rr, wrr, lc, wlc, lblc, lblcr, dh, sh, sed, nq, mh, fo, ovf, twos"
        );
    }
}
