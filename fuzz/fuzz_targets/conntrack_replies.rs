//! ctnetlink (conntrack) answers, as the kernel sends them to the UDP
//! cleanup: any bytes given to the agent's reply parser
//! (`conntrack::parse_replies`), and to the entry parser
//! (`CtEntry::parse`) as an entry's attributes for IPv4 and for IPv6, and
//! after the first message's headers for the family its `nfgenmsg` names.
//! Every entry read then goes where the agent sends it: `to_core` (what the
//! core's stale-entry decision reads) and the delete request the cleanup
//! sends for it (`CtRequest::delete`), framed as one `sendmsg` carries a
//! dump's deletes (`frame`) and answered as the kernel would.
//!
//! Asserts: nothing panics; parsing ends with at most one reply per 16
//! bytes; two buffers that parse, parsed as one, give the replies of both
//! in order; an ACK, a refusal (with its extended-ACK text) or the end of
//! a dump, emitted as the kernel writes it, parses back to itself;
//! `to_core` is `Some` exactly when the tuples have the three ports it
//! reads, and carries them; a delete request has the right header, flags,
//! sequence number and family, names the entry by its original tuple
//! (never without one: that would be a flush), then its zone and id when
//! it has them, and nothing else; the deletes of a dump are framed back to
//! back, their sequence numbers consecutive (0 skipped), and the kernel's
//! answers read back as an ACK or a refusal for each; an entry's delete
//! request, its attributes relabelled as a dump's entry (the reply tuple
//! taken from the delete of the reversed entry, the mark added), parses
//! back to the entry (a tuple whose two addresses are of different
//! families comes back in IPv6, IPv4-mapped, as the request sends it),
//! a second time to the same entry (fixed point), and gives the same
//! delete request.
#![no_main]

use std::net::SocketAddr;

use ipvs_agent::conntrack::constants::*;
use ipvs_agent::conntrack::error::ENOENT;
use ipvs_agent::conntrack::{frame, parse_replies, CtEntry, CtReply, CtRequest, ReplyBody, Tuple};
use libfuzzer_sys::fuzz_target;
use netlink_packet_core::{
    NetlinkBuffer, NlaBuffer, NLA_F_NESTED, NLMSG_DONE, NLM_F_ACK, NLM_F_MULTIPART, NLM_F_REQUEST,
};

#[path = "kernel_answers.rs"]
mod kernel_answers;
use kernel_answers::{error_message, header, push_tlv};

/// The end of a dump.
fn done_message(seq: u32) -> Vec<u8> {
    let mut out = header(20, NLMSG_DONE, NLM_F_MULTIPART, seq);
    out.extend(0i32.to_ne_bytes());
    out
}

/// One attribute: kind, nested flag, value, and its bytes with padding.
struct Attribute<'a> {
    kind: u16,
    nested: bool,
    value: &'a [u8],
    raw: &'a [u8],
}

/// The attributes of `region`, which must tile it.
fn attrs(region: &[u8]) -> Vec<Attribute<'_>> {
    let mut out = Vec::new();
    let mut offset = 0;
    while offset < region.len() {
        let nla = NlaBuffer::new_checked(&region[offset..]).expect("a built attribute parses");
        let len = usize::from(nla.length());
        let padded = len.next_multiple_of(4);
        assert!(
            offset + padded <= region.len(),
            "an attribute's padding runs past its parent"
        );
        out.push(Attribute {
            kind: nla.kind(),
            nested: nla.nested_flag(),
            value: &region[offset + 4..offset + len],
            raw: &region[offset..offset + padded],
        });
        offset += padded;
    }
    out
}

fn delete_bytes(entry: &CtEntry, seq: u32) -> Vec<u8> {
    let (bytes, seqs) = frame(&[CtRequest::delete(entry)], seq);
    assert_eq!(seqs, [seq]);
    bytes
}

/// A delete request for `entry`, as sent.
fn check_delete(entry: &CtEntry, bytes: &[u8], seq: u32) {
    let header = NetlinkBuffer::new_checked(bytes).expect("a built request parses");
    assert_eq!(header.length() as usize, bytes.len());
    assert_eq!(bytes.len() % 4, 0);
    assert_eq!(
        header.message_type(),
        (NFNL_SUBSYS_CTNETLINK << 8) | u16::from(IPCTNL_MSG_CT_DELETE)
    );
    assert_eq!(header.flags(), NLM_F_REQUEST | NLM_F_ACK);
    assert_eq!(header.sequence_number(), seq);
    assert_eq!(&bytes[16..20], &[entry.family, NFNETLINK_V0, 0, 0]);
    let top = attrs(&bytes[20..]);
    let kinds: Vec<u16> = top.iter().map(|a| a.kind).collect();
    let mut want = vec![CTA_TUPLE_ORIG];
    want.extend(entry.zone.map(|_| CTA_ZONE));
    want.extend(entry.id.map(|_| CTA_ID));
    assert_eq!(
        kinds, want,
        "a delete names the original tuple, zone and id, nothing else"
    );
    assert!(top[0].nested);
    let tuple = attrs(top[0].value);
    assert_eq!(
        tuple.iter().map(|a| (a.kind, a.nested)).collect::<Vec<_>>(),
        [(CTA_TUPLE_IP, true), (CTA_TUPLE_PROTO, true)]
    );
    let ip = attrs(tuple[0].value);
    let ip: Vec<(u16, usize)> = ip.iter().map(|a| (a.kind, a.value.len())).collect();
    assert!(
        ip == [(CTA_IP_V4_SRC, 4), (CTA_IP_V4_DST, 4)] || ip == [(CTA_IP_V6_SRC, 16), (CTA_IP_V6_DST, 16)],
        "{ip:?}"
    );
    let proto = attrs(tuple[1].value);
    assert_eq!(
        (proto[0].kind, proto[0].value),
        (CTA_PROTO_NUM, &[entry.orig.protocol][..])
    );
    if let Some(zone) = entry.zone {
        assert_eq!(top[1].value, zone.to_be_bytes());
    }
    if let Some(id) = entry.id {
        assert_eq!(top[top.len() - 1].value, id.to_be_bytes());
    }
}

/// The dump's entry made of `entry`'s delete request, parsed.
fn reparse(entry: &CtEntry) -> CtEntry {
    let delete = delete_bytes(entry, 7);
    let reversed = delete_bytes(
        &CtEntry {
            orig: entry.reply,
            ..*entry
        },
        7,
    );
    let mut body = Vec::new();
    for attr in attrs(&delete[20..]) {
        body.extend(attr.raw);
    }
    let mut reply = attrs(&reversed[20..])[0].raw.to_vec();
    reply[2..4].copy_from_slice(&(CTA_TUPLE_REPLY | NLA_F_NESTED).to_ne_bytes());
    body.extend(reply);
    if let Some(mark) = entry.mark {
        push_tlv(&mut body, CTA_MARK, &mark.to_be_bytes());
    }
    let message_type = (NFNL_SUBSYS_CTNETLINK << 8) | u16::from(IPCTNL_MSG_CT_NEW);
    let mut message = header(20 + body.len(), message_type, NLM_F_MULTIPART, 7);
    message.extend([entry.family, NFNETLINK_V0, 0, 0]);
    message.extend(body);
    match parse_replies(&message).expect("a built entry parses").as_slice() {
        [CtReply {
            seq: 7,
            body: ReplyBody::Entry(read),
        }] => *read,
        other => panic!("{entry:?} read back as {other:?}"),
    }
}

fn check_tuple(read: &Tuple, sent: &Tuple) {
    assert_eq!(
        (read.protocol, read.src_port, read.dst_port),
        (sent.protocol, sent.src_port, sent.dst_port)
    );
    if sent.src.is_ipv4() == sent.dst.is_ipv4() {
        assert_eq!((read.src, read.dst), (sent.src, sent.dst));
    } else {
        assert!(read.src.is_ipv6() && read.dst.is_ipv6(), "{read:?}");
        assert_eq!(read.src.to_canonical(), sent.src.to_canonical());
        assert_eq!(read.dst.to_canonical(), sent.dst.to_canonical());
    }
}

fn check_entry(entry: &CtEntry) {
    let ports = (entry.orig.src_port, entry.orig.dst_port, entry.reply.src_port);
    match (entry.to_core(), ports) {
        (Some(core), (Some(orig_src), Some(orig_dst), Some(reply_src))) => {
            assert_eq!(core.protocol, entry.orig.protocol);
            assert_eq!(core.orig_src, SocketAddr::new(entry.orig.src, orig_src));
            assert_eq!(core.orig_dst, SocketAddr::new(entry.orig.dst, orig_dst));
            assert_eq!(core.reply_src, SocketAddr::new(entry.reply.src, reply_src));
        }
        (None, (a, b, c)) => assert!(a.is_none() || b.is_none() || c.is_none(), "{entry:?}"),
        (core, _) => panic!("{entry:?}: to_core gave {core:?}"),
    }
    let delete = delete_bytes(entry, 1);
    check_delete(entry, &delete, 1);
    let once = reparse(entry);
    assert_eq!(
        (once.family, once.id, once.zone, once.mark),
        (entry.family, entry.id, entry.zone, entry.mark)
    );
    check_tuple(&once.orig, &entry.orig);
    check_tuple(&once.reply, &entry.reply);
    assert_eq!(reparse(&once), once, "parse(emit(entry)) is not a fixed point");
    assert_eq!(
        delete_bytes(&once, 1),
        delete,
        "the entry read back is deleted differently"
    );
}

/// Emit `reply` as the kernel writes it and parse it back.
fn check_reply(reply: &CtReply) {
    // The echoed request: a bare header.
    let mut echoed = [0u8; 16];
    echoed[..4].copy_from_slice(&16u32.to_ne_bytes());
    let bytes = match &reply.body {
        ReplyBody::Ack => error_message(reply.seq, 0, &echoed, true, false, None),
        ReplyBody::Refused { errno, message } => {
            assert!(*errno > 0, "{reply:?}");
            if message.as_ref().is_some_and(|m| m.len() > 60_000) {
                return;
            }
            error_message(reply.seq, *errno, &echoed, false, false, message.as_deref())
        }
        ReplyBody::Done => done_message(reply.seq),
        ReplyBody::Unreadable(error) => {
            assert!(!error.to_string().is_empty());
            return;
        }
        ReplyBody::Entry(entry) => {
            check_entry(entry);
            return;
        }
    };
    let again = parse_replies(&bytes).expect("an emitted reply parses");
    assert_eq!(
        again,
        std::slice::from_ref(reply),
        "parse(emit(reply)) is not a fixed point"
    );
}

/// The deletes of `entries` in one `sendmsg`, as the cleanup frames them,
/// and the kernel's answers: the first entry gone (ENOENT, the whole
/// request echoed, with a text), the others deleted.
fn check_deletes(entries: &[CtEntry], first_seq: u32) {
    let entries = &entries[..entries.len().min(256)];
    if entries.is_empty() {
        return;
    }
    let requests: Vec<CtRequest> = entries.iter().map(CtRequest::delete).collect();
    let (bytes, seqs) = frame(&requests, first_seq);
    assert_eq!(seqs.len(), requests.len());
    assert_eq!(seqs[0], first_seq);
    for pair in seqs.windows(2) {
        assert_eq!(pair[1], pair[0].wrapping_add(1).max(1), "{seqs:?}");
    }
    assert_eq!(bytes.len(), requests.iter().map(CtRequest::len).sum::<usize>());
    let mut offset = 0;
    let mut answers = Vec::new();
    for (i, (entry, request)) in entries.iter().zip(&requests).enumerate() {
        let message = &bytes[offset..offset + request.len()];
        check_delete(entry, message, seqs[i]);
        answers.extend(if i == 0 {
            error_message(seqs[i], ENOENT, message, false, false, Some("gone"))
        } else {
            error_message(seqs[i], 0, &message[..16], true, false, None)
        });
        offset += request.len();
    }
    assert_eq!(offset, bytes.len());
    let replies = parse_replies(&answers).expect("the kernel's answers parse");
    let want: Vec<CtReply> = seqs
        .iter()
        .enumerate()
        .map(|(i, &seq)| CtReply {
            seq,
            body: if i == 0 {
                ReplyBody::Refused {
                    errno: ENOENT,
                    message: Some("gone".into()),
                }
            } else {
                ReplyBody::Ack
            },
        })
        .collect();
    assert_eq!(replies, want);
}

fuzz_target!(|data: &[u8]| {
    if let Ok(replies) = parse_replies(data) {
        assert!(replies.len() <= data.len() / 16, "more replies than the bytes can hold");
        let mut entries = Vec::new();
        for reply in &replies {
            check_reply(reply);
            if let ReplyBody::Entry(entry) = &reply.body {
                entries.push(*entry);
            }
        }
        check_deletes(&entries, replies.first().map_or(1, |r| r.seq));
        // Messages are self-delimiting: two buffers that parse, parsed as one.
        let half = (data.len() / 2) & !3;
        if let (Ok(first), Ok(second)) = (parse_replies(&data[..half]), parse_replies(&data[half..])) {
            let both: Vec<_> = first.into_iter().chain(second).collect();
            assert_eq!(replies, both, "replies of a buffer split at {half}");
        }
    }
    for family in [NFPROTO_IPV4, NFPROTO_IPV6] {
        if let Ok(entry) = CtEntry::parse(family, data) {
            assert_eq!(entry.family, family);
            check_entry(&entry);
        }
    }
    if let (Some(&family), Some(attrs)) = (data.get(16), data.get(20..)) {
        if let Ok(entry) = CtEntry::parse(family, attrs) {
            assert_eq!(entry.family, family);
            check_entry(&entry);
        }
    }
});
