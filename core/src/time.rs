//! The core's own notion of time: an input, never read from a clock.
//!
//! [`Time`] counts milliseconds since an arbitrary epoch chosen by the caller
//! (the agent uses the Unix epoch; tests and the playground start at 0).

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
        format!(
            "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}Z",
            rest / 3600,
            rest % 3600 / 60,
            rest % 60
        )
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
    }

    #[test]
    fn arithmetic_saturates() {
        assert_eq!(Time(5).plus(Duration::from_secs(1)), Time(1005));
        assert_eq!(Time(u64::MAX - 1).plus(Duration::from_secs(1)), Time(u64::MAX));
        assert_eq!(Time(10).since(Time(20)), Duration::ZERO);
        assert_eq!(Time::from_secs(15).since(Time(1000)), Duration::from_secs(14));
    }
}
