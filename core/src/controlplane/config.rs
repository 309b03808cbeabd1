//! Cluster configuration: the flags kube-apiserver and kubelet would get,
//! as plain data, and their validation.

use crate::apiserver::node_port::PortRange;
use crate::apiserver::service_cidr::{parse_service_cluster_ip_range, CidrConstraints, DEFAULT_SERVICE_CIDR};
use crate::dns::DnsConfig;
use ipnetwork::IpNetwork;
use serde::{Deserialize, Serialize};
use std::net::{IpAddr, SocketAddr};
use thiserror::Error;

/// The cluster's configuration, in the names users know from the flags.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default, deny_unknown_fields)]
pub struct ClusterConfig {
    /// `--service-cluster-ip-range`: one CIDR, or two of different families
    /// separated by a comma. Default `10.96.0.0/12` (kubeadm's).
    pub service_cluster_ip_range: String,
    /// `--service-node-port-range`. Default `30000-32767`. Also read as
    /// `nodePortRange`.
    #[serde(alias = "nodePortRange")]
    pub service_node_port_range: String,
    /// Pod CIDRs; service CIDRs may not overlap them.
    pub pod_cidrs: Vec<String>,
    /// Node IPs; service CIDRs may not contain them.
    pub node_ips: Vec<String>,
    /// Seed of the allocation generator: same seed, same ClusterIPs.
    pub seed: u64,
    /// The cluster DNS zone. Default `cluster.local`.
    pub cluster_domain: String,
    /// TTL of DNS records, in seconds. Default 5 (CoreDNS).
    pub dns_ttl: u32,
    /// Apiserver advertise addresses (`ip:port`) that hold a lease from time 0.
    pub apiservers: Vec<String>,
    /// kube-controller-manager's `--max-endpoints-per-slice`: at most this
    /// many endpoints in one EndpointSlice. Default 100, at most 1000.
    pub max_endpoints_per_slice: u32,
}

impl Default for ClusterConfig {
    fn default() -> Self {
        ClusterConfig {
            service_cluster_ip_range: "10.96.0.0/12".into(),
            service_node_port_range: "30000-32767".into(),
            pod_cidrs: Vec::new(),
            node_ips: Vec::new(),
            seed: 0,
            cluster_domain: "cluster.local".into(),
            dns_ttl: 5,
            apiservers: Vec::new(),
            max_endpoints_per_slice: DEFAULT_MAX_ENDPOINTS_PER_SLICE,
        }
    }
}

/// The default of `--max-endpoints-per-slice`.
pub const DEFAULT_MAX_ENDPOINTS_PER_SLICE: u32 = 100;

/// The largest `--max-endpoints-per-slice` Kubernetes accepts.
pub const MAX_MAX_ENDPOINTS_PER_SLICE: u32 = 1000;

/// A configuration problem, naming the setting and the bad value.
#[derive(Debug, Error, Clone, PartialEq, Eq)]
pub enum ConfigError {
    /// A pod CIDR is not a CIDR.
    #[error("podCidrs[{index}] {value:?}: not a valid CIDR (e.g. 10.244.0.0/16)")]
    PodCidr {
        /// Position in the list.
        index: usize,
        /// The text given.
        value: String,
    },
    /// A node IP is not an IP address.
    #[error("nodeIps[{index}] {value:?}: not a valid IP address (e.g. 192.168.0.10)")]
    NodeIp {
        /// Position in the list.
        index: usize,
        /// The text given.
        value: String,
    },
    /// An apiserver endpoint is not `ip:port`.
    #[error("apiservers[{index}] {value:?}: not a valid ip:port (e.g. 192.168.0.10:6443 or [fd00::10]:6443)")]
    Apiserver {
        /// Position in the list.
        index: usize,
        /// The text given.
        value: String,
    },
    /// The service CIDRs are invalid.
    #[error("{0}")]
    ServiceCidr(String),
    /// The NodePort range is invalid.
    #[error("--service-node-port-range: {0}")]
    NodePortRange(String),
    /// The DNS zone is not a valid domain.
    #[error("clusterDomain {0:?}: must be a DNS domain such as cluster.local")]
    ClusterDomain(String),
    /// `maxEndpointsPerSlice` is outside 1..=1000.
    #[error("maxEndpointsPerSlice {0}: must be between 1 and 1000, inclusive (kube-controller-manager --max-endpoints-per-slice)")]
    MaxEndpointsPerSlice(u32),
}

/// A configuration that passed validation, with its values parsed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ValidatedConfig {
    /// The configuration as given.
    pub raw: ClusterConfig,
    /// The service CIDRs, primary first.
    pub service_cidrs: Vec<IpNetwork>,
    /// The NodePort range.
    pub node_ports: PortRange,
    /// Pod CIDRs and node IPs that service CIDRs must stay clear of.
    pub constraints: CidrConstraints,
    /// Apiserver endpoints holding a lease from time 0.
    pub apiservers: Vec<SocketAddr>,
    /// DNS zone and TTL.
    pub dns: DnsConfig,
    /// At most this many endpoints per EndpointSlice (1..=1000).
    pub max_endpoints_per_slice: usize,
    /// What kube-apiserver would warn about at start, in its log.
    pub warnings: Vec<String>,
}

impl ClusterConfig {
    /// Checks every setting and parses it.
    pub fn validate(&self) -> Result<ValidatedConfig, ConfigError> {
        let mut constraints = CidrConstraints::default();
        for (index, value) in self.pod_cidrs.iter().enumerate() {
            let net = value.trim().parse::<IpNetwork>().map_err(|_| ConfigError::PodCidr {
                index,
                value: value.clone(),
            })?;
            constraints.pod_cidrs.push(net);
        }
        for (index, value) in self.node_ips.iter().enumerate() {
            let ip = value.trim().parse::<IpAddr>().map_err(|_| ConfigError::NodeIp {
                index,
                value: value.clone(),
            })?;
            constraints.node_ips.push(ip);
        }
        let mut apiservers = Vec::new();
        for (index, value) in self.apiservers.iter().enumerate() {
            let addr = value.trim().parse::<SocketAddr>().map_err(|_| ConfigError::Apiserver {
                index,
                value: value.clone(),
            })?;
            apiservers.push(addr);
        }
        let service_cidrs = parse_service_cluster_ip_range(&self.service_cluster_ip_range, &constraints)
            .map_err(|e| ConfigError::ServiceCidr(e.to_string()))?;
        let node_ports = self
            .service_node_port_range
            .parse::<PortRange>()
            .map_err(|e| ConfigError::NodePortRange(e.to_string()))?;
        let zone = self.cluster_domain.trim_end_matches('.');
        let zone_ok = !zone.is_empty()
            && zone
                .split('.')
                .all(|l| !l.is_empty() && l.len() <= 63 && l.chars().all(|c| c.is_ascii_alphanumeric() || c == '-'));
        if !zone_ok {
            return Err(ConfigError::ClusterDomain(self.cluster_domain.clone()));
        }
        let dns = DnsConfig {
            zone: zone.to_ascii_lowercase(),
            ttl: self.dns_ttl,
        };
        if !(1..=MAX_MAX_ENDPOINTS_PER_SLICE).contains(&self.max_endpoints_per_slice) {
            return Err(ConfigError::MaxEndpointsPerSlice(self.max_endpoints_per_slice));
        }
        let mut warnings = Vec::new();
        if self.service_cluster_ip_range.trim().is_empty() {
            warnings.push(format!(
                "no --service-cluster-ip-range given: kube-apiserver falls back to {DEFAULT_SERVICE_CIDR}, a deprecated default that only fits 254 Services; set the flag"
            ));
        }
        Ok(ValidatedConfig {
            warnings,
            raw: self.clone(),
            service_cidrs,
            node_ports,
            constraints,
            apiservers,
            dns,
            // At most 1000 (checked above), so it fits any usize.
            max_endpoints_per_slice: self.max_endpoints_per_slice as usize,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn no_range_falls_back_to_10_0_0_0_24_with_a_warning() {
        let empty = ClusterConfig {
            service_cluster_ip_range: " ".into(),
            ..ClusterConfig::default()
        };
        let validated = empty.validate().unwrap();
        assert_eq!(validated.service_cidrs, ["10.0.0.0/24".parse::<IpNetwork>().unwrap()]);
        assert_eq!(validated.warnings.len(), 1);
        assert!(
            validated.warnings[0].contains("falls back to 10.0.0.0/24"),
            "{:?}",
            validated.warnings
        );
        assert!(ClusterConfig::default().validate().unwrap().warnings.is_empty());
    }

    #[test]
    fn max_endpoints_per_slice_is_1_to_1000() {
        let with = |n: u32| ClusterConfig {
            max_endpoints_per_slice: n,
            ..ClusterConfig::default()
        };
        assert_eq!(
            ClusterConfig::default().validate().unwrap().max_endpoints_per_slice,
            100
        );
        assert_eq!(with(1).validate().unwrap().max_endpoints_per_slice, 1);
        assert_eq!(with(1000).validate().unwrap().max_endpoints_per_slice, 1000);
        for bad in [0, 1001] {
            assert_eq!(
                with(bad).validate().unwrap_err().to_string(),
                format!("maxEndpointsPerSlice {bad}: must be between 1 and 1000, inclusive (kube-controller-manager --max-endpoints-per-slice)")
            );
        }
    }
}
