//! The agent's nf_tables transactions against the real `nft -f`'s, from
//! captures made in the QEMU VM: `tests/vm/nft-capture.sh` runs each case
//! of `tests/vm/nft-cases/cases` under strace and writes every netlink
//! buffer `nft` sent or received as a hex line. The committed captures are
//! in `ipvs-agent/tests/nft-captures/`; `SVCNET_NFT_CAPTURES=DIR` checks a
//! fresh set instead (`make vm-nft` does).
//!
//! For each case the agent builds its own batch for the same ruleset or
//! change, and every message in it must equal `nft`'s byte for byte,
//! except for
//! - the sequence number and port id, which each program picks;
//! - `NLM_F_ACK`, which the agent sets on every request so that each is
//!   answered (`nft` only hears of errors);
//! - `NFTA_SET_ELEM_LIST_SET_ID` when adding elements to a set that
//!   already exists: `nft` numbers the sets it found in the kernel, and
//!   the kernel finds the set by name first.
//!
//! The kernel's answers must parse, and the refused case must read as the
//! refusal of the request `nft` sent.

#![cfg(target_endian = "little")]

use std::collections::BTreeSet;
use std::net::IpAddr;
use std::path::{Path, PathBuf};

use clap::Parser;
use ipvs_agent::cli::{Cli, Command};
use ipvs_agent::cluster::Cluster;
use ipvs_agent::nftables::{create_table, decide, parse_answers, requests, NftBatch, NftMessage, Transaction};
use ipvs_agent::node::NodeFlags;
use svcnet_core::proxy::nftables::model::{
    BaseChain, Chain, ChainType, Element, Expr, Field, Hook, KeyType, Op, Priority, PriorityName, Right, Rule, Set,
    Table, Value, Verdict,
};
use svcnet_core::proxy::nftables::{desired_ruleset, nft_text};
use svcnet_core::proxy::table::Protocol;
use svcnet_core::proxy::ProxyConfig;

/// `NLM_F_ACK`.
const NLM_F_ACK: u16 = 0x4;
/// `NFT_MSG_NEWSETELEM` and `NFT_MSG_DELSETELEM` in the nf_tables subsystem.
const NEWSETELEM: u16 = 0x0a0c;
const DELSETELEM: u16 = 0x0a0e;
/// `NFTA_SET_ELEM_LIST_SET_ID`.
const SET_ID: u16 = 4;

fn captures_dir() -> PathBuf {
    match std::env::var_os("SVCNET_NFT_CAPTURES") {
        Some(dir) => PathBuf::from(dir),
        None => Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/nft-captures"),
    }
}

/// The `>` (sent) and `<` (received) buffers of a capture.
fn capture(name: &str) -> (Vec<Vec<u8>>, Vec<Vec<u8>>) {
    let path = captures_dir().join(format!("{name}.nl"));
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let (mut sent, mut received) = (Vec::new(), Vec::new());
    for line in text.lines() {
        let Some((dir, hex)) = line.split_once(' ') else {
            continue;
        };
        let bytes = || -> Vec<u8> {
            (0..hex.len())
                .step_by(2)
                .map(|i| u8::from_str_radix(&hex[i..i + 2], 16).unwrap())
                .collect()
        };
        match dir {
            ">" => sent.push(bytes()),
            "<" => received.push(bytes()),
            _ => {}
        }
    }
    (sent, received)
}

/// The netlink messages of one buffer.
fn split(buf: &[u8]) -> Vec<Vec<u8>> {
    let mut out = Vec::new();
    let mut offset = 0;
    while offset + 16 <= buf.len() {
        let len = u32::from_le_bytes(buf[offset..offset + 4].try_into().unwrap()) as usize;
        out.push(buf[offset..offset + len].to_vec());
        offset += len.next_multiple_of(4);
    }
    out
}

fn message_type(message: &[u8]) -> u16 {
    u16::from_le_bytes([message[4], message[5]])
}

/// The messages of `nft`'s one batch (the buffer that opens with
/// `NFNL_MSG_BATCH_BEGIN`).
fn nft_batch(name: &str) -> Vec<Vec<u8>> {
    let (sent, _) = capture(name);
    let batches: Vec<_> = sent
        .iter()
        .filter(|b| b.len() > 16 && message_type(b) == 0x10)
        .collect();
    assert_eq!(batches.len(), 1, "{name}: one batch");
    split(batches[0])
}

/// Sequence number and port id zeroed, `NLM_F_ACK` cleared.
fn normalise(message: &[u8]) -> Vec<u8> {
    let mut m = message.to_vec();
    m[8..16].fill(0);
    m[6] &= !(NLM_F_ACK as u8);
    m
}

/// The message without top-level attribute `kind` (after the 20 bytes of
/// headers), its length fixed.
fn without_attr(message: &[u8], kind: u16) -> Vec<u8> {
    let mut out = message[..20].to_vec();
    let mut offset = 20;
    while offset + 4 <= message.len() {
        let len = u16::from_le_bytes([message[offset], message[offset + 1]]) as usize;
        let attr_kind = u16::from_le_bytes([message[offset + 2], message[offset + 3]]) & 0x3fff;
        let end = (offset + len.next_multiple_of(4)).min(message.len());
        if attr_kind != kind {
            out.extend_from_slice(&message[offset..end]);
        }
        offset = end;
    }
    let len = out.len() as u32;
    out[..4].copy_from_slice(&len.to_le_bytes());
    out
}

fn agent_batch(messages: Vec<NftMessage>) -> Vec<Vec<u8>> {
    let mut batch = NftBatch::new(0);
    for message in messages {
        batch.push(message).unwrap();
    }
    split(&batch.finish().0)
}

fn assert_same(name: &str, agent: &[Vec<u8>], nft: &[Vec<u8>]) {
    let agent: Vec<_> = agent.iter().map(|m| normalise(m)).collect();
    let nft: Vec<_> = nft.iter().map(|m| normalise(m)).collect();
    for (i, (a, n)) in agent.iter().zip(&nft).enumerate() {
        assert_eq!(
            hex(a),
            hex(n),
            "{name}: message {i} (type {:#x}) differs\nagent: {}\nnft:   {}",
            message_type(n),
            hex(a),
            hex(n)
        );
    }
    assert_eq!(agent.len(), nft.len(), "{name}: number of messages");
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

fn v4(a: &str) -> Value {
    Value::Addr(a.parse::<IpAddr>().unwrap())
}

/// `tests/vm/nft-cases/small.nft` as the core's model.
fn small() -> Table {
    let tcp = Value::Proto(Protocol::Tcp);
    let set = |name: &str, key: Vec<KeyType>, interval: bool, comment: &'static str, elements: Vec<Element>| Set {
        name: name.into(),
        key,
        interval,
        comment,
        elements: elements.into_iter().collect(),
    };
    Table {
        family: "inet",
        name: "svcnet",
        sets: vec![
            set(
                "cluster-ips-v4",
                vec![KeyType::Ipv4Addr, KeyType::InetProto, KeyType::InetService],
                false,
                "ClusterIP . protocol . port",
                vec![
                    vec![v4("10.96.0.1"), tcp, Value::Port(443)],
                    vec![v4("10.96.0.10"), Value::Proto(Protocol::Udp), Value::Port(53)],
                ],
            ),
            set(
                "firewall-allow-v6",
                vec![
                    KeyType::Ipv6Addr,
                    KeyType::InetProto,
                    KeyType::InetService,
                    KeyType::Ipv6Addr,
                ],
                true,
                "LB IP . protocol . port . allowed source",
                vec![vec![
                    v4("2001:db8::1"),
                    tcp,
                    Value::Port(80),
                    Value::Prefix("fd00::".parse().unwrap(), 8),
                ]],
            ),
        ],
        chains: vec![Chain {
            name: "nat-postrouting",
            base: Some(BaseChain {
                kind: ChainType::Nat,
                hook: Hook::Postrouting,
                priority: Priority {
                    name: PriorityName::Srcnat,
                    offset: 0,
                },
            }),
            comment: "masquerade",
            rules: vec![
                Rule {
                    exprs: vec![
                        Expr::Match {
                            fields: vec![Field::IpDaddr, Field::L4Proto, Field::ThDport],
                            op: Op::Eq,
                            right: Right::Set("cluster-ips-v4".into()),
                        },
                        Expr::Masquerade { fully_random: false },
                    ],
                    purpose: "masquerade ClusterIP traffic",
                },
                Rule {
                    exprs: vec![Expr::Masquerade { fully_random: true }],
                    purpose: "masquerade the rest",
                },
            ],
        }],
    }
}

/// `small()` after `add-elements.nft`.
fn small_with_more() -> Table {
    let mut table = small();
    let tcp = Value::Proto(Protocol::Tcp);
    table.sets[0]
        .elements
        .insert(vec![v4("10.96.0.99"), tcp, Value::Port(80)]);
    table.sets[1]
        .elements
        .insert(vec![v4("2001:db8::1"), tcp, Value::Port(443), v4("2001:db8:1::7")]);
    table
}

#[test]
fn creating_a_table_sends_what_nft_sends() {
    assert_same(
        "create-small",
        &agent_batch(create_table(&small()).unwrap()),
        &nft_batch("create-small"),
    );
}

#[test]
fn adding_elements_sends_what_nft_sends() {
    let transaction = decide(Some(&small()), &small_with_more());
    assert!(matches!(transaction, Transaction::Elements(_)));
    let agent = agent_batch(requests(&transaction, &small_with_more()).unwrap());
    let nft: Vec<_> = (nft_batch("add-elements").iter())
        .map(|m| match message_type(m) {
            NEWSETELEM | DELSETELEM => without_attr(m, SET_ID),
            _ => m.clone(),
        })
        .collect();
    assert_same("add-elements", &agent, &nft);
}

#[test]
fn deleting_elements_sends_what_nft_sends() {
    let mut after = small_with_more();
    let tcp = Value::Proto(Protocol::Tcp);
    after.sets[0]
        .elements
        .remove(&vec![v4("10.96.0.1"), tcp, Value::Port(443)]);
    after.sets[1].elements.remove(&vec![
        v4("2001:db8::1"),
        tcp,
        Value::Port(80),
        Value::Prefix("fd00::".parse().unwrap(), 8),
    ]);
    let transaction = decide(Some(&small_with_more()), &after);
    let agent = agent_batch(requests(&transaction, &after).unwrap());
    assert_same("delete-elements", &agent, &nft_batch("delete-elements"));
}

#[test]
fn deleting_the_table_sends_what_nft_sends() {
    let agent = agent_batch(vec![NftMessage::delete_table(&small())]);
    assert_same("delete-table", &agent, &nft_batch("delete-table"));
}

/// The examples' ruleset, as `plan --format nft --cluster-cidr
/// 10.244.0.0/16` computes it.
fn examples() -> Table {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let cli = Cli::try_parse_from([
        "ipvs-agent",
        "plan",
        "--format",
        "nft",
        "--manifests",
        root.join("examples").to_str().unwrap(),
        "--node-name",
        "node-a",
        "--cluster-cidr",
        "10.244.0.0/16",
    ])
    .unwrap();
    let Command::Plan(args) = cli.command else {
        panic!("plan")
    };
    let mut cluster = Cluster::open(args.common.cluster_config(), None, args.common.manifests.clone()).unwrap();
    cluster.refresh().unwrap();
    let cp = cluster.control_plane();
    let node = NodeFlags::new(Some("node-a".into()), Vec::new())
        .resolve(cp, Vec::new)
        .unwrap();
    let config = ProxyConfig {
        cluster_cidrs: args.masquerade.cluster_cidr.clone(),
        ..ProxyConfig::default()
    };
    let table = desired_ruleset(cp.services(), cp.endpoint_slices(), &node, &config);
    let golden = std::fs::read_to_string(root.join("ipvs-agent/tests/golden/examples.nft")).unwrap();
    assert_eq!(nft_text(&table), golden, "the table nft loaded in the capture");
    table
}

#[test]
fn creating_the_examples_table_sends_what_nft_sends() {
    let agent = agent_batch(create_table(&examples()).unwrap());
    assert_same("create-examples", &agent, &nft_batch("create-examples"));
}

/// `tests/vm/nft-cases/prefixes.nft`: a prefix on whole bytes loads only
/// those bytes, another is masked, a full-length one is an address.
fn prefixes() -> Table {
    let prefix = |addr: &str, len| Value::Prefix(addr.parse().unwrap(), len);
    let rule = |field, op, value| Rule {
        exprs: vec![
            Expr::Match {
                fields: vec![field],
                op,
                right: Right::Values(vec![value]),
            },
            Expr::Verdict(Verdict::Return),
        ],
        purpose: "a prefix match",
    };
    Table {
        family: "inet",
        name: "prefixes",
        sets: Vec::new(),
        chains: vec![Chain {
            name: "services",
            base: None,
            comment: "prefix matches: on whole bytes, masked, a full address",
            rules: vec![
                rule(Field::IpSaddr, Op::Ne, prefix("10.240.0.0", 12)),
                rule(Field::IpSaddr, Op::Eq, prefix("127.0.0.0", 8)),
                rule(Field::Ip6Saddr, Op::Eq, prefix("fd00::", 7)),
                rule(Field::Ip6Saddr, Op::Eq, prefix("::1", 128)),
            ],
        }],
    }
}

#[test]
fn prefix_matches_send_what_nft_sends() {
    let agent = agent_batch(create_table(&prefixes()).unwrap());
    assert_same("create-prefixes", &agent, &nft_batch("create-prefixes"));
}

#[test]
fn the_kernels_answers_parse_and_a_refusal_names_its_request() {
    for name in [
        "create-small",
        "add-elements",
        "delete-elements",
        "delete-table",
        "create-examples",
        "create-prefixes",
    ] {
        let (_, received) = capture(name);
        for buf in received {
            let answers = parse_answers(&buf).unwrap();
            assert!(answers.iter().all(|a| a.errno == 0), "{name}: {answers:?}");
        }
    }
    let batch = nft_batch("delete-missing");
    let delete_seq = u32::from_le_bytes(batch[1][8..12].try_into().unwrap());
    let (_, received) = capture("delete-missing");
    let refusals: BTreeSet<_> = received
        .iter()
        .flat_map(|buf| parse_answers(buf).unwrap())
        .filter(|a| a.errno != 0)
        .map(|a| (a.seq, a.errno))
        .collect();
    assert_eq!(refusals, BTreeSet::from([(delete_seq, 2)]), "ENOENT for the delete");
}
