//! IPVS generic-netlink replies, as the kernel sends them: any bytes given
//! to the agent's reply parser (`parse_replies`), then every message read
//! into the entries the agent reads (services, real servers, GET_INFO,
//! GET_CONFIG) and converted to the core's table, as `kernel::genl` does;
//! and the same bytes given to the generic-netlink controller's reply
//! parser (`kernel::family::parse_reply`).
//!
//! Asserts: nothing panics; the iterator ends (at most one answer per 16
//! bytes); a parsed message, emitted and parsed, reaches a fixed point
//! with the same command and attribute count; a parsed
//! virtual server the core can represent, built into a NEW_SERVICE request
//! and read back, gives the same key and settings; a parsed real server
//! likewise through NEW_DEST.
#![no_main]

use ipvs_agent::kernel::{convert, family};
use ipvs_agent::netlink::{
    parse_replies, AddressFamily, DestEntry, IpvsAttr, IpvsInfo, IpvsMessage, ReplyBody, ServiceEntry, Timeouts,
};
use libfuzzer_sys::fuzz_target;
use netlink_packet_core::{Emitable, ParseableParametrized};
use netlink_packet_generic::GenlHeader;

/// The IPVS family id in the committed ipvsadm captures.
const FAMILY: u16 = 0x20;

/// Emit `message` and parse it back.
fn reparse(message: &IpvsMessage) -> IpvsMessage {
    let mut buf = vec![0; message.buffer_len()];
    message.emit(&mut buf);
    let header = GenlHeader {
        cmd: message.cmd.into(),
        version: 1,
    };
    IpvsMessage::parse_with_param(&buf[..], header).expect("an emitted message parses")
}

fn check_message(message: &IpvsMessage) {
    // Emitting can only represent attributes that fit a 16-bit length,
    // which every parsed one does unless re-emission grows it. Emitting
    // normalises what it does not model (the NLA_F_* bits of an unknown
    // attribute's type, a string's missing NUL), so the property is that
    // one emit and parse reaches a fixed point.
    if message.buffer_len() < 60_000 {
        let once = reparse(message);
        assert_eq!(once.cmd, message.cmd);
        assert_eq!(once.attrs.len(), message.attrs.len());
        assert_eq!(reparse(&once), once, "parse(emit(m)) is not a fixed point");
    }
    let service = ServiceEntry::from_message(message);
    let af = match &service {
        Ok(entry) => entry.key.af(),
        Err(_) => AddressFamily::Inet6,
    };
    if let Ok(entry) = &service {
        if let Ok((key, settings)) = convert::virtual_server(entry) {
            if let Ok(spec) = convert::service_spec(&key, &settings) {
                let built = IpvsMessage::new_service(&spec);
                let read = ServiceEntry::from_message(&reparse(&built)).expect("a built service reads back");
                let (key2, settings2) = convert::virtual_server(&read).expect("a built service converts");
                assert_eq!(key, key2);
                assert!(settings.same_as(&settings2), "{entry:?}: {settings:?} != {settings2:?}");
            }
        }
    }
    if let Ok(dest) = DestEntry::from_message(message, af) {
        if let Ok((addr, real)) = convert::real_server(&dest) {
            let spec = convert::dest_spec(addr, real.forward, real.weight);
            let key = match &service {
                Ok(entry) => entry.key,
                Err(_) => ipvs_agent::netlink::ServiceKey::Fwmark {
                    af: AddressFamily::of(addr.ip()),
                    fwmark: 1,
                },
            };
            let built = reparse(&IpvsMessage::new_dest(&key, &spec));
            let dests: Vec<_> = built
                .attrs
                .iter()
                .filter_map(|attr| match attr {
                    IpvsAttr::Dest(attrs) => Some(attrs.clone()),
                    _ => None,
                })
                .collect();
            assert_eq!(dests.len(), 1);
            assert!(
                dests[0].contains(&ipvs_agent::netlink::DestAttr::Weight(real.weight)),
                "the weight survives"
            );
        }
    }
    let _ = IpvsInfo::from_message(message);
    let _ = Timeouts::from_message(message);
}

fuzz_target!(|data: &[u8]| {
    let mut answers = 0;
    for reply in parse_replies(data, FAMILY) {
        answers += 1;
        assert!(answers <= data.len() / 16 + 1, "more answers than the bytes can hold");
        if let Ok(reply) = reply {
            if let Ok(ReplyBody::Message(message)) = &reply.body {
                check_message(message);
            }
        }
    }
    let seq = data
        .get(8..12)
        .map_or(0, |b| u32::from_ne_bytes([b[0], b[1], b[2], b[3]]));
    let _ = family::parse_reply(data, seq);
});
