//! The node a proxy runs on: its name, addresses and zone.

use super::error::ProxyError;
use crate::api::Node;
use crate::family::IpFamily;
use serde::{Deserialize, Serialize};
use std::net::IpAddr;

/// What the proxy needs to know about its own node.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct NodeInfo {
    /// The node name, matched against `endpoints[].nodeName` and
    /// `hints.forNodes`.
    pub name: String,
    /// The node's addresses: NodePorts listen on each of them.
    #[serde(default)]
    pub ips: Vec<IpAddr>,
    /// The node's `topology.kubernetes.io/zone`, matched against
    /// `hints.forZones`.
    #[serde(default)]
    pub zone: Option<String>,
}

impl NodeInfo {
    /// Reads a Node object: name, `InternalIP`/`ExternalIP` addresses and
    /// the zone label.
    pub fn from_node(node: &Node) -> Result<NodeInfo, ProxyError> {
        let ips = node
            .ips()
            .into_iter()
            .map(|text| {
                text.parse().map_err(|_| ProxyError::NodeAddress {
                    node: node.metadata.name.clone(),
                    address: text,
                })
            })
            .collect::<Result<Vec<IpAddr>, ProxyError>>()?;
        Ok(NodeInfo {
            name: node.metadata.name.clone(),
            ips,
            zone: node.zone().map(str::to_string),
        })
    }

    /// The node's addresses of one family.
    pub fn ips_of(&self, family: IpFamily) -> impl Iterator<Item = IpAddr> + '_ {
        self.ips.iter().copied().filter(move |ip| IpFamily::of(*ip) == family)
    }

    /// True when `ip` is one of the node's addresses.
    pub fn has_ip(&self, ip: IpAddr) -> bool {
        self.ips.contains(&ip)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::api::pod::NodeAddress;

    #[test]
    fn reads_a_node_object() {
        let mut node = Node::default();
        node.metadata.name = "node-a".into();
        node.metadata
            .labels
            .insert("topology.kubernetes.io/zone".into(), "zone-1".into());
        for (kind, address) in [
            ("InternalIP", "192.168.0.10"),
            ("Hostname", "node-a"),
            ("InternalIP", "fd00::10"),
        ] {
            node.status.addresses.push(NodeAddress {
                address_type: kind.into(),
                address: address.into(),
            });
        }
        let info = NodeInfo::from_node(&node).expect("valid node");
        assert_eq!(info.name, "node-a");
        assert_eq!(info.zone.as_deref(), Some("zone-1"));
        assert_eq!(info.ips_of(IpFamily::IPv6).count(), 1);
        assert!(info.has_ip("192.168.0.10".parse().expect("ip")));

        node.status.addresses[0].address = "not-an-ip".into();
        assert_eq!(
            NodeInfo::from_node(&node).unwrap_err().to_string(),
            "node \"node-a\": address \"not-an-ip\" is not an IP address"
        );
    }
}
