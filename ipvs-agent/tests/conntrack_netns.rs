//! The UDP conntrack cleanup against the running kernel, inside a network
//! namespace of its own (conntrack tables are per namespace, so the host's
//! flows are never seen or touched). Needs root and `nft` (a rule that uses
//! conntrack turns tracking on in the namespace); ignored by default:
//!
//!     sudo -E cargo test -p ipvs-agent --test conntrack_netns -- --ignored
//!
//! UDP datagrams sent to addresses nobody listens on leave entries whose
//! reply source is the destination itself: the black-holed entries of a
//! Service without endpoints. The cleanup, told that one of those
//! destinations now has an endpoint, must delete exactly its entries, in
//! both families, with the kernel filtering the dump to UDP.

use std::net::{SocketAddr, UdpSocket};
use std::process::Command;

use ipvs_agent::kernel::conntrack::ConntrackSocket;
use svcnet_core::family::IpFamily;
use svcnet_core::proxy::{IpvsTable, RealServer, Scheduler, UdpFrontends, VirtualServer, VirtualServerSettings};

fn run(program: &str, args: &[&str]) {
    let status = Command::new(program).args(args).status().expect("runs");
    assert!(status.success(), "{program} {args:?}: {status}");
}

/// One datagram from `from` to `to` (nobody listens there).
fn send(from: &str, to: &str) -> SocketAddr {
    let socket = UdpSocket::bind(from).expect("binds");
    socket.send_to(b"q", to).expect("sends");
    socket.local_addr().expect("bound")
}

fn frontends(servers: &[(&str, &str)]) -> UdpFrontends {
    let mut table = IpvsTable::new();
    for (key, real) in servers {
        let key = key.parse().expect("key");
        let mut vs = VirtualServer {
            settings: VirtualServerSettings {
                scheduler: Scheduler::Rr,
                flags: Default::default(),
                timeout: 0,
                netmask: 0,
            },
            real_servers: Default::default(),
        };
        vs.real_servers
            .insert(real.parse().expect("real server"), RealServer::masq(1));
        table.virtual_servers.insert(key, vs);
    }
    UdpFrontends::of(&table)
}

#[test]
#[ignore = "needs root and nft; runs in a network namespace of its own"]
fn stale_udp_entries_are_deleted_and_nothing_else() {
    // SAFETY: unshare changes only this thread's network namespace; the
    // sockets and processes this test creates afterwards live in it.
    let unshared = unsafe { libc::unshare(libc::CLONE_NEWNET) };
    assert_eq!(
        unshared,
        0,
        "unshare(CLONE_NEWNET): {}",
        std::io::Error::last_os_error()
    );
    run("ip", &["link", "set", "lo", "up"]);
    run("ip", &["-6", "addr", "add", "fd00::1/128", "dev", "lo"]);
    run("ip", &["-6", "addr", "add", "fd00::2/128", "dev", "lo"]);
    run(
        "nft",
        &[
            "add table inet t; add chain inet t out { type filter hook output priority 0; }; \
             add rule inet t out ct state new counter",
        ],
    );
    std::thread::sleep(std::time::Duration::from_millis(300)); // DAD for the IPv6 addresses

    let stale_v4 = send("127.0.0.1:0", "127.0.0.2:53");
    let kept_v4 = send("127.0.0.1:0", "127.0.0.3:53");
    let stale_v6 = send("[fd00::1]:0", "[fd00::2]:53");
    // A TCP attempt to the same frontend: not UDP, never touched.
    let _ = std::net::TcpStream::connect_timeout(
        &"127.0.0.2:53".parse().expect("address"),
        std::time::Duration::from_millis(200),
    );

    let mut socket = ConntrackSocket::open().expect("opens a ctnetlink socket");
    let (before, unreadable) = socket.dump_udp(IpFamily::IPv4).expect("dumps");
    assert_eq!(unreadable, 0);
    assert!(
        before.iter().all(|e| e.orig.protocol == 17),
        "the kernel filtered the dump to UDP"
    );
    let ports: Vec<u16> = before.iter().filter_map(|e| e.orig.src_port).collect();
    assert!(
        ports.contains(&stale_v4.port()) && ports.contains(&kept_v4.port()),
        "{before:?}"
    );
    let black_holed = before
        .iter()
        .find(|e| e.orig.src_port == Some(stale_v4.port()))
        .expect("dumped");
    assert_eq!(black_holed.reply.src.to_string(), "127.0.0.2");
    assert!(black_holed.id.is_some());

    // 127.0.0.2:53 and [fd00::2]:53 now have an endpoint; 127.0.0.3:53 has none.
    let frontends = frontends(&[
        ("UDP/127.0.0.2:53", "127.0.0.9:5353"),
        ("UDP/[fd00::2]:53", "[fd00::9]:5353"),
        ("UDP/127.0.0.3:53", "127.0.0.3:53"),
    ]);
    let report = socket.clean_udp(&frontends);
    assert_eq!(report.first_error, None);
    assert_eq!((report.stale, report.deleted, report.errors), (2, 2, 0), "{report:?}");

    let (after, _) = socket.dump_udp(IpFamily::IPv4).expect("dumps");
    let ports: Vec<u16> = after.iter().filter_map(|e| e.orig.src_port).collect();
    assert!(!ports.contains(&stale_v4.port()), "{after:?}");
    assert!(ports.contains(&kept_v4.port()), "{after:?}");
    let (after_v6, _) = socket.dump_udp(IpFamily::IPv6).expect("dumps");
    assert!(
        after_v6.iter().all(|e| e.orig.src_port != Some(stale_v6.port())),
        "{after_v6:?}"
    );

    // A second delete of the same entry: already gone (ENOENT), not an error.
    let outcome = socket.delete(&[*black_holed]);
    assert_eq!((outcome.deleted, outcome.gone, outcome.failed), (0, 1, 0));
}
