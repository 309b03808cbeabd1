//! Name checks: RFC 1123 labels and subdomains, IANA
//! service (port) names, qualified names (label keys) and label values, IP
//! addresses, with Kubernetes' messages.

use std::net::IpAddr;

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

/// Problems with `s` as an RFC 1123 label (Service names, namespaces,
/// port names).
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

const LABEL_KEY_MSG: &str = "must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')";
const LABEL_VALUE_MSG: &str = "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')";

/// `([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]`, the name part of a label key.
fn label_key_name_ok(s: &str) -> bool {
    let alnum = |c: char| c.is_ascii_alphanumeric();
    s.chars().next().is_some_and(alnum)
        && s.chars().last().is_some_and(alnum)
        && s.chars().all(|c| alnum(c) || matches!(c, '-' | '_' | '.'))
}

/// Problems with `s` as a qualified name: a label key, an annotation key
/// (lower-cased first), `appProtocol`, `loadBalancerClass`.
pub fn qualified_name(s: &str) -> Vec<String> {
    let parts: Vec<&str> = s.split('/').collect();
    let mut errs = Vec::new();
    let name = match parts.as_slice() {
        [name] => *name,
        [prefix, name] => {
            if prefix.is_empty() {
                errs.push("prefix part must be non-empty".to_string());
            } else {
                errs.extend(dns1123_subdomain(prefix).into_iter().map(|m| format!("prefix part {m}")));
            }
            *name
        }
        _ => {
            return vec![format!(
                "a valid label key {LABEL_KEY_MSG} with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')"
            )]
        }
    };
    if name.is_empty() {
        errs.push("name part must be non-empty".to_string());
    } else if name.len() > 63 {
        errs.push("name part must be no more than 63 characters".to_string());
    }
    if !label_key_name_ok(name) {
        errs.push(format!("name part {LABEL_KEY_MSG}"));
    }
    errs
}

/// Problems with `s` as a label value (empty is fine).
pub fn label_value(s: &str) -> Vec<String> {
    let mut errs = Vec::new();
    if s.len() > 63 {
        errs.push("must be no more than 63 bytes".to_string());
    }
    if !s.is_empty() && !label_key_name_ok(s) {
        errs.push(LABEL_VALUE_MSG.to_string());
    }
    errs
}

/// Parses an IP address the strict way Kubernetes now does (no leading
/// zeros, no IPv4-mapped surprises beyond what std accepts).
pub fn parse_ip(s: &str) -> Option<IpAddr> {
    s.parse().ok()
}

/// Why an address may not be an endpoint or an external IP.
pub fn special_ip(ip: IpAddr) -> Vec<String> {
    let mut msgs = Vec::new();
    if ip.is_unspecified() {
        msgs.push(format!("may not be unspecified ({ip})"));
    }
    if ip.is_loopback() {
        msgs.push("may not be in the loopback range (127.0.0.0/8, ::1/128)".to_string());
    }
    let (link_local, link_local_multicast) = match ip {
        IpAddr::V4(v4) => (v4.is_link_local(), v4.octets()[..3] == [224, 0, 0]),
        IpAddr::V6(v6) => (v6.segments()[0] & 0xffc0 == 0xfe80, v6.segments()[0] & 0xff0f == 0xff02),
    };
    if link_local {
        msgs.push("may not be in the link-local range (169.254.0.0/16, fe80::/10)".to_string());
    }
    if link_local_multicast {
        msgs.push("may not be in the link-local multicast range (224.0.0.0/24, ff02::/10)".to_string());
    }
    msgs
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn qualified_names_and_label_values() {
        assert!(qualified_name("app").is_empty());
        assert!(qualified_name("example.com/App_1").is_empty());
        assert_eq!(qualified_name("-bad"), vec![format!("name part {LABEL_KEY_MSG}")]);
        assert_eq!(qualified_name("/x"), vec!["prefix part must be non-empty".to_string()]);
        assert!(qualified_name("a/b/c")[0].starts_with("a valid label key must consist"));
        assert!(label_value("").is_empty());
        assert!(label_value("v1.2_x").is_empty());
        assert_eq!(label_value("no spaces"), vec![LABEL_VALUE_MSG.to_string()]);
    }

    #[test]
    fn labels() {
        assert!(dns1123_label("my-svc").is_empty());
        assert!(dns1123_label("1svc").is_empty());
        assert!(!dns1123_label("My").is_empty());
        assert!(!dns1123_label("-a").is_empty());
        assert_eq!(
            dns1123_label(&"a".repeat(64)),
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
