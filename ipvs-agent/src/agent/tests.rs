use super::*;
use crate::memory::MemoryDataplane;
use std::fs;
use std::path::{Path, PathBuf};
use svcnet_core::controlplane::ClusterConfig;
use svcnet_core::proxy::nftables::desired_ruleset;
use svcnet_core::proxy::{Operation, Protocol, VirtualServerKey};

const WEB: &str = "apiVersion: v1\nkind: Service\nmetadata: {name: web}\nspec: {type: NodePort, selector: {app: web}, ports: [{port: 80, targetPort: 8080}]}\n";

fn pod(name: &str, ip: &str) -> String {
    format!("apiVersion: v1\nkind: Pod\nmetadata: {{name: {name}, labels: {{app: web}}}}\nspec: {{nodeName: node-a}}\nstatus: {{phase: Running, podIPs: [{{ip: {ip}}}], conditions: [{{type: Ready, status: \"True\"}}]}}\n")
}

const NODE: &str = "apiVersion: v1\nkind: Node\nmetadata: {name: node-a}\nstatus: {addresses: [{type: InternalIP, address: 192.168.0.10}]}\n";

fn settings() -> AgentSettings {
    AgentSettings {
        node: NodeFlags::new(Some("node-a".into()), vec![]),
        host_ips: vec!["198.51.100.1".parse().unwrap()],
        proxy: ProxyConfig::default(),
        sync: SyncSettings::new(Duration::from_secs(1), Duration::from_secs(30)),
        conntrack_cleanup: true,
        nftables: true,
    }
}

fn start(dir: &Path) -> Result<Agent<MemoryDataplane>, ClusterError> {
    start_at(dir, Some(dir.join("state.json")), T0)
}

/// An agent started at `now` as `run` starts it: the cluster from the
/// state file and the manifests, the plan state saved beside it.
fn start_at(dir: &Path, state_file: Option<PathBuf>, now: Time) -> Result<Agent<MemoryDataplane>, ClusterError> {
    let config = ClusterConfig {
        apiservers: vec!["192.168.0.10:6443".into()],
        ..ClusterConfig::default()
    };
    let cluster = Cluster::open(config, state_file, vec![dir.join("manifests")])?;
    let plan_state = load_plan_state(&cluster);
    Agent::start(
        cluster,
        plan_state,
        MemoryDataplane::default(),
        settings(),
        Arc::new(Metrics::default()),
        now,
    )
}

/// Replaces a file by rename, as a ConfigMap volume update does.
fn replace(path: &Path, text: &str) {
    let tmp = path.with_extension("tmp-new");
    fs::write(&tmp, text).unwrap();
    fs::rename(&tmp, path).unwrap();
}

const T0: Time = Time(5_000_000);

fn at(secs: u64) -> Time {
    T0.plus(Duration::from_secs(secs))
}

fn setup() -> (tempfile::TempDir, std::path::PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let manifests = dir.path().join("manifests");
    fs::create_dir(&manifests).unwrap();
    fs::write(manifests.join("node.yaml"), NODE).unwrap();
    let file = manifests.join("web.yaml");
    fs::write(
        &file,
        format!(
            "{WEB}---\n{}---\n{}",
            pod("web-1", "10.244.1.11"),
            pod("web-2", "10.244.1.12")
        ),
    )
    .unwrap();
    (dir, file)
}

fn web_vs(agent: &Agent<MemoryDataplane>) -> VirtualServerKey {
    let ip = agent
        .control_plane()
        .service("default", "web")
        .unwrap()
        .spec
        .cluster_ip
        .parse()
        .unwrap();
    VirtualServerKey::new(Protocol::Tcp, ip, 80)
}

/// The nftables ruleset the sync loop keeps, one Service at a time, is the
/// one built whole from the control plane.
fn assert_ruleset_follows_the_control_plane(agent: &Agent<MemoryDataplane>) {
    let (cp, node) = (agent.control_plane(), agent.sync_loop().node());
    let whole = desired_ruleset(cp.services(), cp.endpoint_slices(), node, &ProxyConfig::default());
    assert_eq!(agent.sync_loop().ruleset(), Some(&whole));
}

#[tokio::test]
async fn programs_the_manifests_and_follows_file_changes() {
    let (dir, file) = setup();
    let mut agent = start(dir.path()).unwrap();
    let report = agent.step(T0).await.unwrap();
    assert!(dir.path().join("state.json").exists(), "written beside the first sync");
    assert!(report.full && report.succeeded());
    assert_ruleset_follows_the_control_plane(&agent);
    let web = web_vs(&agent);
    let kernel = &agent.sync_loop().dataplane().table;
    assert_eq!(kernel.virtual_servers[&web].real_servers.len(), 2);
    let node_port = agent.control_plane().service("default", "web").unwrap().spec.ports[0]
        .node_port
        .unwrap();
    let on_node = VirtualServerKey::new(Protocol::Tcp, "192.168.0.10".parse().unwrap(), node_port as u16);
    assert!(
        kernel.virtual_servers.contains_key(&on_node),
        "NodePort on the Node object's address"
    );
    let kubernetes = VirtualServerKey::new(Protocol::Tcp, "10.96.0.1".parse().unwrap(), 443);
    assert_eq!(
        kernel.virtual_servers[&kubernetes].real_servers.len(),
        1,
        "the apiserver endpoint"
    );

    // web-2 goes: picked up at the next poll, synced incrementally.
    replace(&file, &format!("{WEB}---\n{}", pod("web-1", "10.244.1.11")));
    let report = agent.step(at(1)).await.unwrap();
    assert_eq!(
        (report.full, report.operations),
        (false, 2),
        "from the ClusterIP and the NodePort"
    );
    let kernel = &agent.sync_loop().dataplane().table;
    assert_eq!(kernel.virtual_servers[&web].real_servers.len(), 1);
    assert_ruleset_follows_the_control_plane(&agent);
    assert_eq!(agent.step(at(2)).await, None, "nothing changed");
    let saved = fs::read_to_string(dir.path().join("state.json")).unwrap();
    let web_ip = &agent.control_plane().service("default", "web").unwrap().spec.cluster_ip;
    assert!(saved.contains(&format!("\"clusterIP\": \"{web_ip}\"")), "{saved}");
    assert!(!saved.contains("web-1"), "pods are not saved: the manifests have them");
}

#[tokio::test]
async fn a_bad_manifest_keeps_the_previous_state_programmed_and_saved() {
    let (dir, file) = setup();
    let mut agent = start(dir.path()).unwrap();
    agent.step(T0).await.unwrap();
    let state = dir.path().join("state.json");
    let saved = fs::read_to_string(&state).unwrap();
    let programmed = agent.sync_loop().dataplane().table.clone();

    replace(&file, &WEB.replace("port: 80,", "port: 0,"));
    assert_eq!(agent.step(at(1)).await, None, "nothing to sync");
    assert_eq!(agent.sync_loop().dataplane().table, programmed);
    assert_eq!(fs::read_to_string(&state).unwrap(), saved);
    assert!(
        agent.control_plane().pod("default", "web-1").is_some(),
        "pods were not pruned"
    );
    assert!(agent.metrics.render().contains("ipvs_agent_manifest_errors_total 1"));

    // A directory that disappears is reported once, however long it stays away.
    let manifests = dir.path().join("manifests");
    fs::rename(&manifests, dir.path().join("elsewhere")).unwrap();
    assert_eq!(agent.step(at(2)).await, None);
    assert_eq!(agent.step(at(3)).await, None);
    assert!(agent.metrics.render().contains("ipvs_agent_manifest_errors_total 2"));
    assert_eq!(agent.sync_loop().dataplane().table, programmed);
    fs::rename(dir.path().join("elsewhere"), &manifests).unwrap();

    // Fixed: picked up again.
    replace(&file, &format!("{WEB}---\n{}", pod("web-3", "10.244.1.13")));
    let report = agent.step(at(4)).await.unwrap();
    assert_eq!(
        report.operations, 6,
        "add web-3, delete web-1 and web-2 (no connections), twice"
    );
    assert_eq!(
        fs::read_to_string(&state).unwrap(),
        saved,
        "only pods changed: no allocation to save"
    );

    // A new Service is an allocation: saved.
    let db = WEB.replace("name: web", "name: db");
    replace(&file, &format!("{WEB}---\n{db}---\n{}", pod("web-3", "10.244.1.13")));
    agent.step(at(5)).await;
    let db_ip = &agent.control_plane().service("default", "db").unwrap().spec.cluster_ip;
    assert!(fs::read_to_string(&state).unwrap().contains(db_ip.as_str()));
}

#[tokio::test]
async fn starting_with_a_bad_manifest_is_an_error_naming_it() {
    let (dir, file) = setup();
    fs::write(
        &file,
        format!(
            "{}---\n{}",
            pod("web-1", "10.244.1.11"),
            WEB.replace("port: 80,", "port: 0,")
        ),
    )
    .unwrap();
    let err = start(dir.path()).err().unwrap().to_string();
    assert_eq!(
        err,
        format!(
            "{}: document 2 (Service default/web): spec.ports[0].port: Invalid value: 0: must be between 1 and 65535, inclusive",
            file.display()
        )
    );
    assert!(!dir.path().join("state.json").exists());
}

#[tokio::test]
async fn a_restart_keeps_addresses_and_adopts_the_kernel() {
    let (dir, _) = setup();
    let mut agent = start(dir.path()).unwrap();
    agent.step(T0).await.unwrap();
    let kernel = std::mem::take(&mut agent.sync_loop_mut().dataplane_mut().table);
    let ip = agent
        .control_plane()
        .service("default", "web")
        .unwrap()
        .spec
        .cluster_ip
        .clone();
    drop(agent);

    let mut again = start(dir.path()).unwrap();
    again.sync_loop_mut().dataplane_mut().table = kernel;
    assert_eq!(
        again.control_plane().service("default", "web").unwrap().spec.cluster_ip,
        ip
    );
    let report = again.step(at(100)).await.unwrap();
    assert_eq!((report.full, report.operations), (true, 0), "adopted as it is");
}

/// A Service on an external IP that is the node's own address: its
/// virtual server is not on `kube-ipvs0` nor in the NodePort range, so only
/// the plan state's `claimed` says it is the agent's.
const EXT: &str = "apiVersion: v1\nkind: Service\nmetadata: {name: ext}\nspec: {externalIPs: [192.168.0.10], selector: {app: web}, ports: [{port: 8443, targetPort: 8080}]}\n";

#[tokio::test]
async fn drain_timers_and_claimed_virtual_servers_survive_a_restart() {
    let (dir, file) = setup();
    let web_1 = pod("web-1", "10.244.1.11");
    let web_2 = pod("web-2", "10.244.1.12");
    fs::write(&file, format!("{WEB}---\n{EXT}---\n{web_1}---\n{web_2}")).unwrap();
    let plan_file = dir.path().join("state.json.plan.json");
    let mut agent = start(dir.path()).unwrap();
    assert!(!plan_file.exists(), "nothing planned yet");
    agent.step(T0).await.unwrap();
    let web = web_vs(&agent);
    let ext = VirtualServerKey::new(Protocol::Tcp, "192.168.0.10".parse().unwrap(), 8443);
    let web_2_rs = "10.244.1.12:8080".parse().unwrap();
    assert!(agent.sync_loop().dataplane().table.virtual_servers.contains_key(&ext));
    assert!(agent.sync_loop().plan_state().claimed.contains(&ext));
    assert_eq!(
        state::load_plan_state(&plan_file).unwrap().as_ref(),
        Some(agent.sync_loop().plan_state()),
        "saved after the first sync"
    );

    // web-2 goes with a connection open on the ClusterIP: it drains from T.
    agent
        .sync_loop_mut()
        .dataplane_mut()
        .table
        .set_counters(&web, web_2_rs, 1, 0);
    replace(&file, &format!("{WEB}---\n{EXT}---\n{web_1}"));
    let drain_start = at(1);
    agent.step(drain_start).await.unwrap();
    assert_eq!(
        agent.sync_loop().plan_state().draining.since(&web, &web_2_rs),
        Some(drain_start)
    );
    let saved = state::load_plan_state(&plan_file).unwrap().unwrap();
    assert_eq!(&saved, agent.sync_loop().plan_state(), "saved when it changed");
    let ext_cluster_ip = (agent.control_plane().service("default", "ext").unwrap().spec)
        .cluster_ip
        .parse()
        .unwrap();

    // Stopped; meanwhile ext is deleted. Started again 400 s into the
    // drain (--drain-timeout 600 s) on the same kernel table.
    agent.save();
    let kernel = std::mem::take(&mut agent.sync_loop_mut().dataplane_mut().table);
    drop(agent);
    replace(&file, &format!("{WEB}---\n{web_1}"));
    let mut again = start_at(dir.path(), Some(dir.path().join("state.json")), at(401)).unwrap();
    again.sync_loop_mut().dataplane_mut().table = kernel;
    assert_eq!(again.sync_loop().plan_state(), &saved);
    let report = again.step(at(401)).await.unwrap();
    let ext_cluster_ip = VirtualServerKey::new(Protocol::Tcp, ext_cluster_ip, 8443);
    assert_eq!(
        again.sync_loop().dataplane().log,
        [
            Operation::DeleteVirtualServer {
                virtual_server: ext_cluster_ip
            },
            Operation::DeleteVirtualServer { virtual_server: ext },
            Operation::UnbindAddress {
                address: ext_cluster_ip.address
            },
        ],
        "ext's virtual server on the node address was claimed, so it is the agent's to delete; web-2 still drains"
    );
    assert!(report.full && report.succeeded());
    let kernel = &again.sync_loop().dataplane().table;
    assert_eq!(kernel.virtual_servers[&web].real_servers[&web_2_rs].weight, 0);
    let state_file = fs::read_to_string(dir.path().join("state.json")).unwrap();

    // T + 601 s, the connection never closed: web-2 is deleted (counting
    // from the restart it would stay until T + 1,000 s).
    let report = again.step(drain_start.plus(Duration::from_secs(601))).await.unwrap();
    assert_eq!(report.operations, 1);
    let kernel = &again.sync_loop().dataplane().table;
    assert!(!kernel.virtual_servers[&web].real_servers.contains_key(&web_2_rs));
    let saved = state::load_plan_state(&plan_file).unwrap().unwrap();
    assert!(saved.draining.is_empty());
    assert!(!saved.claimed.contains(&ext));
    assert_eq!(
        fs::read_to_string(dir.path().join("state.json")).unwrap(),
        state_file,
        "draining never rewrites the state file"
    );
}

#[tokio::test]
async fn a_corrupt_plan_state_file_is_ignored_and_replaced() {
    let (dir, _) = setup();
    let plan_file = dir.path().join("state.json.plan.json");
    fs::write(&plan_file, "{\"draining\": ").unwrap();
    let mut agent = start(dir.path()).unwrap();
    assert_eq!(agent.sync_loop().plan_state(), &PlanState::default());
    let report = agent.step(T0).await.unwrap();
    assert!(report.succeeded());
    assert_eq!(
        state::load_plan_state(&plan_file).unwrap().as_ref(),
        Some(agent.sync_loop().plan_state())
    );
}

#[tokio::test]
async fn without_a_state_file_nothing_is_saved() {
    let (dir, file) = setup();
    let mut agent = start_at(dir.path(), None, T0).unwrap();
    agent.step(T0).await.unwrap();
    let web = web_vs(&agent);
    agent
        .sync_loop_mut()
        .dataplane_mut()
        .table
        .set_counters(&web, "10.244.1.12:8080".parse().unwrap(), 1, 0);
    replace(&file, &format!("{WEB}---\n{}", pod("web-1", "10.244.1.11")));
    let report = agent.step(at(1)).await.unwrap();
    assert!(report.plan_state_changed);
    agent.save();
    let names: Vec<String> = fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(names, ["manifests"]);
}

/// `name metric` line's value in `/metrics`.
fn metric(agent: &Agent<MemoryDataplane>, name: &str) -> String {
    let rendered = agent.metrics.render();
    rendered
        .lines()
        .find_map(|l| {
            l.strip_prefix(name)
                .and_then(|v| v.strip_prefix(' '))
                .map(str::to_string)
        })
        .unwrap_or_else(|| panic!("no {name} in\n{rendered}"))
}

/// The state file's write begun at start goes on beside the first sync,
/// which ends by taking its result: a failure there is counted and tried
/// again at the next poll, as any other.
#[tokio::test]
async fn the_state_write_begun_at_start_is_taken_by_the_first_sync() {
    let (dir, _file) = setup();
    let state_file = dir.path().join("state.json");
    // A folder where the write puts its temporary file: the write fails.
    let blocker = dir.path().join(format!(".state.json.tmp.{}", std::process::id()));
    fs::create_dir(&blocker).unwrap();
    let mut agent = start_at(dir.path(), Some(state_file.clone()), T0).unwrap();
    let report = agent.step(T0).await.unwrap();
    assert!(report.succeeded(), "serving all the same");
    assert_eq!(metric(&agent, "svcnet_state_file_unsaved"), "1");
    assert_eq!(metric(&agent, "svcnet_state_file_write_errors_total"), "1");
    assert!(!state_file.exists());

    fs::remove_dir(&blocker).unwrap();
    agent.step(at(1)).await;
    assert_eq!(metric(&agent, "svcnet_state_file_unsaved"), "0");
    let web_ip = &agent.control_plane().service("default", "web").unwrap().spec.cluster_ip;
    let saved = fs::read_to_string(&state_file).unwrap();
    assert!(saved.contains(&format!("\"clusterIP\": \"{web_ip}\"")), "{saved}");
}

#[tokio::test]
async fn a_failed_state_write_keeps_serving_and_is_written_again_once_it_can_be() {
    let (dir, file) = setup();
    let state_dir = dir.path().join("state");
    fs::create_dir(&state_dir).unwrap();
    let state_file = state_dir.join("state.json");
    let mut agent = start_at(dir.path(), Some(state_file.clone()), T0).unwrap();
    agent.step(T0).await.unwrap();
    assert_eq!(metric(&agent, "svcnet_state_file_unsaved"), "0");

    // The state's folder becomes unwritable (a file in its place: every
    // write fails, as on a full disk), and a Service is added.
    fs::rename(&state_dir, dir.path().join("state-away")).unwrap();
    fs::write(&state_dir, "not a folder").unwrap();
    let api = WEB.replace("name: web", "name: api");
    replace(
        &file,
        &format!(
            "{WEB}---\n{api}---\n{}---\n{}",
            pod("web-1", "10.244.1.11"),
            pod("web-2", "10.244.1.12")
        ),
    );
    agent.step(at(1)).await.unwrap();
    let api_ip = agent
        .control_plane()
        .service("default", "api")
        .unwrap()
        .spec
        .cluster_ip
        .clone();
    let api_vs = VirtualServerKey::new(Protocol::Tcp, api_ip.parse().unwrap(), 80);
    assert!(
        agent
            .sync_loop()
            .dataplane()
            .table
            .virtual_servers
            .contains_key(&api_vs),
        "still serving: the new Service is programmed"
    );
    assert_eq!(metric(&agent, "svcnet_state_file_unsaved"), "1");
    let errors = |agent: &Agent<MemoryDataplane>| -> u64 {
        metric(agent, "svcnet_state_file_write_errors_total").parse().unwrap()
    };
    let failed = errors(&agent);
    assert!(failed >= 1);
    agent.step(at(2)).await;
    assert!(errors(&agent) > failed, "tried again at the next poll");

    // Space returns: the next poll writes it, with the new allocation.
    fs::remove_file(&state_dir).unwrap();
    fs::rename(dir.path().join("state-away"), &state_dir).unwrap();
    agent.step(at(3)).await;
    assert_eq!(metric(&agent, "svcnet_state_file_unsaved"), "0");
    let saved = fs::read_to_string(&state_file).unwrap();
    assert!(saved.contains(&format!("\"clusterIP\": \"{api_ip}\"")), "{saved}");
    let failed = errors(&agent);
    agent.step(at(4)).await;
    assert_eq!(errors(&agent), failed, "no failure once written");
}
