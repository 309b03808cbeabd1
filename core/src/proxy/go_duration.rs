//! Go's duration text (`time.ParseDuration`, `Duration.String`), the form
//! of every period and timeout in a `KubeProxyConfiguration`: `30s`,
//! `1m30s`, `500ms`, `-1s`. Signed nanoseconds, as in Go.

use thiserror::Error;

/// A duration that did not parse, in Go's words.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
#[error("time: {reason} {text:?}")]
pub struct DurationError {
    /// What is wrong (`invalid duration`, `unknown unit "x" in duration`).
    pub reason: String,
    /// The text given.
    pub text: String,
}

const UNITS: [(&str, i128); 8] = [
    ("ns", 1),
    ("us", 1_000),
    ("µs", 1_000),
    ("μs", 1_000),
    ("ms", 1_000_000),
    ("s", 1_000_000_000),
    ("m", 60_000_000_000),
    ("h", 3_600_000_000_000),
];

/// Parses Go duration text into nanoseconds.
pub fn parse(text: &str) -> Result<i128, DurationError> {
    let fail = |reason: String| DurationError {
        reason,
        text: text.to_string(),
    };
    let (negative, mut rest) = match text.strip_prefix('-') {
        Some(r) => (true, r),
        None => (false, text.strip_prefix('+').unwrap_or(text)),
    };
    if rest == "0" {
        return Ok(0);
    }
    if rest.is_empty() {
        return Err(fail("invalid duration".into()));
    }
    let mut total: i128 = 0;
    while !rest.is_empty() {
        let number_len = rest
            .find(|c: char| !(c.is_ascii_digit() || c == '.'))
            .unwrap_or(rest.len());
        let number = &rest[..number_len];
        if number.is_empty() || number == "." || number.matches('.').count() > 1 {
            return Err(fail("invalid duration".into()));
        }
        rest = &rest[number_len..];
        let unit_len = rest
            .find(|c: char| c.is_ascii_digit() || c == '.')
            .unwrap_or(rest.len());
        let unit = &rest[..unit_len];
        rest = &rest[unit_len..];
        if unit.is_empty() {
            return Err(fail("missing unit in duration".into()));
        }
        let Some((_, scale)) = UNITS.iter().find(|(name, _)| *name == unit) else {
            return Err(fail(format!("unknown unit {unit:?} in duration")));
        };
        let (whole, fraction) = number.split_once('.').unwrap_or((number, ""));
        let whole: i128 = if whole.is_empty() {
            0
        } else {
            whole.parse().map_err(|_| fail("invalid duration".into()))?
        };
        let mut value = whole
            .checked_mul(*scale)
            .ok_or_else(|| fail("invalid duration".into()))?;
        let mut place = *scale;
        for digit in fraction.chars().filter_map(|c| c.to_digit(10)) {
            place /= 10;
            value += i128::from(digit) * place;
        }
        total = total
            .checked_add(value)
            .ok_or_else(|| fail("invalid duration".into()))?;
        if total > i128::from(i64::MAX) {
            return Err(fail("invalid duration".into()));
        }
    }
    Ok(if negative { -total } else { total })
}

/// Go's `Duration.String` of `nanos`: `0s`, `1.5s`, `1m30s`, `1h0m0s`,
/// `500ms`, `-1s`.
pub fn format(nanos: i128) -> String {
    if nanos == 0 {
        return "0s".into();
    }
    let sign = if nanos < 0 { "-" } else { "" };
    let n = nanos.unsigned_abs();
    if n < 1_000_000_000 {
        let (scale, unit) = match n {
            0..=999 => (1, "ns"),
            1_000..=999_999 => (1_000, "µs"),
            _ => (1_000_000, "ms"),
        };
        return format!("{sign}{}{unit}", decimal(n, scale));
    }
    let hours = n / 3_600_000_000_000;
    let minutes = n / 60_000_000_000 % 60;
    let seconds = decimal(n % 60_000_000_000, 1_000_000_000);
    match (hours, minutes) {
        (0, 0) => format!("{sign}{seconds}s"),
        (0, m) => format!("{sign}{m}m{seconds}s"),
        (h, m) => format!("{sign}{h}h{m}m{seconds}s"),
    }
}

/// `n / scale` with its fraction, trailing zeros dropped.
fn decimal(n: u128, scale: u128) -> String {
    let whole = n / scale;
    let fraction = n % scale;
    if fraction == 0 {
        return whole.to_string();
    }
    let width = scale.to_string().len() - 1;
    let digits = format!("{fraction:0width$}");
    format!("{whole}.{}", digits.trim_end_matches('0'))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_and_prints_as_go_does() {
        for (text, nanos, printed) in [
            ("30s", 30_000_000_000, "30s"),
            ("90s", 90_000_000_000, "1m30s"),
            ("1h", 3_600_000_000_000, "1h0m0s"),
            ("1.5s", 1_500_000_000, "1.5s"),
            ("500ms", 500_000_000, "500ms"),
            ("-1s", -1_000_000_000, "-1s"),
            ("0", 0, "0s"),
            ("2m0.25s", 120_250_000_000, "2m0.25s"),
            ("1500us", 1_500_000, "1.5ms"),
        ] {
            assert_eq!(parse(text), Ok(nanos), "{text}");
            assert_eq!(format(nanos), printed, "{text}");
        }
    }

    #[test]
    fn bad_text_is_refused_in_gos_words() {
        assert_eq!(
            parse("10").unwrap_err().to_string(),
            "time: missing unit in duration \"10\""
        );
        assert_eq!(
            parse("5x").unwrap_err().to_string(),
            "time: unknown unit \"x\" in duration \"5x\""
        );
        assert_eq!(parse("").unwrap_err().to_string(), "time: invalid duration \"\"");
        assert!(parse("1.2.3s").is_err());
    }
}
