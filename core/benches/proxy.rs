//! Proxy benchmarks at 10,000 Services × 10 endpoints (100,000 real
//! servers) on one node.
//!
//! Scenarios:
//! - building the desired table from all Services and EndpointSlices;
//! - the plan from an empty kernel (every address, virtual and real server);
//! - the full plan when nothing changed (a complete diff of two tables);
//! - one endpoint changes, three ways: a full rebuild of the desired table
//!   plus a full diff (what a naive proxy does), a full diff alone, and the
//!   incremental path (recompute the one Service's fragment in the
//!   `DesiredIndex`, then `plan_changes` over what it reports, then apply);
//! - the nftables ruleset after one endpoint change, two ways: built whole
//!   again (`desired_ruleset`, what `run` did after every sync before the
//!   ruleset was kept), and kept by the sync machine beside the desired
//!   table (`SyncMachine::update_service` with `keep_ruleset`: the
//!   Service's fragment and set elements);
//! - rendering the whole table as `ipvsadm-save -n` text;
//! - API mode's start: every Service fed to an empty sync machine (keeping
//!   the nftables ruleset) one list page of 500 at a time, each page's
//!   additions planned and handed over as applied before the next page
//!   comes (what the agent did while its first lists arrive, kernel
//!   aside); the same table first (`SyncMachine::add_table_first`, what
//!   the agent does now: the nftables elements wait), and the ruleset
//!   caught up once the lists are in.
//!
//! Criterion measures every scenario. Then, in the same run, each is timed
//! again with `std::time::Instant` and the figures are written to
//! `benchmarks/proxy.json` and `benchmarks/proxy.md` (committed, quoted by
//! the README). Run with `cargo bench --bench proxy`; under `cargo test`
//! (no `--bench` argument) criterion only smoke-tests and no figures are
//! written.

use criterion::{BatchSize, Criterion, SamplingMode};
use std::hint::black_box;
use std::net::Ipv4Addr;
use std::path::PathBuf;
use std::time::{Duration, Instant};
use svcnet_core::api::endpoint_slice::{Endpoint, EndpointPort, SERVICE_NAME_LABEL};
use svcnet_core::api::service::ServicePort;
use svcnet_core::api::{EndpointSlice, Service};
use svcnet_core::proxy::nftables::desired_ruleset;
use svcnet_core::proxy::sync_loop::{SyncAction, SyncInput, SyncMachine, SyncSettings};
use svcnet_core::proxy::{
    apply_plan, desired_table, ipvsadm_save, plan, plan_changes, DesiredIndex, IpvsTable, NodeInfo, PlanContext,
    PlanState, ProxyConfig,
};
use svcnet_core::time::Time;

const SERVICES: u32 = 10_000;
const ENDPOINTS: u32 = 10;
/// The Service whose endpoint changes.
const CHANGED: u32 = 4_321;
/// Objects per list page in API mode (the agent's, as kube-proxy's).
const PAGE: usize = 500;

fn service(i: u32) -> Service {
    let mut svc = Service::default();
    svc.metadata.name = format!("svc-{i}");
    svc.metadata.namespace = "default".into();
    svc.spec.service_type = "ClusterIP".into();
    let ip = Ipv4Addr::from(u32::from(Ipv4Addr::new(10, 96, 0, 10)) + i).to_string();
    svc.spec.cluster_ip = ip.clone();
    svc.spec.cluster_ips = vec![ip];
    svc.spec.ports = vec![ServicePort {
        name: "http".into(),
        protocol: "TCP".into(),
        port: 80,
        ..Default::default()
    }];
    svc.spec.session_affinity = "None".into();
    svc.spec.internal_traffic_policy = Some("Cluster".into());
    svc
}

/// The slice of Service `i`; `generation` moves its first endpoint.
fn slice(i: u32, generation: u32) -> EndpointSlice {
    let base = u32::from(Ipv4Addr::new(10, 128, 0, 0)) + i * 16;
    let endpoints = (0..ENDPOINTS)
        .map(|j| {
            let offset = if j == 0 { j + 11 * (generation % 2) } else { j };
            Endpoint {
                addresses: vec![Ipv4Addr::from(base + offset).to_string()],
                node_name: Some(format!("node-{}", j % 3)),
                ..Default::default()
            }
        })
        .collect();
    let mut s = EndpointSlice {
        address_type: "IPv4".into(),
        endpoints,
        ports: vec![EndpointPort {
            name: Some("http".into()),
            protocol: Some("TCP".into()),
            port: Some(8080),
            app_protocol: None,
        }],
        ..Default::default()
    };
    s.metadata.name = format!("svc-{i}-abcde");
    s.metadata.namespace = "default".into();
    s.metadata.labels.insert(SERVICE_NAME_LABEL.into(), format!("svc-{i}"));
    s
}

/// The inputs and prepared tables, shared by criterion and the figures.
struct World {
    services: Vec<Service>,
    slices: Vec<EndpointSlice>,
    /// `slices` after the changed Service's endpoint moved.
    changed_slices: Vec<EndpointSlice>,
    node: NodeInfo,
    config: ProxyConfig,
    desired: IpvsTable,
    /// The desired table after the changed Service's endpoint moved.
    desired_changed: IpvsTable,
    /// The kernel, in step with `desired`.
    kernel: IpvsTable,
    /// The index and the kernel the incremental scenario changes, one
    /// endpoint at a time.
    index: DesiredIndex,
    incremental_kernel: IpvsTable,
    /// A sync machine keeping the nftables ruleset beside the desired
    /// table, for the kept-ruleset scenario.
    machine: SyncMachine,
}

impl World {
    fn build() -> World {
        let services: Vec<Service> = (0..SERVICES).map(service).collect();
        let slices: Vec<EndpointSlice> = (0..SERVICES).map(|i| slice(i, 0)).collect();
        let node = NodeInfo {
            name: "node-0".into(),
            ips: vec!["192.168.0.10".parse().expect("valid")],
            zone: None,
        };
        let config = ProxyConfig::default();
        let desired = desired_table(&services, &slices, &node, &config).table;
        let mut changed_slices = slices.clone();
        changed_slices[CHANGED as usize] = slice(CHANGED, 1);
        let desired_changed = desired_table(&services, &changed_slices, &node, &config).table;
        let index = DesiredIndex::build(&services, &slices, &node, &config);
        let settings = SyncSettings::new(Duration::from_secs(1), Duration::from_secs(30));
        let mut machine = SyncMachine::new(config.clone(), node.clone(), settings);
        machine.keep_ruleset();
        machine.rebuild(&services, &slices, node.clone());
        World {
            machine,
            kernel: desired.clone(),
            incremental_kernel: desired.clone(),
            services,
            slices,
            changed_slices,
            node,
            config,
            desired,
            desired_changed,
            index,
        }
    }

    fn ctx(&self) -> PlanContext {
        PlanContext::new(&self.config, &self.node, Time::ZERO)
    }

    /// One endpoint change through the index: recompute the Service,
    /// plan what changed, apply it to the kernel. Alternates between two
    /// generations so it can repeat; returns the number of operations.
    fn incremental_change(&mut self, generation: u32, state: &mut PlanState) -> usize {
        let moved = slice(CHANGED, generation);
        let changes = self
            .index
            .update(&self.services[CHANGED as usize], &[&moved], &self.node, &self.config);
        let planned = plan_changes(
            &self.incremental_kernel,
            self.index.table(),
            &changes,
            state,
            &self.ctx(),
        );
        apply_plan(&mut self.incremental_kernel, &planned).expect("the kernel accepts the plan");
        *state = planned.state;
        planned.operations.len()
    }

    /// API mode's start: the Services arrive a list page at a time into
    /// an empty sync machine keeping the ruleset, and each page's
    /// additions are planned and reported applied before the next page.
    /// `table_first`: each Service goes in as the agent adds it while its
    /// lists arrive ([`SyncMachine::add_table_first`]: its nftables
    /// elements wait, see [`catch_up_ruleset`]); otherwise with its
    /// elements ([`SyncMachine::update_service`]). Returns the machine (to
    /// be dropped outside the timing: the agent keeps it) and the
    /// operations handed out.
    fn additions_from_empty(&self, table_first: bool) -> (SyncMachine, usize) {
        let settings = SyncSettings::new(Duration::from_secs(1), Duration::from_secs(30));
        let mut machine = SyncMachine::new(self.config.clone(), self.node.clone(), settings);
        machine.keep_ruleset();
        machine.rebuild(
            std::iter::empty::<&Service>(),
            std::iter::empty::<&EndpointSlice>(),
            self.node.clone(),
        );
        // The first sync reads the kernel, empty.
        machine.start_sync(false, Time::ZERO);
        let mut operations = drive(&mut machine);
        for (page, services) in self.services.chunks(PAGE).enumerate() {
            for (i, svc) in services.iter().enumerate() {
                let slices = [&self.slices[page * PAGE + i]];
                if table_first {
                    machine.add_table_first(svc, &slices);
                } else {
                    machine.update_service(&svc.key(), Some((svc, &slices)));
                }
            }
            machine.start_additions(Time::ZERO);
            operations += drive(&mut machine);
        }
        (machine, operations)
    }

    /// Once the lists are in, after additions table first: every
    /// Service's nftables elements, as the agent catches its ruleset up.
    fn catch_up_ruleset(&self, machine: &mut SyncMachine) {
        for (svc, slice) in self.services.iter().zip(&self.slices) {
            machine.update_ruleset(&svc.key(), Some((svc, &[slice])));
        }
    }

    /// One endpoint change fed to the sync machine, which keeps the
    /// desired table and the nftables ruleset up to date.
    fn kept_ruleset_change(&mut self, generation: u32) {
        let moved = slice(CHANGED, generation);
        let svc = &self.services[CHANGED as usize];
        self.machine.update_service(&svc.key(), Some((svc, &[&moved])));
    }
}

/// Answers a sync machine's actions as an empty kernel that accepts
/// everything, until its sync reports; returns the operations applied.
fn drive(machine: &mut SyncMachine) -> usize {
    let mut operations = 0;
    while let Some(action) = machine.poll_action() {
        let answer = match action {
            SyncAction::ObserveAll => SyncInput::Observed(IpvsTable::new()),
            SyncAction::ObserveVirtualServers(_) => SyncInput::ObservedVirtualServers(Default::default()),
            SyncAction::ObserveOutline => SyncInput::ObservedOutline(Default::default()),
            SyncAction::Apply(planned) => {
                operations += planned.len();
                SyncInput::Applied(Vec::new())
            }
        };
        machine.handle(answer, Time::ZERO);
    }
    let report = machine.poll_report().expect("the sync reports");
    assert!(report.failed.is_empty(), "nothing fails");
    operations
}

fn criterion_benches(c: &mut Criterion, world: &mut World) {
    let ctx = world.ctx();
    let empty = IpvsTable::new();
    let state = PlanState::default();
    let mut group = c.benchmark_group("proxy_10k_services");
    group.sampling_mode(SamplingMode::Flat);
    group.sample_size(10);
    group.measurement_time(Duration::from_secs(5));
    group.bench_function("build_desired_table", |b| {
        b.iter(|| {
            black_box(desired_table(
                &world.services,
                &world.slices,
                &world.node,
                &world.config,
            ))
        })
    });
    group.bench_function("plan_from_empty_kernel", |b| {
        b.iter(|| black_box(plan(&empty, &world.desired, &state, &ctx)))
    });
    group.bench_function("full_plan_nothing_changed", |b| {
        b.iter(|| black_box(plan(&world.kernel, &world.desired, &state, &ctx)))
    });
    group.bench_function("one_endpoint_full_diff", |b| {
        b.iter(|| black_box(plan(&world.kernel, &world.desired_changed, &state, &ctx)))
    });
    group.bench_function("api_mode_additions_from_empty", |b| {
        b.iter_with_large_drop(|| world.additions_from_empty(false))
    });
    group.bench_function("api_mode_additions_from_empty_table_first", |b| {
        b.iter_with_large_drop(|| world.additions_from_empty(true))
    });
    group.bench_function("ipvsadm_save_text", |b| {
        b.iter(|| black_box(ipvsadm_save(&world.desired)))
    });
    group.bench_function("one_endpoint_nftables_ruleset_rebuilt", |b| {
        b.iter(|| {
            black_box(desired_ruleset(
                &world.services,
                &world.changed_slices,
                &world.node,
                &world.config,
            ))
        })
    });
    group.finish();

    let mut group = c.benchmark_group("proxy_one_endpoint_incremental");
    let mut generation = 0;
    let mut state = PlanState::default();
    group.bench_function("index_update_plan_changes_apply", |b| {
        b.iter_batched_ref(
            || {
                generation += 1;
                generation
            },
            |g| world.incremental_change(*g, &mut state),
            BatchSize::SmallInput,
        )
    });
    group.bench_function("sync_machine_update_service_with_ruleset", |b| {
        b.iter_batched_ref(
            || {
                generation += 1;
                generation
            },
            |g| world.kept_ruleset_change(*g),
            BatchSize::SmallInput,
        )
    });
    group.finish();
}

/// One timed scenario for the results files.
struct Figure {
    name: &'static str,
    what: &'static str,
    ns: f64,
    operations: usize,
}

/// The median time of `rounds` runs of `run`, which returns its own
/// measured duration and the number of plan operations it produced.
fn median(rounds: usize, mut run: impl FnMut() -> (Duration, usize)) -> (f64, usize) {
    let mut times = Vec::with_capacity(rounds);
    let mut operations = 0;
    for _ in 0..rounds {
        let (elapsed, ops) = run();
        operations = ops;
        times.push(elapsed.as_nanos() as f64);
    }
    times.sort_by(f64::total_cmp);
    (times[times.len() / 2], operations)
}

fn timed<T>(f: impl FnOnce() -> T) -> (Duration, T) {
    let start = Instant::now();
    let out = f();
    (start.elapsed(), out)
}

fn figures(world: &mut World) -> Vec<Figure> {
    let ctx = world.ctx();
    let empty = IpvsTable::new();
    let state = PlanState::default();
    let mut out = Vec::new();
    let (ns, _) = median(5, || {
        let (t, d) = timed(|| desired_table(&world.services, &world.slices, &world.node, &world.config));
        black_box(d);
        (t, 0)
    });
    out.push(Figure {
        name: "build desired table",
        what: "desired_table over 10,000 Services and their EndpointSlices",
        ns,
        operations: 0,
    });
    let (ns, operations) = median(5, || {
        let (t, p) = timed(|| plan(&empty, &world.desired, &state, &ctx));
        (t, p.operations.len())
    });
    out.push(Figure {
        name: "plan from an empty kernel",
        what: "plan: bind every address, add every virtual and real server",
        ns,
        operations,
    });
    let (ns, operations) = median(5, || {
        let (t, p) = timed(|| plan(&world.kernel, &world.desired, &state, &ctx));
        (t, p.operations.len())
    });
    out.push(Figure {
        name: "full plan, nothing changed",
        what: "plan: complete diff of two equal 100,000-real-server tables",
        ns,
        operations,
    });
    let (ns, operations) = median(5, || {
        let (t, p) = timed(|| {
            let desired = desired_table(&world.services, &world.changed_slices, &world.node, &world.config).table;
            plan(&world.kernel, &desired, &state, &ctx)
        });
        (t, p.operations.len())
    });
    out.push(Figure {
        name: "one endpoint changes: full rebuild + full diff",
        what: "desired_table again, then plan (what a non-incremental proxy does)",
        ns,
        operations,
    });
    let (ns, operations) = median(5, || {
        let (t, p) = timed(|| plan(&world.kernel, &world.desired_changed, &state, &ctx));
        (t, p.operations.len())
    });
    out.push(Figure {
        name: "one endpoint changes: full diff only",
        what: "plan against a desired table already rebuilt",
        ns,
        operations,
    });
    let mut generation = 0;
    let mut drain = PlanState::default();
    let (ns, operations) = median(201, || {
        generation += 1;
        timed(|| world.incremental_change(generation, &mut drain))
    });
    out.push(Figure {
        name: "one endpoint changes: incremental",
        what: "DesiredIndex::update of the Service + plan_changes + apply_plan",
        ns,
        operations,
    });
    let (ns, _) = median(5, || {
        let (t, table) = timed(|| desired_ruleset(&world.services, &world.changed_slices, &world.node, &world.config));
        black_box(table);
        (t, 0)
    });
    out.push(Figure {
        name: "one endpoint changes: nftables ruleset rebuilt whole",
        what: "desired_ruleset over every Service again (what run did after each sync before it kept the ruleset)",
        ns,
        operations: 0,
    });
    let (ns, _) = median(201, || {
        generation += 1;
        let (t, ()) = timed(|| world.kept_ruleset_change(generation));
        (t, 0)
    });
    out.push(Figure {
        name: "one endpoint changes: desired table and nftables ruleset kept",
        what: "SyncMachine::update_service with keep_ruleset: the Service's fragment and set elements",
        ns,
        operations: 0,
    });
    let (ns, operations) = median(5, || {
        let (t, (machine, operations)) = timed(|| world.additions_from_empty(false));
        drop(machine);
        (t, operations)
    });
    out.push(Figure {
        name: "API mode's start: additions page by page",
        what: "every Service into an empty SyncMachine keeping the ruleset, 500 per list page, each page's additions planned and applied before the next",
        ns,
        operations,
    });
    let (ns, operations) = median(5, || {
        let (t, (machine, operations)) = timed(|| world.additions_from_empty(true));
        drop(machine);
        (t, operations)
    });
    out.push(Figure {
        name: "API mode's start: additions page by page, table first",
        what: "the same with add_table_first, as the agent adds while its lists arrive: the nftables elements wait",
        ns,
        operations,
    });
    let (ns, _) = median(5, || {
        let (mut machine, _) = world.additions_from_empty(true);
        let (t, ()) = timed(|| world.catch_up_ruleset(&mut machine));
        drop(machine);
        (t, 0)
    });
    out.push(Figure {
        name: "API mode's start: the ruleset caught up",
        what: "after the additions table first, once the lists are in: update_ruleset for every Service",
        ns,
        operations: 0,
    });
    let (ns, _) = median(5, || {
        let (t, text) = timed(|| ipvsadm_save(&world.desired));
        black_box(text);
        (t, 0)
    });
    out.push(Figure {
        name: "ipvsadm-save text",
        what: "ipvsadm_save of the whole table (110,000 lines)",
        ns,
        operations: 0,
    });
    out
}

fn format_time(ns: f64) -> String {
    if ns >= 1e6 {
        format!("{:.2} ms", ns / 1e6)
    } else if ns >= 1e3 {
        format!("{:.2} µs", ns / 1e3)
    } else {
        format!("{ns:.0} ns")
    }
}

fn find(figures: &[Figure], name: &str) -> f64 {
    figures.iter().find(|f| f.name == name).map_or(f64::NAN, |f| f.ns)
}

fn results_dir() -> PathBuf {
    // The committed results folder the README quotes: <workspace>/benchmarks.
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..").join("benchmarks")
}

fn write_results(figures: &[Figure], real_servers: usize) -> std::io::Result<PathBuf> {
    let speedup = find(figures, "one endpoint changes: full rebuild + full diff")
        / find(figures, "one endpoint changes: incremental");
    let ruleset_speedup = find(figures, "one endpoint changes: nftables ruleset rebuilt whole")
        / find(figures, "one endpoint changes: desired table and nftables ruleset kept");
    let paging_cost = find(figures, "API mode's start: additions page by page")
        / (find(figures, "build desired table") + find(figures, "plan from an empty kernel"));
    let table_first_speedup = find(figures, "API mode's start: additions page by page")
        / find(figures, "API mode's start: additions page by page, table first");
    let json = serde_json::json!({
        "benchmark": "cargo bench --bench proxy",
        "unit": "nanoseconds per run (median of rounds, std::time::Instant)",
        "services": SERVICES,
        "endpointsPerService": ENDPOINTS,
        "realServers": real_servers,
        "scenarios": figures.iter().map(|f| serde_json::json!({
            "name": f.name,
            "operation": f.what,
            "ns": f.ns,
            "planOperations": f.operations,
        })).collect::<Vec<_>>(),
        "incrementalSpeedupOverFullRebuild": speedup,
        "keptRulesetSpeedupOverRebuild": ruleset_speedup,
        "additionsPageByPageOverAllAtOnce": paging_cost,
        "additionsRulesetKeptOverTableFirst": table_first_speedup,
    });
    let mut md = format!(
        "# Proxy benchmarks\n\n\
         Measured by `cargo bench --bench proxy` (release build), in the same\n\
         run as criterion: median time per run with `std::time::Instant`.\n\
         One node, {SERVICES} ClusterIP Services × {ENDPOINTS} endpoints = {real_servers} real servers.\n\n\
         | Scenario | What is timed | Time | Plan operations |\n\
         |---|---|---:|---:|\n"
    );
    for f in figures {
        md.push_str(&format!(
            "| {} | {} | {} | {} |\n",
            f.name,
            f.what,
            format_time(f.ns),
            f.operations
        ));
    }
    md.push_str(&format!(
        "\nOne endpoint change, incremental vs full rebuild + full diff: **{speedup:.0}× faster**.\n\
         The nftables ruleset after one endpoint change, kept one Service at a time (with the desired\n\
         table) vs built whole again: **{ruleset_speedup:.0}× faster**.\n\
         API mode's start, page by page with the ruleset kept, costs {paging_cost:.1}× building the\n\
         desired table and planning it from empty all at once (which keeps no ruleset).\n\
         Table first (the nftables elements computed once the lists are in, as the agent does), the\n\
         work before a complete table is **{table_first_speedup:.2}× less**.\n"
    ));
    let dir = results_dir();
    std::fs::create_dir_all(&dir)?;
    std::fs::write(
        dir.join("proxy.json"),
        serde_json::to_string_pretty(&json).map_err(std::io::Error::other)? + "\n",
    )?;
    std::fs::write(dir.join("proxy.md"), md)?;
    Ok(dir)
}

fn main() {
    let measuring = std::env::args().any(|arg| arg == "--bench");
    let mut world = World::build();
    let real_servers = world.desired.real_server_count();
    assert_eq!(real_servers, (SERVICES * ENDPOINTS) as usize);
    let from_empty = plan(&IpvsTable::new(), &world.desired, &PlanState::default(), &world.ctx());
    assert_eq!(
        world.additions_from_empty(false).1,
        from_empty.operations.len(),
        "page by page, the same operations as all at once"
    );
    let (mut table_first, operations) = world.additions_from_empty(true);
    assert_eq!(
        operations,
        from_empty.operations.len(),
        "table first, the same operations"
    );
    assert!(table_first.ruleset() != world.machine.ruleset(), "the elements wait");
    world.catch_up_ruleset(&mut table_first);
    assert_eq!(
        table_first.ruleset(),
        world.machine.ruleset(),
        "caught up, the whole ruleset"
    );
    let mut criterion = Criterion::default()
        .sample_size(20)
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(2))
        .configure_from_args();
    criterion_benches(&mut criterion, &mut world);
    criterion.final_summary();
    if !measuring {
        return;
    }
    let figures = figures(&mut world);
    for f in &figures {
        println!(
            "{:<50} {:>12}  ({} operations)",
            f.name,
            format_time(f.ns),
            f.operations
        );
    }
    match write_results(&figures, real_servers) {
        Ok(dir) => println!("figures written to {}", dir.display()),
        Err(err) => eprintln!("could not write the figures: {err}"),
    }
}
