//! Netlink answers as the kernel writes them, for the targets that check
//! the agent's answer parsers against their own requests (included with
//! `#[path]` by `nftables_replies` and `conntrack_replies`).

use netlink_packet_core::{NLMSG_ERROR, NLM_F_ACK_TLVS, NLM_F_CAPPED};

/// `NLMSGERR_ATTR_MSG`.
pub const ATTR_MSG: u16 = 1;
/// `NLMSGERR_ATTR_OFFS`.
pub const ATTR_OFFS: u16 = 2;

/// One attribute, padded to 4 bytes.
pub fn push_tlv(out: &mut Vec<u8>, kind: u16, value: &[u8]) {
    let len = u16::try_from(4 + value.len()).expect("a short attribute");
    out.extend(len.to_ne_bytes());
    out.extend(kind.to_ne_bytes());
    out.extend(value);
    out.resize(out.len().next_multiple_of(4), 0);
}

/// A netlink header for a message of `len` bytes.
pub fn header(len: usize, message_type: u16, flags: u16, seq: u32) -> Vec<u8> {
    let mut out = Vec::with_capacity(len);
    out.extend(u32::try_from(len).expect("a short message").to_ne_bytes());
    out.extend(message_type.to_ne_bytes());
    out.extend(flags.to_ne_bytes());
    out.extend(seq.to_ne_bytes());
    out.extend(0u32.to_ne_bytes());
    out
}

/// An `NLMSG_ERROR` answering `seq` with `errno` (0: an ACK), echoing
/// `echoed` (a request's header when `capped`, else all of it), with an
/// `NLMSGERR_ATTR_OFFS` when `offs` and the text as `NLMSGERR_ATTR_MSG`.
pub fn error_message(seq: u32, errno: i32, echoed: &[u8], capped: bool, offs: bool, text: Option<&str>) -> Vec<u8> {
    let mut tlvs = Vec::new();
    if offs {
        push_tlv(&mut tlvs, ATTR_OFFS, &20u32.to_ne_bytes());
    }
    if let Some(text) = text {
        let mut value = text.as_bytes().to_vec();
        value.push(0);
        push_tlv(&mut tlvs, ATTR_MSG, &value);
    }
    let mut flags = 0;
    if capped {
        flags |= NLM_F_CAPPED;
    }
    if !tlvs.is_empty() {
        flags |= NLM_F_ACK_TLVS;
    }
    let mut echo = echoed.to_vec();
    echo.resize(echo.len().next_multiple_of(4), 0);
    let mut out = header(16 + 4 + echo.len() + tlvs.len(), NLMSG_ERROR, flags, seq);
    out.extend((-errno).to_ne_bytes());
    out.extend(echo);
    out.extend(tlvs);
    out
}
