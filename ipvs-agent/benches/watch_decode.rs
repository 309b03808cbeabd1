//! Decoding API mode's lists at 5,000 Services × 10 endpoints (the load of
//! tests/vm/bench-kube-proxy.sh), natively, without an apiserver: the
//! EndpointSlice list and the Service list as kube-rs's watcher receives
//! them (pages of 500, `kube::core::ObjectList`), each object in the shape
//! kube-apiserver v1.37 writes it (compact JSON, its key order,
//! `managedFields`): the slices as kube-controller-manager's EndpointSlice
//! controller writes them (conditions, `nodeName`, `targetRef`, ports,
//! owner reference), the Services as `kubectl create` does (ClusterIP, a
//! selector, one port).
//!
//! Two paths, from the page's text to the core's `Watched` objects, both
//! with the metadata limits checked:
//!
//! - old: what the agent did until the `kubeapi::objects` types: the page
//!   into k8s-openapi's types (`managedFields` included, as
//!   `serde_json::Value` trees), `managedFields` dropped,
//!   `serde_json::to_value`, then `serde_json::from_value` into the core's
//!   types. Kept here only, to be measured against;
//! - new: the agent's `kubeapi::objects` types (each object's text
//!   captured, then decoded once into the core's type) and
//!   `kubeapi::convert`.
//!
//! A third figure, the core's types straight from the page with no
//! capture, is what the capture (which lets an object the core cannot read
//! be reported without failing its page) costs on top.
//!
//! Both paths are first checked to give the same objects. Criterion
//! measures each; then, in the same run, each is timed again with
//! `std::time::Instant` (the paths taking turns, round by round) and the
//! medians and their ratio are written to `benchmarks/watch-decode.json`
//! and `benchmarks/watch-decode.md`. Run with `cargo bench -p ipvs-agent
//! --bench watch_decode`; without `--bench` (as under `cargo test
//! --all-targets`) criterion only smoke-tests and nothing is written.

use criterion::Criterion;
use ipvs_agent::kubeapi::{convert, objects};
use kube::core::ObjectList;
use serde::de::DeserializeOwned;
use serde::Serialize;
use std::fmt::Write as _;
use std::hint::black_box;
use std::path::PathBuf;
use std::time::{Duration, Instant};
use svcnet_core::api::limits::check_object_meta;
use svcnet_core::proxy::watch_cache::Watched;

/// The allocator the `ipvs-agent` binary uses.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

const SERVICES: usize = 5_000;
const ENDPOINTS: usize = 10;
/// kube-rs's watcher lists this many objects per request.
const PAGE: usize = 500;
const ROUNDS: usize = 9;
const TIME: &str = "2026-11-26T07:42:17Z";

/// A UUID-shaped id, different for each (kind, index).
fn uid(kind: u32, i: usize) -> String {
    let x = (i as u64 + 1).wrapping_mul(0x9e37_79b9_7f4a_7c15) ^ u64::from(kind) << 56;
    format!(
        "{:08x}-{:04x}-4{:03x}-a{:03x}-{:012x}",
        x >> 32,
        (x >> 16) & 0xffff,
        x & 0xfff,
        (x >> 20) & 0xfff,
        x & 0xffff_ffff_ffff
    )
}

/// Five characters as the apiserver appends to a `generateName`.
fn suffix(i: usize, salt: usize) -> String {
    const LETTERS: &[u8] = b"bcdfghjklmnpqrstvwxz2456789";
    let mut n = i.wrapping_mul(2_654_435_761).wrapping_add(salt.wrapping_mul(40_503));
    (0..5)
        .map(|_| {
            let c = LETTERS[n % LETTERS.len()];
            n /= LETTERS.len();
            c as char
        })
        .collect()
}

/// Service `i` as kube-apiserver lists it after `kubectl create`.
fn service(i: usize) -> String {
    let ip = format!("10.{}.{}.{}", 96 + i / 65_536, i / 256 % 256, i % 256);
    format!(
        concat!(
            r#"{{"metadata":{{"name":"svc-{i}","namespace":"bench","uid":"{uid}","resourceVersion":"{rv}","#,
            r#""creationTimestamp":"{time}","managedFields":[{{"manager":"kubectl-create","operation":"Update","#,
            r#""apiVersion":"v1","time":"{time}","fieldsType":"FieldsV1","fieldsV1":{{"f:spec":{{"#,
            r#""f:internalTrafficPolicy":{{}},"f:ports":{{".":{{}},"k:{{\"port\":80,\"protocol\":\"TCP\"}}":{{"#,
            r#"".":{{}},"f:port":{{}},"f:protocol":{{}},"f:targetPort":{{}}}}}},"f:selector":{{}},"#,
            r#""f:sessionAffinity":{{}},"f:type":{{}}}}}}}}]}},"spec":{{"ports":[{{"protocol":"TCP","port":80,"#,
            r#""targetPort":8080}}],"selector":{{"app":"svc-{i}"}},"clusterIP":"{ip}","clusterIPs":["{ip}"],"#,
            r#""type":"ClusterIP","sessionAffinity":"None","ipFamilies":["IPv4"],"ipFamilyPolicy":"SingleStack","#,
            r#""internalTrafficPolicy":"Cluster"}},"status":{{"loadBalancer":{{}}}}}}"#
        ),
        i = i,
        ip = ip,
        uid = uid(0, i),
        rv = 1_000 + i,
        time = TIME,
    )
}

/// The EndpointSlice of Service `i` as kube-controller-manager writes it:
/// ten ready endpoints, each a Pod on one of three nodes.
fn endpoint_slice(i: usize) -> String {
    let mut endpoints = String::new();
    for e in 0..ENDPOINTS {
        let k = i * ENDPOINTS + e;
        let _ = write!(
            endpoints,
            concat!(
                r#"{comma}{{"addresses":["10.{a}.{b}.{c}"],"conditions":{{"ready":true,"serving":true,"#,
                r#""terminating":false}},"targetRef":{{"kind":"Pod","namespace":"bench","#,
                r#""name":"svc-{i}-7d4b9c8f6-{pod}","uid":"{uid}"}},"nodeName":"node-{node}"}}"#
            ),
            comma = if e == 0 { "" } else { "," },
            i = i,
            a = 128 + k / 65_536,
            b = k / 256 % 256,
            c = k % 256,
            pod = suffix(k, 1),
            uid = uid(2, k),
            node = ["a", "b", "c"][k % 3],
        );
    }
    format!(
        concat!(
            r#"{{"metadata":{{"name":"svc-{i}-{name}","generateName":"svc-{i}-","namespace":"bench","#,
            r#""uid":"{uid}","resourceVersion":"{rv}","generation":3,"creationTimestamp":"{time}","#,
            r#""labels":{{"endpointslice.kubernetes.io/managed-by":"endpointslice-controller.k8s.io","#,
            r#""kubernetes.io/service-name":"svc-{i}"}},"ownerReferences":[{{"apiVersion":"v1","kind":"Service","#,
            r#""name":"svc-{i}","uid":"{owner}","controller":true,"blockOwnerDeletion":true}}],"#,
            r#""managedFields":[{{"manager":"kube-controller-manager","operation":"Update","#,
            r#""apiVersion":"discovery.k8s.io/v1","time":"{time}","fieldsType":"FieldsV1","fieldsV1":{{"#,
            r#""f:addressType":{{}},"f:endpoints":{{}},"f:metadata":{{"f:generateName":{{}},"f:labels":{{"#,
            r#"".":{{}},"f:endpointslice.kubernetes.io/managed-by":{{}},"f:kubernetes.io/service-name":{{}}}},"#,
            r#""f:ownerReferences":{{".":{{}},"k:{{\"uid\":\"{owner}\"}}":{{}}}}}},"f:ports":{{}}}}}}]}},"#,
            r#""addressType":"IPv4","endpoints":[{endpoints}],"ports":[{{"name":"","protocol":"TCP","port":8080}}]}}"#
        ),
        i = i,
        endpoints = endpoints,
        name = suffix(i, 0),
        uid = uid(1, i),
        owner = uid(0, i),
        rv = 10_000 + i,
        time = TIME,
    )
}

/// The list of `kind` as pages of [`PAGE`] objects, as the watcher asks
/// for them (`limit`, then `continue`).
fn pages(kind: &str, api_version: &str, object: fn(usize) -> String) -> Vec<String> {
    (0..SERVICES)
        .step_by(PAGE)
        .map(|first| {
            let last = (first + PAGE).min(SERVICES);
            let more = if last < SERVICES {
                format!(r#","continue":"page-{last}","remainingItemCount":{}"#, SERVICES - last)
            } else {
                String::new()
            };
            let items: Vec<String> = (first..last).map(object).collect();
            format!(
                r#"{{"kind":"{kind}","apiVersion":"{api_version}","metadata":{{"resourceVersion":"60000"{more}}},"items":[{}]}}"#,
                items.join(",")
            )
        })
        .collect()
}

/// The old path: k8s-openapi's types, `managedFields` dropped, then a JSON
/// value round trip into the core's types, limits checked.
fn old_path<K, T>(pages: &[String], kind: &str, watched: fn(Box<T>) -> Watched) -> Vec<Result<Watched, String>>
where
    K: k8s_openapi::Metadata<Ty = k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta>
        + DeserializeOwned
        + Serialize
        + Clone,
    T: objects::Kind,
{
    let mut out = Vec::new();
    for page in pages {
        let list: ObjectList<K> = serde_json::from_str(page).expect("a page decodes");
        out.extend(list.items.into_iter().map(|mut object| {
            let meta = object.metadata_mut();
            let name = format!(
                "{}/{}",
                meta.namespace.as_deref().unwrap_or_default(),
                meta.name.as_deref().unwrap_or_default()
            );
            meta.managed_fields = None;
            let value = serde_json::to_value(&object).map_err(|e| format!("{kind} {name}: {e}"))?;
            let core: T = serde_json::from_value(value).map_err(|e| format!("{kind} {name}: {e}"))?;
            check_object_meta(core.metadata()).map_err(|e| format!("{kind} {name}: {e}"))?;
            Ok(watched(Box::new(core)))
        }));
    }
    out
}

/// The new path, as the agent runs it.
fn new_path<T: objects::Kind + Clone + std::fmt::Debug>(
    pages: &[String],
    convert: fn(objects::Received<T>) -> Result<Watched, String>,
) -> Vec<Result<Watched, String>> {
    let mut out = Vec::new();
    for page in pages {
        let list: ObjectList<objects::Received<T>> = serde_json::from_str(page).expect("a page decodes");
        out.extend(list.items.into_iter().map(convert));
    }
    out
}

/// The core's types straight from the page, no capture (not what the
/// agent can do: one object the core cannot read would fail its page).
fn uncaptured<T: objects::Kind + Clone>(
    pages: &[String],
    watched: fn(Box<T>) -> Watched,
) -> Vec<Result<Watched, String>> {
    let mut out = Vec::new();
    for page in pages {
        let list: ObjectList<T> = serde_json::from_str(page).expect("a page decodes");
        out.extend(list.items.into_iter().map(|mut core| {
            let (api_version, kind) = core.type_meta();
            T::API_VERSION.clone_into(api_version);
            T::KIND.clone_into(kind);
            check_object_meta(core.metadata()).map_err(|e| e.to_string())?;
            Ok(watched(Box::new(core)))
        }));
    }
    out
}

/// The objects, with what the old path drops and the new one reads past
/// (`managedFields`) left out, for comparing the two.
fn comparable(objects: Vec<Result<Watched, String>>) -> Vec<Watched> {
    objects
        .into_iter()
        .map(|object| {
            let mut object = object.expect("every object reads");
            match &mut object {
                Watched::Service(s) => s.metadata.managed_fields = None,
                Watched::EndpointSlice(s) => s.metadata.managed_fields = None,
                Watched::Node(n) => n.metadata.managed_fields = None,
            }
            object
        })
        .collect()
}

struct Lists {
    slices: Vec<String>,
    services: Vec<String>,
}

impl Lists {
    fn new() -> Self {
        Lists {
            slices: pages("EndpointSliceList", "discovery.k8s.io/v1", endpoint_slice),
            services: pages("ServiceList", "v1", service),
        }
    }

    fn old_slices(&self) -> Vec<Result<Watched, String>> {
        old_path::<k8s_openapi::api::discovery::v1::EndpointSlice, svcnet_core::api::EndpointSlice>(
            &self.slices,
            "EndpointSlice",
            Watched::EndpointSlice,
        )
    }

    fn new_slices(&self) -> Vec<Result<Watched, String>> {
        new_path(&self.slices, convert::endpoint_slice)
    }

    fn uncaptured_slices(&self) -> Vec<Result<Watched, String>> {
        uncaptured::<svcnet_core::api::EndpointSlice>(&self.slices, Watched::EndpointSlice)
    }

    fn old_services(&self) -> Vec<Result<Watched, String>> {
        old_path::<k8s_openapi::api::core::v1::Service, svcnet_core::api::Service>(
            &self.services,
            "Service",
            Watched::Service,
        )
    }

    fn new_services(&self) -> Vec<Result<Watched, String>> {
        new_path(&self.services, convert::service)
    }

    fn uncaptured_services(&self) -> Vec<Result<Watched, String>> {
        uncaptured::<svcnet_core::api::Service>(&self.services, Watched::Service)
    }

    /// Both paths give the same objects, all of them readable.
    fn check(&self) {
        let new = comparable(self.new_slices());
        assert_eq!(new.len(), SERVICES);
        assert!(matches!(&new[0], Watched::EndpointSlice(s) if s.endpoints.len() == ENDPOINTS));
        assert_eq!(
            comparable(self.old_slices()),
            new,
            "the old and new paths differ on EndpointSlices"
        );
        assert_eq!(comparable(self.uncaptured_slices()), new);
        let new = comparable(self.new_services());
        assert_eq!(new.len(), SERVICES);
        assert_eq!(
            comparable(self.old_services()),
            new,
            "the old and new paths differ on Services"
        );
        assert_eq!(comparable(self.uncaptured_services()), new);
    }
}

fn bytes(pages: &[String]) -> usize {
    pages.iter().map(String::len).sum()
}

/// One list's figures: medians in milliseconds.
struct Figures {
    list: &'static str,
    bytes: usize,
    old: f64,
    new: f64,
    uncaptured: f64,
}

fn median(mut samples: Vec<f64>) -> f64 {
    samples.sort_by(f64::total_cmp);
    samples[samples.len() / 2]
}

fn ms(run: impl FnOnce() -> Vec<Result<Watched, String>>) -> f64 {
    let t = Instant::now();
    let out = run();
    let elapsed = t.elapsed();
    drop(black_box(out));
    elapsed.as_secs_f64() * 1e3
}

fn figures(lists: &Lists) -> [Figures; 2] {
    let mut samples = vec![Vec::new(); 6];
    for _ in 0..ROUNDS {
        samples[0].push(ms(|| lists.old_slices()));
        samples[1].push(ms(|| lists.new_slices()));
        samples[2].push(ms(|| lists.uncaptured_slices()));
        samples[3].push(ms(|| lists.old_services()));
        samples[4].push(ms(|| lists.new_services()));
        samples[5].push(ms(|| lists.uncaptured_services()));
    }
    let mut medians = samples.into_iter().map(median);
    let mut next = || medians.next().expect("six medians");
    [
        Figures {
            list: "EndpointSlices",
            bytes: bytes(&lists.slices),
            old: next(),
            new: next(),
            uncaptured: next(),
        },
        Figures {
            list: "Services",
            bytes: bytes(&lists.services),
            old: next(),
            new: next(),
            uncaptured: next(),
        },
    ]
}

fn write_results(figures: &[Figures]) -> std::io::Result<PathBuf> {
    let json = serde_json::json!({
        "benchmark": "cargo bench -p ipvs-agent --bench watch_decode",
        "services": SERVICES,
        "endpointsPerService": ENDPOINTS,
        "pageSize": PAGE,
        "unit": "milliseconds (median of rounds, std::time::Instant)",
        "lists": figures.iter().map(|f| serde_json::json!({
            "list": f.list,
            "bytes": f.bytes,
            "oldMs": f.old,
            "newMs": f.new,
            "oldToNew": f.old / f.new,
            "uncapturedMs": f.uncaptured,
        })).collect::<Vec<_>>(),
    });
    let mut md = format!(
        "# Decoding API mode's lists\n\n\
         Measured by `cargo bench -p ipvs-agent --bench watch_decode` (release\n\
         build, natively, no apiserver): the EndpointSlice and Service lists of\n\
         {SERVICES} Services × {ENDPOINTS} endpoints, in pages of {PAGE} as kube-rs's\n\
         watcher receives them, each object as kube-apiserver v1.37 writes it\n\
         (`managedFields` included; the slices as kube-controller-manager writes\n\
         them, the Services as `kubectl create` does), from the page's text to the\n\
         core's objects, metadata limits checked. Median of {ROUNDS} rounds with\n\
         `std::time::Instant`, the paths taking turns, in the same run as\n\
         criterion; compare the ratios, not the times, across machines.\n\n\
         - **old**: k8s-openapi's types (`managedFields` as `serde_json::Value`\n\
         \u{20} trees), then `serde_json::to_value` and `serde_json::from_value`\n\
         \u{20} into the core's types (the agent before `kubeapi::objects`);\n\
         - **new**: `kubeapi::objects`: each object's text captured, then decoded\n\
         \u{20} once into the core's type, `managedFields` read past;\n\
         - **no capture**: the core's types straight from the page: what the\n\
         \u{20} capture costs, which keeps an object the core cannot read from\n\
         \u{20} failing its page.\n\n\
         | List | JSON | Old | New | Old ÷ new | No capture |\n|---|---:|---:|---:|---:|---:|\n"
    );
    for f in figures {
        let _ = writeln!(
            md,
            "| {} | {:.1} MB | {:.1} ms | {:.1} ms | **{:.2}×** | {:.1} ms |",
            f.list,
            f.bytes as f64 / 1e6,
            f.old,
            f.new,
            f.old / f.new,
            f.uncaptured
        );
    }
    let slices = &figures[0];
    let _ = writeln!(
        md,
        "\nOn the slices the capture is {:.0} % of the new path's time; without it the\n\
         new path would be {:.1}× faster than the old one, but one object the core\n\
         cannot read would fail its whole page, and the list again on every retry.",
        (slices.new - slices.uncaptured) / slices.new * 100.0,
        slices.old / slices.uncaptured
    );
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..").join("benchmarks");
    std::fs::create_dir_all(&dir)?;
    std::fs::write(
        dir.join("watch-decode.json"),
        serde_json::to_string_pretty(&json).map_err(std::io::Error::other)? + "\n",
    )?;
    std::fs::write(dir.join("watch-decode.md"), md)?;
    Ok(dir)
}

fn main() {
    let measuring = std::env::args().any(|arg| arg == "--bench");
    let lists = Lists::new();
    lists.check();
    let mut criterion = Criterion::default()
        .sample_size(10)
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(3))
        .configure_from_args();
    criterion.bench_function("EndpointSlice list, old path", |b| b.iter(|| lists.old_slices()));
    criterion.bench_function("EndpointSlice list, new path", |b| b.iter(|| lists.new_slices()));
    criterion.bench_function("Service list, old path", |b| b.iter(|| lists.old_services()));
    criterion.bench_function("Service list, new path", |b| b.iter(|| lists.new_services()));
    criterion.final_summary();
    if !measuring {
        return;
    }
    let figures = figures(&lists);
    for f in &figures {
        println!(
            "{:<15} {:>6.1} MB  old {:>8.1} ms  new {:>8.1} ms  old/new {:>5.2}  no capture {:>8.1} ms",
            f.list,
            f.bytes as f64 / 1e6,
            f.old,
            f.new,
            f.old / f.new,
            f.uncaptured
        );
    }
    match write_results(&figures) {
        Ok(dir) => println!("figures written to {}", dir.display()),
        Err(err) => eprintln!("could not write the figures: {err}"),
    }
}
