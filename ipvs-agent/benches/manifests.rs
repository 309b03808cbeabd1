//! The agent's manifest path at 5,000 Services × 10 endpoints (the shape of
//! tests/vm/bench-gen.sh: one file of Services, the EndpointSlices in 50
//! files), natively, without a kernel:
//!
//! - the first read: every file decoded, the whole set applied to a fresh
//!   control plane (what `run` does at start);
//! - a poll with nothing changed: stat only (what `run` does every poll
//!   period), and read and fingerprint every file (every sync period);
//! - one endpoint changed in one slice file: that file decoded again, one
//!   object applied, one Service reported changed;
//! - writing the state file (the allocations).
//!
//! Criterion measures each scenario; then, in the same run, each is timed
//! again with `std::time::Instant` and the medians are written to
//! `benchmarks/manifests.json` and `benchmarks/manifests.md`, with the ratio
//! of the first read to one change. Run with `cargo bench -p ipvs-agent`;
//! without `--bench` (as under `cargo test --all-targets`) criterion only
//! smoke-tests and nothing is written.

use criterion::Criterion;
use ipvs_agent::cluster::Cluster;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant, SystemTime};
use svcnet_core::controlplane::ClusterConfig;

/// The allocator the `ipvs-agent` binary uses.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

const SERVICES: usize = 5_000;
const ENDPOINTS: usize = 10;
const SLICE_FILES: usize = 50;
const ROUNDS: usize = 9;

/// An address in 10.<a>.x.y, 250 per /24, from 1.
fn ip(a: u8, k: usize) -> String {
    format!("10.{a}.{}.{}", k / 250, k % 250 + 1)
}

/// Writes the manifests into `dir`; `moved` shifts Service 0's first
/// endpoint, so alternating it is one endpoint change in one file.
fn write_manifests(dir: &Path, moved: bool) {
    let mut services = String::new();
    for i in 0..SERVICES {
        let _ = write!(
            services,
            "apiVersion: v1\nkind: Service\nmetadata: {{name: svc-{i}}}\nspec:\n  clusterIP: {}\n  ports: [{{name: http, port: 80, targetPort: 8080, protocol: TCP}}]\n---\n",
            ip(100, i)
        );
    }
    std::fs::write(dir.join("services.yaml"), services).unwrap();
    for file in 0..SLICE_FILES {
        let mut text = String::new();
        for i in (file..SERVICES).step_by(SLICE_FILES) {
            let _ = write!(
                text,
                "apiVersion: discovery.k8s.io/v1\nkind: EndpointSlice\nmetadata: {{name: svc-{i}-bench, labels: {{kubernetes.io/service-name: svc-{i}}}}}\naddressType: IPv4\nports: [{{name: http, port: 8080, protocol: TCP}}]\nendpoints:\n"
            );
            for e in 0..ENDPOINTS {
                let k = if i == 0 && e == 0 && moved {
                    62_499
                } else {
                    i * ENDPOINTS + e
                };
                let _ = writeln!(text, "- {{addresses: [{}], conditions: {{ready: true}}}}", ip(244, k));
            }
            text.push_str("---\n");
        }
        std::fs::write(dir.join(format!("slices-{file:02}.yaml")), text).unwrap();
    }
}

/// A cluster that has read the manifests once.
fn started(dir: &Path, state: Option<PathBuf>) -> Cluster {
    let mut cluster = Cluster::open(ClusterConfig::default(), state, vec![dir.to_path_buf()]).unwrap();
    cluster.refresh().unwrap().unwrap();
    cluster
}

/// Rewrites slices-00.yaml (Service 0's file) with or without the move.
fn change(dir: &Path, moved: bool) {
    let full = tempfile::tempdir().unwrap();
    write_manifests(full.path(), moved);
    std::fs::copy(full.path().join("slices-00.yaml"), dir.join("slices-00.yaml")).unwrap();
}

struct Figure {
    name: &'static str,
    ms: f64,
}

fn median_ms(mut run: impl FnMut() -> Duration) -> f64 {
    let mut samples: Vec<f64> = (0..ROUNDS).map(|_| run().as_secs_f64() * 1e3).collect();
    samples.sort_by(f64::total_cmp);
    samples[ROUNDS / 2]
}

fn figures(dir: &Path) -> Vec<Figure> {
    let first_read = median_ms(|| {
        let t = Instant::now();
        drop(started(dir, None));
        t.elapsed()
    });
    let mut cluster = started(dir, None);
    let idle = median_ms(|| {
        let t = Instant::now();
        assert!(cluster.refresh().unwrap().is_none());
        t.elapsed()
    });
    // A poll a minute after the files were written: their stamps have
    // settled, so an untouched file is only stat'ed.
    let later = || SystemTime::now() + Duration::from_secs(60);
    cluster.refresh_if_touched(later()).unwrap();
    let idle_stat = median_ms(|| {
        let t = Instant::now();
        assert!(cluster.refresh_if_touched(later()).unwrap().is_none());
        t.elapsed()
    });
    let mut moved = false;
    let one_change = median_ms(|| {
        moved = !moved;
        change(dir, moved);
        let t = Instant::now();
        let refreshed = cluster.refresh().unwrap().unwrap();
        let elapsed = t.elapsed();
        assert_eq!(refreshed.outcome.services.len(), 1);
        elapsed
    });
    let state = tempfile::tempdir().unwrap();
    let saving = started(dir, Some(state.path().join("state.json")));
    let save = median_ms(|| {
        let t = Instant::now();
        saving.save().unwrap();
        t.elapsed()
    });
    vec![
        Figure {
            name: "first read (decode every file, apply the whole set)",
            ms: first_read,
        },
        Figure {
            name: "poll, nothing changed: stat the files (every --min-sync-period)",
            ms: idle_stat,
        },
        Figure {
            name: "poll, nothing changed: read and fingerprint the files (every --sync-period)",
            ms: idle,
        },
        Figure {
            name: "one endpoint changed in one of 50 slice files",
            ms: one_change,
        },
        Figure {
            name: "write the state file (allocations)",
            ms: save,
        },
    ]
}

fn write_results(figures: &[Figure]) -> std::io::Result<PathBuf> {
    let ratio = figures[0].ms / figures[3].ms;
    let poll_ratio = figures[2].ms / figures[1].ms;
    let json = serde_json::json!({
        "benchmark": "cargo bench -p ipvs-agent --bench manifests",
        "services": SERVICES,
        "endpointsPerService": ENDPOINTS,
        "sliceFiles": SLICE_FILES,
        "unit": "milliseconds (median of rounds, std::time::Instant)",
        "scenarios": figures.iter().map(|f| serde_json::json!({"name": f.name, "ms": f.ms})).collect::<Vec<_>>(),
        "firstReadToOneChange": ratio,
        "readPollToStatPoll": poll_ratio,
    });
    let mut md = format!(
        "# ipvs-agent manifest benchmarks\n\n\
         Measured by `cargo bench -p ipvs-agent --bench manifests` (release\n\
         build, natively, no kernel): {SERVICES} Services × {ENDPOINTS} endpoints,\n\
         the EndpointSlices in {SLICE_FILES} files. Median of {ROUNDS} rounds with\n\
         `std::time::Instant`, in the same run as criterion.\n\n\
         | Scenario | Median |\n|---|---:|\n"
    );
    for f in figures {
        let _ = writeln!(md, "| {} | {:.2} ms |", f.name, f.ms);
    }
    let _ = writeln!(
        md,
        "\nThe first read costs **{ratio:.0}×** one endpoint change: a change decodes\n\
         only the file that changed (here a fiftieth of the YAML) and applies only\n\
         the object that changed. A poll that finds nothing changed stats the files\n\
         and reads none: **{poll_ratio:.0}×** cheaper than reading and fingerprinting\n\
         them all, which the agent still does once per sync period in case a rewrite\n\
         escaped the stamps. What still grows with the cluster is that stat per file\n\
         and copying the control plane's maps (their objects are shared) to undo a\n\
         change that is refused."
    );
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..").join("benchmarks");
    std::fs::create_dir_all(&dir)?;
    std::fs::write(
        dir.join("manifests.json"),
        serde_json::to_string_pretty(&json).map_err(std::io::Error::other)? + "\n",
    )?;
    std::fs::write(dir.join("manifests.md"), md)?;
    Ok(dir)
}

fn main() {
    let measuring = std::env::args().any(|arg| arg == "--bench");
    let dir = tempfile::tempdir().unwrap();
    write_manifests(dir.path(), false);
    let mut criterion = Criterion::default()
        .sample_size(10)
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(3))
        .configure_from_args();
    criterion.bench_function("first read", |b| b.iter(|| started(dir.path(), None)));
    let mut cluster = started(dir.path(), None);
    criterion.bench_function("poll, nothing changed", |b| {
        b.iter(|| assert!(cluster.refresh().unwrap().is_none()))
    });
    criterion.final_summary();
    if !measuring {
        return;
    }
    let figures = figures(dir.path());
    for f in &figures {
        println!("{:<60} {:>10.2} ms", f.name, f.ms);
    }
    match write_results(&figures) {
        Ok(dir) => println!("figures written to {}", dir.display()),
        Err(err) => eprintln!("could not write the figures: {err}"),
    }
}
