//! The endpoints a Service should have: one per selected Pod and IP family,
//! grouped by the ports the Pod resolves (`getEndpointPorts`,
//! `podToEndpoint` and `ShouldPodBeInEndpoints` in Kubernetes).

use crate::api::endpoint_slice::{Endpoint, EndpointConditions, EndpointPort, ObjectReference};
use crate::api::pod::{Node, Pod};
use crate::api::service::{IntOrString, Service, ServicePort};
use crate::collections::SortedMap;
use crate::family::IpFamily;
use std::net::IpAddr;

/// A set of ports in a canonical order (sorted), so that two Pods resolving
/// the same ports in any order share their slices.
pub type PortKey = Vec<EndpointPort>;

/// The endpoints of one IP family that resolve one set of ports.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Group {
    /// The ports, in the Service's port order.
    pub ports: Vec<EndpointPort>,
    /// The endpoints, by identity.
    pub endpoints: SortedMap<EndpointKey, Endpoint>,
}

/// What makes two endpoints "the same endpoint" (Kubernetes' `hashEndpoint`):
/// the addresses, the hostname and the target's namespace and name. Other
/// fields (conditions, node, zone) may change without the endpoint moving.
///
/// Keys order by address numerically, so new endpoints are placed in
/// address order.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct EndpointKey {
    addresses: Vec<(Option<IpAddr>, String)>,
    target: Option<(String, String)>,
    hostname: Option<String>,
}

impl EndpointKey {
    /// The identity of `endpoint`.
    pub fn of(endpoint: &Endpoint) -> EndpointKey {
        let mut addresses: Vec<(Option<IpAddr>, String)> =
            endpoint.addresses.iter().map(|a| (a.parse().ok(), a.clone())).collect();
        crate::sort::sort(&mut addresses);
        EndpointKey {
            addresses,
            target: endpoint
                .target_ref
                .as_ref()
                .map(|t| (t.namespace.clone(), t.name.clone())),
            hostname: endpoint.hostname.clone(),
        }
    }
}

/// The address families a Service's slices use: its `ipFamilies`; for a
/// Service without them, the family of its ClusterIP, or both for a
/// headless one (`getAddressTypesForService`).
pub fn address_families(service: &Service) -> Vec<IpFamily> {
    let mut families: Vec<IpFamily> = Vec::new();
    for family in service.spec.ip_families.iter().filter_map(|f| IpFamily::parse(f)) {
        if !families.contains(&family) {
            families.push(family);
        }
    }
    if !families.is_empty() {
        return families;
    }
    match service.spec.cluster_ip.parse::<IpAddr>() {
        Ok(ip) => vec![IpFamily::of(ip)],
        Err(_) => vec![IpFamily::IPv4, IpFamily::IPv6],
    }
}

/// The Service's selector, when it has a non-empty one. An empty selector
/// reads as none, as it does once kube-apiserver has stored it.
pub fn selector(service: &Service) -> Option<&SortedMap<String, String>> {
    service.spec.selector.as_ref().filter(|s| !s.is_empty())
}

/// True when every key/value of `selector` is among the Pod's labels.
pub fn selects(selector: &SortedMap<String, String>, pod: &Pod) -> bool {
    selector
        .iter()
        .all(|(k, v)| pod.metadata.labels.get(k).is_some_and(|l| l == v))
}

/// False for Pods that get no endpoint at all: terminal ones
/// (`Succeeded`/`Failed`) and those without an IP yet. Terminating Pods stay
/// (as `terminating` endpoints).
pub fn should_be_in_slices(pod: &Pod) -> bool {
    !pod.is_terminal() && !pod.ips().is_empty()
}

/// The container port `port` targets on `pod`: the number itself, or the
/// container port with that name and the Service port's protocol, searched
/// across all containers. `None` when a name does not resolve.
pub fn find_port(pod: &Pod, port: &ServicePort) -> Option<i64> {
    let protocol = protocol_or_tcp(&port.protocol);
    match &port.target_port {
        None => Some(port.port),
        Some(IntOrString::Int(n)) => Some(*n),
        Some(IntOrString::Str(name)) => pod
            .spec
            .containers
            .iter()
            .flat_map(|c| c.ports.iter())
            .find(|cp| {
                cp.name.as_deref() == Some(name.as_str())
                    && protocol_or_tcp(cp.protocol.as_deref().unwrap_or("")) == protocol
            })
            .map(|cp| cp.container_port),
    }
}

/// The ports `pod` serves for `service`, in the Service's port order; a
/// port whose named `targetPort` does not resolve on this Pod is left out.
pub fn endpoint_ports(service: &Service, pod: &Pod) -> Vec<EndpointPort> {
    service
        .spec
        .ports
        .iter()
        .filter_map(|port| {
            find_port(pod, port).map(|number| EndpointPort {
                name: Some(port.name.clone()),
                protocol: Some(protocol_or_tcp(&port.protocol).to_string()),
                port: Some(number),
                app_protocol: port.app_protocol.clone(),
            })
        })
        .collect()
}

/// The endpoint for `pod` in a slice of `family`, or `None` when the Pod has
/// no address of that family.
pub fn pod_endpoint(pod: &Pod, node: Option<&Node>, service: &Service, family: IpFamily) -> Option<Endpoint> {
    let addresses: Vec<String> = pod
        .ips()
        .into_iter()
        .filter(|ip| ip.parse::<IpAddr>().is_ok_and(|ip| IpFamily::of(ip) == family))
        .collect();
    if addresses.is_empty() {
        return None;
    }
    let serving = pod.is_ready();
    let terminating = pod.is_terminating();
    let ready = service.spec.publish_not_ready_addresses == Some(true) || (serving && !terminating);
    let hostname = pod
        .spec
        .hostname
        .clone()
        .filter(|h| !h.is_empty() && pod.spec.subdomain.as_deref() == Some(service.metadata.name.as_str()));
    Some(Endpoint {
        addresses,
        conditions: EndpointConditions {
            ready: Some(ready),
            serving: Some(serving),
            terminating: Some(terminating),
        },
        hostname,
        target_ref: Some(Box::new(ObjectReference {
            kind: "Pod".into(),
            namespace: pod.metadata.namespace_or_default().to_string(),
            name: pod.metadata.name.clone(),
            uid: pod.metadata.uid.clone(),
            ..ObjectReference::default()
        })),
        node_name: pod.spec.node_name.clone().filter(|n| !n.is_empty()),
        zone: node.and_then(Node::zone).filter(|z| !z.is_empty()).map(str::to_string),
        hints: None,
    })
}

/// Every desired endpoint of `service` (which must have a selector) among
/// `pods` (those of its namespace), by family and then by port set.
pub fn desired_groups(
    service: &Service,
    pods: &[&Pod],
    nodes: &SortedMap<String, Node>,
    families: &[IpFamily],
) -> SortedMap<IpFamily, SortedMap<PortKey, Group>> {
    let mut groups: SortedMap<IpFamily, SortedMap<PortKey, Group>> = SortedMap::new();
    let Some(selector) = selector(service) else {
        return groups;
    };
    for pod in pods.iter().filter(|p| selects(selector, p) && should_be_in_slices(p)) {
        let ports = endpoint_ports(service, pod);
        let mut key = ports.clone();
        crate::sort::sort(&mut key);
        let node = pod.spec.node_name.as_ref().and_then(|n| nodes.get(n));
        for family in families {
            if let Some(endpoint) = pod_endpoint(pod, node, service, *family) {
                let group = groups
                    .entry(*family)
                    .or_default()
                    .entry(key.clone())
                    .or_insert_with(|| Group {
                        ports: ports.clone(),
                        endpoints: SortedMap::new(),
                    });
                group.endpoints.insert(EndpointKey::of(&endpoint), endpoint);
            }
        }
    }
    groups
}

/// `protocol`, or `TCP` when empty.
fn protocol_or_tcp(protocol: &str) -> &str {
    if protocol.is_empty() {
        "TCP"
    } else {
        protocol
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::api::pod::{Container, ContainerPort, PodCondition, PodIp};

    fn pod(name: &str, ips: &[&str], ready: bool) -> Pod {
        let mut p = Pod::default();
        p.metadata.name = name.into();
        p.metadata.labels.insert("app".into(), "web".into());
        p.status.phase = Some("Running".into());
        p.status.pod_ips = ips.iter().map(|ip| PodIp { ip: ip.to_string() }).collect();
        p.status.conditions.push(PodCondition {
            condition_type: "Ready".into(),
            status: if ready { "True" } else { "False" }.into(),
            ..PodCondition::default()
        });
        p
    }

    fn service(target: IntOrString, protocol: &str) -> Service {
        let mut s = Service::default();
        s.metadata.name = "web".into();
        s.spec.selector = Some([("app".to_string(), "web".to_string())].into());
        s.spec.ip_families = vec!["IPv4".into()];
        s.spec.ports.push(ServicePort {
            name: "http".into(),
            protocol: protocol.into(),
            port: 80,
            target_port: Some(target),
            ..ServicePort::default()
        });
        s
    }

    fn with_port(mut p: Pod, name: &str, number: i64, protocol: Option<&str>) -> Pod {
        p.spec.containers.push(Container {
            name: format!("c{}", p.spec.containers.len()),
            ports: vec![ContainerPort {
                name: Some(name.into()),
                container_port: number,
                protocol: protocol.map(str::to_string),
                ..ContainerPort::default()
            }],
            ..Container::default()
        });
        p
    }

    #[test]
    fn named_ports_resolve_by_name_and_protocol_across_containers() {
        let svc = service(IntOrString::Str("http".into()), "TCP");
        let p = with_port(
            with_port(pod("a", &["10.0.0.1"], true), "http", 9090, Some("UDP")),
            "http",
            8080,
            None,
        );
        assert_eq!(find_port(&p, &svc.spec.ports[0]), Some(8080));
        let udp_only = with_port(pod("b", &["10.0.0.2"], true), "http", 9090, Some("UDP"));
        assert_eq!(find_port(&udp_only, &svc.spec.ports[0]), None);
        assert!(endpoint_ports(&svc, &udp_only).is_empty());
        let numeric = service(IntOrString::Int(7000), "");
        assert_eq!(
            endpoint_ports(&numeric, &udp_only),
            vec![EndpointPort {
                name: Some("http".into()),
                protocol: Some("TCP".into()),
                port: Some(7000),
                app_protocol: None
            }]
        );
    }

    #[test]
    fn conditions_follow_readiness_termination_and_publish_not_ready() {
        let mut svc = service(IntOrString::Int(80), "TCP");
        let ready = pod("a", &["10.0.0.1"], true);
        let mut terminating = pod("b", &["10.0.0.2"], true);
        terminating.metadata.deletion_timestamp = Some("2024-01-01T00:00:00Z".into());
        let not_ready = pod("c", &["10.0.0.3"], false);
        let cond = |p: &Pod, s: &Service| pod_endpoint(p, None, s, IpFamily::IPv4).unwrap().conditions;
        let c = |r, s, t| EndpointConditions {
            ready: Some(r),
            serving: Some(s),
            terminating: Some(t),
        };
        assert_eq!(cond(&ready, &svc), c(true, true, false));
        assert_eq!(cond(&terminating, &svc), c(false, true, true));
        assert_eq!(cond(&not_ready, &svc), c(false, false, false));
        svc.spec.publish_not_ready_addresses = Some(true);
        assert_eq!(cond(&terminating, &svc), c(true, true, true));
        assert_eq!(cond(&not_ready, &svc), c(true, false, false));
    }

    #[test]
    fn families_split_addresses_and_hostname_needs_the_subdomain() {
        let svc = service(IntOrString::Int(80), "TCP");
        let mut p = pod("a", &["10.0.0.1", "fd00::1"], true);
        p.spec.hostname = Some("a".into());
        assert_eq!(
            pod_endpoint(&p, None, &svc, IpFamily::IPv6).unwrap().addresses,
            ["fd00::1"]
        );
        assert_eq!(pod_endpoint(&p, None, &svc, IpFamily::IPv4).unwrap().hostname, None);
        p.spec.subdomain = Some("web".into());
        assert_eq!(
            pod_endpoint(&p, None, &svc, IpFamily::IPv4)
                .unwrap()
                .hostname
                .as_deref(),
            Some("a")
        );
        let v4_only = pod("b", &["10.0.0.2"], true);
        assert!(pod_endpoint(&v4_only, None, &svc, IpFamily::IPv6).is_none());
    }

    #[test]
    fn terminal_and_ip_less_pods_are_skipped_and_groups_split_by_ports() {
        let svc = service(IntOrString::Str("http".into()), "TCP");
        let a = with_port(pod("a", &["10.0.0.1"], true), "http", 8080, None);
        let b = with_port(pod("b", &["10.0.0.2"], true), "http", 9090, None);
        let mut done = with_port(pod("c", &["10.0.0.3"], true), "http", 8080, None);
        done.status.phase = Some("Succeeded".into());
        let no_ip = with_port(pod("d", &[], false), "http", 8080, None);
        let mut other = with_port(pod("e", &["10.0.0.5"], true), "http", 8080, None);
        other.metadata.labels.insert("app".into(), "db".into());
        let pods = [&a, &b, &done, &no_ip, &other];
        let groups = desired_groups(&svc, &pods, &SortedMap::new(), &[IpFamily::IPv4]);
        let v4 = &groups[&IpFamily::IPv4];
        assert_eq!(v4.len(), 2);
        let sizes: Vec<usize> = v4.values().map(|g| g.endpoints.len()).collect();
        assert_eq!(sizes, [1, 1]);
    }

    #[test]
    fn families_come_from_the_service() {
        let mut svc = service(IntOrString::Int(80), "TCP");
        svc.spec.ip_families = vec!["IPv6".into(), "IPv4".into()];
        assert_eq!(address_families(&svc), [IpFamily::IPv6, IpFamily::IPv4]);
        svc.spec.ip_families.clear();
        svc.spec.cluster_ip = "fd00::10".into();
        assert_eq!(address_families(&svc), [IpFamily::IPv6]);
        svc.spec.cluster_ip = "None".into();
        assert_eq!(address_families(&svc), [IpFamily::IPv4, IpFamily::IPv6]);
    }
}
