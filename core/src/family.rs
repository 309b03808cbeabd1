//! IP families: `IPv4` and `IPv6`, as written in `spec.ipFamilies`.

use serde::{Deserialize, Serialize};
use std::fmt;
use std::net::IpAddr;

/// An IP family.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub enum IpFamily {
    /// IPv4.
    IPv4,
    /// IPv6.
    IPv6,
}

impl IpFamily {
    /// The family of `ip`.
    pub fn of(ip: IpAddr) -> IpFamily {
        match ip {
            IpAddr::V4(_) => IpFamily::IPv4,
            IpAddr::V6(_) => IpFamily::IPv6,
        }
    }

    /// The name used in `spec.ipFamilies`.
    pub fn as_str(self) -> &'static str {
        match self {
            IpFamily::IPv4 => "IPv4",
            IpFamily::IPv6 => "IPv6",
        }
    }

    /// Parses `IPv4`/`IPv6`.
    pub fn parse(s: &str) -> Option<IpFamily> {
        match s {
            "IPv4" => Some(IpFamily::IPv4),
            "IPv6" => Some(IpFamily::IPv6),
            _ => None,
        }
    }

    /// The other family.
    pub fn other(self) -> IpFamily {
        match self {
            IpFamily::IPv4 => IpFamily::IPv6,
            IpFamily::IPv6 => IpFamily::IPv4,
        }
    }
}

impl fmt::Display for IpFamily {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}
