//! Golden bytes written from the uapi layout, and round trips through the
//! parser.

use std::net::SocketAddr;

use netlink_packet_core::Emitable;
use svcnet_core::family::IpFamily;
use svcnet_core::proxy::ConntrackEntry;

use super::constants::*;
use super::message::{tuple_attr, HEADERS_LEN};
use super::*;
use crate::nftables::attr::Attr;

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect::<Vec<_>>().join(" ")
}

fn tuple(src: &str, dst: &str) -> Tuple {
    let src: SocketAddr = src.parse().expect("address");
    let dst: SocketAddr = dst.parse().expect("address");
    Tuple {
        src: src.ip(),
        dst: dst.ip(),
        protocol: IPPROTO_UDP,
        src_port: Some(src.port()),
        dst_port: Some(dst.port()),
    }
}

/// A UDP flow from a pod to the DNS ClusterIP, forwarded by IPVS to
/// 10.244.1.6:5353.
fn dns_entry() -> CtEntry {
    CtEntry {
        family: NFPROTO_IPV4,
        orig: tuple("10.244.2.3:40000", "10.96.0.10:53"),
        reply: tuple("10.244.1.6:5353", "10.244.2.3:40000"),
        id: Some(0x0102_0304),
        zone: None,
        mark: None,
    }
}

/// An `IPCTNL_MSG_CT_NEW` message as a dump sends it: tuples, status,
/// timeout, mark, id and, when set, zone, plus an attribute the parser
/// does not know.
fn dumped(entry: &CtEntry, seq: u32) -> Vec<u8> {
    let mut attrs = vec![
        tuple_attr(CTA_TUPLE_ORIG, &entry.orig),
        tuple_attr(CTA_TUPLE_REPLY, &entry.reply),
        Attr::be32(CTA_STATUS, 0x188),
        Attr::be32(CTA_TIMEOUT, 29),
        Attr::be32(CTA_MARK, entry.mark.unwrap_or(0)),
        Attr::bytes(11, [0, 0, 0, 1]),
    ];
    if let Some(id) = entry.id {
        attrs.push(Attr::be32(CTA_ID, id));
    }
    if let Some(zone) = entry.zone {
        attrs.push(Attr::bytes(CTA_ZONE, zone.to_be_bytes()));
    }
    let request = CtRequest {
        msg_type: IPCTNL_MSG_CT_NEW,
        flags: NLM_F_MULTI,
        family: entry.family,
        attrs,
    };
    frame(&[request], seq).0
}

fn done(seq: u32) -> Vec<u8> {
    let mut bytes = vec![0u8; 20];
    bytes[..4].copy_from_slice(&20u32.to_ne_bytes());
    bytes[4..6].copy_from_slice(&3u16.to_ne_bytes());
    bytes[6..8].copy_from_slice(&NLM_F_MULTI.to_ne_bytes());
    bytes[8..12].copy_from_slice(&seq.to_ne_bytes());
    bytes
}

fn error(seq: u32, errno: i32) -> Vec<u8> {
    let mut bytes = vec![0u8; 36];
    bytes[..4].copy_from_slice(&36u32.to_ne_bytes());
    bytes[4..6].copy_from_slice(&2u16.to_ne_bytes());
    bytes[8..12].copy_from_slice(&seq.to_ne_bytes());
    bytes[16..20].copy_from_slice(&(-errno).to_ne_bytes());
    bytes
}

#[test]
fn the_udp_dump_request_byte_for_byte() {
    let (bytes, seqs) = frame(&[CtRequest::dump_udp(IpFamily::IPv4)], 1);
    assert_eq!(seqs, [1]);
    assert_eq!(
        hex(&bytes),
        [
            // nlmsghdr: length 48, type CTNETLINK << 8 | CT_GET, flags
            // REQUEST | DUMP (0x301), seq 1, port 0.
            "30 00 00 00 01 01 01 03 01 00 00 00 00 00 00 00",
            // nfgenmsg: AF_INET, version 0, res_id 0.
            "02 00 00 00",
            // CTA_TUPLE_ORIG (nested) { CTA_TUPLE_PROTO (nested) {
            // CTA_PROTO_NUM 17, padded } }.
            "10 00 01 80 0c 00 02 80 05 00 01 00 11 00 00 00",
            // CTA_FILTER (25, nested) { CTA_FILTER_ORIG_FLAGS: PROTO_NUM (1 << 3) }.
            "0c 00 19 80 08 00 01 00 08 00 00 00",
        ]
        .join(" ")
    );
    let (v6, _) = frame(&[CtRequest::dump_udp(IpFamily::IPv6)], 1);
    assert_eq!(v6[16], 10, "AF_INET6");
    assert_eq!(v6[20..], bytes[20..]);
}

#[test]
fn the_delete_request_byte_for_byte() {
    let (bytes, seqs) = frame(&[CtRequest::delete(&dns_entry())], 7);
    assert_eq!(seqs, [7]);
    assert_eq!(
        hex(&bytes),
        [
            // nlmsghdr: length 80, type CTNETLINK << 8 | CT_DELETE, flags
            // REQUEST | ACK, seq 7.
            "50 00 00 00 02 01 05 00 07 00 00 00 00 00 00 00",
            "02 00 00 00",
            // CTA_TUPLE_ORIG (nested, 52 bytes)
            "34 00 01 80",
            // CTA_TUPLE_IP (nested) { V4_SRC 10.244.2.3, V4_DST 10.96.0.10 }
            "14 00 01 80 08 00 01 00 0a f4 02 03 08 00 02 00 0a 60 00 0a",
            // CTA_TUPLE_PROTO (nested) { NUM 17, SRC_PORT 40000, DST_PORT 53 }
            "1c 00 02 80 05 00 01 00 11 00 00 00 06 00 02 00 9c 40 00 00 06 00 03 00 00 35 00 00",
            // CTA_ID 0x01020304
            "08 00 0c 00 01 02 03 04",
        ]
        .join(" ")
    );
}

#[test]
fn an_ipv6_delete_with_a_zone() {
    let entry = CtEntry {
        family: NFPROTO_IPV6,
        orig: tuple("[fd00:244::20]:40000", "[fd00:10:96::10]:53"),
        reply: tuple("[fd00:244::6]:5353", "[fd00:244::20]:40000"),
        id: None,
        zone: Some(3),
        mark: None,
    };
    let request = CtRequest::delete(&entry);
    let (bytes, _) = frame(&[request], 1);
    assert_eq!(bytes[16], 10, "AF_INET6");
    // CTA_TUPLE_ORIG { CTA_TUPLE_IP { V6_SRC, V6_DST } ... }
    assert_eq!(hex(&bytes[20..32]), "4c 00 01 80 2c 00 01 80 14 00 03 00");
    assert_eq!(
        &bytes[32..48],
        &entry
            .orig
            .src
            .to_string()
            .parse::<std::net::Ipv6Addr>()
            .expect("v6")
            .octets()
    );
    assert_eq!(hex(&bytes[48..52]), "14 00 04 00");
    // Then CTA_ZONE 3 (big endian, padded), and no CTA_ID.
    assert_eq!(hex(&bytes[bytes.len() - 8..]), "06 00 12 00 00 03 00 00");
    assert_eq!(bytes.len(), HEADERS_LEN + 76 + 8);
}

#[test]
fn dumped_entries_round_trip() {
    let v4 = dns_entry();
    let v6 = CtEntry {
        family: NFPROTO_IPV6,
        orig: tuple("[fd00:244::20]:40000", "[fd00:10:96::10]:53"),
        reply: tuple("[fd00:10:96::10]:53", "[fd00:244::20]:40000"),
        id: Some(9),
        zone: Some(4),
        mark: Some(0x4000),
    };
    let mut bytes = dumped(&v4, 5);
    bytes.extend(dumped(&v6, 5));
    bytes.extend(done(5));
    let replies = parse_replies(&bytes).expect("parses");
    assert_eq!(
        replies,
        [
            CtReply {
                seq: 5,
                body: ReplyBody::Entry(CtEntry { mark: Some(0), ..v4 })
            },
            CtReply {
                seq: 5,
                body: ReplyBody::Entry(v6)
            },
            CtReply {
                seq: 5,
                body: ReplyBody::Done
            },
        ]
    );
    assert_eq!(
        v4.to_core(),
        Some(ConntrackEntry {
            protocol: 17,
            orig_src: "10.244.2.3:40000".parse().expect("address"),
            orig_dst: "10.96.0.10:53".parse().expect("address"),
            reply_src: "10.244.1.6:5353".parse().expect("address"),
        })
    );
    // The delete of a dumped entry carries its original tuple as dumped.
    let delete = CtRequest::delete(&v6);
    let tuple_bytes = |attr: &Attr| {
        let mut out = vec![0u8; attr.buffer_len()];
        attr.emit(&mut out);
        out
    };
    assert_eq!(
        tuple_bytes(&delete.attrs[0]),
        tuple_bytes(&tuple_attr(CTA_TUPLE_ORIG, &v6.orig))
    );
}

#[test]
fn acks_refusals_and_bad_bytes() {
    let mut bytes = error(3, 0);
    bytes.extend(error(4, ENOENT_FOR_TEST));
    let replies = parse_replies(&bytes).expect("parses");
    assert_eq!(replies[0].body, ReplyBody::Ack);
    assert_eq!(
        replies[1].body,
        ReplyBody::Refused {
            errno: 2,
            message: None
        }
    );
    assert!(parse_replies(&[1, 2, 3]).is_err());
    // An entry without its reply tuple is reported, and what follows read.
    let mut entry = dumped(&dns_entry(), 6);
    // Cut the message to its headers and original tuple (52 bytes).
    entry.truncate(HEADERS_LEN + 52);
    entry[..4].copy_from_slice(&((HEADERS_LEN + 52) as u32).to_ne_bytes());
    entry.extend(done(6));
    let replies = parse_replies(&entry).expect("parses");
    assert!(matches!(replies[0].body, ReplyBody::Unreadable(_)), "{replies:?}");
    assert_eq!(replies[1].body, ReplyBody::Done);
}

/// `NLM_F_MULTI`: a part of a dump.
const NLM_F_MULTI: u16 = 2;

const ENOENT_FOR_TEST: i32 = super::error::ENOENT;

#[test]
fn refusals_read_as_sentences() {
    let refusal = CtRefusal {
        operation: CtOperation::Dump,
        errno: super::error::EOPNOTSUPP,
        message: None,
    };
    assert_eq!(
        refusal.to_string(),
        "conntrack: dump: not supported by this kernel (EOPNOTSUPP): load nf_conntrack_netlink (modprobe nf_conntrack_netlink)"
    );
}
