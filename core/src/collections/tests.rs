//! [`VecMap`] and [`VecSet`] against `BTreeMap` and `BTreeSet`: the same
//! random operations on both, the same answers and the same contents in the
//! same order after every one.

use std::collections::{BTreeMap, BTreeSet};

use proptest::prelude::*;

use super::{Entry, VecMap, VecSet};

#[derive(Debug, Clone)]
enum Op {
    Insert(u8, u16),
    Remove(u8),
    EntryAdd(u8, u16),
    EntryRemove(u8),
    Retain(u8),
    Range(u8, u8),
    PopFirst,
    PopLast,
    Append(Vec<(u8, u16)>),
    Collect(Vec<(u8, u16)>),
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        4 => (0u8..40, any::<u16>()).prop_map(|(k, v)| Op::Insert(k, v)),
        2 => (0u8..40).prop_map(Op::Remove),
        2 => (0u8..40, any::<u16>()).prop_map(|(k, v)| Op::EntryAdd(k, v)),
        1 => (0u8..40).prop_map(Op::EntryRemove),
        1 => (1u8..5).prop_map(Op::Retain),
        1 => (0u8..40, 0u8..40).prop_map(|(a, b)| Op::Range(a, b)),
        1 => Just(Op::PopFirst),
        1 => Just(Op::PopLast),
        1 => proptest::collection::vec((0u8..40, any::<u16>()), 0..8).prop_map(Op::Append),
        1 => proptest::collection::vec((0u8..40, any::<u16>()), 0..20).prop_map(Op::Collect),
    ]
}

proptest! {
    #[test]
    fn vec_map_answers_as_btree_map(ops in proptest::collection::vec(op(), 0..60)) {
        let mut ours: VecMap<u8, u16> = VecMap::new();
        let mut std_map: BTreeMap<u8, u16> = BTreeMap::new();
        for op in ops {
            match op {
                Op::Insert(k, v) => prop_assert_eq!(ours.insert(k, v), std_map.insert(k, v)),
                Op::Remove(k) => prop_assert_eq!(ours.remove(&k), std_map.remove(&k)),
                Op::EntryAdd(k, v) => {
                    *ours.entry(k).and_modify(|x| *x = x.wrapping_add(v)).or_insert(v) ^= 1;
                    *std_map.entry(k).and_modify(|x| *x = x.wrapping_add(v)).or_insert(v) ^= 1;
                }
                Op::EntryRemove(k) => {
                    let a = match ours.entry(k) {
                        Entry::Occupied(e) => Some(e.remove()),
                        Entry::Vacant(_) => None,
                    };
                    let b = match std_map.entry(k) {
                        std::collections::btree_map::Entry::Occupied(e) => Some(e.remove()),
                        std::collections::btree_map::Entry::Vacant(_) => None,
                    };
                    prop_assert_eq!(a, b);
                }
                Op::Retain(m) => {
                    ours.retain(|k, v| (*k as u16).wrapping_add(*v) % m as u16 != 0);
                    std_map.retain(|k, v| (*k as u16).wrapping_add(*v) % m as u16 != 0);
                }
                Op::Range(a, b) => {
                    let (lo, hi) = (a.min(b), a.max(b));
                    prop_assert!(ours.range(lo..hi).eq(std_map.range(lo..hi)));
                    prop_assert!(ours.range(lo..=hi).eq(std_map.range(lo..=hi)));
                    prop_assert!(ours.range(lo..).eq(std_map.range(lo..)));
                    prop_assert!(ours.range(..hi).rev().eq(std_map.range(..hi).rev()));
                }
                Op::PopFirst => prop_assert_eq!(ours.pop_first(), std_map.pop_first()),
                Op::PopLast => prop_assert_eq!(ours.pop_last(), std_map.pop_last()),
                Op::Append(entries) => {
                    let mut other: VecMap<u8, u16> = entries.iter().copied().collect();
                    let mut std_other: BTreeMap<u8, u16> = entries.iter().copied().collect();
                    ours.append(&mut other);
                    std_map.append(&mut std_other);
                    prop_assert!(other.is_empty() && std_other.is_empty());
                }
                Op::Collect(entries) => {
                    ours = entries.iter().copied().collect();
                    std_map = entries.into_iter().collect();
                }
            }
            prop_assert!(ours.iter().eq(std_map.iter()));
            prop_assert_eq!(ours.len(), std_map.len());
            prop_assert_eq!(ours.first_key_value(), std_map.first_key_value());
            prop_assert_eq!(ours.last_key_value(), std_map.last_key_value());
            for k in 0..40u8 {
                prop_assert_eq!(ours.get(&k), std_map.get(&k));
            }
        }
    }

    #[test]
    fn vec_set_answers_as_btree_set(
        a in proptest::collection::vec(0u8..30, 0..30),
        b in proptest::collection::vec(0u8..30, 0..30),
    ) {
        let (ours_a, ours_b): (VecSet<u8>, VecSet<u8>) = (a.iter().copied().collect(), b.iter().copied().collect());
        let (std_a, std_b): (BTreeSet<u8>, BTreeSet<u8>) = (a.into_iter().collect(), b.into_iter().collect());
        prop_assert!(ours_a.iter().eq(std_a.iter()));
        prop_assert!(ours_a.difference(&ours_b).eq(std_a.difference(&std_b)));
        prop_assert!(ours_a.intersection(&ours_b).eq(std_a.intersection(&std_b)));
        prop_assert_eq!(ours_a.is_subset(&ours_b), std_a.is_subset(&std_b));
        prop_assert_eq!(ours_a.is_disjoint(&ours_b), std_a.is_disjoint(&std_b));
        prop_assert!(ours_a.range(5..20).eq(std_a.range(5..20)));
        prop_assert_eq!(ours_a.cmp(&ours_b), std_a.cmp(&std_b));

        let mut ours = ours_a.clone();
        let mut std_set = std_a.clone();
        for item in ours_b.iter() {
            prop_assert_eq!(ours.insert(*item), std_set.insert(*item));
        }
        prop_assert_eq!(ours.remove(&7), std_set.remove(&7));
        prop_assert_eq!(ours.pop_first(), std_set.pop_first());
        prop_assert!(ours.into_iter().eq(std_set.into_iter()));
    }
}

#[test]
fn serde_reads_and_writes_as_btree_map() {
    let json = r#"{"b":2,"a":1,"b":3}"#;
    let ours: VecMap<String, u8> = serde_json::from_str(json).unwrap();
    let std_map: BTreeMap<String, u8> = serde_json::from_str(json).unwrap();
    assert_eq!(
        serde_json::to_string(&ours).unwrap(),
        serde_json::to_string(&std_map).unwrap()
    );
    assert_eq!(format!("{ours:?}"), format!("{std_map:?}"));

    let err = serde_json::from_str::<VecMap<String, u8>>("[1]")
        .unwrap_err()
        .to_string();
    let std_err = serde_json::from_str::<BTreeMap<String, u8>>("[1]")
        .unwrap_err()
        .to_string();
    assert_eq!(err, std_err);

    let set: VecSet<u8> = serde_json::from_str("[3,1,3]").unwrap();
    assert_eq!(serde_json::to_string(&set).unwrap(), "[1,3]");
    let err = serde_json::from_str::<VecSet<u8>>("{}").unwrap_err().to_string();
    let std_err = serde_json::from_str::<BTreeSet<u8>>("{}").unwrap_err().to_string();
    assert_eq!(err, std_err);
}
