//! One YAML or JSON document into a `serde_json::Value`, strictly: a key
//! given twice in a mapping is refused (as kube-apiserver's strict
//! decoding does) and the number of nodes is bounded, so aliases cannot
//! expand a small document into a huge value ("billion laughs").

use super::limits::MAX_ALIAS_EXPANSION;
use serde::de::{self, DeserializeSeed, Deserializer, MapAccess, SeqAccess, Visitor};
use serde::Serialize;
use serde_json::{Map, Number, Value};
use std::cell::RefCell;
use std::fmt;

/// What went wrong while building the value, beyond the parser's errors.
#[derive(Debug, Default)]
pub struct Problem {
    /// A key given twice, with the path to the mapping it is in
    /// (innermost step first).
    pub duplicate: Option<(String, Vec<Segment>)>,
    /// The node budget ran out.
    pub budget_exhausted: bool,
    /// The `kind` and `apiVersion` of the innermost object the duplicate
    /// key is in, when they came before it.
    pub kind: Option<(String, String)>,
    /// What is left of the node budget.
    pub remaining: usize,
}

/// One step of a path into a value.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Segment {
    /// A mapping key.
    Key(String),
    /// A sequence index.
    Index(usize),
}

/// Decodes one document with at most `budget` nodes; on error the
/// [`Problem`] says whether a duplicate key or the budget was the cause.
pub fn decode<'de, D: Deserializer<'de>>(document: D, budget: usize) -> (Result<Value, D::Error>, Problem) {
    let state = RefCell::new(State {
        budget,
        problem: Problem::default(),
    });
    let result = Seed { state: &state }.deserialize(document);
    let State { budget, mut problem } = state.into_inner();
    problem.remaining = budget;
    (result, problem)
}

/// The whole text as one YAML or JSON document (a behaviour vector), read
/// as a manifest's documents are: a key given twice is refused, and
/// aliases may not expand it beyond twice its length plus
/// [`MAX_ALIAS_EXPANSION`] nodes. Empty text is `null`. The error is the
/// YAML parser's message, with its line and column.
pub fn decode_text(text: &str) -> Result<Value, String> {
    let budget = text.len().saturating_mul(2).saturating_add(MAX_ALIAS_EXPANSION);
    let mut documents = serde_yaml_ng::Deserializer::from_str(text);
    let Some(document) = documents.next() else {
        return Ok(Value::Null);
    };
    let value = decode(document, budget).0.map_err(|e| e.to_string())?;
    match documents.next() {
        None => Ok(value),
        Some(_) => Err("more than one YAML document where one is expected".to_string()),
    }
}

/// `serde_json::to_value(data)`, through JSON text: the same value (a
/// value's maps are sorted by key either way), with the type's `Serialize`
/// code made once, for the JSON writer, rather than once for it and once
/// for the value serializer. Data that does not serialise (never the
/// core's: string keys, no failing serialisers) becomes `null`, and so does
/// an integer beyond 64 bits, which `serde_json::to_value` refuses too.
///
/// The text is read back by `read_json`, not by serde_json's parser,
/// which may read a float with 17 significant digits one unit in the last
/// place off (its exact mode, `float_roundtrip`, adds 9 KB gzip to the
/// browser module); Rust's own float parsing is exact.
pub fn to_value<T: Serialize + ?Sized>(data: &T) -> Value {
    serde_json::to_string(data)
        .ok()
        .and_then(|text| read_json(&text))
        .unwrap_or(Value::Null)
}

/// Reads JSON text as serde_json writes it (no whitespace; strings with
/// serde_json's escapes; integers within 64 bits; floats with a `.` or an
/// exponent), or `None`.
fn read_json(text: &str) -> Option<Value> {
    let mut reader = JsonReader { text, at: 0 };
    let value = reader.value()?;
    (reader.at == text.len()).then_some(value)
}

struct JsonReader<'t> {
    text: &'t str,
    at: usize,
}

impl JsonReader<'_> {
    fn peek(&self) -> Option<u8> {
        self.text.as_bytes().get(self.at).copied()
    }

    fn eat(&mut self, byte: u8) -> bool {
        let found = self.peek() == Some(byte);
        self.at += usize::from(found);
        found
    }

    fn word(&mut self, word: &str, value: Value) -> Option<Value> {
        self.text[self.at..].starts_with(word).then(|| {
            self.at += word.len();
            value
        })
    }

    fn value(&mut self) -> Option<Value> {
        match self.peek()? {
            b'n' => self.word("null", Value::Null),
            b't' => self.word("true", Value::Bool(true)),
            b'f' => self.word("false", Value::Bool(false)),
            b'"' => self.string().map(Value::String),
            b'[' => {
                self.at += 1;
                let mut items = Vec::new();
                if !self.eat(b']') {
                    loop {
                        items.push(self.value()?);
                        if self.eat(b']') {
                            break;
                        }
                        self.eat(b',').then_some(())?;
                    }
                }
                Some(Value::Array(items))
            }
            b'{' => {
                self.at += 1;
                let mut map = Map::new();
                if !self.eat(b'}') {
                    loop {
                        let key = self.string()?;
                        self.eat(b':').then_some(())?;
                        map.insert(key, self.value()?);
                        if self.eat(b'}') {
                            break;
                        }
                        self.eat(b',').then_some(())?;
                    }
                }
                Some(Value::Object(map))
            }
            _ => self.number(),
        }
    }

    fn number(&mut self) -> Option<Value> {
        let start = self.at;
        while matches!(self.peek(), Some(b'0'..=b'9' | b'-' | b'+' | b'.' | b'e' | b'E')) {
            self.at += 1;
        }
        let token = &self.text[start..self.at];
        if token.contains(['.', 'e', 'E']) {
            Number::from_f64(token.parse().ok()?).map(Value::Number)
        } else if token.starts_with('-') {
            token.parse::<i64>().ok().map(Value::from)
        } else {
            token.parse::<u64>().ok().map(Value::from)
        }
    }

    fn string(&mut self) -> Option<String> {
        self.eat(b'"').then_some(())?;
        let mut out = String::new();
        loop {
            let rest = &self.text[self.at..];
            let end = rest.find(['"', '\\'])?;
            out.push_str(&rest[..end]);
            self.at += end + 1;
            if rest.as_bytes()[end] == b'"' {
                return Some(out);
            }
            let escaped = self.peek()?;
            self.at += 1;
            out.push(match escaped {
                b'"' => '"',
                b'\\' => '\\',
                b'/' => '/',
                b'b' => '\u{8}',
                b'f' => '\u{c}',
                b'n' => '\n',
                b'r' => '\r',
                b't' => '\t',
                b'u' => {
                    let code = u32::from_str_radix(self.text.get(self.at..self.at + 4)?, 16).ok()?;
                    self.at += 4;
                    char::from_u32(code)?
                }
                _ => return None,
            });
        }
    }
}

struct State {
    budget: usize,
    problem: Problem,
}

#[derive(Clone, Copy)]
struct Seed<'s> {
    state: &'s RefCell<State>,
}

impl Seed<'_> {
    fn spend<E: de::Error>(&self) -> Result<(), E> {
        let mut state = self.state.borrow_mut();
        if state.budget == 0 {
            state.problem.budget_exhausted = true;
            return Err(E::custom("too many nodes"));
        }
        state.budget -= 1;
        Ok(())
    }

    /// Records the kind and version of an object an error passes through.
    fn on_object(&self, object: &Map<String, Value>) {
        let mut state = self.state.borrow_mut();
        if state.problem.duplicate.is_none() || state.problem.kind.is_some() {
            return;
        }
        if let (Some(Value::String(kind)), Some(Value::String(version))) =
            (object.get("kind"), object.get("apiVersion"))
        {
            state.problem.kind = Some((kind.clone(), version.clone()));
        }
    }

    /// Records the step taken when an error passes up through it.
    fn on_path(&self, segment: Segment) {
        if let Some((_, path)) = &mut self.state.borrow_mut().problem.duplicate {
            path.push(segment);
        }
    }
}

impl<'de> DeserializeSeed<'de> for Seed<'_> {
    type Value = Value;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<Value, D::Error> {
        self.spend()?;
        deserializer.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Seed<'_> {
    type Value = Value;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("any valid YAML or JSON value")
    }

    fn visit_bool<E>(self, v: bool) -> Result<Value, E> {
        Ok(Value::Bool(v))
    }

    fn visit_i64<E>(self, v: i64) -> Result<Value, E> {
        Ok(Value::Number(v.into()))
    }

    fn visit_u64<E>(self, v: u64) -> Result<Value, E> {
        Ok(Value::Number(v.into()))
    }

    fn visit_f64<E>(self, v: f64) -> Result<Value, E> {
        Ok(Number::from_f64(v).map_or(Value::Null, Value::Number))
    }

    fn visit_str<E>(self, v: &str) -> Result<Value, E> {
        Ok(Value::String(v.to_string()))
    }

    fn visit_string<E>(self, v: String) -> Result<Value, E> {
        Ok(Value::String(v))
    }

    fn visit_none<E>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }

    fn visit_unit<E>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }

    fn visit_some<D: Deserializer<'de>>(self, deserializer: D) -> Result<Value, D::Error> {
        deserializer.deserialize_any(self)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Value, A::Error> {
        let mut items = Vec::new();
        loop {
            match seq.next_element_seed(self) {
                Ok(Some(item)) => items.push(item),
                Ok(None) => return Ok(Value::Array(items)),
                Err(e) => {
                    self.on_path(Segment::Index(items.len()));
                    return Err(e);
                }
            }
        }
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Value, A::Error> {
        let mut out = Map::new();
        while let Some(key) = map.next_key_seed(KeySeed(self))? {
            if out.contains_key(&key) {
                // Refused where the parser stands (the value), so that its
                // error carries the value's line, as go-yaml's does.
                self.state.borrow_mut().problem.duplicate = Some((key, Vec::new()));
                self.on_object(&out);
                return map.next_value_seed(Refuse).map(|()| Value::Null);
            }
            match map.next_value_seed(self) {
                Ok(value) => {
                    out.insert(key, value);
                }
                Err(e) => {
                    self.on_path(Segment::Key(key));
                    self.on_object(&out);
                    return Err(e);
                }
            }
        }
        Ok(Value::Object(out))
    }
}

/// A mapping key, as JSON has it: a string (numbers and booleans written
/// as keys are turned into their text, as sigs.k8s.io/yaml does).
struct KeySeed<'s>(Seed<'s>);

impl<'de> DeserializeSeed<'de> for KeySeed<'_> {
    type Value = String;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<String, D::Error> {
        key_text(self.0.deserialize(deserializer)?)
            .ok_or_else(|| de::Error::custom("a mapping key must be a string, number or boolean"))
    }
}

/// A mapping key's text in JSON: a string as it is; `null`, a number or a
/// boolean as its text, as sigs.k8s.io/yaml has them; nothing for a
/// collection.
pub fn key_text(key: Value) -> Option<String> {
    match key {
        Value::String(s) => Some(s),
        Value::Null => Some("null".to_string()),
        Value::Bool(b) => Some(b.to_string()),
        Value::Number(n) => Some(n.to_string()),
        Value::Array(_) | Value::Object(_) => None,
    }
}

/// Fails on whatever value comes, at its position.
struct Refuse;

impl<'de> DeserializeSeed<'de> for Refuse {
    type Value = ();

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<(), D::Error> {
        deserializer.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Refuse {
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("no value: the key is already defined")
    }

    fn visit_bool<E: de::Error>(self, _: bool) -> Result<(), E> {
        Err(E::custom("duplicate key"))
    }

    fn visit_i64<E: de::Error>(self, _: i64) -> Result<(), E> {
        Err(E::custom("duplicate key"))
    }

    fn visit_u64<E: de::Error>(self, _: u64) -> Result<(), E> {
        Err(E::custom("duplicate key"))
    }

    fn visit_f64<E: de::Error>(self, _: f64) -> Result<(), E> {
        Err(E::custom("duplicate key"))
    }

    fn visit_str<E: de::Error>(self, _: &str) -> Result<(), E> {
        Err(E::custom("duplicate key"))
    }

    fn visit_unit<E: de::Error>(self) -> Result<(), E> {
        Err(E::custom("duplicate key"))
    }

    fn visit_none<E: de::Error>(self) -> Result<(), E> {
        Err(E::custom("duplicate key"))
    }

    fn visit_some<D: Deserializer<'de>>(self, _: D) -> Result<(), D::Error> {
        Err(de::Error::custom("duplicate key"))
    }

    fn visit_seq<A: SeqAccess<'de>>(self, _: A) -> Result<(), A::Error> {
        Err(de::Error::custom("duplicate key"))
    }

    fn visit_map<A: MapAccess<'de>>(self, _: A) -> Result<(), A::Error> {
        Err(de::Error::custom("duplicate key"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_document_as_a_value() {
        let value = decode_text("a: &x {b: 1}\nc: *x\nd: [true, ~, 1.5]\n").unwrap();
        assert_eq!(
            value,
            serde_json::json!({"a": {"b": 1}, "c": {"b": 1}, "d": [true, null, 1.5]})
        );
        assert_eq!(decode_text("").unwrap(), Value::Null);
        assert_eq!(
            decode_text("a: 1\n---\nb: 2\n").unwrap_err(),
            "more than one YAML document where one is expected"
        );
        let duplicate = decode_text("a: 1\na: 2\n").unwrap_err();
        assert_eq!(duplicate, "a: duplicate key at line 2 column 4");
    }

    #[test]
    fn to_value_is_serde_json_s() {
        let floats: Vec<f64> = (0..2000u64)
            .map(|i| f64::from_bits(0x3FF0_0000_0000_0000 ^ i.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 12))
            .chain([0.1, 1e300, -2.5e-308, 5e-324, f64::MAX, 1.2345678901234567])
            .collect();
        let text: String = (0u32..0x250)
            .filter_map(char::from_u32)
            .chain("\"\\/é€😀".chars())
            .collect();
        let value = serde_json::json!({
            "b": floats,
            "a": [1, -2, 0, -0.0, u64::MAX, i64::MIN, i64::MAX, 1e21, 123456789012345680000.0],
            "c": {"z": null, "y": "s", "": [[], {}, true, false], "k\"\u{1}": text},
            "d": text,
        });
        assert_eq!(to_value(&value), serde_json::to_value(&value).unwrap());
        let same = |data: &dyn Erased| assert_eq!(data.ours(), data.theirs());
        trait Erased {
            fn ours(&self) -> Value;
            fn theirs(&self) -> Value;
        }
        impl<T: Serialize> Erased for T {
            fn ours(&self) -> Value {
                to_value(self)
            }
            fn theirs(&self) -> Value {
                serde_json::to_value(self).unwrap_or(Value::Null)
            }
        }
        same(&f64::NAN);
        same(&f64::INFINITY);
        same(&u128::MAX);
        same(&(u128::from(u64::MAX) + 1));
        same(&i128::MIN);
        same(&vec![Some(1.5f32), None]);
        same(&std::collections::BTreeMap::from([(1u8, 'x'), (2, '"')]));
        same(&("a", 'b', [1u16, 2], ()));
    }
}
