//! Service create, update and delete: admission, then ClusterIP and
//! NodePort allocation with Kubernetes' rules, all-or-nothing.
//!
//! A failed request leaves no trace: addresses and ports taken while
//! handling it are released before the error is returned.

use super::{ApiError, ControlPlane, ObjectKey};
use crate::api::service::Service;
use crate::apiserver::admission::{default_service, init_ip_families, validate_service, validate_service_update};
use crate::apiserver::kubernetes_service::is_kubernetes_service;
use crate::collections::SortedMap;
use crate::family::IpFamily;
use crate::field::{BadValue, FieldError, FieldPath};
use crate::rng::Rng;
use std::net::IpAddr;
use std::sync::Arc;

/// What a request took from the allocators, to give back on failure.
#[derive(Default)]
struct Taken {
    ips: Vec<IpAddr>,
    ports: Vec<u16>,
    /// The generator before the request, so a refused request does not
    /// change later allocations either.
    rng: Rng,
}

impl ControlPlane {
    /// Creates a Service, or updates it when one with that namespace and
    /// name exists (apply semantics: fields left out keep their values).
    /// Returns the stored object with every default and allocation filled in.
    /// Its EndpointSlices follow.
    pub fn apply_service(&mut self, svc: Service) -> Result<Service, ApiError> {
        let key = (
            svc.metadata.namespace_or_default().to_string(),
            svc.metadata.name.clone(),
        );
        let stored = match self.services.get(&key).map(|s| Service::clone(s)) {
            Some(old) => self.update_service(key.clone(), svc, old),
            None => self.create_service(key.clone(), svc),
        }?;
        self.sync_service_slices(&key.0, &key.1);
        Ok(stored)
    }

    /// Deletes a Service and frees its ClusterIPs and NodePorts; its
    /// Endpoints and the EndpointSlices the controllers made for it go too. Deleting
    /// `default/kubernetes` recreates it at once with the same address.
    pub fn delete_service(&mut self, namespace: &str, name: &str) -> Result<Service, ApiError> {
        let key = (namespace.to_string(), name.to_string());
        let old = self.services.remove(&key).ok_or_else(|| ApiError::NotFound {
            resource: "services".into(),
            name: name.into(),
        })?;
        if is_kubernetes_service(namespace, name) {
            self.ensure_kubernetes_service();
            self.sync_kubernetes_slice();
            return Ok(Arc::unwrap_or_clone(old));
        }
        self.release_service(&old);
        // The Endpoints controller deletes a deleted Service's Endpoints,
        // written by hand or not.
        self.written_endpoints.remove(&key);
        self.sync_service_slices(namespace, name);
        Ok(Arc::unwrap_or_clone(old))
    }

    fn create_service(&mut self, key: ObjectKey, mut svc: Service) -> Result<Service, ApiError> {
        default_service(&mut svc);
        let name = svc.metadata.name.clone();
        let errs = validate_service(&svc);
        if !errs.is_empty() {
            return Err(ApiError::invalid("Service", &name, errs));
        }
        init_ip_families(&mut svc, None, &self.families()).map_err(|e| ApiError::invalid("Service", &name, e))?;
        let mut taken = Taken {
            rng: self.rng.clone(),
            ..Taken::default()
        };
        let result = self
            .allocate_cluster_ips(&mut svc, &[], &mut taken)
            .and_then(|_| self.allocate_node_ports(&mut svc, &[], &mut taken));
        if let Err(e) = result {
            self.give_back(taken);
            return Err(e);
        }
        self.stamp(&mut svc.metadata);
        self.services.insert(key, Arc::new(svc.clone()));
        Ok(svc)
    }

    fn update_service(&mut self, key: ObjectKey, mut svc: Service, old: Service) -> Result<Service, ApiError> {
        default_service(&mut svc);
        keep_unset_fields(&mut svc, &old);
        let name = svc.metadata.name.clone();
        let errs = validate_service_update(&svc, &old);
        if !errs.is_empty() {
            return Err(ApiError::invalid("Service", &name, errs));
        }
        init_ip_families(&mut svc, Some(&old), &self.families()).map_err(|e| ApiError::invalid("Service", &name, e))?;
        let old_ips = parsed_ips(&old);
        let old_ports = held_ports(&old);
        let mut taken = Taken {
            rng: self.rng.clone(),
            ..Taken::default()
        };
        let result = self
            .allocate_cluster_ips(&mut svc, &old_ips, &mut taken)
            .and_then(|_| self.allocate_node_ports(&mut svc, &old_ports, &mut taken));
        if let Err(e) = result {
            self.give_back(taken);
            return Err(e);
        }
        let new_ips = parsed_ips(&svc);
        for ip in old_ips.iter().filter(|ip| !new_ips.contains(ip)) {
            self.cluster_ips.release(*ip);
        }
        let new_ports = held_ports(&svc);
        for port in old_ports.iter().filter(|p| !new_ports.contains(p)) {
            self.node_ports.release(*port);
        }
        self.finish_terminating_service_cidrs();
        svc.metadata.keep_identity_of(&old.metadata);
        if svc != old {
            self.bump(&mut svc.metadata);
        }
        self.services.insert(key, Arc::new(svc.clone()));
        Ok(svc)
    }

    /// Fills `spec.clusterIPs` per `spec.ipFamilies`, allocating what the
    /// Service does not already hold (`held`).
    fn allocate_cluster_ips(&mut self, svc: &mut Service, held: &[IpAddr], taken: &mut Taken) -> Result<(), ApiError> {
        if svc.service_type() == "ExternalName" {
            svc.spec.cluster_ip.clear();
            svc.spec.cluster_ips.clear();
            return Ok(());
        }
        if svc.is_headless() {
            svc.spec.cluster_ips = vec!["None".into()];
            return Ok(());
        }
        let families: Vec<IpFamily> = svc.spec.ip_families.iter().filter_map(|f| IpFamily::parse(f)).collect();
        let mut ips = Vec::with_capacity(families.len());
        for (i, family) in families.iter().enumerate() {
            let requested = svc.spec.cluster_ips.get(i).filter(|s| !s.is_empty()).cloned();
            match requested {
                Some(text) => {
                    let ip: IpAddr = text
                        .parse()
                        .map_err(|_| ApiError::Internal(format!("failed to parse service IP {text:?}")))?;
                    if !held.contains(&ip) {
                        self.cluster_ips.allocate(ip).map_err(|e| {
                            let path = FieldPath::new("spec").child("clusterIPs");
                            let detail = format!("failed to allocate IP {text}: {e}");
                            ApiError::invalid(
                                "Service",
                                &svc.metadata.name,
                                vec![FieldError::invalid(
                                    &path,
                                    BadValue::StrList(svc.spec.cluster_ips.clone()),
                                    &detail,
                                )],
                            )
                        })?;
                        taken.ips.push(ip);
                    }
                    ips.push(ip.to_string());
                }
                None => {
                    let ip = self.cluster_ips.allocate_next(*family, &mut self.rng).map_err(|e| {
                        ApiError::Internal(format!(
                            "failed to allocate a serviceIP for Service {:?}: {e}",
                            svc.metadata.name
                        ))
                    })?;
                    taken.ips.push(ip);
                    ips.push(ip.to_string());
                }
            }
        }
        svc.spec.cluster_ip = ips.first().cloned().unwrap_or_default();
        svc.spec.cluster_ips = ips;
        Ok(())
    }

    /// Allocates NodePorts and the health check port, as kube-apiserver's
    /// `initNodePorts`: ports with the same `port` number share a nodePort;
    /// requested ports are honoured; ports the Service already holds
    /// (`held`) are kept.
    fn allocate_node_ports(&mut self, svc: &mut Service, held: &[u16], taken: &mut Taken) -> Result<(), ApiError> {
        let name = svc.metadata.name.clone();
        let allocate_new = svc.needs_node_ports();
        let node_port_type = matches!(svc.service_type(), "NodePort" | "LoadBalancer");
        if !node_port_type {
            for p in &mut svc.spec.ports {
                p.node_port = None;
            }
        }
        let mut by_port: SortedMap<i64, i64> = SortedMap::new();
        for i in 0..svc.spec.ports.len() {
            if !node_port_type {
                break;
            }
            let (port, requested) = (
                svc.spec.ports[i].port,
                svc.spec.ports[i].node_port.filter(|np| *np != 0),
            );
            if requested.is_none() && !allocate_new {
                continue;
            }
            let shared = by_port.get(&port).copied();
            let chosen = match (shared, requested) {
                (Some(np), None) => np,
                (Some(np), Some(r)) if np == r => np,
                (_, wanted) => {
                    let wanted = wanted.or_else(|| {
                        svc.spec.ports[i + 1..]
                            .iter()
                            .find(|p| p.port == port)
                            .and_then(|p| p.node_port)
                            .filter(|np| *np != 0)
                    });
                    match wanted {
                        Some(np) => {
                            // Another port number of this Service holds it
                            // already: kube-apiserver's allocator refuses it.
                            let reused = by_port.values().any(|held_np| *held_np == np);
                            let result = if reused {
                                Err(crate::apiserver::node_port::NodePortError::AlreadyAllocated.to_string())
                            } else {
                                self.take_node_port(np, held, taken)
                            };
                            result.map_err(|detail| {
                                let path = FieldPath::new("spec").child("ports").index(i).child("nodePort");
                                ApiError::invalid("Service", &name, vec![FieldError::invalid(&path, np, &detail)])
                            })?;
                            np
                        }
                        None => {
                            let np = self
                                .node_ports
                                .allocate_next(&mut self.rng)
                                .map_err(|e| ApiError::Internal(format!("failed to allocate a nodePort: {e}")))?;
                            taken.ports.push(np);
                            i64::from(np)
                        }
                    }
                }
            };
            by_port.entry(port).or_insert(chosen);
            svc.spec.ports[i].node_port = Some(chosen);
        }
        if svc.needs_health_check_node_port() {
            match svc.spec.health_check_node_port.filter(|p| *p != 0) {
                Some(hc) => self.take_node_port(hc, held, taken).map_err(|e| {
                    ApiError::Internal(format!("failed to allocate requested HealthCheck NodePort {hc}: {e}"))
                })?,
                None => {
                    let hc = self
                        .node_ports
                        .allocate_next(&mut self.rng)
                        .map_err(|e| ApiError::Internal(format!("failed to allocate a HealthCheck NodePort: {e}")))?;
                    taken.ports.push(hc);
                    svc.spec.health_check_node_port = Some(i64::from(hc));
                }
            }
        } else {
            svc.spec.health_check_node_port = None;
        }
        Ok(())
    }

    fn take_node_port(&mut self, np: i64, held: &[u16], taken: &mut Taken) -> Result<(), String> {
        let Ok(port) = u16::try_from(np) else {
            return Err(format!(
                "provided port is not in the valid range. The range of valid ports is {}",
                self.config.node_ports
            ));
        };
        if held.contains(&port) || taken.ports.contains(&port) {
            return Ok(());
        }
        self.node_ports.allocate(port).map_err(|e| e.to_string())?;
        taken.ports.push(port);
        Ok(())
    }

    fn give_back(&mut self, taken: Taken) {
        for ip in &taken.ips {
            self.cluster_ips.release(*ip);
        }
        for port in &taken.ports {
            self.node_ports.release(*port);
        }
        self.rng = taken.rng;
    }

    fn release_service(&mut self, svc: &Service) {
        for ip in parsed_ips(svc) {
            self.cluster_ips.release(ip);
        }
        for port in held_ports(svc) {
            self.node_ports.release(port);
        }
        self.finish_terminating_service_cidrs();
    }
}

/// Apply semantics: what the new object leaves out keeps the old value
/// (ClusterIPs, families, NodePorts matched by port and protocol, the
/// health check port), unless the type change makes it meaningless.
fn keep_unset_fields(new: &mut Service, old: &Service) {
    let to_external_name = new.service_type() == "ExternalName";
    let from_external_name = old.service_type() == "ExternalName";
    if !to_external_name && !from_external_name && new.spec.cluster_ip.is_empty() && new.spec.cluster_ips.is_empty() {
        new.spec.cluster_ip = old.spec.cluster_ip.clone();
        new.spec.cluster_ips = old.spec.cluster_ips.clone();
        if new.spec.ip_families.is_empty() {
            new.spec.ip_families = old.spec.ip_families.clone();
        }
    }
    if new.needs_node_ports() {
        for port in &mut new.spec.ports {
            if port.node_port.is_none() {
                port.node_port = old
                    .spec
                    .ports
                    .iter()
                    .find(|o| o.port == port.port && o.protocol == port.protocol)
                    .and_then(|o| o.node_port);
            }
        }
    }
    if new.needs_health_check_node_port() && new.spec.health_check_node_port.is_none() {
        new.spec.health_check_node_port = old.spec.health_check_node_port;
    }
}

/// The ClusterIPs a stored Service holds.
pub(crate) fn parsed_ips(svc: &Service) -> Vec<IpAddr> {
    svc.spec.cluster_ips.iter().filter_map(|s| s.parse().ok()).collect()
}

/// The NodePorts (and health check port) a stored Service holds.
pub(crate) fn held_ports(svc: &Service) -> Vec<u16> {
    let mut ports: Vec<u16> = svc
        .spec
        .ports
        .iter()
        .filter_map(|p| p.node_port)
        .filter_map(|np| u16::try_from(np).ok())
        .collect();
    if let Some(hc) = svc.spec.health_check_node_port.and_then(|hc| u16::try_from(hc).ok()) {
        ports.push(hc);
    }
    crate::sort::sort(&mut ports);
    ports.dedup();
    ports
}
