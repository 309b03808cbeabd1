//! The order `ipvsadm -Ln` and `ipvsadm-save -n` list a table in.
//!
//! `ipvsadm` (1.31, as Debian 12 ships it; the comparators are those of
//! libipvs, `ipvs_cmp_services` and `ipvs_cmp_dests`) sorts the services the
//! kernel dumps with `qsort`, comparing fwmark, then address family
//! (`AF_INET` 2 before `AF_INET6` 10), then protocol (TCP 6, UDP 17, SCTP
//! 132), then address, then port; and each service's real servers by
//! address, then port. Every field is compared by subtracting it as an
//! `int`. For family, protocol and port that is the plain ascending order.
//! Addresses are compared as 32-bit words, `(int)(ntohl(a) - ntohl(b))`: an
//! IPv4 address is one word, an IPv6 address four, the first unequal one
//! deciding (not `memcmp`). That subtraction wraps: word `a` comes before
//! word `b` when `b - a`, modulo 2^32, is between 1 and 2^31, so 192.168.0.10
//! (0xc0a8000a) comes before 10.96.0.1 (0x0a600001), and `fd00::` before
//! `2001:db8::`.
//!
//! What is reproduced exactly: the words compared at one level (the IPv4
//! addresses of one family-and-protocol group of virtual servers; the first
//! words of its IPv6 addresses, then the second words of the addresses that
//! share a first word, and so on; the same for the real servers of one
//! virtual server) usually all lie in a window `[s, s + 2^31 - 1]` going
//! round the circle of 2^32 values. Then the comparison is a total order on
//! them, ascending from `s`, and every correct sort (glibc's merge sort,
//! musl's smoothsort) prints that order whatever order the kernel dumped in.
//! `s` is the word after the largest gap between neighbouring words round
//! the circle, which is then the only gap wider than 2^31. ClusterIPs of one
//! Service CIDR, node IPs and the usual external addresses fit (10.x,
//! 172.16-31.x and 192.168.x do).
//!
//! Where it can differ: when the words of one level fit no such window (for
//! example 10.0.0.1, 100.0.0.1, 172.16.0.1 and 192.168.0.1 together: every
//! gap is below 2^31, so the comparison goes round in a cycle), no order
//! agrees with every comparison and what `ipvsadm` prints depends on the
//! order the kernel dumps in (its hash table, which mixes in the network
//! namespace's address in memory) and on the C library's sort. svcnet still
//! starts after the largest gap (the wrap-around gap, which gives the plain
//! numeric order, winning ties), which agrees with every comparison of
//! words less than 2^31 apart in that order. Not modelled either: fwmark
//! services (svcnet has none; `ipvsadm` lists those with a mark below 2^31
//! after the others) and real servers of another family than their virtual
//! server (svcnet lists IPv4 ones first; `ipvsadm`'s comparison is only
//! meaningful within one family).
//!
//! `tests/vm/agent.sh` (scenarios a and dual-stack) and `tests/vm/kernel.sh`
//! compare this order with the real `ipvsadm-save -n` byte for byte.

use super::table::{IpvsTable, RealServer, VirtualServer, VirtualServerKey};
use std::net::{IpAddr, SocketAddr};

/// The virtual servers of `table`, in the order `ipvsadm` lists them.
pub fn virtual_servers(table: &IpvsTable) -> Vec<(&VirtualServerKey, &VirtualServer)> {
    let mut list: Vec<_> = table.virtual_servers.iter().collect();
    // The numeric order first (the map's own; sorting sorted input is a
    // linear pass), so each family-and-protocol group is one run.
    crate::sort::sort_by_key(&mut list, |(k, _)| {
        (k.address.is_ipv6(), k.protocol.number(), k.address, k.port)
    });
    for group in
        list.chunk_by_mut(|(a, _), (b, _)| a.address.is_ipv6() == b.address.is_ipv6() && a.protocol == b.protocol)
    {
        order_level(group, 0, &|(k, _)| k.address);
    }
    list
}

/// The real servers of `server`, in the order `ipvsadm` lists them.
pub fn real_servers(server: &VirtualServer) -> Vec<(&SocketAddr, &RealServer)> {
    let mut list: Vec<_> = server.real_servers.iter().collect();
    crate::sort::sort_by_key(&mut list, |(a, _)| (a.ip(), a.port()));
    for family in list.chunk_by_mut(|(a, _), (b, _)| a.is_ipv6() == b.is_ipv6()) {
        order_level(family, 0, &|(a, _)| a.ip());
    }
    list
}

/// Reorders `items` (of one family, sorted by address and then port) by
/// `ipvsadm`'s comparison of address word `level` and the words after it.
fn order_level<T>(items: &mut [T], level: usize, address: &impl Fn(&T) -> IpAddr) {
    if items.len() < 2 {
        return;
    }
    // Runs of items with the same word: contiguous, as items are sorted.
    let mut runs: Vec<(usize, u32)> = Vec::new();
    for (i, item) in items.iter().enumerate() {
        // Past the last word: one address, its ports already ascending.
        let Some(w) = word(address(item), level) else {
            return;
        };
        if runs.last().is_none_or(|&(_, last)| last != w) {
            runs.push((i, w));
        }
    }
    for (k, &(start, _)) in runs.iter().enumerate() {
        let end = runs.get(k + 1).map_or(items.len(), |&(next, _)| next);
        order_level(&mut items[start..end], level + 1, address);
    }
    let words: Vec<u32> = runs.iter().map(|&(_, w)| w).collect();
    if let Some(&(start, _)) = runs.get(first_word(&words)) {
        items.rotate_left(start);
    }
}

/// Word `level` (0 first) of an address as `ntohl` reads it; `None` past
/// the last (IPv4 has one word, IPv6 four).
fn word(address: IpAddr, level: usize) -> Option<u32> {
    match address {
        IpAddr::V4(v4) => (level == 0).then(|| u32::from(v4)),
        IpAddr::V6(v6) => {
            let segments = v6.segments();
            let high = *segments.get(2 * level)?;
            let low = *segments.get(2 * level + 1)?;
            Some(u32::from(high) << 16 | u32::from(low))
        }
    }
}

/// The index in `words` (distinct, ascending) of the one `ipvsadm` puts
/// first: the one after the largest gap round the circle of 2^32 values.
/// The wrap-around gap (from the last word to the first) wins ties.
fn first_word(words: &[u32]) -> usize {
    let (Some(&first), Some(&last)) = (words.first(), words.last()) else {
        return 0;
    };
    let mut best = ((1u64 << 32) + u64::from(first) - u64::from(last), 0);
    for (i, pair) in words.windows(2).enumerate() {
        let gap = u64::from(pair[1].wrapping_sub(pair[0]));
        if gap > best.0 {
            best = (gap, i + 1);
        }
    }
    best.1
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::proxy::scheduler::Scheduler;
    use crate::proxy::table::{Flags, Protocol, VirtualServerSettings};
    use crate::rng::Rng;
    use std::net::{Ipv4Addr, Ipv6Addr};

    /// `ipvs_cmp_services` for services without a fwmark, as ipvsadm 1.31
    /// computes it.
    fn cmp_services(a: &VirtualServerKey, b: &VirtualServerKey) -> i32 {
        let af = |k: &VirtualServerKey| if k.address.is_ipv6() { 10 } else { 2 };
        let r = af(a) - af(b);
        if r != 0 {
            return r;
        }
        let r = i32::from(a.protocol.number()) - i32::from(b.protocol.number());
        if r != 0 {
            return r;
        }
        let r = cmp_addresses(a.address, b.address);
        if r != 0 {
            return r;
        }
        i32::from(a.port) - i32::from(b.port)
    }

    /// `ipvs_cmp_dests`.
    fn cmp_dests(a: &SocketAddr, b: &SocketAddr) -> i32 {
        let r = cmp_addresses(a.ip(), b.ip());
        if r != 0 {
            return r;
        }
        i32::from(a.port()) - i32::from(b.port())
    }

    /// `(int)(ntohl(a) - ntohl(b))`, word by word.
    fn cmp_addresses(a: IpAddr, b: IpAddr) -> i32 {
        for level in 0..4 {
            let (Some(x), Some(y)) = (word(a, level), word(b, level)) else {
                break;
            };
            let r = x.wrapping_sub(y) as i32;
            if r != 0 {
                return r;
            }
        }
        0
    }

    /// glibc's `qsort` (`msort_with_tmp`): top-down merge sort, the first
    /// half `n / 2` long, taking from it while `cmp <= 0`.
    fn glibc_qsort<T: Copy>(items: &mut [T], cmp: &impl Fn(&T, &T) -> i32) {
        if items.len() < 2 {
            return;
        }
        let (b1, b2) = items.split_at_mut(items.len() / 2);
        glibc_qsort(b1, cmp);
        glibc_qsort(b2, cmp);
        let mut merged = Vec::with_capacity(b1.len() + b2.len());
        let (mut i, mut j) = (0, 0);
        while i < b1.len() && j < b2.len() {
            if cmp(&b1[i], &b2[j]) <= 0 {
                merged.push(b1[i]);
                i += 1;
            } else {
                merged.push(b2[j]);
                j += 1;
            }
        }
        merged.extend_from_slice(&b1[i..]);
        merged.extend_from_slice(&b2[j..]);
        items.copy_from_slice(&merged);
    }

    fn shuffle<T>(items: &mut [T], rng: &mut Rng) {
        for i in (1..items.len()).rev() {
            items.swap(i, rng.below(i as u128 + 1) as usize);
        }
    }

    fn empty_server() -> VirtualServer {
        VirtualServer {
            settings: VirtualServerSettings {
                scheduler: Scheduler::Rr,
                flags: Flags::NONE,
                timeout: 0,
                netmask: 0,
            },
            real_servers: Default::default(),
        }
    }

    fn table(keys: &[VirtualServerKey]) -> IpvsTable {
        let mut table = IpvsTable::new();
        for key in keys {
            table.virtual_servers.insert(*key, empty_server());
        }
        table
    }

    fn keys_of(table: &IpvsTable) -> Vec<VirtualServerKey> {
        virtual_servers(table).into_iter().map(|(k, _)| *k).collect()
    }

    fn key(text: &str) -> VirtualServerKey {
        text.parse().expect("key")
    }

    #[test]
    fn the_node_ip_before_cluster_ips_as_in_the_vm() {
        let keys = [
            "TCP/10.96.0.1:443",
            "TCP/10.96.0.10:53",
            "TCP/192.168.0.10:31846",
            "UDP/10.96.0.10:53",
            "TCP/[fd00:10:96::a]:53",
            "TCP/[2001:db8::10]:30080",
        ]
        .map(key);
        let order: Vec<String> = keys_of(&table(&keys)).iter().map(|k| k.to_string()).collect();
        assert_eq!(
            order,
            [
                "TCP/192.168.0.10:31846",
                "TCP/10.96.0.1:443",
                "TCP/10.96.0.10:53",
                "UDP/10.96.0.10:53",
                "TCP/[fd00:10:96::a]:53",
                "TCP/[2001:db8::10]:30080",
            ]
        );
    }

    /// `n` words from a random window `[base, base + span - 1]` (mod 2^32),
    /// `span` at most 2^31: any two are less than 2^31 apart.
    fn window_words(rng: &mut Rng, n: usize) -> Vec<u32> {
        let base = rng.next_u64() as u32;
        let span = 1 + rng.below(1 << 31); // 1..=2^31
        (0..n).map(|_| base.wrapping_add(rng.below(span) as u32)).collect()
    }

    #[test]
    fn equals_glibc_qsort_whatever_the_dump_order_when_the_addresses_fit_a_window() {
        let mut rng = Rng::new(11);
        for round in 0..300 {
            let n = 1 + round % 40;
            let mut keys: Vec<VirtualServerKey> = window_words(&mut rng, n)
                .into_iter()
                .map(|a| {
                    let protocol = [Protocol::Tcp, Protocol::Udp, Protocol::Sctp][rng.below(3) as usize];
                    VirtualServerKey::new(protocol, IpAddr::V4(Ipv4Addr::from(a)), rng.below(4) as u16)
                })
                .collect();
            // IPv6: a few first words, shared prefixes, each level in a window.
            let first = window_words(&mut rng, 3);
            let second = window_words(&mut rng, 3);
            let fourth = window_words(&mut rng, 3);
            for _ in 0..n {
                let w0 = first[rng.below(3) as usize];
                let w1 = second[rng.below(3) as usize];
                let w3 = fourth[rng.below(3) as usize];
                let bits = u128::from(w0) << 96 | u128::from(w1) << 64 | u128::from(w3);
                keys.push(VirtualServerKey::new(
                    Protocol::Tcp,
                    IpAddr::V6(Ipv6Addr::from(bits)),
                    80,
                ));
            }
            let table = table(&keys);
            let ours = keys_of(&table);
            let mut dumped: Vec<VirtualServerKey> = table.virtual_servers.keys().copied().collect();
            for _ in 0..3 {
                shuffle(&mut dumped, &mut rng);
                let mut sorted = dumped.clone();
                glibc_qsort(&mut sorted, &|a, b| cmp_services(a, b));
                assert_eq!(ours, sorted, "round {round}");
            }
        }
    }

    #[test]
    fn real_servers_equal_glibc_qsort_when_the_addresses_fit_a_window() {
        let mut rng = Rng::new(5);
        for round in 0..300 {
            let mut server = empty_server();
            for a in window_words(&mut rng, 1 + round % 30) {
                let addr = SocketAddr::new(IpAddr::V4(Ipv4Addr::from(a)), 8080 + rng.below(3) as u16);
                server.real_servers.insert(addr, RealServer::masq(1));
            }
            let ours: Vec<SocketAddr> = real_servers(&server).into_iter().map(|(a, _)| *a).collect();
            let mut dumped: Vec<SocketAddr> = server.real_servers.keys().copied().collect();
            shuffle(&mut dumped, &mut rng);
            glibc_qsort(&mut dumped, &|a, b| cmp_dests(a, b));
            assert_eq!(ours, dumped, "round {round}");
        }
    }

    #[test]
    fn without_a_window_the_largest_gap_still_decides() {
        // 10, 100, 172, 192: every gap is below 2^31, so ipvsadm's
        // comparison is a cycle and its output depends on the dump order.
        let keys = [
            "TCP/10.0.0.1:80",
            "TCP/100.0.0.1:80",
            "TCP/172.16.0.1:80",
            "TCP/192.168.0.1:80",
        ]
        .map(key);
        let mut outputs = std::collections::BTreeSet::new();
        let mut dumped = keys.to_vec();
        let mut rng = Rng::new(3);
        for _ in 0..50 {
            shuffle(&mut dumped, &mut rng);
            let mut sorted = dumped.clone();
            glibc_qsort(&mut sorted, &|a, b| cmp_services(a, b));
            outputs.insert(sorted);
        }
        assert!(outputs.len() > 1, "the dump order matters here");
        // svcnet: the largest gap is 10 -> 100 (0x5a000000), so 100 first.
        let order: Vec<String> = keys_of(&table(&keys)).iter().map(|k| k.to_string()).collect();
        assert_eq!(
            order,
            [
                "TCP/100.0.0.1:80",
                "TCP/172.16.0.1:80",
                "TCP/192.168.0.1:80",
                "TCP/10.0.0.1:80"
            ]
        );
    }

    #[test]
    fn first_word_after_the_largest_gap() {
        assert_eq!(first_word(&[]), 0);
        assert_eq!(first_word(&[7]), 0);
        assert_eq!(first_word(&[0x0a60_0001, 0xc0a8_000a]), 1);
        assert_eq!(first_word(&[0x0a60_0001, 0x0a60_000a]), 0);
        // Exactly 2^31 apart both ways: a tie, the numeric order.
        assert_eq!(first_word(&[0, 0x8000_0000]), 0);
        assert_eq!(first_word(&[0, 0x8000_0001]), 1);
    }

    #[test]
    fn ipv6_words_in_ntohl_order() {
        let a: Ipv6Addr = "fd00:10:96::a".parse().expect("addr");
        assert_eq!(word(IpAddr::V6(a), 0), Some(0xfd00_0010));
        assert_eq!(word(IpAddr::V6(a), 1), Some(0x0096_0000));
        assert_eq!(word(IpAddr::V6(a), 3), Some(0x0000_000a));
        assert_eq!(word(IpAddr::V6(a), 4), None);
        assert_eq!(word(IpAddr::V4(Ipv4Addr::new(10, 96, 0, 1)), 0), Some(0x0a60_0001));
        assert_eq!(word(IpAddr::V4(Ipv4Addr::new(10, 96, 0, 1)), 1), None);
    }
}
