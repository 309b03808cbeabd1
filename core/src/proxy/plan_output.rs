//! What `ipvs-agent plan` prints, in each `--format`, from the Services,
//! EndpointSlices and node it plans for: one rendering whether those came
//! from manifests (standalone) or from the apiserver (API mode).

use super::desired::{desired_table, ProxyConfig};
use super::error::ProxyWarning;
use super::nftables::{desired_ruleset, nft_text};
use super::node::NodeInfo;
use super::render::{ipvsadm_list, ipvsadm_save};
use super::table::IpvsTable;
use crate::api::{EndpointSlice, Service};
use crate::dns::{cluster_records, zone_text, DnsConfig};
use crate::kubectl::{endpoint_slices_table, services_table};

/// The formats of `ipvs-agent plan --format`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PlanFormat {
    /// kubectl's tables of Services and EndpointSlices, then `ipvsadm -Ln`
    /// and the `kube-ipvs0` addresses.
    Table,
    /// `ipvsadm-save -n` text, ready for `ipvsadm -R`.
    IpvsadmSave,
    /// One JSON object: `services`, `endpointSlices`, then the table's
    /// `virtualServers` and `addresses`.
    Json,
    /// The DNS records as a zone file.
    Dns,
    /// svcnet's nftables ruleset, as `nft -f` reads it.
    Nft,
}

/// What a plan is computed from.
pub struct PlanInputs<'a> {
    /// Every Service.
    pub services: Vec<&'a Service>,
    /// Every EndpointSlice.
    pub slices: Vec<&'a EndpointSlice>,
    /// The node planned for.
    pub node: &'a NodeInfo,
    /// The proxy's settings.
    pub proxy: &'a ProxyConfig,
    /// The cluster domain and TTL of the DNS records.
    pub dns: &'a DnsConfig,
}

/// The text `plan` prints, with the warnings met while computing the
/// table (a Service the proxy skips, two Services wanting one virtual
/// server).
pub struct PlanOutput {
    /// What to print.
    pub text: String,
    /// What to log as warnings.
    pub warnings: Vec<ProxyWarning>,
}

/// The plan for `inputs`, written in `format`.
pub fn plan_output(format: PlanFormat, inputs: &PlanInputs) -> PlanOutput {
    let services = || inputs.services.iter().copied();
    let slices = || inputs.slices.iter().copied();
    let desired = desired_table(services(), slices(), inputs.node, inputs.proxy);
    let text = match format {
        PlanFormat::IpvsadmSave => ipvsadm_save(&desired.table),
        PlanFormat::Dns => {
            let services: Vec<Service> = services().cloned().collect();
            let slices: Vec<EndpointSlice> = slices().filter(|s| s.service_name().is_some()).cloned().collect();
            zone_text(&cluster_records(&services, &slices, inputs.dns))
        }
        PlanFormat::Json => json(inputs, &desired.table),
        PlanFormat::Table => table(inputs, &desired.table),
        PlanFormat::Nft => nft_text(&desired_ruleset(services(), slices(), inputs.node, inputs.proxy)),
    };
    PlanOutput {
        text,
        warnings: desired.warnings,
    }
}

/// kubectl's tables, then `ipvsadm -Ln` and the addresses.
fn table(inputs: &PlanInputs, table: &IpvsTable) -> String {
    let node = inputs.node;
    format!(
        "Services (kubectl get services -A):\n{}\nEndpointSlices (kubectl get endpointslices -A):\n{}\n\
         IPVS on node {} ({}) (ipvsadm -Ln):\n{}\nAddresses on kube-ipvs0:\n{}",
        services_table(&inputs.services, true, None),
        endpoint_slices_table(&inputs.slices, true, None),
        node.name,
        node.ips.iter().map(ToString::to_string).collect::<Vec<_>>().join(", "),
        ipvsadm_list(table),
        table.addresses.iter().map(|a| format!("  {a}\n")).collect::<String>(),
    )
}

/// One JSON object, pretty-printed, ending with a line break.
fn json(inputs: &PlanInputs, table: &IpvsTable) -> String {
    let mut object = serde_json::json!({
        "services": inputs.services,
        "endpointSlices": inputs.slices,
    });
    if let (Some(out), Ok(serde_json::Value::Object(table))) = (object.as_object_mut(), serde_json::to_value(table)) {
        out.extend(table);
    }
    // Plain data (maps with string keys) always serialises.
    serde_json::to_string_pretty(&object).unwrap_or_default() + "\n"
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::api::parse_manifests;
    use crate::controlplane::{ClusterConfig, ControlPlane};

    fn cluster() -> ControlPlane {
        let mut cp = ControlPlane::new(ClusterConfig {
            service_cluster_ip_range: "10.96.0.0/24".into(),
            ..ClusterConfig::default()
        })
        .unwrap();
        let manifest = "apiVersion: v1\nkind: Service\nmetadata: {name: web}\nspec: {ports: [{port: 80}]}\n---\n\
            apiVersion: discovery.k8s.io/v1\nkind: EndpointSlice\nmetadata: {name: web-1, labels: {kubernetes.io/service-name: web}}\n\
            addressType: IPv4\nports: [{port: 80}]\nendpoints: [{addresses: [10.244.0.5]}]\n";
        for object in parse_manifests(manifest).into_iter().flatten() {
            cp.apply_object(object).unwrap();
        }
        cp
    }

    #[test]
    fn every_format_renders_the_same_table() {
        let cp = cluster();
        let node = NodeInfo {
            name: "node-a".into(),
            ips: vec!["192.168.0.10".parse().unwrap()],
            ..NodeInfo::default()
        };
        let proxy = ProxyConfig::default();
        let inputs = PlanInputs {
            services: cp.services().collect(),
            slices: cp.endpoint_slices().collect(),
            node: &node,
            proxy: &proxy,
            dns: &DnsConfig::default(),
        };
        let desired = cp.desired_ipvs_table(&node, &proxy).table;
        let output = |format| plan_output(format, &inputs).text;
        assert_eq!(output(PlanFormat::IpvsadmSave), ipvsadm_save(&desired));
        assert_eq!(output(PlanFormat::Dns), cp.dns_zone());
        let table = output(PlanFormat::Table);
        assert!(
            table.contains("IPVS on node node-a (192.168.0.10) (ipvsadm -Ln):\n"),
            "{table}"
        );
        assert!(table.contains(&ipvsadm_list(&desired)), "{table}");
        let json: serde_json::Value = serde_json::from_str(&output(PlanFormat::Json)).unwrap();
        assert_eq!(json["services"].as_array().map(Vec::len), Some(2));
        assert!(
            json["virtualServers"].as_object().is_some_and(|v| v.len() == 2),
            "{json}"
        );
        assert!(output(PlanFormat::Nft).starts_with("table inet svcnet {"));
    }
}
