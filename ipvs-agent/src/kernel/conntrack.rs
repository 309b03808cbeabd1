//! Conntrack over a `NETLINK_NETFILTER` socket: [`ConntrackSocket`] dumps
//! one family's UDP entries (filtered in the kernel) and deletes entries
//! one by one, many deletes per `sendmsg`; [`ConntrackSocket::clean_udp`]
//! is the whole cleanup after a sync: dump each family that has a UDP
//! frontend with endpoints, ask the core which entries are stale
//! ([`UdpFrontends::should_delete`]), delete those. Never a flush: every
//! delete names one entry by its original tuple (and id).
//!
//! Its [`NetlinkSocket`] never waits: the kernel answers deletes inside
//! `sendmsg` and produces a dump's next part inside the `recvmsg` that
//! reads the previous one, so an empty queue (EAGAIN) before the answer
//! means the answer is lost.

use std::collections::HashSet;
use std::io;

use svcnet_core::family::IpFamily;
use svcnet_core::proxy::UdpFrontends;
use thiserror::Error;

use super::nft::open_netfilter_socket;
use super::socket::NetlinkSocket;
use crate::conntrack::constants::IPPROTO_UDP;
use crate::conntrack::error::{EINVAL, ENOENT, EOPNOTSUPP};
use crate::conntrack::{frame, parse_replies, CtEntry, CtOperation, CtRefusal, CtRequest, CtWireError, ReplyBody};
use crate::dataplane::ConntrackReport;

/// Deletes per `sendmsg`: their ACKs (36 bytes each, capped) fit any
/// receive buffer with room to spare.
const DELETES_PER_SEND: usize = 256;

/// Why the conntrack socket could not be used.
#[derive(Debug, Error)]
pub enum ConntrackError {
    /// The kernel refused the request.
    #[error(transparent)]
    Refused(#[from] CtRefusal),
    /// An answer could not be read.
    #[error(transparent)]
    Wire(#[from] CtWireError),
    /// The dump ended without its last part.
    #[error("conntrack: the kernel's dump of {0} UDP entries ended without NLMSG_DONE")]
    Unfinished(IpFamily),
    /// The socket failed.
    #[error("conntrack socket: {0}")]
    Io(#[from] io::Error),
}

/// What one dump found.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct DumpOutcome {
    /// The UDP entries kept.
    pub entries: Vec<CtEntry>,
    /// UDP entries dumped, kept or not.
    pub scanned: u64,
    /// Entries that could not be read (skipped).
    pub unreadable: u64,
}

/// What one delete batch did.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct DeleteOutcome {
    /// Entries deleted.
    pub deleted: u64,
    /// Entries already gone (ENOENT: expired, or replaced).
    pub gone: u64,
    /// Deletes refused otherwise or unanswered, with the first reason.
    pub failed: u64,
    /// The first failure.
    pub first_error: Option<String>,
}

/// A netfilter netlink socket for ctnetlink.
#[derive(Debug)]
pub struct ConntrackSocket {
    socket: NetlinkSocket,
    next_seq: u32,
    /// Whether the kernel takes the dump filter (`CTA_FILTER`); cleared
    /// the first time it refuses it.
    kernel_filter: bool,
}

impl ConntrackSocket {
    /// Open the socket, with capped and extended ACKs.
    pub fn open() -> Result<Self, ConntrackError> {
        Ok(Self {
            socket: open_netfilter_socket()?,
            next_seq: 1,
            kernel_filter: true,
        })
    }

    fn send(&mut self, requests: &[CtRequest]) -> Result<Vec<u32>, ConntrackError> {
        let (bytes, seqs) = frame(requests, self.next_seq);
        self.next_seq = seqs.last().map_or(self.next_seq, |s| s.wrapping_add(1).max(1));
        self.socket.send(&bytes)?;
        Ok(seqs)
    }

    /// One queued datagram read: `Ok(false)` when nothing is queued.
    fn recv(&mut self) -> Result<bool, ConntrackError> {
        Ok(self.socket.recv()?)
    }

    /// Every UDP entry of `family`, and how many entries could not be read
    /// (logged, skipped).
    pub fn dump_udp(&mut self, family: IpFamily) -> Result<(Vec<CtEntry>, u64), ConntrackError> {
        let dump = self.dump_udp_matching(family, |_| true)?;
        Ok((dump.entries, dump.unreadable))
    }

    /// The UDP entries of `family` that `keep` accepts; every UDP entry is
    /// shown to it, and only the kept ones are held in memory. The kernel
    /// filters the dump to UDP; if it refuses the filter (EINVAL,
    /// EOPNOTSUPP), the family's whole table is dumped instead, then and
    /// from then on, and filtered here.
    pub fn dump_udp_matching(
        &mut self,
        family: IpFamily,
        mut keep: impl FnMut(&CtEntry) -> bool,
    ) -> Result<DumpOutcome, ConntrackError> {
        loop {
            let request = if self.kernel_filter {
                CtRequest::dump_udp(family)
            } else {
                CtRequest::dump_family(family)
            };
            match self.run_dump(family, request, &mut keep) {
                Err(ConntrackError::Refused(refusal))
                    if self.kernel_filter && matches!(refusal.errno, EINVAL | EOPNOTSUPP) =>
                {
                    log::info!("the kernel refuses a filtered conntrack dump ({refusal}); dumping whole families");
                    self.kernel_filter = false;
                }
                result => return result,
            }
        }
    }

    fn run_dump(
        &mut self,
        family: IpFamily,
        request: CtRequest,
        keep: &mut impl FnMut(&CtEntry) -> bool,
    ) -> Result<DumpOutcome, ConntrackError> {
        let seq = self.send(&[request])?[0];
        let mut dump = DumpOutcome::default();
        loop {
            if !self.recv()? {
                return Err(ConntrackError::Unfinished(family));
            }
            for reply in parse_replies(self.socket.received())? {
                if reply.seq != seq {
                    continue;
                }
                match reply.body {
                    ReplyBody::Entry(entry) if entry.orig.protocol == IPPROTO_UDP => {
                        dump.scanned += 1;
                        if keep(&entry) {
                            dump.entries.push(entry);
                        }
                    }
                    ReplyBody::Entry(_) => {}
                    ReplyBody::Unreadable(error) => {
                        log::debug!("unreadable conntrack entry: {error}");
                        dump.unreadable += 1;
                    }
                    ReplyBody::Done | ReplyBody::Ack => return Ok(dump),
                    ReplyBody::Refused { errno, message } => {
                        return Err(CtRefusal {
                            operation: CtOperation::Dump,
                            errno,
                            message,
                        }
                        .into())
                    }
                }
            }
        }
    }

    /// Delete `entries`, many per `sendmsg`. A refused delete does not stop
    /// the others.
    pub fn delete(&mut self, entries: &[CtEntry]) -> DeleteOutcome {
        let mut outcome = DeleteOutcome::default();
        for chunk in entries.chunks(DELETES_PER_SEND) {
            let requests: Vec<CtRequest> = chunk.iter().map(CtRequest::delete).collect();
            let seqs = match self.send(&requests) {
                Ok(seqs) => seqs,
                Err(error) => {
                    outcome.failed += chunk.len() as u64;
                    outcome.first_error.get_or_insert_with(|| error.to_string());
                    continue;
                }
            };
            let mut pending: HashSet<u32> = seqs.into_iter().collect();
            while !pending.is_empty() {
                let received = match self.recv() {
                    Ok(received) => received,
                    Err(error) => {
                        outcome.first_error.get_or_insert_with(|| error.to_string());
                        false
                    }
                };
                if !received {
                    break;
                }
                let replies = match parse_replies(self.socket.received()) {
                    Ok(replies) => replies,
                    Err(error) => {
                        outcome.first_error.get_or_insert_with(|| error.to_string());
                        continue;
                    }
                };
                for reply in replies {
                    if !pending.remove(&reply.seq) {
                        continue;
                    }
                    match reply.body {
                        ReplyBody::Ack => outcome.deleted += 1,
                        ReplyBody::Refused { errno: ENOENT, .. } => outcome.gone += 1,
                        ReplyBody::Refused { errno, message } => {
                            outcome.failed += 1;
                            let refusal = CtRefusal {
                                operation: CtOperation::Delete,
                                errno,
                                message,
                            };
                            outcome.first_error.get_or_insert_with(|| refusal.to_string());
                        }
                        _ => outcome.failed += 1,
                    }
                }
            }
            if !pending.is_empty() {
                outcome.failed += pending.len() as u64;
                outcome
                    .first_error
                    .get_or_insert_with(|| format!("conntrack: {} delete(s) got no answer", pending.len()));
            }
        }
        outcome
    }

    /// The cleanup after a sync: for each family with a UDP frontend that
    /// has endpoints, dump its UDP entries and delete the stale ones. A
    /// family whose dump fails is reported in the error; the other is
    /// still cleaned.
    pub fn clean_udp(&mut self, frontends: &UdpFrontends) -> ConntrackReport {
        let mut report = ConntrackReport::default();
        for family in frontends.families() {
            let stale_only = |entry: &CtEntry| entry.to_core().is_some_and(|e| frontends.should_delete(&e));
            let stale = match self.dump_udp_matching(family, stale_only) {
                Ok(dump) => {
                    report.scanned += dump.scanned;
                    report.unreadable += dump.unreadable;
                    dump.entries
                }
                Err(error) => {
                    report.errors += 1;
                    report.first_error.get_or_insert_with(|| error.to_string());
                    continue;
                }
            };
            report.stale += stale.len() as u64;
            let outcome = self.delete(&stale);
            report.deleted += outcome.deleted;
            report.gone += outcome.gone;
            report.errors += outcome.failed;
            if let Some(error) = outcome.first_error {
                report.first_error.get_or_insert(error);
            }
        }
        report
    }
}
