//! Watch-event decoding in API mode: the JSON of a Service, EndpointSlice
//! or Node, decoded by serde into k8s-openapi's types as kube-rs does, then
//! converted into the core's types by `ipvs_agent::kubeapi::convert` and fed
//! to the proxy's `WatchCache` as a watch event, then the desired IPVS
//! table computed from it. The first byte picks the kind; the rest is the
//! object's JSON.
//!
//! Asserts: nothing panics; the conversion is deterministic; a converted
//! object written as JSON reads back and writes the same JSON; applying it to an empty
//! cache and deleting it again leaves the cache empty; the desired table
//! computed from the cache is the same twice, and renders as `ipvsadm-save`.
#![no_main]

use k8s_openapi::api::core::v1::{Node, Service};
use k8s_openapi::api::discovery::v1::EndpointSlice;
use libfuzzer_sys::fuzz_target;
use svcnet_core::proxy::watch_cache::{WatchCache, Watched};
use svcnet_core::proxy::{desired_table, ipvsadm_save, ProxyConfig};

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

fn convert(kind: u8, json: &[u8]) -> Option<Result<Watched, String>> {
    use ipvs_agent::kubeapi::convert;
    Some(match kind % 3 {
        0 => convert::service(serde_json::from_slice::<Service>(json).ok()?),
        1 => convert::endpoint_slice(serde_json::from_slice::<EndpointSlice>(json).ok()?),
        _ => convert::node(serde_json::from_slice::<Node>(json).ok()?),
    })
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
        "conversion is deterministic"
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
