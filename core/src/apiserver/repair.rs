//! The ClusterIP repair loop: rebuilds the allocation state from the
//! Services and reports what kube-apiserver's repair controller reports.
//!
//! Kubernetes runs it every 3 minutes. Each run rebuilds the allocator from
//! scratch with every Service's ClusterIPs and compares:
//! - `ClusterIPNotValid`: a ClusterIP that does not parse;
//! - `ClusterIPOutOfRange`: outside every service CIDR;
//! - `ClusterIPAlreadyAllocated`: held by two Services;
//! - `ClusterIPNotAllocated`: in use but missing from the stored state
//!   (repaired);
//! - `ServiceCIDRFull`: a service CIDR with no address left;
//! - leaks: allocated but used by no Service. A leak is kept for 3
//!   consecutive runs (in case a Service is being created) and freed on the
//!   third.

use crate::api::service::Service;
use crate::apiserver::cluster_ip::ClusterIpAllocator;
use crate::collections::SortedMap;
use crate::family::IpFamily;
use serde::{Deserialize, Serialize};
use std::net::IpAddr;

/// Runs a leaked address survives before it is freed (Kubernetes:
/// `numRepairsBeforeLeakCleanup`).
pub const REPAIRS_BEFORE_LEAK_CLEANUP: u8 = 3;

/// How many more runs each suspected leak is kept.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(transparent)]
pub struct LeakTracker {
    remaining: SortedMap<IpAddr, u8>,
}

/// One finding of a repair run, as a Kubernetes event.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RepairEvent {
    /// The event reason, such as `ClusterIPAlreadyAllocated`.
    pub reason: String,
    /// `namespace/name` of the Service concerned, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub service: Option<String>,
    /// The event message, in Kubernetes' words.
    pub message: String,
}

/// The outcome of one repair run.
#[derive(Clone, Debug, PartialEq)]
pub struct RepairOutcome {
    /// The corrected allocation state.
    pub allocator: ClusterIpAllocator,
    /// Leak counters to carry into the next run.
    pub leaks: LeakTracker,
    /// What was found, in order.
    pub events: Vec<RepairEvent>,
}

fn event(reason: &str, service: Option<&Service>, message: String) -> RepairEvent {
    RepairEvent {
        reason: reason.to_string(),
        service: service.map(Service::key),
        message,
    }
}

/// Runs one repair pass over `stored` (the allocation state as saved) and
/// every Service, in the order given (Kubernetes lists them by namespace
/// and name; the first holder of a duplicated address keeps it).
pub fn repair_cluster_ips(stored: &ClusterIpAllocator, services: &[&Service], leaks: &LeakTracker) -> RepairOutcome {
    let mut rebuilt = stored.emptied();
    let mut events = Vec::new();
    let mut in_use = SortedMap::new();
    for svc in services {
        if svc.service_type() == "ExternalName" || svc.is_headless() {
            continue;
        }
        for text in &svc.spec.cluster_ips {
            let Ok(ip) = text.parse::<IpAddr>() else {
                events.push(event(
                    "ClusterIPNotValid",
                    Some(svc),
                    format!("Cluster IP {text} is not a valid IP; please recreate service"),
                ));
                continue;
            };
            let family = IpFamily::of(ip);
            if !rebuilt.in_range(ip) {
                let cidrs: Vec<String> = rebuilt
                    .cidrs()
                    .filter(|c| IpFamily::of(c.ip()) == family)
                    .map(|c| c.to_string())
                    .collect();
                let message = format!(
                    "Cluster IP [{family}]:{ip} is not within the configured Service CIDR {}; please recreate service",
                    cidrs.join(", ")
                );
                events.push(event("ClusterIPOutOfRange", Some(svc), message));
                continue;
            }
            if rebuilt.allocate(ip).is_err() {
                let first = in_use
                    .get(&ip)
                    .map_or_else(String::new, |k: &String| format!(" (first held by {k})"));
                let message = format!(
                    "Cluster IP [{family}]:{ip} was assigned to multiple services; please recreate service{first}"
                );
                events.push(event("ClusterIPAlreadyAllocated", Some(svc), message));
                continue;
            }
            in_use.insert(ip, svc.key());
            if !stored.is_allocated(ip) {
                events.push(event(
                    "ClusterIPNotAllocated",
                    Some(svc),
                    format!("Cluster IP [{family}]:{ip} is not allocated; repairing"),
                ));
            }
        }
    }
    let mut next_leaks = LeakTracker::default();
    for ip in stored.allocated() {
        if in_use.contains_key(&ip) {
            continue;
        }
        let remaining = match leaks.remaining.get(&ip) {
            None => {
                let message = format!("the cluster IP {ip} may have leaked: flagging for later clean up");
                events.push(event("ClusterIPLeakSuspected", None, message));
                REPAIRS_BEFORE_LEAK_CLEANUP - 1
            }
            Some(n) => *n,
        };
        if remaining > 0 {
            next_leaks.remaining.insert(ip, remaining - 1);
            // The address comes from `stored`, which has the same ranges as
            // `rebuilt`, and no Service holds it, so this cannot fail.
            let _ = rebuilt.allocate(ip);
        } else {
            events.push(event(
                "ClusterIPLeaked",
                None,
                format!("Cluster IP {ip} appears to have leaked: cleaning up"),
            ));
        }
    }
    for usage in rebuilt.usage() {
        if usage.free == 0 {
            let message = format!(
                "Service CIDR {} is full; you must widen the CIDR in order to create new services",
                usage.cidr
            );
            events.push(event("ServiceCIDRFull", None, message));
        }
    }
    RepairOutcome {
        allocator: rebuilt,
        leaks: next_leaks,
        events,
    }
}
