//! The banded range allocator shared by ClusterIPs and NodePorts.
//!
//! Owns the bookkeeping of which offsets `0..size` are allocated, split into
//! the two bands of Kubernetes KEP-3070: offsets `[0, static_len)` form the
//! *static* band (meant for users who pick an address or port themselves),
//! the rest the *dynamic* band (used first by random allocation).
//!
//! Unlike Kubernetes' bitmap, allocated offsets are kept as merged runs
//! (`first..=last`) in a `SortedMap`, so memory depends on how fragmented the
//! allocations are, never on the range size (an IPv6 /64 has 2^64 offsets),
//! and every operation is `O(log runs)`: a random pick jumps over a whole
//! allocated block instead of scanning it bit by bit.

use crate::collections::SortedMap;
use crate::rng::Rng;
use serde::{Deserialize, Serialize};
use std::ops::RangeInclusive;
use thiserror::Error;

/// The length of the static band for a range of `size` values, as
/// Kubernetes' `calculateRangeOffset` computes it: no split (0) when
/// `size <= min`, else `size / divisor` clamped to `[min, max]`.
///
/// Both callers use `min = 16`, so a range of at most 16 values has no static
/// band. ClusterIPs use `(16, 16, 256)` with `size = 2^hostbits` of the CIDR;
/// NodePorts use `(32, 16, 128)` with `size` = the number of ports. The result
/// can exceed the usable offsets of a tiny range: [`BandedRange::new`] clamps
/// it. A zero `divisor` counts as `size / divisor = 0`; if `min > max` the
/// result is `max`.
pub fn band_offset(size: u128, divisor: u128, min: u128, max: u128) -> u128 {
    if size <= min {
        return 0;
    }
    size.checked_div(divisor).unwrap_or(0).max(min).min(max)
}

/// Why a range operation failed.
#[derive(Clone, Debug, PartialEq, Eq, Error)]
pub enum RangeError {
    /// The offset is already allocated.
    #[error("offset {offset} is already allocated")]
    AlreadyAllocated {
        /// The offset asked for.
        offset: u128,
    },
    /// The offset is not below the range size.
    #[error("offset {offset} is outside the range 0..{size}")]
    OutOfRange {
        /// The offset asked for.
        offset: u128,
        /// The range size.
        size: u128,
    },
    /// A restored run is empty (`first > last`) or reaches past the range.
    #[error("run {first}-{last} is not a valid run inside 0..{size}")]
    InvalidRun {
        /// The run's first offset.
        first: u128,
        /// The run's last offset.
        last: u128,
        /// The range size.
        size: u128,
    },
    /// A restored run overlaps another run of the same snapshot.
    #[error("run {first}-{last} overlaps another run")]
    OverlappingRuns {
        /// The run's first offset.
        first: u128,
        /// The run's last offset.
        last: u128,
    },
    /// A snapshot was taken from a range of another size or band split.
    #[error("the provided range does not match the current range")]
    Mismatch,
}

/// A serialisable copy of a [`BandedRange`]: its shape and its allocated
/// runs, each `[first, last]` inclusive, sorted and merged.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RangeSnapshot {
    /// The number of offsets in the range.
    pub size: u128,
    /// The length of the static band.
    pub static_len: u128,
    /// The allocated runs, `[first, last]` inclusive.
    pub runs: Vec<[u128; 2]>,
}

/// A free offset, and the first offset of the run that ends just before it.
#[derive(Clone, Copy, Debug)]
struct FreeSlot {
    offset: u128,
    left_run: Option<u128>,
}

/// Offsets `0..size` split into a static band `[0, static_len)` and a dynamic
/// band `[static_len, size)`, with the allocated ones kept as merged runs.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BandedRange {
    size: u128,
    static_len: u128,
    /// Allocated runs, first -> last (inclusive). Invariant: runs are
    /// disjoint, inside `0..size`, and never adjacent (adjacent runs are
    /// merged), so the offset after a run's last is always free.
    runs: SortedMap<u128, u128>,
    used_static: u128,
    used_dynamic: u128,
}

impl BandedRange {
    /// An empty range of `size` offsets whose first `static_len` offsets form
    /// the static band (clamped to `size`).
    pub fn new(size: u128, static_len: u128) -> BandedRange {
        BandedRange {
            size,
            static_len: static_len.min(size),
            runs: SortedMap::new(),
            used_static: 0,
            used_dynamic: 0,
        }
    }

    /// The number of offsets.
    pub fn size(&self) -> u128 {
        self.size
    }

    /// The length of the static band `[0, static_len)`.
    pub fn static_len(&self) -> u128 {
        self.static_len
    }

    /// The number of allocated offsets.
    pub fn used(&self) -> u128 {
        self.used_static + self.used_dynamic
    }

    /// The number of free offsets.
    pub fn free(&self) -> u128 {
        self.size - self.used()
    }

    /// Whether `offset` is allocated (offsets outside the range never are).
    pub fn is_allocated(&self, offset: u128) -> bool {
        self.run_containing(offset).is_some()
    }

    /// Marks `offset` allocated.
    pub fn allocate(&mut self, offset: u128) -> Result<(), RangeError> {
        if offset >= self.size {
            return Err(RangeError::OutOfRange {
                offset,
                size: self.size,
            });
        }
        match self.first_free_from(offset, self.size) {
            Some(slot) if slot.offset == offset => {
                self.insert_free(slot);
                Ok(())
            }
            _ => Err(RangeError::AlreadyAllocated { offset }),
        }
    }

    /// Allocates a free offset the way Kubernetes' `randomScanStrategyWithOffset`
    /// does: a random start inside the dynamic band, then the first free offset
    /// upward from it, wrapping around inside the band; if the dynamic band is
    /// full, the same inside the static band. `None` when the range is full.
    ///
    /// One draw from `rng` per call that finds space (none when full). Runs
    /// are jumped over whole, so a call costs `O(log runs)`.
    pub fn allocate_next(&mut self, rng: &mut Rng) -> Option<u128> {
        let slot = if self.used_dynamic < self.size - self.static_len {
            self.pick_in_band(self.static_len, self.size, rng)
        } else if self.used_static < self.static_len {
            self.pick_in_band(0, self.static_len, rng)
        } else {
            None
        }?;
        self.insert_free(slot);
        Some(slot.offset)
    }

    /// Frees `offset`; `false` if it was not allocated.
    pub fn release(&mut self, offset: u128) -> bool {
        // One search finds the run; shrink it in place when it starts
        // before `offset`, then add the part after `offset` as its own run.
        let (first, last) = match self.runs.range_mut(..=offset).next_back() {
            Some((&first, last)) if *last >= offset => {
                let old_last = *last;
                if first < offset {
                    *last = offset - 1;
                }
                (first, old_last)
            }
            _ => return false,
        };
        if first == offset {
            self.runs.remove(&first);
        }
        if offset < last {
            self.runs.insert(offset + 1, last);
        }
        if offset < self.static_len {
            self.used_static -= 1;
        } else {
            self.used_dynamic -= 1;
        }
        true
    }

    /// The allocated runs in increasing order, merged (two runs never touch).
    pub fn runs(&self) -> impl Iterator<Item = RangeInclusive<u128>> + '_ {
        self.runs.iter().map(|(&first, &last)| first..=last)
    }

    /// A serialisable copy of the allocations.
    pub fn snapshot(&self) -> RangeSnapshot {
        RangeSnapshot {
            size: self.size,
            static_len: self.static_len,
            runs: self.runs.iter().map(|(&first, &last)| [first, last]).collect(),
        }
    }

    /// Replaces the allocations with those of `snapshot`, which must come from
    /// a range of the same size and static band. On error nothing changes.
    pub fn restore(&mut self, snapshot: &RangeSnapshot) -> Result<(), RangeError> {
        if snapshot.size != self.size || snapshot.static_len != self.static_len {
            return Err(RangeError::Mismatch);
        }
        self.restore_runs(snapshot.runs.iter().map(|&[first, last]| first..=last))
    }

    /// Replaces the allocations with `runs` (inclusive, in any order;
    /// adjacent runs are merged). Fails on an empty or out-of-range run or on
    /// overlapping runs; on error nothing changes.
    pub fn restore_runs(&mut self, runs: impl IntoIterator<Item = RangeInclusive<u128>>) -> Result<(), RangeError> {
        let mut sorted: Vec<(u128, u128)> = Vec::new();
        for run in runs {
            let (first, last) = run.into_inner();
            if first > last || last >= self.size {
                return Err(RangeError::InvalidRun {
                    first,
                    last,
                    size: self.size,
                });
            }
            sorted.push((first, last));
        }
        crate::sort::sort(&mut sorted);
        let mut merged: SortedMap<u128, u128> = SortedMap::new();
        let mut current: Option<(u128, u128)> = None;
        for (first, last) in sorted {
            current = match current {
                Some((_, cur_last)) if first <= cur_last => {
                    return Err(RangeError::OverlappingRuns { first, last });
                }
                // `cur_last < first < size`, so `cur_last + 1` cannot overflow.
                Some((cur_first, cur_last)) if first == cur_last + 1 => Some((cur_first, last)),
                Some((cur_first, cur_last)) => {
                    merged.insert(cur_first, cur_last);
                    Some((first, last))
                }
                None => Some((first, last)),
            };
        }
        if let Some((first, last)) = current {
            merged.insert(first, last);
        }
        let (mut used_static, mut used_dynamic) = (0, 0);
        for (&first, &last) in &merged {
            let static_part = last.min(self.static_len.saturating_sub(1));
            let in_static = if first < self.static_len {
                static_part - first + 1
            } else {
                0
            };
            used_static += in_static;
            used_dynamic += last - first + 1 - in_static;
        }
        self.runs = merged;
        self.used_static = used_static;
        self.used_dynamic = used_dynamic;
        Ok(())
    }

    /// The run `(first, last)` that contains `offset`, if any.
    fn run_containing(&self, offset: u128) -> Option<(u128, u128)> {
        self.runs
            .range(..=offset)
            .next_back()
            .filter(|(_, &last)| last >= offset)
            .map(|(&first, &last)| (first, last))
    }

    /// The first free offset in `[from, band_end)`, jumping over the run that
    /// contains `from` (the offset after a run is free: runs never touch).
    /// One search also tells which run ends just before it.
    fn first_free_from(&self, from: u128, band_end: u128) -> Option<FreeSlot> {
        let slot = match self.runs.range(..=from).next_back() {
            Some((&first, &last)) if last >= from => FreeSlot {
                offset: last.checked_add(1)?,
                left_run: Some(first),
            },
            Some((&first, &last)) if last.checked_add(1) == Some(from) => FreeSlot {
                offset: from,
                left_run: Some(first),
            },
            _ => FreeSlot {
                offset: from,
                left_run: None,
            },
        };
        (slot.offset < band_end).then_some(slot)
    }

    /// A random start in `[band_start, band_end)`, then the first free offset
    /// upward with wrap-around inside the band.
    fn pick_in_band(&self, band_start: u128, band_end: u128, rng: &mut Rng) -> Option<FreeSlot> {
        let start = band_start + rng.below(band_end - band_start);
        self.first_free_from(start, band_end)
            .or_else(|| self.first_free_from(band_start, band_end))
    }

    /// Marks a free, in-range slot allocated, merging it with the run that
    /// ends just before it (extended in place) and the one starting just
    /// after it (removed).
    fn insert_free(&mut self, slot: FreeSlot) {
        let offset = slot.offset;
        let last = offset
            .checked_add(1)
            .and_then(|after| self.runs.remove(&after))
            .unwrap_or(offset);
        match slot.left_run.and_then(|first| self.runs.get_mut(&first)) {
            Some(left_last) => *left_last = last,
            None => {
                self.runs.insert(offset, last);
            }
        }
        if offset < self.static_len {
            self.used_static += 1;
        } else {
            self.used_dynamic += 1;
        }
    }
}

/// Serialises a `u128` count as a decimal string, so JavaScript (the
/// playground) keeps counts above 2^53 exact.
pub(crate) fn serialize_decimal<S: serde::Serializer>(value: &u128, serializer: S) -> Result<S::Ok, S::Error> {
    serializer.collect_str(value)
}

/// Parses a snapshot entry, one value (`10.96.0.10`, `30080`) or an
/// inclusive run (`first-last`), into offsets with `offset_of`, which names
/// what is wrong with a single value. Errors are the reason text, quoting
/// the entry.
pub fn parse_run(
    entry: &str,
    offset_of: impl Fn(&str) -> Result<u128, &'static str>,
) -> Result<RangeInclusive<u128>, String> {
    let (first, last) = entry.split_once('-').unwrap_or((entry, entry));
    let quoted = |what: &str| format!("\"{entry}\" {what}");
    let first = offset_of(first.trim()).map_err(quoted)?;
    let last = offset_of(last.trim()).map_err(quoted)?;
    if first > last {
        return Err(quoted("ends before it starts"));
    }
    Ok(first..=last)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn runs_of(range: &BandedRange) -> Vec<(u128, u128)> {
        range.runs().map(|r| r.into_inner()).collect()
    }

    #[test]
    fn band_offset_follows_kubernetes() {
        // ClusterIPs: size = 2^hostbits.
        assert_eq!(band_offset(8, 16, 16, 256), 0); // /29
        assert_eq!(band_offset(16, 16, 16, 256), 0); // /28
        assert_eq!(band_offset(32, 16, 16, 256), 16); // /27
        assert_eq!(band_offset(256, 16, 16, 256), 16); // /24
        assert_eq!(band_offset(4096, 16, 16, 256), 256); // /20
        assert_eq!(band_offset(1 << 20, 16, 16, 256), 256); // /12
        assert_eq!(band_offset(1 << 64, 16, 16, 256), 256); // IPv6 /64
                                                            // NodePorts: size = number of ports.
        assert_eq!(band_offset(2768, 32, 16, 128), 86);
        assert_eq!(band_offset(16, 32, 16, 128), 0);
        assert_eq!(band_offset(17, 32, 16, 128), 16);
        assert_eq!(band_offset(65536, 32, 16, 128), 128);
        // Degenerate parameters do not panic.
        assert_eq!(band_offset(100, 0, 16, 256), 16);
        assert_eq!(band_offset(100, 1, 50, 10), 10);
    }

    #[test]
    fn static_band_is_clamped_to_size() {
        let range = BandedRange::new(10, 16);
        assert_eq!(range.static_len(), 10);
    }

    #[test]
    fn allocate_merges_and_release_splits_runs() {
        let mut range = BandedRange::new(100, 16);
        for offset in [5, 7, 6, 4, 8] {
            range.allocate(offset).unwrap();
        }
        assert_eq!(runs_of(&range), vec![(4, 8)]);
        assert_eq!(range.used(), 5);
        assert_eq!(range.free(), 95);
        assert!(range.release(6));
        assert_eq!(runs_of(&range), vec![(4, 5), (7, 8)]);
        assert!(!range.release(6));
        assert!(range.release(4));
        assert!(range.release(8));
        assert_eq!(runs_of(&range), vec![(5, 5), (7, 7)]);
        assert_eq!(range.used(), 2);
        assert!(range.is_allocated(5) && !range.is_allocated(6));
    }

    #[test]
    fn allocate_errors() {
        let mut range = BandedRange::new(10, 0);
        range.allocate(9).unwrap();
        assert_eq!(range.allocate(9), Err(RangeError::AlreadyAllocated { offset: 9 }));
        assert_eq!(range.allocate(10), Err(RangeError::OutOfRange { offset: 10, size: 10 }));
        assert!(!range.is_allocated(u128::MAX));
        assert!(!range.release(u128::MAX));
    }

    #[test]
    fn allocate_next_prefers_the_dynamic_band_then_falls_back_to_static() {
        let mut range = BandedRange::new(40, 16);
        let mut rng = Rng::new(1);
        for _ in 0..24 {
            let offset = range.allocate_next(&mut rng).unwrap();
            assert!(offset >= 16, "dynamic band first, got {offset}");
        }
        let mut statics: Vec<u128> = (0..16).map(|_| range.allocate_next(&mut rng).unwrap()).collect();
        crate::sort::sort(&mut statics);
        assert_eq!(statics, (0..16).collect::<Vec<_>>());
        assert_eq!(range.allocate_next(&mut rng), None);
        assert_eq!(runs_of(&range), vec![(0, 39)]);
    }

    #[test]
    fn allocate_next_wraps_around_inside_the_band() {
        // Everything in the dynamic band is taken except its first offset:
        // any random start above it must wrap to find it.
        let mut range = BandedRange::new(100, 16);
        for offset in 17..100 {
            range.allocate(offset).unwrap();
        }
        for seed in 0..20 {
            let mut copy = range.clone();
            assert_eq!(copy.allocate_next(&mut Rng::new(seed)), Some(16));
        }
        // Same in the static band once the dynamic one is full.
        range.allocate(16).unwrap();
        for offset in 1..16 {
            range.allocate(offset).unwrap();
        }
        for seed in 0..20 {
            let mut copy = range.clone();
            assert_eq!(copy.allocate_next(&mut Rng::new(seed)), Some(0));
        }
    }

    #[test]
    fn allocate_next_scans_upward_from_the_random_start() {
        // With a single free offset above the start, it is the one picked.
        let mut range = BandedRange::new(1000, 0);
        let mut rng = Rng::new(3);
        let start = Rng::new(3).below(1000);
        for offset in start..1000 {
            range.allocate(offset).unwrap();
        }
        range.release(999);
        assert_eq!(range.allocate_next(&mut rng), Some(999));
    }

    #[test]
    fn no_split_range_uses_whole_range() {
        let mut range = BandedRange::new(6, 0);
        let mut rng = Rng::new(9);
        let mut got: Vec<u128> = (0..6).map(|_| range.allocate_next(&mut rng).unwrap()).collect();
        crate::sort::sort(&mut got);
        assert_eq!(got, vec![0, 1, 2, 3, 4, 5]);
        assert_eq!(range.allocate_next(&mut rng), None);
        let mut empty = BandedRange::new(0, 16);
        assert_eq!(empty.allocate_next(&mut rng), None);
    }

    #[test]
    fn huge_range_allocates_without_scanning() {
        let size = (1u128 << 64) - 1;
        let mut range = BandedRange::new(size, 256);
        let mut rng = Rng::new(5);
        for _ in 0..1000 {
            let offset = range.allocate_next(&mut rng).unwrap();
            assert!((256..size).contains(&offset));
        }
        assert_eq!(range.used(), 1000);
        // Half of the dynamic band in one run: picks jump over it.
        range.restore_runs([256..=size / 2]).unwrap();
        for _ in 0..1000 {
            let offset = range.allocate_next(&mut rng).unwrap();
            assert!(offset > size / 2);
        }
    }

    #[test]
    fn snapshot_round_trips_and_counts_bands() {
        let mut range = BandedRange::new(64, 16);
        let mut rng = Rng::new(11);
        for offset in [0, 1, 2, 15, 16, 17, 40] {
            range.allocate(offset).unwrap();
        }
        for _ in 0..10 {
            range.allocate_next(&mut rng).unwrap();
        }
        let snapshot = range.snapshot();
        let json = serde_json::to_string(&snapshot).unwrap();
        let back: RangeSnapshot = serde_json::from_str(&json).unwrap();
        let mut restored = BandedRange::new(64, 16);
        restored.restore(&back).unwrap();
        assert_eq!(restored, range);
        assert_eq!(restored.snapshot(), snapshot);
    }

    #[test]
    fn restore_merges_and_validates() {
        let mut range = BandedRange::new(32, 16);
        range.restore_runs([20..=25, 10..=15, 16..=19]).unwrap();
        assert_eq!(runs_of(&range), vec![(10, 25)]);
        assert_eq!(range.used(), 16);
        // 10 of the 16 dynamic offsets and 6 static ones are taken: 6 picks
        // land in the dynamic band, then the static fallback has 10 left.
        let mut rng = Rng::new(0);
        let picks: Vec<u128> = (0..6).map(|_| range.allocate_next(&mut rng).unwrap()).collect();
        assert!(picks.iter().all(|o| (16..32).contains(o)));
        let statics: Vec<u128> = (0..10).map(|_| range.allocate_next(&mut rng).unwrap()).collect();
        assert!(statics.iter().all(|&o| o < 10));
        assert_eq!(range.allocate_next(&mut rng), None);

        let before = range.clone();
        assert_eq!(
            range.restore_runs([1..=3, 3..=4]),
            Err(RangeError::OverlappingRuns { first: 3, last: 4 })
        );
        assert_eq!(
            range.restore_runs([RangeInclusive::new(5, 4)]),
            Err(RangeError::InvalidRun {
                first: 5,
                last: 4,
                size: 32
            })
        );
        assert_eq!(
            range.restore_runs([30..=32]),
            Err(RangeError::InvalidRun {
                first: 30,
                last: 32,
                size: 32
            })
        );
        assert_eq!(range, before);
        let other = BandedRange::new(33, 16).snapshot();
        assert_eq!(range.restore(&other), Err(RangeError::Mismatch));
        assert_eq!(
            RangeError::Mismatch.to_string(),
            "the provided range does not match the current range"
        );
    }
}
