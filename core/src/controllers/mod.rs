//! What kube-controller-manager computes from Services and Pods, as pure
//! functions over plain data:
//!
//! - [`deployment`]: the Deployment (and ReplicaSet) controller: the Pods a
//!   Deployment should have.
//! - [`endpointslice`]: the EndpointSlice controller: the Pods a Service
//!   selects become the endpoints of its EndpointSlices.
//! - [`endpoints`]: the legacy `v1/Endpoints` view of a Service, derived
//!   from its EndpointSlices, as `kubectl get endpoints` shows it, and
//!   [`endpoints_capacity`]: its cap of 1,000 addresses.
//! - [`endpointslice_mirroring`]: a hand-written `v1/Endpoints` of a
//!   Service without a selector, mirrored into EndpointSlices.
//!
//! The control plane ([`crate::controlplane`]) runs them whenever Services,
//! Pods, Nodes, Deployments or EndpointSlices change and stores what they
//! return.

pub mod deployment;
pub mod endpoints;
pub mod endpoints_capacity;
pub mod endpointslice;
pub mod endpointslice_mirroring;
