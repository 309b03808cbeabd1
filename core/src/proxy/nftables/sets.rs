//! The named sets of svcnet's table, one of each per IP family, and which
//! of kube-proxy's ipsets each one replaces. Their elements are all that
//! changes when Services, endpoints or the node's addresses change.

use super::model::{Field, KeyType, Set};
use crate::collections::SortedSet;
use crate::family::IpFamily;

/// What a set holds. Each exists once per family (`-v4`, `-v6`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum SetKind {
    /// ClusterIP . protocol . port.
    ClusterIps,
    /// externalIP or LoadBalancer IP . protocol . port, policy Cluster.
    ExternalIps,
    /// The same with `externalTrafficPolicy: Local`.
    ExternalIpsLocal,
    /// The node addresses NodePorts listen on.
    NodePortIps,
    /// protocol . NodePort, policy Cluster.
    NodePorts,
    /// `healthCheckNodePort`s.
    HealthCheckNodePorts,
    /// The addresses bound on `kube-ipvs0`.
    IpvsAddresses,
    /// endpoint IP . protocol . port . endpoint IP, for this node's
    /// endpoints.
    Hairpin,
    /// LoadBalancer IP . protocol . port with source ranges.
    Firewall,
    /// LoadBalancer IP . protocol . port . allowed source prefix.
    FirewallAllow,
    /// LoadBalancer IP . LoadBalancer IP . protocol . port the node itself
    /// may not reach.
    NoNodeAccess,
}

impl SetKind {
    /// Every set, in listing order.
    pub const ALL: [SetKind; 11] = [
        SetKind::ClusterIps,
        SetKind::ExternalIps,
        SetKind::ExternalIpsLocal,
        SetKind::NodePortIps,
        SetKind::NodePorts,
        SetKind::HealthCheckNodePorts,
        SetKind::IpvsAddresses,
        SetKind::Hairpin,
        SetKind::Firewall,
        SetKind::FirewallAllow,
        SetKind::NoNodeAccess,
    ];

    /// The set's name in `family`'s variant, e.g. `cluster-ips-v4`.
    pub fn name(self, family: IpFamily) -> String {
        let stem = match self {
            SetKind::ClusterIps => "cluster-ips",
            SetKind::ExternalIps => "external-ips",
            SetKind::ExternalIpsLocal => "external-ips-local",
            SetKind::NodePortIps => "node-port-ips",
            SetKind::NodePorts => "node-ports",
            SetKind::HealthCheckNodePorts => "health-check-node-ports",
            SetKind::IpvsAddresses => "ipvs-addresses",
            SetKind::Hairpin => "hairpin",
            SetKind::Firewall => "firewall",
            SetKind::FirewallAllow => "firewall-allow",
            SetKind::NoNodeAccess => "no-node-access",
        };
        format!("{stem}-{}", suffix(family))
    }

    fn comment(self) -> &'static str {
        match self {
            SetKind::ClusterIps => "ClusterIP . protocol . port of every Service port (KUBE-CLUSTER-IP)",
            SetKind::ExternalIps => {
                "externalIP or LoadBalancer IP . protocol . port, policy Cluster: masqueraded (KUBE-EXTERNAL-IP, KUBE-LOAD-BALANCER)"
            }
            SetKind::ExternalIpsLocal => {
                "externalIP or LoadBalancer IP . protocol . port, policy Local (KUBE-EXTERNAL-IP-LOCAL, KUBE-LOAD-BALANCER-LOCAL)"
            }
            SetKind::NodePortIps => "the node addresses NodePorts listen on (--nodeport-addresses)",
            SetKind::NodePorts => {
                "protocol . NodePort, policy Cluster: masqueraded (KUBE-NODE-PORT-TCP, -UDP, -SCTP)"
            }
            SetKind::HealthCheckNodePorts => "healthCheckNodePorts (KUBE-HEALTH-CHECK-NODE-PORT)",
            SetKind::IpvsAddresses => "addresses bound on kube-ipvs0 (KUBE-IPVS-IPS)",
            SetKind::Hairpin => {
                "endpoint IP . protocol . port . endpoint IP: this node's pods reaching themselves (KUBE-LOOP-BACK)"
            }
            SetKind::Firewall => {
                "LoadBalancer IP . protocol . port with loadBalancerSourceRanges (KUBE-LOAD-BALANCER-FW)"
            }
            SetKind::FirewallAllow => {
                "LoadBalancer IP . protocol . port . allowed source (KUBE-LOAD-BALANCER-SOURCE-CIDR, -SOURCE-IP)"
            }
            SetKind::NoNodeAccess => {
                "LB IP . LB IP . protocol . port whose source ranges leave this node out (KUBE-IPVS-OUT-FILTER)"
            }
        }
    }

    fn key(self, family: IpFamily) -> Vec<KeyType> {
        let addr = match family {
            IpFamily::IPv4 => KeyType::Ipv4Addr,
            IpFamily::IPv6 => KeyType::Ipv6Addr,
        };
        let frontend = vec![addr, KeyType::InetProto, KeyType::InetService];
        match self {
            SetKind::ClusterIps | SetKind::ExternalIps | SetKind::ExternalIpsLocal | SetKind::Firewall => frontend,
            SetKind::NodePortIps | SetKind::IpvsAddresses => vec![addr],
            SetKind::NodePorts => vec![KeyType::InetProto, KeyType::InetService],
            SetKind::HealthCheckNodePorts => vec![KeyType::InetService],
            SetKind::Hairpin | SetKind::FirewallAllow => [frontend, vec![addr]].concat(),
            SetKind::NoNodeAccess => [vec![addr], frontend].concat(),
        }
    }

    /// An empty set of this kind for `family`.
    pub fn empty(self, family: IpFamily) -> Set {
        Set {
            name: self.name(family),
            key: self.key(family),
            interval: self == SetKind::FirewallAllow,
            comment: self.comment(),
            elements: SortedSet::new(),
        }
    }
}

/// `v4` or `v6`.
fn suffix(family: IpFamily) -> &'static str {
    match family {
        IpFamily::IPv4 => "v4",
        IpFamily::IPv6 => "v6",
    }
}

/// Both families, IPv4 first.
pub const FAMILIES: [IpFamily; 2] = [IpFamily::IPv4, IpFamily::IPv6];

/// `ip saddr` or `ip6 saddr`.
pub fn saddr(family: IpFamily) -> Field {
    match family {
        IpFamily::IPv4 => Field::IpSaddr,
        IpFamily::IPv6 => Field::Ip6Saddr,
    }
}

/// `ip daddr` or `ip6 daddr`.
pub fn daddr(family: IpFamily) -> Field {
    match family {
        IpFamily::IPv4 => Field::IpDaddr,
        IpFamily::IPv6 => Field::Ip6Daddr,
    }
}
