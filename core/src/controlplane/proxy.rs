//! What kube-proxy would program on one node of this cluster: the control
//! plane's Services and EndpointSlices fed to [`crate::proxy`].

use super::ControlPlane;
use crate::proxy::{desired_table, Desired, IpvsTable, NodeInfo, ProxyConfig, ProxyError};

impl ControlPlane {
    /// The node as kube-proxy sees it: name, addresses and zone from the
    /// Node object of that name, or just the name when there is none.
    pub fn node_info(&self, name: &str) -> Result<NodeInfo, ProxyError> {
        match self.node(name) {
            Some(node) => NodeInfo::from_node(node),
            None => Ok(NodeInfo {
                name: name.to_string(),
                ..NodeInfo::default()
            }),
        }
    }

    /// The desired IPVS table of `node`: virtual servers for every Service,
    /// real servers from the EndpointSlices, the `kube-ipvs0` addresses,
    /// and warnings for what had to be skipped.
    pub fn desired_ipvs_table(&self, node: &NodeInfo, config: &ProxyConfig) -> Desired {
        desired_table(self.services(), self.endpoint_slices(), node, config)
    }

    /// The IPVS table kube-proxy would program on the node named `node`
    /// with its defaults (the `rr` scheduler) and this cluster's NodePort
    /// range: what `ipvsadm -Ln` shows there once it is programmed.
    pub fn node_ipvs_table(&self, node: &str) -> Result<IpvsTable, ProxyError> {
        let config = ProxyConfig {
            node_port_range: self.config().node_ports,
            ..ProxyConfig::default()
        };
        Ok(self.desired_ipvs_table(&self.node_info(node)?, &config).table)
    }
}
