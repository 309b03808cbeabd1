//! Property tests for the ClusterIP and NodePort allocators: random sequences
//! of allocate / allocate_next / release / snapshot+restore, checked against
//! a model `HashSet` of what should be allocated.
//!
//! Properties: nothing is handed out twice while allocated; the allocators'
//! counts match the model; `restore(snapshot(x)) == x` (allocation sets and
//! re-snapshots); the network and IPv4 broadcast addresses are never handed
//! out; and once the first address of a CIDR is allocated (as the
//! `kubernetes` Service does) no `allocate_next` ever returns it.

use ipnetwork::IpNetwork;
use proptest::prelude::*;
use std::collections::HashSet;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};
use svcnet_core::apiserver::cluster_ip::{AllocationError, ClusterIpAllocator, ClusterIpSnapshot};
use svcnet_core::apiserver::node_port::{NodePortAllocator, NodePortError, NodePortSnapshot, PortRange};
use svcnet_core::family::IpFamily;
use svcnet_core::rng::Rng;

/// Service CIDR setups: single ranges from /28 to /24, IPv6 /120, dual-stack
/// and several CIDRs per family.
const SETUPS: &[&[&str]] = &[
    &["10.0.0.0/28"],
    &["10.0.0.0/27"],
    &["10.0.0.0/24"],
    &["fd00::/120"],
    &["10.96.0.0/28", "fd00:10::/120"],
    &["fd00::/121", "10.0.0.0/28", "10.0.1.0/29", "fd00:1::/125"],
];

/// One step of a random sequence. Numbers are reduced modulo whatever they
/// index, so any value is meaningful for any setup.
#[derive(Clone, Debug)]
enum Op {
    /// `allocate_next` for the n-th configured family.
    Next(u8),
    /// `allocate` of the address at `offset` from the n-th CIDR's network
    /// address (the network and broadcast addresses included).
    Allocate(u8, u32),
    /// `allocate` of an address outside every CIDR.
    AllocateOutside(u32),
    /// `release` of the n-th allocated address (in sorted order).
    Release(u16),
    /// `release` of an arbitrary address in the n-th CIDR.
    ReleaseAny(u8, u32),
    /// Snapshot, JSON round trip, restore into a fresh allocator and carry on
    /// with the restored one.
    SnapshotRestore,
}

fn ops() -> impl Strategy<Value = Vec<Op>> {
    let op = prop_oneof![
        4 => any::<u8>().prop_map(Op::Next),
        3 => (any::<u8>(), any::<u32>()).prop_map(|(c, o)| Op::Allocate(c, o)),
        1 => any::<u32>().prop_map(Op::AllocateOutside),
        3 => any::<u16>().prop_map(Op::Release),
        1 => (any::<u8>(), any::<u32>()).prop_map(|(c, o)| Op::ReleaseAny(c, o)),
        1 => Just(Op::SnapshotRestore),
    ];
    proptest::collection::vec(op, 1..300)
}

fn to_u128(ip: IpAddr) -> u128 {
    match ip {
        IpAddr::V4(v4) => u128::from(u32::from(v4)),
        IpAddr::V6(v6) => u128::from(v6),
    }
}

fn from_u128(family: IpFamily, value: u128) -> IpAddr {
    match family {
        IpFamily::IPv4 => IpAddr::V4(Ipv4Addr::from(value as u32)),
        IpFamily::IPv6 => IpAddr::V6(Ipv6Addr::from(value)),
    }
}

/// The number of addresses in `cidr` (2^hostbits; small in these tests).
fn addresses(cidr: IpNetwork) -> u128 {
    let bits = if cidr.is_ipv4() { 32 } else { 128 };
    1 << (bits - u32::from(cidr.prefix()))
}

/// Whether `ip` may be handed out: inside `cidr`, not its network address,
/// and not its broadcast address for IPv4.
fn usable_in(cidr: IpNetwork, ip: IpAddr) -> bool {
    cidr.contains(ip) && ip != cidr.network() && !(cidr.is_ipv4() && ip == cidr.broadcast())
}

fn usable_count(cidr: IpNetwork) -> u128 {
    addresses(cidr) - if cidr.is_ipv4() { 2 } else { 1 }
}

fn cluster_ip_round_trip(allocator: &ClusterIpAllocator) -> ClusterIpAllocator {
    let snapshot = allocator.snapshot();
    let json = serde_json::to_string(&snapshot).expect("snapshot serialises");
    let parsed: ClusterIpSnapshot = serde_json::from_str(&json).expect("snapshot parses");
    let mut restored = ClusterIpAllocator::new(allocator.cidrs()).expect("same CIDRs are valid");
    restored.restore(&parsed).expect("own snapshot restores");
    assert_eq!(&restored, allocator);
    assert_eq!(restored.snapshot(), snapshot);
    restored
}

fn check_cluster_ip(setup: &[&str], seed: u64, ops: &[Op]) {
    let cidrs: Vec<IpNetwork> = setup.iter().map(|c| c.parse().expect("valid CIDR")).collect();
    let mut allocator = ClusterIpAllocator::new(cidrs.clone()).expect("valid setup");
    let families = allocator.families();
    let mut rng = Rng::new(seed);
    let mut model: HashSet<IpAddr> = HashSet::new();

    // The `kubernetes` Service takes the first address of each family's
    // first CIDR before anything else; those are never released below.
    let mut protected = HashSet::new();
    for family in &families {
        let Some(first_cidr) = cidrs.iter().find(|c| IpFamily::of(c.network()) == *family) else {
            continue;
        };
        let first = ClusterIpAllocator::first_address(*first_cidr).expect("usable CIDR");
        allocator.allocate(first).expect("first address is free");
        model.insert(first);
        protected.insert(first);
    }

    for op in ops {
        match *op {
            Op::Next(n) => {
                let family = families[usize::from(n) % families.len()];
                match allocator.allocate_next(family, &mut rng) {
                    Ok(ip) => {
                        assert_eq!(IpFamily::of(ip), family);
                        assert!(cidrs.iter().any(|c| usable_in(*c, ip)), "{ip} is not a usable address");
                        assert!(!protected.contains(&ip), "first address {ip} handed out again");
                        assert!(model.insert(ip), "{ip} handed out twice");
                    }
                    Err(AllocationError::Full) => {
                        let total: u128 = cidrs
                            .iter()
                            .filter(|c| IpFamily::of(c.network()) == family)
                            .map(|c| usable_count(*c))
                            .sum();
                        let used = model.iter().filter(|ip| IpFamily::of(**ip) == family).count();
                        assert_eq!(used as u128, total, "full before every address was used");
                    }
                    Err(other) => panic!("unexpected error {other}"),
                }
            }
            Op::Allocate(n, offset) => {
                let cidr = cidrs[usize::from(n) % cidrs.len()];
                let family = IpFamily::of(cidr.network());
                let ip = from_u128(family, to_u128(cidr.network()) + u128::from(offset) % addresses(cidr));
                let result = allocator.allocate(ip);
                if !usable_in(cidr, ip) {
                    assert!(result == Err(AllocationError::MismatchedNetwork), "{ip}: {result:?}");
                } else if model.contains(&ip) {
                    assert_eq!(result, Err(AllocationError::AlreadyAllocated));
                } else {
                    assert_eq!(result, Ok(()));
                    model.insert(ip);
                }
            }
            Op::AllocateOutside(raw) => {
                let ip = IpAddr::V4(Ipv4Addr::from(0xC000_0200 | (raw & 0xff))); // 192.0.2.x
                let result = allocator.allocate(ip);
                if families.contains(&IpFamily::IPv4) {
                    assert_eq!(result, Err(AllocationError::MismatchedNetwork));
                } else {
                    assert_eq!(result, Err(AllocationError::NoServiceCidr { family: IpFamily::IPv4 }));
                }
            }
            Op::Release(n) => {
                let mut releasable: Vec<IpAddr> = model.difference(&protected).copied().collect();
                releasable.sort();
                if !releasable.is_empty() {
                    let ip = releasable[usize::from(n) % releasable.len()];
                    assert!(allocator.release(ip), "{ip} was allocated");
                    model.remove(&ip);
                    assert!(!allocator.release(ip), "{ip} released twice");
                }
            }
            Op::ReleaseAny(n, offset) => {
                let cidr = cidrs[usize::from(n) % cidrs.len()];
                let ip = from_u128(
                    IpFamily::of(cidr.network()),
                    to_u128(cidr.network()) + u128::from(offset) % addresses(cidr),
                );
                if !protected.contains(&ip) {
                    assert_eq!(allocator.release(ip), model.remove(&ip));
                }
            }
            Op::SnapshotRestore => allocator = cluster_ip_round_trip(&allocator),
        }
        let used: u128 = allocator
            .usage()
            .iter()
            .map(|u| {
                assert_eq!(u.used + u.free, u.size);
                u.used
            })
            .sum();
        assert_eq!(used, model.len() as u128);
    }
    for ip in &model {
        assert!(allocator.is_allocated(*ip), "{ip} should be allocated");
    }
    cluster_ip_round_trip(&allocator);
}

/// Port ranges: no split (16 ports), 17 ports, a few bands' worth, the
/// default range's start.
const PORT_RANGES: &[&str] = &["30000-30015", "30000-30016", "30000-30099", "1+40", "32000-32767"];

fn node_port_round_trip(allocator: &NodePortAllocator) -> NodePortAllocator {
    let snapshot = allocator.snapshot();
    let json = serde_json::to_string(&snapshot).expect("snapshot serialises");
    let parsed: NodePortSnapshot = serde_json::from_str(&json).expect("snapshot parses");
    let mut restored = NodePortAllocator::new(allocator.range());
    restored.restore(&parsed).expect("own snapshot restores");
    assert_eq!(&restored, allocator);
    assert_eq!(restored.snapshot(), snapshot);
    restored
}

fn check_node_port(range_text: &str, seed: u64, ops: &[Op]) {
    let range: PortRange = range_text.parse().expect("valid range");
    let mut allocator = NodePortAllocator::new(range);
    let mut rng = Rng::new(seed);
    let mut model: HashSet<u16> = HashSet::new();
    let span = range.size() + 40; // ports around the range too
    let port_near = |offset: u32| -> u16 {
        let value = i64::from(range.first()) - 20 + i64::from(offset % span);
        u16::try_from(value.clamp(0, 65535)).unwrap_or(0)
    };
    for op in ops {
        match *op {
            Op::Next(_) => match allocator.allocate_next(&mut rng) {
                Ok(port) => {
                    assert!(range.contains(port), "{port} outside {range}");
                    assert!(model.insert(port), "{port} handed out twice");
                }
                Err(NodePortError::Full) => assert_eq!(model.len() as u32, range.size()),
                Err(other) => panic!("unexpected error {other}"),
            },
            Op::Allocate(_, offset) | Op::AllocateOutside(offset) => {
                let port = port_near(offset);
                let result = allocator.allocate(port);
                if !range.contains(port) {
                    assert_eq!(result, Err(NodePortError::NotInRange { range }));
                } else if model.contains(&port) {
                    assert_eq!(result, Err(NodePortError::AlreadyAllocated));
                } else {
                    assert_eq!(result, Ok(()));
                    model.insert(port);
                }
            }
            Op::Release(n) => {
                let mut allocated: Vec<u16> = model.iter().copied().collect();
                allocated.sort_unstable();
                if !allocated.is_empty() {
                    let port = allocated[usize::from(n) % allocated.len()];
                    assert!(allocator.release(port));
                    model.remove(&port);
                }
            }
            Op::ReleaseAny(_, offset) => {
                let port = port_near(offset);
                assert_eq!(allocator.release(port), model.remove(&port));
            }
            Op::SnapshotRestore => allocator = node_port_round_trip(&allocator),
        }
        let usage = allocator.usage();
        assert_eq!(usage.used as usize, model.len());
        assert_eq!(usage.used + usage.free, usage.size);
    }
    for port in &model {
        assert!(allocator.is_allocated(*port));
    }
    node_port_round_trip(&allocator);
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn cluster_ip_sequences(setup in 0..SETUPS.len(), seed in any::<u64>(), ops in ops()) {
        check_cluster_ip(SETUPS[setup], seed, &ops);
    }

    #[test]
    fn node_port_sequences(range in 0..PORT_RANGES.len(), seed in any::<u64>(), ops in ops()) {
        check_node_port(PORT_RANGES[range], seed, &ops);
    }
}

/// Random sequences rarely fill a /24; this drives each setup to full and
/// back, checking the same properties on the way.
#[test]
fn fill_and_drain_every_setup() {
    for (index, setup) in SETUPS.iter().enumerate() {
        let mut ops: Vec<Op> = (0..300).map(|i| Op::Next(i as u8)).collect();
        ops.push(Op::SnapshotRestore);
        ops.extend((0..150).map(|i| Op::Release(i * 7)));
        ops.extend((0..300).map(|i| Op::Next(i as u8)));
        check_cluster_ip(setup, index as u64, &ops);
    }
    for (index, range) in PORT_RANGES.iter().enumerate() {
        let mut ops: Vec<Op> = (0..800).map(|_| Op::Next(0)).collect();
        ops.push(Op::SnapshotRestore);
        ops.extend((0..400).map(|i| Op::Release(i * 7)));
        ops.extend((0..800).map(|_| Op::Next(0)));
        check_node_port(range, index as u64, &ops);
    }
}

/// A hand-edited or foreign snapshot entry: a run of offsets from a CIDR's
/// network address (possibly reversed, overlapping others, or past the end),
/// or text that is no address at all.
#[derive(Clone, Debug)]
enum RunText {
    Run(u32, u32),
    Single(u32),
    Garbage(String),
}

fn run_texts() -> impl Strategy<Value = Vec<RunText>> {
    let run = prop_oneof![
        4 => (0u32..40, 0u32..40).prop_map(|(a, b)| RunText::Run(a, b)),
        3 => (0u32..40).prop_map(RunText::Single),
        1 => "[-0-9a-f.:]{0,12}"
            .prop_filter("garbage must not read as a valid entry", |g| !reads_as_entry(g))
            .prop_map(RunText::Garbage),
    ];
    proptest::collection::vec(run, 0..8)
}

/// Whether `text` is a port, an address, or a run of either: such "garbage"
/// (`1` in the range 1-40) is a valid snapshot entry, not garbage.
fn reads_as_entry(text: &str) -> bool {
    let one = |t: &str| t.parse::<u32>().is_ok() || t.parse::<IpAddr>().is_ok();
    one(text) || text.split_once('-').is_some_and(|(a, b)| one(a) && one(b))
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    /// Restoring an arbitrary snapshot either fails and changes nothing, or
    /// allocates exactly the addresses the snapshot lists, whose own
    /// snapshot then restores to the same allocator.
    #[test]
    fn cluster_ip_restore_of_any_snapshot(
        setup in 0..SETUPS.len(),
        seed in any::<u64>(),
        before in 0usize..10,
        runs in proptest::collection::vec(run_texts(), 1..4),
    ) {
        let cidrs: Vec<IpNetwork> = SETUPS[setup].iter().map(|c| c.parse().unwrap()).collect();
        let mut allocator = ClusterIpAllocator::new(cidrs.clone()).unwrap();
        let mut rng = Rng::new(seed);
        for i in 0..before {
            let family = allocator.families()[i % allocator.families().len()];
            let _ = allocator.allocate_next(family, &mut rng);
        }
        let mut snapshot = allocator.snapshot();
        let mut listed: HashSet<IpAddr> = HashSet::new();
        for (range, texts) in snapshot.ranges.iter_mut().zip(runs.iter().cycle()) {
            let cidr: IpNetwork = range.range.parse().unwrap();
            let family = IpFamily::of(cidr.network());
            let at = |offset: u32| from_u128(family, to_u128(cidr.network()) + u128::from(offset) % addresses(cidr));
            range.allocated = texts
                .iter()
                .map(|t| match t {
                    RunText::Run(a, b) => {
                        let (a, b) = (at(*a), at(*b));
                        for v in to_u128(a)..=to_u128(b) {
                            listed.insert(from_u128(family, v));
                        }
                        format!("{a}-{b}")
                    }
                    RunText::Single(a) => {
                        listed.insert(at(*a));
                        at(*a).to_string()
                    }
                    RunText::Garbage(g) => g.clone(),
                })
                .collect();
        }
        let unchanged = allocator.clone();
        match allocator.restore(&snapshot) {
            Err(_) => prop_assert_eq!(&allocator, &unchanged, "a refused restore changed the allocator"),
            Ok(()) => {
                for ip in &listed {
                    prop_assert!(allocator.is_allocated(*ip), "{} listed but not allocated", ip);
                }
                let used: u128 = allocator.usage().iter().map(|u| u.used).sum();
                prop_assert_eq!(used, listed.len() as u128, "more allocated than listed");
                cluster_ip_round_trip(&allocator);
            }
        }
    }

    /// The same for NodePorts.
    #[test]
    fn node_port_restore_of_any_snapshot(
        range in 0..PORT_RANGES.len(),
        seed in any::<u64>(),
        before in 0usize..10,
        texts in run_texts(),
    ) {
        let range: PortRange = PORT_RANGES[range].parse().unwrap();
        let mut allocator = NodePortAllocator::new(range);
        let mut rng = Rng::new(seed);
        for _ in 0..before {
            let _ = allocator.allocate_next(&mut rng);
        }
        let mut snapshot = allocator.snapshot();
        let size = u32::from(range.last() - range.first()) + 1;
        let at = |offset: u32| range.first() as u32 + offset % (size + 2);
        let mut listed: HashSet<u32> = HashSet::new();
        snapshot.allocated = texts
            .iter()
            .map(|t| match t {
                RunText::Run(a, b) => {
                    listed.extend(at(*a)..=at(*b));
                    format!("{}-{}", at(*a), at(*b))
                }
                RunText::Single(a) => {
                    listed.insert(at(*a));
                    at(*a).to_string()
                }
                RunText::Garbage(g) => g.clone(),
            })
            .collect();
        let unchanged = allocator.clone();
        match allocator.restore(&snapshot) {
            Err(_) => prop_assert_eq!(&allocator, &unchanged, "a refused restore changed the allocator"),
            Ok(()) => {
                for port in &listed {
                    let port = u16::try_from(*port).unwrap();
                    prop_assert!(range.contains(port), "{} outside the range was accepted", port);
                    prop_assert!(allocator.is_allocated(port), "{} listed but not allocated", port);
                }
                prop_assert_eq!(allocator.usage().used, listed.len() as u32);
                node_port_round_trip(&allocator);
            }
        }
    }
}
