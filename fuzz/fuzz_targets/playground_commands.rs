//! The playground's commands, natively: the core's console
//! (`svcnet_core::console::run`, behind `Cluster.kubectl`: the kubectl and
//! ipvsadm command lines the page's console sends, parsed and run in the
//! core) and the functions of `svcnet_wasm::ops` behind `Cluster.apply`,
//! `delete`, `get`, `ipvsadmSave`, `advance`, `heartbeat`, `snapshotJson` /
//! `restore`.
//!
//! Input: a script of commands, each starting on a line `% <verb> <args>`,
//! the lines after it (up to the next `%` line) being its body:
//! `% options` (body: the Cluster options JSON; only as the first
//! command), `% apply` (body: a manifest), `% kapply` (body: a manifest,
//! through the console's `kubectl apply -f -`), `% console <line>` (body,
//! when not empty: its standard input), `% delete <kind> <namespace>
//! <name>`, `% get <kind> [<namespace>]`, `% table <kind> [-A]` (the
//! console's `kubectl get <kind>`), `% ipvsadm <node>`, `% advance <ms>`,
//! `% heartbeat <ip:port> <ms>`, `% snapshot`.
//!
//! Asserts after every command: nothing panicked; no ClusterIP is held by
//! two Services and every one is marked allocated; no NodePort is held
//! twice; `kubernetes` holds the first address of the primary range; a
//! `snapshot` restores (JSON round trip) to an equal control plane; a
//! refused `apply` of text that does not parse changes nothing.
#![no_main]

use std::collections::BTreeSet;
use std::net::IpAddr;

use libfuzzer_sys::fuzz_target;
use serde_json::{json, Value};
use svcnet_core::console;
use svcnet_core::controlplane::ControlPlane;
use svcnet_wasm::ops;

/// At most this many commands run per input, so one input stays fast.
const MAX_COMMANDS: usize = 40;

fn check_invariants(cp: &ControlPlane) {
    let mut ips = BTreeSet::new();
    let mut ports = BTreeSet::new();
    for svc in cp.services() {
        for ip in &svc.spec.cluster_ips {
            let Ok(addr) = ip.parse::<IpAddr>() else {
                continue; // "None" (headless)
            };
            assert!(ips.insert(addr), "ClusterIP {ip} held by two Services");
            assert!(
                cp.cluster_ip_allocator().is_allocated(addr),
                "{ip} not marked allocated"
            );
        }
        // One Service may use one NodePort for several protocols (as
        // Kubernetes does for ports of the same number).
        let own: BTreeSet<i64> = svc.spec.ports.iter().filter_map(|p| p.node_port).collect();
        for port in own {
            assert!(ports.insert(port), "NodePort {port} held by two Services");
        }
    }
    if let Some(kubernetes) = cp.service("default", "kubernetes") {
        assert_eq!(kubernetes.spec.cluster_ip, cp.kubernetes_ip().to_string());
    }
}

fn run(cp: &mut ControlPlane, verb: &str, args: &[&str], body: &str) {
    let stdin = (!body.is_empty()).then_some(body);
    let arg = |i: usize| args.get(i).copied().unwrap_or("");
    let number = |i: usize| arg(i).parse::<u64>().unwrap_or(0) % 10_000_000;
    match verb {
        "apply" => {
            let before = cp.clone();
            if let Err(refused) = ops::apply(cp, body) {
                if svcnet_core::api::manifest::parse_documents(body).is_err() {
                    assert_eq!(*cp, before, "a manifest that does not parse changed the cluster");
                }
                let _ = refused.message;
            }
        }
        "kapply" => {
            let _ = console::run(cp, "kubectl apply -f -", Some(body));
        }
        "console" => {
            let _ = console::run(cp, &args.join(" "), stdin);
        }
        "delete" => {
            let _ = ops::delete(cp, arg(0), arg(1), arg(2));
            let _ = console::run(cp, &format!("kubectl delete {} {} -n {}", arg(0), arg(2), arg(1)), None);
        }
        "get" => {
            let namespace = args.get(1).copied();
            let _ = ops::list(cp, arg(0), namespace);
        }
        "table" => {
            let _ = console::run(cp, &format!("kubectl get {} {}", arg(0), arg(1)), None);
            let _ = console::run(cp, &format!("kubectl get {} -o yaml", arg(0)), None);
        }
        "ipvsadm" => {
            let _ = ops::ipvsadm_save_text(cp, arg(0));
            let _ = ops::ipvsadm_list_text(cp, arg(0));
        }
        "advance" => {
            let _ = ops::advance(cp, number(0));
        }
        "heartbeat" => {
            let _ = ops::heartbeat(cp, arg(0), number(1));
        }
        "snapshot" => {
            let text = serde_json::to_string(&cp.snapshot()).expect("a snapshot serialises");
            let restored = ops::restore_json(&text).expect("a snapshot restores");
            assert_eq!(&restored, cp, "restore(snapshot(cluster)) != cluster");
            *cp = restored;
        }
        _ => {}
    }
    let _ = ops::usage(cp);
    let _ = ops::kubernetes_endpoints(cp);
    let _ = cp.dns_records();
}

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    // Split into (command line, body).
    let mut commands: Vec<(&str, String)> = Vec::new();
    for line in text.split_inclusive('\n') {
        if let Some(command) = line.strip_prefix("% ") {
            commands.push((command.trim(), String::new()));
        } else if let Some((_, body)) = commands.last_mut() {
            body.push_str(line);
        }
    }
    let mut commands = commands.into_iter().take(MAX_COMMANDS).peekable();
    let options = match commands.peek() {
        Some((command, body)) if command.starts_with("options") => {
            let value = serde_json::from_str::<Value>(body).unwrap_or(Value::Null);
            commands.next();
            value
        }
        _ => json!({ "serviceClusterIpRange": "10.96.0.0/24,fd00:10:96::/120", "seed": 1 }),
    };
    let Ok(mut cp) = ops::start(options) else {
        return;
    };
    check_invariants(&cp);
    for (command, body) in commands {
        let mut words = command.split_whitespace();
        let verb = words.next().unwrap_or("");
        let args: Vec<&str> = words.collect();
        run(&mut cp, verb, &args, &body);
        check_invariants(&cp);
    }
});
