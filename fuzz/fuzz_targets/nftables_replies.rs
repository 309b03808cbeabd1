//! nf_tables over nfnetlink, both ways. Any bytes are given to the agent's
//! answer parser (`nftables::parse_answers`), and the answers it reads to
//! what `kernel::nft` does with them (`outcome` against the requests of a
//! batch, the refusal's text, `missing_nf_tables`). The same bytes, read as
//! structured input (`arbitrary`), make two rulesets of the core's table
//! `inet svcnet` (fuzzer-chosen `masqueradeAll`, cluster CIDRs and set
//! elements, well- or ill-typed): the agent decides the transaction from the
//! applied one to the desired one (`decide`), builds its requests
//! (`requests`) and frames them in a batch (`NftBatch`); the batch is read
//! back with netlink-packet-core's header and attribute parsers, and
//! answered as the kernel would (ACKs, refusals with extended-ACK text,
//! capped or echoing the whole request, a refused batch, a lost answer).
//!
//! Asserts: nothing panics; parsing ends with at most one answer per 20
//! bytes; a parsed answer, emitted as an `NLMSG_ERROR`, parses back to
//! itself (fixed point at once); two buffers that parse, parsed as one,
//! give the answers of both in order; `outcome` on parsed answers reports
//! success only when every request was acknowledged and the batch not
//! refused, else the batch's refusal or the first refused request in
//! order, else a lost answer. Built requests: the transaction is `Replace`
//! with nothing applied or a changed shape, else the element changes that
//! turn the applied ruleset into the desired one; building fails exactly
//! when an element that must be sent does not fit its set's key type
//! (`ElementMismatch`), or, replacing the table, when a family has two
//! cluster CIDRs (`Unsupported`: an anonymous set); the requests come in
//! `nft -f`'s order (table added, deleted, added; chains; each set then
//! its elements; rules) or removals before additions; every element sent
//! decodes, field by field from the wire, to the element it was built
//! from (a prefix to its network and last address, computed with
//! ipnetwork); the batch is begin, the requests, end, their lengths tiling
//! it exactly, each header's type, flags, consecutive sequence number and
//! `nfgenmsg` right, every attribute tree parsing to its exact end, zero
//! padding; nothing is sent when nothing changed; the kernel's simulated
//! answers, in one or two buffers, parse to what was answered and
//! `outcome` names the refused request or the batch.
#![no_main]

use std::collections::BTreeSet;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

use arbitrary::{Arbitrary, Unstructured};
use ipnetwork::IpNetwork;
use ipvs_agent::nftables::constants::*;
use ipvs_agent::nftables::error::MissingNfTables;
use ipvs_agent::nftables::message::element_text;
use ipvs_agent::nftables::{
    decide, outcome, parse_answers, requests, Answer, NftBatch, NftBuildError, NftMessage, NftRefusal, Operation,
    SentRequest, Transaction,
};
use libfuzzer_sys::fuzz_target;
use netlink_packet_core::{NetlinkBuffer, NlaBuffer, NLM_F_ACK, NLM_F_REQUEST};
use svcnet_core::proxy::nftables::empty_table;
use svcnet_core::proxy::nftables::model::{Element, KeyType, Set, Table, Value};
use svcnet_core::proxy::table::Protocol;
use svcnet_core::proxy::ProxyConfig;

#[path = "kernel_answers.rs"]
mod kernel_answers;
use kernel_answers::error_message;

/// The netlink messages of `bytes`, which must tile it exactly.
fn messages(bytes: &[u8]) -> Vec<&[u8]> {
    let mut out = Vec::new();
    let mut offset = 0;
    while offset < bytes.len() {
        let header = NetlinkBuffer::new_checked(&bytes[offset..]).expect("a built message's header parses");
        let len = header.length() as usize;
        assert_eq!(len % 4, 0, "a built message is aligned");
        out.push(&bytes[offset..offset + len]);
        offset += len;
    }
    assert_eq!(offset, bytes.len());
    out
}

/// The attributes of `region`: kind, nested flag, value. They must tile it.
fn attrs(region: &[u8]) -> Vec<(u16, bool, &[u8])> {
    let mut out = Vec::new();
    let mut offset = 0;
    while offset < region.len() {
        let nla = NlaBuffer::new_checked(&region[offset..]).expect("a built attribute parses");
        let len = usize::from(nla.length());
        let value = &region[offset + 4..offset + len];
        out.push((nla.kind(), nla.nested_flag(), value));
        let padded = len.next_multiple_of(4);
        assert!(
            offset + padded <= region.len(),
            "an attribute's padding runs past its parent"
        );
        assert!(
            region[offset + len..offset + padded].iter().all(|&b| b == 0),
            "padding is zero"
        );
        offset += padded;
    }
    out
}

/// Every nest of an attribute tree parses to its exact end.
fn check_tree(region: &[u8], depth: usize) {
    assert!(depth < 16, "attributes nested too deep");
    for (_, nested, value) in attrs(region) {
        if nested {
            check_tree(value, depth + 1);
        }
    }
}

fn find<'a>(list: &[(u16, bool, &'a [u8])], kind: u16) -> Option<&'a [u8]> {
    list.iter().find(|(k, _, _)| *k == kind).map(|(_, _, v)| *v)
}

fn be32(value: &[u8]) -> u32 {
    u32::from_be_bytes(value.try_into().expect("a 32-bit attribute"))
}

// ---------------------------------------------------------------------
// Any bytes.

fn check_raw(data: &[u8]) {
    let Ok(answers) = parse_answers(data) else {
        return;
    };
    // An answer is at least a header and an errno.
    assert!(answers.len() <= data.len() / 20, "more answers than the bytes can hold");
    for answer in &answers {
        assert!(answer.errno >= 0, "{answer:?}");
        if let Some(text) = &answer.message {
            assert!(!text.ends_with('\0'), "{answer:?}");
            if text.len() > 60_000 {
                continue;
            }
        }
        // The echoed request: a bare header (capped, or a request of no body).
        let mut echoed = [0u8; 16];
        echoed[..4].copy_from_slice(&16u32.to_ne_bytes());
        for capped in [true, false] {
            let bytes = error_message(
                answer.seq,
                answer.errno,
                &echoed,
                capped,
                !capped,
                answer.message.as_deref(),
            );
            let again = parse_answers(&bytes).expect("an emitted answer parses");
            assert_eq!(
                again,
                std::slice::from_ref(answer),
                "parse(emit(answer)) is not a fixed point"
            );
        }
    }
    // Messages are self-delimiting: two buffers that parse, parsed as one.
    let half = (data.len() / 2) & !3;
    if let (Ok(first), Ok(second)) = (parse_answers(&data[..half]), parse_answers(&data[half..])) {
        let both: Vec<_> = first.into_iter().chain(second).collect();
        assert_eq!(answers, both, "answers of a buffer split at {half}");
    }
    // What the agent does with them: the requests of a batch whose begin
    // message had the first message's sequence number, one per other
    // sequence number answered, and one never answered when the length is odd.
    let begin = data
        .get(8..12)
        .map_or(0, |b| u32::from_ne_bytes([b[0], b[1], b[2], b[3]]));
    let mut seqs: Vec<u32> = Vec::new();
    for answer in &answers {
        if answer.seq != begin && !seqs.contains(&answer.seq) {
            seqs.push(answer.seq);
        }
    }
    if data.len() % 2 == 1 {
        let unanswered = (1..)
            .map(|i| begin.wrapping_add(i))
            .find(|s| !answers.iter().any(|a| a.seq == *s));
        seqs.extend(unanswered);
    }
    let sent: Vec<SentRequest> = seqs
        .iter()
        .enumerate()
        .map(|(index, &seq)| SentRequest {
            seq,
            operation: Operation::AddRule {
                chain: "services".into(),
                index,
            },
        })
        .collect();
    check_outcome(begin, &sent, &answers, outcome(begin, &sent, &answers));
}

/// `outcome`'s result against what the answers say.
fn check_outcome(begin: u32, sent: &[SentRequest], answers: &[Answer], result: Result<(), Option<NftRefusal>>) {
    let first = |seq: u32| answers.iter().find(|a| a.seq == seq);
    let batch_refused = answers.iter().any(|a| a.seq == begin && a.errno != 0);
    match result {
        Ok(()) => {
            assert!(!batch_refused);
            for request in sent {
                let answer = first(request.seq).unwrap_or_else(|| panic!("success with {request:?} unanswered"));
                assert_eq!(answer.errno, 0, "success with {request:?} refused");
            }
        }
        Err(None) => {
            assert!(!batch_refused);
            assert!(sent.iter().any(|r| first(r.seq).is_none()), "no answer missing");
            assert!(sent.iter().all(|r| first(r.seq).is_none_or(|a| a.errno == 0)));
        }
        Err(Some(refusal)) => {
            assert_ne!(refusal.errno, 0);
            let text = refusal.to_string();
            assert!(text.starts_with("nftables: "), "{text}");
            assert!(text.contains(&refusal.operation.to_string()), "{text}");
            if let Some(message) = &refusal.message {
                assert!(text.ends_with(&format!("(kernel: {message})")), "{text}");
            }
            if let Some(missing) = refusal.missing_nf_tables() {
                assert!(matches!(refusal.errno, 95 | 97), "{refusal:?}: {missing}");
            }
            if refusal.operation == Operation::Batch {
                assert!(answers
                    .iter()
                    .any(|a| a.seq == begin && a.errno == refusal.errno && a.message == refusal.message));
                assert_eq!(
                    refusal.missing_nf_tables(),
                    (refusal.errno == 95).then_some(MissingNfTables::Subsystem)
                );
            } else {
                assert!(!batch_refused, "a refused batch reported as {refusal:?}");
                let at = sent
                    .iter()
                    .position(|r| first(r.seq).is_some_and(|a| a.errno != 0))
                    .expect("a refused request");
                let answer = first(sent[at].seq).expect("answered");
                assert_eq!(refusal.operation, sent[at].operation, "not the first refused request");
                assert_eq!((refusal.errno, &refusal.message), (answer.errno, &answer.message));
            }
        }
    }
}

// ---------------------------------------------------------------------
// Rulesets from structured input.

#[derive(Arbitrary, Debug)]
struct Cidr {
    v6: bool,
    bytes: [u8; 16],
    len: u8,
}

/// One field of an element: `kind` picks the value's shape (mostly the
/// field's own type), `seed` its bits.
#[derive(Arbitrary, Debug)]
struct FieldInput {
    kind: u8,
    seed: u32,
    len: u8,
}

#[derive(Arbitrary, Debug)]
struct ElementInput {
    set: u8,
    base: [u8; 16],
    fields: [FieldInput; 5],
    /// One field too many: never encodable.
    extra: bool,
}

/// Up to 63 elements of consecutive addresses in one set. (Enough of them
/// to be cut into several requests, a thousand or more, made an execution
/// of the dev build take a second; the unit test
/// `many_elements_are_cut_into_requests_that_fit` covers that.)
#[derive(Arbitrary, Debug)]
struct Run {
    set: u8,
    base: u32,
    count: u8,
}

#[derive(Arbitrary, Debug)]
struct Reply {
    errno: Option<u16>,
    text: Option<String>,
    capped: bool,
    offs: bool,
}

#[derive(Arbitrary, Debug)]
struct Kernel {
    refuse_batch: Option<u16>,
    replies: Vec<Reply>,
    drop_last: bool,
    reverse: bool,
    split: u16,
}

#[derive(Arbitrary, Debug)]
struct Input {
    masquerade_all: bool,
    cidrs: Vec<Cidr>,
    /// 0 mod 8: nothing applied yet; 1 mod 8: the desired ruleset with the
    /// other `masqueradeAll` (a new shape); else the same shape. A
    /// replacement sends the whole table (some 60 requests, 10 ms in the
    /// dev build), element changes only what changed.
    mode: u8,
    applied: Vec<ElementInput>,
    removed: Vec<(u8, u16)>,
    added: Vec<ElementInput>,
    run: Option<Run>,
    first_seq: u32,
    kernel: Kernel,
}

const PROTOCOLS: [Protocol; 3] = [Protocol::Tcp, Protocol::Udp, Protocol::Sctp];

fn v4(base: &[u8; 16], seed: u32) -> Ipv4Addr {
    Ipv4Addr::from(u32::from_be_bytes([base[0], base[1], base[2], base[3]]) ^ seed)
}

fn v6(base: &[u8; 16], seed: u32) -> Ipv6Addr {
    Ipv6Addr::from(u128::from_be_bytes(*base) ^ u128::from(seed))
}

/// A value for a field of type `key`, and whether the set can hold it.
fn value_for(key: KeyType, interval: bool, field: &FieldInput, base: &[u8; 16]) -> (Value, bool) {
    let prefix = |addr: IpAddr, max: u8| {
        let len = field.len % (max + 8);
        (Value::Prefix(addr, len), interval && len <= max)
    };
    match (key, field.kind % 16) {
        // Another type's value.
        (KeyType::Ipv4Addr | KeyType::Ipv6Addr, 15) => (Value::Port(field.seed as u16), false),
        (KeyType::InetProto | KeyType::InetService, 15) => (Value::Addr(v4(base, field.seed).into()), false),
        // The other family's address.
        (KeyType::Ipv4Addr, 14) => (Value::Addr(v6(base, field.seed).into()), false),
        (KeyType::Ipv6Addr, 14) => (Value::Addr(v4(base, field.seed).into()), false),
        (KeyType::Ipv4Addr, k) if k % 2 == 1 => prefix(v4(base, field.seed).into(), 32),
        (KeyType::Ipv6Addr, k) if k % 2 == 1 => prefix(v6(base, field.seed).into(), 128),
        (KeyType::Ipv4Addr, _) => (Value::Addr(v4(base, field.seed).into()), true),
        (KeyType::Ipv6Addr, _) => (Value::Addr(v6(base, field.seed).into()), true),
        (KeyType::InetProto, k) => (Value::Proto(PROTOCOLS[usize::from(k) % 3]), true),
        (KeyType::InetService, _) => (Value::Port(field.seed as u16), true),
    }
}

/// Adds the element `input` describes to `table`; records it in `wrong`
/// when its set cannot hold it.
fn add(table: &mut Table, input: &ElementInput, wrong: &mut BTreeSet<(String, Element)>) {
    let n = table.sets.len();
    let set = &mut table.sets[usize::from(input.set) % n];
    let mut fits = !input.extra;
    let mut element = Vec::new();
    let extra = [KeyType::InetService];
    let keys = set.key.iter().chain(&extra[..usize::from(input.extra)]);
    for (key, field) in keys.zip(&input.fields) {
        let (value, ok) = value_for(*key, set.interval, field, &input.base);
        fits &= ok;
        element.push(value);
    }
    if !fits {
        wrong.insert((set.name.clone(), element.clone()));
    }
    set.elements.insert(element);
}

/// `count` elements with consecutive addresses, all of the set's type.
fn add_run(table: &mut Table, run: &Run) {
    let n = table.sets.len();
    let set = &mut table.sets[usize::from(run.set) % n];
    for i in 0..u32::from(run.count % 64) {
        let seed = run.base.wrapping_add(i);
        let element = (set.key.iter().enumerate())
            .map(|(field, key)| match key {
                KeyType::Ipv4Addr if set.interval && field > 0 => Value::Prefix(Ipv4Addr::from(seed).into(), 24),
                KeyType::Ipv6Addr if set.interval && field > 0 => {
                    Value::Prefix(Ipv6Addr::from(u128::from(seed)).into(), 64)
                }
                KeyType::Ipv4Addr => Value::Addr(Ipv4Addr::from(seed).into()),
                KeyType::Ipv6Addr => Value::Addr(Ipv6Addr::from(u128::from(seed) << 32).into()),
                KeyType::InetProto => Value::Proto(PROTOCOLS[i as usize % 3]),
                KeyType::InetService => Value::Port(seed as u16),
            })
            .collect();
        set.elements.insert(element);
    }
}

fn config(masquerade_all: bool, cidrs: &[Cidr]) -> ProxyConfig {
    let cluster_cidrs = cidrs
        .iter()
        .take(3)
        .map(|c| {
            let ip: IpAddr = if c.v6 {
                Ipv6Addr::from(c.bytes).into()
            } else {
                Ipv4Addr::new(c.bytes[0], c.bytes[1], c.bytes[2], c.bytes[3]).into()
            };
            let max = if c.v6 { 128 } else { 32 };
            IpNetwork::new(ip, c.len % (max + 1)).expect("a prefix length in range")
        })
        .collect();
    ProxyConfig {
        masquerade_all,
        cluster_cidrs,
        ..ProxyConfig::default()
    }
}

/// The IP protocol numbers, from the IANA registry.
fn proto_number(proto: Protocol) -> u8 {
    match proto {
        Protocol::Tcp => 6,
        Protocol::Udp => 17,
        Protocol::Sctp => 132,
    }
}

fn octets(addr: IpAddr) -> Vec<u8> {
    match addr {
        IpAddr::V4(a) => a.octets().to_vec(),
        IpAddr::V6(a) => a.octets().to_vec(),
    }
}

/// The key (and for an interval set the key's end) sent for `element`,
/// read field by field: a concatenation pads each field to 4 bytes.
fn check_key(set: &Set, element: &Element, key: &[u8], key_end: Option<&[u8]>) {
    assert_eq!(
        key_end.is_some(),
        set.interval,
        "{}: KEY_END iff an interval set",
        set.name
    );
    let end = key_end.unwrap_or(key);
    assert_eq!(key.len(), end.len());
    let concat = set.key.len() > 1;
    let mut offset = 0;
    for (field, value) in set.key.iter().zip(element) {
        let width: usize = match field {
            KeyType::Ipv4Addr => 4,
            KeyType::Ipv6Addr => 16,
            KeyType::InetProto => 1,
            KeyType::InetService => 2,
        };
        let padded = if concat { width.next_multiple_of(4) } else { width };
        let (first, last) = match *value {
            Value::Addr(addr) => (octets(addr), octets(addr)),
            Value::Prefix(addr, len) => {
                let net = IpNetwork::new(addr, len).expect("an element sent has a valid prefix");
                (octets(net.network()), octets(net.broadcast()))
            }
            Value::Proto(proto) => (vec![proto_number(proto)], vec![proto_number(proto)]),
            Value::Port(port) => (port.to_be_bytes().to_vec(), port.to_be_bytes().to_vec()),
        };
        assert_eq!(
            first.len(),
            width,
            "{}: {element:?} has a value of another type",
            set.name
        );
        let span = offset..offset + padded;
        assert!(
            span.end <= key.len(),
            "{}: key {key:02x?} too short for {element:?}",
            set.name
        );
        assert_eq!(
            &key[offset..offset + width],
            first,
            "{}: {element:?}: key {key:02x?}",
            set.name
        );
        assert_eq!(
            &end[offset..offset + width],
            last,
            "{}: {element:?}: end {end:02x?}",
            set.name
        );
        assert!(key[offset + width..span.end].iter().all(|&b| b == 0));
        assert!(end[offset + width..span.end].iter().all(|&b| b == 0));
        offset = span.end;
    }
    assert_eq!(
        offset,
        key.len(),
        "{}: key {key:02x?} longer than {element:?}",
        set.name
    );
}

/// An element as sent: its key, and for an interval set the key's end.
type Item = (Vec<u8>, Option<Vec<u8>>);

/// The set, set id and elements of an element request.
fn element_items(attrs_region: &[u8]) -> (String, Option<u32>, Vec<Item>) {
    let top = attrs(attrs_region);
    assert_eq!(find(&top, NFTA_SET_ELEM_LIST_TABLE), Some(&b"svcnet\0"[..]));
    let name = find(&top, NFTA_SET_ELEM_LIST_SET).expect("the set's name");
    let name = String::from_utf8(name.strip_suffix(b"\0").expect("NUL-terminated").to_vec()).expect("UTF-8");
    let set_id = find(&top, NFTA_SET_ELEM_LIST_SET_ID).map(be32);
    let list = find(&top, NFTA_SET_ELEM_LIST_ELEMENTS).expect("the elements");
    let mut items = Vec::new();
    for (i, (kind, nested, value)) in attrs(list).into_iter().enumerate() {
        assert!(nested);
        assert_eq!(usize::from(kind), i + 1, "libnftnl numbers the list's items from 1");
        let inner = attrs(value);
        let data = |kind| {
            find(&inner, kind).map(|nest| {
                let data = attrs(nest);
                assert_eq!(data.len(), 1);
                find(&data, NFTA_DATA_VALUE).expect("NFTA_DATA_VALUE").to_vec()
            })
        };
        items.push((data(NFTA_SET_ELEM_KEY).expect("a key"), data(NFTA_SET_ELEM_KEY_END)));
    }
    (name, set_id, items)
}

/// Every element request of `messages` (framed as `frames`) sends
/// `expected` (set, addition, element), in order.
fn check_elements(
    desired: &Table,
    replace: bool,
    messages: &[NftMessage],
    frames: &[&[u8]],
    expected: &[(&Set, bool, &Element)],
) {
    let mut next = 0;
    for (message, frame) in messages.iter().zip(frames) {
        let (add, set_name, count, first) = match &message.operation {
            Operation::AddElements { set, count, first } => (true, set, *count, first),
            Operation::DeleteElements { set, count, first } => (false, set, *count, first),
            _ => continue,
        };
        let msg_type = if add { NFT_MSG_NEWSETELEM } else { NFT_MSG_DELSETELEM };
        assert_eq!(message.msg_type, msg_type);
        let (name, set_id, items) = element_items(&frame[20..]);
        assert_eq!(&name, set_name);
        let index = desired
            .sets
            .iter()
            .position(|s| s.name == name)
            .expect("a set of the table");
        assert_eq!(set_id, replace.then(|| index as u32 + 1), "{name}: set id");
        assert_eq!(items.len(), count, "{name}: the count in the operation");
        assert!(count > 0, "{name}: an empty element request");
        for (i, (key, key_end)) in items.iter().enumerate() {
            let (set, want_add, element) = *expected.get(next).expect("more elements sent than changed");
            assert_eq!((set.name.as_str(), want_add), (name.as_str(), add), "element {next}");
            if i == 0 {
                assert_eq!(first, &element_text(element));
            }
            check_key(set, element, key, key_end.as_deref());
            next += 1;
        }
    }
    assert_eq!(next, expected.len(), "fewer elements sent than changed");
}

/// The operations of a replacement, in `nft -f`'s order.
fn check_replace_order(desired: &Table, messages: &[NftMessage]) {
    let mut ops = messages.iter().map(|m| &m.operation).peekable();
    for op in [Operation::AddTable, Operation::DeleteTable, Operation::AddTable] {
        assert_eq!(ops.next(), Some(&op));
    }
    for chain in &desired.chains {
        assert_eq!(ops.next(), Some(&Operation::AddChain(chain.name.to_string())));
    }
    for set in &desired.sets {
        assert_eq!(ops.next(), Some(&Operation::AddSet(set.name.clone())));
        let mut count = 0;
        while let Some(Operation::AddElements {
            set: name, count: c, ..
        }) = ops.peek()
        {
            if *name != set.name {
                break;
            }
            count += c;
            ops.next();
        }
        assert_eq!(count, set.elements.len(), "{}: elements created", set.name);
    }
    for chain in &desired.chains {
        for index in 0..chain.rules.len() {
            let rule = Operation::AddRule {
                chain: chain.name.to_string(),
                index,
            };
            assert_eq!(ops.next(), Some(&rule));
        }
    }
    assert_eq!(ops.next(), None);
}

/// Frames `messages` and reads the batch back; returns its bytes, the
/// requests sent and each request's bytes.
fn check_batch(first_seq: u32, messages: &[NftMessage]) -> (Vec<u8>, Vec<SentRequest>) {
    let mut batch = NftBatch::new(first_seq);
    for (i, message) in messages.iter().enumerate() {
        let seq = batch.push(message.clone()).expect("a built request fits a batch");
        assert_eq!(seq, first_seq.wrapping_add(1 + i as u32));
    }
    assert_eq!(batch.len(), messages.len());
    let (bytes, sent, next_seq) = batch.finish();
    assert_eq!(next_seq, first_seq.wrapping_add(messages.len() as u32 + 2));
    assert_eq!(sent.len(), messages.len());
    let framed = self::messages(&bytes);
    assert_eq!(framed.len(), messages.len() + 2, "begin, the requests, end");
    for (i, frame) in framed.iter().enumerate() {
        let header = NetlinkBuffer::new_checked(*frame).expect("parses");
        assert_eq!(header.sequence_number(), first_seq.wrapping_add(i as u32));
        assert_eq!(header.port_number(), 0);
        assert!(frame.len() >= 20, "nlmsghdr and nfgenmsg");
        assert_eq!(frame[17], NFNETLINK_V0);
        let res_id = u16::from_be_bytes([frame[18], frame[19]]);
        if i == 0 || i == framed.len() - 1 {
            let kind = if i == 0 {
                NFNL_MSG_BATCH_BEGIN
            } else {
                NFNL_MSG_BATCH_END
            };
            assert_eq!(header.message_type(), kind);
            assert_eq!(header.flags(), NLM_F_REQUEST);
            assert_eq!(
                (frame.len(), frame[16], res_id),
                (20, NFPROTO_UNSPEC, NFNL_SUBSYS_NFTABLES)
            );
            continue;
        }
        let message = &messages[i - 1];
        assert_eq!(
            header.message_type(),
            (NFNL_SUBSYS_NFTABLES << 8) | u16::from(message.msg_type)
        );
        assert_eq!(header.flags(), message.flags);
        assert_eq!(header.flags() & (NLM_F_REQUEST | NLM_F_ACK), NLM_F_REQUEST | NLM_F_ACK);
        assert_eq!((frame[16], res_id), (NFPROTO_INET, 0));
        // The attributes fill the message to its end.
        check_tree(&frame[20..], 0);
        assert_eq!(
            sent[i - 1],
            SentRequest {
                seq: header.sequence_number(),
                operation: message.operation.clone(),
            }
        );
    }
    (bytes, sent)
}

/// The kernel's answers to the batch, and `outcome` on them.
fn check_kernel(framed: &[&[u8]], sent: &[SentRequest], begin: u32, kernel: &Kernel) {
    let mut answers = Vec::new();
    let mut expected = Vec::new();
    let want;
    if let Some(errno) = kernel.refuse_batch.map(|e| i32::from(e % 4096)).filter(|&e| e != 0) {
        answers.push(error_message(begin, errno, &framed[0][..16], true, false, None));
        expected.push(Answer {
            seq: begin,
            errno,
            message: None,
        });
        want = Err(Some(NftRefusal {
            operation: Operation::Batch,
            errno,
            message: None,
        }));
    } else {
        let mut refused = None;
        let mut lost = false;
        for (i, request) in sent.iter().enumerate() {
            if kernel.drop_last && i + 1 == sent.len() {
                lost = true;
                continue;
            }
            let reply = kernel.replies.get(i);
            let errno = reply.and_then(|r| r.errno).map_or(0, |e| i32::from(e % 4096));
            let text: Option<String> = reply
                .and_then(|r| r.text.as_ref())
                .map(|t| t.chars().filter(|&c| c != '\0').take(200).collect());
            let capped = reply.is_none_or(|r| r.capped);
            let frame = framed[i + 1];
            let echoed = if capped { &frame[..16] } else { frame };
            let offs = reply.is_some_and(|r| r.offs);
            answers.push(error_message(request.seq, errno, echoed, capped, offs, text.as_deref()));
            expected.push(Answer {
                seq: request.seq,
                errno,
                message: text.clone(),
            });
            if errno != 0 && refused.is_none() {
                refused = Some(NftRefusal {
                    operation: request.operation.clone(),
                    errno,
                    message: text,
                });
            }
        }
        want = match refused {
            Some(refusal) => Err(Some(refusal)),
            None if lost => Err(None),
            None => Ok(()),
        };
    }
    if kernel.reverse {
        answers.reverse();
        expected.reverse();
    }
    // What one `recv` returned, then the next: the agent parses each.
    let split = usize::from(kernel.split) % (answers.len() + 1);
    let mut parsed = Vec::new();
    for part in [&answers[..split], &answers[split..]] {
        parsed.extend(parse_answers(&part.concat()).expect("the kernel's answers parse"));
    }
    assert_eq!(parsed, expected);
    let result = outcome(begin, sent, &parsed);
    assert_eq!(result, want);
    check_outcome(begin, sent, &parsed, result);
}

fn check_structured(input: &Input) {
    let from_scratch = input.mode.is_multiple_of(8);
    let reshape = input.mode % 8 == 1;
    let applied_config = config(input.masquerade_all, &input.cidrs);
    let mut wrong = BTreeSet::new();
    let mut applied = empty_table(&applied_config);
    for element in input.applied.iter().take(48) {
        add(&mut applied, element, &mut wrong);
    }
    let mut desired = applied.clone();
    if reshape {
        desired.chains = empty_table(&config(!input.masquerade_all, &input.cidrs)).chains;
    }
    for &(set, nth) in input.removed.iter().take(48) {
        let n = desired.sets.len();
        let set = &mut desired.sets[usize::from(set) % n];
        if let Some(element) = set
            .elements
            .iter()
            .nth(usize::from(nth) % set.elements.len().max(1))
            .cloned()
        {
            set.elements.remove(&element);
        }
    }
    for element in input.added.iter().take(48) {
        add(&mut desired, element, &mut wrong);
    }
    if let Some(run) = &input.run {
        add_run(&mut desired, run);
    }
    let desired_config = if reshape {
        config(!input.masquerade_all, &input.cidrs)
    } else {
        applied_config
    };

    let transaction = decide((!from_scratch).then_some(&applied), &desired);
    let mut expected: Vec<(&Set, bool, &Element)> = Vec::new();
    match &transaction {
        Transaction::Replace => {
            assert!(from_scratch || reshape, "replaced a table of the same shape");
            for set in &desired.sets {
                expected.extend(set.elements.iter().map(|e| (set, true, e)));
            }
        }
        Transaction::Nothing => {
            assert!(!from_scratch && !reshape);
            assert_eq!(applied, desired, "nothing sent for a change");
        }
        Transaction::Elements(changes) => {
            assert!(!from_scratch && !reshape);
            assert!(!changes.is_empty());
            // The changes turn the applied ruleset into the desired one.
            let mut after = applied.clone();
            for (name, element) in &changes.removed {
                let set = after.sets.iter_mut().find(|s| &s.name == name).expect("a set");
                assert!(set.elements.remove(element), "{name}: removed {element:?}, not there");
            }
            for (name, element) in &changes.added {
                let set = after.sets.iter_mut().find(|s| &s.name == name).expect("a set");
                assert!(
                    set.elements.insert(element.clone()),
                    "{name}: added {element:?}, there already"
                );
            }
            assert_eq!(after, desired);
            for (add, list) in [(false, &changes.removed), (true, &changes.added)] {
                for set in &desired.sets {
                    expected.extend(list.iter().filter(|(n, _)| *n == set.name).map(|(_, e)| (set, add, e)));
                }
            }
        }
    }
    let sends_wrong = expected
        .iter()
        .any(|(set, _, e)| wrong.contains(&(set.name.clone(), (*e).clone())));
    let two_cidrs = [false, true].iter().any(|&v6| {
        desired_config
            .cluster_cidrs
            .iter()
            .filter(|c| c.is_ipv6() == v6)
            .count()
            > 1
    });
    let unsupported = transaction == Transaction::Replace && !desired_config.masquerade_all && two_cidrs;
    let messages = match requests(&transaction, &desired) {
        Ok(messages) => {
            assert!(!sends_wrong, "an element of the wrong type was sent");
            assert!(!unsupported, "two cluster CIDRs of one family sent");
            messages
        }
        Err(NftBuildError::ElementMismatch { set, element }) => {
            assert!(sends_wrong, "{set}: {element} refused");
            return;
        }
        Err(NftBuildError::Unsupported { chain, what }) => {
            assert!(unsupported, "{chain}: {what}");
            return;
        }
        Err(other) => panic!("{other}"),
    };
    match &transaction {
        Transaction::Nothing => assert!(messages.is_empty()),
        Transaction::Replace => check_replace_order(&desired, &messages),
        Transaction::Elements(_) => {
            let adds = messages
                .iter()
                .position(|m| matches!(m.operation, Operation::AddElements { .. }))
                .unwrap_or(messages.len());
            for (i, message) in messages.iter().enumerate() {
                let delete = matches!(message.operation, Operation::DeleteElements { .. });
                assert_eq!(
                    delete,
                    i < adds,
                    "removals first, then additions: {:?}",
                    message.operation
                );
            }
        }
    }
    if messages.is_empty() {
        assert!(expected.is_empty());
        return;
    }
    let (bytes, sent) = check_batch(input.first_seq, &messages);
    let frames = self::messages(&bytes);
    let replace = transaction == Transaction::Replace;
    check_elements(&desired, replace, &messages, &frames[1..], &expected);
    check_kernel(&frames, &sent, input.first_seq, &input.kernel);
}

fuzz_target!(|data: &[u8]| {
    check_raw(data);
    if let Ok(input) = Input::arbitrary_take_rest(Unstructured::new(data)) {
        check_structured(&input);
    }
});
