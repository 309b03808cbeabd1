//! Writing the IPVS requests of a programming from empty: 5,000 ClusterIP
//! Services × 10 endpoints (5,000 virtual servers and 50,000 real servers,
//! the load of `make bench-vm`), planned by the core from an empty kernel
//! and turned into generic netlink requests, natively, without a kernel.
//! The desired table is built directly, as `desired_table` makes it of
//! such Services (`cargo bench --bench proxy` times that part).
//!
//! Two ways to write the same bytes:
//!
//! - generic: netlink-packet-core's serializer (`NetlinkMessage` around
//!   netlink-packet-generic's `GenlMessage`), each request finalized and
//!   serialized on its own, then copied into the batch; every nested
//!   attribute is asked for its length again at each level. Kept here only,
//!   to be measured against;
//! - one pass: the agent's `Batch::push` (`IpvsMessage::append_request`),
//!   which appends each request straight into the batch and writes a nest's
//!   length once, after its children.
//!
//! Both are first checked to give the same bytes. Criterion measures each;
//! then, in the same run, each is timed again with `std::time::Instant`
//! (taking turns, round by round) and the medians and their ratio are
//! written to `benchmarks/netlink-encode.json` and
//! `benchmarks/netlink-encode.md`. Run with `cargo bench -p ipvs-agent
//! --bench netlink_encode`; without `--bench` (as under `cargo test
//! --all-targets`) criterion only smoke-tests and nothing is written.

use criterion::Criterion;
use ipvs_agent::kernel::convert;
use ipvs_agent::netlink::{Batch, IpvsMessage};
use netlink_packet_core::{NetlinkHeader, NetlinkMessage, NLM_F_ACK, NLM_F_REQUEST};
use netlink_packet_generic::GenlMessage;
use std::fmt::Write as _;
use std::hint::black_box;
use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::path::PathBuf;
use std::time::{Duration, Instant};
use svcnet_core::family::IpFamily;
use svcnet_core::proxy::scheduler::Scheduler;
use svcnet_core::proxy::table::{
    full_netmask, Flags, Protocol, RealServer, VirtualServer, VirtualServerKey, VirtualServerSettings,
};
use svcnet_core::proxy::{plan, IpvsTable, NodeInfo, PlanContext, PlanState, ProxyConfig};
use svcnet_core::time::Time;

const SERVICES: u32 = 5_000;
const ENDPOINTS: u32 = 10;
const ROUNDS: usize = 15;
/// Any family id: the bytes around it are what is measured.
const FAMILY: u16 = 30;

/// The IPVS requests of programming the table from empty, in the order
/// the core plans them: `SERVICES` ClusterIP virtual servers (TCP port
/// 80, `rr`, masquerading) with `ENDPOINTS` real servers each, the table
/// `desired_table` makes of as many Services and EndpointSlices.
fn requests() -> Vec<IpvsMessage> {
    let mut desired = IpvsTable::new();
    for i in 0..SERVICES {
        let address = IpAddr::from(Ipv4Addr::from(u32::from(Ipv4Addr::new(10, 96, 0, 10)) + i));
        let base = u32::from(Ipv4Addr::new(10, 128, 0, 0)) + i * 16;
        let real_servers = (0..ENDPOINTS)
            .map(|j| {
                (
                    SocketAddr::new(Ipv4Addr::from(base + j).into(), 8080),
                    RealServer::masq(1),
                )
            })
            .collect();
        let settings = VirtualServerSettings {
            scheduler: Scheduler::default(),
            flags: Flags::NONE,
            timeout: 0,
            netmask: full_netmask(IpFamily::IPv4),
        };
        let key = VirtualServerKey::new(Protocol::Tcp, address, 80);
        desired
            .virtual_servers
            .insert(key, VirtualServer { settings, real_servers });
        desired.addresses.insert(address);
    }
    let node = NodeInfo {
        name: "node-0".into(),
        ips: vec!["192.168.0.10".parse().expect("valid")],
        zone: None,
    };
    let ctx = PlanContext::new(&ProxyConfig::default(), &node, Time::ZERO);
    let planned = plan(&IpvsTable::new(), &desired, &PlanState::default(), &ctx);
    (planned.operations.iter())
        .filter_map(|op| convert::request(op).expect("the plan converts"))
        .collect()
}

/// The batch through netlink-packet-core's generic serializer.
fn generic(requests: &[IpvsMessage]) -> Vec<u8> {
    let mut out = Vec::new();
    for (seq, message) in (1..).zip(requests) {
        let mut header = NetlinkHeader::default();
        header.flags = NLM_F_REQUEST | NLM_F_ACK;
        header.sequence_number = seq;
        let mut genl = GenlMessage::from_payload(message.clone());
        genl.set_resolved_family_id(FAMILY);
        let mut framed = NetlinkMessage::new(header, genl.into());
        framed.finalize();
        let start = out.len();
        out.resize(start + framed.buffer_len(), 0);
        framed.serialize(&mut out[start..]);
    }
    out
}

/// The batch as the agent writes it.
fn one_pass(requests: &[IpvsMessage]) -> Vec<u8> {
    let mut batch = Batch::new(FAMILY, 1);
    for message in requests {
        batch.push(message.clone());
    }
    batch.into_parts().0
}

fn main() {
    let measuring = std::env::args().any(|arg| arg == "--bench");
    let requests = requests();
    let bytes = one_pass(&requests);
    assert_eq!(generic(&requests), bytes, "both ways write the same bytes");
    let mut criterion = Criterion::default()
        .sample_size(10)
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(3))
        .configure_from_args();
    criterion.bench_function("generic serializer", |b| b.iter(|| black_box(generic(&requests))));
    criterion.bench_function("one pass", |b| b.iter(|| black_box(one_pass(&requests))));
    criterion.final_summary();
    if !measuring {
        return;
    }
    let (mut old, mut new) = (Vec::new(), Vec::new());
    for _ in 0..ROUNDS {
        old.push(timed(|| generic(&requests)));
        new.push(timed(|| one_pass(&requests)));
    }
    let (old, new) = (median(old), median(new));
    println!("generic serializer {old:.2} ms, one pass {new:.2} ms");
    match write_results(requests.len(), bytes.len(), old, new) {
        Ok(dir) => println!("figures written to {}", dir.display()),
        Err(err) => eprintln!("could not write the figures: {err}"),
    }
}

/// Milliseconds `write` takes (the clone of each message included, the
/// same on both sides).
fn timed(write: impl Fn() -> Vec<u8>) -> f64 {
    let start = Instant::now();
    black_box(write());
    start.elapsed().as_secs_f64() * 1e3
}

fn median(mut samples: Vec<f64>) -> f64 {
    samples.sort_by(f64::total_cmp);
    samples[samples.len() / 2]
}

fn write_results(requests: usize, bytes: usize, generic: f64, one_pass: f64) -> std::io::Result<PathBuf> {
    let ratio = generic / one_pass;
    let json = serde_json::json!({
        "benchmark": "cargo bench -p ipvs-agent --bench netlink_encode",
        "services": SERVICES,
        "endpointsPerService": ENDPOINTS,
        "requests": requests,
        "bytes": bytes,
        "unit": "milliseconds (median of rounds, std::time::Instant)",
        "genericSerializerMs": generic,
        "onePassMs": one_pass,
        "genericToOnePass": ratio,
    });
    let mut md = format!(
        "# IPVS requests: writing them in one pass\n\n\
         Measured by `cargo bench -p ipvs-agent --bench netlink_encode` (release\n\
         build, natively, no kernel): the {requests} generic netlink requests\n\
         ({bytes} bytes) of programming {SERVICES} ClusterIP Services × {ENDPOINTS}\n\
         endpoints from empty, as the core plans them. Median of {ROUNDS} rounds\n\
         with `std::time::Instant`, the two ways taking turns, in the same run as\n\
         criterion. Both write the same bytes (checked first).\n\n\
         | Way | Median |\n|---|---:|\n"
    );
    let _ = writeln!(
        md,
        "| netlink-packet-core's generic serializer (each request finalized and serialized, then copied in) | {generic:.2} ms |"
    );
    let _ = writeln!(
        md,
        "| the agent's `Batch::push`: appended in one pass, each nest's length written once | {one_pass:.2} ms |"
    );
    let _ = writeln!(
        md,
        "\nOne pass is **{ratio:.2}×** as fast. The generic serializer asks every\n\
         nested attribute for its length again at each level (and again to\n\
         finalize, size and write the message); the one-pass writer reserves a\n\
         nest's header, writes its children, then fills the length in."
    );
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..").join("benchmarks");
    std::fs::create_dir_all(&dir)?;
    std::fs::write(
        dir.join("netlink-encode.json"),
        serde_json::to_string_pretty(&json).map_err(std::io::Error::other)? + "\n",
    )?;
    std::fs::write(dir.join("netlink-encode.md"), md)?;
    Ok(dir)
}
