//! `tests/k8s/KNOWN_DIFFERENCES.md`: the differences svcnet keeps on
//! purpose. Each is a line `` - `<case>` step <n>: <reason> ``; any other
//! line is prose for people.

use crate::report::CaseReport;
use std::collections::BTreeMap;
use std::path::Path;

/// The listed differences, by case and step.
#[derive(Debug, Default)]
pub struct Known {
    entries: BTreeMap<(String, usize), String>,
}

impl Known {
    /// The reason a step's difference is accepted, if it is listed.
    pub fn reason(&self, case: &str, step: usize) -> Option<String> {
        self.entries.get(&(case.to_string(), step)).cloned()
    }

    /// Listed differences whose step ran and was identical (the list must
    /// not outlive the difference).
    pub fn unused(&self, reports: &[CaseReport]) -> Vec<String> {
        self.entries
            .keys()
            .filter(|(case, step)| {
                reports
                    .iter()
                    .find(|r| &r.name == case)
                    .is_some_and(|r| r.identical_step(*step))
            })
            .map(|(case, step)| format!("`{case}` step {step}"))
            .collect()
    }
}

/// Reads the file; a missing file lists nothing.
pub fn load(path: &Path) -> Result<Known, String> {
    let text = match std::fs::read_to_string(path) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Known::default()),
        Err(e) => return Err(format!("{}: {e}", path.display())),
    };
    parse(&text).map_err(|e| format!("{}: {e}", path.display()))
}

fn parse(text: &str) -> Result<Known, String> {
    let mut known = Known::default();
    for (n, line) in text.lines().enumerate() {
        let Some(rest) = line.strip_prefix("- `") else {
            continue;
        };
        let bad = || format!("line {}: expected - `<case>` step <n>: <reason>", n + 1);
        let (case, rest) = rest.split_once('`').ok_or_else(bad)?;
        let rest = rest.strip_prefix(" step ").ok_or_else(bad)?;
        let (step, reason) = rest.split_once(':').ok_or_else(bad)?;
        let step: usize = step.trim().parse().map_err(|_| bad())?;
        if reason.trim().is_empty() {
            return Err(format!("line {}: a known difference needs its reason", n + 1));
        }
        known
            .entries
            .insert((case.to_string(), step), reason.trim().to_string());
    }
    Ok(known)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn entries_name_case_step_and_reason() {
        let k = parse("# Known\n\nprose\n- `flags-ipv6` step 2: svcnet says more\n").unwrap();
        assert_eq!(k.reason("flags-ipv6", 2).as_deref(), Some("svcnet says more"));
        assert_eq!(k.reason("flags-ipv6", 1), None);
        assert!(parse("- `x` step 1:\n").is_err());
        assert!(parse("- `x` stop 1: y\n").is_err());
    }
}
