//! The IPVS table: virtual servers, their real servers and the addresses
//! bound on `kube-ipvs0`.
//!
//! One type, [`IpvsTable`], serves as both the desired table (what a node
//! should have) and the observed one (what the kernel reports, with its
//! connection counters), so the plan is a pure diff of two values of the same
//! type. Maps are `SortedMap`s: iteration, JSON and rendering are
//! deterministic: virtual servers by family, protocol, address and port,
//! numerically (`ipvsadm` lists them in its own, wrapping order, which
//! [`order`](mod@super::order) reproduces for rendering).
//!
//! JSON (camelCase): `{"virtualServers": {"TCP/10.96.0.1:443": {"scheduler":
//! "rr", "flags": [], "timeout": 0, "netmask": 4294967295, "realServers":
//! {"192.168.0.10:6443": {"forward": "masq", "weight": 1,
//! "activeConnections": 0, "inactiveConnections": 0}}}}, "addresses":
//! ["10.96.0.1"]}`. When reading JSON, an absent or zero `netmask` means the
//! family's full mask (0xffffffff for IPv4, 128 for IPv6).

use super::scheduler::Scheduler;
use crate::collections::{SortedMap, SortedSet};
use crate::family::IpFamily;
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use std::cmp::Ordering;
use std::fmt;
use std::net::{IpAddr, SocketAddr};
use std::str::FromStr;
use thiserror::Error;

/// A transport protocol IPVS balances, in the kernel's numeric order.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub enum Protocol {
    /// TCP (IP protocol 6), `-t` in `ipvsadm`.
    #[serde(rename = "TCP")]
    Tcp,
    /// UDP (IP protocol 17), `-u`.
    #[serde(rename = "UDP")]
    Udp,
    /// SCTP (IP protocol 132), `--sctp-service`.
    #[serde(rename = "SCTP")]
    Sctp,
}

impl Protocol {
    /// Parses a Service port protocol (`TCP`, `UDP`, `SCTP`).
    pub fn parse(text: &str) -> Option<Protocol> {
        match text {
            "TCP" => Some(Protocol::Tcp),
            "UDP" => Some(Protocol::Udp),
            "SCTP" => Some(Protocol::Sctp),
            _ => None,
        }
    }

    /// The name Kubernetes and `ipvsadm -L` use.
    pub fn as_str(self) -> &'static str {
        match self {
            Protocol::Tcp => "TCP",
            Protocol::Udp => "UDP",
            Protocol::Sctp => "SCTP",
        }
    }

    /// The IP protocol number (`IPVS_SVC_ATTR_PROTOCOL`).
    pub fn number(self) -> u16 {
        match self {
            Protocol::Tcp => 6,
            Protocol::Udp => 17,
            Protocol::Sctp => 132,
        }
    }
}

impl fmt::Display for Protocol {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Identifies a virtual server: protocol, address and port.
///
/// Ordered IPv4 before IPv6, then by protocol (TCP, UDP, SCTP), address
/// and port, numerically (a total order, unlike `ipvsadm`'s wrapping address
/// comparison; see [`order`](mod@super::order)). Written `TCP/10.96.0.1:443` or
/// `UDP/[fd00::10]:53`, which is also its JSON form.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct VirtualServerKey {
    /// TCP, UDP or SCTP.
    pub protocol: Protocol,
    /// The virtual address.
    pub address: IpAddr,
    /// The virtual port.
    pub port: u16,
}

impl VirtualServerKey {
    /// A key from its parts.
    pub fn new(protocol: Protocol, address: IpAddr, port: u16) -> VirtualServerKey {
        VirtualServerKey {
            protocol,
            address,
            port,
        }
    }

    /// The address family.
    pub fn family(&self) -> IpFamily {
        IpFamily::of(self.address)
    }

    /// Address and port as a socket address.
    pub fn socket_addr(&self) -> SocketAddr {
        SocketAddr::new(self.address, self.port)
    }

    /// The smallest and largest keys with this protocol and address, for
    /// range scans over one address.
    pub fn address_range(protocol: Protocol, address: IpAddr) -> (VirtualServerKey, VirtualServerKey) {
        (
            VirtualServerKey::new(protocol, address, 0),
            VirtualServerKey::new(protocol, address, u16::MAX),
        )
    }
}

impl VirtualServerKey {
    /// What the order compares: the family, the protocol, the address as a
    /// number, the port (integers compare faster than `IpAddr`'s octets,
    /// and keys are compared at every step of the tables' maps).
    fn order_key(&self) -> (bool, Protocol, u128, u16) {
        let (v6, address) = match self.address {
            IpAddr::V4(a) => (false, u128::from(u32::from(a))),
            IpAddr::V6(a) => (true, u128::from(a)),
        };
        (v6, self.protocol, address, self.port)
    }
}

impl Ord for VirtualServerKey {
    fn cmp(&self, other: &Self) -> Ordering {
        self.order_key().cmp(&other.order_key())
    }
}

impl PartialOrd for VirtualServerKey {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl fmt::Display for VirtualServerKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.protocol, self.socket_addr())
    }
}

/// Why a virtual server key did not parse.
#[derive(Clone, Debug, PartialEq, Eq, Error)]
pub enum KeyError {
    /// Not `PROTOCOL/address:port`.
    #[error(
        "invalid virtual server {0:?}: expected PROTOCOL/address:port, such as TCP/10.96.0.1:443 or UDP/[fd00::10]:53"
    )]
    Syntax(String),
}

impl FromStr for VirtualServerKey {
    type Err = KeyError;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        let bad = || KeyError::Syntax(text.to_string());
        let (protocol, addr) = text.split_once('/').ok_or_else(bad)?;
        let protocol = Protocol::parse(protocol).ok_or_else(bad)?;
        let addr: SocketAddr = addr.parse().map_err(|_| bad())?;
        Ok(VirtualServerKey::new(protocol, addr.ip(), addr.port()))
    }
}

impl Serialize for VirtualServerKey {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for VirtualServerKey {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let text = String::deserialize(d)?;
        text.parse().map_err(serde::de::Error::custom)
    }
}

/// Virtual server flags (`IP_VS_SVC_F_*`), as the kernel stores them.
///
/// JSON: a list of names (`persistent`, `hashed`, `onePacket`, `sched1`,
/// `sched2`, `sched3`); bits without a name are written in hex (`0x40`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct Flags(pub u32);

impl Flags {
    /// No flags.
    pub const NONE: Flags = Flags(0);
    /// Persistent service (session affinity): `-p`.
    pub const PERSISTENT: Flags = Flags(0x1);
    /// Hashed entry; the kernel sets it on every service it reports.
    pub const HASHED: Flags = Flags(0x2);
    /// One-packet scheduling: `-o`.
    pub const ONE_PACKET: Flags = Flags(0x4);
    /// Scheduler flag 1: `sh-fallback` for `sh`, `mh-fallback` for `mh`.
    pub const SCHED1: Flags = Flags(0x8);
    /// Scheduler flag 2: `sh-port` for `sh`, `mh-port` for `mh`.
    pub const SCHED2: Flags = Flags(0x10);
    /// Scheduler flag 3.
    pub const SCHED3: Flags = Flags(0x20);

    const NAMES: [(Flags, &'static str); 6] = [
        (Flags::PERSISTENT, "persistent"),
        (Flags::HASHED, "hashed"),
        (Flags::ONE_PACKET, "onePacket"),
        (Flags::SCHED1, "sched1"),
        (Flags::SCHED2, "sched2"),
        (Flags::SCHED3, "sched3"),
    ];

    /// True when every bit of `other` is set.
    pub fn contains(self, other: Flags) -> bool {
        self.0 & other.0 == other.0
    }

    /// These flags plus `other`.
    pub fn with(self, other: Flags) -> Flags {
        Flags(self.0 | other.0)
    }

    /// These flags without `other`.
    pub fn without(self, other: Flags) -> Flags {
        Flags(self.0 & !other.0)
    }

    /// True when any scheduler flag (1, 2 or 3) is set.
    pub fn has_sched_flags(self) -> bool {
        self.0 & (Flags::SCHED1.0 | Flags::SCHED2.0 | Flags::SCHED3.0) != 0
    }
}

impl Serialize for Flags {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut names: Vec<String> = Vec::new();
        let mut rest = self.0;
        for (flag, name) in Flags::NAMES {
            if self.contains(flag) {
                names.push(name.to_string());
                rest &= !flag.0;
            }
        }
        for bit in 0..32 {
            if rest & (1 << bit) != 0 {
                names.push(format!("{:#x}", 1u32 << bit));
            }
        }
        names.serialize(s)
    }
}

impl<'de> Deserialize<'de> for Flags {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let names = Vec::<String>::deserialize(d)?;
        let mut flags = Flags::NONE;
        for name in names {
            let named = Flags::NAMES.iter().find(|(_, n)| *n == name).map(|(f, _)| *f);
            let bits = match named {
                Some(f) => f,
                None => name
                    .strip_prefix("0x")
                    .and_then(|hex| u32::from_str_radix(hex, 16).ok())
                    .map(Flags)
                    .ok_or_else(|| {
                        serde::de::Error::custom(format!(
                            "unknown virtual server flag {name:?}: expected persistent, hashed, onePacket, \
                             sched1, sched2, sched3 or a hex bit such as 0x40"
                        ))
                    })?,
            };
            flags = flags.with(bits);
        }
        Ok(flags)
    }
}

/// How IPVS forwards packets to a real server (`IPVS_DEST_ATTR_FWD_METHOD`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum Forward {
    /// NAT (0): what kube-proxy and svcnet use. `-m`, `Masq`.
    #[default]
    Masq,
    /// Local delivery (1). `Local`.
    Local,
    /// IP-in-IP tunnel (2). `-i`, `Tunnel`.
    Tunnel,
    /// Direct routing (3). `-g`, `Route`.
    Route,
}

impl Forward {
    /// The value of `IPVS_DEST_ATTR_FWD_METHOD`.
    pub fn number(self) -> u32 {
        match self {
            Forward::Masq => 0,
            Forward::Local => 1,
            Forward::Tunnel => 2,
            Forward::Route => 3,
        }
    }
}

/// A virtual server's settings, without its real servers: what
/// `NEW_SERVICE`/`SET_SERVICE` carry.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct VirtualServerSettings {
    /// The scheduler (`rr`, `mh`, ...).
    pub scheduler: Scheduler,
    /// Persistence, scheduler flags; `hashed` as the kernel reports it.
    #[serde(default)]
    pub flags: Flags,
    /// Persistence timeout in seconds (0 when not persistent).
    #[serde(default)]
    pub timeout: u32,
    /// Persistence granularity: for IPv4 the mask as a number in host
    /// order (0xffffffff, or 0xffffff00 for 255.255.255.0), for IPv6 a
    /// prefix length (128).
    #[serde(default)]
    pub netmask: u32,
}

impl VirtualServerSettings {
    /// True when the kernel would need no `SET_SERVICE` to turn `self` into
    /// `other`: everything equal except the `hashed` flag, which the kernel
    /// adds on its own.
    pub fn same_as(&self, other: &VirtualServerSettings) -> bool {
        self.scheduler == other.scheduler
            && self.flags.without(Flags::HASHED) == other.flags.without(Flags::HASHED)
            && self.timeout == other.timeout
            && self.netmask == other.netmask
    }
}

/// The full netmask of a family: 0xffffffff for IPv4, 128 (prefix length)
/// for IPv6, as the kernel expects in `IPVS_SVC_ATTR_NETMASK`.
pub fn full_netmask(family: IpFamily) -> u32 {
    match family {
        IpFamily::IPv4 => u32::MAX,
        IpFamily::IPv6 => 128,
    }
}

/// A real server (a destination, in the kernel's words).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RealServer {
    /// Forwarding method.
    #[serde(default)]
    pub forward: Forward,
    /// Scheduling weight; 0 while draining.
    pub weight: u32,
    /// Established connections (observed; 0 in a desired table).
    #[serde(default)]
    pub active_connections: u32,
    /// Other connections, such as TIME_WAIT (observed; 0 in a desired table).
    #[serde(default)]
    pub inactive_connections: u32,
}

impl RealServer {
    /// A NAT real server with this weight and no connections.
    pub fn masq(weight: u32) -> RealServer {
        RealServer {
            forward: Forward::Masq,
            weight,
            active_connections: 0,
            inactive_connections: 0,
        }
    }

    /// True when forwarding method and weight are equal (counters ignored).
    pub fn same_as(&self, other: &RealServer) -> bool {
        self.forward == other.forward && self.weight == other.weight
    }

    /// Active plus inactive connections.
    pub fn connections(&self) -> u64 {
        u64::from(self.active_connections) + u64::from(self.inactive_connections)
    }
}

/// A virtual server and its real servers.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct VirtualServer {
    /// Scheduler, flags, timeout, netmask.
    #[serde(flatten)]
    pub settings: VirtualServerSettings,
    /// The real servers, by address and port.
    #[serde(default)]
    pub real_servers: SortedMap<SocketAddr, RealServer>,
}

/// An IPVS table: virtual servers and the addresses bound on `kube-ipvs0`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct IpvsTable {
    /// Virtual servers, in numeric key order.
    pub virtual_servers: SortedMap<VirtualServerKey, VirtualServer>,
    /// Addresses bound on the `kube-ipvs0` dummy interface.
    pub addresses: SortedSet<IpAddr>,
}

/// The JSON form of [`IpvsTable`], before netmasks are filled in.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct IpvsTableJson {
    #[serde(default)]
    virtual_servers: SortedMap<VirtualServerKey, VirtualServer>,
    #[serde(default)]
    addresses: SortedSet<IpAddr>,
}

impl<'de> Deserialize<'de> for IpvsTable {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let mut json = IpvsTableJson::deserialize(d)?;
        for (key, vs) in &mut json.virtual_servers {
            if vs.settings.netmask == 0 {
                vs.settings.netmask = full_netmask(key.family());
            }
        }
        Ok(IpvsTable {
            virtual_servers: json.virtual_servers,
            addresses: json.addresses,
        })
    }
}

impl IpvsTable {
    /// An empty table.
    pub fn new() -> IpvsTable {
        IpvsTable::default()
    }

    /// The number of real servers over all virtual servers.
    pub fn real_server_count(&self) -> usize {
        self.virtual_servers.values().map(|vs| vs.real_servers.len()).sum()
    }

    /// The virtual servers on one address (any protocol, any port).
    pub fn virtual_servers_on(&self, address: IpAddr) -> impl Iterator<Item = (&VirtualServerKey, &VirtualServer)> {
        [Protocol::Tcp, Protocol::Udp, Protocol::Sctp]
            .into_iter()
            .flat_map(move |protocol| {
                let (first, last) = VirtualServerKey::address_range(protocol, address);
                self.virtual_servers.range(first..=last)
            })
    }

    /// Sets the connection counters of one real server, if it exists;
    /// returns whether it did.
    pub fn set_counters(&mut self, vs: &VirtualServerKey, rs: SocketAddr, active: u32, inactive: u32) -> bool {
        match self
            .virtual_servers
            .get_mut(vs)
            .and_then(|v| v.real_servers.get_mut(&rs))
        {
            Some(real) => {
                real.active_connections = active;
                real.inactive_connections = inactive;
                true
            }
            None => false,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(text: &str) -> VirtualServerKey {
        text.parse().expect("valid key")
    }

    #[test]
    fn keys_sort_like_ipvsadm() {
        let mut keys = [
            key("TCP/[fd00::20]:80"),
            key("SCTP/10.96.0.77:9000"),
            key("UDP/10.96.0.10:53"),
            key("TCP/10.96.0.50:443"),
            key("TCP/10.96.0.50:80"),
        ];
        crate::sort::sort(&mut keys);
        let text: Vec<String> = keys.iter().map(ToString::to_string).collect();
        assert_eq!(
            text,
            [
                "TCP/10.96.0.50:80",
                "TCP/10.96.0.50:443",
                "UDP/10.96.0.10:53",
                "SCTP/10.96.0.77:9000",
                "TCP/[fd00::20]:80"
            ]
        );
    }

    fn any_key() -> impl proptest::strategy::Strategy<Value = VirtualServerKey> {
        use proptest::prelude::*;
        let protocol = prop_oneof![Just(Protocol::Tcp), Just(Protocol::Udp), Just(Protocol::Sctp)];
        // Few distinct values, so equal parts come up often.
        let address = prop_oneof![
            (0u32..4).prop_map(|n| IpAddr::from([10, 96, 0, n as u8])),
            (0u32..4).prop_map(|n| IpAddr::from([0xfd00, 0, 0, 0, 0, 0, 0, n as u16])),
            any::<IpAddr>(),
        ];
        (protocol, address, 0u16..3).prop_map(|(p, a, port)| VirtualServerKey::new(p, a, port))
    }

    proptest::proptest! {
        #[test]
        fn keys_compare_by_family_protocol_address_and_port(a in any_key(), b in any_key()) {
            let parts = |k: &VirtualServerKey| (k.address.is_ipv6(), k.protocol, k.address, k.port);
            proptest::prop_assert_eq!(a.cmp(&b), parts(&a).cmp(&parts(&b)));
        }
    }

    #[test]
    fn netlink_numbers() {
        let protocols: Vec<u16> = [Protocol::Tcp, Protocol::Udp, Protocol::Sctp]
            .map(Protocol::number)
            .into();
        assert_eq!(protocols, [6, 17, 132]);
        let forwards: Vec<u32> = [Forward::Masq, Forward::Local, Forward::Tunnel, Forward::Route]
            .map(Forward::number)
            .into();
        assert_eq!(forwards, [0, 1, 2, 3]);
    }

    #[test]
    fn bad_keys_are_refused() {
        for bad in ["tcp/1.2.3.4:80", "TCP/1.2.3.4", "TCP1.2.3.4:80", "TCP/fd00::1:80"] {
            assert!(bad.parse::<VirtualServerKey>().is_err(), "{bad}");
        }
    }

    #[test]
    fn flags_round_trip_by_name() {
        let flags = Flags::PERSISTENT
            .with(Flags::HASHED)
            .with(Flags::SCHED2)
            .with(Flags(0x40));
        let json = serde_json::to_string(&flags).expect("serialises");
        assert_eq!(json, r#"["persistent","hashed","sched2","0x40"]"#);
        assert_eq!(serde_json::from_str::<Flags>(&json).expect("parses"), flags);
        assert!(serde_json::from_str::<Flags>(r#"["sticky"]"#).is_err());
    }

    #[test]
    fn hashed_flag_is_not_a_difference() {
        let a = VirtualServerSettings {
            scheduler: Scheduler::Rr,
            flags: Flags::NONE,
            timeout: 0,
            netmask: u32::MAX,
        };
        let mut b = a.clone();
        b.flags = Flags::HASHED;
        assert!(a.same_as(&b));
        b.flags = Flags::PERSISTENT;
        assert!(!a.same_as(&b));
    }

    #[test]
    fn json_fills_netmasks_and_round_trips() {
        let text = r#"{"virtualServers": {
            "TCP/10.96.0.1:443": {"scheduler": "rr", "realServers": {"192.168.0.10:6443": {"weight": 1}}},
            "UDP/[fd00::10]:53": {"scheduler": "mh", "flags": ["sched2"]}},
            "addresses": ["10.96.0.1"]}"#;
        let table: IpvsTable = serde_json::from_str(text).expect("parses");
        assert_eq!(
            table.virtual_servers[&key("TCP/10.96.0.1:443")].settings.netmask,
            u32::MAX
        );
        assert_eq!(table.virtual_servers[&key("UDP/[fd00::10]:53")].settings.netmask, 128);
        assert_eq!(table.real_server_count(), 1);
        let again: IpvsTable =
            serde_json::from_str(&serde_json::to_string(&table).expect("serialises")).expect("parses");
        assert_eq!(again, table);
        let json = serde_json::to_value(&table).expect("serialises");
        assert!(json.get("virtualServers").is_some() && json.get("addresses").is_some());
    }

    #[test]
    fn virtual_servers_on_one_address() {
        let mut table = IpvsTable::new();
        let vs = VirtualServer {
            settings: VirtualServerSettings {
                scheduler: Scheduler::Rr,
                flags: Flags::NONE,
                timeout: 0,
                netmask: u32::MAX,
            },
            real_servers: SortedMap::new(),
        };
        for k in [
            "TCP/10.0.0.1:80",
            "UDP/10.0.0.1:53",
            "TCP/10.0.0.2:80",
            "SCTP/10.0.0.1:9",
        ] {
            table.virtual_servers.insert(key(k), vs.clone());
        }
        let on: Vec<String> = table
            .virtual_servers_on("10.0.0.1".parse().expect("ip"))
            .map(|(k, _)| k.to_string())
            .collect();
        assert_eq!(on, ["TCP/10.0.0.1:80", "UDP/10.0.0.1:53", "SCTP/10.0.0.1:9"]);
    }
}
