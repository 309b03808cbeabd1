//! Watch-event decoding in API mode: the JSON of a Service, EndpointSlice
//! or Node, decoded as kube-rs decodes a list page or a watch line
//! (`serde_json::from_str`) into the agent's own resource types
//! (`ipvs_agent::kubeapi::objects`: once, straight into the core's types),
//! checked against the limits by `ipvs_agent::kubeapi::convert` and fed to
//! the proxy's `WatchCache` as a watch event, then the desired IPVS table
//! computed from it. The first byte picks the kind; the rest is the
//! object's JSON.
//!
//! Asserts: nothing panics; any JSON text decodes, readable or not, and so
//! does a list page holding it between two good objects, which stay
//! readable (one object the core cannot read spoils neither its page nor
//! the others); the decoding is deterministic; a converted object written
//! as JSON reads back and writes the same JSON; applying it to an empty
//! cache and deleting it again leaves the cache empty; the desired table
//! computed from the cache is the same twice, and renders as
//! `ipvsadm-save`.
#![no_main]

use ipvs_agent::kubeapi::convert;
use ipvs_agent::kubeapi::objects::{Kind, Received};
use libfuzzer_sys::fuzz_target;
use svcnet_core::proxy::watch_cache::{WatchCache, Watched};
use svcnet_core::proxy::{desired_table, ipvsadm_save, ProxyConfig};

/// What kube-rs reads of a list page (`ObjectList`'s `items`).
#[derive(serde::Deserialize)]
struct Page<T> {
    items: Vec<T>,
}

/// One good object of each kind, to put either side of the input in a page.
const GOOD: [&str; 3] = [
    r#"{"metadata": {"name": "good", "namespace": "default", "resourceVersion": "1"},
        "spec": {"clusterIP": "10.96.0.9", "ports": [{"port": 80}]}}"#,
    r#"{"metadata": {"name": "good", "namespace": "default", "resourceVersion": "1",
        "labels": {"kubernetes.io/service-name": "good"}}, "addressType": "IPv4",
        "endpoints": [{"addresses": ["10.244.0.9"]}], "ports": [{"port": 80}]}"#,
    r#"{"metadata": {"name": "good", "resourceVersion": "1"}}"#,
];

fn json_round_trip(watched: &Watched) {
    fn check<T: serde::Serialize + serde::de::DeserializeOwned + PartialEq + std::fmt::Debug>(value: &T) {
        // The core drops empty optional parts when writing (`loadBalancer:
        // {}`), so the JSON written, read and written again is the same.
        let json = serde_json::to_string(value).expect("a core object serialises");
        let back: T = serde_json::from_str(&json).unwrap_or_else(|e| panic!("{e}: {json}"));
        let again = serde_json::to_string(&back).expect("a core object serialises");
        assert_eq!(again, json, "JSON round trip of a converted object");
        let back2: T = serde_json::from_str(&again).unwrap_or_else(|e| panic!("{e}: {again}"));
        assert_eq!(back2, back);
    }
    match watched {
        Watched::Service(s) => check(&**s),
        Watched::EndpointSlice(s) => check(&**s),
        Watched::Node(n) => check(&**n),
    }
}

/// `json` as an object of kind `T`, the way the agent decodes it, and
/// then as the core's [`Watched`]; `None` when it is not JSON.
fn decode<T: Kind + Clone + std::fmt::Debug>(
    json: &str,
    good: &str,
    to_watched: fn(Received<T>) -> Result<Watched, String>,
) -> Option<Result<Watched, String>> {
    let decoded = serde_json::from_str::<Received<T>>(json);
    let is_json = serde_json::from_str::<serde::de::IgnoredAny>(json).is_ok();
    assert_eq!(decoded.is_ok(), is_json, "any JSON decodes, readable or not");
    let decoded = decoded.ok()?;
    if let Ok(object) = decoded.clone().into_core() {
        let (seen, meta) = (decoded.api_meta(), object.metadata());
        let given = |text: &String| (!text.is_empty()).then(|| text.clone());
        assert_eq!(seen.name, given(&meta.name), "the name kube-rs sees");
        assert_eq!(seen.namespace, given(&meta.namespace), "the namespace kube-rs sees");
        assert_eq!(
            seen.resource_version,
            given(&meta.resource_version),
            "the resourceVersion kube-rs sees"
        );
        assert_eq!(seen.uid, given(&meta.uid), "the uid kube-rs sees");
    }
    let page = format!(r#"{{"items": [{good}, {json}, {good}]}}"#);
    let page: Page<Received<T>> = serde_json::from_str(&page).expect("a page of JSON values decodes");
    let [before, item, after] = <[_; 3]>::try_from(page.items).expect("three items");
    assert!(
        to_watched(before).is_ok() && to_watched(after).is_ok(),
        "the good objects beside it"
    );
    assert_eq!(
        to_watched(item),
        to_watched(decoded.clone()),
        "the same object alone and in a page"
    );
    Some(to_watched(decoded))
}

fn convert(kind: u8, json: &[u8]) -> Option<Result<Watched, String>> {
    // kube-rs reads a response or a watch line as text first.
    let json = std::str::from_utf8(json).ok()?;
    match kind % 3 {
        0 => decode::<svcnet_core::api::Service>(json, GOOD[0], convert::service),
        1 => decode::<svcnet_core::api::EndpointSlice>(json, GOOD[1], convert::endpoint_slice),
        _ => decode::<svcnet_core::api::Node>(json, GOOD[2], convert::node),
    }
}

fuzz_target!(|data: &[u8]| {
    let Some((&kind, json)) = data.split_first() else {
        return;
    };
    let Some(converted) = convert(kind, json) else {
        return;
    };
    assert_eq!(
        convert(kind, json),
        Some(converted.clone()),
        "decoding and conversion are deterministic"
    );
    let Ok(watched) = converted else {
        return;
    };
    json_round_trip(&watched);

    let node_name = match &watched {
        Watched::Node(n) => n.metadata.name.clone(),
        _ => "node-a".to_string(),
    };
    let mut cache = WatchCache::new(&node_name);
    cache.applied(watched.clone());
    let node = cache.node_info();
    let desired = desired_table(cache.services(), cache.slices(), &node, &ProxyConfig::default());
    let again = desired_table(cache.services(), cache.slices(), &node, &ProxyConfig::default());
    assert_eq!(
        again.table, desired.table,
        "the desired table is a function of the cache"
    );
    let _ = ipvsadm_save(&desired.table);
    cache.deleted(&watched);
    assert_eq!(cache.services().count(), 0);
    assert_eq!(cache.slices().count(), 0);
});
