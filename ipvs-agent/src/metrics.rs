//! What the agent counts under svcnet's own names (`ipvs_agent_*`), and
//! the Prometheus text rendering of `/metrics`, kube-proxy's metrics
//! ([`KubeProxyMetrics`]) included. Shared between the sync loop (which
//! records) and the HTTP server (which reads) through an `Arc`.

use crate::kube_proxy_metrics::KubeProxyMetrics;
use std::fmt::Write;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;
use std::time::{Duration, SystemTime, UNIX_EPOCH};
use svcnet_core::proxy::Operation;

/// Upper bounds of the sync duration histogram, in seconds.
const BUCKETS: [f64; 12] = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0];

/// The operation kinds, as metric labels.
const KINDS: [&str; 8] = [
    "bind_address",
    "add_virtual_server",
    "update_virtual_server",
    "delete_virtual_server",
    "add_real_server",
    "update_real_server",
    "delete_real_server",
    "unbind_address",
];

fn kind_index(op: &Operation) -> usize {
    match op {
        Operation::BindAddress { .. } => 0,
        Operation::AddVirtualServer { .. } => 1,
        Operation::UpdateVirtualServer { .. } => 2,
        Operation::DeleteVirtualServer { .. } => 3,
        Operation::AddRealServer { .. } => 4,
        Operation::UpdateRealServer { .. } => 5,
        Operation::DeleteRealServer { .. } => 6,
        Operation::UnbindAddress { .. } => 7,
    }
}

#[derive(Debug, Default)]
struct Histogram {
    counts: [u64; BUCKETS.len()],
    count: u64,
    sum: f64,
}

/// The agent's counters and gauges.
#[derive(Debug, Default)]
pub struct Metrics {
    durations: Mutex<Histogram>,
    syncs_full: AtomicU64,
    syncs_partial: AtomicU64,
    applied: [AtomicU64; KINDS.len()],
    failed: [AtomicU64; KINDS.len()],
    netlink_errors: AtomicU64,
    manifest_errors: AtomicU64,
    api_errors: AtomicU64,
    conntrack_deleted: AtomicU64,
    conntrack_errors: AtomicU64,
    /// 1 while `run` keeps table `inet svcnet`, else 0.
    nftables_available: AtomicU64,
    state_write_errors: AtomicU64,
    /// 1 while the state or plan state in memory is newer than on disk.
    state_unsaved: AtomicU64,
    /// Unix milliseconds of the last sync with no failure (0: none yet).
    last_success_ms: AtomicU64,
    virtual_servers: AtomicU64,
    real_servers: AtomicU64,
    draining: AtomicU64,
    /// kube-proxy's metrics and the health behind `/healthz` and `/livez`.
    pub kube_proxy: KubeProxyMetrics,
}

/// The desired table's size and the draining count, after a sync.
#[derive(Debug, Clone, Copy, Default)]
pub struct TableSize {
    /// Desired virtual servers.
    pub virtual_servers: usize,
    /// Desired real servers.
    pub real_servers: usize,
    /// Real servers draining at weight 0.
    pub draining: usize,
}

impl Metrics {
    /// Metrics whose health turns bad when a change waits for a sync
    /// longer than `health_timeout` (kube-proxy: twice the sync period).
    pub fn new(health_timeout: Duration) -> Metrics {
        Metrics {
            kube_proxy: KubeProxyMetrics::new(health_timeout),
            ..Metrics::default()
        }
    }

    /// Records one sync: its kind and duration, the operations applied and
    /// failed, and whether it succeeded entirely (at wall time `at`).
    pub fn record_sync(
        &self,
        full: bool,
        duration: Duration,
        applied: &[&Operation],
        failed: &[&Operation],
        success_at: Option<SystemTime>,
    ) {
        let counter = if full { &self.syncs_full } else { &self.syncs_partial };
        counter.fetch_add(1, Ordering::Relaxed);
        if let Ok(mut h) = self.durations.lock() {
            let secs = duration.as_secs_f64();
            for (i, bound) in BUCKETS.iter().enumerate() {
                if secs <= *bound {
                    h.counts[i] += 1;
                }
            }
            h.count += 1;
            h.sum += secs;
        }
        for op in applied {
            self.applied[kind_index(op)].fetch_add(1, Ordering::Relaxed);
        }
        for op in failed {
            self.failed[kind_index(op)].fetch_add(1, Ordering::Relaxed);
        }
        self.netlink_errors.fetch_add(failed.len() as u64, Ordering::Relaxed);
        if let Some(at) = success_at {
            let ms = at.duration_since(UNIX_EPOCH).map(|d| d.as_millis() as u64).unwrap_or(0);
            self.last_success_ms.store(ms, Ordering::Relaxed);
        }
    }

    /// Records a kernel error outside an operation (reading the table).
    pub fn record_netlink_error(&self) {
        self.netlink_errors.fetch_add(1, Ordering::Relaxed);
    }

    /// Records a manifest that could not be used.
    pub fn record_manifest_error(&self) {
        self.manifest_errors.fetch_add(1, Ordering::Relaxed);
    }

    /// Records a failed list or watch of the apiserver (API mode).
    pub fn record_api_error(&self) {
        self.api_errors.fetch_add(1, Ordering::Relaxed);
    }

    /// Records UDP conntrack entries deleted by the cleanup after a sync.
    pub fn record_conntrack_deleted(&self, entries: u64) {
        self.conntrack_deleted.fetch_add(entries, Ordering::Relaxed);
    }

    /// Records a failed conntrack dump or delete (the sync is not undone).
    pub fn record_conntrack_errors(&self, errors: u64) {
        self.conntrack_errors.fetch_add(errors, Ordering::Relaxed);
    }

    /// Records whether table `inet svcnet` is kept: false with
    /// `--nftables=false` (the default value) and on a kernel without
    /// nf_tables.
    pub fn set_nftables_available(&self, available: bool) {
        self.nftables_available.store(u64::from(available), Ordering::Relaxed);
    }

    /// Records a failed write of the state file or the plan-state file
    /// (disk full, read-only file system): the agent keeps serving from
    /// memory and writes again until it succeeds.
    pub fn record_state_write_error(&self) {
        self.state_write_errors.fetch_add(1, Ordering::Relaxed);
    }

    /// Records whether state in memory still waits to be written.
    pub fn set_state_unsaved(&self, unsaved: bool) {
        self.state_unsaved.store(u64::from(unsaved), Ordering::Relaxed);
    }

    /// Records the table size after a sync.
    pub fn record_table(&self, size: TableSize) {
        self.virtual_servers
            .store(size.virtual_servers as u64, Ordering::Relaxed);
        self.real_servers.store(size.real_servers as u64, Ordering::Relaxed);
        self.draining.store(size.draining as u64, Ordering::Relaxed);
    }

    /// Everything in the Prometheus text exposition format.
    pub fn render(&self) -> String {
        let mut out = String::new();
        let get = |a: &AtomicU64| a.load(Ordering::Relaxed);
        // Writing to a String cannot fail.
        let mut metric = |name: &str, kind: &str, help: &str, samples: &[(String, String)]| {
            let _ = writeln!(out, "# HELP {name} {help}\n# TYPE {name} {kind}");
            for (labels, value) in samples {
                let _ = writeln!(out, "{name}{labels} {value}");
            }
        };
        let plain = |v: u64| vec![(String::new(), v.to_string())];
        let (buckets, count, sum) = match self.durations.lock() {
            Ok(h) => (h.counts, h.count, h.sum),
            Err(_) => ([0; BUCKETS.len()], 0, 0.0),
        };
        let mut samples: Vec<(String, String)> = BUCKETS
            .iter()
            .zip(buckets)
            .map(|(b, c)| (format!("_bucket{{le=\"{b}\"}}"), c.to_string()))
            .collect();
        samples.push(("_bucket{le=\"+Inf\"}".into(), count.to_string()));
        samples.push(("_sum".into(), sum.to_string()));
        samples.push(("_count".into(), count.to_string()));
        metric(
            "ipvs_agent_sync_duration_seconds",
            "histogram",
            "How long one sync took (read the kernel if needed, plan, apply).",
            &samples,
        );
        metric(
            "ipvs_agent_syncs_total",
            "counter",
            "Syncs run, full (whole table compared) or partial (changed Services only).",
            &[
                ("{full=\"true\"}".into(), get(&self.syncs_full).to_string()),
                ("{full=\"false\"}".into(), get(&self.syncs_partial).to_string()),
            ],
        );
        let by_kind = |counters: &[AtomicU64; KINDS.len()]| -> Vec<(String, String)> {
            KINDS
                .iter()
                .zip(counters)
                .map(|(k, c)| (format!("{{kind=\"{k}\"}}"), get(c).to_string()))
                .collect()
        };
        metric(
            "ipvs_agent_operations_total",
            "counter",
            "IPVS and kube-ipvs0 operations the kernel accepted, by kind.",
            &by_kind(&self.applied),
        );
        metric(
            "ipvs_agent_operation_failures_total",
            "counter",
            "Operations the kernel refused, by kind.",
            &by_kind(&self.failed),
        );
        metric(
            "ipvs_agent_netlink_errors_total",
            "counter",
            "Kernel (netlink) errors: refused operations and failed table reads.",
            &plain(get(&self.netlink_errors)),
        );
        metric(
            "ipvs_agent_manifest_errors_total",
            "counter",
            "Manifest changes that could not be used (the previous state stayed).",
            &plain(get(&self.manifest_errors)),
        );
        metric(
            "ipvs_agent_api_errors_total",
            "counter",
            "Failed lists and watches of the apiserver in API mode (each retried with backoff; the programmed state stays).",
            &plain(get(&self.api_errors)),
        );
        metric(
            "svcnet_conntrack_entries_deleted_total",
            "counter",
            "Stale UDP conntrack entries deleted after syncs: sent to a Service frontend, answered by no endpoint it has now.",
            &plain(get(&self.conntrack_deleted)),
        );
        metric(
            "svcnet_conntrack_cleanup_errors_total",
            "counter",
            "Failed conntrack dumps and deletes of the UDP cleanup (the sync stays; the cleanup is tried again after the next sync).",
            &plain(get(&self.conntrack_errors)),
        );
        metric(
            "svcnet_nftables_available",
            "gauge",
            "1 while the nftables table inet svcnet (masquerade, filter and source-range rules) is kept; 0 with --nftables=false, or when the kernel has no nf_tables (the agent logged what is missing) and only IPVS is programmed.",
            &plain(get(&self.nftables_available)),
        );
        metric(
            "svcnet_state_file_write_errors_total",
            "counter",
            "Failed writes of the state file or the plan-state file beside it (disk full, read-only file system); each is tried again at the next manifest poll.",
            &plain(get(&self.state_write_errors)),
        );
        metric(
            "svcnet_state_file_unsaved",
            "gauge",
            "1 while allocations or drain times in memory are not yet written to the state files (a write failed; the agent keeps serving and tries again), else 0.",
            &plain(get(&self.state_unsaved)),
        );
        let last = get(&self.last_success_ms) as f64 / 1000.0;
        metric(
            "ipvs_agent_last_successful_sync_timestamp_seconds",
            "gauge",
            "Unix time of the last sync in which every operation succeeded.",
            &[(String::new(), last.to_string())],
        );
        metric(
            "ipvs_agent_virtual_servers",
            "gauge",
            "Virtual servers in the desired table.",
            &plain(get(&self.virtual_servers)),
        );
        metric(
            "ipvs_agent_real_servers",
            "gauge",
            "Real servers in the desired table.",
            &plain(get(&self.real_servers)),
        );
        metric(
            "ipvs_agent_draining_real_servers",
            "gauge",
            "Removed real servers still draining at weight 0.",
            &plain(get(&self.draining)),
        );
        self.kube_proxy.render(&mut out);
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn renders_prometheus_text() {
        let m = Metrics::default();
        let bind = Operation::BindAddress {
            address: "10.96.0.1".parse().unwrap(),
        };
        let unbind = Operation::UnbindAddress {
            address: "10.96.0.2".parse().unwrap(),
        };
        let at = UNIX_EPOCH + Duration::from_secs(1_700_000_000);
        m.record_sync(true, Duration::from_millis(3), &[&bind, &bind], &[&unbind], None);
        m.record_sync(false, Duration::from_millis(30), &[], &[], Some(at));
        m.record_netlink_error();
        m.record_conntrack_deleted(3);
        m.record_conntrack_errors(1);
        assert!(m.render().lines().any(|l| l == "svcnet_nftables_available 0"));
        m.set_nftables_available(true);
        let text = m.render();
        for line in [
            "# TYPE ipvs_agent_sync_duration_seconds histogram",
            "ipvs_agent_sync_duration_seconds_bucket{le=\"0.005\"} 1",
            "ipvs_agent_sync_duration_seconds_bucket{le=\"0.05\"} 2",
            "ipvs_agent_sync_duration_seconds_bucket{le=\"+Inf\"} 2",
            "ipvs_agent_sync_duration_seconds_count 2",
            "ipvs_agent_syncs_total{full=\"true\"} 1",
            "ipvs_agent_operations_total{kind=\"bind_address\"} 2",
            "ipvs_agent_operation_failures_total{kind=\"unbind_address\"} 1",
            "ipvs_agent_netlink_errors_total 2",
            "svcnet_conntrack_entries_deleted_total 3",
            "svcnet_conntrack_cleanup_errors_total 1",
            "svcnet_nftables_available 1",
            "ipvs_agent_last_successful_sync_timestamp_seconds 1700000000",
        ] {
            assert!(text.lines().any(|l| l == line), "{line} missing from\n{text}");
        }
    }
}
