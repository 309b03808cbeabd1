//! Label selectors as `kubectl get -l` takes them: terms joined by commas,
//! each `key=value` (or `==`), `key!=value`, `key` (the label exists),
//! `!key` (it does not), `key in (a,b)` or `key notin (a,b)`. An object is
//! selected when every term holds.

use crate::collections::SortedMap;

/// One term of a selector.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Term {
    /// `key=value`, `key==value`, `key in (...)`: the label has one of
    /// these values.
    In(String, Vec<String>),
    /// `key!=value`, `key notin (...)`: the label is absent or has none of
    /// these values.
    NotIn(String, Vec<String>),
    /// `key`: the label exists.
    Exists(String),
    /// `!key`: the label does not exist.
    Absent(String),
}

/// A parsed label selector.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Selector(Vec<Term>);

impl Selector {
    /// Reads `text`; the error names the term that could not be read.
    pub fn parse(text: &str) -> Result<Self, String> {
        split_terms(text)?
            .into_iter()
            .map(|term| parse_term(term.trim()).ok_or_else(|| format!("unable to parse requirement: {term:?}")))
            .collect::<Result<_, _>>()
            .map(Selector)
    }

    /// Whether `labels` satisfy every term.
    pub fn matches(&self, labels: &SortedMap<String, String>) -> bool {
        self.0.iter().all(|term| match term {
            Term::In(key, values) => labels.get(key).is_some_and(|v| values.contains(v)),
            Term::NotIn(key, values) => labels.get(key).is_none_or(|v| !values.contains(v)),
            Term::Exists(key) => labels.contains_key(key),
            Term::Absent(key) => !labels.contains_key(key),
        })
    }
}

/// The terms of `text`: commas inside `( )` belong to a set, not between
/// terms.
fn split_terms(text: &str) -> Result<Vec<&str>, String> {
    let mut terms = Vec::new();
    let (mut depth, mut start) = (0usize, 0usize);
    for (i, c) in text.char_indices() {
        match c {
            '(' => depth += 1,
            ')' => {
                depth = depth
                    .checked_sub(1)
                    .ok_or_else(|| format!("unexpected ')' in {text:?}"))?
            }
            ',' if depth == 0 => {
                terms.push(&text[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    if depth != 0 {
        return Err(format!("unclosed '(' in {text:?}"));
    }
    terms.push(&text[start..]);
    Ok(terms)
}

fn parse_term(term: &str) -> Option<Term> {
    let key_ok = |k: &str| !k.is_empty() && !k.contains(char::is_whitespace) && !k.contains(['=', '!', '(', ')']);
    let value_ok = |v: &str| !v.contains(char::is_whitespace) && !v.contains(['=', '!', '(', ')', ',']);
    if let Some(key) = term.strip_prefix('!') {
        return key_ok(key.trim()).then(|| Term::Absent(key.trim().to_string()));
    }
    if let Some((key, value)) = term.split_once("!=") {
        let (key, value) = (key.trim(), value.trim());
        return (key_ok(key) && value_ok(value)).then(|| Term::NotIn(key.into(), vec![value.into()]));
    }
    if let Some((key, value)) = term.split_once('=') {
        let value = value.strip_prefix('=').unwrap_or(value);
        let (key, value) = (key.trim(), value.trim());
        return (key_ok(key) && value_ok(value)).then(|| Term::In(key.into(), vec![value.into()]));
    }
    for (word, not) in [(" notin ", true), (" in ", false)] {
        if let Some((key, set)) = term.split_once(word) {
            let set = set.trim().strip_prefix('(')?.strip_suffix(')')?;
            let values: Vec<String> = set.split(',').map(|v| v.trim().to_string()).collect();
            if !key_ok(key.trim()) || !values.iter().all(|v| value_ok(v)) {
                return None;
            }
            let key = key.trim().to_string();
            return Some(if not {
                Term::NotIn(key, values)
            } else {
                Term::In(key, values)
            });
        }
    }
    key_ok(term).then(|| Term::Exists(term.to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn labels(pairs: &[(&str, &str)]) -> SortedMap<String, String> {
        pairs.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect()
    }

    #[test]
    fn each_kind_of_term_selects_as_kubectl_does() {
        let web = labels(&[("app", "web"), ("kubernetes.io/service-name", "web")]);
        let db = labels(&[("app", "db")]);
        let select = |text: &str| {
            let selector = Selector::parse(text).unwrap();
            [&web, &db].map(|l| selector.matches(l))
        };
        assert_eq!(select("kubernetes.io/service-name=web"), [true, false]);
        assert_eq!(select("app==db"), [false, true]);
        assert_eq!(select("app!=web"), [false, true]);
        assert_eq!(select("kubernetes.io/service-name"), [true, false]);
        assert_eq!(select("!kubernetes.io/service-name"), [false, true]);
        assert_eq!(select("app in (web, db),app notin (db)"), [true, false]);
        assert_eq!(select("app=web,kubernetes.io/service-name=web"), [true, false]);
    }

    #[test]
    fn a_bad_term_is_named() {
        assert_eq!(
            Selector::parse("app=web,a b").unwrap_err(),
            "unable to parse requirement: \"a b\""
        );
        assert_eq!(
            Selector::parse("app in (web").unwrap_err(),
            "unclosed '(' in \"app in (web\""
        );
    }
}
