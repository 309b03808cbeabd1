//! The `ipvs-agent` binary: parses the command line, sets up logging, and
//! runs `plan`, `run` or `cleanup` with the library's parts. The kernel
//! dataplane is made in one place, [`connect_dataplane`].

use clap::Parser;
use futures_util::stream::BoxStream;
use futures_util::{FutureExt, StreamExt};
use ipvs_agent::agent::{load_plan_state, log_outcome, Agent, AgentSettings};
use ipvs_agent::api_agent::{ApiAgent, ApiSettings};
use ipvs_agent::cleanup::cleanup;
use ipvs_agent::cli::{Cli, Command, Common, LogFormat, MasqueradeArgs, PlanArgs, PlanFormat, RunArgs};
use ipvs_agent::clock::Clock;
use ipvs_agent::cluster::{Cluster, ClusterError};
use ipvs_agent::dataplane::DataplaneError;
use ipvs_agent::http::{self, Endpoints, Paths};
use ipvs_agent::kernel::nft::NftApplier;
use ipvs_agent::kernel::{apply_sysctls, IpvsSocket, LinuxDataplane};
use ipvs_agent::kubeapi::watch::WatchUpdate;
use ipvs_agent::kubeapi::{self, ApiSource};
use ipvs_agent::metrics::Metrics;
use ipvs_agent::netlink::Timeouts;
use ipvs_agent::nftables_sync::NftablesSync;
use ipvs_agent::node::{host_addresses, NodeFlags};
use ipvs_agent::service_health::ServiceHealthServers;
use ipvs_agent::state;
use ipvs_agent::sync::{SyncReport, SyncSettings};
use std::io::IsTerminal;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;
use svcnet_core::dns::DnsConfig;
use svcnet_core::proxy::nftables::empty_table;
use svcnet_core::proxy::service_health::service_health_checks;
use svcnet_core::proxy::{plan_output, NodeInfo, PlanInputs, PlanState, ProxyConfig};
use svcnet_core::time::Time;

/// mimalloc rather than glibc's malloc: reading thousands of manifests
/// allocates and frees many small objects (benchmarks/agent.md).
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

// Exit statuses, one per class of error (listed in `--help` and in
// ipvs-agent/README.md). 0 is success; 1 a sync or cleanup that did not
// complete, or an internal failure.

/// Exit status for bad flags or a bad `--config` file (clap uses 2 as well).
const USAGE: u8 = 2;

/// Exit status for bad input: manifests or state files that cannot be
/// read, do not decode, break an input limit or are refused.
const INPUT: u8 = 3;

/// Exit status when the apiserver cannot be reached or read (API mode).
const API: u8 = 4;

/// Exit status when the kernel cannot be programmed or read (netlink,
/// sysctls).
const KERNEL: u8 = 5;

fn main() -> ExitCode {
    let mut cli = Cli::parse();
    init_logging(cli.command.common().log_format);
    match cli.command.apply_kube_proxy_config() {
        Ok(warnings) => {
            for warning in warnings {
                tracing::warn!("--config: {warning}");
            }
        }
        Err(message) => {
            eprintln!("error: {message}");
            return ExitCode::from(USAGE);
        }
    }
    let result = match cli.command {
        Command::Plan(args) => plan(&args),
        Command::Run(args) => runtime().and_then(|rt| rt.block_on(run(args))),
        Command::Cleanup(args) => runtime().and_then(|rt| rt.block_on(cleanup_command(&args.common))),
        Command::Sysctls(args) => sysctls_command(args.ipvs_strict_arp),
    };
    match result {
        Ok(code) => code,
        Err(Failure { message, status }) => {
            eprintln!("error: {message}");
            ExitCode::from(status)
        }
    }
}

/// A failed command: the one-line message and the exit status.
struct Failure {
    message: String,
    status: u8,
}

impl From<ClusterError> for Failure {
    fn from(e: ClusterError) -> Self {
        let status = match e {
            ClusterError::Config(_) => USAGE,
            ClusterError::State(_) | ClusterError::Manifest(_) => INPUT,
        };
        Failure {
            message: e.to_string(),
            status,
        }
    }
}

fn failure(message: impl ToString, status: u8) -> Failure {
    Failure {
        message: message.to_string(),
        status,
    }
}

/// The async runtime: the command runs on the main thread, and spawned
/// tasks (API mode's watch streams, which decode the lists while the main
/// thread programs the kernel; the HTTP endpoints) on two workers.
fn runtime() -> Result<tokio::runtime::Runtime, Failure> {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .map_err(|e| failure(format!("cannot start the async runtime: {e}"), 1))
}

fn init_logging(format: LogFormat) {
    let builder = tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .with_max_level(tracing::Level::INFO)
        .with_target(false);
    match format {
        LogFormat::Text => builder.with_ansi(std::io::stderr().is_terminal()).init(),
        LogFormat::Json => builder.json().flatten_event(true).init(),
    }
}

/// The cluster from the common flags: state file read, manifests applied
/// (so bad flags, state or manifests stop every command before it touches
/// the kernel). `run` hands it on to the agent.
fn load_cluster(common: &Common, announce: bool) -> Result<Cluster, Failure> {
    let mut cluster = Cluster::open(
        common.cluster_config(),
        common.state_file.clone(),
        common.manifests.clone(),
    )?;
    let refreshed = cluster.refresh().map_err(|e| failure(e, INPUT))?;
    if let Some(refreshed) = refreshed.filter(|_| announce) {
        log_outcome(&refreshed);
    }
    Ok(cluster)
}

fn proxy_config(common: &Common, drain_timeout_seconds: u64) -> ProxyConfig {
    ProxyConfig {
        scheduler: common.scheduler.clone(),
        node_port_range: common.service_node_port_range,
        drain_timeout_seconds,
        exclude_cidrs: common.ipvs_exclude_cidrs.clone(),
        ..ProxyConfig::default()
    }
}

/// [`proxy_config`] with the settings of the nftables rules: what `run`
/// keeps and `plan` prints.
fn masquerading_proxy_config(common: &Common, masquerade: &MasqueradeArgs, drain_timeout_seconds: u64) -> ProxyConfig {
    ProxyConfig {
        masquerade_all: masquerade.masquerade_all,
        cluster_cidrs: masquerade.cluster_cidr.clone(),
        ..proxy_config(common, drain_timeout_seconds)
    }
}

/// The node's name and addresses from the flags: `--node-ip`, else the
/// host's addresses inside the `--nodeport-addresses` CIDRs (all of them
/// for `all`), else none (the Node object's, or the host's, later).
fn node_flags(common: &Common) -> NodeFlags {
    let mut ips = common.node_ip.clone();
    if ips.is_empty() && !common.nodeport_addresses.is_empty() {
        let cidrs: Vec<ipnetwork::IpNetwork> = common
            .nodeport_addresses
            .iter()
            .filter_map(|c| c.parse().ok())
            .collect();
        let all = common.nodeport_addresses.iter().any(|a| a == "all");
        ips = host_addresses()
            .into_iter()
            .filter(|ip| all || cidrs.iter().any(|c| c.contains(*ip)))
            .collect();
    }
    NodeFlags::new(common.node_name.clone(), ips)
}

fn node_info(common: &Common, cluster: &Cluster) -> Result<NodeInfo, Failure> {
    node_flags(common)
        .resolve(cluster.control_plane(), host_addresses)
        .map_err(|e| failure(e, USAGE))
}

/// `plan`: what `run` would program, printed.
fn plan(args: &PlanArgs) -> Result<ExitCode, Failure> {
    let common = &args.common;
    if let Some(source) = common.api_source() {
        return runtime().and_then(|rt| rt.block_on(plan_from_api(args, &source)));
    }
    let cluster = load_cluster(common, false)?;
    let cp = cluster.control_plane();
    let node = node_info(common, &cluster)?;
    let proxy = plan_proxy_config(args);
    let inputs = PlanInputs {
        services: cp.services().collect(),
        slices: cp.endpoint_slices().collect(),
        node: &node,
        proxy: &proxy,
        dns: &cp.config().dns,
    };
    print_plan(args.format, &inputs);
    Ok(ExitCode::SUCCESS)
}

/// Prints the plan in `format`, its warnings logged first.
fn print_plan(format: PlanFormat, inputs: &PlanInputs) {
    let output = plan_output(format.into(), inputs);
    for warning in &output.warnings {
        tracing::warn!("{warning}");
    }
    print!("{}", output.text);
}

/// The proxy settings `plan` computes with.
fn plan_proxy_config(args: &PlanArgs) -> ProxyConfig {
    masquerading_proxy_config(
        &args.common,
        &args.masquerade,
        ProxyConfig::default().drain_timeout_seconds,
    )
}

/// `plan` in API mode: one list of each kind from the apiserver, the
/// node's addresses from the flags, else its Node object, else the host.
async fn plan_from_api(args: &PlanArgs, source: &ApiSource) -> Result<ExitCode, Failure> {
    let common = &args.common;
    let client = kubeapi::connect(source).await.map_err(|e| failure(e, API))?;
    let flags = node_flags(common);
    let cache = kubeapi::list::list(&client, &flags.name)
        .await
        .map_err(|e| failure(e, API))?;
    let mut node = cache.node_info();
    if !flags.ips.is_empty() {
        node.ips = flags.ips.clone();
    } else if node.ips.is_empty() {
        node.ips = host_addresses();
    }
    let proxy = plan_proxy_config(args);
    let dns = DnsConfig {
        zone: common.cluster_domain.clone(),
        ..DnsConfig::default()
    };
    let inputs = PlanInputs {
        services: cache.services().collect(),
        slices: cache.slices().collect(),
        node: &node,
        proxy: &proxy,
        dns: &dns,
    };
    print_plan(args.format, &inputs);
    Ok(ExitCode::SUCCESS)
}

/// `run`: the agent, until SIGTERM or Ctrl-C (or after one sync with `--once`).
async fn run(args: RunArgs) -> Result<ExitCode, Failure> {
    let common = &args.common;
    let metrics = Arc::new(Metrics::new(args.sync_period.saturating_mul(2)));
    if let Some(source) = common.api_source() {
        // The watch streams start before anything else: their connections,
        // and the read of `default/kubernetes` on its own, go on in their
        // tasks while the kernel is set up.
        let client = kubeapi::connect(&source).await.map_err(|e| failure(e, API))?;
        let updates = kubeapi::watch::watch(client, &node_flags(common).name);
        let nftables = nftables_sync(&args, metrics.clone())?;
        return run_api(&args, updates, nftables, metrics).await;
    }
    let mut nftables = nftables_sync(&args, metrics.clone())?;
    let mut cluster = load_cluster(common, true)?;
    // The state file is written while the kernel is set up and the table
    // built; the first sync ends by waiting for it (`Agent::start`).
    // Nothing was begun before, so there is no earlier result to take.
    cluster.begin_save();
    let plan_state = load_plan_state(&cluster);
    // The state file is written only when allocations change, so drain
    // start times saved after it may be later than its time: the clock
    // starts after both, and a drain never counts from a time to come.
    let saved = (plan_state.draining.iter())
        .map(|(_, _, since)| since)
        .fold(cluster.control_plane().now(), Time::max);
    let clock = Clock::starting_at_least(saved);
    let node = node_flags(common);
    let host_ips = if common.node_ip.is_empty() {
        host_addresses()
    } else {
        Vec::new()
    };
    let settings = AgentSettings {
        node,
        host_ips,
        proxy: masquerading_proxy_config(common, &args.masquerade, args.drain_timeout.as_secs()),
        sync: sync_settings(&args),
        conntrack_cleanup: args.conntrack_cleanup,
        nftables: nftables.kept(),
    };
    let dataplane = run_dataplane(&args).await?;
    let mut agent = Agent::start(cluster, plan_state, dataplane, settings, metrics.clone(), clock.now())?;

    if args.once {
        // The sync ends by waiting for the state file's write begun at
        // start; a sync changes no allocation (and the sync saved the plan
        // state if it changed).
        let report = agent.sync_now(clock.now()).await;
        let nftables_synced = sync_nftables_standalone(&mut nftables, &agent)?;
        return Ok(if report.succeeded() && nftables_synced {
            ExitCode::SUCCESS
        } else {
            ExitCode::from(1)
        });
    }

    serve_endpoints(&args, metrics.clone()).await;
    let mut health_checks = ServiceHealthServers::new(metrics);
    let shutdown = shutdown_signal();
    tokio::pin!(shutdown);
    loop {
        if agent.step(clock.now()).await.is_some() {
            if let Err(failure) = sync_nftables_standalone(&mut nftables, &agent) {
                agent.save();
                return Err(failure);
            }
            let cp = agent.control_plane();
            let node = agent.sync_loop().node();
            health_checks.sync(
                service_health_checks(cp.services(), cp.endpoint_slices(), node),
                &node.ips,
            );
        }
        let now = clock.now();
        let wait = agent.next_wake(now).since(now);
        tokio::select! {
            _ = tokio::time::sleep(wait) => {}
            _ = &mut shutdown => break,
        }
    }
    agent.save();
    tracing::info!("stopped; the kernel's table stays as programmed");
    Ok(ExitCode::SUCCESS)
}

/// `run`'s table `inet svcnet`, as `--nftables` asks (on by default); its
/// ruleset is the one the sync loop keeps beside the IPVS table, with the
/// same proxy settings.
fn nftables_sync(args: &RunArgs, metrics: Arc<Metrics>) -> Result<NftablesSync, Failure> {
    NftablesSync::start(args.nftables_mode(), metrics, NftApplier::open).map_err(|e| failure(e, KERNEL))
}

/// [`NftablesSync::sync`] from the standalone control plane.
fn sync_nftables_standalone(nftables: &mut NftablesSync, agent: &Agent<LinuxDataplane>) -> Result<bool, Failure> {
    nftables
        .sync(agent.sync_loop().ruleset())
        .map_err(|e| failure(e, KERNEL))
}

/// [`NftablesSync::sync`] from the API's watch cache, once its first
/// lists are whole and after a sync that was not additions only: before
/// that, the cache may lack a Service's slices.
fn sync_nftables_api(
    nftables: &mut NftablesSync,
    agent: &ApiAgent<LinuxDataplane>,
    reports: &[SyncReport],
) -> Result<bool, Failure> {
    if !agent.synced() || reports.iter().all(|r| r.additions_only) {
        return Ok(true);
    }
    nftables
        .sync(agent.sync_loop().ruleset())
        .map_err(|e| failure(e, KERNEL))
}

/// `cleanup`: table `inet svcnet` deleted if there is one. True unless the
/// kernel refused (a kernel without nf_tables has no table to delete).
fn cleanup_nftables() -> bool {
    let deleted = NftApplier::open().and_then(|mut applier| applier.delete(&empty_table(&ProxyConfig::default())));
    match deleted {
        Ok(()) => {
            tracing::info!("nftables table inet svcnet deleted (if it was there)");
            true
        }
        Err(e) if e.missing_nf_tables().is_some() => {
            tracing::debug!(error = %e, "no nf_tables in this kernel: no table to delete");
            true
        }
        Err(e) => {
            tracing::warn!(error = %e, "nftables table inet svcnet not deleted");
            false
        }
    }
}

/// `run` in API mode: the watch streams feed the agent until SIGTERM or
/// Ctrl-C (or, with `--once`, until the first complete sync).
async fn run_api(
    args: &RunArgs,
    mut updates: BoxStream<'static, WatchUpdate>,
    mut nftables: NftablesSync,
    metrics: Arc<Metrics>,
) -> Result<ExitCode, Failure> {
    let common = &args.common;
    let flags = node_flags(common);
    let plan_state_file = common.state_file.as_deref().map(state::plan_state_path);
    let plan_state = match plan_state_file.as_deref().map(state::load_plan_state) {
        Some(Ok(Some(saved))) => saved,
        Some(Err(e)) => {
            tracing::warn!(error = %e, "starting without the saved plan state: draining real servers start their drain timeout again");
            PlanState::default()
        }
        _ => PlanState::default(),
    };
    let saved = (plan_state.draining.iter())
        .map(|(_, _, since)| since)
        .fold(Time::ZERO, Time::max);
    let clock = Clock::starting_at_least(saved);
    let settings = ApiSettings {
        node_name: flags.name.clone(),
        host_ips: if flags.ips.is_empty() {
            host_addresses()
        } else {
            Vec::new()
        },
        node_ips: flags.ips,
        proxy: masquerading_proxy_config(common, &args.masquerade, args.drain_timeout.as_secs()),
        sync: sync_settings(args),
        plan_state_file,
        conntrack_cleanup: args.conntrack_cleanup,
        nftables: nftables.kept(),
    };
    let dataplane = run_dataplane(args).await?;
    tracing::info!(node = %settings.node_name, "API mode: waiting for the first lists of Services, EndpointSlices and the Node");
    let mut agent = ApiAgent::new(settings, plan_state, dataplane, metrics.clone());
    if !args.once {
        serve_endpoints(args, metrics.clone()).await;
    }
    let mut health_checks = ServiceHealthServers::new(metrics);
    let shutdown = shutdown_signal();
    tokio::pin!(shutdown);
    loop {
        let reports = agent.step(clock.now()).await;
        let nftables_synced = match sync_nftables_api(&mut nftables, &agent, &reports) {
            Ok(synced) => synced,
            Err(failure) => {
                agent.save_plan_state();
                return Err(failure);
            }
        };
        if !args.once && agent.synced() && !reports.is_empty() {
            let (cache, node) = (agent.cache(), agent.sync_loop().node());
            health_checks.sync(service_health_checks(cache.services(), cache.slices(), node), &node.ips);
        }
        if args.once {
            if let Some(full) = reports.iter().find(|r| r.full) {
                return Ok(if full.succeeded() && nftables_synced {
                    ExitCode::SUCCESS
                } else {
                    ExitCode::from(1)
                });
            }
        }
        let now = clock.now();
        let wait = agent.next_wake(now).map(|t| t.since(now));
        tokio::select! {
            update = updates.next() => {
                let Some(update) = update else { break };
                agent.handle(update);
                // Take what else has arrived before stepping.
                while let Some(Some(update)) = updates.next().now_or_never() {
                    agent.handle(update);
                }
            }
            _ = tokio::time::sleep(wait.unwrap_or(Duration::from_secs(3600))), if wait.is_some() => {}
            _ = &mut shutdown => break,
        }
    }
    agent.save_plan_state();
    tracing::info!("stopped; the kernel's table stays as programmed");
    Ok(ExitCode::SUCCESS)
}

/// The sync loop's periods, and full syncs in parts of `--full-sync-part`
/// virtual servers unless it is 0.
fn sync_settings(args: &RunArgs) -> SyncSettings {
    let settings = SyncSettings::new(args.min_sync_period, args.sync_period);
    match args.full_sync_part {
        0 => settings,
        part => settings.in_parts(part),
    }
}

/// Serves /healthz and /livez on the health address, and /metrics (with
/// /healthz and /livez) on the metrics address (logged when one cannot be
/// bound).
async fn serve_endpoints(args: &RunArgs, metrics: Arc<Metrics>) {
    for (what, addr, paths) in [
        ("/healthz and /livez", args.healthz_bind_address, Paths::Health),
        ("/metrics", args.metrics_bind_address, Paths::Metrics),
    ] {
        match tokio::net::TcpListener::bind(addr).await {
            Ok(listener) => {
                tracing::info!(%addr, "serving {what}");
                let endpoints = Endpoints {
                    metrics: metrics.clone(),
                    paths,
                };
                tokio::spawn(http::serve(listener, endpoints));
            }
            Err(e) => tracing::error!(%addr, error = %e, "cannot serve {what}"),
        }
    }
}

async fn shutdown_signal() {
    let term = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut s) => {
                s.recv().await;
            }
            Err(_) => std::future::pending::<()>().await,
        }
    };
    tokio::select! {
        _ = tokio::signal::ctrl_c() => {}
        _ = term => {}
    }
}

/// `cleanup`: everything owned goes, nothing else.
async fn cleanup_command(common: &Common) -> Result<ExitCode, Failure> {
    let cluster = load_cluster(common, false)?;
    let node = node_info(common, &cluster)?;
    let mut dataplane = connect_dataplane(true, false)
        .await
        .map_err(|e| failure(format!("cannot program the kernel: {e}"), KERNEL))?;
    let now = Clock::starting_at_least(cluster.control_plane().now()).now();
    let proxy = proxy_config(common, 0);
    let report = cleanup(&mut dataplane, &node, &proxy, now)
        .await
        .map_err(|e| failure(format!("cannot read the kernel's IPVS table: {e}"), KERNEL))?;
    for line in &report.failed {
        tracing::warn!("not removed: {line}");
    }
    if let Some(e) = &report.link_error {
        tracing::warn!(error = %e, "kube-ipvs0 not removed");
    }
    let nftables_deleted = cleanup_nftables();
    tracing::info!(
        operations = report.operations,
        failed = report.failed.len(),
        "cleanup complete"
    );
    Ok(if report.succeeded() && nftables_deleted {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    })
}

/// `sysctls`: kube-proxy's IPVS sysctls, each change logged.
fn sysctls_command(strict_arp: bool) -> Result<ExitCode, Failure> {
    load_ip_vs();
    let changes = apply_sysctls(strict_arp).map_err(|e| failure(e, KERNEL))?;
    for change in &changes {
        tracing::info!(key = change.key, old = %change.old, new = %change.new, "sysctl set");
    }
    tracing::info!(changed = changes.len(), "sysctls in place");
    Ok(ExitCode::SUCCESS)
}

/// The Linux dataplane (IPVS over generic netlink, `kube-ipvs0` over
/// rtnetlink, created on the first address bind), after kube-proxy's
/// sysctls unless `skip_sysctls` (with strict ARP when `strict_arp`). This
/// is the one place the binary makes it.
async fn connect_dataplane(skip_sysctls: bool, strict_arp: bool) -> Result<LinuxDataplane, DataplaneError> {
    if !skip_sysctls {
        load_ip_vs();
        let changes =
            apply_sysctls(strict_arp).map_err(|e| DataplaneError::Io(std::io::Error::other(e.to_string())))?;
        for change in &changes {
            tracing::info!(key = change.key, old = %change.old, new = %change.new, "sysctl set");
        }
    }
    LinuxDataplane::open()
}

/// Asks the kernel for the IPVS netlink family, which loads `ip_vs` on
/// kernels where the family has its module alias (added in late 2021):
/// the IPVS sysctls exist only once it is loaded, and this way a fresh node
/// needs no `modprobe ip_vs` and no container needs CAP_SYS_MODULE. If it
/// fails, the sysctls' own error says what to do.
fn load_ip_vs() {
    if let Err(e) = IpvsSocket::open() {
        tracing::debug!(error = %e, "the IPVS family is not there before the sysctls");
    }
}

/// `run`'s dataplane, with the IPVS timeouts set when any is given (0
/// leaves the kernel's, as kube-proxy does).
async fn run_dataplane(args: &RunArgs) -> Result<LinuxDataplane, Failure> {
    let mut dataplane = connect_dataplane(args.skip_sysctls, args.ipvs_strict_arp)
        .await
        .map_err(|e| failure(format!("cannot program the kernel: {e}"), KERNEL))?;
    let seconds = |d: Duration| u32::try_from(d.as_secs()).unwrap_or(u32::MAX);
    let timeouts = Timeouts {
        tcp: seconds(args.ipvs_tcp_timeout),
        tcp_fin: seconds(args.ipvs_tcpfin_timeout),
        udp: seconds(args.ipvs_udp_timeout),
    };
    if timeouts.tcp > 0 || timeouts.tcp_fin > 0 || timeouts.udp > 0 {
        dataplane
            .ipvs()
            .set_timeouts(&timeouts)
            .map_err(|e| failure(format!("cannot set the IPVS timeouts: {e}"), KERNEL))?;
        tracing::info!(
            tcp = timeouts.tcp,
            tcp_fin = timeouts.tcp_fin,
            udp = timeouts.udp,
            "IPVS timeouts set"
        );
    }
    Ok(dataplane)
}
