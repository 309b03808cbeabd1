//! Golden-byte tests for every IPVS message the agent sends or reads, and a
//! property test that parsing never panics. The byte arrays were written by
//! hand from `include/uapi/linux/ip_vs.h` and the kernel's `ip_vs_ctl.c`,
//! each field labelled, and are compared with what the code emits and parsed
//! back. `ipvs-agent/tests/ipvsadm_captures.rs` checks the same requests
//! against what the real `ipvsadm` sent, and the parser against what the
//! real kernel answered, as captured in the VM.
//!
//! Layout reminders: `nlmsghdr` is len u32, type u16, flags u16, seq u32,
//! pid u32 (16 bytes); `genlmsghdr` is cmd u8, version u8, reserved u16; an
//! attribute is len u16 (header + value, without padding), type u16, value,
//! zero padding to 4 bytes. Numbers are little-endian (x86), ports big-endian.

#![cfg(target_endian = "little")]

mod batch;
mod config_requests;
mod dest_requests;
mod dump_replies;
mod encoding;
mod error_replies;
mod no_panic;
mod service_requests;

use netlink_packet_core::{NetlinkHeader, NetlinkMessage, NetlinkPayload};
use netlink_packet_generic::GenlMessage;

use super::{parse_replies, Batch, IpvsMessage, Reply};

/// The family id the goldens use. The real one is whatever the controller
/// resolves "IPVS" to on the machine (the agent asks it at start).
pub(super) const FAMILY: u16 = 0x25;

/// The netlink port id of the agent's socket in the reply goldens.
pub(super) const PORT_ID: u32 = 4321;

/// Compare bytes, printing both as offset-labelled hex on a mismatch.
pub(super) fn assert_bytes(actual: &[u8], expected: &[u8]) {
    if actual != expected {
        let dump = |bytes: &[u8]| {
            bytes
                .chunks(8)
                .enumerate()
                .map(|(i, row)| format!("{:4}: {:02x?}\n", i * 8, row))
                .collect::<String>()
        };
        panic!(
            "bytes differ\n--- emitted ({})\n{}--- golden ({})\n{}",
            actual.len(),
            dump(actual),
            expected.len(),
            dump(expected)
        );
    }
}

/// Emit `message` as request `seq`, compare with `golden`, and parse
/// `golden` back into the same message, header flags included.
pub(super) fn assert_request(message: IpvsMessage, seq: u32, flags: u16, golden: &[u8]) {
    let mut batch = Batch::new(FAMILY, seq);
    assert_eq!(batch.push(message.clone()), seq);
    assert_bytes(batch.bytes(), golden);

    let parsed = NetlinkMessage::<GenlMessage<IpvsMessage>>::deserialize(golden).expect("golden parses");
    assert_eq!(parsed.header.length as usize, golden.len());
    assert_eq!(parsed.header.message_type, FAMILY);
    assert_eq!(parsed.header.flags, flags);
    assert_eq!(parsed.header.sequence_number, seq);
    match parsed.payload {
        NetlinkPayload::InnerMessage(genl) => {
            assert_eq!(genl.header.version, 1);
            assert_eq!(genl.payload, message);
        }
        other => panic!("expected an IPVS message, got {other:?}"),
    }
}

/// Emit `message` the way the kernel frames a reply (given flags, sequence,
/// the agent's port id) and compare with `golden`.
pub(super) fn assert_reply_emits(message: IpvsMessage, seq: u32, flags: u16, golden: &[u8]) {
    assert_bytes(&serialized(message, seq, flags, PORT_ID), golden);
}

/// `message` framed by netlink-packet-core's generic serializer, with
/// these header fields.
pub(super) fn serialized(message: IpvsMessage, seq: u32, flags: u16, port: u32) -> Vec<u8> {
    let mut header = NetlinkHeader::default();
    header.flags = flags;
    header.sequence_number = seq;
    header.port_number = port;
    let mut genl = GenlMessage::from_payload(message);
    genl.set_resolved_family_id(FAMILY);
    let mut framed = NetlinkMessage::new(header, genl.into());
    framed.finalize();
    let mut bytes = vec![0; framed.buffer_len()];
    framed.serialize(&mut bytes);
    bytes
}

/// Parse a reply buffer, failing the test on any wire error.
pub(super) fn replies(buf: &[u8]) -> Vec<Reply> {
    parse_replies(buf, FAMILY)
        .collect::<Result<Vec<_>, _>>()
        .expect("golden replies parse")
}
