//! `api::decode::from_value` against the stack it stands in for,
//! `serde_path_to_error` over `serde_ignored` over `serde_json::Value`: the
//! same value or error message, the same error path and the same ignored
//! fields, for every behaviour vector and every object in them, as written
//! and with each field in turn given a value of the wrong type, and an
//! unknown field added to each mapping in turn.
//!
//! One difference is deliberate: where a struct is expected, `from_value`
//! refuses an array, as Kubernetes does; serde_json reads one as the
//! struct's fields in order (so `metadata: []` was an empty ObjectMeta).

use serde::de::DeserializeOwned;
use serde_json::{json, Value};
use std::fmt::Debug;
use svcnet_core::api::decode::from_value;
use svcnet_core::api::{deployment, endpoint_slice, endpoints, pod, service, service_cidr, value};

/// What a decoding gave: the value (as Debug text) or error message and
/// path, and the ignored fields.
type Outcome = (Result<String, (String, String)>, Vec<String>);

fn wrapped<T: DeserializeOwned + Debug>(v: Value) -> Outcome {
    let mut ignored = Vec::new();
    let mut record = |path: serde_ignored::Path| ignored.push(path.to_string());
    let result = serde_path_to_error::deserialize::<_, T>(serde_ignored::Deserializer::new(v, &mut record));
    let result = result
        .map(|t| format!("{t:?}"))
        .map_err(|e| (e.inner().to_string(), e.path().to_string()));
    (result, ignored)
}

fn ours<T: DeserializeOwned + Debug>(v: Value) -> Outcome {
    match from_value::<T>(v) {
        Ok(d) => (Ok(format!("{:?}", d.value)), d.ignored),
        Err(e) => (Err((e.message, e.path)), Vec::new()),
    }
}

/// The value at an error path (`.`, `spec.ports[0]`).
fn at<'a>(v: &'a Value, path: &str) -> Option<&'a Value> {
    if path == "." {
        return Some(v);
    }
    let mut here = v;
    for part in path.split('.') {
        let mut pieces = part.split('[');
        let name = pieces.next().unwrap_or_default();
        if !name.is_empty() {
            here = here.get(name)?;
        }
        for index in pieces {
            here = here.get(index.trim_end_matches(']').parse::<usize>().ok()?)?;
        }
    }
    Some(here)
}

/// Whether `mine` is the deliberate difference: an array refused where a
/// struct was expected, at a path that holds an array.
fn array_for_struct(mine: &Result<String, (String, String)>, v: &Value) -> bool {
    let Err((message, path)) = mine else {
        return false;
    };
    message.starts_with("invalid type: sequence, expected struct ") && at(v, path).is_some_and(Value::is_array)
}

fn same<T: DeserializeOwned + Debug>(v: &Value) -> usize {
    let (theirs, ignored) = wrapped::<T>(v.clone());
    let (mine, mine_ignored) = ours::<T>(v.clone());
    if array_for_struct(&mine, v) {
        return 1;
    }
    assert_eq!(mine, theirs, "{v}");
    if mine.is_ok() {
        assert_eq!(mine_ignored, ignored, "{v}");
    }
    1
}

/// Every variant of `v` with one change: each leaf replaced by a value of
/// another type, each mapping given an unknown field, each array an extra
/// element of the wrong type.
fn mutations(v: &Value) -> Vec<Value> {
    let mut out = Vec::new();
    match v {
        Value::Object(map) => {
            let mut extra = map.clone();
            extra.insert("zzUnknown".into(), json!({"a": [1]}));
            out.push(Value::Object(extra));
            for (key, inner) in map {
                for changed in mutations(inner) {
                    let mut m = map.clone();
                    m.insert(key.clone(), changed);
                    out.push(Value::Object(m));
                }
            }
            out.push(json!([]));
        }
        Value::Array(items) => {
            let mut extra = items.clone();
            extra.push(json!(true));
            out.push(Value::Array(extra));
            for (i, inner) in items.iter().enumerate() {
                for changed in mutations(inner) {
                    let mut a = items.clone();
                    a[i] = changed;
                    out.push(Value::Array(a));
                }
            }
            out.push(json!({}));
        }
        Value::String(_) => out.extend([json!(7), json!(null), json!(-1.5)]),
        Value::Number(_) => out.extend([json!("x"), json!(-3), json!(70000), json!(1.5), json!(null)]),
        Value::Bool(_) => out.extend([json!("true"), json!(1)]),
        Value::Null => out.extend([json!({}), json!("x")]),
    }
    out
}

/// Every object with a `kind` in the tree, and in the manifests (YAML
/// text) in its strings.
fn objects(v: &Value, out: &mut Vec<Value>) {
    match v {
        Value::Object(map) => {
            if map.contains_key("kind") {
                out.push(v.clone());
            }
            map.values().for_each(|inner| objects(inner, out));
        }
        Value::Array(items) => items.iter().for_each(|inner| objects(inner, out)),
        Value::String(text) if text.contains("kind:") => {
            for document in text.split("\n---") {
                if let Ok(parsed @ Value::Object(_)) = value::decode_text(document) {
                    objects(&parsed, out);
                }
            }
        }
        _ => {}
    }
}

fn each<T: DeserializeOwned + Debug>(v: &Value) -> usize {
    same::<T>(v) + mutations(v).iter().map(same::<T>).sum::<usize>()
}

/// [`each`], and the decoded object back to a value.
fn both<T: DeserializeOwned + Debug + serde::Serialize>(v: &Value) -> usize {
    if let Ok(decoded) = from_value::<T>(v.clone()) {
        // And back: api::value::to_value (through JSON text) gives what
        // serde_json::to_value gives.
        assert_eq!(
            value::to_value(&decoded.value),
            serde_json::to_value(&decoded.value).unwrap(),
            "{v}"
        );
    }
    each::<T>(v)
}

#[test]
fn paths_and_ignored_fields_as_serde_path_to_error_and_serde_ignored_give_them() {
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/../tests/vectors");
    let mut checked = 0;
    let mut files: Vec<_> = std::fs::read_dir(dir).unwrap().map(|e| e.unwrap().path()).collect();
    files.sort();
    for path in files.iter().filter(|p| p.extension().is_some_and(|e| e == "yaml")) {
        let text = std::fs::read_to_string(path).unwrap();
        let vector = value::decode_text(&text).unwrap();
        checked += same::<svcnet_core::scenario::Vector>(&vector);
        if let Some(steps) = vector.get("steps").and_then(Value::as_array) {
            for step in steps {
                checked += each::<svcnet_core::scenario::Action>(step);
            }
        }
        let mut found = Vec::new();
        objects(&vector, &mut found);
        for object in &found {
            checked += match object["kind"].as_str() {
                Some("Service") => both::<service::Service>(object),
                Some("Pod") => both::<pod::Pod>(object),
                Some("Node") => both::<pod::Node>(object),
                Some("Deployment") => both::<deployment::Deployment>(object),
                Some("EndpointSlice") => both::<endpoint_slice::EndpointSlice>(object),
                Some("Endpoints") => both::<endpoints::Endpoints>(object),
                Some("ServiceCIDR") => both::<service_cidr::ServiceCidr>(object),
                _ => 0,
            };
            checked += same::<svcnet_core::api::manifest::Object>(object);
        }
    }
    assert!(checked > 20_000, "only {checked} decodings compared");
}

#[test]
fn enums_options_and_top_level_errors() {
    let cases = [
        json!({"create": {"name": "a"}}),
        json!({"create": 1}),
        json!({"create": {"name": "a"}, "apply": 2}),
        json!("restore"),
        json!("nope"),
        json!({"nope": {}}),
        json!([]),
        json!(null),
        json!({"restore": {"x": 1}}),
        json!({"restore": null}),
    ];
    for case in &cases {
        same::<svcnet_core::scenario::Action>(case);
        same::<Option<svcnet_core::scenario::Action>>(case);
        same::<Vec<svcnet_core::scenario::Action>>(&json!([case]));
        same::<svcnet_core::controlplane::ClusterConfig>(case);
    }
}

/// The value or error message only: the path may differ (see
/// `map_keys_as_serde_json_reads_them`).
fn same_message<T: DeserializeOwned + Debug>(v: &Value) {
    let (theirs, _) = wrapped::<T>(v.clone());
    let (mine, _) = ours::<T>(v.clone());
    assert_eq!(mine.map_err(|e| e.0), theirs.map_err(|e| e.0), "{v}");
}

/// Keys read as text (strings, addresses, `TCP/10.96.0.5:80`): as the
/// wrappers give them. Keys read as numbers or booleans (no decoded type
/// has such a map) are read as serde_json reads them, with the same values
/// and errors; only the paths differ: the wrappers named such a key by the
/// number's own text or `?`, api::decode names it as written. (Keys of an
/// `Option` or enum type the wrappers refused, "non-string key".)
#[test]
fn map_keys_as_serde_json_reads_them() {
    use std::net::{IpAddr, SocketAddr};
    use svcnet_core::collections::SortedMap;
    use svcnet_core::proxy::table::VirtualServerKey;
    let cases = [
        json!({"80": "a", "-1": "b"}),
        json!({"x": "a"}),
        json!({"1.5": "a"}),
        json!({"70000": "a"}),
        json!({"80": 1}),
        json!({"80 ": "a"}),
        json!({"true": "a"}),
        json!({"10.0.0.1": "a", "fd00::1": 2}),
        json!({"10.0.0.1:80": "a"}),
        json!({"TCP/10.96.0.5:80": "a", "UDP/[fd00::1]:53": {"x": 1}}),
        json!({"TCP/10.96.0.5:80": 7}),
    ];
    for case in &cases {
        same::<SortedMap<String, String>>(case);
        same::<SortedMap<String, Value>>(case);
        same::<SortedMap<IpAddr, String>>(case);
        same::<SortedMap<SocketAddr, String>>(case);
        same::<SortedMap<VirtualServerKey, String>>(case);
        same::<SortedMap<VirtualServerKey, SortedMap<String, u8>>>(case);
        same_message::<SortedMap<u16, String>>(case);
        same_message::<SortedMap<i64, String>>(case);
        same_message::<SortedMap<bool, String>>(case);
    }
}
