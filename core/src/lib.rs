//! svcnet-core: the no-I/O service networking core.
//!
//! Everything here is a pure function of its inputs: no sockets, files,
//! clocks, threads or global randomness. Time ([`time::Time`]) and the
//! allocation seed ([`rng::Rng`]) are inputs, so the same inputs give the
//! same ClusterIPs natively, in the browser (wasm32) and in tests.
//!
//! Modules follow the Kubernetes component that owns the behaviour:
//!
//! - [`api`]: Kubernetes-shaped objects (Service, ServiceCIDR, ...) and
//!   manifest parsing (YAML/JSON, multi-document).
//! - [`apiserver`]: what kube-apiserver does when Services are created:
//!   service CIDR validation, ClusterIP and NodePort allocation, admission
//!   (defaulting and validation), the `kubernetes` Service and repair.
//! - [`controllers`]: what kube-controller-manager computes: the
//!   Deployment controller, the EndpointSlice controller and the legacy
//!   Endpoints view.
//! - [`controlplane`]: the state that takes Service, Deployment, Pod, Node
//!   and EndpointSlice create/update/delete, ties the allocators together
//!   and runs the controllers.
//! - [`scheduler`] and [`cni`]: where a Deployment's Pod runs and the
//!   address the node's host-local IPAM gives it.
//! - [`dns`]: DNS records per the Kubernetes DNS specification.
//! - [`kubelet`]: what the kubelet computes for a Pod: the Service
//!   environment variables.
//! - [`kubectl`]: `kubectl get` tables (Services, Endpoints, EndpointSlices,
//!   Deployments).
//! - [`proxy`]: what kube-proxy's IPVS mode computes on one node: endpoint
//!   selection, the desired IPVS table, the plan that reaches it from the
//!   kernel's table (with graceful termination) and `ipvsadm` rendering.
//! - [`scenario`]: runs behaviour vectors (configuration + ordered actions)
//!   against the control plane; shared by the native and wasm test runners.

pub mod api;
pub mod apiserver;
pub mod cni;
pub mod collections;
pub mod console;
pub mod controllers;
pub mod controlplane;
mod digits;
pub mod dns;
pub mod family;
pub mod field;
pub mod kubectl;
pub mod kubelet;
pub mod proxy;
pub mod rng;
pub mod scenario;
pub mod scheduler;
pub mod sort;
pub mod time;
