//! Reading the kernel's answers to a batch: [`parse_answers`] yields, per
//! `NLMSG_ERROR`, the sequence number and the errno (0 for an ACK) with the
//! kernel's extended-ACK message; [`outcome`] matches them to the
//! requests sent, and to the batch as a whole. Malformed bytes give
//! errors, never a panic.

use netlink_packet_core::{NetlinkBuffer, NLMSG_ALIGNTO, NLMSG_ERROR, NLM_F_ACK_TLVS, NLM_F_CAPPED};

use super::batch::SentRequest;
use super::error::{NftRefusal, NftWireError};
use super::message::Operation;

/// `NLMSGERR_ATTR_MSG`: the extended ACK's text.
const NLMSGERR_ATTR_MSG: u16 = 1;

/// One answer: an ACK (`errno` 0) or a refusal.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Answer {
    /// The sequence number of the request it answers.
    pub seq: u32,
    /// The positive errno; 0 for an ACK.
    pub errno: i32,
    /// The kernel's explanation, when it gave one.
    pub message: Option<String>,
}

/// The `NLMSG_ERROR` answers in `buf` (what one `recv` returned); other
/// messages (there are none for a batch of new and delete requests) are
/// skipped.
pub fn parse_answers(buf: &[u8]) -> Result<Vec<Answer>, NftWireError> {
    let mut answers = Vec::new();
    let mut offset = 0;
    while let Some(rest) = buf.get(offset..).filter(|rest| !rest.is_empty()) {
        let header = NetlinkBuffer::new_checked(rest).map_err(|e| NftWireError::Malformed(e.to_string()))?;
        // `new_checked` proved 16 <= length <= rest.len().
        let length = header.length() as usize;
        let align = usize::from(NLMSG_ALIGNTO);
        offset += (length + align - 1) & !(align - 1);
        if header.message_type() != NLMSG_ERROR {
            continue;
        }
        let seq = header.sequence_number();
        let payload = &rest[16..length];
        let code = payload
            .get(..4)
            .and_then(|b| b.try_into().ok())
            .map(i32::from_ne_bytes)
            .ok_or_else(|| NftWireError::Malformed(format!("sequence {seq}: NLMSG_ERROR without an errno")))?;
        let message = extended_ack(header.flags(), &payload[4..]);
        answers.push(Answer {
            seq,
            errno: code.checked_abs().unwrap_or(i32::MAX),
            message,
        });
    }
    Ok(answers)
}

/// The text of an extended ACK: its attributes follow the echoed request
/// (only its header when the ACK is capped).
pub(crate) fn extended_ack(flags: u16, echoed: &[u8]) -> Option<String> {
    if flags & NLM_F_ACK_TLVS == 0 {
        return None;
    }
    let echoed_len = if flags & NLM_F_CAPPED != 0 {
        16
    } else {
        NetlinkBuffer::new_checked(echoed).ok()?.length() as usize
    };
    let tlvs = echoed.get(echoed_len.next_multiple_of(4)..)?;
    netlink_packet_core::NlasIterator::new(tlvs)
        .filter_map(Result::ok)
        .find(|nla| nla.kind() == NLMSGERR_ATTR_MSG)
        .map(|nla| String::from_utf8_lossy(nla.value()).trim_end_matches('\0').to_string())
}

/// What became of a batch whose begin message had sequence number
/// `begin`: `Ok` when every request was acknowledged, else the first
/// refusal in the order they were sent. The kernel answers the begin
/// message only to refuse the whole batch before reading any request
/// (`EPERM` without `CAP_NET_ADMIN`, `EOPNOTSUPP` without the nf_tables
/// subsystem: Linux's `nfnetlink_rcv` and `nfnetlink_rcv_batch`); that is
/// a refusal of [`Operation::Batch`]. `None` in the error when a request
/// got no answer at all.
pub fn outcome(begin: u32, requests: &[SentRequest], answers: &[Answer]) -> Result<(), Option<NftRefusal>> {
    if let Some(answer) = answers.iter().find(|a| a.seq == begin && a.errno != 0) {
        return Err(Some(NftRefusal {
            operation: Operation::Batch,
            errno: answer.errno,
            message: answer.message.clone(),
        }));
    }
    let mut unanswered = false;
    for request in requests {
        match answers.iter().find(|a| a.seq == request.seq) {
            Some(answer) if answer.errno != 0 => {
                return Err(Some(NftRefusal {
                    operation: request.operation.clone(),
                    errno: answer.errno,
                    message: answer.message.clone(),
                }))
            }
            Some(_) => {}
            None => unanswered = true,
        }
    }
    if unanswered {
        Err(None)
    } else {
        Ok(())
    }
}
