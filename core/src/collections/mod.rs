//! The core's ordered collections: [`SortedMap`] and [`SortedSet`].
//!
//! Everything the core keeps by key is iterated in key order (the order of
//! `kubectl get`, of rendered rules, of plans), so its maps are ordered.
//! On a node they are the standard library's `BTreeMap` and `BTreeSet`:
//! fast inserts and removals among tens of thousands of objects. In the
//! WebAssembly build they are [`VecMap`] and [`VecSet`], sorted vectors:
//! the B-tree's code is generic over the key and value, so each of the
//! core's ~65 key/value pairs carried its own copy of it (about a fifth of
//! the browser module), while a sorted vector's code is a binary search
//! and a `Vec` insert. A playground cluster holds tens of objects, where a
//! vector's linear insert costs nothing.
//!
//! Both have the same methods, used the same way, and iterate in the same
//! order, so the output is the same byte for byte: the behaviour vectors
//! run natively (B-trees) and in WebAssembly (vectors) and are compared,
//! and this module's tests run random operations on both side by side.
//! `RUSTFLAGS='--cfg svcnet_small_maps'` builds the native core on the
//! vectors too.

mod vec_map;
mod vec_set;

#[cfg(test)]
mod tests;

pub use vec_map::{Entry, VecMap};
pub use vec_set::VecSet;

/// The core's ordered map: `BTreeMap` natively, [`VecMap`] in WebAssembly.
#[cfg(not(any(target_arch = "wasm32", svcnet_small_maps)))]
pub type SortedMap<K, V> = std::collections::BTreeMap<K, V>;
/// The core's ordered map: `BTreeMap` natively, [`VecMap`] in WebAssembly.
#[cfg(any(target_arch = "wasm32", svcnet_small_maps))]
pub type SortedMap<K, V> = VecMap<K, V>;

/// The core's ordered set: `BTreeSet` natively, [`VecSet`] in WebAssembly.
#[cfg(not(any(target_arch = "wasm32", svcnet_small_maps)))]
pub type SortedSet<T> = std::collections::BTreeSet<T>;
/// The core's ordered set: `BTreeSet` natively, [`VecSet`] in WebAssembly.
#[cfg(any(target_arch = "wasm32", svcnet_small_maps))]
pub type SortedSet<T> = VecSet<T>;
