//! `kubectl get -o jsonpath=TEMPLATE`: the part of kubectl's JSONPath
//! templates people type. Text outside braces is copied; `{.a.b}` walks
//! fields, `[n]` picks an item (negative from the end), `[*]` takes every
//! item, `{"\n"}` is a literal, and `{range .items[*]}...{end}` repeats its
//! body for each value. As with kubectl's default
//! `--allow-missing-template-keys=true`, a missing field prints nothing.
//! Several values from one expression are joined by spaces; strings print
//! bare, other values as JSON.

use serde_json::Value;

/// A piece of a template.
#[derive(Debug, PartialEq)]
enum Node {
    Text(String),
    Path(Vec<Step>),
    Range(Vec<Step>, Vec<Node>),
}

/// One step of a path.
#[derive(Debug, PartialEq)]
enum Step {
    Field(String),
    Index(i64),
    All,
}

/// Renders `template` over `data`, or says what is wrong with it.
pub fn render(template: &str, data: &Value) -> Result<String, String> {
    let mut rest = template;
    let nodes = parse(&mut rest, false)?;
    let mut out = String::new();
    write(&nodes, data, &mut out);
    Ok(out)
}

fn parse(rest: &mut &str, in_range: bool) -> Result<Vec<Node>, String> {
    let mut nodes = Vec::new();
    while !rest.is_empty() {
        let Some(open) = rest.find('{') else {
            nodes.push(Node::Text(rest.to_string()));
            *rest = "";
            break;
        };
        if open > 0 {
            nodes.push(Node::Text(rest[..open].to_string()));
        }
        let close = (rest[open..].find('}')).ok_or_else(|| format!("unclosed action in {rest:?}"))? + open;
        let action = rest[open + 1..close].trim();
        *rest = &rest[close + 1..];
        if action == "end" {
            return if in_range {
                Ok(nodes)
            } else {
                Err("{end} without {range}".into())
            };
        }
        if let Some(path) = action.strip_prefix("range ") {
            let path = steps(path.trim())?;
            let body = parse(rest, true)?;
            nodes.push(Node::Range(path, body));
        } else if let Some(text) = action.strip_prefix('"').and_then(|a| a.strip_suffix('"')) {
            nodes.push(Node::Text(text.replace("\\n", "\n").replace("\\t", "\t")));
        } else {
            nodes.push(Node::Path(steps(action)?));
        }
    }
    if in_range {
        return Err("{range} without {end}".into());
    }
    Ok(nodes)
}

/// `.a.b[0][*]` (the leading `$` is optional) into steps.
fn steps(path: &str) -> Result<Vec<Step>, String> {
    let bad =
        || format!("unrecognized JSONPath {path:?}: this console knows .field, [n], [*], {{range}} and {{\"text\"}}");
    let mut out = Vec::new();
    let mut rest = path.strip_prefix('$').unwrap_or(path);
    if rest.is_empty() || rest == "." {
        return Ok(out);
    }
    while !rest.is_empty() {
        if let Some(after) = rest.strip_prefix('.') {
            let end = after.find(['.', '[']).unwrap_or(after.len());
            if end == 0 {
                return Err(bad());
            }
            out.push(Step::Field(after[..end].to_string()));
            rest = &after[end..];
        } else if let Some(after) = rest.strip_prefix('[') {
            let end = after.find(']').ok_or_else(bad)?;
            let inside = after[..end].trim();
            out.push(match inside {
                "*" => Step::All,
                n => Step::Index(n.parse().map_err(|_| bad())?),
            });
            rest = &after[end + 1..];
        } else {
            return Err(bad());
        }
    }
    Ok(out)
}

/// The values a path reaches from `data`.
fn select<'a>(path: &[Step], data: &'a Value) -> Vec<&'a Value> {
    let mut current = vec![data];
    for step in path {
        current = (current.into_iter())
            .flat_map(|value| -> Vec<&'a Value> {
                match (step, value) {
                    (Step::Field(name), Value::Object(map)) => map.get(name).into_iter().collect(),
                    (Step::All, Value::Array(items)) => items.iter().collect(),
                    (Step::All, Value::Object(map)) => map.values().collect(),
                    (Step::Index(i), Value::Array(items)) => {
                        let at = if *i < 0 { items.len() as i64 + i } else { *i };
                        usize::try_from(at)
                            .ok()
                            .and_then(|at| items.get(at))
                            .into_iter()
                            .collect()
                    }
                    _ => Vec::new(),
                }
            })
            .collect();
    }
    current
}

fn write(nodes: &[Node], data: &Value, out: &mut String) {
    for node in nodes {
        match node {
            Node::Text(text) => out.push_str(text),
            Node::Path(path) => {
                let values: Vec<String> = select(path, data).into_iter().map(text).collect();
                out.push_str(&values.join(" "));
            }
            Node::Range(path, body) => {
                for value in select(path, data) {
                    write(body, value, out);
                }
            }
        }
    }
}

fn text(value: &Value) -> String {
    match value {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn fields_items_ranges_and_literals() {
        let list = json!({"items": [
            {"metadata": {"name": "a"}, "spec": {"clusterIP": "10.96.0.5", "ports": [{"port": 80}, {"port": 443}]}},
            {"metadata": {"name": "b"}, "spec": {"clusterIP": "None"}},
        ]});
        assert_eq!(render("{.items[*].metadata.name}", &list).unwrap(), "a b");
        assert_eq!(render("{.items[0].spec.ports[-1].port}", &list).unwrap(), "443");
        assert_eq!(
            render(
                r#"{range .items[*]}{.metadata.name}{"\t"}{.spec.clusterIP}{"\n"}{end}"#,
                &list
            )
            .unwrap(),
            "a\t10.96.0.5\nb\tNone\n"
        );
        assert_eq!(
            render("ip={.items[0].spec.clusterIP}!", &list).unwrap(),
            "ip=10.96.0.5!"
        );
        assert_eq!(render("{.items[0].spec.ports[0]}", &list).unwrap(), r#"{"port":80}"#);
        assert_eq!(
            render("{.items[5].nope}", &list).unwrap(),
            "",
            "missing keys print nothing"
        );
        assert!(render("{.items[x]}", &list)
            .unwrap_err()
            .starts_with("unrecognized JSONPath"));
        assert_eq!(
            render("{range .items[*]}{.x}", &list).unwrap_err(),
            "{range} without {end}"
        );
        assert!(render("{.a", &list).unwrap_err().starts_with("unclosed action"));
    }
}
