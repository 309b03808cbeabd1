//! ipvs-agent: the svcnet node agent that programs Linux IPVS.
//!
//! - [`netlink`]: the IPVS generic-netlink family as pure data (no I/O).
//! - [`nftables`]: nf_tables over nfnetlink as pure data: svcnet's table
//!   `inet svcnet` as one transaction per change (no I/O).
//! - [`nftables_sync`]: `run`'s nftables side: the table kept after each
//!   sync (on by default), and a kernel without nf_tables warned about
//!   once while IPVS is programmed as before.
//! - [`conntrack`]: conntrack over ctnetlink as pure data: the filtered
//!   UDP dump and the per-entry delete of the UDP cleanup (no I/O).
//! - [`dataplane`]: the boundary between the sync loop and the kernel.
//! - [`cli`]: the command line.
//! - [`manifests`]: manifest files and directories, decoded with their origin.
//! - [`state`]: the state file (the control plane snapshot) and the
//!   plan-state file beside it (drain start times, claimed virtual
//!   servers), both written atomically.
//! - [`cluster`]: the core's control plane fed from manifests and the state file.
//! - [`clock`]: the monotonic clock that gives the core its time.
//! - [`node`]: this node's name and addresses.
//! - [`sync`]: the sync loop, generic over the dataplane.
//! - [`agent`]: `run`'s main loop: manifests, leases, syncs, state.
//! - [`api_agent`]: `run`'s main loop in API mode: watch updates, syncs
//!   (feature `api`).
//! - [`cleanup`]: `cleanup`: removing what the agent owns.
//! - [`metrics`], [`kube_proxy_metrics`], [`http`]: `/metrics` (svcnet's
//!   and kube-proxy's names), `/healthz` and `/livez`.
//! - [`service_health`]: the per-Service health checks on each
//!   `healthCheckNodePort`, opened and closed as syncs change them.
//! - [`kubeapi`]: API mode: connecting to the apiserver, listing and
//!   watching Services, EndpointSlices and the Node with kube-rs (feature
//!   `api`, on by default), and the decoding of their objects into the
//!   core's types (always).
//! - [`kernel`]: the Linux side: IPVS generic-netlink socket, `kube-ipvs0`
//!   over rtnetlink, sysctls, and [`kernel::LinuxDataplane`].

#![warn(missing_docs)]

pub mod agent;
#[cfg(feature = "api")]
pub mod api_agent;
pub mod cleanup;
pub mod cli;
pub mod clock;
pub mod cluster;
pub mod conntrack;
pub mod dataplane;
pub mod http;
pub mod kernel;
pub mod kube_proxy_metrics;
pub mod kubeapi;
pub mod manifests;
#[cfg(test)]
mod memory;
pub mod metrics;
pub mod netlink;
pub mod nftables;
pub mod nftables_sync;
pub mod node;
pub mod service_health;
pub mod state;
pub mod sync;
