//! Applying a plan to an in-memory [`IpvsTable`], with the kernel's rules:
//! a virtual server must exist before real servers are added to it, cannot
//! be added twice, and so on. Tests use it to check that a plan reaches the
//! desired table; the agent uses it to keep its own copy of the kernel's
//! table between dumps.

use super::error::ApplyError;
use super::plan::{Operation, Plan};
use super::table::{IpvsTable, RealServer, VirtualServer};
use crate::collections::SortedMap;

/// Applies every operation of `plan` in order; stops at the first one the
/// kernel would refuse (the ones before it stay applied, as in the kernel).
pub fn apply_plan(table: &mut IpvsTable, plan: &Plan) -> Result<(), ApplyError> {
    plan.operations.iter().try_for_each(|op| apply_operation(table, op))
}

/// Applies one operation.
pub fn apply_operation(table: &mut IpvsTable, op: &Operation) -> Result<(), ApplyError> {
    let text = || op.to_string();
    match op {
        Operation::BindAddress { address } => {
            if !table.addresses.insert(*address) {
                return Err(ApplyError::AddressBound { operation: text() });
            }
        }
        Operation::UnbindAddress { address } => {
            if !table.addresses.remove(address) {
                return Err(ApplyError::AddressNotBound { operation: text() });
            }
        }
        Operation::AddVirtualServer {
            virtual_server,
            settings,
        } => {
            if table.virtual_servers.contains_key(virtual_server) {
                return Err(ApplyError::ServiceExists { operation: text() });
            }
            table.virtual_servers.insert(
                *virtual_server,
                VirtualServer {
                    settings: settings.clone(),
                    real_servers: SortedMap::new(),
                },
            );
        }
        Operation::UpdateVirtualServer {
            virtual_server,
            settings,
        } => match table.virtual_servers.get_mut(virtual_server) {
            Some(vs) => vs.settings = settings.clone(),
            None => return Err(ApplyError::NoSuchService { operation: text() }),
        },
        Operation::DeleteVirtualServer { virtual_server } => {
            if table.virtual_servers.remove(virtual_server).is_none() {
                return Err(ApplyError::NoSuchService { operation: text() });
            }
        }
        Operation::AddRealServer {
            virtual_server,
            real_server,
            forward,
            weight,
        } => {
            let vs = table
                .virtual_servers
                .get_mut(virtual_server)
                .ok_or_else(|| ApplyError::ServiceNotDefined { operation: text() })?;
            if vs.real_servers.contains_key(real_server) {
                return Err(ApplyError::DestinationExists { operation: text() });
            }
            let mut rs = RealServer::masq(*weight);
            rs.forward = *forward;
            vs.real_servers.insert(*real_server, rs);
        }
        Operation::UpdateRealServer {
            virtual_server,
            real_server,
            forward,
            weight,
        } => {
            let vs = table
                .virtual_servers
                .get_mut(virtual_server)
                .ok_or_else(|| ApplyError::ServiceNotDefined { operation: text() })?;
            let rs = vs
                .real_servers
                .get_mut(real_server)
                .ok_or_else(|| ApplyError::NoSuchDestination { operation: text() })?;
            rs.forward = *forward;
            rs.weight = *weight;
        }
        Operation::DeleteRealServer {
            virtual_server,
            real_server,
        } => {
            let vs = table
                .virtual_servers
                .get_mut(virtual_server)
                .ok_or_else(|| ApplyError::ServiceNotDefined { operation: text() })?;
            if vs.real_servers.remove(real_server).is_none() {
                return Err(ApplyError::NoSuchDestination { operation: text() });
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::proxy::scheduler::Scheduler;
    use crate::proxy::table::{Flags, Forward, VirtualServerSettings};

    fn add_vs() -> Operation {
        Operation::AddVirtualServer {
            virtual_server: "TCP/10.96.0.1:443".parse().expect("key"),
            settings: VirtualServerSettings {
                scheduler: Scheduler::Rr,
                flags: Flags::NONE,
                timeout: 0,
                netmask: u32::MAX,
            },
        }
    }

    fn add_rs() -> Operation {
        Operation::AddRealServer {
            virtual_server: "TCP/10.96.0.1:443".parse().expect("key"),
            real_server: "192.168.0.10:6443".parse().expect("addr"),
            forward: Forward::Masq,
            weight: 1,
        }
    }

    #[test]
    fn refuses_what_the_kernel_refuses() {
        let mut table = IpvsTable::new();
        assert_eq!(
            apply_operation(&mut table, &add_rs()).unwrap_err().to_string(),
            "-a -t 10.96.0.1:443 -r 192.168.0.10:6443 -m -w 1: Service not defined"
        );
        apply_operation(&mut table, &add_vs()).expect("adds");
        assert_eq!(
            apply_operation(&mut table, &add_vs()).unwrap_err().to_string(),
            "-A -t 10.96.0.1:443 -s rr: Service already exists"
        );
        apply_operation(&mut table, &add_rs()).expect("adds");
        assert!(matches!(
            apply_operation(&mut table, &add_rs()),
            Err(ApplyError::DestinationExists { .. })
        ));
        let unbind = Operation::UnbindAddress {
            address: "10.96.0.1".parse().expect("ip"),
        };
        assert_eq!(
            apply_operation(&mut table, &unbind).unwrap_err().to_string(),
            "ip addr del 10.96.0.1/32 dev kube-ipvs0: RTNETLINK answers: Cannot assign requested address"
        );
        let del = Operation::DeleteVirtualServer {
            virtual_server: "TCP/10.96.0.1:443".parse().expect("key"),
        };
        apply_operation(&mut table, &del).expect("deletes with its real servers");
        assert_eq!(table, IpvsTable::new());
    }
}
