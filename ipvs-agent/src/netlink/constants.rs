//! Numeric constants of the IPVS generic-netlink family, transcribed from the
//! kernel's `include/uapi/linux/ip_vs.h` (and the few socket constants the
//! family's messages carry). Nothing else in the crate spells a raw number.

/// The family name the generic-netlink controller resolves to an id.
pub const IPVS_GENL_NAME: &str = "IPVS";
/// The family version every request carries in its `genlmsghdr`.
pub const IPVS_GENL_VERSION: u8 = 1;

// Commands (`IPVS_CMD_*`).
/// Add a virtual server.
pub const IPVS_CMD_NEW_SERVICE: u8 = 1;
/// Edit a virtual server.
pub const IPVS_CMD_SET_SERVICE: u8 = 2;
/// Delete a virtual server.
pub const IPVS_CMD_DEL_SERVICE: u8 = 3;
/// Get one virtual server, or dump them all.
pub const IPVS_CMD_GET_SERVICE: u8 = 4;
/// Add a real server.
pub const IPVS_CMD_NEW_DEST: u8 = 5;
/// Edit a real server.
pub const IPVS_CMD_SET_DEST: u8 = 6;
/// Delete a real server.
pub const IPVS_CMD_DEL_DEST: u8 = 7;
/// Dump the real servers of one virtual server.
pub const IPVS_CMD_GET_DEST: u8 = 8;
/// Start a connection-sync daemon.
pub const IPVS_CMD_NEW_DAEMON: u8 = 9;
/// Stop a connection-sync daemon.
pub const IPVS_CMD_DEL_DAEMON: u8 = 10;
/// Get the connection-sync daemons.
pub const IPVS_CMD_GET_DAEMON: u8 = 11;
/// Set the TCP, TCP FIN and UDP timeouts (also the GET_CONFIG reply).
pub const IPVS_CMD_SET_CONFIG: u8 = 12;
/// Get the timeouts.
pub const IPVS_CMD_GET_CONFIG: u8 = 13;
/// The command of a GET_INFO reply.
pub const IPVS_CMD_SET_INFO: u8 = 14;
/// Get the IPVS version and connection table size.
pub const IPVS_CMD_GET_INFO: u8 = 15;
/// Zero the counters.
pub const IPVS_CMD_ZERO: u8 = 16;
/// Delete every virtual server.
pub const IPVS_CMD_FLUSH: u8 = 17;

// Top-level attributes (`IPVS_CMD_ATTR_*`).
/// Nested service attributes.
pub const IPVS_CMD_ATTR_SERVICE: u16 = 1;
/// Nested destination attributes.
pub const IPVS_CMD_ATTR_DEST: u16 = 2;
/// Nested sync-daemon attributes.
pub const IPVS_CMD_ATTR_DAEMON: u16 = 3;
/// TCP established timeout, seconds (u32).
pub const IPVS_CMD_ATTR_TIMEOUT_TCP: u16 = 4;
/// TCP FIN-wait timeout, seconds (u32).
pub const IPVS_CMD_ATTR_TIMEOUT_TCP_FIN: u16 = 5;
/// UDP timeout, seconds (u32).
pub const IPVS_CMD_ATTR_TIMEOUT_UDP: u16 = 6;

// Top-level attributes of a GET_INFO reply (`IPVS_INFO_ATTR_*`); they reuse
// the numbers 1 and 2, so they are told apart by the command.
/// IPVS version, `0x00MMmmpp` (u32).
pub const IPVS_INFO_ATTR_VERSION: u16 = 1;
/// Connection hash table size (u32).
pub const IPVS_INFO_ATTR_CONN_TAB_SIZE: u16 = 2;

// Service attributes, nested in `IPVS_CMD_ATTR_SERVICE` (`IPVS_SVC_ATTR_*`).
/// Address family (u16).
pub const IPVS_SVC_ATTR_AF: u16 = 1;
/// IP protocol (u16).
pub const IPVS_SVC_ATTR_PROTOCOL: u16 = 2;
/// Virtual address (16 bytes, IPv4 in the first 4).
pub const IPVS_SVC_ATTR_ADDR: u16 = 3;
/// Virtual port (u16, network order).
pub const IPVS_SVC_ATTR_PORT: u16 = 4;
/// Firewall mark (u32).
pub const IPVS_SVC_ATTR_FWMARK: u16 = 5;
/// Scheduler name (NUL-terminated string).
pub const IPVS_SVC_ATTR_SCHED_NAME: u16 = 6;
/// Flags: `{u32 flags, u32 mask}`.
pub const IPVS_SVC_ATTR_FLAGS: u16 = 7;
/// Persistence timeout, seconds (u32).
pub const IPVS_SVC_ATTR_TIMEOUT: u16 = 8;
/// Persistence netmask (u32, see `ServiceAttr::Netmask`).
pub const IPVS_SVC_ATTR_NETMASK: u16 = 9;
/// Nested 32-bit statistics.
pub const IPVS_SVC_ATTR_STATS: u16 = 10;
/// Persistence engine name (NUL-terminated string).
pub const IPVS_SVC_ATTR_PE_NAME: u16 = 11;
/// Nested 64-bit statistics.
pub const IPVS_SVC_ATTR_STATS64: u16 = 12;

// Destination (real server) attributes, nested in `IPVS_CMD_ATTR_DEST`.
/// Real server address (16 bytes).
pub const IPVS_DEST_ATTR_ADDR: u16 = 1;
/// Real server port (u16, network order).
pub const IPVS_DEST_ATTR_PORT: u16 = 2;
/// Forwarding method (u32).
pub const IPVS_DEST_ATTR_FWD_METHOD: u16 = 3;
/// Weight (u32).
pub const IPVS_DEST_ATTR_WEIGHT: u16 = 4;
/// Upper connection threshold (u32).
pub const IPVS_DEST_ATTR_U_THRESH: u16 = 5;
/// Lower connection threshold (u32).
pub const IPVS_DEST_ATTR_L_THRESH: u16 = 6;
/// Active connections (u32).
pub const IPVS_DEST_ATTR_ACTIVE_CONNS: u16 = 7;
/// Inactive connections (u32).
pub const IPVS_DEST_ATTR_INACT_CONNS: u16 = 8;
/// Persistence templates (u32).
pub const IPVS_DEST_ATTR_PERSIST_CONNS: u16 = 9;
/// Nested 32-bit statistics.
pub const IPVS_DEST_ATTR_STATS: u16 = 10;
/// Address family of the real server (u16).
pub const IPVS_DEST_ATTR_ADDR_FAMILY: u16 = 11;
/// Nested 64-bit statistics.
pub const IPVS_DEST_ATTR_STATS64: u16 = 12;
/// Tunnel type (u8).
pub const IPVS_DEST_ATTR_TUN_TYPE: u16 = 13;
/// Tunnel port (u16, network order).
pub const IPVS_DEST_ATTR_TUN_PORT: u16 = 14;
/// Tunnel flags (u16).
pub const IPVS_DEST_ATTR_TUN_FLAGS: u16 = 15;

// Statistics attributes, nested in the STATS and STATS64 attributes.
/// Connections scheduled.
pub const IPVS_STATS_ATTR_CONNS: u16 = 1;
/// Incoming packets.
pub const IPVS_STATS_ATTR_INPKTS: u16 = 2;
/// Outgoing packets.
pub const IPVS_STATS_ATTR_OUTPKTS: u16 = 3;
/// Incoming bytes (always u64).
pub const IPVS_STATS_ATTR_INBYTES: u16 = 4;
/// Outgoing bytes (always u64).
pub const IPVS_STATS_ATTR_OUTBYTES: u16 = 5;
/// Connection rate.
pub const IPVS_STATS_ATTR_CPS: u16 = 6;
/// Incoming packet rate.
pub const IPVS_STATS_ATTR_INPPS: u16 = 7;
/// Outgoing packet rate.
pub const IPVS_STATS_ATTR_OUTPPS: u16 = 8;
/// Incoming byte rate.
pub const IPVS_STATS_ATTR_INBPS: u16 = 9;
/// Outgoing byte rate.
pub const IPVS_STATS_ATTR_OUTBPS: u16 = 10;

// Virtual service flags (`IP_VS_SVC_F_*`).
/// Persistent service.
pub const IP_VS_SVC_F_PERSISTENT: u32 = 0x0001;
/// Hashed entry (always set on read).
pub const IP_VS_SVC_F_HASHED: u32 = 0x0002;
/// One-packet scheduling.
pub const IP_VS_SVC_F_ONEPACKET: u32 = 0x0004;
/// Scheduler flag 1 (`sh-fallback` / `mh-fallback`).
pub const IP_VS_SVC_F_SCHED1: u32 = 0x0008;
/// Scheduler flag 2 (`sh-port` / `mh-port`).
pub const IP_VS_SVC_F_SCHED2: u32 = 0x0010;
/// Scheduler flag 3.
pub const IP_VS_SVC_F_SCHED3: u32 = 0x0020;

// Forwarding methods (`IP_VS_CONN_F_*` under `IP_VS_CONN_F_FWD_MASK`).
/// NAT ("masq", `ipvsadm -m`).
pub const IP_VS_CONN_F_MASQ: u32 = 0;
/// Local node.
pub const IP_VS_CONN_F_LOCALNODE: u32 = 1;
/// IP-in-IP tunnel (`-i`).
pub const IP_VS_CONN_F_TUNNEL: u32 = 2;
/// Direct routing (`-g`).
pub const IP_VS_CONN_F_DROUTE: u32 = 3;

/// Longest scheduler or persistence-engine name, counting the trailing NUL.
pub const IP_VS_SCHEDNAME_MAXLEN: usize = 16;

// Address families and IP protocols as the kernel numbers them.
/// IPv4.
pub const AF_INET: u16 = 2;
/// IPv6.
pub const AF_INET6: u16 = 10;
/// TCP.
pub const IPPROTO_TCP: u16 = 6;
/// UDP.
pub const IPPROTO_UDP: u16 = 17;
/// SCTP.
pub const IPPROTO_SCTP: u16 = 132;

// The errno values the IPVS family answers with (Linux numbering).
/// Operation not permitted.
pub const EPERM: i32 = 1;
/// No such file or directory.
pub const ENOENT: i32 = 2;
/// No such process.
pub const ESRCH: i32 = 3;
/// File exists.
pub const EEXIST: i32 = 17;
/// Invalid argument.
pub const EINVAL: i32 = 22;
/// Result out of range.
pub const ERANGE: i32 = 34;
/// Address family not supported.
pub const EAFNOSUPPORT: i32 = 97;
