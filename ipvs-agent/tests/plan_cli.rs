//! The real `ipvs-agent` binary run on the repository's examples: `plan` in
//! every format, the help, and how bad flags, manifests and state files are
//! reported (one `error:` line naming file, document and field; status 3,
//! also for a state file others may write; bad flags: status 2).

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

fn agent(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_ipvs-agent"))
        .args(args)
        .current_dir(root())
        .output()
        .expect("the binary runs")
}

fn stdout(out: &Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

const EXAMPLES: [&str; 4] = ["--manifests", "examples", "--node-name", "node-a"];

fn plan(format: &str, extra: &[&str]) -> Output {
    let mut args = vec!["plan", "--format", format];
    args.extend(EXAMPLES);
    args.extend(extra);
    agent(&args)
}

#[test]
fn ipvsadm_save_of_the_examples_matches_the_golden_file() {
    let out = plan("ipvsadm-save", &[]);
    assert!(out.status.success(), "{}", stderr(&out));
    let golden = std::fs::read_to_string(root().join("ipvs-agent/tests/golden/examples.ipvsadm-save")).unwrap();
    assert_eq!(stdout(&out), golden);
    assert!(golden.contains("-A -u 10.96.0.10:53 -s rr\n-a -u 10.96.0.10:53 -r 10.244.1.5:53 -m -w 1\n"));
    assert!(
        golden.contains("-A -t 192.168.0.10:"),
        "a NodePort on the Node object's address"
    );
}

#[test]
fn json_has_services_slices_virtual_servers_and_addresses() {
    let out = plan("json", &[]);
    assert!(out.status.success(), "{}", stderr(&out));
    let json: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let keys: Vec<&String> = json.as_object().unwrap().keys().collect();
    assert_eq!(keys, ["addresses", "endpointSlices", "services", "virtualServers"]);
    let services = json["services"].as_array().unwrap();
    assert!(services
        .iter()
        .any(|s| s["metadata"]["name"] == "kubernetes" && s["spec"]["clusterIP"] == "10.96.0.1"));
    assert!(json["addresses"].as_array().unwrap().iter().any(|a| a == "10.96.0.10"));
    assert!(json["virtualServers"]
        .as_object()
        .unwrap()
        .contains_key("UDP/10.96.0.10:53"));
}

#[test]
fn dns_and_table_formats() {
    let dns = plan("dns", &[]);
    assert!(dns.status.success(), "{}", stderr(&dns));
    assert!(
        stdout(&dns).contains("kube-dns.kube-system.svc.cluster.local."),
        "{}",
        stdout(&dns)
    );
    let table = plan("table", &[]);
    let text = stdout(&table);
    assert!(table.status.success(), "{}", stderr(&table));
    for want in [
        "kubectl get services -A",
        "ipvsadm -Ln",
        "TCP  10.96.0.10:53 rr",
        "Addresses on kube-ipvs0:\n  10.96.0.1\n",
    ] {
        assert!(text.contains(want), "{want:?} missing from\n{text}");
    }
    let default = agent(&["plan", "--manifests", "examples", "--node-name", "node-a"]);
    assert_eq!(stdout(&default), text, "table is the default");
}

#[test]
fn nft_of_the_examples_matches_the_golden_file() {
    let out = plan("nft", &["--cluster-cidr", "10.244.0.0/16"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let golden = std::fs::read_to_string(root().join("ipvs-agent/tests/golden/examples.nft")).unwrap();
    assert_eq!(stdout(&out), golden);
    for want in [
        "table inet svcnet {\n",
        // CoreDNS on node-a reaching itself through kube-dns.
        "10.244.1.5 . udp . 53 . 10.244.1.5",
        "ip saddr != 10.244.0.0/16 ip daddr . meta l4proto . th dport @cluster-ips-v4 jump mark-for-masquerade",
        "type nat hook postrouting priority srcnat; policy accept;",
    ] {
        assert!(golden.contains(want), "{want:?} missing from\n{golden}");
    }
    let all = stdout(&plan("nft", &["--masquerade-all"]));
    assert!(all.contains("\t\tip daddr . meta l4proto . th dport @cluster-ips-v4 jump mark-for-masquerade\n"));
    let none = stdout(&plan("nft", &[]));
    assert!(none.contains("\t\tip saddr . meta l4proto . th dport @cluster-ips-v4 jump mark-for-masquerade\n"));
}

#[test]
fn node_ip_flags_move_the_node_ports() {
    let out = plan(
        "ipvsadm-save",
        &["--node-ip", "192.0.2.10", "--node-ip", "2001:db8::10"],
    );
    let text = stdout(&out);
    assert!(text.contains("-A -t 192.0.2.10:"), "{text}");
    assert!(!text.contains("192.168.0.10"), "{text}");
}

#[test]
fn a_bad_manifest_is_one_error_line_with_file_document_and_field() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("services.yaml");
    let good = std::fs::read_to_string(root().join("examples/services.yaml")).unwrap();
    std::fs::write(
        &file,
        good.replace("port: 80, targetPort: 8080", "port: 0, targetPort: 8080"),
    )
    .unwrap();
    let out = agent(&["plan", "--manifests", file.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(3));
    assert_eq!(
        stderr(&out),
        format!(
            "error: {}: document 2 (Service default/web): spec.ports[0].port: Invalid value: 0: must be between 1 and 65535, inclusive\n",
            file.display()
        )
    );
    assert!(out.stdout.is_empty());
}

#[test]
fn a_corrupt_state_file_is_an_error_not_a_reset() {
    let dir = tempfile::tempdir().unwrap();
    let state = dir.path().join("state.json");
    std::fs::write(&state, "{\"config\":").unwrap();
    let out = agent(&["plan", "--state-file", state.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(3));
    let err = stderr(&out);
    assert!(
        err.starts_with(&format!(
            "error: state file {}: not a valid svcnet state file",
            state.display()
        )),
        "{err}"
    );
    assert_eq!(
        std::fs::read_to_string(&state).unwrap(),
        "{\"config\":",
        "left as it was"
    );
}

#[test]
fn a_state_file_others_may_write_is_refused_with_status_3() {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    let state = dir.path().join("state.json");
    std::fs::write(&state, "{}").unwrap();
    std::fs::set_permissions(&state, std::fs::Permissions::from_mode(0o666)).unwrap();
    let out = agent(&["plan", "--state-file", state.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(3));
    let err = stderr(&out);
    assert!(
        err.starts_with(&format!(
            "error: state file {}: mode 0666 lets group or others write it; refusing it (expected: mode 0600;",
            state.display()
        )),
        "{err}"
    );
}

#[test]
fn plan_never_writes_the_state_file() {
    let dir = tempfile::tempdir().unwrap();
    let state = dir.path().join("state.json");
    let out = plan("ipvsadm-save", &["--state-file", state.to_str().unwrap()]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(!state.exists());
}

#[test]
fn bad_flags_name_the_flag_and_value_with_status_2() {
    let out = agent(&["run", "--sync-period", "often"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).contains("invalid value 'often' for '--sync-period <DURATION>'"),
        "{}",
        stderr(&out)
    );
    let out = agent(&["plan", "--service-cluster-ip-range", "10.96.0.0/12,10.100.0.0/16"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).contains("'10.96.0.0/12,10.100.0.0/16' for '--service-cluster-ip-range"),
        "{}",
        stderr(&out)
    );
}

#[test]
fn help_teaches() {
    let out = agent(&["--help"]);
    let text = stdout(&out);
    assert!(out.status.success());
    for want in [
        "ClusterIP",
        "virtual server",
        "kube-ipvs0",
        "Examples:",
        "plan",
        "run",
        "cleanup",
    ] {
        assert!(text.contains(want), "{want} missing from\n{text}");
    }
    let run = stdout(&agent(&["run", "--help"]));
    for want in [
        "--once",
        "--min-sync-period",
        "[default: 1s]",
        "--drain-timeout",
        "[default: 127.0.0.1:10249]",
    ] {
        assert!(run.contains(want), "{want} missing from\n{run}");
    }
}

#[test]
fn a_deeply_nested_manifest_is_refused_fast_with_status_3() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("deep.yaml");
    let n = 100_000;
    let text = format!(
        "apiVersion: v1\nkind: Service\nmetadata:\n  name: a\n  annotations: {}{}\n",
        "[".repeat(n),
        "]".repeat(n)
    );
    std::fs::write(&file, text).unwrap();
    let out = agent(&["plan", "--manifests", file.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(3));
    assert_eq!(
        stderr(&out),
        format!(
            "error: {}: document 1: line 5: nesting is deeper than the limit of 100 levels\n",
            file.display()
        )
    );
}
