//! The core's own notion of time: an input, never read from a clock.
//!
//! [`Time`] counts milliseconds since an arbitrary epoch chosen by the caller
//! (the agent uses the Unix epoch; tests and the playground start at 0).

use crate::digits::push_decimal;
use serde::{Deserialize, Serialize};
use std::time::Duration;

/// A point in time, in milliseconds since the caller's epoch.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(transparent)]
pub struct Time(pub u64);

impl Time {
    /// The epoch itself.
    pub const ZERO: Time = Time(0);

    /// Builds a time from whole seconds since the epoch.
    pub fn from_secs(secs: u64) -> Time {
        Time(secs.saturating_mul(1000))
    }

    /// Milliseconds since the epoch.
    pub fn as_millis(self) -> u64 {
        self.0
    }

    /// This time plus `d`, saturating at the end of time.
    pub fn plus(self, d: Duration) -> Time {
        let ms = u64::try_from(d.as_millis()).unwrap_or(u64::MAX);
        Time(self.0.saturating_add(ms))
    }

    /// The time as RFC 3339 text in UTC, to the second
    /// (`2026-11-24T19:04:29Z`), the way Kubernetes writes timestamps,
    /// counting the epoch as the Unix epoch.
    pub fn rfc3339(self) -> String {
        let secs = self.0 / 1000;
        let (days, rest) = (secs / 86_400, secs % 86_400);
        // Civil date from days since 1970-01-01 (Howard Hinnant's method).
        let z = days + 719_468;
        let era = z / 146_097;
        let doe = z - era * 146_097;
        let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
        let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
        let mp = (5 * doy + 2) / 153;
        let day = doy - (153 * mp + 2) / 5 + 1;
        let month = if mp < 10 { mp + 3 } else { mp - 9 };
        let year = yoe + era * 400 + u64::from(month <= 2);
        // Written digit by digit: the control plane stamps every object it
        // stores, and the formatting machinery was most of that cost.
        let mut text = String::with_capacity(20);
        push_decimal(&mut text, year, 4);
        text.push('-');
        push_decimal(&mut text, month, 2);
        text.push('-');
        push_decimal(&mut text, day, 2);
        text.push('T');
        push_decimal(&mut text, rest / 3600, 2);
        text.push(':');
        push_decimal(&mut text, rest % 3600 / 60, 2);
        text.push(':');
        push_decimal(&mut text, rest % 60, 2);
        text.push('Z');
        text
    }

    /// RFC 3339 with the milliseconds, trailing zeros dropped, as Go's
    /// `time.Time` prints in JSON: `2026-11-24T19:04:29.5Z`.
    pub fn rfc3339_nano(self) -> String {
        let seconds = Time(self.0 / 1000 * 1000).rfc3339();
        match self.0 % 1000 {
            0 => seconds,
            ms => {
                let fraction = format!("{ms:03}");
                format!("{}.{}Z", seconds.trim_end_matches('Z'), fraction.trim_end_matches('0'))
            }
        }
    }

    /// Parses RFC 3339 text in UTC (`2026-11-24T19:04:29Z`, fractions of
    /// a second kept to the millisecond), as Kubernetes writes timestamps
    /// such as `endpoints.kubernetes.io/last-change-trigger-time`.
    pub fn parse_rfc3339(text: &str) -> Option<Time> {
        let text = text.strip_suffix('Z')?;
        let (date, clock) = text.split_once('T')?;
        let mut d = date.split('-').map(|p| p.parse::<u64>().ok());
        let (year, month, day) = (d.next()??, d.next()??, d.next()??);
        let (clock, fraction) = clock.split_once('.').unwrap_or((clock, ""));
        let mut c = clock.split(':').map(|p| p.parse::<u64>().ok());
        let (hour, minute, second) = (c.next()??, c.next()??, c.next()??);
        if !(1..=12).contains(&month) || !(1..=31).contains(&day) || hour > 23 || minute > 59 || second > 60 {
            return None;
        }
        // Days since 1970-01-01 from the civil date (Howard Hinnant's method).
        let y = if month <= 2 { year.checked_sub(1)? } else { year };
        let era = y / 400;
        let yoe = y - era * 400;
        let mp = if month > 2 { month - 3 } else { month + 9 };
        let doy = (153 * mp + 2) / 5 + day - 1;
        let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
        let days = (era * 146_097 + doe).checked_sub(719_468)?;
        let millis: u64 = format!("{fraction:0<3}").get(..3)?.parse().ok()?;
        Some(Time(
            ((days * 86_400 + hour * 3600 + minute * 60 + second) * 1000) + millis,
        ))
    }

    /// How long after `earlier` this time is (zero if it is not after it).
    pub fn since(self, earlier: Time) -> Duration {
        Duration::from_millis(self.0.saturating_sub(earlier.0))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rfc3339_counts_from_the_unix_epoch() {
        assert_eq!(Time::ZERO.rfc3339(), "1970-01-01T00:00:00Z");
        assert_eq!(Time::from_secs(1_795_547_069).rfc3339(), "2026-11-24T19:04:29Z");
        assert_eq!(Time::from_secs(951_782_400).rfc3339(), "2000-02-29T00:00:00Z");
        assert_eq!(Time::from_secs(1_000_000_000_000).rfc3339(), "33658-09-27T01:46:40Z");
        assert_eq!(Time(u64::MAX).rfc3339(), "584556019-04-03T14:25:51Z");
    }

    #[test]
    fn rfc3339_round_trips_with_milliseconds() {
        let t = Time(1_795_547_069_500);
        assert_eq!(t.rfc3339_nano(), "2026-11-24T19:04:29.5Z");
        assert_eq!(Time::from_secs(5).rfc3339_nano(), "1970-01-01T00:00:05Z");
        assert_eq!(Time::parse_rfc3339("2026-11-24T19:04:29.5Z"), Some(t));
        assert_eq!(
            Time::parse_rfc3339("2000-02-29T00:00:00Z"),
            Some(Time::from_secs(951_782_400))
        );
        assert_eq!(Time::parse_rfc3339("2026-13-01T00:00:00Z"), None);
        assert_eq!(Time::parse_rfc3339("yesterday"), None);
    }

    #[test]
    fn arithmetic_saturates() {
        assert_eq!(Time(5).plus(Duration::from_secs(1)), Time(1005));
        assert_eq!(Time(u64::MAX - 1).plus(Duration::from_secs(1)), Time(u64::MAX));
        assert_eq!(Time(10).since(Time(20)), Duration::ZERO);
        assert_eq!(Time::from_secs(15).since(Time(1000)), Duration::from_secs(14));
    }
}
