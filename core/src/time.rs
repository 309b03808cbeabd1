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

    /// How long after `earlier` this time is (zero if it is not after it).
    pub fn since(self, earlier: Time) -> Duration {
        Duration::from_millis(self.0.saturating_sub(earlier.0))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn arithmetic_saturates() {
        assert_eq!(Time(5).plus(Duration::from_secs(1)), Time(1005));
        assert_eq!(Time(u64::MAX - 1).plus(Duration::from_secs(1)), Time(u64::MAX));
        assert_eq!(Time(10).since(Time(20)), Duration::ZERO);
        assert_eq!(Time::from_secs(15).since(Time(1000)), Duration::from_secs(14));
    }
}
