//! A line diff of two JSON values, for the report: `-` lines are real
//! Kubernetes', `+` lines svcnet's.

use serde_json::Value;

/// The two values pretty-printed and diffed line by line (longest common
/// subsequence; outputs are small).
pub fn lines(real: &Value, ours: &Value) -> String {
    let pretty = |v: &Value| serde_json::to_string_pretty(v).unwrap_or_else(|_| v.to_string());
    let (a, b) = (pretty(real), pretty(ours));
    let a: Vec<&str> = a.lines().collect();
    let b: Vec<&str> = b.lines().collect();
    let mut lcs = vec![vec![0usize; b.len() + 1]; a.len() + 1];
    for i in (0..a.len()).rev() {
        for j in (0..b.len()).rev() {
            lcs[i][j] = if a[i] == b[j] {
                lcs[i + 1][j + 1] + 1
            } else {
                lcs[i + 1][j].max(lcs[i][j + 1])
            };
        }
    }
    let (mut i, mut j, mut out) = (0, 0, String::new());
    while i < a.len() || j < b.len() {
        if i < a.len() && j < b.len() && a[i] == b[j] {
            out.push_str(&format!("  {}\n", a[i]));
            i += 1;
            j += 1;
        } else if j < b.len() && (i == a.len() || lcs[i][j + 1] >= lcs[i + 1][j]) {
            out.push_str(&format!("+ {}\n", b[j]));
            j += 1;
        } else {
            out.push_str(&format!("- {}\n", a[i]));
            i += 1;
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn changed_lines_are_marked_by_side() {
        let d = lines(&json!({"a": 1, "b": 2}), &json!({"a": 1, "b": 3}));
        assert!(d.contains("-   \"b\": 2\n"), "{d}");
        assert!(d.contains("+   \"b\": 3\n"), "{d}");
        assert!(d.contains("    \"a\": 1,\n"), "{d}");
    }
}
