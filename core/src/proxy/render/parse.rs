//! Reading `ipvsadm-save -n` text back into a table: what the real tool
//! printed, to compare with what the core wanted (the kernel checks in the
//! VM), or a saved table to start from.
//!
//! Each line is `-A` (a virtual server: `-t`, `-u` or `--sctp-service`
//! with `-s`, `-p`, `-M`, `-b`, `-o`) or `-a` (a real server of the `-A`
//! above it: `-r` with `-w` and one of `-m`, `-g`, `-i`). Fields left out
//! take `ipvsadm`'s defaults: the `wlc` scheduler, weight 1, direct
//! routing, a full netmask.

use super::super::scheduler::Scheduler;
use super::super::table::{
    full_netmask, Flags, Forward, IpvsTable, Protocol, RealServer, VirtualServer, VirtualServerKey,
    VirtualServerSettings,
};
use crate::collections::SortedMap;
use std::net::{Ipv4Addr, SocketAddr};

/// A line of `ipvsadm-save` text that could not be read, with its number
/// (from 1) and what was wrong.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("ipvsadm-save line {line}: {problem}")]
pub struct SaveParseError {
    /// The line's number, from 1.
    pub line: usize,
    /// What was wrong with it.
    pub problem: SaveProblem,
}

/// What was wrong with a line of `ipvsadm-save` text.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum SaveProblem {
    /// The line starts with neither `-A` nor `-a`.
    #[error("starts with {0:?}, neither -A nor -a")]
    NoCommand(String),
    /// No `-t`, `-u` or `--sctp-service`.
    #[error("no -t, -u or --sctp-service")]
    NoService,
    /// An `-a` line without `-r`.
    #[error("-a without -r")]
    NoRealServer,
    /// An `-a` line for a virtual server no `-A` line added.
    #[error("-a for {0}, which no -A line above added")]
    UnknownVirtualServer(String),
    /// An option this reader does not know.
    #[error("unknown option {0:?}")]
    UnknownOption(String),
    /// An option's value is not what it must be.
    #[error("{option} {value:?}: {expected}")]
    BadValue {
        /// The option (`-t`, `-w`, ...).
        option: String,
        /// The value given.
        value: String,
        /// What it must be.
        expected: &'static str,
    },
}

/// The table that `text` (`ipvsadm-save -n` output) describes.
pub fn parse_ipvsadm_save(text: &str) -> Result<IpvsTable, SaveParseError> {
    let mut table = IpvsTable::new();
    for (number, line) in text.lines().enumerate() {
        let line = line.trim();
        if line.is_empty() {
            continue;
        }
        parse_line(line, &mut table).map_err(|problem| SaveParseError {
            line: number + 1,
            problem,
        })?;
    }
    Ok(table)
}

/// The options of one line.
struct Line {
    service: Option<VirtualServerKey>,
    real: Option<SocketAddr>,
    scheduler: Scheduler,
    weight: u32,
    flags: Flags,
    timeout: u32,
    netmask: Option<u32>,
    forward: Forward,
}

fn parse_line(line: &str, table: &mut IpvsTable) -> Result<(), SaveProblem> {
    let words: Vec<&str> = line.split_whitespace().collect();
    let mut parsed = Line {
        service: None,
        real: None,
        scheduler: Scheduler::Wlc,
        weight: 1,
        flags: Flags::NONE,
        timeout: 0,
        netmask: None,
        forward: Forward::Route,
    };
    let mut i = 1;
    while i < words.len() {
        i += option(words[i], words.get(i + 1).copied().unwrap_or(""), &mut parsed)?;
    }
    let service = parsed.service.ok_or(SaveProblem::NoService)?;
    match words[0] {
        "-A" => {
            let settings = VirtualServerSettings {
                scheduler: parsed.scheduler,
                flags: parsed.flags,
                timeout: parsed.timeout,
                netmask: parsed.netmask.unwrap_or_else(|| full_netmask(service.family())),
            };
            let server = VirtualServer {
                settings,
                real_servers: SortedMap::new(),
            };
            table.virtual_servers.insert(service, server);
        }
        "-a" => {
            let real = parsed.real.ok_or(SaveProblem::NoRealServer)?;
            let server = (table.virtual_servers.get_mut(&service))
                .ok_or_else(|| SaveProblem::UnknownVirtualServer(service.to_string()))?;
            let mut rs = RealServer::masq(parsed.weight);
            rs.forward = parsed.forward;
            server.real_servers.insert(real, rs);
        }
        other => return Err(SaveProblem::NoCommand(other.to_string())),
    }
    Ok(())
}

/// Reads option `name` (with `value`, when it takes one) into `line`;
/// returns how many words it used.
fn option(name: &str, value: &str, line: &mut Line) -> Result<usize, SaveProblem> {
    let bad = |expected| SaveProblem::BadValue {
        option: name.to_string(),
        value: value.to_string(),
        expected,
    };
    let address = || {
        value
            .parse::<SocketAddr>()
            .map_err(|_| bad("ADDRESS:PORT or [ADDRESS]:PORT"))
    };
    let service = |protocol| address().map(|a| Some(VirtualServerKey::new(protocol, a.ip(), a.port())));
    let number = || value.parse::<u32>().map_err(|_| bad("a whole number"));
    match name {
        "-t" => line.service = service(Protocol::Tcp)?,
        "-u" => line.service = service(Protocol::Udp)?,
        "--sctp-service" => line.service = service(Protocol::Sctp)?,
        "-s" => line.scheduler = Scheduler::from_name(value),
        "-p" => {
            line.flags = line.flags.with(Flags::PERSISTENT);
            line.timeout = number()?;
        }
        "-M" => {
            line.netmask = Some(match value.parse::<Ipv4Addr>() {
                Ok(mask) => u32::from(mask),
                Err(_) => value.parse().map_err(|_| bad("a netmask or a prefix length"))?,
            })
        }
        "-b" => {
            for flag in value.split(',') {
                line.flags = line.flags.with(match flag {
                    "sh-fallback" | "mh-fallback" | "flag-1" => Flags::SCHED1,
                    "sh-port" | "mh-port" | "flag-2" => Flags::SCHED2,
                    "flag-3" => Flags::SCHED3,
                    _ => return Err(bad("sh-fallback, sh-port, mh-fallback, mh-port or flag-1 to flag-3")),
                });
            }
        }
        "-o" => {
            line.flags = line.flags.with(Flags::ONE_PACKET);
            return Ok(1);
        }
        "-r" => line.real = Some(address()?),
        "-w" => line.weight = number()?,
        "-m" | "-g" | "-i" => {
            line.forward = match name {
                "-m" => Forward::Masq,
                "-i" => Forward::Tunnel,
                _ => Forward::Route,
            };
            return Ok(1);
        }
        other => return Err(SaveProblem::UnknownOption(other.to_string())),
    }
    Ok(2)
}

#[cfg(test)]
mod tests {
    use super::super::ipvsadm_save;
    use super::*;

    const SAVED: &str = "\
-A -t 10.96.0.1:443 -s rr
-a -t 10.96.0.1:443 -r 192.168.49.2:6443 -m -w 1
-A -u 10.96.0.10:53 -s sh -b sh-port -p 10800
-a -u 10.96.0.10:53 -r 10.244.0.2:53 -m -w 1
-a -u 10.96.0.10:53 -r 10.244.0.3:53 -m -w 0
-A -t [fd00:10:96::1]:443 -s rr
-a -t [fd00:10:96::1]:443 -r [fd00:192:168:49::2]:6443 -m -w 1
";

    #[test]
    fn what_the_core_saves_reads_back_the_same() {
        let table = parse_ipvsadm_save(SAVED).unwrap();
        assert_eq!(table.virtual_servers.len(), 3);
        let dns = &table.virtual_servers[&VirtualServerKey::new(Protocol::Udp, "10.96.0.10".parse().unwrap(), 53)];
        assert_eq!(dns.settings.timeout, 10800);
        assert!(dns.settings.flags.contains(Flags::PERSISTENT) && dns.settings.flags.contains(Flags::SCHED2));
        assert_eq!(parse_ipvsadm_save(&ipvsadm_save(&table)).unwrap(), table);
    }

    #[test]
    fn a_bad_line_is_named_with_what_is_wrong() {
        let error = |text: &str| parse_ipvsadm_save(text).unwrap_err().to_string();
        assert_eq!(
            error("-A -t 10.96.0.1:443 -s rr\n-a -t 10.96.0.1:443 -r 10.0.0.1:80 -w lots"),
            "ipvsadm-save line 2: -w \"lots\": a whole number"
        );
        assert_eq!(
            error("-a -t 10.96.0.1:443 -r 10.0.0.1:80"),
            "ipvsadm-save line 1: -a for TCP/10.96.0.1:443, which no -A line above added"
        );
        assert_eq!(
            error("-A -t 10.96.0.1 -s rr"),
            "ipvsadm-save line 1: -t \"10.96.0.1\": ADDRESS:PORT or [ADDRESS]:PORT"
        );
        assert_eq!(
            error("-E -t 10.96.0.1:443"),
            "ipvsadm-save line 1: starts with \"-E\", neither -A nor -a"
        );
        assert_eq!(error("-A -s rr"), "ipvsadm-save line 1: no -t, -u or --sctp-service");
        assert_eq!(
            error("-A -t 10.96.0.1:443 -x"),
            "ipvsadm-save line 1: unknown option \"-x\""
        );
    }
}
