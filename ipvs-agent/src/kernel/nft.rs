//! nf_tables over a `NETLINK_NETFILTER` socket: [`NftSocket`] sends one
//! transaction per `sendmsg` and reads every answer, and [`NftApplier`]
//! keeps svcnet's table `inet svcnet` as the core computes it, one
//! transaction per change (see [`crate::nftables::transaction`]): the
//! table replaced whole on the first sync, after a failure and on a change
//! of shape, only element changes otherwise, nothing when nothing changed.
//!
//! Its [`NetlinkSocket`] never waits: the kernel handles a batch inside
//! `sendmsg`, so by the time it returns every answer is queued.

use std::io;

use netlink_sys::protocols::NETLINK_NETFILTER;
use svcnet_core::proxy::nftables::Table;
use thiserror::Error;

use super::socket::{Acks, NetlinkSocket};
use crate::nftables::error::MissingNfTables;
use crate::nftables::{
    decide, delete_table, outcome, parse_answers, requests, NftBatch, NftBuildError, NftMessage, NftRefusal,
    NftWireError, Transaction,
};

/// Why a transaction did not take effect.
#[derive(Debug, Error)]
pub enum NftError {
    /// The ruleset cannot be expressed in requests.
    #[error(transparent)]
    Build(#[from] NftBuildError),
    /// The kernel refused a request; nothing of the transaction applied.
    #[error(transparent)]
    Refused(#[from] NftRefusal),
    /// An answer could not be read.
    #[error(transparent)]
    Wire(#[from] NftWireError),
    /// A request got no answer.
    #[error("nftables: the kernel did not answer every request of the transaction")]
    NoAnswer,
    /// The socket failed.
    #[error("nftables socket: {0}")]
    Io(#[from] io::Error),
}

impl NftError {
    /// What the kernel lacks when this error says it has no nf_tables for
    /// table `inet svcnet` (no netfilter netlink protocol, no nf_tables
    /// subsystem, no inet family): then no table of svcnet's can exist.
    /// `None` for every other error.
    pub fn missing_nf_tables(&self) -> Option<MissingNfTables> {
        match self {
            Self::Io(error) if error.raw_os_error() == Some(libc::EPROTONOSUPPORT) => Some(MissingNfTables::Nfnetlink),
            Self::Refused(refusal) => refusal.missing_nf_tables(),
            _ => None,
        }
    }
}

/// A netfilter netlink socket for nf_tables transactions.
#[derive(Debug)]
pub struct NftSocket {
    socket: NetlinkSocket,
    next_seq: u32,
}

/// A `NETLINK_NETFILTER` socket, with capped and extended ACKs where the
/// kernel has them: what nf_tables and ctnetlink both speak over.
pub(super) fn open_netfilter_socket() -> io::Result<NetlinkSocket> {
    NetlinkSocket::open(NETLINK_NETFILTER, Acks::CappedExtended)
}

impl NftSocket {
    /// Open the socket, with extended ACKs (the kernel's reason in text).
    pub fn open() -> Result<Self, NftError> {
        Ok(Self {
            socket: open_netfilter_socket()?,
            next_seq: 1,
        })
    }

    /// Run `messages` as one transaction: all of them take effect, or none.
    pub fn transact(&mut self, messages: Vec<NftMessage>) -> Result<(), NftError> {
        let begin = self.next_seq;
        let mut batch = NftBatch::new(begin);
        for message in messages {
            batch.push(message)?;
        }
        let (bytes, sent, next_seq) = batch.finish();
        self.next_seq = next_seq;
        self.socket.reserve_send_buffer(bytes.len());
        self.socket.send(&bytes)?;
        let mut answers = Vec::new();
        while self.socket.recv()? {
            answers.extend(parse_answers(self.socket.received())?);
        }
        outcome(begin, &sent, &answers).map_err(|refusal| refusal.map_or(NftError::NoAnswer, NftError::Refused))
    }
}

/// What one sync did to the table.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NftSyncOutcome {
    /// Nothing to change; nothing sent.
    Unchanged,
    /// The table was created (or replaced) whole.
    Replaced,
    /// Set elements were added and removed.
    Elements {
        /// Elements added.
        added: usize,
        /// Elements removed.
        removed: usize,
    },
}

/// Keeps table `inet svcnet` as desired, remembering what the last
/// successful transaction left.
#[derive(Debug)]
pub struct NftApplier {
    socket: NftSocket,
    applied: Option<Table>,
}

impl NftApplier {
    /// An applier on a new socket; its first sync replaces the table.
    pub fn open() -> Result<Self, NftError> {
        Ok(Self {
            socket: NftSocket::open()?,
            applied: None,
        })
    }

    /// Make the kernel's table `desired`, in one transaction or none. On
    /// failure the next sync replaces the table whole.
    pub fn sync(&mut self, desired: &Table) -> Result<NftSyncOutcome, NftError> {
        let transaction = decide(self.applied.as_ref(), desired);
        let result = match &transaction {
            Transaction::Nothing => NftSyncOutcome::Unchanged,
            Transaction::Replace => NftSyncOutcome::Replaced,
            Transaction::Elements(changes) => NftSyncOutcome::Elements {
                added: changes.added.len(),
                removed: changes.removed.len(),
            },
        };
        if transaction == Transaction::Nothing {
            return Ok(result);
        }
        self.applied = None;
        self.socket.transact(requests(&transaction, desired)?)?;
        self.applied = Some(desired.clone());
        Ok(result)
    }

    /// Delete the table (`cleanup`); no error when there is none.
    pub fn delete(&mut self, table: &Table) -> Result<(), NftError> {
        self.applied = None;
        self.socket.transact(delete_table(table))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::nftables::error::{ENOENT, EOPNOTSUPP};
    use crate::nftables::Operation;

    #[test]
    fn what_a_kernel_without_nf_tables_answers_is_told_apart() {
        let io = |errno| NftError::Io(io::Error::from_raw_os_error(errno));
        let refused = |operation, errno| {
            NftError::Refused(NftRefusal {
                operation,
                errno,
                message: None,
            })
        };
        assert_eq!(
            io(libc::EPROTONOSUPPORT).missing_nf_tables(),
            Some(MissingNfTables::Nfnetlink)
        );
        assert_eq!(
            refused(Operation::Batch, EOPNOTSUPP).missing_nf_tables(),
            Some(MissingNfTables::Subsystem)
        );
        assert_eq!(
            refused(Operation::AddTable, EOPNOTSUPP).missing_nf_tables(),
            Some(MissingNfTables::InetFamily)
        );
        for other in [
            io(libc::EMFILE),
            io(libc::EPERM),
            refused(Operation::DeleteTable, ENOENT),
            NftError::NoAnswer,
        ] {
            assert_eq!(other.missing_nf_tables(), None, "{other}");
        }
    }
}
