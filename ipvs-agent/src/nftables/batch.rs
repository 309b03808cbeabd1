//! One nf_tables transaction: [`NftBatch`] frames requests between
//! `NFNL_MSG_BATCH_BEGIN` and `NFNL_MSG_BATCH_END` (their `res_id` the
//! nf_tables subsystem) with consecutive sequence numbers, for one
//! `sendmsg`. The kernel applies all of it or none of it, and answers
//! every request (each carries `NLM_F_ACK`) by its sequence number.

use netlink_packet_core::{Emitable, NetlinkHeader, NLM_F_REQUEST};

use super::constants::*;
use super::error::NftBuildError;
use super::message::{NftMessage, Operation};

/// `struct nlmsghdr` plus `struct nfgenmsg`.
const HEADERS_LEN: usize = 16 + 4;

/// A request written into a batch.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SentRequest {
    /// Its sequence number; its answer carries the same one.
    pub seq: u32,
    /// What it does.
    pub operation: Operation,
}

/// Requests between a begin and an end message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NftBatch {
    next_seq: u32,
    bytes: Vec<u8>,
    requests: Vec<SentRequest>,
}

impl NftBatch {
    /// A batch whose begin message takes sequence number `first_seq`.
    pub fn new(first_seq: u32) -> Self {
        let mut batch = Self {
            next_seq: first_seq,
            bytes: Vec::new(),
            requests: Vec::new(),
        };
        batch.frame(
            NFNL_MSG_BATCH_BEGIN,
            NLM_F_REQUEST,
            NFPROTO_UNSPEC,
            NFNL_SUBSYS_NFTABLES,
            &[],
        );
        batch
    }

    /// Append a request of table family `inet`; returns its sequence number.
    pub fn push(&mut self, message: NftMessage) -> Result<u32, NftBuildError> {
        if message
            .attrs
            .iter()
            .any(|a| a.largest_value() > usize::from(u16::MAX) - 4)
        {
            return Err(NftBuildError::TooLarge {
                operation: message.operation,
            });
        }
        let message_type = (NFNL_SUBSYS_NFTABLES << 8) | u16::from(message.msg_type);
        let seq = self.frame(message_type, message.flags, NFPROTO_INET, 0, &message.attrs);
        self.requests.push(SentRequest {
            seq,
            operation: message.operation,
        });
        Ok(seq)
    }

    /// Close the batch: the bytes for one `sendmsg`, the requests they hold
    /// (without begin and end, which the kernel does not answer), and the
    /// next free sequence number.
    pub fn finish(mut self) -> (Vec<u8>, Vec<SentRequest>, u32) {
        self.frame(
            NFNL_MSG_BATCH_END,
            NLM_F_REQUEST,
            NFPROTO_UNSPEC,
            NFNL_SUBSYS_NFTABLES,
            &[],
        );
        (self.bytes, self.requests, self.next_seq)
    }

    /// How many requests the batch holds.
    pub fn len(&self) -> usize {
        self.requests.len()
    }

    /// Whether it holds no request.
    pub fn is_empty(&self) -> bool {
        self.requests.is_empty()
    }

    fn frame(&mut self, message_type: u16, flags: u16, family: u8, res_id: u16, attrs: &[super::attr::Attr]) -> u32 {
        let seq = self.next_seq;
        self.next_seq = seq.wrapping_add(1);
        let body = attrs.buffer_len();
        let mut header = NetlinkHeader::default();
        // Bounded by `push`: a few attributes of at most 64 KiB each.
        header.length = u32::try_from(HEADERS_LEN + body).unwrap_or(u32::MAX);
        header.message_type = message_type;
        header.flags = flags;
        header.sequence_number = seq;
        let start = self.bytes.len();
        self.bytes.resize(start + HEADERS_LEN + body, 0);
        header.emit(&mut self.bytes[start..start + 16]);
        self.bytes[start + 16] = family;
        self.bytes[start + 17] = NFNETLINK_V0;
        self.bytes[start + 18..start + 20].copy_from_slice(&res_id.to_be_bytes());
        attrs.emit(&mut self.bytes[start + HEADERS_LEN..]);
        seq
    }
}
