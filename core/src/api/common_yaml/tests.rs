//! The fast path against the full one: wherever [`Documents`] reads a text
//! rather than declining, serde_yaml_ng with libyaml must read the same
//! documents, numbered the same, to the same values. Checked on the
//! project's own YAML files, on generated texts in and around the subset,
//! and on both after random edits.

use super::*;
use crate::api::limits::MAX_DOCUMENT_BYTES;
use crate::api::limits::{MAX_ALIAS_EXPANSION, MAX_DEPTH};
use crate::api::scan::scan;
use crate::api::value;

type Read = Vec<(usize, Value)>;

fn budget(text: &str) -> usize {
    text.len() * 2 + MAX_ALIAS_EXPANSION
}

/// The non-empty documents as the fast path reads them, or `None` when
/// it declines.
fn common(text: &str) -> Option<Read> {
    let mut documents = Documents::new(text, budget(text)).ok()?;
    let mut read = Vec::new();
    while let Some(value) = documents.next_document().ok()? {
        if !value.is_null() {
            read.push((documents.number(), value));
        }
    }
    Some(read)
}

/// The non-empty documents as serde_yaml_ng reads them, or its error.
fn full(text: &str) -> Result<Read, String> {
    let mut budget = budget(text);
    let mut read = Vec::new();
    for (i, document) in serde_yaml_ng::Deserializer::from_str(text).enumerate() {
        let (value, problem) = value::decode(document, budget);
        let value = value.map_err(|e| e.to_string())?;
        budget = problem.remaining;
        if !value.is_null() {
            read.push((i + 1, value));
        }
    }
    Ok(read)
}

/// Panics when the two paths disagree, or when the fast one reads a text
/// the pre-scan refuses; returns whether the fast one read the text.
fn agree(text: &str) -> bool {
    let Some(fast) = common(text) else {
        return false;
    };
    if let Err(limit) = scan(text) {
        panic!("the fast path reads {text:?}, which breaks a limit: {limit:?}");
    }
    match full(text) {
        Ok(slow) if slow == fast => true,
        slow => panic!("the paths disagree on {text:?}:\n fast {fast:?}\n full {slow:?}"),
    }
}

/// A small deterministic generator (xorshift64*).
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }

    fn chance(&mut self, percent: usize) -> bool {
        self.below(100) < percent
    }

    fn pick<'a>(&mut self, items: &[&'a str]) -> &'a str {
        items[self.below(items.len())]
    }
}

/// Plain scalars, many of them on the edge of a type or of the subset.
const PLAIN: &[&str] = &[
    "a",
    "web",
    "svc-0",
    "TCP",
    "10.244.0.1",
    "fd00::1",
    "k8s.io/name",
    "http://x/y",
    "a b",
    "a:b",
    "a#b",
    "a,b",
    "a]",
    "a}",
    "a[b]",
    "<<",
    "-x",
    "-",
    "~",
    "null",
    "Null",
    "NULL",
    "nULL",
    "true",
    "True",
    "TRUE",
    "tRUE",
    "false",
    "yes",
    "no",
    "on",
    "off",
    "y",
    "0",
    "00",
    "0123",
    "-0",
    "+0",
    "+1",
    "++1",
    "+-1",
    "-01",
    "-",
    "0x1f",
    "0X1F",
    "0x",
    "0x-1",
    "0x+1",
    "-0x1f",
    "+0x1f",
    "0o17",
    "0o8",
    "0b101",
    "-0b1",
    "1_000",
    "1e3",
    "1E3",
    "1.",
    ".5",
    "-.5",
    "+.5",
    "1.5e-3",
    ".inf",
    "-.inf",
    "+.inf",
    ".Inf",
    ".NaN",
    ".nan",
    "+.nan",
    "-.nan",
    "inf",
    "-inf",
    "nan",
    "infinity",
    "18446744073709551615",
    "18446744073709551616",
    "-9223372036854775808",
    "-9223372036854775809",
    "340282366920938463463374607431768211456",
    "1e400",
    "1e-400",
    "0.1",
    "123456789012345678901234567890.5",
    "...",
    "---",
    "a...",
    "?a",
    ":a",
    "a?",
    "80",
    "8080",
    "65536",
    "-1",
    "3.14",
    "1:2",
    "a :b",
    "%a",
    "a%",
    "@a",
    "a@b",
    "`a",
    "a\\b",
    "a/b",
    "=",
    "a=b",
    "*",
    "&",
    "!",
    "|",
    ">",
    "a  b",
];

/// Quoted scalars, some with escapes the subset reads and some it leaves.
const QUOTED: &[&str] = &[
    "'a'",
    "''",
    "'it''s'",
    "'a\"b'",
    "'a\\b'",
    "'#a'",
    "'a: b'",
    "\"a\"",
    "\"\"",
    "\"a\\\"b\"",
    "\"a\\\\b\"",
    "\"\\n\\t\\r\\0\\a\\b\\e\\f\\v\\/\\ \"",
    "\"\\x41\\u00e9\\U0001F600\"",
    "\"\\N\"",
    "\"\\_\"",
    "\"\\'\"",
    "\"\\ud800\"",
    "\"\\U00110000\"",
    "\"\\x4\"",
    "\"\\u12G4\"",
    "\"true\"",
    "'80'",
    "\"a # b\"",
    "'a",
    "\"a",
    "\"a\\\"",
    "'a'b'",
    "\"a\"b\"",
];

const KEYS: &[&str] = &[
    "a",
    "name",
    "port",
    "b c",
    "80",
    "true",
    "null",
    "~",
    "1.0",
    "0x10",
    "1e3",
    "<<",
    "-x",
    "'q'",
    "\"dq\"",
    "''",
    "\"\\u0041\"",
    "a:b",
    "k8s.io/x",
    "a",
    "name",
    "'a'",
];

fn scalar(rng: &mut Rng) -> String {
    if rng.chance(75) {
        rng.pick(PLAIN).to_string()
    } else {
        rng.pick(QUOTED).to_string()
    }
}

fn flow(rng: &mut Rng, depth: usize) -> String {
    let n = rng.below(4);
    let sep = if rng.chance(90) {
        ", "
    } else {
        rng.pick(&[",", " , ", ",,", ", ,"])
    };
    if rng.chance(50) {
        let items: Vec<String> = (0..n).map(|_| flow_item(rng, depth)).collect();
        format!("[{}]", items.join(sep))
    } else {
        let colon = if rng.chance(95) {
            ": "
        } else {
            rng.pick(&[":", " : ", ":  "])
        };
        let items: Vec<String> = (0..n)
            .map(|_| format!("{}{colon}{}", rng.pick(KEYS), flow_item(rng, depth)))
            .collect();
        format!("{{{}}}", items.join(sep))
    }
}

fn flow_item(rng: &mut Rng, depth: usize) -> String {
    if depth < 3 && rng.chance(25) {
        flow(rng, depth + 1)
    } else {
        scalar(rng)
    }
}

/// A value written after `key: ` or `- `.
fn inline(rng: &mut Rng, depth: usize) -> String {
    let value = if rng.chance(25) { flow(rng, depth) } else { scalar(rng) };
    let tail = match rng.below(10) {
        0 => " # c",
        1 => "  ",
        2 => "#c",
        _ => "",
    };
    format!("{value}{tail}")
}

fn pad(n: usize) -> String {
    " ".repeat(n)
}

/// A block collection on the next lines, 1 to `spread` columns deeper.
fn below(rng: &mut Rng, out: &mut String, indent: usize, depth: usize, spread: usize) {
    out.push('\n');
    let deeper = indent + 1 + rng.below(spread);
    block(rng, out, deeper, depth + 1, false);
}

/// Lines of a block collection at column `indent`; the first line's
/// padding is left to the caller when `first_inline`.
fn block(rng: &mut Rng, out: &mut String, indent: usize, depth: usize, first_inline: bool) {
    let n = 1 + rng.below(3);
    let sequence = rng.chance(40);
    for i in 0..n {
        if i > 0 || !first_inline {
            let jitter = if rng.chance(3) { pad(1) } else { String::new() };
            out.push_str(&pad(indent));
            out.push_str(&jitter);
        }
        if rng.chance(5) {
            out.push_str("# a comment\n");
            out.push_str(&pad(indent));
        }
        if sequence {
            out.push('-');
            match rng.below(6) {
                0 if depth < 4 => below(rng, out, indent, depth, 3),
                1 if depth < 4 => {
                    out.push(' ');
                    block(rng, out, indent + 2, depth + 1, true);
                }
                2 => out.push('\n'),
                _ => {
                    out.push(' ');
                    out.push_str(&inline(rng, depth));
                    out.push('\n');
                }
            }
        } else {
            out.push_str(rng.pick(KEYS));
            out.push(':');
            match rng.below(6) {
                0 if depth < 4 => below(rng, out, indent, depth, 4),
                1 if depth < 4 => {
                    out.push_str(if rng.chance(50) { "\n" } else { "  # c\n" });
                    out.push_str(&pad(indent));
                    out.push_str("- ");
                    out.push_str(&inline(rng, depth));
                    out.push('\n');
                }
                2 => out.push('\n'),
                _ => {
                    out.push(' ');
                    out.push_str(&inline(rng, depth));
                    out.push('\n');
                }
            }
        }
        if rng.chance(5) {
            out.push('\n');
        }
    }
}

fn text(rng: &mut Rng) -> String {
    let mut out = String::new();
    if rng.chance(20) {
        out.push_str("# leading comment\n");
    }
    for d in 0..1 + rng.below(3) {
        if d > 0 || rng.chance(30) {
            out.push_str(rng.pick(&[
                "---\n",
                "---\n",
                "--- # c\n",
                "---  \n",
                "---x\n",
                "...\n",
                "---\n---\n",
            ]));
        }
        if rng.chance(90) {
            let indent = if rng.chance(90) { 0 } else { 2 };
            block(rng, &mut out, indent, 0, false);
        }
    }
    if rng.chance(10) {
        out.pop();
    }
    out
}

/// `text` with a few bytes inserted or removed.
fn mutate(rng: &mut Rng, text: &str) -> String {
    let mut bytes = text.as_bytes().to_vec();
    for _ in 0..1 + rng.below(3) {
        let at = rng.below(bytes.len() + 1);
        if rng.chance(40) && at < bytes.len() {
            bytes.remove(at);
        } else {
            let special = b" -:#'\"[]{},?\n!&*|>%.0~\\\t";
            bytes.insert(at, special[rng.below(special.len())]);
        }
    }
    String::from_utf8_lossy(&bytes).into_owned()
}

#[test]
fn generated_texts_read_the_same_both_ways() {
    let mut rng = Rng(0x5EED_CAFE_F00D_0001);
    let (mut read, mut mutated_read) = (0, 0);
    let rounds = 6_000;
    for _ in 0..rounds {
        let text = text(&mut rng);
        read += usize::from(agree(&text));
        for _ in 0..3 {
            mutated_read += usize::from(agree(&mutate(&mut rng, &text)));
        }
    }
    // Both paths are exercised: the fast path reads a good share of the
    // texts (the rest holds what it leaves to libyaml on purpose).
    assert!(read > rounds / 5, "the fast path read only {read} of {rounds} texts");
    assert!(
        mutated_read > rounds / 5,
        "the fast path read only {mutated_read} mutated texts"
    );
}

#[test]
fn every_plain_scalar_resolves_as_serde_yaml_ng_does() {
    let mut read = 0;
    for plain in PLAIN.iter().chain(QUOTED) {
        for text in [
            format!("k: {plain}\n"),
            format!("- {plain}\n"),
            format!("k: [{plain}]\n"),
            format!("{plain}: v\n"),
        ] {
            read += usize::from(agree(&text));
        }
    }
    assert!(read > PLAIN.len() * 2, "only {read} texts read by the fast path");
}

/// Every string in a value that holds more than one line: the manifests
/// the test cases embed as block scalars.
fn embedded(value: &Value, texts: &mut Vec<String>) {
    match value {
        Value::String(s) if s.contains('\n') => texts.push(s.clone()),
        Value::Array(items) => items.iter().for_each(|v| embedded(v, texts)),
        Value::Object(map) => map.values().for_each(|v| embedded(v, texts)),
        _ => {}
    }
}

/// The project's own YAML files, the manifests its test cases embed, and
/// all of them after random edits.
#[test]
fn the_projects_yaml_reads_the_same_both_ways() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let mut texts = Vec::new();
    let mut folders = vec![
        root.join("examples"),
        root.join("deploy"),
        root.join("tests"),
        root.join("core/src"),
    ];
    while let Some(folder) = folders.pop() {
        for entry in std::fs::read_dir(&folder).unwrap().map(Result::unwrap) {
            let path = entry.path();
            if path.is_dir() {
                folders.push(path);
            } else if path.extension().is_some_and(|e| e == "yaml" || e == "yml") {
                let text = std::fs::read_to_string(&path).unwrap();
                if let Ok(value) = serde_yaml_ng::from_str::<Value>(&text) {
                    embedded(&value, &mut texts);
                }
                texts.push(text);
            }
        }
    }
    assert!(texts.len() > 500, "found only {} YAML texts", texts.len());
    let mut rng = Rng(0x5EED_CAFE_F00D_0002);
    let (mut read, mut mutated_read) = (0, 0);
    for text in &texts {
        read += usize::from(agree(text));
        for _ in 0..10 {
            mutated_read += usize::from(agree(&mutate(&mut rng, text)));
        }
    }
    assert!(
        read * 2 > texts.len(),
        "the fast path read only {read} of {} texts",
        texts.len()
    );
    assert!(
        mutated_read * 5 > texts.len() * 10,
        "the fast path read only {mutated_read} mutated texts"
    );
    for file in ["examples/services.yaml", "examples/pods.yaml"] {
        let text = std::fs::read_to_string(root.join(file)).unwrap();
        assert!(common(&text).is_some(), "{file} is left to libyaml");
    }
}

/// The shapes `tests/vm/bench-gen.sh` writes are read on the fast path.
#[test]
fn generated_manifests_are_read_on_the_fast_path() {
    let text = "# 2 Services\napiVersion: v1\nkind: Service\nmetadata: {name: svc-0}\nspec:\n  clusterIP: 10.100.0.1\n  \
                ports: [{name: http, port: 80, targetPort: 8080, protocol: TCP}]\n---\napiVersion: discovery.k8s.io/v1\n\
                kind: EndpointSlice\nmetadata: {name: svc-0-bench, labels: {kubernetes.io/service-name: svc-0}}\n\
                addressType: IPv4\nendpoints:\n- {addresses: [10.244.0.1], conditions: {ready: true}}\n";
    assert!(agree(text));
    assert_eq!(common(text).unwrap().len(), 2);
}

/// Around the depth limit, in every kind of nesting, the fast path reads
/// only what the pre-scan lets through, and reads that.
#[test]
fn nesting_near_the_limit_is_read_only_within_it() {
    let shapes: [fn(usize) -> String; 5] = [
        |n| (0..n).map(|i| format!("{}k:\n", " ".repeat(i))).collect::<String>() + &" ".repeat(n) + "k: v\n",
        |n| (0..n).map(|i| format!("{}-\n", " ".repeat(i))).collect::<String>() + &" ".repeat(n) + "- v\n",
        |n| "- ".repeat(n) + "v\n",
        |n| format!("k: {}v{}\n", "[".repeat(n), "]".repeat(n)),
        |n| format!("k: {}v{}\n", "{a: ".repeat(n), "}".repeat(n)),
    ];
    for (s, shape) in shapes.iter().enumerate() {
        for n in MAX_DEPTH - 3..MAX_DEPTH + 3 {
            let text = shape(n);
            let read = agree(&text);
            assert_eq!(read, scan(&text).is_ok(), "shape {s} at {n}: {text:?}");
        }
    }
}

/// A document over the size limit is left to the full path, which
/// refuses it.
#[test]
fn a_document_over_the_size_limit_is_declined() {
    let line = "k0000000: 0123456789012345678901234567890123456789\n";
    let lines = MAX_DOCUMENT_BYTES / line.len() + 1;
    let big: String = (0..lines)
        .map(|i| format!("k{i:07}: 0123456789012345678901234567890123456789\n"))
        .collect();
    assert!(big.len() > MAX_DOCUMENT_BYTES && scan(&big).is_err());
    assert_eq!(common(&big), None);
    let under = &big[..big.len() - 2 * line.len()];
    assert!(under.len() <= MAX_DOCUMENT_BYTES && agree(under));
}

#[test]
fn what_the_subset_leaves_to_libyaml() {
    for text in [
        "a: &x 1\nb: *x\n",
        "a: !!str 1\n",
        "a: |\n  text\n",
        "a: b\n  c\n",
        "a:\tb\n",
        "a: b\r\n",
        "a: é\n",
        "a: 1\na: 2\n",
        "%YAML 1.2\n---\na: 1\n",
        "a: 1\n...\n",
        "{\"a\": 1}\n",
        "a: [1,\n  2]\n",
        "a: 340282366920938463463374607431768211455\n",
        "? a\n: b\n",
    ] {
        assert_eq!(common(text), None, "{text:?}");
    }
}
