//! The numbers of ctnetlink, from the kernel's uapi
//! (`include/uapi/linux/netfilter/nfnetlink.h`,
//! `nfnetlink_conntrack.h`, `linux/netfilter.h`).

/// `NFNL_SUBSYS_CTNETLINK`: the high byte of a conntrack message's type.
pub const NFNL_SUBSYS_CTNETLINK: u16 = 1;
/// `NFNETLINK_V0`: `nfgenmsg.version`.
pub const NFNETLINK_V0: u8 = 0;

/// `IPCTNL_MSG_CT_NEW`: what a dump answers with, one per entry.
pub const IPCTNL_MSG_CT_NEW: u8 = 0;
/// `IPCTNL_MSG_CT_GET`: with `NLM_F_DUMP`, list the table.
pub const IPCTNL_MSG_CT_GET: u8 = 1;
/// `IPCTNL_MSG_CT_DELETE`: delete one entry (by tuple), or flush (without
/// one; never sent here).
pub const IPCTNL_MSG_CT_DELETE: u8 = 2;

/// `NFPROTO_IPV4` (`AF_INET`).
pub const NFPROTO_IPV4: u8 = 2;
/// `NFPROTO_IPV6` (`AF_INET6`).
pub const NFPROTO_IPV6: u8 = 10;

/// `CTA_TUPLE_ORIG`: the original direction's tuple (nested).
pub const CTA_TUPLE_ORIG: u16 = 1;
/// `CTA_TUPLE_REPLY`: the reply direction's tuple (nested).
pub const CTA_TUPLE_REPLY: u16 = 2;
/// `CTA_STATUS`: status bits (big-endian u32).
pub const CTA_STATUS: u16 = 3;
/// `CTA_TIMEOUT`: seconds left (big-endian u32).
pub const CTA_TIMEOUT: u16 = 7;
/// `CTA_MARK`: the connection mark (big-endian u32).
pub const CTA_MARK: u16 = 8;
/// `CTA_ID`: the entry's id (big-endian u32); a delete that carries it
/// removes only that entry, not a newer one with the same tuple.
pub const CTA_ID: u16 = 12;
/// `CTA_ZONE`: the conntrack zone (big-endian u16), when not the default.
pub const CTA_ZONE: u16 = 18;
/// `CTA_FILTER`: what a dump filters on (nested; Linux 5.8+).
pub const CTA_FILTER: u16 = 25;

/// `CTA_TUPLE_IP`: addresses (nested).
pub const CTA_TUPLE_IP: u16 = 1;
/// `CTA_TUPLE_PROTO`: protocol and ports (nested).
pub const CTA_TUPLE_PROTO: u16 = 2;
/// `CTA_TUPLE_ZONE`: the tuple's zone (big-endian u16).
pub const CTA_TUPLE_ZONE: u16 = 3;

/// `CTA_IP_V4_SRC` (4 bytes, network order).
pub const CTA_IP_V4_SRC: u16 = 1;
/// `CTA_IP_V4_DST`.
pub const CTA_IP_V4_DST: u16 = 2;
/// `CTA_IP_V6_SRC` (16 bytes).
pub const CTA_IP_V6_SRC: u16 = 3;
/// `CTA_IP_V6_DST`.
pub const CTA_IP_V6_DST: u16 = 4;

/// `CTA_PROTO_NUM`: the IP protocol (u8).
pub const CTA_PROTO_NUM: u16 = 1;
/// `CTA_PROTO_SRC_PORT` (big-endian u16).
pub const CTA_PROTO_SRC_PORT: u16 = 2;
/// `CTA_PROTO_DST_PORT` (big-endian u16).
pub const CTA_PROTO_DST_PORT: u16 = 3;

/// `CTA_FILTER_ORIG_FLAGS`: which fields of `CTA_TUPLE_ORIG` a dump
/// matches (u32, host order).
pub const CTA_FILTER_ORIG_FLAGS: u16 = 1;
/// `CTA_FILTER_FLAG(CTA_PROTO_NUM)`: match the protocol number.
pub const CTA_FILTER_F_CTA_PROTO_NUM: u32 = 1 << 3;

/// `IPPROTO_UDP`.
pub const IPPROTO_UDP: u8 = 17;
