//! ipvs-agent: the svcnet node agent that programs Linux IPVS.
//!
//! - [`netlink`]: the IPVS generic-netlink family as pure data (no I/O).
//! - [`dataplane`]: the boundary between the sync loop and the kernel.
//! - [`kernel`]: the Linux side: IPVS generic-netlink socket, `kube-ipvs0`
//!   over rtnetlink, sysctls, and [`kernel::LinuxDataplane`].

#![warn(missing_docs)]

pub mod dataplane;
pub mod kernel;
pub mod netlink;
