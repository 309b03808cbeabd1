//! Resolving the IPVS family id through the generic-netlink controller
//! (`CTRL_CMD_GETFAMILY` for the name "IPVS"), as pure request building and
//! reply parsing; [`super::genl`] does the I/O. The controller answers
//! ENOENT when no family of that name is registered, which for IPVS means
//! the `ip_vs` module is not loaded.

use netlink_packet_core::{
    parse_u16, DecodeError, NetlinkBuffer, NetlinkMessage, NetlinkPayload, NlasIterator, NLMSG_ERROR, NLM_F_REQUEST,
};
use netlink_packet_generic::ctrl::nlas::GenlCtrlAttrs;
use netlink_packet_generic::ctrl::{GenlCtrl, GenlCtrlCmd};
use netlink_packet_generic::GenlMessage;

use super::error::GenlError;
use crate::netlink::constants::{ENOENT, IPVS_GENL_NAME};

/// The generic-netlink controller's fixed family id (`GENL_ID_CTRL`).
const GENL_ID_CTRL: u16 = 16;
/// Length of `struct genlmsghdr`.
const GENL_HDRLEN: usize = 4;
/// `CTRL_ATTR_FAMILY_ID`: the family id (u16).
const CTRL_ATTR_FAMILY_ID: u16 = 1;

/// The serialised `CTRL_CMD_GETFAMILY` request for the IPVS family.
pub fn request(seq: u32) -> Vec<u8> {
    let mut genl = GenlMessage::from_payload(GenlCtrl {
        cmd: GenlCtrlCmd::GetFamily,
        nlas: vec![GenlCtrlAttrs::FamilyName(IPVS_GENL_NAME.to_owned())],
    });
    genl.finalize();
    let mut message = NetlinkMessage::from(genl);
    message.header.flags = NLM_F_REQUEST;
    message.header.sequence_number = seq;
    message.finalize();
    let mut bytes = vec![0; message.buffer_len()];
    message.serialize(&mut bytes);
    bytes
}

/// Read one received buffer: `Ok(Some(id))` when it holds the answer to
/// request `seq`, `Ok(None)` when it holds nothing for it, and an error when
/// the controller refused (ENOENT: the family is not registered).
pub fn parse_reply(buf: &[u8], seq: u32) -> Result<Option<u16>, GenlError> {
    let unreadable = |error: DecodeError| GenlError::Controller(format!("unreadable reply: {error}"));
    let mut offset = 0;
    while offset < buf.len() {
        let rest = &buf[offset..];
        let header = NetlinkBuffer::new_checked(rest).map_err(unreadable)?;
        // `new_checked` proved 16 <= length <= rest.len().
        let length = header.length() as usize;
        offset += (length + 3) & !3;
        if header.sequence_number() != seq {
            continue;
        }
        if header.message_type() == GENL_ID_CTRL {
            // Only the top-level attributes are read: netlink-packet-generic's
            // full parse of the nested policy attributes panics on some
            // malformed lengths (found by `cargo fuzz`).
            let attrs = header.payload().get(GENL_HDRLEN..).unwrap_or_default();
            for nla in NlasIterator::new(attrs) {
                let nla = nla.map_err(unreadable)?;
                if nla.kind() == CTRL_ATTR_FAMILY_ID {
                    return parse_u16(nla.value()).map(Some).map_err(unreadable);
                }
            }
            return Err(GenlError::Controller("the reply carries no family id".into()));
        }
        if header.message_type() != NLMSG_ERROR {
            continue;
        }
        let message = NetlinkMessage::<GenlMessage<GenlCtrl>>::deserialize(&rest[..length]).map_err(unreadable)?;
        if let NetlinkPayload::Error(error) = message.payload {
            match error.code {
                Some(code) if code.get().unsigned_abs() == ENOENT.unsigned_abs() => {
                    return Err(GenlError::FamilyNotRegistered)
                }
                Some(code) => {
                    return Err(GenlError::Controller(format!(
                        "CTRL_CMD_GETFAMILY {IPVS_GENL_NAME} refused: {}",
                        std::io::Error::from_raw_os_error(code.get().saturating_abs())
                    )))
                }
                None => {}
            }
        }
    }
    Ok(None)
}

#[cfg(test)]
mod tests {
    use netlink_packet_core::{ErrorMessage, NetlinkHeader};

    use super::*;

    fn serialize(message: &mut NetlinkMessage<GenlMessage<GenlCtrl>>) -> Vec<u8> {
        message.finalize();
        let mut bytes = vec![0; message.buffer_len()];
        message.serialize(&mut bytes);
        bytes
    }

    #[test]
    fn the_request_names_the_ipvs_family() {
        let bytes = request(9);
        let message = NetlinkMessage::<GenlMessage<GenlCtrl>>::deserialize(&bytes).unwrap();
        assert_eq!(message.header.sequence_number, 9);
        assert_eq!(message.header.message_type, 16, "GENL_ID_CTRL");
        let NetlinkPayload::InnerMessage(genl) = message.payload else {
            panic!("not a genl message")
        };
        assert_eq!(genl.payload.cmd, GenlCtrlCmd::GetFamily);
        assert_eq!(genl.payload.nlas, vec![GenlCtrlAttrs::FamilyName("IPVS".into())]);
    }

    #[test]
    fn the_reply_gives_the_id_and_enoent_says_load_ip_vs() {
        let mut genl = GenlMessage::from_payload(GenlCtrl {
            cmd: GenlCtrlCmd::NewFamily,
            nlas: vec![GenlCtrlAttrs::FamilyName("IPVS".into()), GenlCtrlAttrs::FamilyId(0x1c)],
        });
        genl.finalize();
        let mut reply = NetlinkMessage::from(genl);
        reply.header.sequence_number = 3;
        let bytes = serialize(&mut reply);
        assert_eq!(parse_reply(&bytes, 3).unwrap(), Some(0x1c));
        assert_eq!(parse_reply(&bytes, 4).unwrap(), None, "another request's answer");

        let mut error = ErrorMessage::default();
        error.code = std::num::NonZeroI32::new(-ENOENT);
        let mut header = NetlinkHeader::default();
        header.sequence_number = 3;
        let mut refusal = NetlinkMessage::new(header, NetlinkPayload::<GenlMessage<GenlCtrl>>::Error(error));
        let bytes = serialize(&mut refusal);
        let message = parse_reply(&bytes, 3).unwrap_err().to_string();
        assert_eq!(
            message,
            "the IPVS family is not registered: load the ip_vs kernel module (modprobe ip_vs)"
        );
    }

    /// Found by `cargo fuzz` (fuzz/fuzz_targets/netlink_replies.rs): a
    /// controller reply whose nested policy attribute has a length below
    /// 4 made netlink-packet-generic's parser panic.
    #[test]
    fn a_malformed_nested_policy_attribute_is_not_a_panic() {
        // nlmsghdr (type 16, seq 1), genlmsghdr, FAMILY_ID 0x20, then
        // CTRL_ATTR_POLICY (8) nesting an attribute of length 2.
        let mut bytes = vec![0u8; 16];
        bytes[4..6].copy_from_slice(&16u16.to_ne_bytes());
        bytes[8..12].copy_from_slice(&1u32.to_ne_bytes());
        bytes.extend([1, 2, 0, 0]);
        bytes.extend([6, 0, 1, 0, 0x20, 0, 0, 0]);
        bytes.extend([12, 0, 8 | 0x80, 0x80, 8, 0, 1, 0x80, 2, 0, 1, 0]);
        let length = bytes.len() as u32;
        bytes[0..4].copy_from_slice(&length.to_ne_bytes());
        assert_eq!(parse_reply(&bytes, 1).unwrap(), Some(0x20));
        let mut flipped = bytes.clone();
        flipped[20..22].copy_from_slice(&3u16.to_ne_bytes());
        assert!(
            parse_reply(&flipped, 1).is_err(),
            "a top-level attribute of length 3 is an error"
        );
    }

    /// The input `cargo fuzz` found, as it was.
    #[test]
    fn the_fuzzed_controller_reply_is_not_a_panic() {
        let hex = [
            "6401000020000200e1d3046b0e0241ec0501000050010800070000000000080008000000000008000900000000000600",
            "0b00020000005c000a000800010000000000080002000000000008000300000000000c00040000000000000000000c00",
            "050000000000000000000800038b8b8b006800000020000500dfd3046b3b0100b8010100005400018006000100020000",
            "000600020006000000140003000a60000a00000000000000000000000008000700000000000800080000000000080009",
            "000000000008000a00000000007c000c000c00010000000000000000000c00060004000050000007000600727200000c",
            "00070000000000ffffff00020000000000000000000c00030000000000000000000c00040000000000000000000c0005",
            "0000000000000000000c00060000000000000000000c00070000000000000000000c000800000000ff08000800000000",
            "00080000000000000c00090000000000000000000c000a00000000000000090000ff00ffffff",
        ]
        .concat();
        let bytes: Vec<u8> = (0..hex.len())
            .step_by(2)
            .map(|i| u8::from_str_radix(&hex[i..i + 2], 16).unwrap())
            .collect();
        let seq = u32::from_ne_bytes([bytes[8], bytes[9], bytes[10], bytes[11]]);
        let _ = parse_reply(&bytes, seq);
    }

    #[test]
    fn garbage_is_an_error_not_a_panic() {
        assert!(parse_reply(&[1, 2, 3], 1).is_err());
        assert!(parse_reply(&[0xff; 40], 1).is_err());
        assert_eq!(parse_reply(&[], 1).unwrap(), None);
    }
}
