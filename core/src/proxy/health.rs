//! kube-proxy's health verdict (`/healthz` and `/livez` on its healthz
//! port), as state with time passed in: a proxy is healthy unless a change
//! has waited for a sync longer than the health timeout (twice the sync
//! period). Each IP family is tracked apart, as kube-proxy runs a proxier
//! per family; `/healthz` also needs the node to be eligible (its Node
//! exists, is not being deleted, and is not tainted
//! `ToBeDeletedByClusterAutoscaler`). The bodies are kube-proxy's JSON.

use crate::api::Node;
use crate::collections::SortedMap;
use crate::family::IpFamily;
use crate::time::Time;
use serde_json::{json, Value};
use std::time::Duration;

/// The taint the cluster autoscaler puts on a node it will remove.
pub const TO_BE_DELETED_TAINT: &str = "ToBeDeletedByClusterAutoscaler";

/// One family's sync times.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct FamilyHealth {
    last_updated: Time,
    oldest_queued: Option<Time>,
}

/// The health of the proxy's syncs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProxyHealth {
    timeout: Duration,
    families: SortedMap<IpFamily, FamilyHealth>,
}

/// An answer of `/healthz` or `/livez`.
#[derive(Debug, Clone, PartialEq)]
pub struct HealthAnswer {
    /// 200 when healthy, else 503.
    pub healthy: bool,
    /// kube-proxy's JSON body.
    pub body: String,
}

impl ProxyHealth {
    /// Health with this timeout (kube-proxy: twice the sync period).
    pub fn new(timeout: Duration) -> ProxyHealth {
        ProxyHealth {
            timeout,
            families: SortedMap::new(),
        }
    }

    /// A sync of `family` succeeded at `now` (and at start, so a proxy
    /// whose first sync never succeeds still turns unhealthy).
    pub fn updated(&mut self, family: IpFamily, now: Time) {
        self.families.insert(
            family,
            FamilyHealth {
                last_updated: now,
                oldest_queued: None,
            },
        );
    }

    /// A change for `family` is waiting for a sync since `now` (the first
    /// one counts until a sync).
    pub fn queued(&mut self, family: IpFamily, now: Time) {
        if let Some(f) = self.families.get_mut(&family) {
            f.oldest_queued.get_or_insert(now);
        }
    }

    /// Whether every family's waiting changes are younger than the timeout.
    pub fn healthy(&self, now: Time) -> bool {
        self.families.values().all(|f| self.family_healthy(f, now))
    }

    fn family_healthy(&self, f: &FamilyHealth, now: Time) -> bool {
        f.oldest_queued.is_none_or(|q| now.since(q) < self.timeout)
    }

    /// `/livez`: the sync verdict alone.
    pub fn livez(&self, now: Time) -> HealthAnswer {
        let healthy = self.healthy(now);
        HealthAnswer {
            healthy,
            body: self.body(now, healthy, None),
        }
    }

    /// `/healthz`: the sync verdict and the node's eligibility.
    pub fn healthz(&self, now: Time, node_eligible: bool) -> HealthAnswer {
        let healthy = self.healthy(now) && node_eligible;
        HealthAnswer {
            healthy,
            body: self.body(now, healthy, Some(node_eligible)),
        }
    }

    /// kube-proxy's body: `lastUpdated` (now when healthy, as kube-proxy
    /// reports it), `currentTime`, `nodeEligible` (`/healthz` only),
    /// `healthy`, and per family its own `lastUpdated` and `healthy`.
    fn body(&self, now: Time, healthy: bool, node_eligible: Option<bool>) -> String {
        let latest = self.families.values().map(|f| f.last_updated).max();
        let last_updated = if healthy { Some(now) } else { latest };
        // Go's field order, which a map would not keep.
        let mut body = format!(
            "{{\"lastUpdated\":{},\"currentTime\":{}",
            json!(go_time(last_updated)),
            json!(now.rfc3339_nano())
        );
        if let Some(eligible) = node_eligible {
            body.push_str(&format!(",\"nodeEligible\":{eligible}"));
        }
        body.push_str(&format!(",\"healthy\":{}", self.healthy(now)));
        let status: Vec<String> = self
            .families
            .iter()
            .map(|(family, f)| {
                format!(
                    "{}:{{\"lastUpdated\":{},\"healthy\":{}}}",
                    json!(family.as_str()),
                    json!(f.last_updated.rfc3339_nano()),
                    self.family_healthy(f, now)
                )
            })
            .collect();
        if !status.is_empty() {
            body.push_str(&format!(",\"status\":{{{}}}", status.join(",")));
        }
        body.push('}');
        body
    }
}

/// Go's JSON of a `time.Time`, the zero time when there is none.
fn go_time(t: Option<Time>) -> String {
    t.map_or_else(|| "0001-01-01T00:00:00Z".to_string(), Time::rfc3339_nano)
}

/// Whether the node may take traffic, as kube-proxy's `/healthz` judges:
/// it exists, is not being deleted, and is not tainted
/// `ToBeDeletedByClusterAutoscaler`.
pub fn node_eligible(node: Option<&Node>) -> bool {
    let Some(node) = node else {
        return false;
    };
    let tainted = node.spec.get("taints").and_then(Value::as_array).is_some_and(|taints| {
        taints
            .iter()
            .any(|t| t.get("key").and_then(Value::as_str) == Some(TO_BE_DELETED_TAINT))
    });
    node.metadata.deletion_timestamp.is_none() && !tainted
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(secs: u64) -> Time {
        Time::from_secs(1_795_547_000 + secs)
    }

    #[test]
    fn unhealthy_only_when_a_change_waits_longer_than_the_timeout() {
        let mut h = ProxyHealth::new(Duration::from_secs(60));
        assert!(h.healthy(at(0)), "nothing tracked yet");
        h.updated(IpFamily::IPv4, at(0));
        h.queued(IpFamily::IPv4, at(10));
        h.queued(IpFamily::IPv4, at(50));
        assert!(h.healthy(at(69)));
        assert!(!h.healthy(at(70)), "the first queued change counts");
        h.updated(IpFamily::IPv4, at(71));
        assert!(
            h.healthy(at(500)),
            "no change waiting: healthy however old the last sync"
        );
    }

    #[test]
    fn bodies_are_kube_proxys() {
        let mut h = ProxyHealth::new(Duration::from_secs(60));
        h.updated(IpFamily::IPv4, at(0));
        let ok = h.healthz(at(5), true);
        assert!(ok.healthy);
        let body: Value = serde_json::from_str(&ok.body).unwrap();
        assert_eq!(
            body,
            json!({"lastUpdated": at(5).rfc3339_nano(), "currentTime": at(5).rfc3339_nano(), "nodeEligible": true,
                   "healthy": true, "status": {"IPv4": {"lastUpdated": at(0).rfc3339_nano(), "healthy": true}}})
        );
        assert!(ok.body.starts_with("{\"lastUpdated\":"), "field order: {}", ok.body);
        h.queued(IpFamily::IPv4, at(10));
        let bad = h.livez(at(100));
        assert!(!bad.healthy);
        let body: Value = serde_json::from_str(&bad.body).unwrap();
        assert_eq!(body["lastUpdated"], json!(at(0).rfc3339_nano()));
        assert!(body.get("nodeEligible").is_none());
        assert!(
            !h.healthz(at(5), false).healthy,
            "an ineligible node fails /healthz only"
        );
    }

    #[test]
    fn a_node_marked_for_removal_is_not_eligible() {
        let node: Node = serde_json::from_value(json!({"metadata": {"name": "n"}, "spec": {"taints": [{"key": TO_BE_DELETED_TAINT, "effect": "NoSchedule"}]}})).unwrap();
        assert!(!node_eligible(Some(&node)));
        assert!(!node_eligible(None));
        let fine: Node = serde_json::from_value(json!({"metadata": {"name": "n"}})).unwrap();
        assert!(node_eligible(Some(&fine)));
    }
}
