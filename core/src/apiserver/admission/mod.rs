//! Service admission: Kubernetes' defaulting and validation of Services.
//!
//! kube-apiserver fills in defaults ([`defaults`]), validates the object
//! ([`validation`], with field-path errors), and settles `ipFamilyPolicy` and
//! `ipFamilies` against the cluster's configured families
//! ([`ip_families`]) before any address is allocated. Deployments are
//! validated by [`deployment`].

pub mod defaults;
pub mod deployment;
pub mod endpoints;
pub mod ip_families;
pub mod metadata;
pub mod names;
pub mod source_ranges;
pub mod validation;

pub use defaults::default_service;
pub use ip_families::init_ip_families;
pub use validation::{validate_service, validate_service_update};
