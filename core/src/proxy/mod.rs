//! What kube-proxy's IPVS mode computes on one node, without any I/O.
//!
//! - [`categorize`](mod@categorize): which endpoints a Service port uses on this node
//!   (ready, serving+terminating fallback, traffic policies, topology).
//! - [`desired`]: the virtual servers, real servers and `kube-ipvs0`
//!   addresses each Service needs ([`desired_table`] for a whole node).
//! - [`index`]: the desired table kept up to date one Service at a time,
//!   reporting what changed.
//! - [`table`]: the IPVS table type, one for desired and observed state.
//! - [`plan`](mod@plan): the ordered operations from an observed table to the desired
//!   one, with graceful termination and ownership; [`apply`] replays them on
//!   an in-memory table.
//! - [`render`]: `ipvsadm-save -n`, `ipvsadm -Ln` and JSON, listed in
//!   [`order`](mod@order), `ipvsadm`'s own order (its wrapping address sort),
//!   and `ipvsadm-save` text read back into a table.
//! - [`plan_output`](mod@plan_output): what `ipvs-agent plan` prints in each `--format`.
//! - [`iptables`]: the rules kube-proxy's iptables mode would write, as
//!   `iptables-save` prints them.
//! - [`kube_proxy_config`]: kube-proxy's `--config` file, read, defaulted
//!   and validated as kube-proxy reads it for IPVS mode ([`go_duration`]:
//!   its duration text).
//! - [`kube_proxy_nft`]: the table kube-proxy's own nftables mode writes,
//!   rendered as `nft list table ip kube-proxy` prints it.
//! - [`nftables`]: the masquerade and filter rules kube-proxy writes with
//!   iptables and ipsets, as one nftables table computed from the same
//!   inputs, rendered as `nft` text.
//! - [`health`]: kube-proxy's `/healthz` and `/livez` verdicts and bodies.
//! - [`conntrack`]: which UDP conntrack entries are stale after a sync
//!   (kube-proxy 1.32+'s cleanup), from the desired table.
//! - [`sync_loop`]: the sync loop as a state machine: when to read the
//!   kernel, plan, apply and retry, with time passed in.
//! - [`watch_cache`]: what kube-proxy's informers hold in API mode, and
//!   what each list and watch event means for the sync loop.
//! - [`scenario`]: the behaviour-vector actions for all of the above.

pub mod apply;
pub mod categorize;
pub mod conntrack;
pub mod desired;
pub mod error;
pub mod go_duration;
pub mod health;
pub mod index;
pub mod iptables;
pub mod kube_proxy_config;
pub mod kube_proxy_nft;
pub mod nftables;
pub mod node;
pub mod order;
pub mod plan;
pub mod plan_output;
pub mod render;
pub mod scenario;
pub mod scheduler;
pub mod service_health;
pub mod sync_loop;
pub mod table;
pub mod watch_cache;

pub use apply::{apply_operation, apply_plan};
pub use categorize::{categorize, port_endpoints, Categorized, ClusterRule, EndpointInfo, LocalRule};
pub use conntrack::{CleanupDue, CleanupSchedule, ConntrackEntry, UdpFrontends};
pub use desired::{desired_table, service_fragment, slices_by_service, Desired, ProxyConfig, ServiceFragment};
pub use error::{ApplyError, ProxyError, ProxyWarning};
pub use index::{Changes, DesiredIndex};
pub use node::NodeInfo;
pub use plan::{plan, plan_changes, DrainState, Operation, Plan, PlanContext, PlanState};
pub use plan_output::{plan_output, PlanFormat, PlanInputs, PlanOutput};
pub use render::{
    ipvsadm_list, ipvsadm_save, parse_ipvsadm_save, table_json, SaveParseError, SaveProblem, DUMMY_INTERFACE,
};
pub use scheduler::{Scheduler, SCHEDULER_ANNOTATION};
pub use table::{
    Flags, Forward, IpvsTable, Protocol, RealServer, VirtualServer, VirtualServerKey, VirtualServerSettings,
};
