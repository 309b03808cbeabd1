//! `deploy/` stays in step with the binary. The API-mode DaemonSet
//! (`daemonset.yaml`): its arguments are ones `ipvs-agent run` accepts, its
//! KubeProxyConfiguration reads without a warning, and its RBAC only reads.
//! The standalone one (`daemonset-standalone.yaml`): its arguments are
//! accepted and the manifests its ConfigMap ships pass `ipvs-agent plan`.
//! In both the agent keeps table `inet svcnet` as by default (a node
//! without nf_tables keeps its IPVS table) and runs hardened
//! ([`assert_hardened`]): unprivileged with CAP_NET_ADMIN alone and a
//! read-only root filesystem whose one writable mount holds the state
//! file, after a sysctls init container. `make k8s-deploy-check` applies
//! both to a real apiserver with `--dry-run=server`.

use clap::Parser;
use ipvs_agent::cli::{Cli, Command};
use ipvs_agent::nftables_sync::NftablesMode;
use serde_yaml_ng::Value;
use std::path::Path;
use std::process::Command as Process;

fn documents(file: &str) -> Vec<Value> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../deploy").join(file);
    let text = std::fs::read_to_string(path).unwrap();
    serde_yaml_ng::Deserializer::from_str(&text)
        .map(|doc| serde::Deserialize::deserialize(doc).unwrap())
        .collect()
}

fn of_kind(file: &str, kind: &str) -> Value {
    documents(file)
        .into_iter()
        .find(|d| d["kind"] == kind)
        .unwrap_or_else(|| panic!("no {kind} in deploy/{file}"))
}

/// The arguments of a container, as the kubelet passes them.
fn arguments(container: &Value) -> Vec<String> {
    container["args"]
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
        .collect()
}

fn parse(args: &[String]) -> Cli {
    Cli::try_parse_from(std::iter::once("ipvs-agent".to_string()).chain(args.iter().cloned()))
        .unwrap_or_else(|e| panic!("{args:?}: {e}"))
}

/// The pod's agent container: not privileged, no privilege escalation,
/// every capability dropped but NET_ADMIN, the default seccomp profile, a
/// read-only root filesystem with one writable mount, the state file's
/// directory; and a first init container, privileged and read-only too,
/// that runs `sysctls`.
fn assert_hardened(pod: &Value, state_file: Option<&Path>) {
    let container = &pod["containers"][0];
    let security = &container["securityContext"];
    assert_eq!(security["privileged"], false);
    assert_eq!(security["allowPrivilegeEscalation"], false);
    assert_eq!(security["readOnlyRootFilesystem"], true);
    assert_eq!(security["seccompProfile"]["type"], "RuntimeDefault");
    let caps = &security["capabilities"];
    assert_eq!(caps["drop"], serde_yaml_ng::from_str::<Value>("[ALL]").unwrap());
    assert_eq!(caps["add"], serde_yaml_ng::from_str::<Value>("[NET_ADMIN]").unwrap());
    let writable: Vec<&str> = (container["volumeMounts"].as_sequence().unwrap().iter())
        .filter(|m| m["readOnly"] != true)
        .map(|m| m["mountPath"].as_str().unwrap())
        .collect();
    let state_dir = state_file.and_then(Path::parent).expect("a --state-file");
    assert_eq!(writable, [state_dir.to_str().unwrap()], "the one writable mount");
    let init = &pod["initContainers"][0];
    assert!(matches!(parse(&arguments(init)).command, Command::Sysctls(_)));
    assert_eq!(init["securityContext"]["readOnlyRootFilesystem"], true);
}

#[test]
fn the_api_mode_daemonset_runs_unprivileged_with_kube_proxys_configuration() {
    const FILE: &str = "daemonset.yaml";
    let pod = &of_kind(FILE, "DaemonSet")["spec"]["template"]["spec"];
    assert_eq!(pod["serviceAccountName"], "ipvs-agent");
    let container = &pod["containers"][0];
    let mut args = arguments(container);
    // The configuration comes from the ConfigMap, mounted at /etc/ipvs-agent.
    let dir = tempfile::tempdir().unwrap();
    let config = of_kind(FILE, "ConfigMap");
    let text = config["data"]["config.yaml"].as_str().unwrap();
    std::fs::write(dir.path().join("config.yaml"), text).unwrap();
    for arg in &mut args {
        *arg = arg.replace("/etc/ipvs-agent", dir.path().to_str().unwrap());
    }
    let mut cli = parse(&args);
    let warnings = cli.command.apply_kube_proxy_config().unwrap();
    assert!(warnings.is_empty(), "{warnings:?}");
    let Command::Run(run) = cli.command else {
        panic!("the DaemonSet does not start `run`: {args:?}");
    };
    assert_eq!(run.common.node_name.as_deref(), Some("node-a"));
    assert!(run.common.manifests.is_empty() && run.skip_sysctls);
    assert_eq!(
        run.nftables_mode(),
        NftablesMode::ByDefault,
        "table inet svcnet kept, and a node without nf_tables keeps its IPVS table"
    );
    assert_eq!(run.healthz_bind_address.to_string(), "0.0.0.0:10256");
    for probe in ["livenessProbe", "readinessProbe"] {
        let port = &container[probe]["httpGet"]["port"];
        assert_eq!(
            port.as_u64(),
            Some(u64::from(run.healthz_bind_address.port())),
            "{probe}"
        );
    }
    assert_hardened(pod, run.common.state_file.as_deref());

    let role = of_kind(FILE, "ClusterRole");
    for rule in role["rules"].as_sequence().unwrap() {
        let verbs: Vec<&str> = rule["verbs"]
            .as_sequence()
            .unwrap()
            .iter()
            .filter_map(Value::as_str)
            .collect();
        assert_eq!(verbs, ["get", "list", "watch"], "read only");
    }
}

#[test]
fn the_standalone_daemonset_arguments_are_accepted_by_run() {
    let daemonset = of_kind("daemonset-standalone.yaml", "DaemonSet");
    let container = &daemonset["spec"]["template"]["spec"]["containers"][0];
    let args = arguments(container);
    let Command::Run(run) = parse(&args).command else {
        panic!("the DaemonSet does not start `run`: {args:?}");
    };
    assert_eq!(run.common.node_name.as_deref(), Some("node-a"));
    assert!(!run.once, "a DaemonSet agent keeps running");
    assert!(run.skip_sysctls, "the init container sets them");
    assert_eq!(run.nftables_mode(), NftablesMode::ByDefault);
    assert_hardened(&daemonset["spec"]["template"]["spec"], run.common.state_file.as_deref());
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
fn the_standalone_configmap_manifests_plan_cleanly() {
    let config_map = of_kind("daemonset-standalone.yaml", "ConfigMap");
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
