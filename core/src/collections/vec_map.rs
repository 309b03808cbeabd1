//! [`VecMap`]: an ordered map kept as a vector of entries sorted by key,
//! with `BTreeMap`'s methods (the ones the core uses) and iteration order.
//!
//! Lookups are binary searches; an insert or a removal moves the entries
//! after it, so it suits small maps (the playground's). The iterators are
//! the slice's, mapped through plain functions, so no closure type is
//! generated per call site.

use std::borrow::Borrow;
use std::fmt;
use std::iter::Map;
use std::marker::PhantomData;
use std::ops::{Bound, Index, RangeBounds};
use std::{slice, vec};

use serde::de::{MapAccess, Visitor};
use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// An ordered map: entries sorted by key, no key twice.
#[derive(Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct VecMap<K, V> {
    entries: Vec<(K, V)>,
}

/// The entries in key order.
pub type Iter<'a, K, V> = Map<slice::Iter<'a, (K, V)>, fn(&'a (K, V)) -> (&'a K, &'a V)>;
/// The entries in key order, values mutable.
pub type IterMut<'a, K, V> = Map<slice::IterMut<'a, (K, V)>, fn(&'a mut (K, V)) -> (&'a K, &'a mut V)>;
/// The keys in order.
pub type Keys<'a, K, V> = Map<slice::Iter<'a, (K, V)>, fn(&'a (K, V)) -> &'a K>;
/// The values in key order.
pub type Values<'a, K, V> = Map<slice::Iter<'a, (K, V)>, fn(&'a (K, V)) -> &'a V>;
/// The values in key order, mutable.
pub type ValuesMut<'a, K, V> = Map<slice::IterMut<'a, (K, V)>, fn(&'a mut (K, V)) -> &'a mut V>;
/// The keys in order, owned.
pub type IntoKeys<K, V> = Map<vec::IntoIter<(K, V)>, fn((K, V)) -> K>;
/// The values in key order, owned.
pub type IntoValues<K, V> = Map<vec::IntoIter<(K, V)>, fn((K, V)) -> V>;

fn entry_ref<K, V>(entry: &(K, V)) -> (&K, &V) {
    (&entry.0, &entry.1)
}

fn entry_mut<K, V>(entry: &mut (K, V)) -> (&K, &mut V) {
    (&entry.0, &mut entry.1)
}

fn key_ref<K, V>(entry: &(K, V)) -> &K {
    &entry.0
}

fn value_ref<K, V>(entry: &(K, V)) -> &V {
    &entry.1
}

fn value_mut<K, V>(entry: &mut (K, V)) -> &mut V {
    &mut entry.1
}

fn into_key<K, V>(entry: (K, V)) -> K {
    entry.0
}

fn into_value<K, V>(entry: (K, V)) -> V {
    entry.1
}

impl<K, V> VecMap<K, V> {
    /// An empty map.
    pub const fn new() -> Self {
        Self { entries: Vec::new() }
    }

    /// The number of entries.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// Whether the map has no entry.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// Removes every entry.
    pub fn clear(&mut self) {
        self.entries.clear();
    }

    /// The entries in key order.
    pub fn iter(&self) -> Iter<'_, K, V> {
        self.entries.iter().map(entry_ref as fn(&(K, V)) -> (&K, &V))
    }

    /// The entries in key order, values mutable.
    pub fn iter_mut(&mut self) -> IterMut<'_, K, V> {
        self.entries
            .iter_mut()
            .map(entry_mut as fn(&mut (K, V)) -> (&K, &mut V))
    }

    /// The keys in order.
    pub fn keys(&self) -> Keys<'_, K, V> {
        self.entries.iter().map(key_ref as fn(&(K, V)) -> &K)
    }

    /// The values in key order.
    pub fn values(&self) -> Values<'_, K, V> {
        self.entries.iter().map(value_ref as fn(&(K, V)) -> &V)
    }

    /// The values in key order, mutable.
    pub fn values_mut(&mut self) -> ValuesMut<'_, K, V> {
        self.entries.iter_mut().map(value_mut as fn(&mut (K, V)) -> &mut V)
    }

    /// The keys in order, consuming the map.
    pub fn into_keys(self) -> IntoKeys<K, V> {
        self.entries.into_iter().map(into_key as fn((K, V)) -> K)
    }

    /// The values in key order, consuming the map.
    pub fn into_values(self) -> IntoValues<K, V> {
        self.entries.into_iter().map(into_value as fn((K, V)) -> V)
    }

    /// The entry with the smallest key.
    pub fn first_key_value(&self) -> Option<(&K, &V)> {
        self.entries.first().map(entry_ref)
    }

    /// The entry with the largest key.
    pub fn last_key_value(&self) -> Option<(&K, &V)> {
        self.entries.last().map(entry_ref)
    }

    /// Removes and returns the entry with the smallest key.
    pub fn pop_first(&mut self) -> Option<(K, V)> {
        (!self.entries.is_empty()).then(|| self.entries.remove(0))
    }

    /// Removes and returns the entry with the largest key.
    pub fn pop_last(&mut self) -> Option<(K, V)> {
        self.entries.pop()
    }

    /// Keeps the entries for which `keep` is true, in order.
    pub fn retain(&mut self, mut keep: impl FnMut(&K, &mut V) -> bool) {
        self.entries.retain_mut(|(k, v)| keep(k, v));
    }
}

impl<K: Ord, V> VecMap<K, V> {
    /// Where `key` is (`Ok`) or would go (`Err`).
    fn search<Q>(&self, key: &Q) -> Result<usize, usize>
    where
        K: Borrow<Q>,
        Q: Ord + ?Sized,
    {
        self.entries.binary_search_by(|(k, _)| k.borrow().cmp(key))
    }

    /// Builds the map from entries in any order: a key given twice keeps
    /// its last value, as `BTreeMap`'s `collect` does.
    fn from_entries(mut entries: Vec<(K, V)>) -> Self {
        crate::sort::sort_by(&mut entries, |a, b| a.0.cmp(&b.0));
        // dedup_by passes the later entry first and removes it: its value
        // goes to the one kept.
        entries.dedup_by(|later, kept| {
            let same = later.0 == kept.0;
            if same {
                std::mem::swap(&mut later.1, &mut kept.1);
            }
            same
        });
        Self { entries }
    }

    /// The value for `key`.
    pub fn get<Q>(&self, key: &Q) -> Option<&V>
    where
        K: Borrow<Q>,
        Q: Ord + ?Sized,
    {
        self.search(key).ok().map(|i| &self.entries[i].1)
    }

    /// The value for `key`, mutable.
    pub fn get_mut<Q>(&mut self, key: &Q) -> Option<&mut V>
    where
        K: Borrow<Q>,
        Q: Ord + ?Sized,
    {
        self.search(key).ok().map(|i| &mut self.entries[i].1)
    }

    /// The stored key and the value for `key`.
    pub fn get_key_value<Q>(&self, key: &Q) -> Option<(&K, &V)>
    where
        K: Borrow<Q>,
        Q: Ord + ?Sized,
    {
        self.search(key).ok().map(|i| entry_ref(&self.entries[i]))
    }

    /// Whether `key` has an entry.
    pub fn contains_key<Q>(&self, key: &Q) -> bool
    where
        K: Borrow<Q>,
        Q: Ord + ?Sized,
    {
        self.search(key).is_ok()
    }

    /// Sets `key` to `value`; returns the value it replaced. (The stored
    /// key is kept, as `BTreeMap` keeps it.)
    pub fn insert(&mut self, key: K, value: V) -> Option<V> {
        match self.search(&key) {
            Ok(i) => Some(std::mem::replace(&mut self.entries[i].1, value)),
            Err(i) => {
                self.entries.insert(i, (key, value));
                None
            }
        }
    }

    /// Removes `key`'s entry; returns its value.
    pub fn remove<Q>(&mut self, key: &Q) -> Option<V>
    where
        K: Borrow<Q>,
        Q: Ord + ?Sized,
    {
        self.remove_entry(key).map(into_value)
    }

    /// Removes `key`'s entry; returns it.
    pub fn remove_entry<Q>(&mut self, key: &Q) -> Option<(K, V)>
    where
        K: Borrow<Q>,
        Q: Ord + ?Sized,
    {
        self.search(key).ok().map(|i| self.entries.remove(i))
    }

    /// `key`'s entry, to read, change or fill in.
    pub fn entry(&mut self, key: K) -> Entry<'_, K, V> {
        match self.search(&key) {
            Ok(index) => Entry::Occupied(OccupiedEntry { map: self, index }),
            Err(index) => Entry::Vacant(VacantEntry { map: self, index, key }),
        }
    }

    /// Moves every entry of `other` into this map (`other`'s value wins
    /// on a shared key), leaving `other` empty.
    pub fn append(&mut self, other: &mut Self) {
        let mut entries = std::mem::take(&mut self.entries);
        entries.append(&mut other.entries);
        *self = Self::from_entries(entries);
    }

    /// The positions of the entries whose keys are in `range`.
    fn bounds<Q, R>(&self, range: &R) -> (usize, usize)
    where
        K: Borrow<Q>,
        Q: Ord + ?Sized,
        R: RangeBounds<Q>,
    {
        let start = match range.start_bound() {
            Bound::Included(s) => self.entries.partition_point(|(k, _)| k.borrow() < s),
            Bound::Excluded(s) => self.entries.partition_point(|(k, _)| k.borrow() <= s),
            Bound::Unbounded => 0,
        };
        let end = match range.end_bound() {
            Bound::Included(e) => self.entries.partition_point(|(k, _)| k.borrow() <= e),
            Bound::Excluded(e) => self.entries.partition_point(|(k, _)| k.borrow() < e),
            Bound::Unbounded => self.entries.len(),
        };
        (start, end.max(start))
    }

    /// The entries whose keys are in `range`, in order.
    pub fn range<Q, R>(&self, range: R) -> Iter<'_, K, V>
    where
        K: Borrow<Q>,
        Q: Ord + ?Sized,
        R: RangeBounds<Q>,
    {
        let (start, end) = self.bounds(&range);
        self.entries[start..end]
            .iter()
            .map(entry_ref as fn(&(K, V)) -> (&K, &V))
    }

    /// The entries whose keys are in `range`, in order, values mutable.
    pub fn range_mut<Q, R>(&mut self, range: R) -> IterMut<'_, K, V>
    where
        K: Borrow<Q>,
        Q: Ord + ?Sized,
        R: RangeBounds<Q>,
    {
        let (start, end) = self.bounds(&range);
        self.entries[start..end]
            .iter_mut()
            .map(entry_mut as fn(&mut (K, V)) -> (&K, &mut V))
    }
}

/// One key's place in a [`VecMap`], from [`VecMap::entry`].
pub enum Entry<'a, K, V> {
    /// The key has a value.
    Occupied(OccupiedEntry<'a, K, V>),
    /// The key has none.
    Vacant(VacantEntry<'a, K, V>),
}

/// A key with a value, in an [`Entry`].
pub struct OccupiedEntry<'a, K, V> {
    map: &'a mut VecMap<K, V>,
    index: usize,
}

/// A key without a value, in an [`Entry`].
pub struct VacantEntry<'a, K, V> {
    map: &'a mut VecMap<K, V>,
    index: usize,
    key: K,
}

impl<'a, K, V> Entry<'a, K, V> {
    /// The entry's key.
    pub fn key(&self) -> &K {
        match self {
            Entry::Occupied(e) => e.key(),
            Entry::Vacant(e) => &e.key,
        }
    }

    /// The value, `value` put in first if there was none.
    pub fn or_insert(self, value: V) -> &'a mut V {
        self.or_insert_with(|| value)
    }

    /// The value, `make()` put in first if there was none.
    pub fn or_insert_with(self, make: impl FnOnce() -> V) -> &'a mut V {
        match self {
            Entry::Occupied(e) => e.into_mut(),
            Entry::Vacant(e) => e.insert(make()),
        }
    }

    /// The value, the default put in first if there was none.
    pub fn or_default(self) -> &'a mut V
    where
        V: Default,
    {
        self.or_insert_with(V::default)
    }

    /// Calls `change` on the value if there is one.
    pub fn and_modify(self, change: impl FnOnce(&mut V)) -> Self {
        match self {
            Entry::Occupied(mut e) => {
                change(e.get_mut());
                Entry::Occupied(e)
            }
            vacant => vacant,
        }
    }
}

impl<'a, K, V> OccupiedEntry<'a, K, V> {
    /// The stored key.
    pub fn key(&self) -> &K {
        &self.map.entries[self.index].0
    }

    /// The value.
    pub fn get(&self) -> &V {
        &self.map.entries[self.index].1
    }

    /// The value, mutable.
    pub fn get_mut(&mut self) -> &mut V {
        &mut self.map.entries[self.index].1
    }

    /// The value, mutable for as long as the map is borrowed.
    pub fn into_mut(self) -> &'a mut V {
        &mut self.map.entries[self.index].1
    }

    /// Replaces the value; returns the old one.
    pub fn insert(&mut self, value: V) -> V {
        std::mem::replace(self.get_mut(), value)
    }

    /// Removes the entry; returns its value.
    pub fn remove(self) -> V {
        self.map.entries.remove(self.index).1
    }
}

impl<'a, K, V> VacantEntry<'a, K, V> {
    /// The key that has no value.
    pub fn key(&self) -> &K {
        &self.key
    }

    /// Puts `value` in; returns it, mutable.
    pub fn insert(self, value: V) -> &'a mut V {
        self.map.entries.insert(self.index, (self.key, value));
        &mut self.map.entries[self.index].1
    }
}

impl<K, V> Default for VecMap<K, V> {
    fn default() -> Self {
        Self::new()
    }
}

impl<K: fmt::Debug, V: fmt::Debug> fmt::Debug for VecMap<K, V> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_map().entries(self.iter()).finish()
    }
}

impl<K: Ord, V> FromIterator<(K, V)> for VecMap<K, V> {
    fn from_iter<I: IntoIterator<Item = (K, V)>>(items: I) -> Self {
        Self::from_entries(items.into_iter().collect())
    }
}

impl<K: Ord, V, const N: usize> From<[(K, V); N]> for VecMap<K, V> {
    fn from(entries: [(K, V); N]) -> Self {
        Self::from_entries(Vec::from(entries))
    }
}

impl<K: Ord, V> Extend<(K, V)> for VecMap<K, V> {
    fn extend<I: IntoIterator<Item = (K, V)>>(&mut self, items: I) {
        for (key, value) in items {
            self.insert(key, value);
        }
    }
}

impl<K: Ord, Q: Ord + ?Sized, V> Index<&Q> for VecMap<K, V>
where
    K: Borrow<Q>,
{
    type Output = V;

    /// The value for `key`; panics when there is none, as `BTreeMap`'s
    /// indexing does.
    fn index(&self, key: &Q) -> &V {
        self.get(key).expect("no entry found for key")
    }
}

impl<K, V> IntoIterator for VecMap<K, V> {
    type Item = (K, V);
    type IntoIter = vec::IntoIter<(K, V)>;

    fn into_iter(self) -> Self::IntoIter {
        self.entries.into_iter()
    }
}

impl<'a, K, V> IntoIterator for &'a VecMap<K, V> {
    type Item = (&'a K, &'a V);
    type IntoIter = Iter<'a, K, V>;

    fn into_iter(self) -> Self::IntoIter {
        self.iter()
    }
}

impl<'a, K, V> IntoIterator for &'a mut VecMap<K, V> {
    type Item = (&'a K, &'a mut V);
    type IntoIter = IterMut<'a, K, V>;

    fn into_iter(self) -> Self::IntoIter {
        self.iter_mut()
    }
}

impl<K: Serialize, V: Serialize> Serialize for VecMap<K, V> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_map(self.iter())
    }
}

impl<'de, K: Deserialize<'de> + Ord, V: Deserialize<'de>> Deserialize<'de> for VecMap<K, V> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct MapVisitor<K, V>(PhantomData<(K, V)>);

        impl<'de, K: Deserialize<'de> + Ord, V: Deserialize<'de>> Visitor<'de> for MapVisitor<K, V> {
            type Value = VecMap<K, V>;

            // serde's words for a BTreeMap, so errors read the same.
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a map")
            }

            fn visit_map<A: MapAccess<'de>>(self, mut access: A) -> Result<Self::Value, A::Error> {
                let mut entries = Vec::new();
                while let Some(entry) = access.next_entry()? {
                    entries.push(entry);
                }
                Ok(VecMap::from_entries(entries))
            }
        }

        deserializer.deserialize_map(MapVisitor(PhantomData))
    }
}
