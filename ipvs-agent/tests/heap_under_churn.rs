//! The agent's memory follows the cluster, not its history: in standalone
//! mode, 4,000 Services come and go (never a name twice, as Deployments'
//! generated names do) while 200 stay at any time, and the bytes the agent
//! holds at the end are those it held at the start, give or take 2 % (a
//! leak of 12 bytes per Service that came and went would show).
//! A map keyed by something that never comes back (a Service name, a
//! ClusterIP, a file) and never pruned would grow with every change.
//!
//! The bytes are counted by this test binary's allocator: live
//! allocations, not RSS, which the allocator's own retention moves (the
//! soak, `make soak`, samples RSS under the same churn in the VM). A
//! process of its own, as the count covers every thread.

mod table;

use ipvs_agent::agent::{Agent, AgentSettings};
use ipvs_agent::cluster::Cluster;
use ipvs_agent::metrics::Metrics;
use ipvs_agent::node::NodeFlags;
use ipvs_agent::sync::SyncSettings;
use std::alloc::{GlobalAlloc, Layout, System};
use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;
use svcnet_core::controlplane::ClusterConfig;
use svcnet_core::proxy::{PlanState, ProxyConfig};
use svcnet_core::time::Time;
use table::TableDataplane;

/// The system allocator, counting the bytes allocated and not yet freed.
struct Counting;

static LIVE: AtomicUsize = AtomicUsize::new(0);

// SAFETY: every call is passed to the system allocator unchanged; the count
// is all that is added.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        LIVE.fetch_add(layout.size(), Ordering::Relaxed);
        // SAFETY: the caller's contract is the system allocator's.
        unsafe { System.alloc(layout) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        LIVE.fetch_sub(layout.size(), Ordering::Relaxed);
        // SAFETY: as above.
        unsafe { System.dealloc(ptr, layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        // SAFETY: as above.
        let moved = unsafe { System.realloc(ptr, layout, new_size) };
        if !moved.is_null() {
            LIVE.fetch_add(new_size, Ordering::Relaxed);
            LIVE.fetch_sub(layout.size(), Ordering::Relaxed);
        }
        moved
    }
}

#[global_allocator]
static ALLOCATOR: Counting = Counting;

/// Services alive at any time.
const ALIVE: usize = 200;
/// Services replaced by new ones each round, and others rescaled.
const PER_ROUND: usize = 20;

/// Service `n`'s file: a ClusterIP Service (address allocated by the agent)
/// and its EndpointSlice of `endpoints` ready endpoints.
fn write_service(dir: &Path, n: usize, endpoints: usize) {
    let mut text = format!(
        "apiVersion: v1\nkind: Service\nmetadata: {{name: s-{n}}}\nspec:\n  ports: [{{name: http, port: 80, targetPort: 8080}}]\n\
         ---\napiVersion: discovery.k8s.io/v1\nkind: EndpointSlice\n\
         metadata: {{name: s-{n}-a, labels: {{kubernetes.io/service-name: s-{n}}}}}\n\
         addressType: IPv4\nports: [{{name: http, port: 8080, protocol: TCP}}]\nendpoints:\n"
    );
    for e in 0..endpoints {
        let a = n * 16 + e;
        text.push_str(&format!(
            "- {{addresses: [10.{}.{}.{}], conditions: {{ready: true}}}}\n",
            128 + a / 65_536,
            a / 256 % 256,
            a % 256
        ));
    }
    let tmp = dir.join(format!("s-{n}.tmp"));
    std::fs::write(&tmp, text).unwrap();
    std::fs::rename(&tmp, dir.join(format!("s-{n}.yaml"))).unwrap();
}

#[tokio::test]
async fn the_agents_memory_follows_the_services_alive_not_the_changes_made() {
    let dir = tempfile::tempdir().unwrap();
    let manifests = dir.path().join("manifests");
    std::fs::create_dir(&manifests).unwrap();
    for n in 0..ALIVE {
        write_service(&manifests, n, 1 + n % 8);
    }
    let cluster = Cluster::open(
        ClusterConfig::default(),
        Some(dir.path().join("state.json")),
        vec![manifests.clone()],
    )
    .unwrap();
    let settings = AgentSettings {
        node: NodeFlags::new(Some("node-a".into()), vec!["192.168.0.10".parse().unwrap()]),
        host_ips: Vec::new(),
        proxy: ProxyConfig::default(),
        sync: SyncSettings::new(Duration::from_secs(1), Duration::from_secs(10)),
        conntrack_cleanup: true,
        nftables: true,
    };
    let mut now = Time(5_000_000);
    let metrics = Arc::new(Metrics::default());
    let mut agent = Agent::start(
        cluster,
        PlanState::default(),
        TableDataplane::default(),
        settings,
        metrics,
        now,
    )
    .unwrap();

    // Each round: the oldest PER_ROUND Services go, as many new ones come,
    // PER_ROUND others are rescaled; then 2 s of the agent's steps (polls
    // every second, a full read every 10 s).
    let (mut oldest, mut next) = (0, ALIVE);
    let mut round = |agent_now: &mut Time, r: usize| {
        for _ in 0..PER_ROUND {
            std::fs::remove_file(manifests.join(format!("s-{oldest}.yaml"))).unwrap();
            oldest += 1;
            write_service(&manifests, next, 1 + next % 8);
            next += 1;
        }
        for k in 0..PER_ROUND {
            let n = oldest + (r * 7 + k * 11) % ALIVE;
            write_service(&manifests, n, 1 + (n + r) % 12);
        }
        *agent_now = agent_now.plus(Duration::from_secs(1));
    };
    let mut samples = Vec::new();
    for r in 0..220 {
        round(&mut now, r);
        for _ in 0..2 {
            now = now.plus(Duration::from_secs(1));
            agent.step(now).await;
        }
        if r == 19 || r == 219 {
            // Settled: a full read and the syncs after it.
            for _ in 0..12 {
                now = now.plus(Duration::from_secs(1));
                agent.step(now).await;
            }
            assert_eq!(agent.control_plane().services().count(), ALIVE + 1, "with kubernetes");
            samples.push(LIVE.load(Ordering::Relaxed));
        }
    }
    let (warm, end) = (samples[0], samples[1]);
    assert!(next - ALIVE == 220 * PER_ROUND);
    assert!(
        end <= warm + warm / 50,
        "the agent holds {end} bytes after {} Services came and went, {warm} after the first {}",
        220 * PER_ROUND,
        20 * PER_ROUND
    );
}
