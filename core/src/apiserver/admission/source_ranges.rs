//! `spec.loadBalancerSourceRanges` and its older annotation
//! `service.beta.kubernetes.io/load-balancer-source-ranges`: which of the
//! two counts, where they are allowed, and the CIDR check kube-apiserver
//! (v1.37, `StrictIPCIDRValidation` on) applies to these legacy fields.
//!
//! The CIDR check has two stages, as in Kubernetes. The value must first
//! parse the lenient way CIDRs always did (an address, a `/`, a decimal
//! prefix length; leading zeros tolerated), else it is "not a valid CIDR".
//! It is then refused, with a message of its own, for leading zeros, for an
//! IPv4-mapped IPv6 address and for bits set past the prefix length. A
//! value an update keeps unchanged from the stored object is not checked
//! again, so objects stored before the stricter rules stay writable.

use crate::api::service::{types, Service};
use crate::field::{FieldError, FieldPath};
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

/// The annotation that stood in for the field before it existed.
pub const SOURCE_RANGES_ANNOTATION: &str = "service.beta.kubernetes.io/load-balancer-source-ranges";
const CIDR_MSG: &str = "must be a valid CIDR value, (e.g. 10.9.8.0/24 or 2001:db8::/64)";
const LEADING_ZEROS_MSG: &str = "must not have leading 0s in IP or prefix length";
const MAPPED_MSG: &str = "must not have an IPv4-mapped IPv6 address";
const HOST_BITS_MSG: &str = "must not have bits set beyond the prefix length";
const LB_ONLY: &str = "may only be used when `type` is 'LoadBalancer'";

/// The field, or else the annotation: LoadBalancer only, each entry a
/// CIDR (surrounding whitespace allowed). Entries an update keeps are not
/// checked again; nor is an annotation the update leaves as it was.
pub fn validate_source_ranges(svc: &Service, old: Option<&Service>, errs: &mut Vec<FieldError>) {
    let lb = svc.service_type() == types::LOAD_BALANCER;
    if !svc.spec.load_balancer_source_ranges.is_empty() {
        // kube-apiserver names the field with a capital L here.
        let path = FieldPath::new("spec").child("LoadBalancerSourceRanges");
        if !lb {
            errs.push(FieldError::forbidden(&path, LB_ONLY));
        }
        let kept: Vec<&str> = old
            .map(|o| o.spec.load_balancer_source_ranges.iter().map(|r| r.trim()).collect())
            .unwrap_or_default();
        for (i, value) in svc.spec.load_balancer_source_ranges.iter().enumerate() {
            let value = value.trim();
            if !kept.contains(&value) {
                if let Some(msg) = legacy_cidr_problem(value) {
                    errs.push(FieldError::invalid(&path.index(i), value, msg));
                }
            }
        }
    } else if let Some(value) = svc.metadata.annotations.get(SOURCE_RANGES_ANNOTATION) {
        let path = FieldPath::new("metadata")
            .child("annotations")
            .key(SOURCE_RANGES_ANNOTATION);
        if !lb {
            errs.push(FieldError::forbidden(&path, LB_ONLY));
        }
        let unchanged = old.is_some_and(|o| o.metadata.annotations.get(SOURCE_RANGES_ANNOTATION) == Some(value));
        let value = value.trim();
        if !unchanged && !value.is_empty() {
            for cidr in value.split(',').map(str::trim) {
                if let Some(msg) = legacy_cidr_problem(cidr) {
                    errs.push(FieldError::invalid(&path, cidr, msg));
                }
            }
        }
    }
}

/// Why `value` is not acceptable as a source range, or `None`.
pub fn legacy_cidr_problem(value: &str) -> Option<&'static str> {
    let Some(cidr) = LenientCidr::parse(value) else {
        return Some(CIDR_MSG);
    };
    if cidr.leading_zeros {
        return Some(LEADING_ZEROS_MSG);
    }
    if let IpAddr::V6(v6) = cidr.addr {
        if v6.to_ipv4_mapped().is_some() {
            return Some(MAPPED_MSG);
        }
    }
    if host_bits_set(cidr.addr, cidr.prefix) {
        return Some(HOST_BITS_MSG);
    }
    None
}

/// A CIDR read the lenient way, remembering whether it needed leniency.
struct LenientCidr {
    addr: IpAddr,
    prefix: u32,
    leading_zeros: bool,
}

impl LenientCidr {
    /// An address, `/`, a decimal prefix length no longer than the
    /// address. Zones are not allowed; decimal parts may carry leading
    /// zeros (recorded, and read as decimal).
    fn parse(value: &str) -> Option<LenientCidr> {
        let (addr, prefix) = value.split_once('/')?;
        let (prefix, prefix_zeros) = decimal(prefix)?;
        let (addr, addr_zeros) = match lenient_ipv4(addr) {
            Some((v4, zeros)) => (IpAddr::V4(v4), zeros),
            None => {
                let (v6, zeros) = lenient_ipv6(addr)?;
                (IpAddr::V6(v6), zeros)
            }
        };
        let bits = if addr.is_ipv4() { 32 } else { 128 };
        (prefix <= bits).then_some(LenientCidr {
            addr,
            prefix,
            leading_zeros: prefix_zeros || addr_zeros,
        })
    }
}

/// A run of ASCII digits as a number (saturating), and whether it has a
/// leading zero. `None` for an empty or non-digit string.
fn decimal(s: &str) -> Option<(u32, bool)> {
    if s.is_empty() || !s.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let n = s
        .bytes()
        .fold(0u32, |n, b| n.saturating_mul(10).saturating_add(u32::from(b - b'0')));
    Some((n, s.len() > 1 && s.starts_with('0')))
}

/// Dotted decimal with four parts, each at most 255, leading zeros
/// allowed.
fn lenient_ipv4(s: &str) -> Option<(Ipv4Addr, bool)> {
    let mut octets = [0u8; 4];
    let mut zeros = false;
    let mut parts = s.split('.');
    for octet in &mut octets {
        let (n, z) = decimal(parts.next()?)?;
        *octet = u8::try_from(n).ok()?;
        zeros |= z;
    }
    parts.next().is_none().then_some((Ipv4Addr::from(octets), zeros))
}

/// An IPv6 address as the standard library reads it, except that an
/// embedded IPv4 tail may carry leading zeros.
fn lenient_ipv6(s: &str) -> Option<(Ipv6Addr, bool)> {
    if let Ok(v6) = s.parse() {
        return Some((v6, false));
    }
    let (head, tail) = s.rsplit_once(':')?;
    let (v4, zeros) = lenient_ipv4(tail)?;
    let v6 = format!("{head}:{v4}").parse().ok()?;
    Some((v6, zeros))
}

/// True when `addr` has a one bit past the first `prefix` bits.
fn host_bits_set(addr: IpAddr, prefix: u32) -> bool {
    let (bits, width) = match addr {
        IpAddr::V4(v4) => (u128::from(u32::from(v4)), 32),
        IpAddr::V6(v6) => (u128::from(v6), 128),
    };
    let host = width - prefix;
    // A zero-length prefix leaves every bit to the host; `checked_shl`
    // covers the shift by 128.
    let host_mask = 1u128.checked_shl(host).map_or(u128::MAX, |b| b - 1);
    bits & host_mask != 0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn accepted_values() {
        for ok in [
            "10.0.0.0/8",
            "0.0.0.0/0",
            "192.168.1.7/32",
            "2001:db8::/64",
            "::/0",
            "2001:DB8::/32",
            "::1.2.3.0/120",
        ] {
            assert_eq!(legacy_cidr_problem(ok), None, "{ok}");
        }
    }

    #[test]
    fn not_a_cidr_at_all() {
        for bad in [
            "10.0.0.0",
            "10.0.0.0/",
            "10.0.0.0/33",
            "10.0.0.256/8",
            "10.0.0/8",
            "bogus",
            "",
            "10.0.0.0/+8",
            "fe80::1%eth0/64",
            "2001:db8::/129",
            "1.2.3.4.5/32",
        ] {
            assert_eq!(legacy_cidr_problem(bad), Some(CIDR_MSG), "{bad}");
        }
    }

    #[test]
    fn lenient_but_not_strict() {
        assert_eq!(legacy_cidr_problem("010.0.0.0/8"), Some(LEADING_ZEROS_MSG));
        assert_eq!(legacy_cidr_problem("10.0.0.0/08"), Some(LEADING_ZEROS_MSG));
        assert_eq!(legacy_cidr_problem("::ffff:010.1.2.0/120"), Some(LEADING_ZEROS_MSG));
        assert_eq!(legacy_cidr_problem("::ffff:10.1.2.0/120"), Some(MAPPED_MSG));
        assert_eq!(legacy_cidr_problem("10.0.0.1/8"), Some(HOST_BITS_MSG));
        assert_eq!(legacy_cidr_problem("2001:db8::1/64"), Some(HOST_BITS_MSG));
        assert_eq!(legacy_cidr_problem("1.2.3.4/0"), Some(HOST_BITS_MSG));
        assert_eq!(legacy_cidr_problem("::1/0"), Some(HOST_BITS_MSG));
    }

    #[test]
    fn host_bits() {
        assert!(!host_bits_set("10.0.0.0".parse().unwrap(), 8));
        assert!(host_bits_set("10.0.0.1".parse().unwrap(), 31));
        assert!(!host_bits_set("10.0.0.1".parse().unwrap(), 32));
        assert!(!host_bits_set("::".parse().unwrap(), 0));
        assert!(host_bits_set("8000::".parse().unwrap(), 0));
    }

    use crate::api::{parse_manifests, Object};
    use crate::apiserver::admission::{default_service, validate_service, validate_service_update};

    fn svc(spec: &str, annotation: Option<&str>) -> Service {
        let meta = match annotation {
            Some(a) => format!("{{name: lb, annotations: {{{SOURCE_RANGES_ANNOTATION}: \"{a}\"}}}}"),
            None => "{name: lb}".to_string(),
        };
        let yaml = format!("apiVersion: v1\nkind: Service\nmetadata: {meta}\nspec: {spec}\n");
        match parse_manifests(&yaml).unwrap().remove(0) {
            Object::Service(mut s) => {
                default_service(&mut s);
                *s
            }
            other => panic!("not a service: {other:?}"),
        }
    }

    fn create(spec: &str, annotation: Option<&str>) -> Vec<String> {
        validate_service(&svc(spec, annotation))
            .iter()
            .map(ToString::to_string)
            .collect()
    }

    #[test]
    fn field_on_a_load_balancer_with_padding() {
        let spec =
            "{type: LoadBalancer, loadBalancerSourceRanges: [' 10.0.0.0/8', '2001:db8::/64  '], ports: [{port: 80}]}";
        assert!(create(spec, None).is_empty());
    }

    #[test]
    fn field_errors_in_order_with_trimmed_values() {
        let spec = "{loadBalancerSourceRanges: [' 10.0.0.1/8', ok, '10.0.0.0/8'], ports: [{port: 80}]}";
        assert_eq!(
            create(spec, None),
            vec![
                "spec.LoadBalancerSourceRanges: Forbidden: may only be used when `type` is 'LoadBalancer'",
                "spec.LoadBalancerSourceRanges[0]: Invalid value: \"10.0.0.1/8\": must not have bits set beyond the prefix length",
                "spec.LoadBalancerSourceRanges[1]: Invalid value: \"ok\": must be a valid CIDR value, (e.g. 10.9.8.0/24 or 2001:db8::/64)",
            ]
        );
    }

    #[test]
    fn annotation_checked_only_without_the_field() {
        let lb = "{type: LoadBalancer, ports: [{port: 80}]}";
        assert!(create(lb, Some(" 10.0.0.0/8 , 192.168.0.0/16")).is_empty());
        assert!(create(lb, Some("  ")).is_empty());
        assert_eq!(
            create(lb, Some("10.0.0.0/8,bogus, 010.0.0.0/8")),
            vec![
                format!("metadata.annotations[{SOURCE_RANGES_ANNOTATION}]: Invalid value: \"bogus\": {CIDR_MSG}"),
                format!("metadata.annotations[{SOURCE_RANGES_ANNOTATION}]: Invalid value: \"010.0.0.0/8\": {LEADING_ZEROS_MSG}"),
            ]
        );
        let with_field = "{type: LoadBalancer, loadBalancerSourceRanges: [10.0.0.0/8], ports: [{port: 80}]}";
        assert!(create(with_field, Some("bogus")).is_empty());
        assert_eq!(
            create("{ports: [{port: 80}]}", Some("")),
            vec![format!(
                "metadata.annotations[{SOURCE_RANGES_ANNOTATION}]: Forbidden: {LB_ONLY}"
            )]
        );
    }

    #[test]
    fn updates_keep_values_stored_before_strict_checks() {
        let old = svc(
            "{type: LoadBalancer, loadBalancerSourceRanges: ['10.0.0.1/8'], ports: [{port: 80}]}",
            Some("010.0.0.0/8"),
        );
        let new = svc(
            "{type: LoadBalancer, loadBalancerSourceRanges: [' 10.0.0.1/8', '10.0.0.2/8'], ports: [{port: 80}]}",
            None,
        );
        let errs: Vec<String> = validate_service_update(&new, &old)
            .iter()
            .map(ToString::to_string)
            .collect();
        assert_eq!(
            errs,
            vec![format!(
                "spec.LoadBalancerSourceRanges[1]: Invalid value: \"10.0.0.2/8\": {HOST_BITS_MSG}"
            )]
        );
        let lb = "{type: LoadBalancer, ports: [{port: 80}]}";
        let old = svc(lb, Some("010.0.0.0/8"));
        assert!(validate_service_update(&svc(lb, Some("010.0.0.0/8")), &old).is_empty());
        assert_eq!(validate_service_update(&svc(lb, Some("010.0.0.0/8 ")), &old).len(), 1);
    }
}
