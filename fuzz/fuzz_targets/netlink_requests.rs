//! The IPVS requests the agent builds, emitted and parsed back: random
//! virtual servers, real servers and timeouts through every builder
//! (`IpvsMessage::new_service` ... `flush`), serialised into one `Batch`
//! as the agent sends them, then read back with the agent's own parser.
//!
//! Asserts: every request reads back as exactly the message built, with
//! its sequence number, in order, and nothing else; dumps are flagged as
//! dumps; a NEW_SERVICE read back as a `ServiceEntry` gives the key,
//! scheduler, flags, timeout and netmask it was built from; a NEW_DEST
//! read as a `DestEntry` (with the counters the kernel adds) gives the real
//! server it was built from.
#![no_main]

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

use arbitrary::Arbitrary;
use ipvs_agent::netlink::{
    parse_replies, AddressFamily, Batch, DestAttr, DestEntry, DestSpec, ForwardMethod, IpvsAttr, IpvsMessage, Protocol,
    ReplyBody, SchedulerName, ServiceEntry, ServiceFlags, ServiceKey, Timeouts, VirtualServiceSpec,
};
use libfuzzer_sys::fuzz_target;

#[derive(Arbitrary, Debug)]
enum Addr {
    V4([u8; 4]),
    V6([u8; 16]),
}

impl Addr {
    fn ip(&self) -> IpAddr {
        match self {
            Addr::V4(b) => IpAddr::V4(Ipv4Addr::from(*b)),
            Addr::V6(b) => IpAddr::V6(Ipv6Addr::from(*b)),
        }
    }
}

#[derive(Arbitrary, Debug)]
enum Key {
    Addr { protocol: u16, addr: Addr, port: u16 },
    Fwmark { v6: bool, fwmark: u32 },
}

impl Key {
    fn key(&self) -> ServiceKey {
        match self {
            Key::Addr { protocol, addr, port } => ServiceKey::Addr {
                protocol: Protocol::from(*protocol),
                addr: addr.ip(),
                port: *port,
            },
            Key::Fwmark { v6, fwmark } => ServiceKey::Fwmark {
                af: if *v6 { AddressFamily::Inet6 } else { AddressFamily::Inet },
                fwmark: *fwmark,
            },
        }
    }
}

#[derive(Arbitrary, Debug)]
struct Service {
    key: Key,
    scheduler: String,
    flags: u32,
    persistent: Option<u32>,
    netmask: Option<u32>,
}

impl Service {
    fn spec(&self) -> Option<VirtualServiceSpec> {
        let scheduler = SchedulerName::new(&self.scheduler).ok()?;
        let mut spec = VirtualServiceSpec::new(self.key.key(), scheduler).with_flags(ServiceFlags(self.flags));
        if let Some(timeout) = self.persistent {
            spec = spec.persistent(timeout);
        }
        if let Some(netmask) = self.netmask {
            spec.netmask = netmask;
        }
        Some(spec)
    }
}

#[derive(Arbitrary, Debug)]
struct Dest {
    addr: Addr,
    port: u16,
    fwd_method: u32,
    weight: u32,
    u_thresh: u32,
    l_thresh: u32,
}

impl Dest {
    fn spec(&self) -> DestSpec {
        DestSpec {
            addr: self.addr.ip(),
            port: self.port,
            fwd_method: ForwardMethod::from(self.fwd_method),
            weight: self.weight,
            u_thresh: self.u_thresh,
            l_thresh: self.l_thresh,
        }
    }
}

#[derive(Arbitrary, Debug)]
enum Request {
    NewService(Service),
    SetService(Service),
    DelService(Key),
    GetService(Key),
    GetServicesDump,
    NewDest(Key, Dest),
    SetDest(Key, Dest),
    DelDest(Key, Addr, u16),
    GetDestsDump(Key),
    GetInfo,
    SetConfig(u32, u32, u32),
    GetConfig,
    Flush,
}

impl Request {
    fn message(&self) -> Option<IpvsMessage> {
        Some(match self {
            Request::NewService(s) => IpvsMessage::new_service(&s.spec()?),
            Request::SetService(s) => IpvsMessage::set_service(&s.spec()?),
            Request::DelService(k) => IpvsMessage::del_service(&k.key()),
            Request::GetService(k) => IpvsMessage::get_service(&k.key()),
            Request::GetServicesDump => IpvsMessage::get_services_dump(),
            Request::NewDest(k, d) => IpvsMessage::new_dest(&k.key(), &d.spec()),
            Request::SetDest(k, d) => IpvsMessage::set_dest(&k.key(), &d.spec()),
            Request::DelDest(k, a, port) => IpvsMessage::del_dest(&k.key(), a.ip(), *port),
            Request::GetDestsDump(k) => IpvsMessage::get_dests_dump(&k.key()),
            Request::GetInfo => IpvsMessage::get_info(),
            Request::SetConfig(tcp, tcp_fin, udp) => IpvsMessage::set_config(&Timeouts {
                tcp: *tcp,
                tcp_fin: *tcp_fin,
                udp: *udp,
            }),
            Request::GetConfig => IpvsMessage::get_config(),
            Request::Flush => IpvsMessage::flush(),
        })
    }
}

#[derive(Arbitrary, Debug)]
struct Input {
    family_id: u16,
    first_seq: u32,
    requests: Vec<Request>,
}

/// Check what a NEW_SERVICE or NEW_DEST reads as against what built it.
fn check_entries(request: &Request, message: &IpvsMessage) {
    match request {
        Request::NewService(s) | Request::SetService(s) => {
            let spec = s.spec().expect("only built requests are checked");
            let entry = ServiceEntry::from_message(message).expect("a built service reads as an entry");
            assert_eq!(entry.key, spec.key);
            assert_eq!(entry.scheduler, spec.scheduler.as_str());
            assert_eq!(entry.flags, spec.flags);
            assert_eq!(entry.timeout, spec.timeout);
            assert_eq!(entry.netmask, spec.netmask);
            assert_eq!(entry.pe_name, None);
        }
        Request::NewDest(k, d) | Request::SetDest(k, d) => {
            // The kernel answers with the counters added; so does this.
            let mut message = message.clone();
            for attr in &mut message.attrs {
                if let IpvsAttr::Dest(attrs) = attr {
                    attrs.extend([
                        DestAttr::ActiveConns(3),
                        DestAttr::InactConns(4),
                        DestAttr::PersistConns(5),
                    ]);
                }
            }
            let entry = DestEntry::from_message(&message, k.key().af()).expect("a built dest reads as an entry");
            let spec = d.spec();
            assert_eq!((entry.addr, entry.port), (spec.addr, spec.port));
            assert_eq!(entry.fwd_method, spec.fwd_method);
            assert_eq!(
                (entry.weight, entry.u_thresh, entry.l_thresh),
                (spec.weight, spec.u_thresh, spec.l_thresh)
            );
            assert_eq!((entry.active_conns, entry.inact_conns, entry.persist_conns), (3, 4, 5));
            assert_eq!(entry.addr_family, AddressFamily::of(spec.addr));
        }
        _ => {}
    }
}

fuzz_target!(|input: Input| {
    // Types 0-15 are netlink's own (NOOP, ERROR, DONE, OVERRUN, reserved).
    let family_id = input.family_id.max(16);
    let mut batch = Batch::new(family_id, input.first_seq);
    let mut built = Vec::new();
    for request in &input.requests {
        if let Some(message) = request.message() {
            let seq = batch.push(message.clone());
            built.push((request, seq, message));
        }
    }
    assert_eq!(batch.len(), built.len());
    assert_eq!(batch.bytes().len() % 4, 0, "requests are NLMSG_ALIGNed");
    let replies: Vec<_> = parse_replies(batch.bytes(), family_id).collect();
    assert_eq!(replies.len(), built.len(), "one message per request");
    for ((reply, (request, seq, message)), sent) in replies.into_iter().zip(&built).zip(batch.requests()) {
        let reply = reply.expect("a built request parses");
        assert_eq!(reply.seq, *seq);
        assert_eq!(sent.seq, *seq);
        assert_eq!(sent.cmd, message.cmd);
        assert_eq!(sent.dump, message.is_dump());
        assert_eq!(reply.body, Ok(ReplyBody::Message(message.clone())), "{request:?}");
        check_entries(request, message);
    }
    if let Some((_, last, _)) = built.last() {
        assert_eq!(batch.next_seq(), last.wrapping_add(1));
    }
});
