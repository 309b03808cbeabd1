//! This node as the proxy sees it: its name (`--node-name`, default the
//! hostname) and addresses (`--node-ip`, else the Node object of that name
//! in the manifests, else the host's own addresses).

use std::net::IpAddr;
use svcnet_core::controlplane::ControlPlane;
use svcnet_core::proxy::{NodeInfo, ProxyError, DUMMY_INTERFACE};

/// The node flags.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct NodeFlags {
    /// `--node-name`, or the hostname.
    pub name: String,
    /// `--node-ip` (may be empty).
    pub ips: Vec<IpAddr>,
}

impl NodeFlags {
    /// The flags, with the hostname when no name is given.
    pub fn new(name: Option<String>, ips: Vec<IpAddr>) -> NodeFlags {
        NodeFlags {
            name: name.unwrap_or_else(hostname),
            ips,
        }
    }

    /// The node: the zone (and addresses) of the Node object named like
    /// this node, with `--node-ip` winning, and the host's addresses
    /// (`host_ips`, only asked for when needed) when neither gives any.
    pub fn resolve(&self, cp: &ControlPlane, host_ips: impl FnOnce() -> Vec<IpAddr>) -> Result<NodeInfo, ProxyError> {
        let mut info = cp.node_info(&self.name)?;
        if !self.ips.is_empty() {
            info.ips = self.ips.clone();
        } else if info.ips.is_empty() {
            info.ips = host_ips();
        }
        Ok(info)
    }
}

/// The host name, lower-cased as the kubelet registers it.
pub fn hostname() -> String {
    nix::unistd::gethostname()
        .ok()
        .and_then(|h| h.into_string().ok())
        .map(|h| h.trim().to_ascii_lowercase())
        .filter(|h| !h.is_empty())
        .unwrap_or_else(|| "localhost".into())
}

/// The host's addresses NodePorts listen on: every address of every
/// interface but `kube-ipvs0`, without loopback, link-local and multicast
/// addresses, sorted.
pub fn host_addresses() -> Vec<IpAddr> {
    let Ok(addrs) = nix::ifaddrs::getifaddrs() else {
        return Vec::new();
    };
    let mut ips: Vec<IpAddr> = addrs
        .filter(|a| a.interface_name != DUMMY_INTERFACE)
        .filter_map(|a| a.address)
        .filter_map(|sa| {
            if let Some(v4) = sa.as_sockaddr_in() {
                Some(IpAddr::V4(v4.ip()))
            } else {
                sa.as_sockaddr_in6().map(|v6| IpAddr::V6(v6.ip()))
            }
        })
        .filter(|ip| usable(*ip))
        .collect();
    ips.sort();
    ips.dedup();
    ips
}

fn usable(ip: IpAddr) -> bool {
    match ip {
        IpAddr::V4(v4) => !(v4.is_loopback() || v4.is_link_local() || v4.is_multicast() || v4.is_unspecified()),
        IpAddr::V6(v6) => {
            let link_local = (v6.segments()[0] & 0xffc0) == 0xfe80;
            !(v6.is_loopback() || link_local || v6.is_multicast() || v6.is_unspecified())
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use svcnet_core::controlplane::ClusterConfig;

    fn ip(s: &str) -> IpAddr {
        s.parse().unwrap()
    }

    #[test]
    fn flags_then_node_object_then_host() {
        let mut cp = ControlPlane::new(ClusterConfig::default()).unwrap();
        cp.apply_manifest("apiVersion: v1\nkind: Node\nmetadata: {name: node-a, labels: {topology.kubernetes.io/zone: z1}}\nstatus: {addresses: [{type: InternalIP, address: 192.168.0.10}]}\n").unwrap();
        let host = || vec![ip("198.51.100.7")];
        let flags = NodeFlags::new(Some("node-a".into()), vec![]);
        let info = flags.resolve(&cp, host).unwrap();
        assert_eq!(
            (info.ips.clone(), info.zone.as_deref()),
            (vec![ip("192.168.0.10")], Some("z1"))
        );
        let flags = NodeFlags::new(Some("node-a".into()), vec![ip("192.0.2.10")]);
        assert_eq!(flags.resolve(&cp, host).unwrap().ips, vec![ip("192.0.2.10")]);
        let flags = NodeFlags::new(Some("node-b".into()), vec![]);
        assert_eq!(flags.resolve(&cp, host).unwrap().ips, vec![ip("198.51.100.7")]);
    }

    #[test]
    fn host_addresses_skip_loopback_and_link_local() {
        for bad in ["127.0.0.1", "::1", "fe80::1", "169.254.1.1", "224.0.0.1"] {
            assert!(!usable(ip(bad)), "{bad}");
        }
        assert!(usable(ip("192.0.2.10")) && usable(ip("2001:db8::10")));
        assert!(host_addresses().iter().all(|a| usable(*a)));
        assert!(!hostname().is_empty());
    }
}
