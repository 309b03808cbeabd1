//! The three watch streams (Services, EndpointSlices, this Node) merged
//! into one stream of [`WatchUpdate`]s, each one call on the core's
//! [`WatchCache`](svcnet_core::proxy::watch_cache::WatchCache).
//!
//! kube-rs's watcher does the protocol: it lists, then watches from the
//! list's resourceVersion, asks for bookmarks and resumes from them, and
//! relists when the apiserver answers `410 Gone` (an `Init` ... `InitDone`
//! sequence, during which the core removes nothing). Errors come through
//! as [`WatchUpdate::Error`] while the stream backs off and reconnects;
//! what is programmed stays as it is meanwhile.

use super::convert;
use super::list::{SERVICE_SELECTOR, SLICE_SELECTOR};
use futures_util::stream::{self, BoxStream, StreamExt};
use k8s_openapi::api::core::v1::{Node, Service};
use k8s_openapi::api::discovery::v1::EndpointSlice;
use kube::api::Api;
use kube::runtime::watcher::{self, Event};
use kube::runtime::WatchStreamExt;
use svcnet_core::proxy::watch_cache::{Watched, WatchedKind};

/// One thing a watch stream said.
#[derive(Debug)]
pub enum WatchUpdate {
    /// A (re)list of this kind begins.
    Begin(WatchedKind),
    /// An object of the list under way.
    Listed(Watched),
    /// The list of this kind is complete.
    End(WatchedKind),
    /// An object was added or changed.
    Applied(Watched),
    /// An object was deleted.
    Deleted(Watched),
    /// An object the core cannot read: left out, with why.
    Unreadable(String),
    /// The stream failed; it backs off and reconnects by itself.
    Error(String),
}

/// Services, EndpointSlices and the Node `node_name`, as one stream.
pub fn watch(client: kube::Client, node_name: &str) -> BoxStream<'static, WatchUpdate> {
    let services = updates(
        Api::<Service>::all(client.clone()),
        watcher::Config::default().labels(SERVICE_SELECTOR),
        WatchedKind::Service,
        convert::service,
    );
    let slices = updates(
        Api::<EndpointSlice>::all(client.clone()),
        watcher::Config::default().labels(SLICE_SELECTOR),
        WatchedKind::EndpointSlice,
        convert::endpoint_slice,
    );
    let node = updates(
        Api::<Node>::all(client),
        watcher::Config::default().fields(&format!("metadata.name={node_name}")),
        WatchedKind::Node,
        convert::node,
    );
    stream::select(stream::select(services, slices), node).boxed()
}

/// One kind's watch stream, as updates.
fn updates<K>(
    api: Api<K>,
    config: watcher::Config,
    kind: WatchedKind,
    convert: fn(&K) -> Result<Watched, String>,
) -> BoxStream<'static, WatchUpdate>
where
    K: kube::Resource + Clone + serde::de::DeserializeOwned + std::fmt::Debug + Send + 'static,
{
    watcher::watcher(api, config)
        .default_backoff()
        .map(move |event| match event {
            Err(e) => WatchUpdate::Error(format!("watch {kind:?}: {e}")),
            Ok(Event::Init) => WatchUpdate::Begin(kind),
            Ok(Event::InitDone) => WatchUpdate::End(kind),
            Ok(Event::InitApply(object)) => convert(&object).map_or_else(WatchUpdate::Unreadable, WatchUpdate::Listed),
            Ok(Event::Apply(object)) => convert(&object).map_or_else(WatchUpdate::Unreadable, WatchUpdate::Applied),
            Ok(Event::Delete(object)) => convert(&object).map_or_else(WatchUpdate::Unreadable, WatchUpdate::Deleted),
        })
        .boxed()
}
