//! Traffic counters nested in a service's or destination's STATS and STATS64
//! attributes. STATS carries most counters as u32 (bytes as u64), STATS64
//! carries all of them as u64; parsing accepts either width for any counter
//! and skips the kernel's PAD and any counter it does not know.

use netlink_packet_core::{parse_u32, parse_u64, DecodeError, Emitable, ErrorContext, Nla, NlasIterator};

use super::constants::*;
use super::wire::put;

/// The counters IPVS keeps per virtual server and per real server.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct Stats {
    /// Connections scheduled.
    pub conns: u64,
    /// Incoming packets.
    pub in_pkts: u64,
    /// Outgoing packets.
    pub out_pkts: u64,
    /// Incoming bytes.
    pub in_bytes: u64,
    /// Outgoing bytes.
    pub out_bytes: u64,
    /// Connections per second (estimated).
    pub cps: u64,
    /// Incoming packets per second.
    pub in_pps: u64,
    /// Outgoing packets per second.
    pub out_pps: u64,
    /// Incoming bytes per second.
    pub in_bps: u64,
    /// Outgoing bytes per second.
    pub out_bps: u64,
}

/// Which of the two nested encodings a set of counters uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum StatsWidth {
    /// STATS: u32 counters, u64 byte counts.
    Narrow,
    /// STATS64: every counter u64.
    Wide,
}

/// One counter as an attribute of the chosen width.
struct Counter {
    kind: u16,
    value: u64,
    wide: bool,
}

impl Nla for Counter {
    fn value_len(&self) -> usize {
        if self.wide {
            8
        } else {
            4
        }
    }

    fn kind(&self) -> u16 {
        self.kind
    }

    fn emit_value(&self, buffer: &mut [u8]) {
        if self.wide {
            put(buffer, &self.value.to_ne_bytes());
        } else {
            // A narrow counter is truncated like the kernel's `(u32)` cast.
            put(buffer, &(self.value as u32).to_ne_bytes());
        }
    }
}

impl Stats {
    fn counters(&self, width: StatsWidth) -> Vec<Counter> {
        let wide = width == StatsWidth::Wide;
        [
            (IPVS_STATS_ATTR_CONNS, self.conns, wide),
            (IPVS_STATS_ATTR_INPKTS, self.in_pkts, wide),
            (IPVS_STATS_ATTR_OUTPKTS, self.out_pkts, wide),
            (IPVS_STATS_ATTR_INBYTES, self.in_bytes, true),
            (IPVS_STATS_ATTR_OUTBYTES, self.out_bytes, true),
            (IPVS_STATS_ATTR_CPS, self.cps, wide),
            (IPVS_STATS_ATTR_INPPS, self.in_pps, wide),
            (IPVS_STATS_ATTR_OUTPPS, self.out_pps, wide),
            (IPVS_STATS_ATTR_INBPS, self.in_bps, wide),
            (IPVS_STATS_ATTR_OUTBPS, self.out_bps, wide),
        ]
        .into_iter()
        .map(|(kind, value, wide)| Counter { kind, value, wide })
        .collect()
    }

    /// Length of the nested attributes in the given width.
    pub(crate) fn nested_len(&self, width: StatsWidth) -> usize {
        self.counters(width).as_slice().buffer_len()
    }

    /// Write the nested attributes in the given width.
    pub(crate) fn emit_nested(&self, width: StatsWidth, buffer: &mut [u8]) {
        self.counters(width).as_slice().emit(buffer)
    }

    /// Read nested counters of either width.
    pub(crate) fn parse_nested(bytes: &[u8]) -> Result<Self, DecodeError> {
        let mut stats = Stats::default();
        for nla in NlasIterator::new(bytes) {
            let nla = nla.context("failed to parse the attributes nested in STATS")?;
            let (kind, value) = (nla.kind(), nla.value());
            let slot = match kind {
                IPVS_STATS_ATTR_CONNS => &mut stats.conns,
                IPVS_STATS_ATTR_INPKTS => &mut stats.in_pkts,
                IPVS_STATS_ATTR_OUTPKTS => &mut stats.out_pkts,
                IPVS_STATS_ATTR_INBYTES => &mut stats.in_bytes,
                IPVS_STATS_ATTR_OUTBYTES => &mut stats.out_bytes,
                IPVS_STATS_ATTR_CPS => &mut stats.cps,
                IPVS_STATS_ATTR_INPPS => &mut stats.in_pps,
                IPVS_STATS_ATTR_OUTPPS => &mut stats.out_pps,
                IPVS_STATS_ATTR_INBPS => &mut stats.in_bps,
                IPVS_STATS_ATTR_OUTBPS => &mut stats.out_bps,
                // IPVS_STATS_ATTR_PAD (empty, for alignment) and newer counters.
                _ => continue,
            };
            *slot = match value.len() {
                4 => u64::from(parse_u32(value)?),
                _ => parse_u64(value).with_context(|| format!("invalid IPVS_STATS_ATTR {kind}"))?,
            };
        }
        Ok(stats)
    }
}
