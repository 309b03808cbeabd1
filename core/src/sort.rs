//! Stable sorting with one copy of the sort algorithm for the whole core,
//! and sorted collections built without a sort.
//!
//! `slice::sort_by` is generic over the element and the comparison, so
//! every call site gets its own copy of the standard library's merge sort
//! (about 3.5 KB of WebAssembly each; 35 of them were 8 % of the browser
//! module). These functions sort a permutation of indices instead, with
//! the comparison behind `dyn`: the algorithm is compiled once, and what
//! each call site adds is a small comparison closure and the loop that
//! moves the elements into place.
//!
//! The order is the standard library's stable sort's: equal elements keep
//! their relative order. So a call site that used `sort_unstable` on
//! elements whose equal ones cannot be told apart (integers, addresses)
//! gets the same result from [`sort`].
//!
//! `collect()` into a `SortedMap` or `SortedSet` sorts its input first (a
//! copy of the sort for every element type); [`map_from`] and
//! [`set_from`] insert one by one instead, into the same collection.

use crate::collections::{SortedMap, SortedSet};
use std::cmp::Ordering;

/// The sorted order of `0..len` under `cmp`, stable. The one place the
/// sort algorithm is instantiated.
fn sorted_indices(len: usize, cmp: &mut dyn FnMut(usize, usize) -> Ordering) -> Vec<usize> {
    let mut indices: Vec<usize> = (0..len).collect();
    indices.sort_by(|&a, &b| cmp(a, b));
    indices
}

/// Puts `v[order[k]]` at position `k`, for every `k`, by following the
/// permutation's cycles.
fn permute<T>(v: &mut [T], mut order: Vec<usize>) {
    const DONE: usize = usize::MAX;
    for start in 0..v.len() {
        if order[start] == DONE {
            continue;
        }
        // Position `at` wants the element that is still at `order[at]`:
        // every position of the cycle before it has taken its own.
        let mut at = start;
        loop {
            let from = order[at];
            order[at] = DONE;
            if from == start {
                break;
            }
            v.swap(at, from);
            at = from;
        }
    }
}

/// `v.sort_by(cmp)`: stable.
pub fn sort_by<T>(v: &mut [T], mut cmp: impl FnMut(&T, &T) -> Ordering) {
    if v.len() < 2 {
        return;
    }
    let order = {
        let items = &*v;
        sorted_indices(items.len(), &mut |a, b| cmp(&items[a], &items[b]))
    };
    permute(v, order);
}

/// `v.sort_by_key(key)`: stable.
pub fn sort_by_key<T, K: Ord>(v: &mut [T], mut key: impl FnMut(&T) -> K) {
    sort_by(v, |a, b| key(a).cmp(&key(b)));
}

/// `v.sort()`: stable.
pub fn sort<T: Ord>(v: &mut [T]) {
    sort_by(v, T::cmp);
}

/// `items.collect::<SortedMap<_, _>>()`: a key given twice keeps its last
/// value.
pub fn map_from<K: Ord, V>(items: impl IntoIterator<Item = (K, V)>) -> SortedMap<K, V> {
    let mut map = SortedMap::new();
    for (key, value) in items {
        map.insert(key, value);
    }
    map
}

/// `items.collect::<SortedSet<_>>()`.
pub fn set_from<T: Ord>(items: impl IntoIterator<Item = T>) -> SortedSet<T> {
    let mut set = SortedSet::new();
    for item in items {
        set.insert(item);
    }
    set
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        #[test]
        fn same_order_as_the_standard_stable_sort(items in proptest::collection::vec((0u8..6, any::<u16>()), 0..80)) {
            let mut ours = items.clone();
            sort_by_key(&mut ours, |&(k, _)| k);
            let mut std_sorted = items.clone();
            std_sorted.sort_by_key(|&(k, _)| k);
            prop_assert_eq!(&ours, &std_sorted);

            let mut ours = items.clone();
            sort(&mut ours);
            let mut std_sorted = items;
            std_sorted.sort();
            prop_assert_eq!(ours, std_sorted);
        }
    }

    #[test]
    fn comparator_and_empty() {
        let mut v = vec!["b", "a", "c", "a"];
        sort_by(&mut v, |a, b| b.cmp(a));
        assert_eq!(v, ["c", "b", "a", "a"]);
        let mut empty: Vec<u8> = Vec::new();
        sort(&mut empty);
        assert!(empty.is_empty());
    }

    #[test]
    fn collections_as_collect_builds_them() {
        let pairs = [("b", 1), ("a", 2), ("b", 3)];
        assert_eq!(map_from(pairs), pairs.into_iter().collect::<SortedMap<_, _>>());
        assert_eq!(set_from([3, 1, 3, 2]), SortedSet::from([1, 2, 3]));
    }
}
