//! The YAML most manifests are written in, read straight into JSON values
//! without libyaml: block mappings and sequences, flow collections on one
//! line, plain and quoted scalars on one line, comments, and `---` between
//! documents. That is what kubectl, Helm and generators write, and what
//! the agent's manifest folders hold.
//!
//! It is a fast path only. For anything else (anchors, aliases, tags,
//! block or multi-line scalars, directives, `...`, tabs, carriage returns,
//! non-ASCII text, a key given twice, integers beyond 64 bits, or any
//! error) it declines, and [`super::manifest`] reads the whole text through
//! serde_yaml_ng and libyaml instead, so errors stay theirs. It also
//! declines a text that could break a limit of [`super::limits`] (a
//! document larger than [`MAX_DOCUMENT_BYTES`], collections nested deeper
//! than [`MAX_DEPTH`]), so a text it reads passes the pre-scan
//! ([`super::scan`]) and need not be scanned.
//! Where it does not decline it gives the values the full path gives, with
//! plain scalars resolved as serde_yaml_ng resolves them; a differential
//! test below holds it to that on generated and mutated texts.

use super::limits::{MAX_DEPTH, MAX_DOCUMENT_BYTES};
use super::value::key_text;
use serde_json::{Map, Number, Value};
use std::num::ParseIntError;

/// The text is outside this reader's subset: read it the full way.
#[derive(Debug, PartialEq, Eq)]
pub struct Decline;

type Read<T> = Result<T, Decline>;

/// The longest plain or quoted key read here; libyaml refuses simple keys
/// longer than 1,024 characters.
const MAX_KEY_BYTES: usize = 1_000;

/// The documents of one text, read one at a time.
pub struct Documents<'t> {
    text: &'t str,
    bytes: &'t [u8],
    at: usize,
    /// Documents started so far: libyaml's numbering of the current one.
    started: usize,
    /// Where the current document began (its `---` line, or the text's
    /// start for the first).
    document_start: usize,
    /// Collections open where the reader stands.
    depth: usize,
    /// Nodes the rest of the text may have, as [`super::value::decode`]
    /// counts them (every collection, key and scalar).
    budget: usize,
}

/// What the next line that is not blank or a comment holds.
enum Line {
    /// Content indented this many spaces; the reader stands at its start.
    Content(usize),
    /// A `---` line; the reader stands at its start.
    Marker,
    /// The end of the text.
    End,
}

/// Where a plain scalar in block context stops.
enum Stop {
    /// At `:` and a blank: the scalar is a mapping key.
    Colon(usize),
    /// At the end of the line or a comment.
    Line,
}

impl<'t> Documents<'t> {
    /// A reader of `text` with `budget` nodes; declines at once a text
    /// with a byte outside printable ASCII and line feeds.
    pub fn new(text: &'t str, budget: usize) -> Read<Self> {
        let bytes = text.as_bytes();
        // In blocks without an early exit, which the compiler vectorises.
        let outside = |block: &[u8]| {
            block
                .iter()
                .fold(false, |out, &b| out | ((b < b' ' && b != b'\n') | (b >= 0x7f)))
        };
        if bytes.chunks(64).any(outside) {
            return Err(Decline);
        }
        Ok(Self {
            text,
            bytes,
            at: 0,
            started: 0,
            document_start: 0,
            depth: 0,
            budget,
        })
    }

    /// The 1-based number of the document last read.
    pub fn number(&self) -> usize {
        self.started
    }

    /// The next document's value (`null` for an empty one), or `None`
    /// after the last.
    pub fn next_document(&mut self) -> Read<Option<Value>> {
        // From the document's `---` to the next, comments and all: never
        // fewer bytes than the pre-scan counts.
        self.document_start = self.at;
        match self.next_line()? {
            Line::End => return Ok(None),
            Line::Marker => self.skip_line(),
            Line::Content(_) if self.started == 0 => {}
            Line::Content(_) => return Err(Decline),
        }
        self.started += 1;
        let value = match self.next_line()? {
            Line::Content(indent) => {
                self.at += indent;
                let value = self.block_node(indent)?;
                if let Line::Content(_) = self.next_line()? {
                    return Err(Decline);
                }
                value
            }
            Line::Marker | Line::End => self.scalar(Value::Null)?,
        };
        self.within_size()?;
        Ok(Some(value))
    }

    fn byte(&self, at: usize) -> Option<u8> {
        self.bytes.get(at).copied()
    }

    /// Whether the byte at `at` ends a plain word: a space, a line feed or
    /// the end of the text.
    fn blank(&self, at: usize) -> bool {
        matches!(self.byte(at), None | Some(b' ' | b'\n'))
    }

    /// Declines once the document has more bytes than a document may.
    fn within_size(&self) -> Read<()> {
        if self.at - self.document_start > MAX_DOCUMENT_BYTES {
            return Err(Decline);
        }
        Ok(())
    }

    /// Counts a node. The document's size is checked at every node too,
    /// so that no more than a document's worth of values is built before
    /// a text over the limit is declined.
    fn spend(&mut self) -> Read<()> {
        self.within_size()?;
        self.budget = self.budget.checked_sub(1).ok_or(Decline)?;
        Ok(())
    }

    /// Opens a collection: one more node, one level deeper.
    fn open(&mut self) -> Read<()> {
        self.depth += 1;
        if self.depth > MAX_DEPTH {
            return Err(Decline);
        }
        self.spend()
    }

    /// Closes the collection last opened.
    fn close(&mut self, value: Value) -> Read<Value> {
        self.depth -= 1;
        Ok(value)
    }

    fn scalar(&mut self, value: Value) -> Read<Value> {
        self.spend()?;
        Ok(value)
    }

    fn skip_spaces(&mut self) -> usize {
        let start = self.at;
        while self.byte(self.at) == Some(b' ') {
            self.at += 1;
        }
        self.at - start
    }

    /// Moves past the end of the current line.
    fn skip_line(&mut self) {
        self.at = match self.bytes[self.at..].iter().position(|&b| b == b'\n') {
            Some(newline) => self.at + newline + 1,
            None => self.bytes.len(),
        };
    }

    /// Finishes a line after a value: spaces, then a comment (after at
    /// least one space) or the line's end.
    fn end_line(&mut self) -> Read<()> {
        let spaces = self.skip_spaces();
        match self.byte(self.at) {
            None | Some(b'\n') => {}
            Some(b'#') if spaces > 0 => {}
            Some(_) => return Err(Decline),
        }
        self.skip_line();
        Ok(())
    }

    /// Skips blank and comment lines; the reader must stand at a line's
    /// start. Declines a `...`, a directive or a `---` with more on its line.
    fn next_line(&mut self) -> Read<Line> {
        loop {
            let start = self.at;
            self.skip_spaces();
            match self.byte(self.at) {
                None if start == self.at => return Ok(Line::End),
                None | Some(b'\n' | b'#') => {
                    self.skip_line();
                    continue;
                }
                Some(_) => {}
            }
            let indent = self.at - start;
            self.at = start;
            let rest = &self.bytes[start..];
            if indent == 0 && (rest.starts_with(b"---") || rest.starts_with(b"...") || rest.starts_with(b"%")) {
                let mut after = start + 3;
                while self.byte(after) == Some(b' ') {
                    after += 1;
                }
                let clean = matches!(self.byte(after), None | Some(b'\n'))
                    || (self.byte(after) == Some(b'#') && after > start + 3);
                if rest.starts_with(b"---") && clean {
                    return Ok(Line::Marker);
                }
                return Err(Decline);
            }
            return Ok(Line::Content(indent));
        }
    }

    /// Whether a block sequence entry (`-` and a blank) starts at `at`.
    fn is_entry(&self, at: usize) -> bool {
        self.byte(at) == Some(b'-') && self.blank(at + 1)
    }

    /// Whether a plain scalar may start at `at`: not an indicator, except
    /// `-` before a word.
    fn plain_start(&self, at: usize) -> bool {
        match self.byte(at) {
            None | Some(b' ' | b'\n') => false,
            Some(b'-') => !matches!(
                self.byte(at + 1),
                None | Some(b' ' | b'\n' | b',' | b'[' | b']' | b'{' | b'}' | b'#')
            ),
            Some(c) => !b"?:,[]{}#&*!|>'\"%@`".contains(&c),
        }
    }

    /// A block mapping or sequence whose first line's content is at
    /// column `indent`, where the reader stands.
    fn block_node(&mut self, indent: usize) -> Read<Value> {
        if self.is_entry(self.at) {
            self.block_sequence(indent, false)
        } else {
            self.block_mapping(indent)
        }
    }

    /// A block mapping at column `indent`, its first key where the reader
    /// stands.
    fn block_mapping(&mut self, indent: usize) -> Read<Value> {
        self.open()?;
        let mut map = Map::new();
        loop {
            let key = self.block_key()?;
            let value = self.block_value(indent)?;
            if map.insert(key, value).is_some() {
                return Err(Decline);
            }
            match self.next_line()? {
                Line::Content(i) if i == indent => {
                    self.at += i;
                    if self.is_entry(self.at) {
                        return Err(Decline);
                    }
                }
                Line::Content(i) if i > indent => return Err(Decline),
                _ => return self.close(Value::Object(map)),
            }
        }
    }

    /// A block sequence at column `indent`, its first `-` where the
    /// reader stands. A compact one (a mapping value at the mapping's own
    /// indentation) ends at a line of that indentation without `-`.
    fn block_sequence(&mut self, indent: usize, compact: bool) -> Read<Value> {
        self.open()?;
        let mut items = Vec::new();
        loop {
            self.at += 1;
            items.push(self.entry(indent)?);
            match self.next_line()? {
                Line::Content(i) if i == indent && self.is_entry(self.at + i) => self.at += i,
                Line::Content(i) if i < indent || (i == indent && compact) => return self.close(Value::Array(items)),
                Line::Content(_) => return Err(Decline),
                Line::Marker | Line::End => return self.close(Value::Array(items)),
            }
        }
    }

    /// The node of a sequence entry at column `indent`, after its `-`.
    fn entry(&mut self, indent: usize) -> Read<Value> {
        let Some(spaces) = self.after_indicator() else {
            return self.nested(indent, false);
        };
        let column = indent + 1 + spaces;
        if self.is_entry(self.at) {
            self.block_sequence(column, false)
        } else if self.starts_key() {
            self.block_mapping(column)
        } else {
            self.inline_line()
        }
    }

    /// The value of a key in a block mapping at column `indent`, after
    /// its `:`.
    fn block_value(&mut self, indent: usize) -> Read<Value> {
        match self.after_indicator() {
            None => self.nested(indent, true),
            Some(_) => self.inline_line(),
        }
    }

    /// Skips the spaces after a `-` or a key's `:`. When the line ends
    /// there (or a comment follows), moves to the next line and returns
    /// `None`; else returns how many spaces there were.
    fn after_indicator(&mut self) -> Option<usize> {
        let spaces = self.skip_spaces();
        match self.byte(self.at) {
            // Not a comment without a space before it: left to the value's
            // reader, which declines it.
            Some(b'#') if spaces == 0 => Some(0),
            None | Some(b'\n' | b'#') => {
                self.skip_line();
                None
            }
            Some(_) => Some(spaces),
        }
    }

    /// A value on the rest of the line, and the line's end.
    fn inline_line(&mut self) -> Read<Value> {
        let value = self.inline_node()?;
        self.end_line()?;
        Ok(value)
    }

    /// A node on the lines after its key or `-` (in a collection at
    /// column `indent`): a collection indented further, a compact
    /// sequence where allowed, or else `null`.
    fn nested(&mut self, indent: usize, compact: bool) -> Read<Value> {
        match self.next_line()? {
            Line::Content(i) if i > indent => {
                self.at += i;
                self.block_node(i)
            }
            Line::Content(i) if i == indent && compact && self.is_entry(self.at + i) => {
                self.at += i;
                self.block_sequence(i, true)
            }
            _ => self.scalar(Value::Null),
        }
    }

    /// Whether a mapping key (a scalar, then `:` and a blank) starts where
    /// the reader stands.
    fn starts_key(&mut self) -> bool {
        let start = self.at;
        let key = self.key();
        self.at = start;
        key.is_ok()
    }

    /// A block mapping's key and its `:`, counted as a node.
    fn block_key(&mut self) -> Read<String> {
        let key = self.key()?;
        self.spend()?;
        Ok(key)
    }

    /// Reads a block mapping's key and its `:`.
    fn key(&mut self) -> Read<String> {
        let start = self.at;
        let key = match self.byte(start) {
            Some(b'\'' | b'"') => {
                let key = self.quoted()?;
                self.skip_spaces();
                if self.byte(self.at) != Some(b':') || !self.blank(self.at + 1) {
                    return Err(Decline);
                }
                key
            }
            _ if self.plain_start(start) => match self.plain_block(start) {
                (end, Stop::Colon(colon)) => {
                    self.at = colon;
                    key_text(plain_scalar(&self.text[start..end])?).ok_or(Decline)?
                }
                (_, Stop::Line) => return Err(Decline),
            },
            _ => return Err(Decline),
        };
        if self.at - start > MAX_KEY_BYTES {
            return Err(Decline);
        }
        self.at += 1;
        Ok(key)
    }

    /// Scans a plain scalar in block context from `start`: its end (with
    /// trailing spaces cut) and what stopped it.
    fn plain_block(&self, start: usize) -> (usize, Stop) {
        let mut at = start;
        let stop = loop {
            match self.byte(at) {
                None | Some(b'\n') => break Stop::Line,
                Some(b':') if self.blank(at + 1) => break Stop::Colon(at),
                Some(b'#') if at > start && self.byte(at - 1) == Some(b' ') => break Stop::Line,
                Some(_) => at += 1,
            }
        };
        while at > start && self.byte(at - 1) == Some(b' ') {
            at -= 1;
        }
        (at, stop)
    }

    /// A value on the line of its key or `-`: a flow collection, a quoted
    /// scalar or a plain one. The reader stops after it.
    fn inline_node(&mut self) -> Read<Value> {
        let start = self.at;
        match self.byte(start) {
            Some(b'[' | b'{') => self.flow_node(),
            Some(b'\'' | b'"') => {
                let text = self.quoted()?;
                self.scalar(Value::String(text))
            }
            _ if self.plain_start(start) => match self.plain_block(start) {
                (end, Stop::Line) => {
                    self.at = end;
                    let value = plain_scalar(&self.text[start..end])?;
                    self.scalar(value)
                }
                (_, Stop::Colon(_)) => Err(Decline),
            },
            _ => Err(Decline),
        }
    }

    /// A node in a flow collection, which must end on its line.
    fn flow_node(&mut self) -> Read<Value> {
        let start = self.at;
        match self.byte(start) {
            Some(b'[') => self.flow_sequence(),
            Some(b'{') => self.flow_mapping(),
            Some(b'\'' | b'"') => {
                let text = self.quoted()?;
                self.scalar(Value::String(text))
            }
            _ if self.plain_start(start) => {
                let end = self.plain_flow(start)?;
                self.at = end;
                let value = plain_scalar(&self.text[start..end])?;
                self.scalar(value)
            }
            _ => Err(Decline),
        }
    }

    /// Scans a plain scalar in a flow collection from `start` to its end
    /// (trailing spaces cut).
    fn plain_flow(&self, start: usize) -> Read<usize> {
        let mut at = start;
        loop {
            match self.byte(at) {
                None | Some(b'\n' | b',' | b'[' | b']' | b'{' | b'}') => break,
                Some(b':') if self.blank(at + 1) => break,
                // libyaml refuses these; a `:` before anything else goes on.
                Some(b':') if matches!(self.byte(at + 1), Some(b',' | b'?' | b'[' | b']' | b'{' | b'}')) => {
                    return Err(Decline)
                }
                Some(b'#') if at > start && self.byte(at - 1) == Some(b' ') => break,
                Some(_) => at += 1,
            }
        }
        while at > start && self.byte(at - 1) == Some(b' ') {
            at -= 1;
        }
        Ok(at)
    }

    /// After a flow collection's item: `,` and another, or the closing
    /// byte. Returns whether the collection goes on.
    fn flow_next(&mut self, close: u8) -> Read<bool> {
        self.skip_spaces();
        match self.byte(self.at) {
            Some(b',') => {
                self.at += 1;
                self.skip_spaces();
                // A trailing comma before the closing byte is left to libyaml.
                match self.byte(self.at) {
                    Some(b) if b == close => Err(Decline),
                    _ => Ok(true),
                }
            }
            Some(b) if b == close => {
                self.at += 1;
                Ok(false)
            }
            _ => Err(Decline),
        }
    }

    /// Opens a flow collection at its opening byte; returns whether it
    /// is empty, closed at once by `close`.
    fn flow_open(&mut self, close: u8) -> Read<bool> {
        self.open()?;
        self.at += 1;
        self.skip_spaces();
        let empty = self.byte(self.at) == Some(close);
        self.at += usize::from(empty);
        Ok(empty)
    }

    fn flow_sequence(&mut self) -> Read<Value> {
        let mut items = Vec::new();
        if self.flow_open(b']')? {
            return self.close(Value::Array(items));
        }
        loop {
            items.push(self.flow_node()?);
            if !self.flow_next(b']')? {
                return self.close(Value::Array(items));
            }
        }
    }

    fn flow_mapping(&mut self) -> Read<Value> {
        let mut map = Map::new();
        if self.flow_open(b'}')? {
            return self.close(Value::Object(map));
        }
        loop {
            let start = self.at;
            let key = match self.byte(start) {
                Some(b'\'' | b'"') => self.quoted()?,
                _ if self.plain_start(start) => {
                    let end = self.plain_flow(start)?;
                    self.at = end;
                    key_text(plain_scalar(&self.text[start..end])?).ok_or(Decline)?
                }
                _ => return Err(Decline),
            };
            self.spend()?;
            self.skip_spaces();
            if self.at - start > MAX_KEY_BYTES
                || self.byte(self.at) != Some(b':')
                || self.byte(self.at + 1) != Some(b' ')
            {
                return Err(Decline);
            }
            self.at += 1;
            self.skip_spaces();
            let value = self.flow_node()?;
            if map.insert(key, value).is_some() {
                return Err(Decline);
            }
            if !self.flow_next(b'}')? {
                return self.close(Value::Object(map));
            }
        }
    }

    /// A single- or double-quoted scalar that ends on its line.
    fn quoted(&mut self) -> Read<String> {
        let quote = self.bytes[self.at];
        let mut text = String::new();
        let mut at = self.at + 1;
        loop {
            let run = self.bytes[at..]
                .iter()
                .position(|&b| b == quote || b == b'\n' || (quote == b'"' && b == b'\\'))
                .ok_or(Decline)?;
            text.push_str(&self.text[at..at + run]);
            at += run;
            match self.bytes[at] {
                b'\n' => return Err(Decline),
                b'\'' if self.byte(at + 1) == Some(b'\'') => {
                    text.push('\'');
                    at += 2;
                }
                b'\\' => {
                    let (c, length) = self.escape(at + 1)?;
                    text.push(c);
                    at += 1 + length;
                }
                _ => {
                    self.at = at + 1;
                    return Ok(text);
                }
            }
        }
    }

    /// The character a double-quoted scalar's escape at `at` (after its
    /// `\`) stands for, and the escape's length; declines the escapes for
    /// line breaks and the rarely used ones.
    fn escape(&self, at: usize) -> Read<(char, usize)> {
        let simple = match self.byte(at).ok_or(Decline)? {
            b'0' => '\0',
            b'a' => '\u{7}',
            b'b' => '\u{8}',
            b't' => '\t',
            b'n' => '\n',
            b'v' => '\u{b}',
            b'f' => '\u{c}',
            b'r' => '\r',
            b'e' => '\u{1b}',
            b' ' => ' ',
            b'"' => '"',
            b'/' => '/',
            b'\\' => '\\',
            b'x' => return self.hex(at + 1, 2),
            b'u' => return self.hex(at + 1, 4),
            b'U' => return self.hex(at + 1, 8),
            _ => return Err(Decline),
        };
        Ok((simple, 1))
    }

    fn hex(&self, at: usize, digits: usize) -> Read<(char, usize)> {
        let code = self.text.get(at..at + digits).ok_or(Decline)?;
        if !code.bytes().all(|b| b.is_ascii_hexdigit()) {
            return Err(Decline);
        }
        let code = u32::from_str_radix(code, 16).map_err(|_| Decline)?;
        Ok((char::from_u32(code).ok_or(Decline)?, 1 + digits))
    }
}

/// A plain scalar as serde_yaml_ng reads it into a JSON value: `null`,
/// a boolean, an integer, a float, or else a string. Declines an integer
/// beyond 64 bits, which the full path refuses.
fn plain_scalar(text: &str) -> Read<Value> {
    match text {
        "" | "~" | "null" | "Null" | "NULL" => return Ok(Value::Null),
        "true" | "True" | "TRUE" => return Ok(Value::Bool(true)),
        "false" | "False" | "FALSE" => return Ok(Value::Bool(false)),
        _ => {}
    }
    // Only these bytes make integers and finite floats (hexadecimal
    // digits, radix prefixes, signs, one point), and infinities and NaN,
    // which JSON has no numbers for, are null.
    match text {
        ".inf" | ".Inf" | ".INF" | "+.inf" | "+.Inf" | "+.INF" | "-.inf" | "-.Inf" | "-.INF" | ".nan" | ".NaN"
        | ".NAN" => return Ok(Value::Null),
        _ => {}
    }
    let numeric = |b: u8| b.is_ascii_hexdigit() || matches!(b, b'x' | b'o' | b'+' | b'-' | b'.');
    if !text.starts_with(|c: char| c.is_ascii_digit() || matches!(c, '+' | '-' | '.'))
        || !text.bytes().all(numeric)
        || text.bytes().filter(|&b| b == b'.').count() > 1
    {
        return Ok(Value::String(text.to_owned()));
    }
    if let Some(int) = unsigned(text, u64::from_str_radix) {
        return Ok(Value::from(int));
    }
    if let Some(int) = negative(text, i64::from_str_radix) {
        return Ok(Value::from(int));
    }
    if unsigned(text, u128::from_str_radix).is_some() || negative(text, i128::from_str_radix).is_some() {
        return Err(Decline);
    }
    if !zero_led_digits(text) {
        if let Some(float) = float(text) {
            return Ok(Number::from_f64(float).map_or(Value::Null, Value::Number));
        }
    }
    Ok(Value::String(text.to_owned()))
}

/// The radix prefixes YAML 1.2's core schema (and serde_yaml_ng) reads.
const RADIXES: [(&str, u32); 3] = [("0x", 16), ("0o", 8), ("0b", 2)];

/// A non-negative integer, with an optional `+` and radix prefix.
fn unsigned<T>(text: &str, parse: fn(&str, u32) -> Result<T, ParseIntError>) -> Option<T> {
    let digits = text.strip_prefix('+').unwrap_or(text);
    for (prefix, radix) in RADIXES {
        if let Some(rest) = digits.strip_prefix(prefix) {
            if rest.starts_with(['+', '-']) {
                return None;
            }
            if let Ok(int) = parse(rest, radix) {
                return Some(int);
            }
        }
    }
    if digits.starts_with(['+', '-']) || zero_led_digits(text) {
        return None;
    }
    parse(digits, 10).ok()
}

/// A negative integer, with an optional radix prefix after its `-`.
fn negative<T>(text: &str, parse: fn(&str, u32) -> Result<T, ParseIntError>) -> Option<T> {
    for (prefix, radix) in RADIXES {
        if let Some(rest) = text.strip_prefix('-').and_then(|t| t.strip_prefix(prefix)) {
            if let Ok(int) = parse(&format!("-{rest}"), radix) {
                return Some(int);
            }
        }
    }
    if zero_led_digits(text) {
        return None;
    }
    parse(text, 10).ok()
}

/// Digits after a leading zero (`0123`, with an optional sign): a string
/// in YAML 1.2, not a number.
fn zero_led_digits(text: &str) -> bool {
    let digits = text.strip_prefix(['+', '-']).unwrap_or(text);
    digits.len() > 1 && digits.starts_with('0') && digits[1..].bytes().all(|b| b.is_ascii_digit())
}

/// A finite float as Rust reads it, with an optional `+` (YAML's `.inf`
/// and `.nan` are read before).
fn float(text: &str) -> Option<f64> {
    let unsigned = match text.strip_prefix('+') {
        Some(rest) if rest.starts_with(['+', '-']) => return None,
        Some(rest) => rest,
        None => text,
    };
    unsigned.parse::<f64>().ok().filter(|f| f.is_finite())
}

#[cfg(test)]
mod tests;
