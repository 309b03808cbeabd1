//! Reading what the kernel answers on a ctnetlink socket: [`parse_replies`]
//! turns the bytes of one `recv` into [`CtReply`]s, each with the sequence
//! number of the request it answers: a dumped entry, the end of a dump, an
//! ACK, or a refusal (its errno and the kernel's extended-ACK text). An
//! entry that cannot be read is reported as such and the rest of the
//! buffer is still read; bytes that are not netlink messages end it with an
//! error. Never a panic.

use netlink_packet_core::{NetlinkBuffer, NLMSG_ALIGNTO, NLMSG_DONE, NLMSG_ERROR};

use super::constants::{IPCTNL_MSG_CT_NEW, NFNL_SUBSYS_CTNETLINK};
use super::entry::CtEntry;
use super::error::CtWireError;
use crate::nftables::reply::extended_ack;

/// What one message of an answer says.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ReplyBody {
    /// One entry of a dump.
    Entry(CtEntry),
    /// An entry of a dump that could not be read.
    Unreadable(CtWireError),
    /// The end of a dump.
    Done,
    /// The request succeeded.
    Ack,
    /// The request failed: the positive errno and the kernel's text.
    Refused {
        /// The positive errno.
        errno: i32,
        /// The extended-ACK message, if any.
        message: Option<String>,
    },
}

/// One message of an answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CtReply {
    /// The sequence number of the request it answers.
    pub seq: u32,
    /// What it says.
    pub body: ReplyBody,
}

/// The messages in `buf` (what one `recv` returned).
pub fn parse_replies(buf: &[u8]) -> Result<Vec<CtReply>, CtWireError> {
    let mut replies = Vec::new();
    let mut offset = 0;
    while let Some(rest) = buf.get(offset..).filter(|rest| !rest.is_empty()) {
        let header = NetlinkBuffer::new_checked(rest).map_err(|e| CtWireError::Malformed(e.to_string()))?;
        // `new_checked` proved 16 <= length <= rest.len().
        let length = header.length() as usize;
        let align = usize::from(NLMSG_ALIGNTO);
        offset += (length + align - 1) & !(align - 1);
        let seq = header.sequence_number();
        let payload = &rest[16..length];
        let body = match header.message_type() {
            NLMSG_ERROR | NLMSG_DONE => {
                let code = payload.get(..4).and_then(|b| b.try_into().ok()).map(i32::from_ne_bytes);
                let is_error = header.message_type() == NLMSG_ERROR;
                match code {
                    Some(0) if is_error => ReplyBody::Ack,
                    Some(0) | None if !is_error => ReplyBody::Done,
                    Some(code) => ReplyBody::Refused {
                        errno: code.checked_abs().unwrap_or(i32::MAX),
                        message: if is_error {
                            extended_ack(header.flags(), &payload[4..])
                        } else {
                            None
                        },
                    },
                    None => {
                        return Err(CtWireError::Malformed(format!(
                            "sequence {seq}: NLMSG_ERROR without an errno"
                        )))
                    }
                }
            }
            t if t == (NFNL_SUBSYS_CTNETLINK << 8) | u16::from(IPCTNL_MSG_CT_NEW) => match payload.get(..4) {
                Some(nfgenmsg) => match CtEntry::parse(nfgenmsg[0], &payload[4..]) {
                    Ok(entry) => ReplyBody::Entry(entry),
                    Err(error) => ReplyBody::Unreadable(error),
                },
                None => ReplyBody::Unreadable(CtWireError::Malformed("a conntrack entry without nfgenmsg".into())),
            },
            _ => continue,
        };
        replies.push(CtReply { seq, body });
    }
    Ok(replies)
}
