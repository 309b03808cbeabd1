//! The agent's IPVS requests against the real `ipvsadm`'s, and the reply
//! parser against the real kernel's answers, from captures made in the QEMU
//! VM: `tests/vm/ipvsadm-capture.sh` runs each command of
//! `tests/vm/ipvsadm-cases` under strace and writes every netlink buffer
//! `ipvsadm` sent or received as a hex line. The committed captures are in
//! `ipvs-agent/tests/ipvsadm-captures/`; `SVCNET_IPVSADM_CAPTURES=DIR` checks
//! a fresh set instead (`make vm-ipvsadm` does).
//!
//! For each case the agent builds its own request for the same thing, and
//! it must equal `ipvsadm`'s byte for byte, except for
//! - the sequence number and port id, which each program picks;
//! - `NLM_F_ACK` on dumps, which libnl adds and the kernel answers with
//!   nothing more (a dump ends with `NLMSG_DONE`);
//! - attributes `ipvsadm` adds that the kernel does not read for that
//!   command ([`ipvsadm_only`], with the reason).
//!
//! Every answer the kernel gave must parse, and the answers that carry data
//! (the table dump, GET_INFO, GET_CONFIG, the refusals) must read as what
//! `ipvsadm` was asked to do.

#![cfg(target_endian = "little")]

use std::collections::BTreeMap;
use std::net::IpAddr;
use std::path::{Path, PathBuf};

use ipvs_agent::kernel::family;
use ipvs_agent::netlink::constants::*;
use ipvs_agent::netlink::{
    parse_replies, AddressFamily, Batch, DestEntry, DestSpec, ForwardMethod, IpvsCmd, IpvsError, IpvsInfo, IpvsMessage,
    IpvsVersion, Protocol, ReplyBody, SchedulerName, ServiceEntry, ServiceFlags, ServiceKey, Timeouts,
    VirtualServiceSpec,
};
use netlink_packet_core::{NLMSG_DONE, NLMSG_ERROR, NLM_F_ACK};

/// The generic-netlink controller's fixed family id.
const GENL_ID_CTRL: u16 = 0x10;
/// `NLA_F_NESTED`: the attribute holds attributes.
const NLA_F_NESTED: u16 = 0x8000;

/// What the kernel reads of a virtual server when it only looks one up
/// (`ip_vs_genl_parse_service` without `full_entry`: DEL_SERVICE, a single
/// GET_SERVICE and the three DEST commands): the key. `ipvsadm` sends the
/// rest anyway, with an empty scheduler name.
const SERVICE_BEYOND_THE_KEY: &[u16] = &[
    IPVS_SVC_ATTR_SCHED_NAME,
    IPVS_SVC_ATTR_FLAGS,
    IPVS_SVC_ATTR_TIMEOUT,
    IPVS_SVC_ATTR_NETMASK,
];
/// Tunnel settings: read only with tunnel forwarding, 0 when absent; the
/// agent programs NAT real servers.
const TUNNEL: &[u16] = &[
    IPVS_DEST_ATTR_TUN_TYPE,
    IPVS_DEST_ATTR_TUN_PORT,
    IPVS_DEST_ATTR_TUN_FLAGS,
];
/// What DEL_DEST does not read of a real server (`ip_vs_genl_parse_dest`
/// without `full_entry` reads the address, port and family).
const DEST_BEYOND_THE_KEY: &[u16] = &[
    IPVS_DEST_ATTR_FWD_METHOD,
    IPVS_DEST_ATTR_WEIGHT,
    IPVS_DEST_ATTR_TUN_TYPE,
    IPVS_DEST_ATTR_TUN_PORT,
    IPVS_DEST_ATTR_TUN_FLAGS,
    IPVS_DEST_ATTR_U_THRESH,
    IPVS_DEST_ATTR_L_THRESH,
];

/// The attributes `ipvsadm` sends in the SERVICE and DEST nests of a
/// command, beyond what the kernel reads for it (and so beyond the agent's).
fn ipvsadm_only(cmd: u8, dump: bool) -> (&'static [u16], &'static [u16]) {
    match cmd {
        IPVS_CMD_DEL_SERVICE => (SERVICE_BEYOND_THE_KEY, &[]),
        IPVS_CMD_GET_SERVICE if !dump => (SERVICE_BEYOND_THE_KEY, &[]),
        IPVS_CMD_NEW_DEST | IPVS_CMD_SET_DEST => (SERVICE_BEYOND_THE_KEY, TUNNEL),
        IPVS_CMD_DEL_DEST => (SERVICE_BEYOND_THE_KEY, DEST_BEYOND_THE_KEY),
        _ => (&[], &[]),
    }
}

// --- the cases ---------------------------------------------------------------

fn tcp(addr: &str, port: u16) -> ServiceKey {
    key(Protocol::Tcp, addr, port)
}

fn key(protocol: Protocol, addr: &str, port: u16) -> ServiceKey {
    ServiceKey::Addr {
        protocol,
        addr: ip(addr),
        port,
    }
}

fn ip(text: &str) -> IpAddr {
    text.parse().expect("a test address")
}

fn spec(key: ServiceKey, scheduler: &str) -> VirtualServiceSpec {
    VirtualServiceSpec::new(key, SchedulerName::new(scheduler).expect("a short scheduler name"))
}

fn web() -> ServiceKey {
    tcp("10.96.0.10", 80)
}

fn dns() -> ServiceKey {
    key(Protocol::Udp, "10.96.0.10", 53)
}

fn https() -> ServiceKey {
    tcp("10.96.0.50", 443)
}

fn sctp() -> ServiceKey {
    key(Protocol::Sctp, "10.96.0.77", 9000)
}

fn web6() -> ServiceKey {
    tcp("fd00:10:96::20", 80)
}

fn fwmark() -> ServiceKey {
    ServiceKey::Fwmark {
        af: AddressFamily::Inet,
        fwmark: 42,
    }
}

fn masq(addr: &str, port: u16, weight: u32) -> DestSpec {
    DestSpec::masquerade(ip(addr), port, weight)
}

/// How the kernel answered the case's own command (after GET_INFO).
#[derive(Debug, Clone, PartialEq)]
enum Outcome {
    Acked,
    Refused(IpvsError),
    /// Data: checked by the case's own function.
    Data,
}

/// The agent's requests for each case, after the GET_INFO every `ipvsadm`
/// run starts with, and how the kernel must have answered the last one.
fn agent_requests(case: &str) -> Option<(Vec<IpvsMessage>, Outcome)> {
    use Outcome::*;
    let one = |message, outcome| Some((vec![message], outcome));
    match case {
        "new-service-tcp4" => one(IpvsMessage::new_service(&spec(web(), "rr")), Acked),
        "new-service-udp4" => one(IpvsMessage::new_service(&spec(dns(), "rr")), Acked),
        "new-service-persistent" => one(IpvsMessage::new_service(&spec(https(), "rr").persistent(600)), Acked),
        "new-service-sctp" => one(IpvsMessage::new_service(&spec(sctp(), "lc")), Acked),
        "new-service-tcp6-mh" => one(
            IpvsMessage::new_service(&spec(web6(), "mh").with_flags(ServiceFlags::SCHED2)),
            Acked,
        ),
        "new-service-fwmark" => one(IpvsMessage::new_service(&spec(fwmark(), "wrr")), Acked),
        "new-service-exists" => one(
            IpvsMessage::new_service(&spec(web(), "rr")),
            Refused(IpvsError::AlreadyExists {
                cmd: Some(IpvsCmd::NewService),
            }),
        ),
        "new-service-no-scheduler" => one(
            IpvsMessage::new_service(&spec(tcp("10.96.0.99", 80), "nosuch")),
            Refused(IpvsError::SchedulerNotFound {
                cmd: Some(IpvsCmd::NewService),
            }),
        ),
        "set-service" => one(IpvsMessage::set_service(&spec(web(), "wrr")), Acked),
        "new-dest-tcp4" => one(IpvsMessage::new_dest(&web(), &masq("10.244.1.11", 8080, 1)), Acked),
        "new-dest-udp4" => one(IpvsMessage::new_dest(&dns(), &masq("10.244.1.12", 53, 1)), Acked),
        "new-dest-tcp6" => one(
            IpvsMessage::new_dest(&web6(), &masq("fd00:10:244:1::11", 8080, 1)),
            Acked,
        ),
        "set-dest" => one(IpvsMessage::set_dest(&web(), &masq("10.244.1.11", 8080, 0)), Acked),
        "list" => {
            // ipvsadm asks for the real servers of each virtual server in
            // the order it prints them: by family, protocol, address and
            // port, fwmark services last (see core/src/proxy/order.rs).
            let mut requests = vec![IpvsMessage::get_services_dump()];
            for key in [web(), https(), dns(), sctp(), web6(), fwmark()] {
                requests.push(IpvsMessage::get_dests_dump(&key));
            }
            Some((requests, Data))
        }
        "get-service" => Some((
            vec![
                IpvsMessage::get_service(&https()),
                IpvsMessage::get_dests_dump(&https()),
            ],
            Data,
        )),
        "del-dest" => one(IpvsMessage::del_dest(&web(), ip("10.244.1.11"), 8080), Acked),
        "del-dest-missing" => one(
            IpvsMessage::del_dest(&web(), ip("10.244.1.11"), 8080),
            Refused(IpvsError::NoSuchDestination {
                cmd: Some(IpvsCmd::DelDest),
            }),
        ),
        "del-service" => one(IpvsMessage::del_service(&web()), Acked),
        "del-service-missing" => one(
            IpvsMessage::del_service(&web()),
            Refused(IpvsError::NoSuchService {
                cmd: Some(IpvsCmd::DelService),
            }),
        ),
        "set-config" => one(
            IpvsMessage::set_config(&Timeouts {
                tcp: 900,
                tcp_fin: 120,
                udp: 300,
            }),
            Acked,
        ),
        "get-config" => one(IpvsMessage::get_config(), Data),
        "flush" => one(IpvsMessage::flush(), Acked),
        _ => None,
    }
}

// --- the captures ------------------------------------------------------------

/// One capture: the command, its exit status, and the buffers in order.
struct Capture {
    name: String,
    command: String,
    exit: i32,
    sent: Vec<Vec<u8>>,
    received: Vec<Vec<u8>>,
}

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

fn captures_dir() -> PathBuf {
    match std::env::var_os("SVCNET_IPVSADM_CAPTURES") {
        Some(dir) => PathBuf::from(dir),
        None => Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/ipvsadm-captures"),
    }
}

/// `tests/vm/ipvsadm-cases`: (name, exit status, ipvsadm arguments).
fn cases() -> Vec<(String, i32, String)> {
    let path = repo().join("tests/vm/ipvsadm-cases");
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    text.lines()
        .filter(|line| !line.trim().is_empty() && !line.starts_with('#'))
        .map(|line| {
            let words: Vec<&str> = line.split_whitespace().collect();
            let exit = words[1].parse().unwrap_or_else(|e| panic!("{line}: exit status: {e}"));
            (words[0].to_owned(), exit, words[2..].join(" "))
        })
        .collect()
}

fn hex(text: &str) -> Vec<u8> {
    (0..text.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&text[i..i + 2], 16).unwrap_or_else(|e| panic!("hex {text}: {e}")))
        .collect()
}

fn load(name: &str) -> Capture {
    let path = captures_dir().join(format!("{name}.nl"));
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let mut capture = Capture {
        name: name.to_owned(),
        command: String::new(),
        exit: -1,
        sent: Vec::new(),
        received: Vec::new(),
    };
    for line in text.lines() {
        if let Some(command) = line.strip_prefix("# ipvsadm ") {
            capture.command = command.split_whitespace().collect::<Vec<_>>().join(" ");
        } else if let Some(status) = line.strip_prefix("# exit ") {
            capture.exit = status.parse().expect("exit status");
        } else if let Some(bytes) = line.strip_prefix("> ") {
            capture.sent.push(hex(bytes));
        } else if let Some(bytes) = line.strip_prefix("< ") {
            capture.received.push(hex(bytes));
        }
    }
    capture
}

/// The netlink messages in a buffer.
fn messages(buf: &[u8]) -> Vec<&[u8]> {
    let mut out = Vec::new();
    let mut offset = 0;
    while offset + 16 <= buf.len() {
        let len = u32::from_ne_bytes(buf[offset..offset + 4].try_into().expect("4 bytes")) as usize;
        assert!(
            len >= 16 && offset + len <= buf.len(),
            "bad netlink length {len} at {offset}"
        );
        out.push(&buf[offset..offset + len]);
        offset += (len + 3) & !3;
    }
    out
}

fn message_type(message: &[u8]) -> u16 {
    u16::from_ne_bytes([message[4], message[5]])
}

fn flags(message: &[u8]) -> u16 {
    u16::from_ne_bytes([message[6], message[7]])
}

fn seq(message: &[u8]) -> u32 {
    u32::from_ne_bytes(message[8..12].try_into().expect("4 bytes"))
}

/// The socket a request came from or an answer goes to: `ipvsadm` opens
/// one per request and libnl seeds sequence numbers from the clock, so two
/// sockets can use the same sequence number.
fn port(message: &[u8]) -> u32 {
    u32::from_ne_bytes(message[12..16].try_into().expect("4 bytes"))
}

/// The IPVS family id, from the controller's answers to `ipvsadm`'s
/// CTRL_CMD_GETFAMILY requests, read by the agent's own parser; and the
/// agent's request must ask the same: the same command and attributes (its
/// header says version 2, the controller's own, where libnl says 1, and it
/// asks for no ACK; the controller reads neither).
fn family_id(capture: &Capture) -> u16 {
    let mut ids = Vec::new();
    for request in capture.sent.iter().flat_map(|b| messages(b)) {
        if message_type(request) != GENL_ID_CTRL {
            continue;
        }
        let ours = family::request(seq(request));
        assert_eq!(
            (ours[16], &ours[20..]),
            (request[16], &request[20..]),
            "{}: the agent's CTRL_CMD_GETFAMILY differs from ipvsadm's",
            capture.name
        );
        let id = capture
            .received
            .iter()
            .find_map(|buf| family::parse_reply(buf, seq(request)).ok().flatten())
            .unwrap_or_else(|| panic!("{}: no family id in the controller's answers", capture.name));
        ids.push(id);
    }
    assert!(!ids.is_empty(), "{}: ipvsadm resolved no family", capture.name);
    assert!(
        ids.iter().all(|&id| id == ids[0]),
        "{}: family ids {ids:?}",
        capture.name
    );
    ids[0]
}

// --- comparing requests ------------------------------------------------------

/// One attribute as sent: its type with the flag bits, and its value.
struct Attr<'a> {
    kind: u16,
    value: &'a [u8],
}

fn attrs(mut bytes: &[u8]) -> Vec<Attr<'_>> {
    let mut out = Vec::new();
    while bytes.len() >= 4 {
        let len = u16::from_ne_bytes([bytes[0], bytes[1]]) as usize;
        assert!(len >= 4 && len <= bytes.len(), "bad attribute length {len}");
        out.push(Attr {
            kind: u16::from_ne_bytes([bytes[2], bytes[3]]),
            value: &bytes[4..len],
        });
        bytes = &bytes[((len + 3) & !3).min(bytes.len())..];
    }
    out
}

/// The name of an attribute inside a SERVICE or DEST nest, for messages.
fn attr_name(nest: &str, kind: u16) -> String {
    let service = [
        "AF",
        "PROTOCOL",
        "ADDR",
        "PORT",
        "FWMARK",
        "SCHED_NAME",
        "FLAGS",
        "TIMEOUT",
        "NETMASK",
    ];
    let dest = [
        "ADDR",
        "PORT",
        "FWD_METHOD",
        "WEIGHT",
        "U_THRESH",
        "L_THRESH",
        "ACTIVE_CONNS",
        "INACT_CONNS",
        "PERSIST_CONNS",
        "STATS",
        "ADDR_FAMILY",
        "STATS64",
        "TUN_TYPE",
        "TUN_PORT",
        "TUN_FLAGS",
    ];
    let names: &[&str] = if nest == "SERVICE" { &service } else { &dest };
    match names.get(usize::from(kind).wrapping_sub(1)) {
        Some(name) => format!("{nest}.{name}"),
        None => format!("{nest}.{kind}"),
    }
}

/// Compare the attributes inside one SERVICE or DEST nest: each of the
/// agent's must be ipvsadm's next one, with the same type and value;
/// ipvsadm may send more where `allowed` says so (noted in `skipped`).
fn compare_nest(
    nest: &str,
    ipvsadm: &[u8],
    ours: &[u8],
    allowed: &[u16],
    skipped: &mut Vec<String>,
) -> Result<(), String> {
    let mut mine = attrs(ours).into_iter().peekable();
    for attr in attrs(ipvsadm) {
        let name = attr_name(nest, attr.kind);
        match mine.peek() {
            Some(m) if m.kind == attr.kind => {
                let m = mine.next().expect("peeked just before");
                if m.value != attr.value {
                    return Err(format!(
                        "{name} is {:02x?} from ipvsadm, {:02x?} from the agent",
                        attr.value, m.value
                    ));
                }
            }
            _ if allowed.contains(&attr.kind) => skipped.push(name),
            Some(m) => {
                return Err(format!(
                    "ipvsadm sends {name} where the agent sends {}",
                    attr_name(nest, m.kind)
                ))
            }
            None => return Err(format!("ipvsadm also sends {name}")),
        }
    }
    match mine.next() {
        Some(m) => Err(format!("the agent also sends {}", attr_name(nest, m.kind))),
        None => Ok(()),
    }
}

/// Compare one request of ipvsadm's with the agent's for the same thing.
/// Returns what ipvsadm sent beyond it (attributes the kernel ignores).
fn compare_request(ipvsadm: &[u8], agent: IpvsMessage, family: u16) -> Result<Vec<String>, String> {
    let dump = agent.is_dump();
    let mut batch = Batch::new(family, seq(ipvsadm));
    batch.push(agent);
    let ours = batch.bytes();
    if message_type(ours) != message_type(ipvsadm) {
        return Err(format!(
            "type {:#x}, agent {:#x}",
            message_type(ipvsadm),
            message_type(ours)
        ));
    }
    let ipvsadm_flags = if dump {
        flags(ipvsadm) & !NLM_F_ACK
    } else {
        flags(ipvsadm)
    };
    if flags(ours) != ipvsadm_flags {
        return Err(format!("flags {:#x}, agent {:#x}", flags(ipvsadm), flags(ours)));
    }
    if ours[16..20] != ipvsadm[16..20] {
        return Err(format!(
            "genl header {:02x?}, agent {:02x?}",
            &ipvsadm[16..20],
            &ours[16..20]
        ));
    }
    let cmd = ipvsadm[16];
    let (service_extra, dest_extra) = ipvsadm_only(cmd, dump);
    let mut skipped = Vec::new();
    let (theirs, mine) = (attrs(&ipvsadm[20..]), attrs(&ours[20..]));
    if theirs.len() != mine.len() {
        return Err(format!("{} top-level attributes, agent {}", theirs.len(), mine.len()));
    }
    for (attr, m) in theirs.iter().zip(&mine) {
        if attr.kind != m.kind {
            return Err(format!("top-level attribute {:#x}, agent {:#x}", attr.kind, m.kind));
        }
        let nest = match attr.kind {
            k if k == IPVS_CMD_ATTR_SERVICE | NLA_F_NESTED => Some(("SERVICE", service_extra)),
            k if k == IPVS_CMD_ATTR_DEST | NLA_F_NESTED => Some(("DEST", dest_extra)),
            _ => None,
        };
        if let Some((name, extra)) = nest {
            compare_nest(name, attr.value, m.value, extra, &mut skipped)?;
        } else if attr.value != m.value {
            return Err(format!(
                "attribute {:#x}: {:02x?}, agent {:02x?}",
                attr.kind, attr.value, m.value
            ));
        }
    }
    if skipped.is_empty() && ours[16..] != ipvsadm[16..] {
        return Err("same attributes, other bytes (padding?)".into());
    }
    Ok(skipped)
}

// --- the answers -------------------------------------------------------------

/// Every answer to the IPVS requests of a capture, by port id and
/// sequence number (each buffer goes to one socket). The controller's
/// answers are left out: [`family_id`] reads them.
fn answers(capture: &Capture, family: u16) -> BTreeMap<(u32, u32), Vec<Result<ReplyBody, IpvsError>>> {
    let mut by_request: BTreeMap<(u32, u32), Vec<_>> = BTreeMap::new();
    for buf in &capture.received {
        let messages = messages(buf);
        let ipvs = messages
            .iter()
            .any(|m| [family, NLMSG_ERROR, NLMSG_DONE].contains(&message_type(m)));
        if !ipvs || messages.iter().any(|m| message_type(m) == GENL_ID_CTRL) {
            continue;
        }
        let port = port(messages[0]);
        for reply in parse_replies(buf, family) {
            let reply = reply.unwrap_or_else(|e| panic!("{}: the kernel's answer does not parse: {e}", capture.name));
            by_request.entry((port, reply.seq)).or_default().push(reply.body);
        }
    }
    by_request
}

fn data(bodies: &[Result<ReplyBody, IpvsError>]) -> Vec<IpvsMessage> {
    bodies
        .iter()
        .filter_map(|body| match body {
            Ok(ReplyBody::Message(message)) => Some(message.clone()),
            _ => None,
        })
        .collect()
}

/// The table `ipvsadm -Ln` read back, as the agent's parser reads it.
fn check_list(dumps: &[Vec<IpvsMessage>]) {
    let services: Vec<ServiceEntry> = dumps[0]
        .iter()
        .map(|m| ServiceEntry::from_message(m).expect("a service entry"))
        .collect();
    let summary: BTreeMap<String, (String, u32, u32, u32)> = services
        .iter()
        .map(|s| {
            (
                format!("{:?}", s.key),
                (s.scheduler.clone(), s.flags.without_hashed().0, s.timeout, s.netmask),
            )
        })
        .collect();
    let expected: BTreeMap<String, (String, u32, u32, u32)> = [
        (web(), "wrr", 0, 0, u32::MAX),
        (dns(), "rr", 0, 0, u32::MAX),
        (https(), "rr", IP_VS_SVC_F_PERSISTENT, 600, u32::MAX),
        (sctp(), "lc", 0, 0, u32::MAX),
        (web6(), "mh", IP_VS_SVC_F_SCHED2, 0, 128),
        (fwmark(), "wrr", 0, 0, u32::MAX),
    ]
    .into_iter()
    .map(|(key, s, f, t, n)| (format!("{key:?}"), (s.to_owned(), f, t, n)))
    .collect();
    assert_eq!(summary, expected, "the virtual servers of the dump");

    let dests = |i: usize, af| -> Vec<(IpAddr, u16, ForwardMethod, u32)> {
        dumps[i]
            .iter()
            .map(|m| DestEntry::from_message(m, af).expect("a real server entry"))
            .map(|d| (d.addr, d.port, d.fwd_method, d.weight))
            .collect()
    };
    let m = ForwardMethod::Masquerade;
    // In the order of `agent_requests("list")`: web, https, dns, sctp, web6, fwmark.
    assert_eq!(dests(1, AddressFamily::Inet), vec![(ip("10.244.1.11"), 8080, m, 0)]);
    assert_eq!(dests(2, AddressFamily::Inet), vec![]);
    assert_eq!(dests(3, AddressFamily::Inet), vec![(ip("10.244.1.12"), 53, m, 1)]);
    assert_eq!(dests(4, AddressFamily::Inet), vec![]);
    assert_eq!(
        dests(5, AddressFamily::Inet6),
        vec![(ip("fd00:10:244:1::11"), 8080, m, 1)]
    );
    assert_eq!(dests(6, AddressFamily::Inet), vec![]);
}

/// Check one case; returns a line for the summary.
fn check_case(name: &str, exit: i32, args: &str) -> String {
    let capture = load(name);
    assert_eq!(capture.command, args, "{name}: the capture is of another command");
    assert_eq!(capture.exit, exit, "{name}: ipvsadm's exit status");
    let family = family_id(&capture);
    let (wanted, outcome) = agent_requests(name).unwrap_or_else(|| panic!("{name}: no agent request for this case"));
    let sent: Vec<&[u8]> = capture
        .sent
        .iter()
        .flat_map(|b| messages(b))
        .filter(|m| message_type(m) == family)
        .collect();
    let expected: Vec<IpvsMessage> = std::iter::once(IpvsMessage::get_info()).chain(wanted).collect();
    assert_eq!(sent.len(), expected.len(), "{name}: IPVS requests ipvsadm sent");

    let mut notes = Vec::new();
    for (request, agent) in sent.iter().zip(expected) {
        let skipped = compare_request(request, agent, family).unwrap_or_else(|e| panic!("{name}: {e}"));
        notes.extend(skipped);
    }

    let answers = answers(&capture, family);
    let answer = |request: &[u8]| {
        answers
            .get(&(port(request), seq(request)))
            .cloned()
            .unwrap_or_else(|| panic!("{name}: no answer to request {}", seq(request)))
    };
    let info = data(&answer(sent[0]));
    let info = IpvsInfo::from_message(&info[0]).expect("GET_INFO answer");
    assert_eq!(
        (info.version, info.conn_tab_size),
        (
            IpvsVersion {
                major: 1,
                minor: 2,
                patch: 1
            },
            4096
        ),
        "{name}: GET_INFO"
    );
    let last = answer(sent[sent.len() - 1]);
    match outcome {
        Outcome::Acked => assert_eq!(last, vec![Ok(ReplyBody::Ack)], "{name}: the kernel's answer"),
        Outcome::Refused(error) => assert_eq!(last, vec![Err(error)], "{name}: the kernel's refusal"),
        Outcome::Data => match name {
            "list" => check_list(&sent[1..].iter().map(|r| data(&answer(r))).collect::<Vec<_>>()),
            "get-service" => {
                let service = ServiceEntry::from_message(&data(&answer(sent[1]))[0]).expect("a service entry");
                assert_eq!(
                    (service.key, service.scheduler.as_str(), service.timeout),
                    (https(), "rr", 600)
                );
                assert!(service.flags.contains(ServiceFlags::PERSISTENT));
                assert_eq!(data(&answer(sent[2])), vec![], "no real servers");
            }
            "get-config" => assert_eq!(
                Timeouts::from_message(&data(&last)[0]),
                Timeouts {
                    tcp: 900,
                    tcp_fin: 120,
                    udp: 300
                }
            ),
            other => panic!("{other}: no data check"),
        },
    }
    if notes.is_empty() {
        format!("{name}: identical to ipvsadm's")
    } else {
        format!("{name}: identical but for ipvsadm's {}", notes.join(", "))
    }
}

#[test]
fn the_agents_requests_match_ipvsadms_and_the_kernels_answers_parse() {
    let cases = cases();
    assert!(cases.len() >= 20, "tests/vm/ipvsadm-cases has {} cases", cases.len());
    println!("captures: {}", captures_dir().display());
    for (name, exit, args) in &cases {
        println!("{}", check_case(name, *exit, args));
    }
}
