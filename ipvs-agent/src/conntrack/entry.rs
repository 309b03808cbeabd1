//! One conntrack entry as a dump reports it ([`CtEntry`]): its family, the
//! original and reply tuples (addresses, protocol, ports), and the id, zone
//! and mark when present; [`CtEntry::parse`] reads it from the attributes
//! of an `IPCTNL_MSG_CT_NEW` message. Attributes it does not need (status,
//! timeout, counters, protocol state, NAT, labels) are skipped. Malformed
//! bytes give errors, never a panic.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};

use netlink_packet_core::NlasIterator;
use svcnet_core::proxy::ConntrackEntry;

use super::constants::*;
use super::error::CtWireError;

/// One direction of an entry.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Tuple {
    /// Source address.
    pub src: IpAddr,
    /// Destination address.
    pub dst: IpAddr,
    /// IP protocol number.
    pub protocol: u8,
    /// Source port (TCP, UDP, SCTP, ...).
    pub src_port: Option<u16>,
    /// Destination port.
    pub dst_port: Option<u16>,
}

/// One entry of the conntrack table.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CtEntry {
    /// `nfgen_family`: `NFPROTO_IPV4` or `NFPROTO_IPV6`.
    pub family: u8,
    /// The original direction (client to frontend).
    pub orig: Tuple,
    /// The reply direction (endpoint back to client).
    pub reply: Tuple,
    /// `CTA_ID`.
    pub id: Option<u32>,
    /// `CTA_ZONE`, present only for a zone other than the default.
    pub zone: Option<u16>,
    /// `CTA_MARK`.
    pub mark: Option<u32>,
}

impl CtEntry {
    /// Reads an entry from the attributes after an `nfgenmsg` whose family
    /// is `family`.
    pub fn parse(family: u8, attrs: &[u8]) -> Result<CtEntry, CtWireError> {
        let mut orig = None;
        let mut reply = None;
        let mut id = None;
        let mut zone = None;
        let mut mark = None;
        for nla in NlasIterator::new(attrs) {
            let nla = nla.map_err(|e| CtWireError::Malformed(format!("conntrack entry: {e}")))?;
            let value = nla.value();
            match nla.kind() {
                CTA_TUPLE_ORIG => orig = Some(parse_tuple(value, "CTA_TUPLE_ORIG")?),
                CTA_TUPLE_REPLY => reply = Some(parse_tuple(value, "CTA_TUPLE_REPLY")?),
                CTA_ID => id = Some(u32::from_be_bytes(fixed(value, "CTA_ID")?)),
                CTA_ZONE => zone = Some(u16::from_be_bytes(fixed(value, "CTA_ZONE")?)),
                CTA_MARK => mark = Some(u32::from_be_bytes(fixed(value, "CTA_MARK")?)),
                _ => {}
            }
        }
        let missing = |what: &str| CtWireError::Malformed(format!("conntrack entry without {what}"));
        Ok(CtEntry {
            family,
            orig: orig.ok_or_else(|| missing("CTA_TUPLE_ORIG"))?,
            reply: reply.ok_or_else(|| missing("CTA_TUPLE_REPLY"))?,
            id,
            zone,
            mark,
        })
    }

    /// What the core's decision reads: `None` for an entry without ports.
    pub fn to_core(&self) -> Option<ConntrackEntry> {
        Some(ConntrackEntry {
            protocol: self.orig.protocol,
            orig_src: SocketAddr::new(self.orig.src, self.orig.src_port?),
            orig_dst: SocketAddr::new(self.orig.dst, self.orig.dst_port?),
            reply_src: SocketAddr::new(self.reply.src, self.reply.src_port?),
        })
    }
}

/// A fixed-size value.
fn fixed<const N: usize>(value: &[u8], what: &str) -> Result<[u8; N], CtWireError> {
    value
        .get(..N)
        .and_then(|b| b.try_into().ok())
        .ok_or_else(|| CtWireError::Malformed(format!("{what}: {} bytes, expected {N}", value.len())))
}

fn parse_tuple(bytes: &[u8], what: &str) -> Result<Tuple, CtWireError> {
    let mut src = None;
    let mut dst = None;
    let mut protocol = None;
    let mut src_port = None;
    let mut dst_port = None;
    let malformed = |e: netlink_packet_core::DecodeError| CtWireError::Malformed(format!("{what}: {e}"));
    for nla in NlasIterator::new(bytes) {
        let nla = nla.map_err(malformed)?;
        match nla.kind() {
            CTA_TUPLE_IP => {
                for ip in NlasIterator::new(nla.value()) {
                    let ip = ip.map_err(malformed)?;
                    let value = ip.value();
                    match ip.kind() {
                        CTA_IP_V4_SRC => src = Some(IpAddr::V4(Ipv4Addr::from(fixed::<4>(value, what)?))),
                        CTA_IP_V4_DST => dst = Some(IpAddr::V4(Ipv4Addr::from(fixed::<4>(value, what)?))),
                        CTA_IP_V6_SRC => src = Some(IpAddr::V6(Ipv6Addr::from(fixed::<16>(value, what)?))),
                        CTA_IP_V6_DST => dst = Some(IpAddr::V6(Ipv6Addr::from(fixed::<16>(value, what)?))),
                        _ => {}
                    }
                }
            }
            CTA_TUPLE_PROTO => {
                for proto in NlasIterator::new(nla.value()) {
                    let proto = proto.map_err(malformed)?;
                    let value = proto.value();
                    match proto.kind() {
                        CTA_PROTO_NUM => protocol = Some(fixed::<1>(value, what)?[0]),
                        CTA_PROTO_SRC_PORT => src_port = Some(u16::from_be_bytes(fixed(value, what)?)),
                        CTA_PROTO_DST_PORT => dst_port = Some(u16::from_be_bytes(fixed(value, what)?)),
                        _ => {}
                    }
                }
            }
            _ => {}
        }
    }
    let missing = |field: &str| CtWireError::Malformed(format!("{what} without {field}"));
    Ok(Tuple {
        src: src.ok_or_else(|| missing("a source address"))?,
        dst: dst.ok_or_else(|| missing("a destination address"))?,
        protocol: protocol.ok_or_else(|| missing("CTA_PROTO_NUM"))?,
        src_port,
        dst_port,
    })
}
