//! What a sync sends: the table replaced whole on the first sync and on a
//! change of shape, only element changes otherwise, nothing when nothing
//! changed; and what cannot be sent.

use std::net::IpAddr;

use svcnet_core::proxy::nftables::empty_table;
use svcnet_core::proxy::nftables::model::{Element, Table, Value};
use svcnet_core::proxy::table::Protocol;
use svcnet_core::proxy::ProxyConfig;

use crate::nftables::constants::*;
use crate::nftables::message::MAX_ATTR_VALUE;
use crate::nftables::{
    create_table, decide, delete_table, requests, NftBatch, NftBuildError, NftMessage, Operation, Transaction,
};

fn config() -> ProxyConfig {
    ProxyConfig {
        cluster_cidrs: vec!["10.244.0.0/16".parse().unwrap()],
        ..ProxyConfig::default()
    }
}

fn cluster_ip(ip: &str, port: u16) -> Element {
    vec![
        Value::Addr(ip.parse::<IpAddr>().unwrap()),
        Value::Proto(Protocol::Tcp),
        Value::Port(port),
    ]
}

fn with_cluster_ips(mut table: Table, elements: &[Element]) -> Table {
    let set = table.sets.iter_mut().find(|s| s.name == "cluster-ips-v4").unwrap();
    set.elements.extend(elements.iter().cloned());
    table
}

fn types(messages: &[NftMessage]) -> Vec<u8> {
    messages.iter().map(|m| m.msg_type).collect()
}

#[test]
fn the_first_sync_replaces_the_table_whole() {
    let desired = with_cluster_ips(empty_table(&config()), &[cluster_ip("10.96.0.1", 443)]);
    let transaction = decide(None, &desired);
    assert_eq!(transaction, Transaction::Replace);
    let sent = requests(&transaction, &desired).unwrap();
    // Add (so that the delete finds it), delete, then create whole.
    assert_eq!(
        types(&sent[..3]),
        [NFT_MSG_NEWTABLE, NFT_MSG_DELTABLE, NFT_MSG_NEWTABLE]
    );
    let rules: usize = desired.chains.iter().map(|c| c.rules.len()).sum();
    let count = |t: u8| sent.iter().filter(|m| m.msg_type == t).count();
    assert_eq!(count(NFT_MSG_NEWCHAIN), desired.chains.len());
    assert_eq!(count(NFT_MSG_NEWSET), desired.sets.len());
    assert_eq!(count(NFT_MSG_NEWSETELEM), 1, "only the set with an element");
    assert_eq!(count(NFT_MSG_NEWRULE), rules);
    assert_eq!(sent.len(), 3 + desired.chains.len() + desired.sets.len() + 1 + rules);
    // Only table inet svcnet is named.
    let mut batch = NftBatch::new(1);
    for message in sent {
        batch.push(message).unwrap();
    }
    let (bytes, requests, next) = batch.finish();
    assert_eq!(next, 1 + requests.len() as u32 + 2);
    let svcnet = b"\x0b\x00\x01\x00svcnet\x00";
    let named = bytes.windows(svcnet.len()).filter(|w| w == svcnet).count();
    assert_eq!(named, requests.len(), "every request names table svcnet, first");
}

#[test]
fn a_changed_endpoint_sends_only_its_elements_removals_first() {
    let before = with_cluster_ips(empty_table(&config()), &[cluster_ip("10.96.0.1", 443)]);
    let after = with_cluster_ips(empty_table(&config()), &[cluster_ip("10.96.0.2", 443)]);
    let transaction = decide(Some(&before), &after);
    let Transaction::Elements(changes) = &transaction else {
        panic!("{transaction:?}")
    };
    assert_eq!(changes.added.len(), 1);
    assert_eq!(changes.removed.len(), 1);
    let sent = requests(&transaction, &after).unwrap();
    assert_eq!(types(&sent), [NFT_MSG_DELSETELEM, NFT_MSG_NEWSETELEM]);
    assert_eq!(
        sent[0].operation.to_string(),
        "delete 1 element(s) from set cluster-ips-v4 (the first: 10.96.0.1 . tcp . 443)"
    );
    assert_eq!(
        sent[1].operation.to_string(),
        "add 1 element(s) to set cluster-ips-v4 (the first: 10.96.0.2 . tcp . 443)"
    );
}

#[test]
fn an_unchanged_sync_sends_nothing() {
    let table = with_cluster_ips(empty_table(&config()), &[cluster_ip("10.96.0.1", 443)]);
    let transaction = decide(Some(&table.clone()), &table);
    assert_eq!(transaction, Transaction::Nothing);
    assert!(requests(&transaction, &table).unwrap().is_empty());
}

#[test]
fn a_change_of_shape_replaces_the_table() {
    let before = empty_table(&config());
    let after = empty_table(&ProxyConfig {
        masquerade_all: true,
        ..config()
    });
    assert_eq!(decide(Some(&before), &after), Transaction::Replace);
}

#[test]
fn cleanup_adds_then_deletes_the_table() {
    let sent = delete_table(&empty_table(&config()));
    assert_eq!(types(&sent), [NFT_MSG_NEWTABLE, NFT_MSG_DELTABLE]);
    assert_eq!(sent[1].operation, Operation::DeleteTable);
}

#[test]
fn many_elements_are_cut_into_requests_that_fit() {
    let elements: Vec<Element> = (0..10_000u32)
        .map(|i| cluster_ip(&format!("10.96.{}.{}", i / 256, i % 256), 80))
        .collect();
    let before = empty_table(&config());
    let after = with_cluster_ips(before.clone(), &elements);
    let sent = requests(&decide(Some(&before), &after), &after).unwrap();
    assert!(sent.len() > 1, "{}", sent.len());
    let mut total = 0;
    for message in &sent {
        let Operation::AddElements { count, .. } = message.operation else {
            panic!("{:?}", message.operation)
        };
        total += count;
        assert!(message.attrs.iter().all(|a| a.largest_value() <= MAX_ATTR_VALUE));
    }
    assert_eq!(total, 10_000);
    let mut batch = NftBatch::new(0);
    for message in sent {
        batch.push(message).unwrap();
    }
}

#[test]
fn two_cluster_cidrs_of_one_family_cannot_be_sent_yet() {
    let config = ProxyConfig {
        cluster_cidrs: vec!["10.244.0.0/16".parse().unwrap(), "10.245.0.0/16".parse().unwrap()],
        ..ProxyConfig::default()
    };
    let error = create_table(&empty_table(&config)).unwrap_err();
    assert!(matches!(&error, NftBuildError::Unsupported { chain, .. } if chain == "services"));
    assert!(error.to_string().contains("anonymous set"), "{error}");
}

#[test]
fn an_element_of_the_wrong_type_is_refused_with_its_set() {
    let mut table = empty_table(&config());
    let set = table.sets.iter_mut().find(|s| s.name == "node-ports-v4").unwrap();
    set.elements.insert(vec![Value::Port(80), Value::Port(80)]);
    let error = create_table(&table).unwrap_err();
    assert!(matches!(&error, NftBuildError::ElementMismatch { set, .. } if set == "node-ports-v4"));
}

#[test]
fn a_request_too_large_for_netlink_is_refused() {
    use svcnet_core::proxy::nftables::model::{Expr, MarkOp, Rule};
    let mut table = empty_table(&config());
    let huge = Rule {
        exprs: vec![
            Expr::SetMark {
                op: MarkOp::Or,
                bits: 1
            };
            1000
        ],
        purpose: "a rule too large for one netlink message",
    };
    table.chains[0].rules = vec![huge];
    let mut batch = NftBatch::new(0);
    let error = create_table(&table)
        .unwrap()
        .into_iter()
        .map(|m| batch.push(m))
        .find_map(Result::err)
        .unwrap();
    assert!(
        error.to_string().starts_with("add rule 0 of chain nat-prerouting:"),
        "{error}"
    );
}
