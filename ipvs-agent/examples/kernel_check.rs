//! Real-kernel checks for `ipvs_agent::kernel`, run inside the QEMU VM by
//! `tests/vm/kernel.sh` (which compares what this prints with the real
//! `ipvsadm`, `ipvsadm-save` and `ip`). Each subcommand does one thing and
//! exits 0 when it went as expected, 1 otherwise (2: bad usage).
//!
//!     kernel_check family                 resolve IPVS, print id and GET_INFO
//!     kernel_check plan                   apply the test plan (one batch)
//!     kernel_check expected-save          the core's ipvsadm-save rendering of the plan's table
//!     kernel_check observe-matches FILE   observe() equals the table FILE (ipvsadm-save text) holds
//!     kernel_check counters [--nonzero]   observe()'s connection counters equal `ipvsadm -Ln`'s
//!     kernel_check reread KEY...          observe_virtual_servers() equals observe() for those virtual servers
//!     kernel_check errors                 typed EEXIST/ESRCH/ENOENT from one batch
//!     kernel_check foreign                observe() with a fwmark service; apply leaves it alone
//!     kernel_check addresses              the addresses observe() sees on kube-ipvs0
//!     kernel_check bind|unbind ADDR...    BindAddress/UnbindAddress through apply()
//!     kernel_check bind-many N            N addresses (10.120.0.0 on) bound in one apply, then again
//!     kernel_check unbind-many N          the same N addresses unbound in one apply
//!     kernel_check link-state             kube-ipvs0's state: missing, up or down
//!     kernel_check link-delete            delete kube-ipvs0
//!     kernel_check timeouts               GET_CONFIG as "tcp tcpfin udp"
//!     kernel_check set-timeouts T F U     SET_CONFIG
//!     kernel_check sysctls [--strict-arp] set kube-proxy's sysctls, print the changes
//!     kernel_check converge               the core's plan() against observe(): apply, re-plan empty, change, clean up
//!     kernel_check flush                  FLUSH (every virtual server, everyone's)
//!     kernel_check two-dumps              what the kernel does with two dumps in one sendmsg
//!     kernel_check scale N                N virtual servers with 2 real servers each, then delete them

use std::collections::BTreeMap;
use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::process::{Command, ExitCode};

use ipvs_agent::dataplane::{Dataplane, DataplaneError};
use ipvs_agent::kernel::{apply_sysctls, IpvsSocket, LinuxDataplane};
use ipvs_agent::netlink::{parse_replies, Batch, IpvsCmd, IpvsError, ReplyBody, Timeouts};
use svcnet_core::family::IpFamily;
use svcnet_core::proxy::{
    ipvsadm_save, parse_ipvsadm_save, table::full_netmask, Flags, Forward, IpvsTable, Operation, Protocol, RealServer,
    Scheduler, VirtualServer, VirtualServerKey, VirtualServerSettings,
};

type Outcome = Result<(), String>;

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let runtime = match tokio::runtime::Builder::new_current_thread().enable_all().build() {
        Ok(runtime) => runtime,
        Err(error) => {
            eprintln!("kernel_check: tokio: {error}");
            return ExitCode::FAILURE;
        }
    };
    match runtime.block_on(run(&args)) {
        Ok(()) => ExitCode::SUCCESS,
        Err(message) => {
            eprintln!("kernel_check {}: {message}", args.join(" "));
            ExitCode::FAILURE
        }
    }
}

async fn run(args: &[String]) -> Outcome {
    let words: Vec<&str> = args.iter().map(String::as_str).collect();
    match words.as_slice() {
        ["family"] => family(),
        ["plan"] => plan().await,
        ["expected-save"] => {
            print!("{}", ipvsadm_save(&plan_table()));
            Ok(())
        }
        ["observe-matches", file] => observe_matches(file).await,
        ["counters", rest @ ..] => counters(rest.contains(&"--nonzero")).await,
        ["reread", keys @ ..] => reread(keys).await,
        ["errors"] => errors().await,
        ["foreign"] => foreign().await,
        ["addresses"] => {
            let table = open()?.observe().await.map_err(|e| e.to_string())?;
            for address in table.addresses {
                println!("{address}");
            }
            Ok(())
        }
        ["bind", addresses @ ..] => addresses_op(addresses, true).await,
        ["unbind", addresses @ ..] => addresses_op(addresses, false).await,
        ["bind-many", count] => many(count, true).await,
        ["unbind-many", count] => many(count, false).await,
        ["link-state"] => {
            let dataplane = open()?;
            let state = match dataplane.link().is_up().await.map_err(|e| e.to_string())? {
                None => "missing",
                Some(true) => "up",
                Some(false) => "down",
            };
            println!("{state}");
            Ok(())
        }
        ["link-delete"] => {
            let existed = open()?.delete_link().await.map_err(|e| e.to_string())?;
            println!("{}", if existed { "deleted" } else { "absent" });
            Ok(())
        }
        ["timeouts"] => {
            let t = socket()?.timeouts().map_err(|e| e.to_string())?;
            println!("{} {} {}", t.tcp, t.tcp_fin, t.udp);
            Ok(())
        }
        ["set-timeouts", tcp, tcp_fin, udp] => {
            let number = |text: &str| text.parse::<u32>().map_err(|e| format!("{text}: {e}"));
            let timeouts = Timeouts {
                tcp: number(tcp)?,
                tcp_fin: number(tcp_fin)?,
                udp: number(udp)?,
            };
            socket()?.set_timeouts(&timeouts).map_err(|e| e.to_string())
        }
        ["sysctls", rest @ ..] => {
            let changes = apply_sysctls(rest.contains(&"--strict-arp")).map_err(|e| e.to_string())?;
            for change in &changes {
                println!("{} {} -> {}", change.key, change.old, change.new);
            }
            println!("{} changed", changes.len());
            Ok(())
        }
        ["two-dumps"] => two_dumps(),
        ["converge"] => converge().await,
        ["flush"] => socket()?.flush().map_err(|e| e.to_string()),
        ["scale", count] => scale(count.parse().map_err(|e| format!("{count}: {e}"))?).await,
        _ => {
            eprintln!("usage: see the doc comment of ipvs-agent/examples/kernel_check.rs");
            std::process::exit(2)
        }
    }
}

fn socket() -> Result<IpvsSocket, String> {
    IpvsSocket::open().map_err(|e| e.to_string())
}

fn open() -> Result<LinuxDataplane, String> {
    LinuxDataplane::open().map_err(|e| e.to_string())
}

fn family() -> Outcome {
    let mut socket = socket()?;
    let info = socket.info().map_err(|e| e.to_string())?;
    println!(
        "family {} version {}.{}.{} conn_tab_size {} batch {}",
        socket.family_id(),
        info.version.major,
        info.version.minor,
        info.version.patch,
        info.conn_tab_size,
        socket.max_batch_requests()
    );
    Ok(())
}

fn key(text: &str) -> VirtualServerKey {
    let (protocol, addr) = text.split_once('/').expect("PROTO/ADDR:PORT");
    let addr: SocketAddr = addr.parse().expect("socket address");
    VirtualServerKey::new(Protocol::parse(protocol).expect("protocol"), addr.ip(), addr.port())
}

fn vs(scheduler: Scheduler, flags: Flags, timeout: u32, netmask: u32, real: &[(&str, u32)]) -> VirtualServer {
    VirtualServer {
        settings: VirtualServerSettings {
            scheduler,
            flags,
            timeout,
            netmask,
        },
        real_servers: real
            .iter()
            .map(|(addr, weight)| (addr.parse().expect("real server"), RealServer::masq(*weight)))
            .collect(),
    }
}

/// The table the `plan` subcommand programs: TCP and UDP, IPv4 and IPv6,
/// persistence (with a partial netmask), sh and mh flags, a weight-0 real
/// server.
fn plan_table() -> IpvsTable {
    let mut table = IpvsTable::new();
    let full4 = full_netmask(IpFamily::IPv4);
    let servers = [
        (
            "TCP/10.96.0.10:80",
            vs(
                Scheduler::Rr,
                Flags::NONE,
                0,
                full4,
                &[("10.244.1.11:8080", 1), ("10.244.1.12:8080", 1)],
            ),
        ),
        (
            "UDP/10.96.0.10:53",
            vs(
                Scheduler::Rr,
                Flags::PERSISTENT,
                10800,
                full4,
                &[("10.244.1.11:5353", 1)],
            ),
        ),
        (
            "TCP/10.96.0.11:443",
            vs(
                Scheduler::Sh,
                Flags::SCHED1.with(Flags::SCHED2),
                0,
                full4,
                &[("10.244.1.11:8443", 2), ("10.244.1.12:8443", 3)],
            ),
        ),
        (
            "TCP/10.96.0.12:8080",
            vs(
                Scheduler::Rr,
                Flags::PERSISTENT,
                300,
                0xffff_ff00,
                &[("10.244.1.12:8080", 1)],
            ),
        ),
        (
            "TCP/[fd00:10:96::20]:80",
            vs(
                Scheduler::Mh,
                Flags::SCHED2,
                0,
                128,
                &[("[fd00:10:244:1::11]:8080", 1), ("[fd00:10:244:1::12]:8080", 0)],
            ),
        ),
        (
            "UDP/[fd00:10:96::20]:53",
            vs(
                Scheduler::Rr,
                Flags::PERSISTENT,
                600,
                64,
                &[("[fd00:10:244:1::11]:5353", 1)],
            ),
        ),
    ];
    for (text, server) in servers {
        let key = key(text);
        table.addresses.insert(key.address);
        table.virtual_servers.insert(key, server);
    }
    table
}

/// The operations that program `table` from nothing, in the plan's order.
fn operations_for(table: &IpvsTable) -> Vec<Operation> {
    let mut ops: Vec<Operation> = (table.addresses.iter())
        .map(|&address| Operation::BindAddress { address })
        .collect();
    for (key, server) in &table.virtual_servers {
        ops.push(Operation::AddVirtualServer {
            virtual_server: *key,
            settings: server.settings.clone(),
        });
        for (addr, real) in &server.real_servers {
            ops.push(Operation::AddRealServer {
                virtual_server: *key,
                real_server: *addr,
                forward: real.forward,
                weight: real.weight,
            });
        }
    }
    ops
}

async fn plan() -> Outcome {
    let mut dataplane = open()?;
    let table = plan_table();
    let ops = operations_for(&table);
    let before = dataplane.counters();
    let report = dataplane.apply(&ops).await;
    let after = dataplane.counters();
    let sendmsg = after.socket.sendmsg_calls - before.socket.sendmsg_calls;
    println!(
        "applied {} of {} operations, {} failed, IPVS sendmsg calls {sendmsg}",
        report.applied,
        ops.len(),
        report.failed.len()
    );
    for (op, error) in &report.failed {
        println!("failed: {op:?}: {error}");
    }
    if !report.failed.is_empty() || report.applied != ops.len() {
        return Err("not every operation was applied".into());
    }
    if sendmsg != 1 {
        return Err(format!("expected the IPVS operations in 1 sendmsg, took {sendmsg}"));
    }
    // And the agent's own view agrees.
    let observed = dataplane.observe().await.map_err(|e| e.to_string())?;
    compare(&table, &observed)
}

/// `expected` and `observed` hold the same virtual servers (settings without
/// `hashed`), real servers (forwarding and weight) and addresses.
fn compare(expected: &IpvsTable, observed: &IpvsTable) -> Outcome {
    let mut problems = Vec::new();
    for (key, want) in &expected.virtual_servers {
        let Some(got) = observed.virtual_servers.get(key) else {
            problems.push(format!("{key}: missing"));
            continue;
        };
        if !got.settings.same_as(&want.settings) {
            problems.push(format!("{key}: settings {:?}, want {:?}", got.settings, want.settings));
        }
        for (addr, real) in &want.real_servers {
            match got.real_servers.get(addr) {
                Some(seen) if seen.same_as(real) => {}
                Some(seen) => problems.push(format!("{key} -> {addr}: {seen:?}, want {real:?}")),
                None => problems.push(format!("{key} -> {addr}: missing")),
            }
        }
        for addr in got.real_servers.keys().filter(|a| !want.real_servers.contains_key(a)) {
            problems.push(format!("{key} -> {addr}: unexpected"));
        }
    }
    for key in observed
        .virtual_servers
        .keys()
        .filter(|k| !expected.virtual_servers.contains_key(k))
    {
        problems.push(format!("{key}: unexpected"));
    }
    if expected.addresses != observed.addresses && !expected.addresses.is_empty() {
        problems.push(format!(
            "addresses {:?}, want {:?}",
            observed.addresses, expected.addresses
        ));
    }
    if problems.is_empty() {
        println!(
            "observe() matches: {} virtual servers, {} real servers",
            observed.virtual_servers.len(),
            observed.real_server_count()
        );
        Ok(())
    } else {
        Err(problems.join("\n"))
    }
}

/// `ADDR:PORT` or `[ADDR]:PORT`.
fn addr_port(text: &str) -> Result<SocketAddr, String> {
    text.parse().map_err(|e| format!("{text}: {e}"))
}

async fn observe_matches(file: &str) -> Outcome {
    let text = std::fs::read_to_string(file).map_err(|e| format!("{file}: {e}"))?;
    let expected = parse_ipvsadm_save(&text).map_err(|e| format!("{file}: {e}"))?;
    let observed = open()?.observe().await.map_err(|e| e.to_string())?;
    compare(&expected, &observed)
}

/// (virtual server, real server) -> (active, inactive connections).
type ConnCounters = BTreeMap<(VirtualServerKey, SocketAddr), (u32, u32)>;

/// Parse `ipvsadm -Ln` into connection counters.
fn ipvsadm_counters() -> Result<ConnCounters, String> {
    let output = Command::new("ipvsadm")
        .arg("-Ln")
        .output()
        .map_err(|e| format!("ipvsadm: {e}"))?;
    let text = String::from_utf8_lossy(&output.stdout);
    let mut counters = BTreeMap::new();
    let mut current = None;
    for line in text.lines() {
        let words: Vec<&str> = line.split_whitespace().collect();
        match words.as_slice() {
            [protocol @ ("TCP" | "UDP" | "SCTP"), addr, ..] => {
                let addr = addr_port(addr)?;
                current = Protocol::parse(protocol).map(|p| VirtualServerKey::new(p, addr.ip(), addr.port()));
            }
            ["->", real, _forward, _weight, active, inactive] if *real != "RemoteAddress:Port" => {
                let vs = current.ok_or_else(|| format!("{line}: no virtual server before"))?;
                let number = |t: &str| t.parse::<u32>().map_err(|e| format!("{line}: {e}"));
                counters.insert((vs, addr_port(real)?), (number(active)?, number(inactive)?));
            }
            _ => {}
        }
    }
    Ok(counters)
}

async fn counters(nonzero: bool) -> Outcome {
    let observed = open()?.observe().await.map_err(|e| e.to_string())?;
    let reference = ipvsadm_counters()?;
    let mut mine = ConnCounters::new();
    for (key, server) in &observed.virtual_servers {
        for (addr, real) in &server.real_servers {
            mine.insert((*key, *addr), (real.active_connections, real.inactive_connections));
        }
    }
    let total: u64 = mine.values().map(|(a, i)| u64::from(*a) + u64::from(*i)).sum();
    for ((vs, rs), (active, inactive)) in &mine {
        if active + inactive > 0 {
            println!("{vs} -> {rs}: active {active} inactive {inactive}");
        }
    }
    if mine != reference {
        return Err(format!("observe() {mine:?}\nipvsadm -Ln {reference:?}"));
    }
    if nonzero && total == 0 {
        return Err("every counter is 0".into());
    }
    println!(
        "counters match ipvsadm -Ln ({} real servers, {total} connections)",
        mine.len()
    );
    Ok(())
}

/// The virtual servers named (PROTO/ADDR:PORT) read on their own
/// (observe_virtual_servers) equal what observe() reads for them, counters
/// included; prints each as present (with its real servers) or absent.
async fn reread(keys: &[&str]) -> Outcome {
    let mut dataplane = open()?;
    let keys: std::collections::BTreeSet<VirtualServerKey> = keys.iter().map(|text| key(text)).collect();
    let found = (dataplane.observe_virtual_servers(&keys).await).map_err(|e| e.to_string())?;
    let observed = dataplane.observe().await.map_err(|e| e.to_string())?;
    for key in &keys {
        let (mine, whole) = (found.get(key), observed.virtual_servers.get(key));
        match mine {
            Some(server) => println!(
                "{key}: present, {} real servers, {} connections",
                server.real_servers.len(),
                (server.real_servers.values())
                    .map(|real| u64::from(real.active_connections) + u64::from(real.inactive_connections))
                    .sum::<u64>()
            ),
            None => println!("{key}: absent"),
        }
        if mine != whole {
            return Err(format!("{key}: observe_virtual_servers {mine:?}, observe {whole:?}"));
        }
    }
    Ok(())
}

/// One batch with requests the kernel must refuse, each with its own errno.
async fn errors() -> Outcome {
    let mut dataplane = open()?;
    let a = key("TCP/10.96.0.99:80");
    let missing = key("TCP/10.96.0.98:80");
    let rs: SocketAddr = "10.244.1.11:8080".parse().map_err(|e| format!("{e}"))?;
    let settings = |scheduler| VirtualServerSettings {
        scheduler,
        flags: Flags::NONE,
        timeout: 0,
        netmask: u32::MAX,
    };
    let ops = vec![
        Operation::AddVirtualServer {
            virtual_server: a,
            settings: settings(Scheduler::Rr),
        },
        Operation::AddVirtualServer {
            virtual_server: a,
            settings: settings(Scheduler::Rr),
        },
        Operation::AddRealServer {
            virtual_server: missing,
            real_server: rs,
            forward: Forward::Masq,
            weight: 1,
        },
        Operation::DeleteRealServer {
            virtual_server: a,
            real_server: rs,
        },
        Operation::AddVirtualServer {
            virtual_server: missing,
            settings: settings(Scheduler::Other("nosuch".into())),
        },
        Operation::DeleteVirtualServer { virtual_server: a },
        Operation::DeleteVirtualServer { virtual_server: a },
    ];
    let before = dataplane.counters().socket.sendmsg_calls;
    let report = dataplane.apply(&ops).await;
    let sendmsg = dataplane.counters().socket.sendmsg_calls - before;
    // Failures come in the operations' order: 1, 2, 3, 4 and 6.
    let refused: Vec<Option<&IpvsError>> = (report.failed.iter())
        .map(|(_, error)| match error {
            DataplaneError::Ipvs(error) => Some(error),
            _ => None,
        })
        .collect();
    let find = |n: usize| refused.get(n).copied().flatten().cloned();
    let checks = [
        (
            "eexist",
            matches!(
                find(0),
                Some(IpvsError::AlreadyExists {
                    cmd: Some(IpvsCmd::NewService)
                })
            ),
        ),
        (
            "esrch",
            matches!(
                find(1),
                Some(IpvsError::NoSuchService {
                    cmd: Some(IpvsCmd::NewDest)
                })
            ),
        ),
        (
            "enoent-dest",
            matches!(
                find(2),
                Some(IpvsError::NoSuchDestination {
                    cmd: Some(IpvsCmd::DelDest)
                })
            ),
        ),
        (
            "enoent-scheduler",
            matches!(
                find(3),
                Some(IpvsError::SchedulerNotFound {
                    cmd: Some(IpvsCmd::NewService)
                })
            ),
        ),
        (
            "esrch-delete",
            matches!(
                find(4),
                Some(IpvsError::NoSuchService {
                    cmd: Some(IpvsCmd::DelService)
                })
            ),
        ),
        ("others-applied", report.applied == 2 && refused.len() == 5),
        ("one-sendmsg", sendmsg == 1),
    ];
    for (op, error) in &report.failed {
        println!("error: {error} ({op:?})");
    }
    let mut ok = true;
    for (name, passed) in checks {
        println!("{name} {}", if passed { "ok" } else { "FAILED" });
        ok &= passed;
    }
    ok.then_some(())
        .ok_or_else(|| "some errors were not as expected".into())
}

/// With foreign virtual servers (a fwmark one, an SCTP one) present:
/// observe() works, skips the fwmark one, shows the SCTP one; an apply of the
/// agent's own operations leaves both alone.
async fn foreign() -> Outcome {
    let mut dataplane = open()?;
    let observed = dataplane.observe().await.map_err(|e| e.to_string())?;
    let skipped = dataplane.counters().skipped_last_observe;
    let sctp = key("SCTP/10.96.0.77:9000");
    println!(
        "observed {} virtual servers, skipped {skipped}",
        observed.virtual_servers.len()
    );
    if skipped != 1 {
        return Err(format!("expected the fwmark service to be skipped, skipped {skipped}"));
    }
    let Some(found) = observed.virtual_servers.get(&sctp) else {
        return Err("the SCTP virtual server is missing".into());
    };
    if found.settings.scheduler != Scheduler::Lc {
        return Err(format!("SCTP scheduler {:?}", found.settings.scheduler));
    }
    let own = key("UDP/10.96.0.78:53");
    let ops = [
        Operation::AddVirtualServer {
            virtual_server: own,
            settings: VirtualServerSettings {
                scheduler: Scheduler::Rr,
                flags: Flags::NONE,
                timeout: 0,
                netmask: u32::MAX,
            },
        },
        Operation::DeleteVirtualServer { virtual_server: own },
    ];
    let report = dataplane.apply(&ops).await;
    if !report.failed.is_empty() {
        return Err(format!("{:?}", report.failed));
    }
    Ok(())
}

async fn addresses_op(addresses: &[&str], bind: bool) -> Outcome {
    let mut ops = Vec::new();
    for text in addresses {
        let address: IpAddr = text.parse().map_err(|e| format!("{text}: {e}"))?;
        ops.push(if bind {
            Operation::BindAddress { address }
        } else {
            Operation::UnbindAddress { address }
        });
    }
    let report = open()?.apply(&ops).await;
    for (op, error) in &report.failed {
        println!("failed: {op:?}: {error}");
    }
    report
        .failed
        .is_empty()
        .then_some(())
        .ok_or_else(|| "an address operation failed".into())
}

/// N addresses (10.120.0.0 on) bound on kube-ipvs0 in one apply, then
/// bound again (every one already there); or unbound in one apply. Prints
/// each step with its `sendmsg` calls and how many of the N are bound after.
async fn many(count: &str, bind: bool) -> Outcome {
    let count: u32 = count.parse().map_err(|e| format!("{count}: {e}"))?;
    let mut dataplane = open()?;
    let addresses: Vec<IpAddr> = (0..count)
        .map(|i| IpAddr::V4(Ipv4Addr::from(0x0a78_0000 + i)))
        .collect();
    let ops: Vec<Operation> = (addresses.iter())
        .map(|&address| {
            if bind {
                Operation::BindAddress { address }
            } else {
                Operation::UnbindAddress { address }
            }
        })
        .collect();
    let steps: &[&str] = if bind { &["bind", "bind-again"] } else { &["unbind"] };
    for step in steps {
        let before = dataplane.counters().addresses;
        let started = std::time::Instant::now();
        let report = dataplane.apply(&ops).await;
        let elapsed = started.elapsed().as_millis();
        let after = dataplane.counters().addresses;
        println!(
            "{step}: {} applied, {} failed, {} sendmsg calls, {} lost, {elapsed} ms",
            report.applied,
            report.failed.len(),
            after.sendmsg_calls - before.sendmsg_calls,
            after.lost - before.lost
        );
        for (op, error) in report.failed.iter().take(5) {
            println!("{step}: failed: {op:?}: {error}");
        }
        let bound = dataplane.observe().await.map_err(|e| e.to_string())?.addresses;
        let ours = addresses.iter().filter(|address| bound.contains(address)).count();
        println!("{step}: {ours} of the {count} addresses on kube-ipvs0");
    }
    Ok(())
}

/// Two GET_DEST dumps (the first two virtual servers) in one sendmsg, on a
/// raw batch: prints what each got.
fn two_dumps() -> Outcome {
    let mut ipvs = socket()?;
    let services = ipvs.services().map_err(|e| e.to_string())?;
    let keys: Vec<_> = services.iter().take(2).map(|entry| entry.key).collect();
    let family = ipvs.family_id();
    let mut socket = netlink_sys::Socket::new(netlink_sys::protocols::NETLINK_GENERIC).map_err(|e| e.to_string())?;
    socket.bind_auto().map_err(|e| e.to_string())?;
    socket
        .connect(&netlink_sys::SocketAddr::new(0, 0))
        .map_err(|e| e.to_string())?;
    socket.set_non_blocking(true).map_err(|e| e.to_string())?;
    let mut batch = Batch::new(family, 100);
    for key in &keys {
        batch.push(ipvs_agent::netlink::IpvsMessage::get_dests_dump(key));
    }
    socket.send(batch.bytes(), 0).map_err(|e| e.to_string())?;
    let mut entries: BTreeMap<u32, usize> = BTreeMap::new();
    let mut finals: BTreeMap<u32, String> = BTreeMap::new();
    let mut buf = Vec::with_capacity(128 * 1024);
    loop {
        buf.clear();
        match socket.recv(&mut buf, 0) {
            Ok(_) => {}
            Err(error) if error.kind() == std::io::ErrorKind::WouldBlock => break,
            Err(error) => return Err(error.to_string()),
        }
        for reply in parse_replies(&buf, family).flatten() {
            match reply.body {
                Ok(ReplyBody::Message(_)) => *entries.entry(reply.seq).or_default() += 1,
                Ok(body) => {
                    finals.insert(reply.seq, format!("{body:?}"));
                }
                Err(error) => {
                    finals.insert(reply.seq, format!("errno {}", error.errno()));
                }
            }
        }
    }
    for request in batch.requests() {
        println!(
            "dump seq {}: {} entries, final {}",
            request.seq,
            entries.get(&request.seq).copied().unwrap_or(0),
            finals.get(&request.seq).map_or("none", String::as_str)
        );
    }
    Ok(())
}

/// N virtual servers with two real servers each in one apply (cut into
/// batches by size), observed back, then deleted in one apply.
async fn scale(count: u32) -> Outcome {
    let mut dataplane = open()?;
    let mut table = IpvsTable::new();
    for i in 0..count {
        let [_, _, hi, lo] = (0x0a64_0000 + i).to_be_bytes();
        let key = VirtualServerKey::new(Protocol::Tcp, IpAddr::from([10, 100, hi, lo]), 80);
        let reals: Vec<String> = (1..=2).map(|n| format!("10.244.{hi}.{}:8080", lo / 2 + n)).collect();
        let reals: Vec<(&str, u32)> = reals.iter().map(|r| (r.as_str(), 1)).collect();
        table
            .virtual_servers
            .insert(key, vs(Scheduler::Rr, Flags::NONE, 0, u32::MAX, &reals));
    }
    let ops = operations_for(&table);
    let started = std::time::Instant::now();
    let before = dataplane.counters().socket;
    let report = dataplane.apply(&ops).await;
    let after = dataplane.counters().socket;
    let sendmsg = after.sendmsg_calls - before.sendmsg_calls;
    println!(
        "apply: {} operations, {} applied, {} failed, {sendmsg} sendmsg calls, {} ms",
        ops.len(),
        report.applied,
        report.failed.len(),
        started.elapsed().as_millis()
    );
    if report.applied != ops.len() || after.lost != before.lost {
        return Err(format!(
            "{} failed, {} answers lost",
            report.failed.len(),
            after.lost - before.lost
        ));
    }
    let started = std::time::Instant::now();
    let observed = dataplane.observe().await.map_err(|e| e.to_string())?;
    println!(
        "observe: {} virtual servers, {} real servers, {} ms",
        observed.virtual_servers.len(),
        observed.real_server_count(),
        started.elapsed().as_millis()
    );
    compare(&table, &observed)?;
    let deletes: Vec<Operation> = (table.virtual_servers.keys())
        .map(|&virtual_server| Operation::DeleteVirtualServer { virtual_server })
        .collect();
    let report = dataplane.apply(&deletes).await;
    println!("delete: {} applied, {} failed", report.applied, report.failed.len());
    if report.applied != deletes.len() {
        return Err("not every delete was applied".into());
    }
    Ok(())
}

/// The sync loop's cycle with the core's real planner: observe, plan,
/// apply, and observe again until the plan is empty; then a changed table;
/// then an empty one (what `cleanup` does), which must leave foreign virtual
/// servers alone.
async fn converge() -> Outcome {
    use svcnet_core::apiserver::node_port::PortRange;
    use svcnet_core::proxy::{plan as make_plan, PlanContext, PlanState};
    use svcnet_core::time::Time;

    let mut dataplane = open()?;
    let ctx = PlanContext {
        now: Time::from_secs(1000),
        drain_timeout: std::time::Duration::from_secs(600),
        node_ips: vec!["192.0.2.10".parse().map_err(|e| format!("{e}"))?],
        node_port_range: PortRange::DEFAULT,
        exclude_cidrs: Vec::new(),
    };
    let mut state = PlanState::default();
    let mut changed = plan_table();
    changed
        .addresses
        .remove(&"10.96.0.12".parse::<IpAddr>().map_err(|e| format!("{e}"))?);
    changed.virtual_servers.remove(&key("TCP/10.96.0.12:8080"));
    if let Some(server) = changed.virtual_servers.get_mut(&key("TCP/10.96.0.10:80")) {
        server.settings.scheduler = Scheduler::Lc;
        server
            .real_servers
            .remove(&"10.244.1.12:8080".parse().map_err(|e| format!("{e}"))?);
        server.real_servers.insert(
            "10.244.1.13:8080".parse().map_err(|e| format!("{e}"))?,
            RealServer::masq(1),
        );
    }
    if let Some(server) = changed.virtual_servers.get_mut(&key("TCP/10.96.0.11:443")) {
        server.real_servers.insert(
            "10.244.1.11:8443".parse().map_err(|e| format!("{e}"))?,
            RealServer::masq(7),
        );
    }
    for (step, desired) in [
        ("initial", plan_table()),
        ("changed", changed),
        ("cleanup", IpvsTable::new()),
    ] {
        let observed = dataplane.observe().await.map_err(|e| e.to_string())?;
        let plan = make_plan(&observed, &desired, &state, &ctx);
        let report = dataplane.apply(&plan.operations).await;
        println!(
            "{step}: {} operations, {} applied",
            plan.operations.len(),
            report.applied
        );
        for (op, error) in &report.failed {
            println!("{step}: failed: {op:?}: {error}");
        }
        if !report.failed.is_empty() {
            return Err(format!("{step}: operations failed"));
        }
        state = plan.state;
        let observed = dataplane.observe().await.map_err(|e| e.to_string())?;
        let again = make_plan(&observed, &desired, &state, &ctx);
        if !again.is_empty() {
            return Err(format!(
                "{step}: re-plan after apply is not empty: {:?}",
                again.operations
            ));
        }
        println!("{step}: re-plan after apply is empty");
    }
    Ok(())
}
