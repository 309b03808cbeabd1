//! The IPVS generic-netlink family as pure data: build and parse the messages
//! `ipvsadm` and kube-proxy exchange with the kernel, with no socket or other
//! I/O. Built on `netlink-packet-core` and `netlink-packet-generic` (the
//! family is a `GenlFamily`, so a request is a
//! `NetlinkMessage<GenlMessage<IpvsMessage>>`), and tested against golden
//! bytes.
//!
//! - [`IpvsMessage`] and its attributes ([`IpvsAttr`], [`ServiceAttr`],
//!   [`DestAttr`], [`Stats`]): the wire format, both ways.
//! - Builders ([`IpvsMessage::new_service`], [`IpvsMessage::new_dest`], ...)
//!   from [`VirtualServiceSpec`], [`DestSpec`] and [`Timeouts`].
//! - [`Batch`]: many requests in one buffer with consecutive sequence
//!   numbers; [`parse_replies`]: the answers, matched by sequence number.
//! - Replies as plain data: [`ServiceEntry`], [`DestEntry`], [`IpvsInfo`].
//! - [`IpvsError`]: kernel errnos with what they mean for IPVS;
//!   [`WireError`]: bytes that could not be understood.
//!
//! Parsing never panics on malformed input (a property test feeds it random
//! and truncated bytes). Numbers are in the host's byte order like the
//! kernel's, ports in network order; the golden tests assume a little-endian
//! host.

mod attr;
mod batch;
mod cmd;
pub mod constants;
mod dest;
mod entry;
mod error;
mod message;
mod reply;
mod request;
mod service;
mod stats;
mod types;
mod wire;

#[cfg(test)]
mod tests;

pub use attr::IpvsAttr;
pub use batch::{Batch, SentRequest};
pub use cmd::IpvsCmd;
pub use dest::DestAttr;
pub use entry::{DestEntry, IpvsInfo, IpvsVersion, ServiceEntry};
pub use error::{IpvsError, WireError};
pub use message::IpvsMessage;
pub use reply::{parse_replies, Replies, Reply, ReplyBody};
pub use request::{default_netmask, DestSpec, ServiceKey, Timeouts, VirtualServiceSpec};
pub use service::ServiceAttr;
pub use stats::Stats;
pub use types::{AddressFamily, ForwardMethod, InetAddr, NameError, Protocol, SchedulerName, ServiceFlags};
