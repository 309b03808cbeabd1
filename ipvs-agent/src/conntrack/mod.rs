//! Conntrack over ctnetlink as pure data, for the UDP cleanup kube-proxy
//! 1.32+ does after a sync (the decision is the core's:
//! `svcnet_core::proxy::conntrack`). No socket here
//! ([`crate::kernel::conntrack`] sends them), no C library, no `conntrack`
//! process.
//!
//! - [`message`]: the requests: a dump of one family's UDP entries,
//!   filtered in the kernel (`CTA_FILTER`), and the deletion of one entry
//!   by its original tuple (with its id and zone); never a flush.
//! - [`entry`]: a dumped entry ([`CtEntry`]): tuples, id, zone, mark.
//! - [`reply`]: the answers, matched by sequence number.
//! - [`constants`]: the uapi numbers; [`error`]: what could not be read,
//!   what the kernel refused.
//!
//! The bytes follow `include/uapi/linux/netfilter/nfnetlink_conntrack.h`;
//! the tests below spell them out field by field.

pub mod constants;
pub mod entry;
pub mod error;
pub mod message;
pub mod reply;

pub use entry::{CtEntry, Tuple};
pub use error::{CtOperation, CtRefusal, CtWireError};
pub use message::{frame, CtRequest};
pub use reply::{parse_replies, CtReply, ReplyBody};

#[cfg(test)]
mod tests;
