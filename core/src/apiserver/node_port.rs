//! NodePort allocation over `--service-node-port-range`.
//!
//! Owns the port range type ([`PortRange`], parsed like Kubernetes'
//! `"30000-32767"`, `"30000+2767"` or a single port) and which NodePorts are
//! taken, split into a static and a dynamic band (KEP-3070) by
//! [`band_offset`]`(size, 32, 16, 128)`: the default range's static band is
//! 30000–30085. Also owns the usage report and the snapshot/restore format.

use crate::apiserver::range::{band_offset, parse_run, BandedRange, RangeError};
use crate::rng::Rng;
use serde::{Deserialize, Serialize};
use std::fmt;
use std::ops::RangeInclusive;
use std::str::FromStr;
use thiserror::Error;

/// Why a port range did not parse. Messages follow Kubernetes' `PortRange`
/// parser and name the bad text.
#[derive(Clone, Debug, PartialEq, Eq, Error)]
pub enum PortRangeError {
    /// Empty text, or both `-` and `+` notations at once.
    #[error("unable to parse port range: {text}")]
    Unparseable {
        /// The whole text.
        text: String,
    },
    /// One side is not a decimal number.
    #[error("invalid port \"{port}\" in port range \"{text}\"")]
    InvalidPort {
        /// The side that is not a number.
        port: String,
        /// The whole text.
        text: String,
    },
    /// A port above 65535.
    #[error("the port range cannot be greater than 65535: {text}")]
    TooLarge {
        /// The whole text.
        text: String,
    },
    /// The last port is below the first.
    #[error("end port cannot be less than start port: {text}")]
    EndBeforeStart {
        /// The whole text.
        text: String,
    },
}

/// An inclusive, non-empty range of ports, written `first-last`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub struct PortRange {
    first: u16,
    last: u16,
}

impl PortRange {
    /// Kubernetes' default `--service-node-port-range`, 30000-32767.
    pub const DEFAULT: PortRange = PortRange {
        first: 30000,
        last: 32767,
    };

    /// The range `first..=last`, or `None` if `last < first`.
    pub fn new(first: u16, last: u16) -> Option<PortRange> {
        (first <= last).then_some(PortRange { first, last })
    }

    /// The first port.
    pub fn first(self) -> u16 {
        self.first
    }

    /// The last port (inclusive).
    pub fn last(self) -> u16 {
        self.last
    }

    /// The number of ports (1 to 65536).
    pub fn size(self) -> u32 {
        u32::from(self.last) - u32::from(self.first) + 1
    }

    /// Whether `port` is in the range.
    pub fn contains(self, port: u16) -> bool {
        (self.first..=self.last).contains(&port)
    }
}

impl Default for PortRange {
    fn default() -> PortRange {
        PortRange::DEFAULT
    }
}

impl fmt::Display for PortRange {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}-{}", self.first, self.last)
    }
}

impl FromStr for PortRange {
    type Err = PortRangeError;

    /// Parses `"30000-32767"`, `"30000+2767"` (first + offset, the same range)
    /// or `"30000"` (one port), ignoring surrounding whitespace.
    fn from_str(text: &str) -> Result<PortRange, PortRangeError> {
        let value = text.trim();
        let owned = || value.to_string();
        let number = |port: &str| -> Result<u64, PortRangeError> {
            if port.is_empty() || !port.bytes().all(|b| b.is_ascii_digit()) {
                return Err(PortRangeError::InvalidPort {
                    port: port.to_string(),
                    text: owned(),
                });
            }
            // All digits: only overflow can fail, and that is too large anyway.
            Ok(port.parse().unwrap_or(u64::MAX))
        };
        let (low, high) = match (value.split_once('-'), value.split_once('+')) {
            (None, None) if !value.is_empty() => {
                let port = number(value)?;
                (port, port)
            }
            (Some((low, high)), None) => (number(low)?, number(high)?),
            (None, Some((low, offset))) => {
                let low = number(low)?;
                (low, low.saturating_add(number(offset)?))
            }
            _ => return Err(PortRangeError::Unparseable { text: owned() }),
        };
        let (Ok(first), Ok(last)) = (u16::try_from(low), u16::try_from(high)) else {
            return Err(PortRangeError::TooLarge { text: owned() });
        };
        PortRange::new(first, last).ok_or(PortRangeError::EndBeforeStart { text: owned() })
    }
}

impl TryFrom<String> for PortRange {
    type Error = PortRangeError;

    fn try_from(text: String) -> Result<PortRange, PortRangeError> {
        text.parse()
    }
}

impl From<PortRange> for String {
    fn from(range: PortRange) -> String {
        range.to_string()
    }
}

/// Why a NodePort operation failed. Messages reuse Kubernetes' wording.
#[derive(Clone, Debug, PartialEq, Eq, Error)]
pub enum NodePortError {
    /// The requested port is already allocated.
    #[error("provided port is already allocated")]
    AlreadyAllocated,
    /// The requested port is outside the range.
    #[error("provided port is not in the valid range. The range of valid ports is {range}")]
    NotInRange {
        /// The configured range.
        range: PortRange,
    },
    /// Every port is allocated.
    #[error("range is full")]
    Full,
    /// A snapshot was taken for another port range.
    #[error("the provided range does not match the current range")]
    RangeMismatch,
    /// A snapshot entry is not a port or port range inside the range, or
    /// overlaps another entry.
    #[error("invalid snapshot of {range}: {reason}")]
    InvalidSnapshot {
        /// The configured range.
        range: PortRange,
        /// What is wrong with the entry.
        reason: String,
    },
}

/// A serialisable copy of a [`NodePortAllocator`]'s allocations.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct NodePortSnapshot {
    /// The port range, e.g. `30000-32767`.
    pub range: String,
    /// The allocated ports as merged runs in increasing order: a single port
    /// (`30080`) or an inclusive range (`30000-30015`).
    pub allocated: Vec<String>,
}

/// How full the NodePort range is, and where its bands lie.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct NodePortUsage {
    /// The port range.
    pub range: PortRange,
    /// The number of ports.
    pub size: u32,
    /// The number of allocated ports.
    pub used: u32,
    /// The number of free ports.
    pub free: u32,
    /// The first port of the static band (`None` when there is no split).
    pub static_first: Option<u16>,
    /// The last port of the static band.
    pub static_last: Option<u16>,
    /// The first port of the dynamic band.
    pub dynamic_first: Option<u16>,
    /// The last port of the dynamic band.
    pub dynamic_last: Option<u16>,
}

/// The NodePort allocator: one port range with a static and a dynamic band.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NodePortAllocator {
    range: PortRange,
    /// Offsets from `range.first()`.
    ports: BandedRange,
}

impl Default for NodePortAllocator {
    fn default() -> NodePortAllocator {
        NodePortAllocator::new(PortRange::DEFAULT)
    }
}

impl NodePortAllocator {
    /// An empty allocator over `range`.
    pub fn new(range: PortRange) -> NodePortAllocator {
        let size = u128::from(range.size());
        NodePortAllocator {
            range,
            ports: BandedRange::new(size, band_offset(size, 32, 16, 128)),
        }
    }

    /// The port range.
    pub fn range(&self) -> PortRange {
        self.range
    }

    /// Allocates the given port (a user-picked `nodePort`).
    pub fn allocate(&mut self, port: u16) -> Result<(), NodePortError> {
        let offset = self
            .offset_of(port)
            .ok_or(NodePortError::NotInRange { range: self.range })?;
        self.ports.allocate(offset).map_err(|err| match err {
            RangeError::AlreadyAllocated { .. } => NodePortError::AlreadyAllocated,
            _ => NodePortError::NotInRange { range: self.range },
        })
    }

    /// Allocates a random free port, dynamic band first (see
    /// [`BandedRange::allocate_next`]).
    pub fn allocate_next(&mut self, rng: &mut Rng) -> Result<u16, NodePortError> {
        self.ports
            .allocate_next(rng)
            .map(|offset| self.port_at(offset))
            .ok_or(NodePortError::Full)
    }

    /// Frees `port`; `false` if it was not allocated (or not in the range).
    pub fn release(&mut self, port: u16) -> bool {
        self.offset_of(port).is_some_and(|offset| self.ports.release(offset))
    }

    /// Whether `port` is allocated.
    pub fn is_allocated(&self, port: u16) -> bool {
        self.offset_of(port)
            .is_some_and(|offset| self.ports.is_allocated(offset))
    }

    /// Usage and bands.
    pub fn usage(&self) -> NodePortUsage {
        let (size, static_len) = (self.ports.size(), self.ports.static_len());
        let band = |first: u128, end: u128| {
            if first < end {
                (Some(self.port_at(first)), Some(self.port_at(end - 1)))
            } else {
                (None, None)
            }
        };
        let (static_first, static_last) = band(0, static_len);
        let (dynamic_first, dynamic_last) = band(static_len, size);
        // Counts are at most 65536.
        let count = |n: u128| u32::try_from(n).unwrap_or(u32::MAX);
        NodePortUsage {
            range: self.range,
            size: self.range.size(),
            used: count(self.ports.used()),
            free: count(self.ports.free()),
            static_first,
            static_last,
            dynamic_first,
            dynamic_last,
        }
    }

    /// A serialisable copy of the allocations.
    pub fn snapshot(&self) -> NodePortSnapshot {
        NodePortSnapshot {
            range: self.range.to_string(),
            allocated: self.ports.runs().map(|run| self.format_run(run)).collect(),
        }
    }

    /// Replaces the allocations with those of `snapshot`, which must be for
    /// the same port range. On error nothing changes.
    pub fn restore(&mut self, snapshot: &NodePortSnapshot) -> Result<(), NodePortError> {
        if snapshot.range.parse::<PortRange>().ok() != Some(self.range) {
            return Err(NodePortError::RangeMismatch);
        }
        let runs = snapshot
            .allocated
            .iter()
            .map(|entry| self.parse_run(entry))
            .collect::<Result<Vec<_>, _>>()?;
        let mut ports = self.ports.clone();
        ports.restore_runs(runs).map_err(|err| {
            let reason = match err {
                RangeError::OverlappingRuns { first, last } => {
                    format!("\"{}\" overlaps another entry", self.format_run(first..=last))
                }
                other => other.to_string(),
            };
            NodePortError::InvalidSnapshot {
                range: self.range,
                reason,
            }
        })?;
        self.ports = ports;
        Ok(())
    }

    fn offset_of(&self, port: u16) -> Option<u128> {
        self.range.contains(port).then(|| u128::from(port - self.range.first))
    }

    /// The port at `offset` (`offset < size`, so it stays in the range).
    fn port_at(&self, offset: u128) -> u16 {
        self.range.first.wrapping_add(offset as u16)
    }

    fn format_run(&self, run: RangeInclusive<u128>) -> String {
        let (first, last) = run.into_inner();
        if first == last {
            self.port_at(first).to_string()
        } else {
            format!("{}-{}", self.port_at(first), self.port_at(last))
        }
    }

    /// Parses a snapshot entry (`port` or `first-last`) into offsets.
    fn parse_run(&self, entry: &str) -> Result<RangeInclusive<u128>, NodePortError> {
        parse_run(entry, |text| {
            let port: u16 = text.parse().map_err(|_| "is not a port or a port range")?;
            self.offset_of(port).ok_or("is not inside the range")
        })
        .map_err(|reason| NodePortError::InvalidSnapshot {
            range: self.range,
            reason,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn range(text: &str) -> PortRange {
        text.parse().unwrap()
    }

    #[test]
    fn parses_kubernetes_port_range_forms() {
        assert_eq!(range("30000-32767"), PortRange::DEFAULT);
        assert_eq!(range("30000+2767"), PortRange::DEFAULT);
        assert_eq!(range(" 30000-32767\n"), PortRange::DEFAULT);
        assert_eq!(range("8080"), PortRange::new(8080, 8080).unwrap());
        assert_eq!(range("8080").to_string(), "8080-8080");
        assert_eq!(range("0-65535").size(), 65536);
        assert_eq!(PortRange::DEFAULT.size(), 2768);
        assert_eq!(PortRange::default().to_string(), "30000-32767");
        assert_eq!(PortRange::new(2, 1), None);
    }

    #[test]
    fn port_range_errors_name_the_text() {
        for (text, message) in [
            ("", "unable to parse port range: "),
            ("1-2+3", "unable to parse port range: 1-2+3"),
            ("abc", "invalid port \"abc\" in port range \"abc\""),
            ("30000-", "invalid port \"\" in port range \"30000-\""),
            ("-5", "invalid port \"\" in port range \"-5\""),
            ("1-2-3", "invalid port \"2-3\" in port range \"1-2-3\""),
            ("+5", "invalid port \"\" in port range \"+5\""),
            (
                "30000-70000",
                "the port range cannot be greater than 65535: 30000-70000",
            ),
            ("65535+1", "the port range cannot be greater than 65535: 65535+1"),
            (
                "99999999999999999999999",
                "the port range cannot be greater than 65535: 99999999999999999999999",
            ),
            ("32767-30000", "end port cannot be less than start port: 32767-30000"),
        ] {
            assert_eq!(text.parse::<PortRange>().unwrap_err().to_string(), message, "{text:?}");
        }
    }

    #[test]
    fn port_range_serde_is_a_string() {
        let json = serde_json::to_string(&PortRange::DEFAULT).unwrap();
        assert_eq!(json, "\"30000-32767\"");
        let back: PortRange = serde_json::from_str("\"30000+2767\"").unwrap();
        assert_eq!(back, PortRange::DEFAULT);
        let err = serde_json::from_str::<PortRange>("\"9-1\"").unwrap_err();
        assert!(err.to_string().contains("end port cannot be less than start port: 9-1"));
    }

    #[test]
    fn default_bands() {
        let usage = NodePortAllocator::default().usage();
        assert_eq!(
            serde_json::to_value(&usage).unwrap(),
            serde_json::json!({
                "range": "30000-32767", "size": 2768, "used": 0, "free": 2768,
                "staticFirst": 30000, "staticLast": 30085,
                "dynamicFirst": 30086, "dynamicLast": 32767
            })
        );
        // At most 16 ports: no split. 17 ports: a 16-port static band.
        let small = NodePortAllocator::new(range("30000-30015")).usage();
        assert_eq!((small.static_first, small.dynamic_first), (None, Some(30000)));
        let seventeen = NodePortAllocator::new(range("30000-30016")).usage();
        assert_eq!(
            (seventeen.static_last, seventeen.dynamic_first, seventeen.dynamic_last),
            (Some(30015), Some(30016), Some(30016))
        );
        let all = NodePortAllocator::new(range("0-65535")).usage();
        assert_eq!((all.static_last, all.dynamic_last), (Some(127), Some(65535)));
    }

    #[test]
    fn errors_use_kubernetes_wording() {
        let mut ports = NodePortAllocator::default();
        ports.allocate(30080).unwrap();
        assert!(ports.is_allocated(30080));
        assert_eq!(
            ports.allocate(30080).unwrap_err().to_string(),
            "provided port is already allocated"
        );
        for bad in [29999, 32768, 0, 65535] {
            assert_eq!(
                ports.allocate(bad).unwrap_err().to_string(),
                "provided port is not in the valid range. The range of valid ports is 30000-32767"
            );
            assert!(!ports.is_allocated(bad));
            assert!(!ports.release(bad));
        }
        let mut one = NodePortAllocator::new(range("31000"));
        let mut rng = Rng::new(1);
        assert_eq!(one.allocate_next(&mut rng), Ok(31000));
        assert_eq!(one.allocate_next(&mut rng).unwrap_err().to_string(), "range is full");
        assert!(one.release(31000));
        assert!(!one.release(31000));
    }

    #[test]
    fn dynamic_band_first_then_static_band() {
        let mut ports = NodePortAllocator::default();
        let mut rng = Rng::new(6);
        for _ in 0..(2768 - 86) {
            let port = ports.allocate_next(&mut rng).unwrap();
            assert!(port >= 30086, "{port} is in the static band");
        }
        let mut statics: Vec<u16> = (0..86).map(|_| ports.allocate_next(&mut rng).unwrap()).collect();
        crate::sort::sort(&mut statics);
        assert_eq!(statics, (30000..=30085).collect::<Vec<_>>());
        assert_eq!(ports.allocate_next(&mut rng), Err(NodePortError::Full));
        assert_eq!(ports.snapshot().allocated, ["30000-32767"]);
        assert_eq!(ports.usage().free, 0);
    }

    #[test]
    fn snapshot_json_and_restore() {
        let mut ports = NodePortAllocator::default();
        for port in [30000, 30001, 30002, 30500, 32767] {
            ports.allocate(port).unwrap();
        }
        let snapshot = ports.snapshot();
        let json = serde_json::to_value(&snapshot).unwrap();
        assert_eq!(
            json,
            serde_json::json!({
                "range": "30000-32767",
                "allocated": ["30000-30002", "30500", "32767"]
            })
        );
        let mut other = NodePortAllocator::default();
        other.allocate(31000).unwrap();
        other.restore(&serde_json::from_value(json).unwrap()).unwrap();
        assert_eq!(other, ports);

        let before = other.clone();
        let mismatch = NodePortSnapshot {
            range: "30000-32768".to_string(),
            allocated: vec![],
        };
        assert_eq!(
            other.restore(&mismatch).unwrap_err().to_string(),
            "the provided range does not match the current range"
        );
        let bad = |entries: &[&str]| NodePortSnapshot {
            range: "30000+2767".to_string(),
            allocated: entries.iter().map(|e| e.to_string()).collect(),
        };
        for (entries, message) in [
            (vec!["29999"], "\"29999\" is not inside the range"),
            (vec!["http"], "\"http\" is not a port or a port range"),
            (vec!["30010-30001"], "\"30010-30001\" ends before it starts"),
            (vec!["30000-30010", "30005"], "\"30005\" overlaps another entry"),
        ] {
            assert_eq!(
                other.restore(&bad(&entries)).unwrap_err().to_string(),
                format!("invalid snapshot of 30000-32767: {message}")
            );
        }
        assert_eq!(other, before);
    }
}
