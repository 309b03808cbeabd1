//! The ctnetlink requests svcnet sends: a filtered dump of one family's UDP
//! entries ([`CtRequest::dump_udp`]) and the deletion of one entry by its
//! original tuple ([`CtRequest::delete`]); nothing that flushes. [`frame`]
//! writes requests back to back for one `sendmsg`, each `nlmsghdr` +
//! `nfgenmsg` + attributes, with consecutive sequence numbers.
//!
//! Attributes are nf_tables' [`Attr`] tree (nests carry `NLA_F_NESTED`, as
//! libmnl sets it); addresses, ports, ids and zones go in network order, as
//! ctnetlink reads them; the filter's flags in host order (`nla_get_u32`).

use std::net::IpAddr;

use netlink_packet_core::{Emitable, NetlinkHeader, NLM_F_ACK, NLM_F_DUMP, NLM_F_REQUEST};
use svcnet_core::family::IpFamily;

use super::constants::*;
use super::entry::{CtEntry, Tuple};
use crate::nftables::attr::Attr;

/// `struct nlmsghdr` plus `struct nfgenmsg`.
pub const HEADERS_LEN: usize = 16 + 4;

/// One ctnetlink request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CtRequest {
    /// `IPCTNL_MSG_*`.
    pub msg_type: u8,
    /// `nlmsg_flags`.
    pub flags: u16,
    /// `nfgenmsg.nfgen_family`.
    pub family: u8,
    /// The attributes after the `nfgenmsg`.
    pub attrs: Vec<Attr>,
}

/// The `nfgen_family` of an IP family.
pub fn nfproto(family: IpFamily) -> u8 {
    match family {
        IpFamily::IPv4 => NFPROTO_IPV4,
        IpFamily::IPv6 => NFPROTO_IPV6,
    }
}

impl CtRequest {
    /// `IPCTNL_MSG_CT_GET` with `NLM_F_DUMP`: every entry of `family` whose
    /// original protocol is UDP. The kernel filters (`CTA_FILTER`, Linux
    /// 5.8+); an older one ignores the filter and dumps the whole family,
    /// which the caller filters again, so either way is right.
    pub fn dump_udp(family: IpFamily) -> Self {
        Self {
            msg_type: IPCTNL_MSG_CT_GET,
            flags: NLM_F_REQUEST | NLM_F_DUMP,
            family: nfproto(family),
            attrs: vec![
                Attr::nested(
                    CTA_TUPLE_ORIG,
                    vec![Attr::nested(
                        CTA_TUPLE_PROTO,
                        vec![Attr::bytes(CTA_PROTO_NUM, [IPPROTO_UDP])],
                    )],
                ),
                Attr::nested(
                    CTA_FILTER,
                    vec![Attr::bytes(
                        CTA_FILTER_ORIG_FLAGS,
                        CTA_FILTER_F_CTA_PROTO_NUM.to_ne_bytes(),
                    )],
                ),
            ],
        }
    }

    /// `IPCTNL_MSG_CT_GET` with `NLM_F_DUMP` and no filter: every entry of
    /// `family`, as `conntrack -L -f FAMILY` asks. The fallback for a kernel
    /// that refuses [`CtRequest::dump_udp`]'s filter.
    pub fn dump_family(family: IpFamily) -> Self {
        Self {
            msg_type: IPCTNL_MSG_CT_GET,
            flags: NLM_F_REQUEST | NLM_F_DUMP,
            family: nfproto(family),
            attrs: Vec::new(),
        }
    }

    /// `IPCTNL_MSG_CT_DELETE` of one dumped entry: its original tuple, its
    /// zone when it has one, and its id when the dump gave it, so that a
    /// newer entry with the same tuple is left alone (the kernel answers
    /// ENOENT). Always a tuple: a delete without one would flush.
    pub fn delete(entry: &CtEntry) -> Self {
        let mut attrs = vec![tuple_attr(CTA_TUPLE_ORIG, &entry.orig)];
        if let Some(zone) = entry.zone {
            attrs.push(Attr::bytes(CTA_ZONE, zone.to_be_bytes()));
        }
        if let Some(id) = entry.id {
            attrs.push(Attr::be32(CTA_ID, id));
        }
        Self {
            msg_type: IPCTNL_MSG_CT_DELETE,
            flags: NLM_F_REQUEST | NLM_F_ACK,
            family: entry.family,
            attrs,
        }
    }

    /// The length of the framed message.
    pub fn len(&self) -> usize {
        HEADERS_LEN + self.attrs.as_slice().buffer_len()
    }

    /// Never true: a request has at least its headers.
    pub fn is_empty(&self) -> bool {
        false
    }
}

/// A tuple as ctnetlink reads it: `CTA_TUPLE_IP` then `CTA_TUPLE_PROTO`.
pub(super) fn tuple_attr(kind: u16, tuple: &Tuple) -> Attr {
    let ip = match (tuple.src, tuple.dst) {
        (IpAddr::V4(src), IpAddr::V4(dst)) => vec![
            Attr::bytes(CTA_IP_V4_SRC, src.octets()),
            Attr::bytes(CTA_IP_V4_DST, dst.octets()),
        ],
        (src, dst) => vec![
            Attr::bytes(CTA_IP_V6_SRC, v6_octets(src)),
            Attr::bytes(CTA_IP_V6_DST, v6_octets(dst)),
        ],
    };
    let mut proto = vec![Attr::bytes(CTA_PROTO_NUM, [tuple.protocol])];
    if let Some(port) = tuple.src_port {
        proto.push(Attr::bytes(CTA_PROTO_SRC_PORT, port.to_be_bytes()));
    }
    if let Some(port) = tuple.dst_port {
        proto.push(Attr::bytes(CTA_PROTO_DST_PORT, port.to_be_bytes()));
    }
    Attr::nested(
        kind,
        vec![Attr::nested(CTA_TUPLE_IP, ip), Attr::nested(CTA_TUPLE_PROTO, proto)],
    )
}

fn v6_octets(ip: IpAddr) -> [u8; 16] {
    match ip {
        IpAddr::V4(v4) => v4.to_ipv6_mapped().octets(),
        IpAddr::V6(v6) => v6.octets(),
    }
}

/// `requests` framed back to back for one `sendmsg`, numbered from
/// `first_seq`: the bytes and each request's sequence number.
pub fn frame(requests: &[CtRequest], first_seq: u32) -> (Vec<u8>, Vec<u32>) {
    let mut bytes = vec![0u8; requests.iter().map(CtRequest::len).sum()];
    let mut seqs = Vec::with_capacity(requests.len());
    let mut seq = first_seq;
    let mut start = 0;
    for request in requests {
        let len = request.len();
        let mut header = NetlinkHeader::default();
        // A handful of small attributes: far below 4 GiB.
        header.length = u32::try_from(len).unwrap_or(u32::MAX);
        header.message_type = (NFNL_SUBSYS_CTNETLINK << 8) | u16::from(request.msg_type);
        header.flags = request.flags;
        header.sequence_number = seq;
        header.emit(&mut bytes[start..start + 16]);
        bytes[start + 16] = request.family;
        bytes[start + 17] = NFNETLINK_V0;
        // res_id 0 (bytes 18 and 19 stay zero).
        request
            .attrs
            .as_slice()
            .emit(&mut bytes[start + HEADERS_LEN..start + len]);
        seqs.push(seq);
        seq = seq.wrapping_add(1).max(1);
        start += len;
    }
    (bytes, seqs)
}
