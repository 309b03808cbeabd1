//! Deployments in the control plane, end to end: Pods, addresses,
//! EndpointSlices, scaling, replacement, template changes, readiness,
//! scheduling, full ranges, deletion, declarative sets and snapshots.

use super::*;
use crate::api::Resource;
use crate::controllers::deployment::TEMPLATE_HASH_LABEL;
use crate::controlplane::{ClusterConfig, ObjectRef};
use crate::kubectl::deployments_table;

const NODE: &str = "apiVersion: v1\nkind: Node\nmetadata: {name: n1}\nspec: {podCIDR: 10.244.1.0/24}\nstatus: {addresses: [{type: InternalIP, address: 192.168.0.11}]}\n";
const SVC: &str = "apiVersion: v1\nkind: Service\nmetadata: {name: web}\nspec: {selector: {app: web}, ports: [{port: 80, targetPort: 8080}]}\n";
const WEB: &str = "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: web}\nspec:\n  replicas: 3\n  selector: {matchLabels: {app: web}}\n  template:\n    metadata: {labels: {app: web}}\n    spec: {containers: [{name: nginx, image: 'nginx:1.27', ports: [{containerPort: 8080}]}]}\n";

fn cluster(text: &str) -> ControlPlane {
    let mut cp = ControlPlane::new(ClusterConfig {
        seed: 7,
        ..ClusterConfig::default()
    })
    .unwrap();
    apply(&mut cp, text);
    cp
}

fn apply(cp: &mut ControlPlane, text: &str) -> Vec<String> {
    cp.apply_manifest(text)
        .unwrap()
        .into_iter()
        .map(|r| r.unwrap().kubectl_line())
        .collect()
}

/// `name ip node ready` for each Pod, by name.
fn pods(cp: &ControlPlane) -> Vec<(String, String, String, bool)> {
    cp.pods()
        .map(|p| {
            (
                p.metadata.name.clone(),
                p.ips().join(","),
                p.spec.node_name.clone().unwrap_or_default(),
                p.is_ready(),
            )
        })
        .collect()
}

fn ips(cp: &ControlPlane) -> Vec<String> {
    let mut ips: Vec<String> = cp.pods().flat_map(Pod::ips).collect();
    ips.sort();
    ips
}

/// Every endpoint address of Service `web`, with its readiness.
fn endpoints(cp: &ControlPlane) -> Vec<(String, Option<bool>)> {
    let mut out: Vec<(String, Option<bool>)> = cp
        .endpoint_slices_for("default", "web")
        .iter()
        .flat_map(|s| s.endpoints.iter())
        .map(|e| (e.addresses.join(","), e.conditions.ready))
        .collect();
    out.sort();
    out
}

#[test]
fn a_deployment_becomes_pods_with_addresses_and_endpoints() {
    let mut cp = cluster(&format!("{NODE}---\n{SVC}"));
    assert_eq!(apply(&mut cp, WEB), ["deployment.apps/web created"]);
    let d = cp.deployment("default", "web").unwrap().clone();
    let hash = controller::template_hash(&d);
    let pods = pods(&cp);
    assert_eq!(pods.len(), 3);
    for (name, _, node, ready) in &pods {
        let suffix = name.strip_prefix(&format!("web-{hash}-")).unwrap();
        assert_eq!(suffix.len(), 5, "{name}");
        assert!(suffix.bytes().all(|b| ALPHABET.contains(&b)), "{name}");
        assert_eq!((node.as_str(), *ready), ("n1", true));
    }
    assert_eq!(ips(&cp), ["10.244.1.2", "10.244.1.3", "10.244.1.4"]);
    let pod = cp.pods().next().unwrap();
    assert_eq!(pod.metadata.labels[TEMPLATE_HASH_LABEL], hash);
    assert_eq!(pod.status.extra["hostIP"], "192.168.0.11");
    assert_eq!(pod.status.phase.as_deref(), Some("Running"));
    assert_eq!(
        endpoints(&cp),
        [
            ("10.244.1.2".into(), Some(true)),
            ("10.244.1.3".into(), Some(true)),
            ("10.244.1.4".into(), Some(true))
        ]
    );
    assert_eq!(
        (d.status.replicas, d.status.ready_replicas, d.status.updated_replicas),
        (3, 3, 3)
    );
    assert_eq!(d.status.observed_generation, Some(1));
    assert_eq!(d.generation(), 1);
    // Applied again: nothing moves.
    let before = cp.clone();
    assert_eq!(apply(&mut cp, WEB), ["deployment.apps/web unchanged"]);
    assert_eq!(cp, before);
    assert_eq!(
        deployments_table(&[&d], false, true, None),
        "NAME   READY   UP-TO-DATE   AVAILABLE   CONTAINERS   IMAGES       SELECTOR\n\
         web    3/3     3            3           nginx        nginx:1.27   app=web\n"
    );
}

#[test]
fn the_same_seed_gives_the_same_pods_and_another_seed_other_names() {
    let run = |seed: u64| {
        let mut cp = ControlPlane::new(ClusterConfig {
            seed,
            ..ClusterConfig::default()
        })
        .unwrap();
        apply(&mut cp, &format!("{NODE}---\n{WEB}"));
        pods(&cp)
    };
    assert_eq!(run(7), run(7));
    assert_ne!(run(7), run(8));
}

#[test]
fn scaling_removes_the_newest_first_and_does_not_reuse_freed_addresses_at_once() {
    let mut cp = cluster(&format!("{NODE}---\n{SVC}---\n{WEB}"));
    let by_ip = |cp: &ControlPlane, ip: &str| {
        cp.pods()
            .find(|p| p.ips() == [ip])
            .map(|p| p.metadata.name.clone())
            .unwrap()
    };
    let oldest = by_ip(&cp, "10.244.1.2");
    let scaled = cp.scale("default", "web", 1).unwrap();
    assert_eq!(scaled.spec.replicas, Some(1));
    assert_eq!(scaled.status.replicas, 1);
    assert_eq!(scaled.generation(), 2);
    assert_eq!(pods(&cp).len(), 1);
    assert_eq!(by_ip(&cp, "10.244.1.2"), oldest);
    assert_eq!(endpoints(&cp), [("10.244.1.2".into(), Some(true))]);
    cp.scale("default", "web", 3).unwrap();
    assert_eq!(ips(&cp), ["10.244.1.2", "10.244.1.5", "10.244.1.6"]);
    assert_eq!(endpoints(&cp).len(), 3);
    assert_eq!(
        cp.scale("default", "nope", 1).unwrap_err().to_string(),
        "deployments.apps \"nope\" not found"
    );
    assert_eq!(
        cp.scale("default", "web", -1).unwrap_err().to_string(),
        "The Scale.autoscaling \"web\" is invalid: spec.replicas: Invalid value: -1: must be greater than or equal to 0"
    );
}

#[test]
fn scaling_down_removes_unready_pods_before_ready_ones() {
    let mut cp = cluster(&format!("{NODE}---\n{WEB}"));
    // The oldest Pod is marked not ready, as the playground's
    // `simulate unready` does: it stays, and counts as not ready.
    let mut unready = cp.pods().find(|p| p.ips() == ["10.244.1.2"]).unwrap().clone();
    unready.metadata.uid.clear();
    unready.metadata.resource_version.clear();
    unready.status.conditions.retain(|c| c.condition_type != "Ready");
    unready.status.conditions.push(PodCondition {
        condition_type: "Ready".into(),
        status: "False".into(),
        ..PodCondition::default()
    });
    let name = unready.metadata.name.clone();
    assert_eq!(cp.apply_pod(unready).unwrap().action, ApplyAction::Configured);
    assert_eq!(pods(&cp).len(), 3);
    let d = cp.deployment("default", "web").unwrap();
    assert_eq!((d.status.replicas, d.status.ready_replicas), (3, 2));
    assert_eq!(d.status.unavailable_replicas, 1);
    cp.scale("default", "web", 2).unwrap();
    assert!(cp.pod("default", &name).is_none(), "the unready Pod went first");
    assert_eq!(ips(&cp), ["10.244.1.3", "10.244.1.4"]);
}

#[test]
fn a_deleted_pod_is_replaced_under_a_new_name_and_address() {
    let mut cp = cluster(&format!("{NODE}---\n{SVC}---\n{WEB}"));
    let victim = cp
        .pods()
        .find(|p| p.ips() == ["10.244.1.3"])
        .unwrap()
        .metadata
        .name
        .clone();
    cp.delete("pod", "default", &victim).unwrap();
    let names: Vec<String> = pods(&cp).into_iter().map(|p| p.0).collect();
    assert_eq!(names.len(), 3);
    assert!(!names.contains(&victim));
    assert_eq!(ips(&cp), ["10.244.1.2", "10.244.1.4", "10.244.1.5"]);
    assert_eq!(endpoints(&cp).len(), 3);
    assert!(endpoints(&cp).iter().all(|(ip, _)| ip != "10.244.1.3"));
}

#[test]
fn a_new_template_replaces_every_pod() {
    let mut cp = cluster(&format!("{NODE}---\n{SVC}---\n{WEB}"));
    let old_hash = controller::template_hash(cp.deployment("default", "web").unwrap());
    let old_names: Vec<String> = pods(&cp).into_iter().map(|p| p.0).collect();
    assert_eq!(
        apply(&mut cp, &WEB.replace("1.27", "1.28")),
        ["deployment.apps/web configured"]
    );
    let d = cp.deployment("default", "web").unwrap();
    let new_hash = controller::template_hash(d);
    assert_ne!(new_hash, old_hash);
    assert_eq!((d.generation(), d.status.observed_generation), (2, Some(2)));
    assert_eq!(d.status.updated_replicas, 3);
    let now = pods(&cp);
    assert_eq!(now.len(), 3);
    for (name, ..) in &now {
        assert!(name.starts_with(&format!("web-{new_hash}-")), "{name}");
        assert!(!old_names.contains(name));
    }
    assert_eq!(ips(&cp), ["10.244.1.5", "10.244.1.6", "10.244.1.7"]);
    assert_eq!(endpoints(&cp).len(), 3);
}

#[test]
fn pods_wait_for_a_node_and_spread_over_nodes() {
    let mut cp = cluster(&format!("{SVC}---\n{WEB}"));
    let pending = cp.pods().collect::<Vec<_>>();
    assert_eq!(pending.len(), 3);
    for p in &pending {
        assert_eq!(p.status.phase.as_deref(), Some("Pending"));
        assert!(p.ips().is_empty() && p.spec.node_name.is_none());
    }
    assert_eq!(cp.deployment("default", "web").unwrap().status.ready_replicas, 0);
    assert!(endpoints(&cp).is_empty());
    // The first Node takes every waiting Pod.
    apply(&mut cp, NODE);
    let placed = pods(&cp);
    assert!(placed.iter().all(|p| p.2 == "n1" && p.3), "{placed:?}");
    assert_eq!(cp.deployment("default", "web").unwrap().status.ready_replicas, 3);
    assert_eq!(endpoints(&cp).len(), 3);
    // New Pods go to the least loaded Node; a dual-stack Node gives one
    // address per family.
    let dual = "apiVersion: v1\nkind: Node\nmetadata: {name: n2}\nspec: {podCIDRs: [10.244.2.0/24, 'fd00:2::/64']}\nstatus: {addresses: [{type: InternalIP, address: 192.168.0.12}]}\n";
    apply(&mut cp, dual);
    cp.scale("default", "web", 5).unwrap();
    let mut on_n2: Vec<String> = (cp.pods())
        .filter(|p| p.spec.node_name.as_deref() == Some("n2"))
        .map(|p| p.ips().join(","))
        .collect();
    on_n2.sort();
    assert_eq!(on_n2, ["10.244.2.2,fd00:2::2", "10.244.2.3,fd00:2::3"]);
    // n2 goes: its Pods are replaced on n1.
    cp.delete("node", "", "n2").unwrap();
    let left = pods(&cp);
    assert_eq!(left.len(), 5);
    assert!(left.iter().all(|p| p.2 == "n1" && p.3), "{left:?}");
}

#[test]
fn a_full_pod_range_leaves_the_pod_pending_without_an_ip() {
    // A /30 holds one Pod address (.2): .0 network, .1 gateway, .3 broadcast.
    let small = NODE.replace("10.244.1.0/24", "10.244.9.0/30");
    let cp = cluster(&format!("{small}---\n{}", WEB.replace("replicas: 3", "replicas: 2")));
    let mut phases: Vec<(String, String)> = cp
        .pods()
        .map(|p| (p.status.phase.clone().unwrap_or_default(), p.ips().join(",")))
        .collect();
    phases.sort();
    assert_eq!(
        phases,
        [
            ("Pending".to_string(), String::new()),
            ("Running".to_string(), "10.244.9.2".to_string())
        ]
    );
    let pending = cp.pods().find(|p| p.ips().is_empty()).unwrap();
    assert_eq!(pending.spec.node_name.as_deref(), Some("n1"));
    assert!(!pending.is_ready());
    let d = cp.deployment("default", "web").unwrap();
    assert_eq!((d.status.replicas, d.status.ready_replicas), (2, 1));
    assert_eq!(
        deployments_table(&[d], false, false, None).lines().nth(1),
        Some("web    1/2     2            1")
    );
}

#[test]
fn deleting_a_deployment_deletes_its_pods_and_only_those() {
    let mut cp = cluster(&format!("{NODE}---\n{SVC}---\n{WEB}"));
    let own = "apiVersion: v1\nkind: Pod\nmetadata: {name: mine, labels: {app: web}}\nspec: {nodeName: n1, containers: [{name: c}]}\nstatus: {phase: Running, podIPs: [{ip: 10.244.1.200}], conditions: [{type: Ready, status: \"True\"}]}\n";
    apply(&mut cp, own);
    assert_eq!(pods(&cp).len(), 4, "an orphan that matches is not adopted");
    let deleted = cp.delete("deploy", "default", "web").unwrap();
    assert_eq!(deleted.kind(), "Deployment");
    assert_eq!(pods(&cp).into_iter().map(|p| p.0).collect::<Vec<_>>(), ["mine"]);
    assert_eq!(endpoints(&cp), [("10.244.1.200".into(), Some(true))]);
    assert_eq!(
        cp.delete("deployments.apps", "default", "web").unwrap_err().to_string(),
        "deployments.apps \"web\" not found"
    );
}

#[test]
fn lists_gets_and_refusals_name_the_kind_as_kube_apiserver_does() {
    let mut cp = cluster(&format!("{NODE}---\n{WEB}"));
    let names = |o: Vec<Object>| o.iter().map(|o| o.name().to_string()).collect::<Vec<_>>();
    assert_eq!(names(cp.list(Resource::Deployment, None)), ["web"]);
    assert!(cp.list(Resource::Deployment, Some("other")).is_empty());
    assert_eq!(cp.get(Resource::Deployment, "", "web").unwrap().kind(), "Deployment");
    assert_eq!(
        cp.get(Resource::Deployment, "", "nope").unwrap_err().to_string(),
        "deployments.apps \"nope\" not found"
    );
    let before = cp.clone();
    let bad = WEB.replace("labels: {app: web}}", "labels: {app: x}}");
    let err = cp.apply_manifest(&bad).unwrap().remove(0).unwrap_err();
    assert_eq!(
        err.to_string(),
        "The Deployment.apps \"web\" is invalid: spec.template.metadata.labels: Invalid value: {\"app\":\"x\"}: `selector` does not match template `labels`"
    );
    assert_eq!(cp, before);
    assert_eq!(cp.deployments().count(), 1);
}

#[test]
fn a_declarative_set_keeps_the_controllers_pods() {
    let mut cp = cluster("");
    let set = crate::api::parse_manifests(&format!("{NODE}---\n{SVC}---\n{WEB}")).unwrap();
    cp.apply_set(&set).unwrap();
    let first = pods(&cp);
    assert_eq!(first.len(), 3);
    let refs: Vec<String> = cp
        .user_objects()
        .iter()
        .map(|r| format!("{} {}", r.kind, r.name))
        .collect();
    assert_eq!(refs, ["Service web", "Deployment web", "Node n1"]);
    let again = cp.apply_set(&set).unwrap();
    assert!(again.deleted.is_empty());
    assert!(again.services.is_empty(), "{:?}", again.services);
    assert_eq!(pods(&cp), first);
    let outcome = cp.apply_changes::<Object>(&[], &[ObjectRef::of(&set[2])]).unwrap();
    assert_eq!(outcome.services.len(), 1);
    assert!(cp.pods().next().is_none());
}

#[test]
fn snapshots_keep_deployments_and_the_address_cursors() {
    let mut cp = cluster(&format!("{NODE}---\n{SVC}---\n{WEB}"));
    cp.scale("default", "web", 1).unwrap();
    let restored = ControlPlane::restore(cp.snapshot()).unwrap();
    assert_eq!(restored, cp);
    let mut a = cp.clone();
    let mut b = restored;
    a.scale("default", "web", 2).unwrap();
    b.scale("default", "web", 2).unwrap();
    assert_eq!(pods(&a), pods(&b));
    assert_eq!(ips(&a), ["10.244.1.2", "10.244.1.5"]);
    // A snapshot from before Deployments loads: no deployments, no cursors.
    let mut old = serde_json::to_value(cluster(NODE).snapshot()).unwrap();
    let fields = old.as_object_mut().unwrap();
    assert!(fields.remove("deployments").is_none() && fields.remove("podIpam").is_none());
    let snapshot: crate::controlplane::Snapshot = serde_json::from_value(old).unwrap();
    assert_eq!(ControlPlane::restore(snapshot).unwrap().deployments().count(), 0);
}

#[test]
fn addresses_held_by_any_pod_are_skipped() {
    let loose = "apiVersion: v1\nkind: Pod\nmetadata: {name: loose}\nspec: {containers: [{name: c}]}\nstatus: {phase: Running, podIPs: [{ip: 10.244.1.2}]}\n";
    let cp = cluster(&format!(
        "{NODE}---\n{loose}---\n{}",
        WEB.replace("replicas: 3", "replicas: 1")
    ));
    let ours: Vec<String> = (cp.pods())
        .filter(|p| p.metadata.name != "loose")
        .flat_map(Pod::ips)
        .collect();
    assert_eq!(ours, ["10.244.1.3"]);
}
