//! Field errors in Kubernetes' own format.
//!
//! kube-apiserver reports a rejected object as a list of field errors, each
//! naming the field path, the kind of problem, the bad value and a detail:
//! `spec.ports[1].port: Invalid value: 0: must be between 1 and 65535, inclusive`.
//! [`FieldError`] reproduces that text; [`invalid_object_message`] the
//! `The Service "x" is invalid: ...` wrapper kubectl prints.

use crate::digits::push_decimal;
use std::fmt;

/// A path to a field, such as `spec.ports[1].port`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FieldPath(String);

impl FieldPath {
    /// The root field `name`.
    pub fn new(name: &str) -> FieldPath {
        FieldPath(name.to_string())
    }

    /// The child field `name` of this one.
    pub fn child(&self, name: &str) -> FieldPath {
        let mut path = String::with_capacity(self.0.len() + 1 + name.len());
        path.push_str(&self.0);
        path.push('.');
        path.push_str(name);
        FieldPath(path)
    }

    /// Element `i` of this list field.
    pub fn index(&self, i: usize) -> FieldPath {
        let mut path = String::with_capacity(self.0.len() + 22);
        path.push_str(&self.0);
        path.push('[');
        push_decimal(&mut path, i as u64, 0);
        path.push(']');
        FieldPath(path)
    }

    /// Entry `key` of this map field (`metadata.annotations[key]`).
    pub fn key(&self, key: &str) -> FieldPath {
        let mut path = String::with_capacity(self.0.len() + 2 + key.len());
        path.push_str(&self.0);
        path.push('[');
        path.push_str(key);
        path.push(']');
        FieldPath(path)
    }

    /// The path as text.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for FieldPath {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// A value quoted the way kube-apiserver prints it: strings in double quotes,
/// numbers bare, anything else as JSON (`["a","b"]`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum BadValue {
    /// A string value, printed quoted.
    Str(String),
    /// An integer value, printed bare.
    Int(i64),
    /// A list of strings, printed as JSON (`["a","b"]`), as kube-apiserver
    /// prints values that are not scalars.
    StrList(Vec<String>),
    /// A value kube-apiserver prints as the JSON of its Go type (a struct
    /// such as `{"CIDRs":[...]}`), given as that JSON text.
    Json(String),
}

impl fmt::Display for BadValue {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            BadValue::Str(s) => write!(f, "{s:?}"),
            BadValue::Int(i) => write!(f, "{i}"),
            BadValue::Json(text) => f.write_str(text),
            BadValue::StrList(items) => {
                let quoted: Vec<String> = items
                    .iter()
                    .map(|s| serde_json::Value::from(s.as_str()).to_string())
                    .collect();
                write!(f, "[{}]", quoted.join(","))
            }
        }
    }
}

impl From<&str> for BadValue {
    fn from(s: &str) -> Self {
        BadValue::Str(s.to_string())
    }
}

impl From<String> for BadValue {
    fn from(s: String) -> Self {
        BadValue::Str(s)
    }
}

impl From<i64> for BadValue {
    fn from(i: i64) -> Self {
        BadValue::Int(i)
    }
}

/// What is wrong with a field, as kube-apiserver classifies it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum FieldErrorKind {
    /// A required field is missing: `Required value`.
    Required,
    /// The value is not acceptable: `Invalid value: <v>`.
    Invalid(BadValue),
    /// The value is not one of a fixed set: `Unsupported value: <v>`.
    Unsupported(BadValue),
    /// The field may not be set here: `Forbidden`.
    Forbidden,
    /// The value repeats one already given: `Duplicate value: <v>`.
    Duplicate(BadValue),
    /// The value is too long: `Too long`.
    TooLong,
    /// The list has too many items: `Too many: <count>`.
    TooMany(usize),
}

/// One field error: path, kind and detail.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FieldError {
    /// The field the error is about.
    pub path: FieldPath,
    /// What kind of problem it is, with the bad value where there is one.
    pub kind: FieldErrorKind,
    /// The explanation; may be empty.
    pub detail: String,
}

impl FieldError {
    /// `path: Required value[: detail]`.
    pub fn required(path: &FieldPath, detail: &str) -> FieldError {
        Self::make(path, FieldErrorKind::Required, detail)
    }

    /// `path: Invalid value: <value>: detail`.
    pub fn invalid(path: &FieldPath, value: impl Into<BadValue>, detail: &str) -> FieldError {
        Self::make(path, FieldErrorKind::Invalid(value.into()), detail)
    }

    /// `path: Unsupported value: <value>: supported values: "a", "b"`.
    pub fn unsupported(path: &FieldPath, value: impl Into<BadValue>, supported: &[&str]) -> FieldError {
        let list: Vec<String> = supported.iter().map(|s| format!("{s:?}")).collect();
        let detail = format!("supported values: {}", list.join(", "));
        Self::make(path, FieldErrorKind::Unsupported(value.into()), &detail)
    }

    /// `path: Forbidden: detail`.
    pub fn forbidden(path: &FieldPath, detail: &str) -> FieldError {
        Self::make(path, FieldErrorKind::Forbidden, detail)
    }

    /// `path: Duplicate value: <value>`.
    pub fn duplicate(path: &FieldPath, value: impl Into<BadValue>) -> FieldError {
        Self::make(path, FieldErrorKind::Duplicate(value.into()), "")
    }

    /// `path: Too long: detail`.
    pub fn too_long(path: &FieldPath, detail: &str) -> FieldError {
        Self::make(path, FieldErrorKind::TooLong, detail)
    }

    /// `path: Too many: <count>: must have at most <max> items`.
    pub fn too_many(path: &FieldPath, count: usize, max: usize) -> FieldError {
        let items = if max == 1 { "item" } else { "items" };
        Self::make(
            path,
            FieldErrorKind::TooMany(count),
            &format!("must have at most {max} {items}"),
        )
    }

    fn make(path: &FieldPath, kind: FieldErrorKind, detail: &str) -> FieldError {
        FieldError {
            path: path.clone(),
            kind,
            detail: detail.to_string(),
        }
    }
}

impl fmt::Display for FieldError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: ", self.path)?;
        match &self.kind {
            FieldErrorKind::Required => f.write_str("Required value")?,
            FieldErrorKind::Invalid(v) => write!(f, "Invalid value: {v}")?,
            FieldErrorKind::Unsupported(v) => write!(f, "Unsupported value: {v}")?,
            FieldErrorKind::Forbidden => f.write_str("Forbidden")?,
            FieldErrorKind::Duplicate(v) => write!(f, "Duplicate value: {v}")?,
            FieldErrorKind::TooLong => f.write_str("Too long")?,
            FieldErrorKind::TooMany(count) => write!(f, "Too many: {count}")?,
        }
        if !self.detail.is_empty() {
            write!(f, ": {}", self.detail)?;
        }
        Ok(())
    }
}

/// `The <Kind> "<name>" is invalid: <errors>`, as kubectl prints a rejected
/// object: one error bare, several in brackets separated by ", ".
pub fn invalid_object_message(kind: &str, name: &str, errors: &[FieldError]) -> String {
    let body = match errors {
        [one] => one.to_string(),
        many => {
            let parts: Vec<String> = many.iter().map(ToString::to_string).collect();
            format!("[{}]", parts.join(", "))
        }
    };
    format!("The {kind} {name:?} is invalid: {body}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats_like_kube_apiserver() {
        let p = FieldPath::new("spec").child("ports").index(1).child("port");
        let e = FieldError::invalid(&p, 0i64, "must be between 1 and 65535, inclusive");
        assert_eq!(
            e.to_string(),
            "spec.ports[1].port: Invalid value: 0: must be between 1 and 65535, inclusive"
        );
        let e = FieldError::unsupported(&FieldPath::new("spec").child("type"), "Foo", &["ClusterIP", "NodePort"]);
        assert_eq!(
            e.to_string(),
            "spec.type: Unsupported value: \"Foo\": supported values: \"ClusterIP\", \"NodePort\""
        );
        let e = FieldError::required(&FieldPath::new("spec").child("ports"), "");
        assert_eq!(e.to_string(), "spec.ports: Required value");
        let v = BadValue::StrList(vec!["10.0.0.1".into()]);
        assert_eq!(v.to_string(), "[\"10.0.0.1\"]");
        let v = BadValue::StrList(vec!["a".into(), "b\"c".into()]);
        assert_eq!(v.to_string(), r#"["a","b\"c"]"#);
    }

    #[test]
    fn wraps_one_or_many() {
        let p = FieldPath::new("metadata").child("name");
        let one = [FieldError::required(&p, "name or generateName is required")];
        assert_eq!(
            invalid_object_message("Service", "", &one),
            "The Service \"\" is invalid: metadata.name: Required value: name or generateName is required"
        );
        let two = [FieldError::forbidden(&p, "a"), FieldError::forbidden(&p, "b")];
        assert_eq!(
            invalid_object_message("Service", "x", &two),
            "The Service \"x\" is invalid: [metadata.name: Forbidden: a, metadata.name: Forbidden: b]"
        );
    }
}
