//! The playground's cluster: what a one-node kubeadm cluster starts with.
//! Its node, `node-1`, has the address 192.168.49.2 and gives pods
//! addresses from 10.244.0.0/24 (a slice of the pod network 10.244.0.0/16);
//! the one apiserver runs on it and listens on kubeadm's default port,
//! 6443, so the `kubernetes` Service's endpoint is 192.168.49.2:6443.

use crate::api::parse_manifests;
use crate::controlplane::{ClusterConfig, ConfigError, ControlPlane};

/// The node's name.
pub const NODE_NAME: &str = "node-1";
/// The node's address.
pub const NODE_IP: &str = "192.168.49.2";
/// The pod network (the service CIDR may not overlap it).
pub const POD_NETWORK: &str = "10.244.0.0/16";
/// The node's share of the pod network.
pub const NODE_POD_CIDR: &str = "10.244.0.0/24";
/// The apiserver's port: kubeadm's default.
pub const APISERVER_PORT: u16 = 6443;

/// The configuration of a playground cluster on `service_cidr` with `seed`.
pub fn config(service_cidr: &str, seed: u64) -> ClusterConfig {
    ClusterConfig {
        service_cluster_ip_range: service_cidr.to_string(),
        seed,
        pod_cidrs: vec![POD_NETWORK.to_string()],
        node_ips: vec![NODE_IP.to_string()],
        apiservers: vec![format!("{NODE_IP}:{APISERVER_PORT}")],
        ..ClusterConfig::default()
    }
}

/// A playground cluster: the control plane of [`config`] with its Node.
/// The error is the configuration's (a refused service CIDR, named).
pub fn cluster(service_cidr: &str, seed: u64) -> Result<ControlPlane, ConfigError> {
    let mut cp = ControlPlane::new(config(service_cidr, seed))?;
    let node = format!(
        r#"{{"apiVersion":"v1","kind":"Node","metadata":{{"name":"{NODE_NAME}","labels":{{"kubernetes.io/hostname":"{NODE_NAME}"}}}},"spec":{{"podCIDR":"{NODE_POD_CIDR}","podCIDRs":["{NODE_POD_CIDR}"]}},"status":{{"addresses":[{{"type":"InternalIP","address":"{NODE_IP}"}},{{"type":"Hostname","address":"{NODE_NAME}"}}]}}}}"#
    );
    // The Node is fixed text that decodes and validates, whatever the
    // service CIDR: nothing here depends on the caller.
    for object in parse_manifests(&node).into_iter().flatten() {
        let _ = cp.apply_object(object);
    }
    Ok(cp)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_node_and_kubeadms_apiserver_port() {
        let cp = cluster("10.96.0.0/12", 0).unwrap();
        let node = cp.node(NODE_NAME).expect("the node is there");
        assert_eq!(node.ips(), [NODE_IP]);
        let endpoints: Vec<String> = cp
            .apiserver_leases()
            .endpoints()
            .iter()
            .map(ToString::to_string)
            .collect();
        assert_eq!(endpoints, ["192.168.49.2:6443"]);
        let refused = cluster("10.244.0.0/16", 0).unwrap_err().to_string();
        assert!(refused.contains("10.244.0.0/16"), "{refused}");
    }
}
