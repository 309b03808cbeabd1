//! The agent's clock: the core takes time as an input ([`Time`],
//! milliseconds since the Unix epoch for the agent). This clock is
//! monotonic while the process runs (it counts from an [`Instant`]) and
//! continues from the last time saved after a restart (the state file's,
//! or a later drain start in the plan-state file), so lease and drain
//! timers never run backwards even if the wall clock does.

use std::time::{Instant, SystemTime, UNIX_EPOCH};
use svcnet_core::time::Time;

/// A monotonic clock in the core's time.
#[derive(Debug, Clone, Copy)]
pub struct Clock {
    base: Time,
    start: Instant,
}

impl Clock {
    /// Starts at the wall clock's time, or at `floor` (the last time saved)
    /// if the wall clock is behind it.
    pub fn starting_at_least(floor: Time) -> Clock {
        let wall = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map(|d| Time(u64::try_from(d.as_millis()).unwrap_or(u64::MAX)))
            .unwrap_or(Time::ZERO);
        Clock {
            base: wall.max(floor),
            start: Instant::now(),
        }
    }

    /// The time now.
    pub fn now(&self) -> Time {
        self.base.plus(self.start.elapsed())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn never_before_the_floor_and_never_backwards() {
        let far = Time(u64::MAX / 2);
        let clock = Clock::starting_at_least(far);
        let a = clock.now();
        assert!(a >= far);
        assert!(clock.now() >= a);
        let wall = Clock::starting_at_least(Time::ZERO).now();
        assert!(
            wall > Time::from_secs(1_600_000_000),
            "counts from the Unix epoch: {wall:?}"
        );
    }
}
