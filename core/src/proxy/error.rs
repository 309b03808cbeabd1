//! What can go wrong in the proxy: bad configuration ([`ProxyError`]),
//! Services or EndpointSlices the proxy cannot program ([`ProxyWarning`],
//! reported while the rest of the table is still built) and operations an
//! IPVS table refuses ([`ApplyError`]).

use super::scheduler::{Scheduler, SCHEDULER_ANNOTATION};
use serde::Serialize;
use thiserror::Error;

/// A configuration or input error: nothing can be computed until it is fixed.
#[derive(Clone, Debug, PartialEq, Eq, Error)]
pub enum ProxyError {
    /// The node-wide default scheduler is not one the kernel has.
    #[error("unknown IPVS scheduler {scheduler:?}: must be one of {}", Scheduler::known_names())]
    UnknownScheduler {
        /// The name given.
        scheduler: String,
    },
    /// A Node object carries an address that does not parse.
    #[error("node {node:?}: address {address:?} is not an IP address")]
    NodeAddress {
        /// The node's name.
        node: String,
        /// The text given.
        address: String,
    },
}

/// Something the proxy skipped while building a node's table. The rest of
/// the table is still built.
#[derive(Clone, Debug, PartialEq, Eq, Error, Serialize)]
#[serde(tag = "reason", rename_all = "camelCase")]
pub enum ProxyWarning {
    /// The scheduler annotation names no known scheduler; the Service gets
    /// no virtual servers on this node.
    #[error(
        "Service {service}: unknown IPVS scheduler {scheduler:?} in annotation {annotation}; \
         must be one of {known}; the Service is skipped",
        annotation = SCHEDULER_ANNOTATION,
        known = Scheduler::known_names()
    )]
    UnknownScheduler {
        /// `namespace/name` of the Service.
        service: String,
        /// The annotation's value.
        scheduler: String,
    },
    /// An address field of a Service does not parse.
    #[error("Service {service}: {field} {value:?} is not an IP address; ignored")]
    InvalidServiceAddress {
        /// `namespace/name` of the Service.
        service: String,
        /// The field, such as `spec.externalIPs[0]`.
        field: String,
        /// The text given.
        value: String,
    },
    /// A Service port has a protocol or port number IPVS cannot use.
    #[error("Service {service}: {field} {value:?} cannot be programmed in IPVS; ignored")]
    InvalidServicePort {
        /// `namespace/name` of the Service.
        service: String,
        /// The field, such as `spec.ports[1].protocol`.
        field: String,
        /// The value given.
        value: String,
    },
    /// An EndpointSlice endpoint address does not parse.
    #[error("EndpointSlice {slice}: endpoint address {address:?} is not an IP address; ignored")]
    InvalidEndpointAddress {
        /// `namespace/name` of the EndpointSlice.
        slice: String,
        /// The text given.
        address: String,
    },
    /// Two Services want the same virtual server (for example the same
    /// external IP and port); the first by `namespace/name` gets it.
    #[error("virtual server {virtual_server} is wanted by Services {}; {} gets it", services.join(", "), services.first().map(String::as_str).unwrap_or_default())]
    VirtualServerConflict {
        /// The virtual server, `PROTOCOL/address:port`.
        virtual_server: String,
        /// The Services that want it, the one that gets it first.
        services: Vec<String>,
    },
}

/// Why an IPVS table refused an operation. The messages are the ones
/// `ipvsadm` prints for the kernel's answers (and `ip` for addresses).
#[derive(Clone, Debug, PartialEq, Eq, Error)]
pub enum ApplyError {
    /// `NEW_SERVICE` on an existing virtual server (EEXIST).
    #[error("{operation}: Service already exists")]
    ServiceExists {
        /// The operation, as an `ipvsadm` command.
        operation: String,
    },
    /// `SET_SERVICE`/`DEL_SERVICE` on a missing virtual server (ESRCH).
    #[error("{operation}: No such service")]
    NoSuchService {
        /// The operation, as an `ipvsadm` command.
        operation: String,
    },
    /// A real server operation on a missing virtual server (ESRCH).
    #[error("{operation}: Service not defined")]
    ServiceNotDefined {
        /// The operation, as an `ipvsadm` command.
        operation: String,
    },
    /// `NEW_DEST` on an existing real server (EEXIST).
    #[error("{operation}: Destination already exists")]
    DestinationExists {
        /// The operation, as an `ipvsadm` command.
        operation: String,
    },
    /// `SET_DEST`/`DEL_DEST` on a missing real server (ENOENT).
    #[error("{operation}: No such destination")]
    NoSuchDestination {
        /// The operation, as an `ipvsadm` command.
        operation: String,
    },
    /// Binding an address that is already bound (EEXIST).
    #[error("{operation}: RTNETLINK answers: File exists")]
    AddressBound {
        /// The operation, as an `ip` command.
        operation: String,
    },
    /// Unbinding an address that is not bound (EADDRNOTAVAIL).
    #[error("{operation}: RTNETLINK answers: Cannot assign requested address")]
    AddressNotBound {
        /// The operation, as an `ip` command.
        operation: String,
    },
}
