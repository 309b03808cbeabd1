//! Dual-stack defaulting: settles `ipFamilyPolicy` and `ipFamilies` against
//! the families the cluster has service CIDRs for, as kube-apiserver's
//! `initIPFamilyFields` does.
//!
//! - No policy: the old object's on update; `RequireDualStack` for a
//!   headless Service without selector; `SingleStack` otherwise.
//! - `ipFamilies` is inferred from `clusterIPs`, then defaults to the
//!   cluster's primary family, and gains the other family when the policy
//!   asks for dual-stack and the cluster has both.

use crate::api::service::{types, Service};
use crate::family::IpFamily;
use crate::field::{BadValue, FieldError, FieldPath};

const SINGLE: &str = "SingleStack";
const REQUIRE: &str = "RequireDualStack";

/// Fills in `spec.ipFamilyPolicy` and `spec.ipFamilies` of a validated
/// Service. `cluster` lists the configured families, primary first.
/// ExternalName Services are left alone.
pub fn init_ip_families(svc: &mut Service, old: Option<&Service>, cluster: &[IpFamily]) -> Result<(), Vec<FieldError>> {
    if svc.service_type() == types::EXTERNAL_NAME {
        svc.spec.ip_family_policy = None;
        svc.spec.ip_families.clear();
        return Ok(());
    }
    let selectorless_headless = svc.is_headless() && svc.spec.selector.as_ref().is_none_or(|s| s.is_empty());
    if svc.spec.ip_family_policy.is_none() {
        let inherited = old.and_then(|o| o.spec.ip_family_policy.clone());
        let default = if selectorless_headless { REQUIRE } else { SINGLE };
        svc.spec.ip_family_policy = Some(inherited.unwrap_or_else(|| default.to_string()));
    }
    let policy = svc.spec.ip_family_policy.clone().unwrap_or_default();
    let policy_path = FieldPath::new("spec").child("ipFamilyPolicy");
    let mut errs = Vec::new();

    if let Some(old) = old {
        if policy == SINGLE {
            if svc.spec.cluster_ips == old.spec.cluster_ips && svc.spec.cluster_ips.len() > 1 {
                svc.spec.cluster_ips.truncate(1);
            }
            if svc.spec.ip_families == old.spec.ip_families && svc.spec.ip_families.len() > 1 {
                svc.spec.ip_families.truncate(1);
            }
        } else {
            if svc.spec.cluster_ips.len() < old.spec.cluster_ips.len() && !svc.spec.cluster_ips.is_empty() {
                errs.push(FieldError::invalid(
                    &policy_path,
                    policy.as_str(),
                    "must be 'SingleStack' to release the secondary cluster IP",
                ));
            }
            if svc.spec.ip_families.len() < old.spec.ip_families.len() && !svc.spec.ip_families.is_empty() {
                errs.push(FieldError::invalid(
                    &policy_path,
                    policy.as_str(),
                    "must be 'SingleStack' to release the secondary IP family",
                ));
            }
        }
    }
    if policy == SINGLE {
        if svc.spec.cluster_ips.len() == 2 {
            let detail = "must be 'RequireDualStack' or 'PreferDualStack' when multiple cluster IPs are specified";
            errs.push(FieldError::invalid(&policy_path, policy.as_str(), detail));
        }
        if svc.spec.ip_families.len() == 2 {
            let detail = "must be 'RequireDualStack' or 'PreferDualStack' when multiple IP families are specified";
            errs.push(FieldError::invalid(&policy_path, policy.as_str(), detail));
        }
    }
    let ips = svc.spec.cluster_ips.clone();
    for (i, ip) in ips.iter().enumerate() {
        let Ok(addr) = ip.parse::<std::net::IpAddr>() else {
            break;
        };
        let fam = IpFamily::of(addr);
        if i >= svc.spec.ip_families.len() {
            if cluster.contains(&fam) {
                svc.spec.ip_families.push(fam.as_str().to_string());
            } else {
                let path = FieldPath::new("spec").child("clusterIPs").index(i);
                // kube-apiserver quotes the whole list here.
                errs.push(FieldError::invalid(
                    &path,
                    BadValue::StrList(svc.spec.cluster_ips.clone()),
                    &format!("{fam} is not configured on this cluster"),
                ));
            }
        }
    }
    if !errs.is_empty() {
        return Err(errs);
    }
    let primary = cluster.first().copied().unwrap_or(IpFamily::IPv4);
    if selectorless_headless {
        if svc.spec.ip_families.is_empty() {
            svc.spec.ip_families.push(primary.as_str().to_string());
        }
        if svc.spec.ip_families.len() < 2 && policy != SINGLE {
            let other = IpFamily::parse(&svc.spec.ip_families[0]).unwrap_or(primary).other();
            svc.spec.ip_families.push(other.as_str().to_string());
        }
        return Ok(());
    }
    if policy == REQUIRE && cluster.len() < 2 {
        errs.push(FieldError::invalid(
            &policy_path,
            policy.as_str(),
            "this cluster is not configured for dual-stack services",
        ));
    }
    for (i, fam) in svc.spec.ip_families.iter().enumerate() {
        if IpFamily::parse(fam).is_none_or(|f| !cluster.contains(&f)) {
            let path = FieldPath::new("spec").child("ipFamilies").index(i);
            errs.push(FieldError::invalid(
                &path,
                fam.as_str(),
                "not configured on this cluster",
            ));
        }
    }
    if !errs.is_empty() {
        return Err(errs);
    }
    if svc.spec.ip_families.is_empty() {
        svc.spec.ip_families.push(primary.as_str().to_string());
    }
    if policy != SINGLE && svc.spec.ip_families.len() == 1 && cluster.len() == 2 {
        let first = IpFamily::parse(&svc.spec.ip_families[0]).unwrap_or(primary);
        svc.spec.ip_families.push(first.other().as_str().to_string());
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::api::service::ServicePort;
    use IpFamily::{IPv4, IPv6};

    fn svc(policy: Option<&str>, families: &[&str], ips: &[&str]) -> Service {
        let mut s = Service::default();
        s.metadata.name = "s".into();
        s.spec.ports.push(ServicePort {
            port: 80,
            ..Default::default()
        });
        s.spec.ip_family_policy = policy.map(str::to_string);
        s.spec.ip_families = families.iter().map(|f| f.to_string()).collect();
        s.spec.cluster_ips = ips.iter().map(|f| f.to_string()).collect();
        s
    }

    fn errors(r: Result<(), Vec<FieldError>>) -> Vec<String> {
        r.err().unwrap_or_default().iter().map(ToString::to_string).collect()
    }

    #[test]
    fn defaults_to_single_stack_primary_family() {
        let mut s = svc(None, &[], &[]);
        init_ip_families(&mut s, None, &[IPv6, IPv4]).unwrap();
        assert_eq!(s.spec.ip_family_policy.as_deref(), Some("SingleStack"));
        assert_eq!(s.spec.ip_families, vec!["IPv6"]);
    }

    #[test]
    fn prefer_dual_stack_adds_the_other_family_only_on_dual_clusters() {
        let mut s = svc(Some("PreferDualStack"), &[], &[]);
        init_ip_families(&mut s, None, &[IPv4, IPv6]).unwrap();
        assert_eq!(s.spec.ip_families, vec!["IPv4", "IPv6"]);
        let mut s = svc(Some("PreferDualStack"), &[], &[]);
        init_ip_families(&mut s, None, &[IPv4]).unwrap();
        assert_eq!(s.spec.ip_families, vec!["IPv4"]);
    }

    #[test]
    fn require_dual_stack_on_single_stack_cluster_fails() {
        let mut s = svc(Some("RequireDualStack"), &[], &[]);
        assert_eq!(
            errors(init_ip_families(&mut s, None, &[IPv4])),
            vec!["spec.ipFamilyPolicy: Invalid value: \"RequireDualStack\": this cluster is not configured for dual-stack services"]
        );
    }

    #[test]
    fn single_stack_with_two_families_fails() {
        let mut s = svc(Some("SingleStack"), &["IPv4", "IPv6"], &[]);
        assert_eq!(
            errors(init_ip_families(&mut s, None, &[IPv4, IPv6])),
            vec!["spec.ipFamilyPolicy: Invalid value: \"SingleStack\": must be 'RequireDualStack' or 'PreferDualStack' when multiple IP families are specified"]
        );
    }

    #[test]
    fn families_inferred_from_cluster_ips() {
        let mut s = svc(None, &[], &["fd00::10"]);
        init_ip_families(&mut s, None, &[IPv4, IPv6]).unwrap();
        assert_eq!(s.spec.ip_families, vec!["IPv6"]);
        let mut s = svc(None, &[], &["fd00::10"]);
        assert_eq!(
            errors(init_ip_families(&mut s, None, &[IPv4])),
            vec!["spec.clusterIPs[0]: Invalid value: [\"fd00::10\"]: IPv6 is not configured on this cluster"]
        );
    }

    #[test]
    fn headless_without_selector_requires_dual_stack_quietly() {
        let mut s = svc(None, &[], &["None"]);
        s.spec.cluster_ip = "None".into();
        init_ip_families(&mut s, None, &[IPv4]).unwrap();
        assert_eq!(s.spec.ip_family_policy.as_deref(), Some("RequireDualStack"));
        assert_eq!(s.spec.ip_families, vec!["IPv4", "IPv6"]);
    }
}
