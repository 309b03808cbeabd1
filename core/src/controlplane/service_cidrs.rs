//! ServiceCIDR objects (`networking.k8s.io/v1`): the default `kubernetes`
//! one made from `--service-cluster-ip-range`, the ones users add, their
//! validation, and deletion held while their addresses are in use.
//!
//! What kube-apiserver and its ServiceCIDR controller do, with two rules of
//! svcnet's own: ranges may not overlap (svcnet's allocator keeps one
//! bitmap per range), and a range of a family the cluster does not serve
//! is refused (Kubernetes accepts it and never allocates from it). Both
//! are listed in `tests/k8s/KNOWN_DIFFERENCES.md`.

use super::{ApiError, Applied, ApplyAction, ControlPlane};
use crate::api::manifest::Object;
use crate::api::{Condition, ServiceCidr, ServiceCidrStatus};
use crate::apiserver::service_cidr::{parse_cidr, validate_service_cidr, CidrError};
use crate::family::IpFamily;
use crate::field::{BadValue, FieldError, FieldPath};
use crate::time::Time;
use ipnetwork::IpNetwork;

/// The default ServiceCIDR's name.
pub const DEFAULT_SERVICE_CIDR_NAME: &str = "kubernetes";

/// Kubernetes' example of a valid CIDR, in its CIDR messages.
const CIDR_EXAMPLE: &str = "must be a valid CIDR value, (e.g. 10.9.8.0/24 or 2001:db8::/64)";

/// The finalizer that holds a ServiceCIDR's deletion while its addresses
/// are in use.
const FINALIZER: &str = "networking.k8s.io/service-cidr-finalizer";

/// The `Ready` condition's message while ClusterIPs come from the ranges.
const READY_MESSAGE: &str = "Kubernetes Service CIDR is ready";

/// The `Ready` condition's message while a deletion is held.
const TERMINATING_MESSAGE: &str =
    "There are still IPAddresses referencing the ServiceCIDR, please remove them or create a new ServiceCIDR";

/// The default ServiceCIDR for these ranges (`kubectl get servicecidr
/// kubernetes`), ready since `now`.
pub fn default_service_cidr(cidrs: &[IpNetwork], now: Time) -> ServiceCidr {
    let mut obj = ServiceCidr::default();
    obj.metadata.name = DEFAULT_SERVICE_CIDR_NAME.into();
    obj.spec.cidrs = cidrs.iter().map(ToString::to_string).collect();
    obj.metadata.creation_timestamp = Some(serde_json::Value::String(now.rfc3339()));
    admit(&mut obj, now);
    obj
}

/// What the apiserver and the ServiceCIDR controller write on a new
/// ServiceCIDR: its kind, the finalizer and `Ready=True`; whatever status
/// the user sent goes.
fn admit(obj: &mut ServiceCidr, now: Time) {
    obj.api_version = "networking.k8s.io/v1".into();
    obj.kind = "ServiceCIDR".into();
    obj.metadata.namespace.clear();
    obj.metadata.finalizers = Some(serde_json::json!([FINALIZER]));
    obj.status = ready(now, "True", "", READY_MESSAGE);
}

/// A status of one `Ready` condition.
fn ready(now: Time, status: &str, reason: &str, message: &str) -> ServiceCidrStatus {
    ServiceCidrStatus {
        conditions: vec![Condition {
            type_: "Ready".into(),
            status: status.into(),
            last_transition_time: now.rfc3339(),
            reason: reason.into(),
            message: message.into(),
        }],
    }
}

impl ControlPlane {
    /// Every ServiceCIDR: the default one first, then the users', by name.
    pub fn service_cidrs(&self) -> impl Iterator<Item = &ServiceCidr> {
        std::iter::once(&self.default_service_cidr).chain(self.service_cidrs.values())
    }

    /// Creates a ServiceCIDR; its spec may not change afterwards.
    pub(super) fn apply_service_cidr(&mut self, mut obj: ServiceCidr) -> Result<Applied, ApiError> {
        let name = obj.metadata.name.clone();
        let existing = if name == DEFAULT_SERVICE_CIDR_NAME {
            Some(&self.default_service_cidr)
        } else {
            self.service_cidrs.get(&name)
        };
        if let Some(old) = existing {
            if old.spec.cidrs == obj.spec.cidrs {
                return Ok(Applied {
                    action: ApplyAction::Unchanged,
                    object: Object::ServiceCidr(Box::new(old.clone())),
                });
            }
            let old = old.clone();
            return self.update_service_cidr(old, obj);
        }
        let cidrs = self
            .validate_service_cidr_object(&obj)
            .map_err(|errs| ApiError::invalid("ServiceCIDR", &name, errs))?;
        self.add_ranges(&cidrs, 0)
            .map_err(|errs| ApiError::invalid("ServiceCIDR", &name, errs))?;
        self.stamp(&mut obj.metadata);
        admit(&mut obj, self.now);
        self.service_cidrs.insert(name, obj.clone());
        Ok(Applied {
            action: ApplyAction::Created,
            object: Object::ServiceCidr(Box::new(obj)),
        })
    }

    /// Updates a ServiceCIDR: its ranges may not change, except that a
    /// single-stack one may gain a range of the other family (dual-stack),
    /// as kube-apiserver allows since v1.33.
    fn update_service_cidr(&mut self, old: ServiceCidr, new: ServiceCidr) -> Result<Applied, ApiError> {
        let name = old.metadata.name.clone();
        // An update's error names the kind without its group (the patch
        // path of kube-apiserver), unlike a create's.
        let invalid = |errors| ApiError::Invalid {
            kind: "ServiceCIDR".into(),
            name: name.clone(),
            errors,
        };
        let (before, after) = (&old.spec.cidrs, &new.spec.cidrs);
        if before.len() != 1 || after.len() != 2 {
            return Err(invalid(immutable(before, after)));
        }
        let mut errors = Vec::new();
        if after[0] != before[0] {
            let path = FieldPath::new("spec").child("cidrs").index(0);
            errors.push(FieldError::invalid(&path, after[0].as_str(), "field is immutable"));
        }
        let cidrs = match self.validate_service_cidr_object(&new) {
            Ok(cidrs) if errors.is_empty() => cidrs,
            Ok(_) => return Err(invalid(errors)),
            Err(more) => {
                errors.extend(more);
                return Err(invalid(errors));
            }
        };
        self.add_ranges(&cidrs[1..], 1).map_err(invalid)?;
        let mut stored = old;
        stored.spec.cidrs = new.spec.cidrs;
        self.bump(&mut stored.metadata);
        if name == DEFAULT_SERVICE_CIDR_NAME {
            self.default_service_cidr = stored.clone();
        } else {
            self.service_cidrs.insert(name, stored.clone());
        }
        Ok(Applied {
            action: ApplyAction::Configured,
            object: Object::ServiceCidr(Box::new(stored)),
        })
    }

    /// Gives the ClusterIP allocator `cidrs` (entries `first..` of
    /// `spec.cidrs`), all or none: a range it cannot take (svcnet's own
    /// rules: no overlap) is named.
    fn add_ranges(&mut self, cidrs: &[IpNetwork], first: usize) -> Result<(), Vec<FieldError>> {
        for (i, cidr) in cidrs.iter().enumerate() {
            if let Err(e) = self.cluster_ips.add_cidr(*cidr) {
                for c in &cidrs[..i] {
                    self.cluster_ips.remove_cidr(*c);
                }
                let path = FieldPath::new("spec").child("cidrs").index(first + i);
                return Err(vec![FieldError::invalid(&path, cidr.to_string(), &e.to_string())]);
            }
        }
        Ok(())
    }

    /// kube-apiserver's checks, in its order, then svcnet's own; the
    /// ranges when all pass.
    fn validate_service_cidr_object(&self, obj: &ServiceCidr) -> Result<Vec<IpNetwork>, Vec<FieldError>> {
        let name = &obj.metadata.name;
        let path = FieldPath::new("spec").child("cidrs");
        let mut errs = Vec::new();
        if name.is_empty() {
            errs.push(FieldError::required(
                &FieldPath::new("metadata").child("name"),
                "name or generateName is required",
            ));
        }
        let cidrs = &obj.spec.cidrs;
        if cidrs.is_empty() {
            errs.push(FieldError::required(&path, "at least one CIDR required"));
            return Err(errs);
        }
        if cidrs.len() > 2 {
            // kube-apiserver prints the whole spec, as Go's JSON of its
            // internal type.
            let spec = serde_json::json!({ "CIDRs": cidrs }).to_string();
            errs.push(FieldError::invalid(
                &path,
                BadValue::Json(spec),
                "may only hold up to 2 values",
            ));
            return Err(errs);
        }
        let mut parsed = Vec::new();
        for (i, text) in cidrs.iter().enumerate() {
            match parse_cidr(text) {
                Err(_) => errs.push(FieldError::invalid(&path.index(i), text.as_str(), CIDR_EXAMPLE)),
                Ok(net) if net.ip() != net.network() => errs.push(FieldError::invalid(
                    &path.index(i),
                    text.as_str(),
                    &CidrError::HostBitsSet.to_string(),
                )),
                Ok(net) => parsed.push((i, net)),
            }
        }
        if let [(_, a), (_, b)] = parsed.as_slice() {
            if a.is_ipv4() == b.is_ipv4() {
                errs.push(FieldError::invalid(
                    &path,
                    BadValue::StrList(cidrs.clone()),
                    "may specify no more than one IP for each IP family, i.e 192.168.0.0/24 and 2001:db8::/64",
                ));
            }
        }
        if !errs.is_empty() {
            return Err(errs);
        }
        for (i, net) in &parsed {
            let text = cidrs[*i].as_str();
            let family = IpFamily::of(net.ip());
            if let Err(e) = validate_service_cidr(*net, &self.config.constraints) {
                errs.push(FieldError::invalid(&path.index(*i), text, &e.to_string()));
            } else if !self.families().contains(&family) {
                let detail = format!(
                    "{family} is not configured on this cluster: --service-cluster-ip-range has no {family} CIDR \
                     (Kubernetes accepts such a ServiceCIDR but never allocates from it)"
                );
                errs.push(FieldError::invalid(&path.index(*i), text, &detail));
            }
        }
        if errs.is_empty() {
            Ok(parsed.into_iter().map(|(_, net)| net).collect())
        } else {
            Err(errs)
        }
    }

    /// Deletes a ServiceCIDR. While Services hold addresses from it, it
    /// stays, terminating (`deletionTimestamp` set, nothing new allocated
    /// from it), and goes when the last one is released, as the
    /// ServiceCIDR controller's finalizer does. Deleting the default one
    /// recreates it at once.
    pub(super) fn delete_service_cidr(&mut self, name: &str) -> Result<ServiceCidr, ApiError> {
        if name == DEFAULT_SERVICE_CIDR_NAME {
            return Ok(self.default_service_cidr.clone());
        }
        let obj = self
            .service_cidrs
            .get(name)
            .cloned()
            .ok_or_else(|| ApiError::NotFound {
                resource: "servicecidrs.networking.k8s.io".into(),
                name: name.into(),
            })?;
        let cidrs = object_cidrs(&obj);
        if cidrs.iter().any(|c| self.cluster_ips.in_use(*c)) {
            for c in &cidrs {
                self.cluster_ips.set_terminating(*c);
            }
            let now = self.now;
            if let Some(held) = self.service_cidrs.get_mut(name) {
                if held.metadata.deletion_timestamp.is_none() {
                    held.metadata.deletion_timestamp = Some(now.rfc3339());
                    held.status = ready(now, "False", "Terminating", TERMINATING_MESSAGE);
                }
                return Ok(held.clone());
            }
        }
        for c in cidrs {
            self.cluster_ips.remove_cidr(c);
        }
        self.service_cidrs.remove(name);
        Ok(obj)
    }

    /// Removes the terminating ServiceCIDRs nothing is allocated from any
    /// more; run whenever addresses are released.
    pub(super) fn finish_terminating_service_cidrs(&mut self) {
        let done: Vec<String> = self
            .service_cidrs
            .values()
            .filter(|o| o.metadata.deletion_timestamp.is_some())
            .filter(|o| object_cidrs(o).iter().all(|c| !self.cluster_ips.in_use(*c)))
            .map(|o| o.metadata.name.clone())
            .collect();
        for name in done {
            if let Some(obj) = self.service_cidrs.remove(&name) {
                for c in object_cidrs(&obj) {
                    self.cluster_ips.remove_cidr(c);
                }
            }
        }
    }
}

/// The ranges of a stored (validated) ServiceCIDR.
pub(super) fn object_cidrs(obj: &ServiceCidr) -> Vec<IpNetwork> {
    obj.spec.cidrs.iter().filter_map(|c| c.parse().ok()).collect()
}

/// `spec.cidrs[i]: Invalid value: "...": field is immutable` for each
/// changed entry (the whole list when its length changed).
fn immutable(old: &[String], new: &[String]) -> Vec<FieldError> {
    let path = FieldPath::new("spec").child("cidrs");
    if old.len() != new.len() {
        return vec![FieldError::invalid(
            &path,
            BadValue::StrList(new.to_vec()),
            "field is immutable",
        )];
    }
    old.iter()
        .zip(new)
        .enumerate()
        .filter(|(_, (o, n))| o != n)
        .map(|(i, (_, n))| FieldError::invalid(&path.index(i), n.as_str(), "field is immutable"))
        .collect()
}

#[cfg(test)]
mod tests {
    use crate::controlplane::{ClusterConfig, ControlPlane};

    fn apply(cp: &mut ControlPlane, cidrs: &str) -> Result<String, String> {
        let text = format!(
            "apiVersion: networking.k8s.io/v1\nkind: ServiceCIDR\nmetadata: {{name: grows}}\nspec: {{cidrs: [{cidrs}]}}\n"
        );
        let mut results = cp.apply_manifest(&text).map_err(|e| e.to_string())?;
        results.remove(0).map(|a| a.kubectl_line()).map_err(|e| e.to_string())
    }

    #[test]
    fn a_single_stack_service_cidr_may_become_dual_stack_and_nothing_else() {
        let config = ClusterConfig {
            service_cluster_ip_range: "10.96.0.0/12,fd00:10:96::/108".into(),
            ..ClusterConfig::default()
        };
        let mut cp = ControlPlane::new(config).unwrap();
        assert_eq!(
            apply(&mut cp, "10.210.0.0/24").unwrap(),
            "servicecidr.networking.k8s.io/grows created"
        );
        assert_eq!(
            apply(&mut cp, "10.211.0.0/24, 'fd00:21::/112'").unwrap_err(),
            "The ServiceCIDR \"grows\" is invalid: spec.cidrs[0]: Invalid value: \"10.211.0.0/24\": field is immutable"
        );
        assert!(apply(&mut cp, "10.210.0.0/24, 10.212.0.0/24")
            .unwrap_err()
            .contains("may specify no more than one IP for each IP family"));
        assert_eq!(
            apply(&mut cp, "10.210.0.0/24, 'fd00:21::/112'").unwrap(),
            "servicecidr.networking.k8s.io/grows configured"
        );
        let grown = cp.service_cidrs().find(|c| c.metadata.name == "grows").unwrap();
        assert_eq!(grown.spec.cidrs, ["10.210.0.0/24", "fd00:21::/112"]);
        let restored = ControlPlane::restore(cp.snapshot()).unwrap();
        assert_eq!(restored, cp);
        assert_eq!(
            apply(&mut cp, "10.210.0.0/24").unwrap_err(),
            "The ServiceCIDR \"grows\" is invalid: spec.cidrs: Invalid value: [\"10.210.0.0/24\"]: field is immutable"
        );
    }
}
