//! The Endpoints controller's cap: a `v1/Endpoints` object holds at most
//! 1,000 addresses. Past that it is truncated and annotated
//! `endpoints.kubernetes.io/over-capacity: truncated`, which is one reason
//! the object is legacy: EndpointSlices have no such cap (a Service gets
//! as many slices of up to 100 endpoints as it needs). Truncation keeps
//! ready addresses before not-ready ones and shares what fits among the
//! subsets in proportion to their size, each share rounded up, so the last
//! subsets may get less than their proportion.

use crate::api::endpoints::EndpointSubset;

/// The most addresses (ready and not ready) an Endpoints object holds.
pub const MAX_CAPACITY: usize = 1000;

/// The annotation on an Endpoints object that was truncated.
pub const OVER_CAPACITY_ANNOTATION: &str = "endpoints.kubernetes.io/over-capacity";

/// Truncates `subsets` to [`MAX_CAPACITY`] addresses; true when it had to.
pub fn truncate(subsets: &mut [EndpointSubset]) -> bool {
    let ready: usize = subsets.iter().map(|s| s.addresses.len()).sum();
    let not_ready: usize = subsets.iter().map(|s| s.not_ready_addresses.len()).sum();
    if ready + not_ready <= MAX_CAPACITY {
        return false;
    }
    // Too many ready addresses: share the capacity among them and drop
    // every not-ready one. Otherwise keep every ready address and share
    // what is left among the not-ready ones.
    let cut_ready = ready > MAX_CAPACITY;
    let (room, total) = if cut_ready {
        (MAX_CAPACITY, ready)
    } else {
        (MAX_CAPACITY - ready, not_ready)
    };
    let mut left = room;
    for subset in subsets.iter_mut() {
        let here = if cut_ready {
            subset.addresses.len()
        } else {
            subset.not_ready_addresses.len()
        };
        // ceil(here / total * room), in integers.
        let share = (here * room).div_ceil(total).min(left);
        if cut_ready {
            subset.addresses.truncate(share);
            subset.not_ready_addresses.clear();
            left -= subset.addresses.len();
        } else {
            subset.not_ready_addresses.truncate(share);
            left -= subset.not_ready_addresses.len();
        }
    }
    true
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::api::endpoints::EndpointAddress;

    fn subset(ready: usize, not_ready: usize) -> EndpointSubset {
        let address = |i: usize| EndpointAddress {
            ip: format!("10.0.{}.{}", i / 250, i % 250),
            ..EndpointAddress::default()
        };
        EndpointSubset {
            addresses: (0..ready).map(address).collect(),
            not_ready_addresses: (0..not_ready).map(address).collect(),
            ports: Vec::new(),
        }
    }

    fn counts(subsets: &[EndpointSubset]) -> Vec<(usize, usize)> {
        subsets
            .iter()
            .map(|s| (s.addresses.len(), s.not_ready_addresses.len()))
            .collect()
    }

    #[test]
    fn a_thousand_fit_and_more_are_cut_ready_first_in_proportion() {
        let mut fits = vec![subset(600, 400)];
        assert!(!truncate(&mut fits));
        assert_eq!(counts(&fits), [(600, 400)]);
        // 900 ready stay; 100 of the 300 not ready, shared 2:1 and rounded up.
        let mut some = vec![subset(500, 200), subset(400, 100)];
        assert!(truncate(&mut some));
        assert_eq!(counts(&some), [(500, 67), (400, 33)]);
        // 1,500 ready: 1,000 of them, shared 1:2, and no not-ready one.
        let mut many = vec![subset(500, 10), subset(1000, 10)];
        assert!(truncate(&mut many));
        assert_eq!(counts(&many), [(334, 0), (666, 0)]);
    }
}
