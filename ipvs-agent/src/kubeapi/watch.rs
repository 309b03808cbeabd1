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
//!
//! Each stream runs in a task of its own, so on a runtime with worker
//! threads the lists are received and decoded while the caller programs
//! the kernel; the updates reach the caller through one channel. The lists
//! of Services and EndpointSlices start once `default/kubernetes` has been
//! read on its own (below).
//!
//! Beside the lists, `default/kubernetes` and its EndpointSlices are read
//! on their own ([`WatchUpdate::KubernetesRead`]): two small lists (the
//! `list` verb is all the agent's ClusterRole grants) that let the core
//! program the apiserver's Service before the lists of a large cluster are
//! in.
//!
//! Objects are decoded once, from the response straight into the core's
//! types ([`objects`]); one the core cannot read becomes a
//! [`WatchUpdate::Unreadable`] and its page or stream goes on.

use super::list::{SERVICE_SELECTOR, SLICE_SELECTOR};
use super::{convert, objects};
use futures_util::stream::{self, BoxStream, StreamExt};
use kube::api::{Api, ListParams};
use kube::runtime::watcher::{self, Event};
use kube::runtime::WatchStreamExt;
use svcnet_core::api::{EndpointSlice as CoreSlice, Service};
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
    /// `default/kubernetes` and its EndpointSlices, read on their own at
    /// start.
    KubernetesRead(Box<Service>, Vec<CoreSlice>),
}

/// Updates are passed on in batches of what is ready (a list page at
/// most: kube-rs's watcher lists 500 objects at a time), so the caller
/// wakes once per page rather than once per object...
const BATCH: usize = 1000;
/// ... and this many batches may wait for it.
const AHEAD: usize = 8;

/// Services, EndpointSlices and the Node `node_name`, as one stream; each
/// kind is received and decoded in a task of its own. Must be called
/// within a tokio runtime.
pub fn watch(client: kube::Client, node_name: &str) -> BoxStream<'static, WatchUpdate> {
    let (sender, receiver) = tokio::sync::mpsc::channel(AHEAD);
    let [kubernetes, services, slices, node] = streams(client, node_name);
    tokio::spawn(forward(node, sender.clone()));
    tokio::spawn(async move {
        // The large lists start once `default/kubernetes` has been read (or
        // could not be), so their decoding does not slow its sync.
        forward(kubernetes, sender.clone()).await;
        tokio::spawn(forward(services, sender.clone()));
        forward(slices, sender).await;
    });
    stream::unfold(receiver, |mut receiver| async move {
        receiver.recv().await.map(|batch| (batch, receiver))
    })
    .flat_map(stream::iter)
    .boxed()
}

/// Passes `updates` on, in batches, until they end or nobody listens.
async fn forward(updates: BoxStream<'static, WatchUpdate>, sender: tokio::sync::mpsc::Sender<Vec<WatchUpdate>>) {
    let mut batches = updates.ready_chunks(BATCH);
    while let Some(batch) = batches.next().await {
        if sender.send(batch).await.is_err() {
            return;
        }
    }
}

/// The four streams: `default/kubernetes` read on its own, Services,
/// EndpointSlices, the Node.
fn streams(client: kube::Client, node_name: &str) -> [BoxStream<'static, WatchUpdate>; 4] {
    let kubernetes = stream::once(kubernetes_read(client.clone()))
        .filter_map(std::future::ready)
        .boxed();
    let services = updates(
        Api::<objects::Service>::all(client.clone()),
        watcher::Config::default().labels(SERVICE_SELECTOR),
        WatchedKind::Service,
        convert::service,
    );
    let slices = updates(
        Api::<objects::EndpointSlice>::all(client.clone()),
        watcher::Config::default().labels(SLICE_SELECTOR),
        WatchedKind::EndpointSlice,
        convert::endpoint_slice,
    );
    let node = updates(
        Api::<objects::Node>::all(client),
        watcher::Config::default().fields(&format!("metadata.name={node_name}")),
        WatchedKind::Node,
        convert::node,
    );
    [kubernetes, services, slices, node]
}

/// `default/kubernetes` and its EndpointSlices, listed on their own (both
/// requests at once); `None` (logged) when they cannot be read, as the
/// lists bring them anyway.
async fn kubernetes_read(client: kube::Client) -> Option<WatchUpdate> {
    // The first request of the agent's lists: "within one second of the
    // first list" (issue 13) counts from this line.
    tracing::info!("reading default/kubernetes and its EndpointSlices on their own, ahead of the lists");
    let service_params = ListParams::default()
        .fields("metadata.name=kubernetes")
        .labels(SERVICE_SELECTOR);
    let slice_params = ListParams::default().labels(&format!("kubernetes.io/service-name=kubernetes,{SLICE_SELECTOR}"));
    let service_api = Api::<objects::Service>::namespaced(client.clone(), "default");
    let slice_api = Api::<objects::EndpointSlice>::namespaced(client, "default");
    let (services, slices) = futures_util::join!(service_api.list(&service_params), slice_api.list(&slice_params));
    let read = match (services, slices) {
        (Ok(services), Ok(slices)) => services.items.into_iter().next().map(|service| {
            let service = convert::core_service(service)?;
            let slices = (slices.items.into_iter())
                .map(convert::core_endpoint_slice)
                .collect::<Result<Vec<_>, _>>()?;
            Ok::<_, String>(WatchUpdate::KubernetesRead(service, slices))
        }),
        (Err(e), _) | (_, Err(e)) => Some(Err(super::error_text(&e))),
    };
    match read {
        Some(Ok(update)) => Some(update),
        Some(Err(error)) => {
            tracing::warn!(%error, "cannot read default/kubernetes on its own; it comes with the lists");
            None
        }
        None => {
            tracing::info!("no default/kubernetes Service yet; it comes with the lists");
            None
        }
    }
}

/// One kind's watch stream, as updates.
fn updates<K>(
    api: Api<K>,
    config: watcher::Config,
    kind: WatchedKind,
    convert: fn(K) -> Result<Watched, String>,
) -> BoxStream<'static, WatchUpdate>
where
    K: kube::Resource + Clone + serde::de::DeserializeOwned + std::fmt::Debug + Send + 'static,
{
    watcher::watcher(api, config)
        .default_backoff()
        .map(move |event| match event {
            Err(e) => WatchUpdate::Error(format!("watch {kind:?}: {}", super::error_text(&e))),
            Ok(Event::Init) => WatchUpdate::Begin(kind),
            Ok(Event::InitDone) => WatchUpdate::End(kind),
            Ok(Event::InitApply(object)) => convert(object).map_or_else(WatchUpdate::Unreadable, WatchUpdate::Listed),
            Ok(Event::Apply(object)) => convert(object).map_or_else(WatchUpdate::Unreadable, WatchUpdate::Applied),
            Ok(Event::Delete(object)) => convert(object).map_or_else(WatchUpdate::Unreadable, WatchUpdate::Deleted),
        })
        .boxed()
}
