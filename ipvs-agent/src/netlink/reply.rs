//! Reading what the kernel answered: [`parse_replies`] splits a received
//! buffer into netlink messages and yields, per message, its sequence number
//! and what it says (an ACK, a reply message, the end of a dump, or a typed
//! kernel error), so answers to a [`super::batch::Batch`] can be matched to
//! their requests. Malformed bytes give errors, never a panic.

use netlink_packet_core::{
    NetlinkBuffer, NetlinkMessage, NetlinkPayload, NLMSG_ALIGNTO, NLMSG_DONE, NLMSG_ERROR, NLMSG_NOOP, NLMSG_OVERRUN,
    NLM_F_CAPPED,
};
use netlink_packet_generic::GenlMessage;

use super::cmd::IpvsCmd;
use super::error::{IpvsError, WireError};
use super::message::IpvsMessage;

/// Length of `struct nlmsghdr`, after which an echoed request's command byte
/// (`genlmsghdr.cmd`) sits.
const NLMSG_HDRLEN: usize = 16;

/// What one answer says.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ReplyBody {
    /// The request succeeded (`NLMSG_ERROR` with code 0). Final.
    Ack,
    /// A reply message: one entry of a dump, or the answer to GET_INFO,
    /// GET_CONFIG or a single GET_SERVICE (which an ACK then follows).
    Message(IpvsMessage),
    /// The end of a dump (`NLMSG_DONE`). Final.
    Done,
}

/// One answer from the kernel.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Reply {
    /// The sequence number of the request it answers.
    pub seq: u32,
    /// What it says, or the kernel's refusal.
    pub body: Result<ReplyBody, IpvsError>,
}

impl Reply {
    /// Whether this is the last answer its request gets (an ACK, the end of a
    /// dump, or an error).
    pub fn is_final(&self) -> bool {
        !matches!(self.body, Ok(ReplyBody::Message(_)))
    }
}

/// Iterator over the answers in one received buffer; see [`parse_replies`].
#[derive(Debug, Clone)]
pub struct Replies<'a> {
    buf: &'a [u8],
    offset: usize,
    family_id: u16,
}

/// Split `buf` (what one `recv` returned) into answers. `family_id` is the
/// resolved IPVS family id; a message of any other family is an error.
///
/// A message whose header is sound but whose body is not yields an error and
/// parsing goes on with the next; a broken header ends the iteration, since
/// the next message cannot be found.
pub fn parse_replies(buf: &[u8], family_id: u16) -> Replies<'_> {
    Replies {
        buf,
        offset: 0,
        family_id,
    }
}

impl Iterator for Replies<'_> {
    type Item = Result<Reply, WireError>;

    fn next(&mut self) -> Option<Self::Item> {
        loop {
            let rest = self.buf.get(self.offset..).filter(|rest| !rest.is_empty())?;
            let header = match NetlinkBuffer::new_checked(rest) {
                Ok(header) => header,
                Err(error) => {
                    self.offset = self.buf.len();
                    return Some(Err(error.into()));
                }
            };
            // `new_checked` proved 16 <= length <= rest.len().
            let length = header.length() as usize;
            let aligned = length.saturating_add(usize::from(NLMSG_ALIGNTO) - 1) & !(usize::from(NLMSG_ALIGNTO) - 1);
            self.offset = self.offset.saturating_add(aligned);
            let (seq, message_type) = (header.sequence_number(), header.message_type());
            if message_type == NLMSG_NOOP {
                continue;
            }
            return Some(self.answer(&rest[..length], seq, message_type));
        }
    }
}

impl Replies<'_> {
    /// Interpret one framed message.
    fn answer(&self, bytes: &[u8], seq: u32, message_type: u16) -> Result<Reply, WireError> {
        let known = [NLMSG_ERROR, NLMSG_DONE, NLMSG_OVERRUN, self.family_id];
        if !known.contains(&message_type) {
            return Err(WireError::UnexpectedMessageType {
                seq,
                message_type,
                family_id: self.family_id,
            });
        }
        let message = NetlinkMessage::<GenlMessage<IpvsMessage>>::deserialize(bytes)
            .map_err(|error| WireError::Malformed(format!("sequence {seq}: {error}")))?;
        let body = match message.payload {
            NetlinkPayload::Error(error) => match error.code {
                None => Ok(ReplyBody::Ack),
                Some(code) => Err(IpvsError::from_errno(
                    code.get(),
                    echoed_cmd(message.header.flags, &error.header),
                )),
            },
            NetlinkPayload::Done(done) if done.code == 0 => Ok(ReplyBody::Done),
            NetlinkPayload::Done(done) => Err(IpvsError::from_errno(done.code, None)),
            NetlinkPayload::InnerMessage(genl) => Ok(ReplyBody::Message(genl.payload)),
            NetlinkPayload::Overrun(_) => return Err(WireError::Overrun { seq }),
            // NOOP was skipped; the payload enum is non-exhaustive.
            _ => {
                return Err(WireError::Malformed(format!(
                    "sequence {seq}: unexpected message type {message_type}"
                )))
            }
        };
        Ok(Reply { seq, body })
    }
}

/// The command of the request an `NLMSG_ERROR` echoes, when the kernel echoed
/// more than its netlink header (it does unless the socket set
/// `NETLINK_CAP_ACK`, which sets `NLM_F_CAPPED`).
fn echoed_cmd(flags: u16, echoed: &[u8]) -> Option<IpvsCmd> {
    if flags & NLM_F_CAPPED != 0 {
        return None;
    }
    echoed.get(NLMSG_HDRLEN).and_then(|&cmd| IpvsCmd::try_from(cmd).ok())
}
