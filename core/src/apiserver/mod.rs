//! What kube-apiserver does when Services are created: service CIDR
//! validation, ClusterIP and NodePort allocation, admission (defaulting and
//! validation), the `kubernetes` Service and its leases, and repair.

pub mod admission;
pub mod cluster_ip;
pub mod generate_name;
pub mod kubernetes_service;
pub mod node_port;
pub mod range;
pub mod repair;
pub mod service_cidr;
