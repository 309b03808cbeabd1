//! The endpoints and clients of the VM's traffic tests (the traffic matrix
//! of `tests/vm/traffic-diff.sh`, the faults of `tests/vm/faults.sh`, the
//! soak): small, std-only, and exact about what happened to each attempt.
//!
//!     traffic serve NAME PORT...
//!         answers on each PORT over TCP and UDP, both families ([::] with
//!         IPv4 mapped): a TCP connection gets one line "NAME SOURCE", then
//!         each line it sends comes back, until it closes; a UDP datagram
//!         gets "NAME SOURCE PAYLOAD" back. SOURCE is the address the
//!         backend saw (IPv4 written as IPv4).
//!     traffic probe tcp|udp ADDRESS PORT ATTEMPTS TIMEOUT_MS
//!         ATTEMPTS attempts at once, each from its own socket, one line
//!         each: "ok NAME SOURCE", "refused", "reset", "timeout" (no
//!         connection or no answer within TIMEOUT_MS), "no-answer" (TCP
//!         connected, nothing read) or "error TEXT".
//!     traffic cells TIMEOUT_MS
//!         the probes of many cells, one after another, from one process:
//!         each line of stdin is a cell, "NETNS tcp|udp ADDRESS PORT
//!         ATTEMPTS AFFINITY", probed as `probe` does from inside the network
//!         namespace /run/netns/NETNS (`ip netns add`'s); AFFINITY 1 sends
//!         the first attempt alone and the rest at once, 0 all at once. One
//!         line an attempt, "N<TAB>RESULT", N the cell's line from 1. (In
//!         the emulated VM a process costs about a tenth of a second: with
//!         an `ip netns exec ... traffic probe` and a few text tools a cell,
//!         a matrix took 78 s; with `cells`, 40 s.)
//!     traffic stream ADDRESS PORT INTERVAL_MS COUNT
//!         COUNT UDP datagrams from one socket (one source port, as a DNS
//!         client that keeps its socket), one every INTERVAL_MS; then one
//!         line per datagram: "SEQ SENT_MS NAME", or "SEQ SENT_MS lost" when
//!         no answer came within a second of the last send.
//!     traffic hold STOP_FILE INTERVAL_MS TARGET...
//!         one long TCP connection to each TARGET (ADDRESS:PORT, [IPv6]:PORT)
//!         sending a line every INTERVAL_MS and reading it back (within 5 s),
//!         until STOP_FILE exists; then one line per connection, "held
//!         TARGET NAME PINGS" or "broken TARGET after PINGS: WHY", and
//!         "hold: N held, M broken". Exits 1 if any connection broke. The
//!         connections are made from source ports 61000 and up, outside
//!         Linux's ephemeral range (32768-60999): see HOLD_PORT_BASE. A
//!         break is also told on stderr when it happens: "MS ms: broken
//!         TARGET after PINGS: WHY" (MS since the Unix epoch).
//!     traffic loop count=N|until=STOP_FILE INTERVAL_MS TIMEOUT_MS TARGET...
//!         new TCP connections to the TARGETs in turn, one every
//!         INTERVAL_MS, each reading the backend's line within TIMEOUT_MS:
//!         N of them, or until STOP_FILE exists; a line per failure, "failed
//!         MS TARGET WHY" (MS: the attempt's start, as `now`), then "loop: N
//!         ok, M failed". Exits 1 if any failed.
//!     traffic now
//!         milliseconds since the Unix epoch (the clock `stream` writes).
//!
//! Exits 2 on a usage error.

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, ErrorKind, Write};
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr, TcpListener, TcpStream, UdpSocket};
use std::path::Path;
use std::process::ExitCode;
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

const USAGE: &str = "usage: traffic serve NAME PORT... | probe tcp|udp ADDRESS PORT ATTEMPTS TIMEOUT_MS | \
                     cells TIMEOUT_MS (cells on stdin) | stream ADDRESS PORT INTERVAL_MS COUNT | hold STOP_FILE INTERVAL_MS TARGET... | \
                     loop count=N|until=STOP_FILE INTERVAL_MS TIMEOUT_MS TARGET... | now";

/// How long a held connection's echo may take before it counts as broken.
const ECHO_TIMEOUT: Duration = Duration::from_secs(5);
/// The source port of `hold`'s first connection. Through IPVS NAT, two
/// connections from one client port to two ClusterIPs that share a backend
/// are one connection at the backend, and the older one breaks (the
/// kernel's doing, with kube-proxy as with svcnet). `loop`'s connections
/// take ephemeral ports, so the held ones stay out of that range.
const HOLD_PORT_BASE: u16 = 61000;

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let words: Vec<&str> = args.iter().map(String::as_str).collect();
    let result: Result<ExitCode, String> = match words.as_slice() {
        ["serve", name, ports @ ..] if !ports.is_empty() => ports
            .iter()
            .map(|p| port(p))
            .collect::<Result<Vec<_>, _>>()
            .and_then(|ports| serve(name, &ports))
            .map(|()| ExitCode::SUCCESS),
        ["probe", protocol, address, p, attempts, timeout] => (|| {
            let target = SocketAddr::new(ip(address)?, port(p)?);
            let attempts = number(attempts, "ATTEMPTS")?;
            let timeout = Duration::from_millis(number(timeout, "TIMEOUT_MS")?);
            for result in probe(is_tcp(protocol)?, target, attempts, timeout) {
                println!("{result}");
            }
            Ok(ExitCode::SUCCESS)
        })(),
        ["cells", timeout] => number(timeout, "TIMEOUT_MS")
            .and_then(|ms| cells(std::io::stdin().lock(), Duration::from_millis(ms)))
            .map(|()| ExitCode::SUCCESS),
        ["stream", address, p, interval, count] => (|| {
            let target = SocketAddr::new(ip(address)?, port(p)?);
            let interval = Duration::from_millis(number(interval, "INTERVAL_MS")?);
            stream(target, interval, number(count, "COUNT")?)
        })()
        .map(|()| ExitCode::SUCCESS),
        ["hold", stop, interval, targets @ ..] if !targets.is_empty() => (|| {
            let interval = Duration::from_millis(number(interval, "INTERVAL_MS")?);
            let targets = targets.iter().map(|t| target(t)).collect::<Result<Vec<_>, _>>()?;
            Ok(hold(Path::new(stop), interval, &targets))
        })()
        .map(exit_code),
        ["loop", until, interval, timeout, targets @ ..] if !targets.is_empty() => (|| {
            let until = match until.split_once('=') {
                Some(("count", n)) => Until::Count(number(n, "count")?),
                Some(("until", path)) => Until::StopFile(Path::new(path).to_path_buf()),
                _ => return Err(format!("{until:?}: expected count=N or until=STOP_FILE")),
            };
            let interval = Duration::from_millis(number(interval, "INTERVAL_MS")?);
            let timeout = Duration::from_millis(number(timeout, "TIMEOUT_MS")?);
            let targets = targets.iter().map(|t| target(t)).collect::<Result<Vec<_>, _>>()?;
            Ok(connect_loop(&until, interval, timeout, &targets))
        })()
        .map(exit_code),
        ["now"] => {
            println!("{}", now_ms());
            Ok(ExitCode::SUCCESS)
        }
        _ => Err(USAGE.to_string()),
    };
    match result {
        Ok(code) => code,
        Err(message) => {
            eprintln!("traffic: {message}");
            ExitCode::from(2)
        }
    }
}

fn ip(text: &str) -> Result<IpAddr, String> {
    text.parse()
        .map_err(|_| format!("address {text:?} is not an IP address"))
}

fn exit_code(success: bool) -> ExitCode {
    if success {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}

fn target(text: &str) -> Result<SocketAddr, String> {
    text.parse()
        .map_err(|_| format!("target {text:?} is not ADDRESS:PORT ([ADDRESS]:PORT for IPv6)"))
}

fn port(text: &str) -> Result<u16, String> {
    text.parse().map_err(|_| format!("port {text:?} is not a port number"))
}

fn number(text: &str, what: &str) -> Result<u64, String> {
    text.parse().map_err(|_| format!("{what} {text:?} is not a number"))
}

fn now_ms() -> u128 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_millis())
}

/// The address a backend reports: IPv4 clients of a dual-stack socket as
/// IPv4.
fn seen(address: SocketAddr) -> IpAddr {
    address.ip().to_canonical()
}

fn serve(name: &str, ports: &[u16]) -> Result<(), String> {
    let any = IpAddr::V6(Ipv6Addr::UNSPECIFIED);
    let mut threads = Vec::new();
    for &p in ports {
        let listener = TcpListener::bind((any, p)).map_err(|e| format!("TCP port {p}: {e}"))?;
        let socket = UdpSocket::bind((any, p)).map_err(|e| format!("UDP port {p}: {e}"))?;
        let tcp_name = name.to_string();
        threads.push(thread::spawn(move || {
            for connection in listener.incoming().flatten() {
                let name = tcp_name.clone();
                thread::spawn(move || greet_and_echo(&name, connection));
            }
        }));
        let udp_name = name.to_string();
        threads.push(thread::spawn(move || {
            let mut buffer = [0u8; 512];
            while let Ok((n, peer)) = socket.recv_from(&mut buffer) {
                let payload = String::from_utf8_lossy(&buffer[..n]);
                let reply = format!("{udp_name} {} {}", seen(peer), payload.trim());
                let _ = socket.send_to(reply.as_bytes(), peer);
            }
        }));
    }
    for thread in threads {
        let _ = thread.join();
    }
    Ok(())
}

/// A TCP connection's life at a backend: the greeting line, then every
/// line the client sends back to it, until it closes.
fn greet_and_echo(name: &str, mut connection: TcpStream) {
    let Ok(peer) = connection.peer_addr() else { return };
    if writeln!(connection, "{name} {}", seen(peer)).is_err() {
        return;
    }
    let Ok(reader) = connection.try_clone() else { return };
    for line in BufReader::new(reader).lines() {
        let Ok(line) = line else { return };
        if writeln!(connection, "{line}").is_err() {
            return;
        }
    }
}

/// One attempt's outcome, as a word and the backend's "NAME SOURCE".
fn outcome(error: &std::io::Error) -> String {
    match error.kind() {
        ErrorKind::ConnectionRefused => "refused".into(),
        ErrorKind::ConnectionReset | ErrorKind::ConnectionAborted => "reset".into(),
        ErrorKind::TimedOut | ErrorKind::WouldBlock => "timeout".into(),
        _ => format!("error {error}"),
    }
}

fn answer(reply: &str) -> String {
    let mut words = reply.split_whitespace();
    match (words.next(), words.next()) {
        (Some(name), Some(source)) => format!("ok {name} {source}"),
        _ => format!("error unexpected answer {reply:?}"),
    }
}

fn probe_tcp(target: SocketAddr, timeout: Duration) -> String {
    let connection = match TcpStream::connect_timeout(&target, timeout) {
        Ok(c) => c,
        Err(e) => return outcome(&e),
    };
    let _ = connection.set_read_timeout(Some(timeout));
    let mut reply = String::new();
    match BufReader::new(connection).read_line(&mut reply) {
        Ok(_) if reply.trim().is_empty() => "no-answer".into(),
        Ok(_) => answer(&reply),
        Err(e) if matches!(e.kind(), ErrorKind::TimedOut | ErrorKind::WouldBlock) => "no-answer".into(),
        Err(e) => outcome(&e),
    }
}

fn probe_udp(target: SocketAddr, timeout: Duration) -> String {
    let local: SocketAddr = if target.is_ipv4() { "0.0.0.0:0" } else { "[::]:0" }
        .parse()
        .expect("a socket address");
    let attempt = || -> std::io::Result<String> {
        let socket = UdpSocket::bind(local)?;
        // Connected, so an ICMP port unreachable comes back as ECONNREFUSED.
        socket.connect(target)?;
        socket.set_read_timeout(Some(timeout))?;
        socket.send(b"probe")?;
        let mut buffer = [0u8; 512];
        let n = socket.recv(&mut buffer)?;
        Ok(answer(&String::from_utf8_lossy(&buffer[..n])))
    };
    attempt().unwrap_or_else(|e| outcome(&e))
}

fn is_tcp(protocol: &str) -> Result<bool, String> {
    match protocol {
        "tcp" => Ok(true),
        "udp" => Ok(false),
        other => Err(format!("protocol {other:?}: expected tcp or udp")),
    }
}

/// `cells`: each cell's attempts from inside its network namespace. The
/// threads the attempts run on are made after the switch, so they start in
/// the namespace too.
fn cells(input: impl BufRead, timeout: Duration) -> Result<(), String> {
    for (index, line) in input.lines().enumerate() {
        let n = index + 1;
        let line = line.map_err(|e| format!("reading cell {n}: {e}"))?;
        let words: Vec<&str> = line.split_whitespace().collect();
        let [netns, protocol, address, p, attempts, affinity] = words.as_slice() else {
            return Err(format!(
                "cell {n}, {line:?}: expected NETNS tcp|udp ADDRESS PORT ATTEMPTS AFFINITY"
            ));
        };
        let tcp = is_tcp(protocol)?;
        let target = SocketAddr::new(ip(address)?, port(p)?);
        let attempts = number(attempts, "ATTEMPTS")?;
        enter_netns(netns)?;
        let results = match *affinity {
            // The first connection makes the affinity; the rest, at once,
            // must follow it.
            "1" if attempts > 0 => {
                let mut first = probe(tcp, target, 1, timeout);
                first.extend(probe(tcp, target, attempts - 1, timeout));
                first
            }
            "0" | "1" => probe(tcp, target, attempts, timeout),
            other => return Err(format!("cell {n}: AFFINITY {other:?}: expected 0 or 1")),
        };
        for result in results {
            println!("{n}\t{result}");
        }
    }
    Ok(())
}

/// Moves this thread into the network namespace `ip netns add NAME` made.
fn enter_netns(name: &str) -> Result<(), String> {
    use std::os::fd::AsRawFd;
    let path = Path::new("/run/netns").join(name);
    let file = std::fs::File::open(&path).map_err(|e| format!("{}: {e}", path.display()))?;
    // SAFETY: setns(2) on a descriptor this function owns and keeps open
    // for the call; it changes only this thread's network namespace.
    if unsafe { libc::setns(file.as_raw_fd(), libc::CLONE_NEWNET) } != 0 {
        return Err(format!(
            "entering {}: {}",
            path.display(),
            std::io::Error::last_os_error()
        ));
    }
    Ok(())
}

/// ATTEMPTS attempts at once, each on its own thread and socket: what each
/// saw, in the order they were started.
fn probe(tcp: bool, target: SocketAddr, attempts: u64, timeout: Duration) -> Vec<String> {
    let handles: Vec<_> = (0..attempts)
        .map(|_| {
            thread::spawn(move || {
                if tcp {
                    probe_tcp(target, timeout)
                } else {
                    probe_udp(target, timeout)
                }
            })
        })
        .collect();
    handles
        .into_iter()
        .map(|handle| {
            handle
                .join()
                .unwrap_or_else(|_| "error the attempt's thread panicked".into())
        })
        .collect()
}

fn stream(target: SocketAddr, interval: Duration, count: u64) -> Result<(), String> {
    let local: SocketAddr = if target.is_ipv4() { "0.0.0.0:0" } else { "[::]:0" }
        .parse()
        .expect("a socket address");
    let socket = UdpSocket::bind(local).map_err(|e| format!("UDP socket: {e}"))?;
    socket
        .set_read_timeout(Some(Duration::from_millis(100)))
        .map_err(|e| format!("UDP socket: {e}"))?;
    let answers: Arc<Mutex<BTreeMap<u64, String>>> = Arc::default();
    let receiver = socket.try_clone().map_err(|e| format!("UDP socket: {e}"))?;
    let received = Arc::clone(&answers);
    let done = Arc::new(Mutex::new(None::<Instant>));
    let sender_done = Arc::clone(&done);
    let listener = thread::spawn(move || {
        let mut buffer = [0u8; 512];
        loop {
            if let Ok(n) = receiver.recv(&mut buffer) {
                let reply = String::from_utf8_lossy(&buffer[..n]).to_string();
                let mut words = reply.split_whitespace();
                if let (Some(name), Some(_), Some(seq)) = (words.next(), words.next(), words.next()) {
                    if let Ok(seq) = seq.parse::<u64>() {
                        received.lock().expect("answers").insert(seq, name.to_string());
                    }
                }
            }
            let finished = *sender_done.lock().expect("done");
            if finished.is_some_and(|at: Instant| at.elapsed() > Duration::from_secs(1)) {
                return;
            }
        }
    });
    socket.connect(target).map_err(|e| format!("UDP socket: {e}"))?;
    let start = Instant::now();
    let mut sent = Vec::new();
    for seq in 0..count {
        let due = start + interval * u32::try_from(seq).unwrap_or(u32::MAX);
        if let Some(wait) = due.checked_duration_since(Instant::now()) {
            thread::sleep(wait);
        }
        sent.push((seq, now_ms()));
        // A refused datagram (ICMP from the last send) is a lost one.
        let _ = socket.send(seq.to_string().as_bytes());
    }
    *done.lock().expect("done") = Some(Instant::now());
    let _ = listener.join();
    let answers = answers.lock().expect("answers");
    for (seq, at) in sent {
        println!("{seq} {at} {}", answers.get(&seq).map_or("lost", String::as_str));
    }
    Ok(())
}

/// A held connection: its target and, once it broke, why.
struct Held {
    target: SocketAddr,
    backend: String,
    pings: u64,
    broken: Option<String>,
}

/// One connection's life in `hold`: connect, read the greeting, then a
/// line every `interval` read back, until `stop` exists or it breaks.
fn hold_one(
    target: SocketAddr,
    bound: std::io::Result<(socket2::Socket, u16)>,
    stop: &Path,
    interval: Duration,
) -> Held {
    let mut held = Held {
        target,
        backend: String::new(),
        pings: 0,
        broken: None,
    };
    let (socket, source_port) = match bound {
        Ok(bound) => bound,
        Err(e) => {
            held.broken = Some(format!("no free source port from {HOLD_PORT_BASE}: {e}"));
            return held;
        }
    };
    let connection: TcpStream = match socket.connect_timeout(&target.into(), ECHO_TIMEOUT) {
        Ok(()) => socket.into(),
        Err(e) => {
            held.broken = Some(format!("connect from port {source_port}: {}", outcome(&e)));
            return held;
        }
    };
    let _ = connection.set_read_timeout(Some(ECHO_TIMEOUT));
    let mut writer = match connection.try_clone() {
        Ok(w) => w,
        Err(e) => {
            held.broken = Some(format!("socket: {e}"));
            return held;
        }
    };
    let mut reader = BufReader::new(connection);
    let mut line = String::new();
    let mut read_line = |line: &mut String| -> Result<(), String> {
        line.clear();
        match reader.read_line(line) {
            Ok(0) => Err("closed by the other end".into()),
            Ok(_) => Ok(()),
            Err(e) => Err(outcome(&e)),
        }
    };
    if let Err(why) = read_line(&mut line) {
        held.broken = Some(format!("greeting: {why}"));
        return held;
    }
    held.backend = line.split_whitespace().next().unwrap_or("?").to_string();
    while !stop.exists() {
        let ping = format!("ping {}", held.pings);
        if let Err(e) = writeln!(writer, "{ping}") {
            held.broken = Some(format!("send: {}", outcome(&e)));
            return held;
        }
        if let Err(why) = read_line(&mut line) {
            held.broken = Some(why);
            return held;
        }
        if line.trim() != ping {
            held.broken = Some(format!("echo {:?} for {ping:?}", line.trim()));
            return held;
        }
        held.pings += 1;
        thread::sleep(interval);
    }
    held
}

/// A TCP socket for `target`, bound to the first free source port from
/// `*next` on (one still in TIME_WAIT from an earlier run is not free).
fn bind_held(next: &mut u16, target: SocketAddr) -> std::io::Result<(socket2::Socket, u16)> {
    use socket2::{Domain, Socket, Type};
    let any: IpAddr = match target {
        SocketAddr::V4(_) => Ipv4Addr::UNSPECIFIED.into(),
        SocketAddr::V6(_) => Ipv6Addr::UNSPECIFIED.into(),
    };
    loop {
        let port = *next;
        *next = next
            .checked_add(1)
            .ok_or_else(|| std::io::Error::from(ErrorKind::AddrInUse))?;
        let socket = Socket::new(Domain::for_address(target), Type::STREAM, None)?;
        match socket.bind(&SocketAddr::new(any, port).into()) {
            Ok(()) => return Ok((socket, port)),
            Err(e) if e.kind() == ErrorKind::AddrInUse => continue,
            Err(e) => return Err(e),
        }
    }
}

/// `hold`: every target's connection at once; true when none broke.
fn hold(stop: &Path, interval: Duration, targets: &[SocketAddr]) -> bool {
    let mut next_port = HOLD_PORT_BASE;
    let handles: Vec<_> = targets
        .iter()
        .map(|&target| {
            let stop = stop.to_path_buf();
            let bound = bind_held(&mut next_port, target);
            thread::spawn(move || {
                let one = hold_one(target, bound, &stop, interval);
                if let Some(why) = &one.broken {
                    // The moment, to find in the agent's log (its times are UTC).
                    eprintln!("{} ms: broken {target} after {}: {why}", now_ms(), one.pings);
                }
                one
            })
        })
        .collect();
    let (mut held, mut broken) = (0, 0);
    for (handle, &target) in handles.into_iter().zip(targets) {
        let one = handle.join().unwrap_or(Held {
            target,
            backend: String::new(),
            pings: 0,
            broken: Some("the connection's thread panicked".into()),
        });
        match one.broken {
            None => {
                held += 1;
                println!("held {} {} {}", one.target, one.backend, one.pings);
            }
            Some(why) => {
                broken += 1;
                println!("broken {} after {}: {why}", one.target, one.pings);
            }
        }
    }
    println!("hold: {held} held, {broken} broken");
    broken == 0
}

/// When `loop` stops.
enum Until {
    Count(u64),
    StopFile(std::path::PathBuf),
}

/// `loop`: new connections in turn; true when none failed.
fn connect_loop(until: &Until, interval: Duration, timeout: Duration, targets: &[SocketAddr]) -> bool {
    let (mut ok, mut failed) = (0u64, 0u64);
    let start = Instant::now();
    for attempt in 0u64.. {
        let done = match until {
            Until::Count(n) => attempt >= *n,
            Until::StopFile(path) => path.exists(),
        };
        if done {
            break;
        }
        let due = start + interval * u32::try_from(attempt).unwrap_or(u32::MAX);
        if let Some(wait) = due.checked_duration_since(Instant::now()) {
            thread::sleep(wait);
        }
        let target = targets[usize::try_from(attempt).unwrap_or(0) % targets.len()];
        let at = now_ms();
        let result = probe_tcp(target, timeout);
        if result.starts_with("ok ") {
            ok += 1;
        } else {
            failed += 1;
            println!("failed {at} {target} {result}");
        }
    }
    println!("loop: {ok} ok, {failed} failed");
    failed == 0
}
