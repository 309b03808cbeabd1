//! Manifest parsing: YAML or JSON text, one or many documents, into objects.
//!
//! Decoding is strict, like `kubectl apply` with its default
//! `--validate=strict`: an unknown field is an error that names it, and a
//! value of the wrong type names the field it was found in. The parts of a
//! Pod or Node svcnet does not interpret (container images, probes, node
//! capacity, ...) are the exception: they are kept as given, so that
//! `kubectl get pod -o yaml` output applies unchanged (a Deployment's Pod
//! template and status likewise); typos in the typed parts (the object's
//! top level, `metadata`, a Service, an EndpointSlice, a Deployment's
//! `spec`) are still reported.

#[cfg(not(target_arch = "wasm32"))]
use super::common_yaml;
use super::decode;
use super::deployment::Deployment;
use super::endpoint_slice::EndpointSlice;
use super::endpoints::Endpoints;
use super::limits::{check_file_size, LimitError, MAX_ALIAS_EXPANSION, MAX_OBJECTS};
use super::pod::{Node, Pod};
use super::resource::Resource;
use super::scan::scan;
use super::service::Service;
use super::service_cidr::ServiceCidr;
use super::value;
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use thiserror::Error;

/// One object from a manifest, by kind.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum Object {
    /// A `v1/Service`.
    Service(Box<Service>),
    /// A `networking.k8s.io/v1/ServiceCIDR`.
    ServiceCidr(Box<ServiceCidr>),
    /// A `v1/Pod`.
    Pod(Box<Pod>),
    /// A `v1/Node`.
    Node(Box<Node>),
    /// A `discovery.k8s.io/v1/EndpointSlice`.
    EndpointSlice(Box<EndpointSlice>),
    /// A `v1/Endpoints`, written by hand for a Service without a selector.
    Endpoints(Box<Endpoints>),
    /// An `apps/v1/Deployment`.
    Deployment(Box<Deployment>),
}

impl Object {
    /// The object's kind.
    pub fn resource(&self) -> Resource {
        match self {
            Object::Service(_) => Resource::Service,
            Object::ServiceCidr(_) => Resource::ServiceCidr,
            Object::Pod(_) => Resource::Pod,
            Object::Node(_) => Resource::Node,
            Object::EndpointSlice(_) => Resource::EndpointSlice,
            Object::Endpoints(_) => Resource::Endpoints,
            Object::Deployment(_) => Resource::Deployment,
        }
    }

    /// The object's kind, as in `kind:`.
    pub fn kind(&self) -> &'static str {
        self.resource().kind()
    }

    /// The object's metadata.
    pub fn meta(&self) -> &super::meta::ObjectMeta {
        match self {
            Object::Service(o) => &o.metadata,
            Object::ServiceCidr(o) => &o.metadata,
            Object::Pod(o) => &o.metadata,
            Object::Node(o) => &o.metadata,
            Object::EndpointSlice(o) => &o.metadata,
            Object::Endpoints(o) => &o.metadata,
            Object::Deployment(o) => &o.metadata,
        }
    }

    /// The object's metadata, to change.
    pub fn meta_mut(&mut self) -> &mut super::meta::ObjectMeta {
        match self {
            Object::Service(o) => &mut o.metadata,
            Object::ServiceCidr(o) => &mut o.metadata,
            Object::Pod(o) => &mut o.metadata,
            Object::Node(o) => &mut o.metadata,
            Object::EndpointSlice(o) => &mut o.metadata,
            Object::Endpoints(o) => &mut o.metadata,
            Object::Deployment(o) => &mut o.metadata,
        }
    }

    /// The object's name.
    pub fn name(&self) -> &str {
        match self {
            Object::Service(o) => &o.metadata.name,
            Object::ServiceCidr(o) => &o.metadata.name,
            Object::Pod(o) => &o.metadata.name,
            Object::Node(o) => &o.metadata.name,
            Object::EndpointSlice(o) => &o.metadata.name,
            Object::Endpoints(o) => &o.metadata.name,
            Object::Deployment(o) => &o.metadata.name,
        }
    }

    /// The object's namespace as stored: `default` when none is given for a
    /// namespaced kind, empty for the cluster-scoped Node and ServiceCIDR.
    pub fn namespace(&self) -> &str {
        match self {
            Object::Service(o) => o.metadata.namespace_or_default(),
            Object::Pod(o) => o.metadata.namespace_or_default(),
            Object::EndpointSlice(o) => o.metadata.namespace_or_default(),
            Object::Endpoints(o) => o.metadata.namespace_or_default(),
            Object::Deployment(o) => o.metadata.namespace_or_default(),
            Object::ServiceCidr(_) | Object::Node(_) => "",
        }
    }

    /// `Kind namespace/name` (`Kind name` for cluster-scoped kinds), the
    /// way people name an object in messages.
    pub fn describe(&self) -> String {
        match self.namespace() {
            "" => format!("{} {}", self.kind(), self.name()),
            ns => format!("{} {ns}/{}", self.kind(), self.name()),
        }
    }

    /// The resource kubectl names the object by in `<resource>/<name>`:
    /// the lower-case kind, with the API group for kinds outside the core
    /// group (`endpointslice.discovery.k8s.io`).
    pub fn kubectl_resource(&self) -> &'static str {
        self.resource().kubectl_resource()
    }
}

/// Why a manifest could not be read.
#[derive(Debug, Error, Clone, PartialEq, Eq)]
pub enum ManifestError {
    /// The text as a whole is too large to be read.
    #[error("{0}")]
    Text(LimitError),
    /// A document breaks one of the input limits.
    #[error("document {document}: {limit}")]
    Limit {
        /// 1-based index of the document in the text.
        document: usize,
        /// The limit broken.
        limit: LimitError,
    },
    /// A document does not decode: bad YAML or JSON, a key given twice, an
    /// unknown field, a wrong type, an unknown kind.
    #[error("document {document}: {message}")]
    Invalid {
        /// 1-based index of the document in the text.
        document: usize,
        /// What is wrong, in kubectl's or kube-apiserver's words.
        message: String,
    },
}

impl ManifestError {
    /// The 1-based number of the document at fault, if one is.
    pub fn document(&self) -> Option<usize> {
        match self {
            ManifestError::Text(_) => None,
            ManifestError::Limit { document, .. } | ManifestError::Invalid { document, .. } => Some(*document),
        }
    }

    /// What is wrong, without the document's number.
    pub fn message(&self) -> String {
        match self {
            ManifestError::Text(limit) | ManifestError::Limit { limit, .. } => limit.to_string(),
            ManifestError::Invalid { message, .. } => message.clone(),
        }
    }
}

/// Parses YAML or JSON text holding one or more objects (`---`-separated
/// documents, or a `kind: List` with `items`). Empty documents are skipped.
pub fn parse_manifests(text: &str) -> Result<Vec<Object>, ManifestError> {
    Ok(parse_documents(text)?.into_iter().map(|(_, o)| o).collect())
}

/// Like [`parse_manifests`], with the 1-based number of the document each
/// object came from (the items of a `kind: List` share their document's),
/// so a caller can name the document when the object is later refused.
///
/// Each document becomes a JSON value, read natively by [`common_yaml`] when the
/// text is in the YAML most manifests are written in. Any other text is
/// held to the input limits ([`super::limits`]) first, by a linear scan
/// ([`super::scan`]), so that nothing is parsed of a text too large or too
/// deeply nested, and is then read by serde_yaml_ng ([`value::decode`]).
/// Each object is decoded from its value by [`decode::from_value`], which
/// names the field an error is at.
pub fn parse_documents(text: &str) -> Result<Vec<(usize, Object)>, ManifestError> {
    check_file_size(text.len()).map_err(ManifestError::Text)?;
    // Nodes the whole text may decode to: a document without aliases has
    // at most two per byte; aliases may add MAX_ALIAS_EXPANSION.
    let budget = text.len().saturating_mul(2).saturating_add(MAX_ALIAS_EXPANSION);
    // A text common_yaml reads keeps the limits the scan enforces (it
    // declines any other), so only the full path needs the scan.
    #[cfg(not(target_arch = "wasm32"))]
    if let Some(objects) = read_common(text, budget) {
        return objects;
    }
    scan(text).map_err(|(document, limit)| ManifestError::Limit { document, limit })?;
    read_full(text, budget)
}

/// The objects of a text in common YAML ([`common_yaml`]), or `None` for
/// a text outside it. The whole text is read before an object's error is
/// returned, so that a limit broken further on (which makes it decline)
/// is reported first, as the scan before the full path reports it.
#[cfg(not(target_arch = "wasm32"))]
fn read_common(text: &str, budget: usize) -> Option<Result<Vec<(usize, Object)>, ManifestError>> {
    let mut documents = common_yaml::Documents::new(text, budget).ok()?;
    let mut objects = Ok(Vec::new());
    while let Some(value) = documents.next_document().ok()? {
        if let Ok(list) = &mut objects {
            if let Err(e) = take(documents.number(), value, list) {
                objects = Err(e);
            }
        }
    }
    Some(objects)
}

/// The objects of any YAML or JSON text, through serde_yaml_ng.
fn read_full(text: &str, mut budget: usize) -> Result<Vec<(usize, Object)>, ManifestError> {
    let mut objects = Vec::new();
    let json = text.trim_start().starts_with(['{', '[']);
    for (i, doc) in serde_yaml_ng::Deserializer::from_str(text).enumerate() {
        let document = i + 1;
        let fail = |message: String| ManifestError::Invalid { document, message };
        let (value, problem) = value::decode(doc, budget);
        let value = match value {
            Ok(value) => value,
            Err(_) if problem.budget_exhausted => {
                let limit = LimitError::AliasExpansion {
                    limit: text.len().saturating_mul(2).saturating_add(MAX_ALIAS_EXPANSION),
                };
                return Err(ManifestError::Limit { document, limit });
            }
            Err(e) => match problem.duplicate {
                Some((key, path)) => return Err(fail(duplicate_key(&key, &path, problem.kind, json, &e))),
                None => return Err(fail(format!("invalid YAML or JSON: {e}"))),
            },
        };
        budget = problem.remaining;
        take(document, value, &mut objects)?;
    }
    Ok(objects)
}

/// Adds the objects of one document's value (none for an empty one, the
/// items of a `kind: List`) to `objects`.
fn take(document: usize, value: serde_json::Value, objects: &mut Vec<(usize, Object)>) -> Result<(), ManifestError> {
    let fail = |message: String| ManifestError::Invalid { document, message };
    if value.is_null() {
        return Ok(());
    }
    let too_many = |objects: &Vec<(usize, Object)>, more: usize| {
        if objects.len() + more > MAX_OBJECTS {
            let limit = LimitError::TooManyObjects { limit: MAX_OBJECTS };
            return Err(ManifestError::Limit { document, limit });
        }
        Ok(())
    };
    if value.get("kind").and_then(|k| k.as_str()) == Some("List") {
        let items = value
            .get("items")
            .and_then(|i| i.as_array())
            .cloned()
            .unwrap_or_default();
        too_many(objects, items.len())?;
        for item in items {
            objects.push((document, decode_object(item).map_err(fail)?));
        }
    } else {
        too_many(objects, 1)?;
        objects.push((document, decode_object(value).map_err(fail)?));
    }
    Ok(())
}

/// A key given twice, in kube-apiserver's words for strict decoding:
/// go-yaml's (through sigs.k8s.io/yaml's `YAMLToJSONStrict`, with the line
/// of the second value) for YAML, sigs.k8s.io/json's for JSON. Prefixed as
/// the apiserver does when the object's kind came before the key, else as
/// kubectl's YAML-to-JSON conversion words it.
fn duplicate_key(
    key: &str,
    path: &[value::Segment],
    kind: Option<(String, String)>,
    json: bool,
    error: &serde_yaml_ng::Error,
) -> String {
    let detail = if json {
        let mut field = String::new();
        for segment in path.iter().rev() {
            match segment {
                value::Segment::Key(k) => {
                    field.push_str(k);
                    field.push('.');
                }
                value::Segment::Index(i) => {
                    if field.ends_with('.') {
                        field.pop();
                    }
                    field.push_str(&format!("[{i}]."));
                }
            }
        }
        field.push_str(key);
        format!("duplicate field {field:?}")
    } else {
        let line = error.location().map_or(0, |l| l.line());
        format!("yaml: unmarshal errors:\n  line {line}: key {key:?} already set in map")
    };
    match kind {
        Some((kind, version)) => {
            format!("{kind} in version {version:?} cannot be handled as a {kind}: strict decoding error: {detail}")
        }
        None if json => format!("json: {detail}"),
        None => format!("error converting YAML to JSON: {detail}"),
    }
}

/// Decodes one object from its JSON value, dispatching on `apiVersion`/`kind`.
fn decode_object(value: serde_json::Value) -> Result<Object, String> {
    if !value.is_object() {
        return Err(format!(
            "expected an object with apiVersion and kind, found {}",
            short(&value)
        ));
    }
    let kind = value
        .get("kind")
        .and_then(|k| k.as_str())
        .unwrap_or_default()
        .to_string();
    let version = value
        .get("apiVersion")
        .and_then(|k| k.as_str())
        .unwrap_or_default()
        .to_string();
    if kind.is_empty() {
        return Err(format!("Object 'Kind' is missing in '{}'", short(&value)));
    }
    match (version.as_str(), kind.as_str()) {
        ("v1", "Service") => strict::<Service>(value, &kind, &version).map(|s| Object::Service(Box::new(s))),
        ("networking.k8s.io/v1" | "networking.k8s.io/v1beta1", "ServiceCIDR") => {
            strict::<ServiceCidr>(value, &kind, &version).map(|s| Object::ServiceCidr(Box::new(s)))
        }
        ("v1", "Pod") => strict::<Pod>(value, &kind, &version).map(|p| Object::Pod(Box::new(p))),
        ("v1", "Node") => strict::<Node>(value, &kind, &version).map(|n| Object::Node(Box::new(n))),
        ("discovery.k8s.io/v1", "EndpointSlice") => {
            strict::<EndpointSlice>(value, &kind, &version).map(|e| Object::EndpointSlice(Box::new(e)))
        }
        ("v1", "Endpoints") => strict::<Endpoints>(value, &kind, &version).map(|e| Object::Endpoints(Box::new(e))),
        ("apps/v1", "Deployment") => {
            strict::<Deployment>(value, &kind, &version).map(|d| Object::Deployment(Box::new(d)))
        }
        _ => Err(format!("no matches for kind {kind:?} in version {version:?}")),
    }
}

fn strict<T: DeserializeOwned>(value: serde_json::Value, kind: &str, version: &str) -> Result<T, String> {
    let prefix = format!("{kind} in version {version:?} cannot be handled as a {kind}");
    match decode::from_value::<T>(value) {
        Err(e) => Err(format!("{prefix}: {e}")),
        Ok(decoded) if !decoded.ignored.is_empty() => {
            let names: Vec<String> = (decoded.ignored.iter())
                .map(|p| format!("unknown field {:?}", go_path(p)))
                .collect();
            Err(format!("{prefix}: strict decoding error: {}", names.join(", ")))
        }
        Ok(decoded) => Ok(decoded.value),
    }
}

/// The ignored paths (serde_ignored's spelling) print list indexes as `.0` and the inside of an
/// optional field as `.?`; Kubernetes prints `[0]` and nothing.
fn go_path(path: &str) -> String {
    path.split('.')
        .filter(|seg| *seg != "?")
        .map(|seg| {
            if seg.chars().all(|c| c.is_ascii_digit()) {
                format!("[{seg}]")
            } else {
                format!(".{seg}")
            }
        })
        .collect::<String>()
        .trim_start_matches('.')
        .to_string()
}

fn short(value: &serde_json::Value) -> String {
    let text = value.to_string();
    if text.chars().count() > 80 {
        format!("{}...", text.chars().take(80).collect::<String>())
    } else {
        text
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn multi_document_yaml_and_json() {
        let text = "apiVersion: v1\nkind: Service\nmetadata: {name: a}\n---\n---\n{\"apiVersion\":\"v1\",\"kind\":\"Service\",\"metadata\":{\"name\":\"b\"}}\n";
        let objs = parse_manifests(text).unwrap();
        assert_eq!(objs.len(), 2);
        match &objs[1] {
            Object::Service(s) => assert_eq!(s.metadata.name, "b"),
            other => panic!("unexpected {other:?}"),
        }
    }

    #[test]
    fn documents_are_numbered_from_one_skipping_empty_ones() {
        let text = "---\napiVersion: v1\nkind: Service\nmetadata: {name: a, namespace: x}\n---\n---\napiVersion: v1\nkind: List\nitems:\n- {apiVersion: v1, kind: Node, metadata: {name: n}}\n- {apiVersion: v1, kind: Pod, metadata: {name: p}}\n";
        let docs = parse_documents(text).unwrap();
        let described: Vec<(usize, String)> = docs.iter().map(|(d, o)| (*d, o.describe())).collect();
        assert_eq!(
            described,
            vec![
                (1, "Service x/a".to_string()),
                (3, "Node n".to_string()),
                (3, "Pod default/p".to_string())
            ]
        );
    }

    #[test]
    fn list_items_are_flattened() {
        let text = "apiVersion: v1\nkind: List\nitems:\n- {apiVersion: v1, kind: Service, metadata: {name: a}}\n- {apiVersion: v1, kind: Service, metadata: {name: b}}\n";
        assert_eq!(parse_manifests(text).unwrap().len(), 2);
    }

    #[test]
    fn unknown_fields_are_named() {
        let text =
            "apiVersion: v1\nkind: Service\nmetadata: {name: a}\nspec:\n  ports:\n  - port: 80\n    targetport: 8080\n";
        let err = parse_manifests(text).unwrap_err();
        assert_eq!(err.document(), Some(1));
        assert_eq!(
            err.to_string(),
            "document 1: Service in version \"v1\" cannot be handled as a Service: strict decoding error: unknown field \"spec.ports[0].targetport\""
        );
    }

    #[test]
    fn wrong_types_name_the_field() {
        let text = "---\napiVersion: v1\nkind: Service\nmetadata: {name: a}\nspec:\n  ports:\n  - port: eighty\n";
        let err = parse_manifests(text).unwrap_err();
        assert!(err.message().contains("spec.ports[0].port"), "{err}");
    }

    #[test]
    fn unknown_kind_and_missing_kind() {
        let err = parse_manifests("apiVersion: v1\nkind: Frob\n").unwrap_err();
        assert_eq!(err.message(), "no matches for kind \"Frob\" in version \"v1\"");
        let err = parse_manifests("apiVersion: v1\nmetadata: {name: a}\n").unwrap_err();
        assert!(err.message().starts_with("Object 'Kind' is missing in"), "{err}");
        let err = parse_manifests("a: [1, 2\n").unwrap_err();
        assert!(err.message().starts_with("invalid YAML or JSON"), "{err}");
    }

    #[test]
    fn kubectl_get_pod_output_applies_and_keeps_what_svcnet_does_not_read() {
        let objs = parse_manifests(include_str!("testdata/kubectl-get-pod.yaml")).unwrap();
        let Object::Pod(pod) = &objs[0] else {
            panic!("not a pod: {objs:?}");
        };
        assert_eq!(pod.metadata.namespace, "shop");
        assert_eq!(pod.spec.node_name.as_deref(), Some("worker-1"));
        assert_eq!(pod.spec.containers[0].ports[0].name.as_deref(), Some("http"));
        assert_eq!(pod.ips(), ["10.244.1.17"]);
        assert!(pod.is_ready());
        assert_eq!(pod.spec.extra["dnsPolicy"], "ClusterFirst");
        assert_eq!(pod.spec.containers[0].extra["image"], "nginx:1.27");
        assert_eq!(pod.status.extra["qosClass"], "Burstable");
        let back = serde_json::to_value(&objs[0]).unwrap();
        assert_eq!(back["spec"]["tolerations"][0]["tolerationSeconds"], 300);
        assert_eq!(back["status"]["containerStatuses"][0]["ready"], true);
    }

    #[test]
    fn kubectl_get_node_output_applies() {
        let objs = parse_manifests(include_str!("testdata/kubectl-get-node.yaml")).unwrap();
        let Object::Node(node) = &objs[0] else {
            panic!("not a node: {objs:?}");
        };
        assert_eq!(node.zone(), Some("eu-west-1a"));
        assert_eq!(node.ips(), ["192.168.0.21"]);
        assert_eq!(objs[0].kubectl_resource(), "node");
    }

    #[test]
    fn typos_in_the_typed_parts_of_a_pod_are_still_named() {
        let err = |text: &str| parse_manifests(text).unwrap_err().message();
        assert_eq!(
            err("apiVersion: v1\nkind: Pod\nmetadata: {name: a}\nsepc: {}\n"),
            "Pod in version \"v1\" cannot be handled as a Pod: strict decoding error: unknown field \"sepc\""
        );
        assert_eq!(
            err("apiVersion: v1\nkind: Pod\nmetadata: {name: a, lables: {app: x}}\n"),
            "Pod in version \"v1\" cannot be handled as a Pod: strict decoding error: unknown field \"metadata.lables\""
        );
        assert_eq!(
            err("apiVersion: v1\nkind: Node\nmetadata: {name: n, zone: a}\n"),
            "Node in version \"v1\" cannot be handled as a Node: strict decoding error: unknown field \"metadata.zone\""
        );
        // Inside the parts kept as given, a missing or mistyped field the
        // core does read is still an error.
        let missing = err("apiVersion: v1\nkind: Pod\nmetadata: {name: a}\nstatus: {podIPs: [{iP: 10.0.0.1}]}\n");
        assert!(missing.contains("missing field `ip`"), "{missing}");
        let mistyped = err("apiVersion: v1\nkind: Pod\nmetadata: {name: a}\nspec: {containers: [{name: c, ports: [{containerPort: http}]}]}\n");
        assert!(
            mistyped.starts_with("Pod in version \"v1\" cannot be handled as a Pod: "),
            "{mistyped}"
        );
        // Services stay fully strict.
        let svc = err("apiVersion: v1\nkind: Service\nmetadata: {name: a}\nspec: {selektor: {app: a}}\n");
        assert!(svc.ends_with("unknown field \"spec.selektor\""), "{svc}");
    }

    #[test]
    fn deployments_keep_their_fields_and_still_name_typos() {
        let text = "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: web}\nspec:\n  replicas: 2\n  revisionHistoryLimit: 10\n  strategy: {type: Recreate}\n  selector: {matchLabels: {app: web}}\n  template:\n    metadata: {labels: {app: web}}\n    spec: {dnsPolicy: ClusterFirst, containers: [{name: c, image: nginx, resources: {}}]}\nstatus: {replicas: 9, conditions: [{type: Available, status: \"True\"}]}\n";
        let objs = parse_manifests(text).unwrap();
        let Object::Deployment(d) = &objs[0] else {
            panic!("not a Deployment: {objs:?}");
        };
        assert_eq!(objs[0].kubectl_resource(), "deployment.apps");
        assert_eq!((d.spec.replicas, d.spec.revision_history_limit), (Some(2), Some(10)));
        assert_eq!(d.spec.strategy.as_ref().unwrap()["type"], "Recreate");
        assert_eq!(d.spec.template.spec.extra["dnsPolicy"], "ClusterFirst");
        assert_eq!(d.spec.template.spec.containers[0].extra["image"], "nginx");
        assert_eq!(d.status.replicas, 9);
        let err = |text: &str| parse_manifests(text).unwrap_err().message();
        let prefix = "Deployment in version \"apps/v1\" cannot be handled as a Deployment: strict decoding error: ";
        assert_eq!(
            err(&text.replace("replicas: 2", "replica: 2")),
            format!("{prefix}unknown field \"spec.replica\"")
        );
        assert_eq!(
            err(&text.replace("matchLabels", "matchLabel")),
            format!("{prefix}unknown field \"spec.selector.matchLabel\"")
        );
        assert_eq!(
            err(&text.replace("status:", "stats:")),
            format!("{prefix}unknown field \"stats\"")
        );
        assert_eq!(
            parse_manifests(&text.replace("apps/v1", "v1")).unwrap_err().message(),
            "no matches for kind \"Deployment\" in version \"v1\""
        );
    }

    #[test]
    fn endpoint_slices_decode_strictly() {
        let text = "apiVersion: discovery.k8s.io/v1\nkind: EndpointSlice\nmetadata: {name: s}\naddressType: IPv4\nendpoints: [{addresses: [10.0.0.1], conditions: {ready: true, servng: true}}]\n";
        assert_eq!(
            parse_manifests(text).unwrap_err().message(),
            "EndpointSlice in version \"discovery.k8s.io/v1\" cannot be handled as a EndpointSlice: strict decoding error: unknown field \"endpoints[0].conditions.servng\""
        );
        let wrong_group = "apiVersion: v1\nkind: EndpointSlice\nmetadata: {name: s}\n";
        assert_eq!(
            parse_manifests(wrong_group).unwrap_err().message(),
            "no matches for kind \"EndpointSlice\" in version \"v1\""
        );
    }

    #[test]
    fn deep_nesting_is_refused_before_parsing() {
        let n = 100_000;
        let yaml = format!(
            "apiVersion: v1\nkind: Service\nmetadata:\n  name: a\n  annotations: {}{}\n",
            "[".repeat(n),
            "]".repeat(n)
        );
        assert_eq!(
            parse_manifests(&yaml).unwrap_err(),
            ManifestError::Limit {
                document: 1,
                limit: LimitError::TooDeep { line: 5, limit: 100 }
            }
        );
        let json = format!(
            "{{\"apiVersion\":\"v1\",\"kind\":\"Service\",\"metadata\":{{\"name\":\"a\",\"annotations\":{}1{}}}}}",
            "{\"a\":".repeat(n),
            "}".repeat(n)
        );
        let err = parse_manifests(&json).unwrap_err();
        assert_eq!(
            err.to_string(),
            "document 1: line 1: nesting is deeper than the limit of 100 levels"
        );
    }

    #[test]
    fn duplicate_keys_are_refused_as_the_apiserver_words_it() {
        let yaml = "apiVersion: v1\nkind: Service\nmetadata:\n  name: a\nmetadata:\n  name: b\n";
        assert_eq!(
            parse_manifests(yaml).unwrap_err().to_string(),
            "document 1: Service in version \"v1\" cannot be handled as a Service: strict decoding error: \
             yaml: unmarshal errors:\n  line 6: key \"metadata\" already set in map"
        );
        let first = "metadata: {name: a}\nmetadata: {name: b}\nkind: Service\napiVersion: v1\n";
        assert_eq!(
            parse_manifests(first).unwrap_err().message(),
            "error converting YAML to JSON: yaml: unmarshal errors:\n  line 2: key \"metadata\" already set in map"
        );
        let json = r#"{"apiVersion": "v1", "kind": "Service", "metadata": {"name": "a"},
            "spec": {"ports": [{"port": 80, "port": 81}]}}"#;
        assert_eq!(
            parse_manifests(json).unwrap_err().message(),
            "Service in version \"v1\" cannot be handled as a Service: strict decoding error: \
             duplicate field \"spec.ports[0].port\""
        );
        let json = r#"{"metadata": {}, "metadata": {}}"#;
        assert_eq!(
            parse_manifests(json).unwrap_err().message(),
            "json: duplicate field \"metadata\""
        );
    }

    #[test]
    fn a_huge_annotation_is_refused_by_size_before_decoding() {
        let text = format!(
            "apiVersion: v1\nkind: Service\nmetadata:\n  name: a\n  annotations:\n    big: {}\n",
            "x".repeat(50 * 1024 * 1024)
        );
        assert_eq!(
            parse_manifests(&text).unwrap_err(),
            ManifestError::Limit {
                document: 1,
                limit: LimitError::DocumentTooLarge {
                    limit: super::super::limits::MAX_DOCUMENT_BYTES
                }
            }
        );
    }

    #[test]
    fn billion_laughs_are_refused() {
        let mut text = String::from("apiVersion: v1\nkind: Service\nmetadata:\n  name: a\n  labels:\n");
        text.push_str("    l0: &l0 [lol, lol, lol, lol, lol, lol, lol, lol, lol, lol]\n");
        for level in 1..10 {
            let previous = format!("*l{}", level - 1);
            text.push_str(&format!(
                "    l{level}: &l{level} [{}]\n",
                vec![previous; 10].join(", ")
            ));
        }
        let err = parse_manifests(&text).unwrap_err();
        assert!(
            matches!(
                err,
                ManifestError::Limit {
                    document: 1,
                    limit: LimitError::AliasExpansion { .. }
                }
            ),
            "{err}"
        );
        // A few aliases within the budget are fine.
        let text = "apiVersion: v1\nkind: Service\nmetadata: {name: a, labels: &l {app: a}}\nspec: {selector: *l}\n";
        let Object::Service(svc) = &parse_manifests(text).unwrap()[0] else {
            panic!("not a Service");
        };
        assert_eq!(svc.spec.selector.as_ref().map(|s| s["app"].as_str()), Some("a"));
    }

    #[test]
    fn too_many_objects() {
        let text = format!(
            "apiVersion: v1\nkind: List\nitems: [{}]\n",
            vec!["{}"; MAX_OBJECTS + 1].join(",")
        );
        assert_eq!(
            parse_manifests(&text).unwrap_err().message(),
            "more than 100000 objects in one file"
        );
    }
}
