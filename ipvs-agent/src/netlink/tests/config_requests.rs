//! Goldens for the requests without a service: GET_INFO, SET_CONFIG,
//! GET_CONFIG and FLUSH.

use netlink_packet_core::{NLM_F_ACK, NLM_F_REQUEST};

use super::super::{IpvsMessage, Timeouts};
use super::assert_request;

const ACKED: u16 = NLM_F_REQUEST | NLM_F_ACK;

/// `ipvsadm --version` / the header of `ipvsadm -Ln`.
#[rustfmt::skip]
const GET_INFO: [u8; 20] = [
    0x14, 0x00, 0x00, 0x00,  // nlmsghdr len 20
    0x25, 0x00, 0x05, 0x00,  //   IPVS, REQUEST | ACK
    0x12, 0x00, 0x00, 0x00,  //   seq 18
    0x00, 0x00, 0x00, 0x00,  //   pid 0
    0x0f, 0x01, 0x00, 0x00,  // GET_INFO (15), version 1, no attributes
];

#[test]
fn get_info() {
    assert_request(IpvsMessage::get_info(), 18, ACKED, &GET_INFO);
}

/// `ipvsadm --set 900 120 300`
#[rustfmt::skip]
pub(super) const SET_CONFIG: [u8; 44] = [
    0x2c, 0x00, 0x00, 0x00, 0x25, 0x00, 0x05, 0x00,  // nlmsghdr len 44, IPVS, REQUEST|ACK
    0x13, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,  //   seq 19, pid 0
    0x0c, 0x01, 0x00, 0x00,  // SET_CONFIG (12), version 1
    0x08, 0x00, 0x04, 0x00,  // nla len 8, CMD_ATTR_TIMEOUT_TCP
    0x84, 0x03, 0x00, 0x00,  //   900 s (0x384)
    0x08, 0x00, 0x05, 0x00,  // nla len 8, CMD_ATTR_TIMEOUT_TCP_FIN
    0x78, 0x00, 0x00, 0x00,  //   120 s
    0x08, 0x00, 0x06, 0x00,  // nla len 8, CMD_ATTR_TIMEOUT_UDP
    0x2c, 0x01, 0x00, 0x00,  //   300 s (0x12c)
];

#[test]
fn set_config() {
    let timeouts = Timeouts {
        tcp: 900,
        tcp_fin: 120,
        udp: 300,
    };
    assert_request(IpvsMessage::set_config(&timeouts), 19, ACKED, &SET_CONFIG);
}

#[rustfmt::skip]
const GET_CONFIG: [u8; 20] = [
    0x14, 0x00, 0x00, 0x00, 0x25, 0x00, 0x05, 0x00,  // nlmsghdr len 20, IPVS, REQUEST|ACK
    0x14, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,  //   seq 20, pid 0
    0x0d, 0x01, 0x00, 0x00,  // GET_CONFIG (13), version 1
];

#[test]
fn get_config() {
    assert_request(IpvsMessage::get_config(), 20, ACKED, &GET_CONFIG);
}

/// `ipvsadm -C`
#[rustfmt::skip]
pub(super) const FLUSH: [u8; 20] = [
    0x14, 0x00, 0x00, 0x00, 0x25, 0x00, 0x05, 0x00,  // nlmsghdr len 20, IPVS, REQUEST|ACK
    0x15, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,  //   seq 21, pid 0
    0x11, 0x01, 0x00, 0x00,  // FLUSH (17), version 1
];

#[test]
fn flush() {
    assert_request(IpvsMessage::flush(), 21, ACKED, &FLUSH);
}
