//! nf_tables over nfnetlink as pure data: the requests that create,
//! update and delete svcnet's table `inet svcnet` from the core's ruleset
//! model (`svcnet_core::proxy::nftables`), framed as one transaction, and
//! the kernel's answers. No socket here ([`crate::kernel::nft`] sends them),
//! no C library, no `nft` process.
//!
//! - [`transaction`]: what a sync sends ([`Transaction`]: nothing, element
//!   changes, or the table replaced whole) and the requests for it.
//! - [`message`]: one request per table, chain, set, element batch or rule
//!   ([`NftMessage`]), with the [`Operation`] that names it in errors.
//! - [`compile`]: the core's typed rules as nf_tables expressions
//!   ([`expr`]), as `nft` 1.0.6 compiles the same rules.
//! - [`key`]: set keys and elements on the wire.
//! - [`batch`]: requests between `NFNL_MSG_BATCH_BEGIN` and `_END`
//!   ([`NftBatch`]); [`reply`]: the answers, matched by sequence number.
//! - [`attr`]: the attribute tree; [`constants`]: the uapi numbers.
//! - [`error`]: what cannot be sent, what the kernel refused.
//!
//! The bytes equal what `nft -f` sends for the same ruleset, except for
//! `NLM_F_ACK` (see `ipvs-agent/tests/nft_captures.rs`). Numbers in
//! expressions that the kernel reads in host order (marks, conntrack
//! states) are written in the host's order; the golden tests assume a
//! little-endian host.

pub mod attr;
pub mod batch;
pub mod compile;
pub mod constants;
pub mod error;
pub mod expr;
pub mod key;
pub mod message;
pub mod reply;
pub mod transaction;

#[cfg(test)]
mod tests;

pub use batch::{NftBatch, SentRequest};
pub use error::{NftBuildError, NftRefusal, NftWireError};
pub use message::{NftMessage, Operation};
pub use reply::{outcome, parse_answers, Answer};
pub use transaction::{create_table, decide, delete_table, requests, Transaction};
