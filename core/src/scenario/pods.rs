//! The `createPods` action: many Pods from one description, so that a
//! vector can hold hundreds of endpoints as data.

use super::{CreatePods, StepResult};
use crate::api::pod::{Container, PodCondition, PodIp};
use crate::api::Pod;
use crate::controlplane::ControlPlane;
use ipnetwork::IpNetwork;
use serde_json::Value;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

/// The CIDR Pods get addresses from when a vector names none.
const DEFAULT_POD_CIDR: &str = "10.244.0.0/16";

/// Creates the Pods; output: the first IP of each.
pub(super) fn create_pods(cp: &mut ControlPlane, c: &CreatePods) -> StepResult {
    let cidrs = if c.pod_cidrs.is_empty() {
        vec![DEFAULT_POD_CIDR.to_string()]
    } else {
        c.pod_cidrs.clone()
    };
    let mut nets = Vec::with_capacity(cidrs.len());
    for text in &cidrs {
        let net = text
            .parse::<IpNetwork>()
            .map_err(|_| (None, format!("createPods: podCidrs: {text:?} is not a CIDR")))?;
        nets.push(net);
    }
    let mut ips = Vec::new();
    for i in 0..c.count {
        let offset = c.first_offset.unwrap_or(1).saturating_add(i as u64);
        let mut addresses = Vec::with_capacity(nets.len());
        for net in &nets {
            match nth_address(*net, offset) {
                Some(ip) => addresses.push(ip.to_string()),
                None => {
                    let message = format!("createPods: offset {offset} is outside {net}");
                    return Err((Some(Value::Array(ips)), message));
                }
            }
        }
        let first = addresses.first().cloned().unwrap_or_default();
        match cp.apply_pod(make_pod(c, i, addresses)) {
            Ok(_) => ips.push(Value::String(first)),
            Err(e) => return Err((Some(Value::Array(ips)), e.to_string())),
        }
    }
    Ok(Value::Array(ips))
}

/// Pod `i` of the description, with `addresses`.
fn make_pod(c: &CreatePods, i: usize, addresses: Vec<String>) -> Pod {
    let mut pod = Pod::default();
    pod.metadata.name = format!("{}-{i}", c.prefix);
    pod.metadata.namespace = c.namespace.clone().unwrap_or_else(|| "default".into());
    pod.metadata.labels = c.labels.clone();
    pod.spec.containers.push(Container {
        name: "app".into(),
        ports: c.container_ports.clone(),
        ..Container::default()
    });
    if !c.nodes.is_empty() {
        pod.spec.node_name = Some(c.nodes[i % c.nodes.len()].clone());
    }
    pod.status.phase = Some("Running".into());
    pod.status.pod_ip = addresses.first().cloned();
    pod.status.pod_ips = addresses.into_iter().map(|ip| PodIp { ip }).collect();
    let ready = c.ready.unwrap_or(true);
    pod.status.conditions.push(PodCondition {
        condition_type: "Ready".into(),
        status: if ready { "True" } else { "False" }.into(),
        ..PodCondition::default()
    });
    pod
}

/// The address `offset` places after the network address of `net`, if it
/// is inside `net`.
fn nth_address(net: IpNetwork, offset: u64) -> Option<IpAddr> {
    let ip = match net.network() {
        IpAddr::V4(base) => {
            let n = u64::from(u32::from(base)).checked_add(offset)?;
            IpAddr::V4(Ipv4Addr::from(u32::try_from(n).ok()?))
        }
        IpAddr::V6(base) => IpAddr::V6(Ipv6Addr::from(u128::from(base).checked_add(u128::from(offset))?)),
    };
    net.contains(ip).then_some(ip)
}
