//! Kubernetes-shaped objects, as `kubectl` users write them: Service,
//! ServiceCIDR, Pod, Node, Deployment, EndpointSlice, and the derived
//! `v1/Endpoints`.
//!
//! The types serialise to the JSON/YAML Kubernetes uses (camelCase,
//! `apiVersion`, `kind`, `metadata`, `spec`, `status`). [`manifest`] turns
//! YAML or JSON text, one or many documents, into [`Object`]s.

// Not in the WebAssembly build: the playground's pastes are small, and its
// page has a byte budget (scripts/playground.sh) the reader's code would
// break; there every text goes through serde_yaml_ng, to the same values.
#[cfg(not(target_arch = "wasm32"))]
pub mod common_yaml;
pub mod decode;
pub mod deployment;
pub mod endpoint_slice;
pub mod endpoints;
pub mod limits;
pub mod manifest;
pub mod meta;
pub mod pod;
pub mod resource;
pub mod scan;
pub mod service;
pub mod service_cidr;
pub mod value;

pub use deployment::Deployment;
pub use endpoint_slice::EndpointSlice;
pub use endpoints::Endpoints;
pub use manifest::{parse_manifests, Object};
pub use meta::ObjectMeta;
pub use pod::{Node, Pod};
pub use resource::Resource;
pub use service::Service;
pub use service_cidr::{Condition, ServiceCidr, ServiceCidrStatus};
