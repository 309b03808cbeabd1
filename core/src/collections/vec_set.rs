//! [`VecSet`]: an ordered set kept as a sorted vector, with `BTreeSet`'s
//! methods (the ones the core uses) and iteration order: a [`VecMap`]
//! whose values are `()`.

use std::borrow::Borrow;
use std::fmt;
use std::marker::PhantomData;
use std::ops::RangeBounds;

use serde::de::{SeqAccess, Visitor};
use serde::{Deserialize, Deserializer, Serialize, Serializer};

use super::vec_map::{IntoKeys, Keys, VecMap};

/// An ordered set: items sorted, none twice.
#[derive(Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct VecSet<T> {
    map: VecMap<T, ()>,
}

impl<T> VecSet<T> {
    /// An empty set.
    pub const fn new() -> Self {
        Self { map: VecMap::new() }
    }

    /// The number of items.
    pub fn len(&self) -> usize {
        self.map.len()
    }

    /// Whether the set has no item.
    pub fn is_empty(&self) -> bool {
        self.map.is_empty()
    }

    /// Removes every item.
    pub fn clear(&mut self) {
        self.map.clear();
    }

    /// The items in order.
    pub fn iter(&self) -> Keys<'_, T, ()> {
        self.map.keys()
    }

    /// The smallest item.
    pub fn first(&self) -> Option<&T> {
        self.map.first_key_value().map(|(item, ())| item)
    }

    /// The largest item.
    pub fn last(&self) -> Option<&T> {
        self.map.last_key_value().map(|(item, ())| item)
    }

    /// Removes and returns the smallest item.
    pub fn pop_first(&mut self) -> Option<T> {
        self.map.pop_first().map(|(item, ())| item)
    }

    /// Removes and returns the largest item.
    pub fn pop_last(&mut self) -> Option<T> {
        self.map.pop_last().map(|(item, ())| item)
    }

    /// Keeps the items for which `keep` is true.
    pub fn retain(&mut self, mut keep: impl FnMut(&T) -> bool) {
        self.map.retain(|item, ()| keep(item));
    }
}

impl<T: Ord> VecSet<T> {
    /// Whether `item` is in the set.
    pub fn contains<Q>(&self, item: &Q) -> bool
    where
        T: Borrow<Q>,
        Q: Ord + ?Sized,
    {
        self.map.contains_key(item)
    }

    /// The stored item equal to `item`.
    pub fn get<Q>(&self, item: &Q) -> Option<&T>
    where
        T: Borrow<Q>,
        Q: Ord + ?Sized,
    {
        self.map.get_key_value(item).map(|(stored, ())| stored)
    }

    /// Adds `item`; false when it was there already (and is kept).
    pub fn insert(&mut self, item: T) -> bool {
        self.map.insert(item, ()).is_none()
    }

    /// Removes `item`; false when it was not there.
    pub fn remove<Q>(&mut self, item: &Q) -> bool
    where
        T: Borrow<Q>,
        Q: Ord + ?Sized,
    {
        self.map.remove(item).is_some()
    }

    /// Removes `item` and returns the stored one.
    pub fn take<Q>(&mut self, item: &Q) -> Option<T>
    where
        T: Borrow<Q>,
        Q: Ord + ?Sized,
    {
        self.map.remove_entry(item).map(|(stored, ())| stored)
    }

    /// Moves every item of `other` into this set, leaving `other` empty.
    pub fn append(&mut self, other: &mut Self) {
        self.map.append(&mut other.map);
    }

    /// The items in `range`, in order.
    pub fn range<Q, R>(&self, range: R) -> impl DoubleEndedIterator<Item = &T>
    where
        T: Borrow<Q>,
        Q: Ord + ?Sized,
        R: RangeBounds<Q>,
    {
        self.map.range(range).map(|(item, ())| item)
    }

    /// The items of this set that are not in `other`, in order.
    pub fn difference<'a>(&'a self, other: &'a Self) -> impl Iterator<Item = &'a T> + 'a {
        self.iter().filter(move |item| !other.contains(*item))
    }

    /// The items in both sets, in order.
    pub fn intersection<'a>(&'a self, other: &'a Self) -> impl Iterator<Item = &'a T> + 'a {
        self.iter().filter(move |item| other.contains(*item))
    }

    /// Whether every item of this set is in `other`.
    pub fn is_subset(&self, other: &Self) -> bool {
        self.iter().all(|item| other.contains(item))
    }

    /// Whether the sets share no item.
    pub fn is_disjoint(&self, other: &Self) -> bool {
        !self.iter().any(|item| other.contains(item))
    }
}

impl<T> Default for VecSet<T> {
    fn default() -> Self {
        Self::new()
    }
}

impl<T: fmt::Debug> fmt::Debug for VecSet<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_set().entries(self.iter()).finish()
    }
}

impl<T: Ord> FromIterator<T> for VecSet<T> {
    fn from_iter<I: IntoIterator<Item = T>>(items: I) -> Self {
        Self {
            map: items.into_iter().map(|item| (item, ())).collect(),
        }
    }
}

impl<T: Ord, const N: usize> From<[T; N]> for VecSet<T> {
    fn from(items: [T; N]) -> Self {
        items.into_iter().collect()
    }
}

impl<T: Ord> Extend<T> for VecSet<T> {
    fn extend<I: IntoIterator<Item = T>>(&mut self, items: I) {
        for item in items {
            self.insert(item);
        }
    }
}

impl<'a, T: Ord + Copy + 'a> Extend<&'a T> for VecSet<T> {
    fn extend<I: IntoIterator<Item = &'a T>>(&mut self, items: I) {
        self.extend(items.into_iter().copied());
    }
}

impl<T> IntoIterator for VecSet<T> {
    type Item = T;
    type IntoIter = IntoKeys<T, ()>;

    fn into_iter(self) -> Self::IntoIter {
        self.map.into_keys()
    }
}

impl<'a, T> IntoIterator for &'a VecSet<T> {
    type Item = &'a T;
    type IntoIter = Keys<'a, T, ()>;

    fn into_iter(self) -> Self::IntoIter {
        self.iter()
    }
}

impl<T: Serialize> Serialize for VecSet<T> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_seq(self.iter())
    }
}

impl<'de, T: Deserialize<'de> + Ord> Deserialize<'de> for VecSet<T> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct SeqVisitor<T>(PhantomData<T>);

        impl<'de, T: Deserialize<'de> + Ord> Visitor<'de> for SeqVisitor<T> {
            type Value = VecSet<T>;

            // serde's words for a BTreeSet, so errors read the same.
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a sequence")
            }

            fn visit_seq<A: SeqAccess<'de>>(self, mut access: A) -> Result<Self::Value, A::Error> {
                let mut items = Vec::new();
                while let Some(item) = access.next_element()? {
                    items.push(item);
                }
                Ok(items.into_iter().collect())
            }
        }

        deserializer.deserialize_seq(SeqVisitor(PhantomData))
    }
}
