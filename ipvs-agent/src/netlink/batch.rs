//! Many requests in one buffer: [`Batch`] serialises IPVS messages with
//! consecutive sequence numbers into one `Vec<u8>`, so the agent can hand the
//! kernel a whole plan in one `sendmsg` and match each answer by sequence
//! number (see [`super::reply`]).

use super::cmd::IpvsCmd;
use super::message::IpvsMessage;

/// One request written into a batch.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct SentRequest {
    /// Its sequence number; every answer to it carries the same one.
    pub seq: u32,
    /// Its command.
    pub cmd: IpvsCmd,
    /// Whether it is a dump (answered by messages then `NLMSG_DONE`) rather
    /// than a request answered by an ACK or an error.
    pub dump: bool,
}

/// Requests serialised back to back, ready for one `sendmsg`.
///
/// The kernel handles them in order and answers each by its sequence number.
/// Put at most one dump in a batch: a netlink socket runs one dump at a time
/// and refuses another with EBUSY while it runs; the dump's entries then
/// arrive over as many reads as they need.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Batch {
    family_id: u16,
    next_seq: u32,
    bytes: Vec<u8>,
    requests: Vec<SentRequest>,
}

impl Batch {
    /// An empty batch for the resolved IPVS family id, numbering requests
    /// from `first_seq` (wrapping after `u32::MAX`).
    pub fn new(family_id: u16, first_seq: u32) -> Self {
        Self {
            family_id,
            next_seq: first_seq,
            bytes: Vec::new(),
            requests: Vec::new(),
        }
    }

    /// Append a request; returns its sequence number.
    pub fn push(&mut self, message: IpvsMessage) -> u32 {
        let seq = self.next_seq;
        self.next_seq = seq.wrapping_add(1);
        self.requests.push(SentRequest {
            seq,
            cmd: message.cmd,
            dump: message.is_dump(),
        });
        // Every IPVS message is a multiple of 4 bytes long, so the next one
        // starts NLMSG_ALIGNed.
        message.append_request(self.family_id, seq, &mut self.bytes);
        seq
    }

    /// The serialised requests.
    pub fn bytes(&self) -> &[u8] {
        &self.bytes
    }

    /// The requests written so far, in order.
    pub fn requests(&self) -> &[SentRequest] {
        &self.requests
    }

    /// The sequence number the next request will get.
    pub fn next_seq(&self) -> u32 {
        self.next_seq
    }

    /// How many requests the batch holds.
    pub fn len(&self) -> usize {
        self.requests.len()
    }

    /// Whether the batch holds no request.
    pub fn is_empty(&self) -> bool {
        self.requests.is_empty()
    }

    /// The bytes to send and the requests they hold.
    pub fn into_parts(self) -> (Vec<u8>, Vec<SentRequest>) {
        (self.bytes, self.requests)
    }
}
