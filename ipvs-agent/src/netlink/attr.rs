//! The top-level attributes of an IPVS message (`IPVS_CMD_ATTR_*`, and the
//! `IPVS_INFO_ATTR_*` of a GET_INFO reply, which reuse numbers 1 and 2 and
//! are therefore parsed according to the command).
//!
//! Nested attributes are emitted with `NLA_F_NESTED`, as `ipvsadm` 1.31 on
//! libnl 3.7 sends them (captured in `ipvs-agent/tests/ipvsadm-captures/`);
//! the kernel's own replies leave the flag out. The kernel accepts both, and
//! so does the parser.

use netlink_packet_core::{
    parse_u32, DecodeError, DefaultNla, Emitable, ErrorContext, Nla, NlaBuffer, Parseable, ParseableParametrized,
};

use super::cmd::IpvsCmd;
use super::constants::*;
use super::dest::DestAttr;
use super::service::ServiceAttr;
use super::wire::{append_nested, append_nla, parse_nested, put};

/// One top-level attribute of an IPVS message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum IpvsAttr {
    /// `IPVS_CMD_ATTR_SERVICE`: a virtual server, nested.
    Service(Vec<ServiceAttr>),
    /// `IPVS_CMD_ATTR_DEST`: a real server, nested.
    Dest(Vec<DestAttr>),
    /// `IPVS_CMD_ATTR_DAEMON`: a connection-sync daemon, nested; kept as read
    /// because the agent does not run sync daemons.
    Daemon(Vec<DefaultNla>),
    /// `IPVS_CMD_ATTR_TIMEOUT_TCP`: established TCP timeout, seconds; 0 leaves
    /// it unchanged in SET_CONFIG.
    TimeoutTcp(u32),
    /// `IPVS_CMD_ATTR_TIMEOUT_TCP_FIN`: TCP FIN-wait timeout, seconds.
    TimeoutTcpFin(u32),
    /// `IPVS_CMD_ATTR_TIMEOUT_UDP`: UDP timeout, seconds.
    TimeoutUdp(u32),
    /// `IPVS_INFO_ATTR_VERSION` (GET_INFO reply only): version `0x00MMmmpp`.
    InfoVersion(u32),
    /// `IPVS_INFO_ATTR_CONN_TAB_SIZE` (GET_INFO reply only): connection hash
    /// table size.
    InfoConnTabSize(u32),
    /// An attribute this crate does not know, kept as read.
    Other(DefaultNla),
}

impl Nla for IpvsAttr {
    fn value_len(&self) -> usize {
        match self {
            Self::Service(attrs) => attrs.as_slice().buffer_len(),
            Self::Dest(attrs) => attrs.as_slice().buffer_len(),
            Self::Daemon(attrs) => attrs.as_slice().buffer_len(),
            Self::TimeoutTcp(_)
            | Self::TimeoutTcpFin(_)
            | Self::TimeoutUdp(_)
            | Self::InfoVersion(_)
            | Self::InfoConnTabSize(_) => 4,
            Self::Other(nla) => nla.value_len(),
        }
    }

    fn kind(&self) -> u16 {
        match self {
            Self::Service(_) => IPVS_CMD_ATTR_SERVICE,
            Self::Dest(_) => IPVS_CMD_ATTR_DEST,
            Self::Daemon(_) => IPVS_CMD_ATTR_DAEMON,
            Self::TimeoutTcp(_) => IPVS_CMD_ATTR_TIMEOUT_TCP,
            Self::TimeoutTcpFin(_) => IPVS_CMD_ATTR_TIMEOUT_TCP_FIN,
            Self::TimeoutUdp(_) => IPVS_CMD_ATTR_TIMEOUT_UDP,
            Self::InfoVersion(_) => IPVS_INFO_ATTR_VERSION,
            Self::InfoConnTabSize(_) => IPVS_INFO_ATTR_CONN_TAB_SIZE,
            Self::Other(nla) => nla.kind(),
        }
    }

    fn is_nested(&self) -> bool {
        match self {
            Self::Service(_) | Self::Dest(_) | Self::Daemon(_) => true,
            Self::Other(nla) => nla.is_nested(),
            _ => false,
        }
    }

    fn emit_value(&self, buffer: &mut [u8]) {
        match self {
            Self::Service(attrs) => attrs.as_slice().emit(buffer),
            Self::Dest(attrs) => attrs.as_slice().emit(buffer),
            Self::Daemon(attrs) => attrs.as_slice().emit(buffer),
            Self::TimeoutTcp(value)
            | Self::TimeoutTcpFin(value)
            | Self::TimeoutUdp(value)
            | Self::InfoVersion(value)
            | Self::InfoConnTabSize(value) => put(buffer, &value.to_ne_bytes()),
            Self::Other(nla) => nla.emit_value(buffer),
        }
    }
}

impl IpvsAttr {
    /// Append this attribute to a request being written, in one pass: the
    /// same bytes as `Emitable::emit`, without computing a nest's length
    /// again at each level.
    pub(crate) fn append(&self, out: &mut Vec<u8>) {
        match self {
            Self::Service(attrs) => append_nested(out, IPVS_CMD_ATTR_SERVICE, attrs),
            Self::Dest(attrs) => append_nested(out, IPVS_CMD_ATTR_DEST, attrs),
            Self::Daemon(attrs) => append_nested(out, IPVS_CMD_ATTR_DAEMON, attrs),
            _ => append_nla(out, self),
        }
    }
}

/// Whether a command's top-level attributes use the `IPVS_INFO_ATTR_*`
/// numbering (the GET_INFO request and its SET_INFO reply).
fn uses_info_numbering(cmd: IpvsCmd) -> bool {
    matches!(cmd, IpvsCmd::GetInfo | IpvsCmd::SetInfo)
}

impl<T: AsRef<[u8]> + ?Sized> ParseableParametrized<NlaBuffer<&T>, IpvsCmd> for IpvsAttr {
    fn parse_with_param(buf: &NlaBuffer<&T>, cmd: IpvsCmd) -> Result<Self, DecodeError> {
        let value = buf.value();
        if uses_info_numbering(cmd) {
            return Ok(match buf.kind() {
                IPVS_INFO_ATTR_VERSION => {
                    Self::InfoVersion(parse_u32(value).context("invalid IPVS_INFO_ATTR_VERSION")?)
                }
                IPVS_INFO_ATTR_CONN_TAB_SIZE => {
                    Self::InfoConnTabSize(parse_u32(value).context("invalid IPVS_INFO_ATTR_CONN_TAB_SIZE")?)
                }
                _ => Self::Other(DefaultNla::parse(buf)?),
            });
        }
        Ok(match buf.kind() {
            IPVS_CMD_ATTR_SERVICE => Self::Service(parse_nested(value, "IPVS_CMD_ATTR_SERVICE", |nla| {
                ServiceAttr::parse(nla)
            })?),
            IPVS_CMD_ATTR_DEST => Self::Dest(parse_nested(value, "IPVS_CMD_ATTR_DEST", |nla| DestAttr::parse(nla))?),
            IPVS_CMD_ATTR_DAEMON => Self::Daemon(parse_nested(value, "IPVS_CMD_ATTR_DAEMON", |nla| {
                DefaultNla::parse(nla)
            })?),
            IPVS_CMD_ATTR_TIMEOUT_TCP => {
                Self::TimeoutTcp(parse_u32(value).context("invalid IPVS_CMD_ATTR_TIMEOUT_TCP")?)
            }
            IPVS_CMD_ATTR_TIMEOUT_TCP_FIN => {
                Self::TimeoutTcpFin(parse_u32(value).context("invalid IPVS_CMD_ATTR_TIMEOUT_TCP_FIN")?)
            }
            IPVS_CMD_ATTR_TIMEOUT_UDP => {
                Self::TimeoutUdp(parse_u32(value).context("invalid IPVS_CMD_ATTR_TIMEOUT_UDP")?)
            }
            _ => Self::Other(DefaultNla::parse(buf)?),
        })
    }
}
