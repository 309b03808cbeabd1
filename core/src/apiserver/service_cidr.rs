//! Service CIDR validation: the ranges ClusterIPs come from.
//!
//! This module owns what kube-apiserver checks when it reads
//! `--service-cluster-ip-range` (one CIDR, or two of different IP families
//! for dual-stack), and the per-range rules that also apply to each CIDR of a
//! ServiceCIDR object.
//!
//! Messages reuse kube-apiserver's wording. On top of what Kubernetes
//! enforces, svcnet rejects ranges that Kubernetes only documents as wrong:
//! overlapping a pod CIDR, containing a node IP, or touching the loopback,
//! link-local or multicast ranges. Those messages say so.
//!
//! Three layers, so callers can reuse the one they need:
//!
//! - [`parse_cidr`]: syntax only (`<address>/<prefix length>`).
//! - [`validate_service_cidr`]: the rules for one range; its [`CidrError`] is
//!   the detail text, without a field name, ready to go into a field error
//!   such as `spec.cidrs[0]: Invalid value: "fd00::/48": ...`.
//! - [`parse_service_cluster_ip_range`]: the whole flag; its
//!   [`ServiceCidrError`] names the flag, the entry and the value.

use crate::family::IpFamily;
use ipnetwork::IpNetwork;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};
use thiserror::Error;

/// The kube-apiserver flag this module validates.
const FLAG: &str = "--service-cluster-ip-range";

/// Addresses a service range must stay clear of, besides the fixed
/// loopback, link-local and multicast ranges. Kubernetes documents these
/// but does not enforce them; svcnet does.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct CidrConstraints {
    /// The cluster's pod CIDRs (`--cluster-cidr`); a service range must not
    /// overlap any of them.
    pub pod_cidrs: Vec<IpNetwork>,
    /// The nodes' IPs; a service range must not contain any of them.
    pub node_ips: Vec<IpAddr>,
}

/// Why `--service-cluster-ip-range` was rejected, in kube-apiserver's
/// words (the first four are its startup errors, byte for byte).
#[derive(Clone, Debug, Error, PartialEq, Eq)]
pub enum ServiceCidrError {
    /// The first entry is not a CIDR.
    #[error("service-cluster-ip-range[0] is not a valid cidr")]
    PrimaryNotCidr,
    /// The primary range holds fewer than 8 addresses.
    #[error("error determining service IP ranges for primary service cidr: the service cluster IP range must be at least 8 IP addresses")]
    PrimaryTooSmall,
    /// The second entry is not a CIDR.
    #[error("service-cluster-ip-range[1] is not an ip net")]
    SecondaryNotCidr,
    /// What kube-apiserver's flag validation found, reported together as
    /// it reports them (`[a, b]` for more than one).
    #[error("{}", aggregate(.0))]
    Flags(Vec<FlagProblem>),
    /// One entry is not an acceptable service range for svcnet (checks
    /// kube-apiserver leaves to its allocator, or only documents).
    #[error("{field} {value:?}: {problem}")]
    InvalidEntry {
        /// `--service-cluster-ip-range` for a single entry,
        /// `--service-cluster-ip-range[i]` when there are two.
        field: String,
        /// The entry, as given (trimmed).
        value: String,
        /// What is wrong with it.
        problem: CidrError,
    },
}

/// One problem kube-apiserver's validation of the flag reports.
#[derive(Clone, Copy, Debug, Error, PartialEq, Eq)]
pub enum FlagProblem {
    /// More than two comma-separated entries.
    #[error("--service-cluster-ip-range must not contain more than two entries")]
    TooManyEntries,
    /// Two entries of the same IP family (dual-stack needs one of each).
    #[error("--service-cluster-ip-range[0] and --service-cluster-ip-range[1] must be of different IP family")]
    SameFamily,
}

/// Go's aggregate error text: the one message, or `[a, b]`.
fn aggregate(problems: &[FlagProblem]) -> String {
    match problems {
        [one] => one.to_string(),
        many => format!(
            "[{}]",
            many.iter().map(ToString::to_string).collect::<Vec<_>>().join(", ")
        ),
    }
}

/// kube-apiserver's range when `--service-cluster-ip-range` is not given.
pub const DEFAULT_SERVICE_CIDR: &str = "10.0.0.0/24";

/// Why one CIDR is not an acceptable service range. The message is the
/// detail only; the caller names the field and the value (see
/// [`ServiceCidrError::InvalidEntry`]).
#[derive(Clone, Debug, Error, PartialEq, Eq)]
pub enum CidrError {
    /// Not of the form `<address>/<prefix length>`.
    #[error("must be a valid CIDR value, (e.g. 10.9.8.0/24 or 2001:db8::/64): {reason}")]
    InvalidSyntax {
        /// What part is wrong.
        reason: String,
    },
    /// The address has bits set after the prefix (`10.96.0.5/12`).
    #[error("must not have bits set beyond the prefix length")]
    HostBitsSet,
    /// An IPv4-mapped IPv6 range (`::ffff:10.96.0.0/108`).
    #[error("must not have an IPv4-mapped IPv6 address")]
    Ipv4MappedIpv6,
    /// Fewer than 8 addresses (IPv4 longer than /29, IPv6 longer than /125).
    #[error("the service cluster IP range must be at least 8 IP addresses (a /{prefix} holds {size})")]
    TooSmall {
        /// The prefix length given.
        prefix: u8,
        /// How many addresses that prefix holds (1, 2 or 4).
        size: u32,
    },
    /// An IPv6 range shorter than /64, which the ServiceCIDR allocator
    /// refuses.
    #[error("shortest allowed prefix length for service CIDR is 64")]
    Ipv6PrefixTooShort,
    /// Overlaps the loopback, link-local or multicast range (svcnet only).
    #[error("overlaps the {kind} range {range:?} (Kubernetes documents this but does not enforce it)")]
    ReservedRange {
        /// `loopback`, `link-local` or `multicast`.
        kind: &'static str,
        /// The reserved range, such as `127.0.0.0/8`.
        range: &'static str,
    },
    /// Overlaps one of the cluster's pod CIDRs (svcnet only).
    #[error("overlaps the pod CIDR \"{pod_cidr}\" (Kubernetes documents this but does not enforce it)")]
    OverlapsPodCidr {
        /// The pod CIDR it overlaps.
        pod_cidr: IpNetwork,
    },
    /// Contains one of the nodes' IPs (svcnet only).
    #[error("contains the node IP \"{node_ip}\" (Kubernetes documents this but does not enforce it)")]
    ContainsNodeIp {
        /// The node IP inside the range.
        node_ip: IpAddr,
    },
}

/// Ranges no service range may touch: (kind, range text, network address,
/// prefix length).
const RESERVED_RANGES: [(&str, &str, IpAddr, u8); 6] = [
    ("loopback", "127.0.0.0/8", v4(127, 0, 0, 0), 8),
    ("link-local", "169.254.0.0/16", v4(169, 254, 0, 0), 16),
    ("multicast", "224.0.0.0/4", v4(224, 0, 0, 0), 4),
    ("loopback", "::1/128", IpAddr::V6(Ipv6Addr::LOCALHOST), 128),
    ("link-local", "fe80::/10", v6_network(0xfe80), 10),
    ("multicast", "ff00::/8", v6_network(0xff00), 8),
];

/// The IPv4 address `a.b.c.d`.
const fn v4(a: u8, b: u8, c: u8, d: u8) -> IpAddr {
    IpAddr::V4(Ipv4Addr::new(a, b, c, d))
}

/// The IPv6 address `<first>::`.
const fn v6_network(first: u16) -> IpAddr {
    IpAddr::V6(Ipv6Addr::new(first, 0, 0, 0, 0, 0, 0, 0))
}

/// Parses and validates the value of `--service-cluster-ip-range`: one CIDR,
/// or two of different IP families separated by a comma; empty means
/// kube-apiserver's fallback, [`DEFAULT_SERVICE_CIDR`]. Returns the ranges
/// in the order given; the first is the primary range.
///
/// The checks and their order are kube-apiserver's: each entry is read
/// the way Go's `ParseCIDR` reads it (host bits are dropped: `10.96.0.5/12`
/// is `10.96.0.0/12`), the primary range must hold 8 addresses, then the
/// count and the families are validated together. svcnet then applies the
/// rules kube-apiserver leaves to its allocator or only documents
/// ([`validate_service_cidr`]): IPv6 no shorter than /64 (kube-apiserver
/// starts with such a range but can allocate nothing from it, not even the
/// `kubernetes` Service's address), at least 8 addresses in the second
/// range too, and clear of reserved ranges, pod CIDRs and node IPs.
pub fn parse_service_cluster_ip_range(
    text: &str,
    constraints: &CidrConstraints,
) -> Result<Vec<IpNetwork>, ServiceCidrError> {
    let text = match text.trim() {
        "" => DEFAULT_SERVICE_CIDR,
        t => t,
    };
    let entries: Vec<&str> = text.split(',').map(str::trim).collect();
    let sloppy = |entry: &str| parse_cidr(entry).ok().map(|c| IpNetwork::new(c.network(), c.prefix()));
    let Some(Ok(primary)) = sloppy(entries[0]) else {
        return Err(ServiceCidrError::PrimaryNotCidr);
    };
    if host_bits(primary) < 3 {
        return Err(ServiceCidrError::PrimaryTooSmall);
    }
    let mut cidrs = vec![primary];
    if let Some(entry) = entries.get(1) {
        let Some(Ok(secondary)) = sloppy(entry) else {
            return Err(ServiceCidrError::SecondaryNotCidr);
        };
        cidrs.push(secondary);
    }
    let mut problems = Vec::new();
    if entries.len() > 2 {
        problems.push(FlagProblem::TooManyEntries);
    }
    if let [first, second] = cidrs.as_slice() {
        if IpFamily::of(first.ip()) == IpFamily::of(second.ip()) {
            problems.push(FlagProblem::SameFamily);
        }
    }
    if !problems.is_empty() {
        return Err(ServiceCidrError::Flags(problems));
    }
    for (i, (cidr, entry)) in cidrs.iter().zip(&entries).enumerate() {
        validate_service_cidr(*cidr, constraints).map_err(|problem| ServiceCidrError::InvalidEntry {
            field: if entries.len() == 1 {
                FLAG.to_string()
            } else {
                format!("{FLAG}[{i}]")
            },
            value: entry.to_string(),
            problem,
        })?;
    }
    Ok(cidrs)
}

/// How many bits of the range's addresses are not fixed by its prefix.
fn host_bits(cidr: IpNetwork) -> u8 {
    let width: u8 = if cidr.is_ipv4() { 32 } else { 128 };
    width.saturating_sub(cidr.prefix())
}

/// Parses one CIDR, `<address>/<prefix length>`, checking syntax only: the
/// address must be IPv4 or IPv6, the prefix length a decimal number without
/// leading zeros that fits the family. Host bits are kept as written;
/// [`validate_service_cidr`] rejects them.
pub fn parse_cidr(text: &str) -> Result<IpNetwork, CidrError> {
    let invalid = |reason: String| CidrError::InvalidSyntax { reason };
    let Some((address_text, prefix_text)) = text.split_once('/') else {
        return Err(invalid(format!("{text:?} has no \"/\" and prefix length")));
    };
    let address: IpAddr = address_text
        .parse()
        .map_err(|_| invalid(format!("{address_text:?} is not an IPv4 or IPv6 address")))?;
    let max = match address {
        IpAddr::V4(_) => 32,
        IpAddr::V6(_) => 128,
    };
    let prefix = parse_prefix_length(prefix_text, max).ok_or_else(|| {
        invalid(format!(
            "the prefix length {prefix_text:?} is not a number from 0 to {max} without leading zeros"
        ))
    })?;
    IpNetwork::new(address, prefix).map_err(|e| invalid(e.to_string()))
}

/// A prefix length: ASCII digits, no leading zero, at most `max`.
fn parse_prefix_length(text: &str, max: u8) -> Option<u8> {
    let digits_only = !text.is_empty() && text.bytes().all(|b| b.is_ascii_digit());
    if !digits_only || (text.len() > 1 && text.starts_with('0')) {
        return None;
    }
    text.parse::<u8>().ok().filter(|prefix| *prefix <= max)
}

/// Checks that `cidr` is an acceptable service range: canonical (no host
/// bits), not IPv4-mapped, at least 8 addresses, IPv6 no shorter than /64,
/// and (svcnet only) clear of loopback, link-local, multicast, the pod CIDRs
/// and the node IPs in `constraints`. Reports the first problem found, in
/// that order.
pub fn validate_service_cidr(cidr: IpNetwork, constraints: &CidrConstraints) -> Result<(), CidrError> {
    let prefix = cidr.prefix();
    if cidr.ip() != cidr.network() {
        return Err(CidrError::HostBitsSet);
    }
    if let IpAddr::V6(address) = cidr.ip() {
        if address.to_ipv4_mapped().is_some() {
            return Err(CidrError::Ipv4MappedIpv6);
        }
    }
    let host_bits = host_bits(cidr);
    if host_bits < 3 {
        return Err(CidrError::TooSmall {
            prefix,
            size: 1 << host_bits,
        });
    }
    if cidr.is_ipv6() && prefix < 64 {
        return Err(CidrError::Ipv6PrefixTooShort);
    }
    for (kind, range, network, reserved_prefix) in RESERVED_RANGES {
        if overlaps(cidr, network, reserved_prefix) {
            return Err(CidrError::ReservedRange { kind, range });
        }
    }
    if let Some(pod_cidr) = constraints
        .pod_cidrs
        .iter()
        .find(|pod| overlaps(cidr, pod.network(), pod.prefix()))
    {
        return Err(CidrError::OverlapsPodCidr { pod_cidr: *pod_cidr });
    }
    if let Some(node_ip) = constraints.node_ips.iter().find(|ip| cidr.contains(**ip)) {
        return Err(CidrError::ContainsNodeIp { node_ip: *node_ip });
    }
    Ok(())
}

/// True when `cidr` and the range `network/prefix` share an address, that
/// is when they agree on the bits of the shorter prefix. Ranges of different
/// families never overlap.
fn overlaps(cidr: IpNetwork, network: IpAddr, prefix: u8) -> bool {
    let (a, b, width) = match (cidr.ip(), network) {
        (IpAddr::V4(a), IpAddr::V4(b)) => (u128::from(u32::from(a)), u128::from(u32::from(b)), 32),
        (IpAddr::V6(a), IpAddr::V6(b)) => (u128::from(a), u128::from(b), 128),
        _ => return false,
    };
    let shared_bits = u32::from(cidr.prefix().min(prefix));
    // A shift by the full 128 bits (two /0 ranges) would overflow: then no
    // bits are compared and the ranges overlap.
    (a ^ b).checked_shr(width - shared_bits.min(width)).unwrap_or(0) == 0
}

#[cfg(test)]
mod tests {
    use super::*;

    fn net(text: &str) -> IpNetwork {
        parse_cidr(text).unwrap()
    }

    fn flag(text: &str) -> Result<Vec<IpNetwork>, String> {
        parse_service_cluster_ip_range(text, &CidrConstraints::default()).map_err(|e| e.to_string())
    }

    fn flag_with(text: &str, constraints: &CidrConstraints) -> Result<Vec<IpNetwork>, String> {
        parse_service_cluster_ip_range(text, constraints).map_err(|e| e.to_string())
    }

    #[test]
    fn kubeadm_default_is_accepted() {
        assert_eq!(flag("10.96.0.0/12"), Ok(vec![net("10.96.0.0/12")]));
    }

    #[test]
    fn kube_apiserver_fallback_is_accepted() {
        assert_eq!(flag("10.0.0.0/24"), Ok(vec![net("10.0.0.0/24")]));
    }

    #[test]
    fn dual_stack_keeps_order_and_tolerates_whitespace() {
        assert_eq!(
            flag(" 10.96.0.0/12 , fd00:10:96::/112 "),
            Ok(vec![net("10.96.0.0/12"), net("fd00:10:96::/112")])
        );
        assert_eq!(
            flag("fd00:10:96::/112,10.96.0.0/12"),
            Ok(vec![net("fd00:10:96::/112"), net("10.96.0.0/12")])
        );
    }

    #[test]
    fn empty_falls_back_like_kube_apiserver() {
        assert_eq!(flag(""), Ok(vec![net("10.0.0.0/24")]));
        assert_eq!(flag("  "), Ok(vec![net("10.0.0.0/24")]));
    }

    #[test]
    fn three_entries_are_rejected() {
        assert_eq!(
            flag("10.96.0.0/12,fd00::/112,10.200.0.0/16"),
            Err("--service-cluster-ip-range must not contain more than two entries".to_string())
        );
        // Both problems of the validation step, as Go aggregates them.
        assert_eq!(
            flag("10.96.0.0/12,10.97.0.0/16,fd00::/112"),
            Err("[--service-cluster-ip-range must not contain more than two entries, \
                 --service-cluster-ip-range[0] and --service-cluster-ip-range[1] must be of different IP family]"
                .to_string())
        );
    }

    #[test]
    fn two_of_the_same_family_are_rejected() {
        let expected = Err(
            "--service-cluster-ip-range[0] and --service-cluster-ip-range[1] must be of different IP family"
                .to_string(),
        );
        assert_eq!(flag("10.96.0.0/12,10.200.0.0/16"), expected);
        assert_eq!(flag("fd00:1::/112,fd00:2::/112"), expected);
    }

    #[test]
    fn eight_addresses_is_the_minimum() {
        assert!(flag("10.96.0.0/29").is_ok());
        assert!(flag("fd00::/125").is_ok());
        assert_eq!(
            flag("10.96.0.0/30"),
            Err("error determining service IP ranges for primary service cidr: \
                 the service cluster IP range must be at least 8 IP addresses"
                .to_string())
        );
        assert_eq!(
            flag("10.96.0.0/12,fd00::/126"),
            Err("--service-cluster-ip-range[1] \"fd00::/126\": \
                 the service cluster IP range must be at least 8 IP addresses (a /126 holds 4)"
                .to_string())
        );
        assert_eq!(
            validate_service_cidr(net("10.96.0.1/32"), &CidrConstraints::default()),
            Err(CidrError::TooSmall { prefix: 32, size: 1 })
        );
        assert_eq!(
            validate_service_cidr(net("::1/128"), &CidrConstraints::default()),
            Err(CidrError::TooSmall { prefix: 128, size: 1 })
        );
    }

    #[test]
    fn ipv6_shorter_than_64_is_rejected() {
        assert_eq!(
            flag("10.96.0.0/12,fd00::/48"),
            Err(
                "--service-cluster-ip-range[1] \"fd00::/48\": shortest allowed prefix length for service CIDR is 64"
                    .to_string()
            )
        );
        assert!(flag("fd00::/64").is_ok());
    }

    #[test]
    fn bad_syntax_is_reported_like_kube_apiserver() {
        let primary = Err("service-cluster-ip-range[0] is not a valid cidr".to_string());
        assert_eq!(flag("10.96.0.0"), primary);
        assert_eq!(flag("10.96.0.x/12"), primary);
        assert_eq!(flag("10.96.0.0/33"), primary);
        let secondary = Err("service-cluster-ip-range[1] is not an ip net".to_string());
        assert_eq!(flag("10.96.0.0/12,"), secondary);
        assert_eq!(flag("10.96.0.0/12,fd00::"), secondary);
    }

    #[test]
    fn prefix_length_must_be_plain_decimal() {
        for bad in [
            "10.0.0.0/33",
            "10.0.0.0/",
            "10.0.0.0/012",
            "10.0.0.0/+8",
            "10.0.0.0/255.0.0.0",
            "10.0.0.0/8/8",
        ] {
            assert!(matches!(parse_cidr(bad), Err(CidrError::InvalidSyntax { .. })), "{bad}");
        }
        assert_eq!(parse_cidr("0.0.0.0/0").map(|n| n.prefix()), Ok(0));
    }

    #[test]
    fn host_bits_are_dropped_from_the_flag_and_refused_in_objects() {
        // kube-apiserver reads the flag with Go's ParseCIDR, which keeps
        // the network only; ServiceCIDR objects must be canonical.
        assert_eq!(flag("10.96.0.5/12"), Ok(vec![net("10.96.0.0/12")]));
        assert_eq!(
            validate_service_cidr(net("fd00::1/112"), &CidrConstraints::default()),
            Err(CidrError::HostBitsSet)
        );
    }

    #[test]
    fn ipv4_mapped_ipv6_is_rejected() {
        assert_eq!(
            flag("::ffff:10.96.0.0/108"),
            Err(
                "--service-cluster-ip-range \"::ffff:10.96.0.0/108\": must not have an IPv4-mapped IPv6 address"
                    .to_string()
            )
        );
    }

    #[test]
    fn overlap_with_a_pod_cidr_is_rejected() {
        let constraints = CidrConstraints {
            pod_cidrs: vec![net("10.96.0.0/16")],
            node_ips: vec![],
        };
        assert_eq!(
            flag_with("10.96.0.0/12", &constraints),
            Err(
                "--service-cluster-ip-range \"10.96.0.0/12\": overlaps the pod CIDR \"10.96.0.0/16\" \
                 (Kubernetes documents this but does not enforce it)"
                    .to_string()
            )
        );
        // A pod range that contains the service range overlaps too.
        let wide = CidrConstraints {
            pod_cidrs: vec![net("10.0.0.0/8")],
            node_ips: vec![],
        };
        assert!(flag_with("10.96.0.0/12", &wide).is_err());
        // Disjoint and other-family pod ranges are fine.
        let clear = CidrConstraints {
            pod_cidrs: vec![net("10.244.0.0/16"), net("fd00:10:96::/56")],
            node_ips: vec![],
        };
        assert!(flag_with("10.96.0.0/12", &clear).is_ok());
    }

    #[test]
    fn pod_overlap_names_the_entry_in_dual_stack() {
        let constraints = CidrConstraints {
            pod_cidrs: vec![net("fd00:10:96::/56")],
            node_ips: vec![],
        };
        assert_eq!(
            flag_with("10.96.0.0/12,fd00:10:96::/112", &constraints),
            Err(
                "--service-cluster-ip-range[1] \"fd00:10:96::/112\": overlaps the pod CIDR \"fd00:10:96::/56\" \
                 (Kubernetes documents this but does not enforce it)"
                    .to_string()
            )
        );
    }

    #[test]
    fn a_node_ip_inside_is_rejected() {
        let constraints = CidrConstraints {
            pod_cidrs: vec![],
            node_ips: vec!["10.100.0.5".parse().unwrap()],
        };
        assert_eq!(
            flag_with("10.96.0.0/12", &constraints),
            Err(
                "--service-cluster-ip-range \"10.96.0.0/12\": contains the node IP \"10.100.0.5\" \
                 (Kubernetes documents this but does not enforce it)"
                    .to_string()
            )
        );
        let outside = CidrConstraints {
            pod_cidrs: vec![],
            node_ips: vec!["192.168.1.10".parse().unwrap()],
        };
        assert!(flag_with("10.96.0.0/12", &outside).is_ok());
    }

    #[test]
    fn reserved_ranges_are_rejected() {
        let cases = [
            ("127.0.0.0/24", "loopback", "127.0.0.0/8"),
            ("169.254.0.0/24", "link-local", "169.254.0.0/16"),
            ("224.0.0.0/24", "multicast", "224.0.0.0/4"),
            ("fe80::/64", "link-local", "fe80::/10"),
            ("ff02::/64", "multicast", "ff00::/8"),
            ("::/64", "loopback", "::1/128"),
            // Any overlap counts, including a range that contains one.
            ("0.0.0.0/0", "loopback", "127.0.0.0/8"),
        ];
        for (cidr, kind, range) in cases {
            assert_eq!(
                flag(cidr),
                Err(format!(
                    "--service-cluster-ip-range \"{cidr}\": overlaps the {kind} range \"{range}\" \
                     (Kubernetes documents this but does not enforce it)"
                )),
            );
        }
    }

    #[test]
    fn rules_are_checked_after_family() {
        // Both entries are valid IPv4 but one is also too small: the family
        // problem is the one reported.
        assert!(flag("10.96.0.0/12,10.200.0.0/30")
            .unwrap_err()
            .contains("different IP family"));
    }

    #[test]
    fn validate_service_cidr_accepts_common_ranges() {
        for cidr in [
            "10.96.0.0/12",
            "10.0.0.0/24",
            "172.20.0.0/16",
            "fd00:10:96::/112",
            "2001:db8::/64",
        ] {
            assert_eq!(
                validate_service_cidr(net(cidr), &CidrConstraints::default()),
                Ok(()),
                "{cidr}"
            );
        }
    }

    proptest::proptest! {
        #[test]
        fn never_panics_on_any_text(text in "\\PC{0,40}") {
            let _ = parse_service_cluster_ip_range(&text, &CidrConstraints::default());
        }

        #[test]
        fn never_panics_on_cidr_like_text(text in "[0-9a-f:.]{0,20}(/[0-9]{0,4})?(,[0-9a-f:.]{0,20}/[0-9]{0,4}){0,3}") {
            let _ = parse_service_cluster_ip_range(&text, &CidrConstraints::default());
        }

        #[test]
        fn overlap_matches_containment(a in proptest::num::u32::ANY, pa in 0u8..=32, b in proptest::num::u32::ANY, pb in 0u8..=32) {
            let a = IpNetwork::new(IpAddr::V4(Ipv4Addr::from(a)), pa).unwrap();
            let b = IpNetwork::new(IpAddr::V4(Ipv4Addr::from(b)), pb).unwrap();
            let expected = a.contains(b.network()) || b.contains(a.network());
            proptest::prop_assert_eq!(overlaps(a, b.network(), b.prefix()), expected);
        }
    }
}
