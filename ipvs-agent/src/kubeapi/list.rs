//! One complete list of each kind the proxy reads, into a
//! [`WatchCache`]: what `plan --kubeconfig` prints from. Each object is
//! decoded once, into the core's type ([`objects`](super::objects)).

use super::objects::{EndpointSlice, Node, Service};
use super::{convert, ApiModeError};
use kube::api::{Api, ListParams};
use svcnet_core::proxy::watch_cache::{WatchCache, WatchedKind};

/// kube-proxy's label selectors: Services of other proxies and headless
/// Services' slices are not its business.
pub const SERVICE_SELECTOR: &str = "!service.kubernetes.io/service-proxy-name";
/// See [`SERVICE_SELECTOR`].
pub const SLICE_SELECTOR: &str = "!service.kubernetes.io/service-proxy-name,!service.kubernetes.io/headless";

/// Lists Services, EndpointSlices and the Node `node_name` once. Objects
/// the core cannot read are logged and left out.
pub async fn list(client: &kube::Client, node_name: &str) -> Result<WatchCache, ApiModeError> {
    let failed = |what: &str| {
        let what = what.to_string();
        move |e: kube::Error| ApiModeError::Request {
            what,
            message: super::error_text(&e),
        }
    };
    let mut cache = WatchCache::new(node_name);

    let services = Api::<Service>::all(client.clone())
        .list(&ListParams::default().labels(SERVICE_SELECTOR))
        .await
        .map_err(failed("list services"))?;
    cache.begin_list(WatchedKind::Service);
    for svc in services.items {
        keep(&mut cache, convert::service(svc));
    }
    cache.end_list(WatchedKind::Service);

    let slices = Api::<EndpointSlice>::all(client.clone())
        .list(&ListParams::default().labels(SLICE_SELECTOR))
        .await
        .map_err(failed("list endpointslices"))?;
    cache.begin_list(WatchedKind::EndpointSlice);
    for slice in slices.items {
        keep(&mut cache, convert::endpoint_slice(slice));
    }
    cache.end_list(WatchedKind::EndpointSlice);

    let node = Api::<Node>::all(client.clone())
        .get_opt(node_name)
        .await
        .map_err(failed("get node"))?;
    cache.begin_list(WatchedKind::Node);
    match node {
        Some(node) => keep(&mut cache, convert::node(node)),
        None => tracing::warn!(
            node = node_name,
            "no Node object of this name: NodePorts get no node address"
        ),
    }
    cache.end_list(WatchedKind::Node);
    Ok(cache)
}

fn keep(cache: &mut WatchCache, object: Result<svcnet_core::proxy::watch_cache::Watched, String>) {
    match object {
        Ok(object) => cache.listed(object),
        Err(e) => tracing::warn!(error = %e, "left out: the core cannot read it"),
    }
}
