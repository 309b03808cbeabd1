//! Deployment validation, in kube-apiserver's order and words: the
//! metadata (the name is an RFC 1123 subdomain), `spec.replicas`, the label
//! selector (required, not empty, well formed, and immutable on update),
//! the template's labels against the selector, the template's Pod spec
//! (containers, their names, images and ports; `restartPolicy: Always`),
//! and the non-negative counts beside them.
//!
//! Bad values that are maps or structs are printed as JSON, as
//! kube-apiserver v1.34 and later print them
//! (`Invalid value: {"app":"x"}`).

use super::metadata::{validate_labels, validate_object_meta};
use super::names::{dns1123_label, dns1123_subdomain, label_value, qualified_name};
use crate::api::deployment::{Deployment, LabelSelector};
use crate::api::pod::PodSpec;
use crate::collections::SortedMap;
use crate::field::{BadValue, FieldError, FieldPath};
use serde::Serialize;

/// kube-apiserver's detail for a negative count.
const NEGATIVE: &str = "must be greater than or equal to 0";

/// Every problem with `d` as a new object.
pub fn validate_deployment(d: &Deployment) -> Vec<FieldError> {
    let mut errs = validate_object_meta(&d.metadata, true, dns1123_subdomain);
    let spec = FieldPath::new("spec");
    nonnegative(&mut errs, &spec.child("replicas"), d.spec.replicas.map(i64::from));
    let selector_path = spec.child("selector");
    let template = spec.child("template");
    match &d.spec.selector {
        None => {
            errs.push(FieldError::required(&selector_path, ""));
            // No selector selects nothing, so it cannot match the template.
            errs.push(mismatch(&template, &d.spec.template.metadata.labels));
            errs.extend(validate_template(d, &template));
        }
        Some(selector) => {
            let problems = validate_selector(selector, &selector_path);
            let well_formed = problems.is_empty();
            errs.extend(problems);
            if selector.is_empty() {
                errs.push(FieldError::invalid(
                    &selector_path,
                    json(selector),
                    "empty selector is invalid for deployment",
                ));
            }
            if !well_formed {
                errs.push(FieldError::invalid(
                    &selector_path,
                    json(selector),
                    "invalid label selector",
                ));
            } else {
                if !selector.is_empty() && !selector.matches(&d.spec.template.metadata.labels) {
                    errs.push(mismatch(&template, &d.spec.template.metadata.labels));
                }
                errs.extend(validate_template(d, &template));
            }
        }
    }
    nonnegative(&mut errs, &spec.child("minReadySeconds"), d.spec.min_ready_seconds);
    nonnegative(
        &mut errs,
        &spec.child("revisionHistoryLimit"),
        d.spec.revision_history_limit,
    );
    nonnegative(
        &mut errs,
        &spec.child("progressDeadlineSeconds"),
        d.spec.progress_deadline_seconds,
    );
    errs
}

/// The problems with `new` replacing `old`: those of a new object, and a
/// selector that changed (immutable in apps/v1).
pub fn validate_deployment_update(new: &Deployment, old: &Deployment) -> Vec<FieldError> {
    let mut errs = validate_deployment(new);
    if new.spec.selector != old.spec.selector {
        let path = FieldPath::new("spec").child("selector");
        let value = new.spec.selector.as_ref().map_or(BadValue::Json("null".into()), json);
        errs.push(FieldError::invalid(&path, value, "field is immutable"));
    }
    errs
}

/// `path: Invalid value: n: must be greater than or equal to 0` for a
/// negative `n`.
fn nonnegative(errs: &mut Vec<FieldError>, path: &FieldPath, value: Option<i64>) {
    if let Some(n) = value.filter(|n| *n < 0) {
        errs.push(FieldError::invalid(path, n, NEGATIVE));
    }
}

fn mismatch(template: &FieldPath, labels: &SortedMap<String, String>) -> FieldError {
    let path = template.child("metadata").child("labels");
    let value = if labels.is_empty() {
        BadValue::Json("null".into())
    } else {
        json(labels)
    };
    FieldError::invalid(&path, value, "`selector` does not match template `labels`")
}

/// A value as the JSON kube-apiserver prints it with.
fn json<T: Serialize>(value: &T) -> BadValue {
    // The core's own types serialise to JSON without error (string keys,
    // no custom serialisers).
    BadValue::Json(serde_json::to_string(value).unwrap_or_default())
}

/// `matchLabels` as labels; each expression's operator, values and key.
fn validate_selector(selector: &LabelSelector, path: &FieldPath) -> Vec<FieldError> {
    let mut errs = validate_labels(&selector.match_labels, &path.child("matchLabels"));
    for (i, r) in selector.match_expressions.iter().enumerate() {
        let at = path.child("matchExpressions").index(i);
        match r.operator.as_str() {
            "In" | "NotIn" if r.values.is_empty() => errs.push(FieldError::required(
                &at.child("values"),
                "must be specified when `operator` is 'In' or 'NotIn'",
            )),
            "Exists" | "DoesNotExist" if !r.values.is_empty() => errs.push(FieldError::forbidden(
                &at.child("values"),
                "may not be specified when `operator` is 'Exists' or 'DoesNotExist'",
            )),
            "In" | "NotIn" | "Exists" | "DoesNotExist" => {}
            other => errs.push(FieldError::invalid(
                &at.child("operator"),
                other,
                "not a valid selector operator",
            )),
        }
        for msg in qualified_name(&r.key) {
            errs.push(FieldError::invalid(&at.child("key"), r.key.as_str(), &msg));
        }
        for (v, value) in r.values.iter().enumerate() {
            for msg in label_value(value) {
                errs.push(FieldError::invalid(&at.child("values").index(v), value.as_str(), &msg));
            }
        }
    }
    errs
}

/// The template: its labels and annotations, then its Pod spec.
fn validate_template(d: &Deployment, path: &FieldPath) -> Vec<FieldError> {
    let meta = path.child("metadata");
    let mut errs = validate_labels(&d.spec.template.metadata.labels, &meta.child("labels"));
    errs.extend(super::metadata::validate_annotations(
        &d.spec.template.metadata.annotations,
        &meta.child("annotations"),
    ));
    errs.extend(validate_pod_spec(&d.spec.template.spec, &path.child("spec")));
    errs
}

/// The Pod spec checks that matter to a workload: at least one container,
/// each with a unique RFC 1123 label name, an image and ports in range;
/// a restart policy of `Always` (the only one a Deployment may use).
fn validate_pod_spec(spec: &PodSpec, path: &FieldPath) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let containers = path.child("containers");
    if spec.containers.is_empty() {
        errs.push(FieldError::required(&containers, ""));
    }
    let mut names: Vec<&str> = Vec::new();
    for (i, c) in spec.containers.iter().enumerate() {
        let at = containers.index(i);
        if c.name.is_empty() {
            errs.push(FieldError::required(&at.child("name"), ""));
        } else if names.contains(&c.name.as_str()) {
            errs.push(FieldError::duplicate(&at.child("name"), c.name.as_str()));
        } else {
            for msg in dns1123_label(&c.name) {
                errs.push(FieldError::invalid(&at.child("name"), c.name.as_str(), &msg));
            }
        }
        names.push(&c.name);
        let image = c.extra.get("image").and_then(|v| v.as_str()).unwrap_or_default();
        if image.trim().is_empty() {
            errs.push(FieldError::required(&at.child("image"), ""));
        }
        for (p, port) in c.ports.iter().enumerate() {
            if !(1..=65535).contains(&port.container_port) {
                errs.push(FieldError::invalid(
                    &at.child("ports").index(p).child("containerPort"),
                    port.container_port,
                    "must be between 1 and 65535, inclusive",
                ));
            }
        }
    }
    if let Some(policy) = spec.extra.get("restartPolicy").and_then(|v| v.as_str()) {
        if policy != "Always" {
            errs.push(FieldError::unsupported(
                &path.child("restartPolicy"),
                policy,
                &["Always"],
            ));
        }
    }
    errs
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::api::manifest::{parse_manifests, Object};

    const WEB: &str = "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: web}\nspec:\n  replicas: 2\n  selector: {matchLabels: {app: web}}\n  template:\n    metadata: {labels: {app: web}}\n    spec: {containers: [{name: nginx, image: nginx}]}\n";

    fn deployment(text: &str) -> Deployment {
        match parse_manifests(text).unwrap().remove(0) {
            Object::Deployment(d) => *d,
            other => panic!("not a Deployment: {other:?}"),
        }
    }

    fn messages(text: &str) -> Vec<String> {
        validate_deployment(&deployment(text))
            .iter()
            .map(ToString::to_string)
            .collect()
    }

    #[test]
    fn a_valid_deployment_passes() {
        assert_eq!(messages(WEB), Vec::<String>::new());
    }

    #[test]
    fn names_replicas_and_containers_are_checked_in_kube_apiserver_words() {
        assert_eq!(
            messages(&WEB.replace("replicas: 2", "replicas: -1")),
            ["spec.replicas: Invalid value: -1: must be greater than or equal to 0"]
        );
        let bad_name = messages(&WEB.replace("name: web}", "name: Web_1}"));
        assert_eq!(bad_name.len(), 1);
        assert!(
            bad_name[0].starts_with("metadata.name: Invalid value: \"Web_1\": a lowercase RFC 1123 subdomain"),
            "{bad_name:?}"
        );
        assert_eq!(
            messages(&WEB.replace("[{name: nginx, image: nginx}]", "[]")),
            ["spec.template.spec.containers: Required value"]
        );
        assert_eq!(
            messages(&WEB.replace("{name: nginx, image: nginx}", "{name: nginx}")),
            ["spec.template.spec.containers[0].image: Required value"]
        );
        assert_eq!(
            messages(&WEB.replace("containers:", "restartPolicy: Never, containers:")),
            ["spec.template.spec.restartPolicy: Unsupported value: \"Never\": supported values: \"Always\""]
        );
    }

    #[test]
    fn the_selector_is_required_and_must_match_the_template() {
        assert_eq!(
            messages(&WEB.replace("  selector: {matchLabels: {app: web}}\n", "")),
            [
                "spec.selector: Required value",
                "spec.template.metadata.labels: Invalid value: {\"app\":\"web\"}: `selector` does not match template `labels`"
            ]
        );
        assert_eq!(
            messages(&WEB.replace("labels: {app: web}", "labels: {app: x}")),
            ["spec.template.metadata.labels: Invalid value: {\"app\":\"x\"}: `selector` does not match template `labels`"]
        );
        assert_eq!(
            messages(&WEB.replace("{matchLabels: {app: web}}", "{}")),
            ["spec.selector: Invalid value: {}: empty selector is invalid for deployment"]
        );
    }

    #[test]
    fn match_expressions_are_supported_and_checked() {
        let set = WEB.replace(
            "{matchLabels: {app: web}}",
            "{matchExpressions: [{key: app, operator: In, values: [web, www]}]}",
        );
        assert!(messages(&set).is_empty());
        let bad = WEB.replace(
            "{matchLabels: {app: web}}",
            "{matchExpressions: [{key: app, operator: Near, values: [web]}]}",
        );
        assert_eq!(
            messages(&bad),
            [
                "spec.selector.matchExpressions[0].operator: Invalid value: \"Near\": not a valid selector operator",
                "spec.selector: Invalid value: {\"matchExpressions\":[{\"key\":\"app\",\"operator\":\"Near\",\"values\":[\"web\"]}]}: invalid label selector"
            ]
        );
        let no_values = WEB.replace(
            "{matchLabels: {app: web}}",
            "{matchExpressions: [{key: app, operator: NotIn}]}",
        );
        assert_eq!(
            messages(&no_values)[0],
            "spec.selector.matchExpressions[0].values: Required value: must be specified when `operator` is 'In' or 'NotIn'"
        );
    }

    #[test]
    fn the_selector_may_not_change() {
        let old = deployment(WEB);
        let new = deployment(
            &WEB.replace("matchLabels: {app: web}", "matchLabels: {app: web, v: '2'}")
                .replace("labels: {app: web}}", "labels: {app: web, v: '2'}}"),
        );
        let errs: Vec<String> = validate_deployment_update(&new, &old)
            .iter()
            .map(ToString::to_string)
            .collect();
        assert_eq!(
            errs,
            ["spec.selector: Invalid value: {\"matchLabels\":{\"app\":\"web\",\"v\":\"2\"}}: field is immutable"]
        );
        assert!(validate_deployment_update(&old, &old).is_empty());
    }
}
