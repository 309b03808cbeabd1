//! IPVS schedulers: the names the kernel knows, and the annotation that
//! picks one per Service.

use serde::{Deserialize, Deserializer, Serialize, Serializer};
use std::fmt;

/// The annotation that overrides the node's default scheduler for one
/// Service.
pub const SCHEDULER_ANNOTATION: &str = "svcnet.io/ipvs-scheduler";

/// An IPVS scheduler, by its kernel name.
///
/// Desired tables only hold the known schedulers; an observed (kernel)
/// table may hold anything the kernel reports, kept as [`Scheduler::Other`].
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Scheduler {
    /// Round robin (`rr`), kube-proxy's default.
    #[default]
    Rr,
    /// Weighted round robin.
    Wrr,
    /// Least connection.
    Lc,
    /// Weighted least connection (`ipvsadm`'s own default).
    Wlc,
    /// Locality-based least connection.
    Lblc,
    /// Locality-based least connection with replication.
    Lblcr,
    /// Destination hashing.
    Dh,
    /// Source hashing.
    Sh,
    /// Shortest expected delay.
    Sed,
    /// Never queue.
    Nq,
    /// Maglev hashing.
    Mh,
    /// Weighted failover.
    Fo,
    /// Weighted overflow.
    Ovf,
    /// Weighted random twos choice.
    Twos,
    /// A name svcnet does not know (only ever read from a kernel).
    Other(String),
}

impl Scheduler {
    /// Every known scheduler, in the order error messages list them.
    pub const KNOWN: [Scheduler; 14] = [
        Scheduler::Rr,
        Scheduler::Wrr,
        Scheduler::Lc,
        Scheduler::Wlc,
        Scheduler::Lblc,
        Scheduler::Lblcr,
        Scheduler::Dh,
        Scheduler::Sh,
        Scheduler::Sed,
        Scheduler::Nq,
        Scheduler::Mh,
        Scheduler::Fo,
        Scheduler::Ovf,
        Scheduler::Twos,
    ];

    /// The kernel name.
    pub fn name(&self) -> &str {
        match self {
            Scheduler::Rr => "rr",
            Scheduler::Wrr => "wrr",
            Scheduler::Lc => "lc",
            Scheduler::Wlc => "wlc",
            Scheduler::Lblc => "lblc",
            Scheduler::Lblcr => "lblcr",
            Scheduler::Dh => "dh",
            Scheduler::Sh => "sh",
            Scheduler::Sed => "sed",
            Scheduler::Nq => "nq",
            Scheduler::Mh => "mh",
            Scheduler::Fo => "fo",
            Scheduler::Ovf => "ovf",
            Scheduler::Twos => "twos",
            Scheduler::Other(name) => name,
        }
    }

    /// A known scheduler by name, or `None`.
    pub fn known(name: &str) -> Option<Scheduler> {
        Scheduler::KNOWN.into_iter().find(|s| s.name() == name)
    }

    /// The scheduler for this kernel name: a known one, else `Other`.
    pub fn from_name(name: &str) -> Scheduler {
        Scheduler::known(name).unwrap_or_else(|| Scheduler::Other(name.to_string()))
    }

    /// The known names joined by `, `, for messages.
    pub fn known_names() -> String {
        Scheduler::KNOWN
            .iter()
            .map(Scheduler::name)
            .collect::<Vec<_>>()
            .join(", ")
    }
}

impl fmt::Display for Scheduler {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl Serialize for Scheduler {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.name())
    }
}

impl<'de> Deserialize<'de> for Scheduler {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        Ok(Scheduler::from_name(&String::deserialize(d)?))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip() {
        for s in Scheduler::KNOWN {
            assert_eq!(Scheduler::known(s.name()), Some(s.clone()));
            assert_eq!(Scheduler::from_name(s.name()), s);
        }
        assert_eq!(Scheduler::known("fancy"), None);
        assert_eq!(Scheduler::from_name("fancy").name(), "fancy");
        assert_eq!(
            Scheduler::known_names(),
            "rr, wrr, lc, wlc, lblc, lblcr, dh, sh, sed, nq, mh, fo, ovf, twos"
        );
    }
}
