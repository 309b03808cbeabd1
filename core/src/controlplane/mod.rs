//! The control plane: the state that takes Kubernetes objects and runs
//! what kube-apiserver runs on them.
//!
//! [`ControlPlane`] owns the Services, the extra ServiceCIDRs, the
//! Deployments, Pods, Nodes and EndpointSlices, the ClusterIP and NodePort
//! allocators, the allocation generator, the Nodes' pod address cursors,
//! the apiserver leases and the repair loop's leak counters. It runs the
//! Deployment controller ([`crate::controllers::deployment`]) whenever
//! Deployments, Pods or Nodes change, and the EndpointSlice controller
//! ([`crate::controllers::endpointslice`]) whenever Services, Pods, Nodes,
//! EndpointSlices or leases change, so its Pods and slices are always
//! current. It
//! is plain data: every operation is a method call with its inputs (time
//! included), and the whole state round-trips through
//! [`ControlPlane::snapshot`] and [`ControlPlane::restore`].

pub mod apply;
mod changes;
pub mod config;
pub mod containers;
pub mod deployments;
pub mod endpoints;
pub mod error;
pub mod list;
pub mod objects;
pub mod proxy;
pub mod prune;
pub mod service_cidrs;
pub mod services;
pub mod slice_store;
pub mod slices;
pub mod snapshot;

pub use apply::{Applied, ApplyAction};
pub use config::{ClusterConfig, ConfigError, ValidatedConfig};
pub use error::ApiError;
pub use prune::{ObjectRef, SetOutcome};
use slice_store::SliceStore;
pub use snapshot::Snapshot;

use crate::api::{Deployment, EndpointSlice, Endpoints, Node, ObjectMeta, Pod, Service, ServiceCidr};
use crate::apiserver::cluster_ip::ClusterIpAllocator;
use crate::apiserver::kubernetes_service::{kubernetes_service, ApiserverLeases};
use crate::apiserver::node_port::NodePortAllocator;
use crate::apiserver::repair::LeakTracker;
use crate::cni::HostLocalIpam;
use crate::collections::SortedMap;
use crate::digits::{push_decimal, push_hex};
use crate::dns::{self, DnsRecord};
use crate::family::IpFamily;
use crate::rng::Rng;
use crate::time::Time;
use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;

/// `(namespace, name)` of a namespaced object.
pub type ObjectKey = (String, String);

/// The control plane's whole state.
#[derive(Clone, Debug, PartialEq)]
pub struct ControlPlane {
    config: ValidatedConfig,
    /// Shared (`Arc`), like the EndpointSlices, so copying the control
    /// plane to undo a refused change copies no Service.
    services: SortedMap<ObjectKey, Arc<Service>>,
    service_cidrs: SortedMap<String, ServiceCidr>,
    /// The `kubernetes` ServiceCIDR: the flag's ranges.
    default_service_cidr: ServiceCidr,
    deployments: SortedMap<ObjectKey, Deployment>,
    pods: SortedMap<ObjectKey, Pod>,
    nodes: SortedMap<String, Node>,
    /// host-local's last address per Node and pod CIDR.
    pod_ipam: HostLocalIpam,
    /// The Service environment each started Pod's containers got.
    pod_env: containers::PodEnvironments,
    endpoint_slices: SliceStore,
    /// `v1/Endpoints` written by users (for Services without a selector).
    written_endpoints: SortedMap<ObjectKey, Endpoints>,
    cluster_ips: ClusterIpAllocator,
    node_ports: NodePortAllocator,
    rng: Rng,
    /// The generator behind Pod name suffixes, apart from `rng` so that
    /// starting Pods never moves the ClusterIPs later Services get.
    pod_name_rng: Rng,
    leases: ApiserverLeases,
    leaks: LeakTracker,
    now: Time,
    next_uid: u64,
    /// Counter behind generated names (EndpointSlices, `generateName`).
    next_generated_name: u64,
}

impl ControlPlane {
    /// Starts a cluster: validates the configuration, creates the
    /// `kubernetes` Service on the first address of the primary range, and
    /// gives the configured apiservers a lease at time 0.
    pub fn new(config: ClusterConfig) -> Result<ControlPlane, ConfigError> {
        let config = config.validate()?;
        let default_service_cidr = service_cidrs::default_service_cidr(&config.service_cidrs, Time::ZERO);
        let cluster_ips = ClusterIpAllocator::new(config.service_cidrs.iter().copied())
            .map_err(|e| ConfigError::ServiceCidr(e.to_string()))?;
        let node_ports = NodePortAllocator::new(config.node_ports);
        let mut cp = ControlPlane {
            rng: Rng::new(config.raw.seed),
            pod_name_rng: pod_name_rng(config.raw.seed),
            config,
            services: SortedMap::new(),
            service_cidrs: SortedMap::new(),
            default_service_cidr,
            deployments: SortedMap::new(),
            pods: SortedMap::new(),
            nodes: SortedMap::new(),
            pod_ipam: HostLocalIpam::default(),
            pod_env: containers::PodEnvironments::new(),
            endpoint_slices: SliceStore::default(),
            written_endpoints: SortedMap::new(),
            cluster_ips,
            node_ports,
            leases: ApiserverLeases::default(),
            leaks: LeakTracker::default(),
            now: Time::ZERO,
            next_uid: 1,
            next_generated_name: 0,
        };
        for addr in cp.config.apiservers.clone() {
            cp.leases.heartbeat(addr, Time::ZERO);
        }
        cp.ensure_kubernetes_service();
        cp.sync_kubernetes_slice();
        Ok(cp)
    }

    /// The validated configuration.
    pub fn config(&self) -> &ValidatedConfig {
        &self.config
    }

    /// The current time as last given to the control plane.
    pub fn now(&self) -> Time {
        self.now
    }

    /// All Services, sorted by namespace and name.
    pub fn services(&self) -> impl Iterator<Item = &Service> {
        self.services.values().map(|s| &**s)
    }

    /// One Service.
    pub fn service(&self, namespace: &str, name: &str) -> Option<&Service> {
        self.services
            .get(&(namespace.to_string(), name.to_string()))
            .map(|s| &**s)
    }

    /// The ClusterIP allocator (for usage reports and the range map).
    pub fn cluster_ip_allocator(&self) -> &ClusterIpAllocator {
        &self.cluster_ips
    }

    /// The NodePort allocator.
    pub fn node_port_allocator(&self) -> &NodePortAllocator {
        &self.node_ports
    }

    /// The families the cluster has service CIDRs for, primary first.
    pub fn families(&self) -> Vec<IpFamily> {
        let mut fams: Vec<IpFamily> = Vec::new();
        for cidr in &self.config.service_cidrs {
            let fam = IpFamily::of(cidr.ip());
            if !fams.contains(&fam) {
                fams.push(fam);
            }
        }
        fams
    }

    /// The `kubernetes` Service's address: the first address of the primary
    /// service CIDR.
    pub fn kubernetes_ip(&self) -> IpAddr {
        // A validated configuration has at least one service CIDR, each of
        // at least 8 addresses, so the first address always exists.
        let primary = self.config.service_cidrs[0];
        ClusterIpAllocator::first_address(primary).unwrap_or(primary.ip())
    }

    /// Moves time forward to `now` (never backwards) and lets time-driven
    /// state catch up: expired apiserver leases are dropped (and the
    /// `kubernetes` EndpointSlice follows).
    pub fn advance_to(&mut self, now: Time) {
        self.now = self.now.max(now);
        self.leases.reconcile(self.now);
        self.sync_kubernetes_slice();
    }

    /// Records an apiserver lease heartbeat at `now`.
    pub fn heartbeat(&mut self, addr: SocketAddr, now: Time) {
        self.advance_to(now);
        self.leases.heartbeat(addr, self.now);
        self.refresh_kubernetes_target_port();
        self.sync_kubernetes_slice();
    }

    /// The apiserver leases and the `kubernetes` endpoints derived from them.
    pub fn apiserver_leases(&self) -> &ApiserverLeases {
        &self.leases
    }

    /// DNS records of every Service, per the Kubernetes DNS specification,
    /// headless Services' records from their EndpointSlices included.
    pub fn dns_records(&self) -> Vec<DnsRecord> {
        let services: Vec<Service> = self.services().cloned().collect();
        let slices: Vec<EndpointSlice> = self
            .endpoint_slices
            .values()
            .filter(|s| s.service_name().is_some())
            .cloned()
            .collect();
        dns::cluster_records(&services, &slices, &self.config.dns)
    }

    /// The DNS records as zone-file text.
    pub fn dns_zone(&self) -> String {
        dns::zone_text(&self.dns_records())
    }

    fn ensure_kubernetes_service(&mut self) {
        let key = ("default".to_string(), "kubernetes".to_string());
        if self.services.contains_key(&key) {
            return;
        }
        let ip = self.kubernetes_ip();
        // The first address is reserved for `kubernetes` from the start and
        // never released, so this only fails if it is already held, which
        // is the state we want.
        let _ = self.cluster_ips.allocate(ip);
        let mut svc = kubernetes_service(ip, self.leases.target_port());
        self.stamp(&mut svc.metadata);
        self.services.insert(key, Arc::new(svc));
        self.sync_kubernetes_slice();
    }

    fn refresh_kubernetes_target_port(&mut self) {
        let port = Some(crate::api::service::IntOrString::Int(i64::from(
            self.leases.target_port(),
        )));
        let key = ("default".to_string(), "kubernetes".to_string());
        let Some(mut svc) = self.service("default", "kubernetes").cloned() else {
            return;
        };
        match svc.spec.ports.first_mut() {
            Some(p) if p.target_port != port => p.target_port = port,
            _ => return,
        }
        self.bump(&mut svc.metadata);
        self.services.insert(key, Arc::new(svc));
    }

    /// Gives a new object its uid, resourceVersion and creationTimestamp
    /// (now, to the second, as kube-apiserver writes it).
    fn stamp(&mut self, meta: &mut ObjectMeta) {
        meta.creation_timestamp = Some(serde_json::Value::String(self.now.rfc3339()));
        let mut uid = String::with_capacity(36);
        uid.push_str("00000000-0000-4000-8000-");
        push_hex(&mut uid, self.next_uid, 12);
        meta.uid = uid;
        self.bump(meta);
    }

    /// Bumps the resourceVersion of an updated object.
    fn bump(&mut self, meta: &mut ObjectMeta) {
        meta.resource_version.clear();
        push_decimal(&mut meta.resource_version, self.next_uid, 0);
        self.next_uid += 1;
    }
}

/// The Pod name generator of a cluster with `seed`: its own stream, so
/// Pods and ClusterIPs draw from different generators.
pub(crate) fn pod_name_rng(seed: u64) -> Rng {
    // "pod-name" in ASCII.
    Rng::new(seed ^ 0x706f_642d_6e61_6d65)
}
