//! Snapshots of the whole control plane, and the repair run over it.
//!
//! A [`Snapshot`] is plain serde data (what the agent writes to its
//! `--state-file`); restoring it gives back an identical [`ControlPlane`].
//! Restoring onto a configuration with other service CIDRs or another
//! NodePort range fails with Kubernetes' "the provided range does not match
//! the current range".

use super::containers::PodEnvironments;
use super::{ClusterConfig, ConfigError, ControlPlane};
use crate::api::{Deployment, EndpointSlice, Endpoints, Node, Pod, Service, ServiceCidr};
use crate::apiserver::cluster_ip::{ClusterIpAllocator, ClusterIpSnapshot};
use crate::apiserver::kubernetes_service::ApiserverLeases;
use crate::apiserver::node_port::{NodePortAllocator, NodePortSnapshot};
use crate::apiserver::repair::{repair_cluster_ips, LeakTracker, RepairEvent};
use crate::cni::HostLocalIpam;
use crate::rng::Rng;
use crate::time::Time;
use ipnetwork::IpNetwork;
use serde::{Deserialize, Serialize};
use std::sync::Arc;
use thiserror::Error;

/// The control plane's state as data.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Snapshot {
    /// The configuration the state was made with.
    pub config: ClusterConfig,
    /// Every Service, `kubernetes` included.
    pub services: Vec<Service>,
    /// ServiceCIDR objects beyond the configured range.
    #[serde(default)]
    pub service_cidrs: Vec<ServiceCidr>,
    /// Every Deployment.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub deployments: Vec<Deployment>,
    /// Every Pod.
    #[serde(default)]
    pub pods: Vec<Pod>,
    /// Every Node.
    #[serde(default)]
    pub nodes: Vec<Node>,
    /// Every EndpointSlice: the controller's, `kubernetes`, the users'.
    #[serde(default)]
    pub endpoint_slices: Vec<EndpointSlice>,
    /// Every hand-written `v1/Endpoints`.
    #[serde(default)]
    pub endpoints: Vec<Endpoints>,
    /// The ClusterIP allocation state.
    #[serde(rename = "clusterIPs")]
    pub cluster_ips: ClusterIpSnapshot,
    /// The NodePort allocation state.
    pub node_ports: NodePortSnapshot,
    /// The allocation generator, so allocations continue identically.
    pub rng: Rng,
    /// The Pod name generator (absent in snapshots older than it: then it
    /// starts afresh from the seed).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pod_name_rng: Option<Rng>,
    /// host-local's cursors on every Node, so Pod addresses continue
    /// identically.
    #[serde(default, skip_serializing_if = "is_default")]
    pub pod_ipam: HostLocalIpam,
    /// The Service environment each started Pod's containers got, by
    /// `namespace/name`.
    #[serde(default, skip_serializing_if = "PodEnvironments::is_empty")]
    pub pod_env: PodEnvironments,
    /// Apiserver leases.
    #[serde(default)]
    pub leases: ApiserverLeases,
    /// Repair leak counters.
    #[serde(default)]
    pub leaks: LeakTracker,
    /// The last time the control plane was given.
    #[serde(default)]
    pub now: Time,
    /// The next object uid / resourceVersion.
    #[serde(default = "one")]
    pub next_uid: u64,
    /// The counter behind generated names (EndpointSlices, `generateName`);
    /// read under its old name too.
    #[serde(default, alias = "nextSliceName")]
    pub next_generated_name: u64,
}

fn one() -> u64 {
    1
}

fn is_default(ipam: &HostLocalIpam) -> bool {
    *ipam == HostLocalIpam::default()
}

/// Why a snapshot could not be restored.
#[derive(Debug, Error, Clone, PartialEq, Eq)]
pub enum RestoreError {
    /// The configuration itself is invalid.
    #[error("{0}")]
    Config(#[from] ConfigError),
    /// The snapshot's ranges differ from the configuration's.
    #[error("{0}")]
    Range(String),
}

impl ControlPlane {
    /// The whole state as data.
    pub fn snapshot(&self) -> Snapshot {
        Snapshot {
            deployments: self.deployments.values().cloned().collect(),
            pods: self.pods.values().cloned().collect(),
            pod_ipam: self.pod_ipam.clone(),
            pod_env: self.pod_env.clone(),
            nodes: self.nodes.values().cloned().collect(),
            endpoint_slices: self.endpoint_slices.values().cloned().collect(),
            endpoints: self.written_endpoints.values().cloned().collect(),
            ..self.allocation_snapshot()
        }
    }

    /// The state without Deployments, Pods, Nodes and EndpointSlices (nor
    /// the pod address cursors): the Services and
    /// ServiceCIDRs with the allocators, which is what keeps ClusterIPs and
    /// NodePorts across a restart when the workloads come back from
    /// elsewhere (the agent re-reads them from its manifests). Much smaller
    /// than [`Self::snapshot`] in a cluster with many endpoints.
    pub fn allocation_snapshot(&self) -> Snapshot {
        Snapshot {
            config: self.config.raw.clone(),
            services: self.services().cloned().collect(),
            service_cidrs: self.service_cidrs.values().cloned().collect(),
            deployments: Vec::new(),
            pods: Vec::new(),
            nodes: Vec::new(),
            endpoint_slices: Vec::new(),
            endpoints: Vec::new(),
            cluster_ips: self.cluster_ips.snapshot(),
            node_ports: self.node_ports.snapshot(),
            rng: self.rng.clone(),
            pod_name_rng: Some(self.pod_name_rng.clone()),
            pod_ipam: HostLocalIpam::default(),
            pod_env: PodEnvironments::new(),
            leases: self.leases.clone(),
            leaks: self.leaks.clone(),
            now: self.now,
            next_uid: self.next_uid,
            next_generated_name: self.next_generated_name,
        }
    }

    /// Rebuilds a control plane from a snapshot, with the snapshot's own
    /// configuration.
    pub fn restore(snapshot: Snapshot) -> Result<ControlPlane, RestoreError> {
        let config = snapshot.config.clone();
        ControlPlane::restore_with_config(config, snapshot)
    }

    /// Rebuilds a control plane from a snapshot under `config` (as the
    /// agent does when restarted with its flags). The ranges must match.
    /// The EndpointSlice and Deployment controllers then run over the
    /// restored objects, so a snapshot written before slices existed gets
    /// them; a current one comes back unchanged.
    pub fn restore_with_config(config: ClusterConfig, snapshot: Snapshot) -> Result<ControlPlane, RestoreError> {
        let mut cp = ControlPlane::new(config)?;
        let mut cidrs = cp.config.service_cidrs.clone();
        for obj in &snapshot.service_cidrs {
            cidrs.extend(obj.spec.cidrs.iter().filter_map(|c| c.parse::<IpNetwork>().ok()));
        }
        // The allocator's CIDRs in the order the snapshot lists them (the
        // order they were added in), not in ServiceCIDR name order: within
        // a family, allocation fills the first CIDR first, so the order is
        // part of the state (found by `cargo fuzz`).
        let listed: Vec<IpNetwork> = (snapshot.cluster_ips.ranges.iter())
            .filter_map(|r| r.range.parse::<IpNetwork>().ok())
            .collect();
        let position = |cidr: &IpNetwork| {
            listed
                .iter()
                .position(|l| l.prefix() == cidr.prefix() && l.network() == cidr.network())
                .unwrap_or(usize::MAX)
        };
        crate::sort::sort_by_key(&mut cidrs, position);
        let mut ips = ClusterIpAllocator::new(cidrs.iter().copied()).map_err(|e| RestoreError::Range(e.to_string()))?;
        ips.restore(&snapshot.cluster_ips)
            .map_err(|e| RestoreError::Range(e.to_string()))?;
        let mut ports = NodePortAllocator::new(cp.config.node_ports);
        ports
            .restore(&snapshot.node_ports)
            .map_err(|e| RestoreError::Range(e.to_string()))?;
        cp.cluster_ips = ips;
        cp.node_ports = ports;
        cp.services = crate::sort::map_from(snapshot.services.into_iter().map(|s| {
            (
                (s.metadata.namespace_or_default().to_string(), s.metadata.name.clone()),
                Arc::new(s),
            )
        }));
        cp.service_cidrs =
            crate::sort::map_from(snapshot.service_cidrs.into_iter().map(|c| (c.metadata.name.clone(), c)));
        for held in cp
            .service_cidrs
            .values()
            .filter(|c| c.metadata.deletion_timestamp.is_some())
        {
            for cidr in super::service_cidrs::object_cidrs(held) {
                cp.cluster_ips.set_terminating(cidr);
            }
        }
        let namespaced = |namespace: &str, name: &str| (namespace.to_string(), name.to_string());
        cp.deployments = crate::sort::map_from(
            snapshot
                .deployments
                .into_iter()
                .map(|d| (namespaced(d.metadata.namespace_or_default(), &d.metadata.name), d)),
        );
        cp.pods = crate::sort::map_from(
            snapshot
                .pods
                .into_iter()
                .map(|p| (namespaced(p.metadata.namespace_or_default(), &p.metadata.name), p)),
        );
        cp.nodes = crate::sort::map_from(snapshot.nodes.into_iter().map(|n| (n.metadata.name.clone(), n)));
        cp.endpoint_slices = snapshot
            .endpoint_slices
            .into_iter()
            .map(|s| (namespaced(s.metadata.namespace_or_default(), &s.metadata.name), s))
            .collect();
        cp.written_endpoints = crate::sort::map_from(
            snapshot
                .endpoints
                .into_iter()
                .map(|e| (namespaced(e.metadata.namespace_or_default(), &e.metadata.name), e)),
        );
        cp.rng = snapshot.rng;
        cp.pod_name_rng = snapshot
            .pod_name_rng
            .unwrap_or_else(|| super::pod_name_rng(snapshot.config.seed));
        cp.pod_ipam = snapshot.pod_ipam;
        cp.pod_env = snapshot.pod_env;
        // Running Pods of a snapshot older than the environments started
        // before it was taken; they get the environment of now.
        let pods: Vec<Pod> = cp.pods.values().cloned().collect();
        for pod in &pods {
            cp.follow_containers(None, Some(pod));
        }
        cp.leases = snapshot.leases;
        cp.leaks = snapshot.leaks;
        cp.now = snapshot.now;
        cp.next_uid = snapshot.next_uid;
        cp.next_generated_name = snapshot.next_generated_name;
        cp.ensure_kubernetes_service();
        cp.sync_all_slices();
        cp.run_deployment_controller();
        Ok(cp)
    }

    /// Runs one pass of the ClusterIP repair loop: rebuilds the allocation
    /// state from the Services, keeps the corrected state, and returns what
    /// was found.
    pub fn repair(&mut self) -> Vec<RepairEvent> {
        let services: Vec<&Service> = self.services().collect();
        let outcome = repair_cluster_ips(&self.cluster_ips, &services, &self.leaks);
        self.cluster_ips = outcome.allocator;
        self.leaks = outcome.leaks;
        outcome.events
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::api::service::ServicePort;

    fn cluster() -> ControlPlane {
        let config = ClusterConfig {
            service_cluster_ip_range: "10.0.0.0/28".into(),
            ..ClusterConfig::default()
        };
        let mut cp = ControlPlane::new(config).unwrap();
        let mut svc = Service::default();
        svc.metadata.name = "web".into();
        svc.spec.service_type = "NodePort".into();
        svc.spec.ports.push(ServicePort {
            port: 80,
            ..Default::default()
        });
        cp.apply_service(svc).unwrap();
        cp
    }

    /// Found by `cargo fuzz` (fuzz/fuzz_targets/playground_commands.rs):
    /// ServiceCIDRs created in other than name order came back in name
    /// order, so a family's next allocation could come from another CIDR
    /// than before the restore.
    #[test]
    fn service_cidrs_keep_their_order_across_a_restore() {
        let mut cp = cluster();
        for (name, cidr) in [("zz", "10.97.0.0/28"), ("aa", "10.98.0.0/28")] {
            let text = format!(
                "apiVersion: networking.k8s.io/v1\nkind: ServiceCIDR\nmetadata: {{name: {name}}}\nspec: {{cidrs: [{cidr}]}}\n"
            );
            for result in cp.apply_manifest(&text).unwrap() {
                result.unwrap();
            }
        }
        let restored = ControlPlane::restore(cp.snapshot()).unwrap();
        let order = |cp: &ControlPlane| cp.cluster_ip_allocator().cidrs().collect::<Vec<_>>();
        assert_eq!(order(&restored), order(&cp));
        assert_eq!(restored, cp);
    }

    #[test]
    fn a_consistent_snapshot_still_restores() {
        let cp = cluster();
        assert_eq!(ControlPlane::restore(cp.snapshot()).unwrap(), cp);
    }
}
