//! `deploy/daemonset.yaml` stays in step with the binary: every argument the
//! DaemonSet passes is one `ipvs-agent run` accepts, and the manifests its
//! ConfigMap ships pass `ipvs-agent plan`.

use clap::Parser;
use ipvs_agent::cli::{Cli, Command};
use serde_yaml_ng::Value;
use std::path::Path;
use std::process::Command as Process;

fn documents() -> Vec<Value> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../deploy/daemonset.yaml");
    let text = std::fs::read_to_string(path).unwrap();
    serde_yaml_ng::Deserializer::from_str(&text)
        .map(|doc| serde::Deserialize::deserialize(doc).unwrap())
        .collect()
}

fn of_kind(kind: &str) -> Value {
    documents()
        .into_iter()
        .find(|d| d["kind"] == kind)
        .unwrap_or_else(|| panic!("no {kind} in deploy/daemonset.yaml"))
}

#[test]
fn the_daemonset_arguments_are_accepted_by_run() {
    let daemonset = of_kind("DaemonSet");
    let container = &daemonset["spec"]["template"]["spec"]["containers"][0];
    let args: Vec<String> = container["args"]
        .as_sequence()
        .unwrap()
        .iter()
        .map(|a| {
            // The kubelet substitutes $(NODE_NAME) and $(NODE_IP) from the env.
            a.as_str()
                .unwrap()
                .replace("$(NODE_NAME)", "node-a")
                .replace("$(NODE_IP)", "192.168.0.10")
        })
        .collect();
    let cli = Cli::try_parse_from(std::iter::once("ipvs-agent".to_string()).chain(args.clone()))
        .unwrap_or_else(|e| panic!("{args:?}: {e}"));
    let Command::Run(run) = cli.command else {
        panic!("the DaemonSet does not start `run`: {args:?}");
    };
    assert_eq!(run.common.node_name.as_deref(), Some("node-a"));
    assert!(!run.once, "a DaemonSet agent keeps running");
    let probe_port = &container["livenessProbe"]["httpGet"]["port"];
    assert_eq!(probe_port.as_u64(), Some(u64::from(run.healthz_bind_address.port())));
    let env: Vec<&str> = container["env"]
        .as_sequence()
        .unwrap()
        .iter()
        .filter_map(|e| e["name"].as_str())
        .collect();
    assert_eq!(env, ["NODE_NAME", "NODE_IP"]);
}

#[test]
fn the_configmap_manifests_plan_cleanly() {
    let config_map = of_kind("ConfigMap");
    let dir = tempfile::tempdir().unwrap();
    let data = config_map["data"].as_mapping().unwrap();
    assert!(!data.is_empty());
    for (name, text) in data {
        std::fs::write(dir.path().join(name.as_str().unwrap()), text.as_str().unwrap()).unwrap();
    }
    let out = Process::new(env!("CARGO_BIN_EXE_ipvs-agent"))
        .args([
            "plan",
            "--format",
            "ipvsadm-save",
            "--node-name",
            "node-a",
            "--node-ip",
            "192.168.0.10",
        ])
        .arg("--manifests")
        .arg(dir.path())
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    let save = String::from_utf8_lossy(&out.stdout);
    assert!(save.contains("-A -t 10.96.0.1:443 -s rr\n"), "{save}");
}
