//! Small value types shared by the IPVS attributes: address family, IP
//! protocol, forwarding method, service flags, scheduler names and the
//! 16-byte address field. Each converts to and from its wire number without
//! losing unknown values, so parsing a kernel reply never fails on them.

use std::fmt;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

use netlink_packet_core::DecodeError;
use thiserror::Error;

use super::constants::*;

/// An address family as the kernel numbers it (`AF_INET`, `AF_INET6`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum AddressFamily {
    /// IPv4 (`AF_INET`, 2).
    Inet,
    /// IPv6 (`AF_INET6`, 10).
    Inet6,
    /// Any other number, kept as it was read.
    Other(u16),
}

impl AddressFamily {
    /// The family of an IP address.
    pub fn of(addr: IpAddr) -> Self {
        match addr {
            IpAddr::V4(_) => Self::Inet,
            IpAddr::V6(_) => Self::Inet6,
        }
    }
}

impl From<u16> for AddressFamily {
    fn from(value: u16) -> Self {
        match value {
            AF_INET => Self::Inet,
            AF_INET6 => Self::Inet6,
            other => Self::Other(other),
        }
    }
}

impl From<AddressFamily> for u16 {
    fn from(af: AddressFamily) -> u16 {
        match af {
            AddressFamily::Inet => AF_INET,
            AddressFamily::Inet6 => AF_INET6,
            AddressFamily::Other(other) => other,
        }
    }
}

/// The transport protocol of a virtual server.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Protocol {
    /// TCP (6): `ipvsadm -t`.
    Tcp,
    /// UDP (17): `ipvsadm -u`.
    Udp,
    /// SCTP (132): `ipvsadm --sctp-service`.
    Sctp,
    /// Any other IP protocol number, kept as it was read.
    Other(u16),
}

impl From<u16> for Protocol {
    fn from(value: u16) -> Self {
        match value {
            IPPROTO_TCP => Self::Tcp,
            IPPROTO_UDP => Self::Udp,
            IPPROTO_SCTP => Self::Sctp,
            other => Self::Other(other),
        }
    }
}

impl From<Protocol> for u16 {
    fn from(protocol: Protocol) -> u16 {
        match protocol {
            Protocol::Tcp => IPPROTO_TCP,
            Protocol::Udp => IPPROTO_UDP,
            Protocol::Sctp => IPPROTO_SCTP,
            Protocol::Other(other) => other,
        }
    }
}

/// How IPVS forwards packets to a real server.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ForwardMethod {
    /// NAT ("masq", `ipvsadm -m`): what kube-proxy uses.
    Masquerade,
    /// Deliver locally.
    Local,
    /// IP-in-IP tunnel (`-i`).
    Tunnel,
    /// Direct routing (`-g`).
    DirectRoute,
    /// Any other number, kept as it was read.
    Other(u32),
}

impl From<u32> for ForwardMethod {
    fn from(value: u32) -> Self {
        match value {
            IP_VS_CONN_F_MASQ => Self::Masquerade,
            IP_VS_CONN_F_LOCALNODE => Self::Local,
            IP_VS_CONN_F_TUNNEL => Self::Tunnel,
            IP_VS_CONN_F_DROUTE => Self::DirectRoute,
            other => Self::Other(other),
        }
    }
}

impl From<ForwardMethod> for u32 {
    fn from(method: ForwardMethod) -> u32 {
        match method {
            ForwardMethod::Masquerade => IP_VS_CONN_F_MASQ,
            ForwardMethod::Local => IP_VS_CONN_F_LOCALNODE,
            ForwardMethod::Tunnel => IP_VS_CONN_F_TUNNEL,
            ForwardMethod::DirectRoute => IP_VS_CONN_F_DROUTE,
            ForwardMethod::Other(other) => other,
        }
    }
}

/// Virtual service flags (`IP_VS_SVC_F_*`), a plain bit set.
///
/// The kernel always sets [`ServiceFlags::HASHED`] on what it reports;
/// compare with [`ServiceFlags::without_hashed`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct ServiceFlags(pub u32);

impl ServiceFlags {
    /// Persistent service (`ipvsadm -p`).
    pub const PERSISTENT: Self = Self(IP_VS_SVC_F_PERSISTENT);
    /// Hashed entry: set by the kernel on every service it reports.
    pub const HASHED: Self = Self(IP_VS_SVC_F_HASHED);
    /// One-packet scheduling (`-o`, UDP only).
    pub const ONE_PACKET: Self = Self(IP_VS_SVC_F_ONEPACKET);
    /// Scheduler flag 1: `sh-fallback` / `mh-fallback`.
    pub const SCHED1: Self = Self(IP_VS_SVC_F_SCHED1);
    /// Scheduler flag 2: `sh-port` / `mh-port`.
    pub const SCHED2: Self = Self(IP_VS_SVC_F_SCHED2);
    /// Scheduler flag 3.
    pub const SCHED3: Self = Self(IP_VS_SVC_F_SCHED3);

    /// The flags with every bit of `other` set as well.
    pub const fn union(self, other: Self) -> Self {
        Self(self.0 | other.0)
    }

    /// Whether every bit of `other` is set.
    pub const fn contains(self, other: Self) -> bool {
        self.0 & other.0 == other.0
    }

    /// The flags without the kernel's bookkeeping [`ServiceFlags::HASHED`] bit.
    pub const fn without_hashed(self) -> Self {
        Self(self.0 & !IP_VS_SVC_F_HASHED)
    }
}

/// Why a scheduler or persistence-engine name cannot be sent.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum NameError {
    /// The name is empty.
    #[error("scheduler name must not be empty")]
    Empty,
    /// The name does not fit the kernel's 16-byte field with its NUL.
    #[error("scheduler name {0:?} is longer than 15 bytes, the kernel's limit")]
    TooLong(String),
    /// The name contains a NUL byte or a character outside printable ASCII.
    #[error("scheduler name {0:?} must be printable ASCII (like rr, wrr, lc, sh, mh)")]
    NotPrintable(String),
}

/// A scheduler name (`rr`, `wrr`, `lc`, `sh`, `mh`, ...), checked to fit the
/// kernel's `IP_VS_SCHEDNAME_MAXLEN` (15 bytes and a NUL).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct SchedulerName(String);

impl SchedulerName {
    /// Check and wrap a scheduler name.
    pub fn new(name: &str) -> Result<Self, NameError> {
        if name.is_empty() {
            Err(NameError::Empty)
        } else if name.len() >= IP_VS_SCHEDNAME_MAXLEN {
            Err(NameError::TooLong(name.to_owned()))
        } else if !name.bytes().all(|b| b.is_ascii_graphic()) {
            Err(NameError::NotPrintable(name.to_owned()))
        } else {
            Ok(Self(name.to_owned()))
        }
    }

    /// The name as text.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for SchedulerName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// The 16-byte address field (`union nf_inet_addr`) of services and
/// destinations: an IPv4 address fills the first 4 bytes, the rest is zero.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct InetAddr(pub [u8; 16]);

impl InetAddr {
    /// Wire length of the field.
    pub const LEN: usize = 16;

    /// Read the field; the kernel sends 16 bytes, a 4-byte IPv4 field is
    /// accepted too.
    pub fn parse(bytes: &[u8]) -> Result<Self, DecodeError> {
        let mut out = [0u8; 16];
        match bytes.len() {
            4 | 16 => {
                out[..bytes.len()].copy_from_slice(bytes);
                Ok(Self(out))
            }
            other => Err(DecodeError::invalid_ip_address(other)),
        }
    }

    /// The address as the given family reads it, or `None` for a family
    /// that is neither IPv4 nor IPv6.
    pub fn to_ip(self, af: AddressFamily) -> Option<IpAddr> {
        match af {
            AddressFamily::Inet => Some(IpAddr::V4(Ipv4Addr::new(self.0[0], self.0[1], self.0[2], self.0[3]))),
            AddressFamily::Inet6 => Some(IpAddr::V6(Ipv6Addr::from(self.0))),
            AddressFamily::Other(_) => None,
        }
    }
}

impl From<IpAddr> for InetAddr {
    fn from(addr: IpAddr) -> Self {
        let mut out = [0u8; 16];
        match addr {
            IpAddr::V4(v4) => out[..4].copy_from_slice(&v4.octets()),
            IpAddr::V6(v6) => out = v6.octets(),
        }
        Self(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_round_trip_including_unknown_ones() {
        for n in [0u16, 2, 10, 99] {
            assert_eq!(u16::from(AddressFamily::from(n)), n);
        }
        for n in [6u16, 17, 132, 50] {
            assert_eq!(u16::from(Protocol::from(n)), n);
        }
        for n in [0u32, 1, 2, 3, 7] {
            assert_eq!(u32::from(ForwardMethod::from(n)), n);
        }
    }

    #[test]
    fn scheduler_names_are_checked() {
        assert_eq!(SchedulerName::new("mh").map(|n| n.to_string()), Ok("mh".to_owned()));
        assert_eq!(SchedulerName::new(""), Err(NameError::Empty));
        assert!(matches!(
            SchedulerName::new("0123456789abcdef"),
            Err(NameError::TooLong(_))
        ));
        assert!(SchedulerName::new("0123456789abcde").is_ok());
        assert!(matches!(SchedulerName::new("r\0r"), Err(NameError::NotPrintable(_))));
    }

    #[test]
    fn addresses_fill_the_16_byte_field() {
        let v4: IpAddr = "10.96.0.10".parse().unwrap();
        let field = InetAddr::from(v4);
        assert_eq!(&field.0[..4], &[10, 96, 0, 10]);
        assert_eq!(field.to_ip(AddressFamily::Inet), Some(v4));
        assert_eq!(InetAddr::parse(&[10, 96, 0, 10]).unwrap(), field);
        assert!(InetAddr::parse(&[1, 2, 3]).is_err());
        let v6: IpAddr = "fd00:10:96::20".parse().unwrap();
        assert_eq!(InetAddr::from(v6).to_ip(AddressFamily::Inet6), Some(v6));
        assert_eq!(field.to_ip(AddressFamily::Other(7)), None);
    }

    #[test]
    fn flags_compose() {
        let flags = ServiceFlags::SCHED1
            .union(ServiceFlags::SCHED2)
            .union(ServiceFlags::HASHED);
        assert!(flags.contains(ServiceFlags::SCHED2));
        assert_eq!(flags.without_hashed(), ServiceFlags(0x18));
    }
}
