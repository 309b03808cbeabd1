//! Replies as plain data: a virtual server or real server from one message of
//! a dump, the GET_INFO answer and the GET_CONFIG timeouts. This is the shape
//! the agent compares with the table it wants.

use std::net::IpAddr;

use super::attr::IpvsAttr;
use super::dest::DestAttr;
use super::error::WireError;
use super::message::IpvsMessage;
use super::request::{ServiceKey, Timeouts};
use super::service::ServiceAttr;
use super::stats::Stats;
use super::types::{AddressFamily, ForwardMethod, InetAddr, ServiceFlags};

/// Read a 16-byte address field as the given family reads it.
fn ip(addr: InetAddr, af: AddressFamily) -> Result<IpAddr, WireError> {
    addr.to_ip(af).ok_or(WireError::UnknownAddressFamily(af.into()))
}

/// A virtual server as the kernel reports it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServiceEntry {
    /// What identifies it (address family, and protocol/IP/port or fwmark).
    pub key: ServiceKey,
    /// Its scheduler (`none` when it has none).
    pub scheduler: String,
    /// Its flags; the kernel always includes [`ServiceFlags::HASHED`].
    pub flags: ServiceFlags,
    /// Persistence timeout in seconds.
    pub timeout: u32,
    /// Persistence netmask; see [`ServiceAttr::Netmask`].
    pub netmask: u32,
    /// Persistence engine, if any.
    pub pe_name: Option<String>,
    /// Counters (STATS64 when present, else STATS).
    pub stats: Option<Stats>,
}

impl ServiceEntry {
    /// Read the service a NEW_SERVICE message (one message of a GET_SERVICE
    /// reply) carries.
    pub fn from_message(message: &IpvsMessage) -> Result<Self, WireError> {
        let attrs = (message.attrs.iter())
            .find_map(|attr| {
                if let IpvsAttr::Service(attrs) = attr {
                    Some(attrs)
                } else {
                    None
                }
            })
            .ok_or(WireError::MissingAttribute("IPVS_CMD_ATTR_SERVICE"))?;
        Self::from_attrs(attrs)
    }

    /// Read a service from its nested attributes.
    pub fn from_attrs(attrs: &[ServiceAttr]) -> Result<Self, WireError> {
        let (mut af, mut protocol, mut addr, mut port, mut fwmark) = (None, None, None, None, None);
        let (mut scheduler, mut flags, mut timeout, mut netmask) = (None, None, None, None);
        let (mut pe_name, mut stats, mut stats64) = (None, None, None);
        for attr in attrs {
            match attr {
                ServiceAttr::AddressFamily(value) => af = Some(*value),
                ServiceAttr::Protocol(value) => protocol = Some(*value),
                ServiceAttr::Addr(value) => addr = Some(*value),
                ServiceAttr::Port(value) => port = Some(*value),
                ServiceAttr::Fwmark(value) => fwmark = Some(*value),
                ServiceAttr::SchedName(value) => scheduler = Some(value.clone()),
                ServiceAttr::Flags { flags: value, .. } => flags = Some(*value),
                ServiceAttr::Timeout(value) => timeout = Some(*value),
                ServiceAttr::Netmask(value) => netmask = Some(*value),
                ServiceAttr::Stats(value) => stats = Some(*value),
                ServiceAttr::PeName(value) => pe_name = Some(value.clone()),
                ServiceAttr::Stats64(value) => stats64 = Some(*value),
                ServiceAttr::Other(_) => {}
            }
        }
        let af = af.ok_or(WireError::MissingAttribute("IPVS_SVC_ATTR_AF"))?;
        let key = match fwmark {
            Some(fwmark) => ServiceKey::Fwmark { af, fwmark },
            None => ServiceKey::Addr {
                protocol: protocol.ok_or(WireError::MissingAttribute("IPVS_SVC_ATTR_PROTOCOL"))?,
                addr: ip(addr.ok_or(WireError::MissingAttribute("IPVS_SVC_ATTR_ADDR"))?, af)?,
                port: port.ok_or(WireError::MissingAttribute("IPVS_SVC_ATTR_PORT"))?,
            },
        };
        Ok(Self {
            key,
            scheduler: scheduler.ok_or(WireError::MissingAttribute("IPVS_SVC_ATTR_SCHED_NAME"))?,
            flags: flags.ok_or(WireError::MissingAttribute("IPVS_SVC_ATTR_FLAGS"))?,
            timeout: timeout.ok_or(WireError::MissingAttribute("IPVS_SVC_ATTR_TIMEOUT"))?,
            netmask: netmask.ok_or(WireError::MissingAttribute("IPVS_SVC_ATTR_NETMASK"))?,
            pe_name,
            stats: stats64.or(stats),
        })
    }
}

/// A real server as the kernel reports it (one message of a GET_DEST dump).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DestEntry {
    /// Its IP.
    pub addr: IpAddr,
    /// Its port.
    pub port: u16,
    /// How packets reach it.
    pub fwd_method: ForwardMethod,
    /// Its weight (0 while draining).
    pub weight: u32,
    /// Upper connection threshold.
    pub u_thresh: u32,
    /// Lower connection threshold.
    pub l_thresh: u32,
    /// Active connections (TCP established).
    pub active_conns: u32,
    /// Inactive connections (other states, and UDP).
    pub inact_conns: u32,
    /// Persistence templates pointing at it.
    pub persist_conns: u32,
    /// Its address family.
    pub addr_family: AddressFamily,
    /// Counters (STATS64 when present, else STATS).
    pub stats: Option<Stats>,
}

impl DestEntry {
    /// Read the real server a NEW_DEST message carries. `service_af` is the
    /// family of the dumped virtual server, used when the kernel is too old to
    /// send `IPVS_DEST_ATTR_ADDR_FAMILY`.
    pub fn from_message(message: &IpvsMessage, service_af: AddressFamily) -> Result<Self, WireError> {
        let attrs = (message.attrs.iter())
            .find_map(|attr| {
                if let IpvsAttr::Dest(attrs) = attr {
                    Some(attrs)
                } else {
                    None
                }
            })
            .ok_or(WireError::MissingAttribute("IPVS_CMD_ATTR_DEST"))?;
        Self::from_attrs(attrs, service_af)
    }

    /// Read a real server from its nested attributes.
    pub fn from_attrs(attrs: &[DestAttr], service_af: AddressFamily) -> Result<Self, WireError> {
        let (mut addr, mut port, mut fwd_method, mut weight, mut u_thresh, mut l_thresh) =
            (None, None, None, None, None, None);
        let (mut active_conns, mut inact_conns, mut persist_conns, mut addr_family) = (None, None, None, None);
        let (mut stats, mut stats64) = (None, None);
        for attr in attrs {
            match attr {
                DestAttr::Addr(value) => addr = Some(*value),
                DestAttr::Port(value) => port = Some(*value),
                DestAttr::FwdMethod(value) => fwd_method = Some(*value),
                DestAttr::Weight(value) => weight = Some(*value),
                DestAttr::UThresh(value) => u_thresh = Some(*value),
                DestAttr::LThresh(value) => l_thresh = Some(*value),
                DestAttr::ActiveConns(value) => active_conns = Some(*value),
                DestAttr::InactConns(value) => inact_conns = Some(*value),
                DestAttr::PersistConns(value) => persist_conns = Some(*value),
                DestAttr::Stats(value) => stats = Some(*value),
                DestAttr::AddressFamily(value) => addr_family = Some(*value),
                DestAttr::Stats64(value) => stats64 = Some(*value),
                DestAttr::TunType(_) | DestAttr::TunPort(_) | DestAttr::TunFlags(_) | DestAttr::Other(_) => {}
            }
        }
        let addr_family = addr_family.unwrap_or(service_af);
        Ok(Self {
            addr: ip(
                addr.ok_or(WireError::MissingAttribute("IPVS_DEST_ATTR_ADDR"))?,
                addr_family,
            )?,
            port: port.ok_or(WireError::MissingAttribute("IPVS_DEST_ATTR_PORT"))?,
            fwd_method: fwd_method.ok_or(WireError::MissingAttribute("IPVS_DEST_ATTR_FWD_METHOD"))?,
            weight: weight.ok_or(WireError::MissingAttribute("IPVS_DEST_ATTR_WEIGHT"))?,
            u_thresh: u_thresh.ok_or(WireError::MissingAttribute("IPVS_DEST_ATTR_U_THRESH"))?,
            l_thresh: l_thresh.ok_or(WireError::MissingAttribute("IPVS_DEST_ATTR_L_THRESH"))?,
            active_conns: active_conns.ok_or(WireError::MissingAttribute("IPVS_DEST_ATTR_ACTIVE_CONNS"))?,
            inact_conns: inact_conns.ok_or(WireError::MissingAttribute("IPVS_DEST_ATTR_INACT_CONNS"))?,
            persist_conns: persist_conns.ok_or(WireError::MissingAttribute("IPVS_DEST_ATTR_PERSIST_CONNS"))?,
            addr_family,
            stats: stats64.or(stats),
        })
    }
}

/// The IPVS version, as `ipvsadm` prints it ("IP Virtual Server version 1.2.1").
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct IpvsVersion {
    /// Major version.
    pub major: u8,
    /// Minor version.
    pub minor: u8,
    /// Patch level.
    pub patch: u8,
}

impl From<u32> for IpvsVersion {
    fn from(code: u32) -> Self {
        let [_, major, minor, patch] = code.to_be_bytes();
        Self { major, minor, patch }
    }
}

/// The answer to GET_INFO.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct IpvsInfo {
    /// The kernel's IPVS version.
    pub version: IpvsVersion,
    /// Size of the connection hash table.
    pub conn_tab_size: u32,
}

impl IpvsInfo {
    /// Read the SET_INFO message that answers GET_INFO.
    pub fn from_message(message: &IpvsMessage) -> Result<Self, WireError> {
        let (mut version, mut conn_tab_size) = (None, None);
        for attr in &message.attrs {
            match attr {
                IpvsAttr::InfoVersion(code) => version = Some(IpvsVersion::from(*code)),
                IpvsAttr::InfoConnTabSize(size) => conn_tab_size = Some(*size),
                _ => {}
            }
        }
        Ok(Self {
            version: version.ok_or(WireError::MissingAttribute("IPVS_INFO_ATTR_VERSION"))?,
            conn_tab_size: conn_tab_size.ok_or(WireError::MissingAttribute("IPVS_INFO_ATTR_CONN_TAB_SIZE"))?,
        })
    }
}

impl Timeouts {
    /// Read the SET_CONFIG message that answers GET_CONFIG. A timeout the
    /// kernel does not report (its protocol compiled out) reads as 0.
    pub fn from_message(message: &IpvsMessage) -> Self {
        let mut timeouts = Self::default();
        for attr in &message.attrs {
            match attr {
                IpvsAttr::TimeoutTcp(value) => timeouts.tcp = *value,
                IpvsAttr::TimeoutTcpFin(value) => timeouts.tcp_fin = *value,
                IpvsAttr::TimeoutUdp(value) => timeouts.udp = *value,
                _ => {}
            }
        }
        timeouts
    }
}
