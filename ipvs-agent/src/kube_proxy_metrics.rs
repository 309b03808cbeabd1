//! kube-proxy's own metrics, by its names and with its buckets, and the
//! health state behind `/healthz` and `/livez` (the verdict is the core's
//! [`ProxyHealth`]). What a kube-proxy dashboard or alert reads keeps
//! working when svcnet replaces it; svcnet's own `ipvs_agent_*` metrics
//! stay beside these ([`crate::metrics`]).

use std::fmt::Write;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Mutex;
use std::time::{Duration, SystemTime, UNIX_EPOCH};
use svcnet_core::family::IpFamily;
use svcnet_core::proxy::health::{HealthAnswer, ProxyHealth};
use svcnet_core::proxy::watch_cache::ChangeStats;
use svcnet_core::time::Time;

/// A Prometheus histogram with fixed upper bounds.
#[derive(Debug)]
struct Histogram {
    bounds: Vec<f64>,
    counts: Vec<u64>,
    count: u64,
    sum: f64,
}

impl Histogram {
    fn new(bounds: Vec<f64>) -> Histogram {
        Histogram {
            counts: vec![0; bounds.len()],
            bounds,
            count: 0,
            sum: 0.0,
        }
    }

    fn observe(&mut self, value: f64) {
        for (bound, count) in self.bounds.iter().zip(self.counts.iter_mut()) {
            if value <= *bound {
                *count += 1;
            }
        }
        self.count += 1;
        self.sum += value;
    }

    /// The histogram once per family, labelled `ip_family` as kube-proxy's
    /// (one sync programs every family, so each family's series is the same).
    fn render(&self, out: &mut String, name: &str, help: &str, families: &[IpFamily]) {
        let _ = writeln!(out, "# HELP {name} {help}\n# TYPE {name} histogram");
        for family in families {
            let family = family.as_str();
            for (bound, count) in self.bounds.iter().zip(&self.counts) {
                let _ = writeln!(out, "{name}_bucket{{ip_family=\"{family}\",le=\"{bound}\"}} {count}");
            }
            let _ = writeln!(
                out,
                "{name}_bucket{{ip_family=\"{family}\",le=\"+Inf\"}} {}",
                self.count
            );
            let _ = writeln!(out, "{name}_sum{{ip_family=\"{family}\"}} {}", self.sum);
            let _ = writeln!(out, "{name}_count{{ip_family=\"{family}\"}} {}", self.count);
        }
    }
}

/// kube-proxy's sync buckets: 1 ms doubling 15 times.
fn sync_buckets() -> Vec<f64> {
    (0..15).map(|i| 0.001 * f64::from(1u32 << i)).collect()
}

/// kube-proxy's network programming buckets: 0.25 s and 0.5 s, each
/// second to 59 s, every 5 s to 115 s, every 30 s from 2 to 5 minutes.
fn programming_buckets() -> Vec<f64> {
    let mut b = vec![0.25, 0.5];
    b.extend((1..=59).map(f64::from));
    b.extend((0..12).map(|i| 60.0 + 5.0 * f64::from(i)));
    b.extend((0..7).map(|i| 120.0 + 30.0 * f64::from(i)));
    b
}

/// The histograms, under one lock.
#[derive(Debug)]
struct Histograms {
    sync: Histogram,
    full: Histogram,
    partial: Histogram,
    programming: Histogram,
}

/// kube-proxy's metrics and health.
#[derive(Debug)]
pub struct KubeProxyMetrics {
    histograms: Mutex<Histograms>,
    health: Mutex<ProxyHealth>,
    families: Mutex<Vec<IpFamily>>,
    node_eligible: AtomicBool,
    last_sync_ms: AtomicU64,
    last_queued_ms: AtomicU64,
    endpoint_changes: AtomicU64,
    service_changes: AtomicU64,
    endpoint_pending: AtomicU64,
    service_pending: AtomicU64,
    /// Trigger times of changes handed to the sync loop and not synced yet.
    triggers: Mutex<Vec<Time>>,
    healthz: [AtomicU64; 2],
    livez: [AtomicU64; 2],
}

impl Default for KubeProxyMetrics {
    fn default() -> Self {
        KubeProxyMetrics::new(Duration::from_secs(60))
    }
}

/// Wall time in the core's [`Time`].
pub fn wall_now() -> Time {
    let ms = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
        .unwrap_or(0);
    Time(ms)
}

impl KubeProxyMetrics {
    /// Metrics whose health turns bad when a change waits longer than
    /// `health_timeout` (kube-proxy: twice the sync period).
    pub fn new(health_timeout: Duration) -> KubeProxyMetrics {
        KubeProxyMetrics {
            histograms: Mutex::new(Histograms {
                sync: Histogram::new(sync_buckets()),
                full: Histogram::new(sync_buckets()),
                partial: Histogram::new(sync_buckets()),
                programming: Histogram::new(programming_buckets()),
            }),
            health: Mutex::new(ProxyHealth::new(health_timeout)),
            families: Mutex::new(vec![IpFamily::IPv4]),
            node_eligible: AtomicBool::new(true),
            last_sync_ms: AtomicU64::new(0),
            last_queued_ms: AtomicU64::new(0),
            endpoint_changes: AtomicU64::new(0),
            service_changes: AtomicU64::new(0),
            endpoint_pending: AtomicU64::new(0),
            service_pending: AtomicU64::new(0),
            triggers: Mutex::new(Vec::new()),
            healthz: [AtomicU64::new(0), AtomicU64::new(0)],
            livez: [AtomicU64::new(0), AtomicU64::new(0)],
        }
    }

    /// The sync loop starts for these families (IPv4 when none): each
    /// counts as freshly synced, as kube-proxy's do at start.
    pub fn start(&self, families: Vec<IpFamily>, now: Time) {
        let families = if families.is_empty() {
            vec![IpFamily::IPv4]
        } else {
            families
        };
        if let Ok(mut health) = self.health.lock() {
            for family in &families {
                health.updated(*family, now);
            }
        }
        if let Ok(mut f) = self.families.lock() {
            *f = families;
        }
        self.last_queued_ms.store(now.as_millis(), Ordering::Relaxed);
    }

    /// A change is waiting for a sync.
    pub fn queued(&self, now: Time) {
        self.last_queued_ms.store(now.as_millis(), Ordering::Relaxed);
        let families = self.families.lock().map(|f| f.clone()).unwrap_or_default();
        if let Ok(mut health) = self.health.lock() {
            for family in families {
                health.queued(family, now);
            }
        }
    }

    /// A full sync done in parts finished, `duration` after its first part
    /// started: observed as a full sync (each part was observed as a
    /// partial one).
    pub fn full_sync_in_parts(&self, duration: Duration) {
        if let Ok(mut h) = self.histograms.lock() {
            h.full.observe(duration.as_secs_f64());
        }
    }

    /// One sync ran for `duration`; when it succeeded (at `now`), the
    /// changes handed to it are programmed: their latency since their
    /// trigger time is observed and nothing is pending any more.
    pub fn synced(&self, full: bool, duration: Duration, succeeded: bool, now: Time) {
        if let Ok(mut h) = self.histograms.lock() {
            let secs = duration.as_secs_f64();
            h.sync.observe(secs);
            if full {
                h.full.observe(secs);
            } else {
                h.partial.observe(secs);
            }
            if succeeded {
                let triggers = self
                    .triggers
                    .lock()
                    .map(|mut t| std::mem::take(&mut *t))
                    .unwrap_or_default();
                for at in triggers {
                    h.programming.observe(now.since(at).as_secs_f64());
                }
            }
        }
        if !succeeded {
            return;
        }
        self.last_sync_ms.store(now.as_millis(), Ordering::Relaxed);
        self.endpoint_pending.store(0, Ordering::Relaxed);
        self.service_pending.store(0, Ordering::Relaxed);
        let families = self.families.lock().map(|f| f.clone()).unwrap_or_default();
        if let Ok(mut health) = self.health.lock() {
            for family in families {
                health.updated(family, now);
            }
        }
    }

    /// What the watch cache saw since the last call (API mode).
    pub fn record_changes(&self, stats: ChangeStats) {
        self.endpoint_changes
            .fetch_add(stats.endpoint_changes, Ordering::Relaxed);
        self.service_changes.fetch_add(stats.service_changes, Ordering::Relaxed);
        let len = |s: &std::collections::BTreeSet<String>| s.len() as u64;
        self.endpoint_pending
            .fetch_add(len(&stats.pending_endpoints), Ordering::Relaxed);
        self.service_pending
            .fetch_add(len(&stats.pending_services), Ordering::Relaxed);
        if let Ok(mut t) = self.triggers.lock() {
            t.extend(stats.trigger_times);
        }
    }

    /// Whether the node may take traffic (`/healthz` only).
    pub fn set_node_eligible(&self, eligible: bool) {
        self.node_eligible.store(eligible, Ordering::Relaxed);
    }

    /// `/healthz`, counted by status code.
    pub fn healthz(&self, now: Time) -> HealthAnswer {
        let answer = self.healthz_answer(now);
        self.healthz[usize::from(!answer.healthy)].fetch_add(1, Ordering::Relaxed);
        answer
    }

    /// `/healthz`'s verdict, not counted: what the Service health checks
    /// report as `serviceProxyHealthy`.
    pub fn healthy(&self, now: Time) -> bool {
        self.healthz_answer(now).healthy
    }

    fn healthz_answer(&self, now: Time) -> HealthAnswer {
        let eligible = self.node_eligible.load(Ordering::Relaxed);
        match self.health.lock() {
            Ok(h) => h.healthz(now, eligible),
            Err(_) => ProxyHealth::new(Duration::ZERO).healthz(now, false),
        }
    }

    /// `/livez`, counted by status code.
    pub fn livez(&self, now: Time) -> HealthAnswer {
        let answer = match self.health.lock() {
            Ok(h) => h.livez(now),
            Err(_) => ProxyHealth::new(Duration::ZERO).healthz(now, false),
        };
        self.livez[usize::from(!answer.healthy)].fetch_add(1, Ordering::Relaxed);
        answer
    }

    /// The metrics in the Prometheus text format. Those kube-proxy labels
    /// with `ip_family` carry it here too, one series per family served.
    pub fn render(&self, out: &mut String) {
        let families = self.families.lock().map(|f| f.clone()).unwrap_or_default();
        if let Ok(h) = self.histograms.lock() {
            h.sync.render(
                out,
                "kubeproxy_sync_proxy_rules_duration_seconds",
                "SyncProxyRules latency in seconds",
                &families,
            );
            h.full.render(
                out,
                "kubeproxy_sync_full_proxy_rules_duration_seconds",
                "SyncProxyRules latency in seconds for full resyncs",
                &families,
            );
            h.partial.render(
                out,
                "kubeproxy_sync_partial_proxy_rules_duration_seconds",
                "SyncProxyRules latency in seconds for partial resyncs",
                &families,
            );
            h.programming.render(
                out,
                "kubeproxy_network_programming_duration_seconds",
                "In Cluster Network Programming Latency in seconds",
                &families,
            );
        }
        let get = |a: &AtomicU64| a.load(Ordering::Relaxed);
        let seconds = |a: &AtomicU64| get(a) as f64 / 1000.0;
        for (name, help, value) in [
            (
                "kubeproxy_sync_proxy_rules_last_timestamp_seconds",
                "The last time proxy rules were successfully synced",
                seconds(&self.last_sync_ms),
            ),
            (
                "kubeproxy_sync_proxy_rules_last_queued_timestamp_seconds",
                "The last time a sync of proxy rules was queued",
                seconds(&self.last_queued_ms),
            ),
        ] {
            let _ = writeln!(out, "# HELP {name} {help}\n# TYPE {name} gauge");
            for family in &families {
                let _ = writeln!(out, "{name}{{ip_family=\"{}\"}} {value}", family.as_str());
            }
        }
        let mut one = |name: &str, kind: &str, help: &str, value: String| {
            let _ = writeln!(out, "# HELP {name} {help}\n# TYPE {name} {kind}\n{name} {value}");
        };
        one(
            "kubeproxy_sync_proxy_rules_endpoint_changes_total",
            "counter",
            "Cumulative proxy rules Endpoint changes",
            get(&self.endpoint_changes).to_string(),
        );
        one(
            "kubeproxy_sync_proxy_rules_endpoint_changes_pending",
            "gauge",
            "Pending proxy rules Endpoint changes",
            get(&self.endpoint_pending).to_string(),
        );
        one(
            "kubeproxy_sync_proxy_rules_service_changes_total",
            "counter",
            "Cumulative proxy rules Service changes",
            get(&self.service_changes).to_string(),
        );
        one(
            "kubeproxy_sync_proxy_rules_service_changes_pending",
            "gauge",
            "Pending proxy rules Service changes",
            get(&self.service_pending).to_string(),
        );
        for (name, help, counts) in [
            (
                "kubeproxy_proxy_healthz_total",
                "Cumulative proxy healthz HTTP status",
                &self.healthz,
            ),
            (
                "kubeproxy_proxy_livez_total",
                "Cumulative proxy livez HTTP status",
                &self.livez,
            ),
        ] {
            let _ = writeln!(out, "# HELP {name} {help}\n# TYPE {name} counter");
            for (code, count) in ["200", "503"].iter().zip(counts) {
                let _ = writeln!(out, "{name}{{code=\"{code}\"}} {}", get(count));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kube_proxys_names_buckets_and_programming_latency() {
        let m = KubeProxyMetrics::new(Duration::from_secs(60));
        let t0 = Time::from_secs(1_795_547_000);
        m.start(vec![IpFamily::IPv4, IpFamily::IPv6], t0);
        m.record_changes(ChangeStats {
            service_changes: 1,
            endpoint_changes: 2,
            pending_endpoints: ["default/web".to_string()].into(),
            trigger_times: vec![t0],
            ..ChangeStats::default()
        });
        m.queued(t0);
        let mut text = String::new();
        m.render(&mut text);
        assert!(
            text.contains("\nkubeproxy_sync_proxy_rules_endpoint_changes_pending 1\n"),
            "{text}"
        );
        m.synced(
            false,
            Duration::from_millis(3),
            true,
            t0.plus(Duration::from_millis(1500)),
        );
        let mut text = String::new();
        m.render(&mut text);
        for line in [
            "kubeproxy_sync_proxy_rules_duration_seconds_bucket{ip_family=\"IPv4\",le=\"0.004\"} 1",
            "kubeproxy_sync_proxy_rules_duration_seconds_bucket{ip_family=\"IPv4\",le=\"0.002\"} 0",
            "kubeproxy_sync_proxy_rules_duration_seconds_bucket{ip_family=\"IPv6\",le=\"0.004\"} 1",
            "kubeproxy_sync_partial_proxy_rules_duration_seconds_count{ip_family=\"IPv4\"} 1",
            "kubeproxy_sync_full_proxy_rules_duration_seconds_count{ip_family=\"IPv6\"} 0",
            "kubeproxy_network_programming_duration_seconds_bucket{ip_family=\"IPv4\",le=\"1\"} 0",
            "kubeproxy_network_programming_duration_seconds_bucket{ip_family=\"IPv4\",le=\"2\"} 1",
            "kubeproxy_network_programming_duration_seconds_bucket{ip_family=\"IPv6\",le=\"300\"} 1",
            "kubeproxy_sync_proxy_rules_endpoint_changes_total 2",
            "kubeproxy_sync_proxy_rules_endpoint_changes_pending 0",
            "kubeproxy_sync_proxy_rules_service_changes_total 1",
            "kubeproxy_sync_proxy_rules_last_timestamp_seconds{ip_family=\"IPv4\"} 1795547001.5",
            "kubeproxy_sync_proxy_rules_last_timestamp_seconds{ip_family=\"IPv6\"} 1795547001.5",
        ] {
            assert!(text.lines().any(|l| l == line), "{line} missing from\n{text}");
        }
        assert_eq!(programming_buckets().len(), 2 + 59 + 12 + 7);
    }

    #[test]
    fn health_turns_bad_when_a_change_waits_too_long_and_is_counted() {
        let m = KubeProxyMetrics::new(Duration::from_secs(60));
        let t0 = Time::from_secs(1_795_547_000);
        m.start(Vec::new(), t0);
        assert!(m.healthz(t0).healthy);
        m.queued(t0.plus(Duration::from_secs(1)));
        assert!(m.livez(t0.plus(Duration::from_secs(30))).healthy);
        assert!(!m.healthz(t0.plus(Duration::from_secs(61))).healthy);
        m.set_node_eligible(false);
        m.synced(true, Duration::ZERO, true, t0.plus(Duration::from_secs(62)));
        assert!(
            !m.healthz(t0.plus(Duration::from_secs(63))).healthy,
            "node not eligible"
        );
        assert!(m.livez(t0.plus(Duration::from_secs(63))).healthy);
        let mut text = String::new();
        m.render(&mut text);
        assert!(
            text.contains(
                "kubeproxy_proxy_healthz_total{code=\"200\"} 1\nkubeproxy_proxy_healthz_total{code=\"503\"} 2\n"
            ),
            "{text}"
        );
    }
}
