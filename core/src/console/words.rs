//! A console line split the way a shell splits it before kubectl reads it
//! (words, with `'…'` and `"…"` quoting), then split again the way kubectl's
//! flag parser does: positional arguments, and flags written `--name=value`,
//! `--name value`, `-o yaml`, `-owide` or, for the flags that take no value,
//! `-A`.

use super::UsageError;

/// Splits a command line into words, honouring `'…'` and `"…"` quoting.
pub fn words(line: &str) -> Result<Vec<String>, UsageError> {
    let mut out = Vec::new();
    let mut current = String::new();
    let mut quote = None;
    let mut quoted = false;
    for ch in line.chars() {
        match quote {
            Some(q) if ch == q => quote = None,
            Some(_) => current.push(ch),
            None if ch == '"' || ch == '\'' => {
                quote = Some(ch);
                quoted = true;
            }
            None if ch.is_whitespace() => {
                if quoted || !current.is_empty() {
                    out.push(std::mem::take(&mut current));
                }
                quoted = false;
            }
            None => current.push(ch),
        }
    }
    if quote.is_some() {
        return Err(UsageError::new("unterminated quote in the command line"));
    }
    if quoted || !current.is_empty() {
        out.push(current);
    }
    Ok(out)
}

/// Positional arguments and flags, in the order given.
#[derive(Debug, Default)]
pub struct Args {
    /// The words that are not flags.
    pub positional: Vec<String>,
    flags: Vec<(String, String)>,
}

impl Args {
    /// Splits `args`; the flags named in `switches` (without dashes) take
    /// no value.
    pub fn split(args: &[String], switches: &[&str]) -> Result<Args, UsageError> {
        let mut out = Args::default();
        let mut rest = args.iter();
        while let Some(arg) = rest.next() {
            let Some(flag) = arg.strip_prefix('-').filter(|f| !f.is_empty()) else {
                out.positional.push(arg.clone());
                continue;
            };
            let long = flag.strip_prefix('-');
            let (name, value) = match (long, flag.split_once('=')) {
                // -owide, -oyaml, -ojsonpath={..}: a one-letter flag glued
                // to its value (`-o=yaml` too).
                (None, _) if flag.chars().count() > 1 && !switches.contains(&flag) => {
                    let mut chars = flag.chars();
                    let letter = chars.next().map(String::from).unwrap_or_default();
                    let glued: String = chars.collect();
                    (
                        letter,
                        Some(glued.strip_prefix('=').map_or(glued.clone(), str::to_string)),
                    )
                }
                (Some(_), Some((name, value))) => (name.trim_start_matches('-').to_string(), Some(value.to_string())),
                (long, _) => (long.unwrap_or(flag).to_string(), None),
            };
            let value = match value {
                Some(value) => value,
                None if switches.contains(&name.as_str()) => "true".to_string(),
                None => rest
                    .next()
                    .cloned()
                    .ok_or_else(|| UsageError::new(format!("flag needs an argument: {arg}")))?,
            };
            out.flags.push((name, value));
        }
        Ok(out)
    }

    /// The last value given for any of `names`.
    pub fn flag(&self, names: &[&str]) -> Option<&str> {
        (self.flags.iter().rev())
            .find(|(name, _)| names.contains(&name.as_str()))
            .map(|(_, value)| value.as_str())
    }

    /// Every value given for `name`, in order.
    pub fn all(&self, name: &str) -> Vec<&str> {
        (self.flags.iter())
            .filter(|(n, _)| n == name)
            .map(|(_, value)| value.as_str())
            .collect()
    }

    /// Whether any of `names` was given.
    pub fn has(&self, names: &[&str]) -> bool {
        self.flag(names).is_some()
    }

    /// Refuses a flag outside `allowed`, as kubectl does.
    pub fn only(&self, allowed: &[&str]) -> Result<(), UsageError> {
        match self.flags.iter().find(|(name, _)| !allowed.contains(&name.as_str())) {
            Some((name, _)) if name.chars().count() == 1 => {
                Err(UsageError::new(format!("unknown shorthand flag: '{name}' in -{name}")))
            }
            Some((name, _)) => Err(UsageError::new(format!("unknown flag: --{name}"))),
            None => Ok(()),
        }
    }
}

/// A flag's value as a whole number, or kubectl's error naming the flag.
pub fn integer(value: &str, flag: &str) -> Result<i64, UsageError> {
    value.parse().map_err(|_| {
        UsageError::new(format!(
            "invalid argument {value:?} for \"--{flag}\" flag: strconv.ParseInt: parsing {value:?}: invalid syntax"
        ))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn split(line: &str, switches: &[&str]) -> Args {
        Args::split(&words(line).unwrap(), switches).unwrap()
    }

    #[test]
    fn quotes_keep_spaces_and_empty_words() {
        assert_eq!(
            words(r#"get svc "a b" 'c' """#).unwrap(),
            ["get", "svc", "a b", "c", ""]
        );
        assert_eq!(words("  ").unwrap(), Vec::<String>::new());
        assert_eq!(
            words("get 'svc").unwrap_err().to_string(),
            "unterminated quote in the command line"
        );
    }

    #[test]
    fn flags_take_values_every_way_kubectl_allows() {
        let glued = split("-ojsonpath={.a} -o=yaml --output=jsonpath={.b}", &[]);
        assert_eq!(glued.all("o"), ["jsonpath={.a}", "yaml"]);
        assert_eq!(glued.flag(&["output"]), Some("jsonpath={.b}"));
        let args = split("web -owide --tcp=80 --tcp 443:8443 -A -n shop", &["A"]);
        assert_eq!(args.positional, ["web"]);
        assert_eq!(args.flag(&["o", "output"]), Some("wide"));
        assert_eq!(args.all("tcp"), ["80", "443:8443"]);
        assert!(args.has(&["A"]));
        assert_eq!(args.flag(&["n", "namespace"]), Some("shop"));
        assert_eq!(
            args.only(&["o", "tcp", "A"]).unwrap_err().to_string(),
            "unknown shorthand flag: 'n' in -n"
        );
        let missing = Args::split(&words("--replicas").unwrap(), &[]).unwrap_err();
        assert_eq!(missing.to_string(), "flag needs an argument: --replicas");
        assert_eq!(
            integer("x", "replicas").unwrap_err().to_string(),
            "invalid argument \"x\" for \"--replicas\" flag: strconv.ParseInt: parsing \"x\": invalid syntax"
        );
    }
}
