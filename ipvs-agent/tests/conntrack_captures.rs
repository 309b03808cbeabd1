//! The agent's ctnetlink requests against what `conntrack -D` (conntrack-tools
//! 1.4.7) sent for the same entries, captured with strace by
//! `scripts/conntrack-capture.sh` (files in `tests/conntrack-captures/`), and
//! the kernel's answers in those captures read by the agent's parser.
//!
//! `conntrack -D -p udp --orig-dst D --reply-src D` dumps the family's whole
//! table (no kernel filter; it filters in user space), then deletes each match
//! with its original tuple, reply tuple, status, timeout and mark. The kernel
//! finds the entry by the original tuple (plus zone and id, when given) and
//! reads nothing else of a delete. The agent sends the same header and the
//! same original tuple, byte for byte, plus the entry's id (so that a newer
//! entry with the same tuple is left alone) and nothing the kernel ignores;
//! its dump is conntrack's plus a filter to UDP (without it, conntrack's
//! exactly: the fallback for a kernel that refuses the filter).

use std::path::Path;

use ipvs_agent::conntrack::constants::*;
use ipvs_agent::conntrack::{frame, parse_replies, CtEntry, CtRequest, ReplyBody};
use netlink_packet_core::NlasIterator;
use svcnet_core::family::IpFamily;

struct Capture {
    sent: Vec<Vec<u8>>,
    received: Vec<Vec<u8>>,
}

fn load(name: &str) -> Capture {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/conntrack-captures")
        .join(name);
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let mut capture = Capture {
        sent: Vec::new(),
        received: Vec::new(),
    };
    for line in text.lines() {
        let hex = |hex: &str| -> Vec<u8> {
            (0..hex.len())
                .step_by(2)
                .map(|i| u8::from_str_radix(&hex[i..i + 2], 16).expect("hex"))
                .collect()
        };
        if let Some(sent) = line.strip_prefix("> ") {
            capture.sent.push(hex(sent));
        } else if let Some(received) = line.strip_prefix("< ") {
            capture.received.push(hex(received));
        }
    }
    capture
}

/// The attributes of one message (after nlmsghdr and nfgenmsg): kind
/// (without NLA_F_NESTED) and the attribute's bytes, header included.
fn attrs(message: &[u8]) -> Vec<(u16, Vec<u8>)> {
    let len = u32::from_ne_bytes(message[..4].try_into().expect("length")) as usize;
    NlasIterator::new(&message[20..len])
        .map(|nla| {
            let nla = nla.expect("attribute");
            let total = (nla.length() as usize).next_multiple_of(4);
            (nla.kind(), nla.into_inner()[..total].to_vec())
        })
        .collect()
}

fn header(message: &[u8]) -> (u16, u16, u32, u8) {
    (
        u16::from_ne_bytes(message[4..6].try_into().expect("type")),
        u16::from_ne_bytes(message[6..8].try_into().expect("flags")),
        u32::from_ne_bytes(message[8..12].try_into().expect("seq")),
        message[16],
    )
}

fn check(name: &str, family: IpFamily) {
    let capture = load(name);
    assert_eq!(capture.sent.len(), 2, "{name}: a dump, then one delete");

    // The dump: the same request, plus the filter to UDP.
    let (their_type, their_flags, dump_seq, their_family) = header(&capture.sent[0]);
    let (ours, _) = frame(&[CtRequest::dump_udp(family)], dump_seq);
    assert_eq!(
        header(&ours),
        (their_type, their_flags, dump_seq, their_family),
        "{name}: dump header"
    );
    assert!(attrs(&capture.sent[0]).is_empty());
    // The fallback for a kernel that refuses the filter is conntrack's
    // own dump, byte for byte.
    let (unfiltered, _) = frame(&[CtRequest::dump_family(family)], dump_seq);
    assert_eq!(unfiltered, capture.sent[0], "{name}: the unfiltered dump");
    let kinds: Vec<u16> = attrs(&ours).iter().map(|(k, _)| *k).collect();
    assert_eq!(kinds, [CTA_TUPLE_ORIG, CTA_FILTER]);

    // The kernel's dump answer, read by the agent: the entry conntrack
    // deleted is the one whose reply source is its original destination.
    let mut entries: Vec<CtEntry> = Vec::new();
    for buf in &capture.received {
        for reply in parse_replies(buf).expect("answers parse") {
            if let (true, ReplyBody::Entry(entry)) = (reply.seq == dump_seq, reply.body) {
                entries.push(entry);
            }
        }
    }
    assert_eq!(entries.len(), 2, "{name}: both UDP entries dumped");
    let deleted = entries
        .iter()
        .find(|e| e.reply.src == e.orig.dst && e.orig.dst.to_string().ends_with('2'))
        .expect("the black-holed entry");
    assert!(deleted.id.is_some() && deleted.zone.is_none());

    // The delete: same header and same original tuple, byte for byte.
    let theirs = &capture.sent[1];
    let (msg_type, flags, seq, family_byte) = header(theirs);
    let (ours, _) = frame(&[CtRequest::delete(deleted)], seq);
    assert_eq!(
        header(&ours),
        (msg_type, flags, seq, family_byte),
        "{name}: delete header"
    );
    let their_attrs = attrs(theirs);
    let our_attrs = attrs(&ours);
    assert_eq!(our_attrs[0], their_attrs[0], "{name}: CTA_TUPLE_ORIG byte for byte");
    let rest: Vec<u16> = their_attrs[1..].iter().map(|(k, _)| *k).collect();
    assert_eq!(
        rest,
        [CTA_TUPLE_REPLY, CTA_STATUS, CTA_TIMEOUT, CTA_MARK],
        "{name}: what the kernel ignores"
    );
    let ours_rest: Vec<u16> = our_attrs[1..].iter().map(|(k, _)| *k).collect();
    assert_eq!(ours_rest, [CTA_ID]);

    // The kernel's answer to conntrack's delete: an ACK for its sequence.
    let acked = capture
        .received
        .iter()
        .flat_map(|buf| parse_replies(buf).expect("answers parse"))
        .any(|reply| reply.seq == seq && reply.body == ReplyBody::Ack);
    assert!(acked, "{name}: the delete was acknowledged");
}

#[test]
fn ipv4_delete_matches_conntrack_tools() {
    check("delete-udp4.nl", IpFamily::IPv4);
}

#[test]
fn ipv6_delete_matches_conntrack_tools() {
    check("delete-udp6.nl", IpFamily::IPv6);
}
