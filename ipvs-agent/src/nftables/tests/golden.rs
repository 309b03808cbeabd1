//! Golden bytes of every kind of request (sequence numbers from 1, port id
//! 0), each checked against `nft -f`'s own in `tests/nft_captures.rs`
//! where `nft` sends the same thing.

use std::net::IpAddr;

use svcnet_core::proxy::nftables::model::{
    BaseChain, Chain, ChainType, CtState, Expr, Field, Hook, KeyType, MarkOp, Op, Priority, PriorityName, Right, Rule,
    Set, Table, Value, Verdict,
};
use svcnet_core::proxy::table::Protocol;

use crate::nftables::compile::Compiler;
use crate::nftables::{NftBatch, NftMessage};

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// One request between begin and end, as hex: begin, request, end.
fn framed(message: NftMessage) -> String {
    let mut batch = NftBatch::new(0);
    batch.push(message).unwrap();
    hex(&batch.finish().0)
}

fn addr(a: &str) -> Value {
    Value::Addr(a.parse::<IpAddr>().unwrap())
}

fn table() -> Table {
    Table {
        family: "inet",
        name: "svcnet",
        sets: vec![
            Set {
                name: "ports".into(),
                key: vec![KeyType::InetService],
                interval: false,
                comment: "p",
                elements: [vec![Value::Port(80)]].into_iter().collect(),
            },
            Set {
                name: "allow".into(),
                key: vec![KeyType::Ipv4Addr, KeyType::InetProto, KeyType::Ipv4Addr],
                interval: true,
                comment: "a",
                elements: [vec![
                    addr("192.0.2.1"),
                    Value::Proto(Protocol::Udp),
                    Value::Prefix("10.0.0.0".parse().unwrap(), 8),
                ]]
                .into_iter()
                .collect(),
            },
        ],
        chains: vec![
            Chain {
                name: "in",
                base: Some(BaseChain {
                    kind: ChainType::Filter,
                    hook: Hook::Input,
                    priority: Priority {
                        name: PriorityName::Dstnat,
                        offset: -10,
                    },
                }),
                comment: "c",
                rules: vec![],
            },
            Chain {
                name: "mark",
                base: None,
                comment: "m",
                rules: vec![],
            },
        ],
    }
}

fn rule(exprs: Vec<Expr>) -> Rule {
    Rule {
        exprs,
        purpose: "a golden case",
    }
}

/// The hex of a rule's request.
fn rule_hex(rule: &Rule) -> String {
    let table = table();
    let message = NftMessage::new_rule(&table, &Compiler::new(&table), &table.chains[0], 0, rule).unwrap();
    framed(message)
}

fn rules() -> [Rule; 3] {
    [
        // ct state new ip daddr . meta l4proto . ip saddr != @allow reject
        rule(vec![
            Expr::Match {
                fields: vec![Field::CtState],
                op: Op::Eq,
                right: Right::CtStates(vec![CtState::New]),
            },
            Expr::Match {
                fields: vec![Field::IpDaddr, Field::L4Proto, Field::IpSaddr],
                op: Op::Ne,
                right: Right::Set("allow".into()),
            },
            Expr::Verdict(Verdict::Reject),
        ]),
        // meta mark & 0x4000 == 0x4000 meta mark set meta mark ^ 0x4000 masquerade fully-random
        rule(vec![
            Expr::Match {
                fields: vec![Field::Mark { mask: 0x4000 }],
                op: Op::Eq,
                right: Right::Mark(0x4000),
            },
            Expr::SetMark {
                op: MarkOp::Xor,
                bits: 0x4000,
            },
            Expr::Masquerade { fully_random: true },
        ]),
        // th dport 53 jump mark
        rule(vec![
            Expr::Match {
                fields: vec![Field::ThDport],
                op: Op::Eq,
                right: Right::Values(vec![Value::Port(53)]),
            },
            Expr::Verdict(Verdict::Jump("mark")),
        ]),
    ]
}

/// `NFNL_MSG_BATCH_BEGIN`, sequence 0: `res_id` 10 (nf_tables) in network
/// order.
const BEGIN: &str = "140000001000010000000000000000000000000a";
/// `NFNL_MSG_BATCH_END`, sequence 2.
const END: &str = "140000001100010002000000000000000000000a";

/// `NFT_MSG_NEWTABLE`: name, flags 0; `NLM_F_REQUEST | NLM_F_ACK`.
const NEW_TABLE: &str = "28000000000a05000100000000000000010000000b0001007376636e657400000800020000000000";

/// `NFT_MSG_DELTABLE`: the name only.
const DEL_TABLE: &str = "20000000020a05000100000000000000010000000b0001007376636e65740000";

/// `NFT_MSG_NEWCHAIN` of a base chain: type `filter`, policy accept, hook input at priority -110 (`0xffffff92`), the comment `c` as nft's userdata.
const NEW_BASE_CHAIN: &str =
    "58000000030a05040100000000000000010000000b0001007376636e6574000007000300696e00000b00070066696c74\
         65720000080005000000000114000480080001000000000108000200ffffff9208000c0000026300";

/// `NFT_MSG_NEWCHAIN` of a regular chain: name and comment.
const NEW_CHAIN: &str =
    "34000000030a05040100000000000000010000000b0001007376636e65740000090003006d61726b0000000008000c00\
         00026d00";

/// `NFT_MSG_NEWSET` of `type inet_service`: key type 13, length 2, id 1, userdata: byte order big endian, comment.
const NEW_SET: &str =
    "5c000000090a05040100000000000000010000000b0001007376636e657400000a000200706f72747300000008000300\
         00000000080004000000000d080005000000000208000a00000000010e000d00000402000000070270000000";

/// `NFT_MSG_NEWSET` of `type ipv4_addr . inet_proto . ipv4_addr; flags interval`: flags interval and concat (0x84), type 0x7307, length 12, the fields' lengths 4, 1, 4.
const NEW_INTERVAL_CONCAT_SET: &str =
    "90000000090a05040100000000000000010000000b0001007376636e657400000a000200616c6c6f7700000008000300\
         000000840800040000007307080005000000000c08000a00000000022c000980280002800c0001800800010000000004\
         0c00018008000100000000010c000180080001000000000418000d00000400000000030800040d000000010007026100";

/// `NFT_MSG_NEWSETELEM` in the batch that creates the set (its id 1): port 80, unpadded in a one-field key; items numbered from 1 as libnftnl does.
const NEW_SET_ELEM: &str =
    "480000000c0a05040100000000000000010000000b0001007376636e657400000a000200706f72747300000008000400\
         0000000114000380100001800c0001800600010000500000";

/// `NFT_MSG_DELSETELEM` of a range element: key `192.0.2.1 . udp . 10.0.0.0` to key end `... . 10.255.255.255`, each field padded to 4 bytes.
const DEL_SET_ELEM: &str =
    "5c0000000e0a05000100000000000000010000000b0001007376636e657400000a000200616c6c6f7700000030000380\
         2c0001801400018010000100c0000201110000000a00000014000a8010000100c0000201110000000affffff";

/// `ct state new ip daddr . meta l4proto . ip saddr != @allow reject`: conntrack state masked with 8, compared not equal to 0; `meta nfproto ipv4`; the three fields in registers 1, 9 (with a one-byte `byteorder`, the set being an interval) and 10; an inverted lookup of set id 2; ICMP port unreachable.
const RULE_CT_LOOKUP_REJECT: &str =
    "34020000060a050c0100000000000000010000000b0001007376636e6574000007000200696e00000c02048020000180\
         07000100637400001400028008000200000000000800010000000001440001800c000100626974776973650034000280\
         0800010000000001080002000000000108000300000000040c00048008000100080000000c0005800800010000000000\
         2c00018008000100636d700020000280080001000000000108000200000000010c000380080001000000000024000180\
         090001006d6574610000000014000280080002000000000f08000100000000012c00018008000100636d700020000280\
         080001000000000108000200000000000c0003800500010002000000340001800c0001007061796c6f61640024000280\
         080001000000000108000200000000010800030000000010080004000000000424000180090001006d65746100000000\
         1400028008000200000000100800010000000009400001800e000100627974656f726465720000002c00028008000100\
         000000090800020000000009080003000000000108000400000000010800050000000002340001800c0001007061796c\
         6f61640024000280080001000000000a0800020000000001080003000000000c0800040000000004380001800b000100\
         6c6f6f6b757000002800028008000200000000010a000100616c6c6f7700000008000400000000020800050000000001\
         240001800b00010072656a65637400001400028008000100000000000500020003000000";

/// `meta mark & 0x4000 == 0x4000 meta mark set meta mark ^ 0x4000 masquerade fully-random`: host-order marks, `NFTA_BITWISE_OP` for marks, masq flags 0x10.
const RULE_MARK_MASQUERADE: &str =
    "78010000060a050c0100000000000000010000000b0001007376636e6574000007000200696e00005001048024000180\
         090001006d6574610000000014000280080002000000000308000100000000014c0001800c0001006269747769736500\
         3c00028008000100000000010800020000000001080006000000000008000300000000040c0004800800010000400000\
         0c00058008000100000000002c00018008000100636d700020000280080001000000000108000200000000000c000380\
         080001000040000024000180090001006d6574610000000014000280080002000000000308000100000000014c000180\
         0c00010062697477697365003c0002800800010000000001080002000000000108000600000000000800030000000004\
         0c00048008000100ffffffff0c000580080001000040000024000180090001006d657461000000001400028008000200\
         0000000308000300000000011c000180090001006d617371000000000c0002800800010000000010";

/// `th dport 53 jump mark`: a two-byte compare in network order, then a jump verdict.
const RULE_PORT_JUMP: &str =
    "c8000000060a050c0100000000000000010000000b0001007376636e6574000007000200696e0000a000048034000180\
         0c0001007061796c6f616400240002800800010000000001080002000000000208000300000000020800040000000002\
         2c00018008000100636d700020000280080001000000000108000200000000000c00038006000100003500003c000180\
         0e000100696d6d6564696174650000002800028008000100000000001c0002801800028008000100fffffffd09000200\
         6d61726b00000000";

fn golden(body: &str) -> String {
    format!("{BEGIN}{body}{END}")
}

#[test]
fn table_requests() {
    let t = table();
    assert_eq!(framed(NftMessage::new_table(&t)), golden(NEW_TABLE));
    assert_eq!(framed(NftMessage::delete_table(&t)), golden(DEL_TABLE));
}

#[test]
fn chain_requests() {
    let t = table();
    assert_eq!(
        framed(NftMessage::new_chain(&t, &t.chains[0]).unwrap()),
        golden(NEW_BASE_CHAIN)
    );
    assert_eq!(
        framed(NftMessage::new_chain(&t, &t.chains[1]).unwrap()),
        golden(NEW_CHAIN)
    );
}

#[test]
fn set_requests() {
    let t = table();
    assert_eq!(framed(NftMessage::new_set(&t, &t.sets[0], 1).unwrap()), golden(NEW_SET));
    assert_eq!(
        framed(NftMessage::new_set(&t, &t.sets[1], 2).unwrap()),
        golden(NEW_INTERVAL_CONCAT_SET)
    );
}

#[test]
fn element_requests() {
    let t = table();
    let mut add = NftMessage::set_elements(&t, &t.sets[0], Some(1), true, &t.sets[0].elements).unwrap();
    assert_eq!(add.len(), 1);
    assert_eq!(framed(add.remove(0)), golden(NEW_SET_ELEM));
    let mut del = NftMessage::set_elements(&t, &t.sets[1], None, false, &t.sets[1].elements).unwrap();
    assert_eq!(framed(del.remove(0)), golden(DEL_SET_ELEM));
}

#[test]
fn rule_requests() {
    let [ct, mark, jump] = rules();
    assert_eq!(rule_hex(&ct), golden(RULE_CT_LOOKUP_REJECT));
    assert_eq!(rule_hex(&mark), golden(RULE_MARK_MASQUERADE));
    assert_eq!(rule_hex(&jump), golden(RULE_PORT_JUMP));
}
