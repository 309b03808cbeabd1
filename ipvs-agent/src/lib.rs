//! ipvs-agent: the svcnet node agent that programs Linux IPVS.
//!
//! - [`netlink`]: the IPVS generic-netlink family as pure data (no I/O).
//! - [`dataplane`]: the boundary between the sync loop and the kernel.

#![warn(missing_docs)]

pub mod dataplane;
pub mod netlink;
