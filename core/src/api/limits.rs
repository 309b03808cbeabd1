//! The limits every input is held to, in one place, and the error that
//! names the one broken. Manifests (files, pastes into the playground's
//! console), the agent's watch stream and its state file are all checked
//! against these values before the expensive work (parsing, decoding,
//! building objects) starts, so no input takes more than linear time.
//!
//! The text-level checks (sizes, nesting depth, aliases, documents) are a
//! linear pre-scan of the text ([`crate::api::scan`]); alias expansion is
//! bounded while a document is decoded ([`crate::api::value`]); object-level
//! checks (names, labels, annotations) are [`check_object_meta`], for the
//! objects that do not pass the apiserver's admission (the watch stream:
//! admission validation covers manifests).

use super::meta::ObjectMeta;
use thiserror::Error;

/// The most bytes of one document: kube-apiserver's request body limit
/// (3 MiB, `--max-request-bytes` default), which no object can exceed.
pub const MAX_DOCUMENT_BYTES: usize = 3 * 1024 * 1024;

/// The most bytes of one manifest file, paste or state file (64 MiB): many
/// documents, but not more than a person or a generator writes for one
/// cluster (5,000 Services with their slices take a few MiB).
pub const MAX_FILE_BYTES: usize = 64 * 1024 * 1024;

/// The deepest nesting of collections in a document (block and flow,
/// YAML or JSON). The deepest real manifests (a Pod's affinity terms) nest
/// about 12 levels; serde_yaml_ng itself stops at 128.
pub const MAX_DEPTH: usize = 100;

/// The most aliases (`*name`) one document may use. Kubernetes objects
/// rarely use any; generated manifests a handful.
pub const MAX_ALIASES: usize = 1_000;

/// How many more nodes than its text has bytes a document may decode to
/// once its aliases are expanded (bounds "billion laughs": a few aliases
/// of aliases that expand to a huge value). A document without aliases
/// never has more nodes than twice its bytes.
pub const MAX_ALIAS_EXPANSION: usize = 100_000;

/// The most objects (documents, and the items of `kind: List`s) in one
/// file or paste.
pub const MAX_OBJECTS: usize = 100_000;

/// The longest object name, in bytes: a DNS-1123 subdomain (253); the
/// kinds named by a DNS-1123 label (Services, namespaces) allow 63,
/// which admission checks.
pub const MAX_NAME_BYTES: usize = 253;

/// The longest namespace name: a DNS-1123 label.
pub const MAX_NAMESPACE_BYTES: usize = 63;

/// The longest label value, and the longest name part of a label or
/// annotation key (`prefix/name`).
pub const MAX_LABEL_VALUE_BYTES: usize = 63;

/// The longest prefix of a label or annotation key: a DNS-1123 subdomain.
pub const MAX_LABEL_PREFIX_BYTES: usize = 253;

/// The most bytes of all annotations of one object, keys and values
/// together: kube-apiserver's `TotalAnnotationSizeLimitB` (256 KiB).
pub const MAX_ANNOTATIONS_BYTES: usize = 256 * 1024;

/// A limit an input broke. Each message names the limit and its value.
#[derive(Debug, Error, Clone, PartialEq, Eq)]
pub enum LimitError {
    /// The whole text (a file, a paste, a state file) is too large.
    #[error("{size} bytes: Request entity too large: limit is {limit} bytes per file")]
    FileTooLarge {
        /// Its size in bytes.
        size: usize,
        /// [`MAX_FILE_BYTES`].
        limit: usize,
    },
    /// One document is too large.
    #[error("more than {limit} bytes: Request entity too large: limit is {limit} bytes per document")]
    DocumentTooLarge {
        /// [`MAX_DOCUMENT_BYTES`].
        limit: usize,
    },
    /// Collections nest too deeply.
    #[error("line {line}: nesting is deeper than the limit of {limit} levels")]
    TooDeep {
        /// The 1-based line where the limit was crossed.
        line: usize,
        /// [`MAX_DEPTH`].
        limit: usize,
    },
    /// A document uses too many aliases.
    #[error("line {line}: more than {limit} aliases in one document")]
    TooManyAliases {
        /// The 1-based line of the first alias over the limit.
        line: usize,
        /// [`MAX_ALIASES`].
        limit: usize,
    },
    /// A document's aliases expand to too large a value.
    #[error("aliases expand to more than {limit} nodes (the limit on alias expansion)")]
    AliasExpansion {
        /// The most nodes the document could decode to.
        limit: usize,
    },
    /// Too many objects in one file or paste.
    #[error("more than {limit} objects in one file")]
    TooManyObjects {
        /// [`MAX_OBJECTS`].
        limit: usize,
    },
    /// An object's name is too long.
    #[error("metadata.name: Too long: may not be more than {limit} bytes")]
    NameTooLong {
        /// [`MAX_NAME_BYTES`].
        limit: usize,
    },
    /// An object's namespace is too long.
    #[error("metadata.namespace: Too long: may not be more than {limit} bytes")]
    NamespaceTooLong {
        /// [`MAX_NAMESPACE_BYTES`].
        limit: usize,
    },
    /// A label or annotation key is too long (its prefix or its name).
    #[error("metadata.{field}: Invalid value: {key:?}: {}", key_problem(*.prefix, *.limit))]
    KeyTooLong {
        /// `labels` or `annotations`.
        field: &'static str,
        /// The key, cut to 64 bytes.
        key: String,
        /// Whether the prefix (before `/`) is too long, else the name.
        prefix: bool,
        /// [`MAX_LABEL_PREFIX_BYTES`] or [`MAX_LABEL_VALUE_BYTES`].
        limit: usize,
    },
    /// A label value is too long.
    #[error("metadata.labels: Invalid value: {value:?}: must be no more than {limit} characters")]
    LabelValueTooLong {
        /// The value, cut to 64 bytes.
        value: String,
        /// [`MAX_LABEL_VALUE_BYTES`].
        limit: usize,
    },
    /// All annotations together are too large.
    #[error("metadata.annotations: Too long: may not be more than {limit} bytes")]
    AnnotationsTooLarge {
        /// [`MAX_ANNOTATIONS_BYTES`].
        limit: usize,
    },
}

/// Kubernetes' words for a too long qualified-name part.
fn key_problem(prefix: bool, limit: usize) -> String {
    if prefix {
        format!("prefix part must be no more than {limit} characters")
    } else {
        format!("name part must be no more than {limit} characters")
    }
}

/// Checks the size of a whole text (a file, a paste, a state file) before
/// it is parsed.
pub fn check_file_size(size: usize) -> Result<(), LimitError> {
    if size > MAX_FILE_BYTES {
        return Err(LimitError::FileTooLarge {
            size,
            limit: MAX_FILE_BYTES,
        });
    }
    Ok(())
}

/// Holds a YAML or JSON text that is not a manifest (a configuration
/// file, a test vector) to the text limits: its size, then a linear scan
/// for document size, nesting depth and aliases.
pub fn check_text(text: &str) -> Result<(), LimitError> {
    check_file_size(text.len())?;
    super::scan::scan(text).map_err(|(_, limit)| limit)
}

/// The first `n` bytes of `s` (on a character boundary), for messages.
fn cut(s: &str, n: usize) -> String {
    let mut end = n.min(s.len());
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    s[..end].to_string()
}

/// Checks the lengths in an object's metadata against Kubernetes' limits:
/// name, namespace, label keys and values, annotation keys and their
/// total size. For objects that skip admission (the agent's watch
/// stream); admission checks the same and more for manifests.
pub fn check_object_meta(meta: &ObjectMeta) -> Result<(), LimitError> {
    if meta.name.len() > MAX_NAME_BYTES {
        return Err(LimitError::NameTooLong { limit: MAX_NAME_BYTES });
    }
    if meta.namespace.len() > MAX_NAMESPACE_BYTES {
        return Err(LimitError::NamespaceTooLong {
            limit: MAX_NAMESPACE_BYTES,
        });
    }
    for (key, value) in &meta.labels {
        check_key("labels", key)?;
        if value.len() > MAX_LABEL_VALUE_BYTES {
            return Err(LimitError::LabelValueTooLong {
                value: cut(value, 64),
                limit: MAX_LABEL_VALUE_BYTES,
            });
        }
    }
    let mut total = 0usize;
    for (key, value) in &meta.annotations {
        check_key("annotations", key)?;
        total = total.saturating_add(key.len()).saturating_add(value.len());
    }
    if total > MAX_ANNOTATIONS_BYTES {
        return Err(LimitError::AnnotationsTooLarge {
            limit: MAX_ANNOTATIONS_BYTES,
        });
    }
    Ok(())
}

/// A label or annotation key's parts against their limits.
fn check_key(field: &'static str, key: &str) -> Result<(), LimitError> {
    let (prefix, name) = key.rsplit_once('/').unwrap_or(("", key));
    let too_long = |prefix: bool, limit: usize| LimitError::KeyTooLong {
        field,
        key: cut(key, 64),
        prefix,
        limit,
    };
    if prefix.len() > MAX_LABEL_PREFIX_BYTES {
        return Err(too_long(true, MAX_LABEL_PREFIX_BYTES));
    }
    if name.len() > MAX_LABEL_VALUE_BYTES {
        return Err(too_long(false, MAX_LABEL_VALUE_BYTES));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn meta(f: impl FnOnce(&mut ObjectMeta)) -> ObjectMeta {
        let mut m = ObjectMeta {
            name: "web".into(),
            ..ObjectMeta::default()
        };
        f(&mut m);
        m
    }

    #[test]
    fn object_meta_limits_name_what_is_too_long() {
        assert_eq!(check_object_meta(&meta(|_| {})), Ok(()));
        let long = "a".repeat(254);
        assert_eq!(
            check_object_meta(&meta(|m| m.name = long.clone()))
                .unwrap_err()
                .to_string(),
            "metadata.name: Too long: may not be more than 253 bytes"
        );
        let err = check_object_meta(&meta(|m| {
            m.labels.insert("app".into(), "v".repeat(64));
        }))
        .unwrap_err();
        assert!(matches!(err, LimitError::LabelValueTooLong { limit: 63, .. }), "{err}");
        let err = check_object_meta(&meta(|m| {
            m.labels.insert(format!("{}/app", "p".repeat(254)), "v".into());
        }))
        .unwrap_err();
        assert!(
            err.to_string()
                .ends_with("prefix part must be no more than 253 characters"),
            "{err}"
        );
        let err = check_object_meta(&meta(|m| {
            m.annotations.insert("n".repeat(64), String::new());
        }))
        .unwrap_err();
        assert!(
            err.to_string()
                .ends_with("name part must be no more than 63 characters"),
            "{err}"
        );
        let err = check_object_meta(&meta(|m| {
            m.annotations.insert("big".into(), "x".repeat(MAX_ANNOTATIONS_BYTES));
        }))
        .unwrap_err();
        assert_eq!(
            err.to_string(),
            "metadata.annotations: Too long: may not be more than 262144 bytes"
        );
    }

    #[test]
    fn file_size() {
        assert_eq!(check_file_size(MAX_FILE_BYTES), Ok(()));
        assert!(matches!(
            check_file_size(MAX_FILE_BYTES + 1),
            Err(LimitError::FileTooLarge { .. })
        ));
    }
}
