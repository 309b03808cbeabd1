//! The command line: `plan`, `run` and `cleanup`, their flags, defaults
//! and the help text that explains what the agent does. Parsing only: the
//! commands themselves live in `main.rs`.

use crate::kubeapi::ApiSource;
use crate::nftables_sync::NftablesMode;
use clap::{Args, Parser, Subcommand, ValueEnum};
use std::net::{IpAddr, SocketAddr};
use std::path::PathBuf;
use std::time::Duration;
use svcnet_core::apiserver::node_port::PortRange;
use svcnet_core::controlplane::ClusterConfig;
use svcnet_core::proxy::kube_proxy_config;
use svcnet_core::proxy::Scheduler;

const ABOUT: &str = "Programs Linux IPVS for Kubernetes-style Services, like kube-proxy's IPVS mode, but incrementally";

const LONG_ABOUT: &str = concat!(
    "Programs Linux IPVS for Kubernetes-style Services, like kube-proxy's IPVS mode, but incrementally.\n\n",
    "A Service gets a ClusterIP: a virtual address, taken from --service-cluster-ip-range, that no machine owns. ",
    "Clients connect to ClusterIP:port and the kernel's IPVS load balancer picks one of the Service's pods ",
    "(a \"real server\") and rewrites the destination (NAT). Each ClusterIP:port:protocol is an IPVS ",
    "\"virtual server\"; a NodePort Service also gets one on every node address. The ClusterIPs are bound on ",
    "the dummy interface kube-ipvs0 so the node accepts their packets.\n\n",
    "The agent reads Services, Pods, Nodes, EndpointSlices and Endpoints from manifest files, runs the same allocation ",
    "and EndpointSlice logic as kube-apiserver and kube-controller-manager, and keeps the kernel's IPVS table ",
    "equal to what kube-proxy would program. It adopts what the kernel already has (no flush), changes only ",
    "what differs, drains removed pods gracefully, and never touches virtual servers it does not own."
);

const EXAMPLES: &str = "\
Examples:
  # What would be programmed, without touching the kernel (no privileges needed):
  ipvs-agent plan --manifests examples/ --node-name node-a --format ipvsadm-save

  # The same from a live cluster (API mode, as kube-proxy reads it):
  ipvs-agent plan --kubeconfig ~/.kube/config --node-name node-a --format ipvsadm-save

  # Program the kernel once and exit (needs CAP_NET_ADMIN):
  ipvs-agent run --manifests examples/ --state-file /var/lib/ipvs-agent/state.json --once

  # Keep it programmed, picking up manifest changes within a second:
  ipvs-agent run --manifests /etc/ipvs-agent/ --state-file /var/lib/ipvs-agent/state.json \\
      --apiserver-endpoint 192.168.0.10:6443

  # Remove everything the agent owns (other virtual servers stay):
  ipvs-agent cleanup

Exit status:
  0  success
  1  a sync (run --once) or cleanup did not complete, or an internal failure
  2  usage: bad flags or a bad --config file
  3  bad input: manifests or state files unreadable, not decoding, refused, or over a limit
     (3 MiB per document, 64 MiB per file, nesting deeper than 100, more than 1,000 aliases
     per document, more than 100,000 objects per file)
  4  API: the apiserver could not be reached or read
  5  kernel: IPVS, kube-ipvs0 or the sysctls could not be programmed or read, or run --nftables
     was given on a kernel without nf_tables";

/// The `ipvs-agent` command line.
#[derive(Debug, Parser)]
#[command(name = "ipvs-agent", version, about = ABOUT, long_about = LONG_ABOUT, after_help = EXAMPLES)]
pub struct Cli {
    /// What to do.
    #[command(subcommand)]
    pub command: Command,
}

/// The three commands.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Print what would be programmed; needs no privileges and no kernel.
    #[command(
        long_about = "Print what `run` would program on this node, without touching the kernel (no privileges \
                      needed): the Services with their allocated ClusterIPs and NodePorts, the EndpointSlices, \
                      the IPVS virtual servers with their real servers, and the kube-ipvs0 addresses; or the \
                      masquerade and filter rules kube-proxy would add with iptables, as an nftables ruleset.",
        after_help = "Formats:\n  table         kubectl-style tables, then the table as `ipvsadm -Ln` shows it\n  \
                      ipvsadm-save  exactly what `ipvsadm-save -n` prints after `run --once` (`ipvsadm -R` reads it)\n  \
                      json          {services, endpointSlices, virtualServers, addresses}\n  \
                      dns           the cluster DNS records, as a zone file\n  \
                      nft           the nftables ruleset (table inet svcnet) standing in for the iptables rules and\n  \
                      \x20             ipsets of kube-proxy's IPVS mode: masquerading (hairpin; NodePort, external and\n  \
                      \x20             LoadBalancer traffic with externalTrafficPolicy Cluster; ClusterIP traffic from\n  \
                      \x20             outside --cluster-cidr, or all of it with --masquerade-all), the\n  \
                      \x20             loadBalancerSourceRanges firewall, and the refusal of kube-ipvs0 addresses on\n  \
                      \x20             ports no Service has. `nft -f` reads it; `run` keeps it in the kernel"
    )]
    Plan(PlanArgs),
    /// Program the kernel's IPVS table and keep it in sync.
    #[command(
        long_about = "Program the kernel's IPVS table and keep it in sync with the manifests. On start the \
                            agent reads the kernel's table and adopts it (no flush, no dropped connections), then \
                            applies only the differences. Manifest changes are picked up within --min-sync-period; \
                            every --sync-period the whole table is re-checked, so rules deleted by hand come back. \
                            A removed pod's real server is set to weight 0 and deleted once its connections end \
                            (or after --drain-timeout). The nftables table inet svcnet (masquerade and filter \
                            rules standing in for the iptables rules of kube-proxy's IPVS mode) is kept as well, \
                            one transaction per change, unless --nftables=false. Needs CAP_NET_ADMIN."
    )]
    Run(RunArgs),
    /// Remove the virtual servers and kube-ipvs0 addresses the agent owns, and the link.
    #[command(
        long_about = "Remove everything the agent owns: the virtual servers on kube-ipvs0 addresses and \
                            NodePorts on the node's addresses, the kube-ipvs0 addresses, the kube-ipvs0 link, and \
                            the nftables table inet svcnet (kept by run) if there is one; a kernel without \
                            nf_tables has none, and that is no error. \
                            Virtual servers on other addresses (keepalived, hand-made ipvsadm rules) are left alone. \
                            Needs CAP_NET_ADMIN."
    )]
    Cleanup(CleanupArgs),
    /// Set the sysctls kube-proxy's IPVS mode needs, then exit.
    #[command(
        long_about = "Set the sysctls kube-proxy's IPVS mode needs (net.ipv4.vs.conntrack=1, \
                      net.ipv4.vs.expire_nodest_conn=1, net.ipv4.vs.expire_quiescent_template=1, \
                      net.ipv4.ip_forward=1, and with --ipvs-strict-arp arp_ignore=1 and arp_announce=2), then \
                      exit. For a privileged init container: /proc/sys is read-only in unprivileged ones, so the \
                      agent itself can then run with CAP_NET_ADMIN alone and --skip-sysctls."
    )]
    Sysctls(SysctlsArgs),
}

impl Command {
    /// The flags every command shares.
    pub fn common(&self) -> &Common {
        match self {
            Command::Plan(a) => &a.common,
            Command::Run(a) => &a.common,
            Command::Cleanup(a) => &a.common,
            Command::Sysctls(a) => &a.common,
        }
    }
}

/// Flags shared by every command: where the cluster comes from and the node.
#[derive(Debug, Clone, Args)]
pub struct Common {
    /// A manifest file or directory (*.yaml, *.yml, *.json; directories are read in name order, not
    /// recursively, skipping hidden entries). Repeatable. Files may hold several `---` documents.
    #[arg(long = "manifests", value_name = "PATH")]
    pub manifests: Vec<PathBuf>,
    /// API mode: follow the cluster this kubeconfig file points at (its current context), as
    /// kube-proxy does, instead of manifest files: Services, EndpointSlices and this node's Node
    /// come from the apiserver, which allocates ClusterIPs and NodePorts. In a Pod, without
    /// --manifests, the in-cluster configuration is used instead.
    #[arg(long, value_name = "FILE", conflicts_with = "manifests")]
    pub kubeconfig: Option<PathBuf>,
    /// API mode: the apiserver's URL, over the kubeconfig's (kube-proxy's --master).
    #[arg(long, value_name = "URL", conflicts_with = "manifests")]
    pub master: Option<String>,
    /// Where allocated ClusterIPs and NodePorts are kept across restarts (JSON, written atomically).
    /// `run` also keeps drain start times and claimed virtual servers in PATH.plan.json beside it, so
    /// --drain-timeout counts from when draining began, not from the restart. `plan` reads the state
    /// file but never writes it.
    #[arg(long, value_name = "PATH")]
    pub state_file: Option<PathBuf>,
    /// The CIDR(s) ClusterIPs come from: one, or one IPv4 and one IPv6 separated by a comma.
    #[arg(long, value_name = "CIDR[,CIDR]", default_value = "10.96.0.0/12", value_parser = parse_cluster_ip_range)]
    pub service_cluster_ip_range: String,
    /// The ports NodePorts come from.
    #[arg(long, value_name = "FIRST-LAST", default_value = "30000-32767", value_parser = parse_port_range)]
    pub service_node_port_range: PortRange,
    /// An apiserver address behind the `kubernetes` Service (default/kubernetes, the first ClusterIP). Repeatable.
    #[arg(long, value_name = "IP:PORT")]
    pub apiserver_endpoint: Vec<SocketAddr>,
    /// This node's name, matched against pods' spec.nodeName and the Node objects [default: the hostname]
    #[arg(long, value_name = "NAME", alias = "hostname-override")]
    pub node_name: Option<String>,
    /// An address of this node; NodePorts listen on each. Repeatable [default: the addresses of the Node
    /// object named --node-name if the manifests have one, else the host's addresses]
    #[arg(long, value_name = "IP")]
    pub node_ip: Vec<IpAddr>,
    /// The IPVS scheduler of every virtual server (a Service may pick another with the
    /// svcnet.io/ipvs-scheduler annotation).
    #[arg(long, value_name = "NAME", default_value = "rr", value_parser = parse_scheduler, alias = "ipvs-scheduler")]
    pub scheduler: Scheduler,
    /// Seed of the ClusterIP/NodePort allocator: same seed and manifests, same addresses
    /// (the default, 0, is the core's, which `make tour` and the playground use too).
    #[arg(long, value_name = "N", default_value_t = ClusterConfig::default().seed)]
    pub seed: u64,
    /// The cluster DNS zone (for `plan --format dns`).
    #[arg(long, value_name = "DOMAIN", default_value = "cluster.local")]
    pub cluster_domain: String,
    /// Which addresses NodePorts listen on: CIDRs (the host's addresses inside them) or `primary`
    /// (the node's own addresses, the default), comma-separated, as kube-proxy's --nodeport-addresses.
    /// --node-ip wins over it.
    #[arg(long, value_name = "CIDR,...", value_delimiter = ',', value_parser = parse_node_port_address)]
    pub nodeport_addresses: Vec<String>,
    /// Virtual servers on addresses inside these CIDRs are never deleted (or their addresses unbound)
    /// unless wanted, as kube-proxy's --ipvs-exclude-cidrs: for IPVS rules other software keeps on
    /// kube-ipvs0 addresses.
    #[arg(long, value_name = "CIDR,...", value_delimiter = ',', value_parser = parse_cidr)]
    pub ipvs_exclude_cidrs: Vec<ipnetwork::IpNetwork>,
    /// A kube-proxy configuration file (KubeProxyConfiguration, kubeproxy.config.k8s.io/v1alpha1),
    /// read as kube-proxy reads it: its values win over the flags. Used: ipvs.scheduler,
    /// ipvs.syncPeriod, ipvs.minSyncPeriod, ipvs.excludeCIDRs, ipvs.strictARP, the ipvs timeouts, hostnameOverride,
    /// clientConnection.kubeconfig, healthzBindAddress, metricsBindAddress, nodePortAddresses,
    /// clusterCIDR (with detectLocalMode ClusterCIDR, kube-proxy's default) and iptables.masqueradeAll
    /// (for the nftables rules); every other field is validated and reported as not used.
    #[arg(long, value_name = "FILE")]
    pub config: Option<PathBuf>,
    /// Log format.
    #[arg(long, value_enum, default_value_t = LogFormat::Text)]
    pub log_format: LogFormat,
}

impl Common {
    /// Where the apiserver is, in API mode: `--kubeconfig` or `--master`,
    /// or, without `--manifests`, the in-cluster configuration of a Pod
    /// (`KUBERNETES_SERVICE_HOST` set). `None`: standalone mode.
    pub fn api_source(&self) -> Option<ApiSource> {
        let source = ApiSource {
            kubeconfig: self.kubeconfig.clone(),
            master: self.master.clone(),
        };
        let in_pod = self.manifests.is_empty() && std::env::var_os("KUBERNETES_SERVICE_HOST").is_some();
        (source.is_enabled() || in_pod).then_some(source)
    }

    /// The cluster configuration these flags describe.
    pub fn cluster_config(&self) -> ClusterConfig {
        ClusterConfig {
            service_cluster_ip_range: self.service_cluster_ip_range.clone(),
            service_node_port_range: self.service_node_port_range.to_string(),
            node_ips: self.node_ip.iter().map(ToString::to_string).collect(),
            seed: self.seed,
            cluster_domain: self.cluster_domain.clone(),
            apiservers: self.apiserver_endpoint.iter().map(ToString::to_string).collect(),
            ..ClusterConfig::default()
        }
    }
}

impl Command {
    /// Reads `--config` (a KubeProxyConfiguration) if given and puts its
    /// values over the flags, as kube-proxy does (it ignores its flags
    /// when given `--config`; here a flag stays where the file leaves a
    /// field unset); returns the file's warnings (unknown fields, fields
    /// svcnet does not use, a `--cluster-cidr` the file overrides). An
    /// unreadable or invalid file is an error naming the file and, in
    /// kube-proxy's words, the fields.
    pub fn apply_kube_proxy_config(&mut self) -> Result<Vec<String>, String> {
        let Some(path) = self.common().config.clone() else {
            return Ok(Vec::new());
        };
        let text = std::fs::read_to_string(&path).map_err(|e| format!("--config {}: {e}", path.display()))?;
        let read = kube_proxy_config::read(&text).map_err(|e| format!("--config {}: {e}", path.display()))?;
        let settings = read.settings;
        let bad = |field: &str, message: String| format!("--config {}: {field}: {message}", path.display());
        let scheduler = parse_scheduler(&settings.scheduler).map_err(|e| bad("ipvs.scheduler", e))?;
        let nanos = |n: i128| Duration::from_nanos(u64::try_from(n).unwrap_or(0));
        let common = self.common_mut();
        common.scheduler = scheduler;
        if let Some(name) = settings.hostname_override {
            common.node_name = Some(name);
        }
        if let Some(kubeconfig) = settings.kubeconfig {
            common.kubeconfig = Some(PathBuf::from(kubeconfig));
        }
        if !settings.node_port_addresses.is_empty() {
            common.nodeport_addresses = settings.node_port_addresses;
        }
        if !settings.exclude_cidrs.is_empty() {
            common.ipvs_exclude_cidrs = settings.exclude_cidrs;
        }
        let mut warnings = read.warnings;
        if let Some(masquerade) = self.masquerade_mut() {
            warnings.extend(masquerade.apply(settings.cluster_cidrs, settings.masquerade_all));
        }
        if let Command::Run(run) = self {
            run.sync_period = nanos(settings.sync_period_nanos);
            run.min_sync_period = nanos(settings.min_sync_period_nanos);
            run.ipvs_strict_arp |= settings.strict_arp;
            let [tcp, tcp_fin, udp] = settings.ipvs_timeouts_nanos.map(nanos);
            (run.ipvs_tcp_timeout, run.ipvs_tcpfin_timeout, run.ipvs_udp_timeout) = (tcp, tcp_fin, udp);
            run.healthz_bind_address = settings.healthz_bind_address;
            run.metrics_bind_address = settings.metrics_bind_address;
        }
        Ok(warnings)
    }

    /// The nftables rules' settings of the commands that have them.
    fn masquerade_mut(&mut self) -> Option<&mut MasqueradeArgs> {
        match self {
            Command::Plan(a) => Some(&mut a.masquerade),
            Command::Run(a) => Some(&mut a.masquerade),
            Command::Cleanup(_) | Command::Sysctls(_) => None,
        }
    }

    fn common_mut(&mut self) -> &mut Common {
        match self {
            Command::Plan(a) => &mut a.common,
            Command::Run(a) => &mut a.common,
            Command::Cleanup(a) => &mut a.common,
            Command::Sysctls(a) => &mut a.common,
        }
    }
}

/// `plan`'s flags.
#[derive(Debug, Clone, Args)]
pub struct PlanArgs {
    /// The flags every command shares.
    #[command(flatten)]
    pub common: Common,
    /// What to print.
    #[arg(long, value_enum, default_value_t = PlanFormat::Table)]
    pub format: PlanFormat,
    /// The nftables rules' settings (for --format nft).
    #[command(flatten)]
    pub masquerade: MasqueradeArgs,
}

/// What the nftables rules depend on besides the Services and the node
/// (kube-proxy's flags of the same names), for `run` and `plan --format
/// nft`.
#[derive(Debug, Clone, Args)]
pub struct MasqueradeArgs {
    /// The cluster's pod CIDRs (kube-proxy's --cluster-cidr), at most one per family, for the
    /// nftables rules: ClusterIP traffic from outside them is masqueraded; with none of a family,
    /// only what a process on the node sends from a ClusterIP is, as in kube-proxy. A --config
    /// file's clusterCIDR wins over it.
    #[arg(long, value_name = "CIDR[,CIDR]", value_delimiter = ',', value_parser = parse_cluster_cidr)]
    pub cluster_cidr: Vec<ipnetwork::IpNetwork>,
    /// Masquerade all ClusterIP traffic (kube-proxy's --masquerade-all; also when a --config file
    /// sets iptables.masqueradeAll).
    #[arg(long)]
    pub masquerade_all: bool,
}

impl MasqueradeArgs {
    /// Puts a configuration file's `clusterCIDR` (when set) over
    /// `--cluster-cidr` and adds its `masqueradeAll`; returns a warning
    /// when a `--cluster-cidr` that was given is overridden.
    fn apply(&mut self, cluster_cidrs: Vec<ipnetwork::IpNetwork>, masquerade_all: bool) -> Option<String> {
        self.masquerade_all |= masquerade_all;
        if cluster_cidrs.is_empty() || cluster_cidrs == self.cluster_cidr {
            return None;
        }
        let list = |cidrs: &[ipnetwork::IpNetwork]| cidrs.iter().map(ToString::to_string).collect::<Vec<_>>().join(",");
        let warning = (!self.cluster_cidr.is_empty()).then(|| {
            format!(
                "--cluster-cidr {} not used: the file's clusterCIDR {} wins, as kube-proxy ignores its flags \
                 when given --config",
                list(&self.cluster_cidr),
                list(&cluster_cidrs)
            )
        });
        self.cluster_cidr = cluster_cidrs;
        warning
    }
}

/// `run`'s flags.
#[derive(Debug, Clone, Args)]
pub struct RunArgs {
    /// The flags every command shares.
    #[command(flatten)]
    pub common: Common,
    /// Apply one full sync and exit: status 0 when every operation succeeded, 1 otherwise.
    #[arg(long)]
    pub once: bool,
    /// At most one sync per this period; manifest files are checked for changes as often.
    #[arg(long, value_name = "DURATION", default_value = "1s", value_parser = parse_duration, alias = "ipvs-min-sync-period")]
    pub min_sync_period: Duration,
    /// A full re-check of the kernel's table this often, repairing drift.
    #[arg(long, value_name = "DURATION", default_value = "30s", value_parser = parse_duration, alias = "ipvs-sync-period")]
    pub sync_period: Duration,
    /// After the first sync, each full re-check reads this many virtual servers at a time, as a
    /// sync of its own, so a change arriving meanwhile waits for one part's read rather than the
    /// whole table's; 0 reads the whole table at once, as kube-proxy does.
    #[arg(long, value_name = "VIRTUAL-SERVERS", default_value_t = 250)]
    pub full_sync_part: usize,
    /// The IPVS timeout of established TCP connections (`ipvsadm --set`); 0 leaves the kernel's.
    #[arg(long, value_name = "DURATION", default_value = "0s", value_parser = parse_timeout)]
    pub ipvs_tcp_timeout: Duration,
    /// The IPVS timeout of TCP connections after a FIN; 0 leaves the kernel's.
    #[arg(long, value_name = "DURATION", default_value = "0s", value_parser = parse_timeout)]
    pub ipvs_tcpfin_timeout: Duration,
    /// The IPVS timeout of UDP flows; 0 leaves the kernel's.
    #[arg(long, value_name = "DURATION", default_value = "0s", value_parser = parse_timeout)]
    pub ipvs_udp_timeout: Duration,
    /// Where /healthz and /livez are served (200 while syncs succeed within 2 x --sync-period, else
    /// 503), and nothing else: every address by default, as kube-proxy, because the kubelet and
    /// cloud load balancers (for externalTrafficPolicy: Cluster Services) probe it.
    #[arg(long, value_name = "IP:PORT", default_value = "0.0.0.0:10256")]
    pub healthz_bind_address: SocketAddr,
    /// Where /metrics is served (Prometheus text format), with /healthz and /livez; local only by
    /// default, as kube-proxy.
    #[arg(long, value_name = "IP:PORT", default_value = "127.0.0.1:10249")]
    pub metrics_bind_address: SocketAddr,
    /// Leave the sysctls kube-proxy sets (net.ipv4.vs.conntrack, ip_forward, ...) as they are.
    #[arg(long)]
    pub skip_sysctls: bool,
    /// Also set arp_ignore=1 and arp_announce=2 on all interfaces (kube-proxy's --ipvs-strict-arp),
    /// so this node does not answer ARP for the ClusterIPs bound on kube-ipvs0.
    #[arg(long, conflicts_with = "skip_sysctls")]
    pub ipvs_strict_arp: bool,
    /// How long a removed real server with open TCP connections drains at weight 0 before it is
    /// deleted anyway.
    #[arg(long, value_name = "DURATION", default_value = "600s", value_parser = parse_duration)]
    pub drain_timeout: Duration,
    /// After each sync that changes UDP Services, delete the UDP conntrack entries sent to a Service
    /// frontend (ClusterIP, NodePort on a node IP, externalIP, LoadBalancer IP) that no endpoint it
    /// has now answers: flows stuck on a removed endpoint, or black-holed while the Service had
    /// none (kube-proxy 1.32+'s cleanup, over ctnetlink; filtered dumps and per-entry deletes,
    /// never a flush). On by default; --conntrack-cleanup=false turns it off.
    #[arg(long, value_name = "BOOL", default_value_t = true, action = clap::ArgAction::Set,
          num_args = 0..=1, require_equals = true, default_missing_value = "true")]
    pub conntrack_cleanup: bool,
    /// Keep the nftables table `inet svcnet` in the kernel: the masquerade and filter rules that
    /// stand in for the iptables rules of kube-proxy's IPVS mode, as `plan --format nft` prints
    /// them, one nf_tables transaction per change (in API mode once the first lists are whole). On
    /// by default. --nftables=false turns it off: the node then has no masquerading (hairpin
    /// traffic, NodePort and external traffic, ClusterIP traffic from outside --cluster-cidr), no
    /// loadBalancerSourceRanges filtering and no refusal of kube-ipvs0 addresses on ports no
    /// Service has. On a kernel without nf_tables the agent warns once, programs IPVS alone and
    /// reports svcnet_nftables_available 0; given explicitly (--nftables, --nftables=true), a
    /// kernel without nf_tables is an error instead (exit status 5).
    #[arg(long, value_name = "BOOL", action = clap::ArgAction::Set, num_args = 0..=1,
          require_equals = true, default_missing_value = "true")]
    pub nftables: Option<bool>,
    /// The nftables rules' settings.
    #[command(flatten)]
    pub masquerade: MasqueradeArgs,
}

impl RunArgs {
    /// What `--nftables` asks for.
    pub fn nftables_mode(&self) -> NftablesMode {
        NftablesMode::from_flag(self.nftables)
    }
}

/// `cleanup`'s flags.
#[derive(Debug, Clone, Args)]
pub struct CleanupArgs {
    /// The flags every command shares.
    #[command(flatten)]
    pub common: Common,
}

/// `sysctls`'s flags.
#[derive(Debug, Clone, Args)]
pub struct SysctlsArgs {
    /// The flags every command shares.
    #[command(flatten)]
    pub common: Common,
    /// Also set arp_ignore=1 and arp_announce=2 on all interfaces (kube-proxy's --ipvs-strict-arp).
    #[arg(long)]
    pub ipvs_strict_arp: bool,
}

/// `plan --format`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum PlanFormat {
    /// kubectl-style tables and the `ipvsadm -Ln` listing.
    Table,
    /// `ipvsadm-save -n` text.
    IpvsadmSave,
    /// One JSON object.
    Json,
    /// DNS records as a zone file.
    Dns,
    /// The nftables ruleset, as `nft -f` reads it.
    Nft,
}

impl From<PlanFormat> for svcnet_core::proxy::PlanFormat {
    fn from(format: PlanFormat) -> Self {
        match format {
            PlanFormat::Table => Self::Table,
            PlanFormat::IpvsadmSave => Self::IpvsadmSave,
            PlanFormat::Json => Self::Json,
            PlanFormat::Dns => Self::Dns,
            PlanFormat::Nft => Self::Nft,
        }
    }
}

/// `--log-format`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum LogFormat {
    /// `key=value` lines.
    Text,
    /// One JSON object per line.
    Json,
}

fn parse_duration(text: &str) -> Result<Duration, String> {
    let d = humantime::parse_duration(text).map_err(|e| format!("{e} (examples: 500ms, 1s, 30s, 2m)"))?;
    if d.is_zero() {
        return Err("must be greater than zero".into());
    }
    Ok(d)
}

/// A duration that may be zero (timeouts: 0 leaves the kernel's).
fn parse_timeout(text: &str) -> Result<Duration, String> {
    humantime::parse_duration(text).map_err(|e| format!("{e} (examples: 0s, 900s, 15m)"))
}

fn parse_cidr(text: &str) -> Result<ipnetwork::IpNetwork, String> {
    text.parse().map_err(|_| "must be a valid CIDR".to_string())
}

/// A CIDR with its prefix length written out (`10.244.0.0` alone is not
/// one, though `ipnetwork` reads it as a /32).
fn parse_cluster_cidr(text: &str) -> Result<ipnetwork::IpNetwork, String> {
    if text.contains('/') {
        parse_cidr(text)
    } else {
        Err("must be a valid CIDR (e.g. 10.244.0.0/16)".to_string())
    }
}

fn parse_node_port_address(text: &str) -> Result<String, String> {
    let keyword = matches!(text, "primary" | "localhost" | "all");
    if keyword || (text.contains('/') && text.parse::<ipnetwork::IpNetwork>().is_ok()) {
        Ok(text.to_string())
    } else {
        Err("must be a valid CIDR or one of the keywords 'primary', 'localhost', 'all'".into())
    }
}

fn parse_scheduler(text: &str) -> Result<Scheduler, String> {
    Scheduler::known(text).ok_or_else(|| format!("unknown IPVS scheduler; must be one of {}", Scheduler::known_names()))
}

fn parse_port_range(text: &str) -> Result<PortRange, String> {
    text.parse::<PortRange>().map_err(|e| e.to_string())
}

fn parse_cluster_ip_range(text: &str) -> Result<String, String> {
    let config = ClusterConfig {
        service_cluster_ip_range: text.to_string(),
        ..ClusterConfig::default()
    };
    config.validate().map(|_| text.to_string()).map_err(|e| e.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::CommandFactory;

    fn parse(args: &[&str]) -> Result<Cli, String> {
        Cli::try_parse_from(std::iter::once("ipvs-agent").chain(args.iter().copied())).map_err(|e| e.to_string())
    }

    #[test]
    fn the_definition_is_consistent() {
        Cli::command().debug_assert();
    }

    #[test]
    fn kube_proxys_flag_names_are_accepted() {
        let Command::Run(run) = parse(&[
            "run",
            "--hostname-override",
            "node-a",
            "--ipvs-scheduler",
            "wrr",
            "--ipvs-sync-period",
            "1m",
            "--ipvs-min-sync-period",
            "2s",
            "--ipvs-tcp-timeout",
            "900s",
            "--nodeport-addresses",
            "192.168.0.0/24,primary",
            "--ipvs-exclude-cidrs",
            "10.200.0.0/16",
            "--kubeconfig",
            "/etc/kubernetes/proxy.conf",
        ])
        .unwrap()
        .command
        else {
            panic!("not run");
        };
        assert_eq!(run.common.node_name.as_deref(), Some("node-a"));
        assert_eq!(run.common.scheduler, Scheduler::known("wrr").unwrap());
        assert_eq!(
            (run.sync_period, run.min_sync_period),
            (Duration::from_secs(60), Duration::from_secs(2))
        );
        assert_eq!(run.ipvs_tcp_timeout, Duration::from_secs(900));
        assert_eq!(run.common.nodeport_addresses, ["192.168.0.0/24", "primary"]);
        assert_eq!(
            run.common.ipvs_exclude_cidrs,
            ["10.200.0.0/16".parse::<ipnetwork::IpNetwork>().unwrap()]
        );
        assert!(run.common.api_source().is_some());
        let err = parse(&["plan", "--nodeport-addresses", "bogus"]).unwrap_err();
        assert!(err.contains("must be a valid CIDR or one of the keywords"), "{err}");
        let err = parse(&["plan", "--kubeconfig", "k", "--manifests", "m"]).unwrap_err();
        assert!(err.contains("cannot be used with"), "{err}");
    }

    #[test]
    fn a_kube_proxy_config_file_wins_over_the_flags_and_names_bad_fields() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("kube-proxy.yaml");
        std::fs::write(
            &file,
            "apiVersion: kubeproxy.config.k8s.io/v1alpha1\nkind: KubeProxyConfiguration\nmode: ipvs\nhostnameOverride: node-b\nipvs: {scheduler: sh, syncPeriod: 45s, strictARP: true, udpTimeout: 300s}\nmetricsBindAddress: 0.0.0.0:10249\nconntrack: {maxPerCore: 0}\n",
        )
        .unwrap();
        let path = file.to_str().unwrap();
        let mut cli = parse(&["run", "--config", path, "--scheduler", "rr", "--sync-period", "10s"]).unwrap();
        let warnings = cli.command.apply_kube_proxy_config().unwrap();
        assert!(warnings.is_empty(), "{warnings:?}");
        let Command::Run(run) = cli.command else {
            panic!("not run");
        };
        assert_eq!(run.common.scheduler, Scheduler::known("sh").unwrap());
        assert_eq!(run.common.node_name.as_deref(), Some("node-b"));
        assert_eq!(run.sync_period, Duration::from_secs(45));
        assert_eq!(run.min_sync_period, Duration::ZERO, "kube-proxy's default");
        assert!(run.ipvs_strict_arp);
        assert_eq!(run.ipvs_udp_timeout, Duration::from_secs(300));
        assert_eq!(run.metrics_bind_address.to_string(), "0.0.0.0:10249");

        std::fs::write(&file, "apiVersion: kubeproxy.config.k8s.io/v1alpha1\nkind: KubeProxyConfiguration\nmode: ipvs\nipvs: {scheduler: nope}\n").unwrap();
        let mut cli = parse(&["plan", "--config", path]).unwrap();
        let err = cli.command.apply_kube_proxy_config().unwrap_err();
        assert!(
            err.starts_with(&format!("--config {path}: ipvs.scheduler: unknown IPVS scheduler")),
            "{err}"
        );
        std::fs::write(&file, "apiVersion: kubeproxy.config.k8s.io/v1alpha1\nkind: KubeProxyConfiguration\nmode: ipvs\nipvs: {tcpTimeout: -1s}\n").unwrap();
        let err = parse(&["plan", "--config", path])
            .unwrap()
            .command
            .apply_kube_proxy_config()
            .unwrap_err();
        assert_eq!(err, format!("--config {path}: failed validate: KubeProxyConfiguration.KubeProxyIPVSConfiguration.TCPTimeout: Invalid value: \"-1s\": must be greater than or equal to 0"));
    }

    #[test]
    fn defaults_follow_kube_proxy_and_kubeadm() {
        let Command::Run(run) = parse(&["run"]).unwrap().command else {
            panic!("not run");
        };
        assert!(!run.once);
        assert_eq!(run.nftables_mode(), NftablesMode::ByDefault);
        assert_eq!(run.min_sync_period, Duration::from_secs(1));
        assert_eq!(run.sync_period, Duration::from_secs(30));
        assert_eq!(run.full_sync_part, 250, "full syncs in parts, unlike kube-proxy's");
        assert_eq!(run.drain_timeout, Duration::from_secs(600));
        assert_eq!(run.healthz_bind_address.to_string(), "0.0.0.0:10256");
        assert_eq!(run.metrics_bind_address.to_string(), "127.0.0.1:10249");
        let c = &run.common;
        assert_eq!(c.service_cluster_ip_range, "10.96.0.0/12");
        assert_eq!(c.service_node_port_range.to_string(), "30000-32767");
        assert_eq!(c.scheduler, Scheduler::Rr);
        assert_eq!((c.seed, c.cluster_domain.as_str()), (0, "cluster.local"));
        assert_eq!(c.log_format, LogFormat::Text);
        assert!(c.manifests.is_empty() && c.node_ip.is_empty() && c.node_name.is_none());
    }

    #[test]
    fn repeatable_flags_and_durations() {
        let cli = parse(&[
            "run",
            "--manifests",
            "a.yaml",
            "--manifests",
            "dir",
            "--apiserver-endpoint",
            "192.168.0.10:6443",
            "--apiserver-endpoint",
            "[fd00::10]:6443",
            "--node-ip",
            "192.0.2.10",
            "--node-ip",
            "2001:db8::10",
            "--min-sync-period",
            "500ms",
            "--sync-period",
            "2m",
            "--once",
            "--skip-sysctls",
            "--scheduler",
            "mh",
            "--service-cluster-ip-range",
            "10.96.0.0/16,fd00:10:96::/112",
        ])
        .unwrap();
        let Command::Run(run) = cli.command else {
            panic!("not run");
        };
        assert_eq!(
            run.common.manifests,
            vec![PathBuf::from("a.yaml"), PathBuf::from("dir")]
        );
        assert_eq!(run.common.apiserver_endpoint.len(), 2);
        assert_eq!(run.common.node_ip.len(), 2);
        assert_eq!(run.min_sync_period, Duration::from_millis(500));
        assert_eq!(run.sync_period, Duration::from_secs(120));
        assert!(run.once && run.skip_sysctls);
        assert!(run.conntrack_cleanup, "on by default");
        assert_eq!(run.common.scheduler, Scheduler::Mh);
        let config = run.common.cluster_config();
        assert_eq!(config.apiservers, vec!["192.168.0.10:6443", "[fd00::10]:6443"]);
        assert_eq!(config.node_ips, vec!["192.0.2.10", "2001:db8::10"]);
    }

    #[test]
    fn conntrack_cleanup_flag() {
        let flag = |args: &[&str]| match parse(args).unwrap().command {
            Command::Run(run) => run.conntrack_cleanup,
            _ => panic!("not run"),
        };
        assert!(flag(&["run"]));
        assert!(flag(&["run", "--conntrack-cleanup"]));
        assert!(flag(&["run", "--conntrack-cleanup=true"]));
        assert!(!flag(&["run", "--conntrack-cleanup=false"]));
        assert!(parse(&["run", "--conntrack-cleanup=maybe"]).is_err());
        let mut cmd = Cli::command();
        let help = cmd.find_subcommand_mut("run").unwrap().render_long_help().to_string();
        assert!(help.contains("--conntrack-cleanup[=<BOOL>]"), "{help}");
        assert!(help.contains("never a flush"), "{help}");
    }

    #[test]
    fn plan_formats() {
        for (name, format) in [
            ("table", PlanFormat::Table),
            ("ipvsadm-save", PlanFormat::IpvsadmSave),
            ("json", PlanFormat::Json),
            ("dns", PlanFormat::Dns),
            ("nft", PlanFormat::Nft),
        ] {
            let Command::Plan(plan) = parse(&["plan", "--format", name]).unwrap().command else {
                panic!("not plan");
            };
            assert_eq!(plan.format, format);
        }
    }

    #[test]
    fn nft_settings() {
        let Command::Plan(plan) = parse(&[
            "plan",
            "--format",
            "nft",
            "--cluster-cidr",
            "10.244.0.0/16,fd00:244::/48",
            "--masquerade-all",
        ])
        .unwrap()
        .command
        else {
            panic!("not plan");
        };
        assert_eq!(plan.masquerade.cluster_cidr.len(), 2);
        assert!(plan.masquerade.masquerade_all);
        let err = parse(&["plan", "--cluster-cidr", "10.244.0.0"]).unwrap_err();
        assert!(err.contains("'10.244.0.0' for '--cluster-cidr <CIDR[,CIDR]>'"), "{err}");
        let mut cmd = Cli::command();
        let help = cmd.find_subcommand_mut("plan").unwrap().render_long_help().to_string();
        assert!(
            help.contains("nft           the nftables ruleset (table inet svcnet)"),
            "{help}"
        );
    }

    #[test]
    fn nftables_is_on_by_default_and_takes_an_explicit_value() {
        let mode = |args: &[&str]| match parse(args).unwrap().command {
            Command::Run(run) => run.nftables_mode(),
            _ => panic!("not run"),
        };
        assert_eq!(mode(&["run"]), NftablesMode::ByDefault);
        assert_eq!(
            mode(&["run", "--nftables"]),
            NftablesMode::Required,
            "scripts pass it bare"
        );
        assert_eq!(mode(&["run", "--nftables=true"]), NftablesMode::Required);
        assert_eq!(mode(&["run", "--nftables=false"]), NftablesMode::Off);
        let err = parse(&["run", "--nftables=no"]).unwrap_err();
        assert!(err.contains("invalid value 'no' for '--nftables[=<BOOL>]'"), "{err}");
        let err = parse(&["run", "--nftables", "false"]).unwrap_err();
        assert!(err.contains("unexpected argument 'false'"), "{err}");
        assert!(parse(&["plan", "--nftables"]).is_err(), "plan programs nothing");
        let mut cmd = Cli::command();
        let help = cmd.find_subcommand_mut("run").unwrap().render_long_help().to_string();
        assert!(help.contains("--nftables[=<BOOL>]"), "{help}");
        for words in [
            "On by default",
            "--nftables=false turns it off: the node then has no masquerading",
            "a kernel without nf_tables is an error instead (exit status 5)",
            "the agent warns once, programs IPVS alone",
        ] {
            assert!(
                help.split_whitespace().collect::<Vec<_>>().join(" ").contains(words),
                "{words} missing from:\n{help}"
            );
        }
    }

    #[test]
    fn cluster_cidr_and_masquerade_all_need_no_nftables_flag() {
        let Command::Run(run) = parse(&["run", "--cluster-cidr", "10.244.0.0/16", "--masquerade-all"])
            .unwrap()
            .command
        else {
            panic!("not run");
        };
        assert_eq!(run.nftables_mode(), NftablesMode::ByDefault);
        assert_eq!(
            run.masquerade.cluster_cidr,
            ["10.244.0.0/16".parse::<ipnetwork::IpNetwork>().unwrap()]
        );
        assert!(run.masquerade.masquerade_all);
        // With the table off they are accepted and change nothing.
        assert!(parse(&["run", "--nftables=false", "--cluster-cidr", "10.244.0.0/16"]).is_ok());
    }

    /// The cluster CIDRs and masqueradeAll of a --config file, against the
    /// flags: the file wins where it sets them (kube-proxy ignores its
    /// flags when given --config), a flag stays where it does not, and a
    /// --cluster-cidr the file overrides is warned about.
    #[test]
    fn a_config_files_cluster_cidr_and_masquerade_all_feed_the_nftables_rules() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("kube-proxy.yaml");
        let path = file.to_str().unwrap();
        let head = "apiVersion: kubeproxy.config.k8s.io/v1alpha1\nkind: KubeProxyConfiguration\nmode: ipvs\n";
        let cidrs = |list: &[&str]| {
            list.iter()
                .map(|c| c.parse().unwrap())
                .collect::<Vec<ipnetwork::IpNetwork>>()
        };
        let read = |body: &str, flags: &[&str]| {
            std::fs::write(&file, format!("{head}{body}")).unwrap();
            let mut cli = parse(&[&["run", "--config", path], flags].concat()).unwrap();
            let warnings = cli.command.apply_kube_proxy_config().unwrap();
            let Command::Run(run) = cli.command else {
                panic!("not run");
            };
            (run.masquerade, warnings)
        };

        let dual = "clusterCIDR: 10.244.0.0/16,fd00:10:244::/56\niptables: {masqueradeAll: true}\n";
        let (from_file, warnings) = read(dual, &[]);
        assert_eq!(from_file.cluster_cidr, cidrs(&["10.244.0.0/16", "fd00:10:244::/56"]));
        assert!(from_file.masquerade_all);
        assert!(warnings.is_empty(), "{warnings:?}");

        let (file_wins, warnings) = read(dual, &["--cluster-cidr", "10.1.0.0/16"]);
        assert_eq!(file_wins.cluster_cidr, cidrs(&["10.244.0.0/16", "fd00:10:244::/56"]));
        assert_eq!(
            warnings,
            ["--cluster-cidr 10.1.0.0/16 not used: the file's clusterCIDR 10.244.0.0/16,fd00:10:244::/56 wins, as kube-proxy ignores its flags when given --config"]
        );
        let (same, warnings) = read("clusterCIDR: 10.1.0.0/16\n", &["--cluster-cidr", "10.1.0.0/16"]);
        assert_eq!(same.cluster_cidr, cidrs(&["10.1.0.0/16"]));
        assert!(warnings.is_empty(), "the same value: {warnings:?}");

        let (flags_stay, warnings) = read("", &["--cluster-cidr", "10.1.0.0/16", "--masquerade-all"]);
        assert_eq!(flags_stay.cluster_cidr, cidrs(&["10.1.0.0/16"]), "the file sets none");
        assert!(
            flags_stay.masquerade_all,
            "the file's false is its default, not a setting"
        );
        assert!(warnings.is_empty(), "{warnings:?}");

        // plan --format nft reads them the same way.
        std::fs::write(&file, format!("{head}{dual}")).unwrap();
        let mut cli = parse(&["plan", "--format", "nft", "--config", path]).unwrap();
        cli.command.apply_kube_proxy_config().unwrap();
        let Command::Plan(plan) = cli.command else {
            panic!("not plan");
        };
        assert_eq!(plan.masquerade.cluster_cidr.len(), 2);
        assert!(plan.masquerade.masquerade_all);

        std::fs::write(&file, format!("{head}clusterCIDR: 10.244.0.0\n")).unwrap();
        let err = parse(&["run", "--config", path])
            .unwrap()
            .command
            .apply_kube_proxy_config()
            .unwrap_err();
        assert_eq!(
            err,
            format!("--config {path}: failed validate: KubeProxyConfiguration.DetectLocalConfiguration.ClusterCIDRs[0]: Invalid value: \"10.244.0.0\": must be a valid CIDR block (e.g. 10.100.0.0/16 or fde4:8dba:82e1::/48)")
        );
    }

    #[test]
    fn bad_values_name_the_flag_and_the_value() {
        let cases = [
            (
                vec!["run", "--sync-period", "soon"],
                "'soon' for '--sync-period <DURATION>'",
            ),
            (vec!["run", "--min-sync-period", "0s"], "must be greater than zero"),
            (
                vec!["plan", "--scheduler", "fastest"],
                "'fastest' for '--scheduler <NAME>'",
            ),
            (vec!["plan", "--scheduler", "fastest"], "must be one of rr, wrr"),
            (vec!["plan", "--node-ip", "node-a"], "'node-a' for '--node-ip <IP>'"),
            (
                vec!["plan", "--apiserver-endpoint", "10.0.0.1"],
                "'10.0.0.1' for '--apiserver-endpoint <IP:PORT>'",
            ),
            (
                vec!["plan", "--service-cluster-ip-range", "10.96.0.0/30"],
                "the service cluster IP range must be at least 8 IP addresses",
            ),
            (
                vec!["plan", "--service-node-port-range", "30000-"],
                "'30000-' for '--service-node-port-range <FIRST-LAST>'",
            ),
            (vec!["plan", "--format", "yaml"], "'yaml' for '--format <FORMAT>'"),
            (vec!["plan", "--seed", "many"], "'many' for '--seed <N>'"),
            (vec!["frob"], "unrecognized subcommand 'frob'"),
        ];
        for (args, want) in cases {
            let err = parse(&args).unwrap_err();
            assert!(err.contains(want), "{args:?}: {err}");
        }
    }

    #[test]
    fn help_teaches_and_shows_defaults() {
        let help = Cli::command().render_long_help().to_string();
        assert!(help.contains("ClusterIP"), "{help}");
        assert!(help.contains("virtual server"), "{help}");
        assert!(help.contains("ipvs-agent plan --manifests examples/"), "{help}");
        let mut cmd = Cli::command();
        let run = cmd.find_subcommand_mut("run").unwrap().render_long_help().to_string();
        for default in [
            "[default: 1s]",
            "[default: 30s]",
            "[default: 600s]",
            "[default: 0.0.0.0:10256]",
            "[default: 127.0.0.1:10249]",
            "[default: 10.96.0.0/12]",
        ] {
            assert!(run.contains(default), "{default} missing from:\n{run}");
        }
    }
}
