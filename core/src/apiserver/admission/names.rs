//! Name checks: DNS-1035 labels, RFC 1123 labels and subdomains, IANA
//! service (port) names, IP addresses, with Kubernetes' messages.

use std::net::IpAddr;

const DNS1035_MSG: &str = "a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an alphabetic character, and end with an alphanumeric character (e.g. 'my-name',  or 'abc-123', regex used for validation is '[a-z]([-a-z0-9]*[a-z0-9])?')";
const DNS1123_LABEL_MSG: &str = "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')";
const DNS1123_SUBDOMAIN_MSG: &str = "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')";

/// The IP address example Kubernetes quotes.
pub const IP_MSG: &str = "must be a valid IP address, (e.g. 10.9.8.7 or 2001:db8::ffff)";

fn is_lower_alnum(c: char) -> bool {
    c.is_ascii_lowercase() || c.is_ascii_digit()
}

fn label_chars_ok(s: &str) -> bool {
    !s.is_empty()
        && s.chars().all(|c| is_lower_alnum(c) || c == '-')
        && s.chars().next().is_some_and(is_lower_alnum)
        && s.chars().last().is_some_and(is_lower_alnum)
}

/// Problems with `s` as a DNS-1035 label (Service names), empty if valid.
pub fn dns1035_label(s: &str) -> Vec<String> {
    let mut errs = Vec::new();
    if s.len() > 63 {
        errs.push("must be no more than 63 characters".to_string());
    }
    if !(label_chars_ok(s) && s.chars().next().is_some_and(|c| c.is_ascii_lowercase())) {
        errs.push(DNS1035_MSG.to_string());
    }
    errs
}

/// Problems with `s` as an RFC 1123 label (namespaces, port names).
pub fn dns1123_label(s: &str) -> Vec<String> {
    let mut errs = Vec::new();
    if s.len() > 63 {
        errs.push("must be no more than 63 characters".to_string());
    }
    if !label_chars_ok(s) {
        errs.push(DNS1123_LABEL_MSG.to_string());
    }
    errs
}

/// Problems with `s` as an RFC 1123 subdomain (ExternalName targets).
pub fn dns1123_subdomain(s: &str) -> Vec<String> {
    let mut errs = Vec::new();
    if s.len() > 253 {
        errs.push("must be no more than 253 characters".to_string());
    }
    if s.is_empty() || !s.split('.').all(label_chars_ok) {
        errs.push(DNS1123_SUBDOMAIN_MSG.to_string());
    }
    errs
}

/// Problems with `s` as an IANA service name (a named `targetPort`).
pub fn iana_svc_name(s: &str) -> Vec<String> {
    let mut errs = Vec::new();
    if s.len() > 15 {
        errs.push("must be no more than 15 characters".to_string());
    }
    if !s.chars().all(|c| is_lower_alnum(c) || c == '-') {
        errs.push("must contain only alpha-numeric characters (a-z, 0-9), and hyphens (-)".to_string());
    }
    if s.contains("--") {
        errs.push("must not contain consecutive hyphens".to_string());
    }
    if !s.chars().any(|c| c.is_ascii_lowercase()) {
        errs.push("must contain at least one letter (a-z)".to_string());
    }
    if s.starts_with('-') || s.ends_with('-') {
        errs.push("must not begin or end with a hyphen".to_string());
    }
    errs
}

/// Parses an IP address the strict way Kubernetes now does (no leading
/// zeros, no IPv4-mapped surprises beyond what std accepts).
pub fn parse_ip(s: &str) -> Option<IpAddr> {
    s.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn labels() {
        assert!(dns1035_label("my-svc").is_empty());
        assert!(!dns1035_label("1svc").is_empty());
        assert!(!dns1035_label("My").is_empty());
        assert!(dns1123_label("1svc").is_empty());
        assert!(!dns1123_label("-a").is_empty());
        assert_eq!(
            dns1035_label(&"a".repeat(64)),
            vec!["must be no more than 63 characters".to_string()]
        );
        assert!(dns1123_subdomain("db.example.com").is_empty());
        assert!(!dns1123_subdomain("db..example.com").is_empty());
    }

    #[test]
    fn iana_names() {
        assert!(iana_svc_name("http").is_empty());
        assert!(iana_svc_name("metrics-8080").is_empty());
        assert_eq!(
            iana_svc_name("8080"),
            vec!["must contain at least one letter (a-z)".to_string()]
        );
        assert_eq!(
            iana_svc_name("a--b"),
            vec!["must not contain consecutive hyphens".to_string()]
        );
        assert_eq!(iana_svc_name("averyveryverylongname").len(), 1);
    }
}
