//! The attributes that describe a destination, IPVS's name for a real server
//! (`IPVS_DEST_ATTR_*`), nested in the top-level DEST attribute: their wire
//! layout both ways.

use netlink_packet_core::{
    parse_u16, parse_u16_be, parse_u32, parse_u8, DecodeError, DefaultNla, ErrorContext, Nla, NlaBuffer, Parseable,
};

use super::constants::*;
use super::stats::{Stats, StatsWidth};
use super::types::{AddressFamily, ForwardMethod, InetAddr};
use super::wire::put;

/// One attribute of a destination (real server).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DestAttr {
    /// `IPVS_DEST_ATTR_ADDR`: the real server's IP (16 bytes).
    Addr(InetAddr),
    /// `IPVS_DEST_ATTR_PORT`: its port, held in host order here and sent in
    /// network order.
    Port(u16),
    /// `IPVS_DEST_ATTR_FWD_METHOD`: forwarding method (u32).
    FwdMethod(ForwardMethod),
    /// `IPVS_DEST_ATTR_WEIGHT`: weight (u32; the kernel refuses more than
    /// `i32::MAX`). Weight 0 stops new connections (draining).
    Weight(u32),
    /// `IPVS_DEST_ATTR_U_THRESH`: upper connection threshold, 0 for none.
    UThresh(u32),
    /// `IPVS_DEST_ATTR_L_THRESH`: lower connection threshold.
    LThresh(u32),
    /// `IPVS_DEST_ATTR_ACTIVE_CONNS`: active connections (replies only).
    ActiveConns(u32),
    /// `IPVS_DEST_ATTR_INACT_CONNS`: inactive connections (replies only).
    InactConns(u32),
    /// `IPVS_DEST_ATTR_PERSIST_CONNS`: persistence templates (replies only).
    PersistConns(u32),
    /// `IPVS_DEST_ATTR_STATS`: 32-bit counters (replies only).
    Stats(Stats),
    /// `IPVS_DEST_ATTR_ADDR_FAMILY`: the real server's address family (u16).
    AddressFamily(AddressFamily),
    /// `IPVS_DEST_ATTR_STATS64`: 64-bit counters (replies only).
    Stats64(Stats),
    /// `IPVS_DEST_ATTR_TUN_TYPE`: tunnel type (u8: 0 IPIP, 1 GUE, 2 GRE).
    TunType(u8),
    /// `IPVS_DEST_ATTR_TUN_PORT`: tunnel port, network order on the wire.
    TunPort(u16),
    /// `IPVS_DEST_ATTR_TUN_FLAGS`: tunnel flags (u16).
    TunFlags(u16),
    /// An attribute this crate does not know, kept as read.
    Other(DefaultNla),
}

impl Nla for DestAttr {
    fn value_len(&self) -> usize {
        match self {
            Self::Addr(_) => InetAddr::LEN,
            Self::TunType(_) => 1,
            Self::Port(_) | Self::AddressFamily(_) | Self::TunPort(_) | Self::TunFlags(_) => 2,
            Self::FwdMethod(_)
            | Self::Weight(_)
            | Self::UThresh(_)
            | Self::LThresh(_)
            | Self::ActiveConns(_)
            | Self::InactConns(_)
            | Self::PersistConns(_) => 4,
            Self::Stats(stats) => stats.nested_len(StatsWidth::Narrow),
            Self::Stats64(stats) => stats.nested_len(StatsWidth::Wide),
            Self::Other(nla) => nla.value_len(),
        }
    }

    fn kind(&self) -> u16 {
        match self {
            Self::Addr(_) => IPVS_DEST_ATTR_ADDR,
            Self::Port(_) => IPVS_DEST_ATTR_PORT,
            Self::FwdMethod(_) => IPVS_DEST_ATTR_FWD_METHOD,
            Self::Weight(_) => IPVS_DEST_ATTR_WEIGHT,
            Self::UThresh(_) => IPVS_DEST_ATTR_U_THRESH,
            Self::LThresh(_) => IPVS_DEST_ATTR_L_THRESH,
            Self::ActiveConns(_) => IPVS_DEST_ATTR_ACTIVE_CONNS,
            Self::InactConns(_) => IPVS_DEST_ATTR_INACT_CONNS,
            Self::PersistConns(_) => IPVS_DEST_ATTR_PERSIST_CONNS,
            Self::Stats(_) => IPVS_DEST_ATTR_STATS,
            Self::AddressFamily(_) => IPVS_DEST_ATTR_ADDR_FAMILY,
            Self::Stats64(_) => IPVS_DEST_ATTR_STATS64,
            Self::TunType(_) => IPVS_DEST_ATTR_TUN_TYPE,
            Self::TunPort(_) => IPVS_DEST_ATTR_TUN_PORT,
            Self::TunFlags(_) => IPVS_DEST_ATTR_TUN_FLAGS,
            Self::Other(nla) => nla.kind(),
        }
    }

    fn emit_value(&self, buffer: &mut [u8]) {
        match self {
            Self::Addr(addr) => put(buffer, &addr.0),
            Self::Port(port) | Self::TunPort(port) => put(buffer, &port.to_be_bytes()),
            Self::FwdMethod(method) => put(buffer, &u32::from(*method).to_ne_bytes()),
            Self::Weight(value)
            | Self::UThresh(value)
            | Self::LThresh(value)
            | Self::ActiveConns(value)
            | Self::InactConns(value)
            | Self::PersistConns(value) => put(buffer, &value.to_ne_bytes()),
            Self::Stats(stats) => stats.emit_nested(StatsWidth::Narrow, buffer),
            Self::AddressFamily(af) => put(buffer, &u16::from(*af).to_ne_bytes()),
            Self::Stats64(stats) => stats.emit_nested(StatsWidth::Wide, buffer),
            Self::TunType(value) => put(buffer, &[*value]),
            Self::TunFlags(value) => put(buffer, &value.to_ne_bytes()),
            Self::Other(nla) => nla.emit_value(buffer),
        }
    }
}

impl<T: AsRef<[u8]> + ?Sized> Parseable<NlaBuffer<&T>> for DestAttr {
    fn parse(buf: &NlaBuffer<&T>) -> Result<Self, DecodeError> {
        let value = buf.value();
        Ok(match buf.kind() {
            IPVS_DEST_ATTR_ADDR => Self::Addr(InetAddr::parse(value).context("invalid IPVS_DEST_ATTR_ADDR")?),
            IPVS_DEST_ATTR_PORT => Self::Port(parse_u16_be(value).context("invalid IPVS_DEST_ATTR_PORT")?),
            IPVS_DEST_ATTR_FWD_METHOD => {
                Self::FwdMethod(parse_u32(value).context("invalid IPVS_DEST_ATTR_FWD_METHOD")?.into())
            }
            IPVS_DEST_ATTR_WEIGHT => Self::Weight(parse_u32(value).context("invalid IPVS_DEST_ATTR_WEIGHT")?),
            IPVS_DEST_ATTR_U_THRESH => Self::UThresh(parse_u32(value).context("invalid IPVS_DEST_ATTR_U_THRESH")?),
            IPVS_DEST_ATTR_L_THRESH => Self::LThresh(parse_u32(value).context("invalid IPVS_DEST_ATTR_L_THRESH")?),
            IPVS_DEST_ATTR_ACTIVE_CONNS => {
                Self::ActiveConns(parse_u32(value).context("invalid IPVS_DEST_ATTR_ACTIVE_CONNS")?)
            }
            IPVS_DEST_ATTR_INACT_CONNS => {
                Self::InactConns(parse_u32(value).context("invalid IPVS_DEST_ATTR_INACT_CONNS")?)
            }
            IPVS_DEST_ATTR_PERSIST_CONNS => {
                Self::PersistConns(parse_u32(value).context("invalid IPVS_DEST_ATTR_PERSIST_CONNS")?)
            }
            IPVS_DEST_ATTR_STATS => Self::Stats(Stats::parse_nested(value).context("invalid IPVS_DEST_ATTR_STATS")?),
            IPVS_DEST_ATTR_ADDR_FAMILY => {
                Self::AddressFamily(parse_u16(value).context("invalid IPVS_DEST_ATTR_ADDR_FAMILY")?.into())
            }
            IPVS_DEST_ATTR_STATS64 => {
                Self::Stats64(Stats::parse_nested(value).context("invalid IPVS_DEST_ATTR_STATS64")?)
            }
            IPVS_DEST_ATTR_TUN_TYPE => Self::TunType(parse_u8(value).context("invalid IPVS_DEST_ATTR_TUN_TYPE")?),
            IPVS_DEST_ATTR_TUN_PORT => Self::TunPort(parse_u16_be(value).context("invalid IPVS_DEST_ATTR_TUN_PORT")?),
            IPVS_DEST_ATTR_TUN_FLAGS => Self::TunFlags(parse_u16(value).context("invalid IPVS_DEST_ATTR_TUN_FLAGS")?),
            _ => Self::Other(DefaultNla::parse(buf)?),
        })
    }
}
