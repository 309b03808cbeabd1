//! Object metadata checks kube-apiserver runs on every kind: the name (by
//! the kind's own rule), the namespace, label keys and values, annotation
//! keys and their total size, and label selectors.

use super::names::{dns1123_label, label_value, qualified_name};
use crate::api::ObjectMeta;
use crate::collections::SortedMap;
use crate::field::{FieldError, FieldPath};

/// The most bytes all annotations of an object may hold, keys and values
/// together (256 KiB).
pub const TOTAL_ANNOTATION_SIZE_LIMIT: usize = 256 * 1024;

/// Checks `meta` for creation: `name_rule` gives the problems with the name
/// for this kind; `namespaced` says whether a namespace is checked.
pub fn validate_object_meta(
    meta: &ObjectMeta,
    namespaced: bool,
    name_rule: fn(&str) -> Vec<String>,
) -> Vec<FieldError> {
    let path = FieldPath::new("metadata");
    let mut errs = Vec::new();
    if let Some(prefix) = meta.generate_name_prefix() {
        for msg in name_rule(&mask_trailing_dash(prefix)) {
            errs.push(FieldError::invalid(&path.child("generateName"), prefix, &msg));
        }
    }
    if meta.name.is_empty() {
        errs.push(FieldError::required(
            &path.child("name"),
            "name or generateName is required",
        ));
    } else {
        for msg in name_rule(&meta.name) {
            errs.push(FieldError::invalid(&path.child("name"), meta.name.as_str(), &msg));
        }
    }
    if namespaced {
        for msg in dns1123_label(meta.namespace_or_default()) {
            errs.push(FieldError::invalid(
                &path.child("namespace"),
                meta.namespace.as_str(),
                &msg,
            ));
        }
    }
    errs.extend(validate_labels(&meta.labels, &path.child("labels")));
    errs.extend(validate_annotations(&meta.annotations, &path.child("annotations")));
    errs
}

/// A `generateName` is checked as a name would be, its trailing dash (which
/// the generated suffix follows) read as a letter.
fn mask_trailing_dash(prefix: &str) -> String {
    match prefix.strip_suffix('-') {
        Some(rest) if !rest.is_empty() => format!("{rest}a"),
        _ => prefix.to_string(),
    }
}

/// Label keys must be qualified names, values label values (also used for
/// a Service's selector).
pub fn validate_labels(labels: &SortedMap<String, String>, path: &FieldPath) -> Vec<FieldError> {
    let mut errs = Vec::new();
    for (key, value) in labels {
        for msg in qualified_name(key) {
            errs.push(FieldError::invalid(path, key.as_str(), &msg));
        }
        for msg in label_value(value) {
            errs.push(FieldError::invalid(path, value.as_str(), &msg));
        }
    }
    errs
}

/// Annotation keys are qualified names, case aside; all of them together
/// hold at most [`TOTAL_ANNOTATION_SIZE_LIMIT`] bytes.
pub fn validate_annotations(annotations: &SortedMap<String, String>, path: &FieldPath) -> Vec<FieldError> {
    let mut errs = Vec::new();
    for key in annotations.keys() {
        for msg in qualified_name(&key.to_ascii_lowercase()) {
            errs.push(FieldError::invalid(path, key.as_str(), &msg));
        }
    }
    let size: usize = annotations.iter().map(|(k, v)| k.len() + v.len()).sum();
    if size > TOTAL_ANNOTATION_SIZE_LIMIT {
        errs.push(FieldError::too_long(
            path,
            &format!("may not be more than {TOTAL_ANNOTATION_SIZE_LIMIT} bytes"),
        ));
    }
    errs
}

#[cfg(test)]
mod tests {
    use super::*;

    fn meta(labels: &[(&str, &str)], annotations: &[(&str, &str)]) -> ObjectMeta {
        let mut m = ObjectMeta {
            name: "web".into(),
            ..ObjectMeta::default()
        };
        m.labels = labels.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
        m.annotations = annotations
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        m
    }

    fn messages(m: &ObjectMeta) -> Vec<String> {
        validate_object_meta(m, true, dns1123_label)
            .iter()
            .map(ToString::to_string)
            .collect()
    }

    #[test]
    fn labels_and_annotations_are_checked() {
        assert!(messages(&meta(&[("app", "web"), ("example.com/tier", "")], &[("Note", "x")])).is_empty());
        let errs = messages(&meta(&[("-bad", "x")], &[]));
        assert_eq!(errs.len(), 1);
        assert!(
            errs[0].starts_with("metadata.labels: Invalid value: \"-bad\": name part must consist"),
            "{errs:?}"
        );
        let errs = messages(&meta(&[], &[("a/b/c", "x")]));
        assert!(
            errs[0].starts_with("metadata.annotations: Invalid value: \"a/b/c\": a valid label key"),
            "{errs:?}"
        );
    }

    #[test]
    fn generate_name_is_checked_as_a_name_with_its_dash_read_as_a_letter() {
        let with = |prefix: &str| {
            let mut m = meta(&[], &[]);
            m.generate_name = Some(serde_json::Value::String(prefix.into()));
            messages(&m)
        };
        assert!(with("web-").is_empty());
        let errs = with("-bad");
        assert_eq!(errs.len(), 1);
        assert!(errs[0].starts_with("metadata.generateName: Invalid value: \"-bad\": a lowercase RFC 1123 label"));
        assert_eq!(
            with(&format!("{}-", "a".repeat(63))),
            vec![format!(
                "metadata.generateName: Invalid value: \"{}-\": must be no more than 63 characters",
                "a".repeat(63)
            )]
        );
    }

    #[test]
    fn annotations_may_hold_256_kib() {
        let big = "x".repeat(TOTAL_ANNOTATION_SIZE_LIMIT);
        assert_eq!(
            messages(&meta(&[], &[("a", &big)])),
            vec!["metadata.annotations: Too long: may not be more than 262144 bytes".to_string()]
        );
        assert!(messages(&meta(&[], &[("a", &big[1..])])).is_empty());
    }
}
