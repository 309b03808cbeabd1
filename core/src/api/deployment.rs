//! `apps/v1/Deployment`: replicas of a Pod template, kept running by the
//! Deployment controller ([`crate::controllers::deployment`]).
//!
//! Typed: `replicas`, the label selector (`matchLabels` and
//! `matchExpressions`), the template's metadata and spec (the Pod's own
//! [`PodSpec`], which keeps what svcnet does not read), and the status
//! counts the controller writes. The other `spec` fields of apps/v1
//! (`strategy`, `minReadySeconds`, `revisionHistoryLimit`,
//! `progressDeadlineSeconds`, `paused`) are named too, so that they are
//! accepted and kept while a typo beside them is still refused by the
//! manifest's strict decoding; svcnet does not act on them.

use super::meta::ObjectMeta;
use super::pod::{Extra, PodSpec};
use crate::collections::SortedMap;
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// A Kubernetes Deployment.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Deployment {
    /// `apps/v1`.
    #[serde(default)]
    pub api_version: String,
    /// `Deployment`.
    #[serde(default)]
    pub kind: String,
    /// Name, namespace, labels; `generation` counts spec changes.
    #[serde(default)]
    pub metadata: ObjectMeta,
    /// Replicas, selector and Pod template.
    #[serde(default)]
    pub spec: DeploymentSpec,
    /// Written by the controller; whatever a manifest gives is ignored.
    #[serde(default)]
    pub status: DeploymentStatus,
}

/// `spec` of a Deployment.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct DeploymentSpec {
    /// How many Pods to run; defaulted to 1.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub replicas: Option<i32>,
    /// Which Pods the Deployment owns; required.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub selector: Option<LabelSelector>,
    /// The Pods to create.
    #[serde(default)]
    pub template: PodTemplateSpec,
    /// `RollingUpdate` or `Recreate` and their parameters; kept, not acted on.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub strategy: Option<Value>,
    /// Kept, not acted on.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub min_ready_seconds: Option<i64>,
    /// Kept, not acted on.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub revision_history_limit: Option<i64>,
    /// Kept, not acted on.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub progress_deadline_seconds: Option<i64>,
    /// Kept, not acted on.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub paused: Option<bool>,
}

/// `spec.template`: the Pods' metadata and spec.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PodTemplateSpec {
    /// Labels (which the selector must match) and annotations.
    #[serde(default)]
    pub metadata: ObjectMeta,
    /// The Pods' spec.
    #[serde(default)]
    pub spec: PodSpec,
}

/// A label selector: every `matchLabels` pair and every expression must
/// hold.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct LabelSelector {
    /// Labels a Pod must carry with these values.
    #[serde(default, skip_serializing_if = "SortedMap::is_empty")]
    pub match_labels: SortedMap<String, String>,
    /// Set-based requirements.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub match_expressions: Vec<LabelSelectorRequirement>,
}

/// One entry of `matchExpressions`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct LabelSelectorRequirement {
    /// The label key.
    #[serde(default)]
    pub key: String,
    /// `In`, `NotIn`, `Exists` or `DoesNotExist` (checked by admission).
    #[serde(default)]
    pub operator: String,
    /// The values for `In` and `NotIn`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub values: Vec<String>,
}

/// `status` of a Deployment, as the controller counts it.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct DeploymentStatus {
    /// The `metadata.generation` the counts were made for.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observed_generation: Option<i64>,
    /// Pods the Deployment owns.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub replicas: i32,
    /// Owned Pods made from the current template.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub updated_replicas: i32,
    /// Owned Pods whose Ready condition is True.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub ready_replicas: i32,
    /// Ready Pods (`minReadySeconds` is not modelled: ready is available).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub available_replicas: i32,
    /// Owned Pods that are not available.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub unavailable_replicas: i32,
    /// Anything else a manifest gave (conditions, ...); dropped on apply.
    #[serde(flatten)]
    pub extra: Extra,
}

fn is_zero(n: &i32) -> bool {
    *n == 0
}

impl Deployment {
    /// `spec.replicas`, 1 when unset.
    pub fn replicas(&self) -> i32 {
        self.spec.replicas.unwrap_or(1)
    }

    /// `metadata.generation` as a number (0 when unset or not a number).
    pub fn generation(&self) -> i64 {
        self.metadata.generation.as_ref().and_then(Value::as_i64).unwrap_or(0)
    }
}

impl LabelSelector {
    /// True when the selector names nothing (it would select everything).
    pub fn is_empty(&self) -> bool {
        self.match_labels.is_empty() && self.match_expressions.is_empty()
    }

    /// Whether `labels` satisfy every pair and every expression. An
    /// expression with an unknown operator matches nothing (admission
    /// refuses it first).
    pub fn matches(&self, labels: &SortedMap<String, String>) -> bool {
        self.match_labels.iter().all(|(k, v)| labels.get(k) == Some(v))
            && self.match_expressions.iter().all(|r| r.matches(labels))
    }

    /// `key=value` pairs and expressions as kubectl prints a selector
    /// (`app=web,tier in (a,b)`), `<none>` when empty.
    pub fn to_text(&self) -> String {
        let mut parts: Vec<String> = self.match_labels.iter().map(|(k, v)| format!("{k}={v}")).collect();
        for r in &self.match_expressions {
            parts.push(match r.operator.as_str() {
                "In" => format!("{} in ({})", r.key, r.values.join(",")),
                "NotIn" => format!("{} notin ({})", r.key, r.values.join(",")),
                "Exists" => r.key.clone(),
                "DoesNotExist" => format!("!{}", r.key),
                other => format!("{} {other} ({})", r.key, r.values.join(",")),
            });
        }
        if parts.is_empty() {
            "<none>".into()
        } else {
            parts.join(",")
        }
    }
}

impl LabelSelectorRequirement {
    fn matches(&self, labels: &SortedMap<String, String>) -> bool {
        let value = labels.get(&self.key);
        match self.operator.as_str() {
            "In" => value.is_some_and(|v| self.values.contains(v)),
            "NotIn" => value.is_none_or(|v| !self.values.contains(v)),
            "Exists" => value.is_some(),
            "DoesNotExist" => value.is_none(),
            _ => false,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn labels(pairs: &[(&str, &str)]) -> SortedMap<String, String> {
        pairs.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect()
    }

    fn requirement(key: &str, operator: &str, values: &[&str]) -> LabelSelectorRequirement {
        LabelSelectorRequirement {
            key: key.into(),
            operator: operator.into(),
            values: values.iter().map(|v| v.to_string()).collect(),
        }
    }

    #[test]
    fn selectors_match_pairs_and_expressions() {
        let web = labels(&[("app", "web"), ("tier", "front")]);
        let mut sel = LabelSelector {
            match_labels: labels(&[("app", "web")]),
            ..LabelSelector::default()
        };
        assert!(sel.matches(&web));
        assert!(!sel.matches(&labels(&[("app", "db")])));
        sel.match_expressions
            .push(requirement("tier", "In", &["front", "edge"]));
        assert!(sel.matches(&web));
        sel.match_expressions.push(requirement("canary", "DoesNotExist", &[]));
        assert!(sel.matches(&web));
        sel.match_expressions.push(requirement("tier", "NotIn", &["front"]));
        assert!(!sel.matches(&web));
        let exists = LabelSelector {
            match_expressions: vec![requirement("app", "Exists", &[])],
            ..LabelSelector::default()
        };
        assert!(exists.matches(&web) && !exists.matches(&labels(&[])));
        let unknown = LabelSelector {
            match_expressions: vec![requirement("app", "Near", &["web"])],
            ..LabelSelector::default()
        };
        assert!(!unknown.matches(&web));
        assert_eq!(sel.to_text(), "app=web,tier in (front,edge),!canary,tier notin (front)");
        assert_eq!(LabelSelector::default().to_text(), "<none>");
    }

    #[test]
    fn replicas_default_to_one_and_generation_reads_a_number() {
        let mut d = Deployment::default();
        assert_eq!(d.replicas(), 1);
        d.spec.replicas = Some(0);
        assert_eq!(d.replicas(), 0);
        assert_eq!(d.generation(), 0);
        d.metadata.generation = Some(Value::from(3));
        assert_eq!(d.generation(), 3);
    }
}
