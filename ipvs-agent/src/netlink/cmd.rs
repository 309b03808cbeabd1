//! The IPVS commands (`IPVS_CMD_*`): the `cmd` byte of the generic-netlink
//! header, with the words an operator would use for each.

use std::fmt;

use netlink_packet_core::DecodeError;

use super::constants::*;

/// An IPVS generic-netlink command.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum IpvsCmd {
    /// `IPVS_CMD_NEW_SERVICE` (1): add a virtual server; also the command of
    /// each message in a GET_SERVICE reply.
    NewService,
    /// `IPVS_CMD_SET_SERVICE` (2): edit a virtual server.
    SetService,
    /// `IPVS_CMD_DEL_SERVICE` (3): delete a virtual server.
    DelService,
    /// `IPVS_CMD_GET_SERVICE` (4): get one virtual server, or dump them all.
    GetService,
    /// `IPVS_CMD_NEW_DEST` (5): add a real server; also the command of each
    /// message in a GET_DEST reply.
    NewDest,
    /// `IPVS_CMD_SET_DEST` (6): edit a real server.
    SetDest,
    /// `IPVS_CMD_DEL_DEST` (7): delete a real server.
    DelDest,
    /// `IPVS_CMD_GET_DEST` (8): dump the real servers of one virtual server.
    GetDest,
    /// `IPVS_CMD_NEW_DAEMON` (9): start a connection-sync daemon.
    NewDaemon,
    /// `IPVS_CMD_DEL_DAEMON` (10): stop a connection-sync daemon.
    DelDaemon,
    /// `IPVS_CMD_GET_DAEMON` (11): get the connection-sync daemons.
    GetDaemon,
    /// `IPVS_CMD_SET_CONFIG` (12): set the timeouts; also the command of the
    /// GET_CONFIG reply.
    SetConfig,
    /// `IPVS_CMD_GET_CONFIG` (13): get the timeouts.
    GetConfig,
    /// `IPVS_CMD_SET_INFO` (14): the command of the GET_INFO reply.
    SetInfo,
    /// `IPVS_CMD_GET_INFO` (15): get the IPVS version and table size.
    GetInfo,
    /// `IPVS_CMD_ZERO` (16): zero the counters.
    Zero,
    /// `IPVS_CMD_FLUSH` (17): delete every virtual server.
    Flush,
}

impl IpvsCmd {
    /// What the command does, in an operator's words (used in error messages).
    pub fn describe(self) -> &'static str {
        match self {
            Self::NewService => "add virtual server",
            Self::SetService => "edit virtual server",
            Self::DelService => "delete virtual server",
            Self::GetService => "get virtual servers",
            Self::NewDest => "add real server",
            Self::SetDest => "edit real server",
            Self::DelDest => "delete real server",
            Self::GetDest => "get real servers",
            Self::NewDaemon => "start sync daemon",
            Self::DelDaemon => "stop sync daemon",
            Self::GetDaemon => "get sync daemons",
            Self::SetConfig => "set IPVS timeouts",
            Self::GetConfig => "get IPVS timeouts",
            Self::SetInfo => "IPVS info",
            Self::GetInfo => "get IPVS info",
            Self::Zero => "zero IPVS counters",
            Self::Flush => "flush IPVS table",
        }
    }
}

impl fmt::Display for IpvsCmd {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.describe())
    }
}

impl From<IpvsCmd> for u8 {
    fn from(cmd: IpvsCmd) -> u8 {
        match cmd {
            IpvsCmd::NewService => IPVS_CMD_NEW_SERVICE,
            IpvsCmd::SetService => IPVS_CMD_SET_SERVICE,
            IpvsCmd::DelService => IPVS_CMD_DEL_SERVICE,
            IpvsCmd::GetService => IPVS_CMD_GET_SERVICE,
            IpvsCmd::NewDest => IPVS_CMD_NEW_DEST,
            IpvsCmd::SetDest => IPVS_CMD_SET_DEST,
            IpvsCmd::DelDest => IPVS_CMD_DEL_DEST,
            IpvsCmd::GetDest => IPVS_CMD_GET_DEST,
            IpvsCmd::NewDaemon => IPVS_CMD_NEW_DAEMON,
            IpvsCmd::DelDaemon => IPVS_CMD_DEL_DAEMON,
            IpvsCmd::GetDaemon => IPVS_CMD_GET_DAEMON,
            IpvsCmd::SetConfig => IPVS_CMD_SET_CONFIG,
            IpvsCmd::GetConfig => IPVS_CMD_GET_CONFIG,
            IpvsCmd::SetInfo => IPVS_CMD_SET_INFO,
            IpvsCmd::GetInfo => IPVS_CMD_GET_INFO,
            IpvsCmd::Zero => IPVS_CMD_ZERO,
            IpvsCmd::Flush => IPVS_CMD_FLUSH,
        }
    }
}

impl TryFrom<u8> for IpvsCmd {
    type Error = DecodeError;

    fn try_from(value: u8) -> Result<Self, DecodeError> {
        Ok(match value {
            IPVS_CMD_NEW_SERVICE => Self::NewService,
            IPVS_CMD_SET_SERVICE => Self::SetService,
            IPVS_CMD_DEL_SERVICE => Self::DelService,
            IPVS_CMD_GET_SERVICE => Self::GetService,
            IPVS_CMD_NEW_DEST => Self::NewDest,
            IPVS_CMD_SET_DEST => Self::SetDest,
            IPVS_CMD_DEL_DEST => Self::DelDest,
            IPVS_CMD_GET_DEST => Self::GetDest,
            IPVS_CMD_NEW_DAEMON => Self::NewDaemon,
            IPVS_CMD_DEL_DAEMON => Self::DelDaemon,
            IPVS_CMD_GET_DAEMON => Self::GetDaemon,
            IPVS_CMD_SET_CONFIG => Self::SetConfig,
            IPVS_CMD_GET_CONFIG => Self::GetConfig,
            IPVS_CMD_SET_INFO => Self::SetInfo,
            IPVS_CMD_GET_INFO => Self::GetInfo,
            IPVS_CMD_ZERO => Self::Zero,
            IPVS_CMD_FLUSH => Self::Flush,
            other => return Err(format!("unknown IPVS command {other}").into()),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_command_number_round_trips() {
        for n in 1u8..=17 {
            let cmd = IpvsCmd::try_from(n).unwrap();
            assert_eq!(u8::from(cmd), n);
            assert!(!cmd.to_string().is_empty());
        }
        assert!(IpvsCmd::try_from(0).is_err());
        assert!(IpvsCmd::try_from(18).is_err());
    }
}
