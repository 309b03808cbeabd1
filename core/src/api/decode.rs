//! Typed data out of JSON values, through one deserializer for every type.
//!
//! The compiler makes a copy of a type's `Deserialize` code for each
//! deserializer it is used with; in the WebAssembly build those copies were
//! most of the module (the same Service code for a YAML parser, for JSON
//! text, for a JSON value, for a value wrapped to find unknown fields, and
//! wrapped again to name the field at fault). So every typed decoding in the
//! core and its wasm binding (manifest objects, snapshots, cluster options,
//! behaviour vectors) reads its text into a [`serde_json::Value`] first and
//! then decodes it with [`from_value`], through the one `Deserializer`
//! below.
//!
//! It is `serde_json`'s deserializer for an owned `Value` (the same calls to
//! the type's visitor, the same errors, with `serde_json`'s own code for
//! numbers, strings and map keys) that also does, in one layer, what
//! `serde_path_to_error` and `serde_ignored` stacked over it did in two: it
//! records the path of every field the type ignores, and the path of the
//! value an error came from. (Two wrappers around every visitor, map and
//! sequence were a third of the module; the paths come out as they did.)

use serde::de::{self, DeserializeOwned, DeserializeSeed, IntoDeserializer, Unexpected, Visitor};
use serde_json::{Error, Map, Value};
use std::cell::RefCell;
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
    /// Where it was found (`spec.ports[0].port`; `.` for the top level),
    /// in `serde_path_to_error`'s spelling.
    pub path: String,
}

impl fmt::Display for DecodeError {
    /// `message (at path)`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} (at {})", self.message, self.path)
    }
}

impl std::error::Error for DecodeError {}

/// Decodes `T` from a JSON value, recording the fields `T` ignores.
pub fn from_value<T: DeserializeOwned>(value: Value) -> Result<Decoded<T>, DecodeError> {
    let record = Record::default();
    let decoded = T::deserialize(Deserializer {
        value,
        path: &Path::ROOT,
        record: &record,
    });
    let Record { ignored, failed_at } = record;
    match decoded {
        Ok(value) => Ok(Decoded {
            value,
            ignored: ignored.into_inner(),
        }),
        Err(e) => Err(DecodeError {
            message: e.to_string(),
            path: failed_at.into_inner().unwrap_or_else(|| ".".to_string()),
        }),
    }
}

/// One step from a value to a value inside it.
enum Step {
    Root,
    /// A sequence element.
    Index(usize),
    /// A map entry's value.
    Key(String),
    /// The inside of an `Option`, a newtype struct or a newtype variant:
    /// `?` in `serde_ignored`'s paths, nothing in `serde_path_to_error`'s.
    Inside,
    /// The content of an enum variant: its name in `serde_path_to_error`'s
    /// paths, nothing in `serde_ignored`'s.
    Variant(String),
}

/// Where a value is: a list of steps up to the root, on the stack.
struct Path<'p> {
    parent: Option<&'p Path<'p>>,
    step: Step,
}

impl Path<'_> {
    const ROOT: Path<'static> = Path {
        parent: None,
        step: Step::Root,
    };

    fn child(&self, step: Step) -> Path<'_> {
        Path {
            parent: Some(self),
            step,
        }
    }

    /// The steps from the root down to this one.
    fn steps(&self) -> Vec<&Step> {
        let mut steps = Vec::new();
        let mut at = Some(self);
        while let Some(path) = at {
            steps.push(&path.step);
            at = path.parent;
        }
        steps.reverse();
        steps
    }

    /// `serde_ignored`'s spelling: `spec.ports.0.name`, `a.?.b`, `.` for
    /// the root.
    fn ignored_text(&self) -> String {
        let mut out = String::new();
        for step in self.steps() {
            let text = match step {
                Step::Root | Step::Variant(_) => continue,
                Step::Index(index) => index.to_string(),
                Step::Key(key) => key.clone(),
                Step::Inside => "?".to_string(),
            };
            if !out.is_empty() {
                out.push('.');
            }
            out.push_str(&text);
        }
        if out.is_empty() {
            out.push('.');
        }
        out
    }

    /// `serde_path_to_error`'s spelling: `spec.ports[0].port`, `.` for the
    /// root.
    fn error_text(&self) -> String {
        let mut out = String::new();
        for step in self.steps() {
            match step {
                Step::Root | Step::Inside => {}
                Step::Index(index) => out.push_str(&format!("[{index}]")),
                Step::Key(name) | Step::Variant(name) => {
                    if !out.is_empty() {
                        out.push('.');
                    }
                    out.push_str(name);
                }
            }
        }
        if out.is_empty() {
            out.push('.');
        }
        out
    }
}

/// What the decoding found besides the value.
#[derive(Default)]
struct Record {
    ignored: RefCell<Vec<String>>,
    /// The path of the innermost value an error came out of.
    failed_at: RefCell<Option<String>>,
}

impl Record {
    /// Notes that the error passing out of the value at `path` came from
    /// there, unless a value inside it was already named.
    fn failed(&self, path: &Path, error: Error) -> Error {
        let mut failed_at = self.failed_at.borrow_mut();
        if failed_at.is_none() {
            *failed_at = Some(path.error_text());
        }
        error
    }
}

/// How `serde_json` describes a value it did not expect.
fn unexpected(value: &Value) -> Unexpected<'_> {
    match value {
        Value::Null => Unexpected::Unit,
        Value::Bool(b) => Unexpected::Bool(*b),
        Value::Number(n) => match (n.as_u64(), n.as_i64()) {
            (Some(u), _) => Unexpected::Unsigned(u),
            (None, Some(i)) => Unexpected::Signed(i),
            (None, None) => Unexpected::Float(n.as_f64().unwrap_or(f64::NAN)),
        },
        Value::String(s) => Unexpected::Str(s),
        Value::Array(_) => Unexpected::Seq,
        Value::Object(_) => Unexpected::Map,
    }
}

fn invalid_type(value: &Value, expected: &dyn de::Expected) -> Error {
    de::Error::invalid_type(unexpected(value), expected)
}

/// The deserializer: a value, where it is, and the record to write to.
struct Deserializer<'p, 'r> {
    value: Value,
    path: &'p Path<'p>,
    record: &'r Record,
}

macro_rules! forward_to_value {
    ($($method:ident)*) => {
        $(
            fn $method<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
                let Deserializer { value, path, record } = self;
                value.$method(visitor).map_err(|e| record.failed(path, e))
            }
        )*
    };
}

impl<'de> de::Deserializer<'de> for Deserializer<'_, '_> {
    type Error = Error;

    // Values with nothing inside: serde_json's own code.
    forward_to_value! {
        deserialize_bool deserialize_i8 deserialize_i16 deserialize_i32 deserialize_i64 deserialize_i128
        deserialize_u8 deserialize_u16 deserialize_u32 deserialize_u64 deserialize_u128
        deserialize_f32 deserialize_f64 deserialize_char deserialize_str deserialize_string
        deserialize_bytes deserialize_byte_buf deserialize_unit deserialize_identifier
    }

    fn deserialize_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        let Deserializer { value, path, record } = self;
        let result = match value {
            Value::Null => visitor.visit_unit(),
            Value::Bool(b) => visitor.visit_bool(b),
            Value::Number(n) => n.deserialize_any(visitor),
            Value::String(s) => visitor.visit_string(s),
            Value::Array(items) => visit_array(items, visitor, path, record),
            Value::Object(map) => visit_object(map, visitor, path, record),
        };
        result.map_err(|e| record.failed(path, e))
    }

    fn deserialize_option<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        let Deserializer { value, path, record } = self;
        let result = match value {
            Value::Null => visitor.visit_none(),
            value => visitor.visit_some(Deserializer {
                value,
                path: &path.child(Step::Inside),
                record,
            }),
        };
        result.map_err(|e| record.failed(path, e))
    }

    fn deserialize_unit_struct<V: Visitor<'de>>(self, _name: &'static str, visitor: V) -> Result<V::Value, Error> {
        self.deserialize_unit(visitor)
    }

    fn deserialize_newtype_struct<V: Visitor<'de>>(self, _name: &'static str, visitor: V) -> Result<V::Value, Error> {
        let Deserializer { value, path, record } = self;
        visitor
            .visit_newtype_struct(Deserializer {
                value,
                path: &path.child(Step::Inside),
                record,
            })
            .map_err(|e| record.failed(path, e))
    }

    fn deserialize_seq<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        let Deserializer { value, path, record } = self;
        let result = match value {
            Value::Array(items) => visit_array(items, visitor, path, record),
            other => Err(invalid_type(&other, &visitor)),
        };
        result.map_err(|e| record.failed(path, e))
    }

    fn deserialize_tuple<V: Visitor<'de>>(self, _len: usize, visitor: V) -> Result<V::Value, Error> {
        self.deserialize_seq(visitor)
    }

    fn deserialize_tuple_struct<V: Visitor<'de>>(
        self,
        _name: &'static str,
        _len: usize,
        visitor: V,
    ) -> Result<V::Value, Error> {
        self.deserialize_seq(visitor)
    }

    fn deserialize_map<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        let Deserializer { value, path, record } = self;
        let result = match value {
            Value::Object(map) => visit_object(map, visitor, path, record),
            other => Err(invalid_type(&other, &visitor)),
        };
        result.map_err(|e| record.failed(path, e))
    }

    fn deserialize_struct<V: Visitor<'de>>(
        self,
        _name: &'static str,
        _fields: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, Error> {
        // An object only. serde_json would also take an array, as the
        // struct's fields in order; Kubernetes refuses one, and without
        // it no struct's sequence-reading code is in the module.
        self.deserialize_map(visitor)
    }

    fn deserialize_enum<V: Visitor<'de>>(
        self,
        _name: &'static str,
        _variants: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, Error> {
        let Deserializer { value, path, record } = self;
        let access = match value {
            Value::Object(map) => {
                let mut entries = map.into_iter();
                match (entries.next(), entries.next()) {
                    (Some((variant, value)), None) => Ok(Enum {
                        variant,
                        value: Some(value),
                        path,
                        record,
                    }),
                    _ => Err(de::Error::invalid_value(Unexpected::Map, &"map with a single key")),
                }
            }
            Value::String(variant) => Ok(Enum {
                variant,
                value: None,
                path,
                record,
            }),
            other => Err(invalid_type(&other, &"string or map")),
        };
        access
            .and_then(|access| visitor.visit_enum(access))
            .map_err(|e| record.failed(path, e))
    }

    fn deserialize_ignored_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        self.record.ignored.borrow_mut().push(self.path.ignored_text());
        drop(self.value);
        visitor.visit_unit()
    }
}

/// serde_json's `visit_array`, its elements through [`Deserializer`].
fn visit_array<'de, V: Visitor<'de>>(
    items: Vec<Value>,
    visitor: V,
    path: &Path,
    record: &Record,
) -> Result<V::Value, Error> {
    let len = items.len();
    let mut access = Seq {
        items: items.into_iter(),
        index: 0,
        path,
        record,
    };
    let seq = visitor.visit_seq(&mut access)?;
    if access.items.len() == 0 {
        Ok(seq)
    } else {
        Err(de::Error::invalid_length(len, &"fewer elements in array"))
    }
}

/// serde_json's map `deserialize_any`, its values through [`Deserializer`].
fn visit_object<'de, V: Visitor<'de>>(
    map: Map<String, Value>,
    visitor: V,
    path: &Path,
    record: &Record,
) -> Result<V::Value, Error> {
    let len = map.len();
    let mut access = Entries {
        entries: map.into_iter(),
        value: None,
        path,
        record,
    };
    let out = visitor.visit_map(&mut access)?;
    if access.entries.len() == 0 {
        Ok(out)
    } else {
        Err(de::Error::invalid_length(len, &"fewer elements in map"))
    }
}

/// A seed's result or, on error, the error with `path` recorded.
fn seeded<'de, S: DeserializeSeed<'de>>(
    seed: S,
    value: Value,
    path: &Path,
    record: &Record,
) -> Result<S::Value, Error> {
    seed.deserialize(Deserializer { value, path, record })
        .map_err(|e| record.failed(path, e))
}

struct Seq<'p, 'r> {
    items: std::vec::IntoIter<Value>,
    index: usize,
    path: &'p Path<'p>,
    record: &'r Record,
}

impl<'de> de::SeqAccess<'de> for Seq<'_, '_> {
    type Error = Error;

    fn next_element_seed<T: DeserializeSeed<'de>>(&mut self, seed: T) -> Result<Option<T::Value>, Error> {
        let Some(value) = self.items.next() else {
            return Ok(None);
        };
        let path = self.path.child(Step::Index(self.index));
        self.index += 1;
        seeded(seed, value, &path, self.record).map(Some)
    }

    fn size_hint(&self) -> Option<usize> {
        match self.items.size_hint() {
            (lower, Some(upper)) if lower == upper => Some(upper),
            _ => None,
        }
    }
}

struct Entries<'p, 'r> {
    entries: serde_json::map::IntoIter,
    /// The value of the key just read, with the key.
    value: Option<(String, Value)>,
    path: &'p Path<'p>,
    record: &'r Record,
}

impl<'de> de::MapAccess<'de> for Entries<'_, '_> {
    type Error = Error;

    fn next_key_seed<K: DeserializeSeed<'de>>(&mut self, seed: K) -> Result<Option<K::Value>, Error> {
        let Some((key, value)) = self.entries.next() else {
            return Ok(None);
        };
        let read = map_key(key.clone(), seed);
        let path = self.path.child(Step::Key(key));
        let read = read.map_err(|e| self.record.failed(&path, e))?;
        let Step::Key(key) = path.step else {
            unreachable!("the step was made a key just above")
        };
        self.value = Some((key, value));
        Ok(Some(read))
    }

    fn next_value_seed<V: DeserializeSeed<'de>>(&mut self, seed: V) -> Result<V::Value, Error> {
        match self.value.take() {
            Some((key, value)) => seeded(seed, value, &self.path.child(Step::Key(key)), self.record),
            None => Err(self.record.failed(self.path, de::Error::custom("value is missing"))),
        }
    }

    fn size_hint(&self) -> Option<usize> {
        match self.entries.size_hint() {
            (lower, Some(upper)) if lower == upper => Some(upper),
            _ => None,
        }
    }
}

/// A map key read as serde_json reads the keys of a `Value`'s map (its
/// `MapKeyDeserializer`, which is not public): the text, except that
/// numbers and booleans are read out of it when the type wants one.
fn map_key<'de, K: DeserializeSeed<'de>>(key: String, seed: K) -> Result<K::Value, Error> {
    seed.deserialize(Key(key))
}

struct Key(String);

/// Which number a key is read as.
#[derive(Clone, Copy)]
enum Number {
    I8,
    I16,
    I32,
    I64,
    I128,
    U8,
    U16,
    U32,
    U64,
    U128,
    F32,
    F64,
}

impl Key {
    /// A number out of the key, by serde_json's own key deserializer
    /// (through a one-entry map: its numbers and errors are not ours to
    /// copy). Maps with number keys are rare; the generic code is only
    /// made for them.
    fn number<'de, V: Visitor<'de>>(self, visitor: V, number: Number) -> Result<V::Value, Error> {
        struct Entry<V>(V, Number);

        impl<'de, V: Visitor<'de>> Visitor<'de> for Entry<V> {
            type Value = V::Value;

            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                self.0.expecting(f)
            }

            fn visit_map<A: de::MapAccess<'de>>(self, mut map: A) -> Result<V::Value, A::Error> {
                match map.next_key_seed(self)? {
                    Some(read) => Ok(read),
                    None => Err(de::Error::custom("value is missing")),
                }
            }
        }

        impl<'de, V: Visitor<'de>> DeserializeSeed<'de> for Entry<V> {
            type Value = V::Value;

            fn deserialize<D: de::Deserializer<'de>>(self, d: D) -> Result<V::Value, D::Error> {
                let Entry(visitor, number) = self;
                match number {
                    Number::I8 => d.deserialize_i8(visitor),
                    Number::I16 => d.deserialize_i16(visitor),
                    Number::I32 => d.deserialize_i32(visitor),
                    Number::I64 => d.deserialize_i64(visitor),
                    Number::I128 => d.deserialize_i128(visitor),
                    Number::U8 => d.deserialize_u8(visitor),
                    Number::U16 => d.deserialize_u16(visitor),
                    Number::U32 => d.deserialize_u32(visitor),
                    Number::U64 => d.deserialize_u64(visitor),
                    Number::U128 => d.deserialize_u128(visitor),
                    Number::F32 => d.deserialize_f32(visitor),
                    Number::F64 => d.deserialize_f64(visitor),
                }
            }
        }

        let mut map = Map::new();
        map.insert(self.0, Value::Null);
        de::Deserializer::deserialize_any(map, Entry(visitor, number))
    }
}

macro_rules! number_key {
    ($($method:ident $number:ident)*) => {
        $(
            fn $method<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
                self.number(visitor, Number::$number)
            }
        )*
    };
}

impl<'de> de::Deserializer<'de> for Key {
    type Error = Error;

    fn deserialize_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        visitor.visit_string(self.0)
    }

    number_key! {
        deserialize_i8 I8 deserialize_i16 I16 deserialize_i32 I32 deserialize_i64 I64 deserialize_i128 I128
        deserialize_u8 U8 deserialize_u16 U16 deserialize_u32 U32 deserialize_u64 U64 deserialize_u128 U128
        deserialize_f32 F32 deserialize_f64 F64
    }

    fn deserialize_bool<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        match self.0.as_str() {
            "true" => visitor.visit_bool(true),
            "false" => visitor.visit_bool(false),
            other => Err(de::Error::invalid_type(Unexpected::Str(other), &visitor)),
        }
    }

    fn deserialize_option<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        // Map keys cannot be null.
        visitor.visit_some(self)
    }

    fn deserialize_newtype_struct<V: Visitor<'de>>(self, _name: &'static str, visitor: V) -> Result<V::Value, Error> {
        visitor.visit_newtype_struct(self)
    }

    fn deserialize_enum<V: Visitor<'de>>(
        self,
        name: &'static str,
        variants: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, Error> {
        IntoDeserializer::<Error>::into_deserializer(self.0).deserialize_enum(name, variants, visitor)
    }

    serde::forward_to_deserialize_any! {
        char str string bytes byte_buf unit unit_struct seq tuple tuple_struct
        map struct identifier ignored_any
    }
}

/// serde_json's enum access, the variant's content through [`Deserializer`].
struct Enum<'p, 'r> {
    variant: String,
    value: Option<Value>,
    path: &'p Path<'p>,
    record: &'r Record,
}

impl<'de, 'p, 'r> de::EnumAccess<'de> for Enum<'p, 'r> {
    type Error = Error;
    type Variant = Variant<'p, 'r>;

    fn variant_seed<V: DeserializeSeed<'de>>(self, seed: V) -> Result<(V::Value, Variant<'p, 'r>), Error> {
        let Enum {
            variant,
            value,
            path,
            record,
        } = self;
        let name = IntoDeserializer::<Error>::into_deserializer(variant.clone());
        let read = seed.deserialize(name).map_err(|e| record.failed(path, e))?;
        Ok((
            read,
            Variant {
                value,
                variant,
                parent: path,
                record,
            },
        ))
    }
}

struct Variant<'p, 'r> {
    value: Option<Value>,
    variant: String,
    parent: &'p Path<'p>,
    record: &'r Record,
}

impl<'de> de::VariantAccess<'de> for Variant<'_, '_> {
    type Error = Error;

    fn unit_variant(self) -> Result<(), Error> {
        let path = self.parent.child(Step::Variant(self.variant));
        match self.value {
            Some(value) => seeded(std::marker::PhantomData::<()>, value, &path, self.record),
            None => Ok(()),
        }
    }

    fn newtype_variant_seed<T: DeserializeSeed<'de>>(self, seed: T) -> Result<T::Value, Error> {
        let path = self.parent.child(Step::Variant(self.variant));
        match self.value {
            Some(value) => {
                seeded(seed, value, &path.child(Step::Inside), self.record).map_err(|e| self.record.failed(&path, e))
            }
            None => Err(self.record.failed(
                &path,
                de::Error::invalid_type(Unexpected::UnitVariant, &"newtype variant"),
            )),
        }
    }

    fn tuple_variant<V: Visitor<'de>>(self, _len: usize, visitor: V) -> Result<V::Value, Error> {
        let path = self.parent.child(Step::Variant(self.variant));
        let result = match self.value {
            Some(Value::Array(items)) if items.is_empty() => visitor.visit_unit(),
            Some(Value::Array(items)) => visit_array(items, visitor, &path, self.record),
            Some(other) => Err(invalid_type(&other, &"tuple variant")),
            None => Err(de::Error::invalid_type(Unexpected::UnitVariant, &"tuple variant")),
        };
        result.map_err(|e| self.record.failed(&path, e))
    }

    fn struct_variant<V: Visitor<'de>>(self, _fields: &'static [&'static str], visitor: V) -> Result<V::Value, Error> {
        let path = self.parent.child(Step::Variant(self.variant));
        let result = match self.value {
            Some(Value::Object(map)) => visit_object(map, visitor, &path, self.record),
            Some(other) => Err(invalid_type(&other, &"struct variant")),
            None => Err(de::Error::invalid_type(Unexpected::UnitVariant, &"struct variant")),
        };
        result.map_err(|e| self.record.failed(&path, e))
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

    #[test]
    fn an_array_is_not_a_struct() {
        // serde_json would read [80, null] as a Port; Kubernetes
        // refuses an array where an object belongs, and so do we.
        let err = from_value::<Spec>(json!({"ports": [[80, null]]})).unwrap_err();
        assert_eq!(
            (err.message.as_str(), err.path.as_str()),
            ("invalid type: sequence, expected struct Port", "ports[0]")
        );
        assert!(serde_json::from_value::<Spec>(json!({"ports": [[80, null]]})).is_ok());
    }
}
