//! ipvs-agent: the svcnet node agent that programs Linux IPVS.
//!
//! So far only the pure message layer exists: [`netlink`] builds and parses
//! the IPVS generic-netlink family's messages without any I/O.

#![warn(missing_docs)]

pub mod netlink;
