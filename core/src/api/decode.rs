//! Typed data out of JSON values, through one deserializer for every type.
//!
//! The compiler makes a copy of a type's `Deserialize` code for each
//! deserializer it is used with; in the WebAssembly build those copies were
//! most of the module (the same Service code for a YAML parser, for JSON
//! text, for a JSON value, for a value wrapped to find unknown fields, and
//! wrapped again to name the field at fault). So every typed decoding in the
//! core and its wasm binding (manifest objects, snapshots, cluster options,
//! behaviour vectors) reads its text into a [`serde_json::Value`] first and
//! then decodes it with [`from_value`], through the one stack
//! `serde_path_to_error` over `serde_ignored` over the value.
//!
//! Both wrappers only observe: what decodes, and the error when it does
//! not, are the type's own, as `serde_json::from_value` gives them.

use serde::de::DeserializeOwned;
use serde_json::Value;
use std::fmt;

/// A decoded value and the fields it did not read.
#[derive(Debug)]
pub struct Decoded<T> {
    /// The value.
    pub value: T,
    /// The path of every field the type ignored, in `serde_ignored`'s
    /// spelling (`spec.ports.0.targetport`, `.?` inside an `Option`), in
    /// the order met.
    pub ignored: Vec<String>,
}

/// Why a value did not decode.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DecodeError {
    /// The error, exactly as `serde_json::from_value` words it.
    pub message: String,
    /// Where it was found (`spec.ports[0].port`; `.` for the top level).
    pub path: String,
}

impl fmt::Display for DecodeError {
    /// `message (at path)`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} (at {})", self.message, self.path)
    }
}

impl std::error::Error for DecodeError {}

/// The callback type `serde_ignored` is given: the same for every `T`, so
/// that a type nested in several others (metadata, a port) is decoded by
/// one copy of its code.
type Record<'r> = &'r mut dyn FnMut(serde_ignored::Path);

/// Decodes `T` from a JSON value, recording the fields `T` ignores.
pub fn from_value<T: DeserializeOwned>(value: Value) -> Result<Decoded<T>, DecodeError> {
    let mut ignored = Vec::new();
    let mut push = |path: serde_ignored::Path| ignored.push(path.to_string());
    let mut record: Record = &mut push;
    let decoded = serde_path_to_error::deserialize(serde_ignored::Deserializer::new(value, &mut record));
    match decoded {
        Ok(value) => Ok(Decoded { value, ignored }),
        Err(e) => Err(DecodeError {
            message: e.inner().to_string(),
            path: e.path().to_string(),
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde::Deserialize;
    use serde_json::json;

    #[derive(Debug, Deserialize, PartialEq)]
    struct Port {
        port: u16,
        name: Option<String>,
    }

    #[derive(Debug, Deserialize, PartialEq)]
    struct Spec {
        ports: Vec<Port>,
    }

    #[test]
    fn ignored_fields_are_listed() {
        let decoded: Decoded<Spec> = from_value(json!({"ports": [{"port": 80, "targetport": 1}], "x": 2})).unwrap();
        assert_eq!(
            decoded.value,
            Spec {
                ports: vec![Port { port: 80, name: None }]
            }
        );
        assert_eq!(decoded.ignored, ["ports.0.targetport", "x"]);
    }

    #[test]
    fn errors_are_serde_json_s_with_the_path() {
        let value = json!({"ports": [{"port": 80}, {"port": "eighty"}]});
        let native = serde_json::from_value::<Spec>(value.clone()).unwrap_err().to_string();
        let err = from_value::<Spec>(value).unwrap_err();
        assert_eq!(err.message, native);
        assert_eq!(err.to_string(), format!("{native} (at ports[1].port)"));
        assert_eq!(from_value::<Spec>(json!({})).unwrap_err().path, ".");
    }
}
