//! Lists the kernel's UDP conntrack entries through the agent's own
//! ctnetlink code (`ipvs_agent::kernel::conntrack`), one line each, for
//! `tests/vm/conntrack.sh` (the VM has no `conntrack` tool):
//!
//!     conntrack_list        udp ORIG-SRC ORIG-DST REPLY-SRC, IPv4 then IPv6
//!
//! Exits 1 when a dump fails.

use ipvs_agent::kernel::conntrack::ConntrackSocket;
use std::net::SocketAddr;
use std::process::ExitCode;
use svcnet_core::family::IpFamily;

fn main() -> ExitCode {
    let mut socket = match ConntrackSocket::open() {
        Ok(socket) => socket,
        Err(error) => {
            eprintln!("conntrack_list: {error}");
            return ExitCode::FAILURE;
        }
    };
    for family in [IpFamily::IPv4, IpFamily::IPv6] {
        let entries = match socket.dump_udp(family) {
            Ok((entries, _)) => entries,
            Err(error) => {
                eprintln!("conntrack_list: {family}: {error}");
                return ExitCode::FAILURE;
            }
        };
        for entry in entries {
            let at = |ip, port: Option<u16>| SocketAddr::new(ip, port.unwrap_or(0));
            println!(
                "udp {} {} {}",
                at(entry.orig.src, entry.orig.src_port),
                at(entry.orig.dst, entry.orig.dst_port),
                at(entry.reply.src, entry.reply.src_port)
            );
        }
    }
    ExitCode::SUCCESS
}
