//! Resolving the IPVS family id through the generic-netlink controller
//! (`CTRL_CMD_GETFAMILY` for the name "IPVS"), as pure request building and
//! reply parsing; [`super::genl`] does the I/O. The controller answers
//! ENOENT when no family of that name is registered, which for IPVS means
//! the `ip_vs` module is not loaded.

use netlink_packet_core::{NetlinkMessage, NetlinkPayload, NLM_F_REQUEST};
use netlink_packet_generic::ctrl::nlas::GenlCtrlAttrs;
use netlink_packet_generic::ctrl::{GenlCtrl, GenlCtrlCmd};
use netlink_packet_generic::GenlMessage;

use super::error::GenlError;
use crate::netlink::constants::{ENOENT, IPVS_GENL_NAME};

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
    let mut offset = 0;
    while offset < buf.len() {
        let rest = &buf[offset..];
        let message = NetlinkMessage::<GenlMessage<GenlCtrl>>::deserialize(rest)
            .map_err(|error| GenlError::Controller(format!("unreadable reply: {error}")))?;
        let length = message.header.length as usize;
        if length == 0 {
            break;
        }
        offset += (length + 3) & !3;
        if message.header.sequence_number != seq {
            continue;
        }
        match message.payload {
            NetlinkPayload::InnerMessage(genl) => {
                let id = genl.payload.nlas.iter().find_map(|attr| match attr {
                    GenlCtrlAttrs::FamilyId(id) => Some(*id),
                    _ => None,
                });
                return id
                    .map(Some)
                    .ok_or_else(|| GenlError::Controller("the reply carries no family id".into()));
            }
            NetlinkPayload::Error(error) => match error.code {
                Some(code) if code.get().abs() == ENOENT => return Err(GenlError::FamilyNotRegistered),
                Some(code) => {
                    return Err(GenlError::Controller(format!(
                        "CTRL_CMD_GETFAMILY {IPVS_GENL_NAME} refused: {}",
                        std::io::Error::from_raw_os_error(code.get().abs())
                    )))
                }
                None => {}
            },
            _ => {}
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

    #[test]
    fn garbage_is_an_error_not_a_panic() {
        assert!(parse_reply(&[1, 2, 3], 1).is_err());
        assert!(parse_reply(&[0xff; 40], 1).is_err());
        assert_eq!(parse_reply(&[], 1).unwrap(), None);
    }
}
