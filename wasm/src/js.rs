//! Conversion between JavaScript values and JSON data, without loss.
//!
//! Every value crosses the boundary as JSON data ([`serde_json::Value`]): the
//! core's outputs are serialised exactly as the native code serialises them,
//! then turned into plain JS objects, arrays, strings, numbers and booleans.
//!
//! The one thing JSON text through `JSON.parse` would get wrong is a 64-bit
//! integer above 2^53 (the allocation generator's state in a snapshot, a
//! large seed): a JS number cannot hold it exactly. Such integers become
//! `BigInt`s here, and `BigInt`s are read back as exact integers, so
//! `Cluster.restore(cluster.snapshot())` continues exactly where the
//! snapshot was taken. Every integer that fits stays a plain number.

use js_sys::{Array, BigInt, Object};
use serde_json::{Map, Number, Value};
use wasm_bindgen::{JsCast, JsValue};

/// The largest integer a JS number holds exactly (`Number.MAX_SAFE_INTEGER`).
pub const MAX_SAFE_INTEGER: u64 = (1 << 53) - 1;

/// JSON data to a JS value: objects, arrays, strings, booleans, `null`,
/// numbers; integers beyond ±(2^53 - 1) as `BigInt`.
pub fn to_js(value: &Value) -> JsValue {
    match value {
        Value::Null => JsValue::NULL,
        Value::Bool(b) => JsValue::from_bool(*b),
        Value::Number(n) => number_to_js(n),
        Value::String(s) => JsValue::from_str(s),
        Value::Array(items) => {
            let array = Array::new();
            for item in items {
                array.push(&to_js(item));
            }
            array.into()
        }
        Value::Object(map) => {
            let entries = Array::new();
            for (key, item) in map {
                entries.push(&Array::of2(&JsValue::from_str(key), &to_js(item)).into());
            }
            // `Object.fromEntries` defines own properties (a key such as
            // `__proto__` stays data, as with `JSON.parse`). It only throws
            // for entries that are not [key, value] pairs, and these are.
            Object::from_entries(&entries).map_or(JsValue::NULL, Into::into)
        }
    }
}

fn number_to_js(n: &Number) -> JsValue {
    if let Some(u) = n.as_u64() {
        if u <= MAX_SAFE_INTEGER {
            JsValue::from_f64(u as f64)
        } else {
            BigInt::from(u).into()
        }
    } else if let Some(i) = n.as_i64() {
        if i.unsigned_abs() <= MAX_SAFE_INTEGER {
            JsValue::from_f64(i as f64)
        } else {
            BigInt::from(i).into()
        }
    } else {
        // Neither u64 nor i64: a float, which a JS number holds as it is.
        JsValue::from_f64(n.as_f64().unwrap_or(f64::NAN))
    }
}

/// A JS value to JSON data, as `JSON.stringify` reads it (object keys whose
/// value is `undefined` are left out; `undefined` elsewhere is `null`),
/// except that a `BigInt` becomes the exact integer and anything JSON cannot
/// hold (a function, a symbol, `NaN`, an infinity) is an error naming where
/// it was found (`$` is the value itself).
pub fn from_js(value: &JsValue) -> Result<Value, String> {
    from_js_at(value, "$")
}

fn from_js_at(value: &JsValue, path: &str) -> Result<Value, String> {
    if value.is_null() || value.is_undefined() {
        return Ok(Value::Null);
    }
    if let Some(b) = value.as_bool() {
        return Ok(Value::Bool(b));
    }
    if let Some(s) = value.as_string() {
        return Ok(Value::String(s));
    }
    if let Some(f) = value.as_f64() {
        return number_from_f64(f).ok_or_else(|| format!("{path}: {f} is not a JSON number"));
    }
    if value.is_bigint() {
        let text = ToString::to_string(value.unchecked_ref::<BigInt>());
        return text
            .parse::<u64>()
            .map(Number::from)
            .or_else(|_| text.parse::<i64>().map(Number::from))
            .map(Value::Number)
            .map_err(|_| format!("{path}: the BigInt {text} does not fit in 64 bits"));
    }
    if Array::is_array(value) {
        let array: &Array = value.unchecked_ref();
        return array
            .iter()
            .enumerate()
            .map(|(i, item)| from_js_at(&item, &format!("{path}[{i}]")))
            .collect::<Result<Vec<_>, _>>()
            .map(Value::Array);
    }
    if value.is_object() && !value.is_function() {
        let mut map = Map::new();
        for entry in Object::entries(value.unchecked_ref()).iter() {
            let pair: &Array = entry.unchecked_ref();
            let key = pair.at(0).as_string().unwrap_or_default();
            let item = pair.at(1);
            if item.is_undefined() {
                continue;
            }
            let item = from_js_at(&item, &format!("{path}.{key}"))?;
            map.insert(key, item);
        }
        return Ok(Value::Object(map));
    }
    Err(format!(
        "{path}: a {} cannot be given as data",
        value.js_typeof().as_string().unwrap_or_default()
    ))
}

/// A JS number as JSON: whole numbers within ±(2^53 - 1) as integers (so
/// they deserialise into integer fields), other finite numbers as floats.
pub fn number_from_f64(f: f64) -> Option<Value> {
    if f.is_finite() && f.fract() == 0.0 && f.abs() <= MAX_SAFE_INTEGER as f64 {
        // In range and whole, so the cast is exact.
        Some(Value::Number(Number::from(f as i64)))
    } else {
        Number::from_f64(f).map(Value::Number)
    }
}

/// A whole, non-negative number of milliseconds given as a JS number.
pub fn millis(f: f64, what: &str) -> Result<u64, String> {
    match number_from_f64(f).as_ref().and_then(Value::as_u64) {
        Some(ms) => Ok(ms),
        None => Err(format!(
            "{what} must be a whole number of milliseconds between 0 and {MAX_SAFE_INTEGER}, got {f}"
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn whole_numbers_become_integers() {
        assert_eq!(number_from_f64(3.0), Some(Value::from(3)));
        assert_eq!(number_from_f64(-3.0), Some(Value::from(-3)));
        assert_eq!(number_from_f64(0.5), Some(Value::from(0.5)));
        assert_eq!(number_from_f64(f64::NAN), None);
        assert_eq!(number_from_f64(f64::INFINITY), None);
        assert_eq!(
            number_from_f64(MAX_SAFE_INTEGER as f64),
            Some(Value::from(MAX_SAFE_INTEGER))
        );
        assert!(number_from_f64(2f64.powi(60)).is_some_and(|v| v.is_f64()));
    }

    #[test]
    fn milliseconds_are_whole_and_not_negative() {
        assert_eq!(millis(1500.0, "ms"), Ok(1500));
        assert_eq!(millis(0.0, "ms"), Ok(0));
        assert!(millis(-1.0, "ms").is_err());
        assert!(millis(1.5, "ms").is_err());
        assert_eq!(
            millis(f64::NAN, "advance(ms)"),
            Err("advance(ms) must be a whole number of milliseconds between 0 and 9007199254740991, got NaN".into())
        );
    }
}
