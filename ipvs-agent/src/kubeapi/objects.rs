//! The objects API mode reads (Services, EndpointSlices, the Node) as kube-rs
//! lists and watches them: each one's JSON decoded once, straight into the
//! core's type ([`Received`]), with no k8s-openapi object and no
//! `serde_json::Value` in between. `managedFields` are read past without
//! being built ([`Skipped`](svcnet_core::api::meta::Skipped)). An object's
//! `apiVersion` and `kind` are set to those of its kind, which a list's
//! items come without.
//!
//! kube-rs decodes a list page or a watch event as one JSON document, so an
//! object whose decoding failed would fail its whole page or event, and the
//! stream with it. A [`Received`] therefore first takes its object's text
//! (serde_json's `RawValue`: a scan that checks the syntax and builds
//! nothing but the copy), then decodes the core's type from that text; an
//! object the core cannot read is kept as the error, naming it, and the
//! page goes on. This needs the text to come from serde_json's own reader,
//! as kube-rs's (`serde_json::from_str` on a response body or a watch
//! line) does.
//!
//! To kube-rs a [`Received`] is a [`kube::Resource`] of the same kind,
//! group, version and plural as k8s-openapi's type of its kind, whose
//! metadata holds only what the watcher reads: name, namespace,
//! resourceVersion and uid.

use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta as ApiMeta;
use serde::de::{Deserialize, DeserializeOwned, Deserializer};
use serde_json::value::RawValue;
use svcnet_core::api::ObjectMeta;

/// A Service as the apiserver sent it.
pub type Service = Received<svcnet_core::api::Service>;
/// An EndpointSlice as the apiserver sent it.
pub type EndpointSlice = Received<svcnet_core::api::EndpointSlice>;
/// A Node as the apiserver sent it.
pub type Node = Received<svcnet_core::api::Node>;

/// A core type API mode reads, paired with k8s-openapi's type of the same
/// kind.
pub trait Kind: DeserializeOwned {
    /// k8s-openapi's type: where the kind, group, version and plural come
    /// from.
    type Api: k8s_openapi::Resource;
    /// The kind's name (`EndpointSlice`).
    const KIND: &'static str = <Self::Api as k8s_openapi::Resource>::KIND;
    /// The kind's `apiVersion` (`discovery.k8s.io/v1`).
    const API_VERSION: &'static str = <Self::Api as k8s_openapi::Resource>::API_VERSION;

    /// The object's metadata.
    fn metadata(&self) -> &ObjectMeta;
    /// The object's `apiVersion` and `kind`.
    fn type_meta(&mut self) -> (&mut String, &mut String);
}

/// `impl Kind` for a core type whose `metadata`, `api_version` and `kind`
/// are its fields of those names.
macro_rules! kind {
    ($core:ty, $api:ty) => {
        impl Kind for $core {
            type Api = $api;

            fn metadata(&self) -> &ObjectMeta {
                &self.metadata
            }

            fn type_meta(&mut self) -> (&mut String, &mut String) {
                (&mut self.api_version, &mut self.kind)
            }
        }
    };
}

kind!(svcnet_core::api::Service, k8s_openapi::api::core::v1::Service);
kind!(
    svcnet_core::api::EndpointSlice,
    k8s_openapi::api::discovery::v1::EndpointSlice
);
kind!(svcnet_core::api::Node, k8s_openapi::api::core::v1::Node);

/// An object as the apiserver sent it: the core's object, or why the core
/// cannot read it.
#[derive(Clone, Debug)]
pub struct Received<T> {
    /// What kube-rs reads: name, namespace, resourceVersion, uid.
    meta: ApiMeta,
    /// The core's object, or why it cannot be read (naming the object).
    object: Result<Box<T>, String>,
}

impl<T: Kind> Received<T> {
    /// The object in `json`, the text of one object.
    pub fn from_json(json: &str) -> Self {
        match serde_json::from_str::<T>(json) {
            Ok(mut object) => {
                // The items of a list come without them; they are those of
                // the kind asked for.
                let (api_version, kind) = object.type_meta();
                T::API_VERSION.clone_into(api_version);
                T::KIND.clone_into(kind);
                let meta = object.metadata();
                let given = |text: &String| (!text.is_empty()).then(|| text.clone());
                Self {
                    meta: ApiMeta {
                        name: given(&meta.name),
                        namespace: given(&meta.namespace),
                        resource_version: given(&meta.resource_version),
                        uid: given(&meta.uid),
                        ..ApiMeta::default()
                    },
                    object: Ok(Box::new(object)),
                }
            }
            Err(error) => {
                let Identity { metadata: meta } = serde_json::from_str(json).unwrap_or_default();
                let name = describe(
                    meta.namespace.as_deref().unwrap_or_default(),
                    meta.name.as_deref().unwrap_or_default(),
                );
                Self {
                    meta: ApiMeta {
                        name: meta.name,
                        namespace: meta.namespace,
                        resource_version: meta.resource_version,
                        uid: meta.uid,
                        ..ApiMeta::default()
                    },
                    object: Err(format!("{} {name}: {error}", T::KIND)),
                }
            }
        }
    }

    /// The metadata kube-rs sees: name, namespace, resourceVersion and
    /// uid, those of the core's object (or, for an object the core cannot
    /// read, those that could be read).
    pub fn api_meta(&self) -> &ApiMeta {
        &self.meta
    }

    /// The core's object, or why the core cannot read it (a message that
    /// names the object).
    pub fn into_core(self) -> Result<Box<T>, String> {
        self.object
    }
}

impl<'de, T: Kind> Deserialize<'de> for Received<T> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let text = Box::<RawValue>::deserialize(deserializer)?;
        Ok(Self::from_json(text.get()))
    }
}

#[cfg(feature = "api")]
impl<T: Kind> kube::Resource for Received<T>
where
    T::Api: kube::Resource<DynamicType = ()>,
{
    type DynamicType = ();
    type Scope = <T::Api as kube::Resource>::Scope;

    fn kind(dt: &()) -> std::borrow::Cow<'_, str> {
        <T::Api as kube::Resource>::kind(dt)
    }

    fn group(dt: &()) -> std::borrow::Cow<'_, str> {
        <T::Api as kube::Resource>::group(dt)
    }

    fn version(dt: &()) -> std::borrow::Cow<'_, str> {
        <T::Api as kube::Resource>::version(dt)
    }

    fn plural(dt: &()) -> std::borrow::Cow<'_, str> {
        <T::Api as kube::Resource>::plural(dt)
    }

    fn meta(&self) -> &ApiMeta {
        self.api_meta()
    }

    /// The metadata kube-rs sees; changing it leaves the core's object as
    /// it is.
    fn meta_mut(&mut self) -> &mut ApiMeta {
        &mut self.meta
    }
}

/// The names of an object the core cannot read, read on their own (and
/// left empty when even they cannot be).
#[derive(Default, serde::Deserialize)]
struct Identity {
    #[serde(default)]
    metadata: IdentityMeta,
}

/// See [`Identity`].
#[derive(Default, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
struct IdentityMeta {
    name: Option<String>,
    namespace: Option<String>,
    resource_version: Option<String>,
    uid: Option<String>,
}

/// An object's name in messages: `namespace/name`, `name` for a
/// cluster-wide object, `(unnamed)`.
pub fn describe(namespace: &str, name: &str) -> String {
    match (namespace, name) {
        (_, "") => "(unnamed)".into(),
        ("", name) => name.into(),
        (namespace, name) => format!("{namespace}/{name}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SLICE: &str = r#"{"kind": "EndpointSlice", "apiVersion": "discovery.k8s.io/v1",
        "metadata": {"name": "web-1", "namespace": "shop", "uid": "u-1", "resourceVersion": "41",
                     "labels": {"kubernetes.io/service-name": "web"},
                     "managedFields": [{"manager": "kube-controller-manager", "operation": "Update",
                                        "fieldsType": "FieldsV1", "fieldsV1": {"f:endpoints": {}}}]},
        "addressType": "IPv4",
        "endpoints": [{"addresses": ["10.244.1.11"], "conditions": {"ready": true}, "nodeName": "node-a",
                       "targetRef": {"kind": "Pod", "namespace": "shop", "name": "web-0", "uid": "p-1"}}],
        "ports": [{"name": "http", "port": 8080, "protocol": "TCP"}]}"#;

    /// [`SLICE`] with `port` a string, which the core cannot read.
    fn bad_slice() -> String {
        SLICE
            .replace(r#""port": 8080"#, r#""port": "8080""#)
            .replace("web-1", "web-2")
            .replace(r#""41""#, r#""42""#)
    }

    #[test]
    fn an_object_is_decoded_into_the_core_type() {
        let slice: EndpointSlice = serde_json::from_str(SLICE).unwrap();
        assert_eq!(slice.api_meta().name.as_deref(), Some("web-1"));
        assert_eq!(slice.api_meta().namespace.as_deref(), Some("shop"));
        assert_eq!(slice.api_meta().resource_version.as_deref(), Some("41"));
        assert_eq!(slice.api_meta().uid.as_deref(), Some("u-1"));
        assert_eq!(slice.api_meta().labels, None, "only what the watcher reads");
        let core = slice.into_core().unwrap();
        assert_eq!(core.metadata.name, "web-1");
        assert_eq!(core.service_name(), Some("web"));
        assert_eq!(core.endpoints[0].node_name.as_deref(), Some("node-a"));
        assert_eq!(core.endpoints[0].target_ref.as_ref().unwrap().name, "web-0");
        assert_eq!(core.ports[0].port, Some(8080));
        assert_eq!(core.metadata.managed_fields, Some(svcnet_core::api::meta::Skipped));
    }

    #[test]
    fn the_kind_and_api_version_are_those_of_the_kind_asked_for() {
        // The items of a list have neither.
        let service: Service = serde_json::from_str(r#"{"metadata": {"name": "web"}}"#).unwrap();
        let core = service.into_core().unwrap();
        assert_eq!((core.api_version.as_str(), core.kind.as_str()), ("v1", "Service"));
        let slice: EndpointSlice = serde_json::from_str(SLICE).unwrap();
        let core = slice.into_core().unwrap();
        assert_eq!(
            (core.api_version.as_str(), core.kind.as_str()),
            ("discovery.k8s.io/v1", "EndpointSlice")
        );
    }

    #[test]
    fn an_object_the_core_cannot_read_is_kept_as_why_with_its_names() {
        let slice: EndpointSlice = serde_json::from_str(&bad_slice()).unwrap();
        assert_eq!(slice.api_meta().name.as_deref(), Some("web-2"));
        assert_eq!(slice.api_meta().resource_version.as_deref(), Some("42"));
        let error = slice.into_core().unwrap_err();
        assert!(
            error.starts_with("EndpointSlice shop/web-2: invalid type: string \"8080\", expected i64"),
            "{error}"
        );
        for (json, name) in [("5", "(unnamed)"), (r#"{"metadata": {"name": 5}}"#, "(unnamed)")] {
            let node: Node = serde_json::from_str(json).unwrap();
            let error = node.into_core().unwrap_err();
            assert!(error.starts_with(&format!("Node {name}: ")), "{error}");
        }
    }

    #[test]
    fn the_apiservers_nulls_for_empty_lists_are_read() {
        // A slice of a Service with no endpoints, as the apiserver writes it.
        let slice: EndpointSlice = serde_json::from_str(
            r#"{"metadata": {"name": "web-1", "namespace": "shop", "creationTimestamp": null},
                "addressType": "IPv4", "endpoints": null, "ports": null}"#,
        )
        .unwrap();
        let core = slice.into_core().unwrap();
        assert!(core.endpoints.is_empty() && core.ports.is_empty());
    }

    #[test]
    fn not_json_is_an_error_of_the_page() {
        assert!(serde_json::from_str::<Service>(r#"{"metadata": "#).is_err());
    }

    #[test]
    fn names_in_messages() {
        assert_eq!(describe("shop", "web"), "shop/web");
        assert_eq!(describe("", "node-a"), "node-a");
        assert_eq!(describe("shop", ""), "(unnamed)");
    }

    #[cfg(feature = "api")]
    mod with_kube {
        use super::*;
        use kube::core::{ObjectList, WatchEvent};
        use kube::Resource;

        #[test]
        fn one_bad_object_in_a_list_page_spoils_neither_the_page_nor_the_others() {
            let page = format!(
                r#"{{"kind": "EndpointSliceList", "apiVersion": "discovery.k8s.io/v1",
                    "metadata": {{"resourceVersion": "50"}}, "items": [{SLICE}, {bad}, {third}]}}"#,
                bad = bad_slice(),
                third = SLICE.replace("web-1", "web-3"),
            );
            let page: ObjectList<EndpointSlice> = serde_json::from_str(&page).unwrap();
            assert_eq!(page.metadata.resource_version.as_deref(), Some("50"));
            let names: Vec<_> = page.items.iter().map(|s| s.meta().name.clone().unwrap()).collect();
            assert_eq!(names, ["web-1", "web-2", "web-3"]);
            let read: Vec<_> = page
                .items
                .into_iter()
                .map(|s| s.into_core().map(|s| s.metadata.name))
                .collect();
            assert_eq!(read[0].as_deref(), Ok("web-1"));
            assert!(read[1].as_ref().unwrap_err().starts_with("EndpointSlice shop/web-2: "));
            assert_eq!(read[2].as_deref(), Ok("web-3"));
        }

        #[test]
        fn watch_events_carry_the_resource_version_readable_or_not() {
            let line = format!(r#"{{"type": "MODIFIED", "object": {}}}"#, bad_slice());
            let WatchEvent::Modified(slice) = serde_json::from_str::<WatchEvent<EndpointSlice>>(&line).unwrap() else {
                panic!("not MODIFIED");
            };
            assert_eq!(slice.meta().resource_version.as_deref(), Some("42"));
            assert!(slice.into_core().is_err());
            let line = format!(r#"{{"type": "ADDED", "object": {SLICE}}}"#);
            let WatchEvent::Added(slice) = serde_json::from_str::<WatchEvent<EndpointSlice>>(&line).unwrap() else {
                panic!("not ADDED");
            };
            assert_eq!(slice.meta().resource_version.as_deref(), Some("41"));
            assert!(slice.into_core().is_ok());
        }

        #[test]
        fn the_kind_group_version_and_plural_are_k8s_openapis() {
            fn same<A: Resource<DynamicType = ()>, B: Resource<DynamicType = ()>>() {
                assert_eq!(A::kind(&()), B::kind(&()));
                assert_eq!(A::api_version(&()), B::api_version(&()));
                assert_eq!(A::url_path(&(), Some("shop")), B::url_path(&(), Some("shop")));
                assert_eq!(A::url_path(&(), None), B::url_path(&(), None));
            }
            same::<Service, k8s_openapi::api::core::v1::Service>();
            same::<EndpointSlice, k8s_openapi::api::discovery::v1::EndpointSlice>();
            same::<Node, k8s_openapi::api::core::v1::Node>();
            assert_eq!(
                EndpointSlice::url_path(&(), None),
                "/apis/discovery.k8s.io/v1/endpointslices"
            );
        }
    }
}
