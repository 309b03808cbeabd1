//! A request written by [`Batch::push`] (one pass, each nest's length
//! computed once) is byte for byte what netlink-packet-core's generic
//! serializer writes for the same message, whatever its command and
//! attributes: the goldens pin the requests the agent sends, this pins the
//! writer on everything else.

use netlink_packet_core::{DefaultNla, NLM_F_ACK, NLM_F_DUMP, NLM_F_REQUEST};
use proptest::prelude::*;

use super::super::{Batch, IpvsAttr, IpvsCmd, IpvsMessage};
use super::no_panic::{dest_attr, service_attr};
use super::{serialized, FAMILY};

/// An attribute the kernel does not define, with any flags in its type.
fn other_attr() -> impl Strategy<Value = DefaultNla> {
    (any::<u16>(), proptest::collection::vec(any::<u8>(), 0..24)).prop_map(|(kind, value)| DefaultNla::new(kind, value))
}

fn top_attr() -> impl Strategy<Value = IpvsAttr> {
    prop_oneof![
        proptest::collection::vec(service_attr(), 0..8).prop_map(IpvsAttr::Service),
        proptest::collection::vec(dest_attr(), 0..8).prop_map(IpvsAttr::Dest),
        proptest::collection::vec(other_attr(), 0..3).prop_map(IpvsAttr::Daemon),
        any::<u32>().prop_map(IpvsAttr::TimeoutTcp),
        any::<u32>().prop_map(IpvsAttr::TimeoutTcpFin),
        any::<u32>().prop_map(IpvsAttr::TimeoutUdp),
        other_attr().prop_map(IpvsAttr::Other),
    ]
}

fn message() -> impl Strategy<Value = IpvsMessage> {
    let cmd = (1u8..=13).prop_map(|cmd| IpvsCmd::try_from(cmd).expect("a request command"));
    (cmd, proptest::collection::vec(top_attr(), 0..4)).prop_map(|(cmd, attrs)| IpvsMessage::new(cmd, attrs))
}

proptest! {
    #[test]
    fn a_batch_writes_what_the_generic_serializer_writes(
        messages in proptest::collection::vec(message(), 1..4),
        first_seq in any::<u32>(),
    ) {
        let mut batch = Batch::new(FAMILY, first_seq);
        let mut expected = Vec::new();
        for message in messages {
            let seq = batch.push(message.clone());
            let flags = NLM_F_REQUEST | if message.is_dump() { NLM_F_DUMP } else { NLM_F_ACK };
            expected.extend(serialized(message, seq, flags, 0));
        }
        prop_assert_eq!(batch.bytes(), &expected[..]);
    }
}
