//! The attributes that describe a virtual server (`IPVS_SVC_ATTR_*`), nested
//! in the top-level SERVICE attribute: their wire layout both ways.

use netlink_packet_core::{
    parse_string, parse_u16, parse_u16_be, parse_u32, DecodeError, DefaultNla, ErrorContext, Nla, NlaBuffer, Parseable,
};

use super::constants::*;
use super::stats::{Stats, StatsWidth};
use super::types::{AddressFamily, InetAddr, Protocol, ServiceFlags};
use super::wire::{put, put_string};

/// One attribute of a virtual server.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ServiceAttr {
    /// `IPVS_SVC_ATTR_AF`: address family (u16).
    AddressFamily(AddressFamily),
    /// `IPVS_SVC_ATTR_PROTOCOL`: transport protocol (u16).
    Protocol(Protocol),
    /// `IPVS_SVC_ATTR_ADDR`: the virtual IP (16 bytes).
    Addr(InetAddr),
    /// `IPVS_SVC_ATTR_PORT`: the virtual port, held in host order here and
    /// sent in network order.
    Port(u16),
    /// `IPVS_SVC_ATTR_FWMARK`: firewall mark of a fwmark service (u32).
    Fwmark(u32),
    /// `IPVS_SVC_ATTR_SCHED_NAME`: scheduler name, sent NUL-terminated.
    SchedName(String),
    /// `IPVS_SVC_ATTR_FLAGS`: `struct ip_vs_flags { flags, mask }`; the kernel
    /// changes only the bits set in `mask`, and reports `mask` as all ones.
    Flags {
        /// The flag values.
        flags: ServiceFlags,
        /// Which bits of `flags` to apply.
        mask: u32,
    },
    /// `IPVS_SVC_ATTR_TIMEOUT`: persistence timeout in seconds (u32).
    Timeout(u32),
    /// `IPVS_SVC_ATTR_NETMASK`: persistence granularity, four bytes the kernel
    /// reads as a network-order mask for IPv4 (`0xffffffff` for /32) and as a
    /// host-order prefix length for IPv6 (128). Held as the host-order u32
    /// of those bytes, as `ipvsadm` sends it.
    Netmask(u32),
    /// `IPVS_SVC_ATTR_STATS`: 32-bit counters (replies only).
    Stats(Stats),
    /// `IPVS_SVC_ATTR_PE_NAME`: persistence engine name (`sip`).
    PeName(String),
    /// `IPVS_SVC_ATTR_STATS64`: 64-bit counters (replies only).
    Stats64(Stats),
    /// An attribute this crate does not know, kept as read.
    Other(DefaultNla),
}

impl Nla for ServiceAttr {
    fn value_len(&self) -> usize {
        match self {
            Self::AddressFamily(_) | Self::Protocol(_) | Self::Port(_) => 2,
            Self::Fwmark(_) | Self::Timeout(_) | Self::Netmask(_) => 4,
            Self::Addr(_) => InetAddr::LEN,
            Self::SchedName(name) | Self::PeName(name) => name.len() + 1,
            Self::Flags { .. } => 8,
            Self::Stats(stats) => stats.nested_len(StatsWidth::Narrow),
            Self::Stats64(stats) => stats.nested_len(StatsWidth::Wide),
            Self::Other(nla) => nla.value_len(),
        }
    }

    fn kind(&self) -> u16 {
        match self {
            Self::AddressFamily(_) => IPVS_SVC_ATTR_AF,
            Self::Protocol(_) => IPVS_SVC_ATTR_PROTOCOL,
            Self::Addr(_) => IPVS_SVC_ATTR_ADDR,
            Self::Port(_) => IPVS_SVC_ATTR_PORT,
            Self::Fwmark(_) => IPVS_SVC_ATTR_FWMARK,
            Self::SchedName(_) => IPVS_SVC_ATTR_SCHED_NAME,
            Self::Flags { .. } => IPVS_SVC_ATTR_FLAGS,
            Self::Timeout(_) => IPVS_SVC_ATTR_TIMEOUT,
            Self::Netmask(_) => IPVS_SVC_ATTR_NETMASK,
            Self::Stats(_) => IPVS_SVC_ATTR_STATS,
            Self::PeName(_) => IPVS_SVC_ATTR_PE_NAME,
            Self::Stats64(_) => IPVS_SVC_ATTR_STATS64,
            Self::Other(nla) => nla.kind(),
        }
    }

    fn emit_value(&self, buffer: &mut [u8]) {
        match self {
            Self::AddressFamily(af) => put(buffer, &u16::from(*af).to_ne_bytes()),
            Self::Protocol(protocol) => put(buffer, &u16::from(*protocol).to_ne_bytes()),
            Self::Addr(addr) => put(buffer, &addr.0),
            Self::Port(port) => put(buffer, &port.to_be_bytes()),
            Self::Fwmark(value) | Self::Timeout(value) | Self::Netmask(value) => put(buffer, &value.to_ne_bytes()),
            Self::SchedName(name) | Self::PeName(name) => put_string(buffer, name),
            Self::Flags { flags, mask } => {
                put(buffer, &flags.0.to_ne_bytes());
                put(&mut buffer[4..], &mask.to_ne_bytes());
            }
            Self::Stats(stats) => stats.emit_nested(StatsWidth::Narrow, buffer),
            Self::Stats64(stats) => stats.emit_nested(StatsWidth::Wide, buffer),
            Self::Other(nla) => nla.emit_value(buffer),
        }
    }
}

impl<T: AsRef<[u8]> + ?Sized> Parseable<NlaBuffer<&T>> for ServiceAttr {
    fn parse(buf: &NlaBuffer<&T>) -> Result<Self, DecodeError> {
        let value = buf.value();
        Ok(match buf.kind() {
            IPVS_SVC_ATTR_AF => Self::AddressFamily(parse_u16(value).context("invalid IPVS_SVC_ATTR_AF")?.into()),
            IPVS_SVC_ATTR_PROTOCOL => {
                Self::Protocol(parse_u16(value).context("invalid IPVS_SVC_ATTR_PROTOCOL")?.into())
            }
            IPVS_SVC_ATTR_ADDR => Self::Addr(InetAddr::parse(value).context("invalid IPVS_SVC_ATTR_ADDR")?),
            IPVS_SVC_ATTR_PORT => Self::Port(parse_u16_be(value).context("invalid IPVS_SVC_ATTR_PORT")?),
            IPVS_SVC_ATTR_FWMARK => Self::Fwmark(parse_u32(value).context("invalid IPVS_SVC_ATTR_FWMARK")?),
            IPVS_SVC_ATTR_SCHED_NAME => {
                Self::SchedName(parse_string(value).context("invalid IPVS_SVC_ATTR_SCHED_NAME")?)
            }
            IPVS_SVC_ATTR_FLAGS => {
                if value.len() != 8 {
                    return Err(DecodeError::invalid_number(8, value.len()).context("invalid IPVS_SVC_ATTR_FLAGS"));
                }
                Self::Flags {
                    flags: ServiceFlags(parse_u32(&value[..4])?),
                    mask: parse_u32(&value[4..])?,
                }
            }
            IPVS_SVC_ATTR_TIMEOUT => Self::Timeout(parse_u32(value).context("invalid IPVS_SVC_ATTR_TIMEOUT")?),
            IPVS_SVC_ATTR_NETMASK => Self::Netmask(parse_u32(value).context("invalid IPVS_SVC_ATTR_NETMASK")?),
            IPVS_SVC_ATTR_STATS => Self::Stats(Stats::parse_nested(value).context("invalid IPVS_SVC_ATTR_STATS")?),
            IPVS_SVC_ATTR_PE_NAME => Self::PeName(parse_string(value).context("invalid IPVS_SVC_ATTR_PE_NAME")?),
            IPVS_SVC_ATTR_STATS64 => {
                Self::Stats64(Stats::parse_nested(value).context("invalid IPVS_SVC_ATTR_STATS64")?)
            }
            _ => Self::Other(DefaultNla::parse(buf)?),
        })
    }
}
