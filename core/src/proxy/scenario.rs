//! The proxy's behaviour-vector actions, `ipvsTable` and `plan`, run by
//! [`crate::scenario`] against the control plane's Services, EndpointSlices
//! and Nodes (plus slices a step gives inline).
//!
//! A vector keeps one simulated node ([`ProxySim`]): its name, addresses and
//! zone, the EndpointSlices it sees, the proxy configuration, the kernel's
//! IPVS table and the drain state. Every field of a step is optional and
//! replaces what was kept, so a vector gives the slices once and then only
//! moves time or connection counters:
//!
//! ```yaml
//! - plan:
//!     node: node-a
//!     nodeIps: [192.168.0.10]
//!     endpointSlices: [...]            # EndpointSlice objects
//!     observed: {virtualServers: ...}  # replaces the simulated kernel table
//!     counters: {"TCP/10.96.0.50:443": {"10.244.1.11:8443": {active: 2}}}
//!     now: 60000                       # milliseconds
//! ```
//!
//! `ipvsTable` outputs the node's desired table (`save`, `list`, `table`,
//! `warnings`); `plan` plans from the simulated kernel to it, applies the
//! plan to the simulated kernel and outputs `operations` (as `ipvsadm`/`ip`
//! commands), `draining` and `claimed` (the plan state), and the kernel's
//! table afterwards (`save`, `list`, `table`), plus `warnings`.

use super::apply::apply_plan;
use super::desired::{desired_table, Desired, ProxyConfig};
use super::node::NodeInfo;
use super::plan::{plan, PlanContext, PlanState};
use super::render::{ipvsadm_list, ipvsadm_save};
use super::table::{IpvsTable, VirtualServerKey};
use crate::api::EndpointSlice;
use crate::collections::SortedMap;
use crate::controlplane::ControlPlane;
use crate::time::Time;
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};
use std::net::{IpAddr, SocketAddr};

/// The inputs of an `ipvsTable` or `plan` step; each replaces what the
/// vector kept from earlier steps.
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ProxyStep {
    /// The node's name.
    #[serde(default)]
    pub node: Option<String>,
    /// The node's addresses.
    #[serde(default)]
    pub node_ips: Option<Vec<IpAddr>>,
    /// The node's zone.
    #[serde(default)]
    pub zone: Option<String>,
    /// The EndpointSlices the node sees.
    #[serde(default)]
    pub endpoint_slices: Option<Vec<EndpointSlice>>,
    /// The proxy configuration (scheduler, drain timeout, ...).
    #[serde(default)]
    pub config: Option<ProxyConfig>,
    /// `plan` only: the kernel's table, replacing the simulated one.
    #[serde(default)]
    pub observed: Option<IpvsTable>,
    /// `plan` only: connection counters to set in the simulated kernel
    /// before planning.
    #[serde(default)]
    pub counters: SortedMap<VirtualServerKey, SortedMap<SocketAddr, Counters>>,
    /// `plan` only: the time, in milliseconds (default: the previous step's).
    #[serde(default)]
    pub now: Option<u64>,
}

/// Connection counters of one real server.
#[derive(Clone, Copy, Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Counters {
    /// Active connections.
    #[serde(default)]
    pub active: u32,
    /// Inactive connections.
    #[serde(default)]
    pub inactive: u32,
}

/// The simulated node a vector drives.
#[derive(Clone, Debug, Default)]
pub struct ProxySim {
    node: NodeInfo,
    slices: Vec<EndpointSlice>,
    config: ProxyConfig,
    kernel: IpvsTable,
    state: PlanState,
    now: Time,
}

impl ProxySim {
    /// A node with no name, address, slices or kernel state.
    pub fn new() -> ProxySim {
        ProxySim::default()
    }

    /// `ipvsTable`: the desired table for `services`.
    pub fn table(&mut self, cp: &ControlPlane, step: &ProxyStep) -> Result<Value, String> {
        if step.observed.is_some() || !step.counters.is_empty() || step.now.is_some() {
            return Err("ipvsTable takes no observed, counters or now: use a plan step".into());
        }
        let desired = self.desired(cp, step)?;
        Ok(json!({
            "save": ipvsadm_save(&desired.table),
            "list": ipvsadm_list(&desired.table),
            "table": to_value(&desired.table),
            "warnings": warnings(&desired),
        }))
    }

    /// `plan`: plans from the simulated kernel to the desired table for
    /// `services`, and applies the plan to the simulated kernel.
    pub fn plan(&mut self, cp: &ControlPlane, step: &ProxyStep) -> Result<Value, String> {
        let desired = self.desired(cp, step)?;
        if let Some(observed) = &step.observed {
            self.kernel = observed.clone();
        }
        for (vs, real_servers) in &step.counters {
            for (rs, c) in real_servers {
                if !self.kernel.set_counters(vs, *rs, c.active, c.inactive) {
                    return Err(format!(
                        "counters: the kernel has no real server {rs} in virtual server {vs}"
                    ));
                }
            }
        }
        if let Some(now) = step.now {
            self.now = Time(now);
        }
        let ctx = PlanContext::new(&self.config, &self.node, self.now);
        let planned = plan(&self.kernel, &desired.table, &self.state, &ctx);
        apply_plan(&mut self.kernel, &planned).map_err(|e| format!("the kernel refused the plan: {e}"))?;
        self.state = planned.state;
        let operations: Vec<String> = planned.operations.iter().map(ToString::to_string).collect();
        Ok(json!({
            "operations": operations,
            "draining": to_value(&self.state.draining),
            "claimed": to_value(&self.state.claimed),
            "save": ipvsadm_save(&self.kernel),
            "list": ipvsadm_list(&self.kernel),
            "table": to_value(&self.kernel),
            "warnings": warnings(&desired),
        }))
    }

    /// The desired table from the control plane's Services and
    /// EndpointSlices plus the step's inline slices. Naming a node that
    /// exists as a Node object takes its addresses and zone from it.
    fn desired(&mut self, cp: &ControlPlane, step: &ProxyStep) -> Result<Desired, String> {
        if let Some(name) = &step.node {
            self.node = cp.node_info(name).map_err(|e| e.to_string())?;
        }
        if let Some(ips) = &step.node_ips {
            self.node.ips = ips.clone();
        }
        if let Some(zone) = &step.zone {
            self.node.zone = Some(zone.clone());
        }
        if let Some(slices) = &step.endpoint_slices {
            self.slices = slices.clone();
        }
        if let Some(config) = &step.config {
            config.validate().map_err(|e| e.to_string())?;
            self.config = config.clone();
        }
        Ok(desired_table(
            cp.services(),
            cp.endpoint_slices().chain(&self.slices),
            &self.node,
            &self.config,
        ))
    }
}

fn warnings(desired: &Desired) -> Vec<String> {
    desired.warnings.iter().map(ToString::to_string).collect()
}

fn to_value<T: Serialize>(t: &T) -> Value {
    // The proxy's tables and drain state serialise to JSON without error:
    // every map key serialises as a string.
    crate::api::value::to_value(t)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::controlplane::ClusterConfig;

    fn cluster() -> ControlPlane {
        let mut cp = ControlPlane::new(ClusterConfig::default()).expect("config");
        let web =
            "apiVersion: v1\nkind: Service\nmetadata: {name: web}\nspec: {clusterIP: 10.96.0.5, ports: [{port: 80}]}\n";
        for r in cp.apply_manifest(web).expect("parses") {
            r.expect("applies");
        }
        cp
    }

    #[test]
    fn plan_steps_keep_the_kernel_between_steps() {
        let cp = cluster();
        let mut sim = ProxySim::new();
        let step: ProxyStep = serde_yaml_ng::from_str("{node: a, nodeIps: [192.168.0.10], now: 1000}").expect("step");
        let out = sim.plan(&cp, &step).expect("plans");
        let ops = out["operations"].as_array().cloned().unwrap_or_default();
        assert!(
            ops.contains(&json!("ip addr add 10.96.0.5/32 dev kube-ipvs0")),
            "{ops:?}"
        );
        assert!(ops.contains(&json!("-A -t 10.96.0.5:80 -s rr")), "{ops:?}");
        let out = sim.plan(&cp, &ProxyStep::default()).expect("plans");
        assert_eq!(out["operations"], json!([]));
        assert_eq!(
            out["save"],
            json!("-A -t 10.96.0.1:443 -s rr\n-A -t 10.96.0.5:80 -s rr\n")
        );
        let bad: ProxyStep =
            serde_yaml_ng::from_str("{counters: {'TCP/10.96.0.5:80': {'10.0.0.1:80': {active: 1}}}}").expect("step");
        assert_eq!(
            sim.plan(&cp, &bad).unwrap_err(),
            "counters: the kernel has no real server 10.0.0.1:80 in virtual server TCP/10.96.0.5:80"
        );
        assert!(sim.table(&cp, &step).is_err(), "now belongs to plan steps");
    }
}
