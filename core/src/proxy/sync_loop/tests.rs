//! The machine driven by hand against an in-memory kernel, with simulated
//! time: every step is an input and a time, so each test is exact.

use super::*;
use crate::controlplane::{ClusterConfig, ControlPlane};
use crate::proxy::{Protocol, VirtualServerKey};

const SVC: &str = "apiVersion: v1\nkind: Service\nmetadata: {name: web}\nspec: {clusterIP: 10.96.0.20, selector: {app: web}, ports: [{port: 80, targetPort: 8080}]}\n";

fn pod(name: &str, ip: &str) -> String {
    format!("apiVersion: v1\nkind: Pod\nmetadata: {{name: {name}, labels: {{app: web}}}}\nspec: {{nodeName: node-a}}\nstatus: {{phase: Running, podIPs: [{{ip: {ip}}}], conditions: [{{type: Ready, status: \"True\"}}]}}\n")
}

fn cluster(pods: &[(&str, &str)]) -> ControlPlane {
    let mut cp = ControlPlane::new(ClusterConfig::default()).unwrap();
    let mut texts = vec![SVC.to_string()];
    texts.extend(pods.iter().map(|(n, ip)| pod(n, ip)));
    for text in texts {
        for r in cp.apply_manifest(&text).unwrap() {
            r.unwrap();
        }
    }
    cp
}

fn node() -> NodeInfo {
    NodeInfo {
        name: "node-a".into(),
        ips: vec!["192.168.0.10".parse().unwrap()],
        zone: None,
    }
}

fn machine(cp: &ControlPlane) -> SyncMachine {
    let settings = SyncSettings::new(Duration::from_secs(1), Duration::from_secs(30));
    let mut m = SyncMachine::new(ProxyConfig::default(), node(), settings);
    m.rebuild(cp.services(), cp.endpoint_slices(), node());
    m
}

fn update(m: &mut SyncMachine, cp: &ControlPlane) {
    let slices = cp.endpoint_slices_for("default", "web");
    m.update_service(
        "default/web",
        cp.service("default", "web").map(|s| (s, slices.as_slice())),
    );
}

fn web() -> VirtualServerKey {
    VirtualServerKey::new(Protocol::Tcp, "10.96.0.20".parse().unwrap(), 80)
}

fn rs(ip: &str) -> std::net::SocketAddr {
    format!("{ip}:8080").parse().unwrap()
}

fn at(secs: u64) -> Time {
    Time::from_secs(1_000 + secs)
}

/// A kernel in memory, and what was asked of it.
#[derive(Default)]
struct Kernel {
    table: IpvsTable,
    fail_reads: bool,
    whole_reads: usize,
    outline_reads: usize,
    part_reads: Vec<usize>,
    applies: Vec<Vec<Operation>>,
}

impl Kernel {
    /// Answers every action the machine has out, at `now`; returns the
    /// reports of the syncs that finished.
    fn serve(&mut self, m: &mut SyncMachine, now: Time) -> Vec<SyncReport> {
        while let Some(action) = m.poll_action() {
            let input = match action {
                _ if self.fail_reads => SyncInput::ReadFailed("injected".into()),
                SyncAction::ObserveAll => {
                    self.whole_reads += 1;
                    SyncInput::Observed(self.table.clone())
                }
                SyncAction::ObserveVirtualServers(keys) => {
                    self.part_reads.push(keys.len());
                    SyncInput::ObservedVirtualServers(
                        keys.iter()
                            .filter_map(|k| Some((*k, self.table.virtual_servers.get(k)?.clone())))
                            .collect(),
                    )
                }
                SyncAction::ObserveOutline => {
                    self.outline_reads += 1;
                    SyncInput::ObservedOutline(TableOutline::of(&self.table))
                }
                SyncAction::Apply(ops) => {
                    let failed = ops
                        .iter()
                        .filter_map(|op| {
                            apply_operation(&mut self.table, op)
                                .err()
                                .map(|e| (op.clone(), e.to_string()))
                        })
                        .collect();
                    self.applies.push(ops);
                    SyncInput::Applied(failed)
                }
            };
            m.handle(input, now);
        }
        std::iter::from_fn(|| m.poll_report()).collect()
    }

    /// Calls `handle_timeout(now)` and serves what follows.
    fn tick(&mut self, m: &mut SyncMachine, now: Time) -> Option<SyncReport> {
        m.handle_timeout(now).then(|| self.serve(m, now).pop()).flatten()
    }
}

#[test]
fn the_first_sync_reads_the_kernel_and_programs_everything() {
    let cp = cluster(&[("web-1", "10.244.1.11")]);
    let mut m = machine(&cp);
    assert_eq!(m.poll_timeout(), Some(Time::ZERO), "due at once");
    let mut kernel = Kernel::default();
    let report = kernel.tick(&mut m, at(0)).unwrap();
    assert!(report.full && report.succeeded());
    assert_eq!(kernel.whole_reads, 1);
    assert_eq!(&kernel.table, m.desired());
    assert_eq!(m.poll_timeout(), Some(at(30)), "next: the periodic full sync");
}

#[test]
fn changes_within_min_sync_period_are_coalesced_into_one_partial_sync() {
    let mut cp = cluster(&[("web-1", "10.244.1.11")]);
    let mut m = machine(&cp);
    let mut kernel = Kernel::default();
    kernel.tick(&mut m, at(0)).unwrap();

    for (name, ip) in [("web-2", "10.244.1.12"), ("web-3", "10.244.1.13")] {
        cp.apply_manifest(&pod(name, ip)).unwrap();
        update(&mut m, &cp);
    }
    assert_eq!(m.poll_timeout(), Some(at(1)), "not before min-sync-period");
    assert!(kernel.tick(&mut m, Time(at(1).0 - 1)).is_none());
    let report = kernel.tick(&mut m, at(1)).unwrap();
    assert!(!report.full, "only what changed");
    assert_eq!(report.applied.len(), 2, "both new endpoints in one sync");
    assert_eq!(kernel.whole_reads, 1, "planned on the kept copy, no read");
    assert_eq!(kernel.applies.len(), 2);
    assert_eq!(&kernel.table, m.desired());
}

#[test]
fn drift_is_repaired_by_the_periodic_full_sync_only() {
    let cp = cluster(&[("web-1", "10.244.1.11")]);
    let mut m = machine(&cp);
    let mut kernel = Kernel::default();
    kernel.tick(&mut m, at(0)).unwrap();
    kernel.table.virtual_servers.remove(&web());
    assert!(kernel.tick(&mut m, at(29)).is_none(), "nothing changed, nothing due");
    let report = kernel.tick(&mut m, at(30)).unwrap();
    assert!(report.full);
    assert_eq!(kernel.whole_reads, 2);
    assert_eq!(&kernel.table, m.desired(), "the deleted virtual server is back");
}

#[test]
fn failed_reads_back_off_exponentially_keep_pending_changes_and_recover() {
    let mut cp = cluster(&[("web-1", "10.244.1.11")]);
    let mut m = machine(&cp);
    let mut kernel = Kernel::default();
    kernel.tick(&mut m, at(0)).unwrap();
    cp.apply_manifest(&pod("web-2", "10.244.1.12")).unwrap();
    update(&mut m, &cp);

    // A full sync (a partial one would plan on the kept copy) whose read
    // fails.
    kernel.fail_reads = true;
    m.start_sync(true, at(1));
    let report = kernel.serve(&mut m, at(1)).pop().unwrap();
    assert_eq!(report.read_error.as_deref(), Some("injected"));
    let mut now = at(1);
    let mut delays = Vec::new();
    for _ in 0..7 {
        let due = m.poll_timeout().unwrap();
        delays.push(due.since(now).as_secs());
        assert!(kernel.tick(&mut m, Time(due.0 - 1)).is_none(), "not before the backoff");
        now = due;
        assert!(kernel.tick(&mut m, now).unwrap().read_error.is_some());
    }
    assert_eq!(delays, vec![1, 2, 4, 8, 16, 30, 30]);

    kernel.fail_reads = false;
    let due = m.poll_timeout().unwrap();
    let report = kernel.tick(&mut m, due).unwrap();
    assert!(report.full && report.succeeded());
    assert_eq!(
        &kernel.table,
        m.desired(),
        "web-2, changed while failing, is programmed"
    );
    assert_eq!(m.poll_timeout(), Some(due.plus(Duration::from_secs(30))));
}

/// The machine and kernel after web-2 (with one open connection) was
/// removed and began to drain at `at(1)`.
fn draining() -> (SyncMachine, Kernel, ControlPlane) {
    let mut cp = cluster(&[("web-1", "10.244.1.11"), ("web-2", "10.244.1.12")]);
    let mut m = machine(&cp);
    let mut kernel = Kernel::default();
    kernel.tick(&mut m, at(0)).unwrap();
    kernel.table.set_counters(&web(), rs("10.244.1.12"), 1, 0);
    cp.delete_pod("default", "web-2").unwrap();
    update(&mut m, &cp);
    let report = kernel.tick(&mut m, at(1)).unwrap();
    assert!(report.plan_state_changed);
    assert_eq!(m.plan_state().draining.since(&web(), &rs("10.244.1.12")), Some(at(1)));
    (m, kernel, cp)
}

#[test]
fn a_drain_is_checked_every_drain_check_period_and_ends_with_the_connection() {
    let (mut m, mut kernel, _) = draining();
    assert_eq!(m.poll_timeout(), Some(at(6)), "drain check every 5 s");
    let report = kernel.tick(&mut m, at(6)).unwrap();
    assert_eq!(report.operations(), 0, "still connected");
    assert_eq!(kernel.whole_reads, 1, "only its virtual server was re-read");
    kernel.table.set_counters(&web(), rs("10.244.1.12"), 0, 0);
    let report = kernel.tick(&mut m, at(11)).unwrap();
    assert_eq!(report.operations(), 1);
    assert!(m.plan_state().draining.is_empty());
    assert_eq!(&kernel.table, m.desired());
}

#[test]
fn after_a_restart_the_drain_timeout_counts_from_the_saved_drain_start() {
    let (m, kernel, cp) = draining();
    let saved = m.plan_state().clone();
    // A new process 400 s later: a new machine over the same kernel.
    let mut again = machine(&cp);
    again.restore_plan_state(saved.clone());
    let mut kernel = Kernel {
        table: kernel.table,
        ..Kernel::default()
    };
    let report = kernel.tick(&mut again, at(401)).unwrap();
    assert_eq!((report.full, report.operations()), (true, 0), "adopted as it is");
    assert_eq!(again.plan_state(), &saved);
    // The default drain timeout is 600 s: 601 s after the drain began the
    // real server goes, though the connection never closed (counting
    // from the restart it would stay until 1,001 s).
    let due = again.poll_timeout().unwrap();
    assert!(due <= at(601));
    let mut report = None;
    let mut now = due;
    while now <= at(601) {
        report = kernel.tick(&mut again, now).or(report);
        now = again.poll_timeout().unwrap().max(now.plus(Duration::from_secs(1)));
    }
    let report = report.unwrap();
    assert!(matches!(
        report.applied.last(),
        Some(Operation::DeleteRealServer { real_server, .. }) if *real_server == rs("10.244.1.12")
    ));
    assert!(again.plan_state().draining.is_empty());
}

#[test]
fn answers_nothing_waits_for_are_ignored() {
    let cp = cluster(&[]);
    let mut m = machine(&cp);
    m.handle(SyncInput::Applied(Vec::new()), at(0));
    assert!(!m.is_syncing());
    m.start_sync(true, at(0));
    assert_eq!(m.poll_action(), Some(SyncAction::ObserveAll));
    m.handle(SyncInput::Applied(Vec::new()), at(0));
    assert!(m.is_syncing(), "still waiting for the table");
    assert_eq!(m.poll_timeout(), None, "no timer while a sync is under way");
    m.handle(SyncInput::Observed(IpvsTable::default()), at(0));
    assert!(matches!(m.poll_action(), Some(SyncAction::Apply(_))));
}

const API: &str = "apiVersion: v1\nkind: Service\nmetadata: {name: api}\nspec: {clusterIP: 10.96.0.30, selector: {app: web}, ports: [{name: https, port: 443, targetPort: 8080}, {name: http, port: 80, targetPort: 8080}]}\n";

/// Four virtual servers (kubernetes:443, web:80, api:80, api:443) on three
/// addresses, with periodic full syncs done in parts of two virtual
/// servers, after the first sync (a whole read) at `at(0)`.
fn in_parts() -> (SyncMachine, Kernel, ControlPlane) {
    let mut cp = cluster(&[("web-1", "10.244.1.11")]);
    for r in cp.apply_manifest(API).unwrap() {
        r.unwrap();
    }
    let settings = SyncSettings::new(Duration::from_secs(1), Duration::from_secs(30)).in_parts(2);
    let mut m = SyncMachine::new(ProxyConfig::default(), node(), settings);
    m.rebuild(cp.services(), cp.endpoint_slices(), node());
    let mut kernel = Kernel::default();
    assert!(kernel.tick(&mut m, at(0)).unwrap().full);
    assert_eq!(m.desired().virtual_servers.len(), 4);
    (m, kernel, cp)
}

/// Runs the parts due at `now` one after another; returns their reports.
fn parts(m: &mut SyncMachine, kernel: &mut Kernel, now: Time) -> Vec<SyncReport> {
    let mut reports = Vec::new();
    while let Some(report) = kernel.tick(m, now) {
        let last = report.part.is_none_or(|p| p.is_last());
        reports.push(report);
        if last {
            break;
        }
    }
    reports
}

/// Each report's part: (number, of).
fn part_numbers(reports: &[SyncReport]) -> Vec<(usize, usize)> {
    let part = |r: &SyncReport| r.part.map(|p| (p.number, p.of)).expect("a part");
    reports.iter().map(part).collect()
}

#[test]
fn a_full_sync_in_parts_repairs_drift_without_reading_the_whole_table() {
    let (mut m, mut kernel, _) = in_parts();
    let api = VirtualServerKey::new(Protocol::Tcp, "10.96.0.30".parse().unwrap(), 443);
    kernel.table.virtual_servers.remove(&web());
    kernel.table.addresses.remove(&"10.96.0.30".parse().unwrap());
    kernel.table.virtual_servers.get_mut(&api).unwrap().real_servers.clear();
    assert!(
        kernel.tick(&mut m, at(29)).is_none(),
        "nothing due before the sync period"
    );

    let reports = parts(&mut m, &mut kernel, at(30));
    let numbers = part_numbers(&reports);
    assert_eq!(
        numbers,
        vec![(1, 3), (2, 3), (3, 3)],
        "the outline, then two parts of two"
    );
    assert!(reports.iter().all(|r| !r.full && r.succeeded()));
    assert_eq!(kernel.whole_reads, 1, "only the first sync read the whole table");
    assert_eq!((kernel.outline_reads, kernel.part_reads.clone()), (1, vec![2, 2]));
    assert_eq!(
        &kernel.table,
        m.desired(),
        "the address, the virtual server and the real server are back"
    );
    assert_eq!(
        m.poll_timeout(),
        Some(at(60)),
        "the next full sync: a sync period after the first part"
    );
}

#[test]
fn a_full_sync_in_parts_deletes_a_virtual_server_added_behind_its_back_on_its_address() {
    let (mut m, mut kernel, _) = in_parts();
    // Someone runs `ipvsadm -A -t 10.96.0.20:8443`: an address the proxy
    // binds, a virtual server it does not want.
    let stray = VirtualServerKey::new(Protocol::Tcp, "10.96.0.20".parse().unwrap(), 8443);
    let web_server = kernel.table.virtual_servers[&web()].clone();
    kernel.table.virtual_servers.insert(stray, web_server);
    let reports = parts(&mut m, &mut kernel, at(30));
    let numbers = part_numbers(&reports);
    assert_eq!(
        numbers,
        vec![(1, 4), (2, 4), (3, 4), (4, 4)],
        "five virtual servers: three parts after the outline"
    );
    assert!(!kernel.table.virtual_servers.contains_key(&stray));
    assert_eq!(&kernel.table, m.desired());
    assert_eq!(kernel.whole_reads, 1);
}

#[test]
fn a_change_during_a_full_sync_in_parts_goes_with_the_next_part() {
    let (mut m, mut kernel, mut cp) = in_parts();
    let first = kernel.tick(&mut m, at(30)).unwrap();
    assert_eq!(first.part.map(|p| p.number), Some(1));
    assert!(first.applied.is_empty(), "nothing drifted");

    cp.apply_manifest(&pod("web-2", "10.244.1.12")).unwrap();
    update(&mut m, &cp);
    let slices = cp.endpoint_slices_for("default", "api");
    let api = cp.service("default", "api").unwrap();
    m.update_service("default/api", Some((api, slices.as_slice())));
    assert!(
        m.poll_timeout().unwrap() <= at(30),
        "the next part is due at once, min-sync-period or not"
    );
    let second = kernel.tick(&mut m, at(30)).unwrap();
    assert_eq!(second.part.map(|p| p.number), Some(2));
    let added: Vec<String> = second.applied.iter().map(|op| op.to_string()).collect();
    assert!(
        added.iter().filter(|op| op.contains("10.244.1.12:8080")).count() == 3,
        "web-2 joins all three virtual servers with the part after it changed: {added:?}"
    );
    assert!(kernel.tick(&mut m, at(30)).unwrap().part.unwrap().is_last());
    assert_eq!(&kernel.table, m.desired());
}

#[test]
fn a_failed_part_falls_back_to_a_whole_read_after_the_backoff() {
    let (mut m, mut kernel, _) = in_parts();
    kernel.tick(&mut m, at(30)).unwrap();
    kernel.fail_reads = true;
    let failed = kernel.tick(&mut m, at(30)).unwrap();
    assert_eq!(failed.part.map(|p| p.number), Some(2));
    assert_eq!(failed.read_error.as_deref(), Some("injected"));
    kernel.fail_reads = false;
    assert_eq!(m.poll_timeout(), Some(at(31)), "retried after the backoff");
    let retry = kernel.tick(&mut m, at(31)).unwrap();
    assert!(retry.full && retry.part.is_none() && retry.succeeded());
    assert_eq!(kernel.whole_reads, 2, "the retry reads the whole table");
    assert_eq!(m.poll_timeout(), Some(at(61)));
}
