//! What the node's CNI plugins do for a new Pod, as far as Services care:
//! the host-local IPAM plugin giving it an address from the Node's pod
//! CIDR, one per family.
//!
//! host-local's order: the range starts at the subnet's `.2` (the `.1` is
//! the bridge's gateway) and ends before the IPv4 broadcast address (the
//! last address of an IPv6 subnet is usable). It remembers the last
//! address it gave per range and starts after it, wrapping at the end, so
//! an address just freed is not given again at once; addresses in use are
//! skipped. A full range gives nothing. The cursors are part of the
//! control plane's state, keyed by Node and range.

use crate::collections::{SortedMap, SortedSet};
use ipnetwork::IpNetwork;
use serde::{Deserialize, Serialize};
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

/// The first usable offset in a range: `.0` is the network, `.1` the
/// gateway.
const FIRST_OFFSET: u128 = 2;

/// host-local's state on every Node: the last address given per range.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct HostLocalIpam {
    /// Node name -> range (`10.244.1.0/24`) -> last address given.
    last_reserved: SortedMap<String, SortedMap<String, IpAddr>>,
}

impl HostLocalIpam {
    /// The next free address of `range` on `node` after the last one
    /// given, skipping `in_use`; `None` when every address is in use.
    pub fn allocate(&mut self, node: &str, range: IpNetwork, in_use: &SortedSet<IpAddr>) -> Option<IpAddr> {
        let (first, last) = usable(range)?;
        let base = to_u128(range.network());
        let cursor = self
            .last_reserved
            .get(node)
            .and_then(|ranges| ranges.get(&range.to_string()))
            .map(|ip| to_u128(*ip).wrapping_sub(base))
            .filter(|offset| (first..=last).contains(offset));
        let start = match cursor {
            Some(offset) if offset < last => offset + 1,
            _ => first,
        };
        let total = last - first + 1;
        let used = in_use.iter().filter(|ip| range.contains(**ip)).count();
        // At most `used` candidates in a row are taken, so this many
        // tries find a free address when there is one.
        let tries = total.min(u128::try_from(used).unwrap_or(u128::MAX).saturating_add(1));
        let ip = (0..tries)
            .map(|i| first + step(start - first, i, total))
            .map(|offset| from_u128(range, base + offset))
            .find(|ip| !in_use.contains(ip))?;
        self.last_reserved
            .entry(node.to_string())
            .or_default()
            .insert(range.to_string(), ip);
        Some(ip)
    }

    /// Forgets the cursors of Nodes not in `nodes`.
    pub fn retain_nodes(&mut self, nodes: &SortedSet<&str>) {
        self.last_reserved.retain(|node, _| nodes.contains(node.as_str()));
    }
}

/// `(position + i) % total` for `position` and `i` below `total`,
/// without overflowing when the range spans most of `u128`.
fn step(position: u128, i: u128, total: u128) -> u128 {
    let sum = position.wrapping_add(i);
    if sum < position || sum >= total {
        sum.wrapping_sub(total)
    } else {
        sum
    }
}

/// The first and last usable offsets of `range`, if it has any.
fn usable(range: IpNetwork) -> Option<(u128, u128)> {
    let (bits, v4) = match range {
        IpNetwork::V4(_) => (32u32, true),
        IpNetwork::V6(_) => (128u32, false),
    };
    let host_bits = bits.saturating_sub(u32::from(range.prefix()));
    let broadcast = if host_bits >= 128 {
        u128::MAX
    } else {
        (1u128 << host_bits) - 1
    };
    let last = if v4 { broadcast.checked_sub(1)? } else { broadcast };
    (last >= FIRST_OFFSET).then_some((FIRST_OFFSET, last))
}

fn to_u128(ip: IpAddr) -> u128 {
    match ip {
        IpAddr::V4(a) => u128::from(u32::from(a)),
        IpAddr::V6(a) => u128::from(a),
    }
}

fn from_u128(range: IpNetwork, n: u128) -> IpAddr {
    match range {
        // Offsets stay inside the IPv4 range, so the value fits in 32 bits.
        IpNetwork::V4(_) => IpAddr::V4(Ipv4Addr::from(u32::try_from(n).unwrap_or(u32::MAX))),
        IpNetwork::V6(_) => IpAddr::V6(Ipv6Addr::from(n)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ip(s: &str) -> IpAddr {
        s.parse().unwrap()
    }

    #[test]
    fn starts_at_two_skips_what_is_in_use_and_moves_on() {
        let range: IpNetwork = "10.244.1.0/24".parse().unwrap();
        let mut ipam = HostLocalIpam::default();
        let mut used = SortedSet::new();
        assert_eq!(ipam.allocate("n1", range, &used), Some(ip("10.244.1.2")));
        used.insert(ip("10.244.1.2"));
        used.insert(ip("10.244.1.3"));
        assert_eq!(ipam.allocate("n1", range, &used), Some(ip("10.244.1.4")));
        // .2 is freed: the cursor moves on instead of giving it again.
        used.remove(&ip("10.244.1.2"));
        used.insert(ip("10.244.1.4"));
        assert_eq!(ipam.allocate("n1", range, &used), Some(ip("10.244.1.5")));
        // Each node has its own cursor.
        assert_eq!(ipam.allocate("n2", range, &used), Some(ip("10.244.1.2")));
    }

    #[test]
    fn wraps_never_gives_the_broadcast_and_reports_a_full_range() {
        let range: IpNetwork = "10.0.0.0/29".parse().unwrap();
        let mut ipam = HostLocalIpam::default();
        let mut used = SortedSet::new();
        let mut given = Vec::new();
        while let Some(a) = ipam.allocate("n", range, &used) {
            used.insert(a);
            given.push(a.to_string());
        }
        assert_eq!(given, ["10.0.0.2", "10.0.0.3", "10.0.0.4", "10.0.0.5", "10.0.0.6"]);
        used.remove(&ip("10.0.0.3"));
        assert_eq!(ipam.allocate("n", range, &used), Some(ip("10.0.0.3")), "wrapped");
        let tiny: IpNetwork = "10.0.0.0/31".parse().unwrap();
        assert_eq!(ipam.allocate("n", tiny, &SortedSet::new()), None);
    }

    #[test]
    fn ipv6_ranges_use_their_last_address_and_huge_ones_stay_cheap() {
        let range: IpNetwork = "fd00::/126".parse().unwrap();
        let mut ipam = HostLocalIpam::default();
        let used: SortedSet<IpAddr> = [ip("fd00::2")].into();
        assert_eq!(ipam.allocate("n", range, &used), Some(ip("fd00::3")));
        let all: IpNetwork = "::/0".parse().unwrap();
        assert_eq!(ipam.allocate("n", all, &SortedSet::new()), Some(ip("::2")));
        ipam.retain_nodes(&SortedSet::new());
        assert_eq!(ipam, HostLocalIpam::default());
    }
}
