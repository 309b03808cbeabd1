//! `kubectl get -o yaml` text: JSON data written as kubectl writes it.
//!
//! kubectl turns an object into JSON and the JSON into YAML with go-yaml
//! (v2, through sigs.k8s.io/yaml), so its output has that emitter's look:
//! mapping keys in its "natural" order (non-letters before letters, runs of
//! digits compared as numbers), sequences inside a mapping not indented,
//! `{}` and `[]` for empty collections, long plain strings folded at the
//! first space past column 80, and strings quoted only when they must be:
//! with double quotes when plain text would read back as something else
//! (`"80"`, `"true"`, `""`, a timestamp), with single quotes when an
//! indicator character makes plain text impossible (`'*'`, `'a: b'`), and
//! as a literal block (`|-`) when they hold line breaks.

use serde_json::Value;
use std::cmp::Ordering;
use std::fmt::Write as _;

/// Past this column a plain string breaks at its next space.
const WIDTH: usize = 80;

/// The YAML text of `value`, ending with a line break.
pub fn to_text(value: &Value) -> String {
    let mut out = String::new();
    match value {
        Value::Object(map) if !map.is_empty() => mapping(&mut out, map, 0),
        Value::Array(items) if !items.is_empty() => sequence(&mut out, items, 0),
        scalar => {
            out.push_str(&inline(scalar, 0, 0));
            out.push('\n');
        }
    }
    out
}

/// A block mapping whose keys start at column `indent`; the first key goes
/// where the text stands (after `- ` in a sequence), the others on lines
/// of their own.
fn mapping(out: &mut String, map: &serde_json::Map<String, Value>, indent: usize) {
    let mut keys: Vec<&String> = map.keys().collect();
    crate::sort::sort_by(&mut keys, |a, b| natural(a, b));
    for (i, name) in keys.into_iter().enumerate() {
        if i > 0 {
            pad(out, indent);
        }
        let key = string(name, indent, 0, true);
        out.push_str(&key);
        out.push(':');
        let column = indent + key.chars().count() + 2;
        match &map[name] {
            Value::Object(inner) if !inner.is_empty() => {
                out.push('\n');
                pad(out, indent + 2);
                mapping(out, inner, indent + 2);
            }
            // go-yaml writes a sequence in a mapping at the key's indent.
            Value::Array(items) if !items.is_empty() => {
                out.push('\n');
                pad(out, indent);
                sequence(out, items, indent);
            }
            scalar => {
                out.push(' ');
                out.push_str(&inline(scalar, indent + 2, column));
                out.push('\n');
            }
        }
    }
}

/// A block sequence whose dashes stand at column `indent`; the first dash
/// goes where the text stands.
fn sequence(out: &mut String, items: &[Value], indent: usize) {
    for (i, item) in items.iter().enumerate() {
        if i > 0 {
            pad(out, indent);
        }
        out.push_str("- ");
        match item {
            Value::Object(inner) if !inner.is_empty() => mapping(out, inner, indent + 2),
            Value::Array(inner) if !inner.is_empty() => sequence(out, inner, indent + 2),
            scalar => {
                out.push_str(&inline(scalar, indent + 2, indent + 2));
                out.push('\n');
            }
        }
    }
}

fn pad(out: &mut String, indent: usize) {
    out.extend(std::iter::repeat_n(' ', indent));
}

/// A scalar or an empty collection on the current line, from `column`;
/// `indent` is where continuation lines start.
fn inline(value: &Value, indent: usize, column: usize) -> String {
    match value {
        Value::Null => "null".into(),
        Value::Bool(b) => b.to_string(),
        Value::Number(n) => n.to_string(),
        Value::String(s) => string(s, indent, column, false),
        Value::Array(_) => "[]".into(),
        Value::Object(_) => "{}".into(),
    }
}

/// A string in the style go-yaml picks for it, written from `column`. A
/// `key` is never folded.
fn string(s: &str, indent: usize, column: usize, key: bool) -> String {
    if !reads_back_as_string(s) {
        return double_quoted(s);
    }
    let shape = Shape::of(s);
    if shape.special {
        return double_quoted(s);
    }
    if shape.breaks {
        if key || shape.trailing_space {
            return double_quoted(s);
        }
        return literal(s, indent);
    }
    if shape.edge_space || shape.indicator {
        return single_quoted(s);
    }
    if key {
        s.to_string()
    } else {
        folded_plain(s, indent, column)
    }
}

/// What makes a string unfit for some styles.
#[derive(Default)]
struct Shape {
    /// A line break anywhere.
    breaks: bool,
    /// A space or break at the start or the end.
    edge_space: bool,
    /// A space at the end.
    trailing_space: bool,
    /// A character YAML would read as syntax where it stands.
    indicator: bool,
    /// A control character, or a space right before a break.
    special: bool,
}

impl Shape {
    fn of(s: &str) -> Self {
        let chars: Vec<char> = s.chars().collect();
        let mut shape = Shape::default();
        if s.starts_with("---") || s.starts_with("...") {
            shape.indicator = true;
        }
        let blank = |c: Option<&char>| c.is_none_or(|c| matches!(c, ' ' | '\t' | '\n' | '\r'));
        for (i, &c) in chars.iter().enumerate() {
            let next_blank = blank(chars.get(i + 1));
            let previous_blank = i == 0 || matches!(chars[i - 1], ' ' | '\t' | '\n' | '\r');
            if i == 0 {
                match c {
                    '#' | ',' | '[' | ']' | '{' | '}' | '&' | '*' | '!' | '|' | '>' | '\'' | '"' | '%' | '@' | '`' => {
                        shape.indicator = true
                    }
                    '?' | ':' | '-' if next_blank => shape.indicator = true,
                    _ => {}
                }
            } else if (c == ':' && next_blank) || (c == '#' && previous_blank) {
                shape.indicator = true;
            }
            // Tabs and carriage returns are not printable to the emitter.
            let printable =
                c == '\n' || c == '\u{85}' || !(c.is_control() || matches!(c, '\u{feff}' | '\u{fffe}' | '\u{ffff}'));
            if !printable {
                shape.special = true;
            }
            if c == '\n' || c == '\r' {
                shape.breaks = true;
                if i > 0 && chars[i - 1] == ' ' {
                    shape.special = true;
                }
            }
            if (c == ' ' || c == '\n') && (i == 0 || i + 1 == chars.len()) {
                shape.edge_space = true;
            }
        }
        shape.trailing_space = s.ends_with(' ');
        if s.is_empty() {
            shape.indicator = true;
        }
        shape
    }
}

/// Whether go-yaml reads `s`, written plain, back as this string (not as
/// null, a boolean, a number, a timestamp or a merge key).
fn reads_back_as_string(s: &str) -> bool {
    const OTHER: &[&str] = &[
        "", "~", "null", "Null", "NULL", "y", "Y", "yes", "Yes", "YES", "n", "N", "no", "No", "NO", "true", "True",
        "TRUE", "false", "False", "FALSE", "on", "On", "ON", "off", "Off", "OFF", ".inf", ".Inf", ".INF", "+.inf",
        "+.Inf", "+.INF", "-.inf", "-.Inf", "-.INF", ".nan", ".NaN", ".NAN", "<<",
    ];
    !(OTHER.contains(&s) || is_number(s) || is_sexagesimal(s) || is_timestamp(s))
}

/// An integer (decimal, `0x`, `0o`, `0b` or a leading-zero octal,
/// underscores allowed) or a float as go-yaml recognises them.
fn is_number(s: &str) -> bool {
    let plain: String = s.chars().filter(|&c| c != '_').collect();
    let unsigned = plain.strip_prefix(['+', '-']).unwrap_or(&plain);
    if unsigned.is_empty() {
        return false;
    }
    let radix = |digits: &str, radix: u32| !digits.is_empty() && digits.chars().all(|c| c.is_digit(radix));
    let integer = match unsigned.get(..2) {
        Some("0x" | "0X") => radix(&unsigned[2..], 16),
        Some("0o" | "0O") => radix(&unsigned[2..], 8),
        Some("0b" | "0B") => radix(&unsigned[2..], 2),
        _ => radix(unsigned, 10),
    };
    integer || is_float(s)
}

/// `[-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?`
fn is_float(s: &str) -> bool {
    let s = s.strip_prefix(['+', '-']).unwrap_or(s);
    let (mantissa, exponent) = match s.find(['e', 'E']) {
        Some(i) => (&s[..i], Some(&s[i + 1..])),
        None => (s, None),
    };
    let digits = |t: &str| !t.is_empty() && t.bytes().all(|b| b.is_ascii_digit());
    let mantissa_ok = match mantissa.split_once('.') {
        Some(("", fraction)) => digits(fraction),
        Some((whole, fraction)) => digits(whole) && (fraction.is_empty() || digits(fraction)),
        None => digits(mantissa),
    };
    let exponent_ok = exponent.is_none_or(|e| digits(e.strip_prefix(['+', '-']).unwrap_or(e)));
    mantissa_ok && exponent_ok
}

/// YAML 1.1's base-60 numbers (`1:30`, `-10:20:30.5`), which go-yaml
/// quotes.
fn is_sexagesimal(s: &str) -> bool {
    let s = s.strip_prefix(['+', '-']).unwrap_or(s);
    let (s, _fraction) = match s.split_once('.') {
        Some((whole, fraction)) if fraction.bytes().all(|b| b.is_ascii_digit() || b == b'_') => (whole, fraction),
        Some(_) => return false,
        None => (s, ""),
    };
    let mut parts = s.split(':');
    let first = parts.next().unwrap_or("");
    let head_ok = first.as_bytes().first().is_some_and(u8::is_ascii_digit)
        && first.bytes().all(|b| b.is_ascii_digit() || b == b'_');
    let mut rest = parts.peekable();
    head_ok
        && rest.peek().is_some()
        && rest.all(|p| match p.as_bytes() {
            [d] => d.is_ascii_digit(),
            [a, b] => (b'0'..=b'5').contains(a) && b.is_ascii_digit(),
            _ => false,
        })
}

/// A date (`2006-1-2`) or a date and time (`T`, `t` or a space between,
/// optional fraction and zone) that go-yaml reads as a timestamp.
fn is_timestamp(s: &str) -> bool {
    let bytes = s.as_bytes();
    if !bytes.first().is_some_and(u8::is_ascii_digit) {
        return false;
    }
    let (date, time) = match s.find(['T', 't', ' ']) {
        Some(i) => (&s[..i], Some(&s[i + 1..])),
        None => (s, None),
    };
    let mut fields = date.split('-');
    let date_ok = matches!(
        (fields.next(), fields.next(), fields.next(), fields.next()),
        (Some(y), Some(m), Some(d), None)
            if y.len() == 4 && y.bytes().all(|b| b.is_ascii_digit())
                && (1..=2).contains(&m.len()) && m.bytes().all(|b| b.is_ascii_digit())
                && (1..=2).contains(&d.len()) && d.bytes().all(|b| b.is_ascii_digit())
    );
    date_ok && time.is_none_or(clock)
}

/// `15:4:5`, then an optional fraction and a zone (`Z` or `±07:00`).
fn clock(time: &str) -> bool {
    let end = time.find(['Z', '+', '-']).unwrap_or(time.len());
    let (clock, zone) = time.split_at(end);
    let (clock, fraction) = clock.split_once('.').unwrap_or((clock, ""));
    let numeric = |t: &str| (1..=2).contains(&t.len()) && t.bytes().all(|b| b.is_ascii_digit());
    let parts: Vec<&str> = clock.split(':').collect();
    let zone_ok = match zone {
        "" | "Z" => true,
        z => {
            let z = &z[1..];
            let (h, m) = z.split_once(':').unwrap_or((z, "00"));
            numeric(h) && m.len() == 2 && m.bytes().all(|b| b.is_ascii_digit())
        }
    };
    parts.len() == 3 && parts.iter().all(|p| numeric(p)) && fraction.bytes().all(|b| b.is_ascii_digit()) && zone_ok
}

fn double_quoted(s: &str) -> String {
    let mut out = String::from("\"");
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\t' => out.push_str("\\t"),
            '\r' => out.push_str("\\r"),
            '\0' => out.push_str("\\0"),
            c if c.is_control() || c == '\u{feff}' => {
                let _ = match u32::from(c) {
                    n if n <= 0xff => write!(out, "\\x{n:02X}"),
                    n => write!(out, "\\u{n:04X}"),
                };
            }
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

fn single_quoted(s: &str) -> String {
    format!("'{}'", s.replace('\'', "''"))
}

/// A plain string written from `column`, broken at a space once the line
/// has passed [`WIDTH`]; continuation lines start at `indent`.
fn folded_plain(s: &str, indent: usize, mut column: usize) -> String {
    if !s.contains(' ') {
        return s.to_string();
    }
    let mut out = String::new();
    let chars: Vec<char> = s.chars().collect();
    for (i, &c) in chars.iter().enumerate() {
        let next_is_space = chars.get(i + 1) == Some(&' ');
        let previous_is_space = i > 0 && chars[i - 1] == ' ';
        if c == ' ' && column > WIDTH && !next_is_space && !previous_is_space {
            out.push('\n');
            out.extend(std::iter::repeat_n(' ', indent));
            column = indent;
            continue;
        }
        out.push(c);
        column += 1;
    }
    out
}

/// A literal block (`|`, `|-` or `|+` as the string's line breaks at its
/// end ask), its lines at `indent`.
fn literal(s: &str, indent: usize) -> String {
    let trailing = s.len() - s.trim_end_matches('\n').len();
    let chomp = match trailing {
        0 => "-",
        1 => "",
        _ => "+",
    };
    let marker = if s.starts_with([' ', '\n']) { "2" } else { "" };
    let mut out = format!("|{marker}{chomp}");
    let body = s.strip_suffix('\n').unwrap_or(s);
    for line in body.split('\n') {
        out.push('\n');
        if !line.is_empty() {
            out.extend(std::iter::repeat_n(' ', indent));
            out.push_str(line);
        }
    }
    out
}

/// go-yaml's order of mapping keys: letters compare as characters, a
/// non-letter sorts before a letter, and runs of digits compare by value.
fn natural(a: &str, b: &str) -> Ordering {
    let (a, b): (Vec<char>, Vec<char>) = (a.chars().collect(), b.chars().collect());
    for i in 0..a.len().min(b.len()) {
        if a[i] == b[i] {
            continue;
        }
        let (a_letter, b_letter) = (a[i].is_alphabetic(), b[i].is_alphabetic());
        if a_letter && b_letter {
            return a[i].cmp(&b[i]);
        }
        if a_letter || b_letter {
            return if b_letter { Ordering::Less } else { Ordering::Greater };
        }
        let number = |s: &[char]| -> (u128, usize) {
            let run = s[i..].iter().take_while(|c| c.is_ascii_digit()).count();
            let value = s[i..i + run].iter().fold(0u128, |n, c| {
                n.saturating_mul(10).saturating_add(u128::from(*c as u8 - b'0'))
            });
            (value, run)
        };
        let ((a_value, a_run), (b_value, b_run)) = (number(&a), number(&b));
        // A run continuing a number that does not start with zero keeps
        // comparing digit by digit, as go-yaml does.
        let leading_digits = a[..i].iter().rev().take_while(|c| c.is_ascii_digit());
        let continues = (a[i] == '0' || b[i] == '0') && leading_digits.clone().any(|c| *c != '0');
        if !continues && a_value != b_value {
            return a_value.cmp(&b_value);
        }
        if !continues && a_run != b_run {
            return a_run.cmp(&b_run);
        }
        return a[i].cmp(&b[i]);
    }
    a.len().cmp(&b.len())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// testdata/yaml-styles.kubectl.yaml is what kubectl v1.37.2 printed
    /// for `kubectl create configmap x --dry-run=client -o yaml` with one
    /// `--from-literal` per entry of testdata/yaml-styles.json's `data`:
    /// strings that need double quotes, single quotes, a literal block or
    /// folding, and keys in go-yaml's order.
    #[test]
    fn strings_and_keys_come_out_as_kubectl_writes_them() {
        let input: Value = serde_json::from_str(include_str!("testdata/yaml-styles.json")).unwrap();
        assert_eq!(to_text(&input), include_str!("testdata/yaml-styles.kubectl.yaml"));
    }

    #[test]
    fn collections_have_go_yamls_layout() {
        let value = json!({
            "metadata": {"labels": {"app": "web"}, "annotations": {}},
            "spec": {"ports": [{"port": 80, "name": "http"}, {"port": 443}], "ipFamilies": ["IPv4"], "selector": null},
            "status": {"loadBalancer": {}},
            "items": [],
        });
        assert_eq!(
            to_text(&value),
            "items: []\nmetadata:\n  annotations: {}\n  labels:\n    app: web\nspec:\n  ipFamilies:\n  - IPv4\n  ports:\n  - name: http\n    port: 80\n  - port: 443\n  selector: null\nstatus:\n  loadBalancer: {}\n"
        );
    }

    #[test]
    fn keys_sort_as_go_yaml_sorts_them() {
        let mut keys = vec![
            "b",
            "a10",
            "a9",
            "a",
            "A",
            "_x",
            "kubernetes.io/service-name",
            "app.kubernetes.io/name",
            "app",
        ];
        keys.sort_by(|a, b| natural(a, b));
        assert_eq!(
            keys,
            [
                "_x",
                "A",
                "a",
                "a9",
                "a10",
                "app",
                "app.kubernetes.io/name",
                "b",
                "kubernetes.io/service-name"
            ]
        );
    }

    #[test]
    fn long_plain_strings_fold_past_column_80() {
        let long = "word ".repeat(20);
        let text = to_text(&json!({"metadata": {"annotations": {"note": long.trim_end()}}}));
        let lines: Vec<&str> = text.lines().collect();
        assert!(lines.len() > 3, "{text}");
        assert!(lines[3].starts_with("      word"), "{text}");
    }
}
