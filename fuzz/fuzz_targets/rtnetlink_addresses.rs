//! rtnetlink address messages: the RTM_NEWADDR / RTM_DELADDR requests the
//! agent builds to bind and unbind ClusterIPs on `kube-ipvs0`
//! (`AddressChange::request`), round-tripped through netlink-packet-route's
//! parser; and raw bytes given to what the agent parses on that socket:
//! the ACK reader (`addresses::acks`) and an address dump's messages, read
//! with `link::address_of`.
//!
//! Asserts: nothing panics; a built request parses back equal to itself,
//! with the right type, flags, sequence number, link index, family and
//! host prefix, and `address_of` reads back the address it binds
//! (unless multicast); ACKs
//! read from bytes are as many as the NLMSG_ERROR messages the bytes
//! hold, and an ACK built by hand for each request is read back with its
//! sequence number and errno.
#![no_main]

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

use arbitrary::Arbitrary;
use ipvs_agent::kernel::addresses::{acks, AddressChange};
use ipvs_agent::kernel::link::{address_of, host_prefix};
use libfuzzer_sys::fuzz_target;
use netlink_packet_core::{
    ErrorMessage, NetlinkHeader, NetlinkMessage, NetlinkPayload, NLM_F_ACK, NLM_F_CREATE, NLM_F_EXCL, NLM_F_REQUEST,
};
use rtnetlink::packet_route::RouteNetlinkMessage;

#[derive(Arbitrary, Debug)]
struct Change {
    bind: bool,
    v6: bool,
    bytes: [u8; 16],
    index: u32,
    seq: u32,
    errno: i32,
}

#[derive(Arbitrary, Debug)]
struct Input {
    changes: Vec<Change>,
    raw: Vec<u8>,
}

fn serialize<T: netlink_packet_core::NetlinkSerializable + std::fmt::Debug>(message: &NetlinkMessage<T>) -> Vec<u8> {
    let mut bytes = vec![0; message.buffer_len()];
    message.serialize(&mut bytes);
    bytes
}

fn check_change(change: &Change) {
    let address = if change.v6 {
        IpAddr::V6(Ipv6Addr::from(change.bytes))
    } else {
        IpAddr::V4(Ipv4Addr::new(
            change.bytes[0],
            change.bytes[1],
            change.bytes[2],
            change.bytes[3],
        ))
    };
    let which = if change.bind {
        AddressChange::Bind(address)
    } else {
        AddressChange::Unbind(address)
    };
    let request = which.request(change.index, change.seq);
    let bytes = serialize(&request);
    assert_eq!(bytes.len() % 4, 0);
    let parsed = NetlinkMessage::<RouteNetlinkMessage>::deserialize(&bytes).expect("a built request parses");
    assert_eq!(parsed, request, "parse(serialize(request)) != request");
    assert_eq!(parsed.header.sequence_number, change.seq);
    let want_flags = if change.bind {
        NLM_F_REQUEST | NLM_F_ACK | NLM_F_EXCL | NLM_F_CREATE
    } else {
        NLM_F_REQUEST | NLM_F_ACK
    };
    assert_eq!(parsed.header.flags, want_flags);
    let message = match (&parsed.payload, change.bind) {
        (NetlinkPayload::InnerMessage(RouteNetlinkMessage::NewAddress(m)), true)
        | (NetlinkPayload::InnerMessage(RouteNetlinkMessage::DelAddress(m)), false) => m,
        (other, _) => panic!("unexpected payload {other:?}"),
    };
    assert_eq!(message.header.index, change.index);
    assert_eq!(message.header.prefix_len, host_prefix(address));
    // rtnetlink's builder sends a multicast address as IFA_MULTICAST, which
    // `address_of` does not read; ClusterIPs are never multicast (service
    // CIDRs exclude ff00::/8 and 224.0.0.0/4).
    if !address.is_multicast() {
        assert_eq!(address_of(message), Some(address));
    }

    // The kernel's answer: an NLMSG_ERROR echoing the request's header.
    let mut header = NetlinkHeader::default();
    header.sequence_number = change.seq;
    let mut error = ErrorMessage::default();
    error.code = std::num::NonZeroI32::new(change.errno);
    error.header = bytes[..16].to_vec();
    let mut answer = NetlinkMessage::new(header, NetlinkPayload::<RouteNetlinkMessage>::Error(error));
    answer.finalize();
    let answer = serialize(&answer);
    let read = acks(&answer).expect("a built ACK reads");
    assert_eq!(read, vec![(change.seq, change.errno.saturating_abs())]);
}

fuzz_target!(|input: Input| {
    for change in input.changes.iter().take(64) {
        check_change(change);
    }
    // Raw bytes: the ACK reader, and every message of a dump.
    if let Ok(answers) = acks(&input.raw) {
        assert!(answers.len() <= input.raw.len() / 16);
    }
    let mut offset = 0;
    while let Some(rest) = input.raw.get(offset..).filter(|rest| rest.len() >= 16) {
        let Ok(message) = NetlinkMessage::<RouteNetlinkMessage>::deserialize(rest) else {
            break;
        };
        let length = message.header.length as usize;
        if length < 16 {
            break;
        }
        if let NetlinkPayload::InnerMessage(RouteNetlinkMessage::NewAddress(m)) = &message.payload {
            if let Some(address) = address_of(m) {
                assert!(m
                    .attributes
                    .iter()
                    .any(|a| format!("{a:?}").contains(&format!("{address:?}"))));
            }
        }
        offset += length.div_ceil(4) * 4;
    }
});
