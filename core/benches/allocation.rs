//! Allocation benchmarks: ClusterIP allocation cost against range size and
//! fullness.
//!
//! Scenarios: fill a /12 from empty; `allocate_next` + `release` at 0 %,
//! 50 % and 99 % full on a /12; snapshot and restore of a full and of a
//! half-full (fragmented) /12; and `allocate_next` + `release` at 50 % on an
//! IPv6 /64 with as many allocated runs as the half-full /12, to show the
//! cost does not grow with range size.
//!
//! Criterion measures every scenario. Then, in the same run, each scenario is
//! timed again with `std::time::Instant` and the figures are written to
//! `benchmarks/allocation.json` and `benchmarks/allocation.md` (committed, quoted by the README) (time per
//! operation and the 99 %-full / 0 %-full ratio). Run with
//! `cargo bench --bench allocation`; under `cargo test` (no `--bench`
//! argument) criterion only smoke-tests and no figures are written.

use criterion::{BatchSize, Criterion, SamplingMode};
use ipnetwork::IpNetwork;
use std::hint::black_box;
use std::net::{IpAddr, Ipv6Addr};
use std::path::PathBuf;
use std::time::{Duration, Instant};
use svcnet_core::apiserver::cluster_ip::{ClusterIpAllocator, ClusterIpRangeSnapshot, ClusterIpSnapshot};
use svcnet_core::family::IpFamily;
use svcnet_core::rng::Rng;

const SLASH_12: &str = "10.96.0.0/12";
const SLASH_64: &str = "fd00:10:96::/64";
/// Usable addresses in a /12 (network and broadcast excluded).
const SLASH_12_USABLE: u64 = (1 << 20) - 2;

fn cidr(text: &str) -> IpNetwork {
    text.parse().expect("benchmark CIDRs are valid")
}

fn empty(text: &str) -> ClusterIpAllocator {
    ClusterIpAllocator::new([cidr(text)]).expect("benchmark CIDRs are valid")
}

/// A /12 with `count` addresses taken by `allocate_next` (random positions,
/// so the allocations are as fragmented as real use makes them).
fn slash_12_with(count: u64, seed: u64) -> ClusterIpAllocator {
    let mut allocator = empty(SLASH_12);
    let mut rng = Rng::new(seed);
    for _ in 0..count {
        allocator
            .allocate_next(IpFamily::IPv4, &mut rng)
            .expect("the /12 has room");
    }
    allocator
}

/// An IPv6 /64 half full: `runs` equal allocated blocks evenly spread over
/// the range, each half of its slot (the same fragmentation as a half-full
/// /12 with that many runs, on a range 2^44 times larger).
fn slash_64_half_full(runs: u64) -> ClusterIpAllocator {
    let network = cidr(SLASH_64);
    let base = match network.network() {
        IpAddr::V6(v6) => u128::from(v6),
        IpAddr::V4(_) => unreachable!("SLASH_64 is IPv6"),
    };
    let slot = (1u128 << 64) / u128::from(runs);
    let allocated = (0..u128::from(runs))
        .map(|i| {
            let first = base + i * slot + 1;
            let last = first + slot / 2 - 1;
            format!("{}-{}", Ipv6Addr::from(first), Ipv6Addr::from(last))
        })
        .collect();
    let mut allocator = empty(SLASH_64);
    allocator
        .restore(&ClusterIpSnapshot {
            ranges: vec![ClusterIpRangeSnapshot {
                range: network.to_string(),
                allocated,
            }],
        })
        .expect("the generated snapshot is valid");
    allocator
}

fn runs_of(allocator: &ClusterIpAllocator) -> usize {
    allocator.snapshot().ranges.iter().map(|r| r.allocated.len()).sum()
}

fn fill(family: IpFamily, allocator: &mut ClusterIpAllocator, rng: &mut Rng) -> u64 {
    let mut count = 0;
    while allocator.allocate_next(family, rng).is_ok() {
        count += 1;
    }
    count
}

/// One `allocate_next` and the `release` of what it returned: the state is
/// the same afterwards, so it can be repeated at a fixed fullness.
fn churn(family: IpFamily, allocator: &mut ClusterIpAllocator, rng: &mut Rng) {
    let ip = allocator
        .allocate_next(family, rng)
        .expect("benchmark states are never full");
    black_box(allocator.release(black_box(ip)));
}

/// The prepared states, shared by criterion and the figures.
struct States {
    empty_12: ClusterIpAllocator,
    half_12: ClusterIpAllocator,
    nearly_full_12: ClusterIpAllocator,
    full_12: ClusterIpAllocator,
    half_64: ClusterIpAllocator,
}

impl States {
    fn build() -> States {
        let half_12 = slash_12_with(SLASH_12_USABLE / 2, 50);
        let half_64 = slash_64_half_full(runs_of(&half_12) as u64);
        States {
            empty_12: empty(SLASH_12),
            half_12,
            nearly_full_12: slash_12_with(SLASH_12_USABLE * 99 / 100, 99),
            full_12: slash_12_with(SLASH_12_USABLE, 100),
            half_64,
        }
    }
}

fn criterion_benches(c: &mut Criterion, states: &mut States) {
    let mut group = c.benchmark_group("fill");
    group.sampling_mode(SamplingMode::Flat);
    group.sample_size(10);
    group.measurement_time(Duration::from_secs(4));
    group.bench_function("slash12_from_empty", |b| {
        let mut rng = Rng::new(1);
        b.iter_batched(
            || empty(SLASH_12),
            |mut allocator| fill(IpFamily::IPv4, &mut allocator, &mut rng),
            BatchSize::PerIteration,
        )
    });
    group.finish();

    let mut group = c.benchmark_group("allocate_next_release");
    let mut rng = Rng::new(2);
    for (name, family, allocator) in [
        ("slash12_0pct", IpFamily::IPv4, &mut states.empty_12),
        ("slash12_50pct", IpFamily::IPv4, &mut states.half_12),
        ("slash12_99pct", IpFamily::IPv4, &mut states.nearly_full_12),
        ("slash64_50pct", IpFamily::IPv6, &mut states.half_64),
    ] {
        group.bench_function(name, |b| b.iter(|| churn(family, allocator, &mut rng)));
    }
    group.finish();

    let mut group = c.benchmark_group("snapshot_restore");
    group.sampling_mode(SamplingMode::Flat);
    group.sample_size(10);
    for (name, allocator) in [("slash12_full", &states.full_12), ("slash12_50pct", &states.half_12)] {
        group.bench_function(format!("snapshot_{name}"), |b| {
            b.iter(|| black_box(allocator.snapshot()))
        });
        let snapshot = allocator.snapshot();
        group.bench_function(format!("restore_{name}"), |b| {
            b.iter_batched_ref(
                || empty(SLASH_12),
                |target| target.restore(black_box(&snapshot)),
                BatchSize::PerIteration,
            )
        });
    }
    group.finish();
}

/// One timed scenario for the results files.
struct Figure {
    name: &'static str,
    what: &'static str,
    ns_per_op: f64,
    operations: u64,
    runs: usize,
}

/// The median over `rounds` of the time per operation of `round`, which
/// performs and returns a number of operations.
fn median_ns_per_op(rounds: usize, mut round: impl FnMut() -> (u64, Duration)) -> (f64, u64) {
    let mut per_op: Vec<f64> = Vec::with_capacity(rounds);
    let mut operations = 0;
    for _ in 0..rounds {
        let (ops, elapsed) = round();
        operations += ops;
        per_op.push(elapsed.as_nanos() as f64 / ops.max(1) as f64);
    }
    per_op.sort_by(f64::total_cmp);
    (per_op[per_op.len() / 2], operations)
}

fn time_churn(family: IpFamily, allocator: &mut ClusterIpAllocator, seed: u64) -> (f64, u64) {
    const OPS: u64 = 200_000;
    let mut rng = Rng::new(seed);
    median_ns_per_op(5, || {
        let start = Instant::now();
        for _ in 0..OPS {
            churn(family, allocator, &mut rng);
        }
        (OPS, start.elapsed())
    })
}

fn time_snapshot(allocator: &ClusterIpAllocator) -> (f64, u64) {
    median_ns_per_op(5, || {
        let start = Instant::now();
        black_box(allocator.snapshot());
        (1, start.elapsed())
    })
}

fn time_restore(allocator: &ClusterIpAllocator) -> (f64, u64) {
    let snapshot = allocator.snapshot();
    median_ns_per_op(5, || {
        let mut target = empty(SLASH_12);
        let start = Instant::now();
        target.restore(black_box(&snapshot)).expect("own snapshot");
        let elapsed = start.elapsed();
        black_box(target);
        (1, elapsed)
    })
}

fn figures(states: &mut States) -> Vec<Figure> {
    let mut figures = Vec::new();
    let (ns_per_op, operations) = median_ns_per_op(3, || {
        let mut allocator = empty(SLASH_12);
        let mut rng = Rng::new(3);
        let start = Instant::now();
        let count = fill(IpFamily::IPv4, &mut allocator, &mut rng);
        (count, start.elapsed())
    });
    figures.push(Figure {
        name: "fill /12 from empty",
        what: "allocate_next, per address, until \"range is full\" (1,048,574 addresses)",
        ns_per_op,
        operations,
        runs: 1,
    });
    for (name, what, family, allocator, seed) in [
        (
            "/12 at 0 %",
            "allocate_next + release",
            IpFamily::IPv4,
            &mut states.empty_12,
            4,
        ),
        (
            "/12 at 50 %",
            "allocate_next + release",
            IpFamily::IPv4,
            &mut states.half_12,
            5,
        ),
        (
            "/12 at 99 %",
            "allocate_next + release",
            IpFamily::IPv4,
            &mut states.nearly_full_12,
            6,
        ),
        (
            "IPv6 /64 at 50 %",
            "allocate_next + release (same number of runs as the /12 at 50 %)",
            IpFamily::IPv6,
            &mut states.half_64,
            7,
        ),
    ] {
        let (ns_per_op, operations) = time_churn(family, allocator, seed);
        figures.push(Figure {
            name,
            what,
            ns_per_op,
            operations,
            runs: runs_of(allocator),
        });
    }
    for (snapshot_name, restore_name, allocator) in [
        ("snapshot /12 full", "restore /12 full", &states.full_12),
        ("snapshot /12 at 50 %", "restore /12 at 50 %", &states.half_12),
    ] {
        let runs = runs_of(allocator);
        let (ns_per_op, operations) = time_snapshot(allocator);
        figures.push(Figure {
            name: snapshot_name,
            what: "snapshot(), whole allocator",
            ns_per_op,
            operations,
            runs,
        });
        let (ns_per_op, operations) = time_restore(allocator);
        figures.push(Figure {
            name: restore_name,
            what: "restore() into an empty allocator, whole snapshot",
            ns_per_op,
            operations,
            runs,
        });
    }
    figures
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
    figures
        .iter()
        .find(|f| f.name == name)
        .map_or(f64::NAN, |f| f.ns_per_op)
}

fn results_dir() -> PathBuf {
    // The committed results folder the README quotes: <workspace>/benchmarks.
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..").join("benchmarks")
}

fn write_results(figures: &[Figure]) -> std::io::Result<PathBuf> {
    let ratio_99_to_0 = find(figures, "/12 at 99 %") / find(figures, "/12 at 0 %");
    let ratio_64_to_12 = find(figures, "IPv6 /64 at 50 %") / find(figures, "/12 at 50 %");
    let json = serde_json::json!({
        "benchmark": "cargo bench --bench allocation",
        "unit": "nanoseconds per operation (median of rounds, std::time::Instant)",
        "scenarios": figures.iter().map(|f| serde_json::json!({
            "name": f.name,
            "operation": f.what,
            "nsPerOp": f.ns_per_op,
            "operationsTimed": f.operations,
            "allocatedRuns": f.runs,
        })).collect::<Vec<_>>(),
        "ratio99PctTo0Pct": ratio_99_to_0,
        "ratioSlash64To12At50Pct": ratio_64_to_12,
    });
    let mut md = String::from(
        "# Allocation benchmarks\n\n\
         Measured by `cargo bench --bench allocation` (release build), in the\n\
         same run as criterion: median time per operation with\n\
         `std::time::Instant`.\n\n\
         | Scenario | Operation | Time per op | Allocated runs |\n\
         |---|---|---:|---:|\n",
    );
    for f in figures {
        md.push_str(&format!(
            "| {} | {} | {} | {} |\n",
            f.name,
            f.what,
            format_time(f.ns_per_op),
            f.runs
        ));
    }
    md.push_str(&format!(
        "\nRatio of the 99 %-full to the 0 %-full cost on the /12: **{ratio_99_to_0:.2}×**.\n\
         Ratio of the IPv6 /64 to the /12 at 50 % (same number of runs): **{ratio_64_to_12:.2}×**.\n"
    ));
    let dir = results_dir();
    std::fs::create_dir_all(&dir)?;
    std::fs::write(
        dir.join("allocation.json"),
        serde_json::to_string_pretty(&json).map_err(std::io::Error::other)? + "\n",
    )?;
    std::fs::write(dir.join("allocation.md"), md)?;
    Ok(dir)
}

fn main() {
    let measuring = std::env::args().any(|arg| arg == "--bench");
    let mut states = States::build();
    let mut criterion = Criterion::default()
        .sample_size(20)
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(2))
        .configure_from_args();
    criterion_benches(&mut criterion, &mut states);
    criterion.final_summary();
    if !measuring {
        return;
    }
    let figures = figures(&mut states);
    for f in &figures {
        println!("{:<24} {:>12}  ({} runs)", f.name, format_time(f.ns_per_op), f.runs);
    }
    match write_results(&figures) {
        Ok(dir) => println!("figures written to {}", dir.display()),
        Err(err) => eprintln!("could not write the figures: {err}"),
    }
}
