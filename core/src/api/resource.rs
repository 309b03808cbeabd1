//! The one vocabulary of resource kinds: every kind svcnet stores, and the
//! words kubectl users name them by (`svc`, `po`, `ep`, `deploy`, plurals,
//! and names qualified by their API group such as
//! `endpointslices.discovery.k8s.io`). The control plane's `delete`, the
//! vector runner, the playground's console and the wasm bindings all read
//! kind words through [`Resource::from_word`], so an alias is written once.

use serde::Serialize;

/// A kind of object the control plane stores.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
pub enum Resource {
    /// `v1/Service` (`svc`).
    Service,
    /// `networking.k8s.io/v1/ServiceCIDR`.
    ServiceCidr,
    /// `v1/Pod` (`po`).
    Pod,
    /// `v1/Node` (`no`).
    Node,
    /// `discovery.k8s.io/v1/EndpointSlice`.
    EndpointSlice,
    /// `v1/Endpoints` (`ep`).
    Endpoints,
    /// `apps/v1/Deployment` (`deploy`).
    Deployment,
}

impl Resource {
    /// Every kind, in the order `kubectl api-resources` lists them (core
    /// group first, then by group).
    pub const ALL: [Resource; 7] = [
        Resource::Endpoints,
        Resource::Node,
        Resource::Pod,
        Resource::Service,
        Resource::Deployment,
        Resource::EndpointSlice,
        Resource::ServiceCidr,
    ];

    /// The kind a kubectl word names, case-insensitively: the singular, the
    /// plural, the short name, or either qualified by the API group
    /// (`deployments.apps`, `endpointslice.discovery.k8s.io`). `None` for a
    /// word that names none of them.
    pub fn from_word(word: &str) -> Option<Resource> {
        let word = word.to_ascii_lowercase();
        Resource::ALL.into_iter().find(|r| {
            r.short_name() == Some(word.as_str())
                || [r.singular(), r.plural()]
                    .into_iter()
                    .any(|name| word == name || (!r.group().is_empty() && word == format!("{name}.{}", r.group())))
        })
    }

    /// The kind as in `kind:`.
    pub fn kind(self) -> &'static str {
        match self {
            Resource::Service => "Service",
            Resource::ServiceCidr => "ServiceCIDR",
            Resource::Pod => "Pod",
            Resource::Node => "Node",
            Resource::EndpointSlice => "EndpointSlice",
            Resource::Endpoints => "Endpoints",
            Resource::Deployment => "Deployment",
        }
    }

    /// The API group; empty for the core group.
    pub fn group(self) -> &'static str {
        match self {
            Resource::ServiceCidr => "networking.k8s.io",
            Resource::EndpointSlice => "discovery.k8s.io",
            Resource::Deployment => "apps",
            Resource::Service | Resource::Pod | Resource::Node | Resource::Endpoints => "",
        }
    }

    /// `apiVersion:` of the version svcnet serves.
    pub fn api_version(self) -> &'static str {
        match self.group() {
            "" => "v1",
            "networking.k8s.io" => "networking.k8s.io/v1",
            "discovery.k8s.io" => "discovery.k8s.io/v1",
            _ => "apps/v1",
        }
    }

    /// The lower-case singular (`service`, `endpointslice`).
    pub fn singular(self) -> &'static str {
        match self {
            Resource::Service => "service",
            Resource::ServiceCidr => "servicecidr",
            Resource::Pod => "pod",
            Resource::Node => "node",
            Resource::EndpointSlice => "endpointslice",
            Resource::Endpoints => "endpoints",
            Resource::Deployment => "deployment",
        }
    }

    /// The lower-case plural, the resource's name in the API's paths.
    pub fn plural(self) -> &'static str {
        match self {
            Resource::Service => "services",
            Resource::ServiceCidr => "servicecidrs",
            Resource::Pod => "pods",
            Resource::Node => "nodes",
            Resource::EndpointSlice => "endpointslices",
            Resource::Endpoints => "endpoints",
            Resource::Deployment => "deployments",
        }
    }

    /// kubectl's short name, where the kind has one.
    pub fn short_name(self) -> Option<&'static str> {
        match self {
            Resource::Service => Some("svc"),
            Resource::Pod => Some("po"),
            Resource::Node => Some("no"),
            Resource::Endpoints => Some("ep"),
            Resource::Deployment => Some("deploy"),
            Resource::ServiceCidr | Resource::EndpointSlice => None,
        }
    }

    /// Whether objects of the kind live in a namespace.
    pub fn namespaced(self) -> bool {
        !matches!(self, Resource::Node | Resource::ServiceCidr)
    }

    /// How kubectl names an object of the kind in `<resource>/<name>`:
    /// the singular, qualified by the group outside the core group
    /// (`service/web`, `endpointslice.discovery.k8s.io/web-abcde`).
    pub fn kubectl_resource(self) -> &'static str {
        match self {
            Resource::ServiceCidr => "servicecidr.networking.k8s.io",
            Resource::EndpointSlice => "endpointslice.discovery.k8s.io",
            Resource::Deployment => "deployment.apps",
            core => core.singular(),
        }
    }

    /// How kube-apiserver names the resource in `NotFound` and
    /// `AlreadyExists` errors: the plural, qualified by the group
    /// (`services "web" not found`, `deployments.apps "web" not found`).
    pub fn qualified_plural(self) -> &'static str {
        match self {
            Resource::ServiceCidr => "servicecidrs.networking.k8s.io",
            Resource::EndpointSlice => "endpointslices.discovery.k8s.io",
            Resource::Deployment => "deployments.apps",
            core => core.plural(),
        }
    }

    /// Every word [`Resource::from_word`] takes for the kind, unqualified
    /// (for completion).
    pub fn words(self) -> Vec<&'static str> {
        let mut words = vec![self.singular(), self.plural()];
        words.extend(self.short_name());
        words.dedup();
        words
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_word_kubectl_takes_names_its_kind() {
        for (word, kind) in [
            ("svc", Resource::Service),
            ("Services", Resource::Service),
            ("service", Resource::Service),
            ("po", Resource::Pod),
            ("ep", Resource::Endpoints),
            ("endpoints", Resource::Endpoints),
            ("endpointslice", Resource::EndpointSlice),
            ("endpointslices.discovery.k8s.io", Resource::EndpointSlice),
            ("deploy", Resource::Deployment),
            ("deployments.apps", Resource::Deployment),
            ("no", Resource::Node),
            ("servicecidrs", Resource::ServiceCidr),
            ("servicecidr.networking.k8s.io", Resource::ServiceCidr),
        ] {
            assert_eq!(Resource::from_word(word), Some(kind), "{word}");
        }
        for word in ["frobs", "", "services.apps", "endpointslices.discovery", "svcs"] {
            assert_eq!(Resource::from_word(word), None, "{word}");
        }
    }

    #[test]
    fn qualified_names_are_the_name_and_the_group() {
        for r in Resource::ALL {
            let qualify = |name: &str| match r.group() {
                "" => name.to_string(),
                group => format!("{name}.{group}"),
            };
            assert_eq!(r.kubectl_resource(), qualify(r.singular()), "{r:?}");
            assert_eq!(r.qualified_plural(), qualify(r.plural()), "{r:?}");
        }
    }

    #[test]
    fn names_follow_the_apiserver() {
        assert_eq!(Resource::Service.kubectl_resource(), "service");
        assert_eq!(
            Resource::EndpointSlice.kubectl_resource(),
            "endpointslice.discovery.k8s.io"
        );
        assert_eq!(Resource::Deployment.qualified_plural(), "deployments.apps");
        assert_eq!(Resource::Endpoints.qualified_plural(), "endpoints");
        assert_eq!(Resource::ServiceCidr.api_version(), "networking.k8s.io/v1");
        assert!(!Resource::Node.namespaced() && Resource::Endpoints.namespaced());
        assert_eq!(Resource::Endpoints.words(), ["endpoints", "ep"]);
    }
}
