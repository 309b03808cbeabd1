//! A narrated tour of what the svcnet core does with Services today:
//! service CIDR validation, ClusterIP allocation (the `kubernetes` Service
//! first), NodePorts, admission errors, EndpointSlices, the IPVS table
//! kube-proxy would program, DNS records, snapshots and repair.
//!
//! `make tour` runs it on `examples/services.yaml` and `examples/pods.yaml`:
//!
//!     cargo run -p svcnet-core --example tour -- \
//!         [--service-cluster-ip-range CIDR[,CIDR]] [--seed N] [MANIFEST...]
//!
//! The seed defaults to `ClusterConfig::default().seed` (0), as `ipvs-agent`'s
//! `--seed` and the playground do, so the same manifests get the same
//! ClusterIPs in the tour, in `make demo` and in the browser.

use std::process::ExitCode;
use svcnet_core::api::{EndpointSlice, Service};
use svcnet_core::controlplane::{ClusterConfig, ControlPlane};
use svcnet_core::kubectl::{endpoint_slices_table, services_table};
use svcnet_core::proxy::{ipvsadm_list, ProxyConfig};

/// Prints numbered sections: 1, 2, 3, ... whatever the number of manifests.
#[derive(Default)]
struct Narrator {
    section: u32,
}

impl Narrator {
    fn say(&mut self, title: &str, text: &str) {
        self.section += 1;
        println!("\n== {}. {title}\n{}", self.section, text.trim_end());
    }
}

fn indent(text: &str) -> String {
    text.lines().map(|l| format!("    {l}\n")).collect()
}

/// Says which Services' slices are empty, and how kubectl shows that.
fn empty_slices_note(slices: &[&EndpointSlice]) -> String {
    let mut empty: Vec<&str> = slices
        .iter()
        .filter(|s| s.endpoints.is_empty())
        .filter_map(|s| s.service_name())
        .collect();
    empty.dedup();
    match empty.as_slice() {
        [] => String::new(),
        [one] => format!("\n{one} selects no pod yet: its slice is empty, which kubectl prints as <unset>."),
        [rest @ .., last] => format!(
            "\n{} and {last} select no pod yet: their slices are empty, which kubectl prints as <unset>.",
            rest.join(", ")
        ),
    }
}

fn parse_args() -> Result<(ClusterConfig, Vec<String>), String> {
    let mut config = ClusterConfig {
        apiservers: vec!["192.168.0.10:6443".into()],
        ..Default::default()
    };
    let mut files = Vec::new();
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--service-cluster-ip-range" => {
                config.service_cluster_ip_range = args.next().ok_or("--service-cluster-ip-range needs a value")?
            }
            "--seed" => {
                let v = args.next().ok_or("--seed needs a value")?;
                config.seed = v.parse().map_err(|_| format!("--seed {v:?}: not a whole number"))?;
            }
            "-h" | "--help" => {
                return Err("usage: tour [--service-cluster-ip-range CIDR[,CIDR]] [--seed N] [MANIFEST...]".into());
            }
            _ => files.push(arg),
        }
    }
    if files.is_empty() {
        files.push(concat!(env!("CARGO_MANIFEST_DIR"), "/../examples/services.yaml").to_string());
    }
    Ok((config, files))
}

fn main() -> ExitCode {
    let mut n = Narrator::default();
    let (config, files) = match parse_args() {
        Ok(v) => v,
        Err(e) => {
            eprintln!("{e}");
            return ExitCode::from(2);
        }
    };
    n.say(
        "The service CIDR",
        &format!(
            "kube-apiserver is started with --service-cluster-ip-range={}.\n\
             Every ClusterIP comes from this range. svcnet checks it the way Kubernetes does\n\
             (at least 8 addresses, at most one IPv4 and one IPv6 CIDR) and also refuses\n\
             overlaps with pods, nodes, loopback, link-local and multicast.",
            config.service_cluster_ip_range
        ),
    );
    for bad in ["10.96.0.0/30", "10.96.0.0/12,10.200.0.0/16", "fd00::/48"] {
        let err = ControlPlane::new(ClusterConfig {
            service_cluster_ip_range: bad.into(),
            ..config.clone()
        })
        .err();
        println!(
            "    {bad:<28} -> {}",
            err.map_or("accepted".to_string(), |e| e.to_string())
        );
    }
    let seed = config.seed;
    let mut cp = match ControlPlane::new(config) {
        Ok(cp) => cp,
        Err(e) => {
            eprintln!("error: {e}");
            return ExitCode::from(1);
        }
    };
    let usage = &cp.cluster_ip_allocator().usage()[0];
    n.say(
        "The first address belongs to `kubernetes`",
        &format!(
            "The cluster starts with one Service, default/kubernetes, on the first address\n\
             ({}). Pods reach the API server there. The range {} has {} usable addresses;\n\
             its static band {}-{} is kept for Services that pick their own IP,\n\
             and random picks come from the dynamic band {}-{}, drawn with seed {}\n\
             (--seed; ipvs-agent and the playground default to the same seed, so the same\n\
             manifests get the same ClusterIPs there as here).",
            cp.kubernetes_ip(),
            usage.cidr,
            usage.size,
            usage.static_first.map_or("-".into(), |a| a.to_string()),
            usage.static_last.map_or("-".into(), |a| a.to_string()),
            usage.dynamic_first.map_or("-".into(), |a| a.to_string()),
            usage.dynamic_last.map_or("-".into(), |a| a.to_string()),
            seed,
        ),
    );
    for file in &files {
        let text = match std::fs::read_to_string(file) {
            Ok(t) => t,
            Err(e) => {
                eprintln!("error: cannot read {file}: {e}");
                return ExitCode::from(1);
            }
        };
        let results = match cp.apply_manifest(&text) {
            Ok(r) => r,
            Err(e) => {
                eprintln!("error: {file}: {e}");
                return ExitCode::from(1);
            }
        };
        let lines: Vec<String> = results
            .iter()
            .map(|r| {
                r.as_ref().map_or_else(
                    |e| format!("Error from server ({}): {e}", e.reason()),
                    |a| a.kubectl_line(),
                )
            })
            .collect();
        n.say(&format!("kubectl apply -f {file}"), &indent(&lines.join("\n")));
    }
    let services: Vec<&Service> = cp.services().collect();
    n.say("kubectl get svc -A", &indent(&services_table(&services, true, None)));
    let clash = "apiVersion: v1\nkind: Service\nmetadata: {name: dns-copy}\nspec: {clusterIP: 10.96.0.10, ports: [{port: 53}]}\n";
    if let Ok(results) = cp.apply_manifest(clash) {
        for r in results.into_iter().filter_map(Result::err) {
            n.say(
                "Two Services cannot share a ClusterIP",
                &format!("Asking for 10.96.0.10 again is refused with Kubernetes' own message:\n    {r}"),
            );
        }
    }
    let _ = cp.delete_service("default", "kubernetes");
    let back = cp
        .service("default", "kubernetes")
        .map_or("(missing!)".to_string(), |s| s.spec.cluster_ip.clone());
    n.say(
        "Deleting `kubernetes` does not lose its address",
        &format!("kubectl delete svc kubernetes ... and it is back at once, on {back}."),
    );
    let slices: Vec<&EndpointSlice> = cp.endpoint_slices().collect();
    n.say(
        "kubectl get endpointslices -A",
        &format!(
            "An EndpointSlice lists the pods behind a Service: their addresses, ports and\n\
             readiness. The EndpointSlice controller keeps one per Service with a selector\n\
             (more past 100 endpoints), matching pods' labels; kubernetes's lists the API\n\
             servers instead.{}\n{}",
            empty_slices_note(&slices),
            indent(&endpoint_slices_table(&slices, true, None))
        ),
    );
    if let Some(node) = cp.nodes().next().map(|node| node.metadata.name.clone()) {
        match cp.node_info(&node) {
            Ok(info) => {
                let desired = cp.desired_ipvs_table(&info, &ProxyConfig::default());
                n.say(
                    &format!("The IPVS table kube-proxy would program on {node} (ipvsadm -Ln)"),
                    &format!(
                        "One virtual server per ClusterIP and port, one per NodePort on the node IP;\n\
                         real servers are the ready pods, NAT-forwarded (Masq) with weight 1:\n{}",
                        indent(&ipvsadm_list(&desired.table))
                    ),
                );
            }
            Err(e) => eprintln!("node {node}: {e}"),
        }
    }
    n.say(
        "DNS records (kubernetes/dns specification 1.1.0)",
        &indent(&cp.dns_zone()),
    );
    let snapshot = cp.snapshot();
    let json = serde_json::to_string(&snapshot).unwrap_or_default();
    let events = cp.repair();
    n.say(
        "State and repair",
        &format!(
            "The whole state is a {}-byte snapshot (what the agent keeps in its state file);\n\
             restoring it gives the same cluster. The repair loop found {} problem(s).",
            json.len(),
            events.len()
        ),
    );
    println!("\nNext: `make demo` runs ipvs-agent, which programs this table into a real kernel under QEMU.");
    ExitCode::SUCCESS
}
