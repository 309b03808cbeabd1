//! The kernel side of the agent: everything that talks to Linux.
//!
//! - [`socket`]: [`NetlinkSocket`], the one batching netlink socket the
//!   four below go through (one instance per netlink protocol).
//! - [`genl`]: the IPVS generic-netlink socket ([`IpvsSocket`]): family
//!   resolution through the genl controller ([`family`]), many requests per
//!   `sendmsg`, every answer matched by sequence number, dumps, GET_INFO,
//!   GET_CONFIG/SET_CONFIG and FLUSH.
//! - [`convert`]: the core's table and operations to IPVS messages, and the
//!   kernel's replies back to the core's table.
//! - [`link`]: the `kube-ipvs0` dummy link (rtnetlink).
//! - [`addresses`]: binding and unbinding its /32 and /128 addresses, many
//!   per `sendmsg` ([`AddressSocket`]).
//! - [`nft`]: nf_tables transactions ([`nft::NftSocket`]) and the applier
//!   that keeps table `inet svcnet` as desired ([`nft::NftApplier`]).
//! - [`conntrack`]: ctnetlink ([`conntrack::ConntrackSocket`]): the
//!   filtered UDP dump and per-entry deletes of the cleanup after a sync.
//! - [`sysctl`]: the sysctls kube-proxy's IPVS mode sets.
//! - [`linux`]: [`LinuxDataplane`], the [`crate::dataplane::Dataplane`]
//!   built from the above, with counters for metrics.
//! - [`error`]: what can go wrong on the socket ([`GenlError`]) and on
//!   the link ([`LinkError`]).

pub mod addresses;
pub mod conntrack;
pub mod convert;
pub mod error;
pub mod family;
pub mod genl;
pub mod link;
pub mod linux;
pub mod nft;
pub mod socket;
pub mod sysctl;

pub use addresses::{AddressChange, AddressSocket};
pub use error::{GenlError, LinkError, RequestError};
pub use genl::{Answer, IpvsSocket};
pub use link::KubeIpvs0;
pub use linux::{Counters, LinuxDataplane};
pub use socket::{NetlinkSocket, SocketStats};
pub use sysctl::{apply_sysctls, kube_proxy_sysctls, SysctlChange, SysctlError};
