//! ClusterIP allocation over the configured service CIDRs.
//!
//! Owns which ClusterIPs are taken, per CIDR (like one ServiceCIDR object
//! each), with Kubernetes' rules: offsets map to addresses from network+1
//! (offset 0 is the `kubernetes` Service's address), the network address is
//! never used, nor is the IPv4 broadcast address; each CIDR is split into a
//! static and a dynamic band (KEP-3070) by [`band_offset`]. Also owns the
//! per-CIDR usage report and the snapshot/restore format.

use crate::apiserver::range::{band_offset, parse_run, serialize_decimal, BandedRange, RangeError};
use crate::family::IpFamily;
use crate::rng::Rng;
use ipnetwork::IpNetwork;
use serde::{Deserialize, Serialize};
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};
use std::ops::RangeInclusive;
use thiserror::Error;

/// Why a ClusterIP operation failed. Messages reuse Kubernetes' wording.
#[derive(Clone, Debug, PartialEq, Eq, Error)]
pub enum AllocationError {
    /// The requested IP is already allocated.
    #[error("provided IP is already allocated")]
    AlreadyAllocated,
    /// The requested IP is outside every CIDR of its family, or is a CIDR's
    /// network (or IPv4 broadcast) address: no range's allocator takes it
    /// (the ServiceCIDR allocator's words, kube-apiserver 1.33 and later).
    #[error("the provided network does not match the current range")]
    MismatchedNetwork,
    /// Every CIDR of the requested family is full.
    #[error("range is full")]
    Full,
    /// No CIDR of the requested family is configured.
    #[error("no service CIDR is configured for {family}")]
    NoServiceCidr {
        /// The requested family.
        family: IpFamily,
    },
    /// A new CIDR overlaps one already configured.
    #[error("service CIDR {cidr} overlaps with the existing service CIDR {existing}")]
    Overlap {
        /// The CIDR being added.
        cidr: IpNetwork,
        /// The configured CIDR it overlaps.
        existing: IpNetwork,
    },
    /// An IPv6 CIDR is larger than a /64.
    #[error("shortest allowed prefix length for service CIDR is 64")]
    PrefixTooShort,
    /// A CIDR has fewer than 8 addresses (IPv4 longer than /29, IPv6 longer
    /// than /125).
    #[error("the service cluster IP range must be at least 8 IP addresses")]
    RangeTooSmall,
    /// A snapshot lists other CIDRs than the configured ones.
    #[error("the provided range does not match the current range")]
    RangeMismatch,
    /// A snapshot entry is not an address or range inside its CIDR, or
    /// overlaps another entry.
    #[error("invalid snapshot of {range}: {reason}")]
    InvalidSnapshot {
        /// The CIDR whose entry is invalid.
        range: String,
        /// What is wrong with the entry.
        reason: String,
    },
}

/// The allocations of one CIDR in a [`ClusterIpSnapshot`].
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ClusterIpRangeSnapshot {
    /// The CIDR, e.g. `10.96.0.0/12`.
    pub range: String,
    /// The allocated addresses as merged runs in increasing order: a single
    /// address (`10.96.0.10`) or an inclusive range (`10.96.0.1-10.96.0.16`).
    pub allocated: Vec<String>,
}

/// A serialisable copy of a [`ClusterIpAllocator`]'s allocations, one entry
/// per CIDR in configuration order.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ClusterIpSnapshot {
    /// One entry per configured CIDR.
    pub ranges: Vec<ClusterIpRangeSnapshot>,
}

/// How full one CIDR is, and where its bands lie (for the playground).
/// Counts are decimal strings so JavaScript keeps them exact above 2^53.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct CidrUsage {
    /// The CIDR, e.g. `10.96.0.0/12`.
    pub cidr: String,
    /// Its family.
    pub family: IpFamily,
    /// The number of usable addresses (network and IPv4 broadcast excluded).
    #[serde(serialize_with = "serialize_decimal")]
    pub size: u128,
    /// The number of allocated addresses.
    #[serde(serialize_with = "serialize_decimal")]
    pub used: u128,
    /// The number of free addresses.
    #[serde(serialize_with = "serialize_decimal")]
    pub free: u128,
    /// The first address of the static band (`None` when there is no split).
    pub static_first: Option<IpAddr>,
    /// The last address of the static band.
    pub static_last: Option<IpAddr>,
    /// The first address of the dynamic band.
    pub dynamic_first: Option<IpAddr>,
    /// The last address of the dynamic band.
    pub dynamic_last: Option<IpAddr>,
}

/// One configured CIDR and its allocations.
#[derive(Clone, Debug, PartialEq, Eq)]
struct CidrRange {
    /// The CIDR, normalised to its network address.
    cidr: IpNetwork,
    /// Offsets from network+1.
    range: BandedRange,
    /// Its ServiceCIDR is being deleted: what it holds stays allocated,
    /// nothing new comes from it.
    terminating: bool,
}

impl CidrRange {
    fn new(cidr: IpNetwork) -> Result<CidrRange, AllocationError> {
        let cidr = IpNetwork::new(cidr.network(), cidr.prefix()).unwrap_or(cidr);
        let (host_bits, excluded) = match cidr {
            IpNetwork::V4(net) => (32 - u32::from(net.prefix()), 2),
            IpNetwork::V6(net) => (128 - u32::from(net.prefix()), 1),
        };
        if host_bits > 64 {
            // Only reachable for IPv6: an IPv4 CIDR has at most 32 host bits.
            return Err(AllocationError::PrefixTooShort);
        }
        let addresses = 1u128 << host_bits;
        if addresses < 8 {
            return Err(AllocationError::RangeTooSmall);
        }
        let static_len = band_offset(addresses, 16, 16, 256);
        Ok(CidrRange {
            cidr,
            range: BandedRange::new(addresses - excluded, static_len),
            terminating: false,
        })
    }

    fn family(&self) -> IpFamily {
        IpFamily::of(self.cidr.network())
    }

    fn network(&self) -> u128 {
        to_u128(self.cidr.network())
    }

    /// The offset of `ip`, if it is a usable address of this CIDR.
    fn offset_of(&self, ip: IpAddr) -> Option<u128> {
        if IpFamily::of(ip) != self.family() {
            return None;
        }
        let offset = to_u128(ip).checked_sub(self.network())?.checked_sub(1)?;
        (offset < self.range.size()).then_some(offset)
    }

    /// The address at `offset` (`offset < size`, so it stays inside the CIDR).
    fn address_at(&self, offset: u128) -> IpAddr {
        let value = self.network().wrapping_add(1).wrapping_add(offset);
        match self.cidr {
            // An in-range IPv4 offset keeps the value below 2^32.
            IpNetwork::V4(_) => IpAddr::V4(Ipv4Addr::from(value as u32)),
            IpNetwork::V6(_) => IpAddr::V6(Ipv6Addr::from(value)),
        }
    }

    fn format_run(&self, run: RangeInclusive<u128>) -> String {
        let (first, last) = run.into_inner();
        if first == last {
            self.address_at(first).to_string()
        } else {
            format!("{}-{}", self.address_at(first), self.address_at(last))
        }
    }

    /// Parses a snapshot entry (`ip` or `first-last`) into offsets.
    fn parse_run(&self, entry: &str) -> Result<RangeInclusive<u128>, AllocationError> {
        parse_run(entry, |text| {
            let ip: IpAddr = text.parse().map_err(|_| "is not an IP address or an IP range")?;
            self.offset_of(ip).ok_or("is not inside the range")
        })
        .map_err(|reason| AllocationError::InvalidSnapshot {
            range: self.cidr.to_string(),
            reason,
        })
    }

    fn usage(&self) -> CidrUsage {
        let (size, static_len) = (self.range.size(), self.range.static_len());
        let band = |first: u128, end: u128| {
            if first < end {
                (Some(self.address_at(first)), Some(self.address_at(end - 1)))
            } else {
                (None, None)
            }
        };
        let (static_first, static_last) = band(0, static_len);
        let (dynamic_first, dynamic_last) = band(static_len, size);
        CidrUsage {
            cidr: self.cidr.to_string(),
            family: self.family(),
            size,
            used: self.range.used(),
            free: self.range.free(),
            static_first,
            static_last,
            dynamic_first,
            dynamic_last,
        }
    }
}

fn to_u128(ip: IpAddr) -> u128 {
    match ip {
        IpAddr::V4(v4) => u128::from(u32::from(v4)),
        IpAddr::V6(v6) => u128::from(v6),
    }
}

/// The ClusterIP allocator: several CIDRs per family, each with its own
/// static and dynamic bands. Dynamic allocation tries a family's CIDRs in
/// the order they were added and uses the first one with free space.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ClusterIpAllocator {
    ranges: Vec<CidrRange>,
}

impl ClusterIpAllocator {
    /// An allocator over `cidrs` (possibly none), in this order. Fails like
    /// [`ClusterIpAllocator::add_cidr`].
    pub fn new(cidrs: impl IntoIterator<Item = IpNetwork>) -> Result<ClusterIpAllocator, AllocationError> {
        let mut allocator = ClusterIpAllocator::default();
        for cidr in cidrs {
            allocator.add_cidr(cidr)?;
        }
        Ok(allocator)
    }

    /// Adds a CIDR after the existing ones. Host bits are ignored
    /// (`10.96.0.5/12` is `10.96.0.0/12`). Fails if it overlaps a configured
    /// CIDR, has fewer than 8 addresses, or is an IPv6 prefix shorter than /64.
    pub fn add_cidr(&mut self, cidr: IpNetwork) -> Result<(), AllocationError> {
        let new = CidrRange::new(cidr)?;
        if let Some(existing) = self
            .ranges
            .iter()
            .find(|r| r.cidr.contains(new.cidr.network()) || new.cidr.contains(r.cidr.network()))
        {
            return Err(AllocationError::Overlap {
                cidr: new.cidr,
                existing: existing.cidr,
            });
        }
        self.ranges.push(new);
        Ok(())
    }

    /// The configured CIDRs in order (normalised to their network address).
    pub fn cidrs(&self) -> impl Iterator<Item = IpNetwork> + '_ {
        self.ranges.iter().map(|r| r.cidr)
    }

    /// The configured families, in the order of their first CIDR.
    pub fn families(&self) -> Vec<IpFamily> {
        let mut families = Vec::new();
        for range in &self.ranges {
            if !families.contains(&range.family()) {
                families.push(range.family());
            }
        }
        families
    }

    /// The first usable address of `cidr` (network+1: the `kubernetes`
    /// Service's ClusterIP), or `None` if `cidr` could not be configured
    /// (fewer than 8 addresses, or an IPv6 prefix shorter than /64).
    pub fn first_address(cidr: IpNetwork) -> Option<IpAddr> {
        CidrRange::new(cidr).ok().map(|r| r.address_at(0))
    }

    /// Allocates the given IP (a user-picked `spec.clusterIP`).
    pub fn allocate(&mut self, ip: IpAddr) -> Result<(), AllocationError> {
        let family = IpFamily::of(ip);
        self.check_family(family)?;
        let Some((range, offset)) = self.locate_mut(ip).filter(|(r, _)| !r.terminating) else {
            return Err(AllocationError::MismatchedNetwork);
        };
        match range.range.allocate(offset) {
            Ok(()) => Ok(()),
            Err(RangeError::AlreadyAllocated { .. }) => Err(AllocationError::AlreadyAllocated),
            // `locate_mut` only returns in-range offsets; kept for totality.
            Err(_) => Err(AllocationError::MismatchedNetwork),
        }
    }

    /// Allocates a random free IP of `family`: from the first of the family's
    /// CIDRs with free space, dynamic band first (see
    /// [`BandedRange::allocate_next`]).
    pub fn allocate_next(&mut self, family: IpFamily, rng: &mut Rng) -> Result<IpAddr, AllocationError> {
        self.check_family(family)?;
        for range in self
            .ranges
            .iter_mut()
            .filter(|r| r.family() == family && !r.terminating)
        {
            if let Some(offset) = range.range.allocate_next(rng) {
                return Ok(range.address_at(offset));
            }
        }
        Err(AllocationError::Full)
    }

    /// Frees `ip`; `false` if it was not allocated (or not in any CIDR).
    pub fn release(&mut self, ip: IpAddr) -> bool {
        self.locate_mut(ip)
            .is_some_and(|(range, offset)| range.range.release(offset))
    }

    /// Whether `ip` is allocated.
    pub fn is_allocated(&self, ip: IpAddr) -> bool {
        self.ranges
            .iter()
            .find_map(|r| r.offset_of(ip).map(|offset| (r, offset)))
            .is_some_and(|(range, offset)| range.range.is_allocated(offset))
    }

    /// Usage and bands of every CIDR, in configuration order.
    pub fn usage(&self) -> Vec<CidrUsage> {
        self.ranges.iter().map(CidrRange::usage).collect()
    }

    /// A serialisable copy of the allocations.
    pub fn snapshot(&self) -> ClusterIpSnapshot {
        ClusterIpSnapshot {
            ranges: self
                .ranges
                .iter()
                .map(|r| ClusterIpRangeSnapshot {
                    range: r.cidr.to_string(),
                    allocated: r.range.runs().map(|run| r.format_run(run)).collect(),
                })
                .collect(),
        }
    }

    /// Replaces the allocations with those of `snapshot`, which must list
    /// exactly the configured CIDRs (in any order). On error nothing changes.
    pub fn restore(&mut self, snapshot: &ClusterIpSnapshot) -> Result<(), AllocationError> {
        if snapshot.ranges.len() != self.ranges.len() {
            return Err(AllocationError::RangeMismatch);
        }
        let mut restored = self.ranges.clone();
        for range in &mut restored {
            let entry = snapshot
                .ranges
                .iter()
                .find(|s| {
                    s.range.parse::<IpNetwork>().is_ok_and(|cidr| {
                        cidr.prefix() == range.cidr.prefix() && cidr.network() == range.cidr.network()
                    })
                })
                .ok_or(AllocationError::RangeMismatch)?;
            let runs = entry
                .allocated
                .iter()
                .map(|text| range.parse_run(text))
                .collect::<Result<Vec<_>, _>>()?;
            range.range.restore_runs(runs).map_err(|err| {
                let reason = match err {
                    RangeError::OverlappingRuns { first, last } => {
                        format!("\"{}\" overlaps another entry", range.format_run(first..=last))
                    }
                    other => other.to_string(),
                };
                AllocationError::InvalidSnapshot {
                    range: range.cidr.to_string(),
                    reason,
                }
            })?;
        }
        self.ranges = restored;
        Ok(())
    }

    /// The same CIDRs with nothing allocated (what the repair loop rebuilds into).
    pub fn emptied(&self) -> ClusterIpAllocator {
        ClusterIpAllocator {
            ranges: self
                .ranges
                .iter()
                .map(|r| CidrRange {
                    cidr: r.cidr,
                    range: BandedRange::new(r.range.size(), r.range.static_len()),
                    terminating: r.terminating,
                })
                .collect(),
        }
    }

    /// Whether `ip` is a usable address of a configured CIDR.
    pub fn in_range(&self, ip: IpAddr) -> bool {
        self.ranges.iter().any(|r| r.offset_of(ip).is_some())
    }

    /// Every allocated address, CIDR by CIDR in increasing order.
    pub fn allocated(&self) -> impl Iterator<Item = IpAddr> + '_ {
        self.ranges.iter().flat_map(|r| {
            r.range
                .runs()
                .flat_map(move |run| run.map(move |offset| r.address_at(offset)))
        })
    }

    /// Stops allocating from a CIDR whose ServiceCIDR is being deleted
    /// while addresses in it are in use; `false` if it is not configured.
    pub fn set_terminating(&mut self, cidr: IpNetwork) -> bool {
        let cidr = IpNetwork::new(cidr.network(), cidr.prefix()).unwrap_or(cidr);
        self.ranges
            .iter_mut()
            .filter(|r| r.cidr == cidr)
            .map(|r| r.terminating = true)
            .count()
            > 0
    }

    /// True when some address of `cidr` is allocated.
    pub fn in_use(&self, cidr: IpNetwork) -> bool {
        self.ranges.iter().any(|r| {
            r.cidr.network() == cidr.network() && r.cidr.prefix() == cidr.prefix() && r.range.runs().next().is_some()
        })
    }

    /// Removes a CIDR (a deleted ServiceCIDR) with whatever is allocated in
    /// it; `false` if it was not configured.
    pub fn remove_cidr(&mut self, cidr: IpNetwork) -> bool {
        let before = self.ranges.len();
        self.ranges
            .retain(|r| !(r.cidr.network() == cidr.network() && r.cidr.prefix() == cidr.prefix()));
        self.ranges.len() != before
    }

    /// The CIDR that holds `ip` as a usable address, and its offset there.
    fn locate_mut(&mut self, ip: IpAddr) -> Option<(&mut CidrRange, u128)> {
        self.ranges
            .iter_mut()
            .find_map(|r| r.offset_of(ip).map(|offset| (r, offset)))
    }

    fn check_family(&self, family: IpFamily) -> Result<(), AllocationError> {
        if self.ranges.iter().any(|r| r.family() == family) {
            Ok(())
        } else {
            Err(AllocationError::NoServiceCidr { family })
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn net(text: &str) -> IpNetwork {
        text.parse().unwrap()
    }

    fn ip(text: &str) -> IpAddr {
        text.parse().unwrap()
    }

    fn allocator(cidrs: &[&str]) -> ClusterIpAllocator {
        ClusterIpAllocator::new(cidrs.iter().map(|c| net(c))).unwrap()
    }

    /// (size, static first, static last, dynamic first, dynamic last).
    fn bands(cidr: &str) -> (u128, Option<IpAddr>, Option<IpAddr>, Option<IpAddr>, Option<IpAddr>) {
        let usage = allocator(&[cidr]).usage().remove(0);
        (
            usage.size,
            usage.static_first,
            usage.static_last,
            usage.dynamic_first,
            usage.dynamic_last,
        )
    }

    #[test]
    fn bands_per_prefix() {
        // /29 and /28: at most 16 addresses, no split.
        assert_eq!(
            bands("10.0.0.0/29"),
            (6, None, None, Some(ip("10.0.0.1")), Some(ip("10.0.0.6")))
        );
        assert_eq!(
            bands("10.0.0.0/28"),
            (14, None, None, Some(ip("10.0.0.1")), Some(ip("10.0.0.14")))
        );
        assert_eq!(
            bands("10.0.0.0/24"),
            (
                254,
                Some(ip("10.0.0.1")),
                Some(ip("10.0.0.16")),
                Some(ip("10.0.0.17")),
                Some(ip("10.0.0.254"))
            )
        );
        assert_eq!(
            bands("10.0.0.0/20"),
            (
                4094,
                Some(ip("10.0.0.1")),
                Some(ip("10.0.1.0")),
                Some(ip("10.0.1.1")),
                Some(ip("10.0.15.254"))
            )
        );
        assert_eq!(
            bands("10.96.0.0/12"),
            (
                1_048_574,
                Some(ip("10.96.0.1")),
                Some(ip("10.96.1.0")),
                Some(ip("10.96.1.1")),
                Some(ip("10.111.255.254"))
            )
        );
        // IPv6: only the network address is excluded.
        assert_eq!(
            bands("fd00::/64"),
            (
                (1 << 64) - 1,
                Some(ip("fd00::1")),
                Some(ip("fd00::100")),
                Some(ip("fd00::101")),
                Some(ip("fd00::ffff:ffff:ffff:ffff"))
            )
        );
        assert_eq!(
            bands("fd00::/120"),
            (
                255,
                Some(ip("fd00::1")),
                Some(ip("fd00::10")),
                Some(ip("fd00::11")),
                Some(ip("fd00::ff"))
            )
        );
        assert_eq!(
            bands("fd00::/125"),
            (7, None, None, Some(ip("fd00::1")), Some(ip("fd00::7")))
        );
    }

    #[test]
    fn usage_serialises_camel_case_with_exact_counts() {
        let mut a = allocator(&["10.96.0.0/12", "fd00::/64"]);
        a.allocate(ip("10.96.0.1")).unwrap();
        let json = serde_json::to_value(a.usage()).unwrap();
        assert_eq!(
            json,
            serde_json::json!([
                {
                    "cidr": "10.96.0.0/12", "family": "IPv4",
                    "size": "1048574", "used": "1", "free": "1048573",
                    "staticFirst": "10.96.0.1", "staticLast": "10.96.1.0",
                    "dynamicFirst": "10.96.1.1", "dynamicLast": "10.111.255.254"
                },
                {
                    "cidr": "fd00::/64", "family": "IPv6",
                    "size": "18446744073709551615", "used": "0",
                    "free": "18446744073709551615",
                    "staticFirst": "fd00::1", "staticLast": "fd00::100",
                    "dynamicFirst": "fd00::101", "dynamicLast": "fd00::ffff:ffff:ffff:ffff"
                }
            ])
        );
    }

    #[test]
    fn first_address_is_network_plus_one() {
        assert_eq!(
            ClusterIpAllocator::first_address(net("10.96.0.0/12")),
            Some(ip("10.96.0.1"))
        );
        assert_eq!(
            ClusterIpAllocator::first_address(net("10.96.7.7/12")),
            Some(ip("10.96.0.1"))
        );
        assert_eq!(
            ClusterIpAllocator::first_address(net("fd00:10::/108")),
            Some(ip("fd00:10::1"))
        );
        assert_eq!(ClusterIpAllocator::first_address(net("10.0.0.0/30")), None);
        assert_eq!(ClusterIpAllocator::first_address(net("fd00::/48")), None);
    }

    #[test]
    fn configuration_errors() {
        let mut a = allocator(&["10.96.0.0/12"]);
        let err = a.add_cidr(net("10.96.0.0/16")).unwrap_err();
        assert_eq!(
            err.to_string(),
            "service CIDR 10.96.0.0/16 overlaps with the existing service CIDR 10.96.0.0/12"
        );
        let err = a.add_cidr(net("10.0.0.0/8")).unwrap_err();
        assert_eq!(
            err.to_string(),
            "service CIDR 10.0.0.0/8 overlaps with the existing service CIDR 10.96.0.0/12"
        );
        assert_eq!(
            a.add_cidr(net("10.0.0.0/30")).unwrap_err().to_string(),
            "the service cluster IP range must be at least 8 IP addresses"
        );
        assert_eq!(
            a.add_cidr(net("fd00::/126")).unwrap_err().to_string(),
            "the service cluster IP range must be at least 8 IP addresses"
        );
        assert_eq!(
            a.add_cidr(net("fd00::/63")).unwrap_err().to_string(),
            "shortest allowed prefix length for service CIDR is 64"
        );
        assert_eq!(a.add_cidr(net("::/0")).unwrap_err(), AllocationError::PrefixTooShort);
        a.add_cidr(net("10.112.0.0/12")).unwrap();
        a.add_cidr(net("fd00::/108")).unwrap();
        a.add_cidr(net("10.0.0.5/24")).unwrap();
        assert_eq!(
            a.cidrs().map(|c| c.to_string()).collect::<Vec<_>>(),
            ["10.96.0.0/12", "10.112.0.0/12", "fd00::/108", "10.0.0.0/24"]
        );
        assert_eq!(a.families(), [IpFamily::IPv4, IpFamily::IPv6]);
        assert_eq!(ClusterIpAllocator::new([]).unwrap().families(), []);
    }

    #[test]
    fn static_allocation_errors_use_kubernetes_wording() {
        let mut a = allocator(&["10.96.0.0/16"]);
        a.allocate(ip("10.96.0.10")).unwrap();
        assert!(a.is_allocated(ip("10.96.0.10")));
        assert_eq!(
            a.allocate(ip("10.96.0.10")).unwrap_err().to_string(),
            "provided IP is already allocated"
        );
        assert_eq!(
            a.allocate(ip("10.97.0.1")).unwrap_err().to_string(),
            "the provided network does not match the current range"
        );
        // Network and broadcast addresses are outside the valid range.
        for bad in ["10.96.0.0", "10.96.255.255"] {
            assert_eq!(a.allocate(ip(bad)), Err(AllocationError::MismatchedNetwork));
            assert!(!a.is_allocated(ip(bad)));
            assert!(!a.release(ip(bad)));
        }
        a.allocate(ip("10.96.255.254")).unwrap();
        assert_eq!(
            a.allocate(ip("fd00::1")).unwrap_err().to_string(),
            "no service CIDR is configured for IPv6"
        );
        assert_eq!(
            a.allocate_next(IpFamily::IPv6, &mut Rng::new(0))
                .unwrap_err()
                .to_string(),
            "no service CIDR is configured for IPv6"
        );
        a.add_cidr(net("10.100.0.0/16")).unwrap();
        assert_eq!(a.allocate(ip("10.97.0.1")), Err(AllocationError::MismatchedNetwork));
        a.allocate(ip("10.100.0.1")).unwrap();
        // IPv6: the network address is invalid, the last address is usable.
        let mut v6 = allocator(&["fd00::/120"]);
        assert!(matches!(
            v6.allocate(ip("fd00::")),
            Err(AllocationError::MismatchedNetwork)
        ));
        v6.allocate(ip("fd00::ff")).unwrap();
    }

    #[test]
    fn release_frees_for_reuse() {
        let mut a = allocator(&["10.0.0.0/29"]);
        let mut rng = Rng::new(4);
        let all: Vec<IpAddr> = (0..6)
            .map(|_| a.allocate_next(IpFamily::IPv4, &mut rng).unwrap())
            .collect();
        assert_eq!(a.allocate_next(IpFamily::IPv4, &mut rng), Err(AllocationError::Full));
        assert_eq!(AllocationError::Full.to_string(), "range is full");
        assert!(a.release(all[3]));
        assert!(!a.release(all[3]));
        assert!(!a.is_allocated(all[3]));
        assert_eq!(a.allocate_next(IpFamily::IPv4, &mut rng), Ok(all[3]));
    }

    #[test]
    fn dynamic_band_first_then_static_band() {
        let mut a = allocator(&["10.0.0.0/24"]);
        let mut rng = Rng::new(8);
        let first = ip("10.0.0.1");
        a.allocate(first).unwrap();
        for _ in 0..(254 - 16) {
            let got = a.allocate_next(IpFamily::IPv4, &mut rng).unwrap();
            let IpAddr::V4(v4) = got else { panic!("IPv4 expected") };
            assert!(v4.octets()[3] >= 17, "{got} is in the static band");
        }
        let mut statics: Vec<IpAddr> = (0..15)
            .map(|_| a.allocate_next(IpFamily::IPv4, &mut rng).unwrap())
            .collect();
        crate::sort::sort(&mut statics);
        let expected: Vec<IpAddr> = (2..=16).map(|d| IpAddr::from([10, 0, 0, d])).collect();
        assert_eq!(statics, expected);
        assert_eq!(a.allocate_next(IpFamily::IPv4, &mut rng), Err(AllocationError::Full));
    }

    #[test]
    fn several_cidrs_fill_in_order() {
        let mut a = allocator(&["10.0.0.0/29", "fd00::/125", "10.0.1.0/29"]);
        let mut rng = Rng::new(2);
        let mut got: Vec<IpAddr> = (0..12)
            .map(|_| a.allocate_next(IpFamily::IPv4, &mut rng).unwrap())
            .collect();
        assert!(got[..6].iter().all(|g| net("10.0.0.0/29").contains(*g)));
        assert!(got[6..].iter().all(|g| net("10.0.1.0/29").contains(*g)));
        crate::sort::sort(&mut got);
        got.dedup();
        assert_eq!(got.len(), 12);
        assert_eq!(a.allocate_next(IpFamily::IPv4, &mut rng), Err(AllocationError::Full));
        let v6 = a.allocate_next(IpFamily::IPv6, &mut rng).unwrap();
        assert!(net("fd00::/125").contains(v6));
        // Freeing in the first CIDR makes it the one used again.
        a.release(ip("10.0.0.3"));
        assert_eq!(a.allocate_next(IpFamily::IPv4, &mut rng), Ok(ip("10.0.0.3")));
    }

    #[test]
    fn snapshot_json_and_restore() {
        let mut a = allocator(&["10.96.0.0/12", "fd00::/108"]);
        for offset in 1..=16u8 {
            a.allocate(IpAddr::from([10, 96, 0, offset])).unwrap();
        }
        a.allocate(ip("10.100.0.7")).unwrap();
        a.allocate(ip("fd00::1")).unwrap();
        a.allocate(ip("fd00::a")).unwrap();
        a.allocate(ip("fd00::b")).unwrap();
        let snapshot = a.snapshot();
        let json = serde_json::to_value(&snapshot).unwrap();
        assert_eq!(
            json,
            serde_json::json!({"ranges": [
                {"range": "10.96.0.0/12", "allocated": ["10.96.0.1-10.96.0.16", "10.100.0.7"]},
                {"range": "fd00::/108", "allocated": ["fd00::1", "fd00::a-fd00::b"]}
            ]})
        );
        let parsed: ClusterIpSnapshot = serde_json::from_value(json).unwrap();
        let mut b = allocator(&["fd00::/108", "10.96.0.0/12"]);
        b.restore(&parsed).unwrap();
        assert_eq!(b.snapshot().ranges[1], snapshot.ranges[0]);
        let mut c = allocator(&["10.96.0.0/12", "fd00::/108"]);
        c.allocate(ip("10.96.5.5")).unwrap();
        c.restore(&parsed).unwrap();
        assert_eq!(c, a);
        assert!(!c.is_allocated(ip("10.96.5.5")));
    }

    #[test]
    fn restore_rejects_other_ranges_and_bad_entries() {
        let mut a = allocator(&["10.96.0.0/12"]);
        a.allocate(ip("10.96.0.1")).unwrap();
        let before = a.clone();
        let mismatch = "the provided range does not match the current range";
        for ranges in [
            vec!["10.96.0.0/16"],
            vec![],
            vec!["10.96.0.0/12", "fd00::/108"],
            vec!["not a cidr"],
        ] {
            let snapshot = ClusterIpSnapshot {
                ranges: ranges
                    .iter()
                    .map(|r| ClusterIpRangeSnapshot {
                        range: r.to_string(),
                        allocated: vec![],
                    })
                    .collect(),
            };
            assert_eq!(a.restore(&snapshot).unwrap_err().to_string(), mismatch);
        }
        let bad = |entries: &[&str]| ClusterIpSnapshot {
            ranges: vec![ClusterIpRangeSnapshot {
                range: "10.96.0.0/12".to_string(),
                allocated: entries.iter().map(|e| e.to_string()).collect(),
            }],
        };
        for (entries, message) in [
            (
                vec!["10.96.0.0"],
                "invalid snapshot of 10.96.0.0/12: \"10.96.0.0\" is not inside the range",
            ),
            (
                vec!["10.96.0.5-10.111.255.255"],
                "invalid snapshot of 10.96.0.0/12: \"10.96.0.5-10.111.255.255\" is not inside the range",
            ),
            (
                vec!["ten"],
                "invalid snapshot of 10.96.0.0/12: \"ten\" is not an IP address or an IP range",
            ),
            (
                vec!["fd00::1"],
                "invalid snapshot of 10.96.0.0/12: \"fd00::1\" is not inside the range",
            ),
            (
                vec!["10.96.0.9-10.96.0.3"],
                "invalid snapshot of 10.96.0.0/12: \"10.96.0.9-10.96.0.3\" ends before it starts",
            ),
            (
                vec!["10.96.0.1-10.96.0.9", "10.96.0.9-10.96.0.12"],
                "invalid snapshot of 10.96.0.0/12: \"10.96.0.9-10.96.0.12\" overlaps another entry",
            ),
        ] {
            assert_eq!(a.restore(&bad(&entries)).unwrap_err().to_string(), message);
        }
        assert_eq!(a, before);
        // Non-canonical spelling of the same CIDR is accepted.
        a.restore(&ClusterIpSnapshot {
            ranges: vec![ClusterIpRangeSnapshot {
                range: "10.96.1.2/12".to_string(),
                allocated: vec!["10.96.0.3".to_string(), "10.96.0.4".to_string()],
            }],
        })
        .unwrap();
        assert_eq!(a.snapshot().ranges[0].allocated, ["10.96.0.3-10.96.0.4"]);
    }

    /// Fills `cidr` (IPv4) completely through `allocate_next`: every usable
    /// address comes out exactly once, then "range is full", and the
    /// snapshot is a single run.
    fn fill_completely(cidr: &str, seed: u64) {
        let mut a = allocator(&[cidr]);
        let mut rng = Rng::new(seed);
        let network = net(cidr);
        let base = match network.network() {
            IpAddr::V4(v4) => u32::from(v4),
            IpAddr::V6(_) => panic!("IPv4 expected"),
        };
        let addresses = 1usize << (32 - network.prefix());
        let mut seen = vec![false; addresses];
        for _ in 0..addresses - 2 {
            let IpAddr::V4(got) = a.allocate_next(IpFamily::IPv4, &mut rng).unwrap() else {
                panic!("IPv4 expected")
            };
            let index = (u32::from(got) - base) as usize;
            assert!(index != 0 && index != addresses - 1, "{got} is not usable");
            assert!(!seen[index], "{got} handed out twice");
            seen[index] = true;
        }
        assert_eq!(
            a.allocate_next(IpFamily::IPv4, &mut rng).unwrap_err().to_string(),
            "range is full"
        );
        let usage = a.usage().remove(0);
        assert_eq!((usage.used, usage.free), (addresses as u128 - 2, 0));
        let snapshot = a.snapshot();
        let expected = format!(
            "{}-{}",
            std::net::Ipv4Addr::from(base + 1),
            std::net::Ipv4Addr::from(base + addresses as u32 - 2)
        );
        assert_eq!(snapshot.ranges[0].allocated, [expected]);
    }

    #[test]
    fn full_slash_16_fill() {
        fill_completely("10.96.0.0/16", 16);
    }

    /// 1,048,574 allocations: a few seconds unoptimised.
    #[test]
    fn full_slash_12_fill() {
        fill_completely("10.96.0.0/12", 12);
    }
}
