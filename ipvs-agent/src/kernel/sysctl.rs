//! The sysctls kube-proxy's IPVS mode sets, written through `/proc/sys`:
//! `net.ipv4.vs.conntrack=1` (so IPVS NAT works with conntrack and
//! masquerade rules), `net.ipv4.vs.expire_nodest_conn=1` and
//! `net.ipv4.vs.expire_quiescent_template=1` (drop connections and
//! persistence templates of deleted or drained real servers),
//! `net.ipv4.ip_forward=1`, and with strict ARP
//! `net.ipv4.conf.all.arp_ignore=1` and `arp_announce=2` (the node does not
//! answer ARP for `kube-ipvs0` addresses). [`apply_sysctls`] writes only
//! what differs and returns what it changed.

use std::fs;
use std::io;
use std::path::{Path, PathBuf};

use thiserror::Error;

/// Where sysctls live.
pub const PROC_SYS: &str = "/proc/sys";

/// One sysctl that was changed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SysctlChange {
    /// Its dotted name (`net.ipv4.vs.conntrack`).
    pub key: &'static str,
    /// What it held before.
    pub old: String,
    /// What it holds now.
    pub new: &'static str,
}

/// A sysctl that could not be read or written.
#[derive(Debug, Error)]
#[error("sysctl {key} ({}): {source}{}", path.display(), hint(key, source))]
pub struct SysctlError {
    /// Its dotted name.
    pub key: &'static str,
    /// Its file.
    pub path: PathBuf,
    /// What went wrong.
    #[source]
    pub source: io::Error,
}

fn hint(key: &str, error: &io::Error) -> &'static str {
    match error.kind() {
        io::ErrorKind::NotFound if key.starts_with("net.ipv4.vs.") => {
            " (the IPVS sysctls appear once the ip_vs module is loaded: modprobe ip_vs)"
        }
        io::ErrorKind::PermissionDenied => " (run as root)",
        _ => "",
    }
}

/// The sysctls to set, in order, as (dotted name, value).
pub fn kube_proxy_sysctls(strict_arp: bool) -> Vec<(&'static str, &'static str)> {
    let mut settings = vec![
        ("net.ipv4.vs.conntrack", "1"),
        ("net.ipv4.vs.expire_nodest_conn", "1"),
        ("net.ipv4.vs.expire_quiescent_template", "1"),
        ("net.ipv4.ip_forward", "1"),
    ];
    if strict_arp {
        settings.extend([
            ("net.ipv4.conf.all.arp_ignore", "1"),
            ("net.ipv4.conf.all.arp_announce", "2"),
        ]);
    }
    settings
}

/// The file of a dotted sysctl name under `root`.
pub fn sysctl_path(root: &Path, key: &str) -> PathBuf {
    key.split('.').fold(root.to_path_buf(), |path, part| path.join(part))
}

/// Set kube-proxy's sysctls in `/proc/sys` (strict ARP optional); returns
/// the ones that changed. Stops at the first that cannot be set.
pub fn apply_sysctls(strict_arp: bool) -> Result<Vec<SysctlChange>, SysctlError> {
    apply_sysctls_under(Path::new(PROC_SYS), &kube_proxy_sysctls(strict_arp))
}

/// [`apply_sysctls`] for any root and list (tests use a temporary folder).
pub fn apply_sysctls_under(
    root: &Path,
    settings: &[(&'static str, &'static str)],
) -> Result<Vec<SysctlChange>, SysctlError> {
    let mut changes = Vec::new();
    for &(key, value) in settings {
        let path = sysctl_path(root, key);
        let fail = |source| SysctlError {
            key,
            path: path.clone(),
            source,
        };
        let old = fs::read_to_string(&path).map_err(fail)?;
        let old = old.trim().to_owned();
        if old != value {
            fs::write(&path, format!("{value}\n")).map_err(fail)?;
            changes.push(SysctlChange { key, old, new: value });
        }
    }
    Ok(changes)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn temp_root(name: &str) -> PathBuf {
        let root = std::env::temp_dir().join(format!("svcnet-sysctl-{name}-{}", std::process::id()));
        let _ = fs::remove_dir_all(&root);
        root
    }

    fn write(root: &Path, key: &str, value: &str) {
        let path = sysctl_path(root, key);
        fs::create_dir_all(path.parent().unwrap()).unwrap();
        fs::write(path, value).unwrap();
    }

    #[test]
    fn strict_arp_is_optional() {
        assert_eq!(kube_proxy_sysctls(false).len(), 4);
        let strict = kube_proxy_sysctls(true);
        assert!(strict.contains(&("net.ipv4.conf.all.arp_ignore", "1")));
        assert!(strict.contains(&("net.ipv4.conf.all.arp_announce", "2")));
    }

    #[test]
    fn only_what_differs_is_written_and_reported() {
        let root = temp_root("differs");
        for (key, _) in kube_proxy_sysctls(true) {
            write(&root, key, "0\n");
        }
        write(&root, "net.ipv4.ip_forward", "1\n");
        let changes = apply_sysctls_under(&root, &kube_proxy_sysctls(true)).unwrap();
        let keys: Vec<_> = changes.iter().map(|c| c.key).collect();
        assert_eq!(
            keys,
            [
                "net.ipv4.vs.conntrack",
                "net.ipv4.vs.expire_nodest_conn",
                "net.ipv4.vs.expire_quiescent_template",
                "net.ipv4.conf.all.arp_ignore",
                "net.ipv4.conf.all.arp_announce"
            ]
        );
        assert_eq!(changes[0].old, "0");
        let announce = fs::read_to_string(sysctl_path(&root, "net.ipv4.conf.all.arp_announce")).unwrap();
        assert_eq!(announce, "2\n");
        assert!(apply_sysctls_under(&root, &kube_proxy_sysctls(true))
            .unwrap()
            .is_empty());
        fs::remove_dir_all(root).unwrap();
    }

    #[test]
    fn a_missing_ipvs_sysctl_says_to_load_ip_vs() {
        let root = temp_root("missing");
        let error = apply_sysctls_under(&root, &kube_proxy_sysctls(false)).unwrap_err();
        assert_eq!(error.key, "net.ipv4.vs.conntrack");
        assert!(error.to_string().contains("modprobe ip_vs"), "{error}");
    }
}
