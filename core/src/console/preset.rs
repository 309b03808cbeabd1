//! The playground's cluster: what a one-node cluster starts with, as
//! kubeadm, minikube or kind sets it up.
//!
//! kubeadm's node, `node-1`, has an address and a share of the pod network
//! in each IP family of the service CIDRs, the primary family first (IPv4:
//! 192.168.49.2, pods from 10.244.0.0/24 of 10.244.0.0/16; IPv6:
//! fd00:192:168:49::2, pods from fd00:10:244::/64 of fd00:10:244::/56). The
//! one apiserver runs on it and listens on kubeadm's default port, 6443,
//! so the `kubernetes` Service's endpoint is 192.168.49.2:6443 (or the
//! IPv6 address on an IPv6-primary cluster). A dual-stack range
//! (`10.96.0.0/12,fd00:10:96::/108`) gives the node both families, so its
//! Pods get an address of each.
//!
//! minikube (its docker driver) names its node `minikube`, on the same
//! 192.168.49.2, and its apiserver listens on 8443; it runs one CoreDNS
//! replica. kind names its node `kind-control-plane`, on its docker
//! network's first host (172.18.0.2, or fc00:f853:ccd:e793::2), with the
//! apiserver on 6443. The service CIDR stays the user's: kind's own default
//! is 10.96.0.0/16, minikube's 10.96.0.0/12.

use crate::api::parse_manifests;
use crate::controlplane::{ClusterConfig, ConfigError, ControlPlane};
use crate::time::Time;
use serde_json::json;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

/// kubeadm's node name in the playground.
pub const NODE_NAME: &str = "node-1";
/// The apiserver's port: kubeadm's default (kind's too).
pub const APISERVER_PORT: u16 = 6443;
/// minikube's apiserver port.
pub const MINIKUBE_APISERVER_PORT: u16 = 8443;

/// Which cluster the playground starts, and where its apiservers run.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum ControlPlaneShape {
    /// One apiserver on `node-1`, port 6443 (kubeadm's single node).
    #[default]
    Single,
    /// Three apiservers on three control-plane machines (192.168.49.11 to
    /// .13, or the IPv6 ones), port 6443: kubeadm's highly available setup.
    HighlyAvailable,
    /// A managed cluster: one load-balancer address (172.16.0.2, or
    /// fd00:172:16::2) on 443 in front of apiservers the user never sees.
    Managed,
    /// minikube: the node `minikube`, its apiserver on 8443.
    Minikube,
    /// kind: the node `kind-control-plane` on 172.18.0.2, apiserver 6443.
    Kind,
}

impl ControlPlaneShape {
    /// `single`, `ha`, `managed`, `minikube` or `kind`; `None` for another
    /// word.
    pub fn from_word(word: &str) -> Option<Self> {
        match word {
            "single" | "" => Some(Self::Single),
            "ha" => Some(Self::HighlyAvailable),
            "managed" => Some(Self::Managed),
            "minikube" => Some(Self::Minikube),
            "kind" => Some(Self::Kind),
            _ => None,
        }
    }

    /// The node's name.
    pub fn node_name(self) -> &'static str {
        match self {
            Self::Minikube => "minikube",
            Self::Kind => "kind-control-plane",
            Self::Single | Self::HighlyAvailable | Self::Managed => NODE_NAME,
        }
    }

    /// The node's address in `family`.
    fn node_ip(self, family: &Family) -> &'static str {
        match self {
            Self::Kind => family.kind_node_ip,
            _ => family.node_ip,
        }
    }

    /// How many CoreDNS Pods the cluster runs.
    fn coredns_replicas(self) -> u32 {
        match self {
            Self::Minikube => 1,
            _ => 2,
        }
    }

    /// The apiserver endpoints for a cluster whose primary family is
    /// `family`.
    fn apiservers(self, family: &Family) -> Vec<String> {
        let join = |ip: &str, port: u16| match ip.contains(':') {
            true => format!("[{ip}]:{port}"),
            false => format!("{ip}:{port}"),
        };
        let v6 = family.node_ip.contains(':');
        match self {
            Self::Single | Self::Kind => vec![join(self.node_ip(family), APISERVER_PORT)],
            Self::Minikube => vec![join(self.node_ip(family), MINIKUBE_APISERVER_PORT)],
            Self::HighlyAvailable => (11..=13)
                .map(|host| match v6 {
                    true => join(&format!("fd00:192:168:49::{host:x}"), APISERVER_PORT),
                    false => join(&format!("192.168.49.{host}"), APISERVER_PORT),
                })
                .collect(),
            Self::Managed => vec![join(if v6 { "fd00:172:16::2" } else { "172.16.0.2" }, 443)],
        }
    }
}

/// One IP family's addresses of the playground.
struct Family {
    node_ip: &'static str,
    kind_node_ip: &'static str,
    pod_network: &'static str,
    node_pod_cidr: &'static str,
}

const IPV4: Family = Family {
    node_ip: "192.168.49.2",
    kind_node_ip: "172.18.0.2",
    pod_network: "10.244.0.0/16",
    node_pod_cidr: "10.244.0.0/24",
};

const IPV6: Family = Family {
    node_ip: "fd00:192:168:49::2",
    kind_node_ip: "fc00:f853:ccd:e793::2",
    pod_network: "fd00:10:244::/56",
    node_pod_cidr: "fd00:10:244::/64",
};

/// The families of the service CIDRs, the primary first (IPv4 for an
/// empty range: kube-apiserver's fallback is 10.0.0.0/24).
fn families(service_cidr: &str) -> Vec<&'static Family> {
    let mut out: Vec<&'static Family> = Vec::new();
    for entry in service_cidr.split(',').map(str::trim).filter(|e| !e.is_empty()) {
        let family = if entry.contains(':') { &IPV6 } else { &IPV4 };
        if !out.iter().any(|f| std::ptr::eq(*f, family)) {
            out.push(family);
        }
    }
    if out.is_empty() {
        out.push(&IPV4);
    }
    out
}

/// The configuration of a playground cluster on `service_cidr` with `seed`
/// and its control plane of `shape`.
pub fn config(service_cidr: &str, seed: u64, shape: ControlPlaneShape) -> ClusterConfig {
    let families = families(service_cidr);
    ClusterConfig {
        service_cluster_ip_range: service_cidr.to_string(),
        seed,
        pod_cidrs: families.iter().map(|f| f.pod_network.to_string()).collect(),
        node_ips: families.iter().map(|f| shape.node_ip(f).to_string()).collect(),
        apiservers: shape.apiservers(families[0]),
        ..ClusterConfig::default()
    }
}

/// A playground cluster: the control plane of [`config`] with its Node.
/// The error is the configuration's (a refused service CIDR, named).
pub fn cluster(service_cidr: &str, seed: u64, shape: ControlPlaneShape) -> Result<ControlPlane, ConfigError> {
    let mut cp = ControlPlane::new(config(service_cidr, seed, shape))?;
    let families = families(service_cidr);
    let pod_cidrs: Vec<&str> = families.iter().map(|f| f.node_pod_cidr).collect();
    let mut addresses: Vec<_> = (families.iter())
        .map(|f| json!({"type": "InternalIP", "address": shape.node_ip(f)}))
        .collect();
    let name = shape.node_name();
    addresses.push(json!({"type": "Hostname", "address": name}));
    let node = json!({
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "labels": {
            "kubernetes.io/hostname": name,
            "kubernetes.io/os": "linux",
            "node-role.kubernetes.io/control-plane": "",
        }},
        "spec": {"podCIDR": pod_cidrs[0], "podCIDRs": pod_cidrs},
        "status": {
            "addresses": addresses,
            "conditions": [{"type": "Ready", "status": "True", "reason": "KubeletReady"}],
            "nodeInfo": {
                "kubeletVersion": "v1.37.2",
                "osImage": "Debian GNU/Linux 12 (bookworm)",
                "kernelVersion": "6.1.0-41-amd64",
                "containerRuntimeVersion": "containerd://1.7.24",
            },
        },
    });
    let mut objects = vec![node];
    if let Some(dns_ip) = tenth_address(&cp) {
        objects.extend(cluster_dns(&dns_ip, shape.coredns_replicas()));
    }
    // These objects are built from fixed parts and the cluster's own
    // addresses, so they decode and validate whatever the caller gave.
    for object in objects {
        for decoded in parse_manifests(&object.to_string()).into_iter().flatten() {
            let _ = cp.apply_object(decoded);
        }
    }
    Ok(cp)
}

/// Moves the cluster's clock to `now`, as time passes on a live cluster:
/// each apiserver renews its lease on the way, so `kubernetes` keeps its
/// endpoints, and every AGE grows.
pub fn advance(cp: &mut ControlPlane, now: Time) {
    let apiservers = cp.config().apiservers.clone();
    if apiservers.is_empty() {
        cp.advance_to(now);
    }
    for apiserver in apiservers {
        cp.heartbeat(apiserver, now);
    }
}

/// kubeadm's cluster DNS address: the tenth address of the primary service
/// CIDR, when the range holds one.
fn tenth_address(cp: &ControlPlane) -> Option<String> {
    let primary = cp.config().service_cidrs.first()?;
    let tenth = match primary.network() {
        IpAddr::V4(net) => IpAddr::V4(Ipv4Addr::from(u32::from(net).checked_add(10)?)),
        IpAddr::V6(net) => IpAddr::V6(Ipv6Addr::from(u128::from(net).checked_add(10)?)),
    };
    // The range must hold it with room after it (16 addresses or more).
    let max_prefix = if tenth.is_ipv4() { 32 } else { 128 };
    let room = primary.contains(tenth) && max_prefix - primary.prefix() >= 4;
    room.then(|| tenth.to_string())
}

/// The `kube-dns` Service on `ip` and the `coredns` Deployment of
/// `replicas` Pods, as kubeadm installs them.
fn cluster_dns(ip: &str, replicas: u32) -> [serde_json::Value; 2] {
    let labels = json!({"k8s-app": "kube-dns"});
    let service = json!({
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {
            "name": "kube-dns",
            "namespace": "kube-system",
            "labels": {"k8s-app": "kube-dns", "kubernetes.io/cluster-service": "true", "kubernetes.io/name": "CoreDNS"},
            "annotations": {"prometheus.io/port": "9153", "prometheus.io/scrape": "true"},
        },
        "spec": {
            "clusterIP": ip,
            "selector": labels,
            "ports": [
                {"name": "dns", "port": 53, "protocol": "UDP", "targetPort": 53},
                {"name": "dns-tcp", "port": 53, "protocol": "TCP", "targetPort": 53},
                {"name": "metrics", "port": 9153, "protocol": "TCP", "targetPort": 9153},
            ],
        },
    });
    let deployment = json!({
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "coredns", "namespace": "kube-system", "labels": labels},
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": labels},
            "template": {
                "metadata": {"labels": labels},
                "spec": {"containers": [{
                    "name": "coredns",
                    "image": "registry.k8s.io/coredns/coredns:v1.12.1",
                    "ports": [
                        {"name": "dns", "containerPort": 53, "protocol": "UDP"},
                        {"name": "dns-tcp", "containerPort": 53, "protocol": "TCP"},
                        {"name": "metrics", "containerPort": 9153, "protocol": "TCP"},
                    ],
                }]},
            },
        },
    });
    [service, deployment]
}

#[cfg(test)]
mod tests {
    use super::*;

    fn apiservers(cp: &ControlPlane) -> Vec<String> {
        cp.apiserver_leases()
            .endpoints()
            .iter()
            .map(ToString::to_string)
            .collect()
    }

    #[test]
    fn one_node_and_kubeadms_apiserver_port() {
        let cp = cluster("10.96.0.0/12", 0, ControlPlaneShape::Single).unwrap();
        let node = cp.node(NODE_NAME).expect("the node is there");
        assert_eq!(node.ips(), ["192.168.49.2"]);
        assert_eq!(apiservers(&cp), ["192.168.49.2:6443"]);
        let refused = cluster("10.244.0.0/16", 0, ControlPlaneShape::Single)
            .unwrap_err()
            .to_string();
        assert!(refused.contains("10.244.0.0/16"), "{refused}");
        assert_eq!(
            cluster("", 0, ControlPlaneShape::Single)
                .unwrap()
                .config()
                .service_cidrs[0]
                .to_string(),
            "10.0.0.0/24"
        );
    }

    #[test]
    fn the_node_has_each_family_of_the_service_cidrs_primary_first() {
        let dual = cluster("fd00:10:96::/108,10.96.0.0/12", 0, ControlPlaneShape::Single).unwrap();
        let node = dual.node(NODE_NAME).unwrap();
        assert_eq!(node.ips(), ["fd00:192:168:49::2", "192.168.49.2"]);
        assert_eq!(node.spec["podCIDRs"], json!(["fd00:10:244::/64", "10.244.0.0/24"]));
        assert_eq!(apiservers(&dual), ["[fd00:192:168:49::2]:6443"]);
        let v6 = cluster("fd00:10:96::/112", 0, ControlPlaneShape::Single).unwrap();
        assert_eq!(v6.node(NODE_NAME).unwrap().ips(), ["fd00:192:168:49::2"]);
    }

    #[test]
    fn ha_lists_three_apiservers_and_managed_one_load_balancer() {
        let ha = cluster("10.96.0.0/12", 0, ControlPlaneShape::HighlyAvailable).unwrap();
        assert_eq!(
            apiservers(&ha),
            ["192.168.49.11:6443", "192.168.49.12:6443", "192.168.49.13:6443"]
        );
        let managed = cluster("fd00:10:96::/112", 0, ControlPlaneShape::Managed).unwrap();
        assert_eq!(apiservers(&managed), ["[fd00:172:16::2]:443"]);
        assert_eq!(
            ControlPlaneShape::from_word("ha"),
            Some(ControlPlaneShape::HighlyAvailable)
        );
        assert_eq!(ControlPlaneShape::from_word("three"), None);
    }

    #[test]
    fn minikube_and_kind_name_their_node_and_apiserver_as_they_do() {
        let minikube = cluster("10.96.0.0/12", 0, ControlPlaneShape::Minikube).unwrap();
        assert_eq!(minikube.node("minikube").unwrap().ips(), ["192.168.49.2"]);
        assert_eq!(apiservers(&minikube), ["192.168.49.2:8443"]);
        let coredns = minikube.pods().filter(|p| p.metadata.namespace == "kube-system");
        assert_eq!(coredns.count(), 1);
        let kind = cluster("10.96.0.0/16,fd00:10:96::/112", 0, ControlPlaneShape::Kind).unwrap();
        let node = kind.node("kind-control-plane").expect("kind's node");
        assert_eq!(node.ips(), ["172.18.0.2", "fc00:f853:ccd:e793::2"]);
        assert_eq!(apiservers(&kind), ["172.18.0.2:6443"]);
        assert!(kind.node(NODE_NAME).is_none());
        assert_eq!(
            ControlPlaneShape::from_word("kind").map(ControlPlaneShape::node_name),
            Some("kind-control-plane")
        );
    }

    #[test]
    fn kube_dns_sits_on_the_tenth_address_with_two_coredns_pods() {
        let cp = cluster("10.96.0.0/12", 0, ControlPlaneShape::Single).unwrap();
        let dns = cp.service("kube-system", "kube-dns").expect("kube-dns");
        assert_eq!(dns.spec.cluster_ip, "10.96.0.10");
        let coredns: Vec<_> = cp.pods().filter(|p| p.metadata.namespace == "kube-system").collect();
        assert_eq!(coredns.len(), 2);
        let mut ips: Vec<String> = coredns.iter().flat_map(|p| p.ips()).collect();
        crate::sort::sort(&mut ips);
        assert_eq!(ips, ["10.244.0.2", "10.244.0.3"]);
        let v6 = cluster("fd00:10:96::/112", 0, ControlPlaneShape::Single).unwrap();
        assert_eq!(
            v6.service("kube-system", "kube-dns").unwrap().spec.cluster_ip,
            "fd00:10:96::a"
        );
        let small = cluster("10.96.0.0/29", 0, ControlPlaneShape::Single).unwrap();
        assert!(small.service("kube-system", "kube-dns").is_none());
        assert_eq!(small.pods().count(), 0);
    }

    #[test]
    fn time_passes_and_the_apiservers_keep_their_leases() {
        let mut cp = cluster("10.96.0.0/12", 0, ControlPlaneShape::HighlyAvailable).unwrap();
        advance(&mut cp, Time(3_600_000));
        assert_eq!(cp.now(), Time(3_600_000));
        assert_eq!(apiservers(&cp).len(), 3);
    }
}
