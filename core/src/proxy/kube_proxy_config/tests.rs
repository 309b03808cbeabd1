//! Expected texts are what kube-proxy v1.37.2 printed for the same files
//! (`kube-proxy --config FILE`); the conformance suite checks them against
//! the real binary too.

use super::*;

const HEAD: &str = "apiVersion: kubeproxy.config.k8s.io/v1alpha1\nkind: KubeProxyConfiguration\n";

fn error(body: &str) -> String {
    read(&format!("{HEAD}{body}")).unwrap_err().to_string()
}

#[test]
fn an_empty_configuration_gets_kube_proxys_defaults() {
    let read = read(&format!("{HEAD}mode: ipvs\n")).unwrap();
    let s = read.settings;
    assert_eq!(s.scheduler, "rr");
    assert_eq!(s.sync_period_nanos, 30 * SECOND);
    assert_eq!(s.min_sync_period_nanos, 0);
    assert_eq!(s.healthz_bind_address, "0.0.0.0:10256".parse().unwrap());
    assert_eq!(s.metrics_bind_address, "127.0.0.1:10249".parse().unwrap());
    assert!(read.warnings.is_empty());
}

#[test]
fn ipvs_fields_are_read() {
    let body = "mode: ipvs\nhostnameOverride: node-a\nclientConnection: {kubeconfig: /etc/kube/proxy.conf}\nipvs: {scheduler: wrr, syncPeriod: 1m, minSyncPeriod: 2s, excludeCIDRs: [10.1.0.0/16], strictARP: true, tcpTimeout: 900s, tcpFinTimeout: 120s, udpTimeout: 300s}\nhealthzBindAddress: 127.0.0.1\nmetricsBindAddress: \"[::1]:10249\"\nnodePortAddresses: [192.168.0.0/24]\n";
    let s = read(&format!("{HEAD}{body}")).unwrap().settings;
    assert_eq!(s.hostname_override.as_deref(), Some("node-a"));
    assert_eq!(s.kubeconfig.as_deref(), Some("/etc/kube/proxy.conf"));
    assert_eq!((s.scheduler.as_str(), s.strict_arp), ("wrr", true));
    assert_eq!(s.exclude_cidrs, vec!["10.1.0.0/16".parse::<IpNetwork>().unwrap()]);
    assert_eq!(
        (s.sync_period_nanos, s.min_sync_period_nanos),
        (60 * SECOND, 2 * SECOND)
    );
    assert_eq!(s.ipvs_timeouts_nanos, [900 * SECOND, 120 * SECOND, 300 * SECOND]);
    assert_eq!(
        s.healthz_bind_address,
        "127.0.0.1:10256".parse().unwrap(),
        "the port appended"
    );
    assert_eq!(s.node_port_addresses, ["192.168.0.0/24"]);
}

#[test]
fn invalid_values_are_named_as_kube_proxy_names_them() {
    let body = "mode: ipvs\nipvs:\n  scheduler: rr\n  excludeCIDRs: [\"10.0.0.0/33\"]\n  tcpTimeout: -1s\nhealthzBindAddress: \"0.0.0.0:99999\"\nmetricsBindAddress: \"nope\"\nnodePortAddresses: [\"primary\", \"bogus\"]\ndetectLocalMode: Whatever\nclusterCIDR: 10.244.0.0/16\n";
    assert_eq!(
        error(body),
        "failed validate: [KubeProxyConfiguration.KubeProxyIPVSConfiguration.TCPTimeout: Invalid value: \"-1s\": must be greater than or equal to 0, KubeProxyConfiguration.KubeProxyIPVSConfiguration.ExcludeCidrs[0]: Invalid value: \"10.0.0.0/33\": must be a valid CIDR, KubeProxyConfiguration.HealthzBindAddress: Invalid value: \"99999\": must be a valid port, KubeProxyConfiguration.MetricsBindAddress: Invalid value: \"nope\": must be IP:port, KubeProxyConfiguration.NodePortAddresses[1]: Invalid value: \"bogus\": must be a valid CIDR or one of the keywords 'primary', 'localhost', 'all', KubeProxyConfiguration.DetectLocalMode: Unsupported value: \"Whatever\": supported values: \"ClusterCIDR\", \"NodeCIDR\", \"BridgeInterface\", \"InterfaceNamePrefix\", \"\"]"
    );
    assert_eq!(
        error("mode: bogus\nbindAddress: nope\nconntrack: {min: -1}\n"),
        "failed validate: [KubeProxyConfiguration.KubeProxyLinuxConfiguration.KubeProxyConntrackConfiguration.Min: Invalid value: -1: must be greater than or equal to 0, KubeProxyConfiguration.Mode.ProxyMode: Invalid value: \"bogus\": must be iptables, ipvs, nftables or blank (blank means the best-available proxy [currently iptables]), KubeProxyConfiguration.BindAddress: Invalid value: \"nope\": not a valid textual representation of an IP address]"
    );
    assert_eq!(
        error("mode: ipvs\nnodePortAddresses: [primary, primary, 10.0.0.0/8]\ndetectLocalMode: BridgeInterface\n"),
        "failed validate: [KubeProxyConfiguration.NodePortAddresses[1]: Duplicate value: \"primary\", KubeProxyConfiguration.DetectLocalConfiguration.InterfaceName: Invalid value: \"\": must not be empty]"
    );
    assert_eq!(
        error("mode: ipvs\nipvs: {syncPeriod: 10s, minSyncPeriod: 1m}\n"),
        "failed validate: KubeProxyConfiguration.SyncPeriod: Invalid value: \"1m0s\": must be greater than or equal to KubeProxyConfiguration.MinSyncPeriod"
    );
}

#[test]
fn undecodable_files_are_refused_in_kube_proxys_words() {
    assert_eq!(
        error("mode: ipvs\nipvs: {syncPeriod: 5x}\n"),
        "failed complete: failed to decode: time: unknown unit \"x\" in duration \"5x\""
    );
    assert_eq!(
        error("mode: ipvs\nipvs: {strictARP: \"yes\"}\n"),
        "failed complete: failed to decode: json: cannot unmarshal string into Go struct field KubeProxyIPVSConfiguration.ipvs.strictARP of type bool"
    );
    assert_eq!(
        read("apiVersion: kubeproxy.config.k8s.io/v1alpha1\nkind: Wrong\n").unwrap_err().to_string(),
        "failed complete: failed to decode: no kind \"Wrong\" is registered for version \"kubeproxy.config.k8s.io/v1alpha1\" in scheme \"pkg/runtime/scheme.go:111\""
    );
}

#[test]
fn unknown_and_unused_fields_are_reported_not_fatal() {
    let got = read(&format!(
        "{HEAD}mode: ipvs\nunknownField: 3\nipvs: {{scheduler: rr, typo: 1}}\niptables: {{masqueradeAll: true}}\nclusterCIDR: 10.244.0.0/16\n"
    ))
    .unwrap();
    assert_eq!(
        got.warnings,
        ["strict decoding error: unknown field \"ipvs.typo\", unknown field \"unknownField\" (ignored, as kube-proxy ignores them)"]
    );
    let got = read(&format!(
        "{HEAD}mode: ipvs\nnftables: {{masqueradeAll: true}}\nconntrack: {{udpTimeout: 30s}}\n"
    ))
    .unwrap();
    assert_eq!(
        got.warnings,
        [
            "conntrack.udpTimeout: accepted but not used by svcnet",
            "nftables.masqueradeAll: accepted but not used by svcnet",
        ],
        "nftables.masqueradeAll is for kube-proxy's nftables mode"
    );
    assert!(!got.settings.masquerade_all);
}

#[test]
fn cluster_cidrs_and_masquerade_all_feed_the_nftables_rules() {
    let cidrs = |list: &[&str]| list.iter().map(|c| c.parse::<IpNetwork>().unwrap()).collect::<Vec<_>>();
    // kube-proxy takes an unset detectLocalMode for ClusterCIDR.
    for mode in ["", "detectLocalMode: ClusterCIDR\n"] {
        let got = read(&format!(
            "{HEAD}mode: ipvs\n{mode}clusterCIDR: 10.244.0.0/16,fd00:10:244::/56\niptables: {{masqueradeAll: true}}\n"
        ))
        .unwrap();
        assert!(got.warnings.is_empty(), "{mode}: {:?}", got.warnings);
        assert_eq!(
            got.settings.cluster_cidrs,
            cidrs(&["10.244.0.0/16", "fd00:10:244::/56"]),
            "{mode}"
        );
        assert!(got.settings.masquerade_all, "{mode}");
    }
    let defaults = read(&format!("{HEAD}mode: ipvs\n")).unwrap().settings;
    assert!(defaults.cluster_cidrs.is_empty() && !defaults.masquerade_all);

    // Another way of telling local traffic: svcnet has none, and says so.
    let got = read(&format!(
        "{HEAD}mode: ipvs\ndetectLocalMode: NodeCIDR\nclusterCIDR: 10.244.0.0/16\n"
    ))
    .unwrap();
    assert!(got.settings.cluster_cidrs.is_empty());
    assert_eq!(
        got.warnings,
        [
            "clusterCIDR: accepted but not used by svcnet",
            "detectLocalMode: accepted but not used by svcnet",
        ]
    );
}

#[test]
fn a_bad_cluster_cidr_is_refused_naming_it_even_with_detect_local_mode_unset() {
    // kube-proxy validates clusterCIDR only when detectLocalMode is set to
    // ClusterCIDR (and skips a bad one when it is unset); svcnet feeds it to
    // the masquerade rules either way, so it refuses a bad one either way.
    let want = "failed validate: KubeProxyConfiguration.DetectLocalConfiguration.ClusterCIDRs[0]: Invalid value: \"10.244.0.0\": must be a valid CIDR block (e.g. 10.100.0.0/16 or fde4:8dba:82e1::/48)";
    assert_eq!(error("mode: ipvs\nclusterCIDR: 10.244.0.0\n"), want);
    assert_eq!(
        error("mode: ipvs\ndetectLocalMode: ClusterCIDR\nclusterCIDR: 10.244.0.0\n"),
        want
    );
    assert!(error("mode: ipvs\nclusterCIDR: 10.244.0.0/16,10.245.0.0/16\n")
        .starts_with("failed validate: KubeProxyConfiguration.DetectLocalConfiguration.ClusterCIDRs: Invalid value: "));
}

#[test]
fn modes_other_than_ipvs_are_refused_naming_the_field() {
    assert_eq!(
        error("mode: nftables\n"),
        "mode: Invalid value: \"nftables\": svcnet programs kube-proxy's IPVS mode only: use \"ipvs\" or leave it blank"
    );
}
