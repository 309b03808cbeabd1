//! The table as people read it: `ipvsadm-save -n` text, an `ipvsadm -Ln`
//! listing, JSON, and each plan operation as the command that performs it.
//!
//! Both `ipvsadm` formats follow ipvsadm 1.31's printf formats byte for
//! byte, including the padding of listing columns (so listing lines end in
//! spaces, as the real tool's do), and list virtual servers and real servers
//! in the order `ipvsadm` sorts them in (see [`order`](mod@super::order): family,
//! protocol, then addresses compared by a wrapping 32-bit subtraction, so
//! 192.168.0.10 comes before 10.96.0.1).

mod parse;

pub use parse::{parse_ipvsadm_save, SaveParseError, SaveProblem};

use super::order;
use super::plan::Operation;
use super::scheduler::Scheduler;
use super::table::{Flags, Forward, IpvsTable, Protocol, VirtualServerKey, VirtualServerSettings};
use std::fmt::{self, Write};
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};

/// The dummy interface ClusterIPs are bound on.
pub const DUMMY_INTERFACE: &str = "kube-ipvs0";

/// The table as `ipvsadm-save -n` (`ipvsadm -S -n`) prints it: each `-A`
/// followed by its `-a` lines, ready for `ipvsadm -R`.
pub fn ipvsadm_save(table: &IpvsTable) -> String {
    let mut out = String::with_capacity(64 * (table.virtual_servers.len() + table.real_server_count()));
    // Writing to a String cannot fail.
    for (key, vs) in order::virtual_servers(table) {
        let _ = writeln!(out, "-A {}{}", rule_service(key), service_options(key, &vs.settings));
        for (addr, rs) in order::real_servers(vs) {
            let tunnel = if rs.forward == Forward::Tunnel {
                " --tun-type ipip"
            } else {
                ""
            };
            let _ = writeln!(
                out,
                "-a {} -r {} {} -w {}{tunnel}",
                rule_service(key),
                addrport(*addr),
                forward_switch(rs.forward),
                rs.weight
            );
        }
    }
    out
}

/// The table as `ipvsadm -Ln` prints it, with the connection counters.
pub fn ipvsadm_list(table: &IpvsTable) -> String {
    let mut out = String::from(
        "IP Virtual Server version 1.2.1 (size=4096)\n\
         Prot LocalAddress:Port Scheduler Flags\n  \
         -> RemoteAddress:Port           Forward Weight ActiveConn InActConn\n",
    );
    for (key, vs) in order::virtual_servers(table) {
        let s = &vs.settings;
        let name = format!("{:<4} {}", key.protocol.as_str(), addrport(key.socket_addr()));
        out.push_str(&format!("{name} {}", s.scheduler));
        if s.flags.has_sched_flags() {
            out.push_str(&format!(" ({})", sched_flags(&s.scheduler, s.flags)));
        }
        if s.flags.contains(Flags::PERSISTENT) {
            out.push_str(&format!(" persistent {}", s.timeout));
            if let Some(mask) = partial_mask(key, s.netmask) {
                out.push_str(&format!(" mask {mask}"));
            }
        }
        if s.flags.contains(Flags::ONE_PACKET) {
            out.push_str(" ops");
        }
        out.push('\n');
        for (addr, rs) in order::real_servers(vs) {
            out.push_str(&format!(
                "  -> {:<28} {:<7} {:<6} {:<10} {:<10}\n",
                addrport(*addr),
                forward_name(rs.forward),
                rs.weight,
                rs.active_connections,
                rs.inactive_connections
            ));
        }
    }
    out
}

/// The table as pretty-printed JSON (top-level `virtualServers` and
/// `addresses`).
pub fn table_json(table: &IpvsTable) -> String {
    // Serialising the table cannot fail: every map key serialises as a
    // string and no serialiser returns an error.
    serde_json::to_string_pretty(table).unwrap_or_default()
}

impl fmt::Display for Operation {
    /// The `ipvsadm` (or `ip`) command that performs the operation.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Operation::BindAddress { address } => {
                write!(
                    f,
                    "ip addr add {address}/{} dev {DUMMY_INTERFACE}",
                    prefix_len(*address)
                )
            }
            Operation::UnbindAddress { address } => {
                write!(
                    f,
                    "ip addr del {address}/{} dev {DUMMY_INTERFACE}",
                    prefix_len(*address)
                )
            }
            Operation::AddVirtualServer {
                virtual_server,
                settings,
            } => write!(
                f,
                "-A {}{}",
                rule_service(virtual_server),
                service_options(virtual_server, settings)
            ),
            Operation::UpdateVirtualServer {
                virtual_server,
                settings,
            } => write!(
                f,
                "-E {}{}",
                rule_service(virtual_server),
                service_options(virtual_server, settings)
            ),
            Operation::DeleteVirtualServer { virtual_server } => write!(f, "-D {}", rule_service(virtual_server)),
            Operation::AddRealServer {
                virtual_server,
                real_server,
                forward,
                weight,
            } => write!(
                f,
                "-a {} -r {} {} -w {weight}",
                rule_service(virtual_server),
                addrport(*real_server),
                forward_switch(*forward)
            ),
            Operation::UpdateRealServer {
                virtual_server,
                real_server,
                forward,
                weight,
            } => write!(
                f,
                "-e {} -r {} {} -w {weight}",
                rule_service(virtual_server),
                addrport(*real_server),
                forward_switch(*forward)
            ),
            Operation::DeleteRealServer {
                virtual_server,
                real_server,
            } => write!(f, "-d {} -r {}", rule_service(virtual_server), addrport(*real_server)),
        }
    }
}

/// `-t 10.96.0.1:443`, `-u [fd00::10]:53`, `--sctp-service 10.96.0.7:9`.
fn rule_service(key: &VirtualServerKey) -> RuleService<'_> {
    RuleService(key)
}

/// See [`rule_service`].
struct RuleService<'a>(&'a VirtualServerKey);

impl fmt::Display for RuleService<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let switch = match self.0.protocol {
            Protocol::Tcp => "-t",
            Protocol::Udp => "-u",
            Protocol::Sctp => "--sctp-service",
        };
        write!(f, "{switch} {}", addrport(self.0.socket_addr()))
    }
}

/// `-s rr`, then `-p timeout [-M mask]`, `-o`, `-b flags`, in ipvsadm's order.
fn service_options(key: &VirtualServerKey, s: &VirtualServerSettings) -> String {
    let mut out = format!(" -s {}", s.scheduler);
    if s.flags.contains(Flags::PERSISTENT) {
        let _ = write!(out, " -p {}", s.timeout);
        if let Some(mask) = partial_mask(key, s.netmask) {
            let _ = write!(out, " -M {mask}");
        }
    }
    if s.flags.contains(Flags::ONE_PACKET) {
        out.push_str(" -o");
    }
    if s.flags.has_sched_flags() {
        let _ = write!(out, " -b {}", sched_flags(&s.scheduler, s.flags));
    }
    out
}

/// The persistence netmask when it is not the family's full mask:
/// dotted for IPv4, a prefix length for IPv6.
fn partial_mask(key: &VirtualServerKey, netmask: u32) -> Option<String> {
    match key.address {
        IpAddr::V4(_) => (netmask != u32::MAX).then(|| Ipv4Addr::from(netmask).to_string()),
        IpAddr::V6(_) => (netmask != 128).then(|| netmask.to_string()),
    }
}

/// Scheduler flags named as ipvsadm names them for this scheduler.
fn sched_flags(scheduler: &Scheduler, flags: Flags) -> String {
    let (one, two) = match scheduler {
        Scheduler::Sh => ("sh-fallback", "sh-port"),
        Scheduler::Mh => ("mh-fallback", "mh-port"),
        _ => ("flag-1", "flag-2"),
    };
    [(Flags::SCHED1, one), (Flags::SCHED2, two), (Flags::SCHED3, "flag-3")]
        .into_iter()
        .filter(|(flag, _)| flags.contains(*flag))
        .map(|(_, name)| name)
        .collect::<Vec<_>>()
        .join(",")
}

fn forward_switch(forward: Forward) -> &'static str {
    match forward {
        Forward::Masq => "-m",
        Forward::Tunnel => "-i",
        Forward::Local | Forward::Route => "-g",
    }
}

fn forward_name(forward: Forward) -> &'static str {
    match forward {
        Forward::Masq => "Masq",
        Forward::Local => "Local",
        Forward::Tunnel => "Tunnel",
        Forward::Route => "Route",
    }
}

fn prefix_len(address: IpAddr) -> u8 {
    match address {
        IpAddr::V4(_) => 32,
        IpAddr::V6(_) => 128,
    }
}

/// `addr:port`, or `[addr]:port` for IPv6, with addresses written as glibc's
/// `inet_ntop` writes them. Honours a width (`{:<28}`), as the listing needs.
fn addrport(addr: SocketAddr) -> AddrPort {
    AddrPort(addr)
}

/// See [`addrport`].
struct AddrPort(SocketAddr);

impl fmt::Display for AddrPort {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if f.width().is_some() {
            return f.pad(&AddrPort(self.0).to_string());
        }
        match self.0.ip() {
            IpAddr::V4(v4) => write!(f, "{v4}:{}", self.0.port()),
            IpAddr::V6(v6) => write!(f, "[{}]:{}", Ntop6(v6), self.0.port()),
        }
    }
}

/// `inet_ntop` for IPv6: as Rust writes it, except that IPv4-compatible
/// addresses (`::a.b.c.d`) keep their dotted tail.
struct Ntop6(Ipv6Addr);

impl fmt::Display for Ntop6 {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let s = self.0.segments();
        if s[..6].iter().all(|w| *w == 0) && s[6] != 0 {
            let [.., a, b, c, d] = self.0.octets();
            return write!(f, "::{a}.{b}.{c}.{d}");
        }
        write!(f, "{}", self.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::collections::SortedMap;
    use crate::proxy::table::{full_netmask, RealServer, VirtualServer};

    fn settings(scheduler: &str, flags: Flags, timeout: u32, key: &VirtualServerKey) -> VirtualServerSettings {
        VirtualServerSettings {
            scheduler: Scheduler::from_name(scheduler),
            flags,
            timeout,
            netmask: full_netmask(key.family()),
        }
    }

    /// The table BUILDING.md shows `ipvsadm -S -n` printing on a real kernel.
    fn building_md_table() -> IpvsTable {
        let mut table = IpvsTable::new();
        type Entry<'a> = (&'a str, &'a str, Flags, u32, &'a [(&'a str, u32)]);
        let entries: [Entry<'_>; 4] = [
            (
                "TCP/10.96.0.50:443",
                "rr",
                Flags::PERSISTENT,
                600,
                &[("10.244.1.11:8443", 1)],
            ),
            ("UDP/10.96.0.10:53", "rr", Flags::NONE, 0, &[("10.244.0.5:53", 1)]),
            ("SCTP/10.96.0.77:9000", "lc", Flags::NONE, 0, &[]),
            (
                "TCP/[fd00:10:96::20]:80",
                "mh",
                Flags::SCHED2,
                0,
                &[("[fd00:10:244::5]:8080", 0)],
            ),
        ];
        for (k, sched, flags, timeout, real) in entries {
            let key: VirtualServerKey = k.parse().expect("key");
            let real_servers: SortedMap<SocketAddr, RealServer> = real
                .iter()
                .map(|(a, w)| (a.parse().expect("addr"), RealServer::masq(*w)))
                .collect();
            table.virtual_servers.insert(
                key,
                VirtualServer {
                    settings: settings(sched, flags.with(Flags::HASHED), timeout, &key),
                    real_servers,
                },
            );
        }
        table
    }

    #[test]
    fn save_matches_the_real_kernel_dump() {
        assert_eq!(
            ipvsadm_save(&building_md_table()),
            "-A -t 10.96.0.50:443 -s rr -p 600\n\
             -a -t 10.96.0.50:443 -r 10.244.1.11:8443 -m -w 1\n\
             -A -u 10.96.0.10:53 -s rr\n\
             -a -u 10.96.0.10:53 -r 10.244.0.5:53 -m -w 1\n\
             -A --sctp-service 10.96.0.77:9000 -s lc\n\
             -A -t [fd00:10:96::20]:80 -s mh -b mh-port\n\
             -a -t [fd00:10:96::20]:80 -r [fd00:10:244::5]:8080 -m -w 0\n"
        );
    }

    #[test]
    fn list_is_padded_like_ipvsadm() {
        let mut table = building_md_table();
        let key: VirtualServerKey = "TCP/10.96.0.50:443".parse().expect("key");
        table.set_counters(&key, "10.244.1.11:8443".parse().expect("addr"), 12, 3);
        let text = ipvsadm_list(&table);
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines[0], "IP Virtual Server version 1.2.1 (size=4096)");
        assert_eq!(lines[1], "Prot LocalAddress:Port Scheduler Flags");
        assert_eq!(
            lines[2],
            "  -> RemoteAddress:Port           Forward Weight ActiveConn InActConn"
        );
        assert_eq!(lines[3], "TCP  10.96.0.50:443 rr persistent 600");
        assert_eq!(
            lines[4],
            "  -> 10.244.1.11:8443             Masq    1      12         3         "
        );
        assert_eq!(lines[5], "UDP  10.96.0.10:53 rr");
        assert_eq!(lines[7], "SCTP 10.96.0.77:9000 lc");
        assert_eq!(lines[8], "TCP  [fd00:10:96::20]:80 mh (mh-port)");
        assert_eq!(
            lines[9],
            "  -> [fd00:10:244::5]:8080        Masq    0      0          0         "
        );
    }

    #[test]
    fn masks_one_packet_and_flags_in_order() {
        let key: VirtualServerKey = "UDP/10.0.0.1:53".parse().expect("key");
        let mut s = settings(
            "sh",
            Flags::PERSISTENT
                .with(Flags::ONE_PACKET)
                .with(Flags::SCHED1)
                .with(Flags::SCHED2),
            60,
            &key,
        );
        s.netmask = 0xffff_ff00;
        assert_eq!(
            service_options(&key, &s),
            " -s sh -p 60 -M 255.255.255.0 -o -b sh-fallback,sh-port"
        );
        s.scheduler = Scheduler::Wlc;
        s.flags = Flags::SCHED3;
        assert_eq!(service_options(&key, &s), " -s wlc -b flag-3");
    }

    #[test]
    fn ipv6_addresses_as_inet_ntop_writes_them() {
        assert_eq!(
            addrport("[::1.2.3.4]:80".parse().expect("addr")).to_string(),
            "[::1.2.3.4]:80"
        );
        assert_eq!(
            addrport("[::ffff:1.2.3.4]:80".parse().expect("addr")).to_string(),
            "[::ffff:1.2.3.4]:80"
        );
        assert_eq!(addrport("[::1]:80".parse().expect("addr")).to_string(), "[::1]:80");
        assert_eq!(
            addrport("[fd00:0:0:1::5]:80".parse().expect("addr")).to_string(),
            "[fd00:0:0:1::5]:80"
        );
    }
}
