//! Property tests: parsing never panics, whatever the bytes (random, or valid
//! messages truncated or with bytes changed), and attributes survive an emit
//! and parse round trip.

use netlink_packet_core::{Emitable, NlaBuffer, Parseable, ParseableParametrized};
use netlink_packet_generic::GenlHeader;
use proptest::prelude::*;

use super::super::{
    parse_replies, AddressFamily, Batch, DestAttr, DestEntry, DestSpec, ForwardMethod, InetAddr, IpvsInfo, IpvsMessage,
    ReplyBody, SchedulerName, ServiceAttr, ServiceEntry, ServiceFlags, ServiceKey, Stats, Timeouts, VirtualServiceSpec,
};
use super::dump_replies::{DEST_DUMP, INFO_REPLY, SERVICE_DUMP};
use super::service_requests::{fwmark_key, tcp};
use super::FAMILY;

/// Valid buffers to damage: every kind of request, and the reply goldens.
fn valid_buffers() -> Vec<Vec<u8>> {
    let spec = VirtualServiceSpec::new(tcp("fd00:10:96::20", 80), SchedulerName::new("mh").unwrap()).persistent(60);
    let dest = DestSpec::masquerade("10.244.1.11".parse().unwrap(), 8443, 1);
    let requests = [
        IpvsMessage::new_service(&spec),
        IpvsMessage::set_service(&spec),
        IpvsMessage::del_service(&fwmark_key()),
        IpvsMessage::get_services_dump(),
        IpvsMessage::new_dest(&tcp("10.96.0.50", 443), &dest),
        IpvsMessage::get_dests_dump(&fwmark_key()),
        IpvsMessage::set_config(&Timeouts {
            tcp: 1,
            tcp_fin: 2,
            udp: 3,
        }),
        IpvsMessage::get_info(),
    ];
    let mut buffers: Vec<Vec<u8>> = requests
        .into_iter()
        .map(|message| {
            let mut batch = Batch::new(FAMILY, 1);
            batch.push(message);
            batch.into_parts().0
        })
        .collect();
    buffers.extend([SERVICE_DUMP.to_vec(), DEST_DUMP.to_vec(), INFO_REPLY.to_vec()]);
    buffers
}

/// Parse `buf` as replies and read every message into entries, as the agent
/// will; only errors may come out.
fn parse_everything(buf: &[u8]) {
    for reply in parse_replies(buf, FAMILY).flatten() {
        if let Ok(ReplyBody::Message(message)) = reply.body {
            let _ = ServiceEntry::from_message(&message);
            let _ = DestEntry::from_message(&message, AddressFamily::Inet6);
            let _ = IpvsInfo::from_message(&message);
            let _ = Timeouts::from_message(&message);
        }
    }
}

fn stats() -> impl Strategy<Value = Stats> {
    proptest::array::uniform10(any::<u64>()).prop_map(|v| Stats {
        conns: v[0],
        in_pkts: v[1],
        out_pkts: v[2],
        in_bytes: v[3],
        out_bytes: v[4],
        cps: v[5],
        in_pps: v[6],
        out_pps: v[7],
        in_bps: v[8],
        out_bps: v[9],
    })
}

pub(super) fn service_attr() -> impl Strategy<Value = ServiceAttr> {
    prop_oneof![
        any::<u16>().prop_map(|v| ServiceAttr::AddressFamily(v.into())),
        any::<u16>().prop_map(|v| ServiceAttr::Protocol(v.into())),
        any::<[u8; 16]>().prop_map(|v| ServiceAttr::Addr(InetAddr(v))),
        any::<u16>().prop_map(ServiceAttr::Port),
        any::<u32>().prop_map(ServiceAttr::Fwmark),
        "[a-z]{1,15}".prop_map(ServiceAttr::SchedName),
        (any::<u32>(), any::<u32>()).prop_map(|(f, mask)| ServiceAttr::Flags {
            flags: ServiceFlags(f),
            mask
        }),
        any::<u32>().prop_map(ServiceAttr::Timeout),
        any::<u32>().prop_map(ServiceAttr::Netmask),
        stats().prop_map(ServiceAttr::Stats64),
        "[a-z]{0,15}".prop_map(ServiceAttr::PeName),
    ]
}

pub(super) fn dest_attr() -> impl Strategy<Value = DestAttr> {
    prop_oneof![
        any::<[u8; 16]>().prop_map(|v| DestAttr::Addr(InetAddr(v))),
        any::<u16>().prop_map(DestAttr::Port),
        any::<u32>().prop_map(|v| DestAttr::FwdMethod(ForwardMethod::from(v))),
        any::<u32>().prop_map(DestAttr::Weight),
        any::<u32>().prop_map(DestAttr::UThresh),
        any::<u32>().prop_map(DestAttr::LThresh),
        any::<u32>().prop_map(DestAttr::ActiveConns),
        any::<u32>().prop_map(DestAttr::InactConns),
        any::<u32>().prop_map(DestAttr::PersistConns),
        stats().prop_map(DestAttr::Stats64),
        any::<u16>().prop_map(|v| DestAttr::AddressFamily(v.into())),
        any::<u8>().prop_map(DestAttr::TunType),
        any::<u16>().prop_map(DestAttr::TunPort),
        any::<u16>().prop_map(DestAttr::TunFlags),
    ]
}

/// Emit one attribute and parse it back.
fn round_trip<A: Emitable>(attr: &A) -> Vec<u8> {
    let mut bytes = vec![0; attr.buffer_len()];
    attr.emit(&mut bytes);
    bytes
}

proptest! {
    #[test]
    fn random_bytes_never_panic(buf in proptest::collection::vec(any::<u8>(), 0..600)) {
        parse_everything(&buf);
    }

    #[test]
    fn random_payloads_never_panic(cmd in any::<u8>(), payload in proptest::collection::vec(any::<u8>(), 0..300)) {
        let _ = IpvsMessage::parse_with_param(&payload[..], GenlHeader { cmd, version: 1 });
    }

    #[test]
    fn truncated_messages_never_panic(pick in any::<prop::sample::Index>(), cut in any::<prop::sample::Index>()) {
        let buffers = valid_buffers();
        let buf = pick.get(&buffers);
        let mut short = buf[..cut.index(buf.len())].to_vec();
        parse_everything(&short);
        // Also claim the truncated length in the header, so parsing reaches
        // the attributes instead of stopping at the framing check.
        if short.len() >= 4 {
            let len = short.len() as u32;
            short[..4].copy_from_slice(&len.to_ne_bytes());
            parse_everything(&short);
        }
    }

    #[test]
    fn damaged_messages_never_panic(
        pick in any::<prop::sample::Index>(),
        edits in proptest::collection::vec((any::<prop::sample::Index>(), any::<u8>()), 1..8),
    ) {
        let buffers = valid_buffers();
        let mut buf = pick.get(&buffers).clone();
        for (at, byte) in edits {
            let i = at.index(buf.len());
            buf[i] = byte;
        }
        parse_everything(&buf);
    }

    #[test]
    fn service_attributes_round_trip(attr in service_attr()) {
        let bytes = round_trip(&attr);
        prop_assert_eq!(ServiceAttr::parse(&NlaBuffer::new_checked(&bytes[..]).unwrap()).unwrap(), attr);
    }

    #[test]
    fn dest_attributes_round_trip(attr in dest_attr()) {
        let bytes = round_trip(&attr);
        prop_assert_eq!(DestAttr::parse(&NlaBuffer::new_checked(&bytes[..]).unwrap()).unwrap(), attr);
    }

    #[test]
    fn dumped_services_read_back_as_their_spec(
        addr in any::<std::net::IpAddr>(),
        port in any::<u16>(),
        timeout in 1u32..86_400,
    ) {
        let key = ServiceKey::Addr { protocol: super::super::Protocol::Udp, addr, port };
        let spec = VirtualServiceSpec::new(key, SchedulerName::new("rr").unwrap()).persistent(timeout);
        let message = IpvsMessage::new_service(&spec);
        let entry = ServiceEntry::from_message(&message).unwrap();
        prop_assert_eq!(entry.key, key);
        prop_assert_eq!(entry.flags, ServiceFlags::PERSISTENT);
        prop_assert_eq!(entry.timeout, timeout);
    }
}
